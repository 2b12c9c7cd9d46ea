"""Benchmark of ``rtgpu experiment``: task sets per second for a PDMS_HPTS_DS
schedulable-ratio curve, in this process without Dask (the reference) and on a
Dask LocalCluster of 1 and then 2 worker processes; the speed-up 1 -> 2
workers (goal >= 1.8x on two free cores).

    .venv/bin/python bench/python/experiment_bench.py [--sets N] [--json]

The study: m = 8 cores, normalised utilization U/m from 0.70 to 1.00 in steps
of 0.02 (16 points), UUniFast-Discard with n = 40 tasks, periods uniform in
[100, 5000] us (seed 003 §V.B), PDMS_HPTS_DS decision only. Cluster start-up
is excluded (the cluster is started, then timed runs use its client); each
configuration runs three times and the best is kept (shared machines are
noisy).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import distributed

import rtgpu.experiment as ex

STUDY = """
name = "bench-pdms-ratio"
seed = 2026
sets = {sets}
chunk = {chunk}

[generator]
utilizations = {{ kind = "uunifast-discard", n = 40, total = "= cores * u" }}
periods = {{ kind = "uniform", lo = "100 us", hi = "5000 us", granularity = "1 us" }}

[parameters]
cores = 8

[axes]
u = {{ from = 0.70, to = 1.00, step = 0.02 }}

[[analysis]]
name = "pdms-hpts-ds"
metrics = ["ratio"]
"""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def in_process(study: ex.Study) -> float:
    """Seconds to compute every point serially here, without Dask."""
    start = time.perf_counter()
    for p in study.points():
        ex.compute_point(p, study.generator_spec(p.params), study.analyses, tuple(study.axes))
    return time.perf_counter() - start


def _cpu_seconds() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def on_cluster(study: ex.Study, workers: int, rounds: int) -> tuple[float, float]:
    """Best wall time of ``rounds`` runs, and the worker CPU seconds that
    run used (so that a loaded machine, where two workers cannot both get a
    core, still shows whether Dask itself scales)."""
    cluster = distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    client = distributed.Client(cluster)
    try:
        # Warm the workers (imports, first call) before timing.
        client.run(lambda: __import__("rtgpu.experiment"))
        best, cpu = float("inf"), 0.0
        for _ in range(rounds):
            before = sum(client.run(_cpu_seconds).values())
            start = time.perf_counter()
            ex.run(study, client=client, progress=False, plots=False, fresh=True)
            wall = time.perf_counter() - start
            used = sum(client.run(_cpu_seconds).values()) - before
            if wall < best:
                best, cpu = wall, used
        return best, cpu
    finally:
        client.close()
        cluster.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=int, default=10_000, help="task sets per point (16 points)")
    ap.add_argument("--chunk", type=int, default=1_000, help="task sets per Dask task")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.toml"
        path.write_text(STUDY.format(sets=a.sets, chunk=a.chunk))
        study = ex.load_study(path)
        total = sum(p.sets for p in study.points())
        ref = min(in_process(study) for _ in range(a.rounds))
        one, cpu_one = on_cluster(study, 1, a.rounds)
        two, cpu_two = on_cluster(study, 2, a.rounds)
        load = os.getloadavg()[0]
        rows = list(csv_rows(study.output / "summary.csv"))  # from the last run: the ratio curve
    result: dict[str, Any] = {
        "sets": total,
        "points": len(list(study.points())),
        "in_process_sets_per_s": total / ref,
        "dask_1_worker_sets_per_s": total / one,
        "dask_2_workers_sets_per_s": total / two,
        "speedup_1_to_2": one / two,
        "dask_1_worker_vs_in_process": ref / one,
        "sets_per_worker_cpu_second_1": total / cpu_one,
        "sets_per_worker_cpu_second_2": total / cpu_two,
        "cpu_efficiency_2_vs_1": cpu_one / cpu_two,
        "load_average_1min": load,
        "curve": {r["u"]: float(r["ratio"]) for r in rows},
        "cpus": os.cpu_count(),
        "cpu": cpu_model(),
        "python": platform.python_version(),
    }
    if a.json:
        print(json.dumps(result))
        return
    print(f"rtgpu experiment benchmark: {total} task sets, {result['points']} points")
    print(f"  machine: {result['cpus']} CPUs, {result['cpu']}")
    print(f"  in process, no Dask : {result['in_process_sets_per_s']:>10,.0f} sets/s")
    print(f"  Dask, 1 worker      : {result['dask_1_worker_sets_per_s']:>10,.0f} sets/s")
    print(f"  Dask, 2 workers     : {result['dask_2_workers_sets_per_s']:>10,.0f} sets/s")
    print(f"  speed-up 1 -> 2 workers: {result['speedup_1_to_2']:.2f}x (goal >= 1.8x)")
    print(f"  Dask overhead, 1 worker vs in process: {result['dask_1_worker_vs_in_process']:.2f}x")
    print(
        f"  per worker CPU second: {result['sets_per_worker_cpu_second_1']:,.0f} (1 worker), "
        f"{result['sets_per_worker_cpu_second_2']:,.0f} (2 workers): "
        f"{result['cpu_efficiency_2_vs_1']:.2f} of the work per CPU second"
    )
    print(
        f"  load average during the run: {result['load_average_1min']:.1f} on {os.cpu_count()} CPUs"
    )
    curve = "  ".join(f"{u}:{r:.2f}" for u, r in result["curve"].items())
    print(f"  ratio curve (U/m: schedulable ratio): {curve}")


def csv_rows(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open(newline="") as f:
        return list(csv.DictReader(f))


if __name__ == "__main__":
    main()
