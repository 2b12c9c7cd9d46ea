//! `rtgpu run`: the workload for real (CPU and GPU work), with measured
//! response times beside the analysed bounds (docs/guide/run.md).

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use rtgpu_runtime::klmirqd::ServerConfig;
use rtgpu_runtime::run::{self, KlmirqdMode, RunConfig, RunOutcome};

use crate::render::duration;

pub struct Options<'a> {
    pub file: &'a Path,
    pub duration: &'a str,
    pub json: bool,
    pub csv: Option<&'a Path>,
    pub trace: Option<&'a Path>,
    pub realtime: bool,
    pub backend: crate::gpu::BackendChoice,
    pub klmirqd: &'a KlmirqdArgs,
    pub sched: crate::SchedArg,
    pub keep_awake: KeepAwake,
    /// SCHED_FLAG_RECLAIM on the task reservations (unless `--no-reclaim`).
    pub reclaim: bool,
    pub overheads: &'a crate::overheads::Source,
}

/// `--keep-awake`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KeepAwake {
    /// On in a virtual machine when real-time policies are asked for.
    Auto,
    On,
    Off,
}

/// `--klmirqd` and `--klmirqd-server`, shared by `rtgpu run` and
/// `rtgpu simulate`.
#[derive(clap::Args, Debug, Clone)]
pub struct KlmirqdArgs {
    /// Mode of klmirqd's per-GPU completion threads (with
    /// `interrupts = "klmirqd"`): at the GPU owner's effective priority
    /// (dependent), or as a SCHED_DEADLINE bandwidth server (independent).
    #[arg(long, value_enum, default_value = "dependent")]
    pub klmirqd: KlmirqdChoice,
    /// Independent mode: the server's runtime per period and its period,
    /// e.g. "200 us/2 ms" (default: sized from the workload's bottom
    /// halves, η·Δbh per task and period).
    #[arg(long, value_name = "RUNTIME/PERIOD")]
    pub klmirqd_server: Option<String>,
}

impl KlmirqdArgs {
    /// The mode asked for: the runtime's, whose server the simulator and
    /// the analysis take too ([`server_of`]).
    pub fn mode(&self) -> Result<KlmirqdMode, String> {
        match (self.klmirqd, &self.klmirqd_server) {
            (KlmirqdChoice::Dependent, None) => Ok(KlmirqdMode::Dependent),
            (KlmirqdChoice::Dependent, Some(_)) => {
                Err("--klmirqd-server needs --klmirqd independent".into())
            }
            (KlmirqdChoice::Independent, None) => Ok(KlmirqdMode::Independent(None)),
            (KlmirqdChoice::Independent, Some(t)) => {
                parse_server(t).map(|s| KlmirqdMode::Independent(Some(s)))
            }
        }
    }
}

/// The simulator's setting for klmirqd's `mode`.
pub fn sim_klmirqd(mode: &KlmirqdMode) -> rtgpu_sim::Klmirqd {
    match mode {
        KlmirqdMode::Independent(s) => rtgpu_sim::Klmirqd::Independent(server_of(s)),
        _ => rtgpu_sim::Klmirqd::Dependent,
    }
}

/// A configured server as the analysis sees it.
fn server_of(s: &Option<ServerConfig>) -> Option<rtgpu_analysis::server::Server> {
    s.map(|s| rtgpu_analysis::server::Server::new(s.runtime, s.period))
}

/// `--klmirqd`: the mode of the completion threads (seed 000 §III).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KlmirqdChoice {
    /// At the effective priority of the GPU's owner, who waits meanwhile.
    Dependent,
    /// A SCHED_DEADLINE bandwidth server per GPU.
    Independent,
}

/// `--klmirqd-server "RUNTIME/PERIOD"`.
fn parse_server(text: &str) -> Result<ServerConfig, String> {
    let bad = |why: &str| {
        format!("--klmirqd-server {text:?}: {why}; expected RUNTIME/PERIOD like \"200 us/2 ms\"")
    };
    let (r, p) = text.split_once('/').ok_or_else(|| bad("no '/'"))?;
    let dur = |s: &str, what: &str| {
        rtgpu_model::units::parse_duration(s.trim()).map_err(|e| {
            bad(&format!(
                "the {what} {:?} is not a duration ({e})",
                s.trim()
            ))
        })
    };
    let (runtime, period) = (dur(r, "runtime")?, dur(p, "period")?);
    if runtime < rtgpu_analysis::server::MIN_DEADLINE_RUNTIME || runtime > period {
        return Err(bad(
            "the runtime must be at least 1.024 us (the kernel's minimum) and at most the period",
        ));
    }
    Ok(ServerConfig {
        runtime,
        period,
        fallback_fifo: 50,
    })
}

