//! GPU, lock, interrupt and vGPU behaviour of the simulator on small
//! workloads whose outcome can be computed by hand, and the seeds' findings
//! on the bundled examples.

use std::path::PathBuf;

use rtgpu_model::{parse_workload, InterruptHandling, Workload};
use rtgpu_sim::{simulate, Scenario, SimConfig, SimResult};

fn example(name: &str) -> Workload {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name]
        .iter()
        .collect();
    rtgpu_model::load_workload(&p).expect("example parses")
}

fn wl(text: &str) -> Workload {
    parse_workload(text, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn run(w: &Workload, duration: u64) -> SimResult {
    simulate(
        w,
        &SimConfig {
            duration,
            record_jobs: true,
            ..SimConfig::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

const ONE_GPU: &str = r#"
[[platform.cluster]]
name = "c0"
cores = 2
gpus = ["gpu0"]

[[platform.gpu]]
name = "gpu0"
copy_engines = 1

[platform.bandwidth]
host_to_device = "1 GB/s"
device_to_host = "1 GB/s"
peer = "1 GB/s"

[overheads]
base = "zero"
"#;

/// One core, one GPU (one copy engine), no overheads.
const ONE_CORE_ONE_GPU: &str = r#"
[[platform.cluster]]
name = "c0"
cores = 1
gpus = ["gpu0"]

[[platform.gpu]]
name = "gpu0"
copy_engines = 1

[overheads]
base = "zero"
"#;

/// CPU half, copy-in, kernels, copy-out, CPU half: nothing else.
#[test]
fn lone_gpu_job_takes_exactly_its_parts() {
    let w = wl(&format!(
        r#"{ONE_GPU}
[policy]
cpu_scheduler = "G-EDF"
gpu_allocator = "gpusync"

[[task]]
name = "a"
wcet = "2 ms"
period = "100 ms"
gpu = {{ copy_in = "1 MB", kernels = ["3 ms", "1 ms"], copy_out = "500 KB" }}
"#
    ));
    let r = run(&w, 300_000_000);
    assert_eq!(r.tasks[0].jobs, 3);
    // 1 ms CPU + 1 ms copy + 4 ms kernels + 0.5 ms copy + 1 ms CPU.
    assert_eq!(r.tasks[0].max_response, 7_500_000);
    assert_eq!(r.records[1].release, 100_000_000);
    assert_eq!(r.records[1].finish, Some(107_500_000));
    // Engine utilization: 4 ms of kernels per 100 ms.
    let exec = &r.engines[0];
    assert!((exec.mean - 0.04).abs() < 1e-9, "{}", exec.mean);
    // Seven events per job: its release, the two CPU halves' ends, the
    // two copies' bus completions and the two kernels' (no overheads: no
    // top or bottom half); the release at 300 ms is past the end.
    assert_eq!(r.events, 3 * 7);
}

fn two_gpu_tasks(engine_locks: bool, tokens: u32) -> Workload {
    two_tasks_using(
        engine_locks,
        tokens,
        r#"copy_in = "4 MB", kernels = ["4 ms"], copy_out = "4 MB""#,
    )
}

/// Two tasks of 10 us of CPU work every 100 ms, each with the GPU part
/// `gpu` (the fields of its inline table), on one GPU under GPUSync.
fn two_tasks_using(engine_locks: bool, tokens: u32, gpu: &str) -> Workload {
    wl(&format!(
        r#"{ONE_GPU}
[policy]
cpu_scheduler = "G-EDF"
gpu_allocator = "gpusync"
tokens_per_gpu = {tokens}
engine_locks = {engine_locks}

[[task]]
name = "t"
count = 2
wcet = "10 us"
period = "100 ms"
gpu = {{ {gpu} }}
"#
    ))
}

/// seed 004 §4.2: with engine locks and rho = 2 one job's copies overlap
/// the other's kernel; without them (rho = 1) a token owns the whole GPU.
#[test]
fn engine_locks_overlap_copy_and_execution() {
    let locked = run(&two_gpu_tasks(true, 2), 100_000_000);
    let whole = run(&two_gpu_tasks(false, 1), 100_000_000);
    let worst = |r: &SimResult| r.tasks.iter().map(|t| t.max_response).max().unwrap_or(0);
    // Without engine locks: 12 ms each back to back -> the second ends at
    // 24 ms (+ 10 us CPU).
    assert_eq!(worst(&whole), 24_010_000);
    // With them the second job's copy-in (4-8 ms) overlaps the first's
    // kernel, its kernel (8-12 ms) the first's copy-out, its copy-out
    // follows: 16 ms.
    assert_eq!(worst(&locked), 16_010_000);
    assert!(worst(&locked) < worst(&whole));
}

/// Without engine locks and with rho > 1 both token holders submit to the
/// driver, which runs each engine's operations in submission order (the
/// emulated GPU's engine queues; `rtgpu run` takes no lock then): copies
/// still overlap kernels, as with engine locks (16 ms), but nothing keeps
/// one job's kernels together: A k1, B k1, A k2, B k2.
#[test]
fn the_driver_runs_each_engine_in_submission_order() {
    let overlapped = run(&two_gpu_tasks(false, 2), 100_000_000);
    let worst = |r: &SimResult| r.tasks.iter().map(|t| t.max_response).max().unwrap_or(0);
    assert_eq!(worst(&overlapped), 16_010_000);
    let two_kernels = |engine_locks: bool| {
        let w = two_tasks_using(engine_locks, 2, r#"kernels = ["2 ms", "2 ms"]"#);
        let mut r: Vec<u64> = run(&w, 50_000_000)
            .tasks
            .iter()
            .map(|t| t.max_response)
            .collect();
        r.sort_unstable();
        r
    };
    // Engine locks: the first holder keeps the execution engine for both
    // kernels (0-4 ms), the second follows (4-8 ms); 5 us of CPU work on
    // either side.
    assert_eq!(two_kernels(true), [4_010_000, 8_010_000]);
    // The driver: the first job's second kernel queues behind the other
    // job's first (4-6 ms).
    assert_eq!(two_kernels(false), [6_010_000, 8_010_000]);
}

/// Two copies in the same direction on one PCIe link share its bandwidth.
#[test]
fn copies_on_one_link_share_bandwidth() {
    let text = |switches: bool| {
        format!(
            r#"
[[platform.cluster]]
name = "c0"
cores = 2
gpus = ["gpu0", "gpu1"]

[[platform.pcie]]
name = "hub"

[[platform.pcie]]
name = "s0"
parent = "hub"

[[platform.pcie]]
name = "s1"
parent = "hub"

[[platform.gpu]]
name = "gpu0"
attach = "s0"

[[platform.gpu]]
name = "gpu1"
attach = "{}"

[platform.bandwidth]
host_to_device = "1 GB/s"
device_to_host = "1 GB/s"
peer = "1 GB/s"

[overheads]
base = "zero"

[policy]
cpu_scheduler = "G-EDF"
gpu_allocator = "static"

[[task]]
name = "t"
count = 2
wcet = "10 us"
period = "100 ms"
gpu = {{ copy_in = "2 MB", kernels = ["1 ms"] }}
"#,
            if switches { "s1" } else { "s0" }
        )
    };
    let shared = run(&wl(&text(false)), 100_000_000);
    let apart = run(&wl(&text(true)), 100_000_000);
    // Apart: 2 ms copy + 1 ms kernel; shared: the copies take 4 ms.
    assert_eq!(apart.tasks[0].max_response, 3_010_000);
    assert_eq!(shared.tasks[0].max_response, 5_010_000);
}

/// Same seed, same result; another seed changes jittered releases.
#[test]
fn runs_are_reproducible() {
    let w = example("feature-tracking.toml");
    let cfg = |seed| SimConfig {
        duration: 500_000_000,
        seed,
        bcet_ppm: 700_000,
        ..SimConfig::default()
    };
    let a = simulate(&w, &cfg(7)).expect("runs");
    let b = simulate(&w, &cfg(7)).expect("runs");
    let c = simulate(&w, &cfg(8)).expect("runs");
    assert_eq!(a, b);
    assert_ne!(a.tasks, c.tasks);
}

/// Every seed-004 scenario runs to completion on the feature-tracking
/// workload (no deadlock under DGL or nested peer locks) and migrations
/// happen only where allowed.
#[test]
fn every_gpusync_scenario_completes() {
    let base = example("feature-tracking.toml");
    for flags in 0..16u32 {
        for chunk in ["X", "2MB"] {
            let name = format!(
                "{}{}{}{},{chunk}",
                if flags & 1 != 0 { 'A' } else { 'a' },
                if flags & 2 != 0 { 'E' } else { 'e' },
                if flags & 4 != 0 { 'D' } else { 'd' },
                if flags & 8 != 0 { 'G' } else { 'g' },
            );
            let sc = Scenario::parse(&name).expect("valid");
            let mut w = base.clone();
            let mut cfg = SimConfig {
                duration: 1_000_000_000,
                drain: true,
                ..SimConfig::default()
            };
            sc.apply(&mut w.policy, &mut cfg);
            let r = simulate(&w, &cfg).expect("runs");
            let unfinished: u64 = r.tasks.iter().map(|t| t.unfinished).sum();
            assert_eq!(unfinished, 0, "{name}: jobs left (deadlock?)");
            assert!(r.jobs >= 280, "{name}: {} jobs", r.jobs);
        }
    }
}

/// Mean response of all jobs (% of period) of `w` under seed 004 scenario
/// `name`, 10 s with `--shift-tardy` (seed 004 §5's measure).
fn scenario_mean_pct(w: &Workload, name: &str) -> f64 {
    let mut w = w.clone();
    let mut cfg = SimConfig {
        duration: 10_000_000_000,
        shift_tardy: true,
        ..SimConfig::default()
    };
    Scenario::parse(name)
        .expect("valid")
        .apply(&mut w.policy, &mut cfg);
    let r = simulate(&w, &cfg).expect("runs");
    let jobs: u64 = r.tasks.iter().map(|t| t.jobs).sum();
    r.tasks
        .iter()
        .map(|t| t.mean_response_pct * t.jobs as f64)
        .sum::<f64>()
        / jobs as f64
}

/// seed 004 §5, Observation 2 on the tracker with its CPU work inside the
/// GPU section (`examples/gpusync-host-work.toml`): every scenario with
/// engine locks is SRT-schedulable by the paper's criterion and every one
/// without them is not, a clean break (Fig. 6), and AEdG,2MB beats aedg,X
/// by more than 1.5x (the paper's 3x does not reproduce,
/// docs/seeds/004-gpusync.md). Eight of the scenarios, 10 s each.
#[test]
fn seed004_cpu_in_sections_makes_engine_locks_decide() {
    let w = example("gpusync-host-work.toml");
    let locked = ["AEdG,2MB", "AEDG,2MB", "aEdG,X", "AEDg,X"].map(|s| scenario_mean_pct(&w, s));
    let unlocked = ["aedg,X", "AedG,4MB", "Aedg,X", "aedG,2MB"].map(|s| scenario_mean_pct(&w, s));
    eprintln!("engine locks: {locked:?}; without: {unlocked:?}");
    for pct in locked {
        assert!(pct < 100.0, "{locked:?}");
    }
    for pct in unlocked {
        assert!(pct > 100.0, "{unlocked:?}");
    }
    // aedg,X over AEdG,2MB.
    assert!(unlocked[0] > 1.5 * locked[0], "{unlocked:?} vs {locked:?}");
}

/// seed 004 §5, Fig. 6 on the copy-heavy variant of the tracker: every
/// scenario with engine locks (ρ = 2) is SRT-schedulable by the paper's
/// criterion (mean response below 100 % of the period), the best scenario
/// uses them and the worst does not, and on average the scenarios with
/// engine locks respond much faster than those without (where a token is
/// the whole GPU). Not asserted, because it does not reproduce here: the
/// paper's 3x between AEdG,2MB and aedg,X, and a clean break with every
/// locked scenario ahead of every unlocked one (with CPU work inside the
/// sections the break appears: the test above; docs/seeds/004-gpusync.md).
#[test]
fn seed004_engine_locks_beat_no_engine_locks() {
    let base = example("gpusync-copy-heavy.toml");
    let mean_pct = |name: &str| scenario_mean_pct(&base, name);
    let (mut locked, mut unlocked) = (Vec::new(), Vec::new());
    for a in ['A', 'a'] {
        for e in ['E', 'e'] {
            // D/d only matters with engine locks.
            let ds: &[char] = if e == 'E' { &['D', 'd'] } else { &['d'] };
            for &d in ds {
                for g in ['G', 'g'] {
                    for c in ["2MB", "4MB", "X"] {
                        let name = format!("{a}{e}{d}{g},{c}");
                        let pct = mean_pct(&name);
                        if e == 'E' {
                            locked.push((pct, name));
                        } else {
                            unlocked.push((pct, name));
                        }
                    }
                }
            }
        }
    }
    let mean = |v: &[(f64, String)]| v.iter().map(|x| x.0).sum::<f64>() / v.len() as f64;
    let by_pct = |x: &&(f64, String), y: &&(f64, String)| x.0.total_cmp(&y.0);
    let best_locked = locked.iter().min_by(by_pct).expect("scenarios");
    let worst_locked = locked.iter().max_by(by_pct).expect("scenarios");
    let best_unlocked = unlocked.iter().min_by(by_pct).expect("scenarios");
    let worst_unlocked = unlocked.iter().max_by(by_pct).expect("scenarios");
    let (ml, mu) = (mean(&locked), mean(&unlocked));
    eprintln!(
        "engine locks: mean {ml:.1}%, best {best_locked:?}, worst {worst_locked:?}; \
         without: mean {mu:.1}%, best {best_unlocked:?}, worst {worst_unlocked:?}"
    );
    assert!(worst_locked.0 < 100.0, "{worst_locked:?}");
    assert!(worst_unlocked.0 > 100.0, "{worst_unlocked:?}");
    assert!(best_locked.0 < best_unlocked.0);
    assert!(mu > ml + 15.0, "without {mu:.1}% vs with {ml:.1}%");
}

/// Per kind of task (CPU-only, GPU-using) of one Table II run with
/// `--shift-tardy`: the miss ratio over all jobs, the mean of the per-task
/// mean responses (% of period), and the names of the tasks that missed.
struct Table2Row {
    cpu_miss: f64,
    cpu_resp: f64,
    gpu_miss: f64,
    gpu_resp: f64,
    missed: Vec<String>,
}

fn table2_row(base: &Workload, h: InterruptHandling, edf: bool, overheads: bool) -> Table2Row {
    let mut w = base.clone();
    w.policy.interrupts = h;
    if edf {
        w.policy.cpu_scheduler = rtgpu_model::CpuScheduler::ClusteredEdf;
    }
    let r = simulate(
        &w,
        &SimConfig {
            duration: 10_000_000_000,
            shift_tardy: true,
            overheads,
            ..SimConfig::default()
        },
    )
    .expect("runs");
    let mut acc = [(0u64, 0u64, 0f64, 0f64); 2];
    for t in &r.tasks {
        let a = &mut acc[t.uses_gpu as usize];
        a.0 += t.jobs + t.unfinished;
        a.1 += t.misses;
        a.2 += t.mean_response_pct;
        a.3 += 1.0;
    }
    Table2Row {
        cpu_miss: acc[0].1 as f64 / acc[0].0 as f64,
        cpu_resp: acc[0].2 / acc[0].3,
        gpu_miss: acc[1].1 as f64 / acc[1].0 as f64,
        gpu_resp: acc[1].2 / acc[1].3,
        missed: r
            .tasks
            .iter()
            .filter(|t| t.misses > 0)
            .map(|t| t.name.clone())
            .collect(),
    }
}

/// seed 000 Table II, LITMUS^RT columns (d)-(h), on the faithful task set
/// (four GPUs per cluster as in §V, Table III overheads). Under C-RM the
/// two lowest-priority CPU-only tasks of each cluster finish at 20 ms plus
/// overheads in every period (2 + 20 * 5 = 102 ms of higher-or-equal work
/// on six cores from a synchronous release), so 2 of 20 CPU-only tasks
/// miss: the seed's 10.0 %; the GPU-using tasks miss nothing (the seed's
/// 0 %), with klmirqd, SLIH and PAI alike. Mean responses are within a few
/// points of the seed's (CPU-only 55.6-55.8 %, GPU-using 46.2-49.6 %).
/// C-EDF misses (almost) nothing. A fixed priority below every task delays
/// the GPU-using tasks (higher mean response) but makes them miss nothing:
/// with 29.9 us bottom halves interrupt handling is too light to cost a
/// deadline in an exact simulation.
#[test]
fn seed000_table2_litmus_columns() {
    let base = example("klmirqd-table2.toml");
    let lowest_cpu: Vec<String> = ["cpu-c0-18", "cpu-c0-19", "cpu-c1-18", "cpu-c1-19"]
        .map(String::from)
        .to_vec();
    let k = table2_row(&base, InterruptHandling::Klmirqd, false, true);
    for (name, row) in [
        ("klmirqd", &k),
        (
            "slih",
            &table2_row(&base, InterruptHandling::Slih, false, true),
        ),
        (
            "pai",
            &table2_row(&base, InterruptHandling::Pai, false, true),
        ),
    ] {
        eprintln!(
            "C-RM {name}: cpu {:.4}/{:.1}% gpu {:.4}/{:.1}%",
            row.cpu_miss, row.cpu_resp, row.gpu_miss, row.gpu_resp
        );
        assert_eq!(row.missed, lowest_cpu, "{name}: who misses");
        assert!((0.095..=0.105).contains(&row.cpu_miss), "{name}");
        assert_eq!(row.gpu_miss, 0.0, "{name}");
        assert!((53.0..=58.0).contains(&row.cpu_resp), "{name}");
        assert!((44.0..=52.0).contains(&row.gpu_resp), "{name}");
    }
    // Without overheads the two lowest CPU-only tasks finish exactly at
    // their deadlines: the 10 % is an overhead-sized overrun.
    let exact = table2_row(&base, InterruptHandling::Klmirqd, false, false);
    assert_eq!(exact.cpu_miss + exact.gpu_miss, 0.0);
    let low = table2_row(
        &base,
        InterruptHandling::FixedPriorityThreads { priority: 1 },
        false,
        true,
    );
    assert_eq!(low.gpu_miss, 0.0);
    assert!(
        low.gpu_resp > k.gpu_resp + 3.0,
        "low threads delay GPU tasks"
    );
    let e = table2_row(&base, InterruptHandling::Klmirqd, true, true);
    eprintln!(
        "C-EDF klmirqd: cpu {:.4}/{:.1}% gpu {:.4}/{:.1}%",
        e.cpu_miss, e.cpu_resp, e.gpu_miss, e.gpu_resp
    );
    assert!(e.cpu_miss < 0.005 && e.gpu_miss == 0.0);
}

/// The fixed-priority trade-off of Table II's Observation 1 on the
/// distorted variant (two GPUs per cluster, copies, 400 us bottom halves):
/// under C-RM a fixed interrupt-thread priority below every task starves
/// the GPU-using tasks, one above every task serves them better than
/// klmirqd (which gives their bottom halves exactly their own, low,
/// priority), and C-EDF with klmirqd misses (almost) nothing. (Whether
/// threads above every task delay the CPU-only tasks more than klmirqd
/// depends on the run's length here: not asserted, see
/// docs/seeds/000-klmirqd.md.)
#[test]
fn seed000_table2_fixed_priorities_hurt_one_side() {
    let base = example("klmirqd-table2-stress.toml");
    let k = table2_row(&base, InterruptHandling::Klmirqd, false, true);
    let h = table2_row(
        &base,
        InterruptHandling::FixedPriorityThreads { priority: 99 },
        false,
        true,
    );
    let l = table2_row(
        &base,
        InterruptHandling::FixedPriorityThreads { priority: 1 },
        false,
        true,
    );
    let e = table2_row(&base, InterruptHandling::Klmirqd, true, true);
    eprintln!(
        "klmirqd cpu {:.3}/{:.1}% gpu {:.3}; high cpu {:.3}/{:.1}% gpu {:.3}; low gpu {:.3}; \
         c-edf cpu {:.3} gpu {:.3}",
        k.cpu_miss,
        k.cpu_resp,
        k.gpu_miss,
        h.cpu_miss,
        h.cpu_resp,
        h.gpu_miss,
        l.gpu_miss,
        e.cpu_miss,
        e.gpu_miss
    );
    assert!(l.gpu_miss > k.gpu_miss, "low priority starves GPU tasks");
    assert!(l.gpu_resp > k.gpu_resp);
    assert!(
        h.gpu_miss < k.gpu_miss,
        "high priority serves GPU tasks best"
    );
    assert!(e.cpu_miss < 0.01 && e.gpu_miss < 0.02);
}

fn vgpu_workload(policy: &str) -> Workload {
    wl(&format!(
        r#"{ONE_GPU}
[policy]
cpu_scheduler = "G-FP"
gpu_allocator = "static"

[[vgpu]]
name = "v40"
gpu = "gpu0"
share = "40%"
policy = "{policy}"

[[vgpu]]
name = "v60"
gpu = "gpu0"
share = "60%"
policy = "{policy}"

[[task]]
name = "a"
wcet = "100 us"
period = "20 ms"
gpu = {{ kernels = ["1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms"], vgpu = "v40" }}

[[task]]
name = "b"
wcet = "100 us"
period = "20 ms"
gpu = {{ kernels = ["1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms", "1 ms"], vgpu = "v60" }}
"#
    ))
}

/// seed 001 Fig. 10: BAND keeps two always-backlogged vGPUs at 40/60
/// within a few percent; FIFO does not.
#[test]
fn seed001_band_keeps_40_60() {
    let share = |policy: &str| {
        let r = run(&vgpu_workload(policy), 2_000_000_000);
        let (a, b) = (r.vgpus[0].mean, r.vgpus[1].mean);
        (a / (a + b), b / (a + b))
    };
    let (a, b) = share("band");
    assert!(
        (a - 0.4).abs() < 0.03 && (b - 0.6).abs() < 0.03,
        "band {a} {b}"
    );
    let (a, _) = share("fifo");
    assert!((a - 0.5).abs() < 0.03, "fifo shares evenly: {a}");
}

/// Perfetto export: valid JSON with tracks for cores, engines and tokens.
#[test]
fn trace_exports_as_chrome_json() {
    let w = example("feature-tracking.toml");
    let r = simulate(
        &w,
        &SimConfig {
            duration: 200_000_000,
            trace: true,
            ..SimConfig::default()
        },
    )
    .expect("runs");
    let names: Vec<String> = r.tasks.iter().map(|t| t.name.clone()).collect();
    let json = rtgpu_sim::trace::chrome_json(&r.trace, &r.track_names, &names);
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    let ev = v["traceEvents"].as_array().expect("events");
    for cat in [
        "run",
        "kernel",
        "copy in",
        "copy out",
        "token held",
        "top half",
    ] {
        assert!(
            ev.iter().any(|e| e["cat"] == cat),
            "no {cat} span in the trace"
        );
    }
    let svg = rtgpu_sim::plot::svg(&r);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}

/// `simulate --svg` (issue 23): tasks named under their bars, labelled
/// axes, the inversion CDF as steps, and no GPU panel without GPU work.
#[test]
fn the_svg_names_tasks_labels_axes_and_drops_an_empty_gpu_panel() {
    let cfg = SimConfig {
        duration: 300_000_000,
        ..SimConfig::default()
    };
    let gpu = simulate(&example("perception-1gpu.toml"), &cfg).expect("runs");
    let svg = rtgpu_sim::plot::svg(&gpu);
    for t in &gpu.tasks {
        assert!(
            svg.contains(&format!(">{}</text>", t.name)),
            "{} not labelled",
            t.name
        );
    }
    for title in [
        "% of period",
        "inversion duration (",
        "virtual time (ms)",
        ">80%<",
    ] {
        assert!(svg.contains(title), "no {title:?}");
    }
    assert!(svg.contains("utilization over time"));
    // A step CDF: every point's x repeats (a vertical rise after each
    // horizontal run).
    if !gpu.inversions.is_empty() {
        let line = svg
            .lines()
            .find(|l| l.contains("<polyline") && l.contains("#1f77b4\" stroke-width=\"1.5"))
            .expect("the CDF");
        let xs: Vec<&str> = line
            .split("points=\"")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .expect("points")
            .split(' ')
            .map(|p| p.split(',').next().unwrap_or(""))
            .collect();
        assert!(xs.windows(2).any(|w| w[0] == w[1]), "{line}");
    }
    let cpu = simulate(&example("quickstart.toml"), &cfg).expect("runs");
    let cpu_svg = rtgpu_sim::plot::svg(&cpu);
    assert!(!cpu_svg.contains("utilization over time"));
    // No inversion: a line saying so, not an empty panel.
    if cpu.inversions.is_empty() {
        assert!(cpu_svg.contains("priority inversions: none observed"));
        assert!(!cpu_svg.contains("fraction ≤ duration"));
    }
    // The GPU panel's legend sits above its plot, clear of the lines: every
    // legend text's y is above the panel's 100% grid line.
    let y_of = |l: &str, key: &str| -> f64 {
        l.split(key)
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|v| v.parse().ok())
            .expect("a y coordinate")
    };
    let grid_100 = svg
        .lines()
        .filter(|l| l.contains(">100%</text>"))
        .map(|l| y_of(l, "y1=\""))
        .fold(f64::MIN, f64::max);
    let legend = svg
        .lines()
        .filter(|l| l.contains("(mean ") && l.contains("%)</text>"))
        .map(|l| y_of(l, "y=\""))
        .collect::<Vec<_>>();
    assert!(!legend.is_empty());
    for y in legend {
        assert!(
            y < grid_100,
            "legend at y {y} inside the panel (100% at {grid_100})"
        );
    }
}

/// klmirqd's interrupt thread runs at the owner's *current* effective
/// priority (seed 000 §IV): when a high-priority job starts waiting for the
/// token of a low-priority holder whose bottom half is pending, that bottom
/// half inherits the waiter's priority at once. Before this was modelled
/// the bottom half kept the holder's low priority from its interrupt's
/// arrival, starved behind 20 CPU-only tasks, and the 19.9 ms GPU task of
/// Table II's workload took up to 22 ms against an analysed bound of
/// 9.5 ms. It needs token contention and heavy bottom halves, hence the
/// distorted variant of the task set (two GPUs per cluster, 400 us).
#[test]
fn klmirqd_bottom_halves_inherit_the_token_waiters_priority() {
    let w = example("klmirqd-table2-stress.toml");
    let (report, _) = rtgpu_analysis::workload::analyze(&w);
    let r = simulate(
        &w,
        &SimConfig {
            duration: 10_000_000_000,
            ..SimConfig::default()
        },
    )
    .expect("runs");
    for name in ["gpu-high-c0", "gpu-high-c1"] {
        let i = w.tasks.iter().position(|t| t.name == name).expect("task");
        let bound = report.tasks[i].response_time.expect("analysed bound");
        let t = &r.tasks[i];
        assert!(
            t.max_response <= bound,
            "{name}: simulated {} ns above the analysed bound {bound} ns",
            t.max_response
        );
        assert_eq!(t.misses, 0, "{name}");
    }
}

/// Two kernels queue for one execution engine; completion interrupts cost
/// Δth = 100 us and Δbh = 200 us. Passing the lock on once the holder has
/// learned of its kernel's completion (seed 004's rule) leaves the engine
/// idle for Δth + Δbh between the kernels; the device-side hand-off starts
/// the second kernel the instant the first ends on the device.
#[test]
fn device_handoff_closes_the_interrupt_gap_on_the_engine() {
    let with = |handoff: &str| {
        let w = wl(&format!(
            r#"{ONE_GPU}
th = "100 us"
bh = "200 us"

[policy]
cpu_scheduler = "G-EDF"
gpu_allocator = "gpusync"
tokens_per_gpu = 2
engine_handoff = "{handoff}"

[[task]]
name = "t"
count = 2
wcet = "10 us"
period = "100 ms"
gpu = {{ kernels = ["4 ms"] }}
"#
        ));
        let r = simulate(
            &w,
            &SimConfig {
                duration: 100_000_000,
                record_jobs: true,
                trace: true,
                ..SimConfig::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut kernels: Vec<(u64, u64)> = r
            .trace
            .iter()
            .filter(|s| s.kind == rtgpu_sim::trace::SpanKind::Kernel)
            .map(|s| (s.start, s.end))
            .collect();
        kernels.sort_unstable();
        assert_eq!(kernels.len(), 2, "{kernels:?}");
        let worst = r.tasks.iter().map(|t| t.max_response).max().unwrap_or(0);
        (kernels[1].0 - kernels[0].1, worst)
    };
    let (gap_completion, worst_completion) = with("completion");
    let (gap_device, worst_device) = with("device");
    assert_eq!(gap_completion, 300_000);
    assert_eq!(gap_device, 0);
    assert_eq!(worst_completion - worst_device, 300_000);
}

/// Three GPUSync users on one CPU and one token, released together: each
/// runs briefly, requests and suspends, so the third waits behind two
/// holds. Theorem 2 (seed 004) charges one hold (2⌈m/k⌉ − 1 = 1), which
/// the R²DGLP's priority donation would make true; our allocators do
/// without donation, so the analysis charges ⌊(N − 1)/k⌋ = 2 holds.
#[test]
fn more_gpu_users_than_cpus_wait_behind_each_other() {
    let w = wl(&format!(
        r#"{ONE_CORE_ONE_GPU}
[policy]
cpu_scheduler = "C-EDF"
gpu_allocator = "gpusync"
tokens_per_gpu = 1
engine_locks = false

[[task]]
name = "t"
count = 3
period = "100 ms"
wcet = "1 ms"
gpu = {{ kernels = ["10 ms"] }}
"#
    ));
    let oblivious = rtgpu_analysis::workload::Extra {
        method: rtgpu_analysis::gpu::Method::Oblivious,
        ..Default::default()
    };
    let (report, _) = rtgpu_analysis::workload::analyze_with(&w, &oblivious);
    let r = run(&w, 1_000_000_000);
    // Lemma 5: the kernel plus L^P, the whole CPU time (1 ms).
    let hold = 11_000_000;
    for (t, tr) in r.tasks.iter().zip(&report.tasks) {
        let g = tr.gpu.as_ref().expect("GPU report");
        assert_eq!(g.token_hold_time, Some(hold));
        assert_eq!(g.token_blocking, Some(2 * hold), "{}", t.name);
        assert!(t.max_blocking <= 2 * hold, "{}: {}", t.name, t.max_blocking);
    }
    // The suspension-aware method counts the same two requests ahead,
    // each its own hold: the kernel alone (no CPU work in the section).
    let (aware, _) = rtgpu_analysis::workload::analyze(&w);
    for (t, tr) in r.tasks.iter().zip(&aware.tasks) {
        let g = tr.gpu.as_ref().expect("GPU report");
        assert_eq!(g.hold, Some(10_000_000));
        assert_eq!(g.requests_ahead, Some(2));
        assert_eq!(g.token_blocking, Some(20_000_000), "{}", t.name);
        assert!(
            t.max_blocking <= 20_000_000,
            "{}: {}",
            t.name,
            t.max_blocking
        );
    }
    // The last to request waits two kernels less the others' half-CPU
    // starts (19 ms), more than Theorem 2's one hold.
    assert_eq!(r.tasks[2].max_blocking, 19_000_000);
}

/// CPU work inside a GPU section (`gpu.cpu`, seed 004's L^P) holds the
/// token: with ρ = 1 and no engine locks the GPU idles through it and the
/// second job waits for all of it (0-4 ms CPU, 4-8 ms kernel, then the
/// other: 16 ms); with ρ = 2 and engine locks both run their CPU work at
/// once on the two cores and only the kernels queue (8 and 12 ms).
#[test]
fn cpu_inside_a_section_holds_the_gpu() {
    let w = |locks: bool, tokens: u32| {
        let mut w = two_tasks_using(locks, tokens, r#"kernels = ["4 ms"]"#);
        for t in &mut w.tasks {
            t.wcet = 4_000_000;
            if let Some(g) = t.gpu.as_mut() {
                g.cpu = 4_000_000;
            }
        }
        w
    };
    let responses = |w: &Workload| {
        let mut r: Vec<u64> = run(w, 50_000_000)
            .tasks
            .iter()
            .map(|t| t.max_response)
            .collect();
        r.sort_unstable();
        r
    };
    assert_eq!(responses(&w(false, 1)), [8_000_000, 16_000_000]);
    assert_eq!(responses(&w(true, 2)), [8_000_000, 12_000_000]);
}

/// The token holder's CPU work inside its section runs at the priority it
/// inherits from a waiter (seed 000 App. A R2, seed 004 §4.2): under C-FP
/// on one core, L (lowest) holds the GPU for 6 ms of CPU work when H's
/// second job (released at 5 ms) waits for it; M, between them, is
/// released at 9 ms and must not preempt L. L's work ends at 10.8 ms
/// (4.7 + 6 + H's 0.1 ms), its kernel at 11.3, H's at 11.6 and H's job at
/// 11.7 ms: 6.7 ms. Without inheritance M's 4.5 ms would come first.
#[test]
fn a_holder_runs_its_section_cpu_at_its_waiters_priority() {
    let w = wl(&format!(
        r#"{ONE_CORE_ONE_GPU}
[policy]
cpu_scheduler = "C-FP"
gpu_allocator = "gpusync"
tokens_per_gpu = 1
engine_locks = false
interrupts = "slih"

[[task]]
name = "h"
wcet = "0.2 ms"
period = "5 ms"
gpu = {{ kernels = ["0.3 ms"] }}

[[task]]
name = "m"
wcet = "4.5 ms"
period = "9 ms"

[[task]]
name = "l"
wcet = "6 ms"
period = "100 ms"
gpu = {{ kernels = ["0.5 ms"], cpu = "6 ms" }}
"#
    ));
    let r = simulate(
        &w,
        &SimConfig {
            // Releases until 9.5 ms: M's second job (9 ms) is among them.
            duration: 9_500_000,
            record_jobs: true,
            drain: true,
            ..SimConfig::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let h2 = r
        .records
        .iter()
        .find(|j| j.task == 0 && j.release == 5_000_000)
        .expect("h's second job");
    assert_eq!(h2.response, Some(6_700_000));
    // M's second job waits for L's inherited CPU work (without
    // inheritance: H's job takes 11.2 ms, M's starts at once).
    let m2 = r
        .records
        .iter()
        .find(|j| j.task == 1 && j.release == 9_000_000);
    assert_eq!(m2.and_then(|j| j.start), Some(10_800_000));
}

/// A job holds the execution lock from its first kernel to its last
/// (seed 004 §4.2: released "once all of its engine-related operations
/// complete"; `rtgpu run` too), so a co-holder waits for all of them: one
/// execution-engine request per job, L^E_max the longest job's kernels.
/// With ρ = 2 both jobs get a token at once; B's one kernel waits for A's
/// four (12 ms), which the analysis' engine blocking must cover (it
/// charged B one 3 ms kernel per request before).
#[test]
fn engine_blocking_covers_a_co_holders_whole_kernel_sequence() {
    let w = wl(&format!(
        r#"{ONE_GPU}
[policy]
cpu_scheduler = "G-EDF"
gpu_allocator = "gpusync"
tokens_per_gpu = 2
engine_locks = true

[[task]]
name = "a"
wcet = "10 us"
period = "100 ms"
gpu = {{ kernels = ["3 ms", "3 ms", "3 ms", "3 ms"] }}

[[task]]
name = "b"
wcet = "1 ms"
period = "100 ms"
gpu = {{ kernels = ["3 ms"] }}
"#
    ));
    let (report, _) = rtgpu_analysis::workload::analyze(&w);
    let r = run(&w, 50_000_000);
    let b = &r.tasks[1];
    assert_eq!(b.max_blocking, 12_000_000 - 500_000 + 5_000);
    let g = report.tasks[1].gpu.as_ref().expect("GPU report");
    assert_eq!(g.engine_blocking, Some(12_000_000));
    assert!(b.max_blocking <= g.engine_blocking.unwrap_or(0));
}

/// PAI bottom halves follow their owner's effective priority (seed 000
/// §III-IV), as klmirqd's do: a holder's pending bottom half inherits the
/// priority of a high-priority job waiting for its token. They once kept
/// the owner's priority at interrupt time, so in
/// `examples/interrupts-crm-pai.toml` a low-priority holder's bottom half
/// starved below medium CPU tasks and `gpu-fast-node0-0` took 16.389 ms
/// against its 4.5 ms bound.
#[test]
fn pai_bottom_halves_inherit_and_the_fast_tasks_keep_their_bounds() {
    let w = example("interrupts-crm-pai.toml");
    let (report, _) = rtgpu_analysis::workload::analyze(&w);
    let r = run(&w, 10_000_000_000);
    let mut checked = 0;
    for (t, tr) in r.tasks.iter().zip(&report.tasks) {
        if t.name.starts_with("gpu-fast") {
            let bound = tr.response_time.expect("the fast GPU tasks have bounds");
            assert!(
                t.max_response <= bound,
                "{}: {} > {bound}",
                t.name,
                t.max_response
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 2);
}
