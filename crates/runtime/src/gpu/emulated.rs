//! The emulated GPU backend: real threads stand in for a GPU's engines.
//!
//! Each GPU has an execution-engine thread and one or two copy-engine
//! threads (with one copy engine, copies in both directions queue on it, as
//! on the GTX-470s of seed 004 §2). An operation is sent to its engine's
//! queue and carried out in FIFO order; the caller blocks until it is done.
//!
//! - A kernel occupies the execution engine for its modelled duration
//!   (absolute sleep on CLOCK_MONOTONIC).
//! - A copy occupies its copy engine until its bytes have crossed the bus.
//!   Copies in the same direction on the same bus share its bandwidth
//!   equally (processor sharing), as the simulator models it (seed 004 §2:
//!   two transfers in the same direction on one bus each get about half).
//!   The bus of a GPU is its cluster's (NUMA node's) host link.
//! - A peer copy runs on the source GPU's device-to-host copy engine at the
//!   peer bandwidth, sharing the peer bus of its cluster.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::{check_gpu, Bytes, CopyDir, DeviceInfo, GpuBackend, GpuError, GpuOp, InFlight, OnDone};
use crate::os::{monotonic_now, sleep_until, Nanos};

/// One emulated GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmulatedGpu {
    pub name: String,
    /// 1 or 2.
    pub copy_engines: u8,
    /// Which bus (host link) its copies cross; GPUs with the same bus share it.
    pub bus: usize,
}

/// The emulated platform: GPUs and bus bandwidths in bytes per second.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmulatedConfig {
    pub gpus: Vec<EmulatedGpu>,
    pub host_to_device: u64,
    pub device_to_host: u64,
    pub peer: u64,
}

impl EmulatedConfig {
    /// The GPUs and bandwidths of a workload file's platform; each GPU's bus
    /// is its cluster's host link.
    pub fn from_platform(platform: &rtgpu_model::Platform) -> EmulatedConfig {
        EmulatedConfig {
            gpus: platform
                .gpus
                .iter()
                .map(|g| EmulatedGpu {
                    name: g.name.clone(),
                    copy_engines: g.copy_engines,
                    bus: g.cluster,
                })
                .collect(),
            host_to_device: platform.bandwidth.host_to_device,
            device_to_host: platform.bandwidth.device_to_host,
            peer: platform.bandwidth.peer,
        }
    }
}

/// A bus shared by transfers in one direction: processor sharing of its
/// bandwidth among the transfers in flight.
struct Bus {
    bandwidth: u64,
    state: Mutex<BusState>,
    changed: Condvar,
}

struct BusState {
    /// Remaining bytes of each transfer in flight, scaled by 1e9 so that
    /// progress in nanoseconds times bytes per second stays integral.
    remaining: Vec<(u64, u128)>,
    /// When `remaining` was last brought up to date.
    updated_at: Nanos,
    next_id: u64,
}

impl Bus {
    fn new(bandwidth: u64) -> Bus {
        Bus {
            bandwidth: bandwidth.max(1),
            state: Mutex::new(BusState {
                remaining: Vec::new(),
                updated_at: 0,
                next_id: 0,
            }),
            changed: Condvar::new(),
        }
    }

    /// Brings every transfer's remaining bytes up to `now`: during the
    /// elapsed time each of the n transfers moved elapsed * bandwidth / n.
    fn advance(&self, st: &mut BusState, now: Nanos) {
        let elapsed = u128::from(now.saturating_sub(st.updated_at)) * u128::from(self.bandwidth);
        if let Some(moved) = elapsed.checked_div(st.remaining.len() as u128) {
            for (_, rem) in &mut st.remaining {
                *rem = rem.saturating_sub(moved);
            }
        }
        st.updated_at = now;
    }

