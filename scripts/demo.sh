#!/usr/bin/env bash
# Build everything (the rtgpu binary and the Python wheel) and run the main job
# on the bundled examples: analyse and simulate the quickstart, then run a
# GPU workload on real threads with measured, simulated and analysed figures
# side by side.
# Works without a GPU and without root (it then says what it degraded to).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

step "building the rtgpu binary (release) and installing it on PATH (cargo install)"
cargo build --release --quiet -p rtgpu-cli
install_cli
step "building and installing the Python package (abi3 wheel) into .venv"
build_wheel
step "rtgpu analyze examples/quickstart.toml"
set +e
./target/release/rtgpu analyze examples/quickstart.toml --plan target/quickstart.plan.json
status=$?
set -e
echo
echo "analysis exit status $status (0 schedulable, 1 not schedulable, 2 invalid input)"

step "rtgpu simulate examples/quickstart.toml --duration 1s (virtual time, bounds beside)"
set +e
./target/release/rtgpu simulate examples/quickstart.toml --duration "1 s"
set -e

step "rtgpu run examples/perception-1gpu.toml --duration 2s (real threads, GPU work on the emulated GPU)"
set +e
./target/release/rtgpu run examples/perception-1gpu.toml --duration "2 s"
run_status=$?
set -e
echo
echo "run exit status $run_status (0 every deadline met, 1 some missed, 2 not runnable);"
echo "measured, simulated (sim max R) and analysed (R bound) response times side by side;"
echo "without root or on fewer CPUs than the plan's cores it says above what it degraded to."
echo "Python: .venv/bin/python -c 'import rtgpu; print(rtgpu.load_workload(\"examples/quickstart.toml\").analyze())'"
echo
echo "The guides write \`rtgpu ...\`: $(command -v rtgpu || echo "$PWD/target/release/rtgpu (see above for PATH)")"
echo "Studies in Python: pip install \"$(ls "$PWD"/target/wheels/rtgpu-*.whl)[experiment]\""
exit "$status"
