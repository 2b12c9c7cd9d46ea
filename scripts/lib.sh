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
    local wheel
    wheel=$(ls target/wheels/rtgpu-*.whl)
    # The wheel's `experiment` extra (pyproject.toml) brings the study stack:
    # Dask (a real multi-process cluster in the tests), plots, progress bars,
    # Parquet, TOML before Python 3.11. Then the fresh wheel itself.
    .venv/bin/python -m pip install --quiet "${wheel}[experiment]"
    .venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheel"
}

# Put the release `rtgpu` binary on PATH the way Rust installs binaries:
# `cargo install` into ~/.cargo/bin (rustup puts that directory on PATH),
# reusing the release build in target/. Says where it went and, if that
# directory is not on PATH here, how to add it.
install_cli() {
    cargo install --quiet --locked --force --path crates/cli --target-dir target
    local bin="${CARGO_HOME:-$HOME/.cargo}/bin"
    if [ "$(command -v rtgpu)" = "$bin/rtgpu" ]; then
        echo "rtgpu installed: $bin/rtgpu (on PATH)"
    else
        echo "rtgpu installed: $bin/rtgpu, which is not first on this shell's PATH; add it with"
        echo "  export PATH=\"$bin:\$PATH\""
    fi
}
