//! What `rtgpu run` reports: the records of each job and piece as they
//! ran, the per-task summary beside the analysed bound (response times,
//! deadline misses, pieces off their core, token waits, migrations), the
//! arbiters' hand-offs, klmirqd's completion threads and the vGPUs' shares
//! in the outcome and its notes.

use std::sync::Arc;

use rtgpu_analysis::workload::{Plan, Report};
use rtgpu_model::Workload;

use super::gpu_section::{self, ClusterGpus, GpuRun};
use super::release::Ran;
use super::setup::Prepared;
use crate::klmirqd::{CompletionStats, ModeReport};
use crate::os::Nanos;

/// What klmirqd's completion threads did in a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KlmirqdReport {
    /// "dependent" or "independent".
    pub mode: &'static str,
    /// Per GPU (global index): its thread, the policy it started with, any
    /// fallback, and its counters.
    pub threads: Vec<KlmirqdThreadReport>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct KlmirqdThreadReport {
    pub gpu: usize,
    pub name: String,
    pub started: ModeReport,
    pub stats: CompletionStats,
}

/// One piece of one job as it really ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PieceRun {
    /// The core the plan put it on, and the CPU it was seen on at its start
    /// and end (`None` if the OS did not say).
    pub planned_core: u32,
    pub cpu_at_start: Option<usize>,
    pub cpu_at_end: Option<usize>,
    /// Times from the start of the run.
    pub start: Nanos,
    pub end: Nanos,
    /// Thread CPU time consumed.
    pub cpu_time: Nanos,
}

/// One job.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct JobRun {
    pub task: usize,
    pub job: u64,
    /// Times from the start of the run.
    pub release: Nanos,
    pub start: Nanos,
    pub finish: Nanos,
    pub response_time: Nanos,
    pub deadline_miss: bool,
    /// The CPU work, per piece and per stretch between GPU sections (a
    /// GPU-using job runs half of its CPU time outside the section before
    /// it and the rest after, as the simulator does).
    pub pieces: Vec<PieceRun>,
    /// The GPU section, for GPU-using tasks.
    pub gpu: Option<GpuRun>,
    /// When the GPU section began (it asked for its token), from the start
    /// of the run.
    pub gpu_start: Option<Nanos>,
}

/// Per-task summary beside the analysed bound.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TaskSummary {
    pub name: String,
    pub period: Nanos,
    pub deadline: Nanos,
    pub jobs: usize,
    pub deadline_misses: usize,
    pub max_response_time: Nanos,
    pub mean_response_time: Nanos,
    /// The analysis's bound on the response time, if it gave one.
    pub analysed_bound: Option<Nanos>,
    /// Pieces that ran on a CPU other than their planned core (folded runs
    /// excepted, where the planned core is mapped first).
    pub pieces_off_core: usize,
    /// GPU-using tasks (vGPU members excepted: they take no token): the
    /// longest wait for a GPU token, and how often the task's state
    /// migrated between GPUs.
    pub max_token_wait: Option<Nanos>,
    pub migrations: usize,
    /// The policy the kernel reported for the task's thread once its first
    /// piece's policy was applied (a CPU reservation: SCHED_DEADLINE).
    pub ran_under: Option<String>,
}

