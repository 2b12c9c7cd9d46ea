"""rtgpu.gpu_analysis: the GPU-aware bounds as sweeps call them."""

from __future__ import annotations

import pytest

from rtgpu import gpu_analysis as ga

MS = 1_000_000


def test_kfmlp_bounds_by_hand() -> None:
    # Others 10, 1, 1 ms on two GPUs: exact {10} {1, 1} -> 2 ms; Theorem 1
    # floor(12/2) = 6 ms; Theorem 2 floor(3/2) * 10 = 10 ms.
    b = ga.kfmlp_blocking([10 * MS, MS, MS], k=2)
    assert (b.exact, b.l_aware, b.l_oblivious) == (2 * MS, 6 * MS, 10 * MS)
    assert b.exact_solved
    assert "KfmlpBlocking(" in repr(b)


def test_gpusync_by_hand() -> None:
    # m = 6, g = 4, rho = 2, DGL: N^C = 7, N^E = 1 (see gpusync.rs tests).
    (b,) = ga.gpusync_blocking(6, 4, 2, "dgl", [6], [4], 400_000, 4 * MS, 2 * MS)
    assert b.engine_blocking == 32_800_000
    assert b.token_hold_time == 53_200_000
    assert b.total == b.token_blocking + b.engine_blocking
    nested = ga.gpusync_blocking(6, 4, 2, "nested", [6], [4], 400_000, 4 * MS, 2 * MS)[0]
    assert nested.total >= b.total
    assert ga.gpusync_best_rho(6, 4, "dgl", 3) == (1, 6)
    assert ga.copy_requests([524_288, 524_288, 6_500_000], 2_097_152) == 6
    with pytest.raises(ValueError, match="copy_locking"):
        ga.gpusync_blocking(6, 4, 2, "bogus", [1], [1], 1, 1, 1)  # type: ignore[arg-type]


def test_overhead_aware_test_prefers_klmirqd() -> None:
    # Seed 000 §VI-like: per cluster 20 CPU tasks 5/20 ms, 5 GPU tasks
    # 2 ms CPU + 1 ms GPU; zero overheads leave U = 5.997 <= 6.
    gpu = [(2 * MS, MS, 19_900_000, 19_900_000, 1)] * 2 + [
        (2 * MS, MS, 20_100_000, 20_100_000, 1)
    ] * 8
    cpu = [(5 * MS, 0, 20 * MS, 20 * MS, 0)] * 40
    ts = gpu + cpu
    ok = ga.overhead_aware_test(ts, [(6, 4), (6, 4)], base="zero")
    assert ok.schedulable
    assert sorted(set(ok.clusters)) == [0, 1]
    bad = ga.overhead_aware_test(ts, [(6, 4), (6, 4)], method="slih")
    assert not bad.schedulable
    # Fewer tasks: klmirqd's inflation is below SLIH's with 6 interrupts.
    light = [(2 * MS, 6 * MS, 20 * MS, 20 * MS, 6)] * 6
    k = ga.overhead_aware_test(light, [(6, 4)], method="klmirqd")
    s = ga.overhead_aware_test(light, [(6, 4)], method="slih")
    assert sum(k.inflated_costs) < sum(s.inflated_costs)
    with pytest.raises(ValueError, match="overheads key"):
        ga.overhead_aware_test(light, [(6, 4)], overheads={"nope": 1})
    over = ga.overhead_aware_test(light, [(6, 4)], overheads={"th": 0, "bh": 0})
    assert sum(over.inflated_costs) < sum(k.inflated_costs)


def test_effective_utilization_and_vgpu() -> None:
    assert ga.effective_utilization([(2, 1, 20), (5, 0, 20)], 16.0) == pytest.approx(1.15)
    # Q = 6 of P = 10 ms, K = 1 ms, W = 12 ms -> 32 ms (vgpu.rs tests).
    assert ga.vgpu_service_time(6 * MS, 10 * MS, 12 * MS, MS) == 32 * MS
    assert ga.vgpu_service_time(6 * MS, 10 * MS, 1, 6 * MS) is None


def test_workload_report_has_gpu_breakdown() -> None:
    from pathlib import Path

    import rtgpu

    path = Path(__file__).resolve().parents[2] / "examples" / "feature-tracking.toml"
    report = rtgpu.load_workload(path).analyze()
    t = report.tasks[0]
    assert t.uses_gpu
    assert t.gpu is not None and t.charges is not None
    assert t.gpu.token_blocking is not None and t.gpu.token_blocking > 0
    assert t.gpu.engine_blocking is not None and t.gpu.token_hold_time is not None
    assert t.inflated_cost == t.charges.total
    assert t.charges.total > t.wcet
    assert t.charges.dominant == "GPU blocking"
    assert report.verdict is rtgpu.Verdict.NOT_SCHEDULABLE


def test_seed000_task_sets_feed_the_test() -> None:
    ts = ga.seed000_task_set(1, 8.0, interrupts=6)
    assert sum((c + g) / p for c, g, p, _, _ in ts) == pytest.approx(8.0, abs=0.01)
    assert ts == ga.seed000_task_set(1, 8.0, interrupts=6)
    assert any(g > 0 and eta == 6 for _, g, _, _, eta in ts)
    k = ga.overhead_aware_test(ts, [(6, 4), (6, 4)], method="klmirqd")
    s = ga.overhead_aware_test(ts, [(6, 4), (6, 4)], method="slih")
    assert sum(k.inflated_utilization) < sum(s.inflated_utilization)
    with pytest.raises(ValueError, match="task_utilization"):
        ga.seed000_task_set(1, 8.0, task_utilization=(0.9, 0.5))
