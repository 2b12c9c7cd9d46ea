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

// ---------------------------------------------------------------------
// Hardening (issue 22): the daemon runs as root; no client may freeze or
// fool it, and it replaces nothing but its own stale socket.
// ---------------------------------------------------------------------

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::mpsc;

use rtgpu_runtime::daemon::{spawn_limited, Limits, RemoteError, Waiting};

/// A raw protocol message (32 bytes: op, a, b, c, d little-endian).
fn raw(op: u32, a: u32, b: u64, c: u64, d: u64) -> [u8; 32] {
    let mut m = [0u8; 32];
    m[0..4].copy_from_slice(&op.to_le_bytes());
    m[4..8].copy_from_slice(&a.to_le_bytes());
    m[8..16].copy_from_slice(&b.to_le_bytes());
    m[16..24].copy_from_slice(&c.to_le_bytes());
    m[24..32].copy_from_slice(&d.to_le_bytes());
    m
}
const REGISTER: u32 = 1;
const TOKEN: u32 = 2;
const PROTOCOL: u64 = 2;
const REGISTERED: u32 = 101;
const REFUSED: u32 = 199;

fn gettid() -> u64 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u64 }
}

/// Reads the daemon's first reply on a raw connection (op, a), or `None`
/// at end-of-file or after 20 s.
fn reply(s: &mut UnixStream) -> Option<(u32, u32)> {
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let mut m = [0u8; 32];
    s.read_exact(&mut m).ok()?;
    let u = |i: usize| u32::from_le_bytes([m[i], m[i + 1], m[i + 2], m[i + 3]]);
    Some((u(0), u(4)))
}

/// A well-behaved client, on a thread: connects, takes a token and the
/// execution engine, releases; `Err` unless it finished within 30 s (a
/// frozen daemon leaves the thread behind, blocked).
fn served(sock: &Path) -> Result<(), String> {
    let s = sock.to_path_buf();
    let (tx, rx) = mpsc::channel();
    let stage = std::sync::Arc::new(std::sync::atomic::AtomicU8::new(0));
    let st = std::sync::Arc::clone(&stage);
    std::thread::spawn(move || {
        let at = |k: u8| st.store(k, std::sync::atomic::Ordering::Relaxed);
        let r = (|| -> Result<(), RemoteError> {
            let mut c = RemoteClient::connect_timeout(&s, 30, Duration::from_secs(25))?;
            at(1);
            c.token(1_000, 0, None, 0)?;
            at(2);
            let r = c.lock(Engine::Exec)?;
            at(3);
            c.unlock(r)?;
            c.release_token()
        })();
        let _ = tx.send(r.map_err(|e| e.to_string()));
    });
    rx.recv_timeout(Duration::from_secs(30)).map_err(|_| {
        let what = [
            "connecting",
            "waiting for a token",
            "waiting for the engine",
            "releasing",
        ];
        let k = usize::from(stage.load(std::sync::atomic::Ordering::Relaxed)).min(3);
        format!("not served within 30 s (stuck {})", what[k])
    })?
}

struct Running {
    _dir: tempfile::TempDir,
    sock: PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    h: Option<std::thread::JoinHandle<std::io::Result<rtgpu_runtime::daemon::DaemonStats>>>,
}

impl Running {
    fn new(config: ArbiterConfig, limits: Limits) -> Running {
        let dir = tempfile::tempdir().expect("temp dir");
        let sock = dir.path().join("d.sock");
        let (stop, h) = spawn_limited(&sock, config, Waiting::Sleep, limits).expect("daemon");
        Running {
            _dir: dir,
            sock,
            stop,
            h: Some(h),
        }
    }

