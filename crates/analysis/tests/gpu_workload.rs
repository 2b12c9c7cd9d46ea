//! `rtgpu analyze` on GPU workloads: every number derived by hand in the
//! comments (zero overheads unless said otherwise, so only the GPU terms
//! move the costs). [`run`] is the seeds' suspension-oblivious method
//! (`--method oblivious`), [`run_aware`] the default suspension-aware one.

use rtgpu_analysis::gpu::Method;
use rtgpu_analysis::workload::{analyze, analyze_with, Extra, Report, TaskVerdict, Verdict};

const MS: u64 = 1_000_000;

fn run(toml: &str) -> Report {
    let w = rtgpu_model::parse_workload(toml, "t.toml").expect("valid workload");
    let extra = Extra {
        method: Method::Oblivious,
        ..Extra::default()
    };
    analyze_with(&w, &extra).0
}

fn run_aware(toml: &str) -> Report {
    let w = rtgpu_model::parse_workload(toml, "t.toml").expect("valid workload");
    analyze(&w).0
}

/// A 4-core C-FP platform with one GPU, one token, and GPU user "a".
const ONE_GPU_USER: &str = r#"
[platform]
cores = 4
[[platform.gpu]]
name = "g0"
[platform.bandwidth]
host_to_device = "1 GB/s"
device_to_host = "1 GB/s"
peer = "1 GB/s"
[overheads]
base = "zero"
[policy]
cpu_scheduler = "C-FP"
gpu_allocator = "gpusync-affinity"
tokens_per_gpu = 1
[[task]]
name = "a"
wcet = "2 ms"
period = "50 ms"
gpu = { copy_in = "1 MB", kernels = ["3 ms"] }
"#;

/// Three GPUSync users of one GPU and one token on 4 cores under C-FP, no
/// overheads: each waits behind the other two's own holds at most
/// (one request per task, FIFO queues; the R²DGLP cap ⌈4/1⌉ = 4 does not
/// bind), its own response adds wait and GPU time as a suspension, and the
/// CPU-only task below sees only the GPU tasks' CPU time.
#[test]
fn suspension_aware_counts_each_other_hold_once() {
    let r = run_aware(
        &(ONE_GPU_USER.to_string()
            + r#"[[task]]
name = "b"
wcet = "2 ms"
period = "60 ms"
gpu = { kernels = ["5 ms"] }
[[task]]
name = "c"
wcet = "1 ms"
period = "70 ms"
gpu = { kernels = ["2 ms"] }
[[task]]
name = "cpu"
wcet = "10 ms"
period = "80 ms"
"#),
    );
    assert!(r.suspension_aware);
    // Own holds: a = 1 ms copy + 3 ms kernel, b = 5 ms, c = 2 ms.
    let g = |n: &str| task(&r, n).gpu.clone().expect("gpu");
    assert_eq!(g("a").hold, Some(4 * MS));
    assert_eq!(g("a").token_blocking, Some(7 * MS)); // b + c
    assert_eq!(g("b").token_blocking, Some(6 * MS)); // a + c
    assert_eq!(g("c").token_blocking, Some(9 * MS)); // a + b
    assert_eq!(g("a").requests_ahead, Some(2));
    // Four cores, four tasks: nobody is interfered. R = C + wait + GPU.
    assert_eq!(task(&r, "a").response_time, Some(2 * MS + 7 * MS + 4 * MS));
    assert_eq!(task(&r, "b").response_time, Some(2 * MS + 6 * MS + 5 * MS));
    assert_eq!(task(&r, "c").response_time, Some(MS + 9 * MS + 2 * MS));
    assert_eq!(task(&r, "cpu").response_time, Some(10 * MS));
    // The seeds' method charges 7 × THT_max on the same workload and
    // counts it as CPU demand.
    let o = run(ONE_GPU_USER);
    assert!(!o.suspension_aware);
    assert_eq!(o.tasks[0].gpu.as_ref().and_then(|g| g.hold), None);
}

fn task<'a>(r: &'a Report, name: &str) -> &'a rtgpu_analysis::workload::TaskReport {
    r.tasks.iter().find(|t| t.name == name).expect("task")
}

