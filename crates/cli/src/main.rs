//! `rtgpu`: the command-line front of rtgpu.
//!
//! - `rtgpu analyze FILE [--json] [--plan OUT]`: schedulability analysis of a
//!   workload file. Exit status 0 schedulable, 1 not schedulable, 2 invalid
//!   input (or a workload this version cannot analyse), so it can gate CI.
//! - `rtgpu simulate FILE [--duration D] [--seed N] [--json] [--csv OUT]
//!   [--trace OUT.json] [--svg OUT.svg] [--scenario AEDG,2MB]`: the workload
//!   in virtual time (crates/sim); exit status 0 when no deadline is missed.
//! - `rtgpu schema`: the JSON Schema of the workload file, for editors.
//! - `rtgpu run FILE [--duration D] [--overheads SOURCE]`: the workload on
//!   real threads, measured response times beside the analysed bounds
//!   (charging this machine's measured overheads by default).
//! - `rtgpu daemon [--socket PATH]`: the cross-process GPU arbiter.
//! - `rtgpu gpu [--backend auto|cuda|emulated] [--check]`: the GPUs and
//!   real-time privileges the runtime would use, and a measured self-test.
//! - `rtgpu experiment STUDY [--scheduler ADDR] [--workers N]`: a
//!   schedulability study on Dask (delegates to `python -m rtgpu.experiment`).

mod daemon;
mod experiment;
mod gpu;
mod latency;
mod output;
mod overheads;
mod render;
mod run;
mod simulate;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rtgpu_analysis::gpu::Method;
use rtgpu_analysis::workload::{analyze_with, Extra, Verdict};

