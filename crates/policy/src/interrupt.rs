//! GPU interrupt handling policies (seed 000 §III-IV, App. B).
//!
//! A GPU interrupt is split into a top half, which runs at once and
//! non-preemptively on the core that receives it, and a bottom half, the
//! deferrable work (for a GPU: waking the job that waits for the
//! completion). The policy decides where and at which priority the bottom
//! half runs; [`plan`] returns that decision with the costs the host must
//! charge (seed 000 App. B):
//!
//! - SLIH: bottom half right after the top half, non-preemptive:
//!   `Δth + Δbh` on the interrupted core (Eqs. 12-13).
//! - PAI: the top half enqueues the bottom half (`Δpairel`, Eqs. 17-18)
//!   and it runs at its owner's priority; `Δpaisch` per scheduling decision
//!   is added to the bottom half (Eq. 19-20).
//! - Fixed-priority threads (PREEMPT_RT style): the top half wakes the
//!   interrupt thread (`Δkrel`), which runs the bottom half at the
//!   priority the user gave it, whoever owns the interrupt.
//! - klmirqd (dependent mode): the top half wakes the klmirqd thread
//!   (`Δkrel`, Eqs. 14-15); the thread runs the bottom half at the owner's
//!   *effective* priority and is never scheduled beside its owner.
//! - klmirqd independent mode ([`Handling::KlmirqdServer`]): the top half
//!   wakes the GPU's klmirqd thread (`Δkrel`), a SCHED_DEADLINE bandwidth
//!   server with its own runtime and period ([`crate::cbs`]), which runs
//!   the bottom half whoever owns the interrupt.

use crate::{Prio, Time};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    Slih,
    Pai,
    /// Fixed priority key of the interrupt thread (smaller = more urgent).
    FixedThreads {
        priority: Prio,
    },
    Klmirqd,
    /// klmirqd's independent mode: the thread is a bandwidth server.
    KlmirqdServer,
}

/// Overheads involved (seed 000 Table III names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Costs {
    pub th: Time,
    pub bh: Time,
    pub krel: Time,
    pub pairel: Time,
    pub paisch: Time,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BottomHalf {
    /// Part of the non-preemptive top-half interval (SLIH).
    Inline,
    /// A schedulable entity at `prio`. `exclusive_with_owner`: never runs
    /// while its owner runs (klmirqd).
    Deferred {
        prio: Prio,
        exclusive_with_owner: bool,
    },
    /// A SCHED_DEADLINE bandwidth server's work ([`crate::cbs`]): no
    /// priority, its runtime and period decide when it runs.
    Server,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterruptPlan {
    /// Non-preemptive time on the interrupted core.
    pub top_half: Time,
    pub bottom_half: BottomHalf,
    /// CPU time of the deferred bottom half (0 when inline).
    pub bottom_cost: Time,
}

/// Where the bottom half of an interrupt owned by a job of effective
/// priority `owner` runs, and what it costs.
pub fn plan(h: Handling, c: &Costs, owner: Prio) -> InterruptPlan {
    match h {
        Handling::Slih => InterruptPlan {
            top_half: c.th + c.bh,
            bottom_half: BottomHalf::Inline,
            bottom_cost: 0,
        },
        Handling::Pai => InterruptPlan {
            top_half: c.th + c.pairel,
            bottom_half: BottomHalf::Deferred {
                prio: owner,
                exclusive_with_owner: false,
            },
            bottom_cost: c.bh + 2 * c.paisch,
        },
        Handling::FixedThreads { priority } => InterruptPlan {
            top_half: c.th + c.krel,
            bottom_half: BottomHalf::Deferred {
                prio: priority,
                exclusive_with_owner: false,
            },
            bottom_cost: c.bh,
        },
        Handling::Klmirqd => InterruptPlan {
            top_half: c.th + c.krel,
            bottom_half: BottomHalf::Deferred {
                prio: owner,
                exclusive_with_owner: true,
            },
            bottom_cost: c.bh,
        },
        Handling::KlmirqdServer => InterruptPlan {
            top_half: c.th + c.krel,
            bottom_half: BottomHalf::Server,
            bottom_cost: c.bh,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: Costs = Costs {
        th: 16_440,
        bh: 29_900,
        krel: 1_390,
        pairel: 560,
        paisch: 130,
    };

    #[test]
    fn slih_is_all_non_preemptive() {
        let p = plan(Handling::Slih, &C, 7);
        assert_eq!(p.top_half, 46_340);
        assert_eq!(p.bottom_half, BottomHalf::Inline);
        assert_eq!(p.bottom_cost, 0);
    }

    #[test]
    fn klmirqd_takes_owner_priority_and_excludes_owner() {
        let p = plan(Handling::Klmirqd, &C, 7);
        assert_eq!(p.top_half, 16_440 + 1_390);
        assert_eq!(
            p.bottom_half,
            BottomHalf::Deferred {
                prio: 7,
                exclusive_with_owner: true
            }
        );
        assert_eq!(p.bottom_cost, 29_900);
    }

    #[test]
    fn fixed_threads_ignore_the_owner() {
        let a = plan(Handling::FixedThreads { priority: 3 }, &C, 1);
        let b = plan(Handling::FixedThreads { priority: 3 }, &C, 99);
        assert_eq!(a, b);
        assert!(matches!(
            a.bottom_half,
            BottomHalf::Deferred { prio: 3, .. }
        ));
    }

    #[test]
    fn pai_charges_its_own_costs() {
        let p = plan(Handling::Pai, &C, 5);
        assert_eq!(p.top_half, 16_440 + 560);
        assert_eq!(p.bottom_cost, 29_900 + 260);
    }

    #[test]
    fn the_independent_server_runs_every_bottom_half_alike() {
        let a = plan(Handling::KlmirqdServer, &C, 1);
        assert_eq!(a, plan(Handling::KlmirqdServer, &C, 99));
        assert_eq!(a.top_half, 16_440 + 1_390);
        assert_eq!(a.bottom_half, BottomHalf::Server);
        assert_eq!(a.bottom_cost, 29_900);
    }
}
