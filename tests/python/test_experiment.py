"""rtgpu.experiment: generators, study files, and the Dask runner on a real
multi-process LocalCluster (a worker is killed mid-study; the study still
finishes with every point exactly once), resume after an interruption."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rtgpu
import rtgpu.experiment as ex
from rtgpu.experiment.lock import LOCK_NAME

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]

GEN = """
[generator]
utilizations = { kind = "uniform", lo = 0.0, hi = 0.4, total = "= cores", overshoot = "keep" }
periods = { kind = "uniform", lo = "100 us", hi = "5000 us", granularity = "1 us" }
"""


def study_text(sets: int = 40, chunk: int = 5, cores: str = "[2, 4]", extra: str = "") -> str:
    return f"""
name = "t"
seed = 7
sets = {sets}
chunk = {chunk}
{GEN}
[axes]
cores = {cores}
[[analysis]]
name = "pdms-hpts-ds"
metrics = ["ratio", "breakdown"]
[[analysis]]
name = "first-fit"
metrics = ["breakdown"]
{extra}
"""


def write_study(tmp: Path, text: str) -> ex.Study:
    p = tmp / "study.toml"
    p.write_text(text)
    return ex.load_study(p)


def rows_of(study: ex.Study) -> list[dict[str, str]]:
    with (study.output / "results.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def assert_exactly_once(study: ex.Study) -> list[dict[str, str]]:
    rows = rows_of(study)
    keys = Counter((r["point"], r["analysis"]) for r in rows)
    want = {(p.key, a) for p in study.points() for a, _ in study.analyses}
    dup = [k for k, n in keys.items() if n > 1]
    assert not dup, f"points written more than once: {dup}"
    assert set(keys) == want, f"missing: {want - set(keys)}, extra: {set(keys) - want}"
    return rows


# -- generators ---------------------------------------------------------------


class TestGenerate:
    SPEC = json.dumps(
        {
            "utilizations": {"kind": "randfixedsum", "n": 12, "total": 3.0, "lo": 0.05, "hi": 0.6},
            "periods": {"kind": "harmonic", "lo": 1_000_000, "hi": 64_000_000},
            "gpu": {
                "share": [0.5, 0.5],
                "part": [0.75, 0.75],
                "data": [1024, 4096],
                "eta": [1, 6],
                "speedup": 16,
            },
        }
    )

    def test_reproducible_with_gpu(self) -> None:
        a = ex.generate(self.SPEC, 5)
        assert a == ex.generate(self.SPEC, 5) or [t for t, _ in a] == [
            t for t, _ in ex.generate(self.SPEC, 5)
        ]
        assert [t for t, _ in a] != [t for t, _ in ex.generate(self.SPEC, 6)]
        assert len(a) == 12
        gpu = [(t, g) for t, g in a if g is not None]
        assert len(gpu) == 6
        for t, g in gpu:
            assert 1 <= g.eta <= 6 and 1024 <= g.bytes <= 4096
            assert abs(g.time - 0.75 * t.wcet) <= 1
        periods = {t.period for t, _ in a}
        assert all(64_000_000 % p == 0 for p in periods)
        u = sum(t.utilization for t, _ in a)
        assert u == pytest.approx(3.0, abs=1e-3)

    def test_bad_spec_names_field(self) -> None:
        bad = json.loads(self.SPEC)
        bad["gpu"]["share"] = [0.7, 0.2]
        with pytest.raises(ValueError, match=r"gpu\.share"):
            ex.generate(json.dumps(bad), 1)
        bad = json.loads(self.SPEC)
        bad["utilizations"]["kind"] = "uunifas"
        with pytest.raises(ValueError, match="unknown variant"):
            ex.generate(json.dumps(bad), 1)

    def test_set_seed_independent_of_chunking(self, tmp_path: Path) -> None:
        s1 = write_study(tmp_path, study_text(sets=12, chunk=12, cores="[2]"))
        s2 = s1.__class__(**{**s1.__dict__, "chunk": 5})
        one = ex.compute_point(next(s1.points()), s1.generator_spec({"cores": 2}), s1.analyses, ())
        parts = [
            ex.compute_point(p, s2.generator_spec({"cores": 2}), s2.analyses, ())
            for p in s2.points()
        ]
        joined = " ".join(r[0]["breakdown"] for r in parts)
        assert one[0]["breakdown"] == joined
        assert int(one[0]["schedulable"]) == sum(int(r[0]["schedulable"]) for r in parts)


# -- study files ----------------------------------------------------------------


class TestStudyFile:
    @pytest.mark.parametrize(
        ("change", "message"),
        [
            (lambda t: t.replace('name = "first-fit"', 'name = "frist-fit"'), "unknown analysis"),
            (lambda t: t.replace('["breakdown"]', '["tardiness"]'), "cannot compute metric"),
            (lambda t: t.replace('["breakdown"]', '["response-time"]'), "needs simulation"),
            (lambda t: t.replace("[axes]\ncores = [2, 4]", ""), "needs parameter"),
            (lambda t: t.replace('"= cores"', '"= coers"'), "unknown name 'coers'"),
            (lambda t: t.replace("lo = 0.0, hi = 0.4", "lo = 0.5, hi = 0.4"), r"\[generator\]"),
            (lambda t: t + "\nbogus = 1\n", "unknown key"),
            (lambda t: t.replace("sets = 40", "sets = 0"), "sets must be >= 1"),
            (lambda t: t + "\n[simulation]\nx = 1\n", "not available"),
            (lambda t: t.replace("cores = [2, 4]", "cores = [2, 2]"), "repeated values"),
            (lambda t: t + '\n[[plot]]\nkind = "pie"\n', "kind must be one of"),
            (lambda t: t.replace("seed = 7", "seed = [7"), "invalid TOML"),
        ],
    )
    def test_clear_errors(self, tmp_path: Path, change: Any, message: str) -> None:
        with pytest.raises(ex.StudyError, match=message) as e:
            write_study(tmp_path, change(study_text()))
        assert str(tmp_path / "study.toml") in str(e.value)

    def test_generator_checked_at_every_combination(self, tmp_path: Path) -> None:
        text = study_text(cores="[2, 4]").replace('"= cores"', '"= 8 - 2 * cores"')
        with pytest.raises(ex.StudyError, match="cores=4"):
            write_study(tmp_path, text)

    def test_points_ranges_and_units(self, tmp_path: Path) -> None:
        text = study_text(sets=12, chunk=5, cores="{ from = 2, to = 8, step = 2 }")
        s = write_study(tmp_path, text)
        assert s.axes["cores"] == (2, 4, 6, 8)
        pts = list(s.points())
        assert len(pts) == 4 * 3 and [p.sets for p in pts[:3]] == [5, 5, 2]
        assert len({p.key for p in pts}) == len(pts)
        spec = json.loads(s.generator_spec({"cores": 4}))
        assert spec["utilizations"]["total"] == 4
        assert spec["periods"]["lo"] == 100_000 and spec["periods"]["granularity"] == 1000
        assert s.output == tmp_path / "results" / "t"
        other = write_study(tmp_path, text.replace("seed = 7", "seed = 8"))
        assert s.fingerprint != other.fingerprint

    def test_parameters_are_checked_at_load_and_take_workload_units(self, tmp_path: Path) -> None:
        # A bandwidth written as in a workload file is bytes per second.
        ok = write_study(tmp_path, study_text(extra='[parameters]\nbandwidth = "6 GB/s"\n'))
        assert ex.values.resolve(dict(ok.parameters), ok.parameters, "p") == {
            "bandwidth": 6_000_000_000
        }
        # A unit nothing knows fails at load, naming the file and the key,
        # not later in every worker.
        with pytest.raises(ex.StudyError, match=r"\[parameters\] bandwidth: .*GHz.*6 GB/s"):
            write_study(tmp_path, study_text(extra='[parameters]\nbandwidth = "6 GHz"\n'))

    def test_bundled_studies_load(self) -> None:
        for p in sorted((ROOT / "studies").glob("*.toml")):
            s = ex.load_study(p)
            assert s.plots, p


# -- the Dask runner --------------------------------------------------------------


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def slow_study(tmp: Path, n: int = 24) -> ex.Study:
    # m = 16 breakdown under PDMS_HPTS_DS takes tens of ms per set: points
    # last long enough that a kill lands while some are running.
    return write_study(tmp, study_text(sets=n, chunk=2, cores="[8, 16]"))


class TestRunner:
    def test_worker_killed_mid_study(self, tmp_path: Path, client: Any) -> None:
        study = slow_study(tmp_path)
        killed: list[int] = []
        before = set(client.scheduler_info()["workers"])

        def kill_one(key: str, rows: list[dict[str, Any]]) -> None:
            if killed:
                return
            busy = [w for w, keys in client.processing().items() if keys]
            if not busy:
                return
            pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

        r = ex.run(study, client=client, progress=False, plots=False, on_point=kill_one)
        assert killed, "no worker was busy when points finished"
        assert r.computed == r.points == len(list(study.points()))
        rows = assert_exactly_once(study)
        # The nanny restarted the killed worker: a new worker address.
        deadline = time.time() + 30
        while len(client.scheduler_info()["workers"]) < 2 and time.time() < deadline:
            time.sleep(0.2)
        assert set(client.scheduler_info()["workers"]) != before
        # Every row equals the same point computed here, in this process.
        by_key = {(r["point"], r["analysis"]): r for r in rows}
        for p in list(study.points())[:3]:
            for row in ex.compute_point(
                p, study.generator_spec(p.params), study.analyses, tuple(study.axes)
            ):
                got = by_key[(row["point"], row["analysis"])]
                assert got["breakdown"] == row["breakdown"]
                assert got["schedulable"] == str(row["schedulable"])

    def test_interrupted_study_resumes(self, tmp_path: Path, client: Any) -> None:
        study = write_study(tmp_path, study_text(sets=30, chunk=3, cores="[2, 4]"))
        total = len(list(study.points()))

        class StopError(Exception):
            pass

        seen: list[str] = []

        def stop_after_four(key: str, rows: list[dict[str, Any]]) -> None:
            seen.append(key)
            if len(seen) == 4:
                raise StopError

        with pytest.raises(StopError):
            ex.run(study, client=client, progress=False, plots=False, on_point=stop_after_four)
        assert len({r["point"] for r in rows_of(study)}) == 4
        # A torn last line (the process died while writing) is dropped.
        with (study.output / "results.csv").open("a") as f:
            f.write("cores=4#9,9,4,pdms-hpts-ds,3,1")
        again: list[str] = []
        r = ex.run(
            study,
            client=client,
            progress=False,
            plots=True,
            on_point=lambda k, rows: again.append(k),
        )
        assert r.resumed == 4 and r.computed == total - 4
        assert not set(again) & set(seen), "a finished point was computed again"
        assert_exactly_once(study)
        # Nothing left: a third run computes nothing.
        r3 = ex.run(study, client=client, progress=False, plots=False)
        assert (r3.computed, r3.resumed) == (0, total)
        for name in ("ratio", "breakdown"):
            for ext in ("png", "svg"):
                f = study.output / f"{name}.{ext}"
                assert f.stat().st_size > 1000, f
        summary = list(csv.DictReader((study.output / "summary.csv").open()))
        assert {(s["cores"], s["analysis"]) for s in summary} == {
            (c, a) for c in ("2", "4") for a in ("pdms-hpts-ds", "first-fit")
        }
        assert all(int(s["sets"]) == 30 for s in summary)
        for s in summary:
            if s["analysis"] == "pdms-hpts-ds":
                assert float(s["ratio_lo"]) <= float(s["ratio"]) <= float(s["ratio_hi"]), s
            assert float(s["breakdown_ci95"]) > 0, s
        check_tidy_tables(study, r3)


def check_tidy_tables(study: ex.Study, run: ex.RunResult) -> None:
    """Issue 23: ``sets.csv`` has one typed row per task set, analysis and
    metric, agreeing with the journal and the summary."""
    results = run.results()
    rows = results.rows()
    journal = rows_of(study)
    # pdms-hpts-ds: accepted and breakdown; first-fit: breakdown.
    assert len(rows) == 3 * study.sets * len(study.axes["cores"])
    seen = Counter((r["cores"], r["analysis"], r["metric"], r["set"]) for r in rows)
    assert set(seen.values()) == {1}
    assert {(a, m) for _, a, m, _ in seen} == {
        ("pdms-hpts-ds", "accepted"),
        ("pdms-hpts-ds", "breakdown"),
        ("first-fit", "breakdown"),
    }
    for r in rows:
        assert isinstance(r["cores"], int) and isinstance(r["set"], int)
        assert isinstance(r["value"], float) and 0 <= r["set"] < study.sets
    summary = {(s["cores"], s["analysis"]): s for s in results.summary()}
    for c in study.axes["cores"]:
        acc = [r["value"] for r in rows if r["cores"] == c and r["metric"] == "accepted"]
        assert set(acc) <= {0.0, 1.0}
        assert sum(acc) == summary[(c, "pdms-hpts-ds")]["schedulable"]
    # Each set's breakdown is the journal's value for that set.
    by_point = {(j["point"], j["analysis"]): j["breakdown"].split() for j in journal}
    firsts = {p.key: p.first for p in study.points()}
    for r in rows:
        if r["metric"] == "breakdown":
            v = by_point[(r["point"], r["analysis"])][r["set"] - firsts[r["point"]]]
            assert r["value"] == float(v)
    if _has("pandas"):
        df = results.to_pandas()
        ratio = df[df.metric == "accepted"].groupby("cores").value.mean()
        for c in study.axes["cores"]:
            assert ratio[c] == pytest.approx(summary[(c, "pdms-hpts-ds")]["ratio"])
    if _has("pyarrow"):
        import pyarrow.parquet as pq

        table = pq.read_table(study.output / "sets.parquet")
        assert table.num_rows == len(rows)
        assert str(table.schema.field("cores").type) == "int64"
        assert str(table.schema.field("value").type) == "double"

    def test_other_study_in_same_output_is_refused(self, tmp_path: Path, client: Any) -> None:
        study = write_study(tmp_path, study_text(sets=4, chunk=4, cores="[2]"))
        ex.run(study, client=client, progress=False, plots=False)
        other = write_study(tmp_path, study_text(sets=4, chunk=4, cores="[2]").replace("7", "9"))
        with pytest.raises(ex.StudyError, match="different study"):
            ex.run(other, client=client, progress=False, plots=False)
        r = ex.run(other, client=client, progress=False, plots=False, fresh=True)
        assert r.computed == 1


class TestOutputSafety:
    """Issue 22: one run per output directory, duplicated rows repaired or
    refused, a damaged results file named with its line."""

    def test_second_run_on_the_same_output_is_refused(self, tmp_path: Path, client: Any) -> None:
        study = write_study(tmp_path, study_text(sets=4, chunk=2, cores="[2]"))
        code = (
            "import sys, time\n"
            "from pathlib import Path\n"
            "from rtgpu.experiment import OutputLock\n"
            "with OutputLock(Path(sys.argv[1])):\n"
            "    print('locked', flush=True)\n"
            "    time.sleep(60)\n"
        )
        holder = subprocess.Popen(
            [sys.executable, "-c", code, str(study.output)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
            with pytest.raises(ex.StudyError, match=rf"in use by another .*pid {holder.pid}\b"):
                ex.run(study, client=client, progress=False, plots=False)
            assert not (study.output / "results.csv").exists()
        finally:
            holder.kill()
            holder.wait()
        # Its holder gone (SIGKILL: the lock file stays), the lock is taken
        # over with a warning naming it.
        with pytest.warns(ex.StudyWarning, match=rf"pid {holder.pid},.*; gone"):
            r = ex.run(study, client=client, progress=False, plots=False)
        assert r.computed == 2
        assert not (study.output / LOCK_NAME).exists()

    def test_duplicated_rows_are_kept_once_with_a_warning(
        self, tmp_path: Path, client: Any
    ) -> None:
        study = write_study(tmp_path, study_text(sets=6, chunk=2, cores="[2, 4]"))
        ex.run(study, client=client, progress=False, plots=False)
        path = study.output / "results.csv"
        lines = path.read_text().splitlines(keepends=True)
        # Two runs at once appended every point twice (the second copy's
        # compute time differs).
        again = [ln.rsplit(",", 1)[0] + ",9.9999\n" for ln in lines[1:]]
        path.write_text("".join(lines + again))
        with pytest.warns(ex.StudyWarning, match=rf"{len(again)} duplicated row"):
            r = ex.run(study, client=client, progress=False, plots=False)
        assert (r.computed, r.resumed) == (0, 6)
        assert_exactly_once(study)
        summary = list(csv.DictReader((study.output / "summary.csv").open()))
        assert all(int(s["sets"]) == 6 for s in summary)
        # Copies that disagree: refused, naming both lines.
        bad = lines[1].split(",")
        bad[study_columns(study).index("breakdown")] = "0.123 0.456"
        path.write_text("".join([*lines, ",".join(bad)]))
        want = r"results.csv:14: point .* other results than on line 2"
        with pytest.raises(ex.StudyError, match=want):
            ex.run(study, client=client, progress=False, plots=False)

    def test_per_set_values_of_the_wrong_count_are_named_with_their_line(
        self, tmp_path: Path, client: Any
    ) -> None:
        study = write_study(tmp_path, study_text(sets=4, chunk=2, cores="[2]"))
        ex.run(study, client=client, progress=False, plots=False)
        path = study.output / "results.csv"
        lines = path.read_text().splitlines(keepends=True)
        col = study_columns(study).index("accepted")
        for cell, want in (
            ("1", r"accepted has 1 values for 2 sets"),
            ("1 x", r"accepted value 'x' is not a number"),
        ):
            row = next(csv.reader([lines[1]]))
            row[col] = cell
            path.write_text(lines[0] + ",".join(row) + "\n" + "".join(lines[2:]))
            with pytest.raises(ex.StudyError, match=rf"results.csv:2: {want}"):
                ex.run(study, client=client, progress=False, plots=False)

    def test_non_utf8_byte_is_named_with_its_line(self, tmp_path: Path, client: Any) -> None:
        study = write_study(tmp_path, study_text(sets=4, chunk=2, cores="[2]"))
        ex.run(study, client=client, progress=False, plots=False)
        path = study.output / "results.csv"
        good = path.read_bytes().split(b"\n")
        raw = list(good)
        raw[2] = raw[2][:5] + b"\xff" + raw[2][6:]
        path.write_bytes(b"\n".join(raw))
        want = rf"{path}:3: not UTF-8 \(byte 0xff at column 6\)"
        with pytest.raises(ex.StudyError, match=want):
            ex.run(study, client=client, progress=False, plots=False)
        out = subprocess.run(
            [sys.executable, "-m", "rtgpu.experiment", str(study.path), "--quiet"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 2, out.stderr
        assert "not UTF-8" in out.stderr and "Traceback" not in out.stderr, out.stderr
        # A multi-byte character cut by a crash in the last line: dropped
        # as any torn line, and its point recomputed.
        path.write_bytes(b"\n".join(good[:3]) + b"\n" + "cores=2#1,1,\u00e9".encode()[:-1])
        r = ex.run(study, client=client, progress=False, plots=False)
        assert r.computed == 1
        assert_exactly_once(study)
        # Stopped while writing the header: started over.
        path.write_bytes(b"point,ch")
        r = ex.run(study, client=client, progress=False, plots=False)
        assert r.computed == 2
        assert_exactly_once(study)


def study_columns(study: ex.Study) -> list[str]:
    with (study.output / "results.csv").open(newline="") as f:
        return next(csv.reader(f))


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# -- the command line ---------------------------------------------------------------


def rtgpu_binary() -> Path | None:
    for profile in ("debug", "release"):
        p = ROOT / "target" / profile / "rtgpu"
        if p.is_file():
            return p
    return None


class TestCommand:
    def test_python_module_runs_and_resumes(self, tmp_path: Path) -> None:
        s = write_study(tmp_path, study_text(sets=6, chunk=3, cores="[2]"))
        cmd = [sys.executable, "-m", "rtgpu.experiment", str(s.path), "--workers", "1"]
        out = subprocess.run([*cmd, "--quiet"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "2 points (2 computed, 0 already done)" in out.stdout
        out = subprocess.run([*cmd, "--quiet"], capture_output=True, text=True, timeout=120)
        assert "(0 computed, 2 already done)" in out.stdout

    def test_rtgpu_experiment(self, tmp_path: Path) -> None:
        exe = rtgpu_binary()
        if exe is None:
            pytest.skip("target/*/rtgpu not built (cargo build)")
        env = {**os.environ, "RTGPU_PYTHON": sys.executable}
        s = write_study(tmp_path, study_text(sets=4, chunk=2, cores="[2]"))
        out = subprocess.run(
            [str(exe), "experiment", str(s.path), "--workers", "1", "--no-plots"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert out.returncode == 0, out.stderr
        assert "sets/s" in out.stdout and "%" in out.stderr  # progress with rate
        # Not a terminal: plain lines, no carriage-return frames in logs, and
        # the cluster's start said rather than silent.
        assert "\r" not in out.stderr, out.stderr
        assert "starting a local Dask cluster of 1 worker process" in out.stderr
        assert_exactly_once(s)
        bad = subprocess.run(
            [str(exe), "experiment", str(tmp_path / "missing.toml")],
            capture_output=True,
            text=True,
            env=env,
        )
        assert bad.returncode == 2 and "no such study file" in bad.stderr
        nopy = subprocess.run(
            [str(exe), "experiment", str(s.path)],
            capture_output=True,
            text=True,
            env={**os.environ, "RTGPU_PYTHON": str(tmp_path / "no-python")},
        )
        assert nopy.returncode == 2 and "RTGPU_PYTHON" in nopy.stderr
        invalid = tmp_path / "bad.toml"
        invalid.write_text(study_text().replace("sets = 40", "sets = -1"))
        out = subprocess.run(
            [str(exe), "experiment", str(invalid)], capture_output=True, text=True, env=env
        )
        assert out.returncode == 2 and "sets must be >= 1" in out.stderr


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (from /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        # `pid (comm) state ppid ...`; comm may hold spaces and parens.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(d.name))
    return out


def _descendants(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        for c in _children(todo.pop()):
            seen.append(c)
            todo.append(c)
    return seen


def _state(pid: int) -> str:
    """The process's state letter (R, S, T, Z...), "" when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _wait_for(cond: Any, seconds: float, what: str) -> None:
    deadline = time.time() + seconds
    while not cond():
        if time.time() > deadline:
            pytest.fail(f"after {seconds} s: {what}")
        time.sleep(0.1)


