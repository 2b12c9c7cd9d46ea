//! Seeded, reproducible random task sets for tests, benchmarks and studies.
//!
//! - UUniFast: Bini & Buttazzo, "Measuring the performance of schedulability
//!   tests", RTS 30(1-2), 2005 (unbiased utilization vectors summing to U).
//! - Seed 003 §V.B: T uniform in [100, 5000], C uniform in [0, 0.4T], tasks
//!   added until the total utilization exceeds m.
//!
//! - UUniFast-Discard: Davis & Burns, "Improved priority assignment for
//!   global fixed priority pre-emptive scheduling in multiprocessor real-time
//!   systems", RTS 47(1), 2011 (UUniFast, redrawn while a value exceeds a cap).
//! - RandFixedSum: Stafford 2006, as used by Emberson, Stafford & Davis,
//!   WATERS 2010 (uniform over the vectors in [lo, hi]^n that sum to U).
//! - Per-task utilization drawn uniformly or exponentially, tasks added until
//!   a total is reached (seed 000 §V: exponential with mean 0.5, values above
//!   1 redrawn; seed 000 §VII and App. D: uniform [0.5, 0.9], [0.1, 0.4],
//!   [0.01, 0.1] and exponential means 0.1, 0.25, 0.5).
//! - GPU parameters of seed 000 §VII: the share of GPU-using tasks, the GPU
//!   part of their execution, data sizes, η (GPU uses, i.e. interrupts, per
//!   job, seed 000 Eq. 7) and the speed-up R that defines effective
//!   utilization.
//!
//! The generator is a SplitMix64 stream (Steele, Lea & Flood, OOPSLA 2014):
//! tiny, fast and identical on every platform, so a seed names a task set.
//! [`Spec`] describes a whole family of task sets; [`generate`] draws one;
//! [`set_seed`] derives the seed of the k-th set of a study point, so any
//! set can be regenerated alone.

use crate::task::{Task, Time};
use serde::{Deserialize, Serialize};

/// SplitMix64 pseudo-random generator.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [lo, hi] (inclusive).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        debug_assert!(lo <= hi);
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        lo + self.next_u64() % (span + 1)
    }
}

/// UUniFast: `n` utilizations summing to `total` (Bini & Buttazzo 2005, Fig. 2).
pub fn uunifast(rng: &mut Rng, n: usize, total: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(n);
    let mut sum = total;
    for i in 1..n {
        let next = sum * rng.next_f64().powf(1.0 / (n - i) as f64);
        out.push(sum - next);
        sum = next;
    }
    if n > 0 {
        out.push(sum);
    }
    out
}

/// Implicit-deadline tasks with UUniFast utilizations summing to about
/// `total` and periods log-uniform in [`period_min`, `period_max`] ns.
/// C = max(1, round(u·T)) ns; ids are 0..n.
pub fn uunifast_tasks(
    rng: &mut Rng,
    n: usize,
    total: f64,
    period_min: Time,
    period_max: Time,
) -> Vec<Task> {
    let (lo, hi) = ((period_min as f64).ln(), (period_max as f64).ln());
    uunifast(rng, n, total)
        .into_iter()
        .enumerate()
        .map(|(id, u)| {
            let period = (lo + (hi - lo) * rng.next_f64()).exp().round().max(1.0) as Time;
            let wcet = ((u * period as f64).round() as Time).clamp(1, period);
            Task::implicit(id, wcet, period)
        })
        .collect()
}

/// Seed 003 §V.B: T uniform in [100, 5000], C uniform in [0, 0.4T] (at least
/// 1), implicit deadlines, tasks added until Σ C/T exceeds `m` (the last task
/// that crosses m is kept, as in the paper). Times are scaled by `scale` ns per
/// paper time unit so C can be scaled down finely for breakdown utilization.
pub fn seed003_tasks(rng: &mut Rng, m: usize, scale: Time) -> Vec<Task> {
    let mut tasks = Vec::new();
    let mut u = 0.0;
    while u <= m as f64 {
        let period = rng.range(100, 5000) * scale;
        let wcet = rng.range(0, period * 2 / 5).max(1);
        u += wcet as f64 / period as f64;
        tasks.push(Task::implicit(tasks.len(), wcet, period));
    }
    tasks
}

