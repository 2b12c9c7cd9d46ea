//! A deployment plan read back (`rtgpu simulate --plan PLAN.json`): the
//! placement, priorities, split budgets and CPU reservations that
//! `rtgpu analyze --plan` wrote, so that a simulation runs them without
//! analysing (partitioning) the workload again.
//!
//! [`PlanFile::parse`] reads the JSON (`"format": "rtgpu-plan/1"`, the
//! fields of [`rtgpu_analysis::workload::Plan`]); [`PlanFile::check`]
//! refuses a plan that does not belong to the workload, naming what
//! differs: its workload name, its scheduler, its number of tasks, a
//! task's name, period or deadline, a core the workload does not have, a
//! CPU reservation on one side only.

use serde::Deserialize;

use rtgpu_analysis::workload::{scheduler_name, PieceReport, Reservation, PLAN_FORMAT};
use rtgpu_model::{CpuScheduler, Workload};
use rtgpu_policy::Time;

use crate::SimError;

/// A plan as `rtgpu analyze --plan` writes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PlanFile {
    pub format: String,
    pub workload: String,
    pub scheduler: String,
    pub verdict: String,
    pub tasks: Vec<PlanFileTask>,
}

/// One task of a [`PlanFile`] (see [`rtgpu_analysis::workload::PlanTask`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PlanFileTask {
    pub name: String,
    pub period: Time,
    pub deadline: Time,
    pub cores: Vec<u32>,
    pub sched_fifo_priority: Option<u8>,
    pub reservation: Option<PlanReservation>,
    pub pieces: Vec<PlanPiece>,
}

/// SCHED_DEADLINE parameters of a CPU reservation, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct PlanReservation {
    pub runtime: Time,
    pub deadline: Time,
    pub period: Time,
}

/// One piece of a P-FP task (see [`PieceReport`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct PlanPiece {
    pub core: u32,
    pub budget: Time,
    pub release_offset: Time,
    pub deadline: Time,
    pub priority: u32,
    pub response_time: Option<Time>,
}

impl PlanPiece {
    pub(crate) fn report(&self) -> PieceReport {
        PieceReport {
            core: self.core,
            budget: self.budget,
            release_offset: self.release_offset,
            deadline: self.deadline,
            priority: self.priority,
            response_time: self.response_time,
        }
    }
}

impl PlanReservation {
    pub(crate) fn reservation(&self) -> Reservation {
        Reservation {
            runtime: self.runtime,
            deadline: self.deadline,
            period: self.period,
        }
    }
}

impl PlanFile {
    /// Reads a plan's JSON; `source` names it in errors (its path).
    pub fn parse(text: &str, source: &str) -> Result<PlanFile, SimError> {
        // The format first, so that another file says what it is not.
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| SimError(format!("{source}: not a plan (invalid JSON: {e})")))?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(PLAN_FORMAT) => {}
            Some(other) => {
                return Err(SimError(format!(
                    "{source}: plan format `{other}`, expected `{PLAN_FORMAT}` (write it with \
                     `rtgpu analyze WORKLOAD --plan {source}`)"
                )))
            }
            None => {
                return Err(SimError(format!(
                    "{source}: not a plan (no \"format\": \"{PLAN_FORMAT}\"; write one with \
                     `rtgpu analyze WORKLOAD --plan {source}`)"
                )))
            }
        }
        serde_json::from_value(value)
            .map_err(|e| SimError(format!("{source}: not a valid {PLAN_FORMAT} plan: {e}")))
    }

    /// Reads the plan at `path`.
    pub fn load(path: &std::path::Path) -> Result<PlanFile, SimError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SimError(format!("cannot read the plan {}: {e}", path.display())))?;
        PlanFile::parse(&text, &path.display().to_string())
    }

    /// Whether this plan was written for `w` (the workload as it will be
    /// simulated): `Err` naming the first thing that differs.
    pub fn check(&self, w: &Workload) -> Result<(), SimError> {
        let mismatch = |what: String| {
            Err(SimError(format!(
                "the plan does not match the workload {}: {what}; write a new one with \
                 `rtgpu analyze WORKLOAD --plan PLAN.json`",
                w.name
            )))
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
                return Err(SimError(format!(
                    "the plan gives {} tasks SCHED_FIFO priority 1 ({}, ...): their order is \
                     lost, and {} needs it; simulate without --plan",
                    lowest.len(),
                    lowest[..lowest.len().min(3)].join(", "),
                    sched
                )));
            }
        }
        Ok(())
    }
}

impl PlanFile {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_refuses_other_files_by_name() {
        let e = PlanFile::parse("{}", "x.json").unwrap_err().0;
        assert!(e.contains("x.json: not a plan"), "{e}");
        let e = PlanFile::parse("[", "x.json").unwrap_err().0;
        assert!(e.contains("invalid JSON"), "{e}");
        let e = PlanFile::parse(r#"{"format":"rtgpu-plan/9"}"#, "x.json")
            .unwrap_err()
            .0;
        assert!(e.contains("`rtgpu-plan/9`"), "{e}");
        let e = PlanFile::parse(r#"{"format":"rtgpu-plan/1"}"#, "x.json")
            .unwrap_err()
            .0;
        assert!(e.contains("not a valid rtgpu-plan/1 plan"), "{e}");
    }
}
