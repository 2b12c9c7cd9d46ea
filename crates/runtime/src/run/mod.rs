//! `rtgpu run` for CPU work: the workload's tasks as real threads, released
//! periodically with absolute sleeps on CLOCK_MONOTONIC, doing their CPU work
//! as busy loops charged in thread CPU time, with the affinities and
//! SCHED_FIFO priorities of the deployment plan.
//!
//! Split tasks (seed 003, PDMS_HPTS / PDMS_HPTS_DS) run piece by piece: piece
//! k is released at its fixed offset after the job's release (never earlier,
//! as the analysis assumes, see [`rtgpu_analysis::workload::PlanTask`]), runs
//! on its core at its per-core priority for at most its budget of thread CPU
//! time, and the job then moves to the next piece's core.
//!
//! Degrades plainly: without the privilege for real-time priorities the
//! threads run SCHED_OTHER and [`RunOutcome::warnings`] says so; a plan that
//! needs more cores than this machine allows is folded onto the CPUs there
//! (core i on CPU i mod n), at ordinary priorities when the folded load
//! would overload a CPU, and says that the analysis's guarantees do not hold
//! for such a run.
//!
//! GPU-using tasks run their GPU section after their CPU work, under the
//! in-process arbiter of their cluster ([`gpu_section`]), on the emulated
//! backend of the platform or the backend given.
//!
//! Where things live: `setup.rs` (thread set-up: CPUs, policies and
//! priorities, the GPU backend and arbiters, klmirqd's completion threads,
//! each task thread's specification), `release.rs` (the task threads:
//! periodic releases, pieces, the GPU section, EDF re-ranking) and
//! `reporting.rs` (the records and the summary beside the analysed bounds);
//! [`gpu_section`], [`edf`] and [`vgpu`] as their own comments say.

mod awake;
mod delays;
pub mod edf;
pub mod gpu_section;
mod release;
mod reporting;
mod setup;
pub mod vgpu;

use std::sync::Arc;

use rtgpu_analysis::server::Server;
use rtgpu_analysis::workload::{Plan, Report};
use rtgpu_model::Workload;

use crate::gpu::GpuBackend;
use crate::klmirqd::ServerConfig;
use crate::os::Nanos;

pub use reporting::{
    CpuSteal, JobRun, KlmirqdReport, KlmirqdThreadReport, PieceRun, RunOutcome, TaskSummary,
    VgpuShare,
};

/// How to run.
#[derive(Clone)]
pub struct RunConfig {
    /// How long to release jobs for (jobs released before the end finish).
    pub duration: Nanos,
    /// Use SCHED_FIFO where the plan gives priorities and the OS allows it.
    pub realtime: bool,
    /// The GPU backend for GPU-using tasks; `None`: the emulated backend of
    /// the workload's platform.
    pub backend: Option<Arc<dyn GpuBackend>>,
    /// klmirqd's mode for the completion threads, used when the workload's
    /// `interrupts` is `"klmirqd"`.
    pub klmirqd: KlmirqdMode,
    /// Keep the run's CPUs from halting between jobs (`awake`): a SCHED_IDLE
    /// spinner per CPU while jobs are released.
    pub keep_awake: bool,
    /// Task reservations reclaim CPU bandwidth no reservation uses
    /// (SCHED_FLAG_RECLAIM: the kernel's GRUB; each still gets its runtime
    /// every period, Lipari & Baruah 2000).
    pub dl_reclaim: bool,
}

impl RunConfig {
    /// `duration` of releases, SCHED_FIFO where permitted when `realtime`,
    /// the platform's emulated GPU and klmirqd's dependent mode (what a
    /// test or a caller without a GPU wants).
    pub fn new(duration: Nanos, realtime: bool) -> RunConfig {
        RunConfig {
            duration,
            realtime,
            backend: None,
            klmirqd: KlmirqdMode::Dependent,
            keep_awake: false,
            dl_reclaim: false,
        }
    }
}

/// The mode of klmirqd's completion threads in `rtgpu run` (seed 000 §III).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KlmirqdMode {
    /// At the effective priority of the GPU's owner, who waits meanwhile.
    #[default]
    Dependent,
    /// A SCHED_DEADLINE bandwidth server per GPU; `None`: the server
    /// [`ServerConfig::for_workload`] sizes from the workload.
    Independent(Option<ServerConfig>),
}

/// Set by [`stop_on_signals`]'s handler: the task threads release no
/// further job (each finishes the one it runs), so the run ends, reports
/// and writes its outputs as after its duration.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// SIGINT and SIGTERM stop releasing jobs instead of killing the process:
/// the run drains, prints its summary, writes its outputs and restores
/// every priority it changed (`rtgpu run`; issue 22).
pub fn stop_on_signals() {
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_stop_signal as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_stop_signal as *const () as libc::sighandler_t,
        );
    }
}

