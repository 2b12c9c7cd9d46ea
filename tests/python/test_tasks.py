"""rtgpu.Task and the task-level analyses."""

from __future__ import annotations

import copy
import datetime
import pickle
import sys

import pytest

import rtgpu
from rtgpu import Task, bounds, edf, fp, generate, global_fp


class TestTask:
    def test_defaults_and_units(self) -> None:
        t = Task("2 ms", "10 ms")
        assert (t.wcet, t.period, t.deadline, t.jitter, t.blocking, t.id) == (
            2_000_000,
            10_000_000,
            10_000_000,
            0,
            0,
            0,
        )
        assert Task(2_000_000, 10_000_000) == t
        assert Task(datetime.timedelta(milliseconds=2), "0.01 s") == t
        assert t.utilization == pytest.approx(0.2)
        assert Task(2, 10, deadline=5).density == pytest.approx(0.4)

    def test_value_semantics(self) -> None:
        t = Task("2 ms", "10 ms", deadline="8 ms", jitter="1 us", blocking=5, id=3)
        assert hash(t) == hash(Task(2_000_000, 10_000_000, 8_000_000, 1_000, 5, 3))
        assert pickle.loads(pickle.dumps(t)) == t
        assert t.replace(wcet="3 ms").wcet == 3_000_000
        assert t.replace(wcet="3 ms").deadline == t.deadline
        assert t.wcet == 2_000_000  # unchanged: tasks are values
        with pytest.raises(AttributeError):
            t.wcet = 1  # type: ignore[misc]
        if sys.version_info >= (3, 13):
            assert copy.replace(t, id=4).id == 4  # type: ignore[attr-defined]

    def test_repr_round_trips(self) -> None:
        t = Task("2 ms", "10 ms", deadline="8 ms", jitter="250 us", id=1)
        assert repr(t) == (
            "Task(wcet='2 ms', period='10 ms', deadline='8 ms', jitter='250 us', id=1)"
        )
        assert eval(repr(t), {"Task": Task}) == t
        assert repr(Task(1, 4)) == "Task(wcet='1 ns', period='4 ns')"

    @pytest.mark.parametrize(
        ("kwargs", "error", "text"),
        [
            ({"wcet": 0, "period": 10}, ValueError, "wcet must be > 0 ns"),
            ({"wcet": -1, "period": 10}, ValueError, "wcet must be > 0 ns, got -1"),
            ({"wcet": 1, "period": 0}, ValueError, "period must be > 0 ns"),
            ({"wcet": 1, "period": 10, "deadline": 0}, ValueError, "deadline must be > 0"),
            ({"wcet": 1, "period": 10, "jitter": -5}, ValueError, "jitter must be >= 0 ns"),
            ({"wcet": "2 xs", "period": 10}, ValueError, "wcet: unknown unit `xs`"),
            ({"wcet": "2", "period": 10}, ValueError, "wcet: missing unit"),
            ({"wcet": 1.5, "period": 10}, TypeError, "wcet must be integer nanoseconds"),
            ({"wcet": True, "period": 10}, TypeError, "got a bool"),
            ({"wcet": 1, "period": [10]}, TypeError, "period must be integer nanoseconds"),
            ({"wcet": 2**64, "period": 10}, ValueError, "wcet is too large"),
            ({"wcet": 1, "period": 10, "id": -1}, ValueError, "id must be a non-negative"),
        ],
    )
    def test_invalid_arguments_name_the_argument(
        self, kwargs: dict[str, object], error: type[Exception], text: str
    ) -> None:
        with pytest.raises(error, match=text.replace("(", r"\(")):
            Task(**kwargs)  # type: ignore[arg-type]


def test_units_helpers() -> None:
    assert rtgpu.parse_duration("2.5 ms") == 2_500_000
    assert rtgpu.format_duration(2_500_000) == "2.5 ms"
    with pytest.raises(ValueError, match="not a whole number"):
        rtgpu.parse_duration("1.5 ns")


