#!/usr/bin/env bash
# Build and install rtgpu's C API: librtgpu.so (versioned, SONAME, stripped in
# release), rtgpu.h and rtgpu.pc. Guide: docs/guide/capi.md.
#   scripts/install-capi.sh PREFIX        (e.g. /usr/local or ~/.local)
# Then: cc app.c $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs rtgpu)
# RTGPU_CAPI_PROFILE=debug installs the debug build (the tests use it).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:?usage: scripts/install-capi.sh PREFIX}"
profile="${RTGPU_CAPI_PROFILE:-release}"
echo "building librtgpu ($profile; the first build takes a few minutes)..."
if [ "$profile" = release ]; then
    cargo build --release -p rtgpu-capi --lib
else
    cargo build -p rtgpu-capi --lib
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
# The library carries its SONAME (crates/capi/build.rs): install it under its
# full version with the SONAME and the link-time name as symlinks, stripped in
# release (the release profile keeps debug info for profiling).
soname=$(readelf -d "target/$profile/librtgpu.so" 2>/dev/null |
    sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
soname=${soname:-librtgpu.so.0}
install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0755 "target/$profile/librtgpu.so" "$prefix/lib/librtgpu.so.$version"
if [ "$profile" = release ] && command -v strip >/dev/null; then
    strip --strip-unneeded "$prefix/lib/librtgpu.so.$version"
fi
ln -sfn "librtgpu.so.$version" "$prefix/lib/$soname"
ln -sfn "$soname" "$prefix/lib/librtgpu.so"
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
size=$(du -h "$prefix/lib/librtgpu.so.$version" | cut -f1)
echo "installed librtgpu $version ($profile, SONAME $soname, $size) under $prefix"
echo "build a C program with:"
echo "  cc app.c \$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs rtgpu)"
