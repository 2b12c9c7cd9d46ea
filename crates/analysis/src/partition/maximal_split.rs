//! MaximalSplit (seed 003 §IV): the largest budget C' a task may take at
//! the top of a core (below the servers). [`maximal_split`] and
//! [`maximal_split_with`] are the plain references on [`crate::fp`];
//! [`max_top_wcet`] is the fast twin the partitioner uses (a parametric
//! RTA that visits only the scheduling points where a fixed point lands,
//! [`climb_max_top_wcet`]; exact, property-tested against the reference
//! and against the maximum over every scheduling point). The earlier
//! methods, Bini & Buttazzo's reduced scheduling points and a
//! branch-and-bound sweep over all of them, are kept for the tests (the
//! reduced points can miss the largest C' of one task, but only at a C' at
//! which a task above it misses its period, see `reduced_points`).

use crate::fp;
use crate::server::{self, Server};
use crate::task::{Task, Time};

use super::is_splittable;

/// MaximalSplit (seed 003 §IV): the largest C' < C such that τ':(C',T,D) at
/// the highest priority above `core` (priority order) keeps `core`
/// schedulable; 0 if none, if `task` is not [`is_splittable`], or if `core`
/// is not schedulable on its own.
pub fn maximal_split(core: &[Task], task: &Task) -> Time {
    if !is_splittable(task) || task.wcet == 0 {
        return 0;
    }
    fp::max_top_priority_wcet(core, task.period, task.deadline, task.wcet - 1).unwrap_or(0)
}

/// [`maximal_split`] with `servers` above every task of the core: the
/// largest C' < C such that τ':(C',T,D), placed below the servers and
/// above `core`, keeps every task of `core` schedulable with the servers
/// and completes (response time R' with the servers' jittered demand)
/// early enough for its remainder τ'' = (C − C', T, D − R') to keep
/// C − C' ≤ D − R' (seed 003 §III.B's split; [`fp::max_wcet_below_top`]). The plain
/// reference for the partitioner's MaximalSplit with servers; with no
/// servers it is [`maximal_split`].
pub fn maximal_split_with(core: &[Task], servers: &[Server], task: &Task) -> Time {
    if !is_splittable(task) || task.wcet == 0 {
        return 0;
    }
    let all = server::with_servers_above(servers, core);
    let top = all.len() - core.len();
    let (p, d, c) = (task.period, task.deadline, task.wcet);
    fp::max_wcet_below_top(&all, top, p, d, c, c - 1).unwrap_or(0)
}

