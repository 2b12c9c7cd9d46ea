//! Overhead-aware accounting of seed 000, Appendix B (Eqs. 6-24), task
//! centric, suspension-oblivious.
//!
//! [`inflate`] turns one task's CPU cost e_i into its inflated cost and the
//! charges that make it up:
//!
//! | charge | CPU-only | GPU-using |
//! |---|---|---|
//! | scheduling + context switches | 2(Δsch+Δcxs) (Eq. 6) | (2+η_i)·2(Δsch+Δcxs) (Eqs. 7-8) |
//! | GPU wait b_i and GPU use s_i | – | b_i + s_i (Eq. 8) |
//! | release + IPI | Δrel+Δipi (Eq. 9) | (2+η_i)(Δrel+Δipi) (Eq. 10) |
//! | other tasks' GPU interrupts | H_i(Δth+Δbh) SLIH (Eq. 12), H_i(Δth+Δkrel) klmirqd (Eq. 14), H_i(Δth+Δpairel) PAI (Eq. 17) | same (Eqs. 13, 15, 18) |
//! | bottom-half scheduling | PAI: 2Δpaisch (Eq. 19) | klmirqd: η_i(2(Δsch+Δcxs)+Δipi) (Eq. 16); PAI: (2+η_i)·2Δpaisch + η_iΔipi (Eqs. 20-21) |
//! | PAI stack blocking | H_iΔbh (Eq. 22) | H_iΔbh (Eq. 23) |
//! | ticks (last) | ⌈w_i/Q⌉Δtck (Eq. 24) | same |
//!
//! s_i is "the total time the GPU spends executing for J_i as well as the
//! execution time for any associated top-halves or bottom-halves" (App. B):
//! the caller's GPU time plus η_i(Δth+Δbh) here ([`Charges::gpu`]).
//!
//! H_i (Eq. 11) is the number of other tasks' GPU interrupts that can hit a
//! job of T_i: Σ_{j≠i} ⌈(w_i + w_j)/p_j⌉·η_j over the tasks of T_i's cluster,
//! where w is a response-time bound (p + x, x the tardiness bound, in the
//! seed). The seed prints the sum index as "i ≠ j" under Σ^n; it is j ≠ i
//! (a job's own interrupts are in s_i).
//!
//! # Fixed point (App. B, "Schedulability")
//! Under C-EDF the windows depend on tardiness, which depends on the
//! inflated costs: [`soft_test`] iterates from x = 0 until every tardiness
//! bound is unchanged (monotone, so it reaches the least fixed point or
//! fails). Under fixed priority (C-RM, C-FP, P-FP) the windows are the
//! deadlines: a task set is declared schedulable only if every response
//! time is ≤ its deadline, so until the first miss every window is ≤ D
//! (the usual first-miss argument), and one pass suffices.
//!
//! # Fixed-priority interrupt threads (our own derivation)
//! The seed evaluates PREEMPT_RT-style threads at one fixed priority (§VI)
//! but gives no accounting. [`InterruptMethod::FixedPriorityThreads`] is
//! charged like klmirqd for the top half and thread scheduling (Eqs. 14-16)
//! plus H_i(Δbh + 2(Δsch + Δcxs)) for every task (Eq. 22's term, and the
//! thread's switch in and out), because a thread above a task may run any
//! bottom half in its way. That is sound only when the thread's priority is
//! above every GPU-using task's (the workload analysis refuses a bound
//! otherwise); below that, a GPU-using job's own bottom half can starve
//! (seed 000 §VI, Table II column (a)).
//!
//! # Effective utilization (§VII)
//! [`effective_utilization`]: each GPU time unit counts as R CPU units.

use serde::Serialize;

use rtgpu_model::Overheads;

use crate::edf;
use crate::global_fp;
use crate::kfmlp;
use crate::task::{Task, Time};

/// How GPU interrupt bottom halves are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterruptMethod {
    /// Standard Linux: top and bottom half back to back, non-preemptive.
    Slih,
    /// klmirqd: bottom halves in threads at the owner's priority.
    Klmirqd,
    /// Process-aware interrupts (Zhang et al.).
    Pai,
    /// Threads at one fixed priority (PREEMPT_RT); own derivation.
    FixedPriorityThreads,
}

impl InterruptMethod {
    /// All methods, for sweeps.
    pub const ALL: [InterruptMethod; 4] = [
        InterruptMethod::Slih,
        InterruptMethod::Klmirqd,
        InterruptMethod::Pai,
        InterruptMethod::FixedPriorityThreads,
    ];

    pub fn name(self) -> &'static str {
        match self {
            InterruptMethod::Slih => "SLIH",
            InterruptMethod::Klmirqd => "klmirqd",
            InterruptMethod::Pai => "PAI",
            InterruptMethod::FixedPriorityThreads => "fixed-priority threads",
        }
    }
}

/// The GPU side of a task, as overhead accounting needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct GpuUse {
    /// b_i: longest wait for a GPU (k-FMLP bound, or GPUSync token
    /// blocking).
    pub blocking: Time,
    /// GPU time of one job without its own interrupt handling: copies,
    /// kernels, and engine blocking where engines are locked separately.
    pub gpu_time: Time,
    /// η_i: GPU uses (= GPU interrupts) per job.
    pub interrupts: u32,
}

