//! `rtgpu`: the command-line front of rtgpu.
//!
//! - `rtgpu analyze FILE [--json] [--plan OUT]`: schedulability analysis of a
//!   workload file. Exit status 0 schedulable, 1 not schedulable, 2 invalid
//!   input (or a workload this version cannot analyse), so it can gate CI.
//! - `rtgpu schema`: the JSON Schema of the workload file, for editors.

mod latency;
mod render;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rtgpu_analysis::workload::{analyze, Verdict};

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
        /// Use the `[overheads]` table of this file (as written by `rtgpu
        /// latency report --export-overheads`) instead of the workload's.
        #[arg(long, value_name = "FILE")]
        overheads: Option<PathBuf>,
    },
    /// Measure and bound the scheduling latency (seed 002, rtsl).
    #[command(subcommand)]
    Latency(latency::LatencyCommand),
    /// Print the JSON Schema of the workload file format.
    Schema,
}

const EXIT_SCHEDULABLE: u8 = 0;
const EXIT_NOT_SCHEDULABLE: u8 = 1;
const EXIT_INVALID: u8 = 2;

fn main() -> ExitCode {
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
        } => run_analyze(&file, json, plan.as_deref(), overheads.as_deref()),
        Command::Latency(cmd) => latency::run(cmd),
    }
}

fn run_analyze(
    file: &std::path::Path,
    json: bool,
    plan_out: Option<&std::path::Path>,
    overheads: Option<&std::path::Path>,
) -> ExitCode {
    let mut workload = match rtgpu_model::load_workload(file) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    if let Some(path) = overheads {
        match rtgpu_model::load_overheads(path) {
            Ok(o) => workload.overheads = o,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(EXIT_INVALID);
            }
        }
    }
    let (report, plan) = analyze(&workload);
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

/// Write atomically (temporary file, then rename) so an interrupted run
/// never leaves a half-written plan where a good one was.
fn write_plan(out: &std::path::Path, plan: &rtgpu_analysis::workload::Plan) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(plan).map_err(std::io::Error::other)?;
    let mut tmp = out.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(&tmp, out)
}
