//! `handoff`: how fast can one thread or process hand control to another?
//! The measurement behind the choice of the arbiter's cross-process
//! mechanism (issue 5, docs/guide/gpu.md "Choosing the mechanism"): a raw
//! futex hand-off is the floor any lock hand-off is compared with.
//!
//! ```text
//! cargo run --release -p rtgpu-bench --bin handoff -- [--iterations N] [--json]
//! ```
//!
//! Each mechanism plays ping-pong between two parties pinned to different
//! CPUs (SCHED_FIFO where allowed): cross-process over a shared futex word, a
//! Unix socket pair, a pipe pair and an eventfd pair; in-process over a
//! private futex word and a std Mutex + Condvar. One-way latency is half a
//! round trip; the table reports percentiles and the ratio to the shared
//! futex in the same run.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use rtgpu_runtime::futex::{self, Scope};
use rtgpu_runtime::os::{self, monotonic_now, SchedPolicy};

struct Result {
    name: &'static str,
    one_way: Vec<u64>,
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn setup_party(cpu: usize, realtime: bool) {
    let _ = os::set_affinity(0, &[cpu]);
    if realtime {
        let _ = os::set_sched_policy(0, SchedPolicy::Fifo { priority: 80 });
    }
}

/// Shared anonymous memory for `n` futex words, visible to a forked child.
fn shared_words(n: usize) -> &'static [AtomicU32] {
    let len = n * std::mem::size_of::<AtomicU32>();
    // SAFETY: a fresh anonymous shared mapping, zero-filled, never unmapped
    // (the benchmark process is short-lived); AtomicU32 has u32's layout.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert!(p != libc::MAP_FAILED, "mmap failed");
        std::slice::from_raw_parts(p.cast::<AtomicU32>(), n)
    }
}

/// Forks a child that runs `child` then exits; returns its pid.
fn fork_child(child: impl FnOnce()) -> libc::pid_t {
    // SAFETY: the benchmark forks before starting threads of its own in this
    // phase; the child only runs `child` and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        child();
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    pid
}

fn reap(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
}

fn futex_shared(iters: usize, cpus: (usize, usize), rt: bool) -> Result {
    let w = &shared_words(1)[0];
    let pid = fork_child(|| {
        setup_party(cpus.1, rt);
        for i in 0..iters as u32 {
            let ping = 2 * i + 1;
            while w.load(Ordering::Acquire) != ping {
                futex::wait(w, ping - 1, None, Scope::Shared);
            }
            w.store(ping + 1, Ordering::Release);
            futex::wake(w, 1, Scope::Shared);
        }
    });
    setup_party(cpus.0, rt);
    let mut one_way = Vec::with_capacity(iters);
    for i in 0..iters as u32 {
        let t0 = monotonic_now();
        w.store(2 * i + 1, Ordering::Release);
        futex::wake(w, 1, Scope::Shared);
        while w.load(Ordering::Acquire) != 2 * i + 2 {
            futex::wait(w, 2 * i + 1, None, Scope::Shared);
        }
        one_way.push((monotonic_now() - t0) / 2);
    }
    reap(pid);
    Result {
        name: "futex, cross-process",
        one_way,
    }
}

/// Ping-pong of one byte over two file-descriptor pairs (a = parent to
/// child, b = child to parent).
fn fd_pingpong(
    name: &'static str,
    iters: usize,
    cpus: (usize, usize),
    rt: bool,
    pairs: ([libc::c_int; 2], [libc::c_int; 2]),
    width: usize,
) -> Result {
    let (a, b) = pairs;
    let io = |fd: libc::c_int, read: bool| {
        let mut buf = [1u8; 8];
        // SAFETY: valid descriptors and a buffer of at least `width` bytes.
        let n = unsafe {
            if read {
                libc::read(fd, buf.as_mut_ptr().cast(), width)
            } else {
                libc::write(fd, buf.as_ptr().cast(), width)
            }
        };
        assert_eq!(n, width as isize, "{name}: short transfer");
    };
    let pid = fork_child(|| {
        setup_party(cpus.1, rt);
        for _ in 0..iters {
            io(a[0], true);
            io(b[1], false);
        }
    });
    setup_party(cpus.0, rt);
    let mut one_way = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t0 = monotonic_now();
        io(a[1], false);
        io(b[0], true);
        one_way.push((monotonic_now() - t0) / 2);
    }
    reap(pid);
    for fd in [a[0], a[1], b[0], b[1]] {
        // SAFETY: closing our own descriptors once.
        unsafe { libc::close(fd) };
    }
    Result { name, one_way }
}

fn pipes() -> ([libc::c_int; 2], [libc::c_int; 2]) {
    let mut a = [0; 2];
    let mut b = [0; 2];
    // SAFETY: valid out-arrays.
    unsafe {
        assert_eq!(libc::pipe(a.as_mut_ptr()), 0);
        assert_eq!(libc::pipe(b.as_mut_ptr()), 0);
    }
    (a, b)
}

fn socketpair() -> ([libc::c_int; 2], [libc::c_int; 2]) {
    let mut s = [0; 2];
    // SAFETY: valid out-array.
    unsafe {
        assert_eq!(
            libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, s.as_mut_ptr()),
            0
        );
    }
    // Parent writes s[0], child reads s[1]; child writes s[1], parent reads s[0].
    ([s[1], s[0]], [s[0], s[1]])
}

fn eventfds() -> ([libc::c_int; 2], [libc::c_int; 2]) {
    // SAFETY: plain eventfd creation.
    let (e1, e2) = unsafe { (libc::eventfd(0, 0), libc::eventfd(0, 0)) };
    assert!(e1 >= 0 && e2 >= 0);
    ([e1, e1], [e2, e2])
}

