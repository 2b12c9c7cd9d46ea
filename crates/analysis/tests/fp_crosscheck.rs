//! Cross-check of the exact uniprocessor RTA (`fp`) against the independent
//! `response-time-analysis` crate (Brandenburg et al.; the instantiation of
//! Prosa's abstract RTA) on random task sets, plus properties of the RTA and of
//! MaximalSplit.

use proptest::prelude::*;
use response_time_analysis::{
    arrival::Sporadic, demand::RBF, fixed_priority, time::Duration, wcet,
};
use rtgpu_analysis::fp;
use rtgpu_analysis::generate::{uunifast_tasks, Rng};
use rtgpu_analysis::{Task, Time};

/// Response time of the last task from the reference crate (no deadline
/// cut-off); `None` if its fixed-point search diverged.
fn reference_response_time(tasks: &[Task]) -> Option<Time> {
    let arrivals: Vec<Sporadic> = tasks
        .iter()
        .map(|t| Sporadic::new(Duration::from(t.period), Duration::from(t.jitter)))
        .collect();
    let costs: Vec<wcet::Scalar> = tasks
        .iter()
        .map(|t| wcet::Scalar::new(t.wcet.into()))
        .collect();
    let rbfs: Vec<_> = arrivals
        .iter()
        .zip(&costs)
        .map(|(a, c)| RBF::new(a, c))
        .collect();
    let i = tasks.len() - 1;
    fixed_priority::fully_preemptive::dedicated_uniproc_rta(
        &rbfs[i],
        &rbfs[..i],
        Duration::from(1_000_000_000_000u64),
    )
    .ok()
    .map(u64::from)
}

#[test]
fn matches_reference_crate_on_random_sets() {
    let mut rng = Rng::new(0xC0FFEE);
    let mut compared = 0;
    for round in 0..3000 {
        let n = 2 + round % 9;
        let u = 0.3 + 0.69 * rng.next_f64();
        let mut tasks = uunifast_tasks(&mut rng, n, u, 1_000, 100_000);
        // Arbitrary deadlines, so both analyses report the exact value rather
        // than stopping at D, and release jitter on higher-priority tasks. The
        // task under analysis has no jitter of its own: the reference measures
        // from release, rtgpu from arrival.
        for t in &mut tasks {
            t.deadline = t.period * 20;
        }
        fp::rm_order(&mut tasks);
        for i in 0..n {
            let mut set: Vec<Task> = tasks[..i]
                .iter()
                .map(|h| Task {
                    jitter: rng.range(0, h.period / 2),
                    ..*h
                })
                .collect();
            set.push(tasks[i]);
            let ours = fp::response_time(&set[..i], &set[i]);
            let theirs = reference_response_time(&set);
            match (ours, theirs) {
                (Some(a), Some(b)) => assert_eq!(a, b, "task {i} of {set:?}"),
                (None, Some(b)) => assert!(b > set[i].deadline, "we say miss, reference {b}"),
                (Some(a), None) => panic!("reference diverged but we found {a}: {set:?}"),
                (None, None) => {}
            }
            compared += 1;
        }
    }
    assert!(compared > 10_000);
}

fn task_set() -> impl Strategy<Value = Vec<Task>> {
    prop::collection::vec((1u64..50, 10u64..200, 0u64..30), 1..7).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(id, (c, t, j))| Task {
                id,
                wcet: c.min(t),
                period: t,
                deadline: t,
                jitter: j % t,
                blocking: 0,
            })
            .collect()
    })
}

proptest! {
    /// Response times are monotone non-decreasing in any task's C.
    #[test]
    fn monotone_in_wcet(mut tasks in task_set(), which in 0usize..7, extra in 1u64..20) {
        fp::dm_order(&mut tasks);
        let before = fp::response_times(&tasks);
        let k = which % tasks.len();
        tasks[k].wcet += extra;
        let after = fp::response_times(&tasks);
        for (b, a) in before.iter().zip(&after) {
            match (b, a) {
                (Some(b), Some(a)) => prop_assert!(a >= b),
                (None, Some(_)) => prop_assert!(false, "a miss disappeared when C grew"),
                _ => {}
            }
        }
    }

    /// MaximalSplit is exact: C' keeps the core schedulable, C' + 1 does not
    /// (unless C' hit the cap or the new task's deadline).
    #[test]
    fn maximal_split_is_exact(
        mut tasks in task_set(),
        period in 5u64..300,
        dfrac in 1u64..=4,
        cap in 1u64..400,
    ) {
        fp::dm_order(&mut tasks);
        let deadline = (period * dfrac / 4).max(1);
        let stacked = |c: Time| {
            let mut v = Vec::new();
            if c > 0 {
                v.push(Task::new(usize::MAX, c, period, deadline));
            }
            v.extend_from_slice(&tasks);
            fp::is_schedulable(&v)
        };
        match fp::max_top_priority_wcet(&tasks, period, deadline, cap) {
            None => prop_assert!(!fp::is_schedulable(&tasks)),
            Some(c) => {
                prop_assert!(c <= cap.min(deadline));
                prop_assert!(stacked(c));
                if c < cap.min(deadline) {
                    prop_assert!(!stacked(c + 1));
                }
            }
        }
    }

    /// Audsley's algorithm finds an order whenever DM does, and its order is
    /// schedulable.
    #[test]
    fn audsley_dominates_dm(mut tasks in task_set()) {
        fp::dm_order(&mut tasks);
        let dm_ok = fp::is_schedulable(&tasks);
        let opa = fp::audsley_order(&tasks);
        if dm_ok {
            prop_assert!(opa.is_some());
        }
        if let Some(order) = opa {
            prop_assert!(fp::is_schedulable(&order));
        }
    }
}
