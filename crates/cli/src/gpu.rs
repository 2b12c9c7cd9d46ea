//! `rtgpu gpu`: what this machine offers the runtime — real-time privileges,
//! the NVIDIA driver's interrupt threads, the GPUs of a backend — and a
//! measured self-test of that backend (docs/guide/gpu.md).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use rtgpu_runtime::gpu::cuda::CudaBackend;
use rtgpu_runtime::gpu::emulated::{EmulatedBackend, EmulatedConfig};
use rtgpu_runtime::gpu::{GpuBackend, GpuError};
use rtgpu_runtime::{os, selftest};

/// Which backend `rtgpu gpu` examines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// CUDA where the NVIDIA driver loads, otherwise the emulated backend.
    Auto,
    /// The NVIDIA driver (libcuda.so.1); an error if it does not load.
    Cuda,
    /// Engine threads modelling the workload file's GPUs (or one GPU).
    Emulated,
}

pub fn run(choice: BackendChoice, workload: Option<&Path>, quick: bool, check: bool) -> ExitCode {
    let caps = os::probe_capabilities();
    println!("CPUs available: {:?}", caps.cpus);
    match &caps.reason {
        None => println!(
            "real-time priorities: SCHED_FIFO yes (max {}), SCHED_DEADLINE {}",
            caps.max_fifo_priority,
            if caps.deadline { "yes" } else { "no" }
        ),
        Some(why) => println!("real-time priorities: NO: {why}"),
    }
    match os::find_threads(os::is_nvidia_irq_thread) {
        Ok(t) if t.is_empty() => println!(
            "NVIDIA interrupt threads: none (the driver's interrupts are not threaded here; \
             klmirqd mirroring has nothing to mirror onto)"
        ),
        Ok(t) => {
            let list: Vec<String> = t
                .iter()
                .map(|(tid, c)| format!("{c} (tid {tid})"))
                .collect();
            println!("NVIDIA interrupt threads: {}", list.join(", "));
        }
        Err(e) => println!("NVIDIA interrupt threads: cannot read /proc: {e}"),
    }

    let config = match emulated_config(workload) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let backend: Arc<dyn GpuBackend> = match choice {
        BackendChoice::Cuda => match CudaBackend::open() {
            Ok(b) => {
                println!("backend: cuda (driver {})", b.driver_version());
                Arc::new(b)
            }
            Err(e) => {
                eprintln!("rtgpu: {e}");
                return ExitCode::from(2);
            }
        },
        BackendChoice::Auto => match CudaBackend::open() {
            Ok(b) => {
                println!("backend: cuda (driver {})", b.driver_version());
                Arc::new(b)
            }
            Err(e) => {
                println!("backend: emulated, because the CUDA backend is unavailable: {e}");
                match emulated(&config) {
                    Ok(b) => b,
                    Err(code) => return code,
                }
            }
        },
        BackendChoice::Emulated => {
            println!("backend: emulated");
            match emulated(&config) {
                Ok(b) => b,
                Err(code) => return code,
            }
        }
    };
    for d in backend.devices() {
        let mem = if d.memory > 0 {
            format!(", {:.1} GiB", d.memory as f64 / (1u64 << 30) as f64)
        } else {
            String::new()
        };
        let pci = d
            .pci_bus_id
            .as_deref()
            .map(|p| format!(", PCI {p}"))
            .unwrap_or_default();
        println!(
            "GPU {}: {}, {} copy engine(s){mem}{pci}",
            d.index, d.name, d.copy_engines
        );
    }
    if !check {
        return ExitCode::SUCCESS;
    }
    let st = if quick {
        selftest::SelfTestConfig::quick()
    } else {
        selftest::SelfTestConfig::full()
    };
    klmirqd_check(&caps, backend.as_ref());
    println!("\nself-test ({}):", if quick { "quick" } else { "full" });
    match selftest::run(&backend, &st) {
        Ok(results) => {
            print!("{}", selftest::render(&results, &st));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rtgpu: self-test failed: {e}");
            ExitCode::from(1)
        }
    }
}

/// The backend `rtgpu run` uses for a workload's GPUs: CUDA (needs at
/// least as many GPUs as the platform declares), the emulated backend of the
/// platform, or CUDA where it loads and the emulated one otherwise (saying
/// why).
pub fn open_backend(
    choice: BackendChoice,
    platform: &rtgpu_model::Platform,
) -> Result<Arc<dyn GpuBackend>, ExitCode> {
    let emulated_of_platform = || {
        EmulatedBackend::new(&EmulatedConfig::from_platform(platform))
            .map(|b| Arc::new(b) as Arc<dyn GpuBackend>)
            .map_err(|e| {
                eprintln!("rtgpu: {e}");
                ExitCode::from(2)
            })
    };
    match choice {
        BackendChoice::Emulated => emulated_of_platform(),
        BackendChoice::Cuda => CudaBackend::open()
            .map(|b| Arc::new(b) as Arc<dyn GpuBackend>)
            .map_err(|e| {
                eprintln!("rtgpu: {e}");
                ExitCode::from(2)
            }),
        BackendChoice::Auto => match CudaBackend::open() {
            Ok(b) if b.devices().len() >= platform.gpus.len() => Ok(Arc::new(b)),
            Ok(b) => {
                eprintln!(
                    "GPU backend: emulated, because the platform declares {} GPU(s) and CUDA \
                     has {}",
                    platform.gpus.len(),
                    b.devices().len()
                );
                emulated_of_platform()
            }
            Err(e) => {
                eprintln!("GPU backend: emulated, because the CUDA backend is unavailable: {e}");
                emulated_of_platform()
            }
        },
    }
}

