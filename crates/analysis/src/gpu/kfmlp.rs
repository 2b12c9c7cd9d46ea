//! k-FMLP blocking bounds (seed 000, Appendix A).
//!
//! The k-exclusion FMLP protects a pool of k identical resources (GPUs) with
//! k FIFO queues; a request joins the queue with the least worst-case wait
//! (rule R1). A job's blocking b_i is bounded by:
//!
//! - [`l_aware_bound`], Theorem 1 (Eq. 1): b_i ≤ (Σ_{j≠i} l_j) / k,
//! - [`l_oblivious_bound`], Theorem 2 (Eq. 2): b_i ≤ max{l}·|T_R \ {T_i}| / k,
//! - [`exact_bound`], the 0-1 ILP of Eq. (3): the largest, over all ways to
//!   spread the other requests over the k queues, of the shortest queue's
//!   total length, solved exactly by branch and bound; instances above
//!   [`EXACT_NODE_LIMIT`] search nodes fall back to Theorem 1 and say so.
//!
//! All inputs and results are integer nanoseconds. Integer refinement (ours,
//! exact): the shortest queue's wait is an integer no larger than the real
//! average of Eq. (1), hence no larger than its floor, so Theorem 1 returns
//! ⌊Σ l_j / k⌋; under the l-oblivious rule the chosen queue holds at most
//! ⌊(n−1)/k⌋ requests, each at most max{l}, so Theorem 2 returns
//! ⌊(n−1)/k⌋·max{l}, never above Eq. (2)'s real value.

use serde::Serialize;

use crate::task::Time;

/// Search nodes the exact solver may visit before it gives up and returns
/// Theorem 1 (see [`ExactBound::exact`]).
pub const EXACT_NODE_LIMIT: u64 = 2_000_000;

/// Theorem 1 (Eq. 1), l-aware k-FMLP: b_i ≤ ⌊Σ_{j≠i} l_j / k⌋.
///
/// `others` are the critical-section lengths l_j of the other resource-using
/// tasks (T_R \ {T_i}); `k` ≥ 1 is the pool size. `k = 0` means no resource
/// at all: the request never completes, so the bound is `Time::MAX`.
pub fn l_aware_bound(others: &[Time], k: u32) -> Time {
    if k == 0 {
        return if others.is_empty() { 0 } else { Time::MAX };
    }
    let sum: u128 = others.iter().map(|&l| l as u128).sum();
    (sum / k as u128).min(Time::MAX as u128) as Time
}

/// Theorem 2 (Eq. 2), l-oblivious k-FMLP: b_i ≤ ⌊(n−1)/k⌋ · max_{j≠i} l_j,
/// where n − 1 = `others.len()`.
pub fn l_oblivious_bound(others: &[Time], k: u32) -> Time {
    if k == 0 {
        return if others.is_empty() { 0 } else { Time::MAX };
    }
    let max = others.iter().copied().max().unwrap_or(0) as u128;
    let ahead = (others.len() / k as usize) as u128;
    (ahead * max).min(Time::MAX as u128) as Time
}

/// The answer of [`exact_bound`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExactBound {
    /// The bound in nanoseconds: the ILP optimum when `exact`, Theorem 1
    /// otherwise.
    pub bound: Time,
    /// Whether the ILP was solved to optimality within [`EXACT_NODE_LIMIT`].
    pub exact: bool,
    /// Search nodes visited.
    pub nodes: u64,
}

/// The exact l-aware bound of Eq. (3): maximise b subject to every queue's
/// total Σ_q x_{j,q}·l_q ≥ b, each other request in exactly one queue.
///
/// Equivalently the max-min partition ("machine covering") of `others` into
/// `k` bins. Solved by depth-first branch and bound: lengths in decreasing
/// order, bins kept sorted so that equal bins are tried once (symmetry), and
/// a branch cut when, for some j, the j least-loaded bins plus everything
/// not yet placed cannot average above the best found; bins already at
/// ⌊Σ/k⌋ count as one choice (no answer exceeds it); the search stops at
/// ⌊Σ/k⌋. Gives up after
/// [`EXACT_NODE_LIMIT`] nodes and then returns Theorem 1 with `exact =
/// false`.
pub fn exact_bound(others: &[Time], k: u32) -> ExactBound {
    exact_bound_with_limit(others, k, EXACT_NODE_LIMIT)
}

