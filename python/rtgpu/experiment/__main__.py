"""``python -m rtgpu.experiment STUDY``: what ``rtgpu experiment`` runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .runner import run
from .study import StudyError, load_study


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="rtgpu experiment",
        description="Run a schedulability study (TOML) on Dask; results are appended as "
        "points finish and an interrupted study resumes where it stopped.",
    )
    ap.add_argument("study", type=Path, help="study file (TOML)")
    ap.add_argument(
        "--scheduler", metavar="ADDR", help="Dask scheduler address, e.g. tcp://host:8786"
    )
    ap.add_argument(
        "--workers", type=int, metavar="N", help="local worker processes (default: one per CPU)"
    )
    ap.add_argument("--output", type=Path, metavar="DIR", help="override the study's output")
    ap.add_argument("--fresh", action="store_true", help="discard earlier results and start over")
    ap.add_argument("--no-plots", action="store_true", help="do not draw the figures")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    a = ap.parse_args(argv)
    if a.workers is not None and a.workers < 1:
        ap.error("--workers must be at least 1")
    if a.workers is not None and a.scheduler:
        ap.error("--workers starts a local cluster; it cannot be combined with --scheduler")
    try:
        study = load_study(a.study)
        if a.output is not None:
            study = study.with_output(a.output)
        r = run(
            study,
            scheduler=a.scheduler,
            workers=a.workers,
            progress=not a.quiet,
            plots=not a.no_plots,
            fresh=a.fresh,
        )
    except StudyError as e:
        print(f"rtgpu experiment: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "rtgpu experiment: interrupted; finished points are kept, run again to resume",
            file=sys.stderr,
        )
        return 130
    print(
        f"{study.name}: {r.points} points ({r.computed} computed, {r.resumed} already done), "
        f"{r.sets_computed} task sets in {r.seconds:.1f} s ({r.sets_per_second:,.0f} sets/s)"
    )
    for f in r.files:
        print(f"  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
