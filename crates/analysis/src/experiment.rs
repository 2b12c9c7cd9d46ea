//! Batch evaluation of random task sets for `rtgpu experiment`: one call
//! draws `sets` task sets of a [`Spec`] and runs every named [`Test`] on each
//! (the same sets for every test, so comparisons are paired), returning
//! counts and, on request, each set's breakdown utilization.
//!
//! Breakdown utilization follows Lehoczky, Sha & Ding (RTSS 1989), the
//! method seed 003 §V.B cites as [17]: every C is scaled by a common factor
//! λ; the breakdown utilization is λ*·U where λ* is the largest factor for
//! which the scaled set is still schedulable (found by bisection on λ, to a
//! relative precision of 1e-4; C' = max(1, floor(λ·C)) keeps integer time).
//! A test that is not monotone in λ (task splitting need not be) gets the
//! transition point bisection converges to, as in the seed's method.

use crate::edf::gedf_tardiness;
use crate::fp;
use crate::generate::{effective_utilization, generate, set_seed, Generated, Rng, Spec};
use crate::global_fp::gfp_schedulable;
use crate::partition::{is_partitionable, FitRule, Heuristic, Order, PriorityRule};
use crate::task::Task;

/// A schedulability test that decides a CPU task set on `m` cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// Partitioned FP with a heuristic (PDMS_HPTS_DS, first fit, ...).
    Partition(Heuristic),
    /// G-EDF bounded tardiness (seed 000 Eqs. 4-5: soft real time).
    GedfTardiness,
    /// Global FP (DM priorities) response-time bounds.
    GlobalFp,
    /// Uniprocessor exact FP RTA under DM (ignores m).
    UniprocessorDm,
}

impl Test {
    /// The names a study file uses, and their tests.
    pub const NAMES: [&'static str; 9] = [
        "pdms-hpts-ds",
        "pdms-hpts",
        "first-fit",
        "best-fit",
        "worst-fit",
        "next-fit",
        "gedf",
        "gfp",
        "fp",
    ];

    /// The test called `name` (one of [`Test::NAMES`]).
    pub fn from_name(name: &str) -> Option<Test> {
        let fit = |rule| {
            Test::Partition(Heuristic::Fit {
                rule,
                order: Order::DecreasingUtilization,
                priority: PriorityRule::DeadlineMonotonic,
            })
        };
        Some(match name {
            "pdms-hpts-ds" => Test::Partition(Heuristic::PdmsHptsDs),
            "pdms-hpts" => Test::Partition(Heuristic::PdmsHpts {
                order: Order::DecreasingUtilization,
            }),
            "first-fit" => fit(FitRule::FirstFit),
            "best-fit" => fit(FitRule::BestFit),
            "worst-fit" => fit(FitRule::WorstFit),
            "next-fit" => fit(FitRule::NextFit),
            "gedf" => Test::GedfTardiness,
            "gfp" => Test::GlobalFp,
            "fp" => Test::UniprocessorDm,
            _ => return None,
        })
    }

    /// Whether `tasks` passes on `m` cores. `scratch` is reused space.
    pub fn schedulable(self, tasks: &[Task], m: usize, scratch: &mut Vec<Task>) -> bool {
        match self {
            Test::Partition(h) => is_partitionable(tasks, m, h),
            Test::GedfTardiness => gedf_tardiness(tasks, m as u32).bounded,
            Test::GlobalFp | Test::UniprocessorDm => {
                scratch.clear();
                scratch.extend_from_slice(tasks);
                fp::dm_order(scratch);
                if self == Test::GlobalFp {
                    gfp_schedulable(scratch, m as u32)
                } else {
                    fp::is_schedulable(scratch)
                }
            }
        }
    }
}

/// Largest common scale factor λ ≤ `m / U` such that `tasks` with every C
/// scaled to max(1, floor(λ·C)) passes `test` on `m` cores, and the scaled
/// utilization λ·U it gives (the breakdown utilization, not normalised by m).
/// `(0, 0)` when not even C = 1 ns passes.
pub fn breakdown(tasks: &[Task], m: usize, test: Test) -> (f64, f64) {
    let u: f64 = tasks.iter().map(Task::utilization).sum();
    if tasks.is_empty() || u <= 0.0 {
        return (0.0, 0.0);
    }
    let mut scaled = Vec::with_capacity(tasks.len());
    let mut scratch = Vec::new();
    let mut passes = |lambda: f64| {
        scaled.clear();
        scaled.extend(tasks.iter().map(|t| Task {
            wcet: ((t.wcet as f64 * lambda).floor() as u64).clamp(1, t.deadline.max(1)),
            ..*t
        }));
        test.schedulable(&scaled, m, &mut scratch)
    };
    let (mut lo, mut hi) = (0.0, m as f64 / u);
    if passes(hi) {
        lo = hi;
    } else if !passes(f64::MIN_POSITIVE) {
        return (0.0, 0.0);
    } else {
        while (hi - lo) > 1e-4 * hi {
            let mid = 0.5 * (lo + hi);
            if passes(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }
    let got: f64 = scaled_utilization(tasks, lo);
    (lo, got)
}

fn scaled_utilization(tasks: &[Task], lambda: f64) -> f64 {
    tasks
        .iter()
        .map(|t| {
            ((t.wcet as f64 * lambda).floor()).clamp(1.0, t.deadline.max(1) as f64)
                / t.period as f64
        })
        .sum()
}

/// What to compute per set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Metrics {
    /// Count the sets each test accepts.
    pub ratio: bool,
    /// Record each set's breakdown utilization under each test.
    pub breakdown: bool,
}

/// Per test, the outcome over a batch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TestOutcome {
    /// Sets accepted (when `Metrics::ratio`).
    pub schedulable: u64,
    /// Breakdown utilization of each set, in set order (when
    /// `Metrics::breakdown`).
    pub breakdown: Vec<f64>,
}

