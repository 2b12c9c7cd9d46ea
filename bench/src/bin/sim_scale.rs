//! `sim_scale`: how the simulator's cost per job and its memory grow with
//! the number of tasks n and of cores m (issue 24: "a simulator whose cost
//! per job is independent of n", and memory that grew with m·n).
//!
//! ```text
//! cargo run --release -p rtgpu-bench --bin sim_scale -- [--n 100,1000,...] [--m 4,8,...]
//!     [--sched G-EDF,P-FP] [--jobs J] [--rounds R] [--csv PATH]
//! ```
//!
//! Task sets: those of `scale` (n tasks, Σ U = 0.7·m, T log-uniform in
//! 1 .. 100 ms, implicit deadlines, zero overheads), under G-EDF (one
//! domain of m cores) and P-FP (PDMS_HPTS_DS, deadline-monotonic), or the
//! schedulers `--sched` names, each run from a plan written beforehand (as
//! `rtgpu simulate --plan` reuses one; not under C-FP and G-FP, see
//! [`measure`]). Each case
//! simulates about `--jobs` jobs (default 3,000,000; its simulated duration
//! is J / Σ 1/T, at least 100 ms), strictly periodic, no jitter, one
//! utilization bucket. Per case:
//! - `setup_s`: CPU time of a run of zero duration (building the engine
//!   from the workload and its plan); `run_s`: of the whole run; each the
//!   best of `--rounds` (3) passes over all cases;
//! - `ns_per_job`: (run − setup) / jobs (left empty where the setup is
//!   more than half the run: C-FP and G-FP analyse there, in O(n²)), and
//!   events per job;
//! - `peak_bytes`: the most heap the run held at once beyond what was held
//!   before it (this thread's allocations, counted by this binary's
//!   allocator: exact and repeatable, unlike a resident set size), and that
//!   per task.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Write as _;

use rtgpu_analysis::workload::analyze;
use rtgpu_bench::{parse_list, task_set, thread_cpu, usage_exit, workload_toml, write_or_exit};
use rtgpu_model::{parse_workload, CpuScheduler, Workload};
use rtgpu_sim::{simulate_planned, SimConfig};

/// The system allocator, counting this thread's live heap bytes and their
/// high-water mark.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // `try_with`: nothing to count while the thread's locals are torn down.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call goes to `System` unchanged; only counters are kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The heap `f` held at most at once beyond what was live before it (this
/// thread's allocations), and its result.
fn peak_heap<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let r = f();
    let peak = PEAK.with(Cell::get);
    ((peak - before).max(0) as usize, r)
}

/// One case's figures.
#[derive(Debug, Clone, PartialEq)]
struct Case {
    duration: u64,
    jobs: u64,
    events: u64,
    setup_s: f64,
    run_s: f64,
    peak_bytes: usize,
}

impl Case {
    /// Two measurements of one case: the best CPU times of both; `Err` when
    /// they disagree on what was simulated or on the heap it took.
    fn merge(self, other: Case) -> Result<Case, String> {
        if (self.duration, self.jobs, self.events, self.peak_bytes)
            != (other.duration, other.jobs, other.events, other.peak_bytes)
        {
            return Err(format!(
                "two runs of the same case differ: {self:?} and {other:?}"
            ));
        }
        Ok(Case {
            setup_s: self.setup_s.min(other.setup_s),
            run_s: self.run_s.min(other.run_s),
            ..self
        })
    }

    /// CPU ns per job: (run − setup) / jobs; `None` when the engine's
    /// construction is more than half the run (C-FP and G-FP analyse
    /// there, in O(n²)): the difference of two noisy times would then say
    /// more about the noise than about the jobs.
    fn ns_per_job(&self) -> Option<f64> {
        (self.setup_s <= 0.5 * self.run_s)
            .then(|| (self.run_s - self.setup_s) * 1e9 / self.jobs.max(1) as f64)
    }
}

/// Simulated duration (ns) for about `jobs` jobs of `w`'s tasks, at least
/// 100 ms.
fn duration_for(w: &Workload, jobs: u64) -> u64 {
    let per_s: f64 = w.tasks.iter().map(|t| 1e9 / t.period.max(1) as f64).sum();
    let secs = jobs as f64 / per_s.max(1e-9);
    ((secs * 1e9) as u64).max(100_000_000)
}

