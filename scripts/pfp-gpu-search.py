#!/usr/bin/env python3
"""Random P-FP (PDMS_HPTS_DS) GPU workloads: analyse, simulate, compare.

Each workload is two cores, two GPUs, static assignment, klmirqd and the
overheads of `crates/sim/tests/split-gpu-klmirqd.toml` (seed 000 Table III
switch and interrupt costs), with 3-6 tasks of which about 40 % use a GPU.
For every schedulable one, `rtgpu simulate` runs it four ways (two seeds,
periodic and sporadic with execution-time variation) and every simulated
response time is checked against the analysed bound. It also counts how
many workloads are schedulable and how many split a GPU-using task.

    python3 scripts/pfp-gpu-search.py [--workloads 600] [--seed 11] \
        [--rtgpu target/release/rtgpu]

Exit status 1 if a bound is exceeded (the workload is kept in /tmp).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "crates" / "sim" / "tests" / "split-gpu-klmirqd.toml"


def workload(rng: random.Random, head: str) -> str:
    tasks = []
    for i in range(rng.randint(3, 6)):
        period = rng.choice([5, 10, 20, 50]) * 1_000_000
        wcet = int(period * rng.uniform(0.05, 0.5))
        text = f'[[task]]\nname = "t{i}"\nwcet = "{wcet} ns"\nperiod = "{period} ns"\n'
        if rng.random() < 0.4:
            kernel = int(period * rng.uniform(0.01, 0.1))
            text += (
                f'gpu = {{ copy_in = "100000 B", kernels = ["{kernel} ns"], '
                'copy_out = "100000 B", interrupts = 3 }\n'
            )
        tasks.append(text)
    return head + "\n".join(tasks)


def run_json(args: list[str]) -> dict:
    out = subprocess.run(args, capture_output=True, text=True, check=False)
    return json.loads(out.stdout)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", type=int, default=600)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--rtgpu", default=str(ROOT / "target" / "release" / "rtgpu"))
    a = p.parse_args()
    text = FIXTURE.read_text()
    head = text[: text.index("[[task]]")]
    rng = random.Random(a.seed)
    schedulable = split = bounded = exceeded = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "w.toml"
        for k in range(a.workloads):
            path.write_text(workload(rng, head))
            report = run_json([a.rtgpu, "analyze", str(path), "--json"])
            split += any("outside seed 003" in n for n in report["notes"])
            if report["verdict"] != "schedulable":
                continue
            schedulable += 1
            bound = {t["name"]: t.get("response_time") for t in report["tasks"]}
            for seed in (1, 2):
                for extra in ([], ["--sporadic", "20", "--bcet", "60"]):
                    sim = run_json(
                        [
                            a.rtgpu,
                            "simulate",
                            str(path),
                            "--json",
                            "--duration",
                            "1s",
                            "--seed",
                            str(seed),
                            *extra,
                        ]
                    )
                    for t in sim["tasks"]:
                        b = bound.get(t["name"])
                        if b is None:
                            continue
                        bounded += 1
                        if t["max_response"] > b:
                            exceeded += 1
                            keep = Path(tempfile.gettempdir()) / f"pfp-gpu-exceeded-{k}.toml"
                            keep.write_text(path.read_text())
                            print(f"workload {k}: {t['name']} {t['max_response']} > {b} ({keep})")
            if (k + 1) % 100 == 0:
                print(f"{k + 1} workloads, {schedulable} schedulable", file=sys.stderr)
    print(
        f"{a.workloads} workloads: {schedulable} schedulable, {split} with a split GPU-using "
        f"task, {bounded} bounded task runs, {exceeded} bound(s) exceeded"
    )
    return 1 if exceeded else 0


if __name__ == "__main__":
    sys.exit(main())
