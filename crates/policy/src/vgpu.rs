//! Linux-RTXG virtual GPUs (seed 001 §IV-V): several vGPUs share one
//! physical GPU's execution engine; a scheduler decides whose kernel is
//! launched next when the engine becomes free. Kernels are not preemptive:
//! one that overruns its vGPU's budget drives the budget negative, and the
//! debt is carried into the next period (the "kernel overrun" spikes of
//! seed 001 Fig. 10).
//!
//! - [`VgpuPolicy::Fifo`]: launch order, budgets only accounted (seed 001
//!   Fig. 10(a): shares are not kept).
//! - [`VgpuPolicy::FixedPriority`]: highest-priority vGPU first, budgets
//!   only accounted.
//! - [`VgpuPolicy::Band`]: fixed priority among vGPUs that still have
//!   budget; a vGPU without budget waits for its replenishment even if the
//!   GPU would idle (a reservation, as in seed 001 Fig. 10(b)).
//!
//! Budgets are replenished every period to `budget` minus any debt.

use std::collections::VecDeque;

use crate::{JobId, Prio, Time};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VgpuPolicy {
    Fifo,
    FixedPriority,
    Band,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VgpuConfig {
    pub budget: Time,
    pub period: Time,
    /// Smaller is more urgent (FP and BAND).
    pub priority: Prio,
}

/// A kernel to launch now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dispatch {
    pub job: JobId,
    pub vgpu: usize,
}

#[derive(Debug, Clone)]
struct State {
    cfg: VgpuConfig,
    remaining: i128,
    next_replenish: Time,
    pending: VecDeque<(JobId, u64)>,
    used: Time,
}

/// The vGPU scheduler of one physical GPU.
#[derive(Debug, Clone)]
pub struct VgpuScheduler {
    policy: VgpuPolicy,
    vgpus: Vec<State>,
    running: Option<(usize, JobId, Time)>,
    seq: u64,
}

impl VgpuScheduler {
    pub fn new(policy: VgpuPolicy, vgpus: &[VgpuConfig], start: Time) -> VgpuScheduler {
        VgpuScheduler {
            policy,
            vgpus: vgpus
                .iter()
                .map(|&cfg| State {
                    cfg,
                    remaining: cfg.budget as i128,
                    next_replenish: start.saturating_add(cfg.period.max(1)),
                    pending: VecDeque::new(),
                    used: 0,
                })
                .collect(),
            running: None,
            seq: 0,
        }
    }

    fn replenish(&mut self, now: Time) {
        for v in &mut self.vgpus {
            let period = v.cfg.period.max(1);
            if now >= v.next_replenish {
                let periods = (now - v.next_replenish) / period + 1;
                v.next_replenish = v.next_replenish.saturating_add(periods * period);
                v.remaining = v.cfg.budget as i128 + v.remaining.min(0);
            }
        }
    }

