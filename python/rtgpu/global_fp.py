"""Global and clustered fixed-priority scheduling on identical processors:
response-time bounds of Bertogna & Cirinei (RTSS 2007).

Results are per task in your list order; ``None`` means the analysis cannot
show the deadline holds (and, below the first such task in priority order,
every lower-priority task is ``None`` too: its interference is unknown).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from . import _rtgpu
from ._args import cores_arg
from ._rtgpu import Task

__all__ = ["clustered_response_times", "is_schedulable", "response_times"]

GlobalOrder = Literal["dm", "rm", "given"]


def response_times(
    tasks: Iterable[Task],
    cores: int | None = None,
    order: GlobalOrder = "dm",
    *,
    m: int | None = None,
) -> list[int | None]:
    """Response-time bounds (ns) under global FP on ``cores`` cores (or
    ``m=``), with priorities by ``order`` (``"given"``: the list order,
    highest first)."""
    n = cores_arg(cores, m, "response_times")
    return _rtgpu.global_fp_response_times(list(tasks), n, order)


def is_schedulable(
    tasks: Iterable[Task],
    cores: int | None = None,
    order: GlobalOrder = "dm",
    *,
    m: int | None = None,
) -> bool:
    """Whether every task has a response-time bound within its deadline."""
    n = cores_arg(cores, m, "is_schedulable")
    return all(r is not None for r in response_times(tasks, n, order))


def clustered_response_times(
    clusters: Iterable[tuple[int, Iterable[Task]]], order: GlobalOrder = "dm"
) -> list[list[int | None]]:
    """C-FP: :func:`response_times` on each ``(m, tasks)`` cluster."""
    return _rtgpu.global_fp_clustered_response_times([(m, list(ts)) for m, ts in clusters], order)
