//! SCHED_DEADLINE's constant bandwidth server (CBS), as a stock Linux
//! kernel runs it: the rules the simulator applies to every deadline
//! entity (CPU reservations, klmirqd's independent servers), so that what
//! it runs is what `rtgpu run` gets from the kernel.
//!
//! An entity has a runtime Q, a relative deadline D and a period T
//! (Q ≤ D ≤ T); its state is an absolute deadline d and a remaining
//! runtime q. The rules (Linux `kernel/sched/deadline.c`; seed 001 §III-D
//! and its Eq. 1 state the wake-up rule):
//!
//! - **Wake-up** (`update_dl_entity`): a thread that wakes at t keeps
//!   (d, q) unless d < t or q would overrun its bandwidth, q·D > (d − t)·Q
//!   (`dl_entity_overflow`); then it gets a new period, d = t + D, q = Q.
//!   A constrained entity (D < T) whose deadline has not passed instead
//!   keeps d with q cut to (d − t)·Q/D (`update_dl_revised_wakeup`).
//! - **Running** consumes q; at q = 0 the entity is **throttled** until
//!   d − D + T (`dl_next_period`), when it is **replenished**
//!   (`replenish_dl_entity`): d += T, q += Q until q > 0, and a deadline
//!   already in the past starts a new period at t.
//! - Among ready, unthrottled entities the earliest d runs first (global
//!   EDF), above every SCHED_FIFO thread.
//!
//! Not modelled: overruns (the kernel throttles at the next tick unless
//! HRTICK is on and pays the overrun back from the next period; here the
//! runtime is enforced exactly), GRUB reclaiming (off unless
//! SCHED_FLAG_RECLAIM) and the 0-lag timer, which only matter for
//! admission and reclaiming.

use crate::Time;

/// A SCHED_DEADLINE entity's parameters and state, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cbs {
    runtime: Time,
    rel_deadline: Time,
    period: Time,
    /// Absolute deadline d.
    d: Time,
    /// Remaining runtime q.
    q: Time,
    /// Whether it has had a period yet (a new entity starts one at its
    /// first wake-up, as `sched_setattr` followed by a wake-up does).
    started: bool,
}

impl Cbs {
    /// An entity of runtime Q, relative deadline D and period T; Q is
    /// clamped to D and D to T (the kernel refuses other parameters), each
    /// at least 1 ns.
    pub fn new(runtime: Time, deadline: Time, period: Time) -> Cbs {
        let period = period.max(1);
        let deadline = deadline.clamp(1, period);
        Cbs {
            runtime: runtime.clamp(1, deadline),
            rel_deadline: deadline,
            period,
            d: 0,
            q: 0,
            started: false,
        }
    }

    /// Its runtime Q.
    pub fn runtime(&self) -> Time {
        self.runtime
    }

    /// Its absolute deadline d, the key of the global EDF among entities.
    pub fn deadline(&self) -> Time {
        self.d
    }

    /// Its remaining runtime q: how long it may run before it is throttled.
    pub fn budget(&self) -> Time {
        self.q
    }

    /// The thread wakes at `now` (module docs, wake-up rule).
    pub fn wake(&mut self, now: Time) {
        if !self.started {
            self.started = true;
            self.new_period(now);
            return;
        }
        let overflow = self.d < now
            || (self.q as u128) * (self.rel_deadline as u128)
                > ((self.d - now) as u128) * (self.runtime as u128);
        if !overflow {
            return;
        }
        if self.rel_deadline < self.period && self.d >= now {
            self.q =
                ((self.d - now) as u128 * self.runtime as u128 / self.rel_deadline as u128) as Time;
        } else {
            self.new_period(now);
        }
    }

    fn new_period(&mut self, now: Time) {
        self.d = now.saturating_add(self.rel_deadline);
        self.q = self.runtime;
    }

    /// It ran for `ran` (at most its budget).
    pub fn consume(&mut self, ran: Time) {
        debug_assert!(ran <= self.q, "ran past its budget");
        self.q = self.q.saturating_sub(ran);
    }

    /// Whether its budget is spent: it may not run until
    /// [`Self::replenish_at`].
    pub fn throttled(&self) -> bool {
        self.q == 0
    }

    /// When a throttled entity is replenished: d − D + T.
    pub fn replenish_at(&self) -> Time {
        self.d - self.rel_deadline + self.period
    }

    /// The replenishment timer fired at `now` (module docs).
    pub fn replenish(&mut self, now: Time) {
        while self.q == 0 {
            self.d = self.d.saturating_add(self.period);
            self.q = self.runtime;
        }
        if self.d < now {
            self.new_period(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_wake_starts_a_period() {
        let mut c = Cbs::new(2, 10, 10);
        c.wake(5);
        assert_eq!((c.deadline(), c.budget()), (15, 2));
    }

    #[test]
    fn wake_keeps_a_deadline_the_budget_fits() {
        // Q/D = 2/10. At 7 with q = 1 and d = 15: 1·10 <= 8·2, kept.
        let mut c = Cbs::new(2, 10, 10);
        c.wake(5);
        c.consume(1);
        c.wake(7);
        assert_eq!((c.deadline(), c.budget()), (15, 1));
        // At 12, 1·10 > 3·2: the budget would overrun the bandwidth, so a
        // new period starts (seed 001's deadline postponement).
        c.wake(12);
        assert_eq!((c.deadline(), c.budget()), (22, 2));
        // A passed deadline always resets.
        c.consume(2);
        c.wake(40);
        assert_eq!((c.deadline(), c.budget()), (50, 2));
    }

    #[test]
    fn constrained_wake_cuts_the_budget() {
        // Q = 4, D = 8, T = 20. Woken at 6 with q = 4, d = 8: 4·8 > 2·4,
        // overflow; D < T and d not passed: q = 2·4/8 = 1, d kept.
        let mut c = Cbs::new(4, 8, 20);
        c.wake(0);
        c.wake(6);
        assert_eq!((c.deadline(), c.budget()), (8, 1));
    }

    #[test]
    fn throttle_and_replenish() {
        let mut c = Cbs::new(3, 10, 10);
        c.wake(0);
        c.consume(3);
        assert!(c.throttled());
        assert_eq!(c.replenish_at(), 10);
        c.replenish(10);
        assert_eq!((c.deadline(), c.budget()), (20, 3));
        // Replenished late (its new deadline already passed): a new period.
        c.consume(3);
        c.replenish(45);
        assert_eq!((c.deadline(), c.budget()), (55, 3));
        // Constrained: throttled at q = 0 with d = 8 waits until d − D + T.
        let mut k = Cbs::new(2, 5, 12);
        k.wake(3);
        k.consume(2);
        assert_eq!(k.replenish_at(), 15);
        k.replenish(15);
        assert_eq!((k.deadline(), k.budget()), (20, 2));
    }

    #[test]
    fn parameters_are_clamped() {
        let c = Cbs::new(50, 40, 30);
        assert_eq!((c.runtime(), c.rel_deadline), (30, 30));
    }
}
