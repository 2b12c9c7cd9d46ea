//! The validated workload model. Every time is integer nanoseconds, every size
//! integer bytes, every bandwidth integer bytes per second (DESIGN.md §3.3).
//!
//! These types are what `rtgpu analyze`, `simulate`, `run` and the Python
//! bindings consume. They are produced only by [`crate::parse_workload`], which
//! guarantees the invariants documented on each field.

use serde::{Deserialize, Serialize};

/// Nanoseconds.
pub type Nanos = u64;
/// Bytes.
pub type Bytes = u64;
/// Bytes per second.
pub type BytesPerSec = u64;

/// Where a value came from in the workload file (1-based line and column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Optional human name; defaults to the file stem.
    pub name: String,
    pub platform: Platform,
    pub overheads: Overheads,
    pub policy: Policy,
    pub vgpus: Vec<Vgpu>,
    pub tasks: Vec<Task>,
}

impl Workload {
    /// The policy of GPU `gpu`'s vGPU scheduler: that of its first vGPU in
    /// file order (the analysis, the simulator and `rtgpu run` alike);
    /// `None` for a GPU without vGPUs.
    pub fn vgpu_policy(&self, gpu: usize) -> Option<VgpuPolicy> {
        self.vgpus.iter().find(|v| v.gpu == gpu).map(|v| v.policy)
    }

    /// The GPU pools, each shared through one allocator: one per cluster
    /// (seed 004 §4.2: one per NUMA node), or one over every GPU under a
    /// global scheduler (G-FP, G-EDF), whose tasks run on every core. The
    /// analysis, the simulator and `rtgpu run` alike.
    pub fn gpu_pools(&self) -> Vec<GpuPool> {
        let p = &self.platform;
        if self.policy.cpu_scheduler.is_global() {
            return vec![GpuPool {
                gpus: (0..p.gpus.len()).collect(),
                cores: p.total_cores(),
            }];
        }
        p.clusters
            .iter()
            .enumerate()
            .map(|(c, cluster)| GpuPool {
                gpus: (p.gpus.iter().enumerate())
                    .filter(|(_, g)| g.cluster == c)
                    .map(|(i, _)| i)
                    .collect(),
                cores: cluster.cores,
            })
            .collect()
    }

    /// The GPU (index into `Platform::gpus`) of GPU-using task `task`
    /// outside any vGPU under static assignment: its `device` where it
    /// names one, otherwise GPU `slot mod g` of its pool's GPUs `pool`,
    /// where `slot` counts the pool's earlier GPU users outside any vGPU
    /// and without a `device`, in file order (the analysis, the simulator
    /// and `rtgpu run` alike). `None` for a pool without GPUs.
    pub fn static_gpu(&self, task: usize, slot: usize, pool: &[usize]) -> Option<usize> {
        let pinned = self.tasks.get(task).and_then(|t| t.gpu.as_ref()?.device);
        pinned.or_else(|| pool.get(slot.checked_rem(pool.len())?).copied())
    }

    /// Every task's GPU under static assignment ([`Workload::static_gpu`]),
    /// given each task's GPU pool `pool_of(i)`: an id (the slots of tasks
    /// with the same id are counted together) and the pool's GPUs. The
    /// slots are dealt in file order among each pool's GPU users outside
    /// vGPUs without a `device`. `None` for a task that uses no GPU, a vGPU
    /// member, a task `pool_of` gives no pool, and an unpinned task of a
    /// pool without GPUs. The analysis, the simulator and `rtgpu run` each
    /// know the pools their own way and share this count.
    pub fn static_gpus<'p>(
        &self,
        pool_of: impl Fn(usize) -> Option<(usize, &'p [usize])>,
    ) -> Vec<Option<usize>> {
        let mut next: Vec<usize> = Vec::new();
        (self.tasks.iter().enumerate())
            .map(|(i, t)| {
                let g = t.gpu.as_ref().filter(|g| g.vgpu.is_none())?;
                let (id, gpus) = pool_of(i)?;
                if next.len() <= id {
                    next.resize(id + 1, 0);
                }
                let next_slot = next.get_mut(id)?;
                let slot = *next_slot;
                *next_slot += usize::from(g.device.is_none());
                self.static_gpu(i, slot, gpus)
            })
            .collect()
    }

