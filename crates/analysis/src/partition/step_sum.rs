//! The interference of a growing set of higher-priority tasks at a
//! non-decreasing window length ([`StepSum`]), for the top-down RTA of a
//! whole core ([`super::cores::Core::make_exact`]) in time that does not
//! grow with the square of its pieces (issue 24).
//!
//! I(w) = Σ_j ⌈(w + J_j)/T_j⌉·C_j (Tindell, Burns & Wellings 1994, Eq. 4) is
//! a step function of w; each term steps up at w = n_j·T_j − J_j + 1. Going
//! down a core in priority order, the fixed points w_i of the RTA mostly
//! grow (w_i ≥ w_{i−1} + B_i + C_i when the piece above has no blocking and
//! D ≤ T, [`super::cores::chain_start`]), so the terms are kept with their
//! next step in a min-heap and updated only when w passes it: over a whole
//! core the updates number Σ_j w_max/T_j (about 20 per piece for periods
//! log-uniform over two decades) instead of one per piece per iteration of
//! every piece below it. Where a start lies below the current w the sum is
//! rebuilt at that start (one pass over the tasks, the cost of one plain
//! RTA iteration).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::task::{Task, Time};

/// Σ_j ⌈(w + J_j)/T_j⌉·C_j over the tasks added so far, at the current w.
#[derive(Debug, Default, Clone)]
pub(super) struct StepSum {
    w: Time,
    /// The interference at `w`, saturating.
    sum: Time,
    /// Per added task: (T, C, J, ⌈(w + J)/T⌉).
    terms: Vec<(Time, Time, Time, Time)>,
    /// (the least w' at which the term's job count grows, term index).
    heap: BinaryHeap<Reverse<(Time, usize)>>,
}

impl StepSum {
    /// The next step of a term with `jobs` jobs: w' = jobs·T − J + 1.
    fn next_step(period: Time, jitter: Time, jobs: Time) -> Time {
        jobs.saturating_mul(period)
            .saturating_sub(jitter)
            .saturating_add(1)
    }

    fn jobs(w: Time, period: Time, jitter: Time) -> Time {
        w.saturating_add(jitter).div_ceil(period)
    }

    /// Add `task` as an interferer (T > 0).
    pub(super) fn add(&mut self, task: &Task) {
        let jobs = Self::jobs(self.w, task.period, task.jitter);
        self.sum = self.sum.saturating_add(jobs.saturating_mul(task.wcet));
        let i = self.terms.len();
        self.terms.push((task.period, task.wcet, task.jitter, jobs));
        self.heap.push(Reverse((
            Self::next_step(task.period, task.jitter, jobs),
            i,
        )));
    }

    /// Start afresh: the sum over `tasks` (T > 0) at `w`, in one pass (the
    /// heap built in linear time).
    pub(super) fn reset_at(&mut self, tasks: &[Task], w: Time) {
        self.w = w;
        self.sum = 0;
        self.terms.clear();
        let mut heap = std::mem::take(&mut self.heap).into_vec();
        heap.clear();
        for (i, t) in tasks.iter().enumerate() {
            let jobs = Self::jobs(w, t.period, t.jitter);
            self.sum = self.sum.saturating_add(jobs.saturating_mul(t.wcet));
            self.terms.push((t.period, t.wcet, t.jitter, jobs));
            heap.push(Reverse((Self::next_step(t.period, t.jitter, jobs), i)));
        }
        self.heap = BinaryHeap::from(heap);
    }

    /// The current w (the sum is I(w); [`StepSum::fixed_point`] from a
    /// start at or above it needs no rebuild).
    pub(super) fn w(&self) -> Time {
        self.w
    }

    /// I(w) for `w` ≥ the current w, which becomes `w`.
    pub(super) fn at(&mut self, w: Time) -> Time {
        debug_assert!(w >= self.w, "StepSum only moves forward");
        self.w = w;
        while let Some(&Reverse((step, i))) = self.heap.peek() {
            if step > w {
                break;
            }
            let (period, wcet, jitter, old) = self.terms[i];
            let jobs = Self::jobs(w, period, jitter);
            self.sum = self.sum.saturating_add((jobs - old).saturating_mul(wcet));
            self.terms[i].3 = jobs;
            let mut top = self.heap.peek_mut().expect("peeked above");
            *top = Reverse((Self::next_step(period, jitter, jobs), i));
        }
        self.sum
    }

    /// Recompute every term at `w` (which may lie below the current w).
    pub(super) fn rebuild_at(&mut self, w: Time) {
        self.w = w;
        self.sum = 0;
        self.heap.clear();
        for (i, term) in self.terms.iter_mut().enumerate() {
            let (period, wcet, jitter, _) = *term;
            let jobs = Self::jobs(w, period, jitter);
            term.3 = jobs;
            self.sum = self.sum.saturating_add(jobs.saturating_mul(wcet));
            self.heap
                .push(Reverse((Self::next_step(period, jitter, jobs), i)));
        }
    }

    /// The least fixed point w ≥ `start` of w = `base` + I(w), or `None`
    /// once w exceeds `limit`. `start` must not exceed the least fixed
    /// point (then the iteration climbs to it, as in [`crate::fp`]); a
    /// start below the current w rebuilds the sum there.
    pub(super) fn fixed_point(&mut self, base: Time, start: Time, limit: Time) -> Option<Time> {
        if start < self.w {
            self.rebuild_at(start);
        }
        let mut w = start;
        loop {
            let next = base.checked_add(self.at(w))?;
            if next > limit {
                return None;
            }
            if next == w {
                return Some(w);
            }
            w = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fp;

    proptest::proptest! {
        /// Top down over a random core, the fixed points are fp's.
        #[test]
        fn fixed_points_match_fp(
            raw in proptest::collection::vec((1u64..=2000, 1u64..=40, 0u64..=30, 0u8..4), 0..40),
        ) {
            let tasks = crate::partition::tests::dm_core(&raw);
            let mut s = StepSum::default();
            // The previous task's window, when it bounds this one's from
            // below (chain_start: no blocking, D ≤ T).
            let mut last: Option<Time> = None;
            for (i, t) in tasks.iter().enumerate() {
                let exact = fp::response_time(&tasks[..i], t);
                let base = t.blocking + t.wcet;
                // Starts both at the current w and below it (rebuilds).
                let start = match last {
                    Some(w) if i % 3 != 0 => w + base,
                    _ => base / 2,
                };
                let got = s
                    .fixed_point(base, start, t.deadline.saturating_sub(t.jitter))
                    .map(|w| w + t.jitter);
                proptest::prop_assert_eq!(got, exact);
                last = got.filter(|_| t.blocking == 0).map(|r| r - t.jitter);
                s.add(t);
            }
        }
    }
}