/// Whether a signal asked the run to stop.
pub fn stop_requested() -> bool {
    STOP.load(std::sync::atomic::Ordering::Relaxed)
}

/// Why a workload cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot run {workload}: {reason}")]
    Unsupported { workload: String, reason: String },
    #[error("cannot run {workload}: the analysis made no plan ({reason})")]
    NoPlan { workload: String, reason: String },
    #[error("cannot start a task thread: {0}")]
    Spawn(std::io::Error),
}

/// The bandwidth servers `rtgpu run` starts in klmirqd's independent mode
/// (`mode`), to charge in the analysis
/// ([`rtgpu_analysis::workload::analyze_with`]): one per GPU (each gets a
/// completion thread), of the configured runtime and period or the one
/// [`ServerConfig::for_workload`] sizes. Empty in dependent mode, without
/// klmirqd interrupt handling, or without GPU-using tasks. Whether the
/// kernel then grants SCHED_DEADLINE is known only at the run; [`run`]
/// says so when it does not.
pub fn klmirqd_servers(workload: &Workload, mode: &KlmirqdMode) -> Vec<Server> {
    klmirqd_extra(workload, mode).servers
}

/// What the analysis charges for klmirqd's `mode`
/// ([`rtgpu_analysis::workload::klmirqd_independent`]): in independent mode
/// the servers of [`klmirqd_servers`] as interference above every task, and
/// their latency on every GPU hold (a completion that finds its server's
/// budget spent waits for the next period); nothing in dependent mode.
pub fn klmirqd_extra(workload: &Workload, mode: &KlmirqdMode) -> rtgpu_analysis::workload::Extra {
    match mode {
        KlmirqdMode::Independent(server) => rtgpu_analysis::workload::klmirqd_independent(
            workload,
            server.map(|s| Server::new(s.runtime, s.period)),
        ),
        _ => rtgpu_analysis::workload::Extra::default(),
    }
}

/// Runs the CPU work of `workload` according to `plan` (from
/// [`rtgpu_analysis::workload::analyze`], whose `report` supplies the
/// analysed bounds shown beside the measured ones). In klmirqd's
/// independent mode those bounds charge the servers only when `report`
/// comes from [`rtgpu_analysis::workload::analyze_with`] with
/// [`klmirqd_servers`]; the run says which.
pub fn run(
    workload: &Workload,
    report: &Report,
    plan: &Plan,
    config: &RunConfig,
) -> Result<RunOutcome, RunError> {
    let (mut prepared, specs) = setup::prepare(workload, report, plan, config)?;
    // The CPUs the run's threads may run on: the plan's cores, or every CPU
    // of this process where reservations may migrate (the root domain).
    let mut cpus = if plan.tasks.iter().any(|t| t.reservation.is_some()) {
        crate::os::affinity(0).unwrap_or_default()
    } else {
        prepared.core_map.clone()
    };
    cpus.sort_unstable();
    cpus.dedup();
    let awake = if config.keep_awake {
        match awake::KeepAwake::start(&cpus) {
            Ok(a) => {
                prepared.notes.insert(
                    0,
                    format!(
                        "--keep-awake: a SCHED_IDLE spinner on CPU(s) {cpus:?} kept them from \
                         halting between jobs (a halted virtual CPU may wake a millisecond late)"
                    ),
                );
                Some(a)
            }
            Err(e) => {
                prepared
                    .warnings
                    .push(format!("--keep-awake: not applied: {e}"));
                None
            }
        }
    } else {
        None
    };
    let before = crate::os::steal_per_cpu();
    let ran = release::execute(specs, &prepared.clusters, config.duration);
    let steal = steal_over(&before, &crate::os::steal_per_cpu(), &cpus);
    drop(awake);
    if let Some(note) = steal_note(&steal) {
        prepared.notes.push(note);
    }
    let mut out = reporting::outcome(workload, report, plan, config.duration, prepared, ran?);
    out.steal = steal;
    Ok(out)
}

/// Steal time of `cpus` between two readings of [`crate::os::steal_per_cpu`]
/// (none where either lacks a CPU).
fn steal_over(
    before: &[(usize, Nanos)],
    after: &[(usize, Nanos)],
    cpus: &[usize],
) -> Vec<CpuSteal> {
    let of = |v: &[(usize, Nanos)], c: usize| v.iter().find(|e| e.0 == c).map(|e| e.1);
    cpus.iter()
        .filter_map(|&cpu| {
            let steal = of(after, cpu)?.saturating_sub(of(before, cpu)?);
            Some(CpuSteal { cpu, steal })
        })
        .collect()
}

