//! Interrupt interference under the six characterisations of seed 002 §5
//! and the fixed-point latency bound of seed 002 Theorem 8:
//!
//! ```text
//! L = max(D_ST, D_POID) + D_PAIE + D_PSD + I_NMI(L) + I_IRQ(L)     (seed 002 eq. 7)
//! ```
//!
//! the least positive solution, found by iterating from L_IF (seed 002
//! eq. 1 / Lemma 7). The paper gives the six characterisations in one line
//! each (§5, "IRQ and NMI analysis"); their interference functions, as
//! implemented here, are (per CPU, per interrupt source v with observed
//! occurrences (a_k, c_k), NMIs being a source like any other, so they
//! always count):
//!
//! | characterisation | I(L) = I_IRQ(L) + I_NMI(L) |
//! |---|---|
//! | no interrupts | 0 (the bound is L_IF) |
//! | worst single interrupt | max c over all IRQ sources + max c over NMIs |
//! | single (worst) of each | Σ_v max_k c_k |
//! | sporadic | Σ_v ⌈L / oMIAT_v⌉ · oWCET_v, oMIAT the least gap between arrivals |
//! | sliding window | Σ_v max over windows [s, s+L) of Σ c_k with a_k in the window |
//! | sliding window with oWCET | Σ_v max over windows of #arrivals · oWCET_v |
//!
//! The first three do not depend on L (one step). The sporadic one does
//! not converge when some source has oWCET >= oMIAT or the sources'
//! utilisation Σ oWCET/oMIAT reaches 1 (then L + I(L) grows without end:
//! seed 002 Figure 24 "Did not converge"). The sliding windows are
//! observations, so a window longer than the traced interval would
//! extrapolate: the iteration reports non-convergence there.

use serde::Serialize;

use crate::trace::{Occurrence, Source, SourceKind};

/// The six interrupt characterisations of seed 002 §5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Characterisation {
    NoInterrupts,
    WorstSingle,
    SingleWorstOfEach,
    Sporadic,
    SlidingWindow,
    SlidingWindowOwcet,
}

impl Characterisation {
    pub const ALL: [Characterisation; 6] = [
        Characterisation::NoInterrupts,
        Characterisation::WorstSingle,
        Characterisation::SingleWorstOfEach,
        Characterisation::Sporadic,
        Characterisation::SlidingWindow,
        Characterisation::SlidingWindowOwcet,
    ];

    /// The paper's name.
    pub fn label(self) -> &'static str {
        match self {
            Characterisation::NoInterrupts => "No Interrupts",
            Characterisation::WorstSingle => "Worst single interrupt",
            Characterisation::SingleWorstOfEach => "Single (worst) of each interrupt",
            Characterisation::Sporadic => "Sporadic",
            Characterisation::SlidingWindow => "Sliding window",
            Characterisation::SlidingWindowOwcet => "Sliding window with oWCET",
        }
    }
}

/// Observed worst-case execution time of a source.
pub fn owcet(occ: &[Occurrence]) -> u64 {
    occ.iter().map(|o| o.duration).max().unwrap_or(0)
}

/// Observed minimum inter-arrival time (None with fewer than two
/// occurrences). `occ` sorted by start.
pub fn omiat(occ: &[Occurrence]) -> Option<u64> {
    occ.windows(2)
        .map(|w| w[1].start.abs_diff(w[0].start))
        .min()
}

/// The most execution time of occurrences arriving in any window
/// [s, s + len) (s ranging over arrivals, where the maximum is reached).
/// With `per_arrival = Some(c)` every arrival costs `c` (the oWCET
/// variant) instead of its own duration. `occ` sorted by start.
pub fn sliding_window_interference(occ: &[Occurrence], len: u64, per_arrival: Option<u64>) -> u64 {
    if len == 0 {
        return 0;
    }
    // u128: a window's sum of u64 costs cannot overflow.
    let cost = |o: &Occurrence| u128::from(per_arrival.unwrap_or(o.duration));
    let (mut best, mut sum, mut j) = (0u128, 0u128, 0usize);
    for i in 0..occ.len() {
        // window [occ[i].start, occ[i].start + len)
        let end = occ[i].start.saturating_add(len);
        while j < occ.len() && occ[j].start < end {
            sum += cost(&occ[j]);
            j += 1;
        }
        best = best.max(sum);
        sum -= cost(&occ[i]);
    }
    u64::try_from(best).unwrap_or(u64::MAX)
}

