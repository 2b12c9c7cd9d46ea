"""``python -m rtgpu.experiment STUDY``: what ``rtgpu experiment`` runs."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import warnings
from pathlib import Path
from types import FrameType
from typing import Any

from . import stopping
from .lock import StudyWarning
from .runner import run
from .study import StudyError, load_study

STOP_GRACE_S = 30.0
"""How long the clean-up after a stop signal may take (closing the Dask
cluster) before the runner exits anyway: results are appended and flushed as
points finish, so nothing is lost, and a stop always ends."""


def _stop(signum: int, frame: FrameType | None) -> None:
    """SIGINT, SIGTERM, SIGHUP: a stop request the runner acts on at its
    next safe point (:mod:`.stopping`), and the watchdog. A repeated
    SIGTERM or SIGHUP does not cut the clean-up short; a second Ctrl-C
    exits at once, as users expect of a second Ctrl-C."""
    if stopping.requested() is not None:
        if signum == signal.SIGINT:
            _force_exit(signum, "a second Ctrl-C")
        return
    stopping.request(signum)
    _arm_watchdog(signum)


def _arm_watchdog(signum: int, grace: float = STOP_GRACE_S) -> None:
    """Exit with 128 + ``signum`` if the clean-up has not ended within
    ``grace`` seconds: the stop is acted on between Dask calls
    (:mod:`.stopping`), but closing a client or cluster may still wait on a
    stuck worker or a scheduler gone (a run once did not end in CI after
    Ctrl-Z, ``fg`` and SIGTERM). Leading a process group of our own (as
    under ``rtgpu experiment``), the Dask workers in it are sent SIGKILL
    first."""

    global _watchdog
    why = f"the clean-up after {signal.Signals(signum).name} took more than {grace:g} s"
    _watchdog = threading.Timer(grace, _force_exit, (signum, why))
    _watchdog.daemon = True
    _watchdog.start()


_watchdog: threading.Timer | None = None


def _disarm() -> None:
    """The clean-up ended: no forced exit (``main`` may run in a process
    that goes on, as in the tests)."""
    global _watchdog
    if _watchdog is not None:
        _watchdog.cancel()
        _watchdog = None


def _force_exit(signum: int, why: str) -> None:
    print(
        f"rtgpu experiment: {why}; exiting (finished points are kept, run again to resume)",
        file=sys.stderr,
        flush=True,
    )
    if os.getpgrp() == os.getpid():
        _kill_group_but_self()
    os._exit(128 + signum)


def _kill_group_but_self() -> None:
    me = os.getpid()
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return
    for pid in pids:
        if pid == me:
            continue
        try:
            if os.getpgid(pid) == me:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            continue


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    if issubclass(category, StudyWarning):
        print(f"rtgpu experiment: warning: {message}", file=sys.stderr, flush=True)
    else:
        _default_show(message, category, filename, lineno, file, line)


_default_show = warnings.showwarning


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
    warnings.showwarning = _show_warning
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {sig: signal.signal(sig, _stop) for sig in stops}
    try:
        return _main(a)
    finally:
        for sig, h in before.items():
            signal.signal(sig, h)
        stopping.reset()


def _main(a: argparse.Namespace) -> int:
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
    except OSError as e:
        print(f"rtgpu experiment: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        _disarm()
        signum = e.signum if isinstance(e, stopping.Stopped) else signal.SIGINT
        print(
            f"rtgpu experiment: stopped by {signal.Signals(signum).name}; finished points are "
            "kept, run again to resume",
            file=sys.stderr,
        )
        return 128 + signum
    try:
        print(
            f"{study.name}: {r.points} points ({r.computed} computed, {r.resumed} already "
            f"done), {r.sets_computed} task sets in {r.seconds:.1f} s "
            f"({r.sets_per_second:,.0f} sets/s)"
        )
        for f in r.files:
            print(f"  {f}")
        sys.stdout.flush()
    except BrokenPipeError:
        # `... | head -1`: the reader left; the results are written. Point
        # stdout at /dev/null so the interpreter's final flush is quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    code = main()
    if code > 128:
        # Stopped by a signal: results and lock are already closed. Skip
        # the interpreter's exit handlers, where Dask's clean-up of a
        # cluster stopped in the middle of its start raises (a traceback
        # after our message); its worker processes exit with us.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
