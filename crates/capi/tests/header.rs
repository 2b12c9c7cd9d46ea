//! `include/rtgpu.h` is generated from `src/lib.rs` by cbindgen with
//! `cbindgen.toml`: this test regenerates it and fails when the committed
//! header differs (a function added, a signature or a doc changed without
//! the header). `RTGPU_BLESS=1 cargo test -p rtgpu-capi --test header`
//! rewrites the header instead.

use std::path::PathBuf;

#[test]
fn the_committed_header_is_the_generated_one() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen parses src/lib.rs")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    let path = dir.join("include/rtgpu.h");
    if std::env::var_os("RTGPU_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/rtgpu.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).expect("include/rtgpu.h");
    assert!(
        committed == generated,
        "include/rtgpu.h differs from what cbindgen generates from src/lib.rs; \
         run RTGPU_BLESS=1 cargo test -p rtgpu-capi --test header and commit it"
    );
    // What every C user relies on is in it.
    for name in [
        "rtgpu_arbiter_new",
        "rtgpu_register",
        "rtgpu_connect",
        "rtgpu_token_acquire",
        "rtgpu_engine_lock",
        "rtgpu_peer_copy_lock",
        "rtgpu_last_error",
        "RTGPU_COPY_OUT = 2",
        "typedef struct rtgpu_token rtgpu_token;",
    ] {
        assert!(generated.contains(name), "{name} missing from the header");
    }
}
