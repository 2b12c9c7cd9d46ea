//! `rtgpu simulate FILE`: run the workload in virtual time with the policy
//! core (crates/sim) and show per-task results beside the analysis bounds.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use rtgpu_sim::{
    simulate_analysed, simulate_planned, Plan, Releases, Scenario, SimConfig, SimResult,
};

use crate::render::duration;

#[derive(clap::Args)]
pub struct SimulateArgs {
    /// Workload file (TOML).
    file: PathBuf,
    /// Release jobs for this long (e.g. "10 s", "500 ms").
    #[arg(long, default_value = "10 s")]
    duration: String,
    /// Seed of the random choices (jitter, sporadic gaps, execution times).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the result as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Write one CSV row per job to OUT.
    #[arg(long, value_name = "OUT")]
    csv: Option<PathBuf>,
    /// Write a Perfetto / Chrome trace-event JSON to OUT (ui.perfetto.dev).
    #[arg(long, value_name = "OUT")]
    trace: Option<PathBuf>,
    /// Write an SVG plot of the main metrics to OUT.
    #[arg(long, value_name = "OUT")]
    svg: Option<PathBuf>,
    /// Seed 004 scenario, e.g. "AEDG,2MB" or "aedg,X" (overrides the
    /// file's GPUSync settings).
    #[arg(long)]
    scenario: Option<String>,
    /// Sporadic releases: each gap is T plus up to this percentage of T
    /// (`50` or `50%`).
    #[arg(long, value_name = "PERCENT", value_parser = percent_arg)]
    sporadic: Option<f64>,
    /// Actual execution times uniform in [PERCENT·C, C] (default: always C;
    /// `60` or `60%`, as the workload file writes it).
    #[arg(long, value_name = "PERCENT", value_parser = percent_arg)]
    bcet: Option<f64>,
    /// Release a job whose predecessor was tardy at that completion instead
    /// of backlogging (seed 000 §VI's measurement rule).
    #[arg(long)]
    shift_tardy: bool,
    /// Do not inject the workload's overheads.
    #[arg(long)]
    no_overheads: bool,
    /// Keep running after the duration until every released job finished.
    #[arg(long)]
    drain: bool,
    #[command(flatten)]
    klmirqd: crate::run::KlmirqdArgs,
    /// The analysis method whose placement, priorities and bounds the run
    /// uses (see `rtgpu analyze --method`).
    #[arg(long, value_enum, default_value_t = crate::MethodArg::Aware)]
    method: crate::MethodArg,
    /// The task threads' policy (see `rtgpu analyze --sched`).
    #[arg(long, value_enum, default_value_t = crate::SchedArg::Fifo)]
    sched: crate::SchedArg,
    /// Run the placement, priorities and split budgets of this plan
    /// (written by `rtgpu analyze FILE --plan PLAN`) instead of analysing
    /// the workload again; refused, naming what differs, if it is not the
    /// workload's.
    #[arg(long, value_name = "PLAN")]
    plan: Option<PathBuf>,
}

const EXIT_OK: u8 = 0;
const EXIT_MISSES: u8 = 1;
const EXIT_INVALID: u8 = 2;

/// A percentage as `--sporadic` and `--bcet` take it: `50`, `50%` or
/// `50 %`.
fn percent_arg(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim_end();
    number
        .parse::<f64>()
        .map_err(|_| format!("{text:?} is not a percentage (expected e.g. 50 or 50%)"))
}

fn percent_ppm(what: &str, v: f64) -> Result<u32, String> {
    if !(0.0..=100.0).contains(&v) || v.is_nan() {
        return Err(format!(
            "--{what} must be a percentage in [0, 100], found {v}"
        ));
    }
    Ok((v * 10_000.0).round() as u32)
}

