//! From events to the model's inputs: per-CPU interrupt occurrences with
//! nested interference removed (seed 002 §5), the thread variables of
//! seed 002 Table 1 where preemptirq events exist (§4.2), osnoise events,
//! observed wake-up latencies (timerlat tracer, our own measurement
//! threads) and the overheads `rtgpu analyze` imports.
//!
//! The rules, in one place (docs/guide/latency.md repeats them):
//!
//! - **Interrupt occurrences.** `irq_handler_entry/exit` (device IRQs),
//!   the x86 `irq_vectors:*_entry/exit` events (timer, IPIs, irq_work...),
//!   `softirq_entry/exit` and `nmi:nmi_handler` (which carries its own
//!   duration and fires at the end). Per CPU, an interrupt that runs
//!   inside another is subtracted from the outer one's duration, so every
//!   nanosecond is charged to exactly one occurrence ("nested interference
//!   removed", seed 002 §5: the parser "discounts" IRQ and NMI time from
//!   what it measures). NMIs nest in anything and always count.
//! - **Softirqs** run on interrupt exit (their `softirq_entry` follows an
//!   IRQ or vector exit on the same CPU with nothing in between but other
//!   softirqs) count as IRQ interference. Softirqs served in thread
//!   context (`ksoftirqd/N`, `ktimers/N`, a task's `local_bh_enable`;
//!   always the case on PREEMPT_RT) are thread work, listed but not
//!   interference (seed 002 Property 1: only IRQs and NMIs interfere; a
//!   bottom-half-disabled section shows up in the thread variables).
//! - **osnoise** `irq_noise`/`nmi_noise`/`softirq_noise` already have
//!   nested noise removed by the kernel. They are used as occurrences only
//!   on a CPU where no entry/exit events were traced (otherwise they would
//!   count twice), and are always listed in the report.
//! - **Thread variables** need `preemptirq:{irq,preempt}_{disable,enable}`
//!   (stock kernels do not have the paper's `set_need_resched` and
//!   "preempt disable to schedule" tracepoints). A `preempt_disable` whose
//!   caller or parent symbol is one of the scheduler entry points
//!   ([`SCHEDULE_SYMBOLS`]) starts "preemption disabled to schedule" (EV1);
//!   the next `preempt_enable` ends it (EV7): its length is a D_PSD sample.
//!   The first `irq_disable` inside it is EV3, so EV3..EV7 is a D_ST
//!   sample. Outside it, the union of "preemption disabled" and "IRQs
//!   disabled" is a D_POID sample. D_PAIE samples run from the moment both
//!   are enabled while need-resched is set (the `N` latency flag) to the
//!   next preemption-disabled-to-schedule. IRQ and NMI time inside a
//!   sample is discounted (seed 002 §5, rt_sched_latency).

use std::collections::HashMap;

use serde::Serialize;

use crate::parse::{detect_format, field, parse_line, Event, Format, Line, ParseError};

/// Scheduler entry points whose `preempt_disable` is "preemption disabled
/// to schedule" (seed 002 EV1, rule R6).
pub const SCHEDULE_SYMBOLS: &[&str] = &[
    "__schedule",
    "schedule",
    "schedule_idle",
    "preempt_schedule",
    "preempt_schedule_common",
    "preempt_schedule_irq",
    "preempt_schedule_notrace",
    "__cond_resched",
];

/// What kind of interrupt a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// A device IRQ (`irq_handler_entry`).
    Irq,
    /// An x86 system vector (`irq_vectors:*`): timer, IPIs, irq_work.
    Vector,
    /// A softirq run in interrupt context.
    Softirq,
    /// A non-maskable interrupt.
    Nmi,
}

/// One interrupt occurrence: start and duration (nested interference
/// removed), in nanoseconds, and the task it interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Occurrence {
    pub start: u64,
    pub duration: u64,
    /// Index into [`Trace::tasks`].
    pub task: u32,
}

/// Every occurrence of one interrupt on one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    pub kind: SourceKind,
    /// `irq 42 virtio3-tx`, `vector local_timer`, `softirq SCHED`, `nmi`.
    pub name: String,
    /// Sorted by start.
    pub occurrences: Vec<Occurrence>,
}

/// The worst sample of a thread variable, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Worst {
    pub value: u64,
    /// When the interval started.
    pub at: u64,
    pub task: String,
    /// The caller symbol of the event that opened the interval.
    pub caller: String,
}

/// The thread variables of seed 002 Table 1 (None: never observed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ThreadVars {
    pub poid: Option<Worst>,
    pub paie: Option<Worst>,
    pub psd: Option<Worst>,
    pub st: Option<Worst>,
}

/// Observed wake-up latencies (not bounds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Observed {
    /// timerlat tracer, IRQ context: samples and maximum.
    pub timerlat_irq_samples: u64,
    pub timerlat_irq_max: u64,
    /// timerlat tracer, thread context (the scheduling latency).
    pub timerlat_thread_samples: u64,
    pub timerlat_thread_max: u64,
    /// `rtgpu latency record`'s own SCHED_FIFO threads.
    pub rtgpu_samples: u64,
    pub rtgpu_max: u64,
    /// osnoise `thread_noise`: count and longest.
    pub thread_noise_count: u64,
    pub thread_noise_max: u64,
}

/// Everything known about one CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CpuTrace {
    pub cpu: u32,
    /// Interrupt sources used for interference, by kind then name.
    pub sources: Vec<Source>,
    /// Softirqs served in thread context: listed, not interference.
    pub threaded_softirqs: Vec<Source>,
    /// osnoise irq/nmi/softirq noise (already nested-free).
    pub osnoise: Vec<Source>,
    /// None when the trace has no preemptirq events.
    pub thread_vars: Option<ThreadVars>,
    pub observed: Observed,
    /// First and last timestamp seen on this CPU.
    pub first_ts: u64,
    pub last_ts: u64,
    pub events: u64,
}

/// Measured overheads in seed 000's terms (None: not measurable from
/// this trace). See [`crate::overheads`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MeasuredOverheads {
    /// Interrupt top half: longest device IRQ handler.
    pub th: Option<u64>,
    /// Interrupt bottom half: longest softirq.
    pub bh: Option<u64>,
    /// Tick: longest local timer interrupt.
    pub tck: Option<u64>,
    /// Release: longest timer interrupt that woke a thread.
    pub rel: Option<u64>,
    /// IPI latency: longest delay from a remote wake-up to the target's
    /// reschedule IPI, when the IPI comes before the target switches
    /// tasks and within 1 ms.
    pub ipi: Option<u64>,
    /// Scheduling decision: D_PSD - D_ST (preemptirq only).
    pub sch: Option<u64>,
    /// Context switch: D_ST (preemptirq only).
    pub cxs: Option<u64>,
}

