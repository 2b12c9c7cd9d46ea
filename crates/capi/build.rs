//! The shared library's SONAME: `librtgpu.so.<major>` (with a 0.x version,
//! `librtgpu.so.0.<minor>`, since a 0.x minor release may break the ABI),
//! so programs linked against it keep loading the ABI they were built for
//! while newer ones are installed beside it (scripts/install-capi.sh).

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").unwrap_or_else(|_| "0".into());
    let soname = if major == "0" {
        format!("librtgpu.so.0.{minor}")
    } else {
        format!("librtgpu.so.{major}")
    };
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    println!("cargo:rerun-if-changed=build.rs");
}
