"""GPU-aware bounds for sweeps: k-FMLP blocking (seed 000 App. A), GPUSync
blocking (seed 004 App. A), seed 000 App. B overhead accounting with the
overhead-aware C-EDF / C-RM test of seed 000 §VII, effective utilization,
and the vGPU reservation bound (rtgpu's own derivation, seed 001).

Times are integer nanoseconds. Pure functions of their arguments: safe to
call from Dask workers::

    from rtgpu import gpu_analysis as ga
    ga.kfmlp_blocking([3_000_000, 5_000_000, 7_000_000], k=2).exact
    ga.overhead_aware_test(
        [(2_000_000, 1_000_000, 20_000_000, 20_000_000, 1)] * 4,
        clusters=[(6, 4)], scheduler="c-edf", method="klmirqd",
    ).schedulable
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from . import _rtgpu
from ._rtgpu import GpuSetResult, GpuSyncBlocking, KfmlpBlocking

__all__ = [
    "GpuSetResult",
    "GpuSyncBlocking",
    "KfmlpBlocking",
    "copy_requests",
    "effective_utilization",
    "gpusync_best_rho",
    "gpusync_blocking",
    "kfmlp_blocking",
    "overhead_aware_test",
    "seed000_task_set",
    "vgpu_service_time",
]

CopyLocking = Literal["system-memory", "dgl", "nested"]
Method = Literal["slih", "klmirqd", "pai", "threads"]
Scheduler = Literal["c-edf", "c-rm"]
KfmlpBound = Literal["exact", "l-aware", "l-oblivious"]


def kfmlp_blocking(others: Iterable[int], k: int) -> KfmlpBlocking:
    """k-FMLP bounds for a request given the other tasks' critical-section
    lengths ``others`` (ns) and ``k`` resources: Theorem 1, Theorem 2 and
    the exact ILP of Eq. (3) (Theorem 1 when the instance is too large)."""
    return _rtgpu.kfmlp_blocking(list(others), k)


def gpusync_blocking(
    cpus: int,
    gpus: int,
    rho: int,
    copy_locking: CopyLocking,
    copy_requests: Iterable[int],
    exec_requests: Iterable[int],
    copy_max: int,
    exec_max: int,
    cpu_max: int,
) -> list[GpuSyncBlocking]:
    """Seed 004 Theorem 3 (token + engine blocking) and Lemma 5 (token hold
    time) for every task of one cluster: task i issues ``copy_requests[i]``
    copy-engine and ``exec_requests[i]`` execution-engine requests;
    ``copy_max``, ``exec_max``, ``cpu_max`` are L^C_max, L^E_max, L^P_max."""
    return _rtgpu.gpusync_blocking(
        cpus,
        gpus,
        rho,
        copy_locking,
        list(copy_requests),
        list(exec_requests),
        copy_max,
        exec_max,
        cpu_max,
    )


def gpusync_best_rho(
    cpus: int, gpus: int, copy_locking: CopyLocking, max_rho: int = 4
) -> tuple[int, int]:
    """The rho minimising ceil(m/(rho g)) N^C (seed 004 App. A Discussion)
    and that value."""
    return _rtgpu.gpusync_best_rho(cpus, gpus, copy_locking, max_rho)


def copy_requests(transfers: Iterable[int], chunk: int | None) -> int:
    """Copy-engine requests of a job: sum of ceil(size/chunk) over the
    non-empty transfers (one each when ``chunk`` is None)."""
    return _rtgpu.gpusync_copy_requests(list(transfers), chunk)


def overhead_aware_test(
    tasks: Iterable[tuple[int, int, int, int, int]],
    clusters: Iterable[tuple[int, int]],
    scheduler: Scheduler = "c-edf",
    method: Method = "klmirqd",
    base: Literal["table3", "zero"] = "table3",
    overheads: Mapping[str, int] | None = None,
    bound: KfmlpBound = "exact",
) -> GpuSetResult:
    """Seed 000 §VII's overhead-aware test. ``tasks`` are ``(cpu, gpu,
    period, deadline, interrupts)`` in ns (gpu = 0 for CPU-only tasks);
    ``clusters`` are ``(cpus, gpus)``. Tasks are spread by two-pass worst fit,
    GPU waits bounded by the k-FMLP per cluster, costs inflated by App. B
    Eqs. 6-24 for ``method`` (overheads: Table III or zero, with per-field
    overrides such as ``{"th": 20_000}``), then C-EDF bounded tardiness with
    the H_i fixed point, or C-RM response-time bounds."""
    return _rtgpu.overhead_aware_test(
        list(tasks),
        list(clusters),
        scheduler,
        method,
        base,
        dict(overheads) if overheads is not None else None,
        bound,
    )


def effective_utilization(tasks: Iterable[tuple[int, int, int]], speedup: float) -> float:
    """Sum of (cpu + R gpu)/period over ``(cpu, gpu, period)`` (seed 000 §VII)."""
    return _rtgpu.effective_utilization(list(tasks), speedup)


def vgpu_service_time(budget: int, period: int, work: int, other_op: int) -> int | None:
    """Longest time ``work`` ns of GPU work takes in a vGPU with ``budget``
    per ``period`` when other vGPUs' operations last at most ``other_op``
    (own derivation; None when the reservation guarantees no progress)."""
    return _rtgpu.vgpu_service_time(budget, period, work, other_op)


def seed000_task_set(
    seed: int,
    utilization: float,
    interrupts: int = 3,
    task_utilization: tuple[float, float] = (0.5, 0.9),
    gpu_fraction: tuple[float, float] = (0.5, 0.6),
    gpu_share: float = 0.75,
    period: tuple[int, int] = (15_000_000, 60_000_000),
) -> list[tuple[int, int, int, int, int]]:
    """A random task set as seed 000 §VII generates them (defaults: Fig. 5),
    ready for :func:`overhead_aware_test`; deterministic for a ``seed``."""
    return _rtgpu.seed000_task_set(
        seed, utilization, interrupts, task_utilization, gpu_fraction, gpu_share, period
    )
