#!/usr/bin/env bash
# Compare `rtgpu simulate` outputs of two builds on every example under
# several settings (JSON, per-job CSV, Perfetto trace): a speed-up of the
# simulator must not change a byte.
#
#   scripts/sim-compare.sh OLD_RTGPU NEW_RTGPU
#
# e.g. build the old one in another worktree, copy target/release/rtgpu
# aside, then `cargo build --release -p rtgpu-cli` here.
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 OLD_RTGPU NEW_RTGPU" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {
    local bin=$1 out=$2 f n
    mkdir -p "$out"
    for f in "$root"/examples/*.toml; do
        n=$(basename "$f" .toml)
        { "$bin" simulate "$f" --json || echo "rc=$?"; } >"$out/$n.default.json" 2>&1
        { "$bin" simulate "$f" --json --seed 7 --sporadic 20 --bcet 50 \
            --csv "$out/$n.spor.csv" || echo "rc=$?"; } >"$out/$n.spor.json" 2>&1
        { "$bin" simulate "$f" --json --duration "3 s" --shift-tardy --drain --seed 3 \
            --trace "$out/$n.trace.json" || echo "rc=$?"; } >"$out/$n.shift.json" 2>&1
        { "$bin" simulate "$f" --json --duration "2 s" --no-overheads --bcet 30 \
            --csv "$out/$n.noov.csv" || echo "rc=$?"; } >"$out/$n.noov.json" 2>&1
    done
    for sc in "AEDG,2MB" "aedg,X" "aEDg,2MB"; do
        { "$bin" simulate "$root/examples/feature-tracking.toml" --json --scenario "$sc" \
            --duration "3 s" --csv "$out/ft-$sc.csv" || echo "rc=$?"; } >"$out/ft-$sc.json" 2>&1
    done
}
run "$1" "$work/old"
run "$2" "$work/new"
n=$(find "$work/old" -type f | wc -l)
if diff -rq "$work/old" "$work/new"; then
    echo "identical: $n output files"
else
    echo "DIFFERENT (above)" >&2
    exit 1
fi
