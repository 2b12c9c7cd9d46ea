"""The Python arbiter around real GPU work (CuPy), on a GPU machine:

    python3 bench/python/cupy_arbiter.py [--threads 4] [--jobs 200] [--n 2048]

Each thread runs jobs of: copy a frame in, a matrix product, copy the
result out, each step inside its engine lock, the whole job inside a GPU
token. Checks that no two threads ever hold one engine at once, and
compares jobs per second and job times with the same work done without the
arbiter (free-for-all), in the same run. Needs CuPy and an NVIDIA GPU.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import cupy as cp  # type: ignore[import-not-found]
import numpy as np

from rtgpu.runtime import Arbiter


def run(threads: int, jobs: int, n: int, arbitrated: bool) -> tuple[float, list[float], int]:
    arb = Arbiter(gpus=1, copy_engines=2, tokens_per_gpu=2)
    held = {"exec": 0, "in": 0, "out": 0}
    worst = {"exec": 0, "in": 0, "out": 0}
    guard = threading.Lock()
    times: list[float] = []

    def enter(k: str) -> None:
        with guard:
            held[k] += 1
            worst[k] = max(worst[k], held[k])

    def leave(k: str) -> None:
        with guard:
            held[k] -= 1

    def worker(i: int) -> None:
        me = arb.register(priority=10 + i)
        stream = cp.cuda.Stream(non_blocking=True)
        host = np.random.default_rng(i).standard_normal((n, n), dtype=np.float32)
        with stream:
            for _ in range(jobs):
                t0 = time.perf_counter()
                if arbitrated:
                    with me.token(hold="5 ms") as tok:
                        with tok.copy_in():
                            enter("in")
                            x = cp.asarray(host)
                            stream.synchronize()
                            leave("in")
                        with tok.exec_engine():
                            enter("exec")
                            y = x @ x
                            stream.synchronize()
                            leave("exec")
                        with tok.copy_out():
                            enter("out")
                            out = cp.asnumpy(y)
                            leave("out")
                else:
                    x = cp.asarray(host)
                    y = x @ x
                    out = cp.asnumpy(y)
                assert out.shape == (n, n)
                with guard:
                    times.append(time.perf_counter() - t0)

    # Warm-up (CUDA context, cuBLAS handles) outside the measurement.
    w = cp.asarray(np.ones((n, n), dtype=np.float32))
    (w @ w).get()
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    start = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - start
    return threads * jobs / wall, times, max(worst.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--n", type=int, default=2048)
    a = ap.parse_args()
    print(f"GPU: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    for arbitrated in (False, True, False, True):
        rate, times, worst = run(a.threads, a.jobs, a.n, arbitrated)
        times.sort()
        p99 = times[int(0.99 * (len(times) - 1))]
        label = "arbiter      " if arbitrated else "free-for-all "
        extra = f", most holders of one engine at once: {worst}" if arbitrated else ""
        median = statistics.median(times) * 1e3
        print(
            f"{label}: {rate:8.1f} jobs/s, job time median {median:7.3f} ms, "
            f"p99 {p99 * 1e3:7.3f} ms{extra}"
        )
        if arbitrated and worst != 1:
            raise SystemExit("FAILED: two threads held one engine at once")


if __name__ == "__main__":
    main()