/// A parsed trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Trace {
    pub format: Format,
    pub cpus: Vec<CpuTrace>,
    /// Task names, indexed by [`Occurrence::task`].
    pub tasks: Vec<String>,
    pub events: u64,
    /// Events the kernel reported as lost (`[LOST N EVENTS]`, the record
    /// command's per-CPU overrun/dropped counters).
    pub lost_events: u64,
    /// Lines that were neither events nor known non-event lines.
    pub skipped_lines: u64,
    pub overheads: MeasuredOverheads,
    /// Whether any preemptirq event was seen.
    pub has_preemptirq: bool,
}

impl Trace {
    /// All CPUs' maximum of an observed value.
    pub fn task_name(&self, i: u32) -> &str {
        self.tasks.get(i as usize).map_or("?", String::as_str)
    }
}

/// Parses a whole trace in any of the three formats (detected).
pub fn parse_trace(text: &str) -> Result<Trace, ParseError> {
    parse_trace_as(text, detect_format(text))
}

/// Parses a whole trace in the given format.
pub fn parse_trace_as(text: &str, format: Format) -> Result<Trace, ParseError> {
    let mut b = Builder::new(format);
    for (i, line) in text.lines().enumerate() {
        b.line(line, i + 1)?;
    }
    Ok(b.finish())
}

/// The longest line a trace may have. Real trace lines are a few hundred
/// bytes; a longer one means the input is not a trace (`/dev/zero`, a
/// binary file), and reading on would hold it all in memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Lines [`read_trace`] looks at to detect the format.
const DETECT_LINES: usize = 200;

/// Reads and parses a trace line by line from `input`, in `format` or
/// the one detected from its first lines, without holding the text: a
/// multi-gigabyte trace takes the memory of what is kept of it (task
/// names, interrupt occurrences), not of its bytes. Invalid UTF-8 is
/// replaced (as `String::from_utf8_lossy` does); a read error or a line
/// longer than [`MAX_LINE_BYTES`] is an error naming the line.
pub fn read_trace<R: std::io::BufRead>(
    input: R,
    format: Option<Format>,
) -> Result<Trace, ReadError> {
    let mut lines = LineReader {
        input,
        buf: Vec::new(),
        line: 0,
    };
    // Only the first lines are kept, to detect the format.
    let mut head: Vec<String> = Vec::new();
    let format = match format {
        Some(f) => f,
        None => {
            while head.len() < DETECT_LINES {
                match lines.next() {
                    Ok(Some((_, l))) => head.push(l.into_owned()),
                    Ok(None) => break,
                    Err(error) => {
                        let format = detect_format(&head.join("\n"));
                        return Err(ReadError { error, format });
                    }
                }
            }
            detect_format(&head.join("\n"))
        }
    };
    let err = |error| ReadError { error, format };
    let mut b = Builder::new(format);
    for (i, l) in head.iter().enumerate() {
        b.line(l, i + 1).map_err(err)?;
    }
    while let Some((no, l)) = lines.next().map_err(err)? {
        b.line(&l, no).map_err(err)?;
    }
    Ok(b.finish())
}

/// What [`read_trace`] found wrong, and the format it read the trace as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    pub error: ParseError,
    pub format: Format,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.error, self.format)
    }
}

impl std::error::Error for ReadError {}

/// A line at a time out of a reader, with its 1-based number.
struct LineReader<R> {
    input: R,
    buf: Vec<u8>,
    line: usize,
}

impl<R: std::io::BufRead> LineReader<R> {
    /// The next line (without its line ending) and its number.
    fn next(&mut self) -> Result<Option<(usize, std::borrow::Cow<'_, str>)>, ParseError> {
        use std::io::{BufRead as _, Read as _};
        self.buf.clear();
        self.line += 1;
        let line = self.line;
        let n = (&mut self.input)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| ParseError {
                line,
                message: format!("cannot read: {e}"),
            })?;
        if n == 0 {
            return Ok(None);
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        } else if self.buf.len() > MAX_LINE_BYTES {
            return Err(ParseError {
                line,
                message: format!(
                    "longer than {} MiB: not a trace (a binary file?)",
                    MAX_LINE_BYTES >> 20
                ),
            });
        }
        Ok(Some((line, String::from_utf8_lossy(&self.buf))))
    }
}

// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Irq(u32),
    Vector(usize),
    Softirq(u32),
}

struct Open {
    key: Key,
    source: usize,
    start: u64,
    nested: u64,
    task: u32,
    woke: bool,
}

/// An open thread-variable sample.
#[derive(Default, Clone)]
struct Sample {
    start: u64,
    interference_at_start: u64,
    task: u32,
    caller: String,
}

#[derive(Default)]
struct Cpu {
    sources: Vec<Source>,
    irq_idx: HashMap<u32, usize>,
    vec_idx: HashMap<String, usize>,
    softirq_idx: HashMap<u32, usize>,
    threaded_idx: HashMap<u32, usize>,
    threaded_open: HashMap<u32, (usize, u64, u32)>,
    threaded_sources: Vec<Source>,
    osnoise: Vec<Source>,
    osnoise_idx: HashMap<String, usize>,
    stack: Vec<Open>,
    last_nmi_end: Option<(usize, u64)>,
    /// Total interrupt time that ended on this CPU so far (to discount it
    /// from thread-variable samples).
    interference: u64,
    saw_entry_exit: bool,
    // thread variables
    irq_off: bool,
    preempt_off: bool,
    psd: Option<Sample>,
    st: Option<Sample>,
    poid: Option<Sample>,
    paie: Option<Sample>,
    /// POID, PAIE, PSD, ST: (value, start, task index, caller).
    vars: [Option<(u64, u64, u32, String)>; 4],
    saw_preemptirq: bool,
    observed: Observed,
    first_ts: Option<u64>,
    last_ts: u64,
    events: u64,
    /// A remote wake-up targeting this CPU, not yet followed by its IPI.
    pending_wakeup: Option<u64>,
    /// The task running on this CPU since its last `sched_switch` (its
    /// `next` task), None before the first one.
    current: Option<u32>,
    /// The previous event on this CPU ended an interrupt (or an
    /// interrupt-context softirq): a softirq starting now runs on
    /// interrupt exit.
    after_irq_exit: bool,
}

struct Builder {
    format: Format,
    cpus: Vec<Cpu>,
    tasks: Vec<String>,
    task_idx: HashMap<String, u32>,
    events: u64,
    lost: u64,
    skipped: u64,
    oh: MeasuredOverheads,
}

fn max_opt(slot: &mut Option<u64>, v: u64) {
    if slot.is_none_or(|x| v > x) {
        *slot = Some(v);
    }
}

