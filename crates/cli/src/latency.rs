//! `rtgpu latency record` and `rtgpu latency report` (seed 002, rtsl).
//! Guide: docs/guide/latency.md.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Subcommand, ValueEnum};
use rtgpu_latency::parse::Format;
use rtgpu_latency::record::{record, RecordError, RecordOptions};
use rtgpu_latency::report::{analyse, cyclictest_max, render_svg, render_text, Options};
use rtgpu_latency::trace::read_trace;

#[derive(Subcommand)]
pub enum LatencyCommand {
    /// Trace interrupts, scheduler events and timer wake-ups to a file
    /// (root; Ctrl-C stops cleanly and keeps what was recorded).
    Record {
        /// How long to record ("30 s", "500 ms"); default 10 s, or until
        /// the workload exits when one is given.
        #[arg(long)]
        duration: Option<String>,
        /// Trace file to write (ftrace text).
        #[arg(short, long, default_value = "rtgpu-latency.trace")]
        output: PathBuf,
        /// Wake-up period of the measurement threads or timerlat.
        #[arg(long, default_value = "1 ms")]
        interval: String,
        /// SCHED_FIFO priority of our measurement threads (where the kernel
        /// has no timerlat tracer).
        #[arg(long, default_value_t = 95)]
        priority: i32,
        /// Command to run alongside, after `--`.
        #[arg(last = true)]
        workload: Vec<String>,
    },
    /// Bound the scheduling latency from a trace (ftrace text, trace-cmd
    /// report or perf script) under seed 002's six interrupt
    /// characterisations.
    Report(ReportArgs),
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// The trace file.
    file: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Write an SVG chart (one panel per CPU, one latency scale) to OUT
    /// (`--plot` is the older name).
    #[arg(long = "svg", visible_alias = "plot", value_name = "OUT")]
    plot: Option<PathBuf>,
    /// Interference-free latency L_IF ("25 us") for kernels without
    /// preemptirq events (overrides traced thread variables).
    #[arg(long, value_name = "DURATION")]
    ifl: Option<String>,
    /// cyclictest output run over the same interval, shown beside.
    #[arg(long, value_name = "FILE")]
    cyclictest: Option<PathBuf>,
    /// Write the measured overheads as an `[overheads]` table for
    /// `rtgpu analyze --overheads`.
    #[arg(long, value_name = "OUT")]
    export_overheads: Option<PathBuf>,
    /// Input format (default: detected).
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    format: FormatArg,
    /// Write every IRQ/NMI/softirq occurrence (nested interference
    /// removed) as CSV: cpu,kind,source,start_ns,duration_ns,task.
    #[arg(long, value_name = "OUT")]
    occurrences: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Auto,
    Ftrace,
    TraceCmd,
    Perf,
}

const EXIT_OK: u8 = 0;
const EXIT_ERROR: u8 = 2;

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("rtgpu latency: {msg}");
    ExitCode::from(EXIT_ERROR)
}

fn duration(flag: &str, text: &str) -> Result<u64, String> {
    rtgpu_model::units::parse_duration(text).map_err(|e| format!("--{flag} {text:?}: {e}"))
}

pub fn run(cmd: LatencyCommand) -> ExitCode {
    match cmd {
        LatencyCommand::Record {
            duration: d,
            output,
            interval,
            priority,
            workload,
        } => {
            let d = match d.as_deref().map(|t| duration("duration", t)).transpose() {
                Ok(d) => d.map(Duration::from_nanos),
                Err(e) => return fail(e),
            };
            let interval = match duration("interval", &interval) {
                Ok(i) if i > 0 => Duration::from_nanos(i),
                Ok(_) => return fail("--interval must be positive"),
                Err(e) => return fail(e),
            };
            let d = if d.is_none() && workload.is_empty() {
                Some(Duration::from_secs(10))
            } else {
                d
            };
            let opts = RecordOptions {
                output: output.clone(),
                duration: d,
                interval,
                priority,
                workload,
            };
            run_record(&opts)
        }
        LatencyCommand::Report(args) => run_report(&args),
    }
}

fn run_record(opts: &RecordOptions) -> ExitCode {
    match record(opts) {
        Ok(s) => {
            println!(
                "recorded {} bytes to {} (tracefs {}, tracer {})",
                s.bytes,
                opts.output.display(),
                s.tracefs.display(),
                s.tracer
            );
            if !s.missing.is_empty() {
                println!("events this kernel does not offer: {}", s.missing.join(" "));
            }
            if s.tracer != "timerlat" {
                let fifo = if s.own_not_fifo {
                    " (SCHED_FIFO refused: normal priority)"
                } else {
                    " (SCHED_FIFO)"
                };
                let m: Vec<String> = s
                    .own_max
                    .iter()
                    .map(|(c, m)| format!("cpu{c} {m} ns"))
                    .collect();
                println!(
                    "no timerlat tracer: own wake-up threads{fifo}, max {}",
                    m.join(", ")
                );
            }
            let lost = s.lost();
            if lost > 0 {
                let per: Vec<String> = s
                    .stats
                    .iter()
                    .map(|c| {
                        format!(
                            "cpu{} overrun {} dropped {} commit_overrun {}",
                            c.cpu, c.overrun, c.dropped, c.commit_overrun
                        )
                    })
                    .collect();
                println!(
                    "WARNING: the kernel dropped {lost} events ({}); enlarge buffer_size_kb",
                    per.join("; ")
                );
            } else {
                println!("events dropped by the kernel: 0");
            }
            if s.interrupted {
                println!("stopped by Ctrl-C; everything recorded until then is in the file");
            }
            if let Some(w) = &s.workload_status {
                println!("workload: {w}");
            }
            ExitCode::from(EXIT_OK)
        }
        Err(e @ (RecordError::Permission(_) | RecordError::NoTracefs(_))) => fail(e),
        Err(e) => fail(e),
    }
}