/// One task for [`inflate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct OverheadTask {
    /// e_i: CPU execution time.
    pub cpu: Time,
    pub gpu: Option<GpuUse>,
}

/// An inflated cost and its parts (all ns; `total` is their sum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Charges {
    /// e_i.
    pub cpu: Time,
    /// Scheduling decisions and context switches (Eqs. 6-8).
    pub scheduling: Time,
    /// b_i (Eq. 8).
    pub gpu_blocking: Time,
    /// s_i: GPU time plus own η_i(Δth+Δbh) (Eq. 8).
    pub gpu: Time,
    /// Release and IPI latency (Eqs. 9-10).
    pub release: Time,
    /// H_i: other tasks' GPU interrupts that may hit a job (Eq. 11).
    pub interrupt_count: u64,
    /// Non-preemptive interrupt handling of other tasks' interrupts
    /// (Eqs. 12-15, 17-18), plus H_iΔbh under PAI (Eqs. 22-23) and
    /// fixed-priority threads.
    pub interrupts: Time,
    /// Bottom-half scheduling: klmirqd threads (Eq. 16), PAI (Eqs. 19-21).
    pub bottom_half_scheduling: Time,
    /// Ticks (Eq. 24).
    pub ticks: Time,
    pub total: Time,
}

impl Charges {
    /// The name and size of the largest overhead charge (everything but the
    /// task's own CPU and GPU work), for "which overhead dominates".
    pub fn dominant_overhead(&self) -> (&'static str, Time) {
        [
            ("GPU blocking", self.gpu_blocking),
            ("interrupts", self.interrupts),
            ("scheduling", self.scheduling),
            ("release", self.release),
            ("bottom-half scheduling", self.bottom_half_scheduling),
            ("ticks", self.ticks),
        ]
        .into_iter()
        .max_by_key(|&(_, v)| v)
        .unwrap_or(("none", 0))
    }
}

/// `a · b`, saturating at `Time::MAX` (a count of events times a cost).
pub(crate) fn mul(a: u64, b: Time) -> Time {
    (a as u128 * b as u128).min(Time::MAX as u128) as Time
}

/// Eq. (24)'s tick count ⌈w/Q⌉ times Δtck. Q = 0 is not a tick
/// configuration a kernel can have; it gives `Time::MAX` (no bound).
pub fn tick_charge(window: Time, o: &Overheads) -> Time {
    if o.quantum == 0 {
        return if o.tck == 0 { 0 } else { Time::MAX };
    }
    mul(window.div_ceil(o.quantum), o.tck)
}

/// Inflate one task (seed 000 Eqs. 6-24) given H_i (`interrupt_count`, Eq.
/// 11) and the response-time window w_i used for ticks (Eq. 24).
pub fn inflate(
    task: &OverheadTask,
    interrupt_count: u64,
    window: Time,
    o: &Overheads,
    method: InterruptMethod,
) -> Charges {
    let cs = o.sch.saturating_add(o.cxs).saturating_mul(2);
    let rel = o.rel.saturating_add(o.ipi);
    let h = interrupt_count;
    let (suspensions, eta, blocking, gpu) = match task.gpu {
        None => (1u64, 0u64, 0, 0),
        Some(g) => {
            let eta = g.interrupts as u64;
            let own = mul(eta, o.th.saturating_add(o.bh));
            (2 + eta, eta, g.blocking, g.gpu_time.saturating_add(own))
        }
    };
    // Eqs. 6-7 (CPU-only: one release + completion; GPU-using: 2 + η
    // suspensions) and Eqs. 9-10.
    let scheduling = mul(suspensions, cs);
    let release = mul(suspensions, rel);
    let gpu_user = task.gpu.is_some();
    let (interrupts, bh_sched) = match method {
        // Eqs. 12-13.
        InterruptMethod::Slih => (mul(h, o.th.saturating_add(o.bh)), 0),
        // Eqs. 14-16.
        InterruptMethod::Klmirqd => (
            mul(h, o.th.saturating_add(o.krel)),
            mul(eta, cs.saturating_add(o.ipi)),
        ),
        // Eqs. 17-23.
        InterruptMethod::Pai => {
            let top = mul(h, o.th.saturating_add(o.pairel));
            let stack = mul(h, o.bh);
            let sched = mul(suspensions, o.paisch.saturating_mul(2));
            let ipi = if gpu_user { mul(eta, o.ipi) } else { 0 };
            (top.saturating_add(stack), sched.saturating_add(ipi))
        }
        // Own derivation (module docs).
        InterruptMethod::FixedPriorityThreads => (
            mul(
                h,
                o.th.saturating_add(o.krel)
                    .saturating_add(o.bh)
                    .saturating_add(cs),
            ),
            mul(eta, cs.saturating_add(o.ipi)),
        ),
    };
    let ticks = tick_charge(window, o);
    let total = [
        task.cpu, scheduling, blocking, gpu, release, interrupts, bh_sched, ticks,
    ]
    .into_iter()
    .fold(0 as Time, Time::saturating_add);
    Charges {
        cpu: task.cpu,
        scheduling,
        gpu_blocking: blocking,
        gpu,
        release,
        interrupt_count: h,
        interrupts,
        bottom_half_scheduling: bh_sched,
        ticks,
        total,
    }
}