pub fn run(o: &Options) -> ExitCode {
    // Outputs checked before the run, not after it.
    let inputs: Vec<&Path> = std::iter::once(o.file).chain(o.overheads.file()).collect();
    for (path, what) in [(o.csv, "jobs (CSV)"), (o.trace, "trace")] {
        if let Some(p) = path {
            if let Err(e) = crate::output::check(p, what, &inputs) {
                eprintln!("rtgpu run: {e}");
                return ExitCode::from(2);
            }
        }
    }
    // `auto` asks what this machine permits; without real-time policies
    // the file's own plan runs at SCHED_OTHER.
    let (sched, sched_note) = match o.sched {
        crate::SchedArg::Auto if !o.realtime => (rtgpu_model::Sched::Fifo, None),
        s => s.resolve(),
    };
    let dur = match rtgpu_model::units::parse_duration(o.duration) {
        Ok(0) | Err(_) => {
            eprintln!(
                "rtgpu: --duration {:?}: expected a positive duration like \"2 s\" or \"500 ms\"",
                o.duration
            );
            return ExitCode::from(2);
        }
        Ok(d) => d,
    };
    let klmirqd = match o.klmirqd.mode() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("rtgpu: {e}");
            return ExitCode::from(2);
        }
    };
    let loaded = rtgpu_model::load_workload(o.file)
        .map_err(|e| e.to_string())
        .and_then(|w| crate::under_sched(w, sched, "run"));
    let mut workload = match loaded {
        Ok(w) => w,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    // The overheads the bounds charge: this machine's measurement by
    // default, taken (if not cached) after the arguments are checked and
    // before anything else runs, so the probes have the machine to
    // themselves. The simulation beside the run charges the same.
    let chosen = match crate::overheads::resolve(o.overheads) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    chosen.apply(&mut workload);
    // Independent klmirqd: the servers it starts are charged in the bounds
    // shown beside the measurements (run() says so, or what is not).
    let extra = run::klmirqd_extra(&workload, &klmirqd);
    let (report, plan) = rtgpu_analysis::workload::analyze_with(&workload, &extra);
    // No backend to open when there is no plan to run (run() says why).
    let runnable = plan.tasks.len() == workload.tasks.len();
    let backend = if runnable && workload.tasks.iter().any(|t| t.uses_gpu()) {
        match crate::gpu::open_backend(o.backend, &workload.platform) {
            Ok(b) => Some(b),
            Err(code) => return code,
        }
    } else {
        None
    };
    // Reclaiming keeps every reservation's guarantee where the analysis
    // gives one (Abeni, Lipari, Parri & Sun: parallel reclaiming under
    // global EDF); past it, the tardiness bounds assume hard budgets.
    let reclaim = o.reclaim && report.verdict == rtgpu_analysis::workload::Verdict::Schedulable;
    let reclaim_note =
        (o.reclaim && !reclaim && plan.tasks.iter().any(|t| t.reservation.is_some())).then(|| {
            "the reservations do not reclaim unused bandwidth (SCHED_FLAG_RECLAIM): the analysis \
         found no hard guarantee, and the bounds past it (tardiness) assume budgets enforced \
         exactly"
                .to_string()
        });
    // Ctrl-C or SIGTERM: stop releasing, then report and write as usual.
    run::stop_on_signals();
    let outcome = match run::run(
        &workload,
        &report,
        &plan,
        &RunConfig {
            duration: dur,
            realtime: o.realtime,
            backend,
            klmirqd,
            keep_awake: match o.keep_awake {
                KeepAwake::On => true,
                KeepAwake::Off => false,
                KeepAwake::Auto => o.realtime && rtgpu_runtime::os::in_virtual_machine(),
            },
            dl_reclaim: reclaim,
        },
    ) {
        Ok(mut out) => {
            if let Some(n) = reclaim_note {
                out.notes.insert(0, n);
            }
            if let Some(n) = sched_note {
                out.notes.insert(0, n);
            }
            if run::stop_requested() {
                out.warnings.push(
                    "stopped by a signal (Ctrl-C or SIGTERM): no job was released after it; \
                     the jobs released until then are reported and written"
                        .to_string(),
                );
            }
            out
        }
        Err(e) => {
            eprintln!("rtgpu: {e}");
            return ExitCode::from(2);
        }
    };
    // The same workload in virtual time, for measured / simulated / analysed
    // side by side (the simulator runs the same policy core).
    let simulated = rtgpu_sim::simulate(
        &workload,
        &rtgpu_sim::SimConfig {
            duration: dur,
            klmirqd: sim_klmirqd(&klmirqd),
            ..rtgpu_sim::SimConfig::default()
        },
    );
    let sim_max: Vec<Option<u64>> = match &simulated {
        Ok(r) => outcome
            .tasks
            .iter()
            .map(|t| {
                r.tasks
                    .iter()
                    .find(|s| s.name == t.name)
                    .map(|s| s.max_response)
            })
            .collect(),
        Err(_) => vec![None; outcome.tasks.len()],
    };
    if o.json {
        let doc = serde_json::json!({
            "run": &outcome,
            "simulated_max_response": &sim_max,
            "unexplained_delay_cdf": rtgpu_sim::inversion_cdf(&outcome.unexplained_delays),
            "simulation_error": simulated.as_ref().err().map(|e| e.to_string()),
            "overheads": chosen.json(&workload.overheads),
        });
        match serde_json::to_string_pretty(&doc) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("rtgpu: cannot encode the run as JSON: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        print!(
            "{}",
            text(
                &workload.name,
                &outcome,
                dur,
                &sim_max,
                &chosen.line(&workload.overheads)
            )
        );
        if let Err(e) = &simulated {
            println!("(no simulated figures: {e})");
        }
    }
    for (path, body, what) in [
        (o.csv, o.csv.map(|_| csv(&workload, &outcome)), "jobs (CSV)"),
        (
            o.trace,
            o.trace.map(|_| trace(&workload, &outcome)),
            "trace",
        ),
    ] {
        if let (Some(path), Some(body)) = (path, body) {
            if let Err(e) = crate::output::write(path, body.as_bytes()) {
                eprintln!("rtgpu: cannot write the {what} to {}: {e}", path.display());
                return ExitCode::from(2);
            }
            if !o.json {
                println!("{what} written to {}", path.display());
            }
            if what == "trace" {
                if let Some(w) = crate::output::trace_size_warning(path, body.len()) {
                    eprintln!("rtgpu run: {w}");
                }
            }
        }
    }
    let misses: usize = outcome.tasks.iter().map(|t| t.deadline_misses).sum();
    ExitCode::from(if misses == 0 { 0 } else { 1 })
}

