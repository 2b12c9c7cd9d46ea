//! # rtgpu-sim
//!
//! A discrete-event simulator of a whole rtgpu platform in virtual time:
//! cores under a CPU scheduler, GPUs with an execution engine and one or two
//! copy engines, PCIe buses, interrupts and overheads. Every policy decision
//! (GPU allocation, engine locks, inheritance, vGPU budgets, interrupt
//! handling) is made by the pure policy core (`rtgpu-policy`), the same code
//! the runtime hosts with the real clock (DESIGN.md §3.1).
//!
//! - CPU schedulers: P-FP with the PDMS_HPTS(_DS) pieces of the analysis
//!   plan (each piece on its core with its budget, released at its fixed
//!   offset), C-FP, G-FP, C-EDF, G-EDF. One thread per task, jobs of a task
//!   in sequence; GPU waits are self-suspensions.
//! - GPU section of a job: CPU (first half of C) → GPU token → migration of
//!   the task's state when the GPU changed (peer copy inside a node under
//!   DGL or nested locks, else through system memory) → copy-in → kernels
//!   → copy-out → token release → CPU (second half of C). Copies are cut
//!   into chunks, each under the copy-engine lock; copy time is bytes over
//!   bandwidth and copies in the same direction on one PCIe link share it.
//!   Every chunk and kernel completion raises an interrupt handled by the
//!   configured policy.
//! - Overheads of the workload file are injected where seed 000 App. B
//!   places them (see [`engine`] docs and docs/simulator.md).
//! - SCHED_DEADLINE entities (CPU reservations, klmirqd's independent
//!   servers) run above every other thread under global EDF on all cores,
//!   each a constant bandwidth server ([`rtgpu_policy::cbs`]).
//!
//! Entry point: [`simulate`]. Output: [`SimResult`] (per-task metrics,
//! optional per-job records, priority inversions, engine and vGPU
//! utilization over time, optional trace exportable with
//! [`trace::chrome_json`]).

pub mod engine;
pub mod plot;
mod queue;
pub mod scenario;
mod setup;
pub mod trace;

use serde::Serialize;

/// A plan `rtgpu analyze --plan` wrote, read back for `simulate --plan`.
pub use rtgpu_analysis::workload::Plan;
pub use rtgpu_policy::Time;
pub use scenario::Scenario;
pub use setup::analysis_extra;

/// How jobs are released.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Releases {
    /// Strictly periodic (synchronous at time 0).
    Periodic,
    /// Sporadic: each inter-arrival is T plus a uniform extra in
    /// [0, max_extra_ppm · T / 1e6].
    Sporadic { max_extra_ppm: u32 },
}

/// Simulation settings beside the workload file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimConfig {
    /// Jobs are released in [0, duration).
    pub duration: Time,
    pub seed: u64,
    pub releases: Releases,
    /// Seed 000 §VI's measurement rule: a job whose predecessor finished
    /// late is released at that completion instead of backlogging ("shifting
    /// the job's release point to coincide with the tardy completion time of
    /// the prior job"); inter-arrivals stay >= T.
    pub shift_tardy: bool,
    /// Apply each task's release jitter J (uniform in [0, J]).
    pub jitter: bool,
    /// Actual execution times uniform in [bcet_ppm · C / 1e6, C]; 1e6 =
    /// always the WCET.
    pub bcet_ppm: u32,
    /// Inject the workload's overheads.
    pub overheads: bool,
    /// GPU-to-GPU state migration inside a node (seed 004 "G"); false
    /// migrates through system memory ("g").
    pub peer_migration: bool,
    /// Keep running after `duration` until every released job finished.
    pub drain: bool,
    /// Keep one record per job (costs memory).
    pub record_jobs: bool,
    /// Keep a trace for Perfetto (costs memory).
    pub trace: bool,
    /// Number of utilization buckets over the run.
    pub buckets: usize,
    /// How klmirqd threads run when the workload's interrupts are
    /// `klmirqd` (`rtgpu run --klmirqd`).
    pub klmirqd: Klmirqd,
    /// The analysis method whose placement, priorities and bounds the run
    /// uses (`rtgpu simulate --method`; P-FP places GPU-using tasks by it).
    pub method: rtgpu_analysis::gpu::Method,
}

