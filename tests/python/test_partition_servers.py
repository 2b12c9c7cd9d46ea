"""``rtgpu.partition(..., servers=...)``: bandwidth servers charged on every core."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

import pytest

import rtgpu
from rtgpu import Task, fp

HEURISTICS = ["pdms-hpts-ds", "pdms-hpts", "first-fit", "best-fit", "worst-fit", "next-fit"]


def server_task(runtime: int, period: int) -> Task:
    """A server as the RTA sees it: C = Q, T, D = T, release jitter T - Q."""
    return Task(runtime, period, jitter=period - runtime)


def layout(p: rtgpu.Partition) -> list[list[tuple[int, int, int, int, int]]]:
    return [
        [(x.index, x.piece, x.wcet, x.offset, x.response_time) for x in core] for core in p.cores
    ]


@pytest.mark.parametrize("heuristic", HEURISTICS)
@pytest.mark.parametrize("cores", [2, 3])
def test_no_servers_is_todays_result(
    three_sixty: list[Task], heuristic: rtgpu.Heuristic, cores: int
) -> None:
    today = rtgpu.partition(three_sixty, cores, heuristic)
    none: tuple[Iterable[rtgpu.ServerParams] | None, ...] = (None, [], ())
    for servers in none:
        p = rtgpu.partition(three_sixty, cores, heuristic, servers=servers)
        assert repr(p) == repr(today)
        assert (p.ok, p.task_cores, p.split_tasks) == (
            today.ok,
            today.task_cores,
            today.split_tasks,
        )
        assert layout(p) == layout(today)
        assert p.servers == []


def test_fits_without_a_server_but_not_with_one(three_sixty: list[Task]) -> None:
    assert rtgpu.partition(three_sixty, 2).ok  # one task split over both cores
    p = rtgpu.partition(three_sixty, 2, servers=[("1 ms", "10 ms")])
    assert not p.ok
    assert p.unplaced is not None and p.unplaced.reason == "no-core-left"
    assert p.servers == [(1_000_000, 10_000_000)]
    assert repr(p).endswith(
        "servers=[('1 ms', '10 ms')], unplaced=Unplaced(index=2, piece=0, wcet='6 ms', "
        "reason='no-core-left'))"
    )
    # One core more, and every core passes the exact RTA with the server
    # above its pieces.
    p = rtgpu.partition(three_sixty, 3, servers=[("1 ms", "10 ms")])
    assert p.ok and p.unplaced is None
    for core in p.cores:
        assert fp.is_schedulable(
            [server_task(1_000_000, 10_000_000), *(x.as_task() for x in core)], order="given"
        )


def test_a_small_server_shifts_the_split(three_sixty: list[Task]) -> None:
    free = rtgpu.partition(three_sixty, 2)
    charged = rtgpu.partition(three_sixty, 2, servers=[("100 us", "10 ms")])
    assert charged.ok and charged.split_tasks == 1
    # The server's 100 us per period comes out of the split piece's room.
    first = charged.pieces(0)[0]
    assert first.wcet < free.pieces(0)[0].wcet
    for core in charged.cores:
        assert fp.is_schedulable(
            [server_task(100_000, 10_000_000), *(x.as_task() for x in core)], order="given"
        )


def test_a_server_too_big_for_any_task() -> None:
    tasks = [Task("6 ms", "10 ms")]
    assert rtgpu.partition(tasks, 4).ok
    p = rtgpu.partition(tasks, 4, "first-fit", servers=[("4.5 ms", "10 ms")])
    assert not p.ok
    assert p.unplaced is not None and p.unplaced.reason == "infeasible"


def test_several_servers_and_duration_forms(three_sixty: list[Task]) -> None:
    a = rtgpu.partition(
        three_sixty, 3, servers=[(100_000, "2 ms"), ("50 us", timedelta(milliseconds=1))]
    )
    pairs: list[rtgpu.ServerParams] = [("0.1 ms", 2_000_000), ("50 us", "1 ms")]
    b = rtgpu.partition(three_sixty, 3, servers=iter(pairs))
    # Any pair of durations will do, a list too.
    lists = [[100_000, "2 ms"], [50_000, "1 ms"]]
    c = rtgpu.partition(three_sixty, 3, servers=lists)  # type: ignore[arg-type]
    assert repr(a) == repr(b) == repr(c)
    assert a.servers == [(100_000, 2_000_000), (50_000, 1_000_000)]


@pytest.mark.parametrize(
    ("servers", "error", "text"),
    [
        ([(0, "1 ms")], ValueError, r"servers\[0\]: the runtime must be > 0 ns"),
        (
            [("1 ms", "2 ms"), ("3 ms", "2 ms")],
            ValueError,
            r"servers\[1\]: the runtime \(3000000 ns\) must be at most",
        ),
        ([(-1, "1 ms")], ValueError, r"servers\[0\] runtime must be >= 0 ns"),
        ([("1 ms", "often")], ValueError, r"servers\[0\] period: "),
        ([("1 ms",)], TypeError, r"servers\[0\] must be a pair \(runtime, period\)"),
        (["1 ms/2 ms"], TypeError, r"servers\[0\] must be a pair"),
        ("1 ms/2 ms", TypeError, "servers must be a sequence of"),
        (5, TypeError, "servers must be a sequence of"),
    ],
)
def test_invalid_servers(
    three_sixty: list[Task], servers: object, error: type[Exception], text: str
) -> None:
    with pytest.raises(error, match=text):
        rtgpu.partition(three_sixty, 2, servers=servers)  # type: ignore[arg-type]