/// [`exact_bound`] with an explicit node limit (for tests and callers that
/// need a tighter budget).
pub fn exact_bound_with_limit(others: &[Time], k: u32, node_limit: u64) -> ExactBound {
    let fallback = |nodes| ExactBound {
        bound: l_aware_bound(others, k),
        exact: false,
        nodes,
    };
    if k == 0 {
        return ExactBound {
            bound: l_aware_bound(others, k),
            exact: true,
            nodes: 0,
        };
    }
    let k = k as usize;
    // Fewer requests than queues: some queue is empty, the request waits 0.
    if others.len() < k {
        return ExactBound {
            bound: 0,
            exact: true,
            nodes: 0,
        };
    }
    let mut items: Vec<u128> = others.iter().map(|&l| l as u128).collect();
    items.sort_unstable_by(|a, b| b.cmp(a));
    // suffix[i] = Σ items[i..].
    let mut suffix = vec![0u128; items.len() + 1];
    for i in (0..items.len()).rev() {
        suffix[i] = suffix[i + 1] + items[i];
    }
    // A greedy start (longest item to the least-loaded bin) gives a good
    // first lower bound.
    let mut greedy = vec![0u128; k];
    for &x in &items {
        if let Some(min) = greedy.iter_mut().min() {
            *min += x;
        }
    }
    let mut s = Search {
        items: &items,
        suffix: &suffix,
        k,
        levels: vec![0; (items.len() + 1) * k],
        best: greedy.iter().copied().min().unwrap_or(0),
        ceiling: suffix[0] / k as u128,
        nodes: 0,
        limit: node_limit,
        aborted: false,
    };
    s.go(0);
    if s.aborted {
        return fallback(s.nodes);
    }
    ExactBound {
        bound: s.best.min(Time::MAX as u128) as Time,
        exact: true,
        nodes: s.nodes,
    }
}

struct Search<'a> {
    items: &'a [u128],
    suffix: &'a [u128],
    k: usize,
    /// Level i (i·k .. (i+1)·k) holds the bin loads after i items, sorted
    /// ascending; preallocated so the search does not allocate.
    levels: Vec<u128>,
    best: u128,
    /// ⌊S/k⌋: nothing can beat it, so the search stops there.
    ceiling: u128,
    nodes: u64,
    limit: u64,
    aborted: bool,
}

impl Search<'_> {
    fn go(&mut self, i: usize) {
        if self.aborted || self.best >= self.ceiling {
            return;
        }
        self.nodes += 1;
        if self.nodes > self.limit {
            self.aborted = true;
            return;
        }
        let k = self.k;
        let (lo, hi) = (i * k, (i + 1) * k);
        if i == self.items.len() {
            self.best = self.best.max(self.levels[lo]);
            return;
        }
        // Upper bound: the j least-loaded bins can together receive at most
        // everything not yet placed, so the final minimum is at most
        // (their load + the rest) / j, for every j.
        let rest = self.suffix[i];
        let mut prefix = 0u128;
        for j in 0..k {
            prefix += self.levels[lo + j];
            // ⌊(prefix + rest)/(j+1)⌋ ≤ best ⇔ prefix + rest < (best+1)(j+1);
            // multiplication instead of a 128-bit division.
            if prefix + rest < (self.best + 1) * (j as u128 + 1) {
                return;
            }
        }
        let x = self.items[i];
        // Least-loaded bins first; equal loads are adjacent (sorted) and
        // tried once (symmetry). A bin already at ⌊S/k⌋ (closed) can never
        // be the minimum that matters, since no answer exceeds ⌊S/k⌋, so all
        // closed bins are one choice: the item goes to the fullest bin.
        // (Closing at the best found so far instead would be wrong: the best
        // grows during the search and would reopen such bins.)
        let target = self.ceiling;
        for b in 0..k {
            let load = self.levels[lo + b];
            if b > 0 && load == self.levels[lo + b - 1] {
                continue;
            }
            let b = if load >= target { k - 1 } else { b };
            self.levels.copy_within(lo..hi, hi);
            // Add x to bin b of the child and restore the order.
            let mut p = hi + b;
            self.levels[p] += x;
            while p + 1 < hi + k && self.levels[p] > self.levels[p + 1] {
                self.levels.swap(p, p + 1);
                p += 1;
            }
            self.go(i + 1);
            if self.aborted || self.best >= self.ceiling || load >= target {
                return;
            }
        }
    }
}

