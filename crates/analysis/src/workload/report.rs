//! What `rtgpu analyze` reports: the [`Report`] and its parts (per task,
//! per piece, per core and cluster, the informative utilization bounds),
//! the verdict words and scheduler names the report and the notes use.

use serde::Serialize;

use rtgpu_model::{CpuScheduler, Workload};

use crate::overheads::Charges;
use crate::server::Server;
use crate::task::{Task, Time};
use crate::workload_gpu::GpuTaskReport;
use crate::{bounds, fp};

use super::groups::analysis_task;
#[cfg(doc)]
use super::reservations::analyze_reservations;
#[cfg(doc)]
use super::{analyze_with, Extra};

/// The overall answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every deadline holds (hard real time), or every tardiness is bounded
    /// (soft real time under EDF; see [`Report::soft`]).
    Schedulable,
    NotSchedulable,
    /// The workload has parts the analysis cannot cover. Kept for the report
    /// format; this version bounds every part or reports it unbounded (the
    /// task then fails), so it does not produce this verdict.
    NotAnalysed,
}

/// Per-task outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskVerdict {
    MeetsDeadline,
    /// A bound that holds if the tasks in [`TaskReport::depends_on`] meet
    /// their deadlines (it counts their interrupts over their deadlines,
    /// seed 000 Eq. 11), which the analysis does not show.
    MeetsDeadlineIf,
    MissesDeadline,
    BoundedTardiness,
    UnboundedTardiness,
    /// Partitioning could not place (all of) the task.
    Unplaced,
    NotAnalysed,
}

/// One piece of a task on one core (a whole task is a single piece).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PieceReport {
    pub core: u32,
    /// Budget of this piece (its C').
    pub budget: Time,
    /// Offset of this piece's release after the job's release (seed 003
    /// §III.B: τ'' is released R' after τ', R' the response time of τ' on
    /// its core: C' at the top of a core, more with servers charged).
    pub release_offset: Time,
    /// Relative deadline of the piece, from its own release.
    pub deadline: Time,
    /// 1 = highest priority on the core.
    pub priority: u32,
    pub response_time: Option<Time>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskReport {
    pub name: String,
    pub wcet: Time,
    pub period: Time,
    pub deadline: Time,
    pub jitter: Time,
    pub blocking: Time,
    pub utilization: f64,
    pub uses_gpu: bool,
    /// Cluster the task runs in (index), if it was placed.
    pub cluster: Option<usize>,
    /// Cores the task may run on (its pieces' cores for P-FP, the cluster's
    /// cores otherwise).
    pub cores: Vec<u32>,
    /// Global priority rank under FP schedulers (1 = highest), per core for
    /// P-FP in `pieces`.
    pub priority: Option<u32>,
    /// P-FP only: where each piece runs.
    pub pieces: Vec<PieceReport>,
    /// Worst-case response time bound from the job's release, if bounded.
    pub response_time: Option<Time>,
    /// EDF only: tardiness bound.
    pub tardiness: Option<Time>,
    /// The inflated cost the verdict used and the charges that make it up
    /// (seed 000 App. B); `charges.total` is the inflated cost.
    pub charges: Option<Charges>,
    /// GPU-using tasks: GPU wait bounds and GPU time.
    pub gpu: Option<GpuTaskReport>,
    pub verdict: TaskVerdict,
    /// [`TaskVerdict::MeetsDeadlineIf`]: the failing tasks whose deadlines
    /// its bound assumes met.
    pub depends_on: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoreReport {
    pub core: u32,
    pub cluster: usize,
    /// Utilization of the pieces partitioned onto this core (P-FP only).
    pub utilization: Option<f64>,
    /// Names of tasks (with piece index for split tasks) in priority order.
    pub tasks: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterReport {
    pub name: String,
    pub cores: u32,
    pub utilization: f64,
    pub tasks: usize,
}

/// A utilization bound evaluated for information (sufficient tests).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoundCheck {
    pub name: String,
    pub source: String,
    pub bound: f64,
    pub value: f64,
    pub applies: bool,
    pub passes: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub workload: String,
    pub scheduler: String,
    /// The test that decided the verdict, with its source.
    pub method: String,
    pub verdict: Verdict,
    /// Whether the verdict is soft real time (bounded tardiness).
    pub soft: bool,
    /// One sentence explaining the verdict.
    pub reason: String,
    pub total_utilization: f64,
    pub tasks: Vec<TaskReport>,
    pub cores: Vec<CoreReport>,
    pub clusters: Vec<ClusterReport>,
    pub bounds: Vec<BoundCheck>,
    pub notes: Vec<String>,
    /// Bandwidth servers charged as top-priority interference on every core
    /// ([`analyze_with`]); empty for the plain analysis, and under EDF,
    /// whose tardiness test cannot charge them (a note then says so).
    pub servers: Vec<Server>,
    /// klmirqd's independent mode: the server whose latency is charged to
    /// every GPU hold ([`Extra::bottom_halves`]); `None` otherwise.
    pub bottom_halves: Option<Server>,
    /// Whether the suspension-aware test decided for the GPU-using tasks
    /// (`crate::gpu::Method`); false without GPU-using tasks.
    pub suspension_aware: bool,
    /// How GPU-using tasks were analysed, in words; `None` without any.
    pub gpu_analysis: Option<String>,
}

pub(super) fn verdict_word(v: TaskVerdict) -> &'static str {
    match v {
        TaskVerdict::MeetsDeadline => "meets deadline",
        TaskVerdict::MeetsDeadlineIf => "meets deadline if others do",
        TaskVerdict::MissesDeadline => "misses deadline",
        TaskVerdict::BoundedTardiness => "bounded tardiness",
        TaskVerdict::UnboundedTardiness => "unbounded tardiness",
        TaskVerdict::Unplaced => "could not be placed",
        TaskVerdict::NotAnalysed => "not analysed",
    }
}

