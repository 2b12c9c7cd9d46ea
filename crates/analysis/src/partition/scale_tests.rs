//! Issue 24: the scalable partitioner (incremental insertion, HPTaskSplit
//! from deadline-point demands, MaximalSplit searches, StepSum RTA) gives
//! the same partitions as the implementation before it
//! ([`super::cores::reference`]: the pre-issue-24 insertion, HPTaskSplit
//! and MaximalSplit), and its response times agree with a plain RTA
//! ([`crate::fp`]) and with the independent `response-time-analysis` crate.

use proptest::prelude::*;
use response_time_analysis::{
    arrival::Sporadic, demand::RBF, fixed_priority, time::Duration, wcet,
};

use super::cores::reference;
use super::*;
use crate::generate::{uunifast_tasks, Rng};
use crate::server::Server;

/// Every heuristic the partitioner has (Audsley's per-core OPA included).
fn heuristics() -> Vec<Heuristic> {
    let mut all = vec![Heuristic::PdmsHptsDs];
    for order in [
        Order::Given,
        Order::DecreasingUtilization,
        Order::DecreasingSize,
    ] {
        all.push(Heuristic::PdmsHpts { order });
        for rule in [
            FitRule::FirstFit,
            FitRule::BestFit,
            FitRule::WorstFit,
            FitRule::NextFit,
        ] {
            for priority in [
                PriorityRule::DeadlineMonotonic,
                PriorityRule::RateMonotonic,
                PriorityRule::Audsley,
            ] {
                all.push(Heuristic::Fit {
                    rule,
                    order,
                    priority,
                });
            }
        }
    }
    all
}

/// New and reference partitions of `tasks`, asserted equal (placement,
/// splits, every piece's response time, the unplaced task) with and
/// without the decision-only path.
fn same_as_reference(tasks: &[Task], m: usize, h: Heuristic, servers: &[Server]) -> Partition {
    let new = partition_with(tasks, m, h, servers);
    let old = reference::with(|| partition_with(tasks, m, h, servers));
    assert_eq!(new, old, "{h:?} on {m} cores differs from the reference");
    if servers.is_empty() {
        let decide = is_partitionable(tasks, m, h);
        let decide_old = reference::with(|| is_partitionable(tasks, m, h));
        assert_eq!(decide, decide_old);
        assert_eq!(decide, new.schedulable);
    }
    new
}

/// Each piece's response time is fp's on its core (below the servers).
fn response_times_are_exact(p: &Partition, servers: &[Server]) {
    if !p.schedulable {
        return;
    }
    for core in &p.cores {
        let tasks: Vec<Task> = core.iter().map(Piece::as_task).collect();
        let all = crate::server::with_servers_above(servers, &tasks);
        let top = all.len() - tasks.len();
        for (i, piece) in core.iter().enumerate() {
            let r = fp::response_time(&all[..top + i], &all[top + i]);
            assert_eq!(Some(piece.response_time), r, "piece {piece:?}");
        }
    }
}

/// The independent crate's response time of the last task of `tasks`
/// (fully preemptive FP; no blocking, no jitter of its own).
fn crate_response_time(tasks: &[Task]) -> Option<Time> {
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
        Duration::from(tasks[i].deadline),
    )
    .ok()
    .map(u64::from)
}

