#!/usr/bin/env python3
"""Every bundled example's GPU-task bounds against the simulator.

For each examples/*.toml: `rtgpu analyze --json` and `rtgpu simulate --json`
(synchronous, and `--sporadic 50` with seeds 1-3); prints how many GPU tasks
have a bound, any bound a simulated response exceeds, and bound / worst
simulated response per task (median and maximum).

    python3 scripts/gpu-bound-ratios.py [RTGPU_BINARY]
"""

from __future__ import annotations

import glob
import json
import statistics
import subprocess
import sys


def run_json(args: list[str]) -> dict | None:
    p = subprocess.run(args, capture_output=True, text=True)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return None


def main() -> int:
    rtgpu = sys.argv[1] if len(sys.argv) > 1 else "target/release/rtgpu"
    rows: list[tuple[str, str, int, int]] = []
    gpu_tasks = 0
    for f in sorted(glob.glob("examples/*.toml")):
        report = run_json([rtgpu, "analyze", f, "--json"])
        if report is None:
            print(f"{f}: analyze gave no JSON", file=sys.stderr)
            return 2
        worst: dict[str, int] = {}
        for extra in ([], *(["--sporadic", "50", "--seed", str(s)] for s in (1, 2, 3))):
            sim = run_json([rtgpu, "simulate", f, "--json", *extra])
            for t in (sim or {}).get("tasks", []):
                worst[t["name"]] = max(worst.get(t["name"], 0), t["max_response"])
        for t in report["tasks"]:
            if not t["uses_gpu"]:
                continue
            gpu_tasks += 1
            if t.get("response_time"):
                rows.append((f.split("/")[-1], t["name"], t["response_time"], worst.get(t["name"], 0)))
    print(f"GPU tasks: {gpu_tasks}, with a bound: {len(rows)}")
    exceeded = [r for r in rows if r[3] > r[2]]
    print(f"bounds exceeded: {len(exceeded)}")
    for r in exceeded:
        print(f"  EXCEEDED {r[0]} {r[1]}: {r[3]} ns > {r[2]} ns")
    ratios = [b / w for (_, _, b, w) in rows if w > 0]
    if ratios:
        print(f"bound / worst simulated: median {statistics.median(ratios):.2f}, max {max(ratios):.2f}")
    for f, name, b, w in rows:
        ratio = f"{b / w:.2f}" if w else "-"
        print(f"{f:34} {name:24} bound {b / 1e6:9.3f} ms  worst {w / 1e6:9.3f} ms  ratio {ratio}")
    return 1 if exceeded else 0


if __name__ == "__main__":
    sys.exit(main())
