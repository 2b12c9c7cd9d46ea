//! The GPU side of `rtgpu analyze`: for every GPU-using task of a workload,
//! how long it can wait for a GPU and its engines (k-FMLP, GPUSync, static
//! assignment or a vGPU reservation), and its inflated cost with the
//! overheads of seed 000 App. B. Used by [`crate::workload`].
//!
//! # Mapping the workload onto the seeds' models
//! - **GPU domain**: tasks share the GPUs of their cluster (seed 000 §V,
//!   seed 004 §5: one allocator instance per cluster). Under G-FP / G-EDF
//!   all GPUs form one pool. m of GPUSync's Theorem 2 is the cluster's core
//!   count, or every core of the platform under P-FP and global schedulers
//!   (more cores only raise the bound).
//! - **Own GPU time** W_i = copy-in at host-to-device bandwidth + copy-out
//!   at device-to-host bandwidth + kernels + state migration: the state
//!   moves at most once per job, at peer bandwidth when GPUSync uses peer
//!   copies, through system memory (both directions) under the k-FMLP; a
//!   statically assigned task never migrates.
//! - **k-FMLP** (seed 000 App. A): critical section l_i = W_i +
//!   η_i(Δth+Δbh) plus the CPU time inside the section (the holder keeps
//!   the GPU until its completion interrupts are handled, and while it runs
//!   that CPU work); b_i = the exact bound of Eq. (3) with k = the domain's GPUs.
//! - **Static**: tasks take the domain's GPUs round robin in file order;
//!   one FIFO queue per GPU, b_i = Σ l_j over the other tasks of its GPU
//!   (Theorem 1 with k = 1, which is exact).
//! - **GPUSync** (seed 004 App. A): one copy-engine request per chunk of
//!   each transfer; one execution-engine request per job (e_i = 1: a job
//!   holds the execution lock from its first kernel to its last, as §4.2's
//!   engine locks are released "once all of its engine-related operations
//!   complete", in the simulator and `rtgpu run` alike); L^C_max = the
//!   longest chunk at the slowest bandwidth; L^E_max = the longest job's
//!   kernels with their interrupt handling; L^P_max = the
//!   largest CPU cost among the domain's GPU-using tasks (the model does
//!   not say which part of the CPU work runs while the token is held, so
//!   all of it may). Peer copies use N^C_dgl or N^C_nest per the policy;
//!   when no task can migrate (one GPU in the domain, or no state) a job
//!   uses one copy engine at a time (N^C_sys). b_i = token blocking
//!   (Theorem 2, or more with more GPU users than CPUs: our allocators do
//!   without the R²DGLP's priority donation,
//!   [`gpusync::token_blocking_without_donation`]); the job's GPU time is
//!   W_i + engine blocking (Theorem 1).
//!   Without engine locks and ρ > 1 the closed-source driver arbitrates the
//!   engines: there is no bound and the task is reported unbounded.
//! - **vGPU** members (seed 001, our derivation in [`crate::vgpu`]): b_i =
//!   the member's wait t(W_v) − W_i, GPU time W_i.
//! - **Hold stretch** (our derivation, see `section_stretch` in
//!   [`crate::workload`]): a holder's bottom halves need a CPU, and may not
//!   get one at once (under P-FP the holder's core runs tasks the waiter's
//!   progress says nothing about; with ρ > 1 a bottom half waits in the
//!   GPU's klmirqd FIFO behind a co-holder's, which runs at that co-holder's
//!   priority). The caller passes, per task, how much longer than its
//!   critical section (static, k-FMLP) or Lemma 5 hold time (GPUSync) a
//!   holder may keep its GPU; it is added to that task's hold wherever the
//!   hold blocks others.

use serde::Serialize;

use rtgpu_model::{GpuAllocator, PeerLocking, Workload};

use super::gpusync::{self, CopyLocking, GpuSyncConfig, GpuSyncMaxima, GpuSyncRequest};
use super::wait::{self, QueueChoice};
use super::{kfmlp, vgpu, Method};
use crate::overheads::{GpuUse, InterruptMethod, OverheadTask};
use crate::task::Time;

/// Why a task has no bound when several token holders share a GPU without
/// engine locks (ρ > 1, GPUSync or static assignment): `rtgpu run` takes no
/// lock then and the driver arbitrates the engines.
const DRIVER_ARBITRATES: &str = "engine locks are off with ρ > 1: the closed-source driver \
     arbitrates copy and execution engines, for which no bound exists (seed 004 §5)";