/// [`fp::max_top_priority_wcet`] for a core that is schedulable on its own,
/// with `resp` its response times, faster on cores whose tasks all have
/// J = 0 and D ≤ T (same answer, tested); other cores go to fp. With
/// servers (the first `top` tasks of `core`, jittered) the new task goes
/// below them and [`fp::max_wcet_below_top`] answers (seed 003 §IV's
/// MaximalSplit with R' ≤ D, §III.B).
///
/// For each τ_k in priority order, with `best` the largest C' still allowed:
/// 1. one warm-started RTA of τ_k with the new task at C' = `best` (from
///    τ_k's response time without it); if τ_k meets its deadline, it does
///    not lower `best`;
/// 2. otherwise the largest admissible C' is
///    max_t ⌊(t − B_k − C_k − Σ_hp ⌈t/T_j⌉C_j)/⌈t/T'⌉⌋ over the scheduling
///    points t ≤ D_k of the time-demand test (Lehoczky, Sha & Ding 1989; seed
///    003 footnote 4), found by [`climb_max_top_wcet`] without listing the
///    points: the RTA of τ_k at C' = c lands on the first point that admits
///    c, c is raised to what that point admits, and so on until the RTA
///    passes D_k. It visits about 3 points per task on the benchmark's sets,
///    where Bini & Buttazzo's reduced set or a sweep over every point (the
///    earlier methods, kept for the tests) computed W at several times as
///    many. Its answer is the maximum over every scheduling point, so the
///    exact MaximalSplit (`fast_maximal_split_matches_fp`,
///    `climb_matches_every_scheduling_point`).
#[allow(clippy::too_many_arguments)]
pub(super) fn max_top_wcet(
    core: &[Task],
    top: usize,
    resp: &[Time],
    point: Option<&[Time]>,
    period: Time,
    deadline: Time,
    cap: Time,
    scratch: &mut PointScratch,
) -> Time {
    if top > 0 {
        // `cap` is C − 1 of the task being split.
        let whole = cap.saturating_add(1);
        return fp::max_wcet_below_top(core, top, period, deadline, whole, cap).unwrap_or(0);
    }
    let PointScratch { terms, .. } = scratch;
    let plain = core.iter().all(|t| t.jitter == 0 && t.deadline <= t.period);
    if !plain {
        return fp::max_top_priority_wcet(core, period, deadline, cap).unwrap_or(0);
    }
    let mut best = cap.min(deadline);
    for k in 0..core.len() {
        if best == 0 {
            break;
        }
        let (higher, task) = (&core[..k], &core[k]);
        // Step 0 (issue 24): τ_k's deadline-point demand W_k(D_k), when
        // known, plus the new task's ⌈D_k/T'⌉·C' within D_k: then τ_k meets
        // its deadline (the least fixed point is at most D_k) in O(1)
        // instead of an O(k) RTA.
        if let Some(&w) = point.and_then(|p| p.get(k)) {
            let new_jobs = task.deadline.div_ceil(period).saturating_mul(best);
            if w != Time::MAX && w.saturating_add(new_jobs) <= task.deadline {
                continue;
            }
        }
        if fits_below_new_task(higher, task, period, best, resp[k]) {
            continue;
        }
        // Points of the full set: the multiples of each interferer's period.
        let linear = higher.iter().fold(task.deadline / period, |s, h| {
            s.saturating_add(task.deadline / h.period)
        });
        #[cfg(any(test, feature = "reference"))]
        if linear > fp::MAX_SCHEDULING_POINTS && super::cores::reference::enabled() {
            return fp::max_top_priority_wcet(core, period, deadline, best).unwrap_or(0);
        }
        if linear > fp::MAX_SCHEDULING_POINTS {
            // Many points (long deadlines over short periods, or thousands
            // of pieces on the core): the climb below could visit as many
            // of them. Binary search on C' instead, as fp's reference
            // does for this τ_k ([`fp::max_top_priority_wcet`]'s search
            // branch): whether τ_k meets its deadline is monotone in C', it
            // does at C' = 0 (the core is schedulable) and not at `best`
            // (step 1). Each probe is the warm-started RTA of step 1, and
            // only the few τ_k that step 1 rejects are searched (fp
            // searches every τ_k from a cold start: O(n²) RTAs per split
            // on a core of n pieces, issue 24).
            let fits = |c: Time| fits_below_new_task(higher, task, period, c, resp[k]);
            best = fp::last_below(best, fits);
            continue;
        }
        // What τ_k's deadline-point demand W_k(D_k) admits (an upper bound
        // on it where not tight: then less), a lower bound on its maximum
        // to start from.
        let from = point
            .and_then(|p| p.get(k))
            .and_then(|&w| task.deadline.checked_sub(w))
            .map_or(0, |room| room / task.deadline.div_ceil(period));
        let low = resp[k].saturating_add(from);
        let found = climb_max_top_wcet(higher, task, period, low, from, terms);
        // A core schedulable on its own admits C' = 0 at some point.
        debug_assert!(found.is_some(), "core not schedulable on its own");
        best = best.min(found.unwrap_or(0));
    }
    best
}

