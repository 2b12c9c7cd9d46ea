//! Line parsers for the three trace text formats.
//!
//! All three print one event per line as
//!
//! ```text
//! ftrace `trace`/`trace_pipe`:  <idle>-0       [001] d.h1.  1234.567890: irq_handler_entry: irq=24 name=virtio0
//! trace-cmd report:             <idle>-0     [001]  1234.567890: irq_handler_entry:    irq=24 name=virtio0
//! perf script:                   swapper     0 [001]  1234.567890:   irq:irq_handler_entry: irq=24 name=virtio0
//! ```
//!
//! so one scanner handles them: the task (`comm-pid` or `comm pid`), the
//! CPU in brackets, an optional latency-flags column (ftrace, `trace-cmd
//! report -l`), the timestamp in seconds with 6 or 9 decimals, the event
//! name (perf prefixes the subsystem) and the event's own fields. Lines
//! that are not events (headers, comments, `cpus=2`, perf call-chain
//! lines, `CPU 1 is empty`, lost-event notices) are skipped or reported as
//! [`Line::Other`]; malformed event lines are errors with the line number.

use std::fmt;

/// The three accepted formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// The tracefs `trace` or `trace_pipe` file (and `rtgpu latency record`).
    Ftrace,
    /// `trace-cmd report` output.
    TraceCmd,
    /// `perf script` output.
    PerfScript,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Ftrace => "ftrace text",
            Format::TraceCmd => "trace-cmd report",
            Format::PerfScript => "perf script",
        })
    }
}

/// One traced event, borrowing its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    pub comm: &'a str,
    pub pid: i64,
    pub cpu: u32,
    /// The latency-flags column (`d.h1.`), where the format has one.
    pub flags: Option<&'a str>,
    /// Timestamp in nanoseconds (exact: decimal seconds read as integers).
    pub ts: u64,
    /// Event name without subsystem (`irq_handler_entry`); for timerlat
    /// tracer samples, which have no name, `timerlat_sample`.
    pub name: &'a str,
    /// The rest of the line (the event's fields).
    pub fields: &'a str,
}

/// A parse error: line number (1-based) and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Guesses the format from the first lines: `# tracer:` headers mean
/// ftrace, `cpus=N`/`version = N` trace-cmd, and an event line whose task
/// is `comm pid` (space, not dash, before the CPU) perf script.
pub fn detect_format(text: &str) -> Format {
    for line in text.lines().take(200) {
        let t = line.trim_start();
        if t.starts_with("# tracer:") || t.starts_with("# rtgpu latency record") {
            return Format::Ftrace;
        }
        if t.starts_with("cpus=") || t.starts_with("version = ") {
            return Format::TraceCmd;
        }
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some((task, _)) = split_cpu(t) {
            let task = task.trim_end();
            let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
            let dash_pid = task.rsplit_once('-').is_some_and(|(_, p)| digits(p));
            let space_pid = task.rsplit_once(' ').is_some_and(|(_, p)| digits(p));
            if space_pid && !dash_pid {
                return Format::PerfScript;
            }
            return Format::Ftrace;
        }
    }
    Format::Ftrace
}

/// Linux's largest `NR_CPUS` (x86 `MAXSMP`): CPU numbers at or above it
/// are malformed input (found by fuzzing: `[7701101]` made the per-CPU
/// tables huge).
pub const MAX_CPUS: u32 = 8192;

/// What one line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    Event(Event<'a>),
    /// Not an event (blank, comment, header, call chain, notice).
    Other,
}

/// Finds `[NNN]` (the CPU) and returns (text before it, text after it).
fn split_cpu(t: &str) -> Option<(&str, &str)> {
    let b = t.as_bytes();
    let mut i = 0;
    while let Some(off) = memchr(b'[', &b[i..]) {
        let open = i + off;
        let mut j = open + 1;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > open + 1 && j < b.len() && b[j] == b']' && open > 0 && b[open - 1] == b' ' {
            return Some((&t[..open], &t[j + 1..]));
        }
        i = open + 1;
    }
    None
}

#[inline]
fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

