//! The in-process arbiter with real threads: mutual exclusion and FIFO
//! hand-off of tokens and engine locks, priority inheritance applied to the
//! real threads (seed 004 §4.2), and release on panic.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use rtgpu_policy::engine_lock::Engine;
use rtgpu_policy::token::{Config, QueueRule};
use rtgpu_runtime::arbiter::{Arbiter, ArbiterConfig, EventKind};
use rtgpu_runtime::os::{self, monotonic_now, SchedPolicy};

fn config(gpus: usize, rho: usize, apply: bool) -> ArbiterConfig {
    ArbiterConfig {
        copy_engines: vec![2; gpus],
        tokens: Config {
            gpus,
            tokens_per_gpu: rho,
            rule: QueueRule::ShortestQueue,
            stealing: true,
            queue_cap: usize::MAX,
        },
        distance: Vec::new(),
        engine_locks: true,
        apply_priorities: apply,
        priors: Vec::new(),
    }
}

#[test]
fn tokens_and_engine_locks_are_mutually_exclusive_under_contention() {
    // Two GPUs, one token each; eight threads, fifty GPU sections each.
    let arb = Arbiter::new(&config(2, 1, false));
    let holders = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let exec = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let arb = Arc::clone(&arb);
            let holders = Arc::clone(&holders);
            let exec = Arc::clone(&exec);
            std::thread::spawn(move || {
                let c = arb.register(10 + t as u8).expect("register");
                for _ in 0..50 {
                    let tok = c.token(t, 100_000, None, 0).expect("token");
                    let g = tok.gpu();
                    assert_eq!(
                        holders[g].fetch_add(1, Ordering::SeqCst),
                        0,
                        "two token holders"
                    );
                    {
                        let _e = tok.engine(Engine::Exec).expect("exec lock");
                        assert_eq!(
                            exec[g].fetch_add(1, Ordering::SeqCst),
                            0,
                            "two exec holders"
                        );
                        std::hint::black_box((0..200).sum::<u64>());
                        exec[g].fetch_sub(1, Ordering::SeqCst);
                    }
                    holders[g].fetch_sub(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
    let events = arb.take_events();
    let granted = events
        .iter()
        .filter(|e| matches!(e.what, EventKind::TokenGranted { .. }))
        .count();
    assert_eq!(granted, 8 * 50, "every request granted exactly once");
}

#[test]
fn a_panicking_holder_releases_its_token_and_lock() {
    let arb = Arbiter::new(&config(1, 1, false));
    let a = Arc::clone(&arb);
    let crashed = std::thread::spawn(move || {
        let c = a.register(10).expect("register");
        let tok = c.token(0, 1, None, 0).expect("token");
        let _e = tok.engine(Engine::CopyIn).expect("lock");
        panic!("client bug while holding a token and the copy-in lock");
    });
    assert!(crashed.join().is_err());
    // The next client gets both at once.
    let c = arb.register(10).expect("register");
    let t0 = monotonic_now();
    let tok = c.token(0, 1, None, 0).expect("token");
    let _e = tok.engine(Engine::CopyIn).expect("lock");
    assert!(monotonic_now() - t0 < 1_000_000_000);
}

/// Seed 004 §4.2 / seed 000 R2 with real threads on one CPU: L (FIFO 10)
/// holds the execution engine; H (FIFO 30) waits for it; M (FIFO 20), a CPU
/// hog, becomes ready. With inheritance L runs at H's priority, finishes its
/// 20 ms section and H gets the engine long before M's 200 ms burst ends.
#[test]
fn inheritance_keeps_a_medium_hog_from_delaying_the_high_waiter() {
    let caps = os::probe_capabilities();
    if !caps.fifo {
        // Without the privilege there are no priorities to inherit; the test
        // says so rather than pass vacuously.
        eprintln!("SKIPPED: needs SCHED_FIFO ({:?})", caps.reason);
        return;
    }
    let cpu = caps.cpus[0];
    let arb = Arbiter::new(&config(1, 2, true));
    let start = Arc::new(Barrier::new(3));
    let l_holds = Arc::new(Barrier::new(3));
    let spin = |ms: u64| os::spin_cpu_time(ms * 1_000_000);

    let (a, s, h) = (Arc::clone(&arb), Arc::clone(&start), Arc::clone(&l_holds));
    let low = std::thread::spawn(move || {
        os::set_affinity(0, &[cpu]).expect("pin");
        os::set_sched_policy(0, SchedPolicy::Fifo { priority: 10 }).expect("fifo");
        let c = a.register(10).expect("register");
        s.wait();
        let tok = c.token(0, 1, None, 0).expect("token");
        let _e = tok.engine(Engine::Exec).expect("exec");
        h.wait();
        spin(20);
    });
    let (a, s, h) = (Arc::clone(&arb), Arc::clone(&start), Arc::clone(&l_holds));
    let high = std::thread::spawn(move || {
        os::set_affinity(0, &[cpu]).expect("pin");
        let c = a.register(30).expect("register");
        os::set_sched_policy(0, SchedPolicy::Fifo { priority: 30 }).expect("fifo");
        s.wait();
        h.wait();
        // L holds the engine now. Request it (blocks), and time the wait.
        let t0 = monotonic_now();
        let tok = c.token(0, 1, None, 0).expect("token");
        let _e = tok.engine(Engine::Exec).expect("exec");
        monotonic_now() - t0
    });
    start.wait();
    l_holds.wait();
    // The medium hog: ready right after H blocks.
    // Real-time first, then onto L's CPU: a SCHED_OTHER thread would never
    // get to run there while L spins.
    let medium = std::thread::spawn(move || {
        os::set_sched_policy(0, SchedPolicy::Fifo { priority: 20 }).expect("fifo");
        os::set_affinity(0, &[cpu]).expect("pin");
        spin(200);
    });
    let waited = high.join().expect("high");
    low.join().expect("low");
    medium.join().expect("medium");
    // The analysed bound for H's wait is L's 20 ms section; without
    // inheritance it would also wait for M's 200 ms.
    assert!(waited < 120_000_000, "H waited {waited} ns");
    let raised = arb
        .take_events()
        .iter()
        .any(|e| e.what == EventKind::PriorityChanged { fifo: 30 });
    assert!(raised, "L inherited H's priority");
    assert!(arb.apply_errors().is_empty(), "{:?}", arb.apply_errors());
}

/// klmirqd in user space (seed 000 §IV): while a job holds a GPU token, the
/// GPU's interrupt threads run at the job's effective priority; when the GPU
/// is idle they are back at their own. A stand-in thread named like the
/// NVIDIA driver's plays the interrupt thread.
#[test]
fn interrupt_threads_follow_the_gpu_owner() {
    use rtgpu_runtime::klmirqd::IrqMirror;
    let caps = os::probe_capabilities();
    if !caps.fifo {
        eprintln!("SKIPPED: needs SCHED_FIFO ({:?})", caps.reason);
        return;
    }
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let irq = std::thread::Builder::new()
        .name("irq/979-nvidia".into())
        .spawn(move || {
            os::set_sched_policy(0, SchedPolicy::Fifo { priority: 50 }).expect("fifo");
            tid_tx.send(os::gettid()).expect("tid");
            let _ = stop_rx.recv();
        })
        .expect("stand-in");
    let tid = tid_rx.recv().expect("tid");
    let arb = Arbiter::new(&config(1, 1, true));
    arb.set_irq_mirrors(vec![Some(
        IrqMirror::matching(|c| c == "irq/979-nvidia").expect("/proc"),
    )]);
    let a = Arc::clone(&arb);
    std::thread::spawn(move || {
        os::set_sched_policy(0, SchedPolicy::Fifo { priority: 33 }).expect("fifo");
        let c = a.register(33).expect("register");
        {
            let _tok = c.token(0, 1, None, 0).expect("token");
            assert_eq!(
                os::sched_policy(tid).expect("read"),
                SchedPolicy::Fifo { priority: 33 },
                "the interrupt thread runs at the owner's priority"
            );
        }
        assert_eq!(
            os::sched_policy(tid).expect("read"),
            SchedPolicy::Fifo { priority: 50 },
            "and at its own once the GPU is idle"
        );
    })
    .join()
    .expect("owner");
    assert!(arb.apply_errors().is_empty(), "{:?}", arb.apply_errors());
    let _ = stop_tx.send(());
    irq.join().expect("stand-in");
}

/// EDF plans re-rank a GPU-using job's base priority while it holds a lock
/// (run/edf.rs): the thread follows its new base, except while it inherits
/// a higher waiter's priority, which keeps precedence until it releases.
#[test]
fn a_new_base_priority_applies_unless_inheritance_outranks_it() {
    let caps = os::probe_capabilities();
    if !caps.fifo {
        eprintln!("SKIPPED: needs SCHED_FIFO ({:?})", caps.reason);
        return;
    }
    let arb = Arbiter::new(&config(1, 2, true));
    let fifo = |tid| match os::sched_policy(tid).expect("read") {
        SchedPolicy::Fifo { priority } => priority,
        other => panic!("not SCHED_FIFO: {other:?}"),
    };
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let a = Arc::clone(&arb);
    let low = std::thread::spawn(move || {
        os::set_sched_policy(0, SchedPolicy::Fifo { priority: 20 }).expect("fifo");
        let c = a.register(20).expect("register");
        let tok = c.token(0, 1, None, 0).expect("token");
        let lock = tok.engine(Engine::Exec).expect("lock");
        c.set_base(25).expect("re-rank");
        assert_eq!(fifo(0), 25, "the new base applies at once");
        held_tx.send(os::gettid()).expect("send");
        // The waiter (40) queues on our lock; then the EDF order lowers us.
        go_rx.recv().expect("go");
        c.set_base(15).expect("re-rank");
        assert_eq!(fifo(0), 40, "inheritance outranks the new base");
        drop(lock);
        assert_eq!(fifo(0), 15, "the new base once nobody waits on us");
    });
    let tid = held_rx.recv().expect("held");
    let a = Arc::clone(&arb);
    let high = std::thread::spawn(move || {
        os::set_sched_policy(0, SchedPolicy::Fifo { priority: 40 }).expect("fifo");
        let c = a.register(40).expect("register");
        let tok = c.token(0, 1, None, 0).expect("token");
        let _lock = tok.engine(Engine::Exec).expect("lock");
    });
    let t0 = std::time::Instant::now();
    while fifo(tid) != 40 {
        assert!(t0.elapsed().as_secs() < 5, "the holder never inherited");
        std::thread::yield_now();
    }
    go_tx.send(()).expect("go");
    low.join().expect("low");
    high.join().expect("high");
    assert!(arb.apply_errors().is_empty(), "{:?}", arb.apply_errors());
}