    /// Moves `bytes` across the bus, sharing it with concurrent transfers;
    /// blocks until done.
    fn transfer(&self, bytes: Bytes) -> Result<(), GpuError> {
        let poisoned = |_| GpuError::Stopped("a bus lock was poisoned".to_string());
        let mut st = self.state.lock().map_err(poisoned)?;
        self.advance(&mut st, monotonic_now());
        let id = st.next_id;
        st.next_id += 1;
        st.remaining.push((id, u128::from(bytes) * 1_000_000_000));
        self.changed.notify_all();
        loop {
            let now = monotonic_now();
            self.advance(&mut st, now);
            let n = st.remaining.len() as u128;
            let Some(pos) = st.remaining.iter().position(|(i, _)| *i == id) else {
                return Err(GpuError::Stopped(
                    "a transfer vanished from its bus".to_string(),
                ));
            };
            let rem = st.remaining[pos].1;
            if rem == 0 {
                st.remaining.swap_remove(pos);
                self.changed.notify_all();
                return Ok(());
            }
            // Time to finish if nothing changes: rem * n / bandwidth (ns).
            let wait = (rem * n).div_ceil(u128::from(self.bandwidth));
            let wait = std::time::Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX));
            st = self
                .changed
                .wait_timeout(st, wait)
                .map_err(|_| GpuError::Stopped("a bus lock was poisoned".to_string()))?
                .0;
        }
    }
}

enum Op {
    Kernel(Nanos),
    Transfer(Arc<Bus>, Bytes),
    /// One after the other on one engine thread, replying once (a batched
    /// section: the GPU is the job's alone meanwhile, so which engine
    /// thread carries a copy does not change its time).
    Sequence(Vec<Op>),
}

/// Carries out `op` on the calling engine thread.
fn carry_out(op: Op) -> Result<(), GpuError> {
    match op {
        Op::Kernel(ns) => {
            sleep_until(monotonic_now().saturating_add(ns));
            Ok(())
        }
        Op::Transfer(bus, bytes) => bus.transfer(bytes),
        Op::Sequence(ops) => ops.into_iter().try_for_each(carry_out),
    }
}

struct Request {
    op: Op,
    reply: Sender<Result<Nanos, GpuError>>,
    /// Called after the reply is sent: the emulated completion interrupt.
    on_done: Option<OnDone>,
}

/// One engine: a thread that carries out its queue in FIFO order.
struct Engine {
    queue: Sender<Request>,
}

fn engine_thread(name: String, rx: Receiver<Request>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name).spawn(move || {
        // 1 ns timer slack (default 50 us) so modelled durations end on time.
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        // An engine stands for hardware, which never waits for a CPU: where
        // permitted it runs at the top SCHED_FIFO priority, so real-time
        // job threads cannot stretch the modelled durations. It sleeps all
        // but a few microseconds per operation. Refused: ordinary priority.
        let _ = crate::os::set_sched_policy(0, crate::os::SchedPolicy::Fifo { priority: 99 });
        for req in rx {
            let start = monotonic_now();
            let result = carry_out(req.op);
            let _ = req.reply.send(result.map(|()| monotonic_now() - start));
            if let Some(f) = req.on_done {
                f();
            }
        }
    })
}

struct GpuEngines {
    exec: Engine,
    /// [host-to-device, device-to-host]; the same engine twice when the GPU
    /// has one copy engine.
    copy: [Arc<Engine>; 2],
    h2d_bus: Arc<Bus>,
    d2h_bus: Arc<Bus>,
    peer_bus: Arc<Bus>,
}

/// The emulated backend. Dropping it stops its engine threads after they
/// finish the operations already queued.
pub struct EmulatedBackend {
    devices: Vec<DeviceInfo>,
    gpus: Vec<GpuEngines>,
    threads: Vec<JoinHandle<()>>,
}

impl EmulatedBackend {
    /// Starts the engine threads of every GPU of `config`.
    pub fn new(config: &EmulatedConfig) -> Result<EmulatedBackend, GpuError> {
        let mut threads = Vec::new();
        let mut spawn = |name: String| -> Result<Engine, GpuError> {
            let (tx, rx) = mpsc::channel();
            let handle = engine_thread(name.clone(), rx).map_err(|e| {
                GpuError::Unavailable(format!("cannot start engine thread {name}: {e}"))
            })?;
            threads.push(handle);
            Ok(Engine { queue: tx })
        };
        let mut buses: std::collections::BTreeMap<usize, [Arc<Bus>; 3]> = Default::default();
        let mut gpus = Vec::new();
        let mut devices = Vec::new();
        for (i, g) in config.gpus.iter().enumerate() {
            let exec = spawn(format!("gpu{i}-exec"))?;
            let first = Arc::new(spawn(format!("gpu{i}-copy0"))?);
            let second = if g.copy_engines >= 2 {
                Arc::new(spawn(format!("gpu{i}-copy1"))?)
            } else {
                Arc::clone(&first)
            };
            let [h2d_bus, d2h_bus, peer_bus] = buses
                .entry(g.bus)
                .or_insert_with(|| {
                    [
                        Arc::new(Bus::new(config.host_to_device)),
                        Arc::new(Bus::new(config.device_to_host)),
                        Arc::new(Bus::new(config.peer)),
                    ]
                })
                .clone();
            gpus.push(GpuEngines {
                exec,
                copy: [first, second],
                h2d_bus,
                d2h_bus,
                peer_bus,
            });
            devices.push(DeviceInfo {
                index: i,
                name: format!("{} (emulated)", g.name),
                copy_engines: g.copy_engines.clamp(1, 2),
                memory: 0,
                pci_bus_id: None,
            });
        }
        Ok(EmulatedBackend {
            devices,
            gpus,
            threads,
        })
    }