fn run_report(a: &ReportArgs) -> ExitCode {
    let ifl = match a.ifl.as_deref().map(|t| duration("ifl", t)).transpose() {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let (file, json, plot, cyclictest, export, format) = (
        &a.file,
        a.json,
        a.plot.as_deref(),
        a.cyclictest.as_deref(),
        a.export_overheads.as_deref(),
        a.format,
    );
    let inputs: Vec<&std::path::Path> = std::iter::once(file.as_path()).chain(cyclictest).collect();
    for (path, what) in [
        (plot, "plot"),
        (a.occurrences.as_deref(), "occurrences (CSV)"),
        (export, "overheads table"),
    ] {
        if let Some(p) = path {
            if let Err(e) = crate::output::check(p, what, &inputs) {
                return fail(e);
            }
        }
    }
    // The trace is read line by line (a multi-gigabyte trace is fine, and
    // `/dev/zero` is refused at its first 1 MiB "line"); only the
    // cyclictest output is read whole, under a cap.
    let input: Box<dyn std::io::BufRead> = if file.as_os_str() == "-" {
        Box::new(std::io::BufReader::with_capacity(1 << 20, std::io::stdin()))
    } else {
        match std::fs::File::open(file) {
            Ok(f) => Box::new(std::io::BufReader::with_capacity(1 << 20, f)),
            Err(e) => return fail(format!("cannot read {}: {e}", file.display())),
        }
    };
    let format = match format {
        FormatArg::Auto => None,
        FormatArg::Ftrace => Some(Format::Ftrace),
        FormatArg::TraceCmd => Some(Format::TraceCmd),
        FormatArg::Perf => Some(Format::PerfScript),
    };
    let trace = match read_trace(input, format) {
        Ok(t) => t,
        Err(e) => return fail(format!("{}:{e}", file.display())),
    };
    if trace.events == 0 {
        return fail(format!("{}: no trace events found (is it ftrace text, trace-cmd report or perf script output?)", file.display()));
    }
    let cmax = match cyclictest {
        Some(p) => match read_capped(p) {
            Ok(t) => match cyclictest_max(&t) {
                Some(m) => Some(m),
                None => {
                    return fail(format!(
                        "{}: no cyclictest `T: ... Max:` lines",
                        p.display()
                    ))
                }
            },
            Err(e) => return fail(format!("cannot read {}: {e}", p.display())),
        },
        None => None,
    };
    let report = analyse(
        &trace,
        Options {
            ifl,
            cyclictest_max: cmax,
        },
    );
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => return fail(format!("cannot encode the report as JSON: {e}")),
        }
    } else {
        print!("{}", render_text(&report));
    }
    if let Some(out) = plot {
        if let Err(e) = crate::output::write(out, render_svg(&report).as_bytes()) {
            return fail(format!("cannot write {}: {e}", out.display()));
        }
    }
    if let Some(out) = &a.occurrences {
        if let Err(e) = crate::output::write(out, occurrences_csv(&trace).as_bytes()) {
            return fail(format!("cannot write {}: {e}", out.display()));
        }
    }
    if let Some(out) = export {
        let t = rtgpu_latency::overheads::to_toml(&trace.overheads, &file.display().to_string());
        if let Err(e) = crate::output::write(out, t.as_bytes()) {
            return fail(format!("cannot write {}: {e}", out.display()));
        }
    }
    ExitCode::from(EXIT_OK)
}

/// The most of a cyclictest output read (its summary lines are at the
/// end of a few kilobytes).
const MAX_CYCLICTEST_BYTES: u64 = 64 << 20;

/// Reads a cyclictest output of at most [`MAX_CYCLICTEST_BYTES`] (invalid
/// UTF-8 replaced).
fn read_capped(p: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut b = Vec::new();
    std::fs::File::open(p)?
        .take(MAX_CYCLICTEST_BYTES + 1)
        .read_to_end(&mut b)?;
    if b.len() as u64 > MAX_CYCLICTEST_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {} MiB: not a cyclictest output",
            MAX_CYCLICTEST_BYTES >> 20
        )));
    }
    Ok(String::from_utf8_lossy(&b).into_owned())
}

/// Every occurrence, one CSV row each.
fn occurrences_csv(t: &rtgpu_latency::trace::Trace) -> String {
    use std::fmt::Write as _;
    let mut o = String::from("cpu,kind,source,start_ns,duration_ns,task\n");
    for c in &t.cpus {
        for s in &c.sources {
            let kind = serde_json::to_value(s.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            for x in &s.occurrences {
                let task = t.task_name(x.task).replace('"', "\"\"");
                let _ = writeln!(
                    o,
                    "{},{kind},\"{}\",{},{},\"{task}\"",
                    c.cpu, s.name, x.start, x.duration
                );
            }
        }
    }
    o
}
