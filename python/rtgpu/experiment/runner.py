"""Running a study on Dask: points are submitted to a LocalCluster of
worker processes on this machine, or to any Dask scheduler, and their rows
are appended to ``results.csv`` as they finish."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import logging
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import stopping
from .lock import OutputLock
from .progress import Progress
from .registry import ANALYSES, PER_SET, Job
from .results import Results, ResultsFile, read_rows, write_sets, write_summary
from .study import Point, Study, StudyError, _fmt

__all__ = ["RunResult", "compute_point", "run"]


@dataclass(frozen=True)
class RunResult:
    """What one run did."""

    output: Path
    points: int
    computed: int
    resumed: int
    sets_computed: int
    seconds: float
    files: tuple[Path, ...]

    @property
    def sets_per_second(self) -> float:
        return self.sets_computed / self.seconds if self.seconds > 0 else 0.0

    def results(self) -> Results:
        """The study's tables (tidy rows, summary, pandas)."""
        return Results(self.output)


def compute_point(
    point: Point,
    spec: str,
    analyses: tuple[tuple[str, tuple[str, ...]], ...],
    axes: tuple[str, ...],
) -> list[dict[str, Any]]:
    """Runs every analysis of a study on one point; the rows to append.
    Runs on a Dask worker (a plain function of picklable values)."""
    params = point.params
    samples = [c for m, c in PER_SET.items() if any(m in ms for _, ms in analyses)]
    rows = []
    for name, metrics in analyses:
        start = time.perf_counter()
        job = Job(spec=spec, seed=point.seed, first=point.first, sets=point.sets, params=params)
        o = ANALYSES[name].run(job, metrics)
        n = max(o.sets, 1)
        row: dict[str, Any] = {"point": point.key, "chunk": point.chunk}
        row.update({a: _fmt(params[a]) for a in axes})
        row.update(
            analysis=name,
            sets=o.sets,
            tasks_mean=f"{o.tasks_sum / n:.6g}",
            utilization_mean=f"{o.utilization_sum / n:.6g}",
            effective_utilization_mean=f"{o.effective_utilization_sum / n:.6g}",
            schedulable="" if o.schedulable is None else o.schedulable,
            seconds=f"{time.perf_counter() - start:.4f}",
        )
        for m in samples:
            row[m] = " ".join(f"{x:.6g}" for x in o.samples.get(m, ()))
        rows.append(row)
    return rows


def _client(scheduler: str | None, workers: int | None, say: bool) -> tuple[Any, Any]:
    try:
        dist: Any = importlib.import_module("distributed")
    except ImportError:
        raise StudyError(
            "rtgpu experiment needs Dask: pip install 'dask[distributed]>=2023.1'"
        ) from None
    if scheduler:
        try:
            return dist.Client(scheduler, timeout="20s"), None
        except (OSError, TimeoutError) as e:
            raise StudyError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None
    n = workers or os.cpu_count() or 1
    # The dashboard needs bokeh; with it, on a free port, and said where.
    dashboard = ":0" if importlib.util.find_spec("bokeh") is not None else None
    if say:
        print(
            f"rtgpu experiment: starting a local Dask cluster of {n} worker process(es)...",
            file=sys.stderr,
            flush=True,
        )
    cluster = dist.LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        dashboard_address=dashboard,
        silence_logs=logging.ERROR,
    )
    if say:
        link = getattr(cluster, "dashboard_link", None) if dashboard else None
        print(
            "rtgpu experiment: cluster ready"
            + (f"; dashboard {link}" if link else " (no dashboard: pip install bokeh)"),
            file=sys.stderr,
            flush=True,
        )
    return dist.Client(cluster), cluster