    fn finish(mut self) -> rtgpu_runtime::daemon::DaemonStats {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let h = self.h.take().expect("running");
        h.join().expect("daemon thread").expect("daemon ran")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A connection that floods the daemon with requests and never reads a
/// reply does not freeze it: the daemon writes without blocking, refuses
/// it and disconnects it; everyone else is served throughout.
#[test]
fn a_client_that_never_reads_does_not_freeze_the_daemon() {
    let d = Running::new(config(), Limits::default());
    let flooders: Vec<_> = (0..2)
        .map(|k| {
            let s = d.sock.clone();
            std::thread::spawn(move || {
                let mut c = UnixStream::connect(&s).expect("connect");
                c.set_write_timeout(Some(Duration::from_secs(2)))
                    .expect("timeout");
                // Unregistered garbage (k = 0) or a registered client's
                // bad requests (k = 1), 1 MiB, reading nothing.
                if k == 1 {
                    let _ = c.write_all(&raw(REGISTER, 10, gettid(), PROTOCOL, 0));
                }
                let m = raw(77, 0, 0, 0, 0);
                for _ in 0..(1 << 15) {
                    if c.write_all(&m).is_err() {
                        break;
                    }
                }
                c
            })
        })
        .collect();
    served(&d.sock).expect("a well-behaved client during the flood");
    let _held: Vec<UnixStream> = flooders
        .into_iter()
        .map(|f| f.join().expect("flooder"))
        .collect();
    served(&d.sock).expect("a well-behaved client after the flood");
    let stats = d.finish();
    assert!(stats.disconnected >= 1, "{stats:?}");
}

/// A connection that never registers is closed at the handshake timeout;
/// a registered one that holds nothing, at the idle timeout.
#[test]
fn silent_connections_time_out() {
    let d = Running::new(
        config(),
        Limits {
            handshake_timeout: Duration::from_millis(300),
            idle_timeout: Some(Duration::from_millis(300)),
            ..Limits::default()
        },
    );
    let mut silent = UnixStream::connect(&d.sock).expect("connect");
    let mut idle = UnixStream::connect(&d.sock).expect("connect");
    idle.write_all(&raw(REGISTER, 10, gettid(), PROTOCOL, 0))
        .expect("register");
    assert_eq!(reply(&mut idle).map(|r| r.0), Some(REGISTERED));
    let t0 = Instant::now();
    let mut b = [0u8; 32];
    silent
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    assert_eq!(silent.read(&mut b).expect("end-of-file, not a timeout"), 0);
    idle.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    assert_eq!(idle.read(&mut b).expect("end-of-file, not a timeout"), 0);
    assert!(t0.elapsed() < Duration::from_secs(15));
    // A client that holds a token is not idle, however long it is quiet.
    let mut busy = RemoteClient::connect(&d.sock, 10).expect("busy");
    busy.token(1_000, 0, None, 0).expect("token");
    std::thread::sleep(Duration::from_millis(900));
    let r = busy.lock(Engine::Exec).expect("still connected");
    busy.unlock(r).expect("unlock");
    busy.release_token().expect("release");
    let stats = d.finish();
    assert!(stats.disconnected >= 2, "{stats:?}");
}

/// Idle connections filling the table do not lock anyone out: the oldest
/// idle one makes room. When every client holds or waits for something,
/// a newcomer is refused with a clear error.
#[test]
fn idle_connections_cannot_lock_everyone_out() {
    let d = Running::new(
        config(),
        Limits {
            max_clients: 8,
            ..Limits::default()
        },
    );
    let mut idle: Vec<UnixStream> = Vec::new();
    for _ in 0..8 {
        let mut c = UnixStream::connect(&d.sock).expect("connect");
        c.write_all(&raw(REGISTER, 10, gettid(), PROTOCOL, 0))
            .expect("register");
        assert_eq!(reply(&mut c).map(|r| r.0), Some(REGISTERED));
        idle.push(c);
    }
    // Idle for a second at least: evictable.
    std::thread::sleep(Duration::from_millis(1_200));
    served(&d.sock).expect("a newcomer gets an idle client's place");
    // Now 8 busy clients: two hold the tokens, six wait for one.
    let mut busy: Vec<UnixStream> = Vec::new();
    for k in 0..8u64 {
        let mut c = UnixStream::connect(&d.sock).expect("connect");
        c.write_all(&raw(REGISTER, 10, gettid(), PROTOCOL, 0))
            .expect("register");
        assert_eq!(reply(&mut c).map(|r| r.0), Some(REGISTERED), "client {k}");
        // want = registration base + 1 is all the daemon needs here.
        c.write_all(&raw(TOKEN, 0, 1_000, k, 0)).expect("token");
        busy.push(c);
    }
    // Let the daemon see the requests.
    std::thread::sleep(Duration::from_millis(300));
    match RemoteClient::connect(&d.sock, 10) {
        Err(RemoteError::Refused(_, why)) => assert!(why.contains("maximum"), "{why}"),
        Err(e) => panic!("refused without a clear reason: {e}"),
        Ok(_) => panic!("a ninth client was admitted beside eight busy ones"),
    }
    drop(busy);
    served(&d.sock).expect("served once the busy ones left");
    drop(idle);
    d.finish();
}

/// The daemon changes the scheduling of the thread a client names: it
/// must be a thread of the connecting process.
#[test]
fn a_thread_id_of_another_process_is_refused() {
    let d = Running::new(config(), Limits::default());
    // pid 1's main thread: not ours.
    let mut c = UnixStream::connect(&d.sock).expect("connect");
    c.write_all(&raw(REGISTER, 99, 1, PROTOCOL, 0))
        .expect("register");
    assert_eq!(reply(&mut c), Some((REFUSED, 7)));
    // Nor a thread id that does not exist.
    let mut c = UnixStream::connect(&d.sock).expect("connect");
    c.write_all(&raw(REGISTER, 99, i32::MAX as u64, PROTOCOL, 0))
        .expect("register");
    assert_eq!(reply(&mut c), Some((REFUSED, 7)));
    // Our own thread is fine.
    let mut c = UnixStream::connect(&d.sock).expect("connect");
    c.write_all(&raw(REGISTER, 10, gettid(), PROTOCOL, 0))
        .expect("register");
    assert_eq!(reply(&mut c).map(|r| r.0), Some(REGISTERED));
    drop(c);
    d.finish();
}

/// A thread boosted by priority inheritance gets its own policy back when
/// its connection closes while boosted (its process lives on). Needs the
/// privilege to set SCHED_FIFO (skipped without).
#[test]
fn a_boosted_thread_is_restored_when_its_connection_closes() {
    use rtgpu_runtime::os::{probe_capabilities, sched_policy, SchedPolicy};
    if !probe_capabilities().fifo {
        eprintln!("skipped: no privilege to set SCHED_FIFO");
        return;
    }
    let mut cfg = ArbiterConfig::uniform(1, 2, 1, "gpusync", true, true).expect("config");
    cfg.apply_priorities = true;
    let d = Running::new(cfg, Limits::default());
    let me = gettid() as libc::pid_t;
    let own = sched_policy(me).expect("own policy");
    let mut a = RemoteClient::connect(&d.sock, 10).expect("a");
    a.token(1_000, 0, None, 0).expect("token a");
    let s = d.sock.clone();
    let b = std::thread::spawn(move || {
        let mut b = RemoteClient::connect(&s, 20).expect("b");
        b.token(1_000, 1, None, 0).expect("token b");
        b.release_token().expect("release b");
    });
    let until = |want: &dyn Fn(SchedPolicy) -> bool, what: &str| {
        let t0 = Instant::now();
        loop {
            let p = sched_policy(me).expect("policy");
            if want(p) {
                return;
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "{what}: {p:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    until(
        &|p| p == SchedPolicy::Fifo { priority: 20 },
        "a never inherited b's priority",
    );
    // The connection closes while boosted (Python: `del tok, client`).
    drop(a);
    until(&|p| p == own, "a was left boosted");
    b.join().expect("b");
    d.finish();
}

/// A second daemon on the same socket is refused, naming the first; a
/// daemon stopping unlinks only the socket it created.
#[test]
fn a_second_daemon_on_a_socket_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sock = dir.path().join("d.sock");
    let (stop, h) = spawn(&sock, config()).expect("first daemon");
    let e = spawn(&sock, config()).expect_err("a second daemon was started");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!(
            "another rtgpu daemon serves {} (pid {})",
            sock.display(),
            std::process::id()
        )),
        "{msg}"
    );
    // The first still serves.
    served(&sock).expect("the first daemon serves");
    // Its socket replaced behind its back (removed, another socket bound):
    // stopping must not delete the newcomer's.
    std::fs::remove_file(&sock).expect("remove");
    let other = UnixListener::bind(&sock).expect("bind another");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    h.join().expect("thread").expect("ran");
    assert!(
        sock.exists(),
        "the stopping daemon removed a socket not its own"
    );
    drop(other);
    // Stale now (nobody listens): a new daemon takes it over.
    let (stop, h) = spawn(&sock, config()).expect("over a stale socket");
    served(&sock).expect("served");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    h.join().expect("thread").expect("ran");
    assert!(!sock.exists(), "its own socket is removed");
}

/// `--socket some-file.txt` never deletes a file: anything but a stale
/// socket is refused (a regular file, a directory, a live socket).
#[test]
fn an_existing_file_is_never_replaced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("some-file.txt");
    std::fs::write(&file, "precious").expect("write");
    let e = spawn(&file, config()).expect_err("a regular file was replaced");
    assert!(e.to_string().contains("is not a socket"), "{e}");
    assert_eq!(std::fs::read_to_string(&file).expect("kept"), "precious");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("dir");
    assert!(spawn(&sub, config()).is_err());
    assert!(sub.is_dir());
    let live = dir.path().join("live.sock");
    let _l = UnixListener::bind(&live).expect("bind");
    let e = spawn(&live, config()).expect_err("a live socket was replaced");
    assert!(e.to_string().contains("listens"), "{e}");
    assert!(live.exists());
}

