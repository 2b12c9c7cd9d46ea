"""Figure of the simulator's scaling benchmark (issue 24): CPU time per
simulated job and the heap a run holds per task, against the number of
tasks, one line per scheduler and core count.

    .venv/bin/python bench/python/sim_scale_plot.py \
        [--csv docs/measurements/2026-11-27-sim-scale.csv] \
        [--out docs/figures/simulator-scaling.png]

The CSV is what ``cargo run --release -p rtgpu-bench --bin sim_scale --
--csv PATH`` writes: columns sched, m, n, duration_s, jobs, events,
setup_s, run_s, ns_per_job (empty where the setup dominated), peak_bytes,
bytes_per_task. Needs only the standard library and matplotlib.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path

Series = dict[tuple[str, int], list[tuple[int, float, float]]]


def read(path: Path) -> Series:
    """(sched, m) -> sorted [(n, ns per job or NaN, heap bytes per task)]."""
    rows: Series = defaultdict(list)
    with path.open(newline="") as f:
        for r in csv.DictReader(f):
            # (empty where the engine's construction dominated the run)
            ns = float(r["ns_per_job"]) if r["ns_per_job"] else float("nan")
            rows[(r["sched"], int(r["m"]))].append((int(r["n"]), ns, float(r["bytes_per_task"])))
    for pts in rows.values():
        pts.sort()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default="docs/measurements/2026-11-27-sim-scale.csv")
    ap.add_argument("--out", default="docs/figures/simulator-scaling.png")
    args = ap.parse_args()
    rows = read(Path(args.csv))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (cost, heap) = plt.subplots(1, 2, figsize=(11, 4.6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ms = sorted({m for _, m in rows})
    scheds = sorted({s for s, _ in rows})
    styles = ["o-", "s--", "^:", "v-."]
    for (sched, m), pts in sorted(rows.items()):
        c = colors[ms.index(m) % len(colors)]
        style = styles[scheds.index(sched) % len(styles)]
        label = f"{sched}, m = {m}"
        ns = [p[0] for p in pts]
        cost.plot(ns, [p[1] for p in pts], style, color=c, label=label)
        heap.plot(ns, [p[2] for p in pts], style, color=c, label=label)
    for ax in (cost, heap):
        ax.set_xscale("log")
        ax.set_xlabel("tasks n")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylim(bottom=0)
    cost.set_ylabel("CPU ns per simulated job")
    cost.set_title("Cost per job (flat = independent of n)")
    heap.set_ylabel("peak heap bytes per task")
    heap.set_title("Memory per task (flat = linear in n)")
    cost.legend(fontsize=7, ncol=2)
    fig.suptitle("rtgpu simulate, U = 0.7·m, T log-uniform 1-100 ms, zero overheads")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