    /// Queues `op` on `engine`; the reply arrives when it has completed.
    fn enqueue(
        engine: &Engine,
        op: Op,
        on_done: Option<OnDone>,
    ) -> Result<Receiver<Result<Nanos, GpuError>>, GpuError> {
        let (tx, rx) = mpsc::channel();
        engine
            .queue
            .send(Request {
                op,
                reply: tx,
                on_done,
            })
            .map_err(|_| GpuError::Stopped("an engine thread has exited".to_string()))?;
        Ok(rx)
    }

    fn wait(rx: &Receiver<Result<Nanos, GpuError>>) -> Result<Nanos, GpuError> {
        rx.recv()
            .map_err(|_| GpuError::Stopped("an engine thread has exited".to_string()))?
    }

    fn run(engine: &Engine, op: Op) -> Result<Nanos, GpuError> {
        Self::wait(&Self::enqueue(engine, op, None)?)
    }

    /// The engine and the modelled work of `op` on `gpu`.
    fn route(&self, gpu: usize, op: GpuOp) -> Result<(&Engine, Op), GpuError> {
        let g = self.gpu(gpu)?;
        Ok(match op {
            GpuOp::Kernel(ns) => (&g.exec, Op::Kernel(ns)),
            GpuOp::Copy(CopyDir::HostToDevice, bytes) => {
                (&*g.copy[0], Op::Transfer(Arc::clone(&g.h2d_bus), bytes))
            }
            GpuOp::Copy(CopyDir::DeviceToHost, bytes) => {
                (&*g.copy[1], Op::Transfer(Arc::clone(&g.d2h_bus), bytes))
            }
            GpuOp::PeerCopy { dst, bytes } => {
                self.gpu(dst)?;
                (&*g.copy[1], Op::Transfer(Arc::clone(&g.peer_bus), bytes))
            }
        })
    }

    fn gpu(&self, gpu: usize) -> Result<&GpuEngines, GpuError> {
        check_gpu(&self.devices, gpu)?;
        Ok(&self.gpus[gpu])
    }
}