/// A daemon that accepts (the backlog) but never answers: `connect` gives
/// up with a timeout instead of waiting forever.
#[test]
fn connecting_to_a_silent_socket_times_out() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sock = dir.path().join("silent.sock");
    let _l = UnixListener::bind(&sock).expect("bind");
    let t0 = Instant::now();
    let e = match RemoteClient::connect_timeout(&sock, 10, Duration::from_millis(500)) {
        Err(e) => e,
        Ok(_) => panic!("connected to nobody"),
    };
    assert!(e.to_string().contains("no answer"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(20));
}

/// The k-FMLP admits one job per GPU (one token each, as its analysis and
/// the simulator assume), whatever ρ says.
#[test]
fn the_k_fmlp_admits_one_token_per_gpu() {
    let cfg = ArbiterConfig::uniform(1, 2, 2, "k-fmlp", true, false).expect("config");
    let d = Running::new(cfg, Limits::default());
    let mut a = RemoteClient::connect(&d.sock, 10).expect("a");
    a.token(1_000, 0, None, 0).expect("token a");
    let s = d.sock.clone();
    let (tx, rx) = mpsc::channel();
    let b = std::thread::spawn(move || {
        let mut b = RemoteClient::connect(&s, 10).expect("b");
        b.token(1_000, 1, None, 0).expect("token b");
        let _ = tx.send(());
        b.release_token().expect("release b");
    });
    assert!(
        rx.recv_timeout(Duration::from_millis(500)).is_err(),
        "a second token on GPU 0 under the k-FMLP"
    );
    a.release_token().expect("release a");
    rx.recv_timeout(Duration::from_secs(20)).expect("b after a");
    b.join().expect("b");
    d.finish();
}

