//! `gpu_acceptance`: issue 20's study. Acceptance ratio of random GPU
//! workloads against the total GPU load, under the suspension-aware
//! analysis (`Method::Aware`, the default of `rtgpu analyze`) and the seeds'
//! suspension-oblivious one (`Method::Oblivious`), with the simulator's
//! "no deadline miss observed" ratio beside them; and a soundness count:
//! no simulated response time may exceed a bound the analysis printed.
//!
//! ```text
//! cargo run --release -p rtgpu-bench --bin gpu_acceptance -- \
//!     [--sets 200] [--seed 20] [--duration 2000] [--jobs 1] \
//!     [--cpu-load 0.3] [--tasks-per-core 1.25] [--periods 10,20,25,50,100] \
//!     [--sporadic-runs 2] [--loads 10,20,...,90] [--schedulers cfp,gfp,pfp] \
//!     [--out studies/results/gpu-acceptance.csv]
//! cargo run --release -p rtgpu-bench --bin gpu_acceptance -- --dump 50,7,cfp > w.toml
//! ```
//!
//! `--dump LOAD,INDEX,SCHED` prints workload INDEX of that point (with the
//! same `--seed`, `--cpu-load`, `--tasks-per-core` and `--periods`) as a
//! workload file for `rtgpu analyze`
//! and `rtgpu simulate`, and stops.
//!
//! The generator (docs/experiments.md, "Suspension-aware vs
//! suspension-oblivious GPU analysis"): a fixed platform of two clusters
//! (4 cores with 1 GPU, 8 cores with 2 GPUs, one copy engine per GPU, each
//! GPU on its own PCIe link at the model's default 6 GB/s), 1.25 tasks per
//! core in each cluster (5 and 10), periods drawn uniformly from
//! {10, 20, 25, 50, 100} ms, implicit deadlines; per cluster the CPU utilizations (UUniFast-Discard, cap 0.4)
//! sum to `--cpu-load` × cores; 50-60 % of each cluster's tasks use a GPU
//! (seed 000 §VII), and their GPU utilizations (UUniFast-Discard, cap 0.5)
//! sum to the target GPU load × the cluster's GPUs. A GPU job's time is
//! 20 % copies (seed 000 §V; in and out in a drawn split, sized at the
//! copy bandwidth) and 80 % kernels (1-3, a drawn split); no CPU work
//! inside the GPU section, no state to migrate, one interrupt per GPU
//! operation. Policy: GPUSync with affinity, ρ = 1, engine locks, DGLs,
//! klmirqd (dependent), seed 000 Table III overheads, DM priorities,
//! worst fit by decreasing utilization under P-FP (seed 000 §V partitions
//! by worst fit).
//!
//! Each workload is analysed both ways and simulated 1 + `--sporadic-runs`
//! times: once synchronous and strictly periodic, then sporadic (gaps from T
//! to 1.5 T, which shift the phasings); every job at its WCET, overheads
//! injected, `--duration` ms of releases, drained. "No miss observed" means
//! in none of the runs: an optimistic reference (a run need not hit the
//! worst phasing), not a feasibility test. Checked: every per-task bound of the
//! aware analysis (in rejected workloads too) against the simulated worst
//! response over the runs, and the oblivious one's where it plans what is
//! simulated (the simulator runs the aware analysis' placement);
//! every accepted workload against simulated misses and against a
//! necessary condition (`shown_infeasible`: a GPU user of a one-GPU pool
//! that cannot meet its deadline behind every other user's GPU
//! section, which sporadic releases can arrange); the share of workloads
//! that condition does not rule out is written too (`not-shown-infeasible`),
//! and of those that neither miss in simulation nor are ruled out
//! (`upper-reference`: no sound analysis of what the simulator runs can
//! accept more). Any violation is
//! printed and the program exits with status 1.
//!
//! The same workloads (seeded by `--seed`, load and index through
//! `generate::set_seed`) are used for every scheduler.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use rtgpu_analysis::generate::{set_seed, uunifast_discard, Rng};
use rtgpu_analysis::gpu::Method;
use rtgpu_analysis::workload::{analyze_with, Extra, Plan, Report, TaskVerdict, Verdict};
use rtgpu_model::*;
use rtgpu_sim::{simulate, Klmirqd, Releases, SimConfig, SimResult};

