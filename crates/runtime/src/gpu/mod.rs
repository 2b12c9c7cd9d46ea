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

/// One GPU backend. Every operation blocks the calling thread until the
/// operation has completed on the GPU (the job self-suspends meanwhile) and
/// returns the device-side duration of the operation.
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
