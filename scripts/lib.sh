# Shared helpers of scripts/*.sh (sourced, not run).

step() { printf '\n== %s\n' "$*"; }

# Create .venv if needed and install the freshly built abi3 wheel with the
# Python test tools into it.
build_wheel() {
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
    fi
    .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
    .venv/bin/python -m pip install --quiet "maturin>=1.5,<2" pytest ruff
    rm -rf target/wheels
    .venv/bin/maturin build --release --quiet -o target/wheels 2>&1 | grep -v '^📦\|^🔗\|^🐍' || true
    .venv/bin/python -m pip install --quiet --force-reinstall --no-deps target/wheels/rtgpu-*.whl
}
