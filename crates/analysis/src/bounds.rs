//! Utilization and size bounds of task splitting under partitioned
//! deadline-monotonic scheduling (seed 003, Lakshmanan, Rajkumar & Lehoczky,
//! "Partitioned Fixed-Priority Preemptive Scheduling for Multi-Core
//! Processors", ECRTS 2009).
//!
//! - Lemma 4 and Eq. 7: sizes after a split and the splitting penalty δ.
//! - §IV.B: UB_m ≥ UB(ID,RMS) − δ + δ/m for a known maximum task size.
//! - Lemma 5 (Eq. 10): SB(CD,DMS|S|r) and its r → ∞ limit.
//! - Theorem 6 (Eqs. 13-17): the PDMS_HPTS bound, with a Lambert-W here.
//! - Theorem 7 and SBLW (§V.A): the PDMS_HPTS_DS bounds.
//! - Sufficient utilization tests built on the published constants, decided
//!   in exact rational arithmetic ([`pdms_hpts_utilization_test`],
//!   [`pdms_hpts_ds_utilization_test`]).
//!
//! The bound functions are real-valued (f64) formulas meant for reporting and
//! plotting. The two tests never use floats: they compare Σ C/T with the
//! published decimal constants as exact rationals.
//!
//! Two findings when re-deriving the seed's numbers (see the tests):
//! 1. Theorem 6: the minimiser of Eq. 15 is x = (2 − W(e²))/W(e²) = 0.28440
//!    (the seed prints 0.2837, which is what W(e²) rounded to 1.558 gives) and
//!    the minimum is S = 0.60131, not the printed 60.03 %. The printed
//!    0.6003 + 0.0928/m (0.0928 = 0.6931 − 0.6003: the last core keeps the
//!    Liu & Layland bound) is therefore below the derived 0.60131 + 0.09184/m
//!    for every m ≥ 1, i.e. conservative, and the test uses it.
//! 2. Theorem 7: the seed only plots SB(CD,PDMS_HPTS_DS) against r and defers
//!    the proof to a technical report. [`pdms_hpts_ds_core_size_bound`] is a
//!    reconstruction that reproduces every published number (0.6547 at r = 2,
//!    the minimum over r; convergence to 0.693 as r → ∞); see its doc.

use crate::task::Task;
use std::cmp::Ordering;

/// UB(ID,RMS) = lim n(2^{1/n} − 1) = ln 2 (Liu & Layland 1973; seed 003 uses
/// 0.6931, Theorem 1 shows SB(CD,DMS) equals it).
pub const RMS_BOUND: f64 = std::f64::consts::LN_2;

/// Published PDMS_HPTS per-core bound, seed 003 Theorem 6 ("60.03 %").
pub const PDMS_HPTS_BOUND_PAPER: f64 = 0.6003;

/// Published last-core gain of PDMS_HPTS, seed 003 Theorem 6:
/// UB_m = 0.6003 + 0.0928/m. Derivation: all cores but the last hold at least
/// 0.6003, the last one at least UB(ID,RMS) = 0.6931 (it is never split), so
/// UB_m = ((m − 1)·0.6003 + 0.6931)/m = 0.6003 + (0.6931 − 0.6003)/m.
pub const PDMS_HPTS_LAST_CORE_GAIN_PAPER: f64 = 0.0928;

/// Published PDMS_HPTS_DS bound, seed 003 Theorem 7 (65.47 %).
pub const PDMS_HPTS_DS_BOUND_PAPER: f64 = 0.6547;

/// Published PDMS_HPTS_DS bound for light tasks (every U ≤ √2 − 1), seed 003
/// §V.A (SBLW, 0.693).
pub const PDMS_HPTS_DS_LIGHT_BOUND_PAPER: f64 = 0.693;

/// α = √2 − 1 ≈ 0.414: the light-task threshold of seed 003 §V.A. Two tasks of
/// at most α always fit one core (2α = 2(√2 − 1), the Liu & Layland bound for
/// two tasks), so every core holds more than two tasks.
pub const LIGHT_TASK_ALPHA: f64 = std::f64::consts::SQRT_2 - 1.0;

// ---------------------------------------------------------------------------
// Lemma 4, Eq. 7: splitting τ (size S) into τ' (size S') and τ'' (size S'').

/// S(τ'') = (S − S')/(1 − S'), seed 003 Lemma 4 claim 1 (Eq. 6), for
/// τ:(C,T,D) split into τ':(C',T,D) and τ'':(C − C', T, D − C').
pub fn split_remainder_size(s: f64, s_first: f64) -> f64 {
    (s - s_first) / (1.0 - s_first)
}

/// The largest S' + S'' over all split points, 2(1 − √(1 − S)), seed 003
/// Lemma 4 claim 2 (reached at S' = S'' = 1 − √(1 − S)).
pub fn split_total_size_max(s: f64) -> f64 {
    2.0 * (1.0 - (1.0 - s).sqrt())
}