/// Mixes a study point's seed with a set index into the seed of that set
/// (one SplitMix64 step of their combination): set k of a point can be
/// regenerated without drawing sets 0..k.
pub fn set_seed(point_seed: u64, index: u64) -> u64 {
    Rng::new(point_seed ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64()
}

/// UUniFast-Discard (Davis & Burns 2011): UUniFast vectors are redrawn until
/// every value is at most `cap`; `None` after `max_tries` draws (the target
/// is then out of reach, e.g. `total > n · cap`).
pub fn uunifast_discard(
    rng: &mut Rng,
    n: usize,
    total: f64,
    cap: f64,
    max_tries: u32,
) -> Option<Vec<f64>> {
    if total > n as f64 * cap {
        return None;
    }
    (0..max_tries)
        .map(|_| uunifast(rng, n, total))
        .find(|v| v.iter().all(|&u| u <= cap))
}

/// RandFixedSum (Stafford 2006; the algorithm of Emberson, Stafford & Davis,
/// WATERS 2010): `n` values in [`lo`, `hi`] summing to `total`, uniformly
/// distributed over that polytope. `None` if `total` is outside
/// [n·lo, n·hi] or `lo > hi`.
pub fn randfixedsum(rng: &mut Rng, n: usize, total: f64, lo: f64, hi: f64) -> Option<Vec<f64>> {
    let nf = n as f64;
    if n == 0 || lo > hi || total < nf * lo - 1e-12 || total > nf * hi + 1e-12 {
        return None;
    }
    if n == 1 || hi - lo <= f64::EPSILON {
        return Some(vec![total / nf; n]);
    }
    // Work on the unit cube: x in [0,1]^n with sum s, then scale.
    let s = ((total - nf * lo) / (hi - lo)).clamp(0.0, nf);
    let k = (s.floor() as usize).min(n - 1);
    // s1[i] = s - (k - i), s2[i] = (k + n - i) - s  (i = 0..n)
    let s1: Vec<f64> = (0..n).map(|i| s - k as f64 + i as f64).collect();
    let s2: Vec<f64> = (0..n).map(|i| (k + n - i) as f64 - s).collect();
    // w: n x (n+1), t: (n-1) x n (the transition probabilities).
    let mut w = vec![vec![0.0f64; n + 1]; n];
    let mut t = vec![vec![0.0f64; n]; n - 1];
    w[0][1] = f64::MAX;
    for i in 2..=n {
        for j in 0..i {
            let tmp1 = w[i - 2][j + 1] * s1[j] / i as f64;
            let tmp2 = w[i - 2][j] * s2[n - i + j] / i as f64;
            w[i - 1][j + 1] = tmp1 + tmp2;
            let tmp3 = w[i - 1][j + 1] + f64::MIN_POSITIVE;
            t[i - 2][j] = if s2[n - i + j] > s1[j] {
                tmp2 / tmp3
            } else {
                1.0 - tmp1 / tmp3
            };
        }
    }
    let mut x = vec![0.0f64; n];
    let (mut s, mut j) = (s, k + 1);
    let (mut sm, mut pr) = (0.0f64, 1.0f64);
    for i in (1..n).rev() {
        let e = rng.next_f64() <= t[i - 1][j - 1];
        let sx = rng.next_f64().powf(1.0 / i as f64);
        sm += (1.0 - sx) * pr * s / (i + 1) as f64;
        pr *= sx;
        x[n - i - 1] = sm + if e { pr } else { 0.0 };
        if e {
            s -= 1.0;
            j -= 1;
        }
    }
    x[n - 1] = sm + pr * s;
    // The construction fixes the dimension order: shuffle (Fisher-Yates).
    for i in (1..n).rev() {
        let r = rng.range(0, i as u64) as usize;
        x.swap(i, r);
    }
    Some(
        x.into_iter()
            .map(|v| (lo + (hi - lo) * v.clamp(0.0, 1.0)).clamp(lo, hi))
            .collect(),
    )
}

/// Exponential with mean `mean`, redrawn while above `cap` (seed 000 §V:
/// "tasks with utilizations greater than 1.0 were regenerated").
pub fn exponential_capped(rng: &mut Rng, mean: f64, cap: f64) -> f64 {
    loop {
        let u = -mean * (1.0 - rng.next_f64()).ln();
        if u <= cap {
            return u;
        }
    }
}

/// How a task set's utilizations are drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Utilizations {
    /// `n` values summing to `total` (UUniFast).
    Uunifast { n: usize, total: f64 },
    /// UUniFast redrawn until every value is at most `cap` (default 1).
    UunifastDiscard {
        n: usize,
        total: f64,
        #[serde(default = "one")]
        cap: f64,
    },
    /// `n` values in [`lo`, `hi`] summing to `total` (RandFixedSum).
    Randfixedsum {
        n: usize,
        total: f64,
        #[serde(default)]
        lo: f64,
        #[serde(default = "one")]
        hi: f64,
    },
    /// Per task uniform in [`lo`, `hi`]; tasks are added until the total
    /// exceeds `total` (see [`Overshoot`]), or exactly `n` tasks when `n`
    /// is given.
    Uniform {
        lo: f64,
        hi: f64,
        #[serde(default)]
        total: Option<f64>,
        #[serde(default)]
        n: Option<usize>,
        #[serde(default)]
        overshoot: Overshoot,
    },
    /// Per task exponential with mean `mean`, values above 1 redrawn
    /// (seed 000 §V); count as for `Uniform`.
    Exponential {
        mean: f64,
        #[serde(default)]
        total: Option<f64>,
        #[serde(default)]
        n: Option<usize>,
        #[serde(default)]
        overshoot: Overshoot,
    },
}

