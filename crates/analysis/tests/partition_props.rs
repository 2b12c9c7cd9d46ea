//! Property tests of partitioning and task splitting (seed 003).
//!
//! - Every successful partition is valid: each core passes exact RTA with the
//!   recorded response times and in the heuristic's priority order; the
//!   pieces of a task sum to its C, run back to back (offsets) and meet the
//!   task's deadline (piece D = task D − offset); at most one split per core,
//!   and the split piece τ' is the core's highest-priority task with R = C'.
//! - Each split obeys Lemma 3 (S(τ') ≤ S(τ), S(τ'') ≤ S(τ)) and Lemma 4
//!   (S(τ'') = (S − S')/(1 − S'), S' + S'' ≤ 2(1 − √(1 − S))), exactly.
//! - Splits are maximal: one more ns on τ' makes its core unschedulable.
//! - Theorem 7 / §V.A: PDMS_HPTS_DS places every implicit-deadline set with
//!   Σ U < 0.6547·m (and light sets, U ≤ √2 − 1, with Σ U < 0.693·m).
//! - Theorem 6: PDMS_HPTS in any order places every implicit-deadline set
//!   with Σ U < 0.6003·m + 0.0928.

use proptest::prelude::*;
use rtgpu_analysis::bounds;
use rtgpu_analysis::fp;
use rtgpu_analysis::partition::{
    is_partitionable, partition, FitRule, Heuristic, Order, Partition, Piece, PriorityRule,
};
use rtgpu_analysis::task::{cmp_ratio, Task, Time};
use std::cmp::Ordering;

const ORDERS: [Order; 3] = [
    Order::Given,
    Order::DecreasingUtilization,
    Order::DecreasingSize,
];

fn all_heuristics() -> Vec<Heuristic> {
    let mut hs = vec![Heuristic::PdmsHptsDs];
    for order in ORDERS {
        hs.push(Heuristic::PdmsHpts { order });
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
                hs.push(Heuristic::Fit {
                    rule,
                    order,
                    priority,
                });
            }
        }
    }
    hs
}

/// S(a) vs S(b) for sizes given as (C, D).
fn cmp_size(a: (Time, Time), b: (Time, Time)) -> Ordering {
    cmp_ratio(a.0, a.1, b.0, b.1)
}