/// The first-piece size that maximises S' + S'': 1 − √(1 − S), seed 003
/// Lemma 4 proof.
pub fn split_worst_first_size(s: f64) -> f64 {
    1.0 - (1.0 - s).sqrt()
}

/// Splitting penalty δ = S' + S'' − S for a given split, seed 003 Eq. 7.
pub fn split_penalty(s: f64, s_first: f64) -> f64 {
    s_first + split_remainder_size(s, s_first) - s
}

/// Largest splitting penalty for a task of size S:
/// δ ≤ 2(1 − √(1 − S)) − S, seed 003 Eq. 7 (below 2 % for S ≤ 25 %).
pub fn split_penalty_max(s: f64) -> f64 {
    split_total_size_max(s) - s
}

/// PDMS_HPTS bound when every task has size at most `max_size`:
/// UB_m ≥ UB(ID,RMS) − δ + δ/m with δ = [`split_penalty_max`], seed 003 §IV.B
/// (67.31 % for sizes ≤ 25 % as m → ∞ with δ rounded up to 2 %).
pub fn pdms_hpts_bound_with_penalty(max_size: f64, m: usize) -> f64 {
    let delta = split_penalty_max(max_size);
    RMS_BOUND - delta + delta / m.max(1) as f64
}

// ---------------------------------------------------------------------------
// Lemma 5: size bound of DMS given one task of size S among r + 1 tasks.

/// SB(CD,DMS|S|r) = r((2/(1+S))^{1/r} − 1) + S: the size bound of DMS for
/// r + 1 constrained-deadline tasks one of which has size S, seed 003 Lemma 5
/// (Eq. 10, from the polling-server bound of Strosnider, Lehoczky & Sha 1995).
pub fn dms_size_bound_given(s: f64, r: u32) -> f64 {
    let r = r as f64;
    r * ((2.0 / (1.0 + s)).powf(1.0 / r) - 1.0) + s
}

/// SB(CD,DMS|S) = ln(2/(1+S)) + S, the r → ∞ limit of
/// [`dms_size_bound_given`], seed 003 Lemma 5.
pub fn dms_size_bound_given_limit(s: f64) -> f64 {
    (2.0 / (1.0 + s)).ln() + s
}

// ---------------------------------------------------------------------------
// Theorem 6: PDMS_HPTS.

/// Per-core size bound of PDMS_HPTS after discounting the split penalty,
/// seed 003 Eq. 13: ln(2/(1+x)) + S − (S − x)/(1 − x), with x = S(τ') and
/// S = S(τ) the size of the task split on that core.
pub fn pdms_hpts_core_size_bound(x: f64, s: f64) -> f64 {
    (2.0 / (1.0 + x)).ln() + s - (s - x) / (1.0 - x)
}

/// Eq. 13 at its fixed point S = SB (tasks of size ≥ SB get a core of their
/// own), solved for S: S(x) = (1 − x)ln(2/(1+x)) + x, seed 003 Eq. 15.
pub fn pdms_hpts_fixed_point_size(x: f64) -> f64 {
    (1.0 - x) * (2.0 / (1.0 + x)).ln() + x
}

/// Principal branch W₀ of the Lambert W function (the inverse of w·e^w) for
/// y ≥ −1/e; NaN below. Halley iteration from a branch-point series (y < 1)
/// or the asymptotic ln y − ln ln y (y ≥ 3), converged to f64 precision.
pub fn lambert_w0(y: f64) -> f64 {
    let branch = -1.0 / std::f64::consts::E;
    if y.is_nan() || y < branch {
        return f64::NAN;
    }
    if y == branch {
        return -1.0;
    }
    if y == 0.0 {
        return 0.0;
    }
    let mut w = if y < 1.0 {
        let p = (2.0 * (std::f64::consts::E * y + 1.0)).sqrt();
        -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p * p * p
    } else if y < 3.0 {
        (1.0 + y).ln() * 0.75
    } else {
        let l = y.ln();
        l - l.ln()
    };
    for _ in 0..64 {
        let ew = w.exp();
        let f = w * ew - y;
        let wp1 = w + 1.0;
        if wp1 == 0.0 {
            break;
        }
        // Halley: w ← w − f / (e^w (w+1) − (w+2) f / (2(w+1))).
        let step = f / (ew * wp1 - (w + 2.0) * f / (2.0 * wp1));
        let next = w - step;
        if (next - w).abs() <= 4.0 * f64::EPSILON * next.abs().max(1.0) {
            return next;
        }
        w = next;
    }
    w
}

