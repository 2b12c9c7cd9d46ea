//! Bandwidth servers as top-priority CPU interference: klmirqd's
//! independent mode runs each GPU's completion thread as a SCHED_DEADLINE
//! server (seed 000 §III, "independent mode"), which the kernel schedules
//! above every SCHED_FIFO task and, on a stock kernel, on any CPU of its
//! root domain. The analyses of [`crate::workload`] charge every server on
//! every core ([`crate::workload::analyze_with`]).
//!
//! # Demand bound (our derivation)
//!
//! The seeds do not treat this; it is the standard periodic-server jitter
//! argument. A server with runtime Q and period T (relative deadline T)
//! consumes in any window of length t at most
//!
//! ```text
//!     dbf(t) = ⌈(t + T − Q) / T⌉ · Q
//! ```
//!
//! the "back-to-back" pattern: a sporadic task with C = Q, period T and
//! release jitter T − Q (its budget spent at the very end of one period and
//! at the very start of the next ones). Why a CBS with the wake-up rule
//! obeys it: write its state as virtual time v = d − q·T/Q (d the server's
//! absolute deadline, q its remaining runtime). Running for δ advances v by
//! δ·T/Q; a replenishment (q = Q, d += T at the old deadline) leaves v
//! unchanged; the wake-up rule resets (q = Q, d = now + T) exactly when
//! v < now, moving v up to now, and otherwise keeps v ≥ now. So, provided
//! the server never waits for a CPU while it has budget, v ≥ now whenever
//! it is ready (it runs at rate T/Q ≥ 1, or is throttled with v = d > now).
//! Its consumption in [a, a + t) is then at most (Q/T)·(v_end − a), and
//! v_end ≤ r + c·T/Q for the last budget chunk activated at r ≤ a + t, of
//! which it consumed c ≤ min(Q, a + t − r): at most (Q/T)·(t + T − Q), which
//! the staircase above dominates. The same argument bounds Bertogna &
//! Cirinei's workload W with R = T ([`Server::interferer`]).
//!
//! Assumptions, stated where the result is reported: the server never waits
//! for a CPU while it has budget (at most one SCHED_DEADLINE thread per CPU
//! of the root domain: the servers compete only with each other, and there
//! are no more of them than CPUs), and the kernel enforces the runtime
//! exactly (Linux throttles at the next tick unless HRTICK is on, and pays
//! an overrun back from the next period; that slack is not charged).

use serde::Serialize;

use crate::task::{Task, Time};

/// The smallest SCHED_DEADLINE runtime Linux accepts (`__checkparam_dl`:
/// at least 2^DL_SCALE = 1024 ns).
pub const MIN_DEADLINE_RUNTIME: Time = 1_024;

/// A bandwidth server: `runtime` Q of CPU time every `period` T (its
/// relative deadline is T), in integer nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Server {
    pub runtime: Time,
    pub period: Time,
}

impl Server {
    /// A server of `runtime` every `period`; the runtime is clamped to the
    /// period (a server cannot use more than its whole CPU).
    pub const fn new(runtime: Time, period: Time) -> Server {
        Server {
            runtime: if runtime < period { runtime } else { period },
            period,
        }
    }

    /// Whether it can interfere at all (a zero runtime or period cannot).
    pub const fn is_active(&self) -> bool {
        self.runtime > 0 && self.period > 0
    }

    /// The release jitter of its back-to-back pattern, T − Q.
    pub const fn jitter(&self) -> Time {
        self.period.saturating_sub(self.runtime)
    }

    /// ⌈(t + T − Q)/T⌉·Q: the most CPU time it can take in any window of
    /// length `t` (module docs); saturates at `Time::MAX`. 0 for an
    /// inactive server or an empty window.
    pub fn demand(&self, t: Time) -> Time {
        if !self.is_active() || t == 0 {
            return 0;
        }
        let jobs = (t as u128 + self.jitter() as u128).div_ceil(self.period as u128);
        (jobs * self.runtime as u128).min(Time::MAX as u128) as Time
    }

    /// The server as a sporadic task for uniprocessor RTA
    /// ([`crate::fp::response_time`]): C = Q, T, D = T, J = T − Q, so that
    /// the RTA's ⌈(t + J)/T⌉·C is [`Server::demand`].
    pub const fn as_task(&self, id: usize) -> Task {
        Task {
            id,
            wcet: self.runtime,
            period: self.period,
            deadline: self.period,
            jitter: self.jitter(),
            blocking: 0,
        }
    }

    /// The server as an interferer (C, T, R) of Bertogna & Cirinei's
    /// workload bound ([`crate::global_fp`]): C = Q, T, R = T (each budget
    /// chunk is consumed within its period). W(L) = N·Q + min(Q, L + T − Q
    /// − N·T) with N = ⌊(L + T − Q)/T⌋ is at least (Q/T)(L + T − Q) and at
    /// most [`Server::demand`].
    pub const fn interferer(&self) -> (Time, Time, Time) {
        (self.runtime, self.period, self.period)
    }

