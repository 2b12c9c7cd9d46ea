//! Overhead injection (seed 000 App. B), when the workload has overheads
//! and the run injects them (all zero otherwise): what each charge is and
//! where it lands.
//!
//! - A job's first CPU segment: `Δrel + Δipi + 2(Δsch + Δcxs)` (Eqs. 6,
//!   9; [`Engine::release_charge`]).
//! - Its second CPU half: `2(Δsch + Δcxs)` per return from a GPU
//!   suspension, one per interrupt (Eq. 7; [`Engine::resume_charge`]); a
//!   SCHED_DEADLINE owner pays them at each completion instead, in a
//!   resume segment ([`Engine::dl_resume_cost`]).
//! - A preempted thread pays nothing: the preempting side's charges cover
//!   the switches both ways ([`Engine::preempt`]).
//! - Interrupts: the top half `Δth` runs non-preemptively on the GPU's
//!   interrupt core and freezes whatever runs there
//!   ([`Engine::raise_interrupt`], Eqs. 12-18); the bottom half costs what
//!   the interrupt policy's plan says ([`rtgpu_policy::interrupt::plan`]
//!   with [`interrupt_costs`]), plus, in a thread of its own, that
//!   thread's switches where it runs ([`Engine::bottom_half_switches`]).
//!
//! Timer ticks are not simulated.

use rtgpu_model::Overheads;
use rtgpu_policy::interrupt::{self, Handling};
use rtgpu_policy::Time;

use super::deadline::DL;
use super::Engine;

/// The interrupt policy's costs among the workload's overheads.
pub(super) fn interrupt_costs(o: &Overheads) -> interrupt::Costs {
    interrupt::Costs {
        th: o.th,
        bh: o.bh,
        krel: o.krel,
        pairel: o.pairel,
        paisch: o.paisch,
    }
}

impl Engine {
    /// One scheduling decision and context switch each way, 2(Δsch +
    /// Δcxs) (seed 000 Eq. 6): what a thread pays per dispatch that
    /// preempts and switches back (0 without overheads).
    pub(super) fn switch_pair(&self) -> Time {
        2 * (self.s.overheads.sch + self.s.overheads.cxs)
    }

    /// What a job's first CPU segment is charged: its release, the
    /// inter-processor interrupt and a switch pair, `Δrel + Δipi +
    /// 2(Δsch + Δcxs)` (seed 000 Eqs. 6, 9).
    pub(super) fn release_charge(&self) -> Time {
        let o = self.s.overheads;
        o.rel + o.ipi + self.switch_pair()
    }

    /// The context switches of job `i`'s returns from its GPU suspensions,
    /// a switch pair per interrupt (seed 000 Eq. 7), charged to its second
    /// CPU half; none for a SCHED_DEADLINE owner, which paid them at each
    /// completion ([`Self::dl_resume_cost`]).
    pub(super) fn resume_charge(&self, i: usize) -> Time {
        if self.threads[i].domain == DL {
            0
        } else {
            self.jobs[i].interrupts as Time * self.switch_pair()
        }
    }

    /// A bottom half in a thread of its own (klmirqd, fixed-priority
    /// threads) pays that thread's scheduling and switches in and out,
    /// 2(Δsch + Δcxs), where it runs: on the core whose thread it preempts
    /// (seed 000 Eq. 16 charges them to the owner's task; charged here,
    /// the time lands where it is spent). Other methods: nothing.
    pub(super) fn bottom_half_switches(&self) -> Time {
        match self.handling {
            Handling::Klmirqd | Handling::FixedThreads { .. } => self.switch_pair(),
            _ => 0,
        }
    }

    /// A SCHED_DEADLINE owner's resume segment after each GPU operation's
    /// completion: a switch pair (seed 000 Eq. 7, paid per completion)
    /// plus, under klmirqd dependent and PAI, the bottom half, which runs
    /// in the owner's own thread and budget ([`Self::dl_owner_wake`]).
    pub(super) fn dl_resume_cost(&self) -> Time {
        let mut cost = self.switch_pair();
        if matches!(self.handling, Handling::Klmirqd | Handling::Pai) {
            cost += interrupt::plan(self.handling, &self.costs, 0).bottom_cost;
        }
        cost
    }
}