/// Task periods (ms, `--periods`): 100, 50, 40, 20 and 10 Hz.
const PERIODS_MS: [u64; 5] = [10, 20, 25, 50, 100];
/// (cores, GPUs) of each cluster.
const CLUSTERS: [(u32, usize); 2] = [(4, 1), (8, 2)];
/// Tasks per core of a cluster (`--tasks-per-core`): with the GPU share
/// below, about 2.5-3 GPU-using tasks per GPU, as in seed 004 §5 (20
/// streams on 8 GPUs).
const TASKS_PER_CORE: f64 = 1.25;
/// Share of a cluster's tasks that use a GPU, drawn per workload (seed 000
/// §VII: "50% to 60% of tasks in each task set are GPU-using").
const GPU_SHARE: [f64; 2] = [0.5, 0.6];
/// Largest CPU and GPU utilization of one task.
const CPU_CAP: f64 = 0.4;
const GPU_CAP: f64 = 0.5;
/// Share of a GPU job's time spent copying (seed 000 §V: "Of the critical
/// section length, 20% was allocated to transmitting data").
const COPY_SHARE: f64 = 0.2;
/// Shortest CPU time of a job (ns).
const MIN_WCET: u64 = 50_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sched {
    Cfp,
    Gfp,
    Pfp,
}