    /// The longest `backlog` of work (FIFO, the work of interest last)
    /// pending in the server at a time a can take to complete:
    /// (⌈W/Q⌉ + 1)·T; `Time::MAX` for an inactive server. Our derivation,
    /// under the module's assumption that each budget chunk is consumed by
    /// its deadline while there is work for it:
    ///
    /// - At any time a at which the server is not throttled its deadline
    ///   is d ≤ a + T: every deadline is set to s + T at a time s ≤ a,
    ///   by the wake-up rule's reset (s = now) or by a replenishment at the
    ///   old deadline (s = d_old, d = d_old + T). A server throttled at a is
    ///   replenished at its deadline, at most a + T, to (Q, that + T).
    /// - So from a the server delivers at least k·Q by a + (k + 1)·T for
    ///   every k ≥ 1 (the runtime left at a, delivered by d ≤ a + T, is
    ///   not counted; then Q per period), and a backlog of W is done
    ///   by a + (⌈W/Q⌉ + 1)·T.
    ///
    /// klmirqd's independent mode (seed 000 §III) runs a GPU's bottom halves
    /// in such a server: a completion that finds the budget spent waits for
    /// the next period, which this bound charges to the owner's GPU hold
    /// ([`crate::workload::Extra::bottom_halves`]).
    pub fn latency(&self, backlog: Time) -> Time {
        if !self.is_active() {
            return Time::MAX;
        }
        let chunks = backlog.div_ceil(self.runtime) as u128 + 1;
        (chunks * self.period as u128).min(Time::MAX as u128) as Time
    }
}

/// Σ over `servers` of [`Server::demand`]: what all of them may take of one
/// core in a window of length `t` (each may run on any core).
pub fn total_demand(servers: &[Server], t: Time) -> Time {
    servers
        .iter()
        .map(|s| s.demand(t))
        .fold(0, Time::saturating_add)
}

/// The servers as the highest-priority tasks of a uniprocessor RTA, in
/// front of `tasks` (ids `usize::MAX`, never a workload index).
pub fn with_servers_above(servers: &[Server], tasks: &[Task]) -> Vec<Task> {
    servers
        .iter()
        .filter(|s| s.is_active())
        .map(|s| s.as_task(usize::MAX))
        .chain(tasks.iter().copied())
        .collect()
}

/// The servers in words: "2 server(s) of 100 us every 1 ms".
pub fn describe(servers: &[Server]) -> String {
    let f = rtgpu_model::units::format_duration;
    let mut kinds: Vec<(Server, usize)> = Vec::new();
    for s in servers {
        match kinds.iter_mut().find(|(k, _)| k == s) {
            Some((_, n)) => *n += 1,
            None => kinds.push((*s, 1)),
        }
    }
    kinds
        .iter()
        .map(|(s, n)| format!("{n} server(s) of {} every {}", f(s.runtime), f(s.period)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fp;

    #[test]
    fn demand_is_the_back_to_back_staircase() {
        // Q = 1, T = 5: jitter 4. t = 1: ⌈5/5⌉ = 1 chunk; t = 2: ⌈6/5⌉ = 2
        // (the end of one period and the start of the next); t = 6: ⌈10/5⌉
        // = 2; t = 7: ⌈11/5⌉ = 3.
        let s = Server::new(1, 5);
        assert_eq!([0, 1, 2, 6, 7].map(|t| s.demand(t)), [0, 1, 2, 2, 3]);
        // Equal to the RTA's term for the server as a jittered task.
        let t = s.as_task(0);
        for w in 1..40 {
            assert_eq!(s.demand(w), (w + t.jitter).div_ceil(t.period) * t.wcet);
        }
        // A full-bandwidth server takes the whole window; an inactive one none.
        assert_eq!(Server::new(5, 5).demand(17), 20);
        assert_eq!(Server::new(0, 5).demand(17), 0);
        assert_eq!(Server::new(7, 5), Server::new(5, 5));
        assert_eq!(total_demand(&[s, s], 2), 4);
    }

    #[test]
    fn one_core_hand_computed() {
        // One core, τ: C = 2 ms, T = D = 10 ms; one server Q = 1 ms, T = 5 ms
        // (jitter 4 ms). R = 2 + ⌈(R + 4)/5⌉·1 (ms):
        //   R0 = 2 + 1 = 3 → 2 + ⌈7/5⌉ = 4 → 2 + ⌈8/5⌉ = 4. R = 4 ms
        // (the server's chunk at the end of its period just before τ's
        // release and the next at its start: 2 ms of τ and 2 ms of server).
        const MS: Time = 1_000_000;
        let task = Task::implicit(0, 2 * MS, 10 * MS);
        let s = Server::new(MS, 5 * MS);
        let hp = with_servers_above(&[s], &[]);
        assert_eq!(fp::response_time(&hp, &task), Some(4 * MS));
        // Without the server: 2 ms.
        assert_eq!(fp::response_time(&[], &task), Some(2 * MS));
    }

    #[test]
    fn latency_waits_out_spent_budgets() {
        // Q = 1, T = 5: a backlog of 1 is done within 2 periods (the
        // budget may be spent just now, back by the deadline <= a + 5, and
        // then used by its next deadline); 3 units take 4 periods.
        let s = Server::new(1, 5);
        assert_eq!([1, 2, 3].map(|w| s.latency(w)), [10, 15, 20]);
        // No backlog still waits for a period (the top of the bound).
        assert_eq!(s.latency(0), 5);
        assert_eq!(Server::new(0, 5).latency(1), Time::MAX);
    }

    #[test]
    fn describe_groups_equal_servers() {
        let s = Server::new(100_000, 1_000_000);
        assert_eq!(describe(&[s, s]), "2 server(s) of 0.1 ms every 1 ms");
    }
}
