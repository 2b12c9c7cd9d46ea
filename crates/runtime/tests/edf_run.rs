//! User-space EDF with real threads: on one core, a task set that
//! rate-monotonic priorities cannot schedule (the longer task misses) but
//! EDF can (U = 0.93) meets every deadline under `rtgpu run`'s EDF order,
//! and misses under the fixed-priority plan of the same tasks.

use rtgpu_runtime::os;
use rtgpu_runtime::run::{run, RunConfig};

/// The runs pin real-time threads to CPU 0: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn workload(scheduler: &str) -> rtgpu_model::Workload {
    let text = format!(
        r#"
[platform]
cores = 1
[overheads]
base = "zero"
[policy]
cpu_scheduler = "{scheduler}"
priority = "RM"
[[task]]
name = "fast"
wcet = "2 ms"
period = "5 ms"
[[task]]
name = "slow"
wcet = "4 ms"
period = "7.5 ms"
"#
    );
    rtgpu_model::parse_workload(&text, "edf.toml").expect("valid")
}

fn misses(scheduler: &str) -> usize {
    let w = workload(scheduler);
    let (report, plan) = rtgpu_analysis::workload::analyze(&w);
    let out = run(&w, &report, &plan, &RunConfig::new(600_000_000, true)).expect("runs");
    out.tasks.iter().map(|t| t.deadline_misses).sum()
}

#[test]
fn edf_order_meets_what_rate_monotonic_misses() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !os::probe_capabilities().fifo {
        eprintln!("SKIPPED: needs SCHED_FIFO to enforce any order");
        return;
    }
    // RM: R(slow) = 4 + 2 * ceil(R / 5) = 8 ms > 7.5 ms, so slow misses
    // about every other job (80 jobs in 600 ms). EDF meets every deadline
    // at U = 0.93 in theory; misses from the machine's own wake-up latency
    // are tolerated (a loaded 2-vCPU CI VM gave 5 of the 200 jobs), the
    // rate-monotonic pattern is not: at most 5% of the jobs and a quarter
    // of rate monotonic's misses. A VM whose host takes the CPU away for a
    // while misses under both orders alike (one CI run: EDF 81, rate
    // monotonic 82): the pair is measured again, up to three times, and
    // EDF must win one clean round (a broken EDF order loses all three).
    let mut rounds = Vec::new();
    for _ in 0..3 {
        let rm = misses("P-FP");
        let edf = misses("G-EDF");
        eprintln!("misses in 600 ms: rate monotonic {rm}, EDF {edf}");
        assert!(rm >= 20, "rate monotonic should miss often, missed {rm}");
        rounds.push((edf, rm));
        if edf <= 10 && edf * 4 <= rm {
            return;
        }
    }
    panic!("EDF did not keep its deadlines in any round: (EDF, rate monotonic) misses {rounds:?}");
}

/// An EDF plan with a GPU-using task runs (its deadline rank reaches the
/// thread through the arbiter, which may raise it further by inheritance):
/// every job gets its GPU section and deadlines hold at this light load.
#[test]
fn edf_with_gpu_tasks_runs_under_the_arbiter() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !os::probe_capabilities().fifo {
        eprintln!("SKIPPED: needs SCHED_FIFO to enforce any order");
        return;
    }
    let text = r#"
[platform]
cores = 1
gpus = 1
[overheads]
base = "zero"
[policy]
cpu_scheduler = "G-EDF"
tokens_per_gpu = 1
engine_locks = true
[[task]]
name = "vision"
count = 2
wcet = "1 ms"
period = "20 ms"
gpu = { copy_in = "256 KiB", kernels = ["1 ms"], copy_out = "64 KiB" }
[[task]]
name = "control"
wcet = "2 ms"
period = "5 ms"
"#;
    let w = rtgpu_model::parse_workload(text, "edf-gpu.toml").expect("valid");
    let (report, plan) = rtgpu_analysis::workload::analyze(&w);
    let out = run(&w, &report, &plan, &RunConfig::new(400_000_000, true))
        .expect("EDF with GPU tasks runs");
    assert_eq!(out.jobs.len(), 2 * 20 + 80);
    let gpu_jobs = out.jobs.iter().filter(|j| j.gpu.is_some()).count();
    assert_eq!(gpu_jobs, 2 * 20, "every vision job ran its GPU section");
    let misses: usize = out.tasks.iter().map(|t| t.deadline_misses).sum();
    eprintln!("EDF + GPU: {misses} misses of {} jobs", out.jobs.len());
    for t in &out.tasks {
        eprintln!(
            "  {}: {} misses, max R {} us",
            t.name,
            t.deadline_misses,
            t.max_response_time / 1000
        );
    }
    for w in &out.warnings {
        eprintln!("  warning: {w}");
    }
    // The analysis bounds every response time by its 5 / 20 ms deadline.
    // The emulated GPU's engine threads run at ordinary priority, so a
    // busy machine can delay a completion now and then: up to 5% of the
    // jobs may miss; a systematic failure of the order misses far more.
    assert!(misses <= 6, "missed {misses} of 120");
}
