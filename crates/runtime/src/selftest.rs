//! A measured check of a GPU backend, behind `rtgpu gpu`: does a kernel
//! occupy the execution engine for its modelled duration, how fast do copies
//! cross the bus, what does chunking cost (seed 004 §4.3), and do the copy
//! and execution engines really run side by side (seed 004 §2)? These are
//! the facts the analysis and the simulator assume about a GPU.

use std::sync::Arc;
use std::thread;

use crate::gpu::{Bytes, CopyDir, GpuBackend, GpuError};
use crate::os::{monotonic_now, Nanos};

/// What to measure, and how much.
#[derive(Debug, Clone)]
pub struct SelfTestConfig {
    /// Kernel durations to request.
    pub kernels: Vec<Nanos>,
    /// Size of the bandwidth and overlap copies.
    pub copy_bytes: Bytes,
    /// Chunk size for the chunked-copy comparison.
    pub chunk_bytes: Bytes,
    /// Repetitions of each measurement (the median is reported).
    pub repeats: usize,
}

impl SelfTestConfig {
    /// Sizes for a real GPU: 64 MiB copies, 2 MiB chunks, kernels of
    /// 100 us, 1 ms and 10 ms, 9 repetitions.
    pub fn full() -> SelfTestConfig {
        SelfTestConfig {
            kernels: vec![100_000, 1_000_000, 10_000_000],
            copy_bytes: 64 << 20,
            chunk_bytes: 2 << 20,
            repeats: 9,
        }
    }

    /// Small sizes for a quick check (the emulated backend's tests).
    pub fn quick() -> SelfTestConfig {
        SelfTestConfig {
            kernels: vec![1_000_000, 3_000_000],
            copy_bytes: 4 << 20,
            chunk_bytes: 1 << 20,
            repeats: 3,
        }
    }
}

/// One kernel duration's results.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTiming {
    pub requested: Nanos,
    /// Median device-measured duration.
    pub device_median: Nanos,
    /// Median time from the call to its return on the host: the device time
    /// plus launch and completion-notification latency.
    pub host_median: Nanos,
    /// Worst host-observed time.
    pub host_max: Nanos,
}

/// Results of one GPU's self-test.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSelfTest {
    pub gpu: usize,
    pub name: String,
    pub kernels: Vec<KernelTiming>,
    /// Median bytes per second, host to device and device to host.
    pub h2d_bandwidth: u64,
    pub d2h_bandwidth: u64,
    /// Median time of one copy of `copy_bytes` host to device, and of the
    /// same bytes in chunks of `chunk_bytes` (one call per chunk).
    pub unchunked: Nanos,
    pub chunked: Nanos,
    /// Wall time of a host-to-device and a device-to-host copy started
    /// together, over the sum of each alone: about 0.5 with two copy engines
    /// (full overlap), about 1 with one.
    pub copy_overlap: f64,
    /// Wall time of a kernel and a copy started together, over the sum of
    /// each alone: about 0.5 when execution and copy engines overlap.
    pub exec_copy_overlap: f64,
    /// Median device time of a peer copy of `copy_bytes` to the next GPU
    /// (or a device-local copy with one GPU), and which it was.
    pub peer: Nanos,
    pub peer_kind: &'static str,
}

fn median(mut v: Vec<Nanos>) -> Nanos {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn repeat(
    n: usize,
    mut f: impl FnMut() -> Result<Nanos, GpuError>,
) -> Result<Vec<Nanos>, GpuError> {
    (0..n.max(1)).map(|_| f()).collect()
}

fn bandwidth(bytes: Bytes, ns: Nanos) -> u64 {
    (u128::from(bytes) * 1_000_000_000 / u128::from(ns.max(1))) as u64
}

/// Wall time of `a` and `b` run on two threads at once.
fn together<B: GpuBackend + ?Sized + 'static>(
    backend: &Arc<B>,
    a: impl FnOnce(&B) -> Result<Nanos, GpuError> + Send + 'static,
    b: impl FnOnce(&B) -> Result<Nanos, GpuError> + Send + 'static,
) -> Result<Nanos, GpuError> {
    let start = monotonic_now();
    let ba = Arc::clone(backend);
    let ta = thread::spawn(move || a(&ba));
    let rb = b(backend);
    let ra = ta
        .join()
        .map_err(|_| GpuError::Stopped("a self-test thread panicked".to_string()))?;
    ra?;
    rb?;
    Ok(monotonic_now() - start)
}

