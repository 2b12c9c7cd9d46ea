//! Cross-process mode with real processes: clients of `rtgpu daemon` killed
//! with SIGKILL at random points (holding a token, an engine lock, or
//! waiting for either) never strand a GPU or a lock: the daemon sees the
//! death at once and grants the next waiter.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use rtgpu_runtime::arbiter::{ArbiterConfig, Engine, QueueRule, TokenConfig};
use rtgpu_runtime::daemon::{spawn, RemoteClient};

fn config() -> ArbiterConfig {
    ArbiterConfig {
        copy_engines: vec![1],
        tokens: TokenConfig {
            gpus: 1,
            tokens_per_gpu: 2,
            rule: QueueRule::ShortestQueue,
            stealing: false,
            queue_cap: usize::MAX,
        },
        distance: Vec::new(),
        engine_locks: true,
        apply_priorities: false,
        priors: Vec::new(),
    }
}

/// A client process: loops over GPU sections forever, in random shapes
/// (hold times, whether it takes one or two engine locks), until killed.
#[test]
#[ignore = "run as a child process by the kill test"]
fn child_client() {
    let sock = std::env::var("RTGPU_TEST_CHILD_SOCKET").expect("child mode needs its socket");
    let mut c = RemoteClient::connect(Path::new(&sock), 10).expect("connect");
    let mut x = std::process::id() as u64 | 1;
    let mut rnd = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    loop {
        c.token(1_000_000, 0, None, 0).expect("token");
        std::thread::sleep(Duration::from_micros(rnd(500)));
        let engines: &[Engine] = if rnd(2) == 0 {
            &[Engine::Exec]
        } else {
            &[Engine::CopyIn, Engine::Exec, Engine::CopyOut]
        };
        for &e in engines {
            let r = c.lock(e).expect("lock");
            std::thread::sleep(Duration::from_micros(rnd(2_000)));
            c.unlock(r).expect("unlock");
        }
        c.release_token().expect("release");
    }
}

fn child(sock: &Path) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--ignored",
            "--exact",
            "child_client",
            "--test-threads=1",
            "-q",
        ])
        .env("RTGPU_TEST_CHILD_SOCKET", sock)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn a client process")
}

