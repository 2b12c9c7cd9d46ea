//! `rtgpu run` with a CPU reservation (`reservation = true`): the task's
//! thread runs under SCHED_DEADLINE with the plan's runtime, deadline and
//! period where the kernel permits it, at SCHED_OTHER with a plain warning
//! where it does not; the fixed-priority task beside it keeps SCHED_FIFO.

use rtgpu_runtime::os;
use rtgpu_runtime::run::{run, RunConfig};

/// The kernel admits SCHED_DEADLINE threads while their bandwidth fits
/// (admission control): tests that run reservations take turns, or one
/// test's reservations could have another's refused.
static ADMISSION: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Whether the run says the kernel refused a reservation it asked for
/// (admission control, EBUSY, can refuse what a probe a moment earlier
/// was granted): at set-up ("... SCHED_DEADLINE ... refused") or in a task's
/// thread ("task N: ...").
fn refused(out: &rtgpu_runtime::run::RunOutcome) -> bool {
    let said = out
        .warnings
        .iter()
        .any(|w| (w.contains("SCHED_DEADLINE") && w.contains("refused")) || w.starts_with("task "));
    if said {
        eprintln!("SCHED_DEADLINE refused at run time: {:?}", out.warnings);
    }
    said
}

fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    ADMISSION
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

const WORKLOAD: &str = r#"
[platform]
cores = 2
[overheads]
base = "zero"
[policy]
cpu_scheduler = "P-FP"
partitioning = "first-fit"
[[task]]
name = "ctl"
wcet = "1 ms"
period = "10 ms"
reservation = true
[[task]]
name = "log"
wcet = "2 ms"
period = "20 ms"
"#;

#[test]
fn a_reservation_runs_under_sched_deadline_where_permitted() {
    let _turn = take_turn();
    let w = rtgpu_model::parse_workload(WORKLOAD, "reservation.toml").expect("valid");
    let (report, plan) = rtgpu_analysis::workload::analyze(&w);
    let r = plan.tasks[0].reservation.expect("planned as a reservation");
    let out = run(&w, &report, &plan, &RunConfig::new(200_000_000, true)).expect("runs");
    let ctl = &out.tasks[0];
    assert_eq!(ctl.jobs, 20, "{:?}", out.warnings);
    let policy = ctl.ran_under.as_deref().expect("policy read back");
    let caps = os::probe_capabilities();
    if caps.deadline {
        let want = os::SchedPolicy::Deadline {
            runtime: r.runtime,
            deadline: r.deadline,
            period: r.period,
            reclaim: false,
        }
        .describe();
        // The probe said SCHED_DEADLINE is permitted; should the kernel
        // still refuse this thread (e.g. its admission control), the run
        // must say so rather than fall back silently.
        if policy != want {
            assert!(
                refused(&out),
                "ran under {policy} without a warning: {:?}",
                out.warnings
            );
            return;
        }
        assert!(
            !out.warnings.iter().any(|w| w.contains("CPU reservations")),
            "{:?}",
            out.warnings
        );
    } else {
        assert!(policy.starts_with("SCHED_OTHER"), "{policy}");
        assert!(
            out.warnings
                .iter()
                .any(|w| w.contains("CPU reservations (ctl) run at SCHED_OTHER")),
            "{:?}",
            out.warnings
        );
    }
    let log = out.tasks[1].ran_under.as_deref().expect("policy read back");
    if caps.fifo {
        assert!(log.starts_with("SCHED_FIFO"), "{log}");
    }
}

/// Without real-time policies asked for, a reservation says so.
#[test]
fn without_realtime_a_reservation_says_it_runs_at_sched_other() {
    let _turn = take_turn();
    let w = rtgpu_model::parse_workload(WORKLOAD, "reservation.toml").expect("valid");
    let (report, plan) = rtgpu_analysis::workload::analyze(&w);
    let out = run(&w, &report, &plan, &RunConfig::new(50_000_000, false)).expect("runs");
    assert!(
        out.tasks[0]
            .ran_under
            .as_deref()
            .is_some_and(|p| p.starts_with("SCHED_OTHER")),
        "{:?}",
        out.tasks[0].ran_under
    );
    assert!(
        out.warnings.iter().any(|w| w.contains(
            "CPU reservations (ctl) run at SCHED_OTHER: real-time policies were not asked for"
        )),
        "{:?}",
        out.warnings
    );
}