/// The reduced scheduling points of Bini & Buttazzo (IEEE TC 53(11), 2004,
/// Theorem 2) for τ below the interferers (the higher-priority tasks and the
/// new task of period T'): P_0(t) = {t}, P_j(t) = P_{j−1}(⌊t/T_j⌋T_j) ∪
/// P_{j−1}(t) from t = D, largest period first (its floors add the fewest
/// points). Each point is a witness: "W(t) + ⌈t/T'⌉C' ≤ t" at one of them
/// proves τ's deadline met. The maximum of C' over them equals the
/// maximum over every scheduling point when, at that C', the tasks above
/// τ (the new one included) complete within their periods
/// (`reduced_points_are_exact_below_schedulable_tasks` in the tests); at
/// a larger C', where one of them does not, it can fall short
/// (`reduced_points_can_miss_the_maximum`: one unit), which
/// [`max_top_wcet`] never depends on. Points below
/// B + C + Σ_hp C_j admit nothing, nor do the points derived from them
/// (smaller), so they are dropped. Fills `points`; `false` if it would
/// exceed `limit` points.
#[cfg(test)]
pub(super) fn reduced_points(
    higher: &[Task],
    task: &Task,
    period: Time,
    limit: usize,
    points: &mut Vec<Time>,
    periods: &mut Vec<Time>,
) -> bool {
    let floor_demand = higher
        .iter()
        .fold(task.blocking.saturating_add(task.wcet), |s, h| {
            s.saturating_add(h.wcet)
        });
    periods.clear();
    periods.push(period);
    periods.extend(higher.iter().map(|h| h.period));
    periods.sort_unstable_by(|a, b| b.cmp(a));
    points.clear();
    points.push(task.deadline);
    for &p in periods.iter() {
        let n = points.len();
        for i in 0..n {
            let t = points[i];
            let floor = t / p * p;
            if floor >= floor_demand && floor != t {
                points.push(floor);
            }
        }
        if points.len() > limit {
            return false;
        }
    }
    true
}

/// g(t) = ⌊(t − W(t))/⌈t/T'⌉⌋ with W(t) = B + C + Σ_hp ⌈t/T_j⌉C_j, or
/// `None` if W(t) > t.
#[cfg(test)]
pub(super) fn slack_per_job(higher: &[Task], task: &Task, period: Time, t: Time) -> Option<Time> {
    let demand = higher
        .iter()
        .fold(task.blocking.saturating_add(task.wcet), |s, h| {
            s.saturating_add(t.div_ceil(h.period).saturating_mul(h.wcet))
        });
    t.checked_sub(demand)
        .map(|slack| slack / t.div_ceil(period))
}

/// max over all scheduling points t ≤ D (multiples of T' and of the
/// higher-priority periods, and D) of g(t) = ⌊(t − W(t))/⌈t/T'⌉⌋ with
/// W(t) = B + C + Σ_hp ⌈t/T_j⌉C_j, or `None` if no point has W(t) ≤ t.
///
/// Branch and bound over blocks of windows of T' (window a is
/// ((a−1)·T', a·T']), latest blocks first since late windows usually hold
/// the maximum: every t in windows a..=b has t ≤ min(b·T', D), W(t) ≥
/// W((a−1)·T' + 1) and ⌈t/T'⌉ ≥ a, so g(t) ≤ (min(b·T', D) − W((a−1)·T' +
/// 1))/a; a block whose bound cannot beat the best value found is dropped,
/// others are halved down to [`BLOCK_WINDOWS`] windows and swept by
/// [`sweep_range`]. `scratch` holds the heap and the block stack.
#[cfg(test)]
pub(super) fn sweep_max_top_wcet(
    higher: &[Task],
    task: &Task,
    period: Time,
    scratch: &mut SweepScratch,
) -> Option<Time> {
    let SweepScratch {
        heap: queue,
        blocks,
    } = scratch;
    let own = task.blocking.saturating_add(task.wcet);
    let windows = task.deadline.div_ceil(period);
    let mut found: Option<Time> = None;
    blocks.clear();
    // Each block with W((a−1)·T' + 1) where known (a first half has its
    // parent's), else Time::MAX (recomputing a saturated W gives MAX too).
    blocks.push((1, windows, Time::MAX));
    while let Some((a, b, known)) = blocks.pop() {
        let start = (a - 1).saturating_mul(period);
        let end = b.saturating_mul(period).min(task.deadline);
        let floor = match known {
            Time::MAX => higher.iter().fold(own, |s, h| {
                s.saturating_add((start / h.period + 1).saturating_mul(h.wcet))
            }),
            floor => floor,
        };
        let Some(room) = end.checked_sub(floor) else {
            continue; // W(t) > t everywhere in the block
        };
        if found.is_some_and(|f| room / a <= f) {
            continue;
        }
        if b - a < BLOCK_WINDOWS {
            found = sweep_range(higher, period, start, end, floor, found, queue);
        } else {
            let mid = a + (b - a) / 2;
            blocks.push((a, mid, floor));
            blocks.push((mid + 1, b, Time::MAX));
        }
    }
    found
}