fn text(
    name: &str,
    out: &RunOutcome,
    dur: u64,
    sim_max: &[Option<u64>],
    overheads: &str,
) -> String {
    let mut s = String::new();
    for w in &out.warnings {
        let _ = writeln!(s, "WARNING: {w}");
    }
    let _ = writeln!(
        s,
        "run        {name}: {} of releases, {} job(s)",
        duration(dur),
        out.jobs.len()
    );
    let _ = writeln!(s, "policy     {}", out.policy);
    let _ = writeln!(s, "overheads  {overheads}");
    if let Some(b) = &out.backend {
        let _ = writeln!(
            s,
            "GPUs       {b} backend, {} token/lock hand-off(s) recorded",
            out.handoffs.len()
        );
    }
    if let Some(k) = &out.klmirqd {
        let threads: Vec<String> = k
            .threads
            .iter()
            .map(|t| match k.mode {
                "dependent" => format!(
                    "{} idle at {}, at its GPU owner's effective priority otherwise",
                    t.name, t.started.policy
                ),
                _ => format!("{} at {}", t.name, t.started.policy),
            })
            .collect();
        let _ = writeln!(s, "klmirqd    {} mode: {}", k.mode, threads.join(", "));
    }
    let _ = writeln!(s, "cores      plan core -> CPU: {:?}\n", out.core_map);
    let _ = writeln!(
        s,
        "{:<20} {:>5} {:>6} {:>11} {:>11} {:>8} {:>11} {:>11}  measured vs analysed",
        "task", "jobs", "misses", "mean R", "max R", "max R/T", "sim max R", "R bound"
    );
    for (i, t) in out.tasks.iter().enumerate() {
        let cmp = match t.analysed_bound {
            Some(b) if t.max_response_time <= b => "within the bound".to_string(),
            Some(b) => format!("{} over the bound", duration(t.max_response_time - b)),
            None => "no bound".to_string(),
        };
        let _ = writeln!(
            s,
            "{:<20} {:>5} {:>6} {:>11} {:>11} {:>7.1}% {:>11} {:>11}  {}",
            t.name,
            t.jobs,
            t.deadline_misses,
            duration(t.mean_response_time),
            duration(t.max_response_time),
            100.0 * t.max_response_time as f64 / t.period.max(1) as f64,
            sim_max
                .get(i)
                .copied()
                .flatten()
                .map(duration)
                .unwrap_or_else(|| "-".into()),
            t.analysed_bound.map(duration).unwrap_or_else(|| "-".into()),
            cmp
        );
        if let Some(wait) = t.max_token_wait {
            let _ = writeln!(
                s,
                "  GPU: longest wait for a token {}, {} state migration(s)",
                duration(wait),
                t.migrations
            );
        }
        if t.pieces_off_core > 0 {
            let _ = writeln!(
                s,
                "  {} piece(s) ran off their planned core",
                t.pieces_off_core
            );
        }
    }
    let _ = writeln!(
        s,
        "\n{}",
        crate::render::distribution(
            "delays no more urgent job explains (release latency, priority inversions, \
             interrupts, kernel work; per job)",
            &out.unexplained_delays
        )
    );
    for n in &out.notes {
        let _ = writeln!(s, "note: {n}");
    }
    let misses: usize = out.tasks.iter().map(|t| t.deadline_misses).sum();
    let _ = writeln!(
        s,
        "\n{}",
        if misses == 0 {
            "every job met its deadline".to_string()
        } else {
            format!("{misses} deadline miss(es)")
        }
    );
    s
}

