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

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Union

from .. import _rtgpu
from .values import resolve

__all__ = ["ANALYSES", "METRICS", "PER_SET", "SAMPLES", "Analysis", "Job", "Outcome", "register"]

METRICS = ("ratio", "breakdown", "blocking")
"""Metrics in column order: ``ratio`` counts the sets an analysis accepts
(the schedulable ratio is their share); ``breakdown`` records each set's
breakdown utilization (Lehoczky, Sha & Ding: the utilization at which the set,
with every C scaled by one factor, stops being schedulable); ``blocking``
records each set's largest GPUSync blocking bound in ms (seed 004 App. A)."""

PER_SET = {"ratio": "accepted", "breakdown": "breakdown", "blocking": "blocking"}
"""Each metric's per-set column: ``accepted`` (1 where the analysis accepted
the set, else 0; ``ratio``'s per-set outcome, its count is ``schedulable``),
``breakdown``, ``blocking``."""

SAMPLES = tuple(PER_SET.values())
"""The per-set columns, in column order (in ``results.csv`` one column each,
values separated by spaces, in set order; in ``sets.csv`` one row per set
and metric)."""

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
    samples: Mapping[str, list[float]] = field(default_factory=dict)
    """Per column of :data:`SAMPLES` (``accepted``, ``breakdown``,
    ``blocking``), one value per set in set order; an analysis that only
    counts its accepted sets may leave ``accepted`` out."""


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
    """A test run in Rust over the whole batch (crates/analysis experiment.rs)."""

    def run(job: Job, metrics: tuple[str, ...]) -> Outcome:
        setup = json.dumps(resolve(dict(job.params), job.params, "parameters"))
        b = _rtgpu.experiment_batch(
            job.spec,
            job.seed,
            job.first,
            job.sets,
            setup,
            [name],
            "ratio" in metrics,
            "breakdown" in metrics,
            "blocking" in metrics,
        )
        samples = {
            "accepted": [1.0 if a else 0.0 for a in b.accepted[0]],
            "breakdown": b.breakdown[0],
            "blocking": b.blocking[0],
        }
        return Outcome(
            sets=b.sets,
            utilization_sum=b.utilization_sum,
            effective_utilization_sum=b.effective_utilization_sum,
            tasks_sum=b.tasks_sum,
            schedulable=b.schedulable[0] if "ratio" in metrics else None,
            samples={PER_SET[m]: samples[PER_SET[m]] for m in metrics},
        )

    return run


_CPU = ("ratio", "breakdown")
_NATIVE: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    # name: (metrics, required parameters, description)
    "pdms-hpts-ds": (_CPU, ("cores",), "P-FP, task splitting by decreasing size (seed 003 Alg. 2)"),
    "pdms-hpts": (_CPU, ("cores",), "P-FP, task splitting, decreasing utilization (seed 003)"),
    "first-fit": (_CPU, ("cores",), "P-FP, first fit by decreasing utilization, exact RTA"),
    "best-fit": (_CPU, ("cores",), "P-FP, best fit by decreasing utilization, exact RTA"),
    "worst-fit": (_CPU, ("cores",), "P-FP, worst fit by decreasing utilization, exact RTA"),
    "next-fit": (_CPU, ("cores",), "P-FP, next fit by decreasing utilization, exact RTA"),
    "gedf": (_CPU, ("cores",), "G-EDF bounded tardiness (seed 000 Eqs. 4-5)"),
    "gfp": (_CPU, ("cores",), "global FP (DM) response-time bounds"),
    "fp": (_CPU, ("cores",), "uniprocessor exact FP RTA under DM (cores is ignored)"),
    "overhead-slih": (
        ("ratio",),
        ("cores", "clusters", "gpus"),
        "seed 000 App. B overhead-aware C-EDF, SLIH interrupt handling",
    ),
    "overhead-klmirqd": (
        ("ratio",),
        ("cores", "clusters", "gpus"),
        "seed 000 App. B overhead-aware C-EDF, klmirqd interrupt threads",
    ),
    "overhead-pai": (
        ("ratio",),
        ("cores", "clusters", "gpus"),
        "seed 000 App. B overhead-aware C-EDF, PAI",
    ),
    "gpusync": (
        ("blocking",),
        ("cores", "gpus", "rho"),
        "seed 004 App. A GPUSync blocking bound (Theorem 3), largest per set",
    ),
}

for _name in _rtgpu.experiment_test_names():
    _metrics, _params, _doc = _NATIVE[_name]
    register(Analysis(_name, _metrics, _params, _native(_name), _doc))