/// klmirqd's two modes (seed 000 §III).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Klmirqd {
    /// Each GPU's klmirqd thread runs at the effective priority of the
    /// GPU's owner, never beside it.
    #[default]
    Dependent,
    /// Each GPU's klmirqd thread is a SCHED_DEADLINE bandwidth server of
    /// these parameters, or of those
    /// [`rtgpu_analysis::workload::bottom_half_server`] sizes when `None`.
    Independent(Option<rtgpu_analysis::server::Server>),
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            duration: 1_000_000_000,
            seed: 1,
            releases: Releases::Periodic,
            shift_tardy: false,
            jitter: true,
            bcet_ppm: 1_000_000,
            overheads: true,
            peer_migration: true,
            drain: false,
            record_jobs: false,
            trace: false,
            buckets: 100,
            klmirqd: Klmirqd::Dependent,
            method: rtgpu_analysis::gpu::Method::Aware,
        }
    }
}

/// One finished (or unfinished) job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct JobRecord {
    pub task: u32,
    pub job: u64,
    /// Nominal arrival (deadlines and response times count from here).
    pub release: Time,
    /// Arrival plus jitter: when the job became ready.
    pub ready: Time,
    /// First time it ran on a core.
    pub start: Option<Time>,
    pub finish: Option<Time>,
    pub response: Option<Time>,
    pub deadline_miss: bool,
    pub tardiness: Time,
    /// Time suspended waiting for a GPU token or an engine lock.
    pub blocking: Time,
    /// GPU it ran on, if any.
    pub gpu: Option<u32>,
}

/// Per-task summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskStats {
    pub name: String,
    pub period: Time,
    pub deadline: Time,
    pub uses_gpu: bool,
    pub jobs: u64,
    /// Released but not finished by the end of the run.
    pub unfinished: u64,
    pub misses: u64,
    pub max_response: Time,
    pub mean_response: f64,
    /// Mean response as % of period (seeds 000 and 004 report this).
    pub mean_response_pct: f64,
    pub max_response_pct: f64,
    pub max_tardiness: Time,
    pub max_blocking: Time,
    pub migrations: u64,
}

/// Utilization of one resource per time bucket (fractions 0..=1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UtilizationSeries {
    pub name: String,
    pub bucket: Time,
    pub values: Vec<f64>,
    pub mean: f64,
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimResult {
    pub workload: String,
    pub scheduler: String,
    pub duration: Time,
    /// Virtual time when the run stopped (> duration when draining).
    pub end: Time,
    pub seed: u64,
    pub jobs: u64,
    pub misses: u64,
    pub tasks: Vec<TaskStats>,
    /// Priority-inversion durations (ns), sorted ascending.
    pub inversions: Vec<Time>,
    pub engines: Vec<UtilizationSeries>,
    pub vgpus: Vec<UtilizationSeries>,
    pub cores: Vec<UtilizationSeries>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<JobRecord>,
    #[serde(skip)]
    pub trace: Vec<trace::Span>,
    #[serde(skip)]
    pub track_names: Vec<String>,
    pub notes: Vec<String>,
    /// Events the engine handled (stale ones dropped before it are not
    /// counted): the simulator's unit of work, for benchmarks (a GPU job
    /// is about ten times the events of a CPU-only one).
    #[serde(skip)]
    pub events: u64,
}

/// A workload the simulator cannot run, in words naming what and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimError(pub String);

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SimError {}

/// Simulate `w` under `cfg`.
pub fn simulate(w: &rtgpu_model::Workload, cfg: &SimConfig) -> Result<SimResult, SimError> {
    simulate_planned(w, cfg, None)
}