/// The index of the source `key` names in `sources`, added (as `kind`,
/// named by `name()`) on first sight.
fn source_index<Q, K>(
    index: &mut HashMap<K, usize>,
    sources: &mut Vec<Source>,
    key: &Q,
    kind: SourceKind,
    name: impl FnOnce() -> String,
) -> usize
where
    K: std::borrow::Borrow<Q> + std::hash::Hash + Eq,
    Q: ToOwned<Owned = K> + std::hash::Hash + Eq + ?Sized,
{
    if let Some(&i) = index.get(key) {
        return i;
    }
    sources.push(Source {
        kind,
        name: name(),
        occurrences: Vec::new(),
    });
    index.insert(key.to_owned(), sources.len() - 1);
    sources.len() - 1
}

/// The comm of the task a `sched_switch` switches to: `... ==>
/// next_comm=NAME next_pid=N ...` (ftrace, perf script; NAME may hold
/// spaces) or `... ==> NAME:PID [PRIO]` (trace-cmd report).
fn next_task(fields: &str) -> Option<&str> {
    if let Some((_, rest)) = fields.split_once("next_comm=") {
        let end = rest
            .find(" next_pid=")
            .or_else(|| rest.find(' '))
            .unwrap_or(rest.len());
        return Some(&rest[..end]).filter(|c| !c.is_empty());
    }
    let (_, rest) = fields.split_once("==> ")?;
    let rest = rest.trim_end();
    let task = rest.rfind(" [").map_or(rest, |i| &rest[..i]);
    let comm = task.rsplit_once(':').map_or(task, |(c, _)| c);
    Some(comm).filter(|c| !c.is_empty())
}

fn symbol(s: &str) -> &str {
    // `__schedule+0x3a/0x7b0` -> `__schedule`
    s.split(['+', ' ']).next().unwrap_or(s)
}

impl Builder {
    fn new(format: Format) -> Self {
        Builder {
            format,
            cpus: Vec::new(),
            tasks: Vec::new(),
            task_idx: HashMap::new(),
            events: 0,
            lost: 0,
            skipped: 0,
            oh: MeasuredOverheads::default(),
        }
    }

    fn task(&mut self, comm: &str) -> u32 {
        if let Some(&i) = self.task_idx.get(comm) {
            return i;
        }
        let i = self.tasks.len() as u32;
        self.tasks.push(comm.to_string());
        self.task_idx.insert(comm.to_string(), i);
        i
    }

    fn cpu(&mut self, cpu: u32) -> &mut Cpu {
        let i = cpu as usize;
        if self.cpus.len() <= i {
            self.cpus.resize_with(i + 1, Cpu::default);
        }
        &mut self.cpus[i]
    }

    fn line(&mut self, line: &str, no: usize) -> Result<(), ParseError> {
        match parse_line(line, self.format, no)? {
            Line::Event(e) => self.event(&e, no),
            Line::Other => {
                self.other(line);
                Ok(())
            }
        }
    }

    fn other(&mut self, line: &str) {
        let t = line.trim();
        // `CPU:1 [LOST 12 EVENTS]` (trace_pipe, trace-cmd report)
        if let Some(pos) = t.find("[LOST ") {
            if let Some(n) = t[pos + 6..]
                .split(' ')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
            {
                self.lost = self.lost.saturating_add(n);
            }
        } else if let Some(rest) = t.strip_prefix("# rtgpu-stats ") {
            for key in ["overrun", "commit_overrun", "dropped"] {
                if let Some(n) = field(rest, key).and_then(|n| n.parse::<u64>().ok()) {
                    self.lost = self.lost.saturating_add(n);
                }
            }
        } else if !t.is_empty()
            && !t.starts_with('#')
            && !t.starts_with("cpus=")
            && self.format != Format::PerfScript
        {
            self.skipped += 1;
        }
    }