#[derive(Parser)]
#[command(
    name = "rtgpu",
    version,
    about = "Real-time GPU platform: analyse workloads before deployment",
    long_about = "rtgpu analyses real-time workloads (CPU control loops beside GPU work) \
                  before deployment. See docs/guide/ for one page per command."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decide whether every deadline of a workload holds, and show why.
    ///
    /// Exit status: 0 schedulable, 1 not schedulable, 2 invalid input or
    /// not analysable by this version.
    Analyze {
        /// Workload file (TOML).
        file: PathBuf,
        /// Print the report as JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Write the deployment plan (cores, priorities, split budgets) that
        /// `rtgpu run` consumes, as JSON.
        #[arg(long, value_name = "OUT")]
        plan: Option<PathBuf>,
        /// Overheads the analysis charges: `workload` (default: the file's
        /// own `[overheads]`, seed 000 Table III where absent), `machine`
        /// (this machine's measurement, cached; measured first if absent),
        /// `measure` (measure now, refresh the cache) or a FILE with an
        /// `[overheads]` table (as `rtgpu latency report
        /// --export-overheads` writes). Keywords win: `./machine` for a
        /// file of that name.
        #[arg(long, value_name = "SOURCE", default_value = "workload",
              value_parser = overheads::Source::parse)]
        overheads: overheads::Source,
        #[arg(long, value_enum, default_value_t = MethodArg::Aware)]
        method: MethodArg,
        #[arg(long, value_enum, default_value_t = SchedArg::Fifo)]
        sched: SchedArg,
        /// Write the workload with the GPU setting the analysis suggests
        /// (allocator, tokens per GPU and, for static assignment, each
        /// task's `device`) as a workload file; nothing is written when no
        /// setting guarantees more than the file's own.
        #[arg(long, value_name = "OUT")]
        suggestion: Option<PathBuf>,
    },
    /// Run the workload in virtual time with the policy core and report
    /// per-task response times, misses, blocking, priority inversions and
    /// engine utilization.
    ///
    /// Exit status: 0 no deadline missed, 1 some missed, 2 invalid input.
    Simulate(simulate::SimulateArgs),
    /// Measure and bound the scheduling latency (seed 002, rtsl).
    #[command(subcommand)]
    Latency(latency::LatencyCommand),
    /// Print the JSON Schema of the workload file format.
    Schema,
    /// Run the workload for real: periodic jobs on real threads with the
    /// plan's cores and priorities (or SCHED_DEADLINE reservations), GPU
    /// work on CUDA or the emulated GPU.
    ///
    /// Exit status: 0 every deadline met, 1 some missed, 2 invalid input or
    /// not runnable by this version.
    Run {
        /// Workload file (TOML).
        file: PathBuf,
        /// How long to release jobs for.
        #[arg(long, default_value = "2 s")]
        duration: String,
        /// Print the run as JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Write every job as CSV.
        #[arg(long, value_name = "OUT")]
        csv: Option<PathBuf>,
        /// Write a Chrome/Perfetto trace (one track per CPU).
        #[arg(long, value_name = "OUT")]
        trace: Option<PathBuf>,
        /// Run at ordinary priorities even where SCHED_FIFO is allowed.
        #[arg(long)]
        no_realtime: bool,
        /// GPU backend for GPU-using tasks.
        #[arg(long, value_enum, default_value = "auto")]
        backend: gpu::BackendChoice,
        #[command(flatten)]
        klmirqd: run::KlmirqdArgs,
        /// The task threads' policy: SCHED_FIFO, every task a
        /// SCHED_DEADLINE reservation, or auto (FIFO where permitted, else
        /// DEADLINE where permitted, else SCHED_OTHER with a warning).
        #[arg(long, value_enum, default_value_t = SchedArg::Auto)]
        sched: SchedArg,
        /// Keep the run's CPUs from halting between jobs with a SCHED_IDLE
        /// spinner each: on, off, or auto (on in a virtual machine with
        /// real-time policies, where a halted virtual CPU may wake for a
        /// timer a millisecond late).
        #[arg(long, value_enum, default_value_t = run::KeepAwake::Auto)]
        keep_awake: run::KeepAwake,
        /// Under SCHED_DEADLINE, keep the task reservations from reclaiming
        /// CPU bandwidth no reservation uses. By default they reclaim it
        /// (SCHED_FLAG_RECLAIM, the kernel's GRUB): a job whose runtime was
        /// eaten (time a virtual machine's host took counts as runtime)
        /// runs on instead of waiting for its next period, and every
        /// reservation still gets its runtime.
        #[arg(long)]
        no_reclaim: bool,
        /// Overheads the analysis charges (and so the plan that runs and
        /// the bounds beside it): `workload` (default: the file's own
        /// `[overheads]`, seed 000 Table III where absent), `machine` (this
        /// machine's measurement, cached; measured first if absent, about
        /// 2 s), `measure` (measure now, refresh the cache) or a FILE with
        /// an `[overheads]` table. Keywords win: `./machine` for a file of
        /// that name.
        #[arg(long, value_name = "SOURCE", default_value = "workload",
              value_parser = overheads::Source::parse)]
        overheads: overheads::Source,
    },
    /// Serve the GPU arbiter to other processes over a Unix socket (clients
    /// that die release what they held at once).
    Daemon {
        /// Socket path.
        #[arg(long, default_value = rtgpu_runtime::daemon::DEFAULT_SOCKET)]
        socket: PathBuf,
        /// GPUs arbitrated (numbered 0..N, as the clients' CUDA devices).
        #[arg(long, default_value_t = 1)]
        gpus: usize,
        /// Copy engines per GPU: 1 makes copies in both directions share
        /// one lock.
        #[arg(long, default_value_t = 2)]
        copy_engines: u8,
        /// GPUSync's rho: tokens (jobs admitted at once) per GPU.
        #[arg(long, default_value_t = 2)]
        tokens_per_gpu: usize,
        /// gpusync (earliest estimated completion; the workload file's
        /// `gpusync-affinity`, also accepted), shortest-queue (the file's
        /// `gpusync`), k-fmlp, static or static-priority.
        #[arg(long, default_value = "gpusync")]
        allocator: String,
        /// Do not lock the engines (seed 004's "e" scenarios).
        #[arg(long)]
        no_engine_locks: bool,
        /// Poll without sleeping (keeps one CPU busy): hand-offs cost one
        /// wake-up instead of two.
        #[arg(long)]
        spin: bool,
        /// With --spin: the CPU to pin the daemon to.
        #[arg(long, requires = "spin")]
        cpu: Option<usize>,
    },
    /// Show the GPUs, real-time privileges and NVIDIA interrupt threads the
    /// runtime would use, and optionally measure the GPU backend.
    Gpu {
        /// Backend to examine.
        #[arg(long, value_enum, default_value = "auto")]
        backend: gpu::BackendChoice,
        /// Emulate this workload file's GPUs (emulated backend only).
        #[arg(long, value_name = "FILE")]
        workload: Option<PathBuf>,
        /// Run the measured self-test (kernel timing, copy bandwidth,
        /// chunking, engine overlap).
        #[arg(long)]
        check: bool,
        /// Smaller sizes for a fast self-test.
        #[arg(long)]
        quick: bool,
    },
    /// Run a schedulability study (TOML) on Dask: a local cluster by
    /// default, or any scheduler. Results are appended as points finish; an
    /// interrupted study resumes where it stopped. Guide:
    /// docs/guide/experiment.md.
    Experiment {
        /// Study file (TOML).
        study: PathBuf,
        /// Dask scheduler address (e.g. tcp://host:8786); default: a local
        /// cluster of worker processes.
        #[arg(long, value_name = "ADDR")]
        scheduler: Option<String>,
        /// Local worker processes (default: one per CPU).
        #[arg(long, value_name = "N", conflicts_with = "scheduler", value_parser = clap::value_parser!(u32).range(1..))]
        workers: Option<u32>,
        /// Output directory (default: the study's `output`).
        #[arg(long, value_name = "DIR")]
        output: Option<PathBuf>,
        /// Discard earlier results of this study and start over.
        #[arg(long)]
        fresh: bool,
        /// Do not draw the figures.
        #[arg(long)]
        no_plots: bool,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
}

