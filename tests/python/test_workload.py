"""Workload files: loading, validation errors, analysis reports."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

import rtgpu
from rtgpu import TaskVerdict, Verdict, WorkloadError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.toml"))

SIMPLE = """\
name = "simple"

[platform]
cores = 2

[overheads]
base = "zero"

[[task]]
name = "control"
wcet = "2 ms"
period = "10 ms"

[[task]]
name = "filter"
wcet = "3 ms"
period = "20 ms"
deadline = "15 ms"
"""


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
def test_every_example_loads_and_analyses(path: Path) -> None:
    w = rtgpu.load_workload(path)
    assert isinstance(w, rtgpu.Workload)
    assert w.tasks and w.cores >= 1
    assert sum(c.cores for c in w.clusters) == w.cores
    report = w.analyze()
    assert isinstance(report.verdict, Verdict)
    assert report.schedulable == (report.verdict is Verdict.SCHEDULABLE)
    assert [t.name for t in report.tasks] == [t.name for t in w.tasks]
    assert all(isinstance(t.verdict, TaskVerdict) for t in report.tasks)
    assert report.reason and report.method
    # JSON forms are valid JSON and agree with the objects.
    assert json.loads(report.to_json())["verdict"] == report.verdict.value
    assert json.loads(w.plan())["workload"] == w.name
    assert json.loads(w.to_json())["name"] == w.name


def test_examples_exist() -> None:
    assert EXAMPLE_FILES, f"no example workloads in {EXAMPLES}"


def test_parse_string_and_properties() -> None:
    w = rtgpu.parse_workload(SIMPLE, "simple.toml")
    assert w.name == "simple"
    assert w.cores == 2
    assert w.scheduler == "P-FP"
    control, filt = w.tasks
    assert (control.name, control.wcet, control.period, control.deadline) == (
        "control",
        2_000_000,
        10_000_000,
        10_000_000,
    )
    assert filt.deadline == 15_000_000
    assert control.jitter == 0 and control.blocking == 0
    assert control.uses_gpu is False and control.gpu is None
    assert control.reservation is False
    assert control.to_task() == rtgpu.Task("2 ms", "10 ms")
    assert filt.to_task().id == 1
    assert w.utilization == pytest.approx(0.2 + 0.15)


def test_analyze_report_is_typed() -> None:
    report = rtgpu.parse_workload(SIMPLE).analyze()
    assert report.verdict is Verdict.SCHEDULABLE
    assert report.schedulable and not report.soft
    assert report.total_utilization == pytest.approx(0.35)
    control = report.task("control")
    assert control.verdict is TaskVerdict.MEETS_DEADLINE
    assert control.response_time is not None and control.response_time <= control.deadline
    assert control.pieces and control.pieces[0].budget == control.wcet
    assert all(isinstance(c, rtgpu.CoreReport) for c in report.cores)
    assert all(isinstance(b, rtgpu.BoundCheck) for b in report.bounds)
    assert all(isinstance(n, str) for n in report.notes)
    with pytest.raises(KeyError):
        report.task("nope")


def test_pdms_split_example_splits_a_task() -> None:
    path = EXAMPLES / "pdms-split.toml"
    if not path.exists():
        pytest.skip("examples/pdms-split.toml not present")
    report = rtgpu.load_workload(path).analyze()
    assert report.verdict is Verdict.SCHEDULABLE
    split = [t for t in report.tasks if t.split]
    assert len(split) == 1
    pieces = split[0].pieces
    assert sum(p.budget for p in pieces) == split[0].wcet
    assert pieces[1].release_offset == pieces[0].budget


def test_error_names_line_column_and_field() -> None:
    text = SIMPLE.replace('period = "20 ms"', "period = 20")
    with pytest.raises(WorkloadError) as info:
        rtgpu.parse_workload(text, "bad.toml")
    e = info.value
    assert isinstance(e, ValueError)
    assert e.file == "bad.toml"
    assert (e.line, e.column) == (17, 10)
    assert e.field == "task[1].period"
    assert "missing unit" in e.message
    assert str(e).startswith("bad.toml:17:10: error in `task[1].period`: ")
    assert len(e.errors) == 1
    assert e.errors[0] == ("bad.toml", 17, 10, "task[1].period", e.message)
    assert str(e.errors[0]) == str(e)


def test_error_lists_every_problem() -> None:
    text = SIMPLE.replace('wcet = "2 ms"', 'wcet = "2 xs"').replace(
        'deadline = "15 ms"', 'deadlin = "15 ms"'
    )
    with pytest.raises(WorkloadError) as info:
        rtgpu.parse_workload(text, "two.toml")
    e = info.value
    assert len(e.errors) >= 2
    assert [d.line for d in e.errors] == sorted(d.line for d in e.errors)
    assert e.errors[0].field == "task[0].wcet"
    assert (e.file, e.line, e.field) == ("two.toml", e.errors[0].line, "task[0].wcet")
    assert len(str(e).splitlines()) == len(e.errors)


def test_toml_syntax_error_has_empty_field() -> None:
    with pytest.raises(WorkloadError) as info:
        rtgpu.parse_workload("[platform\ncores = 2\n")
    assert info.value.file == "<string>"
    assert info.value.line == 1
    assert info.value.field == ""


def test_workload_error_pickles() -> None:
    with pytest.raises(WorkloadError) as info:
        rtgpu.parse_workload("[platform\n")
    again = pickle.loads(pickle.dumps(info.value))
    assert str(again) == str(info.value)
    assert again.errors == info.value.errors


def test_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as info:
        rtgpu.load_workload(tmp_path / "missing.toml")
    assert info.value.filename == str(tmp_path / "missing.toml")


def test_load_accepts_str_and_pathlike(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text(SIMPLE)
    assert rtgpu.load_workload(str(path)).name == "simple"
    assert rtgpu.load_workload(path).name == "simple"


def test_workload_pickles() -> None:
    w = rtgpu.parse_workload(SIMPLE)
    again = pickle.loads(pickle.dumps(w))
    assert again.to_json() == w.to_json()
    assert again.analyze().to_json() == w.analyze().to_json()


def test_json_schema() -> None:
    schema = json.loads(rtgpu.json_schema())
    assert "task" in schema["properties"]


def test_reprs_are_informative() -> None:
    w = rtgpu.parse_workload(SIMPLE, "simple.toml")
    assert repr(w) == (
        "Workload(name='simple', scheduler='P-FP', tasks=2, cores=2, clusters=1, gpus=0)"
    )
    assert repr(w.tasks[0]).startswith(
        "WorkloadTask(name='control', wcet='2 ms', period='10 ms', deadline='10 ms'"
    )
    report = w.analyze()
    assert "verdict=Verdict.SCHEDULABLE" in repr(report)
    assert "verdict=TaskVerdict.MEETS_DEADLINE" in repr(report.tasks[0])
    assert "simple (P-FP): schedulable" in str(report)
    assert repr(report.cores[0]).startswith("CoreReport(core=0")
    assert repr(report.bounds[0]).startswith("BoundCheck(name=")
    assert repr(w.clusters[0]) == "Cluster(name='node0', cores=2, first_core=0, gpus=[])"
    # A repr is a valid Python expression of the values it shows.
    assert eval(repr(report.cores[0]).replace("CoreReport", "dict")) == {
        "core": 0,
        "cluster": 0,
        "utilization": pytest.approx(report.cores[0].utilization),
        "tasks": report.cores[0].tasks,
    }


def test_objects_are_read_only() -> None:
    w = rtgpu.parse_workload(SIMPLE)
    with pytest.raises(AttributeError):
        w.name = "x"  # type: ignore[misc]
    report = w.analyze()
    with pytest.raises(AttributeError):
        report.verdict = Verdict.NOT_SCHEDULABLE  # type: ignore[misc]


def test_reservation_property() -> None:
    w = rtgpu.parse_workload(
        '[platform]\ncores = 1\n[[task]]\nname = "r"\nwcet = "1 ms"\n'
        'period = "10 ms"\nreservation = true\n',
        "r.toml",
    )
    assert w.tasks[0].reservation is True


def test_analyze_method_suspension_aware_or_oblivious() -> None:
    w = rtgpu.load_workload(EXAMPLES / "perception-1gpu.toml")
    aware = w.analyze()
    oblivious = w.analyze(method="oblivious")
    # The demo: the suspension-aware analysis bounds every task, the seeds'
    # suspension-oblivious one does not (its GPU wait alone exceeds the
    # cameras' periods).
    assert aware.verdict == Verdict.SCHEDULABLE
    assert oblivious.verdict == Verdict.NOT_SCHEDULABLE
    assert aware.suspension_aware and not oblivious.suspension_aware
    assert aware.gpu_analysis is not None and "suspension-aware" in aware.gpu_analysis
    cam = next(t for t in aware.tasks if t.name == "camera-front")
    assert cam.verdict == TaskVerdict.MEETS_DEADLINE
    assert cam.response_time is not None and cam.response_time < cam.deadline
    assert cam.depends_on == []
    with pytest.raises(ValueError, match="method"):
        w.analyze(method="psychic")


def test_simulate_method_places_and_bounds_by_that_analysis() -> None:
    w = rtgpu.load_workload(EXAMPLES / "perception-1gpu.toml")
    aware = w.simulate(duration="1 s")
    oblivious = w.simulate(duration="1 s", method="oblivious")
    cam = next(t for t in aware.tasks if t.name == "camera-front")
    cam_o = next(t for t in oblivious.tasks if t.name == "camera-front")
    # The aware analysis bounds the camera, the oblivious one does not.
    assert cam.bound is not None and cam.max_response <= cam.bound
    assert cam_o.bound is None
    with pytest.raises(ValueError, match="method"):
        w.simulate(duration="1 s", method="psychic")


def test_under_deadline_makes_every_task_a_reservation() -> None:
    w = rtgpu.load_workload(EXAMPLES / "perception-1gpu.toml")
    d = w.under_deadline()
    assert all(t.reservation for t in d.tasks)
    assert not any(t.reservation for t in w.tasks)
    report = d.analyze()
    assert any("SCHED_DEADLINE" in n for n in report.notes)
    sim = d.simulate(duration="200 ms")
    assert sum(t.jobs for t in sim.tasks) > 0
    late = rtgpu.parse_workload(
        '[platform]\ncores = 1\n[[task]]\nname = "x"\nwcet = "1 ms"\n'
        'period = "10 ms"\ndeadline = "20 ms"\n'
    )
    with pytest.raises(ValueError, match="task x: deadline 20 ms > period 10 ms"):
        late.under_deadline()


def test_ctrl_c_stops_a_long_simulation() -> None:
    """SIGINT during `simulate()` raises KeyboardInterrupt promptly (issue 22)."""
    import signal
    import subprocess
    import sys
    import time

    code = (
        "import rtgpu, sys\n"
        f"w = rtgpu.load_workload({str(EXAMPLES / 'feature-tracking.toml')!r})\n"
        "print('started', flush=True)\n"
        "try:\n"
        "    w.simulate(duration='100000 s')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(3)\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "started"
    time.sleep(1.0)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert time.monotonic() - sent < 10, "stopped promptly"
    assert p.returncode == 3, (out, err)
    assert "interrupted" in out


def test_report_rows_are_flat_typed_and_match_the_objects() -> None:
    report = rtgpu.load_workload(EXAMPLES / "perception-1gpu.toml").analyze()
    rows = report.rows()
    assert [r["name"] for r in rows] == [t.name for t in report.tasks]
    for row, t in zip(rows, report.tasks):
        assert row["response_time"] == t.response_time
        assert row["verdict"] == t.verdict.value
        assert isinstance(row["wcet"], int) and isinstance(row["uses_gpu"], bool)
        if t.response_time is not None:
            assert row["slack"] == t.deadline - t.response_time
        gpu = t.gpu
        assert row["gpu_wait"] == (gpu.token_blocking if gpu else None)
    assert any(r["uses_gpu"] and r["gpu_wait"] is not None for r in rows)
    assert all(r["cores"] for r in rows)


def test_report_to_pandas_keeps_integers_exact() -> None:
    pd = pytest.importorskip("pandas")
    report = rtgpu.load_workload(EXAMPLES / "perception-1gpu.toml").analyze()
    df = report.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df["name"]) == [t.name for t in report.tasks]
    # Nullable integers: a missing GPU wait does not turn nanoseconds into floats.
    assert str(df["gpu_wait"].dtype) == "Int64"
    assert str(df["response_time"].dtype) == "Int64"
    assert int(df["wcet"].sum()) == sum(t.wcet for t in report.tasks)
