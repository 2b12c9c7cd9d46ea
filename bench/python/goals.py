#!/usr/bin/env python3
"""Issue 24's scaling goals, measured in one run, beside a baseline.

    .venv/bin/python bench/python/goals.py [--old REV | --old-bin DIR]
        [--rounds N] [--log PATH]

Builds this checkout (`rtgpu`, `rtgpu-bench`, `sim`, `scale`), and, with
`--old REV`, the same binaries of git revision REV in a temporary work
tree (`--old-bin DIR` takes them from DIR instead; `sim` reads
examples/feature-tracking.toml from the source tree it was built in, which
must still be there). Then, for N rounds
(default 3), each build in turn (the order swapped every other round, so
neither always runs first on a machine whose speed drifts):

- `rtgpu analyze` of 1,000, 10,000 and 100,000 CPU-only tasks on 4 cores
  (`scale --emit-toml`: P-FP, PDMS_HPTS_DS, U = 0.7 m), CPU time of the
  whole command (best of 5, 3 and 1 runs);
- `rtgpu simulate --duration 10s` of 1,000 and 10,000 tasks on 4 cores
  (`scripts/scale-workload.py`), G-EDF, and P-FP with a saved plan
  (best of 3 runs); the 1,000- and 10,000-task runs of each 10x ratio
  alternate;
- `sim --case cpu --tasks 10000` and `sim --case gpu` (jobs per CPU s);
- `rtgpu-bench --seconds 1`: PDMS_HPTS_DS sets per second with seed 003's
  periods (full plan and decision).

CPU times are the children's user + system time (`os.wait4`), so other
load on the machine slows them less than wall time, but does not leave
them alone: compare builds within a round. The log has every sample, then
a table of best and median per build, the 10x-task ratios per round, and
each goal with its verdict for each build.

`--instructions` adds, per build, what does not depend on the machine's
load: instruction counts (`valgrind --tool=callgrind`) of `rtgpu analyze`
and `rtgpu simulate` of 1,000 and 10,000 tasks (the whole command) and of
the simulator's engine per GPU and per CPU-only job, with the 10x-task
ratios in instructions (about 10 minutes per build: the 10,000-task
simulations run some 50x slower under callgrind).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINS = ("rtgpu", "rtgpu-bench", "sim", "scale")

# (metric, goal, larger is better)
GOALS: list[tuple[str, float, bool, str]] = [
    ("analyze_100000_s", 5.0, False, "analyze 100,000 tasks < 5 s"),
    ("analyze_ratio", 15.0, False, "analyze 10x tasks <= 15x CPU"),
    ("simulate_gedf_ratio", 15.0, False, "simulate G-EDF 10x tasks <= 15x CPU"),
    ("simulate_pfp_ratio", 15.0, False, "simulate P-FP --plan 10x tasks <= 15x CPU"),
    ("sim_cpu_10000_jobs_s", 5e6, True, "CPU-only sim n=10,000 >= 5 M jobs/s"),
    ("sim_gpu_jobs_s", 1.5e6, True, "GPU sim >= 1.5 M jobs/s"),
    ("pdms_full_sets_s", 80e3, True, "PDMS_HPTS_DS full plan >= 80 k sets/s"),
]


def log(out: list[str], line: str) -> None:
    print(line, flush=True)
    out.append(line)


def build(src: Path, target: Path) -> Path:
    """Builds the benchmark binaries of the checkout `src`; returns their folder."""
    env = dict(os.environ, CARGO_TARGET_DIR=str(target))
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "rtgpu-cli", "-p", "rtgpu-bench"],
        cwd=src,
        env=env,
        check=True,
    )
    return target / "release"


def cpu_time(cmd: list[str]) -> float:
    """Runs `cmd` once; its user + system CPU seconds (exit status checked)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # Drained before the wait (a full pipe would block the child); the
    # wait itself gives the child's resource usage.
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # 1: analyze / simulate reported misses, still timed
        sys.exit(f"goals: {' '.join(cmd)} exited {code}: {err.strip()[-500:]}")
    return usage.ru_utime + usage.ru_stime


def best_cpu(cmd: list[str], runs: int) -> float:
    return min(cpu_time(cmd) for _ in range(runs))


def output_of(cmd: list[str]) -> str:
    p = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"goals: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-500:]}")
    return p.stdout


def jobs_per_cpu_s(text: str) -> float:
    m = re.search(r"([\d.]+) jobs per CPU s", text)
    if not m:
        sys.exit(f"goals: no 'jobs per CPU s' in sim output: {text!r}")
    return float(m.group(1))


def sets_per_s(text: str, case: str) -> float:
    m = re.search(re.escape(case) + r"\s+(\d+) sets/s", text)
    if not m:
        sys.exit(f"goals: no line {case!r} in rtgpu-bench output")
    return float(m.group(1))


