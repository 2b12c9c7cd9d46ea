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

// ---------------------------------------------------------------------
// Hardening (issue 22).
// ---------------------------------------------------------------------

use std::os::unix::process::CommandExt;
use std::path::Path;

/// Kills the daemon however the test ends.
struct Reap(std::process::Child);
impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `rtgpu daemon` on `sock` with `extra` options, once it serves (a
/// client connected and left).
fn start(sock: &Path, extra: &[&str], nofile: Option<u64>) -> Reap {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtgpu"));
    cmd.arg("daemon")
        .args(extra)
        .arg("--socket")
        .arg(sock)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(n) = nofile {
        // SAFETY: only setrlimit (async-signal-safe) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let r = libc::rlimit {
                    rlim_cur: n,
                    rlim_max: n,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let d = Reap(cmd.spawn().expect("start rtgpu daemon"));
    let t0 = Instant::now();
    loop {
        match RemoteClient::connect(sock, 10) {
            Ok(_) => return d,
            Err(e) => {
                assert!(
                    t0.elapsed() < Duration::from_secs(20),
                    "the daemon never listened: {e}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

fn daemon_output(args: &[&str], sock: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rtgpu"))
        .arg("daemon")
        .args(args)
        .arg("--socket")
        .arg(sock)
        .output()
        .expect("run rtgpu daemon");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_second_daemon_on_the_same_socket_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sock = dir.path().join("d.sock");
    let first = start(&sock, &[], None);
    let (code, err) = daemon_output(&[], &sock);
    assert_eq!(code, Some(2), "{err}");
    let want = format!(
        "another rtgpu daemon serves {} (pid {})",
        sock.display(),
        first.0.id()
    );
    assert!(err.contains(&want), "{err}");
    // The first one still serves.
    let mut c = RemoteClient::connect(&sock, 10).expect("the first daemon serves");
    c.token(1_000, 0, None, 0).expect("token");
    c.release_token().expect("release");
}

#[test]
fn an_existing_file_is_never_deleted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("some-file.txt");
    std::fs::write(&file, "precious").expect("write");
    let (code, err) = daemon_output(&[], &file);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).expect("kept"), "precious");
}

#[test]
fn absurd_sizes_get_a_clear_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sock = dir.path().join("d.sock");
    for (args, want) in [
        (&["--gpus", "1000000000"][..], "gpus must be at most 1024"),
        (
            &["--tokens-per-gpu", "18446744073709551615"][..],
            "tokens_per_gpu must be at most 64",
        ),
        (&["--copy-engines", "3"][..], "copy_engines must be 1 or 2"),
        (&["--copy-engines", "100000"][..], "100000"),
    ] {
        let (code, err) = daemon_output(args, &sock);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(!sock.exists());
}

#[test]
fn the_k_fmlp_daemon_has_one_token_per_gpu() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sock = dir.path().join("d.sock");
    let mut d = start(&sock, &["--allocator", "k-fmlp", "--gpus", "2"], None);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(d.0.id() as libc::pid_t, libc::SIGTERM) };
    let child = std::mem::replace(&mut d.0, Command::new("true").spawn().expect("placeholder"));
    let out = child.wait_with_output().expect("daemon output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("2 GPU(s), 1 token(s) each"), "{stdout}");
}

/// With few descriptors (RLIMIT_NOFILE 48) and many connections piling
/// up, the daemon neither spins nor locks anyone out: idle connections
/// make room and a well-behaved client is served.
#[test]
fn running_out_of_descriptors_neither_spins_nor_locks_out() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sock = dir.path().join("d.sock");
    let d = start(&sock, &[], Some(48));
    let mut idle = Vec::new();
    for _ in 0..120 {
        match std::os::unix::net::UnixStream::connect(&sock) {
            Ok(s) => idle.push(s),
            Err(_) => break,
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let before = rtgpu_runtime::os::process_cpu_ticks(d.0.id()).expect("stat");
    std::thread::sleep(Duration::from_secs(2));
    let used = rtgpu_runtime::os::process_cpu_ticks(d.0.id()).expect("stat") - before;
    // A spinning daemon uses ~200 ticks in 2 s; a sleeping one ~0.
    assert!(used < 60, "the daemon used {used} ticks of CPU in 2 s");
    let (tx, rx) = std::sync::mpsc::channel();
    let s = sock.clone();
    std::thread::spawn(move || {
        let r = RemoteClient::connect_timeout(&s, 10, Duration::from_secs(25)).and_then(|mut c| {
            c.token(1_000, 0, None, 0)?;
            c.release_token()
        });
        let _ = tx.send(r.map_err(|e| e.to_string()));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("not served within 30 s")
        .expect("served");
    drop(idle);
}