/// The GPUs of the workload file's platform, or one GPU with PCIe 2.0-like
/// defaults when no file is given.
fn emulated_config(workload: Option<&Path>) -> Result<EmulatedConfig, ExitCode> {
    match workload {
        Some(path) => match rtgpu_model::load_workload(path) {
            Ok(w) if w.platform.gpus.is_empty() => {
                eprintln!("rtgpu: {} declares no GPU to emulate", path.display());
                Err(ExitCode::from(2))
            }
            Ok(w) => Ok(EmulatedConfig::from_platform(&w.platform)),
            Err(e) => {
                eprintln!("{e}");
                Err(ExitCode::from(2))
            }
        },
        None => {
            let bw = rtgpu_model::Bandwidth::default();
            Ok(EmulatedConfig {
                gpus: vec![rtgpu_runtime::gpu::emulated::EmulatedGpu {
                    name: "gpu0".to_string(),
                    copy_engines: 2,
                    bus: 0,
                }],
                host_to_device: bw.host_to_device,
                device_to_host: bw.device_to_host,
                peer: bw.peer,
            })
        }
    }
}

fn emulated(config: &EmulatedConfig) -> Result<Arc<dyn GpuBackend>, ExitCode> {
    EmulatedBackend::new(config)
        .map(|b| Arc::new(b) as Arc<dyn GpuBackend>)
        .map_err(|e: GpuError| {
            eprintln!("rtgpu: {e}");
            ExitCode::from(2)
        })
}

/// `--check`: what klmirqd's completion threads get on this machine (seed
/// 000 §III), and what a completion through one costs against the blocking
/// call, measured on the backend's GPU 0.
fn klmirqd_check(caps: &os::Capabilities, backend: &dyn GpuBackend) {
    use rtgpu_runtime::gpu::{run_blocking, GpuOp};
    use rtgpu_runtime::klmirqd::{CompletionThread, Mode, ServerConfig};
    println!("\nklmirqd completion threads:");
    match &caps.reason {
        None => {
            println!("  dependent mode: follows the GPU owner's effective priority with SCHED_FIFO")
        }
        Some(why) => println!(
            "  dependent mode: NO real-time priority ({why}): completion threads run \
             SCHED_OTHER; the owner still waits while its completion work runs"
        ),
    }
    let server = ServerConfig {
        runtime: 100_000,
        period: 10_000_000,
        fallback_fifo: 50,
    };
    match CompletionThread::start(0, Mode::Independent(server)) {
        Ok(ct) => {
            let r = ct.mode_report();
            match &r.fallback {
                None => println!(
                    "  independent mode: a test server got {} (SCHED_DEADLINE permitted)",
                    r.policy
                ),
                Some(why) => println!("  independent mode: FALLBACK: {why}"),
            }
        }
        Err(e) => println!("  independent mode: cannot start a completion thread: {e}"),
    }
    let dependent = match CompletionThread::start(
        0,
        Mode::Dependent {
            idle: os::SchedPolicy::Other { nice: 0 },
        },
    ) {
        Ok(ct) => ct,
        Err(e) => {
            println!("  cannot start a completion thread: {e}");
            return;
        }
    };
    // Same-run comparison: 10 us kernels, alternating the two paths.
    const N: usize = 400;
    let op = GpuOp::Kernel(10_000);
    let (mut direct, mut via) = (Vec::with_capacity(N), Vec::with_capacity(N));
    for _ in 0..N {
        let t0 = os::monotonic_now();
        if let Err(e) = run_blocking(backend, 0, op) {
            println!("  cannot measure: {e}");
            return;
        }
        let t1 = os::monotonic_now();
        if let Err(e) = dependent.complete(backend, 0, op, None) {
            println!("  cannot measure: {e}");
            return;
        }
        direct.push(t1 - t0);
        via.push(os::monotonic_now() - t1);
    }
    let pct = |v: &mut Vec<u64>, q: usize| {
        v.sort_unstable();
        v[(v.len() - 1) * q / 100] as f64 / 1e3
    };
    let (d50, d99) = (pct(&mut direct, 50), pct(&mut direct, 99));
    let (v50, v99) = (pct(&mut via, 50), pct(&mut via, 99));
    println!(
        "  a 10 us kernel on GPU 0, {N} times each: blocking call p50 {d50:.1} us / p99 \
         {d99:.1} us; through the completion thread p50 {v50:.1} us / p99 {v99:.1} us \
         ({:.2}x / {:.2}x)",
        v50 / d50.max(1e-3),
        v99 / d99.max(1e-3)
    );
}