fn one() -> f64 {
    1.0
}

/// What happens to the task whose utilization crosses the target total when
/// tasks are added one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Overshoot {
    /// Kept: the total exceeds the target (seed 003 §V.B: "tasks were
    /// generated till the total utilization exceeded m").
    #[default]
    Keep,
    /// Dropped: the total stays at most the target (the methodology of
    /// seed 000 §VII's reference [33]).
    Drop,
    /// Trimmed to the remaining utilization, so the total is the target
    /// exactly (a sweep's x value is then the set's utilization).
    Trim,
}

/// How periods are drawn (integer nanoseconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Periods {
    /// Uniform integer in [`lo`, `hi`] ns, rounded down to a multiple of
    /// `granularity` ns (default 1).
    Uniform {
        lo: Time,
        hi: Time,
        #[serde(default = "one_ns")]
        granularity: Time,
    },
    /// Log-uniform in [`lo`, `hi`] ns.
    LogUniform { lo: Time, hi: Time },
    /// `lo · 2^k` with k uniform among the values that keep it ≤ `hi`
    /// (harmonic: every period divides every larger one).
    Harmonic { lo: Time, hi: Time },
}

fn one_ns() -> Time {
    1
}

/// GPU-using tasks (seed 000 §VII and App. D). Ranges are `[lo, hi]`, drawn
/// uniformly; a single value is written `[v, v]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// Share of GPU-using tasks in a set, drawn once per set (App. D: 10 %
    /// blocks, e.g. [0.5, 0.6]). round(share · n) tasks, chosen at random.
    pub share: [f64; 2],
    /// Fraction of a GPU-using task's execution time spent on the GPU
    /// (suspension-oblivious: it stays in C), per task (§VII: 0.75).
    pub part: [f64; 2],
    /// Bytes copied per job (to and from the GPU), per task.
    #[serde(default)]
    pub data: [u64; 2],
    /// η: GPU uses (and interrupts) per job, per task (§VII: i ∈ {1,3,6}).
    #[serde(default = "one_use")]
    pub eta: [u32; 2],
    /// GPU-to-CPU speed-up R: one GPU time unit counts as R CPU units in
    /// the effective utilization (§VII, Fig. 6: R = 16).
    #[serde(default = "one")]
    pub speedup: f64,
}

