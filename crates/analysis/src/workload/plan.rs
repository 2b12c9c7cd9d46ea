//! The deployment [`Plan`] `rtgpu run` consumes: per task its cores,
//! SCHED_FIFO priority or CPU reservation ([`Reservation`]), and the pieces
//! of a split task.

use serde::Serialize;

use rtgpu_model::{CpuScheduler, Workload};

use super::report::{PieceReport, TaskReport, Verdict};
use crate::task::Time;

/// The deployment plan `rtgpu run` consumes (JSON, `format` versioned).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub format: &'static str,
    pub workload: String,
    pub scheduler: String,
    pub verdict: Verdict,
    pub tasks: Vec<PlanTask>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanTask {
    pub name: String,
    pub period: Time,
    pub deadline: Time,
    /// Cores the task's thread may run on (affinity) when not split.
    pub cores: Vec<u32>,
    /// Suggested SCHED_FIFO priority (1..=98, higher = more urgent) for FP
    /// schedulers; `None` under EDF (use SCHED_DEADLINE with runtime = wcet,
    /// deadline, period).
    pub sched_fifo_priority: Option<u8>,
    /// A CPU reservation (`reservation = true`): run the thread under
    /// SCHED_DEADLINE with these parameters, on every CPU, instead of at a
    /// SCHED_FIFO priority.
    pub reservation: Option<Reservation>,
    /// P-FP: one entry per piece, in execution order. Piece k runs on its
    /// core, released `release_offset` after the job's release and never
    /// earlier (the analysis assumes these fixed offsets, seed 003 §III.B: a
    /// piece that started as soon as the previous one finished early would
    /// add release jitter it did not charge), for at most `budget` ns of CPU
    /// time; the job then migrates to the next piece's core.
    pub pieces: Vec<PieceReport>,
}

/// SCHED_DEADLINE parameters of a CPU reservation (runtime <= deadline <=
/// period), in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Reservation {
    pub runtime: Time,
    pub deadline: Time,
    pub period: Time,
}

impl Reservation {
    /// The reservation of a task with `reservation = true`: a relative
    /// deadline and period of D − J, and a runtime of C plus a margin of 20%
    /// of C, at least 200 us, at most up to D − J.
    ///
    /// The deadline: the kernel sees a job when its thread wakes, at its
    /// release r + j (j ≤ J, the release jitter), and the CBS gives it its
    /// deadline from there (the wake-up rule, `rtgpu_policy::cbs`): D − J
    /// keeps r + j + D − J ≤ r + D.
    ///
    /// The period: D − J too, an implicit-deadline reservation. The next
    /// job wakes at least T − J ≥ D − J after this one did, when this
    /// server period is over, so it starts a fresh one. Linux 6.18 serves a
    /// constrained one (deadline < period) far below its runtime: measured
    /// on the dev VM and the H100 box, a 10 ms job with 12 ms every 100 ms
    /// within 99 ms took 80.5 ms, and 10.0 ms with 12 ms every 99 ms.
    ///
    /// The margin: the kernel charges more than the job's own CPU time to
    /// its runtime (its wake-up and switch, ticks): on the 2-vCPU dev VM a
    /// job of 1 ms of thread CPU time used 1.04-1.07 ms of runtime, so a
    /// 1.03 ms reservation was throttled in every job, and `rtgpu run`'s
    /// jobs still missed now and then at 1.1 ms, never at 1.2 ms
    /// (`docs/runtime.md`, "CPU reservations"). The analysis charges this
    /// runtime, not C.
    pub fn of(t: &rtgpu_model::Task) -> Reservation {
        let margin = Reservation::margin(t.wcet);
        let deadline = t.deadline.saturating_sub(t.jitter).max(1);
        Reservation {
            runtime: t.wcet.saturating_add(margin).min(deadline),
            deadline,
            period: deadline,
        }
    }

    /// The margin above a job's WCET `wcet` that its runtime leaves for
    /// what the kernel charges besides (see [`Reservation::of`]): 20% of
    /// `wcet`, at least 200 us.
    pub fn margin(wcet: Time) -> Time {
        (wcet / 5).max(200_000)
    }
}

/// Version tag of the plan file format.
pub const PLAN_FORMAT: &str = "rtgpu-plan/1";

/// Map FP ranks to SCHED_FIFO priorities 98 (rank 1) downwards, clamped at 1.
pub fn fifo_priority(rank: u32) -> u8 {
    98u32.saturating_sub(rank.saturating_sub(1)).max(1) as u8
}

pub(super) fn make_plan(
    w: &Workload,
    tasks: &[TaskReport],
    scheduler: &str,
    verdict: Verdict,
) -> Plan {
    let fp_sched = !matches!(
        w.policy.cpu_scheduler,
        CpuScheduler::ClusteredEdf | CpuScheduler::GlobalEdf
    );
    Plan {
        format: PLAN_FORMAT,
        workload: w.name.clone(),
        scheduler: scheduler.to_string(),
        verdict,
        tasks: tasks
            .iter()
            .map(|t| PlanTask {
                name: t.name.clone(),
                period: t.period,
                deadline: t.deadline,
                cores: t.cores.clone(),
                sched_fifo_priority: if fp_sched {
                    t.priority.map(fifo_priority)
                } else {
                    None
                },
                reservation: None,
                pieces: t.pieces.clone(),
            })
            .collect(),
    }
}
