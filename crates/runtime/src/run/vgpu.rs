//! Linux-RTXG's virtual GPUs (seed 001 §III-B, Fig. 4) in `rtgpu run`:
//! the policy core's vGPU scheduler ([`VgpuScheduler`], FIFO, fixed
//! priority or BAND with budgets replenished every period) decides, with
//! the real clock, whose kernel runs next on a GPU's execution engine.
//!
//! A member's job calls [`VgpuGate::launch`] before each kernel: it blocks
//! until the scheduler dispatches it (seed 001's `on_arrival` suspends the
//! task when its vGPU does not hold the execution permission), runs its
//! kernel while holding the returned [`Launched`], and dropping that is
//! `on_completion`: the kernel's time is charged to the vGPU and the next
//! kernel is dispatched. A BAND vGPU without budget waits for its
//! replenishment even if the GPU would idle; the waiters sleep until that
//! instant (the timer of seed 001's scheduler thread).
//!
//! Kernels are not preempted (a GPU kernel cannot be): one that overruns
//! its vGPU's budget drives it negative and the debt is carried into the
//! next period, as in the simulator.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use rtgpu_policy::vgpu::{VgpuConfig, VgpuPolicy, VgpuScheduler};
use rtgpu_policy::JobId;

use crate::os::{monotonic_now, Nanos};

struct Inner {
    sched: VgpuScheduler,
    /// The launch the scheduler dispatched and that has not completed:
    /// (launch, vGPU, dispatched at).
    running: Option<(JobId, usize, Nanos)>,
    next_launch: JobId,
    /// The window whose engine time [`VgpuGate::used_in_window`] reports.
    window: (Nanos, Nanos),
    /// Per vGPU, its kernels' engine time inside `window`.
    in_window: Vec<Nanos>,
}

impl Inner {
    fn dispatch(&mut self, d: Option<rtgpu_policy::vgpu::Dispatch>, now: Nanos) -> bool {
        match d {
            Some(d) => {
                self.running = Some((d.job, d.vgpu, now));
                true
            }
            None => false,
        }
    }
}

/// The vGPU scheduler of one physical GPU, for real threads.
pub struct VgpuGate {
    inner: Mutex<Inner>,
    changed: Condvar,
}

/// A dispatched kernel; its completion is charged when dropped.
pub struct Launched<'a> {
    gate: &'a VgpuGate,
}

impl VgpuGate {
    /// A gate for the vGPUs of one GPU (`vgpus[k]` is local vGPU `k`),
    /// budgets starting now.
    pub fn new(policy: rtgpu_model::VgpuPolicy, vgpus: &[(Nanos, Nanos)]) -> VgpuGate {
        let policy = match policy {
            rtgpu_model::VgpuPolicy::Band => VgpuPolicy::Band,
            rtgpu_model::VgpuPolicy::Fifo => VgpuPolicy::Fifo,
            rtgpu_model::VgpuPolicy::FixedPriority => VgpuPolicy::FixedPriority,
        };
        // Priority by declaration order, as in the simulator.
        let configs: Vec<VgpuConfig> = vgpus
            .iter()
            .enumerate()
            .map(|(k, &(budget, period))| VgpuConfig {
                budget,
                period,
                priority: k as u64,
            })
            .collect();
        VgpuGate {
            inner: Mutex::new(Inner {
                sched: VgpuScheduler::new(policy, &configs, monotonic_now()),
                running: None,
                next_launch: 0,
                window: (0, Nanos::MAX),
                in_window: vec![0; vgpus.len()],
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state stays consistent across a panic elsewhere: every
        // change is made under the lock in one step.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Blocks until the scheduler dispatches a kernel of local vGPU `vgpu`.
    pub fn launch(&self, vgpu: usize) -> Launched<'_> {
        let mut st = self.lock();
        let me = st.next_launch;
        st.next_launch = st.next_launch.wrapping_add(1);
        let now = monotonic_now();
        let d = st.sched.submit(vgpu, me, now);
        if st.dispatch(d, now) {
            self.changed.notify_all();
        }
        while st.running.map(|r| r.0) != Some(me) {
            match st.sched.next_replenishment() {
                // Throttled (BAND): sleep until the budget comes back, then
                // let the scheduler pick.
                Some(at) => {
                    let now = monotonic_now();
                    if now >= at {
                        let d = st.sched.timer(now);
                        if st.dispatch(d, now) {
                            self.changed.notify_all();
                        }
                        continue;
                    }
                    st = self
                        .changed
                        .wait_timeout(st, Duration::from_nanos(at - now))
                        .map_or_else(|e| e.into_inner().0, |(g, _)| g);
                }
                None => {
                    st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
        Launched { gate: self }
    }

    /// Execution-engine time local vGPU `vgpu` has consumed.
    pub fn used(&self, vgpu: usize) -> Nanos {
        self.lock().sched.used(vgpu)
    }

    /// Counts engine time from now on inside [`from`, `to`) only
    /// (CLOCK_MONOTONIC): a run's release window.
    pub fn set_window(&self, from: Nanos, to: Nanos) {
        let mut st = self.lock();
        st.window = (from, to);
        st.in_window.iter_mut().for_each(|u| *u = 0);
    }

    /// Execution-engine time of local vGPU `vgpu`'s kernels inside the
    /// window (all time without one).
    pub fn used_in_window(&self, vgpu: usize) -> Nanos {
        self.lock().in_window.get(vgpu).copied().unwrap_or(0)
    }
}

impl Drop for Launched<'_> {
    fn drop(&mut self) {
        let g = self.gate;
        let mut st = g.lock();
        let now = monotonic_now();
        if let Some((_, v, since)) = st.running.take() {
            let (from, to) = st.window;
            if let Some(u) = st.in_window.get_mut(v) {
                *u += now.min(to).saturating_sub(since.max(from));
            }
        }
        let d = st.sched.complete(now);
        st.dispatch(d, now);
        g.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// BAND with shares of 60% and 20% of a 10 ms period, both vGPUs
    /// always backlogged with 1 ms kernels by real threads: the engine time
    /// each gets tracks its budget (the rest of the GPU idles: a
    /// reservation, seed 001 Fig. 10(b)), and only one kernel runs at once.
    #[test]
    fn band_keeps_backlogged_vgpus_to_their_budgets() {
        let gate = Arc::new(VgpuGate::new(
            rtgpu_model::VgpuPolicy::Band,
            &[(6_000_000, 10_000_000), (2_000_000, 10_000_000)],
        ));
        let busy = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..2)
            .map(|v| {
                let (gate, busy, stop) = (Arc::clone(&gate), Arc::clone(&busy), Arc::clone(&stop));
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let _k = gate.launch(v);
                        assert!(!busy.swap(true, Ordering::SeqCst), "two kernels at once");
                        crate::os::sleep_until(monotonic_now() + 1_000_000);
                        busy.store(false, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().expect("member thread");
        }
        let (a, b) = (gate.used(0) as f64, gate.used(1) as f64);
        let total = 300e6;
        eprintln!("vGPU shares of 300 ms: {:.3} / {:.3}", a / total, b / total);
        // 6 and 2 ms per 10 ms period, plus at most one kernel of overrun
        // per period; the machine's wake-up delays only lower them.
        assert!(
            a / total > 0.45 && a / total < 0.75,
            "vGPU 0 got {}",
            a / total
        );
        assert!(
            b / total > 0.12 && b / total < 0.32,
            "vGPU 1 got {}",
            b / total
        );
        assert!(a > 2.0 * b, "the 60% vGPU got {a} ns, the 20% one {b} ns");
    }
}