fn one_use() -> [u32; 2] {
    [1, 1]
}

/// A family of random task sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub utilizations: Utilizations,
    pub periods: Periods,
    /// Deadline as a fraction of the period, uniform in [lo, hi] (D is at
    /// least C); absent: implicit deadlines D = T.
    #[serde(default)]
    pub deadline: Option<[f64; 2]>,
    /// GPU-using tasks; absent: CPU-only sets.
    #[serde(default)]
    pub gpu: Option<Gpu>,
}

/// Largest number of tasks one set may have (a guard against a typo such as
/// a target utilization of 1e9).
pub const MAX_SET_TASKS: usize = 100_000;

impl Spec {
    /// Checks every parameter; the error names the field and the value.
    pub fn validate(&self) -> Result<(), String> {
        let frac = |name: &str, v: f64| -> Result<(), String> {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be a finite number >= 0, got {v}"))
            }
        };
        let range = |name: &str, r: [f64; 2], max: f64| -> Result<(), String> {
            frac(name, r[0])?;
            frac(name, r[1])?;
            if r[0] > r[1] || r[1] > max {
                return Err(format!(
                    "{name} must be [lo, hi] with 0 <= lo <= hi <= {max}, got [{}, {}]",
                    r[0], r[1]
                ));
            }
            Ok(())
        };
        let count = |name: &str, n: usize| -> Result<(), String> {
            if n == 0 || n > MAX_SET_TASKS {
                return Err(format!(
                    "{name} must be between 1 and {MAX_SET_TASKS}, got {n}"
                ));
            }
            Ok(())
        };
        match &self.utilizations {
            Utilizations::Uunifast { n, total } => {
                count("utilizations.n", *n)?;
                frac("utilizations.total", *total)?;
            }
            Utilizations::UunifastDiscard { n, total, cap } => {
                count("utilizations.n", *n)?;
                frac("utilizations.total", *total)?;
                frac("utilizations.cap", *cap)?;
                if *total > *n as f64 * cap {
                    return Err(format!(
                        "utilizations.total ({total}) must be at most n * cap ({})",
                        *n as f64 * cap
                    ));
                }
            }
            Utilizations::Randfixedsum { n, total, lo, hi } => {
                count("utilizations.n", *n)?;
                frac("utilizations.total", *total)?;
                range("utilizations [lo, hi]", [*lo, *hi], f64::MAX)?;
                let nf = *n as f64;
                if *total < nf * lo || *total > nf * hi {
                    return Err(format!(
                        "utilizations.total ({total}) must lie in [n*lo, n*hi] = [{}, {}]",
                        nf * lo,
                        nf * hi
                    ));
                }
            }
            Utilizations::Uniform {
                lo, hi, total, n, ..
            } => {
                range("utilizations [lo, hi]", [*lo, *hi], 1.0)?;
                if *hi <= 0.0 {
                    return Err("utilizations.hi must be > 0".into());
                }
                fill_count(*total, *n)?;
            }
            Utilizations::Exponential { mean, total, n, .. } => {
                frac("utilizations.mean", *mean)?;
                if *mean <= 0.0 {
                    return Err(format!("utilizations.mean must be > 0, got {mean}"));
                }
                fill_count(*total, *n)?;
            }
        }
        match &self.periods {
            Periods::Uniform {
                lo,
                hi,
                granularity,
            } => {
                if *lo == 0
                    || lo > hi
                    || *granularity == 0
                    || hi / granularity < lo.div_ceil(*granularity)
                {
                    return Err(format!(
                        "periods: need 0 < lo <= hi and a multiple of granularity in [lo, hi], got lo={lo} hi={hi} granularity={granularity}"
                    ));
                }
            }
            Periods::LogUniform { lo, hi } | Periods::Harmonic { lo, hi } => {
                if *lo == 0 || lo > hi {
                    return Err(format!("periods: need 0 < lo <= hi, got lo={lo} hi={hi}"));
                }
            }
        }
        if let Some(d) = self.deadline {
            range("deadline", d, 1.0)?;
            if d[0] <= 0.0 {
                return Err("deadline: lo must be > 0".into());
            }
        }
        if let Some(g) = &self.gpu {
            range("gpu.share", g.share, 1.0)?;
            range("gpu.part", g.part, 1.0)?;
            if g.data[0] > g.data[1] {
                return Err(format!(
                    "gpu.data must be [lo, hi] with lo <= hi, got {:?}",
                    g.data
                ));
            }
            if g.eta[0] > g.eta[1] {
                return Err(format!(
                    "gpu.eta must be [lo, hi] with lo <= hi, got {:?}",
                    g.eta
                ));
            }
            if !(g.speedup.is_finite() && g.speedup > 0.0) {
                return Err(format!("gpu.speedup must be > 0, got {}", g.speedup));
            }
        }
        Ok(())
    }
}