def run(
    study: Study,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    client: Any = None,
    progress: bool = True,
    plots: bool = True,
    fresh: bool = False,
    on_point: Callable[[str, list[dict[str, Any]]], None] | None = None,
) -> RunResult:
    """Run ``study``: every point not already in ``results.csv`` is computed
    once and appended; then ``summary.csv``, the tidy ``sets.csv`` (and
    ``sets.parquet`` with pyarrow) and the plots are written.

    ``client``: an existing ``distributed.Client`` to use; otherwise one is
    made for ``scheduler`` (an address such as ``tcp://host:8786``) or for a
    new LocalCluster of ``workers`` processes (default: one per CPU).
    ``on_point(key, rows)`` is called after each point's rows are written.

    The output directory is locked for the run (:class:`OutputLock`): a
    second run on it raises :class:`StudyError` naming this one's pid.
    """
    with OutputLock(study.output):
        return _run_locked(
            study,
            scheduler=scheduler,
            workers=workers,
            client=client,
            progress=progress,
            plots=plots,
            fresh=fresh,
            on_point=on_point,
        )


def _run_locked(
    study: Study,
    *,
    scheduler: str | None,
    workers: int | None,
    client: Any,
    progress: bool,
    plots: bool,
    fresh: bool,
    on_point: Callable[[str, list[dict[str, Any]]], None] | None,
) -> RunResult:
    start = time.perf_counter()
    results = ResultsFile(study, fresh=fresh)
    points = list(study.points())
    todo = [p for p in points if p.key not in results.done]
    resumed = len(points) - len(todo)
    total_sets = sum(p.sets for p in points)
    done_sets = total_sets - sum(p.sets for p in todo)
    computed = 0
    cluster = None
    own_client = client is None
    try:
        if todo:
            stopping.check()
            if own_client:
                client, cluster = _client(scheduler, workers, say=progress)
                stopping.check()
            bar = Progress(total_sets, done_sets, study.name, enabled=progress)
            try:
                for rows, p in _stream(client, study, todo):
                    results.append(rows)
                    computed += 1
                    bar.update(p.sets)
                    if on_point is not None:
                        on_point(p.key, rows)
            finally:
                bar.close()
    finally:
        results.close()
        if own_client and client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    # A stop that came as the last point finished: said, as any other.
    stopping.check()
    rows = read_rows(results.path)
    files = [results.path, write_summary(study, rows), *write_sets(study, rows)]
    if plots and study.plots:
        from .plots import plot_study

        files += plot_study(study, rows)
    elapsed = time.perf_counter() - start
    return RunResult(
        output=study.output,
        points=len(points),
        computed=computed,
        resumed=resumed,
        sets_computed=sum(p.sets for p in todo) if todo else 0,
        seconds=elapsed,
        files=tuple(files),
    )


def _stream(client: Any, study: Study, todo: list[Point]) -> Iterator[tuple[list[Any], Point]]:
    """Submits points with a bounded window (a few per worker, so a study of
    millions of points does not flood the scheduler) and yields each point's
    rows as it finishes, in completion order."""
    as_completed: Any = importlib.import_module("distributed").as_completed
    nworkers = max(len(client.scheduler_info().get("workers", {})), 1)
    window = max(4 * nworkers, 8)
    pending = iter(todo)
    by_key: dict[str, Point] = {}

    def submit(p: Point) -> Any:
        spec = study.generator_spec(p.params)
        fut = client.submit(compute_point, p, spec, study.analyses, tuple(study.axes), pure=False)
        by_key[fut.key] = p
        return fut

    ac = as_completed([submit(p) for p in itertools.islice(pending, window)])
    for fut in _finished(ac):
        p = by_key.pop(fut.key)
        try:
            rows = fut.result()
        except Exception as e:
            for other in list(ac.futures):
                other.cancel()
            raise StudyError(f"point {p.key} failed: {type(e).__name__}: {e}") from e
        finally:
            fut.release()
        nxt = next(pending, None)
        if nxt is not None:
            ac.add(submit(nxt))
        yield rows, p


def _finished(ac: Any) -> Iterator[Any]:
    """``ac``'s futures as they finish, waking every 50 ms to act on a stop
    request (:func:`stopping.check`) between Dask calls, never inside one."""
    while not ac.is_empty():
        batch = ac.next_batch(block=False)
        if not batch:
            stopping.check()
            time.sleep(0.05)
            continue
        for fut in batch:
            yield fut
            stopping.check()
