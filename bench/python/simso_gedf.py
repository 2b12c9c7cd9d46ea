"""Run SimSo's global EDF on a task set and print simulated jobs per second.

Used by `cargo run --release -p rtgpu-bench --bin sim` to compare with
rtgpu's simulator in the same run. Input: a JSON file with "cores",
"duration_ms" and "tasks" (name, wcet_ms, period_ms). Output: one JSON line
with jobs, wall seconds, CPU seconds of the process and jobs per wall and
per CPU second.
"""

import json
import sys
import time

from simso.configuration import Configuration
from simso.core import Model


def main() -> None:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    cfg = Configuration()
    cfg.duration = int(spec["duration_ms"] * cfg.cycles_per_ms)
    for i, t in enumerate(spec["tasks"]):
        cfg.add_task(
            name=t["name"],
            identifier=i + 1,
            period=t["period_ms"],
            activation_date=0,
            wcet=t["wcet_ms"],
            deadline=t["period_ms"],
        )
    for c in range(spec["cores"]):
        cfg.add_processor(name=f"CPU {c}", identifier=c + 1)
    cfg.scheduler_info.clas = "simso.schedulers.EDF"
    cfg.check_all()
    model = Model(cfg)
    start = time.perf_counter()
    cpu0 = time.process_time()
    model.run_model()
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - start
    jobs = sum(1 for task in model.results.tasks for j in task.jobs if j.end_date is not None)
    print(
        json.dumps(
            {
                "jobs": jobs,
                "wall_s": wall,
                "cpu_s": cpu,
                "jobs_per_cpu_s": jobs / cpu,
                "jobs_per_s": jobs / wall,
            }
        )
    )


if __name__ == "__main__":
    main()
