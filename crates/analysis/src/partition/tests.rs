//! Unit and property tests of the partitioner (its public API and the fast
//! per-core RTA and MaximalSplit against [`crate::fp`]).

use super::cores::schedulable_into;
use super::maximal_split::{
    climb_max_top_wcet, max_top_wcet, reduced_points, slack_per_job, sweep_max_top_wcet,
    PointScratch,
};
use super::*;

/// A core of random tasks (T, C, J or B by `b`) in DM order, as the
/// property tests of the per-core RTA draw them: `b` = 0 gives the task
/// jitter J (at most T), 1 blocking B = C, else neither.
pub(super) fn dm_core(raw: &[(u64, u64, u64, u8)]) -> Vec<Task> {
    let mut tasks: Vec<Task> = raw
        .iter()
        .enumerate()
        .map(|(id, &(t, c, j, b))| Task {
            jitter: if b == 0 { j.min(t) } else { 0 },
            blocking: if b == 1 { c } else { 0 },
            ..Task::implicit(id, c.min(t), t)
        })
        .collect();
    crate::fp::dm_order(&mut tasks);
    tasks
}

const DS: Heuristic = Heuristic::PdmsHptsDs;

fn ff(order: Order) -> Heuristic {
    Heuristic::Fit {
        rule: FitRule::FirstFit,
        order,
        priority: PriorityRule::DeadlineMonotonic,
    }
}

fn ids(core: &[Piece]) -> Vec<(usize, usize, Time)> {
    core.iter().map(|p| (p.task, p.piece, p.wcet)).collect()
}

#[test]
fn first_fit_fails_ds_splits() {
    // m = 2, three tasks (C 6, T = D 10), U = 0.6 each, total 1.8.
    let ts: Vec<Task> = (0..3).map(|i| Task::implicit(i, 6, 10)).collect();
    // First fit: 0.6 + 0.6 on one core gives R = 12 > 10, so one task per
    // core and the third does not fit.
    let p = partition(&ts, 2, ff(Order::DecreasingSize));
    assert!(!p.schedulable);
    let u = p.unplaced.unwrap();
    assert_eq!((u.task, u.reason), (2, Failure::NoCoreLeft));
    // PDMS_HPTS_DS: core 0 takes τ0; τ1 fails (R1 = 12). HPTaskSplit:
    // DequeueHP removes τ0 (ties by id), τ1 alone fits. MaximalSplit of
    // τ0 over {τ1}: τ1 meets D iff ∃t ∈ (0,10]: 6 + ⌈t/10⌉C' ≤ t, best
    // at t = 10: C' ≤ 4. Removed_Size 0.6 − S(τ0') 0.4 < S(τ1) 0.6: split.
    // Core 0 = [τ0' (4,10,10), τ1 (R = 10)]; τ0'' = (2, 10, D 6) at
    // offset 4, size 1/3, queued after τ2. Core 1: τ2, then τ0'' on top
    // (D 6): R = 2; τ2: w = 6 + ⌈w/10⌉·2 = 8 ≤ 10.
    let p = partition(&ts, 2, DS);
    assert!(p.schedulable, "{p:?}");
    assert_eq!(ids(&p.cores[0]), vec![(0, 0, 4), (1, 0, 6)]);
    assert_eq!(ids(&p.cores[1]), vec![(0, 1, 2), (2, 0, 6)]);
    let tail = p.cores[1][0];
    assert_eq!((tail.offset, tail.deadline, tail.response_time), (4, 6, 2));
    assert_eq!(p.cores[0][1].response_time, 10);
    assert_eq!(p.cores[1][1].response_time, 8);
    assert_eq!(p.tasks[0].cores, vec![0, 1]);
    assert_eq!(p.split_tasks(), 1);
}

/// The set above with τ0 kept whole: MaximalSplit gives it C' = 0, the
/// restore branch puts it back on core 0 and τ1 goes on; τ1 is split
/// on core 1 instead and its remainder finds no core. τ0 is never cut.
#[test]
fn kept_whole_tasks_are_never_split() {
    let ts: Vec<Task> = (0..3).map(|i| Task::implicit(i, 6, 10)).collect();
    let p = partition_keeping(&ts, 2, DS, &[], &[true]);
    assert_eq!(p.tasks[0].cores.len(), 1, "{p:?}");
    assert!(p.cores.iter().flatten().all(|x| x.task != 0 || x.wcet == 6));
    assert!(!p.schedulable);
    // Nothing kept whole: the split of `first_fit_fails_ds_splits`.
    assert!(partition_keeping(&ts, 2, DS, &[], &[false; 3]).schedulable);
}

