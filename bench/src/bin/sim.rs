//! `sim`: simulated jobs per second of rtgpu's simulator, beside SimSo on
//! the same CPU-only task set in the same run (issue 4).
//!
//! ```text
//! python3 -m venv .venv-simso && .venv-simso/bin/pip install simso
//! cargo run --release -p rtgpu-bench --bin sim -- [--seconds S] [--simso PYTHON]
//! cargo run --release -p rtgpu-bench --bin sim -- --case cpu|gpu   # one case, no SimSo
//! cargo run --release -p rtgpu-bench --bin sim -- --case gpu --once 200  # one run of 200 simulated s
//! cargo run --release -p rtgpu-bench --bin sim -- --case cpu --tasks 10000  # n = 10,000
//! ```
//!
//! `--once S` simulates the case once for `S` seconds of simulated time
//! (no growing, no best of three): a fixed amount of work, for profilers
//! and instruction counts (`valgrind --tool=callgrind`).
//!
//! 1. CPU-only G-EDF, m = 8, n = 40 (`--tasks N`: N), total utilization 6 (UUniFast, whole-ms
//!    periods log-uniform in [10, 1000] ms, seeded), zero overheads.
//! 2. The seed 004 feature-tracking workload (examples/feature-tracking.toml:
//!    C-EDF, GPUSync with affinity, engine locks, DGL, 2 MiB chunks,
//!    klmirqd, Table III overheads).
//! 3. SimSo's global EDF (`simso.schedulers.EDF`) on task set 1, run by
//!    `bench/python/simso_gedf.py` with the given Python (default
//!    `.venv-simso/bin/python`); skipped with a message if it is missing.
//!
//! Each rtgpu figure is the best of three runs of at least `--seconds`
//! (default 1) of wall time each, as jobs per wall-clock second and jobs
//! per CPU second of the simulating thread (`CLOCK_THREAD_CPUTIME_ID`; on a
//! machine shared with other work the wall figure mostly measures the
//! other work). The SimSo ratio is taken on wall time, as SimSo reports.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use rtgpu_analysis::generate::Rng;
use rtgpu_bench::thread_cpu;
use rtgpu_model::*;
use rtgpu_sim::{simulate, SimConfig};

fn gedf_taskset(n: usize) -> Vec<(String, u64, u64)> {
    let mut rng = Rng::new(2024);
    let utils = rtgpu_analysis::generate::uunifast(&mut rng, n, 6.0);
    let (lo, hi) = (10f64.ln(), 1000f64.ln());
    utils
        .iter()
        .enumerate()
        .map(|(i, &u)| {
            let period_ms = (lo + (hi - lo) * rng.next_f64()).exp().round() as u64;
            let wcet_us = ((u.min(1.0) * period_ms as f64 * 1000.0).round() as u64).max(1);
            (format!("t{i}"), wcet_us, period_ms)
        })
        .collect()
}

fn gedf_workload(set: &[(String, u64, u64)]) -> Workload {
    Workload {
        name: format!("gedf-m8-n{}", set.len()),
        platform: Platform {
            clusters: vec![Cluster {
                name: "all".into(),
                cores: 8,
                first_core: 0,
                gpus: Vec::new(),
            }],
            gpus: Vec::new(),
            pcie: Vec::new(),
            bandwidth: Bandwidth::default(),
        },
        overheads: Overheads::zero(),
        policy: Policy {
            cpu_scheduler: CpuScheduler::GlobalEdf,
            ..Policy::default()
        },
        vgpus: Vec::new(),
        tasks: set
            .iter()
            .map(|(name, wcet_us, period_ms)| Task {
                name: name.clone(),
                wcet: wcet_us * 1_000,
                period: period_ms * 1_000_000,
                deadline: period_ms * 1_000_000,
                jitter: 0,
                blocking: 0,
                cluster: None,
                gpu: None,
                reservation: false,
                location: Location::default(),
            })
            .collect(),
    }
}