const EXIT_SCHEDULABLE: u8 = 0;
const EXIT_NOT_SCHEDULABLE: u8 = 1;
const EXIT_INVALID: u8 = 2;

fn main() -> ExitCode {
    // Die quietly on a closed pipe (`rtgpu analyze ... | head`) like other
    // Unix tools, instead of panicking on the next print.
    // SAFETY: restoring the default disposition of SIGPIPE at start-up,
    // before any thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    match cli.command {
        Command::Schema => {
            println!("{}", rtgpu_model::json_schema());
            ExitCode::from(EXIT_SCHEDULABLE)
        }
        Command::Analyze {
            file,
            json,
            plan,
            overheads,
            method,
            sched,
            suggestion,
        } => run_analyze(
            &file,
            json,
            Outputs {
                plan: plan.as_deref(),
                suggestion: suggestion.as_deref(),
            },
            &overheads,
            method,
            sched,
        ),
        Command::Latency(cmd) => latency::run(cmd),
        Command::Simulate(args) => simulate::run(&args),
        Command::Run {
            file,
            duration,
            json,
            csv,
            trace,
            no_realtime,
            backend,
            klmirqd,
            sched,
            keep_awake,
            no_reclaim,
            overheads,
        } => run::run(&run::Options {
            file: &file,
            duration: &duration,
            json,
            csv: csv.as_deref(),
            trace: trace.as_deref(),
            realtime: !no_realtime,
            backend,
            klmirqd: &klmirqd,
            sched,
            keep_awake,
            reclaim: !no_reclaim,
            overheads: &overheads,
        }),
        Command::Daemon {
            socket,
            gpus,
            copy_engines,
            tokens_per_gpu,
            allocator,
            no_engine_locks,
            spin,
            cpu,
        } => daemon::run(&daemon::Options {
            socket: &socket,
            gpus,
            copy_engines,
            tokens_per_gpu,
            allocator: &allocator,
            engine_locks: !no_engine_locks,
            waiting: if spin {
                rtgpu_runtime::daemon::Waiting::Spin { cpu }
            } else {
                rtgpu_runtime::daemon::Waiting::Sleep
            },
        }),
        Command::Gpu {
            backend,
            workload,
            check,
            quick,
        } => gpu::run(backend, workload.as_deref(), quick, check),
        Command::Experiment {
            study,
            scheduler,
            workers,
            output,
            fresh,
            no_plots,
            quiet,
        } => experiment::run(&experiment::Options {
            study: &study,
            scheduler: scheduler.as_deref(),
            workers,
            output: output.as_deref(),
            fresh,
            no_plots,
            quiet,
        }),
    }
}