/// What a run produced.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunOutcome {
    /// Plain statements of what the run could not do as planned; printed at
    /// the top of the output.
    pub warnings: Vec<String>,
    /// The scheduling policy the task threads really ran under, in words.
    pub policy: String,
    /// CPUs used for each planned core.
    pub core_map: Vec<usize>,
    pub tasks: Vec<TaskSummary>,
    pub jobs: Vec<JobRun>,
    /// The GPU backend used ("emulated", "cuda"), if any task uses a GPU.
    pub backend: Option<String>,
    /// Token and engine-lock hand-offs recorded by the arbiters.
    pub handoffs: Vec<crate::arbiter::Event>,
    /// What the run did beyond the plan, in words (e.g. klmirqd mirroring).
    pub notes: Vec<String>,
    /// klmirqd's completion threads, when the workload's interrupt handling
    /// is klmirqd and a task uses a GPU.
    pub klmirqd: Option<KlmirqdReport>,
    /// vGPUs (seed 001): reserved and used shares of their GPUs.
    pub vgpus: Vec<VgpuShare>,
    /// Per job delayed by something other than more urgent jobs, that
    /// delay (ns, sorted ascending): release latency, priority inversions,
    /// interrupts, kernel work (`delays::unexplained_delays`), the run's
    /// counterpart of the simulator's priority inversions.
    pub unexplained_delays: Vec<Nanos>,
    /// CLOCK_MONOTONIC instant of the first release (ns): the jobs' times
    /// are relative to it. ftrace's `mono` trace clock reads the same
    /// clock, so a kernel trace of the run lines up with its jobs.
    pub started_at_monotonic: Nanos,
    /// Per CPU the run used, the time the hypervisor kept it from running
    /// during the run (steal time, [`crate::os::steal_per_cpu`]); empty
    /// where /proc/stat cannot be read.
    pub steal: Vec<CpuSteal>,
}

/// Steal time of one CPU over a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CpuSteal {
    pub cpu: usize,
    pub steal: Nanos,
}

/// One vGPU's reservation and the share of its GPU it used in a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VgpuShare {
    pub name: String,
    /// Budget over period (seed 001's share).
    pub reserved: f64,
    /// Its kernels' execution-engine time over the release window.
    pub used: f64,
}

/// The outcome of a run: what was set up, what the threads did, summed up
/// per task beside `report`'s bounds, with the arbiters' hand-offs,
/// klmirqd's threads and the vGPUs' shares over the `duration` of releases.
pub(super) fn outcome(
    workload: &Workload,
    report: &Report,
    plan: &Plan,
    duration: Nanos,
    prepared: Prepared,
    ran: Ran,
) -> RunOutcome {
    let Prepared {
        mut warnings,
        mut notes,
        policy_words,
        core_map,
        backend,
        clusters,
    } = prepared;
    let Ran {
        jobs,
        warnings: thread_warnings,
        ran_under,
        t0,
    } = ran;
    warnings.extend(thread_warnings);
    let mut handoffs = Vec::new();
    for c in clusters.iter().flatten() {
        handoffs.extend(c.arbiter.take_events());
        for e in c.arbiter.apply_errors() {
            warnings.push(format!("priority inheritance not applied: {e}"));
        }
    }
    handoffs.sort_by_key(|e| e.at);
    let klmirqd = klmirqd_report(&clusters);
    if let Some(k) = &klmirqd {
        let n: u64 = k.threads.iter().map(|t| t.stats.completions).sum();
        let cpu: u64 = k.threads.iter().map(|t| t.stats.total_cpu).sum();
        let max = k.threads.iter().map(|t| t.stats.max_cpu).max().unwrap_or(0);
        let lat = k
            .threads
            .iter()
            .map(|t| t.stats.max_latency)
            .max()
            .unwrap_or(0);
        notes.push(format!(
            "klmirqd: {n} GPU completion(s) ran on the completion threads, bottom half mean \
             {:.1} us and max {:.1} us of CPU time, at most {:.1} us from the device's signal \
             to waking the owner",
            cpu as f64 / n.max(1) as f64 / 1e3,
            max as f64 / 1e3,
            lat as f64 / 1e3
        ));
    }

    let vgpus = vgpu_shares(workload, &clusters, duration);
    for v in &vgpus {
        notes.push(format!(
            "vGPU {}: reserved {:.1}% of its GPU, its kernels used {:.1}% of it while jobs \
             were released (seed 001)",
            v.name,
            100.0 * v.reserved,
            100.0 * v.used,
        ));
    }
    let tasks = task_summaries(workload, report, plan, &core_map, &jobs, &ran_under);
    let unexplained_delays = super::delays::unexplained_delays(workload, plan, &core_map, &jobs);

    RunOutcome {
        warnings,
        policy: policy_words,
        core_map,
        tasks,
        jobs,
        backend: backend.map(|b| b.name().to_string()),
        handoffs,
        notes,
        klmirqd,
        vgpus,
        unexplained_delays,
        started_at_monotonic: t0,
        steal: Vec::new(),
    }
}