fn fill_count(total: Option<f64>, n: Option<usize>) -> Result<(), String> {
    match (total, n) {
        (Some(t), None) if t.is_finite() && t > 0.0 && t <= MAX_SET_TASKS as f64 / 100.0 => Ok(()),
        (Some(t), None) => Err(format!(
            "utilizations.total must be > 0 and at most {}, got {t}",
            MAX_SET_TASKS / 100
        )),
        (None, Some(n)) if n > 0 && n <= MAX_SET_TASKS => Ok(()),
        (None, Some(n)) => Err(format!(
            "utilizations.n must be between 1 and {MAX_SET_TASKS}, got {n}"
        )),
        _ => Err(
            "utilizations: give exactly one of `total` (add tasks until it is reached) or `n`"
                .into(),
        ),
    }
}

/// One generated task: its CPU model (C includes the GPU part,
/// suspension-oblivious, seed 000 §VII) and its GPU use, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Generated {
    pub task: Task,
    pub gpu: Option<GpuUse>,
}

/// The GPU part of a generated task's job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GpuUse {
    /// Time on the GPU per job (ns), part of C.
    pub time: Time,
    /// Bytes copied per job.
    pub bytes: u64,
    /// η: GPU uses (interrupts) per job.
    pub eta: u32,
}

/// Draws one task set of `spec` (which must pass [`Spec::validate`]).
/// Ids are 0..n; C = max(1, round(u·T)) ≤ D.
pub fn generate(rng: &mut Rng, spec: &Spec) -> Vec<Generated> {
    let utils = draw_utilizations(rng, &spec.utilizations);
    let mut out: Vec<Generated> = utils
        .iter()
        .enumerate()
        .map(|(id, &u)| {
            let period = draw_period(rng, &spec.periods);
            let wcet = ((u * period as f64).round() as Time).clamp(1, period);
            let deadline = match spec.deadline {
                Some([lo, hi]) => {
                    let f = lo + (hi - lo) * rng.next_f64();
                    ((f * period as f64).round() as Time).clamp(wcet, period)
                }
                None => period,
            };
            Generated {
                task: Task::new(id, wcet, period, deadline),
                gpu: None,
            }
        })
        .collect();
    if let Some(g) = &spec.gpu {
        let share = g.share[0] + (g.share[1] - g.share[0]) * rng.next_f64();
        let k = ((share * out.len() as f64).round() as usize).min(out.len());
        // k distinct tasks: a partial Fisher-Yates shuffle of the indices.
        let mut idx: Vec<usize> = (0..out.len()).collect();
        for i in 0..k {
            let j = rng.range(i as u64, (idx.len() - 1) as u64) as usize;
            idx.swap(i, j);
        }
        for &i in &idx[..k] {
            let part = g.part[0] + (g.part[1] - g.part[0]) * rng.next_f64();
            let c = out[i].task.wcet;
            out[i].gpu = Some(GpuUse {
                time: ((part * c as f64).round() as Time).min(c),
                bytes: rng.range(g.data[0], g.data[1]),
                eta: rng.range(u64::from(g.eta[0]), u64::from(g.eta[1])) as u32,
            });
        }
    }
    out
}

