"""Figures of a study, as PNG and SVG (matplotlib, no display needed).

Every estimate is drawn with its 95 % interval as a shaded band (Wilson's
for a schedulable ratio, the normal interval of the mean for per-set
values: :mod:`.stats`), and value axes start at zero (ratios span 0-1), so
a difference is drawn at its size beside its uncertainty."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .results import Row, samples
from .stats import mean_ci, wilson
from .study import Plot, Study

__all__ = ["plot_study"]

_X_COLUMNS = {
    "utilization": "utilization_mean",
    "effective_utilization": "effective_utilization_mean",
    "tasks": "tasks_mean",
}


def plot_study(study: Study, rows: Sequence[Row]) -> list[Path]:
    """Draws every ``[[plot]]`` of ``study``; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    out: list[Path] = []
    for plot in study.plots:
        fig = _draw(study, plot, rows)
        for ext in ("png", "svg"):
            path = study.output / f"{plot.name}.{ext}"
            fig.savefig(path, dpi=150, bbox_inches="tight")
            out.append(path)
        import matplotlib.pyplot as plt

        plt.close(fig)
    return out


def _num(v: str) -> float:
    try:
        return float(v)
    except ValueError:
        return float("nan")


def _groups(study: Study, plot: Plot, rows: Sequence[Row]) -> dict[str, list[Row]]:
    multi = len(study.analyses) > 1
    groups: dict[str, list[Row]] = {}
    for r in rows:
        label = []
        if multi or not plot.by:
            label.append(r["analysis"])
        label += [f"{b}={r[b]}" for b in plot.by]
        groups.setdefault(", ".join(label), []).append(r)
    return groups


def _norm(study: Study, plot: Plot, r: Row) -> float:
    if plot.normalize is None:
        return 1.0
    v = r.get(plot.normalize, study.parameters.get(plot.normalize))
    return _num(str(v))


def _draw(study: Study, plot: Plot, rows: Sequence[Row]) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    groups = _groups(study, plot, rows)
    if plot.kind == "histogram":
        for label, rs in groups.items():
            vals = [x / _norm(study, plot, r) for r in rs for x in samples([r], plot.metric)]
            if vals:
                mean = sum(vals) / len(vals)
                ax.hist(
                    vals,
                    bins=plot.bins,
                    range=(min(vals), max(max(vals), min(vals) + 1e-9)),
                    density=True,
                    histtype="step",
                    linewidth=1.4,
                    label=f"{label} (mean {mean:.3f}, n={len(vals)})",
                )
        ax.set_xlabel(_label(plot))
        ax.set_ylabel("probability density")
    else:
        xcol = _X_COLUMNS.get(plot.x or "", plot.x or "")
        top = 0.0
        for label, rs in groups.items():
            # Average the chunks of one axis value (weighted by sets).
            by_x: dict[float, list[Row]] = {}
            if plot.x in study.axes:
                for r in rs:
                    by_x.setdefault(_num(r[xcol]), []).append(r)
            else:
                # A measured x (mean utilization) differs per chunk: group by
                # the axis combination, x is its weighted mean.
                combos: dict[tuple[str, ...], list[Row]] = {}
                for r in rs:
                    combos.setdefault(tuple(r[a] for a in study.axes), []).append(r)
                for crs in combos.values():
                    w = sum(int(r["sets"]) for r in crs)
                    x = sum(_num(r[xcol]) * int(r["sets"]) for r in crs) / w
                    by_x[x] = crs
            xs = sorted(by_x)
            ys, lo, hi = [], [], []
            n_min = None
            for x in xs:
                crs = by_x[x]
                sets = sum(int(r["sets"]) for r in crs)
                if plot.kind == "ratio":
                    k = sum(int(r["schedulable"] or 0) for r in crs)
                    y = k / sets
                    a, b = wilson(k, sets)
                    n = sets
                else:
                    vals = [
                        v / _norm(study, plot, r) for r in crs for v in samples([r], plot.metric)
                    ]
                    y, half = mean_ci(vals)
                    a, b = y - half, y + half
                    n = len(vals)
                ys.append(y)
                lo.append(a)
                hi.append(b)
                n_min = n if n_min is None else min(n_min, n)
            (line,) = ax.plot(
                xs, ys, marker="o", markersize=3, linewidth=1.2, label=f"{label} (n≥{n_min})"
            )
            # Lighter bands when many overlap (a ratio of 1 still has a band
            # down to n/(n + 1.96²)).
            alpha = 0.2 if len(groups) <= 4 else 0.12
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=alpha, linewidth=0)
            top = max([top, *(h for h in hi if h == h)])
        ax.set_xlabel(plot.x or "")
        if plot.kind == "ratio":
            ax.set_ylabel("schedulable ratio (band: Wilson 95 % interval)")
            ax.set_ylim(-0.02, 1.02)
        else:
            ax.set_ylabel(f"mean {_label(plot)} (band: 95 % interval)")
            ax.set_yscale(plot.yscale)
            if plot.yscale == "linear" and ax.get_ylim()[0] > 0:
                # Start at zero: a 0.07 % difference is not drawn as a cliff.
                ax.set_ylim(0, top * 1.08)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(plot.title or f"{study.name}: {plot.name}", fontsize=10)
    fig.tight_layout()
    return fig


def _label(plot: Plot) -> str:
    name = {"breakdown": "breakdown utilization", "blocking": "largest blocking bound (ms)"}
    text = name.get(plot.metric, plot.metric)
    return text + (f" / {plot.normalize}" if plot.normalize else "")
