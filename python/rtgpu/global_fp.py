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
from ._rtgpu import Task

__all__ = ["clustered_response_times", "is_schedulable", "response_times"]

GlobalOrder = Literal["dm", "rm", "given"]


def response_times(tasks: Iterable[Task], m: int, order: GlobalOrder = "dm") -> list[int | None]:
    """Response-time bounds (ns) under global FP on ``m`` cores, with
    priorities by ``order`` (``"given"``: the list order, highest first)."""
    return _rtgpu.global_fp_response_times(list(tasks), m, order)


def is_schedulable(tasks: Iterable[Task], m: int, order: GlobalOrder = "dm") -> bool:
    """Whether every task has a response-time bound within its deadline."""
    return all(r is not None for r in response_times(tasks, m, order))


def clustered_response_times(
    clusters: Iterable[tuple[int, Iterable[Task]]], order: GlobalOrder = "dm"
) -> list[list[int | None]]:
    """C-FP: :func:`response_times` on each ``(m, tasks)`` cluster."""
    return _rtgpu.global_fp_clustered_response_times([(m, list(ts)) for m, ts in clusters], order)