/// A GPU-using reservation beside a fixed-priority GPU user on one GPU
/// (klmirqd, dependent mode): it runs under SCHED_DEADLINE where
/// permitted, gets the GPU every job, and waits for its own operations
/// (their completion work in its reservation, as the analysis charges
/// it), so the GPU's completion thread runs only the other task's.
#[test]
fn a_gpu_using_reservation_runs_its_own_completions() {
    let _turn = take_turn();
    let text = r#"
[platform]
cores = 2
gpus = 1
[overheads]
base = "zero"
[policy]
cpu_scheduler = "P-FP"
interrupts = "klmirqd"
gpu_allocator = "static"
[[task]]
name = "track"
wcet = "1 ms"
period = "20 ms"
reservation = true
gpu = { kernels = ["2 ms"] }
[[task]]
name = "detect"
wcet = "1 ms"
period = "40 ms"
gpu = { kernels = ["3 ms"] }
"#;
    let w = rtgpu_model::parse_workload(text, "gpu-reservation.toml").expect("valid");
    let (report, plan) = rtgpu_analysis::workload::analyze(&w);
    assert_eq!(
        report.verdict,
        rtgpu_analysis::workload::Verdict::Schedulable,
        "{}",
        report.reason
    );
    let r = plan.tasks[0].reservation.expect("planned as a reservation");
    assert_eq!(r.deadline, r.period, "an implicit-deadline server");
    let out = run(&w, &report, &plan, &RunConfig::new(200_000_000, true)).expect("runs");
    let (track, detect) = (&out.tasks[0], &out.tasks[1]);
    assert_eq!((track.jobs, detect.jobs), (10, 5), "{:?}", out.warnings);
    let policy = track.ran_under.as_deref().expect("policy read back");
    if os::probe_capabilities().deadline && !refused(&out) {
        assert!(policy.starts_with("SCHED_DEADLINE"), "{policy}");
    }
    // One kernel per job, one completion each: only detect's went through
    // the completion thread.
    let k = out.klmirqd.as_ref().expect("klmirqd threads ran");
    let completions: u64 = k.threads.iter().map(|t| t.stats.completions).sum();
    assert_eq!(completions, detect.jobs as u64, "{:?}", out.notes);
    assert!(
        out.notes
            .iter()
            .any(|n| n.contains("GPU-using CPU reservations (track) wait for their operations")),
        "{:?}",
        out.notes
    );
}

/// This machine's capabilities where SCHED_DEADLINE is permitted; `None`
/// after saying plainly that the test is skipped.
fn deadline_permitted() -> Option<os::Capabilities> {
    let caps = os::probe_capabilities();
    if !caps.deadline {
        eprintln!(
            "SKIPPED: SCHED_DEADLINE is not permitted here ({:?})",
            caps.reason
        );
        return None;
    }
    Some(caps)
}