/// Check every structural property of `p` for `tasks` under `h`; panics with
/// a description on the first violation.
fn check_valid(tasks: &[Task], m: usize, h: Heuristic, p: &Partition) {
    assert_eq!(p.cores.len(), m);
    assert_eq!(p.tasks.len(), tasks.len());
    assert_eq!(p.schedulable, p.unplaced.is_none());
    // Per core: exact RTA reproduces the recorded response times, in order.
    for (j, core) in p.cores.iter().enumerate() {
        let ts: Vec<Task> = core.iter().map(Piece::as_task).collect();
        for (i, (piece, r)) in core.iter().zip(fp::response_times(&ts)).enumerate() {
            assert_eq!(
                Some(piece.response_time),
                r,
                "core {j} piece {i}: recorded vs exact RTA"
            );
        }
        let key_sorted =
            |key: fn(&Task) -> (Time, Time, usize)| ts.windows(2).all(|w| key(&w[0]) <= key(&w[1]));
        match h {
            Heuristic::Fit {
                priority: PriorityRule::RateMonotonic,
                ..
            } => assert!(key_sorted(|t| (t.period, t.deadline, t.id)), "RM order"),
            Heuristic::Fit {
                priority: PriorityRule::Audsley,
                ..
            } => {}
            _ => assert!(key_sorted(|t| (t.deadline, t.period, t.id)), "DM order"),
        }
    }
    // Per task: pieces back to back, budgets sum to C, deadlines shrink by
    // the offsets.
    let splitting = !matches!(h, Heuristic::Fit { .. });
    let mut heads_per_core = vec![0usize; m];
    for (i, t) in tasks.iter().enumerate() {
        let mut pieces: Vec<(usize, Piece)> = p
            .cores
            .iter()
            .enumerate()
            .flat_map(|(j, c)| c.iter().filter(|x| x.index == i).map(move |x| (j, *x)))
            .collect();
        pieces.sort_by_key(|(_, x)| x.piece);
        let placed: Vec<usize> = pieces.iter().map(|(j, _)| *j).collect();
        assert_eq!(p.tasks[i].cores, placed, "placement of task {i}");
        assert_eq!(p.tasks[i].task, t.id);
        if p.schedulable {
            assert!(!pieces.is_empty(), "task {i} not placed");
            let total: Time = pieces.iter().map(|(_, x)| x.wcet).sum();
            assert_eq!(total, t.wcet, "budgets of task {i}");
        }
        if !splitting {
            assert!(pieces.len() <= 1, "fit heuristics never split");
        }
        let mut offset = 0;
        for (k, (j, x)) in pieces.iter().enumerate() {
            assert_eq!(x.piece, k, "piece numbering");
            assert_eq!(x.task, t.id);
            assert_eq!(x.period, t.period);
            assert_eq!(x.offset, offset, "pieces run back to back");
            assert_eq!(
                x.deadline + x.offset,
                t.deadline,
                "piece deadline = D − offset"
            );
            if pieces.len() > 1 || k > 0 {
                assert_eq!((x.jitter, x.blocking), (0, 0), "split pieces are plain");
            } else {
                assert_eq!((x.jitter, x.blocking), (t.jitter, t.blocking));
            }
            let continues = k + 1 < pieces.len();
            if continues {
                heads_per_core[*j] += 1;
                // τ' is the highest-priority piece on its core, R' = C'.
                assert_eq!(p.cores[*j][0], *x, "split piece is on top of core {j}");
                assert_eq!(x.response_time, x.wcet);
                check_split_lemmas(&pieces[k..].iter().map(|(_, x)| *x).collect::<Vec<_>>());
                if p.schedulable {
                    check_split_maximal(&p.cores[*j]);
                }
            }
            offset += x.wcet;
        }
    }
    assert!(
        heads_per_core.iter().all(|&n| n <= 1),
        "at most one split per core: {heads_per_core:?}"
    );
}

/// Lemmas 3 and 4 for the split of τ = (Σ rest C, D of the first piece) into
/// the first piece τ' and τ'' = what remained at that point.
fn check_split_lemmas(rest: &[Piece]) {
    let c: Time = rest.iter().map(|x| x.wcet).sum();
    let d = rest[0].deadline;
    let c1 = rest[0].wcet;
    let (s, s1, s2) = ((c, d), (c1, d), (c - c1, d - c1));
    // Lemma 3.
    assert_ne!(cmp_size(s1, s), Ordering::Greater, "Lemma 3: S(τ') ≤ S(τ)");
    assert_ne!(cmp_size(s2, s), Ordering::Greater, "Lemma 3: S(τ'') ≤ S(τ)");
    // Lemma 4 (1): (C−C')/(D−C') = (C/D − C'/D)/(1 − C'/D) = ((C−C')/D)/((D−C')/D).
    let (c, d, c1) = (c as u128, d as u128, c1 as u128);
    assert_eq!(
        (c - c1) * ((d - c1) * d),
        ((c - c1) * d) * (d - c1),
        "Lemma 4 (1)"
    );
    // Lemma 4 (2): a = S' + S'' = N/M with N = C'(D−C') + D(C−C'), M = D(D−C').
    // a ≤ 2(1 − √(1−S)) ⇔ 2√(1−S) ≤ 2 − a ⇔ 2M ≥ N and 4(D−C)M² ≤ D(2M−N)².
    let n = c1 * (d - c1) + d * (c - c1);
    let mm = d * (d - c1);
    assert!(2 * mm >= n, "Lemma 4 (2): S' + S'' ≤ 2");
    let lhs = 4 * (d - c) * mm * mm;
    let rhs = d * (2 * mm - n) * (2 * mm - n);
    assert!(lhs <= rhs, "Lemma 4 (2): S' + S'' ≤ 2(1 − √(1 − S))");
}

