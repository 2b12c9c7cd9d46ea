"""Utilization and size bounds of task splitting under partitioned
deadline-monotonic scheduling (seed 003: Lakshmanan, Rajkumar & Lehoczky,
ECRTS 2009).

The bound functions are real-valued formulas for reporting and plotting
(sizes are C/D, utilizations C/T, as floats). The two ``*_utilization_test``
functions are exact sufficient tests on lists of :class:`rtgpu.Task`:
``False`` means "not shown", not "unschedulable".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from . import _rtgpu
from ._args import cores_arg
from ._rtgpu import Task

__all__ = [
    "LIGHT_TASK_ALPHA",
    "PDMS_HPTS_BOUND_PAPER",
    "PDMS_HPTS_DS_BOUND_PAPER",
    "PDMS_HPTS_DS_LIGHT_BOUND_PAPER",
    "PDMS_HPTS_DS_MAX_R",
    "PDMS_HPTS_LAST_CORE_GAIN_PAPER",
    "RMS_BOUND",
    "dms_size_bound_given",
    "dms_size_bound_given_limit",
    "golden_section_min",
    "lambert_w0",
    "pdms_hpts_bound_with_penalty",
    "pdms_hpts_core_size_bound",
    "pdms_hpts_ds_core_size_bound",
    "pdms_hpts_ds_size_bound",
    "pdms_hpts_ds_size_bound_for",
    "pdms_hpts_ds_utilization_test",
    "pdms_hpts_fixed_point_size",
    "pdms_hpts_minimizing_share",
    "pdms_hpts_size_bound",
    "pdms_hpts_utilization_bound",
    "pdms_hpts_utilization_test",
    "sblw",
    "sblw_limit",
    "sblw_min",
    "scan_then_golden_min",
    "split_penalty",
    "split_penalty_max",
    "split_remainder_size",
    "split_total_size_max",
    "split_worst_first_size",
]

RMS_BOUND: float = _rtgpu.BOUNDS_RMS_BOUND
"""ln 2, the limit of the Liu & Layland bound (seed 003: 0.6931)."""
PDMS_HPTS_BOUND_PAPER: float = _rtgpu.BOUNDS_PDMS_HPTS_BOUND_PAPER
"""Published PDMS_HPTS per-core bound, seed 003 Theorem 6 (0.6003)."""
PDMS_HPTS_LAST_CORE_GAIN_PAPER: float = _rtgpu.BOUNDS_PDMS_HPTS_LAST_CORE_GAIN_PAPER
"""Published last-core gain of PDMS_HPTS: UB_m = 0.6003 + 0.0928/m."""
PDMS_HPTS_DS_BOUND_PAPER: float = _rtgpu.BOUNDS_PDMS_HPTS_DS_BOUND_PAPER
"""Published PDMS_HPTS_DS bound, seed 003 Theorem 7 (0.6547)."""
PDMS_HPTS_DS_LIGHT_BOUND_PAPER: float = _rtgpu.BOUNDS_PDMS_HPTS_DS_LIGHT_BOUND_PAPER
"""Published PDMS_HPTS_DS bound for light tasks (U <= sqrt(2) - 1), seed 003 §V.A (0.693)."""
LIGHT_TASK_ALPHA: float = _rtgpu.BOUNDS_LIGHT_TASK_ALPHA
"""sqrt(2) - 1, the light-task threshold of seed 003 §V.A."""
PDMS_HPTS_DS_MAX_R: int = _rtgpu.BOUNDS_PDMS_HPTS_DS_MAX_R
"""Largest r scanned by :func:`pdms_hpts_ds_size_bound`."""


def split_remainder_size(s: float, s_first: float) -> float:
    """S(τ'') = (S - S')/(1 - S'), seed 003 Lemma 4 (Eq. 6)."""
    return _rtgpu.bounds_split_remainder_size(s, s_first)


def split_total_size_max(s: float) -> float:
    """Largest S' + S'' over all split points, 2(1 - sqrt(1 - S)), seed 003 Lemma 4."""
    return _rtgpu.bounds_split_total_size_max(s)


def split_worst_first_size(s: float) -> float:
    """The first-piece size maximising S' + S'': 1 - sqrt(1 - S)."""
    return _rtgpu.bounds_split_worst_first_size(s)


def split_penalty(s: float, s_first: float) -> float:
    """Splitting penalty δ = S' + S'' - S of a given split, seed 003 Eq. 7."""
    return _rtgpu.bounds_split_penalty(s, s_first)


def split_penalty_max(s: float) -> float:
    """Largest splitting penalty for a task of size S, seed 003 Eq. 7."""
    return _rtgpu.bounds_split_penalty_max(s)


def pdms_hpts_bound_with_penalty(max_size: float, m: int) -> float:
    """PDMS_HPTS bound when every task has size <= ``max_size`` on ``m`` >= 1
    cores: ln 2 - δ + δ/m (seed 003 §IV.B)."""
    return _rtgpu.bounds_pdms_hpts_bound_with_penalty(max_size, m)


def dms_size_bound_given(s: float, r: int) -> float:
    """SB(CD,DMS|S|r) = r((2/(1+S))^(1/r) - 1) + S, seed 003 Lemma 5 (r >= 1)."""
    return _rtgpu.bounds_dms_size_bound_given(s, r)