#[test]
fn restore_branch_requeues_failed_task() {
    // Core 0 gets τa = (5,10,10) S 0.5, then τb = (9,20,20) S 0.45:
    // Rb: w = 9 + ⌈w/10⌉5 = 19 ≤ 20. τf = (2,20,20) S 0.1 fails:
    // w = 2 + ⌈w/10⌉5 + ⌈w/20⌉9 = 21 > 20. HPTaskSplit removes τa;
    // {τb, τf} fits. MaximalSplit of τa (T = D = 10) over {τb, τf}:
    // τb: t=10: 9 + C' ≤ 10 → 1; t=20: 9 + 2C' ≤ 20 → 5: 5.
    // τf: t=10: 2 + 9 > 10; t=20: 11 + 2C' ≤ 20 → 4: 4. So C' = 4.
    // Removed_Size 0.5 − 0.4 = 0.1 ≥ S(τf) = 0.1 (equality, exact):
    // restore, and τf must go back to the queue (fix (a)) → core 1.
    let ts = [
        Task::implicit(0, 5, 10),
        Task::implicit(1, 9, 20),
        Task::implicit(2, 2, 20),
    ];
    let p = partition(&ts, 2, DS);
    assert!(p.schedulable, "{p:?}");
    assert_eq!(ids(&p.cores[0]), vec![(0, 0, 5), (1, 0, 9)]);
    assert_eq!(ids(&p.cores[1]), vec![(2, 0, 2)]);
    assert_eq!(p.split_tasks(), 0);
    // With one core: τf is not lost but reported (fix (b)).
    let p = partition(&ts, 1, DS);
    assert!(!p.schedulable);
    assert_eq!(p.unplaced.unwrap().task, 2);
}

#[test]
fn zero_split_restores_under_ds() {
    // τa = (10,10,10) (S 1) on core 0; τf = (5,5,5) (S 1, id 1) has the
    // shorter deadline: on top, Ra = 10 + 2·5 > 10. HPTaskSplit removes
    // τf itself; MaximalSplit over {τa} is 0 (no slack). Removed 1 − 0 ≥
    // 1: restore; τf goes to core 1 (fix (a)/(c)).
    let ts = [Task::implicit(0, 10, 10), Task::implicit(1, 5, 5)];
    let p = partition(&ts, 2, DS);
    assert!(p.schedulable, "{p:?}");
    assert_eq!(ids(&p.cores[0]), vec![(0, 0, 10)]);
    assert_eq!(ids(&p.cores[1]), vec![(1, 0, 5)]);
}

#[test]
fn zero_split_displaces_in_given_order() {
    // Given order: core 0 takes τa = (1,4,4) (S 0.25), then τf = (10,10,10)
    // (S 1) fails (R = 10 + 3). HPTaskSplit removes τa; {τf} fits with no
    // slack, so C' = 0 (fix (c)). Removed 0.25 − 0 < 1: no restore; τf
    // stays, τa goes back whole and lands on core 1.
    let ts = [Task::implicit(0, 1, 4), Task::implicit(1, 10, 10)];
    let p = partition(
        &ts,
        2,
        Heuristic::PdmsHpts {
            order: Order::Given,
        },
    );
    assert!(p.schedulable, "{p:?}");
    assert_eq!(ids(&p.cores[0]), vec![(1, 0, 10)]);
    assert_eq!(ids(&p.cores[1]), vec![(0, 0, 1)]);
}