class TestFixedPriority:
    def test_textbook_rta(self, textbook: list[Task]) -> None:
        assert fp.response_times(textbook) == [1, 3, 10]
        assert fp.response_times(textbook, order="rm") == [1, 3, 10]
        assert fp.response_times(textbook, order="given") == [1, 3, 10]
        assert fp.response_times(textbook, order="audsley") == [1, 3, 10]
        assert fp.is_schedulable(textbook)
        over = [*textbook[:2], Task(4, 10)]
        assert fp.response_times(over) == [1, 3, None]
        assert not fp.is_schedulable(over)

    def test_results_follow_the_callers_order(self, textbook: list[Task]) -> None:
        reversed_ = list(reversed(textbook))
        assert fp.response_times(reversed_) == [10, 3, 1]
        # As given, the 10-period task has the highest priority.
        assert fp.response_times(reversed_, order="given")[0] == 3

    def test_single_response_time(self, textbook: list[Task]) -> None:
        assert fp.response_time(textbook[2], textbook[:2]) == 10
        assert fp.response_time(textbook[0]) == 1

    def test_priority_orders_return_new_lists(self) -> None:
        a = Task(3, 12, deadline=6, id=0)
        b = Task(1, 12, deadline=7, jitter=5, id=1)
        assert fp.dm_order([b, a]) == [a, b]
        short, frequent = Task(1, 20, deadline=5), Task(1, 10)
        assert fp.dm_order([frequent, short]) == [short, frequent]
        assert fp.rm_order([short, frequent]) == [frequent, short]
        assert not fp.is_schedulable([a, b])
        assert fp.audsley_order([a, b]) == [b, a]
        assert fp.is_schedulable([a, b], order="audsley")
        assert fp.response_times([a, b], order="audsley") == [4, 6]
        assert fp.audsley_order([Task(3, 4), Task(3, 4)]) is None

    def test_max_split(self) -> None:
        assert fp.max_split([Task(2, 10)], 5, 5, 100) == 4
        assert fp.max_split([Task(2, 10)], 5, 5, 3) == 3
        assert fp.max_split([Task("2 ms", "10 ms")], "5 ms", "5 ms", "1 s") == 4_000_000
        assert fp.max_split([Task(11, 10)], 5, 5, 100) is None

    def test_utilization_bounds(self) -> None:
        assert fp.liu_layland_bound(1) == pytest.approx(1.0)
        assert fp.liu_layland_bound(2) == pytest.approx(0.828427, abs=1e-6)
        assert fp.liu_layland_test([Task(5, 10), Task(3, 10)])
        assert not fp.liu_layland_test([Task(6, 10), Task(1, 4)])
        assert fp.hyperbolic_test([Task(6, 10), Task(1, 4)])

    def test_invalid_order(self, textbook: list[Task]) -> None:
        with pytest.raises(ValueError, match='order must be one of "dm", "rm"'):
            fp.response_times(textbook, order="edf")  # type: ignore[arg-type]

    def test_non_tasks_are_refused(self) -> None:
        with pytest.raises(TypeError, match=r"tasks\[1\] must be an rtgpu.Task, got tuple"):
            fp.response_times([Task(1, 4), (2, 6)])  # type: ignore[list-item]

    def test_any_iterable(self, textbook: list[Task]) -> None:
        assert fp.response_times(t for t in textbook) == [1, 3, 10]
        assert fp.response_times(tuple(textbook)) == [1, 3, 10]


class TestPartition:
    def test_splitting_succeeds_where_first_fit_fails(self, three_sixty: list[Task]) -> None:
        ds = rtgpu.partition(three_sixty, 2, "pdms-hpts-ds")
        assert isinstance(ds, rtgpu.Partition)
        assert ds.ok
        assert ds.unplaced is None
        assert ds.split_tasks == 1
        assert len(ds.cores) == 2
        assert all(isinstance(p, rtgpu.Piece) for core in ds.cores for p in core)
        # Every task's pieces add up to its wcet and each core passes RTA.
        for i, task in enumerate(three_sixty):
            pieces = ds.pieces(i)
            assert sum(p.wcet for p in pieces) == task.wcet
            assert [p.core for p in pieces] == ds.task_cores[i]
            assert pieces[-1].offset + pieces[-1].response_time <= task.deadline
        for core in ds.cores:
            assert fp.is_schedulable([p.as_task() for p in core], order="given")

        ff = rtgpu.partition(three_sixty, 2, "first-fit")
        assert not ff.ok
        assert ff.unplaced is not None
        assert ff.unplaced.reason == "no-core-left"
        assert ff.split_tasks == 0
        assert rtgpu.partition(three_sixty, 3, "first-fit").ok

    def test_default_is_pdms_hpts_ds(self, three_sixty: list[Task]) -> None:
        assert rtgpu.partition(three_sixty, 2).heuristic == "pdms-hpts-ds"
        assert rtgpu.partition(three_sixty, 2, "PDMS_HPTS").ok  # type: ignore[arg-type]

    def test_fit_options(self, three_sixty: list[Task]) -> None:
        p = rtgpu.partition(three_sixty, 3, "worst-fit", order="decreasing-size", priority="rm")
        assert p.heuristic == "worst-fit (decreasing-size, rm)"
        assert p.task_cores == [[0], [1], [2]]

    def test_infeasible_task(self) -> None:
        p = rtgpu.partition([Task(5, 10, deadline=4)], 2)
        assert not p.ok
        assert p.unplaced is not None and p.unplaced.reason == "infeasible"

    @pytest.mark.parametrize(
        ("kwargs", "text"),
        [
            ({"cores": 0}, "cores must be between 1"),
            ({"cores": 2, "heuristic": "magic"}, "heuristic must be one of"),
            ({"cores": 2, "heuristic": "pdms-hpts-ds", "order": "given"}, "order: pdms-hpts-ds"),
            ({"cores": 2, "heuristic": "pdms-hpts", "priority": "rm"}, "priority: pdms-hpts"),
            ({"cores": 2, "heuristic": "first-fit", "order": "random"}, "order must be one of"),
        ],
    )
    def test_invalid_arguments(
        self, three_sixty: list[Task], kwargs: dict[str, object], text: str
    ) -> None:
        with pytest.raises(ValueError, match=text):
            rtgpu.partition(three_sixty, **kwargs)  # type: ignore[arg-type]

    def test_repr(self, three_sixty: list[Task]) -> None:
        p = rtgpu.partition(three_sixty, 2)
        assert repr(p) == (
            "Partition(ok=True, heuristic='pdms-hpts-ds', cores=2, tasks=3, pieces=4, "
            "split_tasks=1)"
        )
        assert repr(p.cores[0][0]).startswith("Piece(index=")
        ff = rtgpu.partition(three_sixty, 2, "first-fit")
        assert "unplaced=Unplaced(index=2, piece=0, wcet='6 ms', reason='no-core-left')" in repr(ff)


