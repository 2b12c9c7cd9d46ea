//! `gpu_analysis`: throughput of the GPU-aware analyses of issue 3.
//!
//! ```text
//! cargo run --release -p rtgpu-bench --bin gpu_analysis -- [--seconds S]
//! ```
//!
//! Measures, side by side in one run (best of five rounds per case):
//! - `rtgpu analyze` on examples/feature-tracking.toml (seed 004's 20-stream
//!   tracker, C-EDF + GPUSync), workloads per second;
//! - random GPU workloads of 40 tasks (two clusters of 6 cores and 4 GPUs,
//!   half of the tasks GPU-using) under C-EDF, C-FP and P-FP with GPUSync
//!   and with the k-FMLP; the baseline is the same workloads with their GPU
//!   parts removed and zero overheads (the CPU-only analysis), so the ratio
//!   is the price of the GPU-aware analysis;
//! - seed 000 §VII's overhead-aware test (`overheads::soft_test`) on random
//!   generated sets of 30 tasks, sets per second, exact ILP vs Theorem 1.
//!
//! Workloads are parsed before timing; only the analysis is timed.
//! `--sweep` instead prints seed 000 §VII's schedulability comparison.

use std::hint::black_box;
use std::time::{Duration, Instant};

use rtgpu_analysis::generate::Rng;
use rtgpu_analysis::overheads::{
    effective_utilization, seed000_task_set, soft_test, ClusterScheduler, ClusterSpec, GpuTaskSpec,
    InterruptMethod, KfmlpBound, Seed000SetParams,
};
use rtgpu_analysis::workload::analyze;
use rtgpu_model::{parse_workload, Overheads, Workload};

fn measure<T>(items: &[T], seconds: f64, mut f: impl FnMut(&T)) -> f64 {
    let round = Duration::from_secs_f64(seconds / 5.0);
    let mut best: f64 = 0.0;
    for _ in 0..5 {
        let start = Instant::now();
        let mut done = 0u64;
        while start.elapsed() < round {
            for it in items {
                f(black_box(it));
            }
            done += items.len() as u64;
        }
        best = best.max(done as f64 / start.elapsed().as_secs_f64());
    }
    best
}

const PLATFORM: &str = r#"
[[platform.cluster]]
name = "node0"
cores = 6
gpus = ["g0", "g1", "g2", "g3"]
[[platform.cluster]]
name = "node1"
cores = 6
gpus = ["g4", "g5", "g6", "g7"]
[[platform.gpu]]
name = "g0"
[[platform.gpu]]
name = "g1"
[[platform.gpu]]
name = "g2"
[[platform.gpu]]
name = "g3"
[[platform.gpu]]
name = "g4"
[[platform.gpu]]
name = "g5"
[[platform.gpu]]
name = "g6"
[[platform.gpu]]
name = "g7"
"#;

/// A random 40-task workload: periods 15-60 ms (seed 000 §V), CPU
/// utilization 1-15 %, every other task with 1-3 kernels of 0.2-2 ms, up to
/// 1 MiB in / out, up to 4 MiB state, 1-6 interrupts. `gpu = false` drops
/// the GPU parts and uses zero overheads (the CPU-only baseline).
fn random_workload(rng: &mut Rng, policy: &str, gpu: bool) -> Workload {
    let mut s = String::from(PLATFORM);
    if !gpu {
        s.push_str("[overheads]\nbase = \"zero\"\n");
    }
    s.push_str(policy);
    for i in 0..40 {
        let period = rng.range(15_000, 60_000); // µs
        let wcet = (period * rng.range(1, 15) / 100).max(1);
        s.push_str(&format!(
            "[[task]]\nname = \"t{i}\"\nperiod = \"{period} us\"\nwcet = \"{wcet} us\"\n"
        ));
        // Draw the GPU part either way so both variants share CPU costs.
        let kernels: Vec<String> = (0..rng.range(1, 4))
            .map(|_| format!("\"{} us\"", rng.range(200, 2_000)))
            .collect();
        let (cin, cout, state, eta) = (
            rng.range(1, 1024),
            rng.range(1, 1024),
            rng.range(0, 4096),
            rng.range(1, 7),
        );
        if gpu && i % 2 == 0 {
            s.push_str(&format!(
                "gpu = {{ copy_in = \"{cin} KiB\", copy_out = \"{cout} KiB\", state = \
                 \"{state} KiB\", kernels = [{}], interrupts = {eta} }}\n",
                kernels.join(", "),
            ));
        }
    }
    match parse_workload(&s, "random.toml") {
        Ok(w) => w,
        Err(e) => panic!("generated workload is invalid: {e}\n{s}"),
    }
}

fn random_specs(rng: &mut Rng, n: usize) -> Vec<GpuTaskSpec> {
    (0..n)
        .map(|i| {
            let period = rng.range(15, 61) * 1_000_000;
            let total = period * rng.range(10, 40) / 100;
            let gpu = if i % 2 == 0 { total * 3 / 4 } else { 0 };
            GpuTaskSpec {
                cpu: total - gpu,
                gpu,
                period,
                deadline: period,
                interrupts: if gpu > 0 { 3 } else { 0 },
            }
        })
        .collect()
}

