#!/usr/bin/env bash
# Build everything (the rtgpu binary and the Python wheel) and run the main job
# on the bundled example: analyse it, simulate it beside the bounds, then run it
# on real threads for a second.
# Works without a GPU and without root (it then says what it degraded to).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

step "building the rtgpu binary (release)"
cargo build --release --quiet -p rtgpu-cli
step "building and installing the Python package (abi3 wheel) into .venv"
build_wheel
step "rtgpu analyze examples/quickstart.toml"
set +e
./target/release/rtgpu analyze examples/quickstart.toml --plan target/quickstart.plan.json
status=$?
set -e
echo
echo "analysis exit status $status (0 schedulable, 1 not schedulable, 2 invalid input)"

step "rtgpu simulate examples/quickstart.toml --duration 2s (virtual time; observed beside the bounds)"
./target/release/rtgpu simulate examples/quickstart.toml --duration "2 s" || true

step "rtgpu run examples/quickstart.toml --duration 1s (real threads; CPU work)"
set +e
./target/release/rtgpu run examples/quickstart.toml --duration "1 s"
run_status=$?
set -e
echo
echo "run exit status $run_status (0 every deadline met, 1 some missed, 2 not runnable);"
echo "on a machine with fewer CPUs than the plan's cores the run is folded and says so above."
echo "Python: .venv/bin/python -c 'import rtgpu; print(rtgpu.load_workload(\"examples/quickstart.toml\").analyze())'"
exit "$status"