/// One more ns on τ' (index 0) makes the core unschedulable.
fn check_split_maximal(core: &[Piece]) {
    let mut ts: Vec<Task> = core.iter().map(Piece::as_task).collect();
    ts[0].wcet += 1;
    assert!(!fp::is_schedulable(&ts), "split is not maximal: {core:?}");
}

/// A task of the general sets' `kind`: 7 with release jitter, 8 with
/// blocking, each a quarter of its slack D − C; the others with neither.
fn shaped_task(id: usize, kind: u64, period: Time, deadline: Time, wcet: Time) -> Task {
    let (jitter, blocking) = match kind {
        7 => ((deadline - wcet) / 4, 0),
        8 => (0, (deadline - wcet) / 4),
        _ => (0, 0),
    };
    Task {
        id,
        wcet,
        period,
        deadline,
        jitter,
        blocking,
    }
}

/// General task sets: constrained or implicit deadlines, occasional jitter,
/// blocking and arbitrary deadlines, periods 10..=2000.
fn general_task(id: usize) -> impl Strategy<Value = Task> {
    (10u64..=2000, 1u64..=100, 0u8..10, 0u64..=1000, 1u64..=100).prop_map(
        move |(period, dpct, kind, cpermille, extra)| {
            let mut deadline = if kind < 5 {
                period
            } else {
                (period * (dpct.max(30))) / 100
            };
            if kind == 9 {
                deadline = period + period * extra / 50; // arbitrary deadline
            }
            let deadline = deadline.max(1);
            let wcet = (deadline.min(period) * cpermille / 1000).max(1);
            shaped_task(id, kind.into(), period, deadline, wcet)
        },
    )
}

fn general_set() -> impl Strategy<Value = (Vec<Task>, usize)> {
    (1usize..=6, 1usize..=20).prop_flat_map(|(m, n)| {
        let tasks: Vec<_> = (0..n).map(general_task).collect();
        (tasks, Just(m))
    })
}

/// Implicit-deadline set on m cores with total utilization at most
/// `fraction`·`bound`·m, each U ≤ `max_u` (integer C = ⌊U·T⌋, so the exact
/// total is a little lower).
fn implicit_set(
    m_range: std::ops::RangeInclusive<usize>,
    per_core: std::ops::RangeInclusive<usize>,
    bound: f64,
    max_u: f64,
) -> impl Strategy<Value = (Vec<Task>, usize)> {
    (m_range, per_core).prop_flat_map(move |(m, k)| {
        let n = m * k;
        (
            prop::collection::vec((1_000u64..=1_000_000, 1u64..=1000, 0u8..4), n),
            0.6f64..1.0,
            Just(m),
        )
            .prop_map(move |(raw, fraction, m)| {
                // Skewed weights: a few heavy tasks now and then.
                let w: Vec<f64> = raw
                    .iter()
                    .map(|&(_, w, heavy)| {
                        let w = w as f64;
                        if heavy == 0 {
                            w * w
                        } else {
                            w * 30.0
                        }
                    })
                    .collect();
                let sum: f64 = w.iter().sum();
                let target = fraction * bound * m as f64;
                let tasks = raw
                    .iter()
                    .zip(&w)
                    .enumerate()
                    .map(|(id, (&(period, _, _), &wi))| {
                        let u = (target * wi / sum).min(max_u);
                        let wcet = ((u * period as f64) as Time).clamp(1, period);
                        Task::implicit(id, wcet, period)
                    })
                    .collect();
                (tasks, m)
            })
    })
}