    fn pick(&mut self, now: Time) -> Option<Dispatch> {
        if self.running.is_some() {
            return None;
        }
        self.replenish(now);
        let mut best: Option<(u64, u64, usize)> = None;
        for (i, v) in self.vgpus.iter().enumerate() {
            let Some(&(_, seq)) = v.pending.front() else {
                continue;
            };
            let key = match self.policy {
                VgpuPolicy::Fifo => (0, seq, i),
                VgpuPolicy::FixedPriority => (v.cfg.priority, seq, i),
                VgpuPolicy::Band if v.remaining > 0 => (v.cfg.priority, seq, i),
                VgpuPolicy::Band => continue,
            };
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        let (_, _, i) = best?;
        let (job, _) = self.vgpus[i].pending.pop_front()?;
        self.running = Some((i, job, now));
        Some(Dispatch { job, vgpu: i })
    }

    /// A kernel of `job` on `vgpu` is ready to launch. Returns what to
    /// launch now, if the engine was idle.
    pub fn submit(&mut self, vgpu: usize, job: JobId, now: Time) -> Option<Dispatch> {
        let seq = self.seq;
        self.seq += 1;
        self.vgpus.get_mut(vgpu)?.pending.push_back((job, seq));
        self.pick(now)
    }

    /// The running kernel finished at `now`; its time is charged to its
    /// vGPU. Returns the next kernel to launch.
    pub fn complete(&mut self, now: Time) -> Option<Dispatch> {
        if let Some((i, _, start)) = self.running.take() {
            let used = now.saturating_sub(start);
            let v = &mut self.vgpus[i];
            v.remaining -= used as i128;
            v.used = v.used.saturating_add(used);
        }
        self.pick(now)
    }

    /// A timer at [`Self::next_replenishment`] fired.
    pub fn timer(&mut self, now: Time) -> Option<Dispatch> {
        self.pick(now)
    }

    /// When a throttled vGPU (BAND, pending work, no budget) gets budget
    /// back, if the engine is idle; the host arms a timer for it.
    pub fn next_replenishment(&self) -> Option<Time> {
        if self.running.is_some() || self.policy != VgpuPolicy::Band {
            return None;
        }
        self.vgpus
            .iter()
            .filter(|v| !v.pending.is_empty())
            .map(|v| v.next_replenish)
            .min()
    }

    pub fn is_busy(&self) -> bool {
        self.running.is_some()
    }

    /// Execution-engine time consumed by `vgpu` so far.
    pub fn used(&self, vgpu: usize) -> Time {
        self.vgpus.get(vgpu).map_or(0, |v| v.used)
    }

    pub fn remaining_budget(&self, vgpu: usize) -> i128 {
        self.vgpus.get(vgpu).map_or(0, |v| v.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two always-backlogged vGPUs with 40/60 shares, kernels of 1 ms:
    /// drive the scheduler as a host would and measure the shares.
    fn shares(policy: VgpuPolicy) -> (f64, f64) {
        let cfg = [
            VgpuConfig {
                budget: 4_000_000,
                period: 10_000_000,
                priority: 0,
            },
            VgpuConfig {
                budget: 6_000_000,
                period: 10_000_000,
                priority: 1,
            },
        ];
        let mut s = VgpuScheduler::new(policy, &cfg, 0);
        let kernel = 1_000_000;
        let mut now = 0;
        let mut next = s.submit(0, 0, now);
        assert!(next.is_some());
        s.submit(1, 1, now);
        while now < 1_000_000_000 {
            match next {
                Some(d) => {
                    now += kernel;
                    // The job immediately submits its next kernel.
                    s.submit(d.vgpu, d.job, now);
                    next = s.complete(now);
                }
                None => {
                    now = s.next_replenishment().expect("throttled");
                    next = s.timer(now);
                }
            }
        }
        let total = (s.used(0) + s.used(1)) as f64;
        (s.used(0) as f64 / total, s.used(1) as f64 / total)
    }

    #[test]
    fn band_keeps_40_60() {
        let (a, b) = shares(VgpuPolicy::Band);
        assert!((a - 0.4).abs() < 0.01 && (b - 0.6).abs() < 0.01, "{a} {b}");
    }

    #[test]
    fn fifo_and_fp_do_not() {
        let (a, _) = shares(VgpuPolicy::Fifo);
        assert!((a - 0.5).abs() < 0.01, "fifo alternates: {a}");
        let (a, _) = shares(VgpuPolicy::FixedPriority);
        assert!(a > 0.99, "fp starves the low vGPU: {a}");
    }

    #[test]
    fn overrun_debt_is_carried() {
        let cfg = [VgpuConfig {
            budget: 1_000,
            period: 10_000,
            priority: 0,
        }];
        let mut s = VgpuScheduler::new(VgpuPolicy::Band, &cfg, 0);
        assert_eq!(s.submit(0, 7, 0), Some(Dispatch { job: 7, vgpu: 0 }));
        assert_eq!(s.submit(0, 7, 100), None, "busy");
        // Overruns: ran 2500 on a budget of 1000.
        assert_eq!(s.complete(2_500), None, "no budget left");
        assert_eq!(s.remaining_budget(0), -1_500);
        assert_eq!(s.next_replenishment(), Some(10_000));
        // Debt carried: 1000 - 1500 < 0, still throttled after one period.
        assert_eq!(s.timer(10_000), None);
        assert_eq!(s.next_replenishment(), Some(20_000));
        assert_eq!(s.timer(20_000), Some(Dispatch { job: 7, vgpu: 0 }));
        assert!(s.is_busy());
    }
}
