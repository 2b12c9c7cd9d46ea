//! Seeded, reproducible random task sets for tests, benchmarks and studies.
//!
//! - UUniFast: Bini & Buttazzo, "Measuring the performance of schedulability
//!   tests", RTS 30(1-2), 2005 (unbiased utilization vectors summing to U).
//! - Seed 003 §V.B: T uniform in [100, 5000], C uniform in [0, 0.4T], tasks
//!   added until the total utilization exceeds m.
//!
//! The generator is a SplitMix64 stream (Steele, Lea & Flood, OOPSLA 2014):
//! tiny, fast and identical on every platform, so a seed names a task set.

use crate::task::{Task, Time};

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
}
