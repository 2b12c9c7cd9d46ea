//! A GPU section's operations: copies (in chunks, on their bus and copy
//! engine), kernels, the CPU work inside the section and the whole-GPU
//! lock, each under the engine locks it takes; built once per GPU and
//! migration source and replayed by later jobs ([`Engine::on_token`]).

use rtgpu_model::GpuAllocator;
use rtgpu_policy::engine_lock::{chunks, copy_time, Engine as Eng, EngineLocks};
use rtgpu_policy::Time;

use crate::setup::{GpuTask, Setup};
use crate::trace::SpanKind;

#[cfg(doc)]
use super::Engine;

#[derive(Debug, Clone, Copy)]
pub(super) enum OpKind {
    /// Whole-GPU lock of the no-engine-locks scenarios ("e").
    GpuLock,
    Copy {
        /// Transfer time at full bandwidth of this chunk.
        work: Time,
        bus: u32,
        kind: SpanKind,
        /// Last chunk of a copy: nothing special; every chunk releases.
        engine: u32,
    },
    Kernel {
        time: Time,
        last: bool,
    },
    /// CPU work inside the section (`GpuPart::cpu`), in the job's section
    /// thread ([`Engine::section0`]).
    Cpu {
        work: Time,
    },
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Op {
    pub(super) kind: OpKind,
    pub(super) locks: [usize; 2],
    pub(super) nlocks: u8,
}

/// Transfer time of each chunk of a `bytes` copy: the chunk's share of the
/// whole copy's time (`copy_time(end) - copy_time(start)`), so chunking
/// adds no rounding: the chunks of a copy take exactly as long as the
/// unchunked copy, as the analysis charges it.
pub(super) fn chunk_times(bytes: u64, chunk: Option<u64>, bw: u64) -> impl Iterator<Item = Time> {
    let mut start = 0;
    chunks(bytes, chunk).map(move |c| {
        let t = copy_time(start + c, bw) - copy_time(start, bw);
        start += c;
        t
    })
}

/// One copy of `bytes` as a job's operations: a copy op per chunk, on
/// `bus` and `engine`, each under `locks` (lock ids, how many of them).
#[allow(clippy::too_many_arguments)]
pub(super) fn push_copies(
    ops: &mut Vec<Op>,
    bytes: u64,
    chunk: Option<u64>,
    bw: u64,
    bus: u32,
    kind: SpanKind,
    engine: u32,
    (locks, nlocks): ([usize; 2], u8),
) {
    for work in chunk_times(bytes, chunk, bw) {
        ops.push(Op {
            kind: OpKind::Copy {
                work,
                bus,
                kind,
                engine,
            },
            locks,
            nlocks,
        });
    }
}

/// The operations of a GPU section of task `gt` on GPU `g` into `ops`:
/// the whole-GPU lock (no engine locks, no driver arbitration), the
/// migration of the task's state from `from` (the GPU of its last section,
/// if another), copy-in, the section's CPU work, kernels, copy-out; each
/// copy in chunks, each operation under its engine locks.
#[allow(clippy::too_many_arguments)]
pub(super) fn section_ops(
    ops: &mut Vec<Op>,
    s: &Setup,
    locks: &EngineLocks,
    gt: &GpuTask,
    g: usize,
    from: Option<usize>,
    driver: bool,
    peer_migration: bool,
) {
    let policy = s.policy;
    let chunk = policy.chunk_size;
    let bw = s.bandwidth;
    let links = s.gpus[g].link as u32;
    let down = |link: u32| link * 2;
    let up = |link: u32| link * 2 + 1;
    // Engine tracks: exec, copy-in, copy-out (the copy-in engine on a
    // GPU with one copy engine).
    let in_engine = |gpu: usize| (gpu * 3 + 1) as u32;
    let out_engine =
        |gpu: usize| (gpu * 3 + if s.gpus[gpu].copy_engines >= 2 { 2 } else { 1 }) as u32;
    let engine_locks = policy.engine_locks || gt.vgpu.is_some();
    let one = |l: usize| [l, l];
    let lock_or_none = |l: usize| {
        if engine_locks {
            (one(l), 1)
        } else {
            (one(0), 0)
        }
    };
    if !engine_locks && !driver {
        ops.push(Op {
            kind: OpKind::GpuLock,
            locks: one(locks.lock_id(g, Eng::Exec)),
            nlocks: 1,
        });
    }
    // Migration of the task's state (seed 004 §4.3).
    if let Some(p) = from {
        let same_node = s.gpus[p].cluster == s.gpus[g].cluster;
        if peer_migration && same_node && policy.gpu_allocator != GpuAllocator::KFmlp {
            let (l, n) = if engine_locks {
                (
                    [
                        locks.lock_id(p, Eng::CopyOut),
                        locks.lock_id(g, Eng::CopyIn),
                    ],
                    2,
                )
            } else {
                (one(0), 0)
            };
            // Under the driver a peer copy runs on the source's
            // device-to-host copy engine (as the emulated GPU runs it).
            push_copies(
                ops,
                gt.state,
                chunk,
                bw.peer,
                down(links),
                SpanKind::Migrate,
                if driver { out_engine(p) } else { in_engine(g) },
                (l, n),
            );
        } else {
            // Through system memory: out of the old GPU, into the new.
            // The k-FMLP (seed 000) treats a GPU as one resource held by
            // one job, so there the state is staged in system memory and
            // both transfers are part of the new GPU's critical section
            // (on its engine and link), as the analysis charges them;
            // GPUSync takes the old GPU's copy-out lock (its bounds
            // count requests from every token holder, App. Lemma 3).
            let staged = policy.gpu_allocator == GpuAllocator::KFmlp;
            let src = if staged { g } else { p };
            let plink = s.gpus[src].link as u32;
            let (l, n) = lock_or_none(locks.lock_id(src, Eng::CopyOut));
            push_copies(
                ops,
                gt.state,
                chunk,
                bw.device_to_host,
                up(plink),
                SpanKind::Migrate,
                out_engine(src),
                (l, n),
            );
            let (l, n) = lock_or_none(locks.lock_id(g, Eng::CopyIn));
            push_copies(
                ops,
                gt.state,
                chunk,
                bw.host_to_device,
                down(links),
                SpanKind::Migrate,
                in_engine(g),
                (l, n),
            );
        }
    }
    let (l, n) = lock_or_none(locks.lock_id(g, Eng::CopyIn));
    push_copies(
        ops,
        gt.copy_in,
        chunk,
        bw.host_to_device,
        down(links),
        SpanKind::CopyIn,
        in_engine(g),
        (l, n),
    );
    if gt.cpu > 0 {
        ops.push(Op {
            kind: OpKind::Cpu { work: gt.cpu },
            locks: one(0),
            nlocks: 0,
        });
    }
    let nk = gt.kernels.len();
    let exec = locks.lock_id(g, Eng::Exec);
    for (k, &time) in gt.kernels.iter().enumerate() {
        let first = k == 0;
        // Kernels of a vGPU go through its scheduler, not a lock.
        let (l, n) = if engine_locks && first && gt.vgpu.is_none() {
            (one(exec), 1)
        } else {
            (one(0), 0)
        };
        ops.push(Op {
            kind: OpKind::Kernel {
                time,
                last: k + 1 == nk,
            },
            locks: l,
            nlocks: n,
        });
    }
    let (l, n) = lock_or_none(locks.lock_id(g, Eng::CopyOut));
    push_copies(
        ops,
        gt.copy_out,
        chunk,
        bw.device_to_host,
        up(links),
        SpanKind::CopyOut,
        out_engine(g),
        (l, n),
    );
}
