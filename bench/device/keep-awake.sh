#!/usr/bin/env bash
# Issue 21 on the GPU machine, second part: perception-1gpu on CUDA under
# --sched deadline with and without --keep-awake (30 s each, one after the
# other on the same machine), and the 2-core controller with this machine's
# measured overheads against the file's (10 s each). Run from the
# repository root with the release binary in $RTGPU (default
# .device/rtgpu) and results to $OUT.
set -u
RTGPU=${RTGPU:-.device/rtgpu}
OUT=${OUT:-/tmp/rtgpu-device}
DUR=${DUR:-30s}
EX=examples/perception-1gpu.toml
mkdir -p "$OUT"
export XDG_CACHE_HOME="$OUT/cache"
for awake in on off; do
  "$RTGPU" run "$EX" --backend cuda --sched deadline --keep-awake "$awake" --duration "$DUR" \
    --csv "$OUT/perception-awake-$awake.csv" > "$OUT/10-perception-awake-$awake.txt" 2>&1
  echo "exit $?" >> "$OUT/10-perception-awake-$awake.txt"
done
"$RTGPU" run examples/control-2core.toml --sched deadline --overheads measure --duration 10s \
  > "$OUT/11-control-measured.txt" 2>&1; echo "exit $?" >> "$OUT/11-control-measured.txt"
"$RTGPU" run examples/control-2core.toml --sched deadline --overheads workload --duration 10s \
  > "$OUT/12-control-table3.txt" 2>&1; echo "exit $?" >> "$OUT/12-control-table3.txt"
"$RTGPU" analyze "$EX" --sched deadline --overheads machine > "$OUT/13-analyze-machine.txt" 2>&1
echo "exit $?" >> "$OUT/13-analyze-machine.txt"
cp "$OUT"/cache/rtgpu/*.toml "$OUT/" 2>/dev/null
grep -h -E "^(policy|overheads|task|joint|balance|camera|lidar|planner|logger|state|every|[0-9]+ deadline|verdict)|^exit|^WARNING|keep-awake" "$OUT"/1[0-3]-*.txt | cut -c1-220
