#!/usr/bin/env bash
# Build everything (the rtgpu binary and the Python wheel) and run the main job
# on the bundled example. Works without a GPU and without root.
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
echo "exit status $status (0 schedulable, 1 not schedulable, 2 invalid input)"
echo "Python: .venv/bin/python -c 'import rtgpu; print(rtgpu.load_workload(\"examples/quickstart.toml\").analyze())'"
exit "$status"
