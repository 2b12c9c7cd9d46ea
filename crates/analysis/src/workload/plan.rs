//! The deployment [`Plan`] `rtgpu run` consumes: per task its cores,
//! SCHED_FIFO priority or CPU reservation ([`Reservation`]), and the pieces
//! of a split task. `rtgpu analyze --plan` writes it; `rtgpu simulate
//! --plan` reads it back ([`Plan::parse`], [`Plan::check`]) to run it
//! without analysing (partitioning) the workload again.

use serde::{Deserialize, Serialize};

use rtgpu_model::{CpuScheduler, Workload};

use super::report::scheduler_name;

use super::report::{PieceReport, TaskReport, Verdict};
use crate::task::Time;

/// The deployment plan `rtgpu run` consumes (JSON, `format` versioned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// [`PLAN_FORMAT`].
    pub format: String,
    pub workload: String,
    pub scheduler: String,
    pub verdict: Verdict,
    pub tasks: Vec<PlanTask>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

impl Plan {
    /// Reads a plan's JSON; `source` names it in errors (its path).
    pub fn parse(text: &str, source: &str) -> Result<Plan, String> {
        // The format first, so that another file says what it is not.
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("{source}: not a plan (invalid JSON: {e})"))?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(PLAN_FORMAT) => {}
            Some(other) => {
                return Err(format!(
                    "{source}: plan format `{other}`, expected `{PLAN_FORMAT}` (write it with \
                     `rtgpu analyze WORKLOAD --plan {source}`)"
                ))
            }
            None => {
                return Err(format!(
                    "{source}: not a plan (no \"format\": \"{PLAN_FORMAT}\"; write one with \
                     `rtgpu analyze WORKLOAD --plan {source}`)"
                ))
            }
        }
        serde_json::from_value(value)
            .map_err(|e| format!("{source}: not a valid {PLAN_FORMAT} plan: {e}"))
    }

    /// Reads the plan at `path`.
    pub fn load(path: &std::path::Path) -> Result<Plan, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the plan {}: {e}", path.display()))?;
        Plan::parse(&text, &path.display().to_string())
    }

    /// Whether this plan was written for `w` (the workload as it will be
    /// simulated): `Err` naming the first thing that differs.
    pub fn check(&self, w: &Workload) -> Result<(), String> {
        let mismatch = |what: String| {
            Err(format!(
                "the plan does not match the workload {}: {what}; write a new one with \
                 `rtgpu analyze WORKLOAD --plan PLAN.json`",
                w.name
            ))
        };
        if self.workload != w.name {
            return mismatch(format!(
                "it is the plan of workload `{}`, not `{}`",
                self.workload, w.name
            ));
        }
        let sched = scheduler_name(w.policy.cpu_scheduler);
        if self.scheduler != sched {
            return mismatch(format!(
                "its scheduler is {}, the workload's {sched}",
                self.scheduler
            ));
        }
        if self.tasks.len() != w.tasks.len() {
            return mismatch(format!(
                "it has {} task(s), the workload {}",
                self.tasks.len(),
                w.tasks.len()
            ));
        }
        let cores = w.platform.total_cores();
        for (i, (p, t)) in self.tasks.iter().zip(&w.tasks).enumerate() {
            if p.name != t.name {
                return mismatch(format!(
                    "task {} is `{}` in the workload but `{}` in the plan",
                    i + 1,
                    t.name,
                    p.name
                ));
            }
            if p.period != t.period || p.deadline != t.deadline {
                return mismatch(format!(
                    "task {} has period {} ns and deadline {} ns in the workload, {} ns and \
                     {} ns in the plan",
                    t.name, t.period, t.deadline, p.period, p.deadline
                ));
            }
            if let Some(&c) = p
                .cores
                .iter()
                .chain(p.pieces.iter().map(|x| &x.core))
                .find(|&&c| c >= cores)
            {
                return mismatch(format!(
                    "the plan places task {} on core {c}, but the workload has {cores} core(s)",
                    t.name
                ));
            }
            if t.reservation != p.reservation.is_some() {
                return mismatch(format!(
                    "task {} is {} CPU reservation in the workload but {} in the plan",
                    t.name,
                    if t.reservation { "a" } else { "no" },
                    if p.reservation.is_some() {
                        "one"
                    } else {
                        "none"
                    }
                ));
            }
        }
        // Under a global scheduler every task may run on every core.
        if w.policy.cpu_scheduler.is_global() {
            if let Some(p) = self
                .tasks
                .iter()
                .find(|p| p.reservation.is_none() && p.cores.len() != cores as usize)
            {
                return mismatch(format!(
                    "the plan lets task {} run on {} core(s), the workload has {cores}",
                    p.name,
                    p.cores.len()
                ));
            }
        }
        // G-FP, C-FP: the plan's SCHED_FIFO priorities are the analysis'
        // ranks (rank r at 99 - r), exact unless clamped at 1.
        if matches!(
            w.policy.cpu_scheduler,
            CpuScheduler::GlobalFp | CpuScheduler::ClusteredFp
        ) {
            let lowest: Vec<&str> = self
                .tasks
                .iter()
                .filter(|p| p.sched_fifo_priority == Some(1))
                .map(|p| p.name.as_str())
                .collect();
            if lowest.len() > 1 {
                return Err(format!(
                    "the plan gives {} tasks SCHED_FIFO priority 1 ({}, ...): their order is \
                     lost, and {} needs it; simulate without --plan",
                    lowest.len(),
                    lowest[..lowest.len().min(3)].join(", "),
                    sched
                ));
            }
        }
        Ok(())
    }
    /// The response-time bounds the plan carries, per task of `w` (which
    /// it was checked against): under P-FP, a placed task's (its pieces'
    /// budgets cover its WCET) last piece's release offset plus that
    /// piece's response time, as `rtgpu analyze` bounds it; none under
    /// other schedulers (their plans carry no bounds).
    pub fn bounds(&self, w: &Workload) -> Vec<Option<Time>> {
        if w.policy.cpu_scheduler != CpuScheduler::PartitionedFp {
            return vec![None; w.tasks.len()];
        }
        self.tasks
            .iter()
            .zip(&w.tasks)
            .map(|(pt, t)| {
                let placed: Time = pt.pieces.iter().map(|x| x.budget).sum();
                if placed < t.wcet {
                    return None;
                }
                // The last of the pieces in release order (ties: the last
                // listed, as the analysis' stable sort leaves them).
                let last = pt.pieces.iter().max_by_key(|x| x.release_offset)?;
                last.response_time.map(|r| last.release_offset + r)
            })
            .collect()
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
        format: PLAN_FORMAT.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_refuses_other_files_by_name() {
        let e = Plan::parse("{}", "x.json").unwrap_err();
        assert!(e.contains("x.json: not a plan"), "{e}");
        let e = Plan::parse("[", "x.json").unwrap_err();
        assert!(e.contains("invalid JSON"), "{e}");
        let e = Plan::parse(r#"{"format":"rtgpu-plan/9"}"#, "x.json").unwrap_err();
        assert!(e.contains("`rtgpu-plan/9`"), "{e}");
        let e = Plan::parse(r#"{"format":"rtgpu-plan/1"}"#, "x.json").unwrap_err();
        assert!(e.contains("not a valid rtgpu-plan/1 plan"), "{e}");
    }

    /// What `rtgpu analyze --plan` writes, `rtgpu simulate --plan` reads
    /// back as it was (one struct for both: no writer/reader twin to drift),
    /// and it belongs to its workload and to no other.
    #[test]
    fn a_written_plan_reads_back_equal_and_checks_against_its_workload() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        for name in [
            "quickstart.toml",
            "perception-1gpu.toml",
            "control-2core.toml",
        ] {
            let w = rtgpu_model::load_workload(&dir.join(name)).expect("example");
            let (_, plan) = crate::workload::analyze(&w);
            let text = serde_json::to_string_pretty(&plan).expect("JSON");
            let back = Plan::parse(&text, name).expect("reads back");
            assert_eq!(back, plan, "{name}");
            back.check(&w).expect("its own workload");
            let mut other = w.clone();
            other.name.push_str("-other");
            assert!(back.check(&other).unwrap_err().contains("not `"), "{name}");
        }
    }
}