/// Eq. (11): H_i = Σ_{j≠i} ⌈(w_i + w_j)/p_j⌉·η_j over one cluster's tasks
/// (`windows[j]` = w_j, `periods[j]` = p_j, `etas[j]` = η_j).
pub fn interrupt_count(i: usize, windows: &[Time], periods: &[Time], etas: &[u32]) -> u64 {
    let wi = windows.get(i).copied().unwrap_or(0) as u128;
    let mut h: u128 = 0;
    for j in 0..windows.len().min(periods.len()).min(etas.len()) {
        if j == i || etas[j] == 0 {
            continue;
        }
        let p = periods[j].max(1) as u128;
        h += (wi + windows[j] as u128).div_ceil(p) * etas[j] as u128;
    }
    h.min(u64::MAX as u128) as u64
}

/// Effective utilization with GPU speed-up R (seed 000 §VII): Σ (cpu_i +
/// R·gpu_i)/p_i, for reporting.
pub fn effective_utilization(tasks: &[GpuTaskSpec], speedup: f64) -> f64 {
    tasks
        .iter()
        .map(|t| (t.cpu as f64 + speedup * t.gpu as f64) / t.period as f64)
        .sum()
}

/// A task of a generated set (seed 000 §V/§VII style).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct GpuTaskSpec {
    /// CPU execution time e_i.
    pub cpu: Time,
    /// GPU critical-section time (copies + kernels), 0 for CPU-only.
    pub gpu: Time,
    pub period: Time,
    /// Relative deadline (= period for the seed's sets).
    pub deadline: Time,
    /// η_i; only meaningful when `gpu > 0`.
    pub interrupts: u32,
}

impl GpuTaskSpec {
    pub fn uses_gpu(&self) -> bool {
        self.gpu > 0
    }
    /// Suspension-oblivious utilization (cpu + gpu)/p, for partitioning.
    pub fn utilization(&self) -> f64 {
        (self.cpu + self.gpu) as f64 / self.period as f64
    }
}

/// A cluster of the platform: CPUs and GPUs (one k-FMLP instance per
/// cluster, k = GPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ClusterSpec {
    pub cpus: u32,
    pub gpus: u32,
}

/// The CPU scheduler of [`soft_test`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClusterScheduler {
    /// C-EDF, soft real time: bounded tardiness (seed 000 §VII).
    CEdf,
    /// C-RM, hard: global RM response-time bounds per cluster (seed 000 §VI's
    /// scheduler; Bertogna & Cirinei).
    CRm,
}

/// Which k-FMLP bound charges b_i.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum KfmlpBound {
    /// Theorem 1.
    LAware,
    /// Theorem 2.
    LOblivious,
    /// Eq. (3) (falls back to Theorem 1 when too large).
    #[default]
    Exact,
}

/// One task's outcome in [`soft_test`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TaskAccounting {
    pub cluster: usize,
    pub charges: Charges,
    /// EDF: tardiness bound; FP: `None`.
    pub tardiness: Option<Time>,
    /// Response-time bound, if any.
    pub response_time: Option<Time>,
}

/// Result of [`soft_test`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetResult {
    pub schedulable: bool,
    /// Fixed-point iterations (C-EDF) or 1 (C-RM).
    pub iterations: u32,
    /// Per task, in input order.
    pub tasks: Vec<TaskAccounting>,
    /// Σ inflated utilization per cluster (report only).
    pub inflated_utilization: Vec<f64>,
}

/// Parameters of seed 000 §VII's random task sets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Seed000SetParams {
    /// Target total (suspension-oblivious) utilization Σ (cpu+gpu)/p.
    pub utilization: f64,
    /// Per-task utilization range (uniform), §VII: [0.5, 0.9].
    pub task_utilization: (f64, f64),
    /// Fraction of tasks that use a GPU, §VII: 0.5 to 0.6.
    pub gpu_fraction: (f64, f64),
    /// Share of a GPU-using task's execution time spent on the GPU, §VII:
    /// 0.75.
    pub gpu_share: f64,
    /// GPU interrupts per GPU-using job, §VII's i ∈ {1, 3, 6}.
    pub interrupts: u32,
    /// Period range in ns, §V: [15 ms, 60 ms].
    pub period: (Time, Time),
}

impl Default for Seed000SetParams {
    /// Seed 000 §VII, Fig. 5 (with i = 3).
    fn default() -> Self {
        Seed000SetParams {
            utilization: 6.0,
            task_utilization: (0.5, 0.9),
            gpu_fraction: (0.5, 0.6),
            gpu_share: 0.75,
            interrupts: 3,
            period: (15_000_000, 60_000_000),
        }
    }
}