/// The minimising share x = S(τ') of Theorem 6, in closed form:
/// x = (2 − W(e²))/W(e²) = 0.284401 (seed 003 Eq. 17; the seed prints 0.2837,
/// the value for W(e²) rounded to 1.558; W(e²) = 1.557146).
///
/// Derivation (seed 003 Eq. 16): dS/dx = 0 for Eq. 15 gives
/// ln(2/(1+x)) = 2x/(1+x); with t = 2/(1+x) this is ln t = 2 − t, i.e.
/// t·e^t = e², t = W(e²), x = 2/t − 1.
pub fn pdms_hpts_minimizing_share() -> f64 {
    let t = lambert_w0(std::f64::consts::E * std::f64::consts::E);
    (2.0 - t) / t
}

/// The derived PDMS_HPTS per-core bound, min over x of Eq. 15:
/// S(x*) = (1 − x*)(2 − W(e²)) + x* = 0.601307 (seed 003 Theorem 6; the seed
/// prints 60.03 %, a misprint: S(0.2837) is 0.601308 as well). Eq. 15 is
/// convex (S'' = 1/(1+x) + 2/(1+x)² > 0), so this is the global minimum.
pub fn pdms_hpts_size_bound() -> f64 {
    pdms_hpts_fixed_point_size(pdms_hpts_minimizing_share())
}

/// The seed's published PDMS_HPTS utilization bound for m cores,
/// UB_m = 0.6003 + 0.0928/m (seed 003 Theorem 6). Below the derived
/// [`pdms_hpts_size_bound`] + (ln 2 − [`pdms_hpts_size_bound`])/m for every
/// m ≥ 1, hence safe to use.
pub fn pdms_hpts_utilization_bound(m: usize) -> f64 {
    PDMS_HPTS_BOUND_PAPER + PDMS_HPTS_LAST_CORE_GAIN_PAPER / m.max(1) as f64
}

// ---------------------------------------------------------------------------
// Theorem 7 and SBLW: PDMS_HPTS_DS.

/// q − 1 with q = (2/(1+x))^{1/r}: the size of each of the r other tasks in the
/// Liu & Layland-style worst case of Lemma 5 (seed 003 Eq. 10).
fn lemma5_share(x: f64, r: u32) -> f64 {
    (2.0 / (1.0 + x)).powf(1.0 / r as f64) - 1.0
}

/// Per-core size bound of PDMS_HPTS_DS with r tasks besides τ' (of size x),
/// reconstructed for seed 003 Theorem 7 (whose proof the seed defers to a
/// technical report, ref. [25]; Fig. 2(a) plots its minimum over x against r):
///
///   SB_DS(x, r) = r(q − 1) + (1 − min(x + q − 1, cap))·x/(1 − x),
///   q = (2/(1+x))^{1/r}.
///
/// Derivation, following Theorem 6: the core holds at least Lemma 5's
/// r(q − 1) + x; discounting the penalty δ = x + S'' − S (Eq. 7) with Lemma 4
/// leaves r(q − 1) + (1 − S)·x/(1 − x), decreasing in the size S of the split
/// task. Under decreasing-size allocation the failing task τ_f is no larger
/// than the r tasks on the core (≤ q − 1 in the worst case), and HPTaskSplit
/// only splits when S − S(τ') < S(τ_f), so S < x + q − 1; as in Theorem 6,
/// tasks of size ≥ the bound need not be considered, so S ≤ `cap` (the bound
/// itself). This is the light-task SBLW below with α replaced by the
/// restore-test limit x + q − 1. It reproduces every published number: the
/// fixed point [`pdms_hpts_ds_size_bound`] = 0.654700 is attained at r = 2
/// (r = 1 gives 0.6584), and the curve tends to ln 2 = 0.693 as r → ∞.
/// Meaningful for 0 ≤ x ≤ cap < 1.
pub fn pdms_hpts_ds_core_size_bound(x: f64, r: u32, cap: f64) -> f64 {
    let share = lemma5_share(x, r);
    let s = (x + share).min(cap);
    r as f64 * share + (1.0 - s) * x / (1.0 - x)
}

/// min over x ∈ [0, cap] of [`pdms_hpts_ds_core_size_bound`] for a given r:
/// one point of seed 003 Fig. 2(a). Returns (x, value). Minimised by
/// [`scan_then_golden_min`] (the min(·) kink makes it non-smooth).
pub fn pdms_hpts_ds_size_bound_for(r: u32, cap: f64) -> (f64, f64) {
    scan_then_golden_min(|x| pdms_hpts_ds_core_size_bound(x, r, cap), 0.0, cap, 512)
}

/// Largest r scanned by [`pdms_hpts_ds_size_bound`]; beyond r = 3 the curve
/// already exceeds 0.69, far above the minimum at r = 2.
pub const PDMS_HPTS_DS_MAX_R: u32 = 32;