/// [`simulate`] with the placement, priorities and split budgets of `plan`
/// (written by `rtgpu analyze --plan`) instead of analysing `w` again;
/// `Err` naming what differs when the plan is not `w`'s
/// ([`Plan::check`]). `None`: analyse, as [`simulate`].
pub fn simulate_planned(
    w: &rtgpu_model::Workload,
    cfg: &SimConfig,
    plan: Option<&Plan>,
) -> Result<SimResult, SimError> {
    let setup = setup::build(w, cfg, plan, &mut None)?;
    Ok(engine::Engine::new(setup, cfg).run())
}

/// [`simulate`], returning beside the result the analysis of `w` that
/// placed it (`rtgpu_analysis::workload::analyze_with(w,
/// &analysis_extra(w, cfg))`, whose bounds front ends print beside the
/// observations), so that a caller does not analyse (partition) the
/// workload a second time for them.
pub fn simulate_analysed(
    w: &rtgpu_model::Workload,
    cfg: &SimConfig,
    cancel: Option<&std::sync::atomic::AtomicBool>,
) -> Result<(SimResult, rtgpu_analysis::workload::Report), SimError> {
    let mut analysis = None;
    let setup = setup::build(w, cfg, None, &mut analysis)?;
    let result = engine::Engine::new(setup, cfg).run_until(cancel);
    if cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed)) {
        return Err(SimError("interrupted".to_string()));
    }
    let report = analysis.ok_or_else(|| SimError(format!("{}: not analysed", w.name)))?;
    Ok((result, report))
}

/// [`simulate`] that stops when `cancel` is set (a caller's Ctrl-C):
/// `Err` saying so then, the partial run discarded.
pub fn simulate_cancellable(
    w: &rtgpu_model::Workload,
    cfg: &SimConfig,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<SimResult, SimError> {
    simulate_planned_cancellable(w, cfg, None, cancel)
}

/// [`simulate_planned`] that stops when `cancel` is set, as
/// [`simulate_cancellable`].
pub fn simulate_planned_cancellable(
    w: &rtgpu_model::Workload,
    cfg: &SimConfig,
    plan: Option<&Plan>,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<SimResult, SimError> {
    let setup = setup::build(w, cfg, plan, &mut None)?;
    let result = engine::Engine::new(setup, cfg).run_until(Some(cancel));
    if cancel.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(SimError("interrupted".to_string()));
    }
    Ok(result)
}

/// Priority-inversion CDF: (duration, fraction of inversions <= duration)
/// at each distinct duration (seed 000 Fig. 3).
pub fn inversion_cdf(sorted: &[Time]) -> Vec<(Time, f64)> {
    let n = sorted.len() as f64;
    let mut out: Vec<(Time, f64)> = Vec::new();
    for (i, &d) in sorted.iter().enumerate() {
        let f = (i + 1) as f64 / n;
        match out.last_mut() {
            Some(last) if last.0 == d => last.1 = f,
            _ => out.push((d, f)),
        }
    }
    out
}

/// Cumulative inversion time against the maximum single inversion
/// (seed 000 Fig. 4): (max so far, cumulative so far) over inversions in
/// ascending order of duration.
pub fn inversion_cumulative(sorted: &[Time]) -> Vec<(Time, Time)> {
    let mut sum: Time = 0;
    sorted
        .iter()
        .map(|&d| {
            sum = sum.saturating_add(d);
            (d, sum)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_and_cumulative() {
        let v = [1, 2, 2, 5];
        assert_eq!(inversion_cdf(&v), vec![(1, 0.25), (2, 0.75), (5, 1.0)]);
        assert_eq!(
            inversion_cumulative(&v),
            vec![(1, 1), (2, 3), (2, 5), (5, 10)]
        );
        assert!(inversion_cdf(&[]).is_empty());
    }
}