    fn event(&mut self, e: &Event, line: usize) -> Result<(), ParseError> {
        self.events += 1;
        let num = |key: &str| -> Result<u64, ParseError> {
            field(e.fields, key)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| ParseError {
                    line,
                    message: format!(
                        "`{}` without a numeric `{key}=` field: `{}`",
                        e.name, e.fields
                    ),
                })
        };
        // The task an interrupt interrupted: the one running on the event's
        // CPU (the line's `[CPU]` field). An entry or `nmi_handler` line is
        // written in the interrupted task's context, so its comm names it
        // unless the tracer could not resolve the pid (`<...>`). osnoise's
        // `*_noise` events are attributed to the task `sched_switch` last
        // put on that CPU (issue 22: every one was charged to task 0, which
        // happened to be `ksoftirqd/0`), and to the line's comm before the
        // first switch.
        let on_cpu = self.cpus.get(e.cpu as usize).and_then(|c| c.current);
        let line_task = |b: &mut Self| match on_cpu {
            Some(t) if e.comm == "<...>" || e.comm.is_empty() => t,
            _ => b.task(e.comm),
        };
        let task = match e.name {
            "irq_noise" | "nmi_noise" | "softirq_noise" => match on_cpu {
                Some(t) => t,
                None => self.task(e.comm),
            },
            "irq_handler_entry" | "softirq_entry" | "nmi_handler" => line_task(self),
            n if n.ends_with("_entry") => line_task(self),
            _ => 0,
        };
        // A CPU's events come in time order in one recording: a step back
        // means a shuffled or concatenated trace, whose figures would be
        // nonsense (issue 22: oWCET 185 ms, oMIAT 0).
        if let Some(c) = self.cpus.get(e.cpu as usize) {
            if c.events > 0 && e.ts < c.last_ts {
                return Err(ParseError {
                    line,
                    message: format!(
                        "time goes back on CPU {} ({} ns after {} ns): the trace is out of \
                         order (shuffled or several recordings concatenated); give one \
                         recording as the tool wrote it",
                        e.cpu, e.ts, c.last_ts
                    ),
                });
            }
        }
        let after_irq_exit = {
            let c = self.cpu(e.cpu);
            c.events += 1;
            c.first_ts.get_or_insert(e.ts);
            c.last_ts = c.last_ts.max(e.ts);
            let was = c.after_irq_exit;
            c.after_irq_exit = e.name == "softirq_raise" && was
                || e.name == "irq_handler_exit"
                || (e.name.ends_with("_exit")
                    && e.name != "softirq_exit"
                    && field(e.fields, "vector").is_some());
            was
        };
        match e.name {
            "irq_handler_entry" => {
                let irq = num("irq")? as u32;
                let name = field(e.fields, "name").unwrap_or("");
                let c = self.cpu(e.cpu);
                let idx = source_index(
                    &mut c.irq_idx,
                    &mut c.sources,
                    &irq,
                    SourceKind::Irq,
                    || format!("irq {irq} {name}"),
                );
                c.open(Key::Irq(irq), idx, e.ts, task);
            }
            "irq_handler_exit" => {
                let irq = num("irq")? as u32;
                if let Some((_, _, dur)) = self.cpu(e.cpu).close(Key::Irq(irq), e.ts) {
                    max_opt(&mut self.oh.th, dur);
                }
            }
            "softirq_entry" => {
                let vec = num("vec")? as u32;
                let action = e
                    .fields
                    .split("action=")
                    .nth(1)
                    .map_or("", |a| a.trim_end_matches(']'));
                let threaded = !after_irq_exit;
                let c = self.cpu(e.cpu);
                if threaded {
                    let idx = source_index(
                        &mut c.threaded_idx,
                        &mut c.threaded_sources,
                        &vec,
                        SourceKind::Softirq,
                        || format!("softirq {action}"),
                    );
                    c.threaded_open.insert(vec, (idx, e.ts, task));
                    return Ok(());
                }
                let idx = source_index(
                    &mut c.softirq_idx,
                    &mut c.sources,
                    &vec,
                    SourceKind::Softirq,
                    || format!("softirq {action}"),
                );
                c.open(Key::Softirq(vec), idx, e.ts, task);
            }
            "softirq_exit" => {
                let vec = num("vec")? as u32;
                let c = self.cpu(e.cpu);
                let dur = if let Some((idx, start, task)) = c.threaded_open.remove(&vec) {
                    // Threaded: thread work, listed but not interference.
                    let d = e.ts.saturating_sub(start);
                    c.threaded_sources[idx].occurrences.push(Occurrence {
                        start,
                        duration: d,
                        task,
                    });
                    Some(d)
                } else {
                    c.after_irq_exit = true; // the next softirq of the same __do_softirq
                    c.close(Key::Softirq(vec), e.ts).map(|x| x.2)
                };
                if let Some(d) = dur {
                    max_opt(&mut self.oh.bh, d);
                }
            }
            "nmi_handler" => {
                // `perf_event_nmi_handler() delta_ns: 1234 handled: 1`
                let delta: u64 = e
                    .fields
                    .split("delta_ns:")
                    .nth(1)
                    .and_then(|v| v.split_whitespace().next())
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| ParseError {
                        line,
                        message: format!("`nmi_handler` without `delta_ns:`: `{}`", e.fields),
                    })?;
                let start = e.ts.saturating_sub(delta);
                let c = self.cpu(e.cpu);
                c.saw_entry_exit = true;
                // Several handlers of one NMI print one event each: merge
                // the ones that follow each other within 1 us.
                let idx = match c.last_nmi_end {
                    Some((i, end)) if start <= end.saturating_add(1_000) => {
                        if let Some(o) = c.sources[i].occurrences.last_mut() {
                            o.duration = o.duration.saturating_add(delta);
                        }
                        i
                    }
                    _ => {
                        let i = match c.sources.iter().position(|s| s.kind == SourceKind::Nmi) {
                            Some(i) => i,
                            None => {
                                c.sources.push(Source {
                                    kind: SourceKind::Nmi,
                                    name: "nmi".into(),
                                    occurrences: Vec::new(),
                                });
                                c.sources.len() - 1
                            }
                        };
                        c.sources[i].occurrences.push(Occurrence {
                            start,
                            duration: delta,
                            task,
                        });
                        i
                    }
                };
                c.last_nmi_end = Some((idx, e.ts));
                if let Some(top) = c.stack.last_mut() {
                    top.nested = top.nested.saturating_add(delta);
                }
                c.interference = c.interference.saturating_add(delta);
            }
            "sched_switch" => {
                let next = next_task(e.fields).map(|comm| self.task(comm));
                let c = self.cpu(e.cpu);
                // The target ran the woken task without an IPI (it was
                // polling idle, or another event rescheduled it).
                c.pending_wakeup = None;
                if next.is_some() {
                    c.current = next;
                }
            }
            "sched_waking" | "sched_wakeup" => {
                let c = self.cpu(e.cpu);
                if let Some(top) = c.stack.last_mut() {
                    top.woke = true;
                }
                let target = field(e.fields, "target_cpu").and_then(|v| v.parse::<u32>().ok());
                // (a malformed target beyond Linux's CPUs is ignored: found by fuzzing)
                if let Some(t) = target.filter(|&t| t < crate::parse::MAX_CPUS) {
                    if t != e.cpu {
                        let tc = self.cpu(t);
                        tc.pending_wakeup.get_or_insert(e.ts);
                    }
                }
            }
            "timerlat_sample" => {
                // `#1     context thread timer_latency    542980 ns`
                let mut it = e.fields.split_whitespace();
                let ctx = it.nth(2);
                let lat = it.nth(1).and_then(|v| v.parse::<u64>().ok());
                let (Some(ctx), Some(lat)) = (ctx, lat) else {
                    return Err(ParseError {
                        line,
                        message: format!("unreadable timerlat sample `{}`", e.fields),
                    });
                };
                let o = &mut self.cpu(e.cpu).observed;
                if ctx == "irq" {
                    o.timerlat_irq_samples += 1;
                    o.timerlat_irq_max = o.timerlat_irq_max.max(lat);
                } else {
                    o.timerlat_thread_samples += 1;
                    o.timerlat_thread_max = o.timerlat_thread_max.max(lat);
                }
            }
            "tracing_mark_write" | "print" => {
                if let Some(rest) = e.fields.split("rtgpu_wakeup:").nth(1) {
                    if let Some(lat) =
                        field(rest.trim(), "latency").and_then(|v| v.parse::<u64>().ok())
                    {
                        let o = &mut self.cpu(e.cpu).observed;
                        o.rtgpu_samples += 1;
                        o.rtgpu_max = o.rtgpu_max.max(lat);
                    }
                }
            }
            "irq_noise" | "nmi_noise" | "softirq_noise" => {
                // `local_timer:236 start 2.438159718 duration 107313 ns`;
                // the `start` uses the osnoise clock, so the start is taken
                // as the event time (the end) minus the duration.
                let dur = e
                    .fields
                    .split("duration ")
                    .nth(1)
                    .and_then(|v| v.split_whitespace().next())
                    .and_then(|v| v.parse::<u64>().ok());
                let Some(dur) = dur else {
                    return Err(ParseError {
                        line,
                        message: format!("`{}` without `duration N ns`: `{}`", e.name, e.fields),
                    });
                };
                let (kind, what) = match e.name {
                    "nmi_noise" => (SourceKind::Nmi, "nmi"),
                    "softirq_noise" => (
                        SourceKind::Softirq,
                        e.fields.split(" start").next().unwrap_or(""),
                    ),
                    _ => (
                        SourceKind::Vector,
                        e.fields.split(" start").next().unwrap_or(""),
                    ),
                };
                let c = self.cpu(e.cpu);
                let idx = source_index(&mut c.osnoise_idx, &mut c.osnoise, what, kind, || {
                    format!("{} {what}", e.name.trim_end_matches("_noise"))
                });
                c.osnoise[idx].occurrences.push(Occurrence {
                    start: e.ts.saturating_sub(dur),
                    duration: dur,
                    task,
                });
            }
            "thread_noise" => {
                let dur = e
                    .fields
                    .split("duration ")
                    .nth(1)
                    .and_then(|v| v.split_whitespace().next())
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
                let o = &mut self.cpu(e.cpu).observed;
                o.thread_noise_count += 1;
                o.thread_noise_max = o.thread_noise_max.max(dur);
            }
            "irq_disable" | "irq_enable" | "preempt_disable" | "preempt_enable" => {
                let t = self.task(e.comm);
                self.cpu(e.cpu).preemptirq(e, t);
            }
            name => {
                if let Some(vector) = name.strip_suffix("_entry") {
                    if field(e.fields, "vector").is_some() {
                        let c = self.cpu(e.cpu);
                        let idx = source_index(
                            &mut c.vec_idx,
                            &mut c.sources,
                            vector,
                            SourceKind::Vector,
                            || format!("vector {vector}"),
                        );
                        if vector == "reschedule" {
                            if let Some(w) = c.pending_wakeup.take() {
                                let d = e.ts.saturating_sub(w);
                                if d <= 1_000_000 {
                                    max_opt(&mut self.oh.ipi, d);
                                }
                            }
                        }
                        let c = self.cpu(e.cpu);
                        c.open(Key::Vector(idx), idx, e.ts, task);
                    }
                } else if let Some(vector) = name.strip_suffix("_exit") {
                    if field(e.fields, "vector").is_some() {
                        let c = self.cpu(e.cpu);
                        if let Some(&idx) = c.vec_idx.get(vector) {
                            if let Some((woke, _, dur)) = c.close(Key::Vector(idx), e.ts) {
                                if vector == "local_timer" {
                                    max_opt(&mut self.oh.tck, dur);
                                    if woke {
                                        max_opt(&mut self.oh.rel, dur);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Trace {
        let mut has_preemptirq = false;
        let mut cpus = Vec::new();
        for (i, mut c) in std::mem::take(&mut self.cpus).into_iter().enumerate() {
            if c.events == 0 {
                continue;
            }
            has_preemptirq |= c.saw_preemptirq;
            let mut sources: Vec<Source> = c
                .sources
                .into_iter()
                .filter(|s| !s.occurrences.is_empty())
                .collect();
            if !c.saw_entry_exit && sources.is_empty() {
                sources = c.osnoise.clone();
            }
            for s in sources
                .iter_mut()
                .chain(c.osnoise.iter_mut())
                .chain(c.threaded_sources.iter_mut())
            {
                s.occurrences.sort_by_key(|o| o.start);
            }
            sources.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
            let [poid, paie, psd, st] = std::mem::take(&mut c.vars).map(|v| {
                v.map(|(value, at, task, caller)| Worst {
                    value,
                    at,
                    task: self.tasks.get(task as usize).cloned().unwrap_or_default(),
                    caller,
                })
            });
            if let Some(psd) = &psd {
                let st = st.as_ref().map_or(0, |w| w.value);
                max_opt(&mut self.oh.cxs, st);
                max_opt(&mut self.oh.sch, psd.value.saturating_sub(st));
            }
            let vars = ThreadVars {
                poid,
                paie,
                psd,
                st,
            };
            cpus.push(CpuTrace {
                cpu: i as u32,
                sources,
                threaded_softirqs: c.threaded_sources,
                osnoise: c.osnoise,
                thread_vars: c.saw_preemptirq.then_some(vars),
                observed: c.observed,
                first_ts: c.first_ts.unwrap_or(0),
                last_ts: c.last_ts,
                events: c.events,
            });
        }
        Trace {
            format: self.format,
            cpus,
            tasks: self.tasks,
            events: self.events,
            lost_events: self.lost,
            skipped_lines: self.skipped,
            overheads: self.oh,
            has_preemptirq,
        }
    }
}

impl Cpu {
    fn open(&mut self, key: Key, source: usize, ts: u64, task: u32) {
        self.saw_entry_exit = true;
        self.stack.push(Open {
            key,
            source,
            start: ts,
            nested: 0,
            task,
            woke: false,
        });
    }

    /// Closes the innermost open interrupt with this key; returns (whether
    /// it woke a thread, elapsed time, duration without nested
    /// interrupts). An exit without entry (the trace began inside the
    /// handler) is ignored, and so are entries left open above it.
    fn close(&mut self, key: Key, ts: u64) -> Option<(bool, u64, u64)> {
        let pos = self.stack.iter().rposition(|o| o.key == key)?;
        self.stack.truncate(pos + 1);
        let o = self.stack.pop()?;
        let elapsed = ts.saturating_sub(o.start);
        let duration = elapsed.saturating_sub(o.nested);
        if let Some(parent) = self.stack.last_mut() {
            parent.nested = parent.nested.saturating_add(elapsed);
        } else {
            // Only the outermost occurrence adds to the CPU's total, which
            // then counts every nested one exactly once.
            self.interference = self.interference.saturating_add(elapsed);
        }
        if let Some(s) = self.sources.get_mut(o.source) {
            s.occurrences.push(Occurrence {
                start: o.start,
                duration,
                task: o.task,
            });
        }
        Some((o.woke, elapsed, duration))
    }

    fn sample_start(&self, e: &Event, task: u32) -> Sample {
        Sample {
            start: e.ts,
            interference_at_start: self.interference,
            task,
            caller: field(e.fields, "caller")
                .map(symbol)
                .unwrap_or("")
                .to_string(),
        }
    }

    fn preemptirq(&mut self, e: &Event, task: u32) {
        self.saw_preemptirq = true;
        let callers = [field(e.fields, "caller"), field(e.fields, "parent")];
        let to_schedule = callers
            .iter()
            .flatten()
            .any(|c| SCHEDULE_SYMBOLS.contains(&symbol(c)));
        let mut done: Vec<(u8, Sample)> = Vec::new();
        match e.name {
            "preempt_disable" => {
                self.preempt_off = true;
                if to_schedule && self.psd.is_none() {
                    // EV1: ends any POID and PAIE sample.
                    if let Some(s) = self.poid.take() {
                        done.push((0, s));
                    }
                    if let Some(s) = self.paie.take() {
                        done.push((1, s));
                    }
                    self.psd = Some(self.sample_start(e, task));
                } else if self.psd.is_none() && self.poid.is_none() {
                    self.poid = Some(self.sample_start(e, task));
                }
            }
            "irq_disable" => {
                self.irq_off = true;
                if self.psd.is_some() {
                    if self.st.is_none() {
                        self.st = Some(self.sample_start(e, task)); // EV3
                    }
                } else if self.poid.is_none() {
                    self.poid = Some(self.sample_start(e, task));
                }
                if let Some(s) = self.paie.take() {
                    done.push((1, s));
                }
            }
            "preempt_enable" => {
                self.preempt_off = false;
                if let Some(s) = self.psd.take() {
                    done.push((2, s)); // EV7
                    if let Some(s) = self.st.take() {
                        done.push((3, s));
                    }
                } else if !self.irq_off {
                    if let Some(s) = self.poid.take() {
                        done.push((0, s));
                    }
                }
            }
            "irq_enable" => {
                self.irq_off = false;
                if self.psd.is_none() && !self.preempt_off {
                    if let Some(s) = self.poid.take() {
                        done.push((0, s));
                    }
                }
            }
            _ => {}
        }
        // pe_ie with need-resched pending: a D_PAIE sample starts.
        let need_resched = e.flags.is_some_and(|f| f.as_bytes().get(1) == Some(&b'N'));
        if !self.irq_off
            && !self.preempt_off
            && need_resched
            && self.paie.is_none()
            && self.psd.is_none()
        {
            self.paie = Some(self.sample_start(e, task));
        }
        for (which, s) in done {
            let value =
                e.ts.saturating_sub(s.start)
                    .saturating_sub(self.interference - s.interference_at_start);
            let slot = &mut self.vars[usize::from(which)];
            if slot.as_ref().is_none_or(|x| value > x.0) {
                *slot = Some((value, s.start, s.task, s.caller));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nesting on CPU 0 (times in us after 1 s):
    /// - irq 5 runs [0, 50); inside it the local timer runs [10, 30), and
    ///   inside that an NMI runs [13, 15) (nmi_handler fires at 15 with
    ///   delta 2 us). So: NMI 2 us; timer 20 - 2 = 18 us; irq 50 - 20 =
    ///   30 us (the timer's whole 20 us, NMI included, is removed once).
    /// - TIMER and SCHED softirqs right after the IRQ exit run in
    ///   interrupt context (4 us, 2 us); NET_RX in ksoftirqd is thread
    ///   context (10 us), listed but not interference.
    /// - CPU 1 starts inside a handler: its exit has no entry, ignored.
    const NESTED: &str = "# tracer: nop
  a-1 [000] d.h1. 1.000000: irq_handler_entry: irq=5 name=eth0
  a-1 [000] d.h1. 1.000010: local_timer_entry: vector=236
  a-1 [000] d.h2. 1.000012: sched_waking: comm=x pid=3 prio=1 target_cpu=000
  a-1 [000] d.h1. 1.000015: nmi_handler: perf_event_nmi_handler() delta_ns: 2000 handled: 1
  a-1 [000] d.h1. 1.000030: local_timer_exit: vector=236
  a-1 [000] d.h1. 1.000050: irq_handler_exit: irq=5 ret=handled
  a-1 [000] ..s1. 1.000051: softirq_entry: vec=1 [action=TIMER]
  a-1 [000] ..s1. 1.000055: softirq_exit: vec=1 [action=TIMER]
  a-1 [000] ..s1. 1.000056: softirq_entry: vec=7 [action=SCHED]
  a-1 [000] ..s1. 1.000058: softirq_exit: vec=7 [action=SCHED]
  a-1 [000] d..2. 1.000060: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=ksoftirqd/0 next_pid=9 next_prio=120
  ksoftirqd/0-9 [000] ..s1. 1.000070: softirq_entry: vec=3 [action=NET_RX]
  ksoftirqd/0-9 [000] ..s1. 1.000080: softirq_exit: vec=3 [action=NET_RX]
  b-2 [001] d.h1. 1.000000: irq_handler_exit: irq=9 ret=handled
";

    fn occ(t: &Trace, cpu: usize, name: &str) -> Vec<(u64, u64)> {
        let s = t.cpus[cpu]
            .sources
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name}"));
        s.occurrences
            .iter()
            .map(|o| (o.start - 1_000_000_000, o.duration))
            .collect()
    }

    #[test]
    fn nested_interference_is_removed() {
        let t = parse_trace(NESTED).unwrap();
        assert_eq!(occ(&t, 0, "irq 5 eth0"), vec![(0, 30_000)]);
        assert_eq!(occ(&t, 0, "vector local_timer"), vec![(10_000, 18_000)]);
        assert_eq!(occ(&t, 0, "nmi"), vec![(13_000, 2_000)]);
        assert_eq!(occ(&t, 0, "softirq TIMER"), vec![(51_000, 4_000)]);
        assert_eq!(occ(&t, 0, "softirq SCHED"), vec![(56_000, 2_000)]);
        let th: Vec<_> = t.cpus[0]
            .threaded_softirqs
            .iter()
            .map(|s| (s.name.as_str(), s.occurrences[0].duration))
            .collect();
        assert_eq!(th, vec![("softirq NET_RX", 10_000)]);
        // Order: IRQs, vectors, softirqs, NMIs.
        let kinds: Vec<_> = t.cpus[0].sources.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                SourceKind::Irq,
                SourceKind::Vector,
                SourceKind::Softirq,
                SourceKind::Softirq,
                SourceKind::Nmi
            ]
        );
        assert!(t.cpus[1].sources.is_empty());
        assert_eq!(
            t.tasks[t.cpus[0].sources[0].occurrences[0].task as usize],
            "a"
        );
        // The interrupted time adds up: 30 + 18 + 2 = 50 us of irq 5's span.
        let o = t.overheads;
        assert_eq!(
            (o.th, o.tck, o.rel, o.bh),
            (Some(30_000), Some(18_000), Some(18_000), Some(10_000))
        );
        assert_eq!((o.ipi, o.sch, o.cxs), (None, None, None));
    }

    /// Thread variables on CPU 0 (us after 2 s):
    /// - [0, 25): preemption disabled by a spin lock (IRQs also off in
    ///   [5, 20)); an IRQ runs [8, 11): D_POID sample 25 - 3 = 22.
    /// - [30, 33): IRQs off: D_POID sample 3. At 33 both are enabled
    ///   with need-resched set (`N`): D_PAIE runs to 36, sample 3.
    /// - 36: preempt_disable from __schedule (EV1) to the preempt_enable
    ///   at 47 (EV7): D_PSD 11. IRQs off in the scheduler at 38 (EV3):
    ///   D_ST 47 - 38 = 9.
    ///
    /// L_IF = max(D_ST 9, D_POID 22) + D_PAIE 3 + D_PSD 11 = 36 us.
    const THREAD: &str = "# tracer: nop
  a-1 [000] .... 2.000000: preempt_disable: caller=_raw_spin_lock+0x1a/0x40 parent=do_thing+0x10/0x90
  a-1 [000] d... 2.000005: irq_disable: caller=_raw_spin_lock_irqsave+0x1a/0x40 parent=do_thing+0x20/0x90
  a-1 [000] d.h. 2.000008: irq_handler_entry: irq=5 name=eth0
  a-1 [000] d.h. 2.000011: irq_handler_exit: irq=5 ret=handled
  a-1 [000] d... 2.000020: irq_enable: caller=_raw_spin_unlock_irqrestore+0x1a/0x40 parent=do_thing+0x30/0x90
  a-1 [000] .... 2.000025: preempt_enable: caller=_raw_spin_unlock+0x1a/0x40 parent=do_thing+0x40/0x90
  a-1 [000] d... 2.000030: irq_disable: caller=foo+0x1/0x9 parent=bar+0x1/0x9
  a-1 [000] .N.. 2.000033: irq_enable: caller=foo+0x2/0x9 parent=bar+0x1/0x9
  a-1 [000] .N.. 2.000036: preempt_disable: caller=__schedule+0x10/0x700 parent=schedule+0x40/0x100
  a-1 [000] dN.. 2.000038: irq_disable: caller=__schedule+0x20/0x700 parent=schedule+0x40/0x100
  a-1 [000] d..2 2.000040: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120
  b-2 [000] .... 2.000044: irq_enable: caller=finish_task_switch+0x80/0x280 parent=__schedule+0x30/0x700
  b-2 [000] .... 2.000047: preempt_enable: caller=schedule+0x50/0x100 parent=foo+0x1/0x9
";

    #[test]
    fn thread_variables_from_preemptirq_events() {
        let t = parse_trace(THREAD).unwrap();
        assert!(t.has_preemptirq);
        let v = t.cpus[0].thread_vars.as_ref().unwrap();
        let get = |w: &Option<Worst>| {
            w.as_ref().map(|w| {
                (
                    w.value,
                    w.at - 2_000_000_000,
                    w.task.clone(),
                    w.caller.clone(),
                )
            })
        };
        assert_eq!(
            get(&v.poid),
            Some((22_000, 0, "a".into(), "_raw_spin_lock".into()))
        );
        assert_eq!(
            get(&v.paie),
            Some((3_000, 33_000, "a".into(), "foo".into()))
        );
        assert_eq!(
            get(&v.psd),
            Some((11_000, 36_000, "a".into(), "__schedule".into()))
        );
        assert_eq!(
            get(&v.st),
            Some((9_000, 38_000, "a".into(), "__schedule".into()))
        );
        assert_eq!(crate::report::l_if(v), 36_000);
        // sch = D_PSD - D_ST, cxs = D_ST.
        assert_eq!(
            (t.overheads.sch, t.overheads.cxs),
            (Some(2_000), Some(9_000))
        );
    }

    /// A wake-up from CPU 0 targeting CPU 1 at 0 us, reschedule IPI entry
    /// on CPU 1 at 7 us: IPI latency 7 us. A second wake-up at 100 us is
    /// followed by a task switch on CPU 1 (no IPI needed): the IPI at 200
    /// us is not paired with it.
    #[test]
    fn ipi_latency_pairs_wakeups_with_the_targets_ipi() {
        let t = parse_trace(
            "# tracer: nop
  a-1 [000] d..2. 1.000000: sched_waking: comm=x pid=5 prio=1 target_cpu=001
  b-2 [001] d.h1. 1.000007: reschedule_entry: vector=253
  b-2 [001] d.h1. 1.000008: reschedule_exit: vector=253
  a-1 [000] d..2. 1.000100: sched_waking: comm=y pid=6 prio=1 target_cpu=001
  b-2 [001] d..2. 1.000110: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=y next_pid=6 next_prio=1
  y-6 [001] d.h1. 1.000200: reschedule_entry: vector=253
  y-6 [001] d.h1. 1.000201: reschedule_exit: vector=253
",
        )
        .unwrap();
        assert_eq!(t.overheads.ipi, Some(7_000));
    }

    /// Issue 22: on a PREEMPT_RT trace whose interrupts come from osnoise
    /// `irq_noise` events, every occurrence was charged to task 0 (here
    /// `ksoftirqd/0`, the first task named). Each is charged to the task
    /// `sched_switch` last put on the line's CPU, on each CPU on its own,
    /// also where the line's comm is unresolved (`<...>`).
    const OSNOISE_SWITCHES: &str = "# tracer: nop
  <idle>-0 [000] d..2. 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ksoftirqd/0 next_pid=14 next_prio=120
  <idle>-0 [001] d..2. 1.000001: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ksoftirqd/1 next_pid=29 next_prio=120
  ksoftirqd/0-14 [000] d..2. 1.000010: sched_switch: prev_comm=ksoftirqd/0 prev_pid=14 prev_prio=120 prev_state=S ==> next_comm=init next_pid=1 next_prio=120
  ksoftirqd/1-29 [001] d..2. 1.000011: sched_switch: prev_comm=ksoftirqd/1 prev_pid=29 prev_prio=120 prev_state=S ==> next_comm=dd next_pid=300 next_prio=120
  <...>-1 [000] d.h1. 1.000100: irq_noise: local_timer:236 start 1.000050 duration 50000 ns
  dd-300 [001] d.h1. 1.000120: irq_noise: virtio0-input.0:25 start 1.000040 duration 80000 ns
  <...>-1 [000] d..2. 1.000200: sched_switch: prev_comm=init prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=Web Content next_pid=77 next_prio=120
  <...>-77 [000] d.h1. 1.000300: irq_noise: local_timer:236 start 1.000280 duration 20000 ns
  <...>-77 [000] d.h1. 1.000400: irq_noise: virtio0-input.0:25 start 1.000310 duration 90000 ns
  dd-300 [001] d.h1. 1.000500: irq_noise: local_timer:236 start 1.000490 duration 10000 ns
";

    #[test]
    fn osnoise_interrupts_are_charged_to_the_task_on_their_cpu() {
        let t = parse_trace(OSNOISE_SWITCHES).unwrap();
        let tasks = |cpu: usize, name: &str| -> Vec<(u64, &str)> {
            let c = &t.cpus[cpu];
            let s = c.sources.iter().find(|s| s.name == name);
            let s = s.unwrap_or_else(|| panic!("no {name} on cpu {cpu}: {:?}", c.sources));
            s.occurrences
                .iter()
                .map(|o| (o.duration, t.task_name(o.task)))
                .collect()
        };
        assert_eq!(
            tasks(0, "irq local_timer:236"),
            [(50_000, "init"), (20_000, "Web Content")]
        );
        assert_eq!(
            tasks(0, "irq virtio0-input.0:25"),
            [(90_000, "Web Content")]
        );
        assert_eq!(tasks(1, "irq virtio0-input.0:25"), [(80_000, "dd")]);
        assert_eq!(tasks(1, "irq local_timer:236"), [(10_000, "dd")]);
        // The report's "worst interrupted" column.
        let r = crate::report::analyse(&t, crate::report::Options::default());
        let worst: Vec<(u32, &str, &str)> = r
            .cpus
            .iter()
            .flat_map(|c| {
                c.sources
                    .iter()
                    .map(move |s| (c.cpu, s.name.as_str(), s.worst_task.as_str()))
            })
            .collect();
        assert_eq!(
            worst,
            [
                (0, "irq local_timer:236", "init"),
                (0, "irq virtio0-input.0:25", "Web Content"),
                (1, "irq local_timer:236", "dd"),
                (1, "irq virtio0-input.0:25", "dd"),
            ]
        );
    }

    /// Streaming reads give what parsing the whole text gives, in every
    /// format (detected past the first lines too), with CRLF line ends
    /// and invalid UTF-8 replaced.
    #[test]
    fn reading_line_by_line_equals_parsing_the_text() {
        for text in [NESTED, OSNOISE_SWITCHES] {
            let want = parse_trace(text).unwrap();
            assert_eq!(read_trace(text.as_bytes(), None).unwrap(), want);
            let crlf = text.replace('\n', "\r\n");
            assert_eq!(read_trace(crlf.as_bytes(), None).unwrap(), want);
            // One byte at a time through a tiny buffer.
            let slow = std::io::BufReader::with_capacity(1, text.as_bytes());
            assert_eq!(read_trace(slow, Some(Format::Ftrace)).unwrap(), want);
        }
        let mut bad = NESTED.as_bytes().to_vec();
        bad.extend_from_slice(b"  a-1 [000] d.h1. 2.0: irq_handler_entry: irq=9 name=\xff\xfe\n  a-1 [000] d.h1. 2.1: irq_handler_exit: irq=9 ret=handled\n");
        let t = read_trace(&bad[..], None).unwrap();
        assert!(t.cpus[0]
            .sources
            .iter()
            .any(|s| s.name == "irq 9 \u{fffd}\u{fffd}"));
        // Errors name the line as before.
        let e = read_trace(
            &b"# tracer: nop\n\n  a-1 [000] d.h1. 1.0: irq_handler_entry: irq=x\n"[..],
            None,
        )
        .unwrap_err();
        assert_eq!((e.error.line, e.format), (3, Format::Ftrace), "{e}");
    }

    #[test]
    fn an_endless_line_is_refused_without_reading_it_all() {
        // `/dev/zero`: no line end, ever.
        let e = read_trace(std::io::BufReader::new(std::io::repeat(0)), None).unwrap_err();
        assert_eq!(e.error.line, 1);
        assert!(e.error.message.contains("longer than 1 MiB"), "{e}");
        // Past the detection lines, with the format given.
        let head = "# tracer: nop\n".repeat(300);
        let r = std::io::Read::chain(head.as_bytes(), std::io::repeat(b'x'));
        let e = read_trace(std::io::BufReader::new(r), Some(Format::Ftrace)).unwrap_err();
        assert_eq!(e.error.line, 301, "{e}");
    }

    /// More bytes than the workload-file cap (64 MiB), made as they are
    /// read: the text is never held, only what the trace keeps (here
    /// 700,000 timer occurrences of 24 bytes).
    #[test]
    fn a_trace_larger_than_the_input_cap_is_read() {
        struct Gen {
            line: Vec<u8>,
            at: usize,
            left: u64,
        }
        impl std::io::Read for Gen {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                let mut n = 0;
                while n < out.len() {
                    if self.at == self.line.len() {
                        if self.left == 0 {
                            break;
                        }
                        self.at = 0;
                        self.left -= 1;
                        let ts = 1_000_000 - self.left;
                        self.line = format!(
                            "  a-1 [00{}] d.h1. {}.{:06}: local_timer_entry: vector=236\n  a-1 [00{}] d.h1. {}.{:06}: local_timer_exit: vector=236\n",
                            ts % 2, ts / 1_000_000, ts % 1_000_000 , ts % 2, ts / 1_000_000, ts % 1_000_000
                        )
                        .into_bytes();
                        continue;
                    }
                    let k = (self.line.len() - self.at).min(out.len() - n);
                    out[n..n + k].copy_from_slice(&self.line[self.at..self.at + k]);
                    self.at += k;
                    n += k;
                }
                Ok(n)
            }
        }
        let lines = 700_000;
        let g = Gen {
            line: b"# tracer: nop\n".to_vec(),
            at: 0,
            left: lines,
        };
        let t = read_trace(std::io::BufReader::new(g), None).unwrap();
        assert_eq!(t.events, 2 * lines);
        assert!(2 * lines * 50 > 64 << 20, "more than MAX_INPUT_BYTES");
    }

    #[test]
    fn next_task_of_each_format() {
        let ftrace = "prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=Web Content next_pid=77 next_prio=120";
        assert_eq!(next_task(ftrace), Some("Web Content"));
        assert_eq!(
            next_task("bash:21177 [120] R ==> migration/1:21 [0]"),
            Some("migration/1")
        );
        assert_eq!(next_task("a:1 [120] R ==> "), None);
        assert_eq!(next_task("garbage"), None);
    }

    #[test]
    fn a_huge_wakeup_target_is_ignored() {
        // Fuzz finding: `target_cpu=6294334` made the per-CPU table huge.
        let t = parse_trace("# tracer: nop\n  a-1 [000] d..2. 1.0: sched_waking: comm=x pid=5 prio=1 target_cpu=6294334\n").unwrap();
        assert_eq!(t.cpus.len(), 1);
    }

    #[test]
    fn lost_events_are_counted() {
        let t = parse_trace(
            "# tracer: nop
CPU:1 [LOST 12 EVENTS]
  a-1 [001] d.h1. 1.000000: local_timer_entry: vector=236
# rtgpu-stats cpu=0 overrun=3 commit_overrun=1 dropped=2
",
        )
        .unwrap();
        assert_eq!(t.lost_events, 18);
    }

    #[test]
    fn malformed_fields_are_errors_with_the_line() {
        let e = parse_trace("# tracer: nop\n  a-1 [000] d.h1. 1.0: irq_handler_entry: irq=x\n")
            .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("numeric `irq=`"), "{e}");
        let e =
            parse_trace("# tracer: nop\n  a-1 [000] d.h1. 1.0: nmi_handler: foo\n").unwrap_err();
        assert!(e.message.contains("delta_ns"), "{e}");
    }
}