fn futex_private(iters: usize, cpus: (usize, usize), rt: bool) -> Result {
    let word = Arc::new(AtomicU32::new(0));
    let w = Arc::clone(&word);
    let child = std::thread::spawn(move || {
        setup_party(cpus.1, rt);
        for i in 0..iters as u32 {
            let ping = 2 * i + 1;
            while w.load(Ordering::Acquire) != ping {
                futex::wait(&w, ping - 1, None, Scope::Private);
            }
            w.store(ping + 1, Ordering::Release);
            futex::wake(&w, 1, Scope::Private);
        }
    });
    setup_party(cpus.0, rt);
    let mut one_way = Vec::with_capacity(iters);
    for i in 0..iters as u32 {
        let t0 = monotonic_now();
        word.store(2 * i + 1, Ordering::Release);
        futex::wake(&word, 1, Scope::Private);
        while word.load(Ordering::Acquire) != 2 * i + 2 {
            futex::wait(&word, 2 * i + 1, None, Scope::Private);
        }
        one_way.push((monotonic_now() - t0) / 2);
    }
    let _ = child.join();
    Result {
        name: "futex, in-process",
        one_way,
    }
}

fn condvar(iters: usize, cpus: (usize, usize), rt: bool) -> Result {
    let pair = Arc::new((Mutex::new(0u64), Condvar::new()));
    let p = Arc::clone(&pair);
    let child = std::thread::spawn(move || {
        setup_party(cpus.1, rt);
        let (m, c) = &*p;
        for i in 0..iters as u64 {
            let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
            while *g != 2 * i + 1 {
                g = c.wait(g).unwrap_or_else(|e| e.into_inner());
            }
            *g += 1;
            c.notify_all();
        }
    });
    setup_party(cpus.0, rt);
    let (m, c) = &*pair;
    let mut one_way = Vec::with_capacity(iters);
    for i in 0..iters as u64 {
        let t0 = monotonic_now();
        let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
        *g = 2 * i + 1;
        c.notify_all();
        while *g != 2 * i + 2 {
            g = c.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        drop(g);
        one_way.push((monotonic_now() - t0) / 2);
    }
    let _ = child.join();
    Result {
        name: "Mutex + Condvar, in-process",
        one_way,
    }
}

fn main() {
    let mut iters = 20_000usize;
    let mut json = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--iterations" => match args.next().and_then(|v| v.parse().ok()) {
                Some(n) if n > 0 => iters = n,
                _ => {
                    eprintln!("handoff: --iterations needs a positive integer");
                    std::process::exit(2);
                }
            },
            "--json" => json = true,
            other => {
                eprintln!("handoff: unknown argument {other:?} (use --iterations N, --json)");
                std::process::exit(2);
            }
        }
    }
    let caps = os::probe_capabilities();
    let cpus = match caps.cpus.as_slice() {
        [a, b, ..] => (*a, *b),
        [a] => (*a, *a),
        [] => (0, 0),
    };
    let rt = caps.fifo;
    let mut results = vec![
        // The measured processes are forked before any thread exists.
        futex_shared(iters, cpus, rt),
        fd_pingpong(
            "unix socket (seqpacket), cross-process",
            iters,
            cpus,
            rt,
            socketpair(),
            1,
        ),
        fd_pingpong("pipe, cross-process", iters, cpus, rt, pipes(), 1),
        fd_pingpong("eventfd, cross-process", iters, cpus, rt, eventfds(), 8),
    ];
    results.push(futex_private(iters, cpus, rt));
    results.push(condvar(iters, cpus, rt));
    let _ = os::set_sched_policy(0, SchedPolicy::Other { nice: 0 });

    let mut rows = Vec::new();
    for r in &mut results {
        // Drop the first 5% as warm-up.
        let skip = r.one_way.len() / 20;
        let mut v = r.one_way.split_off(skip);
        v.sort_unstable();
        rows.push((
            r.name,
            pct(&v, 0.5),
            pct(&v, 0.99),
            pct(&v, 0.999),
            v.last().copied().unwrap_or(0),
        ));
    }
    let base = rows.first().map_or((1, 1), |r| (r.1.max(1), r.2.max(1)));
    if json {
        let items: Vec<String> = rows
            .iter()
            .map(|(n, p50, p99, p999, max)| {
                format!(
                    "{{\"mechanism\":\"{n}\",\"p50_ns\":{p50},\"p99_ns\":{p99},\"p999_ns\":{p999},\"max_ns\":{max}}}"
                )
            })
            .collect();
        println!(
            "{{\"iterations\":{iters},\"cpus\":[{},{}],\"sched_fifo\":{rt},\"results\":[{}]}}",
            cpus.0,
            cpus.1,
            items.join(",")
        );
        return;
    }
    println!(
        "one-way hand-off latency, {iters} round trips, CPUs {} and {}, {}",
        cpus.0,
        cpus.1,
        if rt {
            "SCHED_FIFO 80"
        } else {
            "SCHED_OTHER (no real-time privilege)"
        }
    );
    println!(
        "{:<42} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10}",
        "mechanism", "p50 us", "p99 us", "p99.9 us", "max us", "p50/futex", "p99/futex"
    );
    for (n, p50, p99, p999, max) in &rows {
        println!(
            "{:<42} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>10.2} {:>10.2}",
            n,
            *p50 as f64 / 1e3,
            *p99 as f64 / 1e3,
            *p999 as f64 / 1e3,
            *max as f64 / 1e3,
            *p50 as f64 / base.0 as f64,
            *p99 as f64 / base.1 as f64
        );
    }
}