impl Sched {
    fn name(self) -> &'static str {
        match self {
            Sched::Cfp => "C-FP",
            Sched::Gfp => "G-FP",
            Sched::Pfp => "P-FP",
        }
    }
    fn cpu(self) -> CpuScheduler {
        match self {
            Sched::Cfp => CpuScheduler::ClusteredFp,
            Sched::Gfp => CpuScheduler::GlobalFp,
            Sched::Pfp => CpuScheduler::PartitionedFp,
        }
    }
    fn parse(s: &str) -> Option<Sched> {
        match s.to_ascii_lowercase().replace('-', "").as_str() {
            "cfp" => Some(Sched::Cfp),
            "gfp" => Some(Sched::Gfp),
            "pfp" => Some(Sched::Pfp),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
struct Args {
    sets: u64,
    seed: u64,
    duration_ms: u64,
    jobs: usize,
    cpu_load: f64,
    tasks_per_core: f64,
    periods_ms: Vec<u64>,
    sporadic_runs: u64,
    loads: Vec<u32>,
    schedulers: Vec<Sched>,
    out: PathBuf,
    /// `--dump LOAD,INDEX,SCHED`: print that workload as TOML and stop.
    dump: Option<(u32, u64, Sched)>,
}

fn usage() -> ! {
    eprintln!(
        "usage: gpu_acceptance [--sets N] [--seed S] [--duration MS] [--jobs J] \
         [--cpu-load F] [--tasks-per-core F] [--periods 10,20,..] [--sporadic-runs N] [--loads 10,20,..] [--schedulers cfp,gfp,pfp] [--out PATH] \
         [--dump LOAD,INDEX,SCHED]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        sets: 200,
        seed: 20,
        duration_ms: 2_000,
        jobs: 1,
        cpu_load: 0.3,
        tasks_per_core: TASKS_PER_CORE,
        periods_ms: PERIODS_MS.to_vec(),
        sporadic_runs: 2,
        loads: (1..=9).map(|i| i * 10).collect(),
        schedulers: vec![Sched::Cfp, Sched::Gfp, Sched::Pfp],
        out: PathBuf::from("studies/results/gpu-acceptance.csv"),
        dump: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage());
        let bad = |what: &str, v: &str| -> ! {
            eprintln!("gpu_acceptance: bad {what}: {v}");
            usage()
        };
        match flag.as_str() {
            "--sets" => {
                let v = value();
                a.sets = v.parse().unwrap_or_else(|_| bad("--sets", &v));
            }
            "--seed" => {
                let v = value();
                a.seed = v.parse().unwrap_or_else(|_| bad("--seed", &v));
            }
            "--duration" => {
                let v = value();
                a.duration_ms = v.parse().unwrap_or_else(|_| bad("--duration", &v));
            }
            "--jobs" => {
                let v = value();
                a.jobs = v
                    .parse()
                    .ok()
                    .filter(|&j| j > 0)
                    .unwrap_or_else(|| bad("--jobs", &v));
            }
            "--cpu-load" => {
                let v = value();
                a.cpu_load = v
                    .parse()
                    .ok()
                    .filter(|&f: &f64| f > 0.0 && f < 1.0)
                    .unwrap_or_else(|| bad("--cpu-load", &v));
            }
            "--periods" => {
                let v = value();
                a.periods_ms = v
                    .split(',')
                    .map(|s| s.trim().parse().ok().filter(|&p: &u64| p > 0))
                    .collect::<Option<Vec<u64>>>()
                    .unwrap_or_else(|| bad("--periods", &v));
            }
            "--sporadic-runs" => {
                let v = value();
                a.sporadic_runs = v.parse().unwrap_or_else(|_| bad("--sporadic-runs", &v));
            }
            "--tasks-per-core" => {
                let v = value();
                a.tasks_per_core = v
                    .parse()
                    .ok()
                    .filter(|&f: &f64| f > 0.0 && f <= 16.0)
                    .unwrap_or_else(|| bad("--tasks-per-core", &v));
            }
            "--loads" => {
                let v = value();
                a.loads = v
                    .split(',')
                    .map(|s| s.trim().parse().ok().filter(|&l: &u32| l > 0 && l < 100))
                    .collect::<Option<Vec<u32>>>()
                    .unwrap_or_else(|| bad("--loads", &v));
            }
            "--schedulers" => {
                let v = value();
                a.schedulers = v
                    .split(',')
                    .map(|s| Sched::parse(s.trim()))
                    .collect::<Option<Vec<Sched>>>()
                    .unwrap_or_else(|| bad("--schedulers", &v));
            }
            "--out" => a.out = PathBuf::from(value()),
            "--dump" => {
                let v = value();
                let parts: Vec<&str> = v.split(',').map(str::trim).collect();
                a.dump = match parts[..] {
                    [l, k, s] => l
                        .parse()
                        .ok()
                        .zip(k.parse().ok())
                        .zip(Sched::parse(s))
                        .map(|((l, k), s)| (l, k, s)),
                    _ => None,
                };
                if a.dump.is_none() {
                    bad("--dump (LOAD,INDEX,SCHED)", &v);
                }
            }
            "-h" | "--help" => usage(),
            _ => bad("option", &flag),
        }
    }
    a
}

/// Workload `index` of GPU load `load` (per cent of each GPU) under `sched`.
/// The tasks depend on (`seed`, `load`, `index`) only.
fn workload(a: &Args, load: u32, index: u64, sched: Sched) -> Workload {
    let (seed, cpu_load) = (a.seed, a.cpu_load);
    let mut rng = Rng::new(set_seed(seed.wrapping_mul(1_000) + u64::from(load), index));
    let bw = Bandwidth::default();
    let (mut clusters, mut gpus, mut tasks) = (Vec::new(), Vec::new(), Vec::new());
    let mut first_core = 0;
    for (c, &(cores, ngpus)) in CLUSTERS.iter().enumerate() {
        let ids: Vec<usize> = (gpus.len()..gpus.len() + ngpus).collect();
        for _ in 0..ngpus {
            gpus.push(Gpu {
                name: format!("gpu{}", gpus.len()),
                cluster: c,
                copy_engines: 1,
                attach: None,
            });
        }
        clusters.push(Cluster {
            name: format!("node{c}"),
            cores,
            first_core,
            gpus: ids,
        });
        first_core += cores;
        let n = ((a.tasks_per_core * f64::from(cores)).round() as usize).max(1);
        let cpu_total = cpu_load * f64::from(cores);
        let cpu_u = uunifast_discard(&mut rng, n, cpu_total, CPU_CAP, 100_000)
            .unwrap_or_else(|| vec![cpu_total / n as f64; n]);
        let share = GPU_SHARE[0] + (GPU_SHARE[1] - GPU_SHARE[0]) * rng.next_f64();
        let users = ((share * n as f64).round() as usize).clamp(1, n);
        let gpu_total = f64::from(load) / 100.0 * ngpus as f64;
        let gpu_u = uunifast_discard(&mut rng, users, gpu_total, GPU_CAP, 100_000)
            .unwrap_or_else(|| vec![gpu_total / users as f64; users]);
        // Which tasks use a GPU: a partial Fisher-Yates shuffle.
        let mut idx: Vec<usize> = (0..n).collect();
        for i in 0..users {
            let j = rng.range(i as u64, (n - 1) as u64) as usize;
            idx.swap(i, j);
        }
        let mut gpu_of = vec![None; n];
        for (k, &i) in idx[..users].iter().enumerate() {
            gpu_of[i] = Some(gpu_u[k]);
        }
        for i in 0..n {
            let period =
                a.periods_ms[rng.range(0, a.periods_ms.len() as u64 - 1) as usize] * 1_000_000;
            let wcet = ((cpu_u[i] * period as f64).round() as u64).max(MIN_WCET);
            let gpu = gpu_of[i].map(|u| gpu_part(&mut rng, u * period as f64, &bw));
            tasks.push(Task {
                name: format!("{}{}-{i}", if gpu.is_some() { "g" } else { "c" }, c),
                wcet,
                period,
                deadline: period,
                jitter: 0,
                blocking: 0,
                cluster: Some(c),
                gpu,
                reservation: false,
                location: Location::default(),
            });
        }
    }
    Workload {
        name: format!("gpu-acceptance-{load}-{index}"),
        platform: Platform {
            clusters,
            gpus,
            pcie: Vec::new(),
            bandwidth: bw,
        },
        overheads: Overheads::default(),
        policy: Policy {
            cpu_scheduler: sched.cpu(),
            partitioning: Partitioning::Fit {
                rule: FitRule::Worst,
                order: SortOrder::DecreasingUtilization,
            },
            priority: PriorityAssignment::DeadlineMonotonic,
            gpu_allocator: GpuAllocator::GpuSync { affinity: true },
            tokens_per_gpu: 1,
            engine_locks: true,
            peer_locking: PeerLocking::Dgl,
            engine_handoff: EngineHandoff::Completion,
            chunk_size: None,
            interrupts: InterruptHandling::Klmirqd,
            ..Policy::default()
        },
        vgpus: Vec::new(),
        tasks,
    }
}

/// A GPU section of `time` ns in all: 20 % copies (split in/out at a drawn
/// fraction, sized in bytes at the host-device bandwidth), 80 % kernels (1-3,
/// split at drawn weights).
fn gpu_part(rng: &mut Rng, time: f64, bw: &Bandwidth) -> GpuPart {
    let copy = time * COPY_SHARE;
    let into = 0.25 + 0.5 * rng.next_f64();
    let bytes = |ns: f64, rate: u64| (ns * rate as f64 / 1e9).round() as u64;
    let copy_in = bytes(copy * into, bw.host_to_device);
    let copy_out = bytes(copy * (1.0 - into), bw.device_to_host);
    let nk = rng.range(1, 3) as usize;
    let weights: Vec<f64> = (0..nk).map(|_| 0.5 + rng.next_f64()).collect();
    let sum: f64 = weights.iter().sum();
    let kernels: Vec<u64> = weights
        .iter()
        .map(|w| ((time - copy) * w / sum).round().max(1_000.0) as u64)
        .collect();
    let mut g = GpuPart {
        copy_in,
        kernels,
        copy_out,
        state: 0,
        cpu: 0,
        interrupts: 1,
        vgpu: None,
        device: None,
    };
    g.interrupts = g.operations(None).max(1);
    g
}

/// A job's time on the GPU: its kernels and its copies at full bandwidth
/// (no overheads).
fn gpu_time(w: &Workload, g: &GpuPart) -> u64 {
    let bw = &w.platform.bandwidth;
    let copy = |bytes: u64, rate: u64| {
        (u128::from(bytes) * 1_000_000_000 / u128::from(rate.max(1))) as u64
    };
    g.kernels.iter().sum::<u64>()
        + copy(g.copy_in, bw.host_to_device)
        + copy(g.copy_out, bw.device_to_host)
}

/// Whether `w` is shown infeasible under its policy whatever the analysis:
/// in a GPU pool (`Workload::gpu_pools`: a cluster's GPUs, or every GPU
/// under a global scheduler) of one GPU, one token (ρ = 1) and no more GPU
/// users than its cores (so the token queue is plain FIFO under GPUSync's
/// R²DGLP, whose FIFO queues hold ⌈m/k⌉ ≥ the users), the other users of
/// the GPU may all request it just before a job of task i does (sporadic
/// releases allow it), and that job then waits for every one of their GPU
/// sections before its own. A job runs its CPU work, its wait and its own
/// GPU section one after the other, so if C_i + Σ_j G_j (all users, i
/// included) > D_i, some legal release pattern makes task i miss: no sound
/// analysis can accept `w`. G_j is the kernels and copies alone (no
/// interrupt or other overheads), so the test is weaker than the truth.
fn shown_infeasible(w: &Workload) -> bool {
    if w.policy.tokens() != 1 {
        return false;
    }
    w.gpu_pools().iter().enumerate().any(|(pool, p)| {
        if p.gpus.len() != 1 {
            return false;
        }
        let users: Vec<&Task> = w
            .tasks
            .iter()
            .filter(|t| t.uses_gpu() && t.cluster.map(|c| w.gpu_pool_of(c)) == Some(pool))
            .collect();
        if users.len() > p.cores as usize {
            return false;
        }
        let all: u64 = users
            .iter()
            .filter_map(|t| t.gpu.as_ref().map(|g| gpu_time(w, g)))
            .sum();
        users.iter().any(|t| t.wcet + all > t.deadline)
    })
}

/// Σ GPU time / period over GPU `gpu`'s cluster, per GPU (the load the
/// generator aimed at).
fn gpu_load(w: &Workload) -> f64 {
    let per_cluster: Vec<f64> = w
        .platform
        .clusters
        .iter()
        .enumerate()
        .map(|(c, cl)| {
            let u: f64 = w
                .tasks
                .iter()
                .filter(|t| t.cluster == Some(c))
                .filter_map(|t| {
                    let g = t.gpu.as_ref()?;
                    Some(gpu_time(w, g) as f64 / t.period as f64)
                })
                .sum();
            u / cl.gpus.len().max(1) as f64
        })
        .collect();
    per_cluster.iter().sum::<f64>() / per_cluster.len() as f64
}

/// Run `run` of a workload: run 0 synchronous and strictly periodic, the
/// others sporadic (each gap T plus up to 50 % of T, which shifts the
/// phasings); every job at its WCET, overheads injected, drained.
fn sim_config(seed: u64, run: u64, duration_ms: u64) -> SimConfig {
    SimConfig {
        duration: duration_ms * 1_000_000,
        seed: seed.wrapping_add(run),
        releases: if run == 0 {
            Releases::Periodic
        } else {
            Releases::Sporadic {
                max_extra_ppm: 500_000,
            }
        },
        jitter: false,
        bcet_ppm: 1_000_000,
        overheads: true,
        drain: true,
        buckets: 1,
        klmirqd: Klmirqd::Dependent,
        ..SimConfig::default()
    }
}

/// Whether the simulator runs `report`'s placement: it falls back to the
/// placement of the workload's CPU view when the analysis leaves a task
/// unplaced (under P-FP only a GPU-using one), as rtgpu_sim's setup does.
fn simulated_as_planned(w: &Workload, report: &Report, plan: &Plan) -> bool {
    let pfp = w.policy.cpu_scheduler == CpuScheduler::PartitionedFp;
    !report.tasks.iter().enumerate().any(|(i, t)| {
        let unplaced = t.verdict == TaskVerdict::Unplaced
            || t.verdict == TaskVerdict::NotAnalysed
            || (pfp && plan.tasks.get(i).is_none_or(|p| p.pieces.is_empty()));
        !w.tasks[i].reservation && unplaced && (!pfp || w.tasks[i].uses_gpu())
    })
}

/// The analyses whose acceptances and bounds are counted: the aware one,
/// the oblivious one, and the aware one under the setting `rtgpu analyze`
/// suggests (`workload::suggest`).
const METHODS: [&str; 3] = ["aware", "oblivious", "aware-best-setting"];

/// What one workload gave.
#[derive(Debug, Default, Clone)]
struct Outcome {
    /// Per [`METHODS`] entry: accepted. The third: accepted under the
    /// workload's own GPU setting or under the one `rtgpu analyze`
    /// suggests (the allocator, ρ and, for static assignment, each task's
    /// GPU that guarantee the most); a suggested workload is simulated
    /// too, and its bounds are checked like the others.
    accepted: [bool; 3],
    no_miss: bool,
    /// Not shown infeasible ([`shown_infeasible`]).
    possible: bool,
    gpu_load: f64,
    jobs: u64,
    /// Per method: bounds checked, bounds exceeded (in words), largest
    /// observed / bound of a GPU-using task.
    checked: [u64; 3],
    exceeded: [Vec<String>; 3],
    closest: [f64; 3],
    /// Accepted by the method, yet a deadline missed in simulation (or
    /// shown infeasible).
    accepted_missed: [Option<String>; 3],
}

fn simulate_runs(w: &Workload, sim_seed: u64, a: &Args) -> Vec<SimResult> {
    (0..=a.sporadic_runs)
        .map(|run| {
            simulate(w, &sim_config(sim_seed, run, a.duration_ms))
                .unwrap_or_else(|e| panic!("{}: {e}", w.name))
        })
        .collect()
}

fn extra_with(method: Method) -> Extra {
    Extra {
        method,
        ..Default::default()
    }
}

fn run_one(w: &Workload, sim_seed: u64, a: &Args) -> Outcome {
    let aware = analyze_with(w, &extra_with(Method::Aware));
    let oblivious = analyze_with(w, &extra_with(Method::Oblivious));
    let runs = simulate_runs(w, sim_seed, a);
    let mut o = Outcome {
        no_miss: no_miss(&runs),
        possible: !shown_infeasible(w),
        gpu_load: gpu_load(w),
        jobs: runs.iter().map(|r| r.jobs).sum(),
        ..Outcome::default()
    };
    // The simulator runs the aware analysis' plan (its default method);
    // the oblivious bounds are checked where their plan is the same one.
    let as_planned = simulated_as_planned(w, &aware.0, &aware.1);
    let possible = o.possible;
    check(&mut o, 0, w, &aware.0, &runs, as_planned, possible);
    let same_plan = as_planned && oblivious.1 == aware.1;
    check(&mut o, 1, w, &oblivious.0, &runs, same_plan, possible);
    o.accepted[2] = o.accepted[0];
    if !o.accepted[0] {
        let suggested = rtgpu_analysis::workload::suggest(w, &extra_with(Method::Aware), &aware.0);
        if let Some(s) = suggested.filter(|s| s.schedulable) {
            let sw = &s.apply(w);
            let (report, plan) = analyze_with(sw, &extra_with(Method::Aware));
            let sruns = simulate_runs(sw, sim_seed, a);
            o.jobs += sruns.iter().map(|r| r.jobs).sum::<u64>();
            let as_planned = simulated_as_planned(sw, &report, &plan);
            // The necessary condition is FIFO's: priority-ordered queues
            // break it.
            let possible = sw.policy.gpu_allocator == rtgpu_model::GpuAllocator::StaticPriority
                || !shown_infeasible(sw);
            check(&mut o, 2, sw, &report, &sruns, as_planned, possible);
        }
    }
    o
}

fn no_miss(runs: &[SimResult]) -> bool {
    runs.iter()
        .all(|r| r.misses == 0 && r.tasks.iter().all(|t| t.unfinished == 0))
}

/// Method `m`'s verdict on `w` (`report`) against the simulated `runs`:
/// whether it accepted, whether an accepted workload missed (or is not
/// `possible`), and, where the runs ran `report`'s plan (`as_planned`),
/// every per-task bound against the worst observed response.
fn check(
    o: &mut Outcome,
    m: usize,
    w: &Workload,
    report: &Report,
    runs: &[SimResult],
    as_planned: bool,
    possible: bool,
) {
    let accepted = report.verdict == Verdict::Schedulable;
    o.accepted[m] = accepted;
    let misses: u64 = runs.iter().map(|r| r.misses).sum();
    if accepted && !possible {
        o.accepted_missed[m] = Some(format!(
            "{} ({}, {}): accepted, but shown infeasible (a GPU user of a one-GPU pool \
             misses behind every other user's GPU section)",
            w.name, report.scheduler, METHODS[m],
        ));
    } else if accepted && !no_miss(runs) {
        o.accepted_missed[m] = Some(format!(
            "{} ({}, {}): accepted, {misses} deadline miss(es) in simulation",
            w.name, report.scheduler, METHODS[m],
        ));
    }
    if !as_planned {
        return;
    }
    for (i, (t, tr)) in w.tasks.iter().zip(&report.tasks).enumerate() {
        let Some(bound) = tr.response_time else {
            continue;
        };
        // A conditional bound ("meets deadline if" the failing tasks it
        // names meet theirs) is checked in the runs where they did.
        let kept = |r: &&SimResult| {
            tr.depends_on.iter().all(|d| {
                r.tasks
                    .iter()
                    .find(|x| &x.name == d)
                    .is_none_or(|x| x.misses == 0 && x.unfinished == 0)
            })
        };
        let observed = runs
            .iter()
            .filter(kept)
            .map(|r| r.tasks[i].max_response)
            .max()
            .unwrap_or(0);
        o.checked[m] += 1;
        if t.uses_gpu() && bound > 0 {
            o.closest[m] = o.closest[m].max(observed as f64 / bound as f64);
        }
        if observed > bound {
            o.exceeded[m].push(format!(
                "{} ({}, {}): task {} observed {observed} ns > bound {bound} ns",
                w.name, report.scheduler, METHODS[m], t.name,
            ));
        }
    }
}

/// Sums of one (load, scheduler) point.
#[derive(Debug, Default, Clone)]
struct Point {
    sets: u64,
    /// Per [`METHODS`] entry.
    accepted: [u64; 3],
    no_miss: u64,
    possible: u64,
    /// No miss observed and not shown infeasible.
    plausible: u64,
    gpu_load: f64,
    jobs: u64,
    checked: [u64; 3],
    exceeded: [Vec<String>; 3],
    closest: [f64; 3],
    accepted_missed: [Vec<String>; 3],
}

impl Point {
    fn add(&mut self, o: Outcome) {
        self.sets += 1;
        self.no_miss += u64::from(o.no_miss);
        self.possible += u64::from(o.possible);
        self.plausible += u64::from(o.possible && o.no_miss);
        self.gpu_load += o.gpu_load;
        self.jobs += o.jobs;
        for m in 0..3 {
            self.accepted[m] += u64::from(o.accepted[m]);
            self.checked[m] += o.checked[m];
            self.exceeded[m].extend(o.exceeded[m].iter().cloned());
            self.closest[m] = self.closest[m].max(o.closest[m]);
            self.accepted_missed[m].extend(o.accepted_missed[m].iter().cloned());
        }
    }
}

fn run_point(a: &Args, load: u32, sched: Sched) -> Point {
    let run = |k: u64| {
        let w = workload(a, load, k, sched);
        run_one(&w, set_seed(a.seed, k), a)
    };
    let outcomes: Vec<Outcome> = if a.jobs <= 1 {
        (0..a.sets).map(run).collect()
    } else {
        let mut parts: Vec<Vec<(u64, Outcome)>> = Vec::new();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..a.jobs as u64)
                .map(|j| {
                    let run = &run;
                    let (sets, jobs) = (a.sets, a.jobs as u64);
                    s.spawn(move || {
                        (j..sets)
                            .step_by(jobs as usize)
                            .map(|k| (k, run(k)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            parts = handles.into_iter().map(|h| h.join().unwrap()).collect();
        });
        let mut all: Vec<(u64, Outcome)> = parts.into_iter().flatten().collect();
        all.sort_by_key(|p| p.0);
        all.into_iter().map(|p| p.1).collect()
    };
    let mut p = Point::default();
    for o in outcomes {
        p.add(o);
    }
    p
}

fn main() {
    let a = parse_args();
    if let Some((load, k, sched)) = a.dump {
        print!("{}", rtgpu_model::to_toml(&workload(&a, load, k, sched)));
        return;
    }
    let start = Instant::now();
    let mut csv = String::from(
        "load,scheduler,method,sets,accepted,ratio,accepted_missed,bounds_checked,\
         bounds_exceeded,closest,mean_gpu_load\n",
    );
    let (mut violations, mut missed): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let (mut aware_accepted, mut total_sets, mut total_jobs) = (0u64, 0u64, 0u64);
    let mut total_checked = [0u64; 3];
    let mut closest = [0.0f64; 3];
    eprintln!(
        "gpu_acceptance: {} sets per point, seed {}, CPU load {} of the cores, {} tasks per core, \
         periods {:?} ms, {} ms simulated 1 + {} time(s) (synchronous + sporadic), {} worker(s)",
        a.sets,
        a.seed,
        a.cpu_load,
        a.tasks_per_core,
        a.periods_ms,
        a.duration_ms,
        a.sporadic_runs,
        a.jobs
    );
    for &load in &a.loads {
        for &sched in &a.schedulers {
            let t0 = Instant::now();
            let p = run_point(&a, load, sched);
            let n = p.sets.max(1) as f64;
            let mean_load = p.gpu_load / n;
            let [aw, ob, best] = p.accepted;
            eprintln!(
                "load {load:>2}% {:<4}: aware {aw:>4}/{} ({:.3}), oblivious {ob:>4} ({:.3}), best \
                 setting {best:>4} ({:.3}), sim no miss {:>4} ({:.3}), not shown infeasible {:>4} \
                 ({:.3}), both {:>4} ({:.3}); bounds checked {}+{}+{}, exceeded {}+{}+{}, \
                 accepted-but-missed {}+{}+{}; mean GPU load {:.3}; {} jobs; {:.1} s",
                sched.name(),
                p.sets,
                aw as f64 / n,
                ob as f64 / n,
                best as f64 / n,
                p.no_miss,
                p.no_miss as f64 / n,
                p.possible,
                p.possible as f64 / n,
                p.plausible,
                p.plausible as f64 / n,
                p.checked[0],
                p.checked[1],
                p.checked[2],
                p.exceeded[0].len(),
                p.exceeded[1].len(),
                p.exceeded[2].len(),
                p.accepted_missed[0].len(),
                p.accepted_missed[1].len(),
                p.accepted_missed[2].len(),
                mean_load,
                p.jobs,
                t0.elapsed().as_secs_f64()
            );
            for (m, method) in METHODS.into_iter().enumerate() {
                let acc = p.accepted[m];
                let _ = writeln!(
                    csv,
                    "{:.2},{},{method},{},{acc},{:.4},{},{},{},{:.4},{mean_load:.4}",
                    f64::from(load) / 100.0,
                    sched.name(),
                    p.sets,
                    acc as f64 / n,
                    p.accepted_missed[m].len(),
                    p.checked[m],
                    p.exceeded[m].len(),
                    p.closest[m],
                );
            }
            // The reference rows: a count of workloads, no bounds.
            for (row, count) in [
                ("sim-no-miss", p.no_miss),
                ("not-shown-infeasible", p.possible),
                ("upper-reference", p.plausible),
            ] {
                let _ = writeln!(
                    csv,
                    "{:.2},{},{row},{},{count},{:.4},,,,,{mean_load:.4}",
                    f64::from(load) / 100.0,
                    sched.name(),
                    p.sets,
                    count as f64 / n,
                );
            }
            aware_accepted += best;
            total_sets += p.sets;
            total_jobs += p.jobs;
            for m in 0..3 {
                total_checked[m] += p.checked[m];
                closest[m] = closest[m].max(p.closest[m]);
                violations.extend(p.exceeded[m].iter().cloned());
                missed.extend(p.accepted_missed[m].iter().cloned());
            }
        }
    }
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("gpu_acceptance: cannot create {}: {e}", dir.display());
            std::process::exit(2);
        }
    }
    if let Err(e) = std::fs::write(&a.out, csv) {
        eprintln!("gpu_acceptance: cannot write {}: {e}", a.out.display());
        std::process::exit(2);
    }
    eprintln!(
        "gpu_acceptance: {total_sets} workload runs ({total_jobs} jobs simulated), {aware_accepted} \
         accepted by the aware analysis (own or suggested setting) and simulated; bounds checked: \
         {} aware, {} oblivious, {} suggested setting; closest GPU task at {:.3} (aware) / {:.3} \
         (oblivious) / {:.3} (suggested) of its bound; {} bound(s) \
         exceeded, {} accepted workload(s) that missed in simulation or are shown infeasible; \
         {:.1} s; CSV: {}",
        total_checked[0],
        total_checked[1],
        total_checked[2],
        closest[0],
        closest[1],
        closest[2],
        violations.len(),
        missed.len(),
        start.elapsed().as_secs_f64(),
        a.out.display()
    );
    if !violations.is_empty() || !missed.is_empty() {
        for v in violations.iter().chain(&missed) {
            eprintln!("VIOLATION: {v}");
        }
        std::process::exit(1);
    }
}