/// `--method`: how GPU-using tasks are analysed (and, for `simulate`,
/// whose placement and priorities run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MethodArg {
    /// Suspension-aware (default): GPU waits counted per request, GPU wait
    /// and GPU time suspend the task rather than count as CPU demand.
    Aware,
    /// The seeds' suspension-oblivious analysis (seed 000 App. A-B, seed
    /// 004 App. A): GPU wait and GPU time count as CPU demand.
    Oblivious,
}

impl From<MethodArg> for Method {
    fn from(m: MethodArg) -> Method {
        match m {
            MethodArg::Aware => Method::Aware,
            MethodArg::Oblivious => Method::Oblivious,
        }
    }
}

/// `--sched`: the policy the task threads run under (analyze, simulate,
/// run), so that the three describe the same system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SchedArg {
    /// The workload's policy: SCHED_FIFO priorities (or user-space EDF).
    Fifo,
    /// Every task thread a SCHED_DEADLINE reservation sized by the
    /// analysis, global EDF on all CPUs.
    Deadline,
    /// What this machine permits: SCHED_FIFO, else SCHED_DEADLINE.
    Auto,
}

impl SchedArg {
    /// The policy, `auto` resolved by probing this machine, with a note
    /// saying why where it was resolved.
    pub(crate) fn resolve(self) -> (rtgpu_model::Sched, Option<String>) {
        use rtgpu_model::Sched;
        match self {
            SchedArg::Fifo => (Sched::Fifo, None),
            SchedArg::Deadline => (Sched::Deadline, None),
            SchedArg::Auto => {
                let caps = rtgpu_runtime::os::probe_capabilities();
                if caps.fifo || !caps.deadline {
                    (Sched::Fifo, None)
                } else {
                    (
                        Sched::Deadline,
                        Some(format!(
                            "--sched auto: SCHED_FIFO is refused here ({}) and SCHED_DEADLINE \
                             permitted, so every task runs as a SCHED_DEADLINE reservation",
                            caps.reason.as_deref().unwrap_or("no reason given")
                        )),
                    )
                }
            }
        }
    }
}

/// `workload` under `sched` (`--sched`), or the error for `command`.
pub(crate) fn under_sched(
    workload: rtgpu_model::Workload,
    sched: rtgpu_model::Sched,
    command: &str,
) -> Result<rtgpu_model::Workload, String> {
    match sched {
        rtgpu_model::Sched::Fifo => Ok(workload),
        s => workload
            .with_sched(s)
            .map_err(|e| format!("rtgpu {command} --sched {s}: {e}")),
    }
}

/// The note a report carries under `--sched deadline`.
pub(crate) fn deadline_note() -> String {
    "--sched deadline: every task thread is a SCHED_DEADLINE reservation (runtime, deadline, \
     period planned by this analysis), global EDF on all CPUs"
        .to_string()
}

/// The files `rtgpu analyze` writes besides its report.
struct Outputs<'a> {
    plan: Option<&'a std::path::Path>,
    suggestion: Option<&'a std::path::Path>,
}