const PLATFORM_2G: &str = r#"
[[platform.cluster]]
name = "c"
cores = 2
gpus = ["g0", "g1"]
[[platform.gpu]]
name = "g0"
[[platform.gpu]]
name = "g1"
[overheads]
base = "zero"
"#;

#[test]
fn kfmlp_blocking_is_the_exact_ilp_bound() {
    // l = 1, 2, 3 ms on k = 2 GPUs. Task a (l=1): others {2, 3}, one per
    // queue, shortest 2 ms (= Thm 1's ⌊5/2⌋); task c (l=3): others {1, 2}
    // → 1 ms (= ⌊3/2⌋); task b: others {1, 3} → 1 ms, below Thm 1's 2 ms.
    let r = run(&format!(
        "{PLATFORM_2G}
[policy]
cpu_scheduler = \"C-FP\"
gpu_allocator = \"k-fmlp\"
[[task]]
name = \"a\"
wcet = \"1 ms\"
period = \"20 ms\"
gpu = {{ kernels = [\"1 ms\"] }}
[[task]]
name = \"b\"
wcet = \"1 ms\"
period = \"20 ms\"
gpu = {{ kernels = [\"2 ms\"] }}
[[task]]
name = \"c\"
wcet = \"1 ms\"
period = \"20 ms\"
gpu = {{ kernels = [\"3 ms\"] }}
"
    ));
    let b = task(&r, "b");
    let g = b.gpu.as_ref().expect("gpu report");
    assert_eq!(g.token_blocking, Some(MS));
    assert_eq!(g.kfmlp_l_aware, Some(2 * MS));
    assert_eq!(g.kfmlp_l_oblivious, Some(3 * MS)); // ⌊2/2⌋·3 ms
                                                   // Inflated cost = C + b + GPU time = 1 + 1 + 2 ms (zero overheads).
    assert_eq!(b.charges.expect("charges").total, 4 * MS);
    assert_eq!(
        task(&r, "a").gpu.as_ref().and_then(|g| g.token_blocking),
        Some(2 * MS)
    );
    assert_eq!(task(&r, "c").charges.expect("charges").total, 5 * MS);
    assert_eq!(r.verdict, Verdict::Schedulable);
}

#[test]
fn static_assignment_queues_behind_the_same_gpu() {
    // Round robin over g0, g1: a → g0, b → g1, c → g0. a waits for c's
    // 3 ms, b for nobody.
    let r = run(&format!(
        "{PLATFORM_2G}
[policy]
cpu_scheduler = \"C-FP\"
gpu_allocator = \"static\"
[[task]]
name = \"a\"
wcet = \"1 ms\"
period = \"20 ms\"
gpu = {{ kernels = [\"1 ms\"] }}
[[task]]
name = \"b\"
wcet = \"1 ms\"
period = \"20 ms\"
gpu = {{ kernels = [\"2 ms\"] }}
[[task]]
name = \"c\"
wcet = \"1 ms\"
period = \"20 ms\"
gpu = {{ kernels = [\"3 ms\"] }}
"
    ));
    assert_eq!(
        task(&r, "a").gpu.as_ref().and_then(|g| g.token_blocking),
        Some(3 * MS)
    );
    assert_eq!(
        task(&r, "b").gpu.as_ref().and_then(|g| g.token_blocking),
        Some(0)
    );
    assert_eq!(
        task(&r, "c").gpu.as_ref().and_then(|g| g.token_blocking),
        Some(MS)
    );
}

#[test]
fn gpusync_bounds_and_engine_locks() {
    // GPUSync, ρ = 1, 2 GPUs, 2 cores, no state: N^E = 0, N^C_sys = 0.
    // THT = copies (1 request of 1 MB at 1 GB/s = 1 ms) + kernel 2 ms +
    // L^P 1 ms = 4 ms; token blocking (2⌈2/2⌉ − 1)·4 = 4 ms.
    let base = r#"
[[platform.cluster]]
name = "c"
cores = 2
gpus = ["g0", "g1"]
[[platform.gpu]]
name = "g0"
[[platform.gpu]]
name = "g1"
[platform.bandwidth]
host_to_device = "1 GB/s"
device_to_host = "1 GB/s"
peer = "1 GB/s"
[overheads]
base = "zero"
"#;
    let task_toml = r#"
[[task]]
name = "a"
wcet = "1 ms"
period = "50 ms"
count = 2
gpu = { copy_in = "1 MB", kernels = ["2 ms"] }
"#;
    let r = run(&format!(
        "{base}[policy]\ncpu_scheduler = \"C-EDF\"\ngpu_allocator = \"gpusync\"\ntokens_per_gpu = 1\n{task_toml}"
    ));
    let g = r.tasks[0].gpu.as_ref().expect("gpu");
    assert_eq!(g.token_hold_time, Some(4 * MS));
    assert_eq!(g.token_blocking, Some(4 * MS));
    assert_eq!(g.engine_blocking, Some(0));
    // 1 + 4 + (1 + 2) = 8 ms.
    assert_eq!(r.tasks[0].charges.expect("charges").total, 8 * MS);
    assert_eq!(r.tasks[0].verdict, TaskVerdict::BoundedTardiness);

    // ρ = 2 without engine locks: the driver arbitrates, no bound.
    let r = run(&format!(
        "{base}[policy]\ncpu_scheduler = \"C-EDF\"\ngpu_allocator = \"gpusync\"\ntokens_per_gpu = 2\nengine_locks = false\n{task_toml}"
    ));
    let g = r.tasks[0].gpu.as_ref().expect("gpu");
    assert!(g.unbounded_because.is_some());
    assert_eq!(r.tasks[0].verdict, TaskVerdict::UnboundedTardiness);
    assert_eq!(r.verdict, Verdict::NotSchedulable);
    // The same under static assignment (two holders share a GPU there too)
    // and, ρ = 1 being the k-FMLP's own, not under the k-FMLP.
    for (allocator, bounded) in [("static", false), ("k-fmlp", true)] {
        let r = run(&format!(
            "{base}[policy]\ncpu_scheduler = \"C-EDF\"\ngpu_allocator = \"{allocator}\"\ntokens_per_gpu = 2\nengine_locks = false\n{task_toml}"
        ));
        let g = r.tasks[0].gpu.as_ref().expect("gpu");
        assert_eq!(g.unbounded_because.is_none(), bounded, "{allocator}");
        assert_eq!(
            r.tasks[0].verdict == TaskVerdict::UnboundedTardiness,
            !bounded,
            "{allocator}"
        );
    }

    // ρ = 2 with engine locks: N^E = 1, N^C_sys = 1. L^C = 1 ms, L^E = 2 ms.
    // Thm 1 = 1·1·1 + 1·1·2 = 3 ms; THT = 1·2·1 + 1·2·2 + 1 = 7 ms;
    // ⌈2/4⌉ = 1 → token blocking 7 ms.
    let r = run(&format!(
        "{base}[policy]\ncpu_scheduler = \"C-EDF\"\ngpu_allocator = \"gpusync\"\ntokens_per_gpu = 2\n{task_toml}"
    ));
    let g = r.tasks[0].gpu.as_ref().expect("gpu");
    assert_eq!(g.engine_blocking, Some(3 * MS));
    assert_eq!(g.token_hold_time, Some(7 * MS));
    assert_eq!(g.token_blocking, Some(7 * MS));
    // 1 + 7 + (1 + 2 + 3) = 14 ms.
    assert_eq!(r.tasks[0].charges.expect("charges").total, 14 * MS);

    // With interrupt overheads (Δth 0.1 ms, Δbh 0.4 ms) every lock is held
    // through its operation's interrupt handling: L^C = 1.5 ms, L^E =
    // 2.5 ms. Thm 1 = 1.5 + 2.5 = 4 ms; THT = 2·1.5 + 2·2.5 + 1 = 9 ms.
    let with_irq = base.replace(
        "base = \"zero\"",
        "base = \"zero\"\nth = \"100 us\"\nbh = \"400 us\"",
    );
    let r = run(&format!(
        "{with_irq}[policy]\ncpu_scheduler = \"C-EDF\"\ngpu_allocator = \"gpusync\"\ntokens_per_gpu = 2\n{task_toml}"
    ));
    let g = r.tasks[0].gpu.as_ref().expect("gpu");
    assert_eq!(g.engine_blocking, Some(4 * MS));
    assert_eq!(g.token_hold_time, Some(9 * MS));
}

#[test]
fn vgpu_member_wait_is_the_reservation_bound() {
    // One GPU, vGPU A 60 % and B 40 % with P = 10 ms budgets (6 and 4 ms).
    // a (in A) runs a 3 ms kernel, b (in B) a 2 ms kernel. For a: Q' = 6 − 2
    // = 4 ms, W = 3 ms: t = 3 + (⌈3/4⌉ + 1)·(10 − 4) = 15 ms; wait 12 ms.
    let r = run(r#"
[[platform.cluster]]
name = "c"
cores = 2
gpus = ["g"]
[[platform.gpu]]
name = "g"
[overheads]
base = "zero"
[policy]
cpu_scheduler = "G-FP"
[[vgpu]]
name = "A"
gpu = "g"
budget = "6 ms"
period = "10 ms"
[[vgpu]]
name = "B"
gpu = "g"
budget = "4 ms"
period = "10 ms"
[[task]]
name = "a"
wcet = "1 ms"
period = "50 ms"
gpu = { kernels = ["3 ms"], vgpu = "A" }
[[task]]
name = "b"
wcet = "1 ms"
period = "50 ms"
gpu = { kernels = ["2 ms"], vgpu = "B" }
"#);
    let g = task(&r, "a").gpu.as_ref().expect("gpu");
    assert_eq!(g.vgpu_response, Some(15 * MS));
    assert_eq!(g.token_blocking, Some(12 * MS));
    assert_eq!(task(&r, "a").charges.expect("charges").total, 16 * MS);
    // b: Q' = 4 − 3 = 1 ms, W = 2: 2 + (2 + 1)·9 = 29 ms.
    let g = task(&r, "b").gpu.as_ref().expect("gpu");
    assert_eq!(g.vgpu_response, Some(29 * MS));
}

#[test]
fn pfp_charges_inheritance_blocking_from_local_gpu_holders() {
    // One core: hi (CPU only, 1 ms / 10 ms) above lo (GPU, 2 ms CPU + 1 ms
    // kernel / 20 ms). lo's inflated cost 3 ms (no other GPU user → no
    // wait). hi may be blocked once by lo running with an inherited
    // priority: R_hi = 1 + 3 = 4 ms (without the charge it would be 1 ms).
    let r = run(r#"
[[platform.cluster]]
name = "c"
cores = 1
gpus = ["g"]
[[platform.gpu]]
name = "g"
[overheads]
base = "zero"
[policy]
cpu_scheduler = "P-FP"
partitioning = "first-fit"
gpu_allocator = "k-fmlp"
[[task]]
name = "hi"
wcet = "1 ms"
period = "10 ms"
[[task]]
name = "lo"
wcet = "2 ms"
period = "20 ms"
gpu = { kernels = ["1 ms"] }
"#);
    assert_eq!(task(&r, "lo").charges.expect("charges").total, 3 * MS);
    assert_eq!(task(&r, "hi").response_time, Some(4 * MS));
    // lo: 3 + ⌈R/10⌉·1 → R = 4 ms.
    assert_eq!(task(&r, "lo").response_time, Some(4 * MS));
    assert_eq!(r.verdict, Verdict::Schedulable);
}

#[test]
fn cpu_only_workloads_are_charged_table_iii_overheads() {
    // 1 ms every 10 ms, Table III: +2(0.63+0.36) + 0.67 + 0.60 µs and
    // ⌈10 ms / 1 ms⌉·0.86 = 8.6 µs of ticks = 1 ms + 11.85 µs.
    let r = run(r#"
[platform]
cores = 1
[[task]]
name = "t"
wcet = "1 ms"
period = "10 ms"
"#);
    assert_eq!(r.tasks[0].charges.expect("charges").total, MS + 11_850);
    assert_eq!(r.tasks[0].response_time, Some(MS + 11_850));
}

#[test]
fn more_interrupts_never_lower_inflated_costs() {
    let mk = |eta: u32| {
        run(&format!(
            r#"
[[platform.cluster]]
name = "c"
cores = 4
gpus = ["g0", "g1"]
[[platform.gpu]]
name = "g0"
[[platform.gpu]]
name = "g1"
[policy]
cpu_scheduler = "C-EDF"
gpu_allocator = "k-fmlp"
interrupts = "slih"
[[task]]
name = "g"
count = 3
wcet = "2 ms"
period = "30 ms"
gpu = {{ kernels = ["3 ms"], interrupts = {eta} }}
[[task]]
name = "c"
count = 3
wcet = "5 ms"
period = "20 ms"
"#
        ))
    };
    let mut last: Vec<u64> = vec![0; 6];
    for eta in 1..5 {
        let r = mk(eta);
        assert_eq!(r.verdict, Verdict::Schedulable);
        let now: Vec<u64> = r
            .tasks
            .iter()
            .map(|t| t.charges.expect("c").total)
            .collect();
        assert!(
            now.iter().zip(&last).all(|(a, b)| a >= b),
            "{now:?} {last:?}"
        );
        last = now;
    }
}

#[test]
fn pfp_stretches_a_hold_by_higher_priority_work_on_the_holders_core() {
    // Issue 4 (workload 2585 of the GPU soundness run with overheads): a
    // holder's klmirqd bottom half runs at the holder's priority on the
    // holder's core, so a higher-priority task there delays it and the
    // hold lasts longer than l. Only Δbh = 100 us is non-zero, so every
    // inflated cost is e + b + kernels + η·Δbh.
    //   w (waiter): e 1.5 ms, kernel 0.1 ms, T = D = 5 ms; l_w = 0.2 ms.
    //   h (holder): e 0.5 ms, kernel 2 ms, T 20 ms, D 12 ms; l_h = 2.1 ms.
    //   x: CPU only, 4 ms / 10 ms.
    // Unstretched: C'_w = 1.5 + 2.1 + 0.2 = 3.8 ms (core 0); x does not fit
    // beside w (4 + 2·3.8 > 10), nor does h (C'_h = 0.5 + 0.2 + 2.1 =
    // 2.8 ms, R = 2.8 + 3·3.8 > 12); x and h share core 1, x above h (DM),
    // R_x = 4 ms. Without the stretch w's bound would be 3.8 ms ≤ 5 ms
    // although its wait can last 2.1 ms plus x's 4 ms.
    // Stretch of h: L = 2.1 + min(W_x(L), L − 2.1 + 1 ns) with W_x(L) =
    // min(4, L) for L < 10 ms (C 4 ms, R 4 ms, T 10 ms): L = 6.1 ms, a
    // stretch of 4 ms; b_w = 6.1 ms, C'_w = 7.8 ms > D_w: w cannot be
    // placed at all.
    let r = run(r#"
[[platform.cluster]]
name = "c"
cores = 2
gpus = ["g"]
[[platform.gpu]]
name = "g"
[overheads]
base = "zero"
bh = "100 us"
[policy]
cpu_scheduler = "P-FP"
partitioning = "first-fit"
gpu_allocator = "static"
interrupts = "klmirqd"
[[task]]
name = "w"
wcet = "1.5 ms"
period = "5 ms"
gpu = { kernels = ["0.1 ms"], interrupts = 1 }
[[task]]
name = "h"
wcet = "0.5 ms"
period = "20 ms"
deadline = "12 ms"
gpu = { kernels = ["2 ms"], interrupts = 1 }
[[task]]
name = "x"
wcet = "4 ms"
period = "10 ms"
"#);
    let h = task(&r, "h").gpu.as_ref().expect("h uses a GPU");
    assert_eq!(h.hold_stretch, Some(4 * MS));
    let wg = task(&r, "w").gpu.as_ref().expect("w uses a GPU");
    assert_eq!(wg.token_blocking, Some(6_100_000));
    assert_eq!(task(&r, "w").charges.expect("charges").total, 7_800_000);
    assert_eq!(task(&r, "w").verdict, TaskVerdict::Unplaced);
    assert_eq!(r.verdict, Verdict::NotSchedulable);
}

/// P-FP places every task it can: a GPU-using task that misses its
/// deadline even alone on a core is set aside, named, and the control
/// loops after it in the partitioning order are still placed and bounded
/// (they used to be reported unplaced with it).
#[test]
fn pfp_places_every_task_it_can() {
    let r = run_aware(
        r#"
[platform]
cores = 2
[[platform.gpu]]
name = "g0"
[overheads]
base = "zero"
[policy]
cpu_scheduler = "P-FP"
partitioning = "first-fit"
[[task]]
name = "too-big"
wcet = "9 ms"
period = "10 ms"
deadline = "10 ms"
gpu = { kernels = ["5 ms"] }
[[task]]
name = "loop-a"
wcet = "1 ms"
period = "2 ms"
[[task]]
name = "loop-b"
wcet = "2 ms"
period = "5 ms"
"#,
    );
    assert_eq!(task(&r, "too-big").verdict, TaskVerdict::Unplaced);
    // Their bounds count too-big's GPU interrupts over its deadline, which
    // it may not keep: they hold if it does.
    for name in ["loop-a", "loop-b"] {
        let t = task(&r, name);
        assert_eq!(t.verdict, TaskVerdict::MeetsDeadlineIf, "{name}");
        assert_eq!(t.depends_on, vec!["too-big".to_string()]);
        assert!(t.response_time.is_some());
    }
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("could not place 1 task(s): too-big: misses its deadline")));
    assert_eq!(r.verdict, Verdict::NotSchedulable);
}

/// `static-priority`: one token queue per GPU ordered by priority (DM
/// here). A request waits for one less urgent hold and for every more
/// urgent request issued before it is granted, ⌈(B + D_j)/T_j⌉ of task j
/// in a wait B. Holds (no overheads): a 3 ms, b 5 ms, c 2 ms.
#[test]
fn static_priority_counts_more_urgent_requests_per_window() {
    let r = run_aware(
        r#"
[platform]
cores = 4
[[platform.gpu]]
name = "g0"
[overheads]
base = "zero"
[policy]
cpu_scheduler = "C-FP"
gpu_allocator = "static-priority"
tokens_per_gpu = 1
[[task]]
name = "a"
wcet = "1 ms"
period = "50 ms"
gpu = { kernels = ["3 ms"] }
[[task]]
name = "b"
wcet = "1 ms"
period = "60 ms"
gpu = { kernels = ["5 ms"] }
[[task]]
name = "c"
wcet = "1 ms"
period = "70 ms"
gpu = { kernels = ["2 ms"] }
"#,
    );
    let wait = |n: &str| task(&r, n).gpu.as_ref().and_then(|g| g.token_blocking);
    // a: the longest less urgent hold, b's 5 ms.
    assert_eq!(wait("a"), Some(5 * MS));
    // b: c's 2 ms, then a: B = 2 + ⌈(B + 50)/50⌉·3 = 8 ms.
    assert_eq!(wait("b"), Some(8 * MS));
    // c: B = ⌈(B + 50)/50⌉·3 + ⌈(B + 60)/60⌉·5 = 16 ms.
    assert_eq!(wait("c"), Some(16 * MS));
    // Under P-FP the queue would compare per-core ranks: no bound.
    let p = run_aware(
        r#"
[platform]
cores = 2
[[platform.gpu]]
name = "g0"
[overheads]
base = "zero"
[policy]
cpu_scheduler = "P-FP"
gpu_allocator = "static-priority"
tokens_per_gpu = 1
[[task]]
name = "a"
wcet = "1 ms"
period = "50 ms"
gpu = { kernels = ["3 ms"] }
"#,
    );
    let g = p.tasks[0].gpu.as_ref().expect("gpu");
    assert!(g
        .unbounded_because
        .as_deref()
        .is_some_and(|w| w.contains("C-FP and G-FP")));
}

#[test]
fn a_device_takes_a_task_out_of_the_round_robin() {
    // a is fixed on g1; the unpinned b and c are dealt g0, g1 in file
    // order. So a and c share g1: a waits for c's 3 ms, c for a's 1 ms.
    let r = run_aware(&format!(
        "{PLATFORM_2G}
[policy]
cpu_scheduler = \"C-FP\"
gpu_allocator = \"static\"
[[task]]
name = \"a\"
wcet = \"1 ms\"
period = \"20 ms\"
gpu = {{ device = \"g1\", kernels = [\"1 ms\"] }}
[[task]]
name = \"b\"
wcet = \"1 ms\"
period = \"20 ms\"
gpu = {{ kernels = [\"2 ms\"] }}
[[task]]
name = \"c\"
wcet = \"1 ms\"
period = \"20 ms\"
gpu = {{ kernels = [\"3 ms\"] }}
"
    ));
    let wait = |n: &str| task(&r, n).gpu.as_ref().and_then(|g| g.token_blocking);
    assert_eq!(wait("a"), Some(3 * MS));
    assert_eq!(wait("b"), Some(0));
    assert_eq!(wait("c"), Some(MS));
    assert!(task(&r, "a")
        .gpu
        .as_ref()
        .unwrap()
        .allocator
        .contains("on g1"));
}

#[test]
fn the_suggestion_fixes_gpus_where_the_round_robin_fails() {
    // The round robin puts the urgent x (D = 10 ms, 8 ms kernel) with z's
    // 8 ms kernel on g0: 1 + 8 + 8 > 10. With x alone on a GPU it meets
    // its deadline, and y and z have room to share the other.
    let text = format!(
        "{PLATFORM_2G}
[policy]
cpu_scheduler = \"C-FP\"
gpu_allocator = \"static\"
[[task]]
name = \"x\"
wcet = \"1 ms\"
period = \"10 ms\"
gpu = {{ kernels = [\"8 ms\"] }}
[[task]]
name = \"y\"
wcet = \"1 ms\"
period = \"20 ms\"
gpu = {{ kernels = [\"1 ms\"] }}
[[task]]
name = \"z\"
wcet = \"1 ms\"
period = \"100 ms\"
gpu = {{ kernels = [\"8 ms\"] }}
"
    );
    let w = rtgpu_model::parse_workload(&text, "t.toml").expect("valid");
    let extra = Extra::default();
    let (r, _) = analyze_with(&w, &extra);
    assert_eq!(task(&r, "x").verdict, TaskVerdict::MissesDeadline);
    let s = rtgpu_analysis::workload::suggest(&w, &extra, &r).expect("a better setting");
    assert!(s.schedulable, "{}", s.describe(&w));
    // Written as a file and read back, the suggested workload is
    // schedulable: the suggestion is a file the user can take.
    let again = rtgpu_model::parse_workload(&rtgpu_model::to_toml(&s.apply(&w)), "s.toml")
        .expect("the suggested workload parses");
    assert_eq!(analyze_with(&again, &extra).0.verdict, Verdict::Schedulable);
    // Static FIFO with x alone on its GPU (first of the candidates that
    // schedules everything).
    assert_eq!(s.allocator, rtgpu_model::GpuAllocator::Static);
    let x = s.devices.iter().find(|d| d.0 == 0).expect("x pinned");
    assert!(
        s.devices.iter().all(|d| d.0 == 0 || d.1 != x.1),
        "x is alone on its GPU: {:?}",
        s.devices
    );
    assert!(s.describe(&w).contains("x on g"), "{}", s.describe(&w));
}