/// What the report says about one GPU-using task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuTaskReport {
    /// How the task gets its GPU, in words.
    pub allocator: String,
    /// Own copies (including one state migration where it can migrate).
    pub copy_time: Time,
    /// Own kernels.
    pub kernel_time: Time,
    /// CPU time inside the section, holding the GPU (`GpuPart::cpu`).
    pub section_cpu: Time,
    /// η_i: GPU interrupts per job.
    pub interrupts: u32,
    /// GPUSync: copy- and execution-engine requests per job.
    pub copy_requests: Option<u64>,
    pub exec_requests: Option<u64>,
    /// GPUSync Theorem 2, k-FMLP bound, static queue or vGPU wait: the
    /// GPU wait b_i charged. `None`: unbounded (see `unbounded_because`).
    pub token_blocking: Option<Time>,
    /// GPUSync Theorem 1.
    pub engine_blocking: Option<Time>,
    /// GPUSync Lemma 5.
    pub token_hold_time: Option<Time>,
    /// How much longer than its critical section (Lemma 5's hold time
    /// under GPUSync) this task may hold its GPU because its bottom halves
    /// wait for a CPU; added to its hold where it blocks others (our
    /// derivation, `rtgpu_analysis::workload` docs). `None`: not charged.
    pub hold_stretch: Option<Time>,
    /// klmirqd's independent mode: how long this task's own bottom halves
    /// may wait for their server per job (its hold stretch,
    /// `rtgpu_analysis::server::Server::latency`); part of its own GPU
    /// time, since no task of its domain runs them. `None`: dependent mode
    /// or no server.
    pub bottom_half_wait: Option<Time>,
    /// k-FMLP Theorems 1 and 2 and whether Eq. (3) was solved exactly.
    pub kfmlp_l_aware: Option<Time>,
    pub kfmlp_l_oblivious: Option<Time>,
    pub kfmlp_exact_solved: Option<bool>,
    /// vGPU: guaranteed share and the GPU response bound t(W_v).
    pub vgpu_share: Option<f64>,
    pub vgpu_response: Option<Time>,
    /// Why the GPU wait has no bound, when it has none.
    pub unbounded_because: Option<String>,
    /// Suspension-aware method: how many other tasks' holds can be ahead
    /// of a request in its token queue ([`crate::gpu::wait`]).
    pub requests_ahead: Option<u64>,
    /// This task's own hold as others wait for it (suspension-aware
    /// method: its own operations, not the domain's maxima).
    pub hold: Option<Time>,
    /// The CPU part of that hold (section CPU work and interrupt handling).
    pub hold_cpu: Option<Time>,
    /// Suspension-aware method: the CPU time inside the holds this task
    /// may wait for. It runs at this task's priority (the holders inherit
    /// it), so it is charged as this task's CPU demand on the tasks below.
    pub wait_cpu: Option<Time>,
    /// Suspension-aware method: the tasks whose holds the GPU wait counts
    /// (workload indices, longest hold first).
    pub wait_behind: Vec<usize>,
}

impl GpuTaskReport {
    /// The task's overhead-accounting input (seed 000 Eq. 8's b_i and s_i
    /// without own interrupts); unbounded parts saturate to `Time::MAX`.
    pub fn overhead_input(&self, cpu: Time) -> OverheadTask {
        let gpu_time = self
            .copy_time
            .saturating_add(self.kernel_time)
            .saturating_add(match (&self.unbounded_because, self.engine_blocking) {
                (Some(_), _) => Time::MAX,
                (None, e) => e.unwrap_or(0),
            })
            .saturating_add(self.bottom_half_wait.unwrap_or(0));
        OverheadTask {
            cpu,
            gpu: Some(GpuUse {
                blocking: self.token_blocking.unwrap_or(Time::MAX),
                gpu_time,
                interrupts: self.interrupts,
            }),
        }
    }
}

/// A GPU-using job's inflated cost split for the suspension-aware tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct SuspensionSplit {
    /// CPU demand C': the inflated cost without the GPU wait and the GPU
    /// time (so with the job's own interrupt handling, seed 000 Eq. 8's
    /// η(Δth + Δbh)), plus the CPU time inside the holds it waits for,
    /// which runs at its priority ([`GpuTaskReport::wait_cpu`]).
    pub cpu: Time,
    /// Suspension S: the GPU wait and the GPU time (copies, kernels,
    /// engine blocking, bottom-half server waits).
    pub suspension: Time,
}

impl GpuTaskReport {
    /// Split `charges` (this task's inflated cost, seed 000 App. B) into
    /// CPU demand and suspension ([`SuspensionSplit`]). Unbounded parts
    /// saturate to `Time::MAX`.
    pub fn suspension_split(&self, charges: &crate::overheads::Charges) -> SuspensionSplit {
        let gpu_time = self
            .overhead_input(charges.cpu)
            .gpu
            .map_or(0, |g| g.gpu_time);
        let suspension = charges.gpu_blocking.saturating_add(gpu_time);
        let cpu = if suspension == Time::MAX {
            Time::MAX
        } else {
            charges
                .total
                .saturating_sub(suspension)
                .saturating_add(self.wait_cpu.unwrap_or(0))
        };
        SuspensionSplit { cpu, suspension }
    }
}

/// The interrupt method of a policy.
pub fn interrupt_method(p: &rtgpu_model::Policy) -> InterruptMethod {
    match p.interrupts {
        rtgpu_model::InterruptHandling::Slih => InterruptMethod::Slih,
        rtgpu_model::InterruptHandling::Pai => InterruptMethod::Pai,
        rtgpu_model::InterruptHandling::Klmirqd => InterruptMethod::Klmirqd,
        rtgpu_model::InterruptHandling::FixedPriorityThreads { .. } => {
            InterruptMethod::FixedPriorityThreads
        }
    }
}

/// A set of tasks sharing one pool of GPUs.
#[derive(Debug, Clone)]
pub struct GpuDomain {
    /// m for GPUSync's Theorem 2.
    pub cpus: u32,
    /// Indices into `Platform::gpus`.
    pub gpus: Vec<usize>,
    /// Indices into `Workload::tasks`.
    pub members: Vec<usize>,
}

struct Work {
    copy_in: Time,
    copy_out: Time,
    state: Time,
    kernels: Time,
}

fn own_work(w: &Workload, t: &rtgpu_model::Task, migrates: bool, peer: bool) -> Work {
    own_work_shared(w, t, migrates, peer, 1)
}