impl Drop for EmulatedBackend {
    fn drop(&mut self) {
        // Closing every queue ends the engine threads' loops.
        self.gpus.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl GpuBackend for EmulatedBackend {
    fn name(&self) -> &'static str {
        "emulated"
    }

    fn devices(&self) -> &[DeviceInfo] {
        &self.devices
    }

    fn kernel(&self, gpu: usize, ns: Nanos) -> Result<Nanos, GpuError> {
        let (engine, op) = self.route(gpu, GpuOp::Kernel(ns))?;
        Self::run(engine, op)
    }

    fn copy(&self, gpu: usize, dir: CopyDir, bytes: Bytes) -> Result<Nanos, GpuError> {
        let (engine, op) = self.route(gpu, GpuOp::Copy(dir, bytes))?;
        Self::run(engine, op)
    }

    fn peer_copy(&self, src: usize, dst: usize, bytes: Bytes) -> Result<Nanos, GpuError> {
        let (engine, op) = self.route(src, GpuOp::PeerCopy { dst, bytes })?;
        Self::run(engine, op)
    }

    fn submit(
        &self,
        gpu: usize,
        op: GpuOp,
        on_done: OnDone,
    ) -> Result<Box<dyn InFlight>, GpuError> {
        let (engine, op) = self.route(gpu, op)?;
        let rx = Self::enqueue(engine, op, Some(on_done))?;
        Ok(Box::new(EmulatedInFlight { rx }))
    }

    fn run_sequence(&self, gpu: usize, ops: &[GpuOp]) -> Result<Nanos, GpuError> {
        let routed = ops
            .iter()
            .map(|&op| self.route(gpu, op).map(|(_, op)| op))
            .collect::<Result<Vec<Op>, GpuError>>()?;
        Self::run(&self.gpu(gpu)?.exec, Op::Sequence(routed))
    }
}

/// An operation queued on an emulated engine.
struct EmulatedInFlight {
    rx: Receiver<Result<Nanos, GpuError>>,
}

impl InFlight for EmulatedInFlight {
    fn finish(self: Box<Self>) -> Result<Nanos, GpuError> {
        EmulatedBackend::wait(&self.rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(copy_engines: u8, buses: &[usize]) -> EmulatedConfig {
        EmulatedConfig {
            gpus: buses
                .iter()
                .enumerate()
                .map(|(i, &bus)| EmulatedGpu {
                    name: format!("g{i}"),
                    copy_engines,
                    bus,
                })
                .collect(),
            // 1 GB/s: 1 byte per ns, so durations read directly.
            host_to_device: 1_000_000_000,
            device_to_host: 1_000_000_000,
            peer: 500_000_000,
        }
    }

    const MS: Nanos = 1_000_000;

    #[test]
    fn a_kernel_takes_its_modelled_duration() {
        let b = EmulatedBackend::new(&config(2, &[0])).expect("start");
        let d = b.kernel(0, 5 * MS).expect("kernel");
        // Sleeping overshoots, never undershoots; the upper bound only catches
        // a wildly wrong model (a loaded machine adds wake-up latency).
        assert!((5 * MS..100 * MS).contains(&d), "took {d} ns");
    }

    /// A batched section: copies and kernels one after the other, one
    /// reply: at least the sum of their modelled times.
    #[test]
    fn a_sequence_runs_its_operations_in_order_and_replies_once() {
        let b = EmulatedBackend::new(&config(2, &[0])).expect("start");
        let ops = [
            GpuOp::Copy(CopyDir::HostToDevice, 2_000_000),
            GpuOp::Kernel(3 * MS),
            GpuOp::Copy(CopyDir::DeviceToHost, 1_000_000),
        ];
        let d = b.run_sequence(0, &ops).expect("sequence");
        assert!((6 * MS..100 * MS).contains(&d), "took {d} ns");
        assert!(b.run_sequence(1, &ops).is_err(), "no GPU 1");
    }

    #[test]
    fn a_copy_takes_bytes_over_bandwidth() {
        let b = EmulatedBackend::new(&config(2, &[0])).expect("start");
        // 4 MB at 1 GB/s = 4 ms.
        let d = b.copy(0, CopyDir::HostToDevice, 4_000_000).expect("copy");
        assert!((4 * MS..100 * MS).contains(&d), "took {d} ns");
        // Peer bandwidth is half: 2 MB = 4 ms.
        let d = b.peer_copy(0, 0, 2_000_000).expect("peer");
        assert!((4 * MS..100 * MS).contains(&d), "took {d} ns");
    }

    #[test]
    fn two_copies_in_one_direction_on_one_bus_share_it() {
        // Two GPUs on bus 0, two 8 MB host-to-device copies started together:
        // 16 MB cross a 1 GB/s bus, so the later one ends at least 16 ms
        // after the earlier one began, however the threads are scheduled (a
        // bus that did not share would let both end after about 8 ms).
        let b = Arc::new(EmulatedBackend::new(&config(2, &[0, 0])).expect("start"));
        let go = Arc::new(std::sync::Barrier::new(2));
        let handles: Vec<_> = (0..2)
            .map(|g| {
                let (b, go) = (Arc::clone(&b), Arc::clone(&go));
                std::thread::spawn(move || {
                    go.wait();
                    let start = monotonic_now();
                    b.copy(g, CopyDir::HostToDevice, 8_000_000).expect("copy");
                    (start, monotonic_now())
                })
            })
            .collect();
        let spans: Vec<(Nanos, Nanos)> = handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect();
        let first = spans.iter().map(|s| s.0).min().expect("two spans");
        let last = spans.iter().map(|s| s.1).max().expect("two spans");
        assert!(
            last - first >= 16 * MS,
            "16 MB crossed the bus in {} ns",
            last - first
        );
    }

    #[test]
    fn copies_on_different_buses_or_directions_do_not_share() {
        // Alone, 20 MB at 1 GB/s takes 20 ms; shared by two it would take at
        // least 40 ms (exactly, by the model), so < 35 ms means unshared.
        let b = Arc::new(EmulatedBackend::new(&config(2, &[0, 1])).expect("start"));
        let ops: Vec<_> = [
            (0, CopyDir::HostToDevice),
            (1, CopyDir::HostToDevice),
            (0, CopyDir::DeviceToHost),
        ]
        .into_iter()
        .map(|(g, dir)| {
            let b = Arc::clone(&b);
            std::thread::spawn(move || b.copy(g, dir, 20_000_000))
        })
        .collect();
        for h in ops {
            let d = h.join().expect("thread").expect("copy");
            assert!((20 * MS..35 * MS).contains(&d), "took {d} ns");
        }
    }

    #[test]
    fn one_copy_engine_serialises_both_directions() {
        let b = Arc::new(EmulatedBackend::new(&config(1, &[0])).expect("start"));
        let t0 = monotonic_now();
        let ops: Vec<_> = [CopyDir::HostToDevice, CopyDir::DeviceToHost]
            .into_iter()
            .map(|dir| {
                let b = Arc::clone(&b);
                std::thread::spawn(move || b.copy(0, dir, 5_000_000))
            })
            .collect();
        for h in ops {
            h.join().expect("thread").expect("copy");
        }
        assert!(monotonic_now() - t0 >= 10 * MS);
    }

    #[test]
    fn kernels_on_one_engine_run_in_fifo_order_one_at_a_time() {
        let b = Arc::new(EmulatedBackend::new(&config(1, &[0])).expect("start"));
        let t0 = monotonic_now();
        let ops: Vec<_> = (0..3)
            .map(|_| {
                let b = Arc::clone(&b);
                std::thread::spawn(move || b.kernel(0, 3 * MS))
            })
            .collect();
        for h in ops {
            h.join().expect("thread").expect("kernel");
        }
        assert!(monotonic_now() - t0 >= 9 * MS);
    }

    #[test]
    fn a_submitted_operation_signals_its_completion_once() {
        let b = EmulatedBackend::new(&config(2, &[0])).expect("start");
        let (tx, rx) = mpsc::channel();
        let t0 = monotonic_now();
        let f = b
            .submit(
                0,
                GpuOp::Kernel(3 * MS),
                Box::new(move || {
                    let _ = tx.send(monotonic_now());
                }),
            )
            .expect("submit");
        // submit returns before the kernel has run.
        assert!(monotonic_now() - t0 < 3 * MS);
        let signalled = rx.recv().expect("on_done called");
        assert!(signalled - t0 >= 3 * MS);
        let d = f.finish().expect("finish");
        assert!((3 * MS..100 * MS).contains(&d), "took {d} ns");
        assert!(rx.recv().is_err(), "on_done is called once");
        // A bad index fails at submission.
        assert!(b
            .submit(0, GpuOp::PeerCopy { dst: 5, bytes: 1 }, Box::new(|| {}))
            .is_err());
    }

    #[test]
    fn a_bad_gpu_index_is_a_clear_error() {
        let b = EmulatedBackend::new(&config(1, &[0])).expect("start");
        let err = b.kernel(3, 1).unwrap_err();
        assert_eq!(err.to_string(), "no GPU 3: this backend has 1 GPU(s)");
        assert!(b.peer_copy(0, 9, 1).is_err());
    }

    #[test]
    fn config_from_a_workload_platform() {
        let w = rtgpu_model::parse_workload(
            "[platform]\ncores = 2\ngpus = 2\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n",
            "t.toml",
        )
        .expect("valid workload");
        let c = EmulatedConfig::from_platform(&w.platform);
        assert_eq!(c.gpus.len(), 2);
        assert_eq!(c.gpus[1].bus, 0, "both GPUs are in the only cluster");
        assert_eq!(c.host_to_device, w.platform.bandwidth.host_to_device);
    }
}
