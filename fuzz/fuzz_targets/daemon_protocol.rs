//! The daemon's protocol, against a live daemon in this process: whatever
//! bytes one connection sends (the input, split by its first byte into
//! what is sent before and after a valid registration), the daemon must
//! not panic or hang, and a well-behaved client must still be served
//! (checked every 64 inputs). A stable-toolchain stand-in with a fixed
//! seed runs in the test suite (`random_traffic_does_no_harm`,
//! crates/runtime/tests/daemon.rs).
#![no_main]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use rtgpu_runtime::arbiter::{ArbiterConfig, Engine};
use rtgpu_runtime::daemon::{spawn, RemoteClient, Spawned};

fn daemon() -> &'static (PathBuf, Spawned) {
    static D: OnceLock<(PathBuf, Spawned)> = OnceLock::new();
    D.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("rtgpu-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let sock = dir.join("d.sock");
        let config =
            ArbiterConfig::uniform(1, 1, 2, "gpusync", true, false).expect("config");
        let running = spawn(&sock, config).expect("daemon");
        (sock, running)
    })
}

fn register() -> [u8; 32] {
    let mut m = [0u8; 32];
    m[0..4].copy_from_slice(&1u32.to_le_bytes());
    m[4..8].copy_from_slice(&10u32.to_le_bytes());
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u64;
    m[8..16].copy_from_slice(&tid.to_le_bytes());
    m[16..24].copy_from_slice(&2u64.to_le_bytes());
    m
}

static RUNS: AtomicU64 = AtomicU64::new(0);

fuzz_target!(|data: &[u8]| {
    let (sock, _) = daemon();
    if let Ok(mut c) = UnixStream::connect(sock) {
        let _ = c.set_write_timeout(Some(Duration::from_secs(1)));
        let (head, rest) = match data.split_first() {
            Some((&k, rest)) if k & 1 == 1 => (Some(register()), rest),
            Some((_, rest)) => (None, rest),
            None => (None, data),
        };
        if let Some(r) = head {
            let _ = c.write_all(&r);
        }
        let _ = c.write_all(rest);
        if data.first().is_some_and(|k| k & 2 == 2) {
            let _ = c.set_nonblocking(true);
            let mut sink = [0u8; 256];
            while matches!(c.read(&mut sink), Ok(n) if n > 0) {}
        }
    }
    if RUNS.fetch_add(1, Ordering::Relaxed) % 64 == 63 {
        let mut ok = RemoteClient::connect_timeout(sock, 30, Duration::from_secs(10))
            .expect("a well-behaved client connects");
        ok.token(1_000, 0, None, 0).expect("token");
        let r = ok.lock(Engine::Exec).expect("engine");
        ok.unlock(r).expect("unlock");
        ok.release_token().expect("release");
    }
});