/// I_IRQ(L) + I_NMI(L) under one characterisation, and the per-source
/// contributions (same order as `sources`).
pub fn interference(c: Characterisation, sources: &[Source], len: u64) -> (u64, Vec<u64>) {
    let mut per = vec![0u64; sources.len()];
    match c {
        Characterisation::NoInterrupts => {}
        Characterisation::WorstSingle => {
            // One IRQ (the worst of all) and one NMI.
            for nmi in [false, true] {
                let worst = sources
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| (s.kind == SourceKind::Nmi) == nmi)
                    .map(|(i, s)| (owcet(&s.occurrences), i))
                    .max();
                if let Some((w, i)) = worst {
                    per[i] = w;
                }
            }
        }
        Characterisation::SingleWorstOfEach => {
            for (p, s) in per.iter_mut().zip(sources) {
                *p = owcet(&s.occurrences);
            }
        }
        Characterisation::Sporadic => {
            for (p, s) in per.iter_mut().zip(sources) {
                let w = owcet(&s.occurrences);
                *p = match omiat(&s.occurrences) {
                    Some(t) if t > 0 => len.div_ceil(t).saturating_mul(w),
                    Some(_) => u64::MAX,
                    None => w, // seen once: one arrival
                };
            }
        }
        Characterisation::SlidingWindow => {
            for (p, s) in per.iter_mut().zip(sources) {
                *p = sliding_window_interference(&s.occurrences, len, None);
            }
        }
        Characterisation::SlidingWindowOwcet => {
            for (p, s) in per.iter_mut().zip(sources) {
                let w = owcet(&s.occurrences);
                *p = sliding_window_interference(&s.occurrences, len, Some(w));
            }
        }
    }
    let total = per.iter().fold(0u64, |a, &b| a.saturating_add(b));
    (total, per)
}

/// The result of the fixed-point iteration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Bound {
    /// L = L_IF + I(L) holds; `interference` per source at L.
    Converged {
        latency: u64,
        iterations: u32,
        interference: Vec<u64>,
    },
    /// No fixed point within the limits; `last` is the last iterate.
    DidNotConverge {
        last: u64,
        iterations: u32,
        reason: String,
    },
}

impl Bound {
    pub fn latency(&self) -> Option<u64> {
        match self {
            Bound::Converged { latency, .. } => Some(*latency),
            Bound::DidNotConverge { .. } => None,
        }
    }
}

/// Limits of the iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The observed interval: a sliding window longer than it is an
    /// extrapolation, reported as non-convergence.
    pub observed: u64,
    /// Give up beyond this latency (default 1 s).
    pub max_latency: u64,
    pub max_iterations: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            observed: u64::MAX,
            max_latency: 1_000_000_000,
            max_iterations: 10_000,
        }
    }
}