/// [`own_work`] with every transfer slowed `bus` times: up to `bus`
/// transfers share a PCIe link's bandwidth in the simulator (processor
/// sharing), so one may take that much longer ([`bus_sharing`]).
fn own_work_shared(
    w: &Workload,
    t: &rtgpu_model::Task,
    migrates: bool,
    peer: bool,
    bus: u64,
) -> Work {
    let bw = &w.platform.bandwidth;
    let Some(g) = &t.gpu else {
        return Work {
            copy_in: 0,
            copy_out: 0,
            state: 0,
            kernels: 0,
        };
    };
    let xfer =
        |bytes: u64, rate: u64| crate::overheads::mul(bus, gpusync::transfer_time(bytes, rate));
    let state = if !migrates || g.state == 0 {
        0
    } else if peer {
        xfer(g.state, bw.peer)
    } else {
        xfer(g.state, bw.device_to_host).saturating_add(xfer(g.state, bw.host_to_device))
    };
    Work {
        copy_in: xfer(g.copy_in, bw.host_to_device),
        copy_out: xfer(g.copy_out, bw.device_to_host),
        state,
        kernels: g.kernels.iter().fold(0, |a: Time, &k| a.saturating_add(k)),
    }
}

/// How many transfers can share one PCIe link of domain `d`'s GPUs at
/// once (our derivation, for the suspension-aware method): the simulator
/// moves concurrent transfers on a link (a GPU's own, or the switch it is
/// `attach`ed to) at equal shares of its bandwidth, so a transfer may take
/// that many times its own time. Token holders issue one operation at a
/// time, so at most the holders of the link's GPUs transfer on it, plus,
/// with `migrations`, holders elsewhere whose peer copy ends at one of its
/// GPUs (at most every token of the platform). With engine locks every
/// transfer that touches a GPU holds one of that GPU's copy engines (a
/// peer copy locks one at each end, seed 004 Lemma 3), so at most the
/// link's copy engines.
fn bus_sharing(w: &Workload, d: &GpuDomain, migrations: bool) -> u64 {
    let rho = u64::from(w.policy.tokens());
    let elsewhere = if migrations {
        w.platform.gpus.len() as u64 * rho
    } else {
        0
    };
    let link = |g: usize| w.platform.gpus[g].attach.map_or(usize::MAX - g, |a| a);
    d.gpus
        .iter()
        .map(|&g| {
            let on_link = (0..w.platform.gpus.len()).filter(|&h| link(h) == link(g));
            let (gpus, engines) = on_link.fold((0u64, 0u64), |(n, e), h| {
                (n + 1, e + u64::from(w.platform.gpus[h].copy_engines.max(1)))
            });
            let holders = (gpus * rho).saturating_add(elsewhere);
            if w.policy.engine_locks {
                holders.min(engines)
            } else {
                holders
            }
        })
        .max()
        .unwrap_or(1)
        .max(1)
}

/// The GPU wait of task `i` under `static-priority` (one token queue per
/// GPU ordered by the jobs' priorities, FIFO among equals; our derivation):
/// a waiting request is passed only by more urgent ones, so it waits for
/// at most one less urgent hold (the one in progress when it arrived) and
/// for every more urgent request issued before it is granted. A more
/// urgent task j issues at most one request per job, inside the job's
/// window [a, a + D_j] while it meets its deadlines, so at most
/// ⌈(B + D_j)/T_j⌉ of its requests fall in a wait of length B (the
/// request-driven count of Patel et al., RTAS 2018, for priority-ordered
/// queues):
///
/// ```text
/// B = max_{l less urgent} H_l + Σ_{j more urgent} ⌈(B + D_j)/T_j⌉·H_j
/// ```
///
/// iterated from its first term, unbounded past D_i. `sharing` gives (task,
/// hold, CPU part of the hold) of the other users of i's GPU. Priorities
/// are C-FP / G-FP's global deadline- or rate-monotonic order
/// (`fp::dm_order`, `fp::rm_order`: the ranks the simulator and `rtgpu
/// run` key requests with); one token per GPU (with more, co-holders share
/// the GPU's engines, for which a static assignment has no charge). The
/// bound assumes the more urgent users meet their deadlines: the report
/// makes it conditional on them where they do not.
fn priority_ordered_wait(
    w: &Workload,
    i: usize,
    sharing: &[(usize, Time, Time)],
) -> Result<wait::CountedWait, String> {
    use rtgpu_model::{CpuScheduler, PriorityAssignment};
    if !matches!(
        w.policy.cpu_scheduler,
        CpuScheduler::ClusteredFp | CpuScheduler::GlobalFp
    ) {
        return Err(
            "priority-ordered token queues (`static-priority`) are analysed under C-FP and \
             G-FP, whose priorities are global; under P-FP and EDF a queue would compare \
             per-core ranks or deadlines, for which rtgpu has no bound"
                .into(),
        );
    }
    if w.policy.tokens() > 1 {
        return Err(
            "priority-ordered token queues (`static-priority`) are analysed with one token per \
             GPU"
            .into(),
        );
    }
    if w.tasks.iter().any(|t| t.reservation && t.uses_gpu()) {
        return Err(
            "a GPU-using CPU reservation requests tokens at no fixed priority; rtgpu has no \
             bound for priority-ordered queues beside it"
                .into(),
        );
    }
    let rm = w.policy.priority == PriorityAssignment::RateMonotonic;
    let key = |j: usize| {
        let t = &w.tasks[j];
        if rm {
            (t.period, t.deadline, j)
        } else {
            (t.deadline, t.period, j)
        }
    };
    let (lower, higher): (Vec<_>, Vec<_>) = sharing.iter().partition(|s| key(s.0) > key(i));
    let (mut first, mut first_cpu, mut first_task) = (0, 0, None);
    for &&(j, h, x) in &lower {
        if h > first {
            (first, first_cpu, first_task) = (h, x, Some(j));
        }
    }
    let limit = w.tasks[i].deadline;
    let mut b = first;
    loop {
        let mut next = first as u128;
        let mut cpu = first_cpu as u128;
        let mut ahead = u64::from(first_task.is_some());
        for &&(j, h, x) in &higher {
            let t = &w.tasks[j];
            let n = (b as u128 + t.deadline as u128).div_ceil(t.period.max(1) as u128);
            next += n * h as u128;
            cpu += n * x as u128;
            ahead = ahead.saturating_add(n as u64);
        }
        if next > limit as u128 {
            return Err(format!(
                "its wait behind more urgent users of its GPU (priority-ordered queue) grows \
                 past its deadline {}",
                rtgpu_model::units::display_duration(limit)
            ));
        }
        let next = next as Time;
        if next == b {
            let mut from: Vec<usize> = first_task.into_iter().collect();
            from.extend(higher.iter().map(|s| s.0));
            return Ok(wait::CountedWait {
                ahead,
                wait: b,
                cpu: cpu.min(Time::MAX as u128) as Time,
                from,
            });
        }
        b = next;
    }
}