def workloads(bins: Path, work: Path) -> dict[str, Path]:
    """The workload files and plans, written once with the new build."""
    files: dict[str, Path] = {}
    for n in (1000, 10000, 100000):
        path = work / f"analyze-{n}.toml"
        subprocess.run(
            [str(bins / "scale"), "--emit-toml", str(n), "4", str(path)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        files[f"analyze-{n}"] = path
    script = ROOT / "scripts" / "scale-workload.py"
    for n in (1000, 10000):
        for sched in ("G-EDF", "P-FP"):
            path = work / f"sim-{sched}-{n}.toml"
            path.write_text(output_of([sys.executable, str(script), str(n), "4", sched]))
            files[f"sim-{sched}-{n}"] = path
        plan = work / f"plan-{n}.json"
        subprocess.run(
            [str(bins / "rtgpu"), "analyze", str(files[f"sim-P-FP-{n}"]), "--plan", str(plan)],
            check=False,
            stdout=subprocess.DEVNULL,
        )
        files[f"plan-{n}"] = plan
    return files


def goal_commands(bins: Path, files: dict[str, Path], n: int) -> dict[str, list[str]]:
    """The analyze and simulate goals' commands at `n` tasks (simulate only
    at 1,000 and 10,000), the same for timing and for `--instructions`."""
    rtgpu = str(bins / "rtgpu")
    cmds = {f"analyze_{n}": [rtgpu, "analyze", str(files[f"analyze-{n}"])]}
    if n <= 10000:
        sim = [rtgpu, "simulate", "--duration", "10s"]
        cmds[f"simulate_gedf_{n}"] = [*sim, str(files[f"sim-G-EDF-{n}"])]
        cmds[f"simulate_pfp_{n}"] = [
            *sim,
            str(files[f"sim-P-FP-{n}"]),
            "--plan",
            str(files[f"plan-{n}"]),
        ]
    return cmds


def best_cpu_pair(small: list[str], big: list[str], runs: tuple[int, int]) -> tuple[float, float]:
    """The best CPU times of `small` (runs[0] runs) and `big` (runs[1]),
    their runs alternating: the two sides of a 10x ratio then sample the
    same phases of a VM whose speed drifts, instead of one side's runs all
    landing in a fast phase and the other's in a slow one."""
    best = [float("inf"), float("inf")]
    for k in range(max(runs)):
        for side, cmd in enumerate((small, big)):
            if k < runs[side]:
                best[side] = min(best[side], cpu_time(cmd))
    return best[0], best[1]


def measure(bins: Path, files: dict[str, Path]) -> dict[str, float]:
    r: dict[str, float] = {}
    # analyze best of 5, 3 and 1; simulate best of 3 like `analyze`: one run
    # of each was at the VM's mercy (the G-EDF ratio of one build ranged
    # 8-18x over three rounds). The 1,000- and 10,000-task runs of each
    # ratio alternate (`best_cpu_pair`).
    small, big = goal_commands(bins, files, 1000), goal_commands(bins, files, 10000)
    for k in small:
        k10 = k.removesuffix("_1000") + "_10000"
        runs = (5, 3) if k.startswith("analyze") else (3, 3)
        r[f"{k}_s"], r[f"{k10}_s"] = best_cpu_pair(small[k], big[k10], runs)
    for k, cmd in goal_commands(bins, files, 100000).items():
        r[f"{k}_s"] = best_cpu(cmd, 1)
    sim_bin = str(bins / "sim")
    r["sim_cpu_10000_jobs_s"] = jobs_per_cpu_s(
        output_of([sim_bin, "--case", "cpu", "--tasks", "10000", "--seconds", "1"])
    )
    r["sim_gpu_jobs_s"] = jobs_per_cpu_s(output_of([sim_bin, "--case", "gpu", "--seconds", "1"]))
    bench = output_of([str(bins / "rtgpu-bench"), "--seconds", "1"])
    r["pdms_full_sets_s"] = sets_per_s(bench, "pdms_hpts_ds m=8 n=40 U=6 T seed 003: full plan")
    r["pdms_decision_sets_s"] = sets_per_s(bench, "pdms_hpts_ds m=8 n=40 U=6 T seed 003: decision")
    r["analyze_ratio"] = r["analyze_10000_s"] / r["analyze_1000_s"]
    r["simulate_gedf_ratio"] = r["simulate_gedf_10000_s"] / r["simulate_gedf_1000_s"]
    r["simulate_pfp_ratio"] = r["simulate_pfp_10000_s"] / r["simulate_pfp_1000_s"]
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    old = ap.add_mutually_exclusive_group()
    old.add_argument("--old", metavar="REV", help="git revision to build as the baseline")
    old.add_argument("--old-bin", metavar="DIR", type=Path, help="baseline binaries")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--log", type=Path, help="write the log here too")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions with callgrind (about 10 minutes per build)",
    )
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    if args.instructions and shutil.which("valgrind") is None:
        ap.error("--instructions needs valgrind (apt-get install valgrind)")
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rtgpu-goals-") as tmp:
        work = Path(tmp)
        head = output_of(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).strip()
        builds: dict[str, Path] = {}
        print("goals: building this checkout ...", file=sys.stderr, flush=True)
        builds["new"] = build(ROOT, ROOT / "target")
        tree = None
        if args.old:
            tree = work / "old-src"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), args.old],
                check=True,
            )
            print(f"goals: building {args.old} (a clean build) ...", file=sys.stderr, flush=True)
            builds["old"] = build(tree, work / "old-target")
        elif args.old_bin:
            missing = [b for b in BINS if not (args.old_bin / b).is_file()]
            if missing:
                sys.exit(f"goals: {args.old_bin} lacks {', '.join(missing)}")
            builds["old"] = args.old_bin
        try:
            files = workloads(builds["new"], work)
            cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
            model = re.search(r"Model name:\s*(.*)", cpu)
            log(out, f"date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
            log(out, f"machine: {model.group(1) if model else '?'}, {os.cpu_count()} CPUs")
            log(out, f"new: {head} (working tree); old: {args.old or args.old_bin or 'none'}")
            samples: dict[tuple[str, str], list[float]] = defaultdict(list)
            order = list(builds)  # new, then old; swapped in even rounds
            for rnd in range(1, args.rounds + 1):
                log(out, f"round {rnd}, load {os.getloadavg()[0]:.2f}")
                for name in order if rnd % 2 else order[::-1]:
                    r = measure(builds[name], files)
                    for k, v in r.items():
                        samples[(name, k)].append(v)
                    log(out, f"  {name}: " + ", ".join(f"{k} {v:.4g}" for k, v in r.items()))
            summarize(out, samples, list(builds))
            if args.instructions:
                log(out, "")
                log(out, "Instructions (callgrind; whole commands, `sim` engine only):")
                for name in builds:
                    print(f"goals: callgrind of the {name} build ...", file=sys.stderr, flush=True)
                    r = measure_instructions(builds[name], files)
                    log(out, f"  {name}: " + ", ".join(f"{k} {v:.4g}" for k, v in r.items()))
        finally:
            if tree is not None:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                    check=False,
                )
                shutil.rmtree(tree, ignore_errors=True)
    if args.log:
        args.log.write_text("\n".join(out) + "\n")


