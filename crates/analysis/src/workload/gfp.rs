//! The C-FP / G-FP driver: global fixed-priority response-time bounds
//! (Bertogna & Cirinei, [`crate::global_fp`]) per cluster or on the whole
//! platform.

use rtgpu_model::PriorityAssignment;

use crate::server::Server;
use crate::task::{Task, Time};
use crate::{fp, global_fp};

use super::charges::{inflated_tasks, Cx};
use super::groups::{groups, Group};
use super::report::{TaskReport, TaskVerdict};

pub(super) fn analyze_gfp(
    cx: &Cx,
    global: bool,
    tasks: &mut [TaskReport],
    notes: &mut Vec<String>,
) -> String {
    let w = cx.w;
    let aware = cx.aware;
    if w.policy.priority == PriorityAssignment::Audsley {
        notes.push(
            "Audsley's priority assignment is applied to uniprocessor (P-FP) analysis only; \
             global FP uses deadline-monotonic priorities here"
                .into(),
        );
    }
    for Group {
        cluster,
        cores,
        tasks: input,
    } in groups(w, global)
    {
        let m = cores.len() as u32;
        let deadlines: Vec<Time> = input.iter().map(|t| t.deadline).collect();
        let (inflated, charges) = inflated_tasks(cx, &input, &deadlines);
        // Suspension-aware (docs/analyses.md): a GPU-using job's own
        // response adds its GPU wait and GPU time (BC's blocking term: time
        // it is neither running nor interfered), the tasks below see only
        // its CPU demand.
        let mut input: Vec<Task> = inflated
            .iter()
            .zip(&charges)
            .map(|(t, c)| {
                let (cpu, suspension) = cx.costs(t.id, c);
                Task {
                    wcet: cpu,
                    blocking: t.blocking.saturating_add(suspension),
                    ..*t
                }
            })
            .collect();
        for (t, c) in input.iter().zip(&charges) {
            tasks[t.id].charges = Some(*c);
        }
        match w.policy.priority {
            PriorityAssignment::RateMonotonic => fp::rm_order(&mut input),
            _ => fp::dm_order(&mut input),
        }
        let servers: Vec<(Time, Time, Time)> = cx.servers.iter().map(Server::interferer).collect();
        let rts = global_fp::gfp_response_times_each(&servers, &input, m);
        for (rank, (t, r)) in input.iter().zip(rts).enumerate() {
            let tr = &mut tasks[t.id];
            tr.cluster = cluster;
            tr.cores = cores.clone();
            tr.priority = Some(rank as u32 + 1);
            tr.response_time = r;
            tr.verdict = if r.is_some() {
                TaskVerdict::MeetsDeadline
            } else {
                TaskVerdict::MissesDeadline
            };
        }
    }
    let costs = if aware {
        "overhead-inflated CPU demand, suspension-aware for GPU-using tasks (GPU wait and GPU \
         time suspend the task, not its CPU demand: our derivation, docs/analyses.md)"
    } else {
        "overhead-inflated, suspension-oblivious costs"
    };
    if global {
        format!(
            "global fixed-priority response-time analysis (Bertogna & Cirinei, RTSS 2007) on \
             {costs}"
        )
    } else {
        format!(
            "clustered fixed priority: global FP response-time analysis per cluster \
             (Bertogna & Cirinei, RTSS 2007) on {costs}"
        )
    }
}