/// Runs the self-test on every GPU of `backend`.
pub fn run<B: GpuBackend + ?Sized + 'static>(
    backend: &Arc<B>,
    config: &SelfTestConfig,
) -> Result<Vec<GpuSelfTest>, GpuError> {
    let count = backend.devices().len();
    (0..count)
        .map(|gpu| run_gpu(backend, gpu, config))
        .collect()
}

fn run_gpu<B: GpuBackend + ?Sized + 'static>(
    backend: &Arc<B>,
    gpu: usize,
    c: &SelfTestConfig,
) -> Result<GpuSelfTest, GpuError> {
    let b = backend.as_ref();
    // Warm-up: module load, first allocation, context set-up stay out of the numbers.
    b.kernel(gpu, 10_000)?;
    b.copy(gpu, CopyDir::HostToDevice, c.copy_bytes)?;
    b.copy(gpu, CopyDir::DeviceToHost, c.copy_bytes)?;

    let mut kernels = Vec::new();
    for &ns in &c.kernels {
        let mut device = Vec::new();
        let mut host = Vec::new();
        for _ in 0..c.repeats.max(1) {
            let t0 = monotonic_now();
            device.push(b.kernel(gpu, ns)?);
            host.push(monotonic_now() - t0);
        }
        let host_max = host.iter().copied().max().unwrap_or(0);
        kernels.push(KernelTiming {
            requested: ns,
            device_median: median(device),
            host_median: median(host),
            host_max,
        });
    }

    let h2d = median(repeat(c.repeats, || {
        b.copy(gpu, CopyDir::HostToDevice, c.copy_bytes)
    })?);
    let d2h = median(repeat(c.repeats, || {
        b.copy(gpu, CopyDir::DeviceToHost, c.copy_bytes)
    })?);
    let chunk = c.chunk_bytes.max(1);
    let chunked = median(repeat(c.repeats, || {
        let t0 = monotonic_now();
        let mut left = c.copy_bytes;
        while left > 0 {
            let n = left.min(chunk);
            b.copy(gpu, CopyDir::HostToDevice, n)?;
            left -= n;
        }
        Ok(monotonic_now() - t0)
    })?);
    let unchunked = median(repeat(c.repeats, || {
        let t0 = monotonic_now();
        b.copy(gpu, CopyDir::HostToDevice, c.copy_bytes)?;
        Ok(monotonic_now() - t0)
    })?);

    let bytes = c.copy_bytes;
    let both = median(repeat(c.repeats, || {
        together(
            backend,
            move |b| b.copy(gpu, CopyDir::HostToDevice, bytes),
            move |b| b.copy(gpu, CopyDir::DeviceToHost, bytes),
        )
    })?);
    let copy_overlap = both as f64 / (h2d + d2h).max(1) as f64;

    // A kernel as long as one copy, run beside it.
    let kernel_ns = h2d.max(1_000);
    let kernel_alone = median(repeat(c.repeats, || b.kernel(gpu, kernel_ns))?);
    let mixed = median(repeat(c.repeats, || {
        together(
            backend,
            move |b| b.kernel(gpu, kernel_ns),
            move |b| b.copy(gpu, CopyDir::HostToDevice, bytes),
        )
    })?);
    let exec_copy_overlap = mixed as f64 / (kernel_alone + h2d).max(1) as f64;

    let count = b.devices().len();
    let dst = (gpu + 1) % count.max(1);
    let peer = median(repeat(c.repeats, || b.peer_copy(gpu, dst, c.copy_bytes))?);

    Ok(GpuSelfTest {
        gpu,
        name: b.devices()[gpu].name.clone(),
        kernels,
        h2d_bandwidth: bandwidth(c.copy_bytes, h2d),
        d2h_bandwidth: bandwidth(c.copy_bytes, d2h),
        unchunked,
        chunked,
        copy_overlap,
        exec_copy_overlap,
        peer,
        peer_kind: if dst == gpu { "device-local" } else { "peer" },
    })
}

