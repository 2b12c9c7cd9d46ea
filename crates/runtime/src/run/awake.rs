//! Keeping CPUs out of their idle state during a run (`rtgpu run
//! --keep-awake`): one SCHED_IDLE thread per CPU spins while jobs are
//! released, so no CPU halts between jobs. In a virtual machine a halted
//! virtual CPU may take a millisecond or more to wake for a timer (measured
//! on the project's 2-vCPU VM and on the H100 VM: release latency p99.99
//! about 1 ms, docs/runtime.md), which a 1 kHz loop cannot absorb; a
//! spinning CPU takes the timer interrupt at once. SCHED_IDLE runs only
//! when no other thread of any policy wants the CPU, so the spinners take
//! nothing from the workload; they cost power (and, on SMT siblings, some
//! speed). The same as booting with `idle=poll`, for the run only.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::os::{self, SchedPolicy};

/// The spinners; dropping it stops and joins them.
pub struct KeepAwake {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl KeepAwake {
    /// One spinner per CPU of `cpus`, each pinned there at SCHED_IDLE.
    /// `Err` names what the OS refused (nothing is left running then).
    pub fn start(cpus: &[usize]) -> Result<KeepAwake, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut awake = KeepAwake {
            stop: Arc::clone(&stop),
            threads: Vec::new(),
        };
        for &cpu in cpus {
            let stop = Arc::clone(&stop);
            let (tx, rx) = std::sync::mpsc::channel();
            let spawned = std::thread::Builder::new()
                .name(format!("rtgpu-awake{cpu}"))
                .spawn(move || {
                    let set = os::set_affinity(0, &[cpu])
                        .and_then(|()| os::set_sched_policy(0, SchedPolicy::Idle));
                    let ok = set.is_ok();
                    let _ = tx.send(set.map_err(|e| e.to_string()));
                    // A plain loop: no PAUSE (`spin_loop`), which a
                    // hypervisor may answer with a pause-loop exit that
                    // deschedules the virtual CPU, the very halt avoided.
                    let mut n: u64 = 0;
                    while ok && !stop.load(Ordering::Relaxed) {
                        n = std::hint::black_box(n.wrapping_add(1));
                    }
                });
            let handle = spawned.map_err(|e| format!("cannot start a spinner: {e}"))?;
            awake.threads.push(handle);
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(format!("CPU {cpu}: {e}")),
                Err(_) => return Err(format!("CPU {cpu}: the spinner stopped")),
            }
        }
        Ok(awake)
    }
}

impl Drop for KeepAwake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinners_run_at_sched_idle_on_their_cpu_and_stop() {
        let cpus = os::affinity(0).unwrap_or_default();
        let Some(&cpu) = cpus.first() else { return };
        let awake = KeepAwake::start(&[cpu]).expect("SCHED_IDLE needs no privilege");
        let tids = os::find_threads(|c| c == format!("rtgpu-awake{cpu}")).expect("/proc");
        let mine: Vec<_> = tids
            .iter()
            .filter(|(tid, _)| std::path::Path::new(&format!("/proc/self/task/{tid}")).exists())
            .collect();
        assert_eq!(mine.len(), 1, "{tids:?}");
        assert_eq!(
            os::sched_policy(mine[0].0).expect("read"),
            SchedPolicy::Idle
        );
        assert_eq!(os::affinity(mine[0].0).expect("read"), vec![cpu]);
        drop(awake);
        assert!(!std::path::Path::new(&format!("/proc/self/task/{}", mine[0].0)).exists());
    }
}