#[test]
fn remainder_split_again_spans_three_cores() {
    // τ0 = (9, T = D 10), S 0.9, then four tasks (5, 10, 10), S 0.5; m = 3.
    // Core 0: τ0; τ1 fails (R1 = 14). HPTaskSplit removes τ0, {τ1} fits;
    // MaximalSplit: 5 + C' ≤ 10 → C' = 5. Removed 0.9 − 0.5 < S(τ1): split.
    // Core 0 = [τ0' (5), τ1 (R 10)]; τ0'' = (4, 10, D 5), S 0.8, offset 5.
    // Core 1: τ0'' first; τ2 below it: w = 5 + 4 = 9 ≤ 10 fits; τ3 fails
    // (w = 5 + 4 + 5 = 14). HPTaskSplit: removing τ0'' (top) leaves
    // {τ2, τ3}, R3 = 10, fits; MaximalSplit of τ0'' (T 10, D 5) over
    // {τ2, τ3}: τ3 needs 10 + C' ≤ 10 → C' = 0. Removed 0.8 − 0 ≥ S(τ3)
    // 0.5: restore, τ3 back. Core 2: τ3, τ4 (R 10). All placed, τ0 on
    // cores 0 and 1.
    let mut ts = vec![Task::implicit(0, 9, 10)];
    ts.extend((1..5).map(|i| Task::implicit(i, 5, 10)));
    let p = partition(&ts, 3, DS);
    assert!(p.schedulable, "{p:?}");
    assert_eq!(ids(&p.cores[0]), vec![(0, 0, 5), (1, 0, 5)]);
    assert_eq!(ids(&p.cores[1]), vec![(0, 1, 4), (2, 0, 5)]);
    assert_eq!(ids(&p.cores[2]), vec![(3, 0, 5), (4, 0, 5)]);
    assert_eq!(p.tasks[0].cores, vec![0, 1]);
    validate(&ts, &p);
    // A remainder split again: τ0 = (3, 10), τ1 = (6, 15), τ2 = (11, 12),
    // τ3 = (8, 12), τ4 = (6, 12), m = 3; DS order τ2, τ3, τ4, τ1, τ0.
    // Core 0: τ2; τ3 below it (tie on D, T; id) misses (19 > 12). Remove
    // τ2; MaximalSplit over {τ3}: 8 + C' ≤ 12 → C' = 4; Removed 11/12 −
    // 4/12 < 8/12: split. τ2'' = (7, 12, D 8) at offset 4, size 7/8.
    // Core 1: τ2''; τ4 misses (6 + 7 > 12). Remove τ2''; MaximalSplit
    // over {τ4} (D' = 8): 6 + C' ≤ 12 → 6; 7/8 − 6/8 < 1/2: split again.
    // τ2''' = (1, 12, D 2) at offset 10. Core 2: τ2''', τ0 (R 4), τ1
    // (w = 6 + 3 + 1 = 10).
    let ts = [
        Task::implicit(0, 3, 10),
        Task::implicit(1, 6, 15),
        Task::implicit(2, 11, 12),
        Task::implicit(3, 8, 12),
        Task::implicit(4, 6, 12),
    ];
    let p = partition(&ts, 3, DS);
    assert!(p.schedulable, "{p:?}");
    assert_eq!(ids(&p.cores[0]), vec![(2, 0, 4), (3, 0, 8)]);
    assert_eq!(ids(&p.cores[1]), vec![(2, 1, 6), (4, 0, 6)]);
    assert_eq!(ids(&p.cores[2]), vec![(2, 2, 1), (0, 0, 3), (1, 0, 6)]);
    let last = p.cores[2][0];
    assert_eq!((last.offset, last.deadline, last.response_time), (10, 2, 1));
    assert_eq!(p.tasks[2].cores, vec![0, 1, 2]);
    assert_eq!(p.cores[2][2].response_time, 10);
    validate(&ts, &p);
}

#[test]
fn theorem6_needs_heavy_tasks_on_own_cores() {
    // Input order, m = 2, U = 10/101 + 1 + 1/10 = 1.199 < 0.6003·2 +
    // 0.0928 = 1.2934, so Theorem 6 as stated would accept it. Core 0:
    // τ0 = (10, 101); τ1 = (100, 100) goes on top, R0 = 10 + 200 > 101.
    // HPTaskSplit removes τ1; MaximalSplit over {τ0}: t = 100: 10 + C' ≤
    // 100 → 90 (t = 101: 10 + 2C' ≤ 101 → 45), C' = 90; Removed 1 − 0.9 <
    // S(τ1): split. τ1'' = (10, 100, D 10), S = 1, goes to core 1 next
    // (input rank 1). τ2 = (1, 10) has D 10 = D(τ1'') and T 10 < 100, so
    // it goes on top and τ1'' misses (10 + 1 > 10); MaximalSplit of τ2
    // over {τ1''} is 0, Removed 0.1 ≥ 0.1: restore; no core left.
    let ts = [
        Task::implicit(0, 10, 101),
        Task::implicit(1, 100, 100),
        Task::implicit(2, 1, 10),
    ];
    let given = Heuristic::PdmsHpts {
        order: Order::Given,
    };
    let p = partition(&ts, 2, given);
    assert!(!p.schedulable);
    assert_eq!(p.unplaced.unwrap().task, 2);
    assert_eq!(ids(&p.cores[1]), vec![(1, 1, 10)]);
    // The proof's assumption (heavy tasks first, on their own cores) is
    // what decreasing size gives: τ1 alone on core 0, the rest on core 1.
    let p = partition(&ts, 2, DS);
    assert!(p.schedulable);
    // And the exact utilization test does not claim it (U(τ1) ≥ 0.6003).
    assert!(!crate::bounds::pdms_hpts_utilization_test(&ts, 2));
}