/// `--sweep`: seed 000 §VII's schedulability comparison (Fig. 5 setting:
/// utilizations uniform in [0.5, 0.9], 50-60 % GPU-using tasks with 75 % of
/// their time on the GPU, Table III overheads, C-EDF on two clusters of 6
/// CPUs and 4 GPUs), fraction of `n` sets schedulable per method, plus the
/// mean effective utilization at R = 16 (Fig. 6's x-axis).
fn sweep(n: usize) {
    let cl = [ClusterSpec { cpus: 6, gpus: 4 }; 2];
    let o = Overheads::default();
    println!("i  U     eff.U(R=16)  klmirqd   SLIH    PAI");
    for i in [1, 3, 6] {
        for u2 in 12..=24 {
            let u = u2 as f64 / 2.0;
            let mut rng = Rng::new(1000 + u2 as u64);
            let mut count = [0usize; 3];
            let mut eff = 0.0;
            for _ in 0..n {
                let p = Seed000SetParams {
                    utilization: u,
                    interrupts: i,
                    ..Seed000SetParams::default()
                };
                let ts = seed000_task_set(&mut rng, &p);
                eff += effective_utilization(&ts, 16.0);
                for (k, m) in [
                    InterruptMethod::Klmirqd,
                    InterruptMethod::Slih,
                    InterruptMethod::Pai,
                ]
                .into_iter()
                .enumerate()
                {
                    let r = soft_test(&ts, &cl, ClusterScheduler::CEdf, m, &o, KfmlpBound::Exact);
                    count[k] += r.schedulable as usize;
                }
            }
            let pct = |c: usize| 100.0 * c as f64 / n as f64;
            println!(
                "{i}  {u:<5.1} {:>10.1}  {:>6.0}%  {:>5.0}%  {:>5.0}%",
                eff / n as f64,
                pct(count[0]),
                pct(count[1]),
                pct(count[2])
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--sweep") {
        sweep(100);
        return;
    }
    let seconds = args
        .iter()
        .position(|a| a == "--seconds")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/feature-tracking.toml"
    );
    let tracker = std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| parse_workload(&t, "feature-tracking.toml").map_err(|e| e.to_string()));
    let tracker = match tracker {
        Ok(w) => w,
        Err(e) => {
            eprintln!("gpu_analysis: cannot read {path}: {e}");
            std::process::exit(2);
        }
    };
    println!("{:<52} {:>12} {:>14}", "case", "per second", "vs CPU-only");
    let r = measure(std::slice::from_ref(&tracker), seconds, |w| {
        black_box(analyze(w));
    });
    println!(
        "{:<52} {:>12.0}",
        "feature-tracking.toml (20 tasks, C-EDF GPUSync)", r
    );

    let policies = [
        ("C-EDF + GPUSync", "C-EDF", "gpusync-affinity"),
        ("C-EDF + k-FMLP", "C-EDF", "k-fmlp"),
        ("C-FP + GPUSync", "C-FP", "gpusync-affinity"),
        ("C-FP + k-FMLP", "C-FP", "k-fmlp"),
        ("P-FP (PDMS_HPTS_DS) + k-FMLP", "P-FP", "k-fmlp"),
    ];
    for (name, sched, alloc) in policies {
        let policy =
            format!("[policy]\ncpu_scheduler = \"{sched}\"\ngpu_allocator = \"{alloc}\"\n");
        let mut rng = Rng::new(42);
        let gpu: Vec<Workload> = (0..20)
            .map(|_| random_workload(&mut rng, &policy, true))
            .collect();
        let mut rng = Rng::new(42);
        let cpu: Vec<Workload> = (0..20)
            .map(|_| random_workload(&mut rng, &policy, false))
            .collect();
        let rg = measure(&gpu, seconds, |w| {
            black_box(analyze(w));
        });
        let rc = measure(&cpu, seconds, |w| {
            black_box(analyze(w));
        });
        println!(
            "{:<52} {:>12.0} {:>13.2}x",
            format!("random 40 tasks, {name}"),
            rg,
            rg / rc
        );
    }

    let clusters = [ClusterSpec { cpus: 6, gpus: 4 }; 2];
    let mut rng = Rng::new(7);
    let sets: Vec<Vec<GpuTaskSpec>> = (0..50).map(|_| random_specs(&mut rng, 30)).collect();
    let o = Overheads::default();
    for (bname, bound) in [
        ("exact ILP", KfmlpBound::Exact),
        ("Theorem 1", KfmlpBound::LAware),
    ] {
        for m in [
            InterruptMethod::Slih,
            InterruptMethod::Klmirqd,
            InterruptMethod::Pai,
        ] {
            let r = measure(&sets, seconds, |s| {
                black_box(soft_test(
                    s,
                    &clusters,
                    ClusterScheduler::CEdf,
                    m,
                    &o,
                    bound,
                ));
            });
            println!(
                "{:<52} {:>12.0}",
                format!("soft_test 30 tasks, C-EDF, {}, {bname}", m.name()),
                r
            );
        }
    }
}
