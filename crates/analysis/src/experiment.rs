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
//!
//! GPU-aware tests read the GPU part of each generated task:
//! - seed 000 §VII: the overhead-aware C-EDF soft test of App. B
//!   ([`overheads::soft_test`]: Table III overheads, k-FMLP blocking per
//!   cluster, two-pass worst fit) under SLIH, klmirqd or PAI.
//! - seed 004 App. A: GPUSync's Theorem 3 blocking bound for every GPU-using
//!   task of a set; the per-set sample is the largest bound (ms).
//!
//! CPU-only tests run the suspension-oblivious task (C includes the GPU
//! part) of every generated task.

use rtgpu_model::Overheads;
use serde::Deserialize;

use crate::edf::gedf_tardiness;
use crate::fp;
use crate::generate::{effective_utilization, generate, set_seed, Generated, Rng, Spec};
use crate::global_fp::gfp_schedulable;
use crate::gpusync::{self, CopyLocking, GpuSyncConfig, GpuSyncMaxima, GpuSyncRequest};
use crate::overheads::{self, ClusterScheduler, ClusterSpec, GpuTaskSpec, InterruptMethod};
use crate::partition::{is_partitionable, FitRule, Heuristic, Order, PriorityRule};
use crate::task::{Task, Time};

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
    /// Seed 000 §VII: overhead-aware C-EDF (App. B) with the method's
    /// interrupt accounting.
    OverheadAware(InterruptMethod),
    /// Seed 004 App. A: GPUSync blocking bounds (Theorem 3); a sample per
    /// set, no decision.
    GpuSyncBlocking,
}

impl Test {
    /// The names a study file uses, and their tests.
    pub const NAMES: [&'static str; 13] = [
        "pdms-hpts-ds",
        "pdms-hpts",
        "first-fit",
        "best-fit",
        "worst-fit",
        "next-fit",
        "gedf",
        "gfp",
        "fp",
        "overhead-slih",
        "overhead-klmirqd",
        "overhead-pai",
        "gpusync",
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
            "overhead-slih" => Test::OverheadAware(InterruptMethod::Slih),
            "overhead-klmirqd" => Test::OverheadAware(InterruptMethod::Klmirqd),
            "overhead-pai" => Test::OverheadAware(InterruptMethod::Pai),
            "gpusync" => Test::GpuSyncBlocking,
            _ => return None,
        })
    }

    /// Whether the test decides schedulability (all but GPUSync blocking).
    pub fn decides(self) -> bool {
        self != Test::GpuSyncBlocking
    }

    /// Whether the test reads the GPU part of generated tasks.
    pub fn uses_gpu(self) -> bool {
        matches!(self, Test::OverheadAware(_) | Test::GpuSyncBlocking)
    }

    /// Whether a generated set passes on `setup`'s platform.
    pub fn schedulable_set(
        self,
        set: &[Generated],
        tasks: &[Task],
        setup: &Setup,
        scratch: &mut Vec<Task>,
    ) -> bool {
        match self {
            Test::OverheadAware(method) => {
                let specs = gpu_specs(set);
                overheads::soft_test(
                    &specs,
                    &setup.cluster_specs(),
                    ClusterScheduler::CEdf,
                    method,
                    &setup.overheads(),
                    overheads::KfmlpBound::default(),
                )
                .schedulable
            }
            Test::GpuSyncBlocking => false,
            cpu => cpu.schedulable(tasks, setup.cores, scratch),
        }
    }

    /// Whether CPU `tasks` pass on `m` cores (CPU-only tests; the GPU-aware
    /// ones need [`Test::schedulable_set`] and answer false here).
    /// `scratch` is reused space.
    pub fn schedulable(self, tasks: &[Task], m: usize, scratch: &mut Vec<Task>) -> bool {
        match self {
            Test::OverheadAware(_) | Test::GpuSyncBlocking => false,
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

/// The platform and protocol parameters of a study point (the JSON of its
/// parameters; unknown keys are ignored, they belong to the generator).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Setup {
    /// CPUs in all (m).
    pub cores: usize,
    /// Clusters the CPUs and GPUs are split into, evenly (seed 000 §V: 2).
    pub clusters: usize,
    /// GPUs in all.
    pub gpus: usize,
    /// GPUSync tokens per GPU ρ.
    pub rho: u32,
    /// GPUSync peer-copy locking: "system-memory", "dgl" or "nested".
    pub copy_locking: String,
    /// GPUSync chunk size in bytes (0: no chunking).
    pub chunk: u64,
    /// Copy bandwidth in bytes per second (GPUSync L^C).
    pub bandwidth: u64,
    /// L^P_max: CPU time a job runs while holding a GPU token (ns).
    pub token_cpu: Time,
    /// "table-iii" (seed 000 Table III) or "zero".
    pub overheads: String,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            cores: 1,
            clusters: 1,
            gpus: 0,
            rho: 1,
            copy_locking: "system-memory".into(),
            chunk: 0,
            bandwidth: 6_000_000_000,
            token_cpu: 0,
            overheads: "table-iii".into(),
        }
    }
}