fn csv(w: &rtgpu_model::Workload, out: &RunOutcome) -> String {
    let mut s =
        String::from("task,job,release_ns,start_ns,finish_ns,response_ns,deadline_miss,cpus\n");
    for j in &out.jobs {
        let cpus: Vec<String> = j
            .pieces
            .iter()
            .map(|p| p.cpu_at_start.map_or("?".into(), |c| c.to_string()))
            .collect();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{}",
            csv_field(&w.tasks[j.task].name),
            j.job,
            j.release,
            j.start,
            j.finish,
            j.response_time,
            j.deadline_miss,
            cpus.join(" ")
        );
    }
    s
}

fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

/// Chrome trace-event JSON (opens in ui.perfetto.dev), as `rtgpu simulate
/// --trace` writes it: one track per task with its jobs' pieces (a task's
/// jobs run one after another, so its slices never overlap; the CPU each
/// piece started on is an argument), and per GPU the token holds, in as
/// many lanes as holds overlap ([`rtgpu_sim::trace::lanes`]).
fn trace(w: &rtgpu_model::Workload, out: &RunOutcome) -> String {
    let mut events = vec![serde_json::json!({
        "name": "process_name", "ph": "M", "pid": 1, "tid": 0,
        "args": { "name": "rtgpu run" },
    })];
    let mut tracks: Vec<(u64, String)> = Vec::new();
    let mut used = std::collections::BTreeSet::new();
    for j in &out.jobs {
        for p in &j.pieces {
            used.insert(j.task);
            events.push(serde_json::json!({
                "name": format!("{}#{}", w.tasks[j.task].name, j.job),
                "ph": "X",
                "pid": 1,
                "tid": j.task + 1,
                "ts": p.start as f64 / 1e3,
                "dur": (p.end - p.start) as f64 / 1e3,
                "args": {
                    "release_ns": j.release,
                    "deadline_miss": j.deadline_miss,
                    "cpu": p.cpu_at_start,
                },
            }));
        }
    }
    for t in used {
        tracks.push(((t + 1) as u64, w.tasks[t].name.clone()));
    }
    // Per GPU, each job's token hold, in lanes where holds overlap (ρ > 1).
    const GPU_TRACK: u64 = 1 << 20;
    let mut holds: std::collections::BTreeMap<usize, Vec<(u64, u64, usize)>> =
        std::collections::BTreeMap::new();
    for (k, j) in out.jobs.iter().enumerate() {
        if let (Some(g), Some(asked)) = (j.gpu, j.gpu_start) {
            let start = asked + g.token_wait;
            holds
                .entry(g.gpu)
                .or_default()
                .push((start, start + g.token_hold, k));
        }
    }
    for (gpu, hs) in holds {
        let iv: Vec<(u64, u64)> = hs.iter().map(|h| (h.0, h.1)).collect();
        let lanes = rtgpu_sim::trace::lanes(&iv);
        let n = lanes.iter().max().map_or(0, |m| m + 1);
        for lane in 0..n {
            let name = if n > 1 {
                format!("GPU {gpu} token held ({})", lane + 1)
            } else {
                format!("GPU {gpu} token held")
            };
            tracks.push((GPU_TRACK + (gpu as u64) * 64 + lane as u64, name));
        }
        for (&(start, end, k), lane) in hs.iter().zip(lanes) {
            let (j, g) = (&out.jobs[k], out.jobs[k].gpu);
            events.push(serde_json::json!({
                "name": format!("{}#{}", w.tasks[j.task].name, j.job),
                "ph": "X",
                "pid": 1,
                "tid": GPU_TRACK + (gpu as u64) * 64 + lane as u64,
                "ts": start as f64 / 1e3,
                "dur": (end - start) as f64 / 1e3,
                "args": {
                    "token_wait_ns": g.map(|g| g.token_wait),
                    "migrated": g.map(|g| g.migrated),
                },
            }));
        }
    }
    for (i, (tid, name)) in tracks.into_iter().enumerate() {
        events.push(serde_json::json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
            "args": { "name": name },
        }));
        events.push(serde_json::json!({
            "name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid,
            "args": { "sort_index": i },
        }));
    }
    serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ns" }).to_string()
}
