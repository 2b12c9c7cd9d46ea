//! Compiles `tests/c/client.c` against `include/rtgpu.h` and the built
//! `librtgpu.so` with the system C compiler, and runs it: the C API works
//! from real C threads (mutual exclusion, errors, any free order).

use std::path::PathBuf;
use std::process::Command;

/// Builds `tests/c/client.c` against the built library; returns the binary.
fn build_c_client(name: &str) -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // target/<profile>/deps/<this test> -> target/<profile>
    let exe = std::env::current_exe().expect("test path");
    let profile_dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let lib = profile_dir.join("librtgpu.so");
    // `cargo test` builds the library only as an rlib for the tests; the
    // shared library comes from a build, done here every time (a no-op when
    // it is fresh: a stale one would speak an older daemon protocol).
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "--quiet", "-p", "rtgpu-capi", "--lib"]);
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    let status = build.current_dir(&manifest).status().expect("run cargo");
    assert!(status.success(), "cargo build -p rtgpu-capi failed");
    assert!(lib.exists(), "{} was not built", lib.display());
    let out_dir = tempfile_dir();
    // The library records its SONAME (build.rs); the loader looks for that
    // name, which only an install creates: link both names here.
    let libdir = out_dir.join(format!("lib-{name}"));
    std::fs::create_dir_all(&libdir).expect("lib dir");
    for link in ["librtgpu.so".to_string(), soname()] {
        let at = libdir.join(link);
        let _ = std::fs::remove_file(&at);
        std::os::unix::fs::symlink(&lib, &at).expect("link the library");
    }
    let bin = out_dir.join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .arg(manifest.join("tests/c/client.c"))
        .arg("-I")
        .arg(manifest.join("include"))
        .arg("-L")
        .arg(&libdir)
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .args(["-lrtgpu", "-lpthread", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&bin)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc:?}: {e}"));
    assert!(status.success(), "the C client did not compile");
    bin
}

/// The library's SONAME, as crates/capi/build.rs sets it.
fn soname() -> String {
    match env!("CARGO_PKG_VERSION_MAJOR") {
        "0" => format!("librtgpu.so.0.{}", env!("CARGO_PKG_VERSION_MINOR")),
        major => format!("librtgpu.so.{major}"),
    }
}

#[test]
fn a_c_program_uses_the_arbiter() {
    let bin = build_c_client("client-local");
    let run = Command::new(&bin).output().expect("run the C client");
    assert!(
        run.status.success(),
        "C client failed with {:?}: {}{}",
        run.status.code(),
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(String::from_utf8_lossy(&run.stdout).contains("one exec holder at a time"));
}

/// Cross-process mode: two C processes of two threads each share two GPUs
/// through a real daemon; a bad socket is an error naming the path.
#[test]
fn c_processes_share_gpus_through_the_daemon() {
    use rtgpu_runtime::arbiter::{ArbiterConfig, QueueRule, TokenConfig};
    let bin = build_c_client("client-remote");
    let sock = tempfile_dir().join("d.sock");
    let config = ArbiterConfig {
        copy_engines: vec![1, 1],
        tokens: TokenConfig {
            gpus: 2,
            tokens_per_gpu: 1,
            rule: QueueRule::EarliestCompletion,
            stealing: false,
            queue_cap: usize::MAX,
        },
        distance: Vec::new(),
        engine_locks: true,
        apply_priorities: false,
        priors: Vec::new(),
    };
    let (stop, daemon) = rtgpu_runtime::daemon::spawn(&sock, config).expect("daemon");
    let run = Command::new(&bin)
        .arg(&sock)
        .output()
        .expect("run the C client");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let stats = daemon.join().expect("daemon thread").expect("daemon ran");
    assert!(
        run.status.success(),
        "C client failed with {:?}: {}{}",
        run.status.code(),
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(String::from_utf8_lossy(&run.stdout).contains("one exec holder at a time"));
    assert_eq!(stats.clients, 5, "four workers and one error-path client");
    assert!(stats.token_grants >= 401, "{stats:?}");
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtgpu-capi-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// `scripts/install-capi.sh PREFIX` installs a library, header and
/// pkg-config file with which a C program builds and runs.
#[test]
fn the_installed_library_builds_with_pkg_config() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    let prefix = tempfile_dir().join("prefix");
    let status = Command::new("bash")
        .arg(root.join("scripts/install-capi.sh"))
        .arg(&prefix)
        .env("RTGPU_CAPI_PROFILE", "debug")
        .status()
        .expect("run the install script");
    assert!(status.success());
    // Installed under its version, with the SONAME and the link-time name
    // as symlinks (crates/capi/build.rs sets the SONAME).
    let expected = soname();
    let soname = std::fs::read_link(prefix.join("lib/librtgpu.so")).expect("librtgpu.so links");
    assert_eq!(soname.to_string_lossy(), expected);
    let full = std::fs::read_link(prefix.join("lib").join(&soname)).expect("the SONAME links");
    assert_eq!(
        full.to_string_lossy(),
        format!("librtgpu.so.{}", env!("CARGO_PKG_VERSION"))
    );
    if let Ok(o) = Command::new("readelf")
        .args(["-d"])
        .arg(prefix.join("lib").join(&full))
        .output()
    {
        let dynamic = String::from_utf8_lossy(&o.stdout);
        assert!(
            dynamic.contains(&format!("Library soname: [{expected}]")),
            "{dynamic}"
        );
    }
    let pc = std::fs::read_to_string(prefix.join("lib/pkgconfig/rtgpu.pc")).expect("rtgpu.pc");
    assert!(pc.contains("Libs: -L${libdir}"), "{pc}");
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "rtgpu"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output();
    let Ok(flags) = flags else {
        panic!("pkg-config is needed for this test (apt-get install pkg-config)");
    };
    assert!(
        flags.status.success(),
        "{}",
        String::from_utf8_lossy(&flags.stderr)
    );
    let flags = String::from_utf8_lossy(&flags.stdout).to_string();
    let bin = prefix.join("client");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .arg(manifest.join("tests/c/client.c"))
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&bin)
        .status()
        .expect("run the C compiler");
    assert!(status.success());
    assert!(Command::new(&bin).status().expect("run").success());
}
