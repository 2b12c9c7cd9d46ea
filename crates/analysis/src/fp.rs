//! Uniprocessor fixed-priority preemptive scheduling: exact response-time
//! analysis (RTA) with release jitter and blocking, priority assignment (DM,
//! RM, Audsley's optimal priority assignment), the Liu & Layland and
//! hyperbolic utilization bounds, and the exact "maximal split" budget used by
//! PDMS_HPTS (seed 003 §IV, MaximalSplit).
//!
//! Conventions: every slice of tasks is in priority order, index 0 being the
//! highest priority. All arithmetic is on integer nanoseconds; any overflow is
//! treated as "unschedulable", never wrapped.
//!
//! Sources:
//! - RTA with jitter and blocking over the level-i busy period (arbitrary
//!   deadlines): Tindell, Burns & Wellings, "An extendible approach for
//!   analysing fixed priority hard real-time tasks", RTS 6(2), 1994, Eqs. (4)-(7);
//!   for D ≤ T it is the classic Joseph & Pandya / Audsley et al. recurrence.
//! - Scheduling points: Lehoczky, Sha & Ding, RTSS 1989 (seed 003 ref. [17],
//!   footnote 4).
//! - Liu & Layland, JACM 20(1), 1973; hyperbolic bound: Bini, Buttazzo &
//!   Buttazzo, IEEE TC 52(7), 2003.
//! - Audsley, "Optimal priority assignment and feasibility of static priority
//!   tasks with arbitrary start times", Univ. of York YCS 164, 1991.

use crate::task::{Task, Time};

/// Longest level-i busy period, in jobs of the task under analysis, that
/// [`response_time`] follows before answering "unschedulable" (conservative).
pub const MAX_BUSY_PERIOD_JOBS: Time = 1_000_000;

/// Σ_{hp} ⌈(t + J_j)/T_j⌉·C_j, the interference of `higher` in a window of
/// length `t` (Tindell et al. 1994, Eq. 4). `None` on overflow.
#[inline]
fn interference(higher: &[Task], t: Time) -> Option<Time> {
    let mut sum: Time = 0;
    for h in higher {
        let jobs = (t.checked_add(h.jitter)?).div_ceil(h.period);
        sum = sum.checked_add(jobs.checked_mul(h.wcet)?)?;
    }
    Some(sum)
}

/// Exact worst-case response time of `task` below the higher-priority tasks
/// `higher`, or `None` if it exceeds the task's deadline.
///
/// Level-i busy-period analysis (Tindell, Burns & Wellings 1994):
/// w(q) = B + (q+1)·C + Σ_hp ⌈(w(q) + J_j)/T_j⌉·C_j,
/// R = max_q (w(q) − q·T + J), for q = 0, 1, … until w(q) ≤ (q+1)·T − J
/// (the next job of the task arrives after the busy period closed).
pub fn response_time(higher: &[Task], task: &Task) -> Option<Time> {
    response_time_from(higher, task, 0)
}

/// [`response_time`] with a warm start: `start` must be a lower bound on
/// the busy window w(0) of the task's first job (for example the window of
/// the task right above it plus B + C, when that task has no blocking; 0 is
/// always valid). The fixed-point iteration then starts there instead of at
/// B + C + Σ_hp C, which saves iterations when tasks are analysed top down.
///
/// The warm start is used only when D ≤ T. For D > T the busy period may
/// hold several jobs and callers typically know a response time (a maximum
/// over those jobs), which need not bound w(0); it is then ignored.
pub fn response_time_from(higher: &[Task], task: &Task, start: Time) -> Option<Time> {
    let start = if task.deadline <= task.period {
        start
    } else {
        0
    };
    let u_higher: f64 = higher.iter().map(Task::utilization).sum();
    response_time_given_load(higher, task, u_higher, start)
}

