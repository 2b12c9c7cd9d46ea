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
    # rtgpu experiment: Dask (a real multi-process cluster in the tests),
    # plots, progress bars, TOML before Python 3.11.
    .venv/bin/python -m pip install --quiet "dask[distributed]>=2023.1" "matplotlib>=3.5" \
        "tqdm>=4.60" "tomli>=1.1; python_version < '3.11'"
    rm -rf target/wheels
    .venv/bin/maturin build --release --quiet -o target/wheels 2>&1 | grep -v '^📦\|^🔗\|^🐍' || true
    .venv/bin/python -m pip install --quiet --force-reinstall --no-deps target/wheels/rtgpu-*.whl
}
