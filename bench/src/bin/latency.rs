//! Trace parsing throughput of `rtgpu latency report` on one core.
//!
//!     cargo run --release -p rtgpu-bench --bin latency [TRACE] [MiB]
//!
//! Reads an ftrace text trace (default: the PREEMPT_RT fixture recorded
//! under qemu), repeats it to about MiB mebibytes (default 64) with each
//! copy shifted in time, and times, side by side on the same bytes:
//!
//! - `lines().count()`: a floor (finding line ends only);
//! - `split_whitespace` over every line: a naive tokenizer;
//! - `parse_line` on every line: our scanner alone;
//! - `parse_trace`: the whole pipeline (occurrences, nesting, thread
//!   variables, observations);
//! - `parse_trace` + `analyse`: plus the six bounds per CPU.
//!
//! Best of 5 runs each; MB/s are 10^6 bytes per second.

use std::time::Instant;

use rtgpu_latency::parse::{parse_line, Format, Line};
use rtgpu_latency::report::{analyse, Options};
use rtgpu_latency::trace::parse_trace_as;

fn best<F: FnMut() -> u64>(mut f: F) -> (f64, u64) {
    let mut best = f64::MAX;
    let mut out = 0;
    for _ in 0..5 {
        let t = Instant::now();
        out = std::hint::black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, out)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../crates/latency/tests/fixtures/rt-qemu-timerlat.trace.txt"
        )
        .to_string()
    });
    let mib: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(64);
    let one = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            std::process::exit(2);
        }
    };
    // Repeat with every copy shifted by 10 s so time only moves forward.
    let body: Vec<&str> = one.lines().filter(|l| !l.starts_with('#')).collect();
    let mut text = String::from("# tracer: timerlat\n");
    let mut copy = 0u64;
    while text.len() < mib << 20 {
        for l in &body {
            // shift the timestamp: `    2.359497:` -> `   12.359497:`
            if let Some(pos) = l.find(": ") {
                let head = &l[..pos];
                if let Some(sp) = head.rfind(' ') {
                    if let Some((s, frac)) = head[sp + 1..].split_once('.') {
                        if let Ok(secs) = s.parse::<u64>() {
                            text.push_str(&head[..sp + 1]);
                            text.push_str(&format!("{}.{frac}", secs + copy * 10));
                            text.push_str(&l[pos..]);
                            text.push('\n');
                            continue;
                        }
                    }
                }
            }
            text.push_str(l);
            text.push('\n');
        }
        copy += 1;
    }
    let bytes = text.len() as f64;
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    println!(
        "input: {path} x{copy} = {:.1} MB, {} lines; CPU: {cpu}",
        bytes / 1e6,
        text.lines().count()
    );
    let rows: Vec<(&str, (f64, u64))> = vec![
        (
            "lines().count() (floor)",
            best(|| text.lines().count() as u64),
        ),
        (
            "split_whitespace tokens",
            best(|| {
                text.lines()
                    .map(|l| l.split_whitespace().count() as u64)
                    .sum()
            }),
        ),
        (
            "parse_line (scanner)",
            best(|| {
                text.lines()
                    .enumerate()
                    .filter(|(i, l)| {
                        matches!(parse_line(l, Format::Ftrace, *i), Ok(Line::Event(_)))
                    })
                    .count() as u64
            }),
        ),
        (
            "parse_trace (pipeline)",
            best(|| parse_trace_as(&text, Format::Ftrace).map_or(0, |t| t.events)),
        ),
        (
            "parse_trace + analyse",
            best(|| {
                let t = match parse_trace_as(&text, Format::Ftrace) {
                    Ok(t) => t,
                    Err(_) => return 0,
                };
                analyse(&t, Options::default()).cpus.len() as u64
            }),
        ),
    ];
    let pipeline = rows[3].1 .0;
    println!(
        "{:<28} {:>10} {:>10} {:>14}",
        "", "seconds", "MB/s", "vs pipeline"
    );
    for (name, (secs, _)) in &rows {
        println!(
            "{name:<28} {secs:>10.4} {:>10.1} {:>13.2}x",
            bytes / secs / 1e6,
            pipeline / secs
        );
    }
    let rate = bytes / pipeline / 1e6;
    println!(
        "goal >= 100 MB/s for ftrace text: {} ({rate:.1} MB/s)",
        if rate >= 100.0 { "met" } else { "NOT met" }
    );
}