/// Windows of T' swept at once by [`sweep_max_top_wcet`] (tuned on the
/// benchmark workload: fewer bounds vs. fewer swept points).
#[cfg(test)]
const BLOCK_WINDOWS: Time = 4;

/// max(`found`, max g(t) over the points t in (`from`, `to`]); `to` itself
/// is a point; `demand` is W(`from` + 1) (the bound's floor in
/// [`sweep_max_top_wcet`]). Sweeps the points in increasing order, updating W(t) and
/// ⌈t/T'⌉ at each release instead of dividing (W is constant on
/// (l·T_j, (l+1)·T_j]). A run of consecutive points of one interferer with no
/// other release in between is collapsed to its last point: along it
/// t − W(t) grows by T_j − C_j ≥ 0 per point (or, for the new task, t grows
/// by T' while ⌈t/T'⌉ grows by one and t − W ≤ ⌈t/T'⌉·T'), so g is
/// non-decreasing along the run. `queue` is scratch space.
#[cfg(test)]
fn sweep_range(
    higher: &[Task],
    period: Time,
    from: Time,
    to: Time,
    mut demand: Time,
    mut found: Option<Time>,
    queue: &mut Vec<(Time, usize)>,
) -> Option<Time> {
    let collapse = higher.iter().all(|h| h.wcet <= h.period);
    // State for t just above `from`: `queue` is a min-heap of (end of the
    // current constant piece, interferer); the new task is interferer
    // `higher.len()`. Only the pieces that end before `to` are held (an
    // interferer leaves once its piece reaches `to`): the sweep stops at
    // `to`, and there W(t) counts no release at or after it. On the
    // benchmark's short blocks most interferers have no release in the
    // block, and the heap stays small. Built in place (heapify, O(n));
    // the order of equal times does not matter: all of them are passed at
    // once, at one point.
    let new_task = higher.len();
    let mut jobs_new: Time = from / period + 1;
    queue.clear();
    queue.extend(
        higher
            .iter()
            .enumerate()
            .map(|(j, h)| ((from / h.period + 1).saturating_mul(h.period), j))
            .filter(|&(end, _)| end < to),
    );
    let end_new = jobs_new.saturating_mul(period);
    if end_new < to {
        queue.push((end_new, new_task));
    }
    for i in (0..queue.len() / 2).rev() {
        sift_down_from(queue, i);
    }
    // Divide only when the point beats `found`: slack ≥ (found + 1)·jobs.
    let mut consider = |t: Time, demand: Time, jobs: Time| {
        if let Some(slack) = t.checked_sub(demand) {
            let beats = match found {
                None => true,
                Some(f) => (slack as u128) >= (f as u128 + 1) * jobs as u128,
            };
            if beats {
                found = Some(slack / jobs);
            }
        }
    };
    loop {
        let Some(&(first, who)) = queue.first() else {
            consider(to, demand, jobs_new);
            return found;
        };
        let second = match (queue.get(1), queue.get(2)) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            _ => Time::MAX,
        }
        .min(to);
        let (p, c) = if who == new_task {
            (period, 0)
        } else {
            (higher[who].period, higher[who].wcet)
        };
        // Points first, first + p, …, last < second of `who` alone.
        let run = if collapse && first.saturating_add(p) < second {
            (second - 1 - first) / p
        } else {
            0
        };
        let last = first + run * p;
        if who == new_task {
            consider(last, demand, jobs_new + run);
        } else {
            consider(last, demand.saturating_add(run.saturating_mul(c)), jobs_new);
        }
        // Past `last`: `who` gains run + 1 jobs, and every interferer whose
        // piece also ends at `last` (a tie, only when run = 0) one job.
        let mut steps = run + 1;
        loop {
            let (at, j) = queue[0];
            let p = if j == new_task {
                jobs_new += steps;
                period
            } else {
                demand = demand.saturating_add(steps.saturating_mul(higher[j].wcet));
                higher[j].period
            };
            let end = at.saturating_add(steps.saturating_mul(p));
            if end < to {
                queue[0].0 = end;
            } else {
                queue.swap_remove(0);
            }
            sift_down(queue);
            match queue.first() {
                Some(&(at, _)) if at == last => steps = 1,
                _ => break,
            }
        }
    }
}

