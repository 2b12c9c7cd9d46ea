//! EDF in user space for `rtgpu run` (C-EDF / G-EDF plans) on a stock kernel.
//!
//! Linux's real-time class is global fixed priority over each thread's
//! affinity mask. Giving the active jobs of a cluster distinct SCHED_FIFO
//! priorities in deadline order (earliest deadline highest), and re-ranking
//! them whenever a job is released or completes, makes that scheduler pick
//! exactly the jobs EDF picks: priorities change only at releases and
//! completions, which is when EDF's order can change. A cluster's threads
//! are pinned to its cores, so this is C-EDF (G-EDF with one cluster).
//!
//! The cost is up to one `sched_setattr` per active job of the cluster at
//! each release and completion; seed 000's C-EDF keeps clusters small (6
//! cores here), which bounds it. Without real-time priorities nothing can
//! be enforced, and `rtgpu run` says so.
//!
//! A GPU-using task's thread is also a client of the GPU arbiter, which
//! raises it while it blocks other jobs (priority inheritance, seed 004
//! §4.2). Its deadline rank therefore goes to the arbiter as the thread's
//! base priority ([`Client::set_base`]) instead of straight to the kernel:
//! the thread runs at its rank unless it inherits a higher one. Inheriting
//! the highest waiter's rank is inheriting its earlier deadline, which is
//! how GPUSync's locks behave under C-EDF.

use std::sync::Mutex;

use crate::arbiter::Client;
use crate::os::{self, Nanos, SchedPolicy};

/// The highest priority handed out to an active job; the lowest active rank
/// gets `TOP + 1 - active`, never below `FLOOR`.
const TOP: u8 = 98;
const FLOOR: u8 = 2;
/// Threads without an active job sleep at the very top, so that at its
/// release a job's thread runs at once, re-ranks itself by its deadline and
/// only then yields to earlier deadlines (a thread sleeping low would wait
/// for the running job to finish before it could even announce its
/// release: non-preemptive EDF). Sleeping costs no CPU.
const IDLE: u8 = 99;

struct Slot {
    tid: libc::pid_t,
    /// The thread's arbiter client, for GPU-using tasks.
    client: Option<Client>,
    /// Absolute deadline of the active job, if any.
    deadline: Option<Nanos>,
    applied: u8,
}

/// One cluster's EDF order.
#[derive(Default)]
pub struct EdfDispatcher {
    slots: Mutex<Vec<Slot>>,
}

impl EdfDispatcher {
    /// Registers the calling thread (which then sleeps at the top
    /// priority until its first release); returns its slot. `client` is
    /// the thread's arbiter client if the task uses a GPU.
    pub fn register(&self, client: Option<Client>) -> usize {
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let applied = match apply(0, client.as_ref(), IDLE) {
            Ok(()) => IDLE,
            Err(_) => 0,
        };
        s.push(Slot {
            tid: os::gettid(),
            client,
            deadline: None,
            applied,
        });
        s.len() - 1
    }

    /// A job of `slot` was released with absolute deadline `deadline`.
    pub fn release(&self, slot: usize, deadline: Nanos) -> Vec<String> {
        self.update(slot, Some(deadline))
    }

    /// The active job of `slot` completed.
    pub fn complete(&self, slot: usize) -> Vec<String> {
        self.update(slot, None)
    }

    fn update(&self, slot: usize, deadline: Option<Nanos>) -> Vec<String> {
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(x) = s.get_mut(slot) {
            x.deadline = deadline;
        }
        // Deadline order; ties by slot, so the order is total and stable.
        let mut active: Vec<(Nanos, usize)> = s
            .iter()
            .enumerate()
            .filter_map(|(i, x)| x.deadline.map(|d| (d, i)))
            .collect();
        active.sort_unstable();
        let mut want = vec![IDLE; s.len()];
        for (rank, &(_, i)) in active.iter().enumerate() {
            want[i] = TOP
                .saturating_sub(u8::try_from(rank).unwrap_or(u8::MAX))
                .max(FLOOR);
        }
        let mut errors = Vec::new();
        for (x, &p) in s.iter_mut().zip(&want) {
            if x.applied != p {
                match apply(x.tid, x.client.as_ref(), p) {
                    Ok(()) => x.applied = p,
                    Err(e) => errors.push(e),
                }
            }
        }
        errors
    }
}

/// Gives thread `tid` SCHED_FIFO priority `fifo`, through the arbiter for
/// a GPU-using task's thread (its new base priority).
fn apply(tid: libc::pid_t, client: Option<&Client>, fifo: u8) -> Result<(), String> {
    match client {
        Some(c) => c.set_base(fifo).map_err(|e| e.to_string()),
        None => os::set_sched_policy(tid, SchedPolicy::Fifo { priority: fifo })
            .map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earlier_deadlines_get_higher_priorities_and_completion_drops_a_job() {
        if !os::probe_capabilities().fifo {
            eprintln!("SKIPPED: needs SCHED_FIFO");
            return;
        }
        // Three threads register; the priorities are read back per thread.
        let d = std::sync::Arc::new(EdfDispatcher::default());
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let stop_rx = std::sync::Arc::new(std::sync::Mutex::new(stop_rx));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let (d, tx, stop) = (
                    std::sync::Arc::clone(&d),
                    tx.clone(),
                    std::sync::Arc::clone(&stop_rx),
                );
                std::thread::spawn(move || {
                    let slot = d.register(None);
                    tx.send((slot, os::gettid())).expect("send");
                    let _ = stop.lock().map(|r| r.recv());
                })
            })
            .collect();
        let mut tids = [0; 3];
        for _ in 0..3 {
            let (slot, tid) = rx.recv().expect("registered");
            tids[slot] = tid;
        }
        let prio = |slot: usize| match os::sched_policy(tids[slot]).expect("read") {
            SchedPolicy::Fifo { priority } => priority,
            other => panic!("{other:?}"),
        };
        assert!(d.release(0, 300).is_empty());
        assert!(d.release(1, 100).is_empty());
        assert!(d.release(2, 200).is_empty());
        assert_eq!((prio(1), prio(2), prio(0)), (98, 97, 96));
        // The earliest completes: the others move up; it sleeps at IDLE.
        assert!(d.complete(1).is_empty());
        assert_eq!((prio(2), prio(0), prio(1)), (98, 97, IDLE));
        for _ in 0..3 {
            let _ = stop_tx.send(());
        }
        for t in threads {
            t.join().expect("thread");
        }
    }
}