/// Adversarial implicit-deadline sets below `bound`·m that bin packing
/// without splitting cannot place: m + 1 or more tasks of utilization in
/// (1/2, `max_u`] (no two share a core), optionally with light tasks filling
/// up to the bound. m in 4..=8 so that (m + 1)/2 < 0.6·m.
fn heavy_set(bound: f64, max_u: f64) -> impl Strategy<Value = (Vec<Task>, usize)> {
    (4usize..=8, 0usize..=12).prop_flat_map(move |(m, light)| {
        let max_heavy = ((bound * m as f64) / 0.5).floor() as usize;
        (m + 1..=max_heavy.max(m + 1)).prop_flat_map(move |heavy| {
            (
                prop::collection::vec((1_000u64..=1_000_000, 0.0f64..1.0), heavy),
                prop::collection::vec((1_000u64..=1_000_000, 1u64..=100), light),
                0.0f64..1.0,
                Just(m),
            )
                .prop_map(move |(hs, ls, fill, m)| {
                    let budget = bound * m as f64;
                    // Heavy utilizations in (0.5, budget/heavy).
                    let top = (budget / hs.len() as f64).min(max_u);
                    let mut tasks: Vec<Task> = Vec::new();
                    let mut used = 0.0;
                    for &(period, r) in &hs {
                        let u = 0.5 + (top - 0.5) * (0.05 + 0.95 * r);
                        let wcet = ((u * period as f64).ceil() as Time).min(period);
                        used += wcet as f64 / period as f64;
                        tasks.push(Task::implicit(tasks.len(), wcet, period));
                    }
                    let left = ((budget - used) * fill).max(0.0);
                    let wsum: u64 = ls.iter().map(|&(_, w)| w).sum();
                    for &(period, w) in &ls {
                        let u = left * w as f64 / wsum as f64;
                        let wcet = ((u * period as f64) as Time).clamp(1, period);
                        tasks.push(Task::implicit(tasks.len(), wcet, period));
                    }
                    (tasks, m)
                })
        })
    })
}