/// Robustness, a stand-in for cargo-fuzz (which needs a nightly
/// toolchain; see docs/testing.md): `RTGPU_FUZZ_ROUNDS` rounds (default
/// 300, fixed seed `RTGPU_FUZZ_SEED`, default 1) of random bytes, torn
/// messages, and random valid and invalid message sequences from up to 8
/// connections at once, some reading their replies, most not, some closed
/// mid-sequence. The daemon must not panic or hang, and a well-behaved
/// client is served every 50 rounds and at the end.
#[test]
fn random_traffic_does_no_harm() {
    let rounds: u64 = std::env::var("RTGPU_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut x: u64 = std::env::var("RTGPU_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        | 1;
    let mut rnd = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n.max(1)
    };
    let d = Running::new(
        config(),
        Limits {
            handshake_timeout: Duration::from_millis(500),
            ..Limits::default()
        },
    );
    // A well-behaved client works throughout, through hand-offs with the
    // random clients.
    let busy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (done_tx, done_rx) = mpsc::channel();
    {
        let (s, busy) = (d.sock.clone(), std::sync::Arc::clone(&busy));
        std::thread::spawn(move || {
            let r = (|| -> Result<u64, RemoteError> {
                let mut c = RemoteClient::connect(&s, 40)?;
                let mut n = 0;
                while busy.load(std::sync::atomic::Ordering::Relaxed) {
                    c.token(1_000, 9, None, 0)?;
                    let r = c.lock(Engine::Exec)?;
                    c.unlock(r)?;
                    c.release_token()?;
                    n += 1;
                }
                Ok(n)
            })();
            let _ = done_tx.send(r.map_err(|e| e.to_string()));
        });
    }
    let mut open: Vec<UnixStream> = Vec::new();
    let interesting = [
        0u64,
        1,
        2,
        3,
        255,
        256,
        257,
        1 << 16,
        u32::MAX as u64,
        u64::MAX,
    ];
    for round in 0..rounds {
        let Ok(mut c) = UnixStream::connect(&d.sock) else {
            continue;
        };
        let _ = c.set_write_timeout(Some(Duration::from_secs(2)));
        let mut bytes: Vec<u8> = Vec::new();
        match rnd(4) {
            // Random bytes, any length (torn messages included).
            0 => bytes.extend((0..rnd(300)).map(|_| rnd(256) as u8)),
            // A bad registration: another version or someone else's thread.
            1 => bytes.extend_from_slice(&raw(
                REGISTER,
                rnd(300) as u32,
                if rnd(2) == 0 { 1 } else { gettid() },
                rnd(4),
                0,
            )),
            // A registration, then random requests, valid and not.
            _ => {
                bytes.extend_from_slice(&raw(REGISTER, rnd(120) as u32, gettid(), PROTOCOL, 0));
                for _ in 0..rnd(24) {
                    let field = |r: &mut dyn FnMut(u64) -> u64| {
                        if r(2) == 0 {
                            interesting[r(interesting.len() as u64) as usize]
                        } else {
                            r(u64::MAX)
                        }
                    };
                    let op = if rnd(5) == 0 {
                        rnd(300) as u32
                    } else {
                        1 + rnd(5) as u32
                    };
                    let a = field(&mut rnd) as u32;
                    let (b, c2, dd) = (field(&mut rnd), field(&mut rnd), field(&mut rnd));
                    bytes.extend_from_slice(&raw(op, a, b, c2, dd));
                }
                if rnd(4) == 0 {
                    bytes.truncate(bytes.len() - rnd(32) as usize);
                }
            }
        }
        if std::env::var_os("RTGPU_FUZZ_DUMP").is_some() {
            let msgs: Vec<String> = bytes
                .chunks(32)
                .map(|m| {
                    if m.len() < 32 {
                        return format!("torn{}", m.len());
                    }
                    let u = |i: usize| u32::from_le_bytes([m[i], m[i + 1], m[i + 2], m[i + 3]]);
                    let q = |i: usize| {
                        let mut b = [0u8; 8];
                        b.copy_from_slice(&m[i..i + 8]);
                        u64::from_le_bytes(b)
                    };
                    format!("({},{},{:#x},{:#x},{:#x})", u(0), u(4), q(8), q(16), q(24))
                })
                .collect();
            eprintln!("round {round}: {}", msgs.join(" "));
        }
        let _ = c.write_all(&bytes);
        if rnd(3) == 0 {
            // Reads what came back, without waiting.
            let _ = c.set_nonblocking(true);
            let mut sink = [0u8; 512];
            while matches!(c.read(&mut sink), Ok(n) if n > 0) {}
        }
        // Kept open a while, or closed at once (before the check below:
        // a raw client may hold the token and the engine).
        if rnd(2) == 0 {
            open.push(c);
        } else {
            drop(c);
        }
        if open.len() > 8 {
            let k = rnd(open.len() as u64) as usize;
            open.swap_remove(k);
        }
        if round % 50 == 49 {
            open.clear();
            served(&d.sock).unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
    }
    open.clear();
    served(&d.sock).expect("served after the random traffic");
    busy.store(false, std::sync::atomic::Ordering::Relaxed);
    let sections = done_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the busy client finishes")
        .expect("the busy client is served throughout");
    assert!(sections > 0);
    let stats = d.finish();
    assert_eq!(stats.handoff_mismatches, 0, "{stats:?}");
    eprintln!("{rounds} rounds: {stats:?}");
}

/// The lock file is written (the owner's pid): never through a hard link
/// to another file.
#[test]
fn a_lock_file_with_other_links_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep").expect("write");
    let sock = dir.path().join("d.sock");
    std::fs::hard_link(&victim, rtgpu_runtime::daemon::lock_path(&sock)).expect("link");
    let e = spawn(&sock, config()).expect_err("a linked lock file was used");
    assert!(e.to_string().contains("other links"), "{e}");
    assert_eq!(std::fs::read_to_string(&victim).expect("kept"), "keep");
}