/// What the run says of steal time: nothing when the hypervisor took none.
fn steal_note(steal: &[CpuSteal]) -> Option<String> {
    let total: Nanos = steal.iter().map(|s| s.steal).sum();
    if total == 0 {
        return None;
    }
    let per_cpu: Vec<String> = steal
        .iter()
        .filter(|s| s.steal > 0)
        .map(|s| {
            format!(
                "CPU {} {}",
                s.cpu,
                rtgpu_model::units::format_duration(s.steal)
            )
        })
        .collect();
    Some(format!(
        "the hypervisor kept the run's CPUs from running for {} in all (steal time in \
         /proc/stat: {}): a virtual CPU that is not running stalls every thread on it, \
         whatever its policy, and no bound covers that; misses and responses over the bound \
         may come from it (docs/runtime.md, \"Every miss traced on the H100 box\")",
        rtgpu_model::units::format_duration(total),
        per_cpu.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(text: &str) -> Workload {
        rtgpu_model::parse_workload(text, "t.toml").expect("valid workload")
    }

    #[test]
    fn a_workload_without_a_plan_is_refused_with_the_analysis_reason() {
        let w = workload(
            "[platform]\ncores = 1\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n",
        );
        let (report, mut plan) = rtgpu_analysis::workload::analyze(&w);
        plan.tasks.clear();
        let err = run(&w, &report, &plan, &RunConfig::new(10_000_000, false)).unwrap_err();
        assert!(
            err.to_string().contains("the analysis made no plan"),
            "{err}"
        );
    }

    /// Steal time is reported for exactly the run's CPUs, and said in a
    /// note only when the hypervisor took some.
    #[test]
    fn steal_time_is_the_runs_cpus_difference() {
        let before = [(0, 5), (1, 10), (2, 0)];
        let after = [(0, 5), (1, 40_000_000), (2, 7)];
        let s = steal_over(&before, &after, &[1, 0, 3]);
        assert_eq!(
            s,
            vec![
                CpuSteal {
                    cpu: 1,
                    steal: 39_999_990
                },
                CpuSteal { cpu: 0, steal: 0 }
            ]
        );
        let note = steal_note(&s).expect("some steal");
        assert!(
            note.contains("CPU 1 ") && !note.contains("CPU 0 "),
            "{note}"
        );
        assert_eq!(steal_note(&[CpuSteal { cpu: 0, steal: 0 }]), None);
        // A real run lists the CPUs of its plan.
        let w = workload(
            "[platform]\ncores = 1\n[[task]]\nname = \"t\"\nwcet = \"100 us\"\nperiod = \"10 ms\"\n",
        );
        let (report, plan) = rtgpu_analysis::workload::analyze(&w);
        let out = run(&w, &report, &plan, &RunConfig::new(20_000_000, false)).expect("runs");
        if std::fs::read_to_string("/proc/stat").is_ok() {
            let cpus: Vec<usize> = out.steal.iter().map(|s| s.cpu).collect();
            let mut planned = out.core_map.clone();
            planned.sort_unstable();
            planned.dedup();
            assert_eq!(cpus, planned);
        }
    }

    /// A period near 2^64 ns releases one job and ends with the run
    /// (issue 22: the release times wrapped round and the run spun).
    #[test]
    fn a_huge_period_releases_one_job_and_stops() {
        let w = workload(
            "[platform]\ncores = 1\n[[task]]\nname = \"t\"\nwcet = \"100 us\"\n\
             period = \"18446744073709551615 ns\"\n",
        );
        let (report, plan) = rtgpu_analysis::workload::analyze(&w);
        let out = run(&w, &report, &plan, &RunConfig::new(50_000_000, false)).expect("runs");
        assert_eq!(out.jobs.len(), 1);
    }

    #[test]
    fn periodic_jobs_are_released_on_time_and_do_their_work() {
        let w = workload(
            "[platform]\ncores = 1\n[policy]\ncpu_scheduler = \"P-FP\"\n\
             [[task]]\nname = \"a\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n",
        );
        let (report, plan) = rtgpu_analysis::workload::analyze(&w);
        let out = run(&w, &report, &plan, &RunConfig::new(100_000_000, false)).expect("runs");
        // Releases at 0, 10, ..., 90 ms.
        assert_eq!(out.jobs.len(), 10);
        for (k, j) in out.jobs.iter().enumerate() {
            assert_eq!(j.release, k as u64 * 10_000_000);
            assert!(j.start >= j.release);
            assert!(j.response_time >= 1_000_000, "{j:?}");
            assert!(j.pieces[0].cpu_time >= 1_000_000, "{j:?}");
        }
        assert_eq!(out.tasks[0].jobs, 10);
        // The analysed bound is shown beside the measurements: C plus the
        // overheads the analysis charges (seed 000 Table III defaults).
        assert_eq!(out.tasks[0].analysed_bound, report.tasks[0].response_time);
        assert!(out.tasks[0].analysed_bound >= Some(1_000_000));
    }
}