/// A random task set in the style of seed 000 §VII: tasks with uniform
/// utilizations are added until the target total is reached (the last one
/// trimmed to hit it), then a uniform fraction of them become GPU-using with
/// `gpu_share` of their cost on the GPU. Deterministic for a given `rng`.
pub fn seed000_task_set(rng: &mut crate::generate::Rng, p: &Seed000SetParams) -> Vec<GpuTaskSpec> {
    let mut utils = Vec::new();
    let mut total = 0.0;
    let (lo, hi) = p.task_utilization;
    while total < p.utilization {
        let u = (lo + (hi - lo) * rng.next_f64()).min(p.utilization - total);
        if u <= 0.0 {
            break;
        }
        utils.push(u);
        total += u;
    }
    let (flo, fhi) = p.gpu_fraction;
    let frac = flo + (fhi - flo) * rng.next_f64();
    let n_gpu = ((utils.len() as f64) * frac).round() as usize;
    utils
        .iter()
        .enumerate()
        .map(|(i, &u)| {
            let period = rng.range(p.period.0, p.period.1.max(p.period.0));
            let cost = ((period as f64 * u) as Time).max(1);
            let gpu = if i < n_gpu {
                (cost as f64 * p.gpu_share) as Time
            } else {
                0
            };
            GpuTaskSpec {
                cpu: cost - gpu,
                gpu,
                period,
                deadline: period,
                interrupts: if gpu > 0 { p.interrupts } else { 0 },
            }
        })
        .collect()
}

/// Fixed-point iterations before [`soft_test`] gives up (answers not
/// schedulable).
pub const MAX_FIXED_POINT_ITERATIONS: u32 = 64;

/// Seed 000 §V's two-pass worst fit: GPU-using tasks first, then CPU-only
/// tasks, each in decreasing utilization, to the cluster with the least
/// utilization so far. Returns the cluster of every task.
pub fn two_pass_worst_fit(tasks: &[GpuTaskSpec], clusters: &[ClusterSpec]) -> Vec<usize> {
    let mut load = vec![0.0f64; clusters.len()];
    let mut out = vec![0usize; tasks.len()];
    if clusters.is_empty() {
        return out;
    }
    for gpu_pass in [true, false] {
        let mut idx: Vec<usize> = (0..tasks.len())
            .filter(|&i| tasks[i].uses_gpu() == gpu_pass)
            .collect();
        idx.sort_by(|&a, &b| {
            tasks[b]
                .utilization()
                .total_cmp(&tasks[a].utilization())
                .then(a.cmp(&b))
        });
        for i in idx {
            let c = (0..clusters.len())
                .min_by(|&a, &b| {
                    let la = load[a] / clusters[a].cpus.max(1) as f64;
                    let lb = load[b] / clusters[b].cpus.max(1) as f64;
                    la.total_cmp(&lb).then(a.cmp(&b))
                })
                .unwrap_or(0);
            out[i] = c;
            load[c] += tasks[i].utilization();
        }
    }
    out
}

/// The overhead-aware schedulability test of seed 000 §VII on a generated
/// task set: two-pass worst-fit onto `clusters`, k-FMLP per cluster (k =
/// its GPUs, critical section l_i = gpu_i + η_i(Δth+Δbh), bound `bound`),
/// App. B inflation with `method`, then C-EDF bounded tardiness with the
/// H_i fixed point, or C-RM response-time bounds with windows = deadlines.
pub fn soft_test(
    tasks: &[GpuTaskSpec],
    clusters: &[ClusterSpec],
    scheduler: ClusterScheduler,
    method: InterruptMethod,
    overheads: &Overheads,
    bound: KfmlpBound,
) -> SetResult {
    let assign = two_pass_worst_fit(tasks, clusters);
    soft_test_partitioned(
        tasks, &assign, clusters, scheduler, method, overheads, bound,
    )
}

/// [`soft_test`] with a given cluster assignment (`assign[i]` < clusters).
pub fn soft_test_partitioned(
    tasks: &[GpuTaskSpec],
    assign: &[usize],
    clusters: &[ClusterSpec],
    scheduler: ClusterScheduler,
    method: InterruptMethod,
    overheads: &Overheads,
    bound: KfmlpBound,
) -> SetResult {
    let mut out = vec![TaskAccounting::default(); tasks.len()];
    let mut schedulable = !clusters.is_empty() || tasks.is_empty();
    let mut iterations = 0;
    let mut inflated_utilization = vec![0.0; clusters.len()];
    for (c, cl) in clusters.iter().enumerate() {
        let members: Vec<usize> = (0..tasks.len())
            .filter(|&i| assign.get(i) == Some(&c))
            .collect();
        if members.is_empty() {
            continue;
        }
        let o = overheads;
        let lengths: Vec<Time> = members
            .iter()
            .map(|&i| {
                let t = &tasks[i];
                if t.uses_gpu() {
                    t.gpu
                        .saturating_add(mul(t.interrupts as u64, o.th.saturating_add(o.bh)))
                } else {
                    0
                }
            })
            .collect();
        let blocking: Vec<Time> = kfmlp::blocking_bounds(&lengths, cl.gpus)
            .into_iter()
            .map(|b| match bound {
                KfmlpBound::LAware => b.l_aware,
                KfmlpBound::LOblivious => b.l_oblivious,
                KfmlpBound::Exact => b.exact,
            })
            .collect();
        let specs: Vec<ClusterTask> = members
            .iter()
            .zip(&blocking)
            .map(|(&i, &b)| {
                let t = &tasks[i];
                ClusterTask {
                    task: OverheadTask {
                        cpu: t.cpu,
                        gpu: t.uses_gpu().then_some(GpuUse {
                            blocking: b,
                            gpu_time: t.gpu,
                            interrupts: t.interrupts,
                        }),
                    },
                    period: t.period,
                    deadline: t.deadline,
                }
            })
            .collect();
        let res = match scheduler {
            ClusterScheduler::CEdf => cluster_edf(&specs, cl.cpus, o, method),
            ClusterScheduler::CRm => cluster_fp(&specs, cl.cpus, o, method, true),
        };
        iterations = iterations.max(res.iterations);
        schedulable &= res.schedulable;
        inflated_utilization[c] = res
            .charges
            .iter()
            .zip(&specs)
            .map(|(ch, s)| ch.total as f64 / s.period as f64)
            .sum();
        for (k, &i) in members.iter().enumerate() {
            out[i] = TaskAccounting {
                cluster: c,
                charges: res.charges[k],
                tardiness: res.tardiness.get(k).copied().flatten(),
                response_time: res.response.get(k).copied().flatten(),
            };
        }
    }
    SetResult {
        schedulable,
        iterations,
        tasks: out,
        inflated_utilization,
    }
}