/// What [`rate`] measured: jobs per wall second and per CPU second of this
/// thread (each the best of three runs), and the last run's jobs and
/// events.
struct Rate {
    wall: f64,
    cpu: f64,
    jobs: u64,
    events: u64,
}

impl Rate {
    /// Events the engine handled per simulated job.
    fn events_per_job(&self) -> f64 {
        self.events as f64 / self.jobs.max(1) as f64
    }
}

/// Best of three runs, each growing the simulated duration until it takes
/// at least `min_wall` seconds.
fn rate(w: &Workload, min_wall: f64) -> Rate {
    let mut duration: u64 = 1_000_000_000;
    let mut best = Rate {
        wall: 0.0,
        cpu: 0.0,
        jobs: 0,
        events: 0,
    };
    let mut runs = 0;
    while runs < 3 {
        let cfg = SimConfig {
            duration,
            jitter: false,
            buckets: 1,
            ..SimConfig::default()
        };
        let start = Instant::now();
        let cpu0 = thread_cpu();
        let r = match simulate(w, &cfg) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("sim: {e}");
                std::process::exit(2);
            }
        };
        let wall = start.elapsed().as_secs_f64();
        let cpu = thread_cpu() - cpu0;
        if wall < min_wall {
            duration = duration.saturating_mul(2);
            continue;
        }
        runs += 1;
        best.wall = best.wall.max(r.jobs as f64 / wall);
        best.cpu = best.cpu.max(r.jobs as f64 / cpu);
        best.jobs = r.jobs;
        best.events = r.events;
    }
    best
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut seconds = 1.0;
    // `--case cpu|gpu`: run one rtgpu case only, no SimSo (for profiling).
    let mut only: Option<String> = None;
    let mut python = PathBuf::from(".venv-simso/bin/python");
    let mut once: Option<u64> = None;
    // `--tasks N`: the CPU-only case with N tasks instead of 40.
    let mut ntasks: usize = 40;
    let mut i = 1;
    while i < args.len() {
        match (args[i].as_str(), args.get(i + 1)) {
            ("--seconds", Some(v)) => {
                seconds = v.parse().unwrap_or_else(|_| {
                    eprintln!("sim: --seconds expects a number, found {v}");
                    std::process::exit(2)
                });
                i += 2;
            }
            ("--case", Some(v)) if v == "cpu" || v == "gpu" => {
                only = Some(v.clone());
                i += 2;
            }
            ("--once", Some(v)) => {
                once = Some(v.parse().unwrap_or_else(|_| {
                    eprintln!("sim: --once expects whole simulated seconds, found {v}");
                    std::process::exit(2)
                }));
                i += 2;
            }
            ("--tasks", Some(v)) => {
                ntasks = match v.parse() {
                    Ok(n) if n > 0 => n,
                    _ => {
                        eprintln!("sim: --tasks expects a positive whole number, found {v}");
                        std::process::exit(2)
                    }
                };
                i += 2;
            }
            ("--simso", Some(v)) => {
                python = PathBuf::from(v);
                i += 2;
            }
            (a, _) => {
                eprintln!(
                    "sim: unknown argument {a} (use --seconds S, --simso PYTHON, --case cpu|gpu, --once S, --tasks N)"
                );
                std::process::exit(2);
            }
        }
    }
    let root: PathBuf = [env!("CARGO_MANIFEST_DIR"), ".."].iter().collect();
    let set = gedf_taskset(ntasks);
    let gedf = gedf_workload(&set);
    if let Some(case) = &only {
        let w = if case == "cpu" {
            gedf
        } else {
            match load_workload(&root.join("examples/feature-tracking.toml")) {
                Ok(w) => w,
                Err(e) => {
                    eprintln!("sim: {e}");
                    std::process::exit(2);
                }
            }
        };
        if let Some(secs) = once {
            let cfg = SimConfig {
                duration: secs.saturating_mul(1_000_000_000),
                jitter: false,
                buckets: 1,
                ..SimConfig::default()
            };
            let cpu0 = thread_cpu();
            match simulate(&w, &cfg) {
                Ok(r) => {
                    let cpu = thread_cpu() - cpu0;
                    println!(
                        "{case}: {} jobs in {cpu:.3} CPU s, {} events ({:.2} per job)",
                        r.jobs,
                        r.events,
                        r.events as f64 / r.jobs.max(1) as f64
                    );
                }
                Err(e) => {
                    eprintln!("sim: {e}");
                    std::process::exit(2);
                }
            }
            return;
        }
        let r = rate(&w, seconds);
        println!(
            "{case}: {:.0} jobs per wall s, {:.0} jobs per CPU s ({} jobs/run, {:.2} events per job, {:.0} events per CPU s)",
            r.wall,
            r.cpu,
            r.jobs,
            r.events_per_job(),
            r.cpu * r.events_per_job()
        );
        return;
    }
    let cpu_only = rate(&gedf, seconds);
    let ft_path = root.join("examples/feature-tracking.toml");
    let ft = match load_workload(&ft_path) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("sim: {e}");
            std::process::exit(2);
        }
    };
    let gpu = rate(&ft, seconds);

    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "rtgpu simulator, best of 3 runs of >= {seconds} s wall (load average {}):",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "                                      jobs per wall s   jobs per CPU s  events/job  events per CPU s"
    );
    let label = format!("CPU-only G-EDF m=8 n={ntasks} U=6:");
    for (label, r, goal) in [
        (label.as_str(), &cpu_only, "5,000,000 at n = 10,000"),
        ("feature tracking (seed 004, GPU):", &gpu, "1,500,000"),
    ] {
        println!(
            "  {label:<36}{:>12.0}  {:>14.0}  {:>10.2}  {:>16.0}  ({} jobs/run)  goal {goal}",
            r.wall,
            r.cpu,
            r.events_per_job(),
            r.cpu * r.events_per_job(),
            r.jobs
        );
    }

    // SimSo on the same task set (ms units).
    let spec = format!(
        "{{\"cores\":8,\"duration_ms\":5000,\"tasks\":[{}]}}",
        set.iter()
            .map(|(n, wcet_us, p)| format!(
                "{{\"name\":\"{n}\",\"wcet_ms\":{},\"period_ms\":{p}}}",
                *wcet_us as f64 / 1000.0
            ))
            .collect::<Vec<_>>()
            .join(",")
    );
    let spec_path = std::env::temp_dir().join(format!("rtgpu-simso-{}.json", std::process::id()));
    if let Err(e) = std::fs::write(&spec_path, spec) {
        eprintln!("sim: cannot write {}: {e}", spec_path.display());
        std::process::exit(2);
    }
    let out = Command::new(&python)
        .arg(root.join("bench/python/simso_gedf.py"))
        .arg(&spec_path)
        .output();
    let _ = std::fs::remove_file(&spec_path);
    match out {
        Ok(o) if o.status.success() => {
            // SimSo logs every scheduling event on stdout; the script's
            // result is the last line.
            let all = String::from_utf8_lossy(&o.stdout);
            let text = all.lines().last().unwrap_or("").to_string();
            let field = |name: &str| {
                text.split(&format!("\"{name}\":"))
                    .nth(1)
                    .and_then(|s| s.split([',', '}']).next())
                    .and_then(|s| s.trim().parse::<f64>().ok())
            };
            match (field("jobs_per_s"), field("jobs_per_cpu_s")) {
                (Some(s), Some(c)) => {
                    println!(
                        "  SimSo 0.8 G-EDF, same task set:     {s:>12.0}  {c:>14.0}  ({})",
                        text.trim()
                    );
                    println!(
                        "  ratio rtgpu / SimSo (CPU-only):     {:>11.0}x  {:>13.0}x",
                        cpu_only.wall / s,
                        cpu_only.cpu / c
                    );
                }
                _ => println!("  SimSo: unreadable output: {text}"),
            }
        }
        Ok(o) => println!(
            "  SimSo: failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ),
        Err(e) => println!(
            "  SimSo: not run ({}: {e}); install it with `python3 -m venv .venv-simso && \
             .venv-simso/bin/pip install simso`",
            python.display()
        ),
    }
}