/// [`response_time_from`] with Σ_hp C/T precomputed (an f64 filter; the
/// decision near 1 is exact).
fn response_time_given_load(
    higher: &[Task],
    task: &Task,
    u_higher: f64,
    start: Time,
) -> Option<Time> {
    // At a level-i utilization above 1 the busy period never closes: some
    // job misses its deadline. The iteration below would find that too, but
    // possibly one nanosecond per step; answer at once. U = 1 exactly is left
    // to the deadline checks in the loop.
    if utilization_exceeds_one(higher, task, u_higher) {
        return None;
    }
    let mut worst: Time = 0;
    let mut q: Time = 0;
    // w(q) is increasing in q; start each iteration from the previous fixed
    // point plus one more C, a valid lower bound.
    let mut w: Time = task
        .blocking
        .checked_add(task.wcet)?
        .checked_add(higher.iter().try_fold(0u64, |s, h| s.checked_add(h.wcet))?)?
        .max(start);
    loop {
        let own = (q.checked_add(1)?).checked_mul(task.wcet)?;
        let base = task.blocking.checked_add(own)?;
        let release = q.checked_mul(task.period)?; // offset of job q
                                                   // The job misses once w − qT + J > D, i.e. w > D + qT − J.
        let limit = task
            .deadline
            .checked_add(release)?
            .saturating_sub(task.jitter);
        loop {
            let next = base.checked_add(interference(higher, w)?)?;
            if next > limit {
                return None;
            }
            if next == w {
                break;
            }
            w = next;
        }
        // w(q) ≥ release here because own ≥ (q+1)C > 0 and the loop above
        // keeps w ≤ limit; response of job q:
        let r = (w + task.jitter).saturating_sub(release);
        worst = worst.max(r);
        let next_arrival = (q + 1).checked_mul(task.period)?;
        if w.checked_add(task.jitter)? <= next_arrival {
            return Some(worst);
        }
        q += 1;
        if q > MAX_BUSY_PERIOD_JOBS {
            // Only arbitrary-deadline tasks at a level-i utilization of
            // exactly 1 get here (the busy period lasts a hyperperiod). Give
            // up on the conservative side.
            return None;
        }
        w = w.checked_add(task.wcet)?;
    }
}

/// Whether Σ_{hp ∪ {task}} C/T > 1, exactly (common-denominator-free pairwise
/// accumulation in u128 rationals reduced on the fly).
fn utilization_exceeds_one(higher: &[Task], task: &Task, u_higher: f64) -> bool {
    // Accumulating num/den with den = product of periods would overflow for
    // many tasks; instead use f64 as a filter and exact u128 near the edge.
    let approx: f64 = u_higher + task.utilization();
    if approx < 1.0 - 1e-9 {
        return false;
    }
    if approx > 1.0 + 1e-9 {
        return true;
    }
    exact_utilization_exceeds_one(higher.iter().chain(std::iter::once(task)))
}

