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
//!
//! [`completion`] adds klmirqd's own threads in user space: one completion
//! thread per GPU that runs the bottom half of every GPU operation at the
//! owner's effective priority while the owner waits (dependent mode), or as
//! a SCHED_DEADLINE bandwidth server (independent mode).

pub mod completion;

pub use completion::{
    BottomHalfSpan, CompletionStats, CompletionThread, Mode, ModeReport, ServerConfig,
};

use crate::os::{self, OsError, SchedPolicy};

/// Something whose priority follows the effective priority of a GPU's
/// owner: the driver's interrupt threads ([`IrqMirror`]) and klmirqd's
/// completion threads ([`CompletionThread::follower`]). The arbiter calls
/// [`PriorityFollower::follow`] after every change of ownership or
/// inheritance, with the highest effective priority among the GPU's token
/// holders, or `None` when nobody holds the GPU.
pub trait PriorityFollower: Send {
    /// Takes the owner's policy, or the follower's idle policy for `None`.
    /// Does nothing when unchanged.
    fn follow(&mut self, owner: Option<SchedPolicy>) -> Result<(), OsError>;
    /// The threads it moves, by name, for the run report.
    fn names(&self) -> Vec<String>;
}

impl PriorityFollower for IrqMirror {
    fn follow(&mut self, owner: Option<SchedPolicy>) -> Result<(), OsError> {
        self.mirror(owner)
    }

    fn names(&self) -> Vec<String> {
        self.threads.iter().map(|t| t.1.clone()).collect()
    }
}

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

    /// Mirrors onto the interrupt threads of the GPU at PCI address `pci`
    /// (`domain:bus:device`, as the CUDA backend reports it): the IRQ
    /// numbers /proc/interrupts lists for that address and the nvidia driver.
    pub fn for_pci(pci: &str) -> std::io::Result<IrqMirror> {
        let table = std::fs::read_to_string("/proc/interrupts")?;
        let irqs = nvidia_irqs_for(&table, pci);
        Self::matching(|comm| {
            comm.strip_prefix("irq/")
                .and_then(|r| r.split_once('-'))
                .is_some_and(|(n, name)| {
                    name.starts_with("nvidia") && n.parse::<u32>().is_ok_and(|n| irqs.contains(&n))
                })
        })
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

/// IRQ numbers of the nvidia driver's interrupt lines for the device at PCI
/// address `pci` (a prefix of the full `domain:bus:device.function`), from
/// the text of /proc/interrupts.
pub fn nvidia_irqs_for(interrupts: &str, pci: &str) -> Vec<u32> {
    interrupts
        .lines()
        .filter(|l| {
            l.contains(pci)
                && l.split_whitespace()
                    .last()
                    .is_some_and(|d| d.starts_with("nvidia"))
        })
        .filter_map(|l| l.trim_start().split(':').next()?.trim().parse().ok())
        .collect()
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
    fn interrupt_lines_are_found_by_pci_address() {
        // As read on the H100 box (docs/guide/gpu.md), two lines of eight.
        let table = "           CPU0       CPU1\n \
             42:          0          0 PCI-MSIX-0000:00:06.0   0-edge      nvidia\n \
             44:         12          0 PCI-MSIX-0000:00:06.0   2-edge      nvidia\n \
             24:          3          0 ACPI:Ged\n \
             50:          0          0 PCI-MSIX-0000:00:07.0   0-edge      nvidia\n";
        assert_eq!(nvidia_irqs_for(table, "0000:00:06"), vec![42, 44]);
        assert_eq!(nvidia_irqs_for(table, "0000:00:07"), vec![50]);
        assert!(nvidia_irqs_for(table, "0000:00:08").is_empty());
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