/// GPU operations per job of task `i`, each with one completion interrupt
/// (the simulator and `rtgpu run` raise one per copy chunk, kernel and
/// migration chunk, out and in when `staged`), at least the η the file
/// gives.
pub(crate) fn operations(w: &Workload, i: usize, staged: bool) -> u32 {
    w.tasks[i].gpu.as_ref().map_or(0, |g| {
        g.interrupts
            .max(g.operations_for(w.policy.chunk_size, staged))
    })
}

/// Whether a GPU's bottom halves run in one thread at the highest
/// effective priority among its ρ > 1 token holders (klmirqd's dependent
/// mode, PAI): a co-holder's bottom half can then run at another
/// holder's priority, and a holder's waits in that thread's FIFO behind
/// up to ρ − 1 co-holders' (each has at most one operation, so one bottom
/// half, pending).
pub fn shared_bottom_half_threads(w: &Workload) -> bool {
    w.policy.tokens() > 1
        && matches!(
            w.policy.interrupts,
            rtgpu_model::InterruptHandling::Klmirqd | rtgpu_model::InterruptHandling::Pai
        )
}

/// The CPU part of task `i`'s hold under the suspension-aware method: one
/// completion interrupt's Δth + Δbh per GPU operation ([`operations`]),
/// with a shared bottom-half thread ([`shared_bottom_half_threads`]) up to
/// ρ − 1 co-holders' Δbh before each, and its CPU work inside the section.
fn hold_cpu(w: &Workload, i: usize, staged: bool) -> Time {
    let o = &w.overheads;
    let Some(g) = w.tasks[i].gpu.as_ref() else {
        return 0;
    };
    let ops = u64::from(operations(w, i, staged));
    let queued = if shared_bottom_half_threads(w) {
        crate::overheads::mul(ops.saturating_mul(u64::from(w.policy.tokens() - 1)), o.bh)
    } else {
        0
    };
    crate::overheads::mul(ops, o.th.saturating_add(o.bh))
        .saturating_add(queued)
        .saturating_add(g.cpu)
}

/// A GPU holder's critical section under the k-FMLP or a static queue: its
/// own GPU work plus the handling of its η completion interrupts (seed 000
/// App. B: the holder keeps the GPU until they are handled) plus its CPU
/// work inside the section (`GpuPart::cpu`).
pub(crate) fn critical_section(w: &Workload, i: usize, own: Time) -> Time {
    let o = &w.overheads;
    let g = w.tasks[i].gpu.as_ref();
    let eta = g.map_or(0, |g| g.interrupts);
    let irq = crate::overheads::mul(u64::from(eta), o.th.saturating_add(o.bh));
    // The CPU work inside the section holds the GPU too.
    let cpu = g.map_or(0, |g| g.cpu);
    own.saturating_add(irq).saturating_add(cpu)
}