/// Effective utilization (seed 000 §VII): each GPU time unit counts as `r`
/// CPU units, so a task with C = c + g (g on the GPU) counts (c + r·g)/T.
pub fn effective_utilization(set: &[Generated], r: f64) -> f64 {
    set.iter()
        .map(|g| {
            let gpu = g.gpu.map_or(0, |u| u.time);
            ((g.task.wcet - gpu) as f64 + r * gpu as f64) / g.task.period as f64
        })
        .sum()
}

fn draw_utilizations(rng: &mut Rng, u: &Utilizations) -> Vec<f64> {
    match *u {
        Utilizations::Uunifast { n, total } => uunifast(rng, n, total),
        // Validation keeps total <= n·cap, but the redraws may still be
        // hopeless (total close to n·cap): fall back to the even split.
        Utilizations::UunifastDiscard { n, total, cap } => {
            uunifast_discard(rng, n, total, cap, 100_000)
                .unwrap_or_else(|| vec![total / n as f64; n])
        }
        Utilizations::Randfixedsum { n, total, lo, hi } => {
            randfixedsum(rng, n, total, lo, hi).unwrap_or_else(|| vec![total / n as f64; n])
        }
        Utilizations::Uniform {
            lo,
            hi,
            total,
            n,
            overshoot,
        } => fill(rng, total, n, overshoot, |r| lo + (hi - lo) * r.next_f64()),
        Utilizations::Exponential {
            mean,
            total,
            n,
            overshoot,
        } => fill(rng, total, n, overshoot, |r| {
            exponential_capped(r, mean, 1.0)
        }),
    }
}

fn fill(
    rng: &mut Rng,
    total: Option<f64>,
    n: Option<usize>,
    overshoot: Overshoot,
    mut draw: impl FnMut(&mut Rng) -> f64,
) -> Vec<f64> {
    if let Some(n) = n {
        return (0..n).map(|_| draw(rng)).collect();
    }
    let target = total.unwrap_or(1.0);
    let mut out = Vec::new();
    let mut sum = 0.0;
    while sum <= target && out.len() < MAX_SET_TASKS {
        let mut u = draw(rng);
        if sum + u > target {
            match overshoot {
                Overshoot::Keep => {}
                Overshoot::Drop => break,
                Overshoot::Trim => u = target - sum,
            }
        }
        if u <= 0.0 {
            break;
        }
        sum += u;
        out.push(u);
    }
    out
}

