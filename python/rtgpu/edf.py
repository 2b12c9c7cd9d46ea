"""Global and clustered EDF on identical processors.

- :func:`gedf_tardiness`: Devi & Anderson's bounded tardiness under G-EDF
  (soft real time; seed 000 App. B, Eqs. 4-5), exact rational arithmetic,
  bounds rounded up to whole nanoseconds.
- :func:`cedf_tardiness`: the same test per cluster (C-EDF).
- :func:`density_test`: hard deadlines under G-EDF (Goossens, Funk & Baruah
  2003, density form).

Tasks with release jitter or blocking are outside the theorem: the result is
then not bounded and says why (inflate the execution time first).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from . import _rtgpu
from ._args import cores_arg
from ._rtgpu import EdfResult, Task, TaskTardiness

__all__ = ["EdfResult", "TaskTardiness", "cedf_tardiness", "density_test", "gedf_tardiness"]

BoundForm = Literal["lambda", "simple"]


def gedf_tardiness(
    tasks: Iterable[Task],
    cores: int | None = None,
    bound: BoundForm = "lambda",
    *,
    m: int | None = None,
) -> EdfResult:
    """Tardiness bounds of ``tasks`` under preemptive G-EDF on ``cores``
    cores (``m=`` as the papers write it is accepted too).

    ``bound="lambda"`` (default) evaluates Devi & Anderson's Λ form, the
    tighter one; ``"simple"`` the closed form quoted in Linux's
    ``sched-deadline`` documentation. ``result.tasks[i]`` belongs to
    ``tasks[i]``.
    """
    n = cores_arg(cores, m, "gedf_tardiness")
    return _rtgpu.edf_gedf_tardiness(list(tasks), n, bound)


def cedf_tardiness(clusters: Iterable[tuple[int, Iterable[Task]]]) -> list[EdfResult]:
    """C-EDF: :func:`gedf_tardiness` on each ``(m, tasks)`` cluster."""
    return _rtgpu.edf_cedf_tardiness([(m, list(ts)) for m, ts in clusters])


def density_test(tasks: Iterable[Task], cores: int | None = None, *, m: int | None = None) -> bool:
    """Hard deadlines under G-EDF (priority by absolute deadline) on m =
    ``cores`` cores: sum of densities <= m - (m - 1) * max density. ``True``
    means every deadline holds; ``False`` means "not shown"."""
    return _rtgpu.edf_density_test(list(tasks), cores_arg(cores, m, "density_test"))
