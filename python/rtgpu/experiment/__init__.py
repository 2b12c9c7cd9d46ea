"""Schedulability studies at scale, locally or on a Dask cluster.

A study file (TOML) names a task set generator, the axes to sweep, the
analyses and their metrics (schedulable ratio, breakdown utilization), and the
plots. :func:`run` computes every point on Dask (a LocalCluster of worker
processes by default, or any scheduler address), appends tidy rows to
``results.csv`` as points finish, resumes an interrupted study without
recomputing finished points, and writes ``summary.csv`` (with 95 %
intervals), the tidy ``sets.csv`` (one row per task set, analysis and
metric; ``sets.parquet`` with pyarrow) and the figures (PNG and SVG)::

    import rtgpu.experiment as ex

    study = ex.load_study("studies/seed003-breakdown.toml")
    result = ex.run(study, workers=2)
    print(result.output, result.sets_per_second)
    df = result.results().to_pandas()      # or ex.load_results(result.output)

Also the command ``rtgpu experiment STUDY`` and ``python -m rtgpu.experiment``.
Guide: ``docs/guide/experiment.md``.
"""

from __future__ import annotations

from .. import _rtgpu
from .._rtgpu import GpuUse, Task
from .lock import OutputLock, StudyWarning
from .registry import ANALYSES, METRICS, Analysis, Job, Outcome, register
from .results import Results, load_results
from .runner import RunResult, compute_point, run
from .study import Plot, Point, Study, StudyError, load_study, parse_study

__all__ = [
    "ANALYSES",
    "METRICS",
    "Analysis",
    "GpuUse",
    "Job",
    "Outcome",
    "OutputLock",
    "Plot",
    "Point",
    "Results",
    "RunResult",
    "Study",
    "StudyError",
    "StudyWarning",
    "compute_point",
    "generate",
    "load_results",
    "load_study",
    "parse_study",
    "register",
    "run",
    "set_seed",
]


def generate(spec: str, seed: int) -> list[tuple[Task, GpuUse | None]]:
    """One task set of a generator spec (the JSON of a study's
    ``[generator]`` table, see :meth:`Study.generator_spec`): per task, the
    task (C includes the GPU part) and its GPU use or None."""
    return _rtgpu.experiment_generate(spec, seed)


def set_seed(point_seed: int, index: int) -> int:
    """The seed of set ``index`` of a point seeded ``point_seed``: what every
    analysis uses, so all see the same sets."""
    return _rtgpu.experiment_set_seed(point_seed, index)