/// Simulates `w` for about `jobs` jobs once: with its plan
/// (the placement `rtgpu simulate --plan` reuses), except under C-FP and
/// G-FP, whose plans' SCHED_FIFO priorities cannot order more than 98
/// tasks: those runs analyse in the engine's construction, which the
/// zero-length run measures too.
fn measure(w: &Workload, jobs: u64) -> Result<Case, String> {
    let global_fp = matches!(
        w.policy.cpu_scheduler,
        CpuScheduler::ClusteredFp | CpuScheduler::GlobalFp
    );
    let plan = (!global_fp).then(|| analyze(w).1);
    let run = |duration: u64| {
        let cfg = SimConfig {
            duration,
            jitter: false,
            buckets: 1,
            ..SimConfig::default()
        };
        let cpu0 = thread_cpu();
        let r = simulate_planned(w, &cfg, plan.as_ref()).map_err(|e| e.to_string());
        (thread_cpu() - cpu0, r)
    };
    let duration = duration_for(w, jobs);
    let (setup_s, r) = run(0);
    r?;
    let (peak_bytes, (run_s, r)) = peak_heap(|| run(duration));
    let r = r?;
    Ok(Case {
        duration,
        jobs: r.jobs,
        events: r.events,
        setup_s,
        run_s,
        peak_bytes,
    })
}

/// The workload of scheduler `sched` on `m` cores with `n` tasks.
fn workload(sched: &str, n: usize, m: usize) -> Result<Workload, String> {
    parse_workload(&workload_toml(&task_set(n, m), m, sched), "<sim_scale>")
        .map_err(|e| format!("generated workload rejected: {e}"))
}

/// The positive whole number given to option `what`.
fn positive(arg: Option<String>, what: &str) -> u64 {
    arg.and_then(|s| s.parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or_else(|| usage(&format!("{what} needs a positive number")))
}

fn list<T: std::str::FromStr>(arg: Option<String>, what: &str) -> Vec<T> {
    parse_list(arg.as_deref(), what).unwrap_or_else(|e| usage(&e))
}

fn main() {
    let mut ns: Vec<usize> = vec![100, 1_000, 10_000, 100_000];
    let mut ms: Vec<usize> = vec![4, 8, 16, 32, 64];
    let mut scheds: Vec<String> = vec!["G-EDF".into(), "P-FP".into()];
    let mut jobs: u64 = 3_000_000;
    let mut rounds: usize = 3;
    let mut csv_path: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--n" => ns = list(args.next(), "--n"),
            "--m" => ms = list(args.next(), "--m"),
            "--sched" => scheds = list(args.next(), "--sched"),
            "--jobs" => jobs = positive(args.next(), "--jobs"),
            "--rounds" => rounds = positive(args.next(), "--rounds") as usize,
            "--csv" => csv_path = Some(args.next().unwrap_or_else(|| usage("--csv needs a path"))),
            "-h" | "--help" => usage(""),
            other => usage(&format!("unknown argument `{other}`")),
        }
    }
    let mut csv = String::from(
        "sched,m,n,duration_s,jobs,events,setup_s,run_s,ns_per_job,peak_bytes,bytes_per_task\n",
    );
    let best_of = if rounds == 1 {
        "one pass".to_string()
    } else {
        format!("best of {rounds} passes")
    };
    println!(
        "sim_scale: U = 0.7·m, T log-uniform 1..100 ms, about {jobs} jobs per case; CPU time \
         ({best_of}), heap peak of a run"
    );
    println!(
        "{:>6} {:>3} {:>7} {:>9} {:>10} {:>8} {:>9} {:>10} {:>8} {:>11} {:>10}",
        "sched",
        "m",
        "n",
        "sim s",
        "jobs",
        "ev/job",
        "setup s",
        "run s",
        "ns/job",
        "peak heap",
        "B/task"
    );
    // Every case once per pass, `--rounds` passes, the best CPU times of
    // each case kept: this VM's speed moves in phases of seconds to minutes,
    // which a case's rounds back to back would share.
    let mut cases: Vec<(String, usize, usize)> = Vec::new();
    for sched in &scheds {
        for &m in &ms {
            cases.extend(ns.iter().map(|&n| (sched.clone(), m, n)));
        }
    }
    let mut best: Vec<Option<Case>> = vec![None; cases.len()];
    for pass in 0..rounds {
        eprintln!("sim_scale: pass {} of {rounds}", pass + 1);
        for (k, (sched, m, n)) in cases.iter().enumerate() {
            let case = workload(sched, *n, *m).and_then(|w| measure(&w, jobs));
            let case = case.unwrap_or_else(|e| {
                eprintln!("sim_scale: {sched} m={m} n={n}: {e}");
                std::process::exit(1)
            });
            best[k] = Some(match best[k].take() {
                None => case,
                Some(b) => b.merge(case).unwrap_or_else(|e| {
                    eprintln!("sim_scale: {sched} m={m} n={n}: {e}");
                    std::process::exit(1)
                }),
            });
        }
    }
    for ((sched, m, n), case) in cases.iter().zip(best.iter().flatten()) {
        let (sched, m, n) = (sched, *m, *n);
        let per_task = case.peak_bytes as f64 / n as f64;
        let ns = case.ns_per_job();
        println!(
            "{sched:>6} {m:>3} {n:>7} {:>9.3} {:>10} {:>8.2} {:>9.4} {:>10.4} {:>8} {:>11} {:>10.0}",
            case.duration as f64 * 1e-9,
            case.jobs,
            case.events as f64 / case.jobs.max(1) as f64,
            case.setup_s,
            case.run_s,
            ns.map_or("-".to_string(), |v| format!("{v:.1}")),
            case.peak_bytes,
            per_task
        );
        let _ = writeln!(
            csv,
            "{sched},{m},{n},{:.6},{},{},{:.6},{:.6},{},{},{per_task:.1}",
            case.duration as f64 * 1e-9,
            case.jobs,
            case.events,
            case.setup_s,
            case.run_s,
            ns.map_or(String::new(), |v| format!("{v:.2}")),
            case.peak_bytes
        );
    }
    write_or_exit(csv_path.as_deref(), &csv, "sim_scale");
}