/// A task of one cluster for [`cluster_edf`] / [`cluster_fp`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ClusterTask {
    pub task: OverheadTask,
    pub period: Time,
    pub deadline: Time,
}

/// Outcome of one cluster's overhead-aware test.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ClusterResult {
    pub schedulable: bool,
    pub iterations: u32,
    /// Per task, in input order.
    pub charges: Vec<Charges>,
    /// EDF tardiness bounds (all `None` under FP).
    pub tardiness: Vec<Option<Time>>,
    pub response: Vec<Option<Time>>,
    /// Why not schedulable, in words.
    pub reason: Option<String>,
}

fn inflate_all(
    tasks: &[ClusterTask],
    windows: &[Time],
    o: &Overheads,
    method: InterruptMethod,
) -> Vec<Charges> {
    let periods: Vec<Time> = tasks.iter().map(|t| t.period).collect();
    let etas: Vec<u32> = tasks
        .iter()
        .map(|t| t.task.gpu.map_or(0, |g| g.interrupts))
        .collect();
    tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let h = interrupt_count(i, windows, &periods, &etas);
            inflate(&t.task, h, windows[i], o, method)
        })
        .collect()
}

/// Overhead-aware G-EDF bounded tardiness on one cluster of `cpus` CPUs
/// with the fixed point of App. B: windows w_i = D_i + x_i (p_i + x_i for
/// the seed's implicit deadlines), starting at x = 0.
pub fn cluster_edf(
    tasks: &[ClusterTask],
    cpus: u32,
    o: &Overheads,
    method: InterruptMethod,
) -> ClusterResult {
    let mut x: Vec<Time> = vec![0; tasks.len()];
    for it in 1..=MAX_FIXED_POINT_ITERATIONS {
        let windows: Vec<Time> = tasks
            .iter()
            .zip(&x)
            .map(|(t, &xi)| t.deadline.saturating_add(xi))
            .collect();
        let charges = inflate_all(tasks, &windows, o, method);
        let inflated: Vec<Task> = tasks
            .iter()
            .zip(&charges)
            .enumerate()
            .map(|(i, (t, c))| Task::new(i, c.total, t.period, t.deadline))
            .collect();
        let res = edf::gedf_tardiness(&inflated, cpus);
        let new_x: Option<Vec<Time>> = res.tasks.iter().map(|t| t.tardiness).collect();
        match new_x {
            Some(nx) if res.bounded => {
                // Settled when no bound exceeds its assumed window: a bound
                // can fall as windows grow (the Devi-Anderson bound falls
                // when e_min grows), and waiting for nx == x then never
                // ends (found by rtgpu experiment, seed 000 §VII sweep).
                if nx.iter().zip(&x).all(|(a, b)| a <= b) {
                    return ClusterResult {
                        schedulable: true,
                        iterations: it,
                        tardiness: nx.iter().map(|&v| Some(v)).collect(),
                        response: res.tasks.iter().map(|t| t.response_bound).collect(),
                        charges,
                        reason: None,
                    };
                }
                // Monotone: never let a window shrink.
                x = nx.iter().zip(&x).map(|(&a, &b)| a.max(b)).collect();
            }
            _ => {
                let reason = match &res.reason {
                    Some(edf::EdfRejection::ExecutionExceedsPeriod { task, wcet, period }) => {
                        format!(
                            "task {task}'s inflated cost {wcet} ns exceeds its period {period} ns \
                             (seed 000 App. B Eq. 4)"
                        )
                    }
                    Some(edf::EdfRejection::Overutilized { utilization, cores }) => format!(
                        "inflated utilization {utilization:.3} exceeds {cores} CPU(s) (seed 000 \
                         App. B Eq. 5)"
                    ),
                    Some(r) => format!("{r:?}"),
                    None => "tardiness unbounded".into(),
                };
                return ClusterResult {
                    schedulable: false,
                    iterations: it,
                    tardiness: vec![None; tasks.len()],
                    response: vec![None; tasks.len()],
                    charges,
                    reason: Some(reason),
                };
            }
        }
    }
    let windows: Vec<Time> = tasks
        .iter()
        .zip(&x)
        .map(|(t, &xi)| t.deadline.saturating_add(xi))
        .collect();
    ClusterResult {
        schedulable: false,
        iterations: MAX_FIXED_POINT_ITERATIONS,
        charges: inflate_all(tasks, &windows, o, method),
        tardiness: vec![None; tasks.len()],
        response: vec![None; tasks.len()],
        reason: Some(format!(
            "the tardiness fixed point did not settle within {MAX_FIXED_POINT_ITERATIONS} \
             iterations"
        )),
    }
}