/// Parses one line in `format`. `line_no` is only used in errors.
pub fn parse_line(line: &str, format: Format, line_no: usize) -> Result<Line<'_>, ParseError> {
    let t = line.trim_start();
    if t.is_empty() || t.starts_with('#') {
        return Ok(Line::Other);
    }
    let err = |message: String| ParseError {
        line: line_no,
        message,
    };
    let Some((task, rest)) = split_cpu(t) else {
        // perf call chains, `cpus=2`, `CPU:1 [LOST 12 EVENTS]`, etc.
        return Ok(Line::Other);
    };
    let cpu_text = &t[task.len() + 1..t.len() - rest.len() - 1];
    let cpu: u32 = cpu_text
        .parse()
        .ok()
        .filter(|&c| c < MAX_CPUS)
        .ok_or_else(|| {
            err(format!(
                "CPU number `{cpu_text}` is out of range (Linux has at most {MAX_CPUS} CPUs)"
            ))
        })?;
    let task = task.trim_end();
    let (comm, pid_text) = match format {
        Format::PerfScript => task
            .rsplit_once(' ')
            .map_or(("", task), |(c, p)| (c.trim_end(), p)),
        _ => task.rsplit_once('-').unwrap_or(("", task)),
    };
    // perf script prints `pid/tid` with some field sets.
    let pid_text = pid_text.split('/').next().unwrap_or(pid_text);
    let pid: i64 = pid_text.parse().map_err(|_| {
        err(format!(
            "expected a task `comm-pid` or `comm pid` before the CPU, found `{task}`"
        ))
    })?;
    let mut rest = rest.trim_start();
    // Optional flags column: the token before the timestamp.
    let mut flags = None;
    let first_end = rest.find(' ').unwrap_or(rest.len());
    let first = &rest[..first_end];
    if !first.ends_with(':') {
        flags = Some(first);
        rest = rest[first_end..].trim_start();
    }
    let ts_end = rest
        .find(": ")
        .or_else(|| rest.strip_suffix(':').map(str::len))
        .ok_or_else(|| err("expected a timestamp like `1234.567890:` after the CPU".into()))?;
    let ts = parse_timestamp(&rest[..ts_end])
        .map_err(|m| err(format!("{m} in the timestamp `{}`", &rest[..ts_end])))?;
    rest = rest.get(ts_end + 1..).unwrap_or("").trim_start();
    // timerlat tracer samples: `#1     context    irq timer_latency   105540 ns`
    if rest.starts_with('#') {
        return Ok(Line::Event(Event {
            comm,
            pid,
            cpu,
            flags,
            ts,
            name: "timerlat_sample",
            fields: rest,
        }));
    }
    let name_end = rest
        .find(": ")
        .or_else(|| rest.strip_suffix(':').map(str::len))
        .ok_or_else(|| {
            err(format!(
                "expected an event name followed by `:`, found `{rest}`"
            ))
        })?;
    let mut name = &rest[..name_end];
    if name.contains(' ') || name.is_empty() {
        return Err(err(format!(
            "expected an event name followed by `:`, found `{rest}`"
        )));
    }
    if let Some((_, n)) = name.rsplit_once(':') {
        name = n; // perf: `irq:irq_handler_entry`
    }
    let fields = rest.get(name_end + 1..).unwrap_or("").trim();
    Ok(Line::Event(Event {
        comm,
        pid,
        cpu,
        flags,
        ts,
        name,
        fields,
    }))
}

/// Decimal seconds (`1234.567890` or `1234.567890123`) to exact
/// nanoseconds.
pub fn parse_timestamp(s: &str) -> Result<u64, String> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty()
        || frac.len() > 9
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err("expected seconds with at most 9 decimals".into());
    }
    let secs: u64 = int
        .parse()
        .map_err(|_| "seconds out of range".to_string())?;
    let mut ns: u64 = 0;
    for b in frac.bytes() {
        ns = ns * 10 + u64::from(b - b'0');
    }
    for _ in frac.len()..9 {
        ns *= 10;
    }
    secs.checked_mul(1_000_000_000)
        .and_then(|x| x.checked_add(ns))
        .ok_or_else(|| "seconds out of range".to_string())
}