#[test]
fn fit_rules_choose_cores() {
    // Decreasing utilization: 0.5, 0.4, 0.3, 0.2 with T = D = 10 (all
    // harmonic, so any core up to U = 1 passes).
    let ts = [
        Task::implicit(0, 5, 10),
        Task::implicit(1, 4, 10),
        Task::implicit(2, 3, 10),
        Task::implicit(3, 2, 10),
    ];
    let run = |rule| {
        let h = Heuristic::Fit {
            rule,
            order: Order::DecreasingUtilization,
            priority: PriorityRule::DeadlineMonotonic,
        };
        let p = partition(&ts, 3, h);
        assert!(p.schedulable);
        p.tasks.iter().map(|t| t.cores[0]).collect::<Vec<_>>()
    };
    // FF: 0.5→0, 0.4→0 (0.9), 0.3→1, 0.2→1.
    assert_eq!(run(FitRule::FirstFit), vec![0, 0, 1, 1]);
    // BF: 0.5→0; 0.4→0 (fullest); 0.3: core 0 at 0.9 fails → 1; 0.2:
    // cores 0 (0.9) fails, 1 (0.3) fullest that fits → 1.
    assert_eq!(run(FitRule::BestFit), vec![0, 0, 1, 1]);
    // WF: 0.5→0; 0.4→1 (empty, lowest index); 0.3→2; 0.2→2 (0.3 is the
    // emptiest).
    assert_eq!(run(FitRule::WorstFit), vec![0, 1, 2, 2]);
    // NF: same as FF here; with order 0.5, 0.3, 0.4 NF never goes back.
    assert_eq!(run(FitRule::NextFit), vec![0, 0, 1, 1]);
    let ts2 = [
        Task::implicit(0, 5, 10),
        Task::implicit(1, 6, 10),
        Task::implicit(2, 4, 10),
    ];
    let h = |rule| Heuristic::Fit {
        rule,
        order: Order::Given,
        priority: PriorityRule::DeadlineMonotonic,
    };
    let cores = |p: Partition| p.tasks.iter().map(|t| t.cores[0]).collect::<Vec<_>>();
    // FF: τ1 (0.6) does not fit with 0.5 → core 1; τ2 (0.4) back on core 0.
    assert_eq!(
        cores(partition(&ts2, 2, h(FitRule::FirstFit))),
        vec![0, 1, 0]
    );
    // NF: after τ1 moved to core 1, τ2 stays there (0.6 + 0.4 = 1, harmonic).
    assert_eq!(
        cores(partition(&ts2, 2, h(FitRule::NextFit))),
        vec![0, 1, 1]
    );
    let ts3 = [
        Task::implicit(0, 5, 10),
        Task::implicit(1, 6, 10),
        Task::implicit(2, 5, 10),
    ];
    // FF puts τ2 (0.5) back on core 0; NF cannot (core 1 at 0.6 is full).
    assert_eq!(
        cores(partition(&ts3, 2, h(FitRule::FirstFit))),
        vec![0, 1, 0]
    );
    assert!(!partition(&ts3, 2, h(FitRule::NextFit)).schedulable);
}

#[test]
fn audsley_beats_dm_per_core() {
    // fp's example: τa = (3, 12, D 6), τb = (1, 12, D 7, J 5): DM misses,
    // the order (b, a) meets both deadlines. One core.
    let a = Task::new(0, 3, 12, 6);
    let b = Task {
        jitter: 5,
        ..Task::new(1, 1, 12, 7)
    };
    let with = |priority| Heuristic::Fit {
        rule: FitRule::FirstFit,
        order: Order::Given,
        priority,
    };
    assert!(!partition(&[a, b], 1, with(PriorityRule::DeadlineMonotonic)).schedulable);
    let p = partition(&[a, b], 1, with(PriorityRule::Audsley));
    assert!(p.schedulable);
    assert_eq!(ids(&p.cores[0]), vec![(1, 0, 1), (0, 0, 3)]);
    assert_eq!(p.cores[0][0].response_time, 6);
    // RM and DM differ: τ (1, 10, D 3) vs τ' (2, 5, D 5): RM puts the
    // T = 5 task first, then the D = 3 task sees R = 1 + 2 = 3 ≤ 3.
    let x = Task::new(0, 1, 10, 3);
    let y = Task::new(1, 2, 5, 5);
    let p = partition(&[x, y], 1, with(PriorityRule::RateMonotonic));
    assert_eq!(ids(&p.cores[0]), vec![(1, 0, 2), (0, 0, 1)]);
}

#[test]
fn infeasible_and_empty() {
    let p = partition(&[Task::new(7, 5, 10, 4)], 3, DS);
    assert_eq!(p.unplaced.unwrap().reason, Failure::Infeasible);
    assert_eq!(p.unplaced.unwrap().task, 7);
    assert!(partition(&[], 0, DS).schedulable);
    assert!(!partition(&[Task::implicit(0, 1, 2)], 0, DS).schedulable);
    let p = partition(&[Task::implicit(0, 1, 0)], 1, ff(Order::Given));
    assert_eq!(p.unplaced.unwrap().reason, Failure::Infeasible);
}

#[test]
fn split_is_pure() {
    let t = Task::new(3, 7, 20, 10);
    let (a, b) = split(&t, 3);
    assert_eq!((a.wcet, a.deadline, a.period), (3, 10, 20));
    assert_eq!((b.wcet, b.deadline, b.period), (4, 7, 20));
    assert_eq!(t, Task::new(3, 7, 20, 10));
}

