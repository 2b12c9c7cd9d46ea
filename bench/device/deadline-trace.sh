#!/usr/bin/env bash
# Issue 21, third part: why the 1 kHz loop of perception-1gpu misses about
# one job in a thousand under --sched deadline on the H100 box. Runs it on
# CUDA for $DUR twice, with --no-reclaim and with the default reclaiming
# (SCHED_FLAG_RECLAIM), each
# under a kernel trace (trace_clock mono: sched_switch, sched_wakeup,
# sched_migrate_task, local_timer_entry, irq_handler_entry), and has
# miss_windows.py say, per missed job, what the kernel did meanwhile; steal
# time from /proc/stat before and after. Run from the repository root with
# the release binary in $RTGPU (default .device/rtgpu) and results to $OUT.
# VARIANTS (default "plain reclaim") picks the runs; PREEMPT (e.g. full)
# switches a PREEMPT_DYNAMIC kernel's preemption model for them and back.
set -u
VARIANTS=${VARIANTS:-plain reclaim}
PREEMPT=${PREEMPT:-}
RTGPU=${RTGPU:-.device/rtgpu}
OUT=${OUT:-/tmp/rtgpu-device}
DUR=${DUR:-30s}
BACKEND=${BACKEND:-cuda}
EX=${EX:-examples/perception-1gpu.toml}
HERE=$(dirname "$0")
T=/sys/kernel/tracing
[ -e "$T/trace" ] || mount -t tracefs nodev "$T" 2>/dev/null || T=/sys/kernel/debug/tracing
EVENTS="sched/sched_switch sched/sched_wakeup sched/sched_migrate_task irq_vectors/local_timer_entry irq/irq_handler_entry"
mkdir -p "$OUT" /tmp/rtgpu-trace
OLD_ON=$(cat "$T/tracing_on"); OLD_KB=$(grep -o '[0-9]*' "$T/buffer_size_kb" | tail -1); OLD_CLOCK=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$T/trace_clock")
{
  echo "## machine"; uname -a; nproc; grep -m1 -o hypervisor /proc/cpuinfo
  cat /sys/devices/system/clocksource/clocksource0/current_clocksource
  echo "## steal time support"; dmesg 2>/dev/null | grep -i -m3 "steal"
  echo "## tracefs $T"; ls "$T" >/dev/null && echo ok
  echo "## preemption model"; D=/sys/kernel/debug
  [ -e $D/sched/preempt ] || mount -t debugfs none $D 2>/dev/null
  cat $D/sched/preempt
} > "$OUT/00-env.txt" 2>&1
OLD_PREEMPT=$(sed -n 's/.*(\([a-z]*\)).*/\1/p' /sys/kernel/debug/sched/preempt 2>/dev/null)
if [ -n "$PREEMPT" ]; then
  echo "$PREEMPT" > /sys/kernel/debug/sched/preempt
  echo "preemption model for the runs: $(cat /sys/kernel/debug/sched/preempt)" >> "$OUT/00-env.txt"
fi
for variant in $VARIANTS; do
  flag=(); case $variant in plain*) flag=(--no-reclaim) ;; esac
  W=/tmp/rtgpu-trace/$variant
  mkdir -p "$W"
  echo 0 > "$T/tracing_on"; echo > "$T/trace"; echo mono > "$T/trace_clock"
  echo 65536 > "$T/buffer_size_kb"
  for e in $EVENTS; do echo 1 > "$T/events/$e/enable"; done
  grep '^cpu' /proc/stat > "$W/stat0"
  echo 1 > "$T/tracing_on"
  "$RTGPU" run "$EX" --backend "$BACKEND" --sched deadline "${flag[@]}" --duration "$DUR" \
    --json > "$W/run.json" 2> "$W/stderr.txt"
  echo "exit $?" >> "$W/stderr.txt"
  echo 0 > "$T/tracing_on"
  grep '^cpu' /proc/stat > "$W/stat1"
  for e in $EVENTS; do echo 0 > "$T/events/$e/enable"; done
  grep -H overrun "$T"/per_cpu/cpu*/stats > "$W/overrun.txt"
  cat "$T/trace" > "$W/trace.txt"
  echo > "$T/trace"
  python3 "$HERE/miss_windows.py" "$W/run.json" "$W/trace.txt" "$W/stat0" "$W/stat1" \
    > "$OUT/$variant-misses.txt" 2>&1
  python3 - "$W/run.json" > "$OUT/$variant-summary.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["run"]
print("policy", r["policy"])
for t in r["tasks"]:
    print(f"{t['name']:<16} jobs {t['jobs']:>6} misses {t['deadline_misses']:>4} "
          f"max R {t['max_response_time'] / 1e3:10.1f} us bound {t['analysed_bound']} "
          f"ran under {t['ran_under']}")
PY
  cat "$W/stderr.txt" "$W/overrun.txt" >> "$OUT/$variant-summary.txt"
  gzip -6 -c "$W/trace.txt" > "$OUT/$variant-trace.txt.gz"
done
echo "$OLD_KB" > "$T/buffer_size_kb"; echo "$OLD_CLOCK" > "$T/trace_clock"; echo "$OLD_ON" > "$T/tracing_on"
[ -n "$PREEMPT" ] && [ -n "$OLD_PREEMPT" ] && echo "$OLD_PREEMPT" > /sys/kernel/debug/sched/preempt
(cd /tmp/rtgpu-trace && tar czf "$OUT/runs.tar.gz" ./*/run.json ./*/stderr.txt)
cat "$OUT/00-env.txt"; head -3 "$OUT"/*-summary.txt; grep -h "^verdicts\|^steal\|missed job" "$OUT"/*-misses.txt
ls -la "$OUT"
