//! klmirqd's priority rule in user space (seed 000 §IV; DESIGN.md §2): the
//! bottom half of a GPU's interrupts must run at the effective priority of
//! the job that owns the GPU, not at a fixed priority of its own.
//!
//! On a kernel with threaded interrupt handlers (PREEMPT_RT, `threadirqs`,
//! or the NVIDIA driver on the kernel measured in docs/guide/gpu.md) the
//! handlers are kernel threads named `irq/N-nvidia` at a fixed SCHED_FIFO
//! priority (50 by default). A fixed priority is exactly what seed 000 §III
//! shows to be wrong: above a job's priority it delays unrelated higher-
//! priority work, below it the GPU owner waits for its own completion. So
//! [`IrqMirror`] sets those threads to the owner's effective priority while
//! the owner holds the GPU, and back to their original policy when the GPU
//! is idle and when the mirror is dropped: no patch, no module, one
//! `sched_setattr` per change of owner.

use crate::os::{self, OsError, SchedPolicy};

/// The interrupt threads of one GPU and their original policies.
#[derive(Debug)]
pub struct IrqMirror {
    threads: Vec<(libc::pid_t, String, SchedPolicy)>,
    current: Option<SchedPolicy>,
}

impl IrqMirror {
    /// Mirrors onto every `irq/N-nvidia` thread of this machine (all GPUs:
    /// the thread names do not say which GPU an interrupt line serves;
    /// /proc/interrupts does, by PCI address, when it matters).
    pub fn discover() -> std::io::Result<IrqMirror> {
        Self::matching(os::is_nvidia_irq_thread)
    }

    /// Mirrors onto the threads whose name satisfies `pred`.
    pub fn matching(pred: impl Fn(&str) -> bool) -> std::io::Result<IrqMirror> {
        let mut threads = Vec::new();
        for (tid, comm) in os::find_threads(pred)? {
            // A thread that vanished meanwhile is skipped.
            if let Ok(policy) = os::sched_policy(tid) {
                threads.push((tid, comm, policy));
            }
        }
        Ok(IrqMirror {
            threads,
            current: None,
        })
    }

    /// The threads mirrored onto: (tid, name, original policy).
    pub fn threads(&self) -> &[(libc::pid_t, String, SchedPolicy)] {
        &self.threads
    }

    /// Gives every interrupt thread the owner's effective priority, or
    /// restores their original policies with `None` (the GPU became idle).
    /// Does nothing when the priority is unchanged. On failure the threads
    /// already changed keep the new priority; the error names the thread.
    pub fn mirror(&mut self, owner: Option<SchedPolicy>) -> Result<(), OsError> {
        if owner == self.current {
            return Ok(());
        }
        for (tid, _, original) in &self.threads {
            os::set_sched_policy(*tid, owner.unwrap_or(*original))?;
        }
        self.current = owner;
        Ok(())
    }
}

impl Drop for IrqMirror {
    fn drop(&mut self) {
        let _ = self.mirror(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A stand-in for a kernel interrupt thread: a user thread named like
    /// one, at SCHED_FIFO 50 where allowed (as the kernel creates them).
    fn stand_in(
        name: &'static str,
    ) -> (libc::pid_t, mpsc::Sender<()>, std::thread::JoinHandle<()>) {
        let (tid_tx, tid_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let h = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let _ = os::set_sched_policy(0, SchedPolicy::Fifo { priority: 50 });
                let _ = tid_tx.send(os::gettid());
                let _ = stop_rx.recv();
            })
            .expect("spawn");
        (tid_rx.recv().expect("tid"), stop_tx, h)
    }

    #[test]
    fn the_owner_priority_is_mirrored_and_restored() {
        let caps = os::probe_capabilities();
        // Linux truncates thread names to 15 bytes: "irq/977-nvidia" fits.
        let (tid, stop, h) = stand_in("irq/977-nvidia");
        let original = os::sched_policy(tid).expect("read policy");
        {
            let mut m = IrqMirror::matching(|c| c == "irq/977-nvidia").expect("/proc");
            assert_eq!(m.threads().len(), 1);
            assert_eq!(m.threads()[0].0, tid);
            assert_eq!(m.threads()[0].2, original);
            if caps.fifo {
                // The owner runs at FIFO 80: the bottom half follows it.
                m.mirror(Some(SchedPolicy::Fifo { priority: 80 }))
                    .expect("mirror");
                assert_eq!(
                    os::sched_policy(tid).expect("read"),
                    SchedPolicy::Fifo { priority: 80 }
                );
                // A lower-priority owner takes over: the thread drops with it.
                m.mirror(Some(SchedPolicy::Fifo { priority: 20 }))
                    .expect("mirror");
                assert_eq!(
                    os::sched_policy(tid).expect("read"),
                    SchedPolicy::Fifo { priority: 20 }
                );
                // The GPU is idle: back to the original priority.
                m.mirror(None).expect("restore");
                assert_eq!(os::sched_policy(tid).expect("read"), original);
                m.mirror(Some(SchedPolicy::Fifo { priority: 70 }))
                    .expect("mirror");
            } else {
                let err = m
                    .mirror(Some(SchedPolicy::Fifo { priority: 80 }))
                    .unwrap_err();
                assert!(err.is_permission(), "{err}");
            }
        }
        // Dropping the mirror restores the original policy.
        assert_eq!(os::sched_policy(tid).expect("read"), original);
        let _ = stop.send(());
        h.join().expect("stand-in");
    }

    #[test]
    fn real_nvidia_threads_are_found_only_by_their_pattern() {
        let (tid, stop, h) = stand_in("irq/978-ahci");
        let m = IrqMirror::discover().expect("/proc");
        assert!(m.threads().iter().all(|(t, ..)| *t != tid));
        let _ = stop.send(());
        h.join().expect("stand-in");
    }
}
