#!/usr/bin/env python3
"""A scaling workload (issue 24): N CPU-only tasks on M cores, U = 0.7 M
(UUniFast, seed 42), periods log-uniform in [1, 100] ms (whole us), zero
overheads; P-FP with PDMS_HPTS_DS and DM, or the scheduler named third.

    scripts/scale-workload.py N M [P-FP|G-EDF|...] > scale.toml
"""

import math
import random
import sys


def main() -> None:
    n, m = int(sys.argv[1]), int(sys.argv[2])
    sched = sys.argv[3] if len(sys.argv) > 3 else "P-FP"
    rng = random.Random(42)
    # UUniFast, total 0.7 m.
    utils, s = [], 0.7 * m
    for i in range(1, n):
        nx = s * rng.random() ** (1.0 / (n - i))
        utils.append(s - nx)
        s = nx
    utils.append(s)
    print(f'name = "scale-n{n}-m{m}"\n\n[platform]\ncores = {m}\n')
    print('[overheads]\nbase = "zero"\n')
    if sched == "P-FP":
        print('[policy]\ncpu_scheduler = "P-FP"\npartitioning = "pdms-hpts-ds"\npriority = "DM"\n')
    else:
        print(f'[policy]\ncpu_scheduler = "{sched}"\n')
    lo, hi = math.log(1000), math.log(100000)
    for i, u in enumerate(utils):
        p_us = round(math.exp(lo + (hi - lo) * rng.random()))
        c_ns = max(1000, int(u * p_us * 1000))
        print(f'[[task]]\nname = "t{i}"\nwcet = "{c_ns} ns"\nperiod = "{p_us} us"\n')


if __name__ == "__main__":
    main()