pub fn scheduler_name(s: CpuScheduler) -> &'static str {
    match s {
        CpuScheduler::PartitionedFp => "P-FP",
        CpuScheduler::ClusteredFp => "C-FP",
        CpuScheduler::GlobalFp => "G-FP",
        CpuScheduler::ClusteredEdf => "C-EDF",
        CpuScheduler::GlobalEdf => "G-EDF",
    }
}

pub(super) fn task_report(t: &rtgpu_model::Task) -> TaskReport {
    TaskReport {
        name: t.name.clone(),
        wcet: t.wcet,
        period: t.period,
        deadline: t.deadline,
        jitter: t.jitter,
        blocking: t.blocking,
        utilization: t.wcet as f64 / t.period as f64,
        uses_gpu: t.uses_gpu(),
        cluster: t.cluster,
        cores: Vec::new(),
        priority: None,
        pieces: Vec::new(),
        response_time: None,
        tardiness: None,
        charges: None,
        gpu: None,
        verdict: TaskVerdict::NotAnalysed,
        depends_on: Vec::new(),
    }
}

/// The report of a workload whose every task is a reservation, before
/// [`analyze_reservations`] adds them.
pub(super) fn empty_report(w: &Workload) -> Report {
    Report {
        workload: w.name.clone(),
        scheduler: scheduler_name(w.policy.cpu_scheduler).to_string(),
        method:
            "G-EDF density test of the SCHED_DEADLINE reservations (Goossens, Funk & Baruah 2003)"
                .to_string(),
        verdict: Verdict::Schedulable,
        soft: false,
        reason: "every task is a CPU reservation".to_string(),
        total_utilization: 0.0,
        tasks: Vec::new(),
        cores: Vec::new(),
        clusters: Vec::new(),
        bounds: Vec::new(),
        notes: Vec::new(),
        servers: Vec::new(),
        bottom_halves: None,
        suspension_aware: false,
        gpu_analysis: None,
    }
}

/// Informative utilization-bound tests on the whole task set.
pub(super) fn bound_checks(w: &Workload) -> Vec<BoundCheck> {
    let tasks: Vec<Task> = w
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.reservation)
        .map(|(i, t)| analysis_task(i, t))
        .collect();
    let u: f64 = tasks.iter().map(Task::utilization).sum();
    let m = w.platform.total_cores() as usize;
    let implicit = tasks
        .iter()
        .all(|t| t.deadline == t.period && t.jitter == 0 && t.blocking == 0);
    let max_u = tasks.iter().map(Task::utilization).fold(0.0, f64::max);
    let mut out = Vec::new();
    if m == 1 {
        let ll = fp::liu_layland_bound(tasks.len());
        out.push(BoundCheck {
            name: "Liu & Layland".into(),
            source: "Liu & Layland 1973, Theorem 5".into(),
            bound: ll,
            value: u,
            applies: implicit,
            passes: implicit && fp::liu_layland_test(&tasks),
        });
        let prod: f64 = tasks.iter().map(|t| t.utilization() + 1.0).product();
        out.push(BoundCheck {
            name: "hyperbolic".into(),
            source: "Bini, Buttazzo & Buttazzo 2003, Theorem 1".into(),
            bound: 2.0,
            value: prod,
            applies: implicit,
            passes: implicit && fp::hyperbolic_test(&tasks),
        });
    }
    // seed 003 bounds, decided exactly by `bounds` (the f64 value and bound
    // are for the report).
    let hpts = bounds::pdms_hpts_utilization_bound(m);
    out.push(BoundCheck {
        name: "PDMS_HPTS".into(),
        source: "seed 003 Theorem 6 (every task U < 60.03%)".into(),
        bound: hpts * m as f64,
        value: u,
        applies: implicit,
        passes: bounds::pdms_hpts_utilization_test(&tasks, m),
    });
    let light = max_u <= bounds::LIGHT_TASK_ALPHA;
    let ds = if light {
        bounds::PDMS_HPTS_DS_LIGHT_BOUND_PAPER
    } else {
        bounds::PDMS_HPTS_DS_BOUND_PAPER
    };
    out.push(BoundCheck {
        name: if light {
            "PDMS_HPTS_DS (light tasks)".into()
        } else {
            "PDMS_HPTS_DS".into()
        },
        source: if light {
            "seed 003 §V.A, SBLW with α = √2 − 1".into()
        } else {
            "seed 003 Theorem 7".into()
        },
        bound: ds * m as f64,
        value: u,
        applies: implicit,
        passes: bounds::pdms_hpts_ds_utilization_test(&tasks, m),
    });
    out
}