/// A daemon in a process of its own whose descriptors run out after it
/// started (another part of the process took them all): see below.
#[test]
#[ignore = "run as a child process by the descriptor-exhaustion test"]
fn child_fd_hog_daemon() {
    let sock = std::env::var("RTGPU_TEST_CHILD_SOCKET").expect("child mode needs its socket");
    let r = libc::rlimit {
        rlim_cur: 64,
        rlim_max: 64,
    };
    // SAFETY: setrlimit reads the struct.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) }, 0);
    let (_stop, _h) = spawn(Path::new(&sock), config()).expect("daemon");
    // Serving (its setup done) before the descriptors go.
    drop(RemoteClient::connect(Path::new(&sock), 10).expect("the daemon serves"));
    let mut hog = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        hog.push(f);
    }
    drop(hog.pop());
    std::fs::write(format!("{sock}.ready"), hog.len().to_string()).expect("ready");
    // A few left for the daemon's clients, far fewer than it planned for.
    hog.truncate(hog.len().saturating_sub(4));
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// When `accept` fails for want of descriptors, the daemon says so once,
/// backs off instead of spinning on its readable listener, closes idle
/// connections, and still serves a well-behaved client.
#[test]
fn descriptor_exhaustion_backs_off_and_still_serves() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sock = dir.path().join("d.sock");
    struct Reap(Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut d = Reap(
        Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--ignored",
                "--exact",
                "child_fd_hog_daemon",
                "--test-threads=1",
                "-q",
                "--nocapture",
            ])
            .env("RTGPU_TEST_CHILD_SOCKET", &sock)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn the daemon"),
    );
    let ready = PathBuf::from(format!("{}.ready", sock.display()));
    let t0 = Instant::now();
    while !ready.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the child never got ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let idle: Vec<UnixStream> = (0..40)
        .filter_map(|_| UnixStream::connect(&sock).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let pid = d.0.id();
    let before = rtgpu_runtime::os::process_cpu_ticks(pid).expect("stat");
    std::thread::sleep(Duration::from_secs(2));
    let used = rtgpu_runtime::os::process_cpu_ticks(pid).expect("stat") - before;
    // A spinning daemon uses ~200 ticks in 2 s; a backing-off one ~0.
    assert!(used < 60, "the daemon used {used} ticks of CPU in 2 s");
    if let Err(e) = served(&sock) {
        let _ = d.0.kill();
        let _ = d.0.wait();
        let mut err = String::new();
        if let Some(mut x) = d.0.stderr.take() {
            let _ = x.read_to_string(&mut err);
        }
        panic!("served while descriptors are short: {e}\n{err}");
    }
    drop(idle);
    let _ = d.0.kill();
    let _ = d.0.wait();
    let mut err = String::new();
    if let Some(mut e) = d.0.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert_eq!(
        err.matches("cannot accept connections").count(),
        1,
        "said once: {err}"
    );
}
