"""Verdicts of the analyses, as Python enums (their values are the strings of
the JSON report, so ``Verdict("schedulable")`` works)."""

from __future__ import annotations

import enum

__all__ = ["TaskVerdict", "Verdict"]


class Verdict(str, enum.Enum):
    """The overall answer of :meth:`rtgpu.Workload.analyze`."""

    SCHEDULABLE = "schedulable"
    """Every deadline holds (or, for a soft report, every tardiness is bounded)."""
    NOT_SCHEDULABLE = "not-schedulable"
    """Some task misses its deadline, cannot be placed, or has unbounded tardiness."""
    NOT_ANALYSED = "not-analysed"
    """The workload has parts this version cannot analyse (GPU-using tasks)."""

    def __str__(self) -> str:
        return self.value


class TaskVerdict(str, enum.Enum):
    """The outcome of one task in a :class:`rtgpu.Report`."""

    MEETS_DEADLINE = "meets-deadline"
    MEETS_DEADLINE_IF = "meets-deadline-if"
    """A bound that holds if the failing tasks it names meet their deadlines."""
    MISSES_DEADLINE = "misses-deadline"
    BOUNDED_TARDINESS = "bounded-tardiness"
    UNBOUNDED_TARDINESS = "unbounded-tardiness"
    UNPLACED = "unplaced"
    """Partitioning could not place (all of) the task."""
    NOT_ANALYSED = "not-analysed"

    def __str__(self) -> str:
        return self.value