/// The value of `key=VALUE` in an event's fields (up to the next space).
pub fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(off) = fields[from..].find(key) {
        let at = from + off;
        let after = at + key.len();
        let boundary = at == 0 || fields.as_bytes()[at - 1] == b' ';
        if boundary && fields.as_bytes().get(after) == Some(&b'=') {
            let v = &fields[after + 1..];
            return Some(v.split(' ').next().unwrap_or(""));
        }
        from = after;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(line: &str, f: Format) -> Event<'_> {
        match parse_line(line, f, 1) {
            Ok(Line::Event(e)) => e,
            other => panic!("not an event: {other:?}"),
        }
    }

    #[test]
    fn ftrace_line_with_flags() {
        let e = ev(
            "          <idle>-0       [001] d..h1..     2.361990: local_timer_entry: vector=236",
            Format::Ftrace,
        );
        assert_eq!(
            (e.comm, e.pid, e.cpu, e.flags, e.ts, e.name, e.fields),
            (
                "<idle>",
                0,
                1,
                Some("d..h1.."),
                2_361_990_000,
                "local_timer_entry",
                "vector=236"
            )
        );
    }

    #[test]
    fn ftrace_comm_with_dash_and_spaces() {
        let e = ev(
            " kworker/u4:1-my task-77 [000] ....  10.000000001: sched_waking: comm=a pid=1",
            Format::Ftrace,
        );
        assert_eq!(
            (e.comm, e.pid, e.ts),
            ("kworker/u4:1-my task", 77, 10_000_000_001)
        );
    }

    #[test]
    fn timerlat_sample_line() {
        let e = ev("      timerlat/0-104     [000] .......     2.386320: #1     context thread timer_latency    542980 ns", Format::Ftrace);
        assert_eq!(e.name, "timerlat_sample");
        assert!(e.fields.contains("thread"));
    }

    #[test]
    fn trace_cmd_line() {
        let e = ev("      cyclictest-21179 [001]  5380.132256: irq_handler_entry:    irq=42 name=virtio3-tx", Format::TraceCmd);
        assert_eq!(
            (e.comm, e.pid, e.cpu, e.flags, e.name),
            ("cyclictest", 21179, 1, None, "irq_handler_entry")
        );
        assert_eq!(field(e.fields, "irq"), Some("42"));
        assert_eq!(field(e.fields, "name"), Some("virtio3-tx"));
    }

    #[test]
    fn perf_line() {
        let e = ev("         swapper     0 [000]  5373.695090:                  irq:irq_handler_entry: irq=41 name=virtio3-rx", Format::PerfScript);
        assert_eq!(
            (e.comm, e.pid, e.cpu, e.ts, e.name),
            ("swapper", 0, 0, 5_373_695_090_000, "irq_handler_entry")
        );
    }

    #[test]
    fn perf_pid_tid() {
        let e = ev(
            "  cyclictest  4242/4243 [001]  10.000001: irq:softirq_entry: vec=1 [action=TIMER]",
            Format::PerfScript,
        );
        assert_eq!(
            (e.comm, e.pid, e.name),
            ("cyclictest", 4242, "softirq_entry")
        );
    }

    #[test]
    fn detects_formats() {
        assert_eq!(detect_format("# tracer: nop\n"), Format::Ftrace);
        assert_eq!(
            detect_format("cpus=2\n  a-1 [000] 1.0: x: y\n"),
            Format::TraceCmd
        );
        assert_eq!(
            detect_format("  swapper     0 [000]  5373.695090: irq:irq_handler_entry: irq=41\n"),
            Format::PerfScript
        );
        assert_eq!(
            detect_format("  sw-apper-0 [000]  5373.695090: irq_handler_entry: irq=41\n"),
            Format::Ftrace
        );
    }

    #[test]
    fn timestamps_are_exact() {
        assert_eq!(parse_timestamp("0.000001"), Ok(1_000));
        assert_eq!(parse_timestamp("18446744073.709551615"), Ok(u64::MAX));
        assert!(parse_timestamp("18446744073.709551616").is_err());
        assert!(parse_timestamp("1.0000000001").is_err());
        assert!(parse_timestamp("-1.0").is_err());
    }

    #[test]
    fn bad_lines_name_the_problem() {
        let e = parse_line("  a-x [000] 1.0: ev: f", Format::Ftrace, 7).unwrap_err();
        assert_eq!(e.line, 7);
        assert!(e.message.contains("comm-pid"), "{e}");
        let e = parse_line(
            "  a-2 [7701101]  5380.004844: sched_switch: x",
            Format::TraceCmd,
            4,
        )
        .unwrap_err();
        assert!(e.message.contains("out of range"), "{e}");
        assert!(parse_line("  a-2 [8191] 1.0: x: y", Format::TraceCmd, 4).is_ok());
        let e = parse_line("  a-1 [000] d... 1.0x: ev: f", Format::Ftrace, 3).unwrap_err();
        assert!(e.message.contains("timestamp"), "{e}");
        assert_eq!(parse_line("cpus=2", Format::TraceCmd, 1), Ok(Line::Other));
        assert_eq!(
            parse_line(
                "\tffffffff921cbb6d trace_preempt_on+0x13d ([kernel.kallsyms])",
                Format::PerfScript,
                1
            ),
            Ok(Line::Other)
        );
    }

    #[test]
    fn field_lookup_needs_a_boundary() {
        assert_eq!(field("prev_comm=a comm=b", "comm"), Some("b"));
        assert_eq!(field("vec=7 [action=SCHED]", "vec"), Some("7"));
        assert_eq!(field("x=1", "y"), None);
    }
}
