#!/usr/bin/env bash
# The reliability suite (issue 22): rtgpu used as a hostile or unlucky user
# would, each case kept fixed by a test. docs/testing.md ("Reliability
# suite") lists what is tried and how often.
#
#   scripts/reliability.sh          the reliability_* tests: concurrent writers,
#                                   a full disk, signal storms on rtgpu run
#                                   (crates/cli/tests/reliability.rs), a kill
#                                   storm and concurrent runs of rtgpu experiment
#                                   (tests/python/test_reliability.py).
#                                   scripts/test.sh runs this step.
#   scripts/reliability.sh --all    also the hardening tests the main suite
#                                   runs (daemon floods, idle and descriptor
#                                   exhaustion, client kill storms, random
#                                   traffic, experiment signals, trace
#                                   streaming), again at the scale asked for.
#
# RTGPU_RELIABILITY_SCALE=N multiplies the reliability_* counts;
# RTGPU_FUZZ_ROUNDS=N sets the daemon's random-traffic rounds (--all).
# PYTHON: the interpreter with the rtgpu package (default .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
export CARGO_TERM_COLOR=never
PY=${PYTHON:-.venv/bin/python}
all=0
case "${1:-}" in
    --all) all=1 ;;
    "") ;;
    *) echo "usage: scripts/reliability.sh [--all]" >&2; exit 2 ;;
esac

step "reliability: concurrent writers, full disk, signal storms (rtgpu)"
# (also builds target/debug/rtgpu, which the experiment tests run)
cargo build --quiet -p rtgpu-cli
cargo test --quiet -p rtgpu-cli --test reliability -- --nocapture

step "reliability: kill storm and concurrent runs of rtgpu experiment"
log=$(mktemp)
status=0
"$PY" -m pytest -q -s -p no:cacheprovider tests/python/test_reliability.py >"$log" 2>&1 || status=$?
grep -o 'reliability:.*' "$log" || true
tail -n 1 "$log"
if [ "$status" != 0 ]; then
    cat "$log"
    rm -f "$log"
    exit "$status"
fi
rm -f "$log"

if [ "$all" = 1 ]; then
    step "reliability --all: the daemon (floods, timeouts, descriptors, kill storm, random traffic)"
    cargo test --quiet -p rtgpu-runtime --test daemon
    cargo test --quiet -p rtgpu-cli --test daemon
    step "reliability --all: experiment signals, output safety, trace streaming"
    "$PY" -m pytest -q tests/python/test_experiment.py -k "Safety"
    "$PY" -m pytest -q tests/python/test_runtime.py -k "never_replaces or killed_process"
    cargo test --quiet -p rtgpu-cli --test latency -- streamed worst_interrupted
    cargo test --quiet -p rtgpu-cli --test cli -- an_output_never_overwrites
fi

step "reliability suite passed"