proptest! {
    // No regression files: this crate's test directory holds sources only.
    // The utilization-bound tests reject sets the bound does not admit:
    // room for more than the default 1,024 rejects at large
    // `PROPTEST_CASES`.
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        max_global_rejects: 1 << 20,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_partition_is_valid((tasks, m) in general_set()) {
        for h in all_heuristics() {
            let p = partition(&tasks, m, h);
            check_valid(&tasks, m, h, &p);
            prop_assert_eq!(is_partitionable(&tasks, m, h), p.schedulable);
        }
    }

    #[test]
    fn implicit_partitions_are_valid((tasks, m) in implicit_set(2..=8, 1..=5, 1.0, 1.0)) {
        for h in [
            Heuristic::PdmsHptsDs,
            Heuristic::PdmsHpts { order: Order::Given },
            Heuristic::PdmsHpts { order: Order::DecreasingUtilization },
        ] {
            let p = partition(&tasks, m, h);
            check_valid(&tasks, m, h, &p);
        }
    }

    #[test]
    fn pdms_hpts_ds_meets_theorem7((tasks, m) in implicit_set(2..=8, 1..=5, 0.6547, 1.0)) {
        prop_assume!(bounds::pdms_hpts_ds_utilization_test(&tasks, m));
        let p = partition(&tasks, m, Heuristic::PdmsHptsDs);
        prop_assert!(p.schedulable, "U < 0.6547·m but not placed: {:?}", p.unplaced);
        check_valid(&tasks, m, Heuristic::PdmsHptsDs, &p);
    }

    #[test]
    fn pdms_hpts_ds_meets_theorem7_heavy((tasks, m) in heavy_set(0.6547, 1.0)) {
        prop_assume!(bounds::pdms_hpts_ds_utilization_test(&tasks, m));
        let p = partition(&tasks, m, Heuristic::PdmsHptsDs);
        prop_assert!(p.schedulable, "U < 0.6547·m but not placed: {:?}", p.unplaced);
        check_valid(&tasks, m, Heuristic::PdmsHptsDs, &p);
    }

    #[test]
    fn pdms_hpts_ds_meets_light_bound(
        (tasks, m) in implicit_set(2..=8, 3..=6, 0.693, std::f64::consts::SQRT_2 - 1.0 - 1e-6)
    ) {
        prop_assume!(bounds::pdms_hpts_ds_utilization_test(&tasks, m));
        let p = partition(&tasks, m, Heuristic::PdmsHptsDs);
        prop_assert!(p.schedulable, "light, U < 0.693·m but not placed: {:?}", p.unplaced);
    }

    #[test]
    fn pdms_hpts_meets_theorem6((tasks, m) in implicit_set(2..=8, 1..=5, 0.6003, 0.6002)) {
        prop_assume!(bounds::pdms_hpts_utilization_test(&tasks, m));
        for order in ORDERS {
            let h = Heuristic::PdmsHpts { order };
            let p = partition(&tasks, m, h);
            prop_assert!(p.schedulable, "{order:?}: U < 0.6003·m + 0.0928 but not placed: {:?}", p.unplaced);
        }
    }

    #[test]
    fn pdms_hpts_meets_theorem6_heavy((tasks, m) in heavy_set(0.6003, 0.6002)) {
        prop_assume!(bounds::pdms_hpts_utilization_test(&tasks, m));
        for order in ORDERS {
            let h = Heuristic::PdmsHpts { order };
            let p = partition(&tasks, m, h);
            prop_assert!(p.schedulable, "{order:?}: U < 0.6003·m + 0.0928 but not placed: {:?}", p.unplaced);
            check_valid(&tasks, m, h, &p);
        }
    }

    #[test]
    fn one_core_equals_exact_dm_test(
        (tasks, m) in implicit_set(1..=1, 1..=8, 1.0, 1.0)
    ) {
        // One core: PDMS_HPTS_DS is plain DM with exact RTA; it must agree
        // with first fit (and with the DM test of the whole set).
        let mut dm = tasks.clone();
        fp::dm_order(&mut dm);
        let expected = fp::is_schedulable(&dm);
        let p = partition(&tasks, m, Heuristic::PdmsHptsDs);
        prop_assert_eq!(p.schedulable, expected);
        let f = partition(&tasks, m, Heuristic::Fit {
            rule: FitRule::FirstFit,
            order: Order::DecreasingSize,
            priority: PriorityRule::DeadlineMonotonic,
        });
        prop_assert_eq!(f.schedulable, expected);
    }
}