/// A random core in DM order for the cross-checks: periods spread over
/// up to three decades, as in the benchmark, constrained deadlines, some
/// blocking; schedulable or not.
fn random_core() -> impl proptest::strategy::Strategy<Value = Vec<Task>> {
    use proptest::prelude::*;
    prop::collection::vec((10u64..=100_000, 1u64..=1000, 50u64..=100, 0u8..8), 0..8).prop_map(
        |raw| {
            dm_core_of(raw, |_, deadline, permille| {
                (deadline * permille / 4000).max(1)
            })
        },
    )
}

/// Tasks from drawn (T, x, D as % of T, kind) in DM order: C = `wcet(T, D,
/// x)`, blocking C/2 where kind is 0.
fn dm_core_of(
    raw: Vec<(Time, Time, Time, u8)>,
    wcet: impl Fn(Time, Time, Time) -> Time,
) -> Vec<Task> {
    let mut ts: Vec<Task> = raw
        .into_iter()
        .enumerate()
        .map(|(id, (period, x, dpct, kind))| {
            let deadline = (period * dpct / 100).max(1);
            let wcet = wcet(period, deadline, x);
            let blocking = if kind == 0 { wcet / 2 } else { 0 };
            Task {
                blocking,
                ..Task::new(id, wcet, period, deadline)
            }
        })
        .collect();
    fp::dm_order(&mut ts);
    ts
}

/// [`max_top_wcet`] on `core` (if schedulable, else the case is rejected)
/// for a new task of `period` and a deadline `dpct` % of it, against fp's
/// MaximalSplit; its answer and that deadline.
fn max_top_wcet_like_fp(
    core: &[Task],
    period: Time,
    dpct: Time,
    cap: Time,
) -> Result<(Time, Time), proptest::test_runner::TestCaseError> {
    let deadline = (period * dpct / 100).max(1);
    let mut resp = Vec::new();
    proptest::prop_assume!(schedulable_into(core, 0, &mut resp));
    let exact = fp::max_top_priority_wcet(core, period, deadline, cap);
    let mut scratch = PointScratch::default();
    let fast = max_top_wcet(core, 0, &resp, None, period, deadline, cap, &mut scratch);
    proptest::prop_assert_eq!(Some(fast), exact);
    Ok((fast, deadline))
}

/// A long core (64 to 160 pieces: [`max_top_wcet`]'s step 1 goes through
/// a StepSum from 64 on), DM order, total utilization about 0.5 to 0.95,
/// some pieces with blocking.
fn long_core() -> impl proptest::strategy::Strategy<Value = Vec<Task>> {
    use proptest::prelude::*;
    (
        prop::collection::vec((100u64..=20_000, 1u64..=100, 60u64..=100, 0u8..8), 64..160),
        50u64..=95,
    )
        .prop_map(|(raw, upct)| {
            let total: u64 = raw.iter().map(|r| r.1).sum();
            dm_core_of(raw, |period, deadline, share| {
                (period * share * upct / (100 * total)).clamp(1, deadline)
            })
        })
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config {
        cases: 64,
        max_global_rejects: 1 << 16,
        ..proptest::test_runner::Config::default()
    })]

    /// MaximalSplit on long cores (the StepSum RTAs of step 1 and of the
    /// search) is fp's, and maximal.
    #[test]
    fn fast_maximal_split_on_long_cores_matches_fp(
        core in long_core(),
        period in 100u64..=20_000,
        dpct in 50u64..=100,
        cap in 0u64..=20_000,
    ) {
        max_top_wcet_like_fp(&core, period, dpct, cap)?;
    }
}

proptest::proptest! {
    // About 2 % of random cores are unschedulable and rejected by
    // `fast_maximal_split_matches_fp`: room for the default's 1,024
    // rejects only up to about 40,000 cases (`PROPTEST_CASES`).
    #![proptest_config(proptest::test_runner::Config {
        max_global_rejects: 1 << 20,
        ..proptest::test_runner::Config::default()
    })]

    #[test]
    fn fast_rta_matches_fp(core in random_core(), warm in 0u64..3) {
        for i in 0..core.len() {
            let exact = fp::response_time(&core[..i], &core[i]);
            proptest::prop_assert_eq!(fp::response_time_from(&core[..i], &core[i], 0), exact);
            // Any start not above the fixed point gives the same answer.
            if let Some(r) = exact {
                let start = r - core[i].jitter - (r - core[i].jitter) * warm / 3;
                proptest::prop_assert_eq!(fp::response_time_from(&core[..i], &core[i], start), exact);
            }
        }
    }

    #[test]
    fn fast_maximal_split_matches_fp(
        core in random_core(),
        period in 10u64..=100_000,
        dpct in 50u64..=100,
        cap in 0u64..=100_000,
    ) {
        let (fast, deadline) = max_top_wcet_like_fp(&core, period, dpct, cap)?;
        // And it is maximal: one more ns breaks the core (unless capped).
        if fast < cap.min(deadline) {
            let mut with = vec![Task::new(usize::MAX, fast + 1, period, deadline)];
            with.extend_from_slice(&core);
            proptest::prop_assert!(!fp::is_schedulable(&with));
        }
    }
}

