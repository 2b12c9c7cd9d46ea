#!/usr/bin/env bash
# Build and install rtgpu's C API: librtgpu.so, rtgpu.h and rtgpu.pc.
#   scripts/install-capi.sh PREFIX        (e.g. /usr/local or ~/.local)
# Then: cc app.c $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs rtgpu)
# RTGPU_CAPI_PROFILE=debug installs the debug build (the tests use it).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:?usage: scripts/install-capi.sh PREFIX}"
profile="${RTGPU_CAPI_PROFILE:-release}"
if [ "$profile" = release ]; then
    cargo build --quiet --release -p rtgpu-capi --lib
else
    cargo build --quiet -p rtgpu-capi --lib
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0755 "target/$profile/librtgpu.so" "$prefix/lib/librtgpu.so"
install -m 0644 crates/capi/include/rtgpu.h "$prefix/include/rtgpu.h"
cat >"$prefix/lib/pkgconfig/rtgpu.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: rtgpu
Description: rtgpu GPU arbiter (GPU tokens and engine locks with priority inheritance)
Version: $version
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lrtgpu -lpthread
Cflags: -I\${includedir}
PC
echo "installed librtgpu $version ($profile) under $prefix"