/// Servers: every partition found with bandwidth servers charged
/// (`partition_with`) passes an independent per-core RTA with the servers
/// as top-priority jittered tasks (`server::with_servers_above`,
/// `fp::response_time`), on a few hundred random sets (fixed seed) and
/// under every heuristic. Split pieces follow seed 003 §III.B with R':
/// each later piece is released exactly when the previous one has surely
/// finished (O_{k+1} = O_k + R_k, no release jitter), every piece that
/// continues is on top of its core with the budget of the reference
/// `maximal_split_with`, and the job meets its deadline.
#[test]
fn partitions_with_servers_pass_rta_with_the_servers() {
    use rtgpu_analysis::generate::Rng;
    use rtgpu_analysis::partition::{is_partitionable_with, maximal_split_with, partition_with};
    use rtgpu_analysis::server::{with_servers_above, Server};
    let mut rng = Rng::new(3003);
    let heuristics = all_heuristics();
    let (mut placed, mut split_placed, mut differs) = (0, 0, 0);
    for set in 0..300 {
        let m = rng.range(1, 6) as usize;
        let n = rng.range(m as u64, 4 * m as u64) as usize;
        let tasks: Vec<Task> = (0..n)
            .map(|id| {
                let period = rng.range(10, 2000);
                let kind = rng.range(0, 9);
                let deadline = match kind {
                    0..=4 => period,
                    9 => period + period * rng.range(1, 100) / 50,
                    _ => (period * rng.range(30, 100) / 100).max(1),
                };
                let wcet = (deadline.min(period) * rng.range(1, 500) / 1000).max(1);
                shaped_task(id, kind, period, deadline, wcet)
            })
            .collect();
        let servers: Vec<Server> = (0..rng.range(0, 3))
            .map(|_| {
                let period = rng.range(10, 500);
                Server::new(rng.range(0, period / 5), period)
            })
            .collect();
        let top = with_servers_above(&servers, &[]);
        for &h in &heuristics {
            if matches!(
                h,
                Heuristic::Fit {
                    priority: PriorityRule::Audsley,
                    ..
                }
            ) && set % 4 != 0
            {
                continue; // the slow one, on a quarter of the sets
            }
            let p = partition_with(&tasks, m, h, &servers);
            assert_eq!(p.cores.len(), m);
            assert_eq!(p.schedulable, p.unplaced.is_none());
            assert_eq!(is_partitionable_with(&tasks, m, h, &servers), p.schedulable);
            if top.is_empty() {
                assert_eq!(p, partition(&tasks, m, h), "no active server: as without");
            } else if p != partition(&tasks, m, h) {
                differs += 1;
            }
            // Independent per-core RTA: the servers above, then the pieces.
            for (j, core) in p.cores.iter().enumerate() {
                let mut hp = top.clone();
                for (i, piece) in core.iter().enumerate() {
                    let t = piece.as_task();
                    let r = fp::response_time(&hp, &t);
                    assert_eq!(
                        r,
                        Some(piece.response_time),
                        "set {set} {h:?} core {j} piece {i}: recorded vs RTA with servers"
                    );
                    hp.push(t);
                }
            }
            if !p.schedulable {
                continue;
            }
            placed += 1;
            split_placed += usize::from(p.split_tasks() > 0);
            for (i, t) in tasks.iter().enumerate() {
                let mut pieces: Vec<(usize, usize, Piece)> = p
                    .cores
                    .iter()
                    .enumerate()
                    .flat_map(|(j, c)| {
                        c.iter()
                            .enumerate()
                            .filter(|(_, x)| x.index == i)
                            .map(move |(k, x)| (j, k, *x))
                    })
                    .collect();
                pieces.sort_by_key(|(_, _, x)| x.piece);
                assert!(!pieces.is_empty(), "set {set} {h:?}: task {i} not placed");
                let total: Time = pieces.iter().map(|(_, _, x)| x.wcet).sum();
                assert_eq!(total, t.wcet, "set {set} {h:?}: budgets of task {i}");
                let mut offset = 0;
                for (k, &(j, pos, x)) in pieces.iter().enumerate() {
                    assert_eq!(
                        x.offset, offset,
                        "set {set} {h:?}: task {i} piece {k} offset"
                    );
                    assert_eq!(x.deadline + x.offset, t.deadline);
                    assert!(x.response_time <= x.deadline);
                    if k + 1 < pieces.len() {
                        // τ' on top of its core, as large as MaximalSplit with
                        // the servers allows for what was left of the task.
                        assert_eq!(pos, 0, "set {set} {h:?}: split piece not on top");
                        let left: Time = pieces[k..].iter().map(|(_, _, y)| y.wcet).sum();
                        let whole = Task {
                            wcet: left,
                            ..x.as_task()
                        };
                        let rest: Vec<Task> = p.cores[j][1..].iter().map(Piece::as_task).collect();
                        assert_eq!(
                            maximal_split_with(&rest, &servers, &whole),
                            x.wcet,
                            "set {set} {h:?}: task {i} piece {k} not the maximal split"
                        );
                    }
                    offset = x.offset + x.response_time;
                }
                assert!(offset <= t.deadline, "set {set} {h:?}: task {i} misses");
            }
        }
    }
    eprintln!("placed {placed}, with a split {split_placed}, changed by the servers {differs}");
    // The sets must exercise the servers: placements, splits among them,
    // and placements that differ from the server-blind partitioner's.
    assert!(placed > 1000, "placed {placed}");
    assert!(split_placed > 100, "placed with a split {split_placed}");
    assert!(
        differs > 1000,
        "partitions changed by the servers {differs}"
    );
}

