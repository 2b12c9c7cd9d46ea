//! Round axis ticks for the SVG charts of `rtgpu simulate --svg` and
//! `rtgpu latency report --svg`: one rule, so both read alike.

/// Tick values from 0 to at least `max`, 1, 2 or 5 × 10^k apart, at most 8
/// intervals; `max` ≤ 0 or not finite counts as 1.
pub fn ticks(max: f64) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let mag = 10f64.powf((max / 5.0).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| max / s <= 8.0)
        .unwrap_or(10.0 * mag);
    let n = (max / step).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// A tick label: at most three decimals, no trailing zeros.
pub fn label(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        assert_eq!(ticks(100.0), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let t = ticks(137.0);
        assert!(
            t.last().is_some_and(|&l| l >= 137.0) && t.len() <= 9,
            "{t:?}"
        );
        assert_eq!(ticks(0.0), ticks(1.0));
        assert_eq!(ticks(f64::NAN), ticks(1.0));
        assert_eq!(label(2.5), "2.5");
        assert_eq!(label(40.0), "40");
        assert_eq!(label(0.125), "0.125");
    }
}
