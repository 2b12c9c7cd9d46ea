"""Seeded, reproducible random task sets (the same seed gives the same set on
every platform: the generator is SplitMix64)."""

from __future__ import annotations

from . import _rtgpu
from ._rtgpu import Task
from ._typing import Duration

__all__ = ["seed003_tasks", "uunifast", "uunifast_tasks"]


def uunifast(n: int, utilization: float, seed: int = 0) -> list[float]:
    """UUniFast (Bini & Buttazzo 2005): ``n`` utilizations summing to
    ``utilization``, unbiased."""
    return _rtgpu.generate_uunifast(n, utilization, seed)


def uunifast_tasks(
    n: int,
    utilization: float,
    period_min: Duration,
    period_max: Duration,
    seed: int = 0,
) -> list[Task]:
    """``n`` implicit-deadline tasks with UUniFast utilizations summing to
    about ``utilization`` and periods log-uniform in
    [``period_min``, ``period_max``]; C = max(1, round(u*T)) ns; ids 0..n-1.

    >>> ts = uunifast_tasks(10, 0.8, "1 ms", "100 ms", seed=7)
    """
    return _rtgpu.generate_uunifast_tasks(n, utilization, period_min, period_max, seed)


def seed003_tasks(m: int, scale: Duration = 1, seed: int = 0) -> list[Task]:
    """Seed 003 §V.B task sets: T uniform in [100, 5000], C uniform in
    [0, 0.4 T] (at least 1 ns), implicit deadlines, tasks added until the
    total utilization exceeds ``m``. Paper time units are ``scale`` ns."""
    return _rtgpu.generate_seed003_tasks(m, scale, seed)