/// `--sched deadline` (`Workload::under_deadline`): every thread, the
/// GPU-using one too (emulated GPU), runs under SCHED_DEADLINE with its
/// plan's parameters, read back from the kernel (`sched_getattr`); the
/// policy line says so and no FIFO warning appears.
#[test]
fn under_deadline_every_thread_is_a_reservation() {
    let _turn = take_turn();
    if deadline_permitted().is_none() {
        return;
    }
    let w = rtgpu_model::parse_workload(
        "[platform]\ncores = 2\n[[platform.gpu]]\nname = \"g\"\n\
         [policy]\ninterrupts = \"klmirqd\"\ntokens_per_gpu = 1\n\
         [[task]]\nname = \"loop\"\nwcet = \"100 us\"\nperiod = \"2 ms\"\n\
         [[task]]\nname = \"cam\"\nwcet = \"1 ms\"\nperiod = \"40 ms\"\n\
         gpu = { copy_in = \"1 MiB\", kernels = [\"2 ms\"], copy_out = \"256 KiB\" }\n",
        "dl.toml",
    )
    .expect("valid")
    .under_deadline()
    .expect("every task can be a reservation");
    let (report, plan) = rtgpu_analysis::workload::analyze(&w);
    // Without and with SCHED_FLAG_RECLAIM (`rtgpu run`'s default), which
    // the kernel reports back in sched_getattr's flags.
    for reclaim in [false, true] {
        let config = RunConfig {
            dl_reclaim: reclaim,
            ..RunConfig::new(200_000_000, true)
        };
        let out = run(&w, &report, &plan, &config).expect("runs");
        if refused(&out) {
            return;
        }
        assert!(
            out.policy.starts_with("SCHED_DEADLINE: every task"),
            "{}",
            out.policy
        );
        assert_eq!(
            out.policy.contains("SCHED_FLAG_RECLAIM"),
            reclaim,
            "{}",
            out.policy
        );
        assert!(
            !out.warnings
                .iter()
                .any(|w| w.contains("ordinary priorities")),
            "{:?}",
            out.warnings
        );
        for (t, p) in out.tasks.iter().zip(&plan.tasks) {
            let r = p.reservation.expect("every task is a reservation");
            let want = os::SchedPolicy::Deadline {
                runtime: r.runtime,
                deadline: r.deadline,
                period: r.period,
                reclaim,
            }
            .describe();
            assert_eq!(t.ran_under.as_deref(), Some(want.as_str()), "{}", t.name);
            assert!(t.jobs > 0, "{}", t.name);
        }
    }
}

/// The negative control: a 1 kHz loop of 400 us beside four busy loops
/// per CPU misses most deadlines at SCHED_OTHER (a fair share of a CPU is
/// a fifth of it) and next to none as a reclaiming reservation (what
/// `rtgpu run` gives a schedulable workload), which the busy loops
/// cannot take from it. 1 s each.
#[test]
fn reservations_prevent_the_misses_of_a_loaded_cpu() {
    let _turn = take_turn();
    let Some(caps) = deadline_permitted() else {
        return;
    };
    let cpus = caps.cpus.len().max(1);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hogs: Vec<_> = (0..4 * cpus)
        .map(|_| {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            })
        })
        .collect();
    let w = rtgpu_model::parse_workload(
        "[platform]\ncores = 1\n[[task]]\nname = \"loop\"\nwcet = \"400 us\"\nperiod = \"1 ms\"\n",
        "loaded.toml",
    )
    .expect("valid");
    let misses = |w: &rtgpu_model::Workload, realtime: bool| {
        let (report, plan) = rtgpu_analysis::workload::analyze(w);
        // As `rtgpu run` does for a schedulable workload: the reservation
        // reclaims (SCHED_FLAG_RECLAIM). Without it a VM host's stall,
        // charged to the reservation as runtime, throttled it and cost up
        // to 83 misses in 1,000 (fresh-clone CI of 2026-11-27).
        let config = RunConfig {
            dl_reclaim: true,
            ..RunConfig::new(1_000_000_000, realtime)
        };
        let out = run(w, &report, &plan, &config).expect("runs");
        let refused = realtime && refused(&out);
        (out.tasks[0].deadline_misses, out.tasks[0].jobs, refused)
    };
    let (other, n_other, _) = misses(&w, false);
    let dl = w.under_deadline().expect("a reservation");
    let (deadline, n_dl, was_refused) = misses(&dl, true);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in hogs {
        let _ = h.join();
    }
    if was_refused {
        return;
    }
    eprintln!("SCHED_OTHER: {other} of {n_other} missed; SCHED_DEADLINE: {deadline} of {n_dl}");
    assert!(
        other * 5 >= n_other,
        "SCHED_OTHER beside the hogs: only {other} of {n_other} missed"
    );
    assert!(
        deadline * 50 <= n_dl,
        "SCHED_DEADLINE: {deadline} of {n_dl} missed"
    );
}