class TestCommandSafety:
    """Issue 22, with the real ``rtgpu experiment`` and its Python runner:
    a killed ``rtgpu experiment`` takes its runner (and the runner its Dask
    workers) along; a second one on the same output is refused naming the
    first one's runner."""

    def start(self, study: ex.Study) -> tuple[subprocess.Popen[str], int]:
        exe = rtgpu_binary()
        if exe is None:
            pytest.skip("target/*/rtgpu not built (cargo build)")
        env = {**os.environ, "RTGPU_PYTHON": sys.executable}
        p = subprocess.Popen(
            [str(exe), "experiment", str(study.path), "--workers", "1", "--no-plots", "--quiet"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        path = study.output / "results.csv"

        def started() -> bool:
            assert p.poll() is None, p.communicate()
            return path.exists() and len(path.read_text().splitlines()) > 1

        _wait_for(started, 120, "no point finished")
        (runner,) = _children(p.pid)
        return p, runner

    def study(self, tmp: Path) -> ex.Study:
        # 120 points of 2 sets at m = 64 (about 0.1 s each): a run of
        # 10-20 s, long enough to be killed or joined mid-run.
        return write_study(tmp, study_text(sets=240, chunk=2, cores="[64]"))

    @pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
    def test_runner_dies_with_rtgpu_experiment(self, tmp_path: Path, sig: int) -> None:
        study = self.study(tmp_path)
        p, runner = self.start(study)
        family = [runner, *_descendants(runner)]
        assert len(family) >= 2, "no Dask worker process"
        os.kill(p.pid, sig)
        # (Not communicate(): a surviving runner would hold the pipes.)
        p.wait(timeout=60)
        _wait_for(
            lambda: not any(_running(q) for q in family),
            30,
            f"still running: {[q for q in family if _running(q)]}",
        )
        # Stopped, not finished: the study was cut short.
        total = len(list(study.points()))
        assert len({r["point"] for r in rows_of(study)}) < total
        _, err = p.communicate(timeout=10)
        if sig == signal.SIGTERM:
            # Forwarded: the runner stops as on Ctrl-C and says so.
            assert p.returncode == 128 + signal.SIGTERM, err
            assert "stopped by SIGTERM; finished points are kept" in err, err
        else:
            assert p.returncode == -signal.SIGKILL
        # Nothing runs beside the resume: every point once.
        exe = rtgpu_binary()
        env = {**os.environ, "RTGPU_PYTHON": sys.executable}
        out = subprocess.run(
            [str(exe), "experiment", str(study.path), "--workers", "1", "--no-plots", "--quiet"],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert out.returncode == 0, out.stderr
        assert "already done" in out.stdout and "(0 already done)" not in out.stdout
        assert_exactly_once(study)

    # On one fresh-clone CI run (2026-11-26) rtgpu experiment did not exit
    # within 60 s of SIGCONT + SIGTERM after a Ctrl-Z (not reproduced in 20
    # runs since). A stop's clean-up now ends within STOP_GRACE_S (30 s)
    # whatever Dask does (test_a_stop_whose_clean_up_hangs_still_ends).
    def test_ctrl_z_stops_the_runner_and_fg_continues_it(self, tmp_path: Path) -> None:
        study = self.study(tmp_path)
        p, runner = self.start(study)
        family = [runner, *_descendants(runner)]
        try:
            p.send_signal(signal.SIGTSTP)
            _wait_for(
                lambda: all(_state(q) == "T" for q in [p.pid, *family]),
                20,
                f"not all stopped: {[(q, _state(q)) for q in [p.pid, *family]]}",
            )
            p.send_signal(signal.SIGCONT)
            _wait_for(
                lambda: all(_state(q) not in ("T", "") for q in [p.pid, *family]),
                20,
                f"not all continued: {[(q, _state(q)) for q in [p.pid, *family]]}",
            )
        finally:
            p.send_signal(signal.SIGCONT)
            p.send_signal(signal.SIGTERM)
            try:
                _, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                states = [(q, _state(q)) for q in [p.pid, *family]]
                for q in family:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(q, signal.SIGKILL)
                p.kill()
                p.communicate()
                pytest.fail(f"no exit 60 s after SIGCONT + SIGTERM: {states}")
        assert p.returncode == 128 + signal.SIGTERM, err

    def test_second_rtgpu_experiment_on_the_same_output_is_refused(self, tmp_path: Path) -> None:
        study = self.study(tmp_path)
        p, runner = self.start(study)
        try:
            env = {**os.environ, "RTGPU_PYTHON": sys.executable}
            second = subprocess.run(
                [str(rtgpu_binary()), "experiment", str(study.path), "--workers", "1"],
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
            )
            assert second.returncode == 2, second.stderr
            assert f"in use by another rtgpu experiment (pid {runner}," in second.stderr
            assert "Traceback" not in second.stderr
        finally:
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=60)
        assert p.returncode == 128 + signal.SIGINT, err
        assert "stopped by SIGINT" in err


class TestGpuStudies:
    """The seed 000 and seed 004 studies' analyses on a few sets."""

    def rows(self, study: ex.Study, sets: int, **at: Any) -> list[dict[str, Any]]:
        p = next(
            p
            for p in study.points()
            if p.chunk == 0 and all(p.params[k] == v for k, v in at.items())
        )
        p = dataclasses.replace(p, sets=sets)
        return ex.compute_point(
            p, study.generator_spec(p.params), study.analyses, tuple(study.axes)
        )

    def test_seed000_overhead_aware(self) -> None:
        s = ex.load_study(ROOT / "studies" / "seed000-overheads.toml")
        light = self.rows(s, 4, i=3, u=2.0)
        assert [r["analysis"] for r in light] == [
            "overhead-klmirqd",
            "overhead-slih",
            "overhead-pai",
        ]
        assert all(r["schedulable"] == 4 for r in light)
        # Trimmed fill: the utilization is the axis value; 75 % of C of
        # 50-60 % of the tasks counts 16 times in the effective utilization.
        assert float(light[0]["utilization_mean"]) == pytest.approx(2.0, abs=1e-3)
        eff = float(light[0]["effective_utilization_mean"])
        assert 2.0 * (1 + 15 * 0.75 * 0.4) < eff < 2.0 * (1 + 15 * 0.75 * 0.7)
        full = self.rows(s, 2, i=6, u=12.0)
        assert all(r["schedulable"] == 0 for r in full)  # overheads on a full platform

    def test_seed004_blocking_against_rho(self) -> None:
        s = ex.load_study(ROOT / "studies" / "seed004-rho.toml")

        def blocking(rho: int, locking: str) -> list[float]:
            (r,) = self.rows(s, 3, cores=6, rho=rho, copy_locking=locking)
            assert r["schedulable"] == ""
            return [float(x) for x in r["blocking"].split()]

        # The generator does not depend on rho or the locking, so every point
        # of one cluster size sees the same sets: compare set by set. N^C is
        # rho - 1 (system memory, Lemma 2) <= rho g - 1 (DGL, Lemma 3) <=
        # rho g (rho g - 1) / 2 (nested, Lemma 4 as re-derived), and the bound
        # grows with N^C.
        for rho in (1, 2, 4):
            sysmem, dgl, nested = (blocking(rho, k) for k in ("system-memory", "dgl", "nested"))
            assert all(0 < a <= b <= c for a, b, c in zip(sysmem, dgl, nested))
        # Nested: N^C grows quadratically in rho g, and so does the bound.
        assert all(a < b for a, b in zip(blocking(2, "nested"), blocking(4, "nested")))


def test_public_names() -> None:
    assert rtgpu.experiment is ex
    assert "pdms-hpts-ds" in ex.ANALYSES and set(ex.METRICS) == {"ratio", "breakdown", "blocking"}


class TestIntervals:
    """The 95 % intervals of the summary and the figures (stats.py)."""

    def test_wilson_matches_closed_forms(self) -> None:
        from rtgpu.experiment.stats import Z95, wilson

        z2 = Z95 * Z95
        # k = 0 and k = n: the bounds are z²/(n + z²) from the certain end.
        assert wilson(0, 10) == (0.0, pytest.approx(z2 / (10 + z2)))
        assert wilson(10, 10) == (pytest.approx(10 / (10 + z2)), 1.0)
        lo, hi = wilson(5, 10)
        assert (lo, hi) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
        # Narrower with more sets, always around the estimate, inside [0, 1].
        for n in (1, 3, 50, 1000):
            for k in range(0, n + 1, max(1, n // 7)):
                a, b = wilson(k, n)
                assert 0.0 <= a <= k / n <= b <= 1.0
        assert wilson(50, 100)[1] - wilson(50, 100)[0] < wilson(5, 10)[1] - wilson(5, 10)[0]
        with pytest.raises(ValueError):
            wilson(11, 10)

    def test_mean_interval(self) -> None:
        from rtgpu.experiment.stats import Z95, mean_ci

        mean, half = mean_ci([1.0, 2.0, 3.0])
        assert mean == 2.0 and half == pytest.approx(Z95 / 3**0.5)
        assert mean_ci([4.0]) == (4.0, 0.0)
        assert all(x != x for x in mean_ci([]))  # nan


def test_a_stop_whose_clean_up_hangs_still_ends(tmp_path: Path) -> None:
    """The watchdog behind Ctrl-C and SIGTERM: a clean-up that hangs (as
    Dask's client close once did in CI after Ctrl-Z) ends after the grace
    time with 128 + the signal, and the runner's process group (its Dask
    workers) is killed with it."""
    code = (
        "import subprocess, sys, time\n"
        "from rtgpu.experiment.__main__ import _arm_watchdog\n"
        "worker = subprocess.Popen(['sleep', '60'])\n"
        "print(worker.pid, flush=True)\n"
        "_arm_watchdog(15, grace=0.5)\n"
        "time.sleep(60)  # a clean-up that never ends\n"
    )
    start = time.monotonic()
    p = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group of its own, as under rtgpu experiment
    )
    out, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert time.monotonic() - start < 20
    assert "the clean-up after SIGTERM took more than 0.5 s; exiting" in err, err
    worker = int(out.split()[0])
    _wait_for(lambda: not _running(worker), 10, f"worker {worker} still running")
