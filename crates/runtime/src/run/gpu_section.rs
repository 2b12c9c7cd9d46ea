//! The GPU section of a job in `rtgpu run`, under the arbiter: a GPU token
//! from the cluster's allocator (k-FMLP or GPUSync, seed 000 App. A / seed
//! 004 §4.2), migration of the task's state when the token is on another GPU
//! than last time (both copy locks, as a DGL or nested, seed 004 §4.3), the
//! input copied in, the kernels, the output copied out, each step under its
//! engine lock, copies in chunks with the copy lock released between chunks.
//!
//! With `engine_handoff = "device"` a kernel's or host copy's engine lock
//! passes on as soon as the operation is queued on its engine, not once the
//! job has learned that it completed: the next holder queues its operation
//! behind it on the same engine, which executes in submission order
//! ([`GpuBackend`]'s contract), so the engine never idles while completion
//! interrupts and wake-ups run on CPUs. The order of operations on the
//! engine is the FIFO lock's order either way (seed 004 §4.2: "each engine
//! mutex prioritizes requests in FIFO order"), so every request still waits
//! for at most the operations the analysis charges it.

use std::sync::Arc;

use rtgpu_model::{EngineHandoff, PeerLocking, Workload};
use rtgpu_policy::engine_lock::{chunks, copy_time};
use rtgpu_policy::predictor::MAX_DISTANCE;

use crate::arbiter::{
    Arbiter, ArbiterConfig, ArbiterError, Client, Engine, EngineGuard, TokenConfig,
};
use crate::gpu::{run_blocking, run_then, CopyDir, GpuBackend, GpuError, GpuOp};
use crate::klmirqd::CompletionThread;
use crate::os::{monotonic_now, Nanos};
use crate::run::vgpu::VgpuGate;

/// One cluster's arbiter and the global indices of its GPUs.
#[derive(Clone)]
pub struct ClusterGpus {
    pub arbiter: Arc<Arbiter>,
    /// Local GPU index (the arbiter's) to global (the backend's).
    pub global: Vec<usize>,
    /// klmirqd: the completion thread of each local GPU (empty: the job
    /// thread waits for its operations itself).
    pub completion: Vec<Arc<CompletionThread>>,
    /// Per local GPU, the scheduler of its vGPUs (seed 001), if it has any.
    pub vgpus: Vec<Option<Arc<VgpuGate>>>,
}

/// Where vGPU `v` of the workload lives: its global GPU and its index
/// among that GPU's vGPUs (declaration order, as in the simulator).
pub fn vgpu_slot(w: &Workload, v: usize) -> Option<(usize, usize)> {
    let gpu = w.vgpus.get(v)?.gpu;
    Some((gpu, w.vgpus[..v].iter().filter(|x| x.gpu == gpu).count()))
}

/// Builds one arbiter per GPU pool that has GPUs ([`Workload::gpu_pools`]:
/// per cluster, as GPUSync keeps one token allocator per cluster, seed 004
/// §4.2, or one over every GPU under a global scheduler), indexed as the
/// pools are.
///
/// With klmirqd interrupt handling (`policy.interrupts`) and real-time
/// priorities, each GPU's NVIDIA interrupt threads (found by the PCI
/// address in `pci`, per global GPU) follow the GPU owner's priority.
pub fn cluster_arbiters(
    w: &Workload,
    apply_priorities: bool,
    pci: &[Option<String>],
    users: &[usize],
) -> Vec<Option<ClusterGpus>> {
    let p = &w.policy;
    let bw = w.platform.bandwidth;
    let priors: Vec<[Nanos; MAX_DISTANCE + 1]> = w
        .tasks
        .iter()
        .map(|t| {
            let hold = t.gpu.as_ref().map_or(0, |g| {
                hold_estimate(g, bw.host_to_device, bw.device_to_host)
            });
            let state = t.gpu.as_ref().map_or(0, |g| copy_time(g.state, bw.peer));
            // Distance 0 keeps the state; farther moves copy it.
            std::array::from_fn(|d| if d == 0 { hold } else { hold + state })
        })
        .collect();
    w.gpu_pools()
        .iter()
        .enumerate()
        .map(|(pool, c)| {
            if c.gpus.is_empty() {
                return None;
            }
            let n = c.gpus.len();
            let mut distance = Vec::with_capacity(n * n);
            for &a in &c.gpus {
                for &b in &c.gpus {
                    distance.push(w.platform.migration_distance(a, b));
                }
            }
            let arbiter = Arbiter::new(&ArbiterConfig {
                copy_engines: c
                    .gpus
                    .iter()
                    .map(|&g| w.platform.gpus[g].copy_engines)
                    .collect(),
                tokens: TokenConfig::of_policy(
                    p,
                    n,
                    c.cores as usize,
                    users.get(pool).copied().unwrap_or(usize::MAX),
                ),
                distance,
                engine_locks: p.engine_locks,
                apply_priorities,
                priors: priors.clone(),
            });
            if apply_priorities && p.interrupts == rtgpu_model::InterruptHandling::Klmirqd {
                arbiter.set_irq_mirrors(
                    c.gpus
                        .iter()
                        .map(|&g| {
                            let addr = pci.get(g).cloned().flatten()?;
                            crate::klmirqd::IrqMirror::for_pci(&addr)
                                .ok()
                                .filter(|m| !m.threads().is_empty())
                        })
                        .collect(),
                );
            }
            let vgpus = c
                .gpus
                .iter()
                .map(|&g| {
                    let policy = w.vgpu_policy(g)?;
                    let budgets: Vec<(Nanos, Nanos)> = w
                        .vgpus
                        .iter()
                        .filter(|v| v.gpu == g)
                        .map(|v| v.budget_and_period())
                        .collect();
                    Some(Arc::new(VgpuGate::new(policy, &budgets)))
                })
                .collect();
            Some(ClusterGpus {
                arbiter,
                global: c.gpus.clone(),
                completion: Vec::new(),
                vgpus,
            })
        })
        .collect()
}