/// Random tasks: periods over up to three decades, constrained or implicit
/// deadlines, some jitter and blocking (`plain` = none), loads around and
/// above what `m` cores can take.
fn random_tasks(plain: bool) -> impl Strategy<Value = (Vec<Task>, usize)> {
    (
        1usize..=4,
        prop::collection::vec((10u64..=10_000, 1u64..=600, 60u64..=100, 0u8..10), 0..40),
    )
        .prop_map(move |(m, raw)| {
            let tasks = raw
                .into_iter()
                .enumerate()
                .map(|(id, (period, permille, dpct, kind))| {
                    let deadline = (period * dpct / 100).max(1);
                    let wcet = (period * permille / 1000).clamp(1, deadline);
                    let mut t = Task::new(id, wcet, period, deadline);
                    if !plain && kind == 0 {
                        t.jitter = (deadline - wcet) / 3;
                    }
                    if !plain && kind == 1 {
                        t.blocking = (deadline - wcet) / 4;
                    }
                    t
                })
                .collect();
            (tasks, m)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn same_partitions_as_reference((tasks, m) in random_tasks(false)) {
        for h in heuristics() {
            let p = same_as_reference(&tasks, m, h, &[]);
            response_times_are_exact(&p, &[]);
        }
    }

    #[test]
    fn same_partitions_as_reference_with_servers(
        (tasks, m) in random_tasks(true),
        q in 1u64..=40,
        t in 50u64..=400,
    ) {
        let servers = [Server::new(q, t)];
        for h in [
            Heuristic::PdmsHptsDs,
            Heuristic::PdmsHpts { order: Order::DecreasingUtilization },
            Heuristic::Fit {
                rule: FitRule::FirstFit,
                order: Order::DecreasingSize,
                priority: PriorityRule::DeadlineMonotonic,
            },
        ] {
            let p = same_as_reference(&tasks, m, h, &servers);
            response_times_are_exact(&p, &servers);
        }
    }

    /// Plain (C, T, D) pieces: the response times are also the independent
    /// crate's.
    #[test]
    fn response_times_match_independent_crate((tasks, m) in random_tasks(true)) {
        let p = same_as_reference(&tasks, m, Heuristic::PdmsHptsDs, &[]);
        if p.schedulable {
            for core in &p.cores {
                let ts: Vec<Task> = core.iter().map(Piece::as_task).collect();
                for (i, piece) in core.iter().enumerate() {
                    prop_assert_eq!(
                        crate_response_time(&ts[..=i]),
                        Some(piece.response_time)
                    );
                }
            }
        }
    }
}

/// Cores of hundreds of pieces (the StepSum RTA, MaximalSplit's search
/// branch, HPTaskSplit on long cores), at loads where the last cores fail
/// and where all fit: the same as the reference, response times exact and
/// the independent crate's.
#[test]
fn large_sets_same_as_reference() {
    let mut rng = Rng::new(24);
    for (n, m, load) in [
        (400, 2, 0.7),
        (600, 3, 0.75),
        (300, 1, 0.98),
        (500, 2, 0.995),
    ] {
        let tasks = uunifast_tasks(&mut rng, n, load * m as f64, 1_000_000, 100_000_000);
        for h in [
            Heuristic::PdmsHptsDs,
            Heuristic::Fit {
                rule: FitRule::FirstFit,
                order: Order::DecreasingUtilization,
                priority: PriorityRule::DeadlineMonotonic,
            },
        ] {
            let p = same_as_reference(&tasks, m, h, &[]);
            response_times_are_exact(&p, &[]);
            if p.schedulable {
                let ts: Vec<Task> = p.cores[0].iter().map(Piece::as_task).collect();
                for i in (0..ts.len()).step_by(37) {
                    assert_eq!(
                        crate_response_time(&ts[..=i]),
                        Some(p.cores[0][i].response_time)
                    );
                }
            }
        }
    }
}

/// Single long cores filled close to U = 1 (the walk below each new piece
/// meets runs of pieces that fail the point test, whose RTAs share one
/// StepSum, and first failures far from their fixed points): the same as
/// the reference, response times exact.
#[test]
fn long_cores_near_full_same_as_reference() {
    let mut rng = Rng::new(2024);
    for (n, m, load) in [
        (700, 1, 0.999),
        (800, 1, 0.99),
        (900, 2, 0.995),
        (600, 1, 1.02),
    ] {
        let tasks = uunifast_tasks(&mut rng, n, load * m as f64, 1_000_000, 100_000_000);
        let p = same_as_reference(&tasks, m, Heuristic::PdmsHptsDs, &[]);
        response_times_are_exact(&p, &[]);
    }
}
