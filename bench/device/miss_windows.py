"""What the kernel did around each deadline miss of an `rtgpu run`.

Reads the run's JSON (`rtgpu run --json`, whose `started_at_monotonic`
places its jobs on CLOCK_MONOTONIC) and an ftrace text trace recorded with
`trace_clock` = `mono` (sched_switch, sched_wakeup, sched_migrate_task,
local_timer_entry, irq_handler_entry), and prints, per missed job, the
task thread's wake-up and runs and what its CPU did meanwhile, with one
verdict per miss:

- `late timer`: the CPU the thread slept on took no timer interrupt
  until well after the release (a halted or descheduled virtual CPU);
- `woken late`: the wake-up came late although the CPU's timer fired;
- `waited`: woken in time, but it did not run: other threads ran (named);
- `throttled`: it ran, was switched out while runnable (prev_state R)
  with no other reservation picked: its runtime ran out;
- `stalled running`: it was on its CPU the whole time and the response
  still exceeded the deadline: the time went where no guest event shows
  (the host took the virtual CPU).

Usage: python3 miss_windows.py RUN.json TRACE.txt [STAT0 STAT1]
(STAT0/1: `grep ^cpu /proc/stat` before and after, for steal time).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field

LINE = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?"
    r"(?P<s>\d+)\.(?P<us>\d+):\s+(?P<ev>\w+):\s*(?P<rest>.*)$"
)
FIELD = re.compile(r"(\w+)=(\S+)")
LATE_NS = 100_000


@dataclass
class Event:
    t: int  # ns, CLOCK_MONOTONIC
    cpu: int
    comm: str
    ev: str
    f: dict[str, str] = field(default_factory=dict)

    def words(self, origin: int) -> str:
        at = (self.t - origin) / 1e3
        if self.ev == "sched_switch":
            what = (
                f"{self.f.get('prev_comm')} ({self.f.get('prev_state')}) -> "
                f"{self.f.get('next_comm')}"
            )
        elif self.ev == "sched_wakeup":
            what = f"wake {self.f.get('comm')} on {self.f.get('target_cpu')}"
        elif self.ev == "sched_migrate_task":
            what = (
                f"migrate {self.f.get('comm')} {self.f.get('orig_cpu')}->{self.f.get('dest_cpu')}"
            )
        elif self.ev == "irq_handler_entry":
            what = f"irq {self.f.get('irq')} {self.f.get('name')}"
        else:
            what = self.ev
        return f"{at:+10.1f} us  cpu{self.cpu:<3} {what}"


def parse_trace(path: str) -> list[Event]:
    out: list[Event] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            frac = m["us"].ljust(9, "0")[:9]
            t = int(m["s"]) * 1_000_000_000 + int(frac)
            out.append(Event(t, int(m["cpu"]), m["comm"], m["ev"], dict(FIELD.findall(m["rest"]))))
    out.sort(key=lambda e: e.t)
    return out


def steal(stat0: str, stat1: str) -> str:
    def read(p: str) -> dict[str, int]:
        d: dict[str, int] = {}
        with open(p, encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 8:
                    d[parts[0]] = int(parts[8])
        return d

    a, b = read(stat0), read(stat1)
    rows = [f"{k} {10 * (b[k] - a.get(k, 0))} ms" for k in b if b[k] != a.get(k, 0)]
    return "steal time during the run (10 ms units): " + (", ".join(rows) or "none on any CPU")


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 5):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    run = doc["run"]
    t0 = int(run["started_at_monotonic"])
    names = [t["name"] for t in run["tasks"]]
    events = parse_trace(argv[2])
    print(f"trace: {len(events)} events, run starts at {t0 / 1e9:.6f} s (CLOCK_MONOTONIC)")
    if len(argv) == 5:
        print(steal(argv[3], argv[4]))
    by_thread: dict[str, list[Event]] = defaultdict(list)
    by_cpu: dict[int, list[Event]] = defaultdict(list)
    for e in events:
        by_cpu[e.cpu].append(e)
        for key in ("comm", "prev_comm", "next_comm"):
            c = e.f.get(key)
            if c and c.startswith("rtgpu-task"):
                by_thread[c].append(e)
    verdicts: Counter[str] = Counter()
    misses = [j for j in run["jobs"] if j.get("deadline_miss")]
    print(f"{len(misses)} missed job(s)\n")
    for j in misses:
        task = int(j["task"])
        thread = f"rtgpu-task{task}"
        rel = t0 + int(j["release"])
        fin = t0 + int(j["finish"])
        lo, hi = rel - 300_000, fin + 100_000
        mine = [e for e in by_thread[thread] if lo <= e.t <= hi]
        # Where the thread slept: the CPU of its last switch-out before release.
        before = [
            e
            for e in by_thread[thread]
            if e.t < rel and e.ev == "sched_switch" and e.f.get("prev_comm") == thread
        ]
        slept_on = before[-1].cpu if before else None
        wake = next(
            (
                e
                for e in mine
                if e.ev == "sched_wakeup" and e.f.get("comm") == thread and e.t >= rel - 20_000
            ),
            None,
        )
        timer = None
        if slept_on is not None:
            timer = next(
                (
                    e
                    for e in by_cpu[slept_on]
                    if e.t >= rel - 5_000 and e.ev in ("local_timer_entry", "sched_wakeup")
                ),
                None,
            )
        ins = [e for e in mine if e.ev == "sched_switch" and e.f.get("next_comm") == thread]
        outs_r = [
            e
            for e in mine
            if e.ev == "sched_switch"
            and e.f.get("prev_comm") == thread
            and e.f.get("prev_state", "").startswith("R")
            and e.t < fin
        ]
        first_in = next((e for e in ins if wake is None or e.t >= wake.t), None)
        if timer is not None and timer.t - rel > LATE_NS:
            verdict = "late timer"
        elif wake is None or wake.t - rel > LATE_NS:
            verdict = "woken late"
        elif first_in is not None and first_in.t - wake.t > LATE_NS:
            verdict = "waited"
        elif outs_r:
            verdict = "throttled"
        else:
            verdict = "stalled running"
        verdicts[verdict] += 1
        name = names[task] if task < len(names) else thread
        print(
            f"== {name} job {j['job']}: release {int(j['release']) / 1e6:.3f} ms, "
            f"start +{(int(j['start']) - int(j['release'])) / 1e3:.1f} us, "
            f"response {int(j['response_time']) / 1e3:.1f} us, "
            f"CPU time {sum(int(p['cpu_time']) for p in j['pieces']) / 1e3:.1f} us, "
            f"verdict: {verdict}"
        )
        print(
            f"   slept on cpu {slept_on}; first timer/wake there "
            f"{'-' if timer is None else f'+{(timer.t - rel) / 1e3:.1f} us'}; "
            f"wake {'-' if wake is None else f'+{(wake.t - rel) / 1e3:.1f} us'}; "
            f"first switch-in {'-' if first_in is None else f'+{(first_in.t - rel) / 1e3:.1f} us'}"
        )
        cpus = {e.cpu for e in mine} | ({slept_on} if slept_on is not None else set())
        window = sorted(
            (e for c in cpus for e in by_cpu[c] if rel - 50_000 <= e.t <= hi),
            key=lambda e: e.t,
        )
        shown = window[:60]
        for e in shown:
            print("   " + e.words(rel))
        if len(window) > len(shown):
            print(f"   ... {len(window) - len(shown)} more event(s)")
        print()
    print("verdicts: " + ", ".join(f"{k} {v}" for k, v in verdicts.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