class TestEdf:
    def test_gedf_tardiness_is_typed(self, three_sixty: list[Task]) -> None:
        r = edf.gedf_tardiness(three_sixty, 2)
        assert isinstance(r, edf.EdfResult)
        assert r.bounded and r.reason is None
        assert r.cores == 2
        assert r.bound == "lambda"
        assert len(r.tasks) == 3
        assert all(isinstance(t, edf.TaskTardiness) for t in r.tasks)
        assert [t.index for t in r.tasks] == [0, 1, 2]
        assert all(t.tardiness is not None for t in r.tasks)
        assert r.max_tardiness == max(t.tardiness or 0 for t in r.tasks)
        for task, t in zip(three_sixty, r.tasks):
            assert t.response_bound == task.deadline + (t.tardiness or 0)
        simple = edf.gedf_tardiness(three_sixty, 2, bound="simple")
        assert (simple.max_tardiness or 0) >= (r.max_tardiness or 0)
        assert repr(r).startswith("EdfResult(cores=2, bounded=True, max_tardiness=")
        assert repr(r.tasks[0]).startswith("TaskTardiness(index=0, tardiness=")

    def test_light_load_has_zero_tardiness(self) -> None:
        r = edf.gedf_tardiness([Task(1, 10), Task(2, 10)], 2)
        assert r.density_test and r.max_tardiness == 0

    def test_unbounded_says_why(self, three_sixty: list[Task]) -> None:
        r = edf.gedf_tardiness(three_sixty, 1)
        assert not r.bounded
        assert r.reason is not None and "exceeds 1 core" in r.reason
        assert r.max_tardiness is None
        jitter = edf.gedf_tardiness([Task(1, 10, jitter=1)], 1)
        assert not jitter.bounded and "tasks[0]" in (jitter.reason or "")

    def test_cedf_and_density(self, three_sixty: list[Task]) -> None:
        results = edf.cedf_tardiness([(2, three_sixty), (1, [Task(1, 10)])])
        assert [r.bounded for r in results] == [True, True]
        assert edf.density_test([Task(1, 10), Task(2, 10)], 2)
        assert not edf.density_test(three_sixty, 2)

    def test_invalid(self, three_sixty: list[Task]) -> None:
        with pytest.raises(ValueError, match="m must be a non-negative integer"):
            edf.gedf_tardiness(three_sixty, -1)
        with pytest.raises(ValueError, match="bound must be one of"):
            edf.gedf_tardiness(three_sixty, 2, bound="loose")  # type: ignore[arg-type]


class TestGlobalFp:
    def test_response_times(self, three_sixty: list[Task]) -> None:
        rts = global_fp.response_times(three_sixty, 2)
        assert rts[:2] == [6_000_000, 6_000_000]
        assert global_fp.response_times([Task(1, 10), Task(2, 10)], 2) == [1, 2]
        assert global_fp.is_schedulable([Task(1, 10), Task(2, 10)], 2)
        clustered = global_fp.clustered_response_times([(1, [Task(1, 4)]), (2, three_sixty)])
        assert clustered[0] == [1]
        assert clustered[1] == rts

    def test_audsley_refused(self, three_sixty: list[Task]) -> None:
        with pytest.raises(ValueError, match="OPA-compatible"):
            global_fp.response_times(three_sixty, 2, order="audsley")  # type: ignore[arg-type]


