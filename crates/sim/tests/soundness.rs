//! Analysis and simulation check each other (DESIGN.md §3.4): for random
//! workloads where `rtgpu analyze` claims a bound, no simulated response
//! time may exceed it.
//!
//! Covered bounds: P-FP exact RTA with first/worst fit and PDMS_HPTS /
//! PDMS_HPTS_DS split pieces at fixed offsets (seed 003), C-FP / G-FP
//! response-time bounds, C-EDF / G-EDF tardiness bounds. Releases are
//! synchronous periodic (the critical instant) or sporadic with jitter and
//! varying execution times.
//!
//! The suite runs `RTGPU_SOUNDNESS_N` workloads (default 10,000, split
//! evenly over the schedulers). The long run (docs/simulator.md):
//!
//! ```text
//! RTGPU_SOUNDNESS_N=1000000 cargo test --release -p rtgpu-sim --test soundness
//! ```

use rtgpu_analysis::generate::Rng;
use rtgpu_analysis::workload::{analyze, TaskVerdict, Verdict};
use rtgpu_model::*;
use rtgpu_sim::{simulate, Releases, SimConfig};

/// Periods (µs) with a small hyperperiod (200 ms) so a run covers it.
const PERIODS_US: [u64; 7] = [2_000, 4_000, 5_000, 10_000, 20_000, 25_000, 40_000];

fn platform(clusters: &[u32]) -> Platform {
    let mut first = 0;
    Platform {
        clusters: clusters
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let cl = Cluster {
                    name: format!("c{i}"),
                    cores: c,
                    first_core: first,
                    gpus: Vec::new(),
                };
                first += c;
                cl
            })
            .collect(),
        gpus: Vec::new(),
        pcie: Vec::new(),
        bandwidth: Bandwidth::default(),
    }
}

fn random_workload(rng: &mut Rng, sched: CpuScheduler, k: u64) -> Workload {
    let clusters: Vec<u32> = match sched {
        CpuScheduler::ClusteredFp | CpuScheduler::ClusteredEdf => (0..rng.range(1, 2))
            .map(|_| rng.range(1, 2) as u32)
            .collect(),
        _ => vec![rng.range(1, 3) as u32],
    };
    let cores: u32 = clusters.iter().sum();
    let n = rng.range(2, 2 + 2 * cores as u64) as usize;
    let target = cores as f64 * (0.4 + 0.55 * rng.next_f64());
    let utils = rtgpu_analysis::generate::uunifast(rng, n, target);
    let jitter = k.is_multiple_of(3);
    let tasks = utils
        .iter()
        .enumerate()
        .map(|(i, &u)| {
            let period = PERIODS_US[rng.range(0, PERIODS_US.len() as u64 - 1) as usize] * 1_000;
            let wcet = ((u.min(0.95) * period as f64) as u64).clamp(1_000, period);
            // Constrained deadlines sometimes (FP only; EDF bounds are for
            // implicit deadlines).
            let deadline = if rng.range(0, 3) == 0
                && !matches!(sched, CpuScheduler::ClusteredEdf | CpuScheduler::GlobalEdf)
            {
                rng.range(wcet, period)
            } else {
                period
            };
            Task {
                name: format!("t{i}"),
                wcet,
                period,
                deadline,
                jitter: if jitter
                    && !matches!(sched, CpuScheduler::ClusteredEdf | CpuScheduler::GlobalEdf)
                {
                    rng.range(0, (deadline - wcet) / 4)
                } else {
                    0
                },
                blocking: 0,
                cluster: None,
                gpu: None,
                reservation: false,
                location: Location::default(),
            }
        })
        .collect();
    let partitioning = match rng.range(0, 3) {
        0 => Partitioning::PdmsHptsDs,
        1 => Partitioning::PdmsHpts {
            order: SortOrder::DecreasingUtilization,
        },
        2 => Partitioning::Fit {
            rule: FitRule::First,
            order: SortOrder::DecreasingUtilization,
        },
        _ => Partitioning::Fit {
            rule: FitRule::Worst,
            order: SortOrder::DecreasingSize,
        },
    };
    Workload {
        name: format!("random-{k}"),
        platform: platform(&clusters),
        overheads: Overheads::zero(),
        policy: Policy {
            cpu_scheduler: sched,
            partitioning,
            priority: if rng.range(0, 1) == 0 {
                PriorityAssignment::DeadlineMonotonic
            } else {
                PriorityAssignment::RateMonotonic
            },
            ..Policy::default()
        },
        vgpus: Vec::new(),
        tasks,
    }
}