def instructions(cmd: list[str], toggle: str | None = None) -> tuple[int, str]:
    """Instructions callgrind counts for `cmd` (all of it, or only inside
    functions matching `toggle`), and the command's standard output."""
    with tempfile.NamedTemporaryFile(prefix="rtgpu-goals-cg-") as f:
        vg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={f.name}"]
        if toggle:
            vg.append(f"--toggle-collect={toggle}")
        p = subprocess.run([*vg, *cmd], capture_output=True, text=True, check=False)
    m = re.search(r"Collected : (\d+)", p.stderr)
    if p.returncode not in (0, 1) or not m:
        sys.exit(f"goals: callgrind of {' '.join(cmd)} failed: {p.stderr.strip()[-500:]}")
    return int(m.group(1)), p.stdout


def measure_instructions(bins: Path, files: dict[str, Path]) -> dict[str, float]:
    """The instruction counts of `--instructions` (one run each: they are
    deterministic) and the ratios and per-job figures derived from them."""
    r: dict[str, float] = {}
    for n in (1000, 10000):
        for k, cmd in goal_commands(bins, files, n).items():
            r[f"{k}_instr"] = instructions(cmd)[0]
    engine = "rtgpu_sim::engine::Engine::run*"
    for case, args in (
        ("gpu", ["--once", "100"]),
        ("cpu_10000", ["--tasks", "10000", "--once", "2"]),
    ):
        count, text = instructions(
            [str(bins / "sim"), "--case", case.split("_")[0], *args], toggle=engine
        )
        jobs = re.search(r"(\d+) jobs in", text)
        if not jobs:
            sys.exit(f"goals: no job count in sim output: {text!r}")
        r[f"sim_{case}_instr_per_job"] = count / int(jobs.group(1))
    for what in ("analyze", "simulate_gedf", "simulate_pfp"):
        r[f"{what}_instr_ratio"] = r[f"{what}_10000_instr"] / r[f"{what}_1000_instr"]
    return r


def summarize(
    out: list[str], samples: dict[tuple[str, str], list[float]], names: list[str]
) -> None:
    metrics = sorted({k for _, k in samples})
    log(out, "")
    log(out, "| metric | " + " | ".join(f"{n} best | {n} median" for n in names) + " |")
    log(out, "|---|" + "---:|---:|" * len(names))
    for k in metrics:
        larger = k.endswith("_jobs_s") or k.endswith("_sets_s")
        cells = []
        for n in names:
            v = samples[(n, k)]
            cells += [f"{(max(v) if larger else min(v)):.4g}", f"{statistics.median(v):.4g}"]
        log(out, f"| {k} | " + " | ".join(cells) + " |")
    log(out, "")
    log(out, "Goals (the median of the rounds; ratios are per round, a build's own 10x / 1x):")
    for k, goal, larger, what in GOALS:
        verdicts = []
        for n in names:
            med = statistics.median(samples[(n, k)])
            ok = med >= goal if larger else med <= goal
            verdicts.append(f"{n} {med:.4g} {'met' if ok else 'NOT met'}")
        log(out, f"  {what}: " + "; ".join(verdicts))


if __name__ == "__main__":
    main()
