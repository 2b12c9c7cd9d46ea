"""The reliability suite's experiment part (issue 22; docs/testing.md,
"Reliability suite"): a kill storm on ``rtgpu experiment`` and several
``rtgpu experiment`` runs started at once on one output. After each the
study resumes to every point exactly once with the right summary.

``scripts/test.sh`` runs this file in its own step (``scripts/reliability.sh``);
``RTGPU_RELIABILITY_SCALE=N`` multiplies the counts."""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rtgpu.experiment as ex
from test_experiment import (
    _descendants,
    _running,
    _wait_for,
    assert_exactly_once,
    rtgpu_binary,
    study_text,
    write_study,
)

pytest.importorskip("distributed")

SCALE = max(int(os.environ.get("RTGPU_RELIABILITY_SCALE", "1") or 1), 1)


def _exe() -> Path:
    exe = rtgpu_binary()
    if exe is None:
        pytest.skip("target/*/rtgpu not built (cargo build)")
    return exe


def _command(study: ex.Study) -> list[str]:
    return [str(_exe()), "experiment", str(study.path), "--workers", "1", "--no-plots", "--quiet"]


def _env() -> dict[str, str]:
    return {**os.environ, "RTGPU_PYTHON": sys.executable}


def _finish(study: ex.Study) -> None:
    """The study resumed to the end: every point once, the right summary."""
    out = subprocess.run(_command(study), capture_output=True, text=True, timeout=600, env=_env())
    assert out.returncode == 0, out.stderr
    assert_exactly_once(study)
    summary = list(csv.DictReader((study.output / "summary.csv").open()))
    assert summary and all(int(s["sets"]) == study.sets for s in summary)


def test_kill_storm_on_rtgpu_experiment(tmp_path: Path) -> None:
    # 120 points of about 0.1 s: each round is killed before the end.
    study = write_study(tmp_path, study_text(sets=240, chunk=2, cores="[64]"))
    rng = random.Random(22)
    signals = [signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
    rounds = 8 * SCALE
    tally: dict[str, int] = {}
    for _ in range(rounds):
        p = subprocess.Popen(
            _command(study),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=_env(),
        )
        # Anywhere from the interpreter probe to mid-study.
        time.sleep(rng.uniform(0.0, 6.0))
        family = _descendants(p.pid)
        sig = rng.choice(signals)
        tally[sig.name] = tally.get(sig.name, 0) + 1
        p.send_signal(sig)
        p.wait(timeout=60)
        _wait_for(
            lambda fam=family: not any(_running(q) for q in fam),
            30,
            f"after {sig.name}: still running: {[q for q in family if _running(q)]}",
        )
        assert p.stderr is not None
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        assert "Traceback" not in err or sig == signal.SIGINT, err
    done = len({r["point"] for r in csv.DictReader((study.output / "results.csv").open())})
    _finish(study)
    print(
        f"reliability: {rounds} kills of rtgpu experiment ({tally}), {done} of "
        f"{len(list(study.points()))} points done before the final resume; every point once"
    )


def test_concurrent_rtgpu_experiments_on_one_output(tmp_path: Path) -> None:
    study = write_study(tmp_path, study_text(sets=120, chunk=2, cores="[64]"))
    rounds, at_once = 2 * SCALE, 4
    refused = ran = 0
    for _ in range(rounds):
        procs = [
            subprocess.Popen(
                _command(study),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=_env(),
            )
            for _ in range(at_once)
        ]
        for p in procs:
            _, err = p.communicate(timeout=600)
            assert p.returncode in (0, 2), err
            if p.returncode == 2:
                assert "in use by another rtgpu experiment (pid" in err, err
                assert "Traceback" not in err, err
                refused += 1
            else:
                ran += 1
        assert_exactly_once(study)
    assert ran >= rounds
    _finish(study)
    print(
        f"reliability: {rounds} rounds of {at_once} rtgpu experiment runs at once on one "
        f"output: {ran} ran, {refused} refused naming the running one; every point once"
    )
