"""``Workload.simulate``: the workload in virtual time (what ``rtgpu simulate`` runs)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

import rtgpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Seven tasks on four cores and one GPU, interrupts handled by klmirqd: a
# second of virtual time takes milliseconds.
PERCEPTION = EXAMPLES / "perception-1gpu.toml"
SECOND = 1_000_000_000


@pytest.fixture(scope="module")
def perception() -> rtgpu.Workload:
    return rtgpu.load_workload(PERCEPTION)


def released(duration: int, period: int) -> int:
    """Jobs of a periodic task without jitter released in [0, duration)."""
    return -(-duration // period)


def test_result_is_typed_and_counts_jobs(perception: rtgpu.Workload) -> None:
    r = perception.simulate(duration="1 s", seed=7)
    assert isinstance(r, rtgpu.SimResult)
    assert (r.workload, r.scheduler) == ("perception-1gpu", "C-FP")
    assert (r.duration, r.end, r.seed) == (SECOND, SECOND, 7)
    assert r.klmirqd == "dependent" and r.klmirqd_server is None
    assert [t.name for t in r.tasks] == [t.name for t in perception.tasks]
    for stats, task in zip(r.tasks, perception.tasks):
        assert isinstance(stats, rtgpu.SimTaskStats)
        assert (stats.period, stats.deadline) == (task.period, task.deadline)
        assert stats.uses_gpu == task.uses_gpu
        # Periodic releases at 0, T, 2T, ... (no jitter in the file): every
        # release in [0, 1 s) is a finished or an unfinished job.
        assert stats.jobs + stats.unfinished == released(SECOND, task.period)
        assert stats.max_response >= stats.mean_response > 0
        assert stats.max_response_pct == pytest.approx(100 * stats.max_response / task.period)
    assert r.jobs == sum(t.jobs for t in r.tasks)
    assert r.misses == sum(t.misses for t in r.tasks) == 0
    assert r.tasks[0].jobs == 1000  # joint-control, every 1 ms
    assert r.task("lidar").uses_gpu and r.task("lidar").jobs == 10
    with pytest.raises(KeyError, match="no task named 'nope'"):
        r.task("nope")
    assert r.inversions == sorted(r.inversions)
    assert any(e.name == "gpu0 exec" and 0 < e.mean <= 1 for e in r.engines)
    assert len(r.cores) == perception.cores
    assert all(isinstance(c, rtgpu.UtilizationSeries) and len(c.values) == 100 for c in r.cores)
    assert r.vgpus == []
    assert repr(r) == (
        "SimResult(workload='perception-1gpu', scheduler='C-FP', duration='1 s', seed=7, "
        "klmirqd='dependent', jobs=1265, misses=0, tasks=7)"
    )
    assert repr(r.tasks[0]).startswith("SimTaskStats(name='joint-control', jobs=1000,")
    with pytest.raises(AttributeError):
        r.jobs = 0  # type: ignore[misc]


def test_bounds_are_the_analysis_bounds(perception: rtgpu.Workload) -> None:
    r = perception.simulate(duration="1 s")
    report = perception.analyze()
    assert [t.bound for t in r.tasks] == [t.response_time for t in report.tasks]
    bounded = [t for t in r.tasks if t.bound is not None]
    assert bounded, "the CPU-only control loops have analysis bounds"
    # Observed within the analysed bound (seeds' claim, checked on the example).
    assert all(t.max_response <= t.bound for t in bounded if t.bound is not None)


def test_to_json_is_the_cli_json(perception: rtgpu.Workload) -> None:
    r = perception.simulate(duration="1 s")
    doc = json.loads(r.to_json())
    assert list(doc) == [
        "workload",
        "scheduler",
        "duration",
        "end",
        "seed",
        "jobs",
        "misses",
        "tasks",
        "inversions",
        "engines",
        "vgpus",
        "cores",
        "notes",
    ]
    assert (doc["jobs"], doc["misses"], doc["inversions"]) == (r.jobs, r.misses, r.inversions)
    for d, t in zip(doc["tasks"], r.tasks):
        assert (d["name"], d["jobs"], d["max_response"]) == (t.name, t.jobs, t.max_response)
        assert d["mean_response"] == pytest.approx(t.mean_response)
    assert doc["notes"] == r.notes


def test_durations_in_every_form_agree(perception: rtgpu.Workload) -> None:
    runs = [
        perception.simulate(duration=d).to_json()
        for d in (SECOND // 2, "500 ms", timedelta(milliseconds=500))
    ]
    assert runs[0] == runs[1] == runs[2]
    assert json.loads(runs[0])["duration"] == SECOND // 2


def test_same_seed_same_result(perception: rtgpu.Workload) -> None:
    # Random execution times and sporadic gaps, so that the seed matters.
    def run(seed: int) -> str:
        return perception.simulate(duration="1 s", seed=seed, bcet=50, sporadic=20).to_json()

    first = run(3)
    assert run(3) == first
    assert run(4) != first
    # Fewer releases than periodic ones, never more.
    r = perception.simulate(duration="1 s", seed=3, sporadic=20)
    assert all(t.jobs + t.unfinished <= released(SECOND, t.period) for t in r.tasks)
    assert any(t.jobs + t.unfinished < released(SECOND, t.period) for t in r.tasks)


def test_independent_klmirqd_with_a_small_server(perception: rtgpu.Workload) -> None:
    dependent = perception.simulate(duration="1 s")
    # One bottom half takes 29.9 us (Table III) and the server gets 10 us
    # every 5 ms: the GPU tasks' completions queue up behind it.
    small = perception.simulate(
        duration="1 s", klmirqd="independent", klmirqd_server=("10 us", "5 ms")
    )
    assert small.klmirqd == "independent"
    assert small.klmirqd_server == (10_000, 5_000_000)
    assert any(
        "klmirqd's independent servers (1 server(s) of 10 us every 5 ms)" in n for n in small.notes
    )
    assert not any("klmirqd's independent" in n for n in dependent.notes)
    assert dependent.misses == 0 and small.misses > 0
    for d, s in zip(dependent.tasks, small.tasks):
        if d.uses_gpu:
            assert s.max_response > d.max_response
            assert s.misses > 0
        else:
            assert s.misses == 0
    # The same mode without a server sizes one from the bottom halves.
    sized = perception.simulate(duration="1 s", klmirqd="Independent")  # type: ignore[arg-type]
    assert sized.klmirqd == "independent"
    assert sized.klmirqd_server is not None
    runtime, period = sized.klmirqd_server
    assert 10_000 < runtime <= period
    assert sized.misses == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"klmirqd": "sometimes"}, ValueError, 'klmirqd must be one of "dependent", "independent"'),
        (
            {"klmirqd_server": ("1 ms", "2 ms")},
            ValueError,
            'klmirqd_server: a server needs klmirqd="independent"',
        ),
        (
            {"klmirqd": "independent", "klmirqd_server": ("3 ms", "2 ms")},
            ValueError,
            r"klmirqd_server: the runtime \(3000000 ns\) must be at most the period",
        ),
        (
            {"klmirqd": "independent", "klmirqd_server": (1000, "2 ms")},
            ValueError,
            "klmirqd_server: the runtime must be at least 1024 ns",
        ),
        (
            {"klmirqd": "independent", "klmirqd_server": (0, "2 ms")},
            ValueError,
            "klmirqd_server: the runtime must be > 0 ns",
        ),
        (
            {"klmirqd": "independent", "klmirqd_server": ("1 ms", "soon")},
            ValueError,
            "klmirqd_server period: ",
        ),
        (
            {"klmirqd": "independent", "klmirqd_server": "200 us/2 ms"},
            TypeError,
            "klmirqd_server must be a pair",
        ),
        (
            {"klmirqd": "independent", "klmirqd_server": (1, 2, 3)},
            TypeError,
            "klmirqd_server must be a pair",
        ),
        ({"duration": 0}, ValueError, "duration must be > 0 ns"),
        ({"duration": "ten seconds"}, ValueError, "duration: "),
        ({"duration": 1.5}, TypeError, "duration must be integer nanoseconds"),
        ({"seed": -1}, ValueError, "seed must be a non-negative integer"),
        ({"bcet": 120}, ValueError, r"bcet must be a percentage in \[0, 100\]"),
        ({"sporadic": float("nan")}, ValueError, "sporadic must be a percentage"),
        ({"scenario": "AEDG"}, ValueError, "scenario: scenario `AEDG`"),
    ],
)
def test_bad_arguments_name_the_argument(
    perception: rtgpu.Workload, kwargs: dict[str, object], error: type[Exception], text: str
) -> None:
    with pytest.raises(error, match=text):
        perception.simulate(**kwargs)  # type: ignore[arg-type]


def test_arguments_are_keyword_only(perception: rtgpu.Workload) -> None:
    with pytest.raises(TypeError):
        perception.simulate("1 s")  # type: ignore[call-arg]


def test_options_change_the_run(perception: rtgpu.Workload) -> None:
    base = perception.simulate(duration="1 s")
    quiet = perception.simulate(duration="1 s", overheads=False)
    assert not any("overheads injected" in n for n in quiet.notes)
    assert any("overheads injected" in n for n in base.notes)
    assert quiet.task("joint-control").max_response < base.task("joint-control").max_response
    drained = perception.simulate(duration="1 s", drain=True)
    assert drained.end >= SECOND and all(t.unfinished == 0 for t in drained.tasks)
    assert perception.simulate(duration="1 s", scenario="aedg,X").to_json() != base.to_json()


def test_simulations_run_in_threads(perception: rtgpu.Workload) -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(
            pool.map(
                lambda s: perception.simulate(duration="1 s", seed=s, bcet=50).to_json(), range(4)
            )
        )
    assert runs == [
        perception.simulate(duration="1 s", seed=s, bcet=50).to_json() for s in range(4)
    ]


def test_a_plan_runs_without_analysing_again(tmp_path: Path) -> None:
    w = rtgpu.load_workload(EXAMPLES / "pdms-split.toml")
    analysed = w.simulate(duration="1 s")
    text = w.plan()
    path = tmp_path / "plan.json"
    path.write_text(text)
    for plan in (text, path, str(path)):
        planned = w.simulate(duration="1 s", plan=plan)
        assert planned.jobs == analysed.jobs
        assert [(t.name, t.max_response, t.bound) for t in planned.tasks] == [
            (t.name, t.max_response, t.bound) for t in analysed.tasks
        ]
    # Another workload's plan is refused, naming what differs.
    other = rtgpu.load_workload(EXAMPLES / "quickstart.toml").plan()
    with pytest.raises(ValueError, match="plan of workload `quickstart`, not `pdms-split`"):
        w.simulate(duration="1 s", plan=other)
    edited = json.loads(text)
    edited["tasks"][1]["name"] = "middle"
    with pytest.raises(ValueError, match="task 2 is `medium` in the workload but `middle`"):
        w.simulate(duration="1 s", plan=json.dumps(edited))
    with pytest.raises(ValueError, match="cannot read the plan"):
        w.simulate(duration="1 s", plan=tmp_path / "missing.json")


def test_per_job_rows_when_recorded() -> None:
    w = rtgpu.load_workload(EXAMPLES / "perception-1gpu.toml")
    r = w.simulate(duration="300 ms", record_jobs=True)
    rows = r.job_rows()
    assert len(rows) == r.jobs
    names = {t.name for t in r.tasks}
    assert {row["task"] for row in rows} <= names
    for row in rows:
        if row["response"] is not None:
            assert row["finish"] - row["release"] == row["response"]
    # The worst recorded response of each task is its reported maximum.
    for t in r.tasks:
        worst = max((x["response"] or 0) for x in rows if x["task"] == t.name)
        assert worst == t.max_response
    with pytest.raises(ValueError, match="record_jobs=True"):
        w.simulate(duration="100 ms").job_rows()
