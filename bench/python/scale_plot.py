"""Figure of issue 24's scaling benchmark: CPU time of the P-FP analysis
(PDMS_HPTS_DS) against the number of tasks, one line per core count, with
the partitioner before issue 24 where it was timed, and n and n² slopes for
reference (log-log).

    .venv/bin/python bench/python/scale_plot.py \
        [--csv docs/measurements/2026-11-27-scale-blocks.csv] \
        [--out docs/figures/analysis-scaling.png]

The CSV is what ``cargo run --release -p rtgpu-bench --bin scale -- --csv
PATH`` writes: columns m, n, analyze_s, partition_s, reference_s (empty
where the old partitioner was not timed), schedulable. Needs only the
standard library and matplotlib.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default="docs/measurements/2026-11-27-scale-blocks.csv")
    ap.add_argument("--out", default="docs/figures/analysis-scaling.png")
    args = ap.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows: dict[int, list[tuple[int, float, float, float | None]]] = defaultdict(list)
    with Path(args.csv).open(newline="") as f:
        for r in csv.DictReader(f):
            ref = float(r["reference_s"]) if r["reference_s"] else None
            rows[int(r["m"])].append(
                (int(r["n"]), float(r["analyze_s"]), float(r["partition_s"]), ref)
            )

    fig, ax = plt.subplots(figsize=(7.5, 5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (m, pts) in enumerate(sorted(rows.items())):
        pts.sort()
        c = colors[k % len(colors)]
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            "o-",
            color=c,
            label=f"m = {m}: analysis (rtgpu analyze)",
        )
        old = [(p[0], p[3]) for p in pts if p[3] is not None]
        if old:
            ax.plot(
                [p[0] for p in old],
                [p[1] for p in old],
                "x--",
                color=c,
                alpha=0.7,
                label=f"m = {m}: partitioner before issue 24",
            )
    # Slopes n and n² through the first point of the smallest m.
    m0 = min(rows)
    n0, t0 = sorted(rows[m0])[0][0], sorted(rows[m0])[0][1]
    ns = sorted({p[0] for pts in rows.values() for p in pts})
    ax.plot(ns, [t0 * n / n0 for n in ns], ":", color="0.4", label="∝ n")
    ax.plot(ns, [t0 * (n / n0) ** 2 for n in ns], ":", color="0.7", label="∝ n²")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tasks n")
    ax.set_ylabel("CPU seconds per analysis")
    ax.set_title("P-FP PDMS_HPTS_DS, U = 0.7·m, T log-uniform 1-100 ms")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