/// Exact test of Σ C/T > 1 with reduced rationals in u128; falls back to
/// "exceeds" only if even u128 overflows (which is the conservative answer).
fn exact_utilization_exceeds_one<'a>(tasks: impl Iterator<Item = &'a Task>) -> bool {
    let (mut num, mut den): (u128, u128) = (0, 1);
    for t in tasks {
        let (c, p) = (t.wcet as u128, t.period as u128);
        let g = gcd(den, p);
        let lcm = match (den / g).checked_mul(p) {
            Some(v) => v,
            None => return true,
        };
        let a = match num.checked_mul(lcm / den) {
            Some(v) => v,
            None => return true,
        };
        let b = match c.checked_mul(lcm / p) {
            Some(v) => v,
            None => return true,
        };
        num = a + b;
        den = lcm;
        let g = gcd(num, den);
        num /= g;
        den /= g;
    }
    num > den
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// Exact response times of every task (priority order), `None` where the
/// deadline is missed.
pub fn response_times(tasks: &[Task]) -> Vec<Option<Time>> {
    let mut u = 0.0;
    (0..tasks.len())
        .map(|i| {
            let r = response_time_given_load(&tasks[..i], &tasks[i], u, 0);
            u += tasks[i].utilization();
            r
        })
        .collect()
}

/// Whether every task (priority order) meets its deadline. Stops at the
/// first miss.
pub fn is_schedulable(tasks: &[Task]) -> bool {
    let mut u = 0.0;
    (0..tasks.len()).all(|i| {
        let ok = response_time_given_load(&tasks[..i], &tasks[i], u, 0).is_some();
        u += tasks[i].utilization();
        ok
    })
}

/// Sort into deadline-monotonic priority order: (D, T, id) ascending.
pub fn dm_order(tasks: &mut [Task]) {
    tasks.sort_unstable_by_key(|t| (t.deadline, t.period, t.id));
}

/// Sort into rate-monotonic priority order: (T, D, id) ascending.
pub fn rm_order(tasks: &mut [Task]) {
    tasks.sort_unstable_by_key(|t| (t.period, t.deadline, t.id));
}

/// Audsley's optimal priority assignment (OPA) with the exact RTA as the
/// per-level test (the RTA is OPA-compatible: a task's response time depends
/// on the set, not the order, of its higher-priority tasks). Returns the tasks
/// in priority order, or `None` if no fixed-priority order is feasible.
///
/// Among candidates for a level, the one with the largest (D, T, id) is tried
/// first, so DM-schedulable sets come out in DM order.
pub fn audsley_order(tasks: &[Task]) -> Option<Vec<Task>> {
    audsley_order_below(&[], tasks)
}

/// [`audsley_order`] for `tasks` below the fixed higher-priority tasks
/// `top` (bandwidth servers, [`crate::server::with_servers_above`]), which
/// interfere with every task of `tasks` and are not themselves analysed
/// nor reordered. Returns the order of `tasks` alone.
pub fn audsley_order_below(top: &[Task], tasks: &[Task]) -> Option<Vec<Task>> {
    let mut unassigned: Vec<Task> = tasks.to_vec();
    dm_order(&mut unassigned);
    let mut lowest_first: Vec<Task> = Vec::with_capacity(tasks.len());
    let mut others: Vec<Task> = Vec::with_capacity(top.len() + tasks.len());
    while !unassigned.is_empty() {
        let mut placed = None;
        for k in (0..unassigned.len()).rev() {
            others.clear();
            others.extend_from_slice(top);
            others.extend(
                unassigned
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != k)
                    .map(|(_, t)| *t),
            );
            if response_time(&others, &unassigned[k]).is_some() {
                placed = Some(k);
                break;
            }
        }
        let k = placed?;
        lowest_first.push(unassigned.remove(k));
    }
    lowest_first.reverse();
    Some(lowest_first)
}

/// Largest C' in `0..=cap` such that a new highest-priority task
/// (C', `period`, `deadline`, no jitter, no blocking) placed above `tasks`
/// keeps every task of `tasks` schedulable; `None` if `tasks` is not
/// schedulable on its own. This is MaximalSplit of seed 003 §IV computed
/// exactly: per task τ_k the largest C' at which τ_k still meets its deadline,
/// minimised over k (seed 003 §IV, "a more sophisticated version of
/// MaximalSplit", and footnote 4).
///
/// The new task's own response time is C' ≤ `deadline` since it has the
/// highest priority, so `cap` is clipped to `deadline`.
pub fn max_top_priority_wcet(
    tasks: &[Task],
    period: Time,
    deadline: Time,
    cap: Time,
) -> Option<Time> {
    max_wcet_below_top(tasks, 0, period, deadline, cap, cap)
}

