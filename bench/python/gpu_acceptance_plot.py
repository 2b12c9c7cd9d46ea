"""Figure of issue 20's study: acceptance ratio of random GPU workloads against
the GPU load, suspension-aware vs suspension-oblivious analysis, with the
simulator's "no deadline miss observed" ratio as an (optimistic) upper
reference, and the share of those that a necessary condition does not rule
out either (``upper-reference``: no sound analysis can accept more); one panel
per CPU scheduler.

    .venv/bin/python bench/python/gpu_acceptance_plot.py \
        [--csv studies/results/gpu-acceptance.csv] \
        [--out docs/figures/gpu-acceptance.png] [--title TEXT]

The CSV is what ``cargo run --release -p rtgpu-bench --bin gpu_acceptance``
writes: one row per (load, scheduler, method) with columns load, scheduler,
method, sets, accepted, ratio, ... (method: aware, oblivious, sim-no-miss,
not-shown-infeasible, upper-reference; the plot leaves out not-shown-infeasible).
Needs only the standard library and matplotlib.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

# What each method of the CSV is drawn as: label, colour, marker, line style.
STYLES: dict[str, tuple[str, str, str, str]] = {
    "sim-no-miss": ("simulator: no miss observed", "0.55", "s", "--"),
    "upper-reference": ("no miss observed, not shown infeasible", "black", "D", ":"),
    "aware": ("suspension-aware analysis", "tab:blue", "o", "-"),
    "aware-best-setting": (
        "suspension-aware, best GPU setting: allocator, rho, each task's GPU "
        "(rtgpu analyze's suggestion)",
        "tab:green",
        "^",
        "-.",
    ),
    "oblivious": ("suspension-oblivious analysis (seeds)", "tab:red", "v", "-"),
}
SCHEDULER_ORDER = ["C-FP", "G-FP", "P-FP", "C-EDF", "G-EDF"]


@dataclass(frozen=True)
class Point:
    load: float
    ratio: float
    sets: int


def read(path: Path) -> dict[str, dict[str, list[Point]]]:
    """scheduler -> method -> points sorted by load."""
    data: dict[str, dict[str, list[Point]]] = defaultdict(lambda: defaultdict(list))
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            data[row["scheduler"]][row["method"]].append(
                Point(float(row["load"]), float(row["ratio"]), int(row["sets"]))
            )
    for methods in data.values():
        for points in methods.values():
            points.sort(key=lambda p: p.load)
    return data


def scheduler_key(name: str) -> tuple[int, str]:
    order = SCHEDULER_ORDER.index(name) if name in SCHEDULER_ORDER else len(SCHEDULER_ORDER)
    return (order, name)


def plot(data: dict[str, dict[str, list[Point]]], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    schedulers = sorted(data, key=scheduler_key)
    fig, axes = plt.subplots(
        1, len(schedulers), figsize=(4.2 * len(schedulers), 3.8), sharey=True, squeeze=False
    )
    for ax, sched in zip(axes[0], schedulers):
        methods = data[sched]
        for method, (label, colour, marker, style) in STYLES.items():
            points = methods.get(method)
            if not points:
                continue
            ax.plot(
                [100 * p.load for p in points],
                [100 * p.ratio for p in points],
                color=colour,
                marker=marker,
                linestyle=style,
                label=label,
                markersize=5,
                linewidth=1.6,
            )
        sets = {p.sets for points in methods.values() for p in points}
        per_point = f"{min(sets)}" if len(sets) == 1 else f"{min(sets)}-{max(sets)}"
        ax.set_title(f"{sched} ({per_point} workloads per point)", fontsize=10)
        ax.set_xlabel("GPU load per GPU (%)")
        ax.set_xlim(5, 95)
        ax.set_ylim(-3, 103)
        ax.set_xticks(range(10, 100, 10))
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("workloads accepted / without a miss (%)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False, fontsize=8.5)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=Path("studies/results/gpu-acceptance.csv"))
    parser.add_argument("--out", type=Path, default=Path("docs/figures/gpu-acceptance.png"))
    parser.add_argument(
        "--title",
        default="Random GPU workloads, periods 10-100 ms (GPUSync with affinity, $\\rho$ = 1, "
        "klmirqd, Table III overheads; CPU load 30 %)",
    )
    args = parser.parse_args()
    data = read(args.csv)
    if not data:
        raise SystemExit(f"{args.csv}: no rows")
    plot(data, args.out, args.title)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
