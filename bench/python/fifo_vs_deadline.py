"""`rtgpu run --sched fifo` against `--sched deadline` on one machine, alternating.

Usage: python3 bench/python/fifo_vs_deadline.py EXAMPLE DURATION ROUNDS
(e.g. examples/control-2core.toml 5s 3), from the repository root with
target/release/rtgpu built. Prints, per policy and task, the misses and the
per-round maximum and mean response times, and the p99 of the delays no more
urgent job explains.
"""

import json
import subprocess
import sys


def main() -> None:
    ex, dur, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rows: dict[tuple[str, str], list[tuple[int, int, float, float]]] = {}
    delays: dict[str, list[float]] = {}
    for _ in range(rounds):
        for s in ["fifo", "deadline"]:
            cmd = ["./target/release/rtgpu", "run", ex, "--sched", s, "--duration", dur, "--json"]
            out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
            d = json.loads(out)["run"]
            dl = d["unexplained_delays"]
            n = len(dl)
            delays.setdefault(s, []).append(dl[min(n - 1, int(0.99 * n))] / 1e3 if n else 0.0)
            for t in d["tasks"]:
                rows.setdefault((s, t["name"]), []).append(
                    (
                        t["deadline_misses"],
                        t["jobs"],
                        t["max_response_time"] / 1e3,
                        t["mean_response_time"] / 1e3,
                    )
                )
    for s, v in sorted(delays.items()):
        print(f"{s:8s} unexplained delay p99 per round (us): {[round(x, 1) for x in v]}")
    for (s, name), r in sorted(rows.items()):
        misses = sum(x[0] for x in r)
        jobs = sum(x[1] for x in r)
        mx = [round(x[2], 1) for x in r]
        mean = [round(x[3], 1) for x in r]
        print(f"{s:8s} {name:16s} misses {misses}/{jobs}  max R (us) {mx}  mean R (us) {mean}")


if __name__ == "__main__":
    main()
