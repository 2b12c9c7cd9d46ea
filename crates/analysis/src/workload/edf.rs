//! The C-EDF / G-EDF driver: bounded tardiness per cluster or on the
//! whole platform ([`crate::edf`], seed 000 App. B Eqs. 4-5) with the
//! App. B fixed point of interrupt windows, and the hard-deadline density
//! test beside it.

use rtgpu_model::Workload;

use crate::edf;
use crate::overheads;
use crate::task::Time;

use super::charges::{inflated_tasks, Cx};
use super::groups::{groups, Group};
use super::report::{TaskReport, TaskVerdict};

pub(super) fn analyze_edf(
    cx: &Cx,
    global: bool,
    tasks: &mut [TaskReport],
    notes: &mut Vec<String>,
) -> String {
    let w = cx.w;
    for Group {
        cluster,
        cores,
        tasks: input,
    } in groups(w, global)
    {
        let m = cores.len() as u32;
        let label = match cluster {
            None => "the platform".to_string(),
            Some(ci) => format!("cluster {}", w.platform.clusters[ci].name),
        };
        // seed 000 App. B: windows p + x (D + x), from x = 0 until every
        // tardiness bound is unchanged.
        let mut x: Vec<Time> = vec![0; input.len()];
        let mut settled = false;
        let (mut inflated, mut charges, mut res);
        let mut iterations = 0;
        loop {
            iterations += 1;
            let windows: Vec<Time> = input
                .iter()
                .zip(&x)
                .map(|(t, &xi)| t.deadline.saturating_add(xi))
                .collect();
            (inflated, charges) = inflated_tasks(cx, &input, &windows);
            res = edf::gedf_tardiness(&inflated, m);
            let nx: Option<Vec<Time>> = res.tasks.iter().map(|t| t.tardiness).collect();
            match nx {
                Some(nx) if res.bounded => {
                    if nx == x {
                        settled = true;
                        break;
                    }
                    x = nx.iter().zip(&x).map(|(&a, &b)| a.max(b)).collect();
                }
                _ => break,
            }
            if iterations >= overheads::MAX_FIXED_POINT_ITERATIONS {
                break;
            }
        }
        let bounded = settled && res.bounded;
        if res.bounded && !settled {
            notes.push(format!(
                "{label}: the tardiness / interrupt-count fixed point did not settle within {} \
                 iterations; tardiness is reported unbounded",
                overheads::MAX_FIXED_POINT_ITERATIONS
            ));
        }
        let hard = edf::gedf_density_test(&inflated, m);
        notes.push(format!(
            "hard deadlines on {label}: the G-EDF density test (Goossens, Funk & Baruah 2003) {}",
            if hard {
                "passes: every deadline holds"
            } else {
                "fails: deadlines may be missed (tardiness stays bounded if reported so)"
            }
        ));
        if let Some(why) = &res.reason {
            notes.push(format!("{label}: {}", describe_rejection(why, w)));
        }
        for (k, t) in input.iter().enumerate() {
            let tr = &mut tasks[t.id];
            tr.cluster = cluster;
            tr.cores = cores.clone();
            tr.charges = Some(charges[k]);
            tr.tardiness = res
                .tasks
                .get(k)
                .and_then(|x| x.tardiness)
                .filter(|_| bounded);
            tr.response_time = res
                .tasks
                .get(k)
                .and_then(|x| x.response_bound)
                .filter(|_| bounded);
            tr.verdict = if bounded && tr.tardiness.is_some() {
                TaskVerdict::BoundedTardiness
            } else {
                TaskVerdict::UnboundedTardiness
            };
        }
    }
    if global {
        "G-EDF bounded tardiness (Devi & Anderson 2005; seed 000 App. B Eqs. 4-5) on \
         overhead-inflated, suspension-oblivious costs with the App. B fixed point"
            .into()
    } else {
        "C-EDF bounded tardiness: G-EDF test per cluster (Devi & Anderson 2005; seed 000 \
         App. B Eqs. 4-5) on overhead-inflated, suspension-oblivious costs with the App. B \
         fixed point"
            .into()
    }
}

/// A rejection of the tardiness analysis in words, with task names.
pub(super) fn describe_rejection(r: &edf::EdfRejection, w: &Workload) -> String {
    let name = |i: usize| w.tasks.get(i).map_or("?", |t| t.name.as_str());
    match r {
        edf::EdfRejection::NoProcessors => "no processors".into(),
        edf::EdfRejection::InvalidTask { task, what } => {
            format!("task {} is invalid: {what}", name(*task))
        }
        edf::EdfRejection::Unsupported { task, what } => format!(
            "task {} has {what}, which the tardiness theorem does not cover",
            name(*task)
        ),
        edf::EdfRejection::ExecutionExceedsPeriod { task, .. } => format!(
            "task {} has C > T, so its tardiness grows without bound (seed 000 App. B Eq. 4)",
            name(*task)
        ),
        edf::EdfRejection::Overutilized { utilization, cores } => format!(
            "total utilization {utilization:.4} exceeds {cores} core(s), so tardiness grows \
             without bound (seed 000 App. B Eq. 5)"
        ),
        edf::EdfRejection::Overflow => {
            "the tardiness bound does not fit in 64-bit nanoseconds".into()
        }
    }
}