fn run_analyze(
    file: &std::path::Path,
    json: bool,
    outputs: Outputs,
    overheads: &overheads::Source,
    method: MethodArg,
    sched: SchedArg,
) -> ExitCode {
    let inputs: Vec<&std::path::Path> = std::iter::once(file).chain(overheads.file()).collect();
    for (out, what) in [(outputs.plan, "plan"), (outputs.suggestion, "suggestion")] {
        if let Some(out) = out {
            if let Err(e) = output::check(out, what, &inputs) {
                eprintln!("rtgpu analyze: {e}");
                return ExitCode::from(EXIT_INVALID);
            }
        }
    }
    if let (Some(a), Some(b)) = (outputs.plan, outputs.suggestion) {
        if a == b {
            eprintln!(
                "rtgpu analyze: --plan and --suggestion both name {}: give them different files",
                a.display()
            );
            return ExitCode::from(EXIT_INVALID);
        }
    }
    let plan_out = outputs.plan;
    let loaded = match rtgpu_model::load_workload(file) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let (sched, sched_note) = sched.resolve();
    let mut workload = match under_sched(loaded.clone(), sched, "analyze") {
        Ok(w) => w,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let chosen = match overheads::resolve(overheads) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    chosen.apply(&mut workload);
    let extra = Extra {
        method: method.into(),
        ..Extra::default()
    };
    let (mut report, plan) = analyze_with(&workload, &extra);
    if sched == rtgpu_model::Sched::Deadline {
        report.notes.extend(sched_note);
        report.notes.push(deadline_note());
    }
    report.notes.extend(chosen.note(&workload.overheads));
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("rtgpu: cannot encode the report as JSON: {e}");
                return ExitCode::from(EXIT_INVALID);
            }
        }
    } else {
        print!("{}", render::report_text(&workload, &report));
    }
    // Another GPU setting that guarantees more (a search of up to a few
    // hundred analyses): printed with the text report, written on request.
    let suggestion = if !json || outputs.suggestion.is_some() {
        rtgpu_analysis::workload::suggest(&workload, &extra, &report)
    } else {
        None
    };
    if let (Some(s), false) = (&suggestion, json) {
        println!("{}", s.describe(&workload));
    }
    if let Some(out) = outputs.suggestion {
        match &suggestion {
            None => eprintln!(
                "rtgpu analyze: nothing written to {}: no GPU setting guarantees more than the \
                 workload's own",
                out.display()
            ),
            Some(s) => {
                let text = rtgpu_model::to_toml(&s.apply(&loaded));
                if let Err(e) = output::write(out, text.as_bytes()) {
                    eprintln!(
                        "rtgpu: cannot write the suggestion to {}: {e}",
                        out.display()
                    );
                    return ExitCode::from(EXIT_INVALID);
                } else if !json {
                    println!("suggested workload written to {}", out.display());
                }
            }
        }
    }
    if let Some(out) = plan_out {
        if report.verdict == Verdict::NotAnalysed {
            eprintln!(
                "rtgpu: no plan written to {}: the workload was not analysed",
                out.display()
            );
        } else if let Err(e) = write_plan(out, &plan) {
            eprintln!("rtgpu: cannot write the plan to {}: {e}", out.display());
            return ExitCode::from(EXIT_INVALID);
        } else if !json {
            println!("plan written to {}", out.display());
        }
    }
    ExitCode::from(match report.verdict {
        Verdict::Schedulable => EXIT_SCHEDULABLE,
        Verdict::NotSchedulable => EXIT_NOT_SCHEDULABLE,
        Verdict::NotAnalysed => EXIT_INVALID,
    })
}

/// The plan as JSON, written whole or not at all ([`output::write`]).
fn write_plan(out: &std::path::Path, plan: &rtgpu_analysis::workload::Plan) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(plan).map_err(std::io::Error::other)?;
    output::write(out, (text + "\n").as_bytes())
}