/// Overhead-aware global FP on one cluster (C-FP / C-RM): windows = D_i,
/// inflated costs, Bertogna-Cirinei response-time bounds. Priorities: rate
/// monotonic when `rate_monotonic`, deadline monotonic otherwise (ties by
/// input order).
pub fn cluster_fp(
    tasks: &[ClusterTask],
    cpus: u32,
    o: &Overheads,
    method: InterruptMethod,
    rate_monotonic: bool,
) -> ClusterResult {
    let windows: Vec<Time> = tasks.iter().map(|t| t.deadline).collect();
    let charges = inflate_all(tasks, &windows, o, method);
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by_key(|&i| {
        (
            if rate_monotonic {
                tasks[i].period
            } else {
                tasks[i].deadline
            },
            i,
        )
    });
    let prio: Vec<Task> = order
        .iter()
        .map(|&i| Task::new(i, charges[i].total, tasks[i].period, tasks[i].deadline))
        .collect();
    let rts = global_fp::gfp_response_times(&prio, cpus);
    let mut response = vec![None; tasks.len()];
    for (t, r) in prio.iter().zip(&rts) {
        response[t.id] = *r;
    }
    let schedulable = response.iter().all(Option::is_some);
    ClusterResult {
        schedulable,
        iterations: 1,
        tardiness: vec![None; tasks.len()],
        response,
        charges,
        reason: (!schedulable)
            .then(|| "a response-time bound exceeds its deadline with inflated costs".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table3() -> Overheads {
        Overheads::default()
    }

    #[test]
    fn cpu_only_inflation_by_hand() {
        // Table III: sch .63, cxs .36, ipi .60, rel .67, tck .86 µs, Q 1 ms.
        // e = 1 ms, window 20 ms, no GPU interrupts anywhere (H = 0):
        // Eq. 6: +2(0.63+0.36) = 1.98 µs; Eq. 9: +0.67+0.60 = 1.27 µs;
        // Eq. 24: ⌈20/1⌉·0.86 = 17.2 µs. Total 1 ms + 20.45 µs.
        let t = OverheadTask {
            cpu: 1_000_000,
            gpu: None,
        };
        for m in InterruptMethod::ALL {
            let c = inflate(&t, 0, 20_000_000, &table3(), m);
            assert_eq!(c.scheduling, 1_980);
            assert_eq!(c.release, 1_270);
            assert_eq!(c.ticks, 17_200);
            let pai = if m == InterruptMethod::Pai { 260 } else { 0 }; // Eq. 19: 2·0.13
            assert_eq!(c.total, 1_000_000 + 1_980 + 1_270 + 17_200 + pai, "{m:?}");
        }
    }

    #[test]
    fn gpu_using_inflation_by_hand_per_method() {
        // e = 2 ms, b = 3 ms, GPU time 1 ms, η = 2, H = 10, window 20 ms.
        let t = OverheadTask {
            cpu: 2_000_000,
            gpu: Some(GpuUse {
                blocking: 3_000_000,
                gpu_time: 1_000_000,
                interrupts: 2,
            }),
        };
        let o = table3();
        // Common: (2+η)=4 suspensions: sched 4·1.98 = 7.92 µs; release
        // 4·1.27 = 5.08 µs; s = 1 ms + 2(16.44+29.90) = 1 ms + 92.68 µs;
        // ticks 17.2 µs.
        let common = 2_000_000 + 7_920 + 3_000_000 + 1_092_680 + 5_080 + 17_200;
        let slih = inflate(&t, 10, 20_000_000, &o, InterruptMethod::Slih);
        assert_eq!(slih.gpu, 1_092_680);
        // Eq. 13: 10·(16.44+29.90) = 463.4 µs.
        assert_eq!(slih.interrupts, 463_400);
        assert_eq!(slih.total, common + 463_400);
        let kl = inflate(&t, 10, 20_000_000, &o, InterruptMethod::Klmirqd);
        // Eq. 15: 10·(16.44+1.39) = 178.3 µs; Eq. 16: 2·(1.98+0.60) = 5.16.
        assert_eq!(kl.interrupts, 178_300);
        assert_eq!(kl.bottom_half_scheduling, 5_160);
        assert_eq!(kl.total, common + 178_300 + 5_160);
        let pai = inflate(&t, 10, 20_000_000, &o, InterruptMethod::Pai);
        // Eq. 18: 10·(16.44+0.56) = 170; Eq. 23: +10·29.9 = 299 → 469 µs.
        // Eq. 20: 4·2·0.13 = 1.04; Eq. 21: 2·0.60 = 1.2 → 2.24 µs.
        assert_eq!(pai.interrupts, 469_000);
        assert_eq!(pai.bottom_half_scheduling, 2_240);
        assert_eq!(pai.total, common + 469_000 + 2_240);
        assert_eq!(pai.dominant_overhead().0, "GPU blocking");
    }

    #[test]
    fn eq_11_by_hand() {
        // Windows 20, 30, 40 ms; periods 20, 30, 40; η = 1, 2, 0.
        // H_0 = ⌈(20+30)/30⌉·2 + 0 = 4; H_1 = ⌈(30+20)/20⌉·1 = 3;
        // H_2 = ⌈60/20⌉·1 + ⌈70/30⌉·2 = 3 + 6 = 9.
        let w = [20, 30, 40];
        let p = [20, 30, 40];
        let e = [1, 2, 0];
        assert_eq!(interrupt_count(0, &w, &p, &e), 4);
        assert_eq!(interrupt_count(1, &w, &p, &e), 3);
        assert_eq!(interrupt_count(2, &w, &p, &e), 9);
    }

    #[test]
    fn effective_utilization_by_hand() {
        // (2 + 16·1)/20 + 5/20 = 0.9 + 0.25.
        let ts = [
            GpuTaskSpec {
                cpu: 2,
                gpu: 1,
                period: 20,
                deadline: 20,
                interrupts: 1,
            },
            GpuTaskSpec {
                cpu: 5,
                gpu: 0,
                period: 20,
                deadline: 20,
                interrupts: 0,
            },
        ];
        assert!((effective_utilization(&ts, 16.0) - 1.15).abs() < 1e-12);
    }

    fn seed000_vi() -> Vec<GpuTaskSpec> {
        // §VI: 2 GPU tasks 2 ms CPU + 1 ms GPU / 19.9 ms; 40 CPU tasks 5 ms
        // / 20 ms; 8 GPU tasks 2 ms + 1 ms / 20.1 ms.
        let g = |p| GpuTaskSpec {
            cpu: 2_000_000,
            gpu: 1_000_000,
            period: p,
            deadline: p,
            interrupts: 1,
        };
        let mut v = vec![g(19_900_000); 2];
        v.extend(vec![
            GpuTaskSpec {
                cpu: 5_000_000,
                gpu: 0,
                period: 20_000_000,
                deadline: 20_000_000,
                interrupts: 0
            };
            40
        ]);
        v.extend(vec![g(20_100_000); 8]);
        v
    }

    #[test]
    fn seed000_section_vi_workload_needs_zero_overheads_to_pass() {
        // Two-pass worst fit puts one 19.9 ms and four 20.1 ms GPU tasks and
        // 20 CPU tasks in each cluster of 6 CPUs and 4 GPUs. Suspension-
        // oblivious with zero overheads: l = 1 ms, the exact k-FMLP bound
        // for 4 others on 4 GPUs is 1 ms, so a GPU task costs 2 + 1 + 1 =
        // 4 ms: U = 20·5/20 + 4/19.9 + 4·4/20.1 = 5 + 0.2010 + 0.7960 =
        // 5.997 ≤ 6: bounded tardiness (Eqs. 4-5).
        let cl = [ClusterSpec { cpus: 6, gpus: 4 }; 2];
        let ts = seed000_vi();
        let r = soft_test(
            &ts,
            &cl,
            ClusterScheduler::CEdf,
            InterruptMethod::Klmirqd,
            &Overheads::zero(),
            KfmlpBound::Exact,
        );
        assert!(r.schedulable, "{r:?}");
        assert_eq!(r.tasks.iter().filter(|t| t.cluster == 0).count(), 25);
        assert_eq!(r.tasks[0].charges.gpu_blocking, 1_000_000);
        // With Table III overheads every method pushes U above 6: the
        // analysis cannot confirm what seed 000 Table II measured (0 %
        // misses under C-EDF).
        for m in InterruptMethod::ALL {
            let r = soft_test(
                &ts,
                &cl,
                ClusterScheduler::CEdf,
                m,
                &table3(),
                KfmlpBound::Exact,
            );
            assert!(!r.schedulable, "{m:?}");
            assert!(r.inflated_utilization[0] > 6.0);
        }
    }

    #[test]
    fn fixed_point_iterates_until_tardiness_settles() {
        // A lightly loaded cluster with GPU interrupts: tardiness 0 at the
        // start, H_i computed with p + 0; settles after ≥ 1 iteration and
        // the result is a fixed point (re-running inflation with the final
        // windows gives the same costs).
        let ts: Vec<ClusterTask> = (0..4)
            .map(|i| ClusterTask {
                task: OverheadTask {
                    cpu: 3_000_000,
                    gpu: Some(GpuUse {
                        blocking: 1_000_000,
                        gpu_time: 2_000_000,
                        interrupts: 3,
                    }),
                },
                period: 10_000_000 + i * 1_000_000,
                deadline: 10_000_000 + i * 1_000_000,
            })
            .collect();
        let r = cluster_edf(&ts, 3, &table3(), InterruptMethod::Slih);
        assert!(r.schedulable, "{r:?}");
        let windows: Vec<Time> = ts
            .iter()
            .zip(&r.tardiness)
            .map(|(t, x)| t.deadline + x.unwrap_or(0))
            .collect();
        assert_eq!(
            inflate_all(&ts, &windows, &table3(), InterruptMethod::Slih),
            r.charges
        );
        assert!(r.tardiness.iter().any(|x| x.unwrap_or(0) > 0));
        assert!(r.iterations >= 2);
    }

    #[test]
    fn klmirqd_charges_less_than_slih_and_pai_with_many_interrupts() {
        // i = 6 interrupts per GPU job (§VII): klmirqd's per-interrupt
        // non-preemptive charge (Δth+Δkrel) is far below SLIH's and PAI's.
        let mut ts = seed000_vi();
        for t in ts.iter_mut().filter(|t| t.uses_gpu()) {
            t.interrupts = 6;
        }
        let cl = [ClusterSpec { cpus: 6, gpus: 4 }; 2];
        let total = |m| {
            soft_test(
                &ts,
                &cl,
                ClusterScheduler::CEdf,
                m,
                &table3(),
                KfmlpBound::Exact,
            )
            .inflated_utilization
            .iter()
            .sum::<f64>()
        };
        let k = total(InterruptMethod::Klmirqd);
        assert!(k < total(InterruptMethod::Slih));
        assert!(total(InterruptMethod::Slih) < total(InterruptMethod::Pai));
    }

    #[test]
    fn seed000_section_vii_ordering_klmirqd_slih_pai() {
        // Fig. 5's setting: two clusters of 6 CPUs / 4 GPUs, Table III. For
        // every i, count schedulable sets per method over utilizations 7-10.
        // klmirqd trades Δbh per foreign interrupt for thread costs per own
        // interrupt: it must win at i = 6, by more than at i = 1 (seed 000
        // §VII: "a greater disparity between them for larger values of i").
        // Per set, PAI's charges are never below SLIH's, but the verdicts
        // need not be ordered: the Devi-Anderson tardiness bound falls when
        // e_min grows, so the H_i fixed point can settle lower under PAI.
        let cl = [ClusterSpec { cpus: 6, gpus: 4 }; 2];
        let mut rng = crate::generate::Rng::new(2012);
        let mut gap = Vec::new();
        for i in [1, 3, 6] {
            let mut count = [0u32; 3];
            for u10 in [70, 80, 90, 100] {
                for _ in 0..10 {
                    let p = Seed000SetParams {
                        utilization: u10 as f64 / 10.0,
                        interrupts: i,
                        ..Seed000SetParams::default()
                    };
                    let ts = seed000_task_set(&mut rng, &p);
                    let total: f64 = ts.iter().map(GpuTaskSpec::utilization).sum();
                    assert!((total - p.utilization).abs() < 0.01, "{total}");
                    for (k, m) in [
                        InterruptMethod::Klmirqd,
                        InterruptMethod::Slih,
                        InterruptMethod::Pai,
                    ]
                    .into_iter()
                    .enumerate()
                    {
                        let r = soft_test(
                            &ts,
                            &cl,
                            ClusterScheduler::CEdf,
                            m,
                            &table3(),
                            KfmlpBound::Exact,
                        );
                        count[k] += r.schedulable as u32;
                    }
                }
            }
            assert!(
                count[0] >= count[1] && count[1] >= count[2],
                "i={i}: {count:?}"
            );
            gap.push(count[0] - count[2]);
        }
        assert!(gap[2] > 0, "klmirqd must beat PAI at i = 6: {gap:?}");
        assert!(gap[2] >= gap[0], "{gap:?}");
    }

    #[test]
    fn overload_is_rejected() {
        let ts = vec![
            GpuTaskSpec {
                cpu: 9,
                gpu: 0,
                period: 10,
                deadline: 10,
                interrupts: 0
            };
            3
        ];
        let r = soft_test(
            &ts,
            &[ClusterSpec { cpus: 2, gpus: 0 }],
            ClusterScheduler::CEdf,
            InterruptMethod::Klmirqd,
            &Overheads::zero(),
            KfmlpBound::Exact,
        );
        assert!(!r.schedulable);
        let r = soft_test(
            &ts,
            &[ClusterSpec { cpus: 2, gpus: 0 }],
            ClusterScheduler::CRm,
            InterruptMethod::Klmirqd,
            &Overheads::zero(),
            KfmlpBound::Exact,
        );
        assert!(!r.schedulable);
    }

    #[test]
    fn zero_overheads_and_no_gpu_leave_costs_alone() {
        let t = OverheadTask { cpu: 5, gpu: None };
        let c = inflate(&t, 0, 100, &Overheads::zero(), InterruptMethod::Slih);
        assert_eq!(c.total, 5);
    }
}
