"""The analyses a study can name, and the metrics each computes.

An analysis is a function from one :class:`Job` (a generator spec, the
point's seed, a range of set indices and the point's parameters) to an
:class:`Outcome`. Task set k of a point is always drawn with
``rtgpu.experiment.set_seed(point_seed, k)``, so every analysis of a study
sees the same sets (paired comparisons), whichever process computes them.

Adding an analysis is one :func:`register` call, e.g. for an analysis that
decides one generated set at a time::

    def klmirqd(job: Job, metrics: tuple[str, ...]) -> Outcome:
        ok = 0
        for k in range(job.first, job.first + job.sets):
            tasks = rtgpu.experiment.generate(job.spec, set_seed(job.seed, k))
            ok += my_test(tasks, job.params["cores"])
        return Outcome(sets=job.sets, schedulable=ok, ...)

    register(Analysis("klmirqd", ("ratio",), ("cores",), klmirqd))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Union

from .. import _rtgpu

__all__ = ["ANALYSES", "METRICS", "Analysis", "Job", "Outcome", "register"]

METRICS = ("ratio", "breakdown")
"""Metrics in column order: ``ratio`` counts the sets an analysis accepts
(the schedulable ratio is their share); ``breakdown`` records each set's
breakdown utilization (Lehoczky, Sha & Ding: the utilization at which the set,
with every C scaled by one factor, stops being schedulable)."""

Param = Union[int, float, str, bool]


@dataclass(frozen=True)
class Job:
    """What an analysis gets for one point."""

    spec: str
    """The generator spec as JSON (``rtgpu.experiment.generate`` reads it)."""
    seed: int
    first: int
    sets: int
    params: Mapping[str, Param]


@dataclass(frozen=True)
class Outcome:
    """What an analysis returns for one point."""

    sets: int
    utilization_sum: float
    effective_utilization_sum: float
    tasks_sum: int
    schedulable: int | None = None
    breakdown: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Analysis:
    name: str
    metrics: tuple[str, ...]
    parameters: tuple[str, ...]
    run: Callable[[Job, tuple[str, ...]], Outcome]
    description: str = ""


ANALYSES: dict[str, Analysis] = {}


def register(analysis: Analysis) -> None:
    """Make ``analysis`` available to study files under its name."""
    bad = [m for m in analysis.metrics if m not in METRICS]
    if bad:
        raise ValueError(f"unknown metric(s) {bad}; known: {METRICS}")
    ANALYSES[analysis.name] = analysis


def _native(name: str) -> Callable[[Job, tuple[str, ...]], Outcome]:
    """A CPU schedulability test run in Rust over the whole batch."""

    def run(job: Job, metrics: tuple[str, ...]) -> Outcome:
        cores = job.params["cores"]
        if not isinstance(cores, int) or isinstance(cores, bool):
            raise ValueError(f"parameter cores must be an integer, got {cores!r}")
        b = _rtgpu.experiment_batch(
            job.spec,
            job.seed,
            job.first,
            job.sets,
            cores,
            [name],
            "ratio" in metrics,
            "breakdown" in metrics,
        )
        return Outcome(
            sets=b.sets,
            utilization_sum=b.utilization_sum,
            effective_utilization_sum=b.effective_utilization_sum,
            tasks_sum=b.tasks_sum,
            schedulable=b.schedulable[0] if "ratio" in metrics else None,
            breakdown=b.breakdown[0],
        )

    return run


_DESCRIPTIONS = {
    "pdms-hpts-ds": "partitioned DM, task splitting, decreasing size (seed 003 Alg. 2)",
    "pdms-hpts": "partitioned DM, task splitting, decreasing utilization (seed 003 Alg. 1)",
    "first-fit": "partitioned DM, first fit by decreasing utilization, exact RTA per core",
    "best-fit": "partitioned DM, best fit by decreasing utilization, exact RTA per core",
    "worst-fit": "partitioned DM, worst fit by decreasing utilization, exact RTA per core",
    "next-fit": "partitioned DM, next fit by decreasing utilization, exact RTA per core",
    "gedf": "G-EDF bounded tardiness (Devi & Anderson; seed 000 Eqs. 4-5)",
    "gfp": "global FP (DM) response-time bounds",
    "fp": "uniprocessor exact FP RTA under DM (cores is ignored)",
}

for _name in _rtgpu.experiment_test_names():
    register(
        Analysis(
            _name,
            METRICS,
            ("cores",),
            _native(_name),
            _DESCRIPTIONS.get(_name, ""),
        )
    )
