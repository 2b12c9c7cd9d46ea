#!/usr/bin/env bash
# The whole test suite: formatting, lints, Rust unit/property/integration
# tests, the Python package and its tests. This is what CI runs (.ci/run).
# Long fuzzing and benchmarks have their own commands (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
export CARGO_TERM_COLOR=never

step "toolchain"
cargo --version
python3 --version
# The C API's tests compile a C client and read a pkg-config file.
if ! command -v cc >/dev/null || ! command -v pkg-config >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && apt-get install -y -qq gcc pkg-config >/dev/null
    else
        echo "the C API tests need a C compiler (cc) and pkg-config" >&2
        exit 1
    fi
fi
cc --version | head -n 1

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "Rust tests"
# (the reliability_* tests run in their own step below)
cargo test --workspace --quiet -- --skip reliability_

step "Python package"
build_wheel
.venv/bin/ruff check python tests/python bench/python
.venv/bin/ruff format --check python tests/python bench/python
# tests/python/test_docs_commands.py runs the guides' commands with the release binary.
cargo build --release --quiet -p rtgpu-cli
RTGPU_BIN=target/release/rtgpu .venv/bin/python -m pytest -q tests/python \
    --ignore=tests/python/test_reliability.py

# Kill storms, concurrent writers, a full disk, signal storms (issue 22;
# docs/testing.md, "Reliability suite"). `scripts/reliability.sh --all`
# also re-runs the daemon's floods and kill storms.
bash scripts/reliability.sh

step "all tests passed"