/// Per task of the workload (None for CPU-only tasks): the GPU analysis,
/// with the bounds of `method`: the seeds' theorems, or request-counted
/// waits ([`crate::gpu::wait`]) over each task's own hold.
/// `stretch[i]` (0 where missing) is added to task i's hold wherever that
/// hold blocks another task (module docs, "Hold stretch").
pub fn analyze_gpus(
    w: &Workload,
    domains: &[GpuDomain],
    stretch: &[Time],
    method: Method,
    notes: &mut Vec<String>,
) -> Vec<Option<GpuTaskReport>> {
    // Request-counted waits and own holds (the seeds' bounds only for the
    // oblivious method).
    let aware = method != Method::Oblivious;
    let stretch_of = |i: usize| stretch.get(i).copied().unwrap_or(0);
    let mut out: Vec<Option<GpuTaskReport>> = vec![None; w.tasks.len()];
    let undercounted: Vec<String> = w
        .tasks
        .iter()
        .filter_map(|t| {
            let g = t.gpu.as_ref()?;
            // The k-FMLP stages a migration through system memory (out and
            // in: the simulator's and the runtime's data path).
            let staged = w.policy.gpu_allocator == GpuAllocator::KFmlp;
            let ops = g.operations_for(w.policy.chunk_size, staged);
            (g.interrupts < ops)
                .then(|| format!("{} (eta {}, {ops} operations)", t.name, g.interrupts))
        })
        .collect();
    if !undercounted.is_empty() && w.overheads != rtgpu_model::Overheads::zero() {
        notes.push(format!(
            "interrupts per job (eta) below the GPU operations per job for {}: `rtgpu simulate` \
             and `rtgpu run` raise one completion interrupt per copy chunk, kernel and \
             migration chunk (out and in under the k-FMLP, which stages migrations in system \
             memory), while this accounting charges the eta the file gives (seed 000 \
             App. B); set `interrupts` to the operation count for a bound that covers them",
            rtgpu_model::listing::listing(&undercounted)
        ));
    }
    let uses_vgpus = w
        .tasks
        .iter()
        .any(|t| t.gpu.as_ref().is_some_and(|g| g.vgpu.is_some()));
    // Static assignment's GPU of each task (`Workload::static_gpus`), its
    // pool the domain that holds it.
    let mut domain_of: Vec<Option<usize>> = vec![None; w.tasks.len()];
    for (di, d) in domains.iter().enumerate() {
        for &i in &d.members {
            if let Some(slot) = domain_of.get_mut(i) {
                slot.get_or_insert(di);
            }
        }
    }
    let static_of = w.static_gpus(|i| {
        let di = domain_of[i]?;
        Some((di, domains[di].gpus.as_slice()))
    });
    for d in domains {
        let gpu_members: Vec<usize> = d
            .members
            .iter()
            .copied()
            .filter(|&i| w.tasks[i].uses_gpu())
            .collect();
        if gpu_members.is_empty() {
            continue;
        }
        let g = d.gpus.len() as u32;
        let base = |i: usize| {
            let t = &w.tasks[i];
            let eta = t.gpu.as_ref().map_or(0, |g| g.interrupts);
            GpuTaskReport {
                allocator: String::new(),
                copy_time: 0,
                kernel_time: 0,
                section_cpu: t.gpu.as_ref().map_or(0, |g| g.cpu),
                interrupts: eta,
                copy_requests: None,
                exec_requests: None,
                token_blocking: None,
                engine_blocking: None,
                token_hold_time: None,
                hold_stretch: (stretch_of(i) > 0).then_some(stretch_of(i)),
                bottom_half_wait: None,
                kfmlp_l_aware: None,
                kfmlp_l_oblivious: None,
                kfmlp_exact_solved: None,
                vgpu_share: None,
                vgpu_response: None,
                unbounded_because: None,
                requests_ahead: None,
                hold: None,
                hold_cpu: None,
                wait_cpu: None,
                wait_behind: Vec::new(),
            }
        };
        if g == 0 {
            for &i in &gpu_members {
                let mut r = base(i);
                r.allocator = "none".into();
                r.unbounded_because = Some("its cluster has no GPU".into());
                out[i] = Some(r);
            }
            continue;
        }
        // vGPU members and the rest.
        let (vmembers, others): (Vec<usize>, Vec<usize>) = gpu_members
            .iter()
            .partition(|&&i| w.tasks[i].gpu.as_ref().is_some_and(|g| g.vgpu.is_some()));
        if !vmembers.is_empty() {
            vgpu_bounds(w, &vmembers, &gpu_members, &mut out, &base);
        }
        if uses_vgpus && !others.is_empty() {
            for &i in &others {
                let mut r = base(i);
                r.allocator = "outside every vGPU".into();
                r.unbounded_because = Some(
                    "it shares GPUs with vGPU reservations but belongs to none; rtgpu has no \
                     bound for mixing reserved and unreserved GPU work"
                        .into(),
                );
                out[i] = Some(r);
            }
            continue;
        }
        match w.policy.gpu_allocator {
            GpuAllocator::Static | GpuAllocator::StaticPriority => {
                let by_priority = w.policy.gpu_allocator == GpuAllocator::StaticPriority;
                // In file order, as in the simulator and `rtgpu run` (a
                // targeted search found the analysis dealing them in its
                // cluster-assignment order instead).
                let mut others = others.clone();
                others.sort_unstable();
                let bus = if aware { bus_sharing(w, d, false) } else { 1 };
                let works: Vec<(usize, Time)> = others
                    .iter()
                    .map(|&i| {
                        let wk = own_work_shared(w, &w.tasks[i], false, false, bus);
                        (i, wk.copy_in + wk.copy_out + wk.kernels)
                    })
                    .collect();
                // (hold, CPU part) of a task as it blocks others.
                let hold = |j: usize, own: Time| {
                    if aware {
                        let cpu = hold_cpu(w, j, false);
                        (own.saturating_add(cpu).saturating_add(stretch_of(j)), cpu)
                    } else {
                        (critical_section(w, j, own).saturating_add(stretch_of(j)), 0)
                    }
                };
                // Each task's GPU (its `device`, else dealt in file order
                // among the unpinned).
                let gpu_of: Vec<usize> = works
                    .iter()
                    .map(|&(i, _)| static_of[i].unwrap_or(d.gpus[0]))
                    .collect();
                for (pos, &(i, own)) in works.iter().enumerate() {
                    let sharing: Vec<(usize, Time)> = works
                        .iter()
                        .enumerate()
                        .filter(|&(q, &(j, _))| gpu_of[q] == gpu_of[pos] && j != i)
                        .map(|(_, &jw)| jw)
                        .collect();
                    let queue: Vec<(Time, Time)> =
                        sharing.iter().map(|&(j, own)| hold(j, own)).collect();
                    let wk = own_work_shared(w, &w.tasks[i], false, false, bus);
                    let mut r = base(i);
                    r.allocator = format!(
                        "static on {} ({})",
                        w.platform.gpus[gpu_of[pos]].name,
                        if by_priority {
                            "priority-ordered"
                        } else {
                            "FIFO"
                        }
                    );
                    r.copy_time = wk.copy_in + wk.copy_out;
                    r.kernel_time = wk.kernels;
                    if !d.gpus.contains(&gpu_of[pos]) {
                        r.unbounded_because =
                            Some("it is fixed (`device`) on a GPU outside its GPU pool".into());
                    } else if !w.policy.engine_locks && w.policy.tokens() > 1 {
                        r.unbounded_because = Some(DRIVER_ARBITRATES.into());
                    } else if by_priority {
                        let sharing_holds: Vec<(usize, Time, Time)> = sharing
                            .iter()
                            .zip(&queue)
                            .map(|(&(j, _), &(h, x))| (j, h, x))
                            .collect();
                        match priority_ordered_wait(w, i, &sharing_holds) {
                            Ok(b) => {
                                r.token_blocking = Some(b.wait);
                                r.requests_ahead = Some(b.ahead);
                                r.wait_cpu = aware.then_some(b.cpu);
                                r.wait_behind = b.from;
                                if aware {
                                    (r.hold, r.hold_cpu) =
                                        (Some(hold(i, own).0), Some(hold(i, own).1));
                                }
                            }
                            Err(why) => r.unbounded_because = Some(why),
                        }
                    } else if aware {
                        // Every other task of its GPU at most once: with
                        // ρ > 1 the shortest of the GPU's ρ queues holds at
                        // most ⌊(N − 1)/ρ⌋ (crate::gpu::wait), but the
                        // co-holders then share its engines, for which a
                        // static assignment has no Theorem 1 charge; each
                        // other task's one request covers both (the seed
                        // bound's count, Theorem 1 with k = 1).
                        let counted = wait::wait_bound(&queue, queue.len() as u64);
                        r.token_blocking = Some(counted.wait);
                        r.requests_ahead = Some(counted.ahead);
                        r.wait_cpu = Some(counted.cpu);
                        r.wait_behind = counted.from.iter().map(|&k| sharing[k].0).collect();
                        (r.hold, r.hold_cpu) = (Some(hold(i, own).0), Some(hold(i, own).1));
                    } else {
                        let lens: Vec<Time> = queue.iter().map(|q| q.0).collect();
                        r.token_blocking = Some(kfmlp::l_aware_bound(&lens, 1));
                    }
                    out[i] = Some(r);
                }
            }
            GpuAllocator::KFmlp => {
                // The k-FMLP stages a migration in system memory (out and
                // in): both directions share the links.
                let bus = if aware { bus_sharing(w, d, g > 1) } else { 1 };
                let holds: Vec<(Time, Time)> = others
                    .iter()
                    .map(|&i| {
                        let wk = own_work_shared(w, &w.tasks[i], g > 1, false, bus);
                        let own = wk.copy_in + wk.copy_out + wk.state + wk.kernels;
                        if aware {
                            let cpu = hold_cpu(w, i, true);
                            (own.saturating_add(cpu).saturating_add(stretch_of(i)), cpu)
                        } else {
                            (critical_section(w, i, own).saturating_add(stretch_of(i)), 0)
                        }
                    })
                    .collect();
                let lens: Vec<Time> = holds.iter().map(|h| h.0).collect();
                let bounds = kfmlp::blocking_bounds(&lens, g);
                for (k, &i) in others.iter().enumerate() {
                    let wk = own_work_shared(w, &w.tasks[i], g > 1, false, bus);
                    let b = bounds[k];
                    let mut r = base(i);
                    r.allocator = format!("k-FMLP (k = {g})");
                    r.copy_time = wk.copy_in + wk.copy_out + wk.state;
                    r.kernel_time = wk.kernels;
                    r.token_blocking = Some(b.exact);
                    r.kfmlp_l_aware = Some(b.l_aware);
                    r.kfmlp_l_oblivious = Some(b.l_oblivious);
                    r.kfmlp_exact_solved = Some(b.exact_solved);
                    if aware {
                        // Eq. (3)'s wait is already per request; the CPU in
                        // it is at most every other holder's (each holds
                        // at most once ahead: one request per task).
                        let cpus: Vec<Time> = (0..others.len())
                            .filter(|&j| j != k)
                            .map(|j| holds[j].1)
                            .collect();
                        r.wait_cpu = Some(wait::longest_sum(&cpus, cpus.len() as u64));
                        (r.hold, r.hold_cpu) = (Some(holds[k].0), Some(holds[k].1));
                    }
                    out[i] = Some(r);
                }
                if bounds.iter().any(|b| !b.exact_solved) {
                    notes.push(
                        "k-FMLP: the exact bound (seed 000 App. A Eq. 3) was too large to solve \
                         for some tasks; Theorem 1's bound is charged for them"
                            .into(),
                    );
                }
            }
            GpuAllocator::GpuSync { affinity } => {
                gpusync_bounds(
                    w, d, &others, affinity, stretch, aware, &mut out, &base, notes,
                );
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn gpusync_bounds(
    w: &Workload,
    d: &GpuDomain,
    members: &[usize],
    affinity: bool,
    stretch: &[Time],
    aware: bool,
    out: &mut [Option<GpuTaskReport>],
    base: &dyn Fn(usize) -> GpuTaskReport,
    notes: &mut Vec<String>,
) {
    let p = &w.policy;
    let g = d.gpus.len() as u32;
    let can_migrate = g > 1
        && members
            .iter()
            .any(|&i| w.tasks[i].gpu.as_ref().is_some_and(|x| x.state > 0));
    let copy_locking = if !can_migrate {
        CopyLocking::SystemMemory
    } else {
        match p.peer_locking {
            PeerLocking::Dgl => CopyLocking::Dgl,
            PeerLocking::Nested => CopyLocking::Nested,
        }
    };
    let cfg = GpuSyncConfig {
        cpus: d.cpus,
        gpus: g,
        rho: p.tokens(),
        copy_locking,
    };
    let bw = &w.platform.bandwidth;
    let slowest = bw
        .host_to_device
        .min(bw.device_to_host)
        .min(if can_migrate { bw.peer } else { u64::MAX });
    let bus = if aware {
        bus_sharing(w, d, can_migrate)
    } else {
        1
    };
    let irq = w.overheads.th.saturating_add(w.overheads.bh);
    let mut largest_transfer = 0u64;
    let mut max_kernels = 0u64;
    let mut reqs = Vec::with_capacity(members.len());
    let mut max = GpuSyncMaxima::default();
    for &i in members {
        let t = &w.tasks[i];
        let Some(gp) = &t.gpu else { continue };
        let state = if can_migrate { gp.state } else { 0 };
        for b in [gp.copy_in, gp.copy_out, state] {
            largest_transfer = largest_transfer.max(b);
        }
        // One execution-engine request per job: the holder keeps the lock
        // from its first kernel to its last (module docs).
        reqs.push(GpuSyncRequest {
            copy_requests: gpusync::copy_requests(&[gp.copy_in, gp.copy_out, state], p.chunk_size),
            exec_requests: u64::from(!gp.kernels.is_empty()),
        });
        let kernels = gp.kernels.iter().fold(0, |a: Time, &k| a.saturating_add(k));
        let handled = crate::overheads::mul(gp.kernels.len() as u64, irq);
        max_kernels = max_kernels.max(gp.kernels.len() as u64);
        max.exec = max.exec.max(kernels.saturating_add(handled));
        max.cpu = max.cpu.max(t.wcet);
    }
    let chunk = p
        .chunk_size
        .map_or(largest_transfer, |c| c.min(largest_transfer));
    max.copy = crate::overheads::mul(bus, gpusync::transfer_time(chunk, slowest));
    // Every engine-lock request's operation (a kernel, a copy chunk) raises
    // one completion interrupt, and its holder keeps the lock until the
    // interrupt is handled, as a k-FMLP holder keeps its GPU
    // ([`critical_section`], seed 000 App. B's s_i): L^C grows by Δth + Δbh
    // (0 without overheads), L^E by that per kernel (above), and with them
    // the token hold.
    if max.copy > 0 {
        max.copy = max.copy.saturating_add(irq);
    }
    let mut blocks = gpusync::total_blocking(&cfg, &reqs, &max);
    // Theorem 2 with each hold stretched (module docs): THT_max over
    // THT_i + stretch_i.
    let tht_max = members
        .iter()
        .zip(&blocks)
        .map(|(&i, b)| {
            b.token_hold_time
                .saturating_add(stretch.get(i).copied().unwrap_or(0))
        })
        .max()
        .unwrap_or(0);
    let users = reqs.len() as u32;
    let tb = gpusync::token_blocking_without_donation(&cfg, users, tht_max);
    for b in &mut blocks {
        b.token_blocking = b.token_blocking.max(tb);
        b.total = b.token_blocking.saturating_add(b.engine_blocking);
    }
    let no_engine_bound = !p.engine_locks && p.tokens() > 1;
    // The suspension-aware method's holds: each task's own operations,
    // what it waits for inside its section (Theorem 1), its interrupts
    // and section CPU work, and its stretch (crate::gpu::wait). The
    // engine holders a holder waits behind inherit its priority (FIFO
    // engine locks with inheritance), so their interrupt handling is CPU
    // work in its hold too: one Δth + Δbh per blocking request.
    let holds: Vec<(Time, Time)> = members
        .iter()
        .zip(&reqs)
        .zip(&blocks)
        .map(|((&i, req), b)| {
            let wk = own_work_shared(w, &w.tasks[i], can_migrate, true, bus);
            let own = wk.copy_in + wk.copy_out + wk.state + wk.kernels;
            let engine_cpu = crate::overheads::mul(
                req.copy_requests * gpusync::n_copy(&cfg)
                    + req.exec_requests * gpusync::n_exec(cfg.rho) * max_kernels,
                irq,
            );
            let cpu = hold_cpu(w, i, false).saturating_add(engine_cpu);
            let hold = own
                .saturating_add(b.engine_blocking)
                .saturating_add(cpu)
                .saturating_add(stretch.get(i).copied().unwrap_or(0));
            (hold, cpu)
        })
        .collect();
    let k = u64::from(cfg.rho) * u64::from(g);
    // Every GPU-using task of the domain, as the simulator and `rtgpu run`
    // count a pool's users (vGPU members included: a larger count only
    // lengthens the cap).
    let users = d.members.iter().filter(|&&i| w.tasks[i].uses_gpu()).count() as u64;
    let choice = if affinity {
        QueueChoice::EarliestUnderCap {
            tokens: k,
            // ⌈min(m, N)/k⌉ with N the domain's GPU users, as
            // `rtgpu_policy::token::pool_queue_cap` (at most one request
            // pending per core and per task); m here is at least the pool's
            // cores the simulator and `rtgpu run` use, and a longer cap only
            // counts more requests ahead.
            cap: u64::from(d.cpus)
                .min(users.max(1))
                .div_ceil(k.max(1))
                .max(1),
        }
    } else {
        QueueChoice::Shortest { tokens: k }
    };
    let ahead = wait::requests_ahead(choice, members.len() as u64);
    for (pos, ((&i, req), b)) in members.iter().zip(&reqs).zip(&blocks).enumerate() {
        let wk = own_work_shared(w, &w.tasks[i], can_migrate, true, bus);
        let mut r = base(i);
        r.allocator = format!(
            "GPUSync{} (ρ = {}, {} GPUs, m = {}, {})",
            if affinity { " with affinity" } else { "" },
            cfg.rho,
            g,
            cfg.cpus,
            match copy_locking {
                CopyLocking::SystemMemory => "one copy engine at a time",
                CopyLocking::Dgl => "DGL peer copies",
                CopyLocking::Nested => "nested peer copies",
            }
        );
        r.copy_time = wk.copy_in + wk.copy_out + wk.state;
        r.kernel_time = wk.kernels;
        r.copy_requests = Some(req.copy_requests);
        r.exec_requests = Some(req.exec_requests);
        if no_engine_bound {
            r.unbounded_because = Some(DRIVER_ARBITRATES.into());
        } else {
            r.token_blocking = Some(b.token_blocking);
            r.engine_blocking = Some(b.engine_blocking);
            r.token_hold_time = Some(b.token_hold_time);
            if aware {
                let other: Vec<usize> = (0..holds.len()).filter(|&j| j != pos).collect();
                let others: Vec<(Time, Time)> = other.iter().map(|&j| holds[j]).collect();
                let counted = wait::wait_bound(&others, ahead);
                r.token_blocking = Some(counted.wait);
                r.requests_ahead = Some(counted.ahead);
                r.wait_cpu = Some(counted.cpu);
                r.wait_behind = counted.from.iter().map(|&k| members[other[k]]).collect();
                (r.hold, r.hold_cpu) = (Some(holds[pos].0), Some(holds[pos].1));
            }
        }
        out[i] = Some(r);
    }
    if no_engine_bound {
        notes.push(
            "GPUSync without engine locks and ρ > 1 has no engine-blocking bound: GPU-using tasks \
             are reported with unbounded GPU waits"
                .into(),
        );
    }
    let (best, _) = gpusync::best_rho(d.cpus, g, copy_locking, 4);
    if best != cfg.rho && p.engine_locks {
        let note = format!(
            "GPUSync: ρ = {best} minimises ⌈m/(ρg)⌉·N^C for {} CPUs and {g} GPUs (seed 004 \
             App. A, Discussion); the workload uses ρ = {}",
            d.cpus, cfg.rho
        );
        if !notes.contains(&note) {
            notes.push(note);
        }
    }
}

fn vgpu_bounds(
    w: &Workload,
    vmembers: &[usize],
    all_gpu: &[usize],
    out: &mut [Option<GpuTaskReport>],
    base: &dyn Fn(usize) -> GpuTaskReport,
) {
    let vg_of = |i: usize| w.tasks[i].gpu.as_ref().and_then(|g| g.vgpu);
    let work = |i: usize| {
        let wk = own_work(w, &w.tasks[i], false, false);
        (wk.copy_in, wk.copy_out, wk.kernels)
    };
    let longest_op = |i: usize| {
        let (ci, co, _) = work(i);
        let k = w.tasks[i]
            .gpu
            .as_ref()
            .and_then(|g| g.kernels.iter().copied().max())
            .unwrap_or(0);
        ci.max(co).max(k)
    };
    for &i in vmembers {
        let Some(v) = vg_of(i) else { continue };
        let Some(vg) = w.vgpus.get(v) else { continue };
        let same: Vec<usize> = vmembers
            .iter()
            .copied()
            .filter(|&j| vg_of(j) == Some(v))
            .collect();
        let backlog: Time = same
            .iter()
            .map(|&j| {
                let (a, b, c) = work(j);
                a + b + c
            })
            .fold(0, Time::saturating_add);
        let other_op = all_gpu
            .iter()
            .copied()
            .filter(|&j| {
                vg_of(j).is_some_and(|u| u != v && w.vgpus.get(u).is_some_and(|x| x.gpu == vg.gpu))
            })
            .map(longest_op)
            .max()
            .unwrap_or(0);
        // The budget and period the simulator's and `rtgpu run`'s vGPU
        // scheduler replenish (a share of `Vgpu::SHARE_PERIOD`; the
        // analysis once took a share of the members' shortest period,
        // 20 times longer for examples/hog-vgpu.toml, than what runs).
        let (budget, period) = vg.budget_and_period();
        let reservation = vgpu::Reservation { budget, period };
        let (ci, co, k) = work(i);
        let own = ci + co + k;
        let b = vgpu::member_bound(reservation, own, backlog, other_op);
        let mut r = base(i);
        r.allocator = format!(
            "vGPU {} on {} ({}, {:.0}% = {} per {})",
            vg.name,
            w.platform.gpus.get(vg.gpu).map_or("?", |g| g.name.as_str()),
            match vg.policy {
                rtgpu_model::VgpuPolicy::Band => "BAND",
                rtgpu_model::VgpuPolicy::Fifo => "FIFO",
                rtgpu_model::VgpuPolicy::FixedPriority => "fixed priority",
            },
            reservation.share() * 100.0,
            rtgpu_model::units::format_duration(reservation.budget),
            rtgpu_model::units::format_duration(reservation.period),
        );
        r.copy_time = ci + co;
        r.kernel_time = k;
        r.vgpu_share = Some(reservation.share());
        // A GPU's vGPU scheduler runs the policy of its first vGPU (as the
        // simulator and `rtgpu run` do). Only BAND enforces the budgets
        // (seed 001: BAND is fixed priority *with* resource reservation);
        // FIFO and fixed priority keep no vGPU from taking the GPU, so the
        // periodic-resource bound does not apply (a targeted search found
        // a member starved to 9x its bound).
        let policy = w.vgpu_policy(vg.gpu).unwrap_or(vg.policy);
        if policy != rtgpu_model::VgpuPolicy::Band {
            r.unbounded_because = Some(format!(
                "the vGPU scheduler of {} is {}, which does not enforce the vGPUs' budgets \
                 (BAND, fixed priority with resource reservation, does: seed 001); rtgpu has no bound for its members",
                w.platform.gpus.get(vg.gpu).map_or("?", |g| g.name.as_str()),
                if policy == rtgpu_model::VgpuPolicy::Fifo {
                    "FIFO"
                } else {
                    "fixed priority"
                }
            ));
            out[i] = Some(r);
            continue;
        }
        r.vgpu_response = b.gpu_response;
        r.token_blocking = b.wait;
        if b.wait.is_none() {
            r.unbounded_because = Some(format!(
                "its vGPU's budget per period ({}) does not exceed the longest non-preemptive \
                 operation of another vGPU ({})",
                rtgpu_model::units::format_duration(reservation.budget),
                rtgpu_model::units::format_duration(other_op)
            ));
        }
        out[i] = Some(r);
    }
}