/// Per task: its jobs, misses, response times beside the analysed bound,
/// pieces off their core, token waits and migrations.
fn task_summaries(
    workload: &Workload,
    report: &Report,
    plan: &Plan,
    core_map: &[usize],
    jobs: &[JobRun],
    ran_under: &[Option<String>],
) -> Vec<TaskSummary> {
    workload
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mine: Vec<&JobRun> = jobs.iter().filter(|j| j.task == i).collect();
            let n = mine.len();
            let sum: u128 = mine.iter().map(|j| u128::from(j.response_time)).sum();
            let off = mine
                .iter()
                .flat_map(|j| &j.pieces)
                .filter(|p| {
                    let cpu = core_map[p.planned_core as usize];
                    !runs_on_cluster(plan, i)
                        && (p.cpu_at_start != Some(cpu) || p.cpu_at_end != Some(cpu))
                })
                .count();
            TaskSummary {
                name: t.name.clone(),
                period: t.period,
                deadline: t.deadline,
                jobs: n,
                deadline_misses: mine.iter().filter(|j| j.deadline_miss).count(),
                max_response_time: mine.iter().map(|j| j.response_time).max().unwrap_or(0),
                mean_response_time: if n == 0 {
                    0
                } else {
                    (sum / n as u128) as Nanos
                },
                analysed_bound: report.tasks.get(i).and_then(|r| r.response_time),
                pieces_off_core: off,
                // vGPU members take no token (seed 001's vGPU scheduler
                // orders their kernels instead).
                max_token_wait: t.gpu.as_ref().is_some_and(|g| g.vgpu.is_none()).then(|| {
                    mine.iter()
                        .filter_map(|j| j.gpu.map(|g| g.token_wait))
                        .max()
                        .unwrap_or(0)
                }),
                migrations: mine
                    .iter()
                    .filter(|j| j.gpu.is_some_and(|g| g.migrated))
                    .count(),
                ran_under: ran_under.get(i).cloned().flatten(),
            }
        })
        .collect()
}

fn klmirqd_report(clusters: &[Option<Arc<ClusterGpus>>]) -> Option<KlmirqdReport> {
    let threads: Vec<KlmirqdThreadReport> = clusters
        .iter()
        .flatten()
        .flat_map(|c| &c.completion)
        .map(|t| KlmirqdThreadReport {
            gpu: t.gpu(),
            name: format!("klmirqd/gpu{}", t.gpu()),
            started: t.mode_report().clone(),
            stats: t.stats(),
        })
        .collect();
    let first = threads.first()?;
    Some(KlmirqdReport {
        mode: first.started.mode,
        threads,
    })
}

/// Per vGPU, the share of its GPU's time its kernels used in the release
/// window (the `duration` from the first release, set on the gates before
/// it) beside its reservation (seed 001 Fig. 10's check; after the window
/// members run out of work one by one).
fn vgpu_shares(
    w: &Workload,
    clusters: &[Option<Arc<ClusterGpus>>],
    duration: Nanos,
) -> Vec<VgpuShare> {
    let mut shares = Vec::new();
    for (v, vg) in w.vgpus.iter().enumerate() {
        let Some((gpu, k)) = gpu_section::vgpu_slot(w, v) else {
            continue;
        };
        let gate = clusters.iter().flatten().find_map(|c| {
            let local = c.global.iter().position(|&g| g == gpu)?;
            c.vgpus.get(local).cloned().flatten()
        });
        if let Some(gate) = gate {
            let (budget, period) = vg.budget_and_period();
            shares.push(VgpuShare {
                name: vg.name.clone(),
                reserved: budget as f64 / period.max(1) as f64,
                used: gate.used_in_window(k) as f64 / duration.max(1) as f64,
            });
        }
    }
    shares
}

/// Tasks without pieces (C-FP / G-FP) may run on any CPU of their cluster.
fn runs_on_cluster(plan: &Plan, task: usize) -> bool {
    plan.tasks.get(task).is_none_or(|t| t.pieces.is_empty())
}