fn usage(err: &str) -> ! {
    usage_exit(
        "sim_scale",
        "usage: sim_scale [--n N,N,...] [--m M,M,...] [--sched G-EDF,P-FP,...] [--jobs J] \
         [--rounds R] [--csv PATH]",
        err,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simulator's heap grows with n, not with m·n: a run's peak per
    /// task is about the same on 4 and on 64 cores, and doubling the tasks
    /// about doubles it (issue 24: each core's ready structure once spanned
    /// every thread). Heap counts are exact, so this is no timing test.
    #[test]
    fn heap_grows_with_n_not_with_m_times_n() {
        for sched in ["G-EDF", "P-FP"] {
            let peak = |n: usize, m: usize| {
                let w = workload(sched, n, m).expect("workload");
                measure(&w, 20_000).expect("run").peak_bytes as f64
            };
            let (p4, p64) = (peak(2_000, 4), peak(2_000, 64));
            assert!(
                p64 < 1.25 * p4,
                "{sched}: peak heap at n = 2,000: {p4} B on 4 cores, {p64} B on 64"
            );
            let p4_double = peak(4_000, 4);
            let ratio = p4_double / p4;
            assert!(
                (1.6..2.4).contains(&ratio),
                "{sched}: 2x the tasks hold {ratio:.2}x the heap ({p4} -> {p4_double} B)"
            );
        }
    }

    /// A case counts its jobs and events, and a second round repeats the
    /// first exactly.
    #[test]
    fn a_case_is_repeatable() {
        let w = workload("G-EDF", 50, 4).expect("workload");
        let c = measure(&w, 5_000).expect("run");
        let c = c
            .merge(measure(&w, 5_000).expect("run"))
            .expect("the same case twice");
        assert!(c.jobs >= 5_000, "about 5,000 jobs asked: {}", c.jobs);
        assert!(c.events >= c.jobs, "at least an event per job");
        assert!(c.peak_bytes > 0);
        assert!(c.run_s >= c.setup_s);
    }
}