/// [`task_order`] by decreasing size and by decreasing utilization equals
/// a sort with the exact comparator (ratio, then id, then position).
fn exact_task_orders(tasks: &[Task]) -> Result<(), proptest::test_runner::TestCaseError> {
    for (order, den) in [
        (
            Order::DecreasingSize,
            (|t: &Task| t.deadline) as fn(&Task) -> Time,
        ),
        (Order::DecreasingUtilization, |t: &Task| t.period),
    ] {
        let mut exact: Vec<usize> = (0..tasks.len()).collect();
        exact.sort_by(|&a, &b| {
            let (x, y) = (&tasks[a], &tasks[b]);
            cmp_ratio(y.wcet, den(y), x.wcet, den(x))
                .then(x.id.cmp(&y.id))
                .then(a.cmp(&b))
        });
        proptest::prop_assert_eq!(task_order(tasks, order), exact);
    }
    Ok(())
}

proptest::proptest! {
    #[test]
    fn task_order_is_exact(
        raw in proptest::collection::vec((1u64..=1_000, 1u64..=4, 0usize..5), 0..30),
    ) {
        // Small integers make many exact ties (2/4 = 1/2) and ids repeat.
        let tasks: Vec<Task> = raw
            .iter()
            .map(|&(t, c, id)| Task::new(id, c.min(t), t, (t / 2).max(c.min(t))))
            .collect();
        exact_task_orders(&tasks)?;
        proptest::prop_assert_eq!(
            task_order(&tasks, Order::Given),
            (0..tasks.len()).collect::<Vec<_>>()
        );
    }
}

proptest::proptest! {
    /// Ratios within a few f64 ulps of each other (large C and D, scaled
    /// copies of one ratio nudged by a few ns) and far apart, up to 70
    /// tasks: [`task_order`]'s skipped exact comparisons (keys at least 16
    /// ulps apart) never change the exact order.
    #[test]
    fn task_order_is_exact_near_f64_ties(
        base in (1u64..=1_000, 1u64..=1_000),
        raw in proptest::collection::vec(
            (1u64..=(1 << 40), 0u64..=8, 0u64..=8, 0usize..3, 0u8..4),
            0..70,
        ),
    ) {
        let tasks: Vec<Task> = raw
            .iter()
            .map(|&(scale, dc, dd, id, far)| {
                let (c, d) = if far == 0 {
                    (base.0 * scale / 7 + dc, base.1 * scale + dd)
                } else {
                    (base.0 * scale + dc, base.1 * scale + dd)
                };
                let d = d.max(c).max(1);
                Task::new(id, c, d, d)
            })
            .collect();
        exact_task_orders(&tasks)?;
    }
}

#[test]
fn sweep_and_reduced_points_agree_with_fp_on_wide_periods() {
    // Long deadline, short T': thousands of points, both methods.
    let core = [
        Task::implicit(0, 2_587_711, 10_940_807),
        Task::implicit(1, 3_483_141, 28_063_331),
        Task::implicit(2, 10_584_841, 47_665_237),
        Task::implicit(3, 26_222_272, 127_720_521),
    ];
    let mut resp = Vec::new();
    assert!(schedulable_into(&core, 0, &mut resp));
    let exact = fp::max_top_priority_wcet(&core, 1_556_726, 1_556_726, 1_000_000);
    let mut scratch = PointScratch::default();
    let fast = max_top_wcet(
        &core,
        0,
        &resp,
        None,
        1_556_726,
        1_556_726,
        1_000_000,
        &mut scratch,
    );
    assert_eq!(Some(fast), exact);
    let (h, t) = (&core[..3], &core[3]);
    let swept = sweep_max_top_wcet(h, t, 1_556_726, &mut scratch.sweep);
    let reduced = reduced_max(h, t, 1_556_726, &mut scratch);
    assert_eq!(swept, reduced);
    assert_eq!(swept, Some(258_615)); // at t = 82·T' = 127 651 532
}

/// The largest C' over all of Bini & Buttazzo's reduced points (no limit
/// on their number).
fn reduced_max(h: &[Task], t: &Task, period: Time, scratch: &mut PointScratch) -> Option<Time> {
    assert!(reduced_points(
        h,
        t,
        period,
        usize::MAX,
        &mut scratch.points,
        &mut scratch.periods
    ));
    scratch
        .points
        .iter()
        .map(|&x| slack_per_job(h, t, period, x))
        .max()
        .flatten()
}