/// Seed 002 Theorem 8: the least positive L with L = l_if + I(L).
pub fn fixed_point(c: Characterisation, l_if: u64, sources: &[Source], limits: Limits) -> Bound {
    if c == Characterisation::Sporadic {
        // A source whose oWCET reaches its oMIAT (or a total utilisation
        // of 1) makes the right-hand side grow at least as fast as L.
        let mut util = 0f64;
        for s in sources {
            if let Some(t) = omiat(&s.occurrences) {
                let w = owcet(&s.occurrences);
                if w >= t {
                    return Bound::DidNotConverge {
                        last: l_if,
                        iterations: 0,
                        reason: format!("oWCET {w} ns >= oMIAT {t} ns for {}", s.name),
                    };
                }
                util += w as f64 / t as f64;
            }
        }
        if util >= 1.0 {
            return Bound::DidNotConverge {
                last: l_if,
                iterations: 0,
                reason: format!("the interrupts' utilisation Σ oWCET/oMIAT = {util:.3} >= 1"),
            };
        }
    }
    if matches!(
        c,
        Characterisation::NoInterrupts
            | Characterisation::WorstSingle
            | Characterisation::SingleWorstOfEach
    ) {
        // I does not depend on L: one step.
        let (i, per) = interference(c, sources, l_if);
        return Bound::Converged {
            latency: l_if.saturating_add(i),
            iterations: 1,
            interference: per,
        };
    }
    // Theorem 8 asks for the least *positive* value.
    let mut l = l_if.max(1);
    for it in 1..=limits.max_iterations {
        let (i, per) = interference(c, sources, l);
        let next = l_if.saturating_add(i).max(1);
        if next == l {
            return Bound::Converged {
                latency: l,
                iterations: it,
                interference: per,
            };
        }
        let windowed = matches!(
            c,
            Characterisation::SlidingWindow | Characterisation::SlidingWindowOwcet
        );
        if windowed && next > limits.observed {
            return Bound::DidNotConverge {
                last: next,
                iterations: it,
                reason: format!(
                    "the window ({next} ns) outgrew the observed interval ({} ns)",
                    limits.observed
                ),
            };
        }
        if next > limits.max_latency {
            return Bound::DidNotConverge {
                last: next,
                iterations: it,
                reason: format!("L exceeded {} ns", limits.max_latency),
            };
        }
        l = next;
    }
    Bound::DidNotConverge {
        last: l,
        iterations: limits.max_iterations,
        reason: "iteration limit reached".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(kind: SourceKind, name: &str, occ: &[(u64, u64)]) -> Source {
        Source {
            kind,
            name: name.into(),
            occurrences: occ
                .iter()
                .map(|&(start, duration)| Occurrence {
                    start,
                    duration,
                    task: 0,
                })
                .collect(),
        }
    }

    /// IRQ A: arrivals 0, 100, 1000 with costs 10, 30, 20 (oWCET 30,
    /// oMIAT 100). IRQ B: arrivals 50, 550 with costs 5, 40 (oWCET 40,
    /// oMIAT 500). NMI: arrival 300, cost 7.
    fn sources() -> Vec<Source> {
        vec![
            src(SourceKind::Irq, "A", &[(0, 10), (100, 30), (1000, 20)]),
            src(SourceKind::Irq, "B", &[(50, 5), (550, 40)]),
            src(SourceKind::Nmi, "nmi", &[(300, 7)]),
        ]
    }

    fn lim() -> Limits {
        Limits {
            observed: 2000,
            ..Limits::default()
        }
    }

    #[test]
    fn no_interrupts_is_l_if() {
        // L = L_IF = 100.
        assert_eq!(
            fixed_point(Characterisation::NoInterrupts, 100, &sources(), lim()).latency(),
            Some(100)
        );
    }

    #[test]
    fn worst_single_takes_one_irq_and_one_nmi() {
        // worst IRQ is B's 40, the NMI 7: L = 100 + 40 + 7 = 147.
        let b = fixed_point(Characterisation::WorstSingle, 100, &sources(), lim());
        assert_eq!(b.latency(), Some(147));
        if let Bound::Converged { interference, .. } = b {
            assert_eq!(interference, vec![0, 40, 7]);
        }
    }

    #[test]
    fn single_worst_of_each_sums_every_source() {
        // 30 (A) + 40 (B) + 7 (NMI) = 77: L = 177.
        assert_eq!(
            fixed_point(Characterisation::SingleWorstOfEach, 100, &sources(), lim()).latency(),
            Some(177)
        );
    }

    #[test]
    fn nmis_count() {
        // Without the NMI source the worst-single bound drops by 7: the
        // NMI is not silently dropped.
        let mut s = sources();
        s.pop();
        assert_eq!(
            fixed_point(Characterisation::WorstSingle, 100, &s, lim()).latency(),
            Some(140)
        );
        assert_eq!(
            fixed_point(Characterisation::SingleWorstOfEach, 100, &s, lim()).latency(),
            Some(170)
        );
    }

    #[test]
    fn sporadic_converges_when_owcet_below_omiat() {
        // A: C=30, T=100; B: C=40, T=500; NMI seen once: 7 once.
        // L0 = 100: I = ceil(100/100)*30 + ceil(100/500)*40 + 7 = 77 -> 177
        // L = 177: ceil(1.77)=2 -> 60 + 40 + 7 = 107 -> 207
        // L = 207: ceil(2.07)=3 -> 90 + 40 + 7 = 137 -> 237
        // L = 237: 3 -> 90 + 40 + 7 -> 237. Fixed point 237.
        let b = fixed_point(Characterisation::Sporadic, 100, &sources(), lim());
        assert_eq!(b.latency(), Some(237), "{b:?}");
    }

    #[test]
    fn sporadic_does_not_converge_when_owcet_exceeds_omiat() {
        // Seed 002 Figure 24: IRQ 35 oWCET 12913 > oMIAT 1843.
        let s = vec![src(
            SourceKind::Irq,
            "35",
            &[(0, 12_913), (1_843, 100), (10_000, 50)],
        )];
        match fixed_point(Characterisation::Sporadic, 42_212, &s, Limits::default()) {
            Bound::DidNotConverge { reason, .. } => assert!(
                reason.contains("oWCET 12913 ns >= oMIAT 1843 ns"),
                "{reason}"
            ),
            b => panic!("converged: {b:?}"),
        }
        // Utilisation 0.6 + 0.5 >= 1 without any single source failing.
        let s = vec![
            src(SourceKind::Irq, "x", &[(0, 60), (100, 60)]),
            src(SourceKind::Irq, "y", &[(0, 50), (100, 50)]),
        ];
        assert!(matches!(
            fixed_point(Characterisation::Sporadic, 10, &s, Limits::default()),
            Bound::DidNotConverge { .. }
        ));
    }

    #[test]
    fn sliding_window_converges() {
        // L0 = 100: windows of length 100 ([s, s+100)):
        //   A: [0,100) holds 0 -> 10; [100,200) 30; [1000,..) 20 -> 30
        //   B: 5 or 40 -> 40; NMI 7. I = 77 -> L = 177.
        // L = 177: A [0,177) holds 0 and 100 -> 40; B 40; NMI 7 -> 87 -> 187.
        // L = 187: same windows -> 87 -> 187. Converged at 187.
        let b = fixed_point(Characterisation::SlidingWindow, 100, &sources(), lim());
        assert_eq!(b.latency(), Some(187), "{b:?}");
        if let Bound::Converged {
            interference,
            iterations,
            ..
        } = b
        {
            assert_eq!(interference, vec![40, 40, 7]);
            assert_eq!(iterations, 3);
        }
    }

    #[test]
    fn sliding_window_with_owcet() {
        // Each arrival costs its source's oWCET (A 30, B 40, NMI 7).
        // L0 = 100: A at most 1 arrival in [s,s+100) -> 30; B 40; NMI 7 = 77 -> 177
        // L = 177: A 2 arrivals (0,100) -> 60; B 40; 7 -> 107 -> 207
        // L = 207: A still 2 -> 207. Converged at 207.
        assert_eq!(
            fixed_point(Characterisation::SlidingWindowOwcet, 100, &sources(), lim()).latency(),
            Some(207)
        );
    }

    #[test]
    fn sliding_window_longer_than_the_trace_is_not_a_bound() {
        // Observed for 150 ns only: the window reaches 177 > 150.
        let b = fixed_point(
            Characterisation::SlidingWindow,
            100,
            &sources(),
            Limits {
                observed: 150,
                ..Limits::default()
            },
        );
        assert!(
            matches!(b, Bound::DidNotConverge { last: 177, .. }),
            "{b:?}"
        );
    }

    #[test]
    fn window_counts_arrivals_in_half_open_windows() {
        let occ = &sources()[0].occurrences;
        // [0,100) holds only the arrival at 0; [0,101) holds 0 and 100.
        assert_eq!(sliding_window_interference(occ, 100, None), 30);
        assert_eq!(sliding_window_interference(occ, 101, None), 40);
        assert_eq!(sliding_window_interference(occ, 1001, None), 60);
        assert_eq!(sliding_window_interference(occ, 101, Some(30)), 60);
        assert_eq!(sliding_window_interference(occ, 0, None), 0);
        assert_eq!(sliding_window_interference(&[], 10, None), 0);
    }

    #[test]
    fn huge_values_saturate_instead_of_overflowing() {
        let s = vec![src(SourceKind::Irq, "x", &[(0, u64::MAX), (1, u64::MAX)])];
        assert_eq!(
            sliding_window_interference(&s[0].occurrences, 10, None),
            u64::MAX
        );
        let b = fixed_point(
            Characterisation::SlidingWindow,
            u64::MAX,
            &s,
            Limits::default(),
        );
        assert!(matches!(
            b,
            Bound::DidNotConverge { .. } | Bound::Converged { .. }
        ));
        assert_eq!(
            fixed_point(
                Characterisation::SingleWorstOfEach,
                5,
                &s,
                Limits::default()
            )
            .latency(),
            Some(u64::MAX)
        );
    }

    #[test]
    fn least_positive_value_with_zero_l_if() {
        // L_IF = 0: start at 1 ns; a 1 ns window holds one arrival: A 30,
        // B 40, NMI 7 -> 77; [s, s+77) still one of each -> 77.
        assert_eq!(
            fixed_point(Characterisation::SlidingWindow, 0, &sources(), lim()).latency(),
            Some(77)
        );
        assert_eq!(
            fixed_point(Characterisation::NoInterrupts, 0, &sources(), lim()).latency(),
            Some(0)
        );
    }
}