impl Setup {
    /// Checks the values; the error names the parameter.
    pub fn validate(&self) -> Result<(), String> {
        if self.cores == 0 || self.cores > 1 << 16 {
            return Err(format!(
                "cores must be between 1 and 65536, got {}",
                self.cores
            ));
        }
        if self.clusters == 0
            || !self.cores.is_multiple_of(self.clusters)
            || !self.gpus.is_multiple_of(self.clusters)
        {
            return Err(format!(
                "clusters ({}) must divide cores ({}) and gpus ({})",
                self.clusters, self.cores, self.gpus
            ));
        }
        if self.rho == 0 {
            return Err("rho must be at least 1".into());
        }
        self.copy_locking()?;
        if self.bandwidth == 0 {
            return Err("bandwidth must be > 0 bytes/s".into());
        }
        if !matches!(self.overheads.as_str(), "table-iii" | "zero") {
            return Err(format!(
                "overheads must be \"table-iii\" or \"zero\", got {:?}",
                self.overheads
            ));
        }
        Ok(())
    }

    fn copy_locking(&self) -> Result<CopyLocking, String> {
        match self.copy_locking.as_str() {
            "system-memory" => Ok(CopyLocking::SystemMemory),
            "dgl" => Ok(CopyLocking::Dgl),
            "nested" => Ok(CopyLocking::Nested),
            other => Err(format!(
                "copy_locking must be \"system-memory\", \"dgl\" or \"nested\", got {other:?}"
            )),
        }
    }

    fn overheads(&self) -> Overheads {
        if self.overheads == "zero" {
            Overheads::zero()
        } else {
            Overheads::default()
        }
    }

    fn cluster_specs(&self) -> Vec<ClusterSpec> {
        let k = self.clusters.max(1);
        vec![
            ClusterSpec {
                cpus: (self.cores / k) as u32,
                gpus: (self.gpus / k) as u32,
            };
            k
        ]
    }
}

/// Generated tasks as seed 000 App. B's accounting reads them: e_i the CPU
/// part, the GPU critical section, η_i.
fn gpu_specs(set: &[Generated]) -> Vec<GpuTaskSpec> {
    set.iter()
        .map(|g| {
            let gpu = g.gpu.map_or(0, |u| u.time);
            GpuTaskSpec {
                cpu: g.task.wcet - gpu,
                gpu,
                period: g.task.period,
                deadline: g.task.deadline,
                interrupts: g.gpu.map_or(0, |u| u.eta),
            }
        })
        .collect()
}

/// Seed 004 App. A for one set on one cluster of `setup.cores` CPUs and
/// `setup.gpus` GPUs: the largest Theorem 3 bound over its GPU-using tasks
/// (ns; 0 without any). Each task copies its bytes in ⌈d/c⌉ requests
/// ([`gpusync::copy_requests`]) and runs η kernels, each of length
/// (GPU time − copy time)/η; L^C_max is the longest single request
/// (one chunk, or the largest transfer unchunked), L^E_max the longest
/// kernel, L^P_max `setup.token_cpu`.
pub fn gpusync_max_blocking(set: &[Generated], setup: &Setup) -> Time {
    let cfg = GpuSyncConfig {
        cpus: setup.cores as u32,
        gpus: setup.gpus as u32,
        rho: setup.rho,
        copy_locking: setup.copy_locking().unwrap_or(CopyLocking::SystemMemory),
    };
    let chunk = (setup.chunk > 0).then_some(setup.chunk);
    let mut max = GpuSyncMaxima {
        cpu: setup.token_cpu,
        ..GpuSyncMaxima::default()
    };
    let mut requests = Vec::new();
    for u in set.iter().filter_map(|g| g.gpu) {
        let piece = chunk.map_or(u.bytes, |c| c.min(u.bytes));
        max.copy = max.copy.max(gpusync::transfer_time(piece, setup.bandwidth));
        let copying = gpusync::transfer_time(u.bytes, setup.bandwidth);
        let eta = u64::from(u.eta.max(1));
        max.exec = max.exec.max(u.time.saturating_sub(copying).div_ceil(eta));
        requests.push(GpuSyncRequest {
            copy_requests: gpusync::copy_requests(&[u.bytes], chunk),
            exec_requests: eta,
        });
    }
    gpusync::total_blocking(&cfg, &requests, &max)
        .iter()
        .map(|b| b.total)
        .max()
        .unwrap_or(0)
}

