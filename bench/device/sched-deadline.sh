#!/usr/bin/env bash
# Issue 21's check on a GPU machine that refuses SCHED_FIFO and permits
# SCHED_DEADLINE (the device tool's H100 box): perception-1gpu on CUDA
# under --sched deadline for 30 s, the analysis beside it, and a negative
# control (the same run at SCHED_OTHER, then under SCHED_DEADLINE, each
# beside a CPU hog on every CPU). Run from the repository root with the
# release binary in $RTGPU (default .device/rtgpu) and results to $OUT.
set -u
RTGPU=${RTGPU:-.device/rtgpu}
OUT=${OUT:-/tmp/rtgpu-device}
DUR=${DUR:-30s}
EX=examples/perception-1gpu.toml
mkdir -p "$OUT"
{
  echo "## machine"; uname -a; nproc; nvidia-smi -L 2>&1 | head -4
  echo "## rtgpu gpu --check"; "$RTGPU" gpu --check 2>&1
  echo "## analyze --sched deadline"; "$RTGPU" analyze "$EX" --sched deadline 2>&1; echo "exit $?"
} > "$OUT/00-check.txt" 2>&1
"$RTGPU" run "$EX" --backend cuda --sched auto --duration "$DUR" \
  --csv "$OUT/deadline-jobs.csv" > "$OUT/01-run-deadline.txt" 2>&1
echo "exit $?" >> "$OUT/01-run-deadline.txt"
# Negative control: a busy loop on every CPU, then the run at SCHED_OTHER
# (--no-realtime) and under SCHED_DEADLINE, 10 s each.
hogs=()
for _ in $(seq "$(nproc)"); do (while :; do :; done) & hogs+=($!); done
"$RTGPU" run "$EX" --backend cuda --no-realtime --duration 10s > "$OUT/02-other-hogged.txt" 2>&1
echo "exit $?" >> "$OUT/02-other-hogged.txt"
"$RTGPU" run "$EX" --backend cuda --sched deadline --duration 10s > "$OUT/03-deadline-hogged.txt" 2>&1
echo "exit $?" >> "$OUT/03-deadline-hogged.txt"
kill "${hogs[@]}" 2>/dev/null; wait 2>/dev/null
grep -h -E "^(policy|task|joint|balance|camera|lidar|planner|logger|every|[0-9]+ deadline)|^exit|^WARNING" "$OUT"/0[123]-*.txt