/// [`max_top_priority_wcet`] with the new task placed below the first
/// `top` tasks of `tasks`, which interfere with it and with every task
/// below it but are not themselves analysed (fixed top-priority
/// interferers such as bandwidth servers, [`crate::server::with_servers_above`],
/// whose own guarantee comes from elsewhere). τ' is the first piece of a
/// task of execution time `whole` ≥ `cap` being split (seed 003 §III.B:
/// τ' = (C', T, D), τ'' = (C − C', T, D − R') released R' after τ').
/// Largest C' in `0..=cap` such that:
///
/// - τ' = (C', `period`, `deadline`) completes below `tasks[..top]` early
///   enough that its remainder could still meet its deadline alone on a
///   core below the same interferers: R_S(C') + R_S(`whole` − C') ≤
///   `deadline`, R_S(x) the response time of (x, `period`) below
///   `tasks[..top]` (the least fixed point of x + Σ_top ⌈(t + J_j)/T_j⌉·C_j,
///   [`response_time`]). R' ≤ D alone would allow remainders that no core
///   can run. Without interferers R_S(x) = x (seed 003 §III.B's HPTS case):
///   the condition is C ≤ D, which every splittable task meets, and only
///   C' ≤ `deadline` is applied, as in [`max_top_priority_wcet`]. With them
///   the condition is not monotone in C', but it holds on an upper part of
///   each run of C' over which R_S(C') − C' is constant (our derivation:
///   on such a run the remainder's window D − R_S(C') shrinks one for one
///   as C' grows, and X(y) − y is non-increasing in y, X(y) = max_{t ≤ y}
///   (t − Σ_top ⌈(t + J_j)/T_j⌉·C_j) being the most a task can execute
///   within y): so only the top of each run needs a test, from C' = `cap`
///   down ([`max_split_leaving_room`]);
/// - every task τ_k of `tasks[top..]` still meets its deadline with τ' among
///   its higher-priority tasks (seed 003 §IV, MaximalSplit, per τ_k as in
///   [`max_top_priority_wcet`]; τ_k's interference is a sum over its
///   higher-priority set, so whether τ' is above or below `tasks[..top]`
///   does not matter to it).
///
/// `None` if `tasks[top..]` is not schedulable below `tasks[..top]` on its
/// own.
pub fn max_wcet_below_top(
    tasks: &[Task],
    top: usize,
    period: Time,
    deadline: Time,
    whole: Time,
    cap: Time,
) -> Option<Time> {
    let mut best = cap.min(deadline);
    for k in top..tasks.len() {
        let task = &tasks[k];
        let higher = &tasks[..k];
        // The point test needs a one-job busy period, guaranteed by
        // D_k + J_k ≤ T_k; the deadlines of higher-priority tasks do not
        // matter (they are checked in their own iteration of this loop).
        let c_k = if task.deadline.saturating_add(task.jitter) <= task.period
            && scheduling_points(higher, task, period) <= MAX_SCHEDULING_POINTS
        {
            max_interferer_wcet_by_points(higher, task, period, best)
        } else {
            max_interferer_wcet_by_search(higher, task, period, deadline, best)
        }?;
        best = best.min(c_k);
        if best == 0 {
            // Still need every task to be schedulable without the new task.
            return tasks[k + 1..]
                .iter()
                .enumerate()
                .all(|(i, t)| response_time(&tasks[..k + 1 + i], t).is_some())
                .then_some(0);
        }
    }
    if top == 0 || best == 0 {
        return Some(best);
    }
    Some(max_split_leaving_room(
        &tasks[..top],
        period,
        deadline,
        whole,
        best,
    ))
}

/// Runs of C' that [`max_split_leaving_room`] visits before it gives up
/// (answers 0: no split, always safe).
const MAX_SPLIT_RUNS: usize = 4096;

/// The largest C' in `0..=cap` with R_S(C') + R_S(`whole` − C') ≤
/// `deadline`, R_S(x) the response time of (x, `period`) below `above`
/// (see [`max_wcet_below_top`] for why only the top of each run of
/// constant R_S(C') − C' is tested). 0 if none (0 places nothing).
fn max_split_leaving_room(
    above: &[Task],
    period: Time,
    deadline: Time,
    whole: Time,
    cap: Time,
) -> Time {
    let rs = |c: Time, d: Time| response_time(above, &Task::new(usize::MAX, c, period, d));
    // R_S(C') ≤ D first: monotone in C', bisection.
    let own = |c: Time| c == 0 || rs(c, deadline).is_some();
    let mut c = cap;
    if !own(c) {
        c = last_below(c, own);
    }
    for _ in 0..MAX_SPLIT_RUNS {
        if c == 0 {
            return 0;
        }
        let r = rs(c, deadline).expect("R_S(C') ≤ D was established");
        let rest = whole.saturating_sub(c);
        if rest == 0 || rs(rest, deadline - r).is_some() {
            return c;
        }
        // The top of the previous run: the largest c2 < c with R_S(c2) −
        // c2 < R_S(c) − c (non-decreasing in c2; c2 = 0 counts as 0 < k).
        let k = r - c;
        let below = |x: Time| x == 0 || rs(x, deadline).is_some_and(|rx| rx - x < k);
        c = last_below(c, below);
    }
    0
}