    /// The index in [`Workload::gpu_pools`] of the pool that cluster
    /// `cluster`'s tasks use.
    pub fn gpu_pool_of(&self, cluster: usize) -> usize {
        if self.policy.cpu_scheduler.is_global() {
            0
        } else {
            cluster
        }
    }
}

/// GPUs shared through one allocator ([`Workload::gpu_pools`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuPool {
    /// Indices into `Platform::gpus`, ascending (a GPU's place here is its
    /// index in the pool's allocator).
    pub gpus: Vec<usize>,
    /// The cores its users run on (m of GPUSync's R²DGLP).
    pub cores: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Platform {
    /// Clusters / NUMA nodes; at least one. Core ids are global and dense:
    /// cluster 0 owns cores 0..n0, cluster 1 owns n0..n0+n1, ...
    pub clusters: Vec<Cluster>,
    /// All GPUs; `Gpu::cluster` says which cluster they belong to.
    pub gpus: Vec<Gpu>,
    /// PCIe topology: switches / I/O hubs (seed 004 §2, Fig. 1).
    pub pcie: Vec<PcieNode>,
    pub bandwidth: Bandwidth,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    pub name: String,
    /// Number of cores (>= 1).
    pub cores: u32,
    /// First global core id of this cluster.
    pub first_core: u32,
    /// Indices into `Platform::gpus`.
    pub gpus: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    pub name: String,
    /// Index into `Platform::clusters`.
    pub cluster: usize,
    /// 1 or 2.
    pub copy_engines: u8,
    /// Index into `Platform::pcie` of the switch / hub it attaches to, if a
    /// topology is given.
    pub attach: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PcieNode {
    pub name: String,
    /// Index of the parent switch / hub; `None` for an I/O hub (root of a node).
    pub parent: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bandwidth {
    pub host_to_device: BytesPerSec,
    pub device_to_host: BytesPerSec,
    pub peer: BytesPerSec,
}

impl Default for Bandwidth {
    /// PCIe 2.0 x16 as measured in practice (seed 004's GTX-470 platform):
    /// about 6 GB/s each way; peer copies somewhat slower. Assumed values,
    /// documented in crates/model/README.md.
    fn default() -> Self {
        Bandwidth {
            host_to_device: 6_000_000_000,
            device_to_host: 6_000_000_000,
            peer: 5_000_000_000,
        }
    }
}

/// System overheads, seed 000 App. B; defaults are seed 000 Table III.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overheads {
    pub sch: Nanos,
    pub cxs: Nanos,
    pub ipi: Nanos,
    pub rel: Nanos,
    pub th: Nanos,
    pub bh: Nanos,
    pub krel: Nanos,
    pub paisch: Nanos,
    pub pairel: Nanos,
    pub tck: Nanos,
    /// Tick quantum Q.
    pub quantum: Nanos,
}

impl Default for Overheads {
    /// seed 000, Table III.
    fn default() -> Self {
        Overheads {
            sch: 630,
            cxs: 360,
            ipi: 600,
            rel: 670,
            th: 16_440,
            bh: 29_900,
            krel: 1_390,
            paisch: 130,
            pairel: 560,
            tck: 860,
            quantum: 1_000_000,
        }
    }
}

impl Overheads {
    /// No overheads at all (overhead-oblivious analysis); the tick quantum
    /// stays 1 ms because it is a period, not a cost.
    pub fn zero() -> Self {
        Overheads {
            sch: 0,
            cxs: 0,
            ipi: 0,
            rel: 0,
            th: 0,
            bh: 0,
            krel: 0,
            paisch: 0,
            pairel: 0,
            tck: 0,
            quantum: 1_000_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CpuScheduler {
    PartitionedFp,
    ClusteredFp,
    GlobalFp,
    ClusteredEdf,
    GlobalEdf,
}

impl CpuScheduler {
    /// G-FP or G-EDF: one scheduling domain over every core.
    pub fn is_global(self) -> bool {
        matches!(self, CpuScheduler::GlobalFp | CpuScheduler::GlobalEdf)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FitRule {
    First,
    Best,
    Worst,
    Next,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SortOrder {
    DecreasingUtilization,
    DecreasingSize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Partitioning {
    /// Bin-packing without splitting.
    Fit { rule: FitRule, order: SortOrder },
    /// seed 003 Algorithm 1 with tasks taken in the given order (DM priority).
    PdmsHpts { order: SortOrder },
    /// seed 003 Algorithm 2 (decreasing size).
    PdmsHptsDs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PriorityAssignment {
    DeadlineMonotonic,
    RateMonotonic,
    Audsley,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GpuAllocator {
    Static,
    /// Static assignment with each GPU's token queue ordered by the
    /// requesting job's scheduling priority (FIFO among equals) instead of
    /// arrival: a waiting request is passed only by more urgent ones.
    StaticPriority,
    KFmlp,
    GpuSync {
        affinity: bool,
    },
}

impl GpuAllocator {
    /// The name a workload file gives it (`gpu_allocator = "..."`).
    pub fn name(self) -> &'static str {
        match self {
            GpuAllocator::Static => "static",
            GpuAllocator::StaticPriority => "static-priority",
            GpuAllocator::KFmlp => "k-fmlp",
            GpuAllocator::GpuSync { affinity: false } => "gpusync",
            GpuAllocator::GpuSync { affinity: true } => "gpusync-affinity",
        }
    }

    /// Whether each task's GPU is fixed (its `device`, else round robin in
    /// file order over its pool's GPUs: [`Workload::static_gpu`]).
    pub fn is_static(self) -> bool {
        matches!(self, GpuAllocator::Static | GpuAllocator::StaticPriority)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PeerLocking {
    Dgl,
    Nested,
}

/// When a holder's engine lock passes to the next holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EngineHandoff {
    /// Once the holder has learned that its operation completed (after the
    /// completion interrupt and its bottom half): seed 004 §4.2, "a job
    /// releases an engine lock once all of its engine-related operations
    /// complete".
    Completion,
    /// As of the operation's completion on the device: the next holder is
    /// granted while the operation still runs and queues its own behind it
    /// on the same engine (FIFO on the device, like the FIFO lock), so the
    /// engine never waits for a CPU. Only for operations on the locked
    /// engine alone (kernels, host copies); peer copies keep `Completion`.
    Device,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum InterruptHandling {
    Slih,
    Pai,
    /// PREEMPT_RT style threads at a fixed user-set priority.
    FixedPriorityThreads {
        priority: u8,
    },
    Klmirqd,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    pub cpu_scheduler: CpuScheduler,
    pub partitioning: Partitioning,
    pub priority: PriorityAssignment,
    pub gpu_allocator: GpuAllocator,
    /// rho tokens per GPU (>= 1).
    pub tokens_per_gpu: u32,
    pub engine_locks: bool,
    pub peer_locking: PeerLocking,
    pub engine_handoff: EngineHandoff,
    /// Copy chunk size in bytes; `None` = unchunked.
    pub chunk_size: Option<Bytes>,
    pub interrupts: InterruptHandling,
    /// GPU speed-up R (seed 000 §VII), > 0.
    pub gpu_speedup: f64,
}

impl Default for Policy {
    /// What a workload file gets when it omits a `[policy]` key; see
    /// crates/model/README.md for the reasons.
    fn default() -> Self {
        Policy {
            cpu_scheduler: CpuScheduler::PartitionedFp,
            partitioning: Partitioning::PdmsHptsDs,
            priority: PriorityAssignment::DeadlineMonotonic,
            gpu_allocator: GpuAllocator::GpuSync { affinity: true },
            tokens_per_gpu: 2,
            engine_locks: true,
            peer_locking: PeerLocking::Dgl,
            engine_handoff: EngineHandoff::Completion,
            chunk_size: None,
            interrupts: InterruptHandling::Klmirqd,
            gpu_speedup: 16.0,
        }
    }
}

impl Policy {
    /// GPU tokens per GPU the allocator hands out, in the simulator and in
    /// `rtgpu run` alike: ρ (`tokens_per_gpu`) under GPUSync (seed 004
    /// §4.2) and static assignment; 1 under the k-FMLP, whose k = g
    /// resources are whole GPUs (seed 000 App. A), as its analysis assumes.
    pub fn tokens(&self) -> u32 {
        match self.gpu_allocator {
            GpuAllocator::KFmlp => 1,
            _ => self.tokens_per_gpu.max(1),
        }
    }

    /// Whether a token freed with nobody in its queue takes the most
    /// urgent request waiting in another queue: the k-FMLP's rule R3
    /// (seed 000 App. A; work-conserving, and harmless to its worst case,
    /// footnote 18). GPUSync's token queues (seed 004 §4.2: a request
    /// waits in the queue whose estimated completion is earliest, on
    /// purpose, to keep its GPU affinity) and static assignment do not.
    pub fn request_stealing(&self) -> bool {
        self.gpu_allocator == GpuAllocator::KFmlp
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VgpuPolicy {
    Band,
    Fifo,
    FixedPriority,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VgpuReservation {
    /// Share in parts per million of the GPU (e.g. 60% = 600_000).
    Share {
        ppm: u32,
    },
    Budget {
        budget: Nanos,
        period: Nanos,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vgpu {
    pub name: String,
    /// Index into `Platform::gpus`.
    pub gpu: usize,
    pub reservation: VgpuReservation,
    pub policy: VgpuPolicy,
}

impl Vgpu {
    /// Replenishment period of a vGPU given as a share (the simulator and
    /// `rtgpu run`; seed 001 leaves it to the implementation).
    pub const SHARE_PERIOD: Nanos = 10_000_000;

    /// Budget and replenishment period: a share of [`Self::SHARE_PERIOD`],
    /// or the reservation's own.
    pub fn budget_and_period(&self) -> (Nanos, Nanos) {
        match self.reservation {
            VgpuReservation::Share { ppm } => (
                Self::SHARE_PERIOD * u64::from(ppm.min(1_000_000)) / 1_000_000,
                Self::SHARE_PERIOD,
            ),
            VgpuReservation::Budget { budget, period } => (budget, period),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub name: String,
    /// Worst-case CPU execution time C (> 0).
    pub wcet: Nanos,
    /// Period / minimum inter-arrival time T (> 0).
    pub period: Nanos,
    /// Relative deadline D (0 < C <= D; D defaults to T). D > T is allowed
    /// (arbitrary deadline) only where the file says so explicitly.
    pub deadline: Nanos,
    /// Release jitter J (default 0).
    pub jitter: Nanos,
    /// Local blocking term B a user supplies for CPU-only analysis (default 0).
    pub blocking: Nanos,
    /// Cluster the task is bound to (index into `Platform::clusters`), if any.
    pub cluster: Option<usize>,
    pub gpu: Option<GpuPart>,
    /// A CPU reservation: the task's thread runs under SCHED_DEADLINE with
    /// about C of runtime, deadline D and period T (the analysis plans the
    /// exact parameters: `Reservation::of`; a constant-bandwidth server,
    /// above every SCHED_FIFO thread, on any CPU) instead of at a fixed
    /// priority. CPU-only tasks with D <= T and no cluster binding.
    pub reservation: bool,
    /// Where the task's table starts in the file.
    pub location: Location,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuPart {
    pub copy_in: Bytes,
    /// Kernel execution times, in launch order (at least one).
    pub kernels: Vec<Nanos>,
    pub copy_out: Bytes,
    pub state: Bytes,
    /// CPU time of the job's `wcet` that runs inside its GPU section, after
    /// the copy-in and before the first kernel, while the job holds its GPU
    /// (seed 004 Lemma 5's L^P: host-side work between GPU operations).
    pub cpu: Nanos,
    /// Number of GPU interrupts per job, eta (seed 000 App. B).
    pub interrupts: u32,
    /// Index into `Workload::vgpus`.
    pub vgpu: Option<usize>,
    /// The GPU (index into `Platform::gpus`) this task's requests go to
    /// under static assignment (`static`, `static-priority`), instead of
    /// its place in the round robin ([`Workload::static_gpu`]). The file
    /// format allows it only with those allocators; other allocators
    /// ignore it.
    #[serde(default)]
    pub device: Option<usize>,
}

impl GpuPart {
    /// GPU operations of one job, each of which completes with an interrupt
    /// in the simulator and the runtime: every copy chunk in and out (of
    /// `chunk` bytes; whole copies without), every kernel, and every chunk
    /// of a state migration (the worst case: the job migrates).
    pub fn operations(&self, chunk: Option<Bytes>) -> u32 {
        self.operations_for(chunk, false)
    }

    /// [`GpuPart::operations`] when a migration is staged through system
    /// memory (`staged`: the k-FMLP's, out of the old GPU and into the new
    /// one, two transfers of the state, each chunked and each raising its
    /// interrupts) or not (one GPU-to-GPU transfer).
    pub fn operations_for(&self, chunk: Option<Bytes>, staged: bool) -> u32 {
        let pieces = |bytes: Bytes| -> u64 {
            match chunk.filter(|&c| c > 0) {
                Some(c) => bytes.div_ceil(c),
                None => u64::from(bytes > 0),
            }
        };
        let n = pieces(self.copy_in)
            + self.kernels.len() as u64
            + pieces(self.copy_out)
            + pieces(self.state) * if staged { 2 } else { 1 };
        u32::try_from(n).unwrap_or(u32::MAX)
    }
}

impl Task {
    pub fn uses_gpu(&self) -> bool {
        self.gpu.is_some()
    }
}

impl Platform {
    pub fn total_cores(&self) -> u32 {
        self.clusters.iter().map(|c| c.cores).sum()
    }

    /// The first cluster that has GPUs: the one whose GPUs a GPU-using CPU
    /// reservation uses (it runs on every CPU, so no cluster of its own
    /// says which), in the analysis, the simulator and `rtgpu run` alike.
    pub fn first_gpu_cluster(&self) -> Option<usize> {
        self.clusters.iter().position(|c| !c.gpus.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_count_chunks_kernels_and_migration() {
        let g = GpuPart {
            copy_in: 5 << 20,
            kernels: vec![1_000, 2_000],
            copy_out: 1,
            state: 4 << 20,
            cpu: 0,
            interrupts: 1,
            vgpu: None,
            device: None,
        };
        // Whole copies: 1 in + 2 kernels + 1 out + 1 state.
        assert_eq!(g.operations(None), 5);
        // 2 MiB chunks: 3 in (5 MiB) + 2 + 1 out + 2 state.
        assert_eq!(g.operations(Some(2 << 20)), 8);
        // Staged through system memory: the 2 state chunks out and in.
        assert_eq!(g.operations_for(Some(2 << 20), true), 10);
        assert_eq!(g.operations_for(None, true), 6);
        let none = GpuPart {
            copy_in: 0,
            copy_out: 0,
            state: 0,
            ..g
        };
        assert_eq!(none.operations(Some(2 << 20)), 2, "kernels only");
    }
}