pub fn run(a: &SimulateArgs) -> ExitCode {
    for (path, what) in [
        (&a.csv, "jobs (CSV)"),
        (&a.trace, "trace"),
        (&a.svg, "plot"),
    ] {
        if let Some(p) = path {
            if let Err(e) = crate::output::check(p, what, &[a.file.as_path()]) {
                eprintln!("rtgpu simulate: {e}");
                return ExitCode::from(EXIT_INVALID);
            }
        }
    }
    let (sched, sched_note) = a.sched.resolve();
    let loaded = rtgpu_model::load_workload(&a.file)
        .map_err(|e| e.to_string())
        .and_then(|w| crate::under_sched(w, sched, "simulate"));
    let mut w = match loaded {
        Ok(w) => w,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    if let Some(n) = sched_note {
        eprintln!("note: {n}");
    }
    let mut cfg = SimConfig {
        seed: a.seed,
        overheads: !a.no_overheads,
        drain: a.drain,
        shift_tardy: a.shift_tardy,
        record_jobs: a.csv.is_some(),
        trace: a.trace.is_some(),
        method: a.method.into(),
        ..SimConfig::default()
    };
    let setup = (|| -> Result<(), String> {
        cfg.duration = rtgpu_model::units::parse_duration(&a.duration)
            .map_err(|e| format!("--duration `{}`: {e}", a.duration))?;
        if cfg.duration == 0 {
            return Err("--duration must be positive".into());
        }
        if let Some(p) = a.sporadic {
            cfg.releases = Releases::Sporadic {
                max_extra_ppm: percent_ppm("sporadic", p)?,
            };
        }
        if let Some(p) = a.bcet {
            cfg.bcet_ppm = percent_ppm("bcet", p)?;
        }
        if let Some(s) = &a.scenario {
            Scenario::parse(s)?.apply(&mut w.policy, &mut cfg);
        }
        cfg.klmirqd = crate::run::sim_klmirqd(&a.klmirqd.mode()?);
        Ok(())
    })();
    if let Err(e) = setup {
        eprintln!("rtgpu simulate: {e}");
        return ExitCode::from(EXIT_INVALID);
    }
    let plan = match a.plan.as_deref().map(Plan::load).transpose() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rtgpu simulate: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    // Analysis bounds beside the observations, with klmirqd's independent
    // servers charged as the simulator runs them (the analysis that placed
    // the run, not a second one); with a plan, the bounds it carries (P-FP
    // pieces' response times) and no analysis.
    let run = match &plan {
        Some(p) => simulate_planned(&w, &cfg, Some(p)).map(|r| (r, p.bounds(&w))),
        None => simulate_analysed(&w, &cfg, None).map(|(r, report)| {
            let bounds = report.tasks.iter().map(|t| t.response_time).collect();
            (r, bounds)
        }),
    };
    let (result, bounds): (SimResult, Vec<Option<u64>>) = match run {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rtgpu simulate: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    if a.json {
        match json_with_bounds(&result, &bounds) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("rtgpu simulate: cannot encode the result as JSON: {e}");
                return ExitCode::from(EXIT_INVALID);
            }
        }
    } else {
        print!("{}", text(&result, &bounds, a.scenario.as_deref()));
        if plan.is_some() && w.policy.cpu_scheduler != rtgpu_model::CpuScheduler::PartitionedFp {
            println!(
                "note: a {} plan carries no response-time bounds (simulate without --plan to \
                 see the analysis' beside the observations)",
                rtgpu_analysis::workload::scheduler_name(w.policy.cpu_scheduler)
            );
        }
    }
    let writes: [(&Option<PathBuf>, &dyn Fn() -> String); 3] = [
        (&a.csv, &|| csv(&result)),
        (&a.trace, &|| {
            let names: Vec<String> = result.tasks.iter().map(|t| t.name.clone()).collect();
            rtgpu_sim::trace::chrome_json(&result.trace, &result.track_names, &names)
        }),
        (&a.svg, &|| rtgpu_sim::plot::svg(&result)),
    ];
    for (path, make) in writes {
        if let Some(p) = path {
            let body = make();
            if let Err(e) = crate::output::write(p, body.as_bytes()) {
                eprintln!("rtgpu simulate: cannot write {}: {e}", p.display());
                return ExitCode::from(EXIT_INVALID);
            }
            if std::ptr::eq(path, &a.trace) {
                if let Some(w) = crate::output::trace_size_warning(p, body.len()) {
                    eprintln!("rtgpu simulate: {w}");
                }
            }
            if !a.json {
                println!("written: {}", p.display());
            }
        }
    }
    ExitCode::from(if result.misses == 0 {
        EXIT_OK
    } else {
        EXIT_MISSES
    })
}

/// The result as JSON with each task's analysis bound beside its
/// observations (`bound`, ns or null where the analysis gives none;
/// `within_bound`, null then), as the text output shows them.
fn json_with_bounds(result: &SimResult, bounds: &[Option<u64>]) -> serde_json::Result<String> {
    let mut v = serde_json::to_value(result)?;
    if let Some(tasks) = v.get_mut("tasks").and_then(|t| t.as_array_mut()) {
        for (t, (stats, bound)) in tasks.iter_mut().zip(result.tasks.iter().zip(bounds)) {
            if let Some(o) = t.as_object_mut() {
                o.insert("bound".into(), serde_json::json!(bound));
                o.insert(
                    "within_bound".into(),
                    serde_json::json!(bound.map(|b| stats.max_response <= b)),
                );
            }
        }
    }
    serde_json::to_string_pretty(&v)
}

fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

/// Percentile (nearest rank) of a sorted slice.
pub fn text(r: &SimResult, bounds: &[Option<u64>], scenario: Option<&str>) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "workload: {}   scheduler: {}{}   simulated: {} (seed {})",
        r.workload,
        r.scheduler,
        scenario.map_or(String::new(), |s| format!("   scenario: {s}")),
        duration(r.end),
        r.seed
    );
    let _ = writeln!(o, "jobs: {}   deadline misses: {}", r.jobs, r.misses);
    let _ = writeln!(o);
    let name_w = r
        .tasks
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        o,
        "{:<name_w$}  {:>6} {:>5} {:>12} {:>12} {:>9} {:>9} {:>11} {:>11} {:>5}",
        "task",
        "jobs",
        "miss",
        "max resp",
        "bound",
        "mean %T",
        "max %T",
        "tardiness",
        "blocking",
        "migr"
    );
    let mut exceeded = Vec::new();
    for (i, t) in r.tasks.iter().enumerate() {
        let bound = bounds.get(i).copied().flatten();
        if let Some(b) = bound {
            if t.max_response > b {
                exceeded.push(t.name.clone());
            }
        }
        let _ = writeln!(
            o,
            "{:<name_w$}  {:>6} {:>5} {:>12} {:>12} {:>9} {:>9} {:>11} {:>11} {:>5}",
            t.name,
            t.jobs,
            t.misses,
            duration(t.max_response),
            bound.map_or("-".into(), duration),
            pct(t.mean_response_pct),
            pct(t.max_response_pct),
            duration(t.max_tardiness),
            duration(t.max_blocking),
            t.migrations
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{}",
        crate::render::distribution("priority inversions", &r.inversions)
    );
    let busy: Vec<String> = r
        .engines
        .iter()
        .filter(|e| e.mean > 0.0)
        .map(|e| format!("{} {}", e.name, pct(e.mean * 100.0)))
        .collect();
    if !busy.is_empty() {
        let _ = writeln!(o, "engine utilization: {}", busy.join(", "));
    }
    if !r.vgpus.is_empty() {
        let total: f64 = r.vgpus.iter().map(|v| v.mean).sum();
        let shares: Vec<String> = r
            .vgpus
            .iter()
            .map(|v| {
                format!(
                    "{} {} of the GPU ({} of vGPU time)",
                    v.name,
                    pct(v.mean * 100.0),
                    pct(if total > 0.0 {
                        v.mean / total * 100.0
                    } else {
                        0.0
                    })
                )
            })
            .collect();
        let _ = writeln!(o, "vGPU utilization: {}", shares.join(", "));
    }
    let cores: f64 = r.cores.iter().map(|c| c.mean).sum::<f64>() / r.cores.len().max(1) as f64;
    let _ = writeln!(o, "mean core utilization: {}", pct(cores * 100.0));
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    if !exceeded.is_empty() {
        let _ = writeln!(
            o,
            "WARNING: observed response times exceed the analysis bound for {} (the \
             simulation adds something the analysis does not assume, e.g. shared PCIe links \
             or injected overheads placed differently; see docs/simulator.md)",
            exceeded.join(", ")
        );
    }
    let _ = writeln!(
        o,
        "result: {}",
        if r.misses == 0 {
            "no deadline missed".to_string()
        } else {
            format!("{} deadline(s) missed", r.misses)
        }
    );
    o
}

pub fn csv(r: &SimResult) -> String {
    let mut o = String::from(
        "task,job,release_ns,ready_ns,start_ns,finish_ns,response_ns,response_pct_period,deadline_miss,tardiness_ns,blocking_ns,gpu\n",
    );
    let opt = |v: Option<u64>| v.map_or(String::new(), |x| x.to_string());
    for j in &r.records {
        let t = &r.tasks[j.task as usize];
        let _ = writeln!(
            o,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&t.name),
            j.job,
            j.release,
            j.ready,
            opt(j.start),
            opt(j.finish),
            opt(j.response),
            j.response.map_or(String::new(), |x| format!(
                "{:.3}",
                x as f64 * 100.0 / t.period as f64
            )),
            j.deadline_miss,
            j.tardiness,
            j.blocking,
            j.gpu.map_or(String::new(), |g| g.to_string())
        );
    }
    o
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
