"""rtgpu: real-time analysis of CPU and GPU workloads on Linux.

A Python front to the Rust core of rtgpu. Times are integer nanoseconds
everywhere; arguments also accept strings with units (``"2 ms"``) and
:class:`datetime.timedelta`. Results are typed, immutable objects.

Workloads (the TOML file that ``rtgpu analyze`` reads)::

    w = rtgpu.load_workload("examples/quickstart.toml")
    report = w.analyze()
    report.verdict            # Verdict.SCHEDULABLE
    report.tasks[0].response_time
    sim = w.simulate(duration="2 s", seed=1)  # what ``rtgpu simulate`` runs
    sim.tasks[0].max_response, sim.tasks[0].bound

Task sets built in code::

    ts = [rtgpu.Task("1 ms", "4 ms"), rtgpu.Task("2 ms", "6 ms")]
    rtgpu.fp.response_times(ts)               # exact RTA, DM priorities
    rtgpu.partition(ts, cores=2)              # PDMS_HPTS_DS task splitting
    rtgpu.partition(ts, 2, servers=[("100 us", "1 ms")])  # a server on every core
    rtgpu.edf.gedf_tardiness(ts, m=2)         # G-EDF tardiness bounds

Modules: :mod:`rtgpu.fp` (uniprocessor fixed priority), :mod:`rtgpu.edf`,
:mod:`rtgpu.global_fp`, :mod:`rtgpu.bounds` (seed 003 bounds),
:mod:`rtgpu.generate` (random task sets), :mod:`rtgpu.gpu_analysis`
(k-FMLP / GPUSync blocking, overhead-aware tests), :mod:`rtgpu.runtime`
(the GPU arbiter for your own threads: tokens and engine locks in ``with``
blocks).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Literal

from . import _rtgpu, bounds, edf, fp, generate, global_fp, gpu_analysis, runtime
from ._enums import TaskVerdict, Verdict
from ._errors import Diagnostic, WorkloadError
from ._rtgpu import (
    BoundCheck,
    Charges,
    Cluster,
    ClusterReport,
    CoreReport,
    GpuReport,
    GpuWork,
    Partition,
    Piece,
    PieceReport,
    Report,
    SimResult,
    SimTaskStats,
    Task,
    TaskReport,
    Unplaced,
    UtilizationSeries,
    Workload,
    WorkloadTask,
)
from ._typing import Duration, KlmirqdMode, PriorityOrder, ServerParams

__version__: str = _rtgpu.__version__

__all__ = [
    "BoundCheck",
    "Charges",
    "Cluster",
    "ClusterReport",
    "CoreReport",
    "Diagnostic",
    "Duration",
    "GpuReport",
    "GpuWork",
    "KlmirqdMode",
    "Partition",
    "Piece",
    "PieceReport",
    "PriorityOrder",
    "Report",
    "ServerParams",
    "SimResult",
    "SimTaskStats",
    "Task",
    "TaskReport",
    "TaskVerdict",
    "Unplaced",
    "UtilizationSeries",
    "Verdict",
    "Workload",
    "WorkloadError",
    "WorkloadTask",
    "__version__",
    "bounds",
    "edf",
    "format_duration",
    "fp",
    "generate",
    "global_fp",
    "gpu_analysis",
    "json_schema",
    "load_workload",
    "parse_duration",
    "parse_workload",
    "partition",
    "runtime",
]

Heuristic = Literal["pdms-hpts-ds", "pdms-hpts", "first-fit", "best-fit", "worst-fit", "next-fit"]
TaskOrder = Literal["decreasing-utilization", "decreasing-size", "given"]
CorePriority = Literal["dm", "rm", "audsley"]


def load_workload(path: str | os.PathLike[str]) -> Workload:
    """Read and validate a workload file.

    Raises :class:`WorkloadError` (a :class:`ValueError`) listing every
    problem with its file, line, column and field, or :class:`OSError`
    (e.g. :class:`FileNotFoundError`) if the file cannot be read.
    """
    return _rtgpu.load_workload(path)


def parse_workload(text: str, file_name: str = "<string>") -> Workload:
    """Validate a workload from TOML text; ``file_name`` names it in error
    messages and, unless the text sets ``name``, gives its name.

    Raises :class:`WorkloadError` listing every problem found.
    """
    return _rtgpu.parse_workload(text, file_name)


def json_schema() -> str:
    """The JSON Schema of the workload file format, for editors."""
    return _rtgpu.json_schema()


def parse_duration(text: str) -> int:
    """Parse a duration such as ``"2.5 ms"`` into integer nanoseconds, exactly
    (``"1.5 ns"`` is an error, not a rounding). Raises :class:`ValueError`."""
    return _rtgpu.parse_duration(text)


def format_duration(ns: int) -> str:
    """Format nanoseconds in the largest unit that keeps them exact
    (``2000000`` -> ``"2 ms"``); :func:`parse_duration` gives them back."""
    return _rtgpu.format_duration(ns)


def partition(
    tasks: Iterable[Task],
    cores: int,
    heuristic: Heuristic = "pdms-hpts-ds",
    *,
    order: TaskOrder | None = None,
    priority: CorePriority | None = None,
    servers: Iterable[ServerParams] | None = None,
) -> Partition:
    """Partition ``tasks`` onto ``cores`` cores, each core checked by exact
    fixed-priority response-time analysis.

    ``heuristic``:

    - ``"pdms-hpts-ds"`` (default): PDMS_HPTS_DS task splitting, seed 003
      Algorithm 2 (tasks in decreasing size, deadline-monotonic priorities);
    - ``"pdms-hpts"``: PDMS_HPTS with tasks taken in ``order`` (default
      decreasing utilization);
    - ``"first-fit"``, ``"best-fit"``, ``"worst-fit"``, ``"next-fit"``: bin
      packing without splitting, tasks in ``order`` (default decreasing
      utilization), priorities on each core by ``priority`` (default
      ``"dm"``).

    ``servers``: bandwidth servers ``(runtime, period)`` (durations, e.g.
    ``("200 us", "2 ms")``: klmirqd's independent servers, CPU
    reservations) charged on every core above every piece, as the workload
    analysis charges them: placement, split budgets and response times all
    account for them. Each needs ``0 < runtime <= period``, else
    :class:`ValueError`. ``None`` or ``[]`` (default): no server, the same
    result as without the argument.

    Pieces and placements refer to tasks by their position in ``tasks``.
    """
    return _rtgpu.partition(list(tasks), cores, heuristic, order, priority, servers)
