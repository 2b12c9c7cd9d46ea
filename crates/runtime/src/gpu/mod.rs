//! GPU backends behind one trait (DESIGN.md §3.5): the operations a job of a
//! workload file performs on a GPU — copies in and out, kernels, peer copies
//! of its state — each run to completion on one engine of one GPU.
//!
//! - [`emulated::EmulatedBackend`] (the default, no GPU needed): one thread
//!   per engine carries out each operation for its modelled duration, in
//!   FIFO order like a real engine, with copies in the same direction on one
//!   bus sharing its bandwidth.
//! - [`cuda::CudaBackend`]: the NVIDIA driver API, loaded at run time from
//!   `libcuda.so.1`, so building rtgpu needs no CUDA. Kernels are a calibrated
//!   spin on the GPU's global timer; copies use pinned host memory and
//!   `cuMemcpy*Async` on one stream per engine; times come from CUDA events.
//!
//! Engine arbitration (who may use an engine when) is not the backend's job:
//! the policy core's engine locks decide, and the backend only executes. A
//! chunked copy (seed 004 §4.3) is a sequence of [`GpuBackend::copy`] calls,
//! one per chunk, so the copy lock can be released between chunks.

pub mod cuda;
pub mod emulated;

use crate::os::Nanos;

/// Bytes.
pub type Bytes = u64;

/// Direction of a host/device copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyDir {
    HostToDevice,
    DeviceToHost,
}

/// What a backend knows about one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub index: usize,
    pub name: String,
    /// Copy (DMA) engines: 1 means copies in both directions share one.
    pub copy_engines: u8,
    /// Device memory in bytes (0 when unknown, e.g. emulated).
    pub memory: Bytes,
    /// PCI bus id `domain:bus:device`, when known.
    pub pci_bus_id: Option<String>,
}

/// Why a GPU operation or backend failed.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// The backend cannot be used on this machine at all.
    #[error("GPU backend unavailable: {0}")]
    Unavailable(String),
    /// A CUDA driver call returned an error.
    #[error("CUDA call {call} failed: {name} ({code}): {description}")]
    Cuda {
        call: &'static str,
        code: i32,
        name: String,
        description: String,
    },
    /// A GPU index beyond the backend's devices.
    #[error("no GPU {gpu}: this backend has {count} GPU(s)")]
    NoSuchGpu { gpu: usize, count: usize },
    /// The backend stopped (an engine thread is gone).
    #[error("GPU backend stopped: {0}")]
    Stopped(String),
}

/// One GPU operation, as [`GpuBackend::submit`] takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuOp {
    /// A kernel of modelled duration (ns) on the execution engine.
    Kernel(Nanos),
    /// A host/device copy on the copy engine of its direction.
    Copy(CopyDir, Bytes),
    /// A peer copy of `bytes` from the submitting GPU to GPU `dst`.
    PeerCopy { dst: usize, bytes: Bytes },
}

/// What the device side calls once when a submitted operation has
/// completed: the stand-in for the GPU's completion interrupt (its top
/// half). It runs on a backend thread (an emulated engine thread, or the
/// CUDA driver's host-function thread), so it must be short and must not
/// call back into the backend (CUDA forbids driver calls there).
pub type OnDone = Box<dyn FnOnce() + Send + 'static>;

/// An operation submitted with [`GpuBackend::submit`].
pub trait InFlight: Send {
    /// The device-side duration of the operation. Blocks until it has
    /// completed; returns at once once its [`OnDone`] has been called.
    fn finish(self: Box<Self>) -> Result<Nanos, GpuError>;
}

/// Runs `op` on `gpu` with the backend's blocking call (the caller sleeps
/// until the operation has completed).
pub fn run_blocking(backend: &dyn GpuBackend, gpu: usize, op: GpuOp) -> Result<Nanos, GpuError> {
    match op {
        GpuOp::Kernel(ns) => backend.kernel(gpu, ns),
        GpuOp::Copy(dir, bytes) => backend.copy(gpu, dir, bytes),
        GpuOp::PeerCopy { dst, bytes } => backend.peer_copy(gpu, dst, bytes),
    }
}

/// Runs `op` on `gpu`, calling `submitted` once it is queued on its engine
/// and before waiting for it to complete: the device-side hand-off passes
/// the engine lock on there (`engine_handoff = "device"`). When submission
/// fails, `submitted` is dropped uncalled.
pub fn run_then(
    backend: &dyn GpuBackend,
    gpu: usize,
    op: GpuOp,
    submitted: impl FnOnce(),
) -> Result<Nanos, GpuError> {
    let inflight = backend.submit(gpu, op, Box::new(|| {}))?;
    submitted();
    inflight.finish()
}

/// One GPU backend. Operations on one engine of one GPU (kernels on the
/// execution engine, copies on the copy engine of their direction, or on
/// the only one) execute in the order they were submitted, blocking calls
/// included: the device-side hand-off of engine locks
/// (`engine_handoff = "device"`) relies on it. Every blocking operation
/// ([`GpuBackend::kernel`], [`GpuBackend::copy`],
/// [`GpuBackend::peer_copy`]) blocks the calling
/// thread until the operation has completed on the GPU (the job
/// self-suspends meanwhile) and returns the device-side duration of the
/// operation. [`GpuBackend::submit`] instead returns at once and signals
/// completion, which is how klmirqd's completion threads
/// ([`crate::klmirqd::CompletionThread`]) take over the bottom half.
pub trait GpuBackend: Send + Sync {
    /// "emulated" or "cuda".
    fn name(&self) -> &'static str;
    /// The GPUs, in index order.
    fn devices(&self) -> &[DeviceInfo];
    /// Runs a kernel of modelled duration `ns` on the GPU's execution engine.
    fn kernel(&self, gpu: usize, ns: Nanos) -> Result<Nanos, GpuError>;
    /// Copies `bytes` between host and GPU on the copy engine for `dir`.
    fn copy(&self, gpu: usize, dir: CopyDir, bytes: Bytes) -> Result<Nanos, GpuError>;
    /// Copies `bytes` of state from GPU `src` to GPU `dst` (a task migrating,
    /// seed 004 §4.3). `src == dst` is a device-local copy.
    fn peer_copy(&self, src: usize, dst: usize, bytes: Bytes) -> Result<Nanos, GpuError>;
    /// Starts `op` on `gpu` without waiting: `on_done` is called once when
    /// it has completed on the device (also when it failed there; the
    /// failure is returned by [`InFlight::finish`]). When submission itself
    /// fails, `on_done` is dropped without being called.
    fn submit(&self, gpu: usize, op: GpuOp, on_done: OnDone)
        -> Result<Box<dyn InFlight>, GpuError>;
    /// Runs `ops` on `gpu` one after the other, queued at once, and blocks
    /// the calling thread once, until the last has completed (a batched
    /// GPU section, `Workload::batched_section`: one wake-up instead of one
    /// per operation). Returns the device time of the whole sequence.
    fn run_sequence(&self, gpu: usize, ops: &[GpuOp]) -> Result<Nanos, GpuError>;
}

fn check_gpu(devices: &[DeviceInfo], gpu: usize) -> Result<(), GpuError> {
    if gpu < devices.len() {
        Ok(())
    } else {
        Err(GpuError::NoSuchGpu {
            gpu,
            count: devices.len(),
        })
    }
}