fn draw_period(rng: &mut Rng, p: &Periods) -> Time {
    match *p {
        Periods::Uniform {
            lo,
            hi,
            granularity,
        } => rng.range(lo.div_ceil(granularity), hi / granularity) * granularity,
        Periods::LogUniform { lo, hi } => {
            let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
            ((a + (b - a) * rng.next_f64()).exp().round() as Time).clamp(lo, hi)
        }
        Periods::Harmonic { lo, hi } => {
            let levels = (hi / lo).ilog2();
            lo << rng.range(0, u64::from(levels))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproducible_and_in_range() {
        let a = uunifast_tasks(&mut Rng::new(7), 10, 0.85, 1_000_000, 100_000_000);
        let b = uunifast_tasks(&mut Rng::new(7), 10, 0.85, 1_000_000, 100_000_000);
        assert_eq!(a, b);
        let u: f64 = a.iter().map(Task::utilization).sum();
        assert!((u - 0.85).abs() < 1e-3, "{u}");
        assert!(a
            .iter()
            .all(|t| t.period >= 1_000_000 && t.period <= 100_000_000));
    }

    #[test]
    fn uunifast_sums() {
        let mut rng = Rng::new(1);
        for n in 1..20 {
            let v = uunifast(&mut rng, n, 2.5);
            assert_eq!(v.len(), n);
            assert!((v.iter().sum::<f64>() - 2.5).abs() < 1e-9);
            assert!(v.iter().all(|&x| x >= 0.0));
        }
    }

    #[test]
    fn seed003_exceeds_m() {
        let ts = seed003_tasks(&mut Rng::new(3), 4, 1000);
        let u: f64 = ts.iter().map(Task::utilization).sum();
        assert!(u > 4.0);
        assert!(ts.iter().all(|t| t.wcet * 5 <= t.period * 2));
    }

    #[test]
    fn randfixedsum_in_bounds_and_sums() {
        let mut rng = Rng::new(11);
        for n in 1..12 {
            for &(total, lo, hi) in &[(0.5 * n as f64, 0.1, 0.9), (0.3, 0.0, 1.0)] {
                if total < n as f64 * lo || total > n as f64 * hi {
                    continue;
                }
                let v = randfixedsum(&mut rng, n, total, lo, hi).expect("feasible target");
                assert_eq!(v.len(), n);
                assert!((v.iter().sum::<f64>() - total).abs() < 1e-6, "{v:?}");
                assert!(v.iter().all(|&x| (lo..=hi).contains(&x)), "{v:?}");
            }
        }
        assert!(randfixedsum(&mut rng, 3, 3.5, 0.0, 1.0).is_none());
        // Uniform over the simplex: with n = 2, total = 1 in [0, 1] the first
        // value is uniform on [0, 1], mean 0.5.
        let mean: f64 = (0..4000)
            .map(|_| randfixedsum(&mut rng, 2, 1.0, 0.0, 1.0).expect("ok")[0])
            .sum::<f64>()
            / 4000.0;
        assert!((mean - 0.5).abs() < 0.03, "{mean}");
    }

    #[test]
    fn uunifast_discard_caps() {
        let mut rng = Rng::new(5);
        let v = uunifast_discard(&mut rng, 4, 2.0, 0.6, 10_000).expect("reachable");
        assert!(v.iter().all(|&u| u <= 0.6) && (v.iter().sum::<f64>() - 2.0).abs() < 1e-9);
        assert!(uunifast_discard(&mut rng, 4, 2.5, 0.6, 10).is_none());
    }

    #[test]
    fn exponential_mean_and_cap() {
        let mut rng = Rng::new(2);
        let xs: Vec<f64> = (0..20_000)
            .map(|_| exponential_capped(&mut rng, 0.1, 1.0))
            .collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.1).abs() < 0.005, "{mean}");
        assert!(xs.iter().all(|&x| (0.0..=1.0).contains(&x)));
    }

    fn spec(u: Utilizations, p: Periods) -> Spec {
        Spec {
            utilizations: u,
            periods: p,
            deadline: None,
            gpu: None,
        }
    }

    #[test]
    fn fill_keep_and_drop() {
        let u = |overshoot| Utilizations::Uniform {
            lo: 0.5,
            hi: 0.9,
            total: Some(8.0),
            n: None,
            overshoot,
        };
        let p = Periods::Uniform {
            lo: 15_000_000,
            hi: 60_000_000,
            granularity: 1,
        };
        for seed in 0..50 {
            let keep = generate(&mut Rng::new(seed), &spec(u(Overshoot::Keep), p.clone()));
            let drop = generate(&mut Rng::new(seed), &spec(u(Overshoot::Drop), p.clone()));
            let trim = generate(&mut Rng::new(seed), &spec(u(Overshoot::Trim), p.clone()));
            let total = |s: &[Generated]| s.iter().map(|g| g.task.utilization()).sum::<f64>();
            assert!(total(&keep) > 8.0 - 0.01, "{}", total(&keep));
            assert!(total(&drop) <= 8.0 + 0.01, "{}", total(&drop));
            assert!((total(&trim) - 8.0).abs() < 1e-3, "{}", total(&trim));
            assert_eq!(keep.len(), drop.len() + 1);
            assert_eq!(keep.len(), trim.len());
            assert!(keep
                .iter()
                .all(|g| (15_000_000..=60_000_000).contains(&g.task.period)));
        }
    }

    #[test]
    fn periods_harmonic_and_granular() {
        let mut rng = Rng::new(4);
        for _ in 0..200 {
            let h = draw_period(&mut rng, &Periods::Harmonic { lo: 1000, hi: 9000 });
            assert!([1000, 2000, 4000, 8000].contains(&h), "{h}");
            let g = draw_period(
                &mut rng,
                &Periods::Uniform {
                    lo: 100_500,
                    hi: 5_000_000,
                    granularity: 1000,
                },
            );
            assert!(
                g.is_multiple_of(1000) && (101_000..=5_000_000).contains(&g),
                "{g}"
            );
            let l = draw_period(&mut rng, &Periods::LogUniform { lo: 10, hi: 10_000 });
            assert!((10..=10_000).contains(&l));
        }
    }

    #[test]
    fn gpu_share_part_and_effective_utilization() {
        let s = Spec {
            utilizations: Utilizations::Uunifast { n: 20, total: 4.0 },
            periods: Periods::LogUniform {
                lo: 1_000_000,
                hi: 100_000_000,
            },
            deadline: Some([0.5, 1.0]),
            gpu: Some(Gpu {
                share: [0.5, 0.5],
                part: [0.75, 0.75],
                data: [1 << 20, 4 << 20],
                eta: [3, 3],
                speedup: 16.0,
            }),
        };
        s.validate().expect("valid");
        let set = generate(&mut Rng::new(8), &s);
        assert_eq!(set, generate(&mut Rng::new(8), &s));
        let gpu: Vec<_> = set.iter().filter_map(|g| g.gpu).collect();
        assert_eq!(gpu.len(), 10);
        assert!(gpu
            .iter()
            .all(|u| u.eta == 3 && (1 << 20..=4 << 20).contains(&u.bytes)));
        for g in &set {
            assert!(g.task.wcet <= g.task.deadline && g.task.deadline <= g.task.period);
            assert!(g.task.deadline * 2 + 2 >= g.task.period);
            if let Some(u) = g.gpu {
                assert!(u.time.abs_diff(g.task.wcet * 3 / 4) <= 1);
            }
        }
        // R = 1 leaves the utilization; R = 16 adds 15 g / T per GPU task.
        let u: f64 = set.iter().map(|g| g.task.utilization()).sum();
        assert!((effective_utilization(&set, 1.0) - u).abs() < 1e-9);
        let extra: f64 = set
            .iter()
            .filter_map(|g| g.gpu.map(|x| 15.0 * x.time as f64 / g.task.period as f64))
            .sum();
        assert!((effective_utilization(&set, 16.0) - u - extra).abs() < 1e-9);
    }

    #[test]
    fn validate_names_the_field() {
        let bad = spec(
            Utilizations::Uniform {
                lo: 0.5,
                hi: 0.4,
                total: Some(2.0),
                n: None,
                overshoot: Overshoot::Keep,
            },
            Periods::LogUniform { lo: 1, hi: 10 },
        );
        let e = bad.validate().expect_err("lo > hi");
        assert!(e.contains("utilizations [lo, hi]"), "{e}");
        let both = spec(
            Utilizations::Exponential {
                mean: 0.1,
                total: Some(2.0),
                n: Some(3),
                overshoot: Overshoot::Keep,
            },
            Periods::LogUniform { lo: 1, hi: 10 },
        );
        assert!(both.validate().expect_err("both").contains("exactly one"));
        let p = spec(
            Utilizations::Uunifast { n: 3, total: 1.0 },
            Periods::Uniform {
                lo: 10,
                hi: 5,
                granularity: 1,
            },
        );
        assert!(p.validate().expect_err("periods").starts_with("periods"));
        assert_ne!(set_seed(1, 0), set_seed(1, 1));
        assert_ne!(set_seed(1, 0), set_seed(2, 0));
    }
}
