"""Confidence intervals of a study's estimates (summary and figures).

- A schedulable ratio is a binomial proportion: ``k`` of ``n`` sets accepted.
  Its interval is Wilson's score interval (E. B. Wilson, "Probable inference,
  the law of succession, and statistical inference", JASA 22, 1927), which,
  unlike the normal approximation p ± z·sqrt(p(1-p)/n), stays inside [0, 1]
  and does not collapse to a point at k = 0 or k = n, where acceptance
  studies spend much of their range.
- A mean of per-set values (breakdown utilization, blocking) gets the normal
  interval mean ± z·s/sqrt(n), s the sample standard deviation: the sets of
  a point are independent draws and studies use hundreds of them, where the
  t and normal quantiles agree to within 1 % (n ≥ 100).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["Z95", "mean_ci", "wilson"]

Z95 = 1.959963984540054
"""The standard normal quantile of 0.975: two-sided 95 % intervals."""


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of ``k`` successes in ``n`` trials; ``(nan,
    nan)`` for n = 0."""
    if n <= 0:
        return (math.nan, math.nan)
    if not 0 <= k <= n:
        raise ValueError(f"{k} successes in {n} trials")
    p = k / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # Clamp rounding: the interval always contains p and lies in [0, 1].
    return (max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half)))


def mean_ci(values: Sequence[float], z: float = Z95) -> tuple[float, float]:
    """The mean of ``values`` and the half-width of its interval (0 for a
    single value, nan for none)."""
    n = len(values)
    if n == 0:
        return (math.nan, math.nan)
    mean = math.fsum(values) / n
    if n == 1:
        return (mean, 0.0)
    var = math.fsum((x - mean) ** 2 for x in values) / (n - 1)
    return (mean, z * math.sqrt(var / n))