/// Worst-case length of a GPU section without blocking: copies at their
/// bandwidths plus the CPU work inside the section and the kernels (the
/// k-FMLP's l, and the predictor's prior).
pub fn hold_estimate(g: &rtgpu_model::GpuPart, h2d: u64, d2h: u64) -> Nanos {
    copy_time(g.copy_in, h2d) + g.cpu + g.kernels.iter().sum::<Nanos>() + copy_time(g.copy_out, d2h)
}

/// What one task's GPU section does.
pub struct GpuWork {
    pub task: usize,
    pub part: rtgpu_model::GpuPart,
    pub chunk: Option<u64>,
    pub peer_locking: PeerLocking,
    pub handoff: EngineHandoff,
    pub hold: Nanos,
    pub static_gpu: usize,
    /// A vGPU member: (local GPU, local vGPU index). Its section takes no
    /// token (as in the simulator); its copies take the copy locks and its
    /// kernels go through the GPU's vGPU scheduler.
    pub vgpu: Option<(usize, usize)>,
    /// Submitted as one batch (`Workload::batched_section`): no engine
    /// lock (none could be contended), every operation queued at once, one
    /// wait for the last.
    pub batched: bool,
}

/// What one GPU section did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct GpuRun {
    /// Global index of the GPU used.
    pub gpu: usize,
    /// Time blocked for the token.
    pub token_wait: Nanos,
    /// Time from the token's grant to its release.
    pub token_hold: Nanos,
    /// Whether the task's state migrated from another GPU first.
    pub migrated: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SectionError {
    #[error(transparent)]
    Arbiter(#[from] ArbiterError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

/// Runs `op` on global GPU `gpu`: through the completion thread of the
/// token's local GPU `local` when the cluster has klmirqd threads (the job
/// sleeps while its bottom half runs there, seed 000 §III), otherwise with
/// the backend's blocking call. `pass_on`, if any, is released as soon as
/// the operation is queued on its engine (the device-side hand-off).
fn gpu_op(
    cluster: &ClusterGpus,
    backend: &dyn GpuBackend,
    (local, gpu): (usize, usize),
    op: GpuOp,
    pass_on: Option<EngineGuard>,
) -> Result<Nanos, GpuError> {
    match (cluster.completion.get(local), pass_on) {
        (Some(ct), lock) => ct.complete_then(backend, gpu, op, None, move || drop(lock)),
        (None, None) => run_blocking(backend, gpu, op),
        (None, Some(lock)) => run_then(backend, gpu, op, move || drop(lock)),
    }
}

/// Runs `op` (a kernel or a host copy, on the engine `lock` guards) while
/// holding `lock`: until it has completed, or, with the device-side
/// hand-off, until it is queued on the engine.
fn locked_op(
    cluster: &ClusterGpus,
    backend: &dyn GpuBackend,
    at: (usize, usize),
    op: GpuOp,
    lock: EngineGuard,
    handoff: EngineHandoff,
) -> Result<Nanos, GpuError> {
    match handoff {
        EngineHandoff::Device => gpu_op(cluster, backend, at, op, Some(lock)),
        EngineHandoff::Completion => {
            let done = gpu_op(cluster, backend, at, op, None);
            drop(lock);
            done
        }
    }
}

/// Runs one job's GPU section; `last` is the local GPU the task used last.
pub fn run_section(
    client: &Client,
    cluster: &ClusterGpus,
    backend: &dyn GpuBackend,
    work: &GpuWork,
    last: &mut Option<usize>,
) -> Result<GpuRun, SectionError> {
    if let Some((local, v)) = work.vgpu {
        return run_vgpu_section(client, cluster, backend, work, local, v);
    }
    let t0 = monotonic_now();
    let tok = client.token(work.task, work.hold, *last, work.static_gpu)?;
    let granted = monotonic_now();
    let local = tok.gpu();
    let gpu = cluster.global[local];
    let g = &work.part;
    let migrated = matches!(*last, Some(prev) if prev != local) && g.state > 0;
    // Time spent waiting for engine locks inside the hold: not part of the
    // section's cost that the predictor learns (seed 004 §4.1: the
    // predictor observes execution, not blocking; the simulator subtracts
    // the same `section_blocked`).
    let mut blocked: Nanos = 0;
    if let (true, Some(prev)) = (migrated, *last) {
        let src = cluster.global[prev];
        for n in chunks(g.state, work.chunk) {
            let (a, b) = ((prev, Engine::CopyOut), (local, Engine::CopyIn));
            // The peer copy's completion goes to the completion thread of
            // the GPU the job owns (the destination), which runs at its
            // priority; the source's may serve another owner.
            let peer = GpuOp::PeerCopy { dst: gpu, bytes: n };
            match work.peer_locking {
                // A peer copy keeps both locks until it has completed (the
                // destination's inbound engine is not the queue it runs on).
                PeerLocking::Dgl => {
                    let _both = timed(&mut blocked, || tok.locks(&[a, b]))?;
                    gpu_op(cluster, backend, (local, src), peer, None)?;
                }
                PeerLocking::Nested => {
                    let [first, second] = cluster.arbiter.nested_order(a, b);
                    let _outer = timed(&mut blocked, || tok.locks(&[first]))?;
                    let _inner = timed(&mut blocked, || tok.locks(&[second]))?;
                    gpu_op(cluster, backend, (local, src), peer, None)?;
                }
            }
        }
    }
    let at = (local, gpu);
    if work.batched {
        // Nobody else can hold this GPU's engines: queue the whole section
        // and sleep once.
        let ops: Vec<GpuOp> = chunks(g.copy_in, work.chunk)
            .map(|n| GpuOp::Copy(CopyDir::HostToDevice, n))
            .chain(g.kernels.iter().map(|&k| GpuOp::Kernel(k)))
            .chain(chunks(g.copy_out, work.chunk).map(|n| GpuOp::Copy(CopyDir::DeviceToHost, n)))
            .collect();
        backend.run_sequence(gpu, &ops)?;
    } else {
        for n in chunks(g.copy_in, work.chunk) {
            let l = timed(&mut blocked, || tok.engine(Engine::CopyIn))?;
            let op = GpuOp::Copy(CopyDir::HostToDevice, n);
            locked_op(cluster, backend, at, op, l, work.handoff)?;
        }
        // CPU work inside the section, holding the token (at the priority the
        // arbiter gives this thread, its waiters' when they are more urgent).
        crate::os::spin_cpu_time(g.cpu);
        // One execution-lock hold for all the kernels (seed 004 §4.2: released
        // "once all of its engine-related operations complete"; the simulator
        // and the analysis hold it so too).
        if let Some((&last, first)) = g.kernels.split_last() {
            let l = timed(&mut blocked, || tok.engine(Engine::Exec))?;
            for &k in first {
                gpu_op(cluster, backend, at, GpuOp::Kernel(k), None)?;
            }
            locked_op(cluster, backend, at, GpuOp::Kernel(last), l, work.handoff)?;
        }
        for n in chunks(g.copy_out, work.chunk) {
            let l = timed(&mut blocked, || tok.engine(Engine::CopyOut))?;
            let op = GpuOp::Copy(CopyDir::DeviceToHost, n);
            locked_op(cluster, backend, at, op, l, work.handoff)?;
        }
    }
    let released = monotonic_now();
    drop(tok);
    let distance = cluster.arbiter.distance(*last, local);
    let cost = (released - granted).saturating_sub(blocked);
    client.observe(work.task, distance, cost);
    *last = Some(local);
    Ok(GpuRun {
        gpu,
        token_wait: granted - t0,
        token_hold: released - granted,
        migrated,
    })
}

/// `acquire` (an engine-lock request), its duration added to `blocked`.
fn timed<T, E>(blocked: &mut Nanos, acquire: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    let t = monotonic_now();
    let lock = acquire();
    *blocked += monotonic_now() - t;
    lock
}

/// A vGPU member's GPU section (seed 001): copies under the copy locks,
/// each kernel dispatched by the GPU's vGPU scheduler.
fn run_vgpu_section(
    client: &Client,
    cluster: &ClusterGpus,
    backend: &dyn GpuBackend,
    work: &GpuWork,
    local: usize,
    v: usize,
) -> Result<GpuRun, SectionError> {
    let start = monotonic_now();
    let gpu = cluster.global[local];
    let gate = cluster
        .vgpus
        .get(local)
        .and_then(Option::as_ref)
        .ok_or_else(|| GpuError::Stopped(format!("GPU {gpu} has no vGPU scheduler")))?;
    let g = &work.part;
    let at = (local, gpu);
    for n in chunks(g.copy_in, work.chunk) {
        let l = client.engine_locks(&[(local, Engine::CopyIn)])?;
        let op = GpuOp::Copy(CopyDir::HostToDevice, n);
        locked_op(cluster, backend, at, op, l, work.handoff)?;
    }
    crate::os::spin_cpu_time(g.cpu);
    for &k in &g.kernels {
        let _dispatched = gate.launch(v);
        gpu_op(cluster, backend, at, GpuOp::Kernel(k), None)?;
    }
    for n in chunks(g.copy_out, work.chunk) {
        let l = client.engine_locks(&[(local, Engine::CopyOut)])?;
        let op = GpuOp::Copy(CopyDir::DeviceToHost, n);
        locked_op(cluster, backend, at, op, l, work.handoff)?;
    }
    Ok(GpuRun {
        gpu,
        token_wait: 0,
        token_hold: monotonic_now() - start,
        migrated: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arbiter::QueueRule;

    fn workload(allocator: &str) -> Workload {
        rtgpu_model::parse_workload(
            &format!(
                "[[platform.cluster]]\nname = \"c0\"\ncores = 2\ngpus = [\"g0\", \"g1\"]\n\
                 [[platform.gpu]]\nname = \"g0\"\n[[platform.gpu]]\nname = \"g1\"\n\
                 [policy]\ncpu_scheduler = \"G-EDF\"\ngpu_allocator = \"{allocator}\"\n\
                 tokens_per_gpu = 2\n\
                 [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n\
                 gpu = {{ copy_in = \"1 MB\", kernels = [\"1 ms\"], copy_out = \"1 MB\" }}\n"
            ),
            "t.toml",
        )
        .expect("valid workload")
    }

    /// The arbiter allocates GPUs as the simulator does (the same
    /// `Policy::tokens` and `Policy::request_stealing`): the k-FMLP's k = g
    /// resources are whole GPUs whatever `tokens_per_gpu` says, and only
    /// the k-FMLP steals requests.
    #[test]
    fn token_allocation_follows_the_policys_rules() {
        for (allocator, tokens, stealing, rule) in [
            ("k-fmlp", 1, true, QueueRule::LAware),
            ("gpusync-affinity", 2, false, QueueRule::EarliestCompletion),
            ("gpusync", 2, false, QueueRule::ShortestQueue),
            ("static", 2, false, QueueRule::Static),
        ] {
            let w = workload(allocator);
            let cs = cluster_arbiters(&w, false, &[None, None], &[]);
            let c = cs[0].as_ref().expect("a cluster with GPUs");
            let cfg = c.arbiter.token_config().expect("not poisoned");
            assert_eq!(cfg.tokens_per_gpu, tokens, "{allocator}");
            assert_eq!(cfg.stealing, stealing, "{allocator}");
            assert_eq!(cfg.rule, rule, "{allocator}");
            assert_eq!(cfg.gpus, 2);
        }
    }
}