/// All three bounds for every task of a resource-using set: entry i uses the
/// other tasks' lengths. `lengths[i]` = l_i (tasks with l_i = 0 do not use
/// the resource and get 0 blocking; they are not counted in T_R).
pub fn blocking_bounds(lengths: &[Time], k: u32) -> Vec<KfmlpBlocking> {
    (0..lengths.len())
        .map(|i| {
            if lengths[i] == 0 {
                return KfmlpBlocking::default();
            }
            let others: Vec<Time> = lengths
                .iter()
                .enumerate()
                .filter(|&(j, &l)| j != i && l > 0)
                .map(|(_, &l)| l)
                .collect();
            let exact = exact_bound(&others, k);
            KfmlpBlocking {
                l_aware: l_aware_bound(&others, k),
                l_oblivious: l_oblivious_bound(&others, k),
                exact: exact.bound,
                exact_solved: exact.exact,
            }
        })
        .collect()
}

/// The k-FMLP bounds of one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct KfmlpBlocking {
    /// Theorem 1.
    pub l_aware: Time,
    /// Theorem 2.
    pub l_oblivious: Time,
    /// Eq. (3) (Theorem 1 when not solved; see `exact_solved`).
    pub exact: Time,
    pub exact_solved: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Max over all k^n assignments of the smallest queue total.
    fn brute(others: &[Time], k: u32) -> Time {
        let k = k as usize;
        let n = others.len();
        let mut best = 0;
        let total = k.pow(n as u32);
        for code in 0..total {
            let mut bins = vec![0u64; k];
            let mut c = code;
            for &l in others {
                bins[c % k] += l;
                c /= k;
            }
            best = best.max(bins.into_iter().min().unwrap_or(0));
        }
        best
    }

    #[test]
    fn theorem_1_by_hand() {
        // Others 3, 5, 7 ms on k = 2 GPUs: (3+5+7)/2 = 7.5 → 7 (integer
        // refinement, the shortest queue's integer wait is ≤ 7.5).
        assert_eq!(l_aware_bound(&[3, 5, 7], 2), 7);
        // k = 1: the whole sum (FIFO mutex).
        assert_eq!(l_aware_bound(&[3, 5, 7], 1), 15);
        assert_eq!(l_aware_bound(&[], 3), 0);
        assert_eq!(l_aware_bound(&[1], 0), Time::MAX);
    }

    #[test]
    fn theorem_2_by_hand() {
        // Three others, longest 7, k = 2: ⌊3/2⌋ = 1 request ahead → 7
        // (Eq. 2's real value 7·3/2 = 10.5 is looser).
        assert_eq!(l_oblivious_bound(&[3, 5, 7], 2), 7);
        // Four others on k = 2: two ahead → 14.
        assert_eq!(l_oblivious_bound(&[3, 5, 7, 1], 2), 14);
        assert_eq!(l_oblivious_bound(&[3, 5, 7], 1), 21);
    }

    #[test]
    fn exact_by_hand() {
        // 3, 5, 7 on two queues: best split {7} {3,5} → min 7 = Thm 1 here.
        assert_eq!(exact_bound(&[3, 5, 7], 2).bound, 7);
        // 10, 1, 1 on two queues: {10} {1,1} → 2, far below Thm 1's 6.
        let e = exact_bound(&[10, 1, 1], 2);
        assert!(e.exact);
        assert_eq!(e.bound, 2);
        assert_eq!(l_aware_bound(&[10, 1, 1], 2), 6);
        // Fewer others than queues: a queue is free.
        assert_eq!(exact_bound(&[10, 20], 3).bound, 0);
        // 4,4,3,3,2 on two queues: {4,4} {3,3,2} → 8.
        assert_eq!(exact_bound(&[4, 4, 3, 3, 2], 2).bound, 8);
        // Found by the property test against an earlier pruning rule:
        // {32, 19} {23, 12, 11, 1} → 47 (⌊98/2⌋ = 49 is not reachable).
        assert_eq!(exact_bound(&[1, 11, 19, 32, 12, 23], 2).bound, 47);
    }

    #[test]
    fn exact_falls_back_to_theorem_1_when_too_large() {
        let others: Vec<Time> = (1..40).map(|x| x * 7919 % 1000 + 1).collect();
        let e = exact_bound_with_limit(&others, 7, 10);
        assert!(!e.exact);
        assert_eq!(e.bound, l_aware_bound(&others, 7));
    }

    #[test]
    fn exact_equals_brute_force_on_all_small_instances() {
        // Every multiset of up to 5 lengths from {1, 2, 3, 5, 8} on k = 1..3.
        let vals = [1u64, 2, 3, 5, 8];
        for n in 0..=5usize {
            let mut idx = vec![0usize; n];
            loop {
                let others: Vec<Time> = idx.iter().map(|&i| vals[i]).collect();
                for k in 1..=3 {
                    let e = exact_bound(&others, k);
                    assert!(e.exact);
                    assert_eq!(e.bound, brute(&others, k), "{others:?} k={k}");
                    assert!(e.bound <= l_aware_bound(&others, k));
                }
                // next non-decreasing index tuple
                let mut p = n;
                loop {
                    if p == 0 {
                        break;
                    }
                    p -= 1;
                    if idx[p] + 1 < vals.len() {
                        idx[p] += 1;
                        for q in p + 1..n {
                            idx[q] = idx[p];
                        }
                        break;
                    }
                    if p == 0 {
                        p = usize::MAX;
                        break;
                    }
                }
                if n == 0 || p == usize::MAX {
                    break;
                }
            }
        }
    }

    #[test]
    fn blocking_bounds_skip_non_users() {
        let b = blocking_bounds(&[4, 0, 6, 2], 2);
        assert_eq!(b[1], KfmlpBlocking::default());
        // Task 0: others 6, 2 on k = 2 → exact 2, Thm 1 4, Thm 2 6.
        assert_eq!(b[0].exact, 2);
        assert_eq!(b[0].l_aware, 4);
        assert_eq!(b[0].l_oblivious, 6);
    }

    proptest! {
        #[test]
        fn exact_matches_brute_and_theorem_1(
            others in prop::collection::vec(1u64..50, 0..7),
            k in 1u32..4,
        ) {
            let e = exact_bound(&others, k);
            prop_assert!(e.exact);
            prop_assert_eq!(e.bound, brute(&others, k));
            prop_assert!(e.bound <= l_aware_bound(&others, k));
        }

        #[test]
        fn bounds_monotone_in_tasks_and_lengths(
            others in prop::collection::vec(1u64..1_000, 0..10),
            extra in 1u64..1_000,
            grow in 0usize..10,
            k in 1u32..4,
        ) {
            let mut more = others.clone();
            more.push(extra);
            prop_assert!(l_aware_bound(&more, k) >= l_aware_bound(&others, k));
            prop_assert!(l_oblivious_bound(&more, k) >= l_oblivious_bound(&others, k));
            prop_assert!(exact_bound(&more, k).bound >= exact_bound(&others, k).bound);
            if !others.is_empty() {
                let mut longer = others.clone();
                let g = grow % longer.len();
                longer[g] += extra;
                prop_assert!(l_aware_bound(&longer, k) >= l_aware_bound(&others, k));
                prop_assert!(l_oblivious_bound(&longer, k) >= l_oblivious_bound(&others, k));
                prop_assert!(exact_bound(&longer, k).bound >= exact_bound(&others, k).bound);
            }
        }
    }
}