/// The largest x < `hi` with `holds(x)`, by bisection: `holds` must be
/// true at 0, false at `hi`, and monotone (true up to some point, false
/// after it).
pub(crate) fn last_below(hi: Time, holds: impl Fn(Time) -> bool) -> Time {
    let (mut lo, mut hi) = (0, hi);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Above this many scheduling points (long deadlines over short periods),
/// [`max_top_priority_wcet`] switches from enumerating the points to a binary
/// search on C' with the RTA, whose cost does not grow with D/T.
pub const MAX_SCHEDULING_POINTS: u64 = 4096;

/// How many points [`max_interferer_wcet_by_points`] would visit for `task`.
fn scheduling_points(higher: &[Task], task: &Task, period: Time) -> u64 {
    let horizon = task.deadline.saturating_sub(task.jitter);
    higher
        .iter()
        .map(|h| (horizon + h.jitter) / h.period)
        .fold(horizon / period, u64::saturating_add)
}

/// Exact when D_k + J_k ≤ T_k: then τ_k's level-k busy period holds one job,
/// and τ_k is schedulable iff some t in (0, D_k − J_k] satisfies
/// B_k + C_k + Σ_hp ⌈(t + J_j)/T_j⌉C_j + ⌈t/T'⌉C' ≤ t (time-demand test,
/// Lehoczky et al. 1989). The left side is a step function that is constant on
/// intervals closed on the right, so only the right ends of its steps
/// (t = l·T_j − J_j, t = l·T') and t = D_k − J_k need checking. For each point
/// the largest C' is ⌊(t − demand_without_new(t)) / ⌈t/T'⌉⌋.
fn max_interferer_wcet_by_points(
    higher: &[Task],
    task: &Task,
    period: Time,
    cap: Time,
) -> Option<Time> {
    let Some(horizon) = task.deadline.checked_sub(task.jitter) else {
        return None; // J ≥ D: the job misses whatever the interference
    };
    let own = task.blocking.checked_add(task.wcet)?;
    // The largest C' that point t admits, or None if t admits none (or
    // arithmetic overflowed, which can only make the point useless).
    let admits = |t: Time| -> Option<Time> {
        if t == 0 || t > horizon {
            return None;
        }
        let demand = own.checked_add(interference(higher, t)?)?;
        let slack = t.checked_sub(demand)?;
        Some(slack / t.div_ceil(period))
    };
    let mut best = admits(horizon);
    let mut l: Time = 1;
    while let Some(t) = l.checked_mul(period) {
        if t > horizon || best.is_some_and(|b| b >= cap) {
            break;
        }
        best = best.max(admits(t));
        l += 1;
    }
    for h in higher {
        let mut l: Time = 1;
        while let Some(t) = l.checked_mul(h.period) {
            if best.is_some_and(|b| b >= cap) {
                break;
            }
            l += 1;
            let Some(t) = t.checked_sub(h.jitter) else {
                continue;
            };
            if t > horizon {
                break;
            }
            best = best.max(admits(t));
        }
    }
    best.map(|b| b.min(cap))
}

/// General case (arbitrary deadlines or jitter beyond T − D): binary search
/// on C' with the exact busy-period RTA, which is monotone in an interferer's
/// execution time.
fn max_interferer_wcet_by_search(
    higher: &[Task],
    task: &Task,
    period: Time,
    deadline: Time,
    cap: Time,
) -> Option<Time> {
    let mut scratch: Vec<Task> = Vec::with_capacity(higher.len() + 1);
    let mut fits = |c: Time| {
        scratch.clear();
        scratch.push(Task::new(usize::MAX, c, period, deadline));
        scratch.extend_from_slice(higher);
        // A zero-wcet interferer is no interferer.
        let hp = if c == 0 { &scratch[1..] } else { &scratch[..] };
        response_time(hp, task).is_some()
    };
    if !fits(0) {
        return None;
    }
    let (mut lo, mut hi) = (0, cap); // fits(lo) holds
    if fits(hi) {
        return Some(hi);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// Liu & Layland utilization bound n(2^{1/n} − 1) for n implicit-deadline
/// tasks under RM (Liu & Layland 1973, Theorem 5). n = 0 gives 1.
pub fn liu_layland_bound(n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let n = n as f64;
    n * (2f64.powf(1.0 / n) - 1.0)
}

/// Liu & Layland test: Σ C/T ≤ n(2^{1/n} − 1) ⇒ RM-schedulable (sufficient,
/// implicit deadlines, no jitter or blocking). Reporting-grade (f64).
pub fn liu_layland_test(tasks: &[Task]) -> bool {
    let u: f64 = tasks.iter().map(Task::utilization).sum();
    u <= liu_layland_bound(tasks.len())
}

/// Hyperbolic bound: Π (U_i + 1) ≤ 2 ⇒ RM-schedulable (Bini, Buttazzo &
/// Buttazzo 2003, Theorem 1; sufficient, implicit deadlines). Reporting-grade.
pub fn hyperbolic_test(tasks: &[Task]) -> bool {
    tasks.iter().map(|t| t.utilization() + 1.0).product::<f64>() <= 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(c: Time, p: Time) -> Task {
        Task::implicit(0, c, p)
    }

    #[test]
    fn textbook_rta() {
        // Buttazzo, Hard Real-Time Computing Systems, §4.5.2 example:
        // τ1 = (1, 4), τ2 = (2, 6), τ3 = (3, 10) under RM.
        // R1 = 1. R2: w = 3 → 2 + ⌈3/4⌉·1 = 3 → R2 = 3.
        // R3: w0 = 6 → 3 + ⌈6/4⌉1 + ⌈6/6⌉2 = 7 → 3 + 2 + 4 = 9
        //     → 3 + ⌈9/4⌉1 + ⌈9/6⌉2 = 3 + 3 + 4 = 10 → 3 + 3 + 4 = 10. R3 = 10.
        let ts = [t(1, 4), t(2, 6), t(3, 10)];
        assert_eq!(response_times(&ts), vec![Some(1), Some(3), Some(10)]);
        assert!(is_schedulable(&ts));
        // One more ns on τ3 misses.
        let ts = [t(1, 4), t(2, 6), t(4, 10)];
        assert_eq!(response_times(&ts)[2], None);
    }

    #[test]
    fn jitter_and_blocking() {
        // τ1 = (1, 4) with J1 = 2; τ2 = (2, 10, D 10) with B2 = 1, J2 = 1.
        // w = 1 + 2 + ⌈(w + 2)/4⌉·1: w0 = 4 → 3 + ⌈6/4⌉ = 5 → 3 + ⌈7/4⌉ = 5.
        // R2 = w + J2 = 6.
        let hp = Task {
            id: 0,
            wcet: 1,
            period: 4,
            deadline: 4,
            jitter: 2,
            blocking: 0,
        };
        let lo = Task {
            id: 1,
            wcet: 2,
            period: 10,
            deadline: 10,
            jitter: 1,
            blocking: 1,
        };
        assert_eq!(response_time(&[hp], &lo), Some(6));
    }

    #[test]
    fn arbitrary_deadline_busy_period() {
        // Tindell et al. 1994 style: τ1 = (52, 100), τ2 = (52, 140, D 1000).
        // U = 0.52 + 0.371 = 0.891; busy period spans several jobs of τ2.
        // q=0: w = 52 + ⌈w/100⌉52: 104 → 52+104=156 → 52+104=156; R=156. 156 > 140 → go on.
        // q=1: w = 104 + ⌈w/100⌉52: 208 → 104+156=260 → 104+156=260; R=260−140=120. 260 > 280? no → done.
        let hp = t(52, 100);
        let lo = Task::new(1, 52, 140, 1000);
        assert_eq!(response_time(&[hp], &lo), Some(156));
        // With D = 150 the first job misses.
        let lo = Task::new(1, 52, 140, 150);
        assert_eq!(response_time(&[hp], &lo), None);
    }

    #[test]
    fn overload_is_unschedulable_not_a_hang() {
        // U = 3/4 + 3/8 > 1: the busy period never closes.
        let ts = [t(3, 4), Task::new(1, 3, 8, 100)];
        assert_eq!(response_times(&ts)[1], None);
        // U = 3/4 + 2/8 = 1 with an arbitrary deadline: w = 2 + ⌈w/4⌉·3 = 8.
        let ts = [t(3, 4), Task::new(1, 2, 8, 100)];
        assert_eq!(response_times(&ts)[1], Some(8));
        // Exactly U = 1 with harmonic periods is schedulable.
        let ts = [t(2, 4), t(4, 8)];
        assert_eq!(response_times(&ts), vec![Some(2), Some(8)]);
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let ts = [t(u64::MAX / 2, u64::MAX - 1), t(u64::MAX / 2, u64::MAX)];
        // Must terminate with an answer, whichever.
        let _ = response_times(&ts);
    }

    #[test]
    fn audsley_finds_order_dm_misses() {
        // With release jitter DM is not optimal (D − J monotonic would be).
        // τa = (C 3, T 12, D 6), τb = (C 1, T 12, D 7, J 5).
        // DM order (a, b): Rb = 5 + w, w = 1 + ⌈w/12⌉·3 = 4 → Rb = 9 > 7: miss.
        // Order (b, a): Rb = 5 + 1 = 6 ≤ 7; Ra: w = 3 + ⌈(w + 5)/12⌉·1 = 4,
        // Ra = 4 ≤ 6. Both meet their deadlines.
        let a = Task {
            id: 0,
            wcet: 3,
            period: 12,
            deadline: 6,
            jitter: 0,
            blocking: 0,
        };
        let b = Task {
            id: 1,
            wcet: 1,
            period: 12,
            deadline: 7,
            jitter: 5,
            blocking: 0,
        };
        let mut dm = [a, b];
        dm_order(&mut dm);
        assert!(!is_schedulable(&dm));
        let order = audsley_order(&[a, b]).expect("OPA finds an order");
        assert_eq!(order.iter().map(|t| t.id).collect::<Vec<_>>(), vec![1, 0]);
        assert!(is_schedulable(&order));
    }

    #[test]
    fn maximal_split_exact() {
        // Core holds τ1 = (2, 10) below a new top task with T' = D' = 5.
        // τ1 schedulable iff ∃t ∈ {5, 10}: 2 + ⌈t/5⌉C' ≤ t.
        // t=5: C' ≤ 3; t=10: 2C' ≤ 8 → C' ≤ 4. Max C' = 4 (then R1 = 2 + 8 = 10).
        let core = [t(2, 10)];
        assert_eq!(max_top_priority_wcet(&core, 5, 5, 100), Some(4));
        // The cap (remaining C of the task being split) binds.
        assert_eq!(max_top_priority_wcet(&core, 5, 5, 3), Some(3));
        // Deadline of the new task binds: C' ≤ D'.
        assert_eq!(max_top_priority_wcet(&[], 5, 2, 100), Some(2));
        // Check against RTA at C' and C' + 1.
        let top = |c| Task::new(9, c, 5, 5);
        assert!(is_schedulable(&[top(4), core[0]]));
        assert!(!is_schedulable(&[top(5), core[0]]));
    }

    #[test]
    fn maximal_split_general_case_matches_search() {
        // Arbitrary deadline on the core task forces the search path.
        let core = [Task::new(0, 30, 40, 100)];
        let c = max_top_priority_wcet(&core, 50, 50, 1000).expect("schedulable alone");
        let top = |c| Task::new(9, c, 50, 50);
        assert!(is_schedulable(&[top(c), core[0]]));
        assert!(!is_schedulable(&[top(c + 1), core[0]]));
    }

    #[test]
    fn maximal_split_long_deadline_short_period_is_fast() {
        // 10^12 / 1 scheduling points would never finish; the search path
        // answers at once: any C' ≥ 1 with T' = 1 overloads the core.
        let core = [Task::implicit(0, 1, 1_000_000_000_000)];
        assert_eq!(
            max_top_priority_wcet(&core, 1, 1_000_000_000_000, 1_000_000_000_000),
            Some(0)
        );
        // T' = 2: C' = 1 gives U = 1/2 + 10^-12 ≤ 1, and τ0 finishes by its deadline.
        assert_eq!(
            max_top_priority_wcet(&core, 2, 1_000_000_000_000, 1_000_000_000_000),
            Some(1)
        );
    }

    #[test]
    fn utilization_bounds() {
        // n = 1: 1.0; n = 2: 2(√2 − 1) ≈ 0.8284; n → ∞: ln 2.
        assert!((liu_layland_bound(1) - 1.0).abs() < 1e-12);
        assert!((liu_layland_bound(2) - 0.828_427).abs() < 1e-6);
        assert!((liu_layland_bound(100_000) - std::f64::consts::LN_2).abs() < 1e-5);
        // U = (0.5, 0.3): LL 0.8 ≤ 0.828 yes; hyperbolic 1.5·1.3 = 1.95 ≤ 2 yes.
        assert!(liu_layland_test(&[t(5, 10), t(3, 10)]));
        assert!(hyperbolic_test(&[t(5, 10), t(3, 10)]));
        // U = (0.6, 0.25): LL 0.85 > 0.828 fails; hyperbolic 1.6·1.25 = 2.0 passes.
        assert!(!liu_layland_test(&[t(6, 10), t(1, 4)]));
        assert!(hyperbolic_test(&[t(6, 10), t(1, 4)]));
    }

    #[test]
    fn split_below_a_server_leaves_the_remainder_room() {
        // One server C = 1, T = 5, J = 4 above; empty core; the task being
        // split has C = 6, T = D = 10. R_S(x) = x + ⌈(R + 4)/5⌉:
        // R_S(1) = 3, R_S(2) = 4, R_S(3) = 5 (⌈9/5⌉ = 2), R_S(4) = 6
        // (⌈10/5⌉ = 2), R_S(5) = 8 (5 + 2 = 7 → ⌈11/5⌉ = 3 → 8 → ⌈12/5⌉
        // = 3).
        // C' = 5 (cap): 8 + R_S(1) = 11 > 10. C' = 4: 6 + R_S(2) = 10 ≤ 10.
        let server = Task {
            jitter: 4,
            ..Task::new(usize::MAX, 1, 5, 5)
        };
        let rs = |x| response_time(&[server], &Task::new(0, x, 10, 10));
        assert_eq!([1, 2, 3, 4, 5].map(rs), [3, 4, 5, 6, 8].map(Some));
        assert_eq!(max_wcet_below_top(&[server], 1, 10, 10, 6, 5), Some(4));
        // R' ≤ D alone would have allowed 5 (R_S(5) = 8 ≤ 10), leaving a
        // remainder of 1 in 2 that no core below the server can run
        // (R_S(1) = 3). Without the server: plain MaximalSplit, the cap.
        assert_eq!(max_wcet_below_top(&[], 0, 10, 10, 6, 5), Some(5));
        assert_eq!(max_top_priority_wcet(&[], 10, 10, 5), Some(5));
    }

    /// Every C' in `0..=cap` by brute force: the core (`tasks[top..]` below
    /// `tasks[..top]` and the new task) schedulable, and R_S(C') +
    /// R_S(whole − C') ≤ D below `tasks[..top]`.
    fn brute_force_below_top(
        tasks: &[Task],
        top: usize,
        period: Time,
        deadline: Time,
        whole: Time,
        cap: Time,
    ) -> Option<Time> {
        let core_ok = |c: Time| {
            let mut hp: Vec<Task> = tasks[..top].to_vec();
            if c > 0 {
                hp.push(Task::new(usize::MAX, c, period, deadline));
            }
            (top..tasks.len()).all(|k| {
                let mut h = hp.clone();
                h.extend_from_slice(&tasks[top..k]);
                response_time(&h, &tasks[k]).is_some()
            })
        };
        if !core_ok(0) {
            return None;
        }
        let above = &tasks[..top];
        let rs = |x: Time, d: Time| response_time(above, &Task::new(0, x, period, d));
        (0..=cap.min(deadline)).rev().find(|&c| {
            core_ok(c)
                && (c == 0
                    || top == 0
                    || rs(c, deadline)
                        .is_some_and(|r| whole - c == 0 || rs(whole - c, deadline - r).is_some()))
        })
    }

    proptest::proptest! {
        #[test]
        fn max_wcet_below_top_matches_brute_force(
            servers in proptest::collection::vec((1u64..=4, 3u64..=12), 0..3),
            core in proptest::collection::vec((1u64..=6, 8u64..=40, 60u64..=100), 0..3),
            period in 6u64..=40,
            dpct in 50u64..=100,
            whole_pct in 1u64..=100,
        ) {
            let mut tasks: Vec<Task> = servers
                .iter()
                .map(|&(q, t)| crate::server::Server::new(q, t).as_task(usize::MAX))
                .collect();
            let top = tasks.len();
            let mut lower: Vec<Task> = core
                .iter()
                .enumerate()
                .map(|(id, &(c, t, dp))| {
                    let d = (t * dp / 100).max(c);
                    Task::new(id, c, t, d)
                })
                .collect();
            dm_order(&mut lower);
            tasks.extend(lower);
            let deadline = (period * dpct / 100).max(1);
            let whole = (deadline * whole_pct / 100).max(1);
            let cap = whole - 1;
            let fast = max_wcet_below_top(&tasks, top, period, deadline, whole, cap);
            let slow = brute_force_below_top(&tasks, top, period, deadline, whole, cap);
            proptest::prop_assert_eq!(fast, slow);
        }
    }
}