proptest::proptest! {
    /// [`sweep_max_top_wcet`] (branch and bound over blocks of windows,
    /// each swept with a heap of only the interferers released in it)
    /// finds the maximum of g over every scheduling point (the multiples
    /// of each interferer's period up to D, and D: Lehoczky, Sha & Ding
    /// 1989), for every task of random cores below a new task of random
    /// period, C' = 0 cases (no point with W(t) <= t) included; and never
    /// less than the maximum over Bini & Buttazzo's reduced points, which
    /// can be less where a task above misses its period
    /// ([`reduced_points_can_miss_the_maximum`]).
    #[test]
    fn sweep_matches_every_scheduling_point(
        core in random_core(),
        period in 10u64..=100_000,
    ) {
        let mut scratch = PointScratch::default();
        for k in 0..core.len() {
            let (h, t) = (&core[..k], &core[k]);
            let swept = sweep_max_top_wcet(h, t, period, &mut scratch.sweep);
            let exact = max_over_every_point(h, t, period);
            proptest::prop_assert_eq!(swept, exact, "task {} of {:?}", k, core);
            let reduced = reduced_max(h, t, period, &mut scratch);
            proptest::prop_assert!(swept >= reduced, "task {} of {:?}", k, core);
        }
    }

    /// [`climb_max_top_wcet`] (the parametric RTA of the partitioner's
    /// MaximalSplit) finds the same maximum of g over every scheduling
    /// point, C' = 0 and no-point cases included, from a cold start or
    /// from any start up to τ_k's fixed point without the new task (its
    /// response time or a lower bound on it, as the partitioner passes),
    /// and from any C' up to the maximum (with the start raised by it).
    #[test]
    fn climb_matches_every_scheduling_point(
        core in random_core(),
        period in 10u64..=100_000,
        warm in 0u64..4,
        from in 0u64..=4,
    ) {
        let mut scratch = PointScratch::default();
        for k in 0..core.len() {
            let (h, t) = (&core[..k], &core[k]);
            let exact = max_over_every_point(h, t, period);
            let cold = climb_max_top_wcet(h, t, period, 0, 0, &mut scratch.terms);
            proptest::prop_assert_eq!(cold, exact, "task {} of {:?}", k, core);
            if let (Some(r), Some(max)) = (fp::response_time(h, t), exact) {
                let from = max * from / 4;
                let low = r - r * warm / 4 + from;
                let warmed = climb_max_top_wcet(h, t, period, low, from, &mut scratch.terms);
                proptest::prop_assert_eq!(
                    warmed, exact, "task {} of {:?} from {} at {}", k, core, low, from
                );
            }
        }
    }
}

/// max g(t) = ⌊(t − W(t))/⌈t/T'⌉⌋ over every scheduling point t ≤ D of
/// task `t` below `h` and a new task of period `period` (the multiples of
/// each interferer's period up to D, and D: Lehoczky, Sha & Ding 1989), by
/// brute force: the reference of the sweep's and the climb's tests.
fn max_over_every_point(h: &[Task], t: &Task, period: Time) -> Option<Time> {
    let mut every = vec![t.deadline];
    for p in h.iter().map(|x| x.period).chain([period]) {
        every.extend((1..=t.deadline / p).map(|m| m * p));
    }
    every
        .iter()
        .map(|&x| slack_per_job(h, t, period, x))
        .max()
        .flatten()
}

/// Bini & Buttazzo's reduced points can miss the largest C' of one task
/// (found by `sweep_matches_every_scheduling_point` at 50,000 cases):
/// below a new task of period 2,037 and one of C = 36, T = 740 (D = 547,
/// B = 18), a task of C = 12, B = 6, D = 49,203 admits C' = 1,936 (at t =
/// 17·2,037 = 34,629: 18 + 47·36 + 17·1,936 = 34,622 <= t), yet no reduced
/// point (48,888, 48,840, 49,203) admits more than 1,935. The reduced
/// points are still witnesses (W(t) <= t at one proves the deadline met).
/// At C' = 1,936 the task above misses even its period (18 + 36 + 1,936 >
/// 740): the reduced set presumes the tasks above schedulable
/// (`reduced_points_are_exact_below_schedulable_tasks`), and MaximalSplit
/// never asks it at such a C' (it is the minimum over the tasks in priority
/// order): on this core it answers the exact 493.
#[test]
fn reduced_points_can_miss_the_maximum() {
    let h = [Task {
        blocking: 18,
        ..Task::new(1, 36, 740, 547)
    }];
    let t = Task {
        blocking: 6,
        ..Task::new(0, 12, 72_358, 49_203)
    };
    let period = 2_037;
    let mut scratch = PointScratch::default();
    assert_eq!(
        sweep_max_top_wcet(&h, &t, period, &mut scratch.sweep),
        Some(1_936)
    );
    assert_eq!(slack_per_job(&h, &t, period, 34_629), Some(1_936));
    let reduced = reduced_max(&h, &t, period, &mut scratch);
    assert_eq!(reduced, Some(1_935));
    // The task above, below the new one at C' = 1,936, misses its period.
    let top = Task::implicit(usize::MAX, 1_936, period);
    assert_eq!(
        fp::response_time(
            &[top],
            &Task {
                deadline: 740,
                ..h[0]
            }
        ),
        None
    );
    // MaximalSplit of the whole core is exact.
    let core = [h[0], t];
    let mut resp = Vec::new();
    assert!(schedulable_into(&core, 0, &mut resp));
    let deadline = 2_000;
    let exact = fp::max_top_priority_wcet(&core, period, deadline, deadline);
    assert_eq!(exact, Some(493));
    let fast = max_top_wcet(
        &core,
        0,
        &resp,
        None,
        period,
        deadline,
        deadline,
        &mut scratch,
    );
    assert_eq!(Some(fast), exact);
}