/// What to compute per set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Metrics {
    /// Count the sets each test accepts.
    pub ratio: bool,
    /// Record each set's breakdown utilization under each test.
    pub breakdown: bool,
    /// Record each set's largest GPUSync blocking bound (ms).
    pub blocking: bool,
}

/// Per test, the outcome over a batch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TestOutcome {
    /// Sets accepted (when `Metrics::ratio`).
    pub schedulable: u64,
    /// Whether each set was accepted, in set order (when `Metrics::ratio`
    /// and the test decides): the per-set outcome behind `schedulable`,
    /// for paired comparisons and tidy tables.
    pub accepted: Vec<bool>,
    /// Breakdown utilization of each set, in set order (when
    /// `Metrics::breakdown`).
    pub breakdown: Vec<f64>,
    /// Largest GPUSync blocking bound of each set in ms (when
    /// `Metrics::blocking`).
    pub blocking: Vec<f64>,
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
/// [`set_seed`]`(seed, k)`) and evaluates `tests` on `setup`'s platform.
pub fn run_batch(
    spec: &Spec,
    seed: u64,
    first: u64,
    sets: u64,
    setup: &Setup,
    tests: &[Test],
    metrics: Metrics,
) -> Batch {
    let m = setup.cores;
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
            if metrics.ratio && test.decides() {
                let ok = test.schedulable_set(&set, &plain, setup, &mut scratch);
                out.schedulable += u64::from(ok);
                out.accepted.push(ok);
            }
            if metrics.breakdown && !test.uses_gpu() {
                out.breakdown.push(breakdown(&plain, m, test).1);
            }
            if metrics.blocking && test == Test::GpuSyncBlocking {
                out.blocking
                    .push(gpusync_max_blocking(&set, setup) as f64 / 1e6);
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
    fn each_set_accepted_is_the_decision_on_that_set_alone() {
        // Half the cores' worth of load: some sets pass, some do not.
        let spec = seed003(3.4);
        let tests = [Test::from_name("first-fit").expect("known")];
        let m = Metrics {
            ratio: true,
            ..Metrics::default()
        };
        let setup = Setup {
            cores: 4,
            ..Setup::default()
        };
        let all = run_batch(&spec, 5, 0, 40, &setup, &tests, m);
        let acc = &all.tests[0].accepted;
        assert_eq!(acc.len(), 40);
        let ones = acc.iter().filter(|&&a| a).count() as u64;
        assert_eq!(ones, all.tests[0].schedulable);
        assert!(ones > 0 && ones < 40, "a mix of outcomes: {acc:?}");
        for (k, &a) in acc.iter().enumerate() {
            let one = run_batch(&spec, 5, k as u64, 1, &setup, &tests, m);
            assert_eq!(one.tests[0].accepted, vec![a], "set {k}");
        }
    }

    #[test]
    fn batch_is_reproducible_and_splittable() {
        let spec = seed003(4.0);
        let tests = [Test::from_name("pdms-hpts-ds").expect("known")];
        let m = Metrics {
            ratio: true,
            breakdown: true,
            blocking: false,
        };
        let setup = Setup {
            cores: 4,
            ..Setup::default()
        };
        let all = run_batch(&spec, 9, 0, 6, &setup, &tests, m);
        let a = run_batch(&spec, 9, 0, 3, &setup, &tests, m);
        let b = run_batch(&spec, 9, 3, 3, &setup, &tests, m);
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
        assert_eq!(all.tests[0].accepted, vec![false; 6]);
        assert!(all.utilization_sum / 6.0 > 4.0);
        for &x in &joined {
            assert!(x > 0.5 * 4.0 && x <= 4.0 + 1e-9, "{x}");
        }
    }

    #[test]
    fn gpusync_blocking_by_hand() {
        use crate::generate::GpuUse;
        // One byte per ns. A: 1000 B, GPU 5000 ns, η = 2 (kernels 2000 ns);
        // B: 3000 B, GPU 4000 ns, η = 1 (kernel 1000 ns). Unchunked:
        // L^C = 3000, L^E = 2000, L^P = 0. m = 6, g = 4.
        let set = [
            Generated {
                task: Task::implicit(0, 10_000, 100_000),
                gpu: Some(GpuUse {
                    time: 5000,
                    bytes: 1000,
                    eta: 2,
                }),
            },
            Generated {
                task: Task::implicit(1, 8_000, 100_000),
                gpu: Some(GpuUse {
                    time: 4000,
                    bytes: 3000,
                    eta: 1,
                }),
            },
            Generated {
                task: Task::implicit(2, 8_000, 100_000),
                gpu: None,
            },
        ];
        let setup = |rho| Setup {
            cores: 6,
            gpus: 4,
            rho,
            bandwidth: 1_000_000_000,
            ..Setup::default()
        };
        // ρ = 1: N^C = N^E = 0; THT_A = 3000 + 2·2000 = 7000 (the max),
        // token blocking (2⌈6/4⌉ − 1)·7000 = 21000, no engine blocking.
        assert_eq!(gpusync_max_blocking(&set, &setup(1)), 21_000);
        // ρ = 2: N^C = N^E = 1; THT_A = 2·3000 + 2·2·2000 = 14000, factor
        // 2⌈6/8⌉ − 1 = 1; engine blocking of A = 3000 + 2·2000 = 7000:
        // 21000. B: 14000 + 3000 + 2000 = 19000.
        assert_eq!(gpusync_max_blocking(&set, &setup(2)), 21_000);
        // ρ = 3: N = 2; THT_A = 3·3000 + 2·3·2000 = 21000, factor 1,
        // engine A = 2·3000 + 2·2·2000 = 14000: 35000.
        assert_eq!(gpusync_max_blocking(&set, &setup(3)), 35_000);
        // Chunks of 1000 B: B makes 3 copy requests, L^C = 1000. ρ = 1:
        // THT_A = 1000 + 4000 = 5000, THT_B = 3·1000 + 1000 = 4000: 3·5000.
        let chunked = Setup {
            chunk: 1000,
            ..setup(1)
        };
        assert_eq!(gpusync_max_blocking(&set, &chunked), 15_000);
        assert_eq!(gpusync_max_blocking(&set[2..], &setup(1)), 0);
    }

    #[test]
    fn overhead_aware_tests_on_seed000_sets() {
        use crate::generate::Gpu;
        // Seed 000 §VII sets: U per task uniform [0.5, 0.9], 50-60 % GPU
        // tasks spending 75 % of C on the GPU, η = 3, periods 15-60 ms;
        // 12 CPUs and 8 GPUs in 2 clusters (seed 000 §V).
        let spec = |total: f64, overshoot| Spec {
            utilizations: Utilizations::Uniform {
                lo: 0.5,
                hi: 0.9,
                total: Some(total),
                n: None,
                overshoot,
            },
            periods: Periods::Uniform {
                lo: 15_000_000,
                hi: 60_000_000,
                granularity: 1,
            },
            deadline: None,
            gpu: Some(Gpu {
                share: [0.5, 0.6],
                part: [0.75, 0.75],
                data: [0, 0],
                eta: [3, 3],
                speedup: 16.0,
            }),
        };
        let setup = Setup {
            cores: 12,
            clusters: 2,
            gpus: 8,
            ..Setup::default()
        };
        let tests: Vec<Test> = ["overhead-slih", "overhead-klmirqd", "overhead-pai"]
            .iter()
            .map(|n| Test::from_name(n).expect("known"))
            .collect();
        let m = Metrics {
            ratio: true,
            ..Metrics::default()
        };
        // Light sets (U <= 2 on 12 CPUs) pass under every method; sets
        // with U > 12.5 on 12 CPUs never do (tardiness needs U <= m).
        let light = run_batch(&spec(2.0, Overshoot::Drop), 4, 0, 20, &setup, &tests, m);
        assert!(light.tests.iter().all(|t| t.schedulable == 20), "{light:?}");
        let over = run_batch(&spec(12.5, Overshoot::Keep), 4, 0, 10, &setup, &tests, m);
        assert!(over.tests.iter().all(|t| t.schedulable == 0), "{over:?}");
        // Half-loaded platform, i = 1: every set settles and passes (the
        // C-EDF fixed point once waited for exact equality of the bounds
        // and gave up on about 10 % of such sets).
        let half = Spec {
            utilizations: Utilizations::Uniform {
                lo: 0.5,
                hi: 0.9,
                total: Some(5.0),
                n: None,
                overshoot: Overshoot::Trim,
            },
            gpu: spec(5.0, Overshoot::Trim)
                .gpu
                .map(|g| Gpu { eta: [1, 1], ..g }),
            ..spec(5.0, Overshoot::Trim)
        };
        let mid = run_batch(&half, 77, 0, 40, &setup, &tests[1..2], m);
        assert_eq!(mid.tests[0].schedulable, 40, "{mid:?}");
        assert_eq!(mid.tests[0].accepted, vec![true; 40]);
        assert_eq!(over.tests[0].accepted, vec![false; 10]);
        // Effective utilization at R = 16 exceeds the CPU utilization:
        // each GPU-using task adds 15 · 0.75 · U_i.
        assert!(light.effective_utilization_sum > 2.0 * light.utilization_sum);
        assert!(setup.validate().is_ok());
        let bad = Setup {
            clusters: 5,
            ..setup.clone()
        };
        assert!(bad
            .validate()
            .expect_err("5 does not divide 12")
            .contains("clusters"));
    }
}