/// Restore the min-heap order of `heap` (by time) after its root grew or
/// was replaced by its last entry (none where it is empty).
#[cfg(test)]
fn sift_down(heap: &mut [(Time, usize)]) {
    if !heap.is_empty() {
        sift_down_from(heap, 0);
    }
}

/// Move `heap[i]` down until it is no later than its children (the
/// subtrees below it being heaps already).
#[cfg(test)]
#[inline(always)]
fn sift_down_from(heap: &mut [(Time, usize)], mut i: usize) {
    let n = heap.len();
    let item = heap[i];
    loop {
        let l = 2 * i + 1;
        if l >= n {
            break;
        }
        let r = l + 1;
        let c = if r < n && heap[r].0 < heap[l].0 { r } else { l };
        if heap[c].0 >= item.0 {
            break;
        }
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = item;
}

/// From this many pieces above on, [`fits_below_new_task`] goes through
/// [`super::cores::window_from`] (fewer in unit tests, so that the property
/// tests on long cores go through it; below about 500 pieces the plain
/// passes cost fewer instructions: 1,000 tasks on 4 cores, callgrind).
const STEPPED_FITS: usize = if cfg!(test) { 64 } else { 512 };

/// Whether `task` (J = 0, D ≤ T) meets its deadline below `higher` and a new
/// highest-priority task (C' = `wcet`, T' = `period`, no jitter); the RTA
/// starts from `resp`, its response time without the new task.
fn fits_below_new_task(higher: &[Task], task: &Task, period: Time, wcet: Time, resp: Time) -> bool {
    let Some(base) = task.blocking.checked_add(task.wcet) else {
        return false;
    };
    if higher.len() >= STEPPED_FITS && base > 0 {
        // Below many pieces: the same least fixed point from the same
        // start by [`super::cores::window_from`] (plain passes while they
        // move far, then a StepSum: most passes of a warm start cross few
        // job releases), with the new task as one more interferer above.
        thread_local! {
            static WITH_NEW: std::cell::RefCell<Vec<Task>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        return WITH_NEW.with(|all| {
            let mut all = all.borrow_mut();
            all.clear();
            all.push(Task::new(usize::MAX, wcet, period, period));
            all.extend_from_slice(higher);
            super::cores::window_from(&all, task, resp, task.deadline).is_some()
        });
    }
    let mut w = resp;
    loop {
        let mut next = match w
            .div_ceil(period)
            .checked_mul(wcet)
            .and_then(|x| x.checked_add(base))
        {
            Some(v) => v,
            None => return false,
        };
        for h in higher {
            match w
                .div_ceil(h.period)
                .checked_mul(h.wcet)
                .and_then(|x| next.checked_add(x))
            {
                Some(v) => next = v,
                None => return false,
            }
        }
        if next > task.deadline {
            return false;
        }
        if next == w {
            return true;
        }
        w = next;
    }
}

/// max over all scheduling points t ≤ D of g(t) = ⌊(t − W(t))/⌈t/T'⌉⌋
/// with W(t) = B + C + Σ_hp ⌈t/T_j⌉C_j (no jitter), or `None` if no point
/// has W(t) ≤ t: `sweep_max_top_wcet`'s answer, by a parametric RTA
/// that visits only the points where a fixed point lands. τ meets its
/// deadline with C' = c iff W(t) + ⌈t/T'⌉·c ≤ t at some 0 < t ≤ D
/// (Lehoczky, Sha & Ding 1989), and the least such t is the least fixed
/// point of the RTA iteration (Tindell et al. 1994, Eq. 4). With C' = c,
/// the least t ≥ `low` with W(t) + ⌈t/T'⌉·c ≤ t is found by the usual
/// iteration (every t it skips has W(t) + ⌈t/T'⌉·c > t, so g(t) < c);
/// there no job count changes up to the end e of t's constant piece (the
/// next release of any interferer, the new task included, or D), so
/// g(e) ≥ c is the largest g in the piece; then c = g(e) + 1 from e + 1 on.
/// Raising c only raises the demand, so nothing skipped comes back, and
/// when the iteration passes D no later point reaches c: the last g(e) is
/// the maximum. It starts at C' = `from`, which must be at most that
/// maximum (a point known to admit it), and at t = `low`, which must be at
/// most the least fixed point at `from` (the RTA start of τ without the
/// new task, its response time or a lower bound on it, plus `from`: the
/// new task adds at least one job of `from`, so the least fixed point
/// grows by at least that much); no point skipped below either admits
/// more. `None` if no point admits `from`. `terms` is scratch space.
pub(super) fn climb_max_top_wcet(
    higher: &[Task],
    task: &Task,
    period: Time,
    low: Time,
    from: Time,
    terms: &mut Vec<Climb>,
) -> Option<Time> {
    let base = task.blocking.checked_add(task.wcet)?;
    let deadline = task.deadline;
    let mut t = low.max(base).max(1);
    // The new task is the last term, with C = 1: its value is ⌈t/T'⌉.
    terms.clear();
    terms.extend(higher.iter().map(|h| Climb {
        period: h.period,
        wcet: h.wcet,
        value: 0,
        until: 0,
    }));
    terms.push(Climb {
        period,
        wcet: 1,
        value: 0,
        until: 0,
    });
    let (mut sum, mut least) = Climb::bring(terms, t)?;
    let mut found = None;
    let mut c = from;
    loop {
        if t > deadline {
            return found;
        }
        if t > least {
            // Where W(t) overflows, no later point admits anything.
            let Some(brought) = Climb::bring(terms, t) else {
                return found;
            };
            (sum, least) = brought;
        }
        let jobs = terms.last().map_or(1, |n| n.value);
        // W(t) without the new task's term (C = 1 there: its job count).
        let Some(demand) = (sum - jobs).checked_add(base) else {
            return found;
        };
        let Some(next) = jobs.checked_mul(c).and_then(|x| x.checked_add(demand)) else {
            return found;
        };
        if next > t {
            t = next;
            continue;
        }
        // W(t) + ⌈t/T'⌉·c ≤ t: the piece ends at e, where g is largest.
        let end = least.min(deadline);
        let g = (end - demand) / jobs;
        found = Some(g);
        if end == deadline {
            return found;
        }
        c = g + 1;
        t = end + 1;
    }
}

/// One term ⌈t/T⌉·C of [`climb_max_top_wcet`] at the current t, and the last
/// t with that job count (k·T; `Time::MAX` where that overflows).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Climb {
    period: Time,
    wcet: Time,
    value: Time,
    until: Time,
}

impl Climb {
    /// Bring every term to t ≥ 1 (only the ones past their `until`; one
    /// job more without a division where t is at most a period past it):
    /// the sum of the values and the least `until`, or `None` where a value
    /// or the sum overflows (then W(t) does, and W of every later t).
    fn bring(terms: &mut [Climb], t: Time) -> Option<(Time, Time)> {
        let (mut sum, mut least) = (0 as Time, Time::MAX);
        for term in terms.iter_mut() {
            if t > term.until {
                match term.until.checked_add(term.period) {
                    // From the start (0 jobs up to t = 0) too.
                    Some(next) if t <= next => {
                        term.value = term.value.checked_add(term.wcet)?;
                        term.until = next;
                    }
                    _ => {
                        let k = t.div_ceil(term.period);
                        term.value = k.checked_mul(term.wcet)?;
                        term.until = k.checked_mul(term.period).unwrap_or(Time::MAX);
                    }
                }
            }
            sum = sum.checked_add(term.value)?;
            least = least.min(term.until);
        }
        Some((sum, least))
    }
}

/// Scratch space for [`max_top_wcet`].
#[derive(Default)]
pub(super) struct PointScratch {
    pub(super) terms: Vec<Climb>,
    #[cfg(test)]
    pub(super) points: Vec<Time>,
    #[cfg(test)]
    pub(super) periods: Vec<Time>,
    #[cfg(test)]
    pub(super) sweep: SweepScratch,
}

/// Scratch space for [`sweep_max_top_wcet`]: the event heap of
/// [`sweep_range`] and the stack of window blocks.
#[cfg(test)]
#[derive(Default)]
pub(super) struct SweepScratch {
    heap: Vec<(Time, usize)>,
    blocks: Vec<(Time, Time, Time)>,
}
