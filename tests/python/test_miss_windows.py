"""bench/device/miss_windows.py names what the kernel did around a miss."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "device" / "miss_windows.py"
T0 = 100_000_000_000  # CLOCK_MONOTONIC ns of the first release


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("miss_windows", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["miss_windows"] = mod
    spec.loader.exec_module(mod)
    return mod


def line(comm: str, cpu: int, at_us: float, event: str, rest: str) -> str:
    ns = T0 + int(at_us * 1000)
    return (
        f"  {comm}-42  [{cpu:03d}] d..2.  {ns // 10**9}.{ns % 10**9 // 1000:06d}: {event}: {rest}"
    )


def job(
    number: int, release_ms: int, start_us: float, response_us: float, miss: bool
) -> dict[str, object]:
    rel = release_ms * 1_000_000
    return {
        "task": 0,
        "job": number,
        "release": rel,
        "start": rel + int(start_us * 1000),
        "finish": rel + int(response_us * 1000),
        "response_time": int(response_us * 1000),
        "deadline_miss": miss,
        "pieces": [{"cpu_time": 200_000}],
    }


def switch(prev: str, state: str, nxt: str) -> str:
    return (
        f"prev_comm={prev} prev_pid=1 prev_prio=120 prev_state={state} "
        f"==> next_comm={nxt} next_pid=2 next_prio=-1"
    )


def test_verdicts_name_late_timers_waits_throttles_and_stalls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    me, spin = "rtgpu-task0", "rtgpu-awake3"
    events = []
    # Before each release the thread sleeps on CPU 3.
    for ms in (10, 20, 30, 40):
        events.append(line(me, 3, ms * 1000 - 500, "sched_switch", switch(me, "S", spin)))
    # Job 10: the CPU's timer fires 900 us late (a descheduled vCPU).
    events += [
        line(spin, 3, 10_900, "local_timer_entry", "vector=236"),
        line(spin, 3, 10_902, "sched_wakeup", f"comm={me} pid=42 prio=-1 target_cpu=003"),
        line(spin, 3, 10_905, "sched_switch", switch(spin, "R", me)),
    ]
    # Job 20: woken on time, but another thread holds the CPU for 950 us.
    events += [
        line(spin, 3, 20_001, "local_timer_entry", "vector=236"),
        line(spin, 3, 20_003, "sched_wakeup", f"comm={me} pid=42 prio=-1 target_cpu=003"),
        line("ld-linux", 3, 20_950, "sched_switch", switch("ld-linux", "R", me)),
    ]
    # Job 30: runs at once, is switched out runnable (runtime spent).
    events += [
        line(spin, 3, 30_001, "local_timer_entry", "vector=236"),
        line(spin, 3, 30_003, "sched_wakeup", f"comm={me} pid=42 prio=-1 target_cpu=003"),
        line(spin, 3, 30_005, "sched_switch", switch(spin, "R", me)),
        line(me, 3, 30_400, "sched_switch", switch(me, "R", spin)),
    ]
    # Job 40: runs at once, on its CPU throughout, finishes late anyway.
    events += [
        line(spin, 3, 40_001, "local_timer_entry", "vector=236"),
        line(spin, 3, 40_003, "sched_wakeup", f"comm={me} pid=42 prio=-1 target_cpu=003"),
        line(spin, 3, 40_005, "sched_switch", switch(spin, "R", me)),
    ]
    trace = tmp_path / "trace.txt"
    trace.write_text("# tracer: nop\n" + "\n".join(events) + "\n")
    run = {
        "run": {
            "started_at_monotonic": T0,
            "tasks": [{"name": "loop"}],
            "jobs": [
                job(9, 9, 5, 210, False),
                job(10, 10, 905, 1105, True),
                job(20, 20, 950, 1150, True),
                job(30, 30, 5, 1200, True),
                job(40, 40, 5, 1300, True),
            ],
        }
    }
    doc = tmp_path / "run.json"
    doc.write_text(json.dumps(run))
    assert load().main(["miss_windows.py", str(doc), str(trace)]) == 0
    out = capsys.readouterr().out
    assert "4 missed job(s)" in out
    for number, verdict in (
        (10, "late timer"),
        (20, "waited"),
        (30, "throttled"),
        (40, "stalled running"),
    ):
        assert f"loop job {number}: " in out
        assert f"verdict: {verdict}" in out.split(f"loop job {number}: ")[1].split("\n")[0]
    assert "verdicts: " in out and "late timer 1" in out


def test_wrong_arguments_print_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert load().main(["miss_windows.py"]) == 2
    assert "Usage" in capsys.readouterr().err
