//! `rtgpu daemon` as a user runs it: it serves clients on its socket, stops
//! on SIGTERM with its statistics, and refuses bad options.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rtgpu_runtime::arbiter::Engine;
use rtgpu_runtime::daemon::RemoteClient;

#[test]
fn the_daemon_serves_clients_and_reports_when_stopped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sock = dir.path().join("d.sock");
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_rtgpu"))
        .args(["daemon", "--gpus", "1", "--tokens-per-gpu", "1", "--socket"])
        .arg(&sock)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rtgpu daemon");
    let t0 = Instant::now();
    let mut a = loop {
        match RemoteClient::connect(&sock, 10) {
            Ok(c) => break c,
            Err(e) => {
                if t0.elapsed() > Duration::from_secs(20) {
                    let _ = daemon.kill();
                    panic!("the daemon never listened: {e}");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    assert_eq!(a.gpus(), 1);
    assert_eq!(a.token(1_000, 0, None, 0).expect("token"), (0, 0));
    let r = a.lock(Engine::Exec).expect("lock");
    a.unlock(r).expect("unlock");
    a.release_token().expect("release");
    drop(a);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(daemon.id() as libc::pid_t, libc::SIGTERM) };
    let out = daemon.wait_with_output().expect("daemon output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 GPU(s), 1 token(s) each"), "{stdout}");
    assert!(stdout.contains("sleeping between requests"), "{stdout}");
    assert!(
        stdout.contains("stopped: 1 client(s), 0 died holding or waiting"),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 token and 1 engine-lock grants"),
        "{stdout}"
    );
    assert!(!sock.exists(), "the socket file is removed at the end");
}

#[test]
fn bad_daemon_options_are_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_rtgpu"))
        .args([
            "daemon",
            "--allocator",
            "round-robin",
            "--socket",
            "/tmp/unused.sock",
        ])
        .output()
        .expect("run rtgpu daemon");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("round-robin"), "{err}");
}
