"""Uniprocessor fixed-priority preemptive scheduling.

Exact response-time analysis with release jitter and blocking (Tindell, Burns
& Wellings 1994), priority assignment (DM, RM, Audsley's OPA), the Liu &
Layland and hyperbolic bounds, and the exact MaximalSplit of seed 003.

Every function takes a list of :class:`rtgpu.Task`. Results are per task in
*your* list order, whatever priority order is used: ``response_times(ts)[i]``
belongs to ``ts[i]``. ``None`` means "misses its deadline" (no bound below it).

>>> import rtgpu
>>> ts = [rtgpu.Task(1, 4), rtgpu.Task(2, 6), rtgpu.Task(3, 10)]
>>> rtgpu.fp.response_times(ts)
[1, 3, 10]
"""

from __future__ import annotations

from collections.abc import Iterable

from . import _rtgpu
from ._rtgpu import Task
from ._typing import Duration, PriorityOrder

__all__ = [
    "audsley_order",
    "dm_order",
    "hyperbolic_test",
    "is_schedulable",
    "liu_layland_bound",
    "liu_layland_test",
    "max_split",
    "response_time",
    "response_times",
    "rm_order",
]


def response_time(task: Task, higher_priority: Iterable[Task] = ()) -> int | None:
    """Exact worst-case response time (ns) of ``task`` below the tasks
    ``higher_priority``, or ``None`` if it misses its deadline."""
    return _rtgpu.fp_response_time(task, list(higher_priority))


def response_times(tasks: Iterable[Task], order: PriorityOrder = "dm") -> list[int | None]:
    """Exact response time (ns) of every task, ``None`` where the deadline is
    missed, in the order of ``tasks``.

    ``order`` picks the priorities: ``"dm"`` (deadline monotonic, the
    default), ``"rm"`` (rate monotonic), ``"audsley"`` (optimal assignment;
    if none is feasible the DM answer is returned, which then misses too) or
    ``"given"`` (``tasks`` is already in priority order, highest first).
    """
    return _rtgpu.fp_response_times(list(tasks), order)


def is_schedulable(tasks: Iterable[Task], order: PriorityOrder = "dm") -> bool:
    """Whether every task meets its deadline on one core under ``order``
    (with ``"audsley"``: whether *some* fixed-priority order is feasible)."""
    return _rtgpu.fp_is_schedulable(list(tasks), order)


def dm_order(tasks: Iterable[Task]) -> list[Task]:
    """The tasks in deadline-monotonic priority order (a new list; ties by
    period, then list position)."""
    return _rtgpu.fp_dm_order(list(tasks))


def rm_order(tasks: Iterable[Task]) -> list[Task]:
    """The tasks in rate-monotonic priority order (a new list; ties by
    deadline, then list position)."""
    return _rtgpu.fp_rm_order(list(tasks))


def audsley_order(tasks: Iterable[Task]) -> list[Task] | None:
    """A feasible priority order by Audsley's optimal assignment with exact
    RTA, highest priority first, or ``None`` if no fixed-priority order is
    feasible."""
    return _rtgpu.fp_audsley_order(list(tasks))


def max_split(
    tasks: Iterable[Task], period: Duration, deadline: Duration, cap: Duration
) -> int | None:
    """MaximalSplit (seed 003 §IV), exact: the largest C' in ``0..=cap`` (ns)
    such that a new highest-priority task (C', ``period``, ``deadline``) keeps
    every task of ``tasks`` (in priority order, highest first) schedulable;
    ``None`` if ``tasks`` is not schedulable on its own. C' never exceeds
    ``deadline``."""
    return _rtgpu.fp_max_split(list(tasks), period, deadline, cap)


def liu_layland_bound(n: int) -> float:
    """n(2^(1/n) - 1), the RM utilization bound for n implicit-deadline tasks
    (Liu & Layland 1973); 1.0 for n = 0."""
    return _rtgpu.fp_liu_layland_bound(n)


def liu_layland_test(tasks: Iterable[Task]) -> bool:
    """Sufficient RM test: total utilization <= :func:`liu_layland_bound`."""
    return _rtgpu.fp_liu_layland_test(list(tasks))


def hyperbolic_test(tasks: Iterable[Task]) -> bool:
    """Sufficient RM test: product of (U_i + 1) <= 2 (Bini, Buttazzo &
    Buttazzo 2003)."""
    return _rtgpu.fp_hyperbolic_test(list(tasks))