class TestBounds:
    def test_seed003_numbers(self) -> None:
        assert bounds.pdms_hpts_ds_size_bound() == pytest.approx(0.6547, abs=1e-4)
        assert bounds.pdms_hpts_size_bound() == pytest.approx(0.601307, abs=1e-6)
        assert bounds.pdms_hpts_minimizing_share() == pytest.approx(0.284401, abs=1e-6)
        assert bounds.pdms_hpts_utilization_bound(1) == pytest.approx(0.6931)
        assert bounds.lambert_w0(0.0) == 0.0
        assert abs(bounds.RMS_BOUND - 0.693147) < 1e-6
        assert abs(bounds.LIGHT_TASK_ALPHA - (2**0.5 - 1)) < 1e-12
        assert bounds.split_penalty_max(0.25) < 0.02
        r, _x, value = bounds.sblw_min(bounds.LIGHT_TASK_ALPHA, 8)
        assert r is None and value == pytest.approx(bounds.RMS_BOUND, abs=1e-6)

    def test_utilization_tests(self) -> None:
        light = [Task(3, 10) for _ in range(4)]  # U = 1.2 on 2 cores
        assert bounds.pdms_hpts_utilization_test(light, 2)
        assert bounds.pdms_hpts_ds_utilization_test(light, 2)
        assert not bounds.pdms_hpts_ds_utilization_test(light, 1)

    def test_minimisers_take_python_callables(self) -> None:
        x, fx = bounds.golden_section_min(lambda x: (x - 1.0) ** 2, 0.0, 3.0, 1e-9)
        assert x == pytest.approx(1.0, abs=1e-6) and fx == pytest.approx(0.0, abs=1e-9)
        x, _ = bounds.scan_then_golden_min(lambda x: abs(x - 0.3), 0.0, 1.0)
        assert x == pytest.approx(0.3, abs=1e-6)

        def boom(x: float) -> float:
            raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            bounds.golden_section_min(boom, 0.0, 1.0, 1e-6)
        with pytest.raises(ValueError, match="tol must be"):
            bounds.golden_section_min(abs, 0.0, 1.0, 0.0)
        with pytest.raises(ValueError, match="r must be between 1"):
            bounds.sblw(0.1, 0, 0.4)


class TestGenerate:
    def test_uunifast_tasks_reproducible(self) -> None:
        a = generate.uunifast_tasks(10, 0.85, "1 ms", "100 ms", seed=7)
        assert a == generate.uunifast_tasks(10, 0.85, 1_000_000, 100_000_000, seed=7)
        assert a != generate.uunifast_tasks(10, 0.85, "1 ms", "100 ms", seed=8)
        assert len(a) == 10 and [t.id for t in a] == list(range(10))
        assert sum(t.utilization for t in a) == pytest.approx(0.85, abs=1e-3)
        assert all(1_000_000 <= t.period <= 100_000_000 for t in a)

    def test_uunifast(self) -> None:
        v = generate.uunifast(5, 2.5, seed=1)
        assert len(v) == 5 and sum(v) == pytest.approx(2.5)

    def test_seed003(self) -> None:
        ts = generate.seed003_tasks(4, scale=1000, seed=3)
        assert sum(t.utilization for t in ts) > 4

    def test_invalid(self) -> None:
        with pytest.raises(ValueError, match="period_min"):
            generate.uunifast_tasks(3, 0.5, "10 ms", "1 ms")
        with pytest.raises(ValueError, match="utilization must be a finite number"):
            generate.uunifast_tasks(3, float("nan"), "1 ms", "10 ms")


def test_analyses_release_the_gil(three_sixty: list[Task]) -> None:
    # Smoke test: analyses run from threads concurrently and agree.
    from concurrent.futures import ThreadPoolExecutor

    sets = [generate.uunifast_tasks(20, 3.0, "1 ms", "1 s", seed=s) for s in range(8)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda ts: rtgpu.partition(ts, 4).ok, sets))
    assert results == [rtgpu.partition(ts, 4).ok for ts in sets]


def test_core_counts_are_cores_everywhere_and_m_still_works() -> None:
    tasks = [rtgpu.Task("6 ms", "10 ms") for _ in range(3)]
    by_cores = rtgpu.edf.gedf_tardiness(tasks, cores=2)
    assert by_cores.max_tardiness == rtgpu.edf.gedf_tardiness(tasks, m=2).max_tardiness
    assert by_cores.max_tardiness == rtgpu.edf.gedf_tardiness(tasks, 2).max_tardiness
    assert rtgpu.global_fp.response_times(tasks, cores=2) == rtgpu.global_fp.response_times(
        tasks, m=2
    )
    assert rtgpu.edf.density_test(tasks, cores=3) == rtgpu.edf.density_test(tasks, m=3)
    with pytest.raises(TypeError, match="cores= or m=, not both"):
        rtgpu.edf.gedf_tardiness(tasks, cores=2, m=2)
    with pytest.raises(TypeError, match="missing the core count"):
        rtgpu.global_fp.is_schedulable(tasks)