/// A batch of `sets` task sets and every test's outcome on them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Batch {
    pub sets: u64,
    /// Σ over sets of the set's utilization (mean = / sets).
    pub utilization_sum: f64,
    /// Σ over sets of the effective utilization (seed 000 §VII; equals the
    /// utilization for CPU-only sets or R = 1).
    pub effective_utilization_sum: f64,
    /// Σ over sets of their task count.
    pub tasks_sum: u64,
    pub tests: Vec<TestOutcome>,
}

/// Draws sets `first..first + sets` of the point seeded `seed` (set k uses
/// [`set_seed`]`(seed, k)`) and evaluates `tests` on `m` cores.
pub fn run_batch(
    spec: &Spec,
    seed: u64,
    first: u64,
    sets: u64,
    m: usize,
    tests: &[Test],
    metrics: Metrics,
) -> Batch {
    let r = spec.gpu.as_ref().map_or(1.0, |g| g.speedup);
    let mut batch = Batch {
        tests: vec![TestOutcome::default(); tests.len()],
        ..Batch::default()
    };
    let mut plain: Vec<Task> = Vec::new();
    let mut scratch = Vec::new();
    for k in first..first + sets {
        let set: Vec<Generated> = generate(&mut Rng::new(set_seed(seed, k)), spec);
        plain.clear();
        plain.extend(set.iter().map(|g| g.task));
        batch.sets += 1;
        batch.tasks_sum += set.len() as u64;
        batch.utilization_sum += plain.iter().map(Task::utilization).sum::<f64>();
        batch.effective_utilization_sum += effective_utilization(&set, r);
        for (out, &test) in batch.tests.iter_mut().zip(tests) {
            if metrics.ratio && test.schedulable(&plain, m, &mut scratch) {
                out.schedulable += 1;
            }
            if metrics.breakdown {
                out.breakdown.push(breakdown(&plain, m, test).1);
            }
        }
    }
    batch
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{Overshoot, Periods, Utilizations};

    fn seed003(m: f64) -> Spec {
        Spec {
            utilizations: Utilizations::Uniform {
                lo: 0.0,
                hi: 0.4,
                total: Some(m),
                n: None,
                overshoot: Overshoot::Keep,
            },
            periods: Periods::Uniform {
                lo: 100_000,
                hi: 5_000_000,
                granularity: 1000,
            },
            deadline: None,
            gpu: None,
        }
    }

    #[test]
    fn names_round_trip() {
        for n in Test::NAMES {
            assert!(Test::from_name(n).is_some(), "{n}");
        }
        assert!(Test::from_name("nope").is_none());
    }

    #[test]
    fn breakdown_is_a_transition() {
        // Three tasks U = 0.6 on 2 cores: schedulable by PDMS_HPTS_DS at
        // U = 1.8; the breakdown lies between that and m = 2.
        let ts: Vec<Task> = (0..3).map(|i| Task::implicit(i, 6_000, 10_000)).collect();
        let test = Test::from_name("pdms-hpts-ds").expect("known name");
        let (lambda, u) = breakdown(&ts, 2, test);
        assert!((1.8 - 1e-9..=2.0 + 1e-9).contains(&u), "{u}");
        // Scaled by λ it passes; 0.1 % more (if below m/U) fails.
        let scale = |l: f64| -> Vec<Task> {
            ts.iter()
                .map(|t| Task {
                    wcet: (t.wcet as f64 * l).floor() as u64,
                    ..*t
                })
                .collect()
        };
        let mut s = Vec::new();
        assert!(test.schedulable(&scale(lambda), 2, &mut s));
        if lambda * 1.001 < 2.0 / 1.8 {
            assert!(!test.schedulable(&scale(lambda * 1.001), 2, &mut s));
        }
        // First fit cannot place 3 x 0.6 on 2 cores: its breakdown is lower
        // (two tasks per core once each is at most 0.5: U = 1.5).
        let (_, ff) = breakdown(&ts, 2, Test::from_name("first-fit").expect("known"));
        assert!(ff < u && (ff - 1.5).abs() < 0.01, "{ff}");
    }

    #[test]
    fn batch_is_reproducible_and_splittable() {
        let spec = seed003(4.0);
        let tests = [Test::from_name("pdms-hpts-ds").expect("known")];
        let m = Metrics {
            ratio: true,
            breakdown: true,
        };
        let all = run_batch(&spec, 9, 0, 6, 4, &tests, m);
        let a = run_batch(&spec, 9, 0, 3, 4, &tests, m);
        let b = run_batch(&spec, 9, 3, 3, 4, &tests, m);
        assert_eq!(all.sets, 6);
        let joined: Vec<f64> = a.tests[0]
            .breakdown
            .iter()
            .chain(&b.tests[0].breakdown)
            .copied()
            .collect();
        assert_eq!(all.tests[0].breakdown, joined);
        // Sets generated to exceed U = m are unschedulable as drawn.
        assert_eq!(all.tests[0].schedulable, 0);
        assert!(all.utilization_sum / 6.0 > 4.0);
        for &x in &joined {
            assert!(x > 0.5 * 4.0 && x <= 4.0 + 1e-9, "{x}");
        }
    }
}