def dms_size_bound_given_limit(s: float) -> float:
    """SB(CD,DMS|S) = ln(2/(1+S)) + S, the r -> infinity limit of Lemma 5."""
    return _rtgpu.bounds_dms_size_bound_given_limit(s)


def pdms_hpts_core_size_bound(x: float, s: float) -> float:
    """Per-core size bound of PDMS_HPTS after the split penalty, seed 003 Eq. 13."""
    return _rtgpu.bounds_pdms_hpts_core_size_bound(x, s)


def pdms_hpts_fixed_point_size(x: float) -> float:
    """Eq. 13 at its fixed point: S(x) = (1 - x) ln(2/(1+x)) + x, seed 003 Eq. 15."""
    return _rtgpu.bounds_pdms_hpts_fixed_point_size(x)


def lambert_w0(y: float) -> float:
    """Principal branch W0 of the Lambert W function (NaN below -1/e)."""
    return _rtgpu.bounds_lambert_w0(y)


def pdms_hpts_minimizing_share() -> float:
    """The minimising x = (2 - W(e²))/W(e²) of Theorem 6 (0.284401)."""
    return _rtgpu.bounds_pdms_hpts_minimizing_share()


def pdms_hpts_size_bound() -> float:
    """The derived PDMS_HPTS per-core bound, min over x of Eq. 15 (0.601307)."""
    return _rtgpu.bounds_pdms_hpts_size_bound()


def pdms_hpts_utilization_bound(m: int) -> float:
    """The published PDMS_HPTS bound per core for ``m`` >= 1 cores,
    0.6003 + 0.0928/m (seed 003 Theorem 6)."""
    return _rtgpu.bounds_pdms_hpts_utilization_bound(m)


def pdms_hpts_ds_core_size_bound(x: float, r: int, cap: float) -> float:
    """Per-core size bound of PDMS_HPTS_DS with ``r`` >= 1 tasks besides τ'
    (size ``x``), the reconstruction of seed 003 Theorem 7."""
    return _rtgpu.bounds_pdms_hpts_ds_core_size_bound(x, r, cap)


def pdms_hpts_ds_size_bound_for(r: int, cap: float) -> tuple[float, float]:
    """``(x, value)`` minimising :func:`pdms_hpts_ds_core_size_bound` over x in
    [0, ``cap``] for one ``r``: a point of seed 003 Fig. 2(a)."""
    return _rtgpu.bounds_pdms_hpts_ds_size_bound_for(r, cap)


def pdms_hpts_ds_size_bound() -> float:
    """The PDMS_HPTS_DS bound, seed 003 Theorem 7 (about 0.654700)."""
    return _rtgpu.bounds_pdms_hpts_ds_size_bound()


def sblw(x: float, r: int, alpha: float) -> float:
    """SBLW(CD,PDMS_HPTS_DS,alpha) for ``r`` >= 1 tasks besides τ', seed 003 §V.A."""
    return _rtgpu.bounds_sblw(x, r, alpha)


def sblw_limit(x: float) -> float:
    """The r -> infinity limit of :func:`sblw`: ln(2/(1+x)) + x/(1 - x)."""
    return _rtgpu.bounds_sblw_limit(x)


def sblw_min(alpha: float, max_r: int) -> tuple[int | None, float, float]:
    """``(r, x, value)`` minimising :func:`sblw` over x in [0, alpha] and
    r in 1..``max_r`` or infinity (``r`` is ``None`` for the limit)."""
    return _rtgpu.bounds_sblw_min(alpha, max_r)


def golden_section_min(
    f: Callable[[float], float], lo: float, hi: float, tol: float
) -> tuple[float, float]:
    """``(x, f(x))`` at the minimum of a unimodal ``f`` on [lo, hi], to an
    interval of width ``tol``. An exception raised by ``f`` is re-raised."""
    return _rtgpu.bounds_golden_section_min(f, lo, hi, tol)


def scan_then_golden_min(
    f: Callable[[float], float], lo: float, hi: float, samples: int = 512
) -> tuple[float, float]:
    """``(x, f(x))`` at the minimum of ``f`` on [lo, hi]: a scan over
    ``samples`` + 1 points, refined by golden-section search."""
    return _rtgpu.bounds_scan_then_golden_min(f, lo, hi, samples)


def pdms_hpts_utilization_test(
    tasks: Iterable[Task], cores: int | None = None, *, m: int | None = None
) -> bool:
    """Seed 003 Theorem 6 as an exact sufficient test for PDMS_HPTS on
    ``cores`` cores (or ``m=``)."""
    n = cores_arg(cores, m, "pdms_hpts_utilization_test")
    return _rtgpu.bounds_pdms_hpts_utilization_test(list(tasks), n)


def pdms_hpts_ds_utilization_test(
    tasks: Iterable[Task], cores: int | None = None, *, m: int | None = None
) -> bool:
    """Seed 003 Theorem 7 and §V.A as an exact sufficient test for
    PDMS_HPTS_DS on ``cores`` cores (or ``m=``)."""
    n = cores_arg(cores, m, "pdms_hpts_ds_utilization_test")
    return _rtgpu.bounds_pdms_hpts_ds_utilization_test(list(tasks), n)