proptest::proptest! {
    /// Where the reduced points may fall short: only at a C' at which a
    /// task above (the new task included) misses its period. Let `limit`
    /// be the largest C' at which the tasks above all complete within
    /// their periods: for every C' up to `limit` that the task admits (at
    /// some scheduling point), a reduced point admits it too, so the
    /// maximum over the reduced points is at least min(maximum, `limit`),
    /// and equal to the maximum when that is at most `limit` (Bini &
    /// Buttazzo's Theorem 2 with its tasks above schedulable; a brute-force
    /// search over 145,090 random cases found the reduced set short 7,284
    /// times, each time with a task above missing its period, and never
    /// otherwise). MaximalSplit relies on it: visiting the tasks in
    /// priority order, it asks each only about C' at which the tasks above
    /// meet their deadlines (D <= T).
    #[test]
    fn reduced_points_are_exact_below_schedulable_tasks(
        core in random_core(),
        period in 10u64..=100_000,
    ) {
        let mut scratch = PointScratch::default();
        // The tasks above, each against its period.
        let within: Vec<Task> = core.iter().map(|x| Task { deadline: x.period, ..*x }).collect();
        let mut limit = period;
        for k in 0..core.len() {
            let (h, t) = (&core[..k], &core[k]);
            let Some(best) = sweep_max_top_wcet(h, t, period, &mut scratch.sweep) else {
                break;
            };
            let reduced = reduced_max(h, t, period, &mut scratch)
                .unwrap_or(0);
            proptest::prop_assert!(reduced <= best);
            proptest::prop_assert!(
                reduced >= best.min(limit),
                "task {} of {:?}: {} below min({}, {})", k, core, reduced, best, limit
            );
            // τ_k joins the tasks above for the next one.
            match sweep_max_top_wcet(&within[..k], &within[k], period, &mut scratch.sweep) {
                Some(c) => limit = limit.min(c),
                None => break,
            }
        }
    }
}

/// The structural checks of tests/partition_props.rs, for unit tests.
fn validate(tasks: &[Task], p: &Partition) {
    for core in &p.cores {
        let ts: Vec<Task> = core.iter().map(Piece::as_task).collect();
        let r = fp::response_times(&ts);
        for (piece, r) in core.iter().zip(r) {
            assert_eq!(Some(piece.response_time), r);
        }
    }
    for (i, t) in tasks.iter().enumerate() {
        let mut pieces: Vec<Piece> = p
            .cores
            .iter()
            .flatten()
            .filter(|x| x.index == i)
            .copied()
            .collect();
        pieces.sort_by_key(|x| x.piece);
        assert_eq!(pieces.iter().map(|x| x.wcet).sum::<Time>(), t.wcet);
        for x in &pieces {
            assert_eq!(x.deadline + x.offset, t.deadline);
        }
    }
}

/// [`CoreList`] reads, compares, prints and serializes as the list of its
/// cores, inline (up to two) or on the heap.
#[test]
fn core_list_is_a_list_of_cores() {
    let mut c = CoreList::new();
    assert!(c.is_empty());
    let mut v: Vec<usize> = Vec::new();
    for core in [3, 0, 7, 7, 12] {
        c.push(core);
        v.push(core);
        assert_eq!(c.as_slice(), v.as_slice());
        assert_eq!(c, v);
        assert_eq!(CoreList::from(v.clone()), c);
        assert_eq!(Vec::from(c.clone()), v);
        assert_eq!(format!("{c:?}"), format!("{v:?}"));
        let json = serde_json::to_string(&c).expect("serializes");
        assert_eq!(json, serde_json::to_string(&v).expect("serializes"));
        let back: CoreList = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, c);
        assert_eq!(c.iter().copied().collect::<CoreList>(), c);
    }
    assert_ne!(CoreList::from(vec![1, 2]), CoreList::from(vec![1, 2, 3]));
    assert_eq!(CoreList::from(&[5usize][..]), [5]);
}

#[path = "scale_tests.rs"]
mod scale_tests;