/// The PDMS_HPTS_DS size (and, for implicit deadlines, utilization) bound,
/// seed 003 Theorem 7: the fixed point B = min_{1 ≤ r ≤ 32} min_x SB_DS(x, r, B)
/// (tasks of size ≥ B get their own core, as in Theorem 6), found by bisection
/// on B (min_x SB_DS is non-increasing in B, so B ↦ g(B) − B is decreasing).
/// ≈ 0.654700 ≥ the published 0.6547.
pub fn pdms_hpts_ds_size_bound() -> f64 {
    let g = |b: f64| {
        (1..=PDMS_HPTS_DS_MAX_R)
            .map(|r| pdms_hpts_ds_size_bound_for(r, b).1)
            .fold(f64::INFINITY, f64::min)
    };
    let (mut lo, mut hi) = (0.5, RMS_BOUND);
    while hi - lo > 1e-10 {
        let mid = 0.5 * (lo + hi);
        if g(mid) > mid {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// SBLW(CD,PDMS_HPTS_DS,α) for r tasks besides τ' (size x), seed 003 §V.A:
/// r((2/(1+x))^{1/r} − 1) + (1 − MIN(α, (2/(1+x))^{1/r} − 1))·x/(1 − x).
pub fn sblw(x: f64, r: u32, alpha: f64) -> f64 {
    let share = lemma5_share(x, r);
    r as f64 * share + (1.0 - alpha.min(share)) * x / (1.0 - x)
}

/// The r → ∞ limit of [`sblw`]: ln(2/(1+x)) + x/(1 − x) (q − 1 → 0, so the
/// MIN vanishes for any α > 0). Its minimum, at x = 0, is ln 2.
pub fn sblw_limit(x: f64) -> f64 {
    (2.0 / (1.0 + x)).ln() + x / (1.0 - x)
}

/// min over x ∈ [0, α] and r ∈ 1..=`max_r` ∪ {∞} of [`sblw`]; returns
/// (r, x, value) with r = `None` for the limit. For α = √2 − 1 the infimum is
/// the limit, ln 2 = 0.6931 (seed 003 §V.A: "0.693"); every finite r is above
/// it (Fig. 2(b)). x is restricted to [0, α] because τ' is part of a task of
/// size at most α. Minimised by [`scan_then_golden_min`].
pub fn sblw_min(alpha: f64, max_r: u32) -> (Option<u32>, f64, f64) {
    let hi = alpha.min(1.0 - 1e-9);
    let (x_inf, v_inf) = scan_then_golden_min(sblw_limit, 0.0, hi, 512);
    let mut best = (None, x_inf, v_inf);
    for r in 1..=max_r {
        let (x, v) = scan_then_golden_min(|x| sblw(x, r, alpha), 0.0, hi, 512);
        if v < best.2 {
            best = (Some(r), x, v);
        }
    }
    best
}

// ---------------------------------------------------------------------------
// Minimisers.

/// Golden-section search for the minimum of `f` on [lo, hi], to an interval of
/// width `tol`; exact for unimodal `f`. Returns (x, f(x)).
pub fn golden_section_min(f: impl Fn(f64) -> f64, lo: f64, hi: f64, tol: f64) -> (f64, f64) {
    let inv_phi = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (lo, hi);
    let mut c = b - inv_phi * (b - a);
    let mut d = a + inv_phi * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    while (b - a).abs() > tol {
        if fc <= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - inv_phi * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + inv_phi * (b - a);
            fd = f(d);
        }
    }
    let x = 0.5 * (a + b);
    (x, f(x))
}

/// Minimum of `f` on [lo, hi]: a dense scan over `samples` + 1 equally spaced
/// points locates the best grid point, then [`golden_section_min`] refines it
/// inside its two neighbouring cells. Robust to kinks and several local
/// minima as long as they are more than one cell apart. Returns (x, f(x)),
/// never worse than the best grid point.
pub fn scan_then_golden_min(
    f: impl Fn(f64) -> f64,
    lo: f64,
    hi: f64,
    samples: usize,
) -> (f64, f64) {
    let samples = samples.max(2);
    let step = (hi - lo) / samples as f64;
    let mut best = (lo, f(lo));
    let mut best_i = 0;
    for i in 1..=samples {
        let x = if i == samples {
            hi
        } else {
            lo + step * i as f64
        };
        let v = f(x);
        if v < best.1 {
            best = (x, v);
            best_i = i;
        }
    }
    let a = lo + step * best_i.saturating_sub(1) as f64;
    let b = (lo + step * (best_i + 1) as f64).min(hi);
    let refined = golden_section_min(&f, a, b, 1e-12);
    if refined.1 < best.1 {
        refined
    } else {
        best
    }
}

// ---------------------------------------------------------------------------
// Sufficient utilization tests, exact.

/// Seed 003 Theorem 6 as a sufficient test for PDMS_HPTS (any allocation
/// order): implicit deadlines, no jitter or blocking, every U < 0.6003, and
/// Σ U < (0.6003 + 0.0928/m)·m = (6003·m + 928)/10000, decided exactly.
/// `false` means "not shown", not "unschedulable".
///
/// The per-task limit is not in the theorem's statement but in its proof
/// ("tasks with individual sizes ≥ 60 % can be allocated to their own
/// processors"), which Algorithms 1 and 2 do not do: in input order, a heavy
/// task that arrives late is split and its remainder keeps its size (Lemma 3
/// allows S'' = S). Counterexample (m = 2, U = 1.199 < 1.2934): τ0 = (10,
/// 101), τ1 = (100, 100), τ2 = (1, 10) in that order; τ1 is split at C' = 90,
/// τ1'' = (10, 100, D 10) fills core 1 and τ2 no longer fits
/// (`partition::tests::theorem6_needs_heavy_tasks_on_own_cores`).
pub fn pdms_hpts_utilization_test(tasks: &[Task], m: usize) -> bool {
    if m == 0 {
        return tasks.is_empty();
    }
    if !tasks.iter().all(is_plain_implicit) {
        return false;
    }
    // U < 0.6003 ⇔ 10000·C < 6003·T.
    if !tasks
        .iter()
        .all(|t| (t.wcet as u128) * 10_000 < (t.period as u128) * 6003)
    {
        return false;
    }
    let bound_num = 6003u128 * m as u128 + 928;
    utilization_cmp(tasks, bound_num, 10_000) == Ordering::Less
}

/// Seed 003 Theorem 7 and §V.A as a sufficient test for PDMS_HPTS_DS:
/// implicit deadlines, no jitter or blocking, every U ≤ 1 and
/// Σ U < 0.6547·m, or, when every U ≤ √2 − 1 (light tasks),
/// Σ U < 0.693·m. Decided exactly (U ≤ √2 − 1 ⇔ (C + T)² ≤ 2T²).
/// `false` means "not shown", not "unschedulable".
pub fn pdms_hpts_ds_utilization_test(tasks: &[Task], m: usize) -> bool {
    if m == 0 {
        return tasks.is_empty();
    }
    if !tasks.iter().all(is_plain_implicit) {
        return false;
    }
    let (num, den) = if tasks.iter().all(is_light) {
        (693u128, 1000u128)
    } else {
        (6547u128, 10_000u128)
    };
    utilization_cmp(tasks, num * m as u128, den) == Ordering::Less
}

/// D = T, J = B = 0, 0 < T and C ≤ T: the task model of seed 003's bounds.
fn is_plain_implicit(t: &Task) -> bool {
    t.period > 0 && t.deadline == t.period && t.jitter == 0 && t.blocking == 0 && t.wcet <= t.period
}

/// U = C/T ≤ √2 − 1, exactly: C + T ≤ √2·T ⇔ (C + T)² ≤ 2T² ⇔ C(2T + C) ≤ T².
fn is_light(t: &Task) -> bool {
    let (c, p) = (t.wcet as u128, t.period as u128);
    match (2 * p + c).checked_mul(c) {
        Some(lhs) => lhs <= p * p,
        None => false,
    }
}

/// Σ C/T compared with `num`/`den`, exactly. An f64 sum decides when it
/// is farther from the bound than its rounding error can reach: each term
/// C/T is within ε = 2⁻⁵³ of its value relatively and the naive sum of n
/// non-negative terms adds at most (n − 1)·ε·Σ (Higham, "Accuracy and
/// Stability of Numerical Algorithms", 2nd ed., §4.2), so |sum − Σ| ≤
/// (n + 1)·ε·sum·(1 + small); a margin of 4(n + 2)·ε·max(sum, 1) (plus the
/// bound's own rounding) is safe. Only near-ties go to the exact big
/// rational ([`RatioSum`], whose size grows with n: O(n²) for n tasks,
/// which made `rtgpu analyze` quadratic in the bound tests, issue 24).
fn utilization_cmp(tasks: &[Task], num: u128, den: u128) -> Ordering {
    let sum: f64 = tasks.iter().map(Task::utilization).sum();
    let bound = num as f64 / den as f64;
    let margin = 4.0 * (tasks.len() as f64 + 2.0) * f64::EPSILON * sum.max(bound).max(1.0);
    if sum < bound - margin {
        Ordering::Less
    } else if sum > bound + margin {
        Ordering::Greater
    } else {
        utilization_sum(tasks).cmp_fraction(num, den)
    }
}

fn utilization_sum(tasks: &[Task]) -> RatioSum {
    let mut sum = RatioSum::zero();
    for t in tasks {
        sum.add(t.wcet, t.period);
    }
    sum
}

// ---------------------------------------------------------------------------
// Exact sums of fractions (crate-internal): Σ nᵢ/dᵢ kept as one unreduced
// big fraction, for comparisons of utilization and size sums that must not
// depend on rounding (DESIGN.md §3.3). Little-endian u64 limbs.

/// An exact sum of fractions n/d with u64 terms, for comparisons only.
#[derive(Debug, Clone)]
pub(crate) struct RatioSum {
    num: Vec<u64>,
    den: Vec<u64>,
}

impl RatioSum {
    /// The empty sum, 0/1.
    pub(crate) fn zero() -> RatioSum {
        RatioSum {
            num: Vec::new(),
            den: vec![1],
        }
    }

    /// Reset to 0/1 keeping the allocations.
    pub(crate) fn clear(&mut self) {
        self.num.clear();
        self.den.clear();
        self.den.push(1);
    }

    /// self += n/d. `d` must be positive.
    pub(crate) fn add(&mut self, n: u64, d: u64) {
        debug_assert!(d > 0, "zero denominator");
        // num·d + n·den over den·d.
        mul_small(&mut self.num, d);
        add_mul_small(&mut self.num, &self.den, n);
        mul_small(&mut self.den, d);
    }

    /// Exact comparison of two sums.
    pub(crate) fn cmp(&self, other: &RatioSum) -> Ordering {
        cmp_big(&mul(&self.num, &other.den), &mul(&other.num, &self.den))
    }

    /// Exact comparison with n/d (d > 0).
    pub(crate) fn cmp_fraction(&self, n: u128, d: u128) -> Ordering {
        let to_limbs = |v: u128| vec![v as u64, (v >> 64) as u64];
        cmp_big(&mul(&self.num, &to_limbs(d)), &mul(&to_limbs(n), &self.den))
    }
}

/// a ← a·m.
fn mul_small(a: &mut Vec<u64>, m: u64) {
    let mut carry: u128 = 0;
    for limb in a.iter_mut() {
        let v = *limb as u128 * m as u128 + carry;
        *limb = v as u64;
        carry = v >> 64;
    }
    if carry != 0 {
        a.push(carry as u64);
    }
}

/// a ← a + b·m. Each step is at most (2⁶⁴−1) + (2⁶⁴−1)² + (2⁶⁴−1) = 2¹²⁸ − 1.
fn add_mul_small(a: &mut Vec<u64>, b: &[u64], m: u64) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    let mut carry: u128 = 0;
    for (i, limb) in a.iter_mut().enumerate() {
        let prod = b.get(i).map_or(0, |&x| x as u128 * m as u128);
        let v = *limb as u128 + prod + carry;
        *limb = v as u64;
        carry = v >> 64;
        if carry == 0 && i >= b.len() {
            break;
        }
    }
    if carry != 0 {
        a.push(carry as u64);
    }
}

/// Schoolbook product.
fn mul(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = vec![0u64; a.len() + b.len()];
    for (i, &x) in a.iter().enumerate() {
        let mut carry: u128 = 0;
        for (j, &y) in b.iter().enumerate() {
            let v = out[i + j] as u128 + x as u128 * y as u128 + carry;
            out[i + j] = v as u64;
            carry = v >> 64;
        }
        let mut k = i + b.len();
        while carry != 0 {
            let v = out[k] as u128 + carry;
            out[k] = v as u64;
            carry = v >> 64;
            k += 1;
        }
    }
    out
}

fn cmp_big(a: &[u64], b: &[u64]) -> Ordering {
    let len = |x: &[u64]| x.len() - x.iter().rev().take_while(|&&l| l == 0).count();
    let (la, lb) = (len(a), len(b));
    la.cmp(&lb)
        .then_with(|| a[..la].iter().rev().cmp(b[..lb].iter().rev()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Time;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn lambert_w_inverts() {
        for &y in &[-0.3, -0.1, 0.0, 0.5, 1.0, 2.0, 7.389_056, 100.0, 1e6] {
            let w = lambert_w0(y);
            assert!(
                close(w * w.exp(), y, 1e-9 * y.abs().max(1.0)),
                "y={y} w={w}"
            );
        }
        assert!(close(lambert_w0(1.0), 0.567_143_290_409_783_8, 1e-14)); // Ω
        assert!(lambert_w0(-1.0).is_nan());
    }

    #[test]
    fn theorem6_minimiser_and_bound() {
        // Closed form (Eq. 17): W(e²) = 1.5571456, x* = 0.2844014.
        let x = pdms_hpts_minimizing_share();
        assert!(close(x, 0.284_401_4, 1e-6), "x* = {x}");
        // The seed's printed 0.2837 is (2 − W)/W with W rounded to 1.558.
        assert!(close((2.0 - 1.558) / 1.558, 0.2837, 1e-4));
        // Numerical minimisation of Eq. 15 agrees with the closed form.
        let (xn, sn) = golden_section_min(pdms_hpts_fixed_point_size, 0.0, 0.99, 1e-12);
        assert!(close(xn, x, 1e-6));
        let s = pdms_hpts_size_bound();
        assert!(close(s, sn, 1e-12));
        // 60.13 %, the seed's "60.03 %" being a misprint: Eq. 15 at the
        // printed x = 0.2837 is also 0.6013.
        assert!(close(s, 0.601_307, 1e-6), "S* = {s}");
        assert!(close(pdms_hpts_fixed_point_size(0.2837), 0.6013, 1e-4));
        // Eq. 13 at S = S(x*) is S itself (fixed point, Eq. 14).
        assert!(close(pdms_hpts_core_size_bound(x, s), s, 1e-12));
    }

    #[test]
    fn theorem6_published_constants() {
        // 0.0928 = 0.6931 − 0.6003: the last core keeps the Liu & Layland bound.
        assert!(close(
            RMS_BOUND - PDMS_HPTS_BOUND_PAPER,
            PDMS_HPTS_LAST_CORE_GAIN_PAPER,
            1e-4
        ));
        // The published UB_m is below the derived one for every m: safe.
        let s = pdms_hpts_size_bound();
        for m in 1..=1000 {
            let derived = s + (RMS_BOUND - s) / m as f64;
            assert!(pdms_hpts_utilization_bound(m) <= derived + 1e-4, "m={m}");
        }
        // m = 1: 0.6003 + 0.0928 = 0.6931, the Liu & Layland limit.
        assert!(close(pdms_hpts_utilization_bound(1), RMS_BOUND, 1e-4));
    }

    #[test]
    fn theorem7_bound() {
        let b = pdms_hpts_ds_size_bound();
        assert!(close(b, 0.6547, 1e-4), "B = {b}");
        assert!(b >= PDMS_HPTS_DS_BOUND_PAPER, "published value is safe");
        // Fig. 2(a): minimum at r = 2, r = 1 and r ≥ 3 above it, → 0.693.
        let at = |r| pdms_hpts_ds_size_bound_for(r, b).1;
        assert!(close(at(2), b, 1e-6));
        assert!(at(1) > b + 1e-3);
        for r in 3..=20 {
            assert!(at(r) > 0.69, "r={r}: {}", at(r));
        }
        assert!(close(at(100_000), RMS_BOUND, 1e-3));
    }

    #[test]
    fn sblw_light_bound() {
        let (r, x, v) = sblw_min(LIGHT_TASK_ALPHA, 64);
        assert_eq!(r, None, "the infimum is the r → ∞ limit");
        assert!(close(x, 0.0, 1e-6));
        assert!(close(v, 0.693, 2e-4), "SBLW min = {v}");
        assert!(v >= PDMS_HPTS_DS_LIGHT_BOUND_PAPER);
        // Every finite r is above the limit, and tends to it.
        for r in 2..=64 {
            let (_, vr) = scan_then_golden_min(|x| sblw(x, r, LIGHT_TASK_ALPHA), 0.0, 0.414, 512);
            assert!(vr > v);
        }
    }

    #[test]
    fn lemma4_identity_and_max() {
        // Deterministic LCG (Knuth MMIX constants) over (D, C, C').
        let mut state = 4u64;
        let mut next = |lo: u64, hi: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            lo + (state >> 33) % (hi - lo + 1)
        };
        for _ in 0..10_000 {
            let d = next(2, 1_000_000);
            let c = next(1, d);
            let c1 = next(0, c - 1);
            let (s, s1) = (c as f64 / d as f64, c1 as f64 / d as f64);
            let s2 = (c - c1) as f64 / (d - c1) as f64;
            assert!(close(split_remainder_size(s, s1), s2, 1e-9));
            assert!(s1 <= s && s2 <= s + 1e-12, "Lemma 3");
            assert!(s1 + s2 <= split_total_size_max(s) + 1e-9);
            assert!(split_penalty(s, s1) <= split_penalty_max(s) + 1e-9);
        }
        // The maximum is reached at S' = 1 − √(1 − S).
        let s = 0.64;
        let x = split_worst_first_size(s);
        assert!(close(x, 0.4, 1e-12));
        assert!(close(
            x + split_remainder_size(s, x),
            split_total_size_max(s),
            1e-12
        ));
    }

    #[test]
    fn penalty_small_for_small_tasks() {
        // Seed 003 §IV.A: δ ≤ 2 % when S ≤ 25 %.
        assert!(split_penalty_max(0.25) < 0.02);
        assert!(close(split_penalty_max(0.25), 0.017_949, 1e-6));
        // §IV.B: ≥ 67.31 % as m → ∞ (0.6931 − 0.02 with δ rounded to 2 %).
        assert!(pdms_hpts_bound_with_penalty(0.25, 1_000_000) >= 0.6731);
    }

    #[test]
    fn lemma5() {
        // S = 0: plain Liu & Layland with r tasks... plus a task of size 0.
        assert!(close(dms_size_bound_given(0.0, 1), 1.0, 1e-12));
        assert!(close(
            dms_size_bound_given(0.0, 2),
            crate::fp::liu_layland_bound(2),
            1e-12
        ));
        assert!(close(
            dms_size_bound_given(0.3, 1_000_000),
            dms_size_bound_given_limit(0.3),
            1e-6
        ));
        assert!(close(dms_size_bound_given_limit(0.0), RMS_BOUND, 1e-12));
    }

    #[test]
    fn exact_tests() {
        // m = 2, bound 0.6547·2 = 1.3094: U = 1.3093 passes, 1.3094 does not.
        let ts = |c1, c2| vec![Task::implicit(0, c1, 10_000), Task::implicit(1, c2, 10_000)];
        assert!(pdms_hpts_ds_utilization_test(&ts(6547, 6546), 2));
        assert!(!pdms_hpts_ds_utilization_test(&ts(6547, 6547), 2));
        // Light tasks (≤ 0.414): bound 0.693·m.
        let light: Vec<Task> = (0..4).map(|i| Task::implicit(i, 3464, 10_000)).collect();
        assert!(pdms_hpts_ds_utilization_test(&light, 2)); // 1.3856 < 1.386
        let light_eq: Vec<Task> = (0..4).map(|i| Task::implicit(i, 3465, 10_000)).collect();
        assert!(!pdms_hpts_ds_utilization_test(&light_eq, 2)); // 1.386 = 1.386: not <
                                                               // √2 − 1 threshold, exactly: 41421/100000 < √2 − 1 < 41422/100000.
        assert!(is_light(&Task::implicit(0, 41_421, 100_000)));
        assert!(!is_light(&Task::implicit(0, 41_422, 100_000)));
        // PDMS_HPTS: (6003·3 + 928)/10000 = 1.8937 for m = 3.
        let four = |c| -> Vec<Task> {
            vec![
                Task::implicit(0, c, 10_000),
                Task::implicit(1, 6_000, 10_000),
                Task::implicit(2, 6_000, 10_000),
                Task::implicit(3, 6_000, 10_000),
            ]
        };
        assert!(!pdms_hpts_utilization_test(&four(937), 3)); // 1.8937 = bound: not <
        assert!(pdms_hpts_utilization_test(&four(936), 3));
        // A task of U ≥ 0.6003 is outside the proof's assumptions.
        assert!(!pdms_hpts_utilization_test(
            &[Task::implicit(0, 6_003, 10_000)],
            3
        ));
        assert!(pdms_hpts_utilization_test(
            &[Task::implicit(0, 6_002, 10_000)],
            3
        ));
        // Outside the model: constrained deadline.
        assert!(!pdms_hpts_ds_utilization_test(&[Task::new(0, 1, 10, 5)], 2));
    }

    fn cmp_sums(a: &[(Time, Time)], b: &[(Time, Time)]) -> Ordering {
        let sum = |terms: &[(Time, Time)]| {
            let mut s = RatioSum::zero();
            for &(n, d) in terms {
                s.add(n, d);
            }
            s
        };
        sum(a).cmp(&sum(b))
    }

    #[test]
    fn ratio_sum_exact() {
        // 1/3 + 1/6 = 1/2 exactly; f64 would also get this one, but 0.1·3 ≠ 0.3.
        assert_eq!(cmp_sums(&[(1, 3), (1, 6)], &[(1, 2)]), Ordering::Equal);
        assert_eq!(
            cmp_sums(&[(1, 10), (1, 10), (1, 10)], &[(3, 10)]),
            Ordering::Equal
        );
        // Large coprime denominators: Σ (p−1)/p over 8 primes near 2⁶³.
        let ps: Vec<(u64, u64)> = [
            9_223_372_036_854_775_783u64,
            9_223_372_036_854_775_643,
            9_223_372_036_854_775_549,
            9_223_372_036_854_775_507,
        ]
        .iter()
        .map(|&p| (p - 1, p))
        .collect();
        let mut bigger = ps.clone();
        bigger[0].0 += 1; // (p)/p = 1
        assert_eq!(cmp_sums(&ps, &bigger), Ordering::Less);
        assert_eq!(cmp_sums(&bigger, &ps), Ordering::Greater);
        assert_eq!(cmp_sums(&ps, &ps), Ordering::Equal);
        let mut s = RatioSum::zero();
        s.add(1, 4);
        s.add(1, 4);
        assert_eq!(s.cmp_fraction(1, 2), Ordering::Equal);
        assert_eq!(
            s.cmp_fraction(u64::MAX as u128, u64::MAX as u128 * 2 + 1),
            Ordering::Greater
        );
        s.clear();
        assert_eq!(s.cmp_fraction(0, 1), Ordering::Equal);
    }
}