/// How hard the bound tests are: how often first fit fails and
/// PDMS_HPTS_DS splits on the sets `pdms_hpts_ds_meets_theorem7` draws.
/// Run with `cargo test --release --test partition_props -- --ignored --nocapture`.
#[test]
#[ignore]
fn report_bound_test_difficulty() {
    report(implicit_set(2..=8, 1..=5, 0.6547, 1.0));
    report(heavy_set(0.6547, 1.0));
}

fn report(strategy: impl Strategy<Value = (Vec<Task>, usize)>) {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut cases, mut ff_fails, mut splits, mut near) = (0, 0, 0, 0);
    for _ in 0..20_000 {
        let (tasks, m) = strategy.new_tree(&mut runner).unwrap().current();
        if !bounds::pdms_hpts_ds_utilization_test(&tasks, m) {
            continue;
        }
        cases += 1;
        let u: f64 = tasks.iter().map(Task::utilization).sum::<f64>() / m as f64;
        if u > 0.64 {
            near += 1;
        }
        let ff = partition(
            &tasks,
            m,
            Heuristic::Fit {
                rule: FitRule::FirstFit,
                order: Order::DecreasingSize,
                priority: PriorityRule::DeadlineMonotonic,
            },
        );
        ff_fails += usize::from(!ff.schedulable);
        splits += usize::from(partition(&tasks, m, Heuristic::PdmsHptsDs).split_tasks() > 0);
    }
    println!("cases {cases}, U/m > 0.64: {near}, first fit fails: {ff_fails}, DS splits: {splits}");
}

/// Throughput of PDMS_HPTS_DS on the benchmark's workload (m = 8, n = 40,
/// U = 6.0, periods log-uniform 1 ms .. 1 s). Run with `cargo test --release
/// --test partition_props -- --ignored --nocapture throughput`.
#[test]
#[ignore]
fn report_pdms_hpts_ds_throughput() {
    use rtgpu_analysis::generate::{uunifast_tasks, Rng};
    let mut rng = Rng::new(2026);
    let sets: Vec<Vec<Task>> = (0..500)
        .map(|_| uunifast_tasks(&mut rng, 40, 6.0, 1_000_000, 1_000_000_000))
        .collect();
    let ok = sets
        .iter()
        .filter(|s| partition(s, 8, Heuristic::PdmsHptsDs).is_ok())
        .count();
    let start = std::time::Instant::now();
    let mut done = 0u64;
    while start.elapsed().as_secs_f64() < 2.0 {
        for s in &sets {
            std::hint::black_box(
                partition(std::hint::black_box(s), 8, Heuristic::PdmsHptsDs).is_ok(),
            );
        }
        done += sets.len() as u64;
    }
    let rate = done as f64 / start.elapsed().as_secs_f64();
    println!(
        "pdms_hpts_ds: {ok}/{} partitioned, {rate:.0} sets/s ({done} sets)",
        sets.len()
    );
    let start = std::time::Instant::now();
    let mut done = 0u64;
    while start.elapsed().as_secs_f64() < 2.0 {
        for s in &sets {
            std::hint::black_box(is_partitionable(
                std::hint::black_box(s),
                8,
                Heuristic::PdmsHptsDs,
            ));
        }
        done += sets.len() as u64;
    }
    let rate = done as f64 / start.elapsed().as_secs_f64();
    println!("pdms_hpts_ds decision only (is_partitionable): {rate:.0} sets/s");
}