#[test]
fn two_hundred_random_kills_strand_nothing() {
    let dir = std::env::temp_dir().join(format!("rtgpu-daemon-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let sock: PathBuf = dir.join("rtgpud.sock");
    let (stop, daemon) = spawn(&sock, config()).expect("daemon");

    let mut children: Vec<Child> = (0..4).map(|_| child(&sock)).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    // An observer in this process keeps using the GPU throughout: it must
    // keep getting through, whoever dies holding what.
    let obs_sock = sock.clone();
    let observer_stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let os = std::sync::Arc::clone(&observer_stop);
    let observer = std::thread::spawn(move || {
        let mut c = RemoteClient::connect(&obs_sock, 20).expect("observer connects");
        let mut worst = Duration::ZERO;
        let mut sections = 0u64;
        while !os.load(std::sync::atomic::Ordering::Relaxed) {
            let t0 = Instant::now();
            c.token(1_000_000, 1, None, 0).expect("observer token");
            let r = c.lock(Engine::Exec).expect("observer lock");
            worst = worst.max(t0.elapsed());
            c.unlock(r).expect("unlock");
            c.release_token().expect("release");
            sections += 1;
        }
        (worst, sections)
    });

    for _ in 0..200 {
        std::thread::sleep(Duration::from_micros(1_000 + rnd(4_000)));
        let k = rnd(children.len() as u64) as usize;
        let _ = children[k].kill();
        let _ = children[k].wait();
        children[k] = child(&sock);
    }
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    observer_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (worst, sections) = observer.join().expect("observer");

    // Nothing stranded: a fresh client gets the token and every engine at
    // once (within 50 ms, the bound for granting the next waiter).
    let mut fresh = RemoteClient::connect(&sock, 30).expect("connect");
    let t0 = Instant::now();
    fresh.token(1, 2, None, 0).expect("token");
    for e in [Engine::Exec, Engine::CopyIn, Engine::CopyOut] {
        let r = fresh.lock(e).expect("lock");
        fresh.unlock(r).expect("unlock");
    }
    fresh.release_token().expect("release");
    assert!(
        t0.elapsed() < Duration::from_millis(50),
        "{:?}",
        t0.elapsed()
    );
    drop(fresh);

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let stats = daemon.join().expect("daemon thread").expect("daemon ran");
    // 204 client processes were started; one killed before it connected
    // never counts.
    assert!(stats.clients >= 100, "{stats:?}");
    assert!(
        stats.crashed_clients >= 50,
        "most kills hit a client holding or waiting: {stats:?}"
    );
    assert!(sections > 10, "the observer kept using the GPU: {sections}");
    assert!(
        stats.direct_handoffs > 0,
        "waiters got locks and tokens in one hop: {stats:?}"
    );
    assert_eq!(stats.handoff_mismatches, 0, "{stats:?}");
    // Four clients hold the exec engine at most 2 ms each between the
    // observer's turns; dead ones are skipped at once.
    assert!(
        worst < Duration::from_millis(500),
        "observer waited {worst:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A daemon in a process of its own (so that the test can freeze it).
#[test]
#[ignore = "run as a child process by the frozen-daemon test"]
fn child_daemon() {
    let sock = std::env::var("RTGPU_TEST_CHILD_SOCKET").expect("child mode needs its socket");
    let never = std::sync::atomic::AtomicBool::new(false);
    rtgpu_runtime::daemon::serve(
        Path::new(&sock),
        &config(),
        rtgpu_runtime::daemon::Waiting::Sleep,
        &never,
    )
    .expect("serve");
}

/// The one-hop hand-off needs no daemon: with the daemon stopped
/// (SIGSTOP) after it published the waiter as the lock's successor, the
/// holder's release still wakes the waiter with the lock. Once the daemon
/// continues, it catches up and serves everyone again.
#[test]
fn a_lock_passes_to_its_published_successor_while_the_daemon_is_frozen() {
    let dir = std::env::temp_dir().join(format!("rtgpu-frozen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let sock = dir.join("rtgpud.sock");
    /// Kills the daemon however the test ends (a failed assertion included).
    struct Reap(Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let pid = self.0.id() as libc::pid_t;
            // SAFETY: signalling our own child (a stopped one must continue
            // to die).
            unsafe { libc::kill(pid, libc::SIGCONT) };
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let daemon = Reap(
        Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--ignored",
                "--exact",
                "child_daemon",
                "--test-threads=1",
                "-q",
            ])
            .env("RTGPU_TEST_CHILD_SOCKET", &sock)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn the daemon"),
    );
    let t0 = Instant::now();
    let mut a = loop {
        match RemoteClient::connect(&sock, 10) {
            Ok(c) => break c,
            Err(e) => {
                assert!(t0.elapsed() < Duration::from_secs(20), "daemon: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    };
    a.token(1_000, 0, None, 0).expect("token a");
    let held = a.lock(Engine::Exec).expect("lock a");
    let s = sock.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let b = std::thread::spawn(move || {
        let mut b = RemoteClient::connect(&s, 20).expect("b");
        b.token(1_000, 1, None, 0).expect("token b");
        tx.send(()).expect("queued");
        let r = b.lock(Engine::Exec).expect("lock b");
        tx.send(()).expect("granted");
        (b, r)
    });
    rx.recv().expect("b has its token");
    // Time for b's request to reach the daemon and the daemon to publish.
    std::thread::sleep(Duration::from_millis(200));
    let pid = daemon.0.id() as libc::pid_t;
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    std::thread::sleep(Duration::from_millis(50));
    a.unlock(held).expect("unlock a");
    let got = rx.recv_timeout(Duration::from_secs(2));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert!(
        got.is_ok(),
        "b was not granted while the daemon was stopped"
    );
    let (mut b, r) = b.join().expect("b");
    b.unlock(r).expect("unlock b");
    b.release_token().expect("release b");
    // The daemon caught up: a takes the lock again at once.
    let r = a.lock(Engine::Exec).expect("lock a again");
    a.unlock(r).expect("unlock");
    a.release_token().expect("release a");
    drop(daemon);
    let _ = std::fs::remove_dir_all(&dir);
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// The soak (not in the suite): `RTGPU_SOAK_CLIENTS` client processes
/// (default 64) for `RTGPU_SOAK_SECONDS` (default 600), one killed and
/// replaced every 100 ms; checks that the daemon (in this process) neither
/// leaks nor deadlocks:
///
/// `RTGPU_SOAK_SECONDS=600 cargo test --release -p rtgpu-runtime --test daemon -- --ignored --exact soak`
#[test]
#[ignore = "long soak, run by hand (docs/runtime.md)"]
fn soak() {
    let n: usize = std::env::var("RTGPU_SOAK_CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let secs: u64 = std::env::var("RTGPU_SOAK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    let dir = std::env::temp_dir().join(format!("rtgpu-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let sock = dir.join("rtgpud.sock");
    let (stop, daemon) = spawn(&sock, config()).expect("daemon");
    let mut children: Vec<Child> = (0..n).map(|_| child(&sock)).collect();
    let start = Instant::now();
    let mut rss_after_warmup = None;
    let mut k = 0;
    while start.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_millis(100));
        let _ = children[k % n].kill();
        let _ = children[k % n].wait();
        children[k % n] = child(&sock);
        k += 1;
        if rss_after_warmup.is_none() && start.elapsed() > Duration::from_secs(secs / 10) {
            rss_after_warmup = Some(rss_kib());
        }
        // No deadlock: a fresh client still gets through.
        if k % 50 == 0 {
            let mut c = RemoteClient::connect(&sock, 40).expect("connect");
            let t0 = Instant::now();
            c.token(1, 3, None, 0).expect("token");
            let r = c.lock(Engine::Exec).expect("lock");
            c.unlock(r).expect("unlock");
            c.release_token().expect("release");
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "waited {:?}",
                t0.elapsed()
            );
        }
    }
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    let end_rss = rss_kib();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let stats = daemon.join().expect("daemon").expect("ran");
    let warm = rss_after_warmup.unwrap_or(end_rss);
    eprintln!("soak: {n} clients, {secs} s, {k} kills, {stats:?}, RSS {warm} KiB after warm-up, {end_rss} KiB at the end");
    assert!(
        end_rss <= warm + 8 * 1024,
        "RSS grew from {warm} to {end_rss} KiB"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