/// The run of workload `k`: its 200 ms hyperperiod, drained; odd `k`
/// sporadic (gaps up to 1.3 T) with execution times down to half the
/// WCET, even `k` synchronous periodic at the WCET; jitter drawn.
fn sim_config(k: u64, seed: u64) -> SimConfig {
    let sporadic = k % 2 == 1;
    SimConfig {
        duration: 200_000_000,
        seed,
        releases: if sporadic {
            Releases::Sporadic {
                max_extra_ppm: 300_000,
            }
        } else {
            Releases::Periodic
        },
        jitter: true,
        bcet_ppm: if sporadic { 500_000 } else { 1_000_000 },
        overheads: false,
        drain: true,
        buckets: 1,
        ..SimConfig::default()
    }
}

fn count() -> u64 {
    std::env::var("RTGPU_SOUNDNESS_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// Runs `n` random workloads under `sched`; returns (analysed with a
/// bound, simulated jobs, tasks whose observed worst case equals the bound).
fn check(sched: CpuScheduler, n: u64, seed: u64) -> (u64, u64, u64) {
    let mut rng = Rng::new(seed);
    let (mut bounded, mut jobs, mut tight) = (0, 0, 0);
    for k in 0..n {
        let w = random_workload(&mut rng, sched, k);
        let (report, _) = analyze(&w);
        if report.verdict != Verdict::Schedulable {
            continue;
        }
        bounded += 1;
        let cfg = sim_config(k, seed ^ k);
        let r = simulate(&w, &cfg).unwrap_or_else(|e| panic!("{}: {e}", w.name));
        jobs += r.jobs;
        for (t, tr) in r.tasks.iter().zip(&report.tasks) {
            let Some(bound) = tr.response_time else {
                panic!("{}: schedulable but no bound for {}", w.name, t.name)
            };
            assert!(
                t.max_response <= bound,
                "{} ({:?}, {:?}): task {} observed {} > bound {}\n{:#?}",
                w.name,
                sched,
                w.policy.partitioning,
                t.name,
                t.max_response,
                bound,
                w.tasks
            );
            assert_eq!(t.unfinished, 0, "{}: drained run left jobs", w.name);
            tight += (t.max_response == bound) as u64;
            if tr.verdict == TaskVerdict::MeetsDeadline {
                assert_eq!(t.misses, 0, "{}: {} missed a deadline", w.name, t.name);
            }
        }
    }
    (bounded, jobs, tight)
}

fn run(sched: CpuScheduler, seed: u64) {
    let n = count() / 5;
    let (bounded, jobs, tight) = check(sched, n, seed);
    eprintln!(
        "{sched:?}: {n} workloads, {bounded} with a bound, {jobs} jobs simulated, \
         {tight} task(s) reached their bound exactly"
    );
    // The generator must produce enough analysable workloads for the test
    // to mean something.
    assert!(bounded * 4 >= n, "only {bounded} of {n} had a bound");
    // Under P-FP the synchronous release is the critical instant of the
    // exact RTA: many tasks must reach their bound exactly, or the
    // simulator is not exercising the worst case (or the check is vacuous).
    if sched == CpuScheduler::PartitionedFp && n >= 100 {
        assert!(
            tight * 10 >= bounded,
            "only {tight} tight tasks in {bounded} workloads"
        );
    }
}

#[test]
fn partitioned_fp_rta_and_split_pieces_are_sound() {
    run(CpuScheduler::PartitionedFp, 1);
}

#[test]
fn clustered_fp_bounds_are_sound() {
    run(CpuScheduler::ClusteredFp, 2);
}

#[test]
fn global_fp_bounds_are_sound() {
    run(CpuScheduler::GlobalFp, 3);
}

#[test]
fn clustered_edf_tardiness_bounds_are_sound() {
    run(CpuScheduler::ClusteredEdf, 4);
}

#[test]
fn global_edf_tardiness_bounds_are_sound() {
    run(CpuScheduler::GlobalEdf, 5);
}

/// Regression (random-10790 of the long run): a split task's piece released
/// on a core at the very instant the running job there finishes must not
/// preempt it with zero work left (that job then waited a whole extra busy
/// period: 34.9 ms against a 20 ms bound).
#[test]
fn piece_released_as_a_job_finishes_does_not_preempt_it() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/same-instant-piece.toml");
    let w = rtgpu_model::load_workload(&p).expect("parses");
    let (report, _) = analyze(&w);
    assert_eq!(report.verdict, Verdict::Schedulable);
    let r = simulate(
        &w,
        &SimConfig {
            duration: 200_000_000,
            drain: true,
            overheads: false,
            ..SimConfig::default()
        },
    )
    .expect("runs");
    for (t, tr) in r.tasks.iter().zip(&report.tasks) {
        let bound = tr.response_time.expect("bounded");
        assert!(
            t.max_response <= bound,
            "{}: {} > {bound}",
            t.name,
            t.max_response
        );
    }
    assert_eq!(r.tasks[4].max_response, 20_000_000);
}

/// CPU reservations (SCHED_DEADLINE threads above every fixed-priority
/// task, on any core) beside P-FP, C-FP and G-FP: the other tasks' bounds
/// charge each reservation as a server on every core, the reservations'
/// own bound is their deadline when the G-EDF density test passes
/// (`analyze_reservations`); the simulator runs them as constant
/// bandwidth servers (`rtgpu_policy::cbs`). `RTGPU_SOUNDNESS_N / 5`
/// workloads (default 2,000).
#[test]
fn reservations_beside_fixed_priority_are_sound() {
    let n = count() / 5;
    let mut rng = Rng::new(6);
    let (mut bounded, mut reserved_jobs) = (0u64, 0u64);
    for k in 0..n {
        let sched = [
            CpuScheduler::PartitionedFp,
            CpuScheduler::ClusteredFp,
            CpuScheduler::GlobalFp,
        ][(k % 3) as usize];
        let mut w = random_workload(&mut rng, sched, k);
        let cores = w.platform.total_cores() as u64;
        // Up to one more reservation than cores (they then compete among
        // themselves), and a lighter load, as each is charged with its
        // runtime's margin on every core.
        let nres = rng.range(1, cores + 1).min(3) as usize;
        for (i, t) in w.tasks.iter_mut().enumerate() {
            t.reservation = i < nres;
            t.wcet = (t.wcet / 2).max(1_000);
        }
        let (report, _) = analyze(&w);
        if report.verdict != Verdict::Schedulable {
            continue;
        }
        bounded += 1;
        let cfg = sim_config(k, k);
        let r = simulate(&w, &cfg).unwrap_or_else(|e| panic!("{}: {e}", w.name));
        for (i, (t, tr)) in r.tasks.iter().zip(&report.tasks).enumerate() {
            let bound = tr
                .response_time
                .unwrap_or_else(|| panic!("{}: schedulable but no bound for {}", w.name, t.name));
            assert!(
                t.max_response <= bound,
                "{} ({sched:?}, {:?}): task {}{} observed {} > bound {}\n{}",
                w.name,
                w.policy.partitioning,
                t.name,
                if w.tasks[i].reservation {
                    " (reservation)"
                } else {
                    ""
                },
                t.max_response,
                bound,
                rtgpu_model::to_toml(&w)
            );
            assert_eq!(t.unfinished, 0, "{}: drained run left jobs", w.name);
            if w.tasks[i].reservation {
                reserved_jobs += t.jobs;
                assert_eq!(t.misses, 0, "{}: reservation {} missed", w.name, t.name);
            }
        }
    }
    eprintln!(
        "{n} workloads with reservations, {bounded} with a bound, {reserved_jobs} reservation jobs"
    );
    assert!(bounded * 5 >= n, "only {bounded} of {n} had a bound");
    assert!(reserved_jobs > 0);
}