fn us(ns: Nanos) -> String {
    format!("{:.1} us", ns as f64 / 1e3)
}

fn gbps(bps: u64) -> String {
    format!("{:.2} GB/s", bps as f64 / 1e9)
}

/// The self-test as text, one block per GPU.
pub fn render(results: &[GpuSelfTest], config: &SelfTestConfig) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for r in results {
        let _ = writeln!(out, "GPU {}: {}", r.gpu, r.name);
        let _ = writeln!(
            out,
            "  kernels (median of {}):   requested   device     host (call to return)   host max",
            config.repeats
        );
        for k in &r.kernels {
            let _ = writeln!(
                out,
                "  {:>26} {:>10} {:>10} {:>23} {:>10}",
                "",
                us(k.requested),
                us(k.device_median),
                us(k.host_median),
                us(k.host_max)
            );
        }
        let mib = config.copy_bytes as f64 / (1 << 20) as f64;
        let _ = writeln!(
            out,
            "  copy {mib:.0} MiB host->device: {}",
            gbps(r.h2d_bandwidth)
        );
        let _ = writeln!(
            out,
            "  copy {mib:.0} MiB device->host: {}",
            gbps(r.d2h_bandwidth)
        );
        let _ = writeln!(
            out,
            "  chunked into {:.0} MiB pieces: {} vs {} whole ({:.2}x)",
            config.chunk_bytes as f64 / (1 << 20) as f64,
            us(r.chunked),
            us(r.unchunked),
            r.chunked as f64 / r.unchunked.max(1) as f64
        );
        let _ = writeln!(
            out,
            "  both copy directions at once: {:.2} of their sum (0.5 = two copy engines overlap, 1 = one engine)",
            r.copy_overlap
        );
        let _ = writeln!(
            out,
            "  kernel beside a copy: {:.2} of their sum (0.5 = execution and copy engines overlap)",
            r.exec_copy_overlap
        );
        let _ = writeln!(
            out,
            "  {} copy of {mib:.0} MiB: {} ({})",
            r.peer_kind,
            us(r.peer),
            gbps(bandwidth(config.copy_bytes, r.peer))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::emulated::{EmulatedBackend, EmulatedConfig, EmulatedGpu};

    #[test]
    fn the_emulated_backend_passes_its_own_model() {
        let config = EmulatedConfig {
            gpus: vec![EmulatedGpu {
                name: "g".to_string(),
                copy_engines: 2,
                bus: 0,
            }],
            host_to_device: 2_000_000_000,
            device_to_host: 2_000_000_000,
            peer: 1_000_000_000,
        };
        let backend = Arc::new(EmulatedBackend::new(&config).expect("start"));
        let c = SelfTestConfig::quick();
        let results = run(&backend, &c).expect("self-test");
        let r = &results[0];
        for k in &r.kernels {
            assert!(k.device_median >= k.requested, "{k:?}");
            assert!(k.host_median >= k.device_median, "{k:?}");
        }
        // 2 GB/s modelled: never faster (sleeping overshoots, never
        // undershoots). How much slower, and how well the engines overlap,
        // depends on the machine's load; the engine model itself is tested
        // with wide margins in gpu::emulated.
        assert!(
            r.h2d_bandwidth <= 2_000_000_000 && r.h2d_bandwidth > 0,
            "{r:?}"
        );
        assert!(r.copy_overlap > 0.0 && r.exec_copy_overlap > 0.0, "{r:?}");
        assert_eq!(r.peer_kind, "device-local");
        let text = render(&results, &c);
        assert!(text.contains("GPU 0: g (emulated)"), "{text}");
        assert!(text.contains("host->device"), "{text}");
    }
}
