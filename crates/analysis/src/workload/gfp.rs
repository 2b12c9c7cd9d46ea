//! The C-FP / G-FP driver: global fixed-priority response-time bounds
//! (Bertogna & Cirinei, [`crate::global_fp`]) per cluster or on the whole
//! platform.

use rtgpu_model::PriorityAssignment;

use crate::server::Server;
use crate::task::Time;
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
        let (mut input, charges) = inflated_tasks(cx, &input, &deadlines);
        for (t, c) in input.iter().zip(&charges) {
            tasks[t.id].charges = Some(*c);
        }
        match w.policy.priority {
            PriorityAssignment::RateMonotonic => fp::rm_order(&mut input),
            _ => fp::dm_order(&mut input),
        }
        let servers: Vec<(Time, Time, Time)> = cx.servers.iter().map(Server::interferer).collect();
        let rts = global_fp::gfp_response_times_below(&servers, &input, m);
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
    if global {
        "global fixed-priority response-time analysis (Bertogna & Cirinei, RTSS 2007) on \
         overhead-inflated, suspension-oblivious costs"
            .into()
    } else {
        "clustered fixed priority: global FP response-time analysis per cluster \
         (Bertogna & Cirinei, RTSS 2007) on overhead-inflated, suspension-oblivious costs"
            .into()
    }
}
