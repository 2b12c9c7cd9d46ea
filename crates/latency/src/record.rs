//! `rtgpu latency record`: set up tracefs, run wake-up measurement
//! threads, stream the trace to a file, stop cleanly on Ctrl-C.
//!
//! - tracefs is found at `/sys/kernel/tracing` (mounted there if absent and
//!   permitted) or `/sys/kernel/debug/tracing`; `RTGPU_TRACEFS` overrides.
//! - Every event of [`EVENTS`] this kernel offers is enabled.
//! - Wake-ups are measured by the kernel's `timerlat` tracer where present;
//!   otherwise by our own threads, one per CPU, pinned, `SCHED_FIFO`,
//!   sleeping to absolute `CLOCK_MONOTONIC` times like cyclictest, each
//!   writing its latency into the trace (`rtgpu_wakeup: latency=N` through
//!   `trace_marker`) so the report sees it beside the interrupts.
//! - `trace_pipe` is read without blocking and appended to the output as
//!   it comes; at the end the buffer is drained after tracing stops, so
//!   nothing recorded is lost, and the per-CPU `stats` (overrun, dropped)
//!   are appended as `# rtgpu-stats` lines and returned.
//! - The per-CPU buffer is raised to [`BUFFER_KB`] while recording; the
//!   buffer size, tracer, events and `tracing_on` are put back as they were.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The events enabled where the kernel offers them (subsystem/event).
pub const EVENTS: &[&str] = &[
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "nmi/nmi_handler",
    "sched/sched_switch",
    "sched/sched_waking",
    "osnoise/irq_noise",
    "osnoise/nmi_noise",
    "osnoise/softirq_noise",
    "osnoise/thread_noise",
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "irq_vectors/reschedule_entry",
    "irq_vectors/reschedule_exit",
    "irq_vectors/call_function_entry",
    "irq_vectors/call_function_exit",
    "irq_vectors/call_function_single_entry",
    "irq_vectors/call_function_single_exit",
    "irq_vectors/irq_work_entry",
    "irq_vectors/irq_work_exit",
    "irq_vectors/thermal_apic_entry",
    "irq_vectors/thermal_apic_exit",
    "irq_vectors/x86_platform_ipi_entry",
    "irq_vectors/x86_platform_ipi_exit",
    "preemptirq/irq_disable",
    "preemptirq/irq_enable",
    "preemptirq/preempt_disable",
    "preemptirq/preempt_enable",
];

/// Per-CPU ring buffer while recording (KiB), if the current one is smaller.
pub const BUFFER_KB: u64 = 8192;

/// What to record.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    pub output: PathBuf,
    /// Stop after this long; None: when the workload exits (or Ctrl-C).
    pub duration: Option<Duration>,
    /// Wake-up period of the measurement threads / timerlat.
    pub interval: Duration,
    /// SCHED_FIFO priority of our measurement threads.
    pub priority: i32,
    /// Command to run alongside (empty: none).
    pub workload: Vec<String>,
}

/// Per-CPU ring-buffer counters after the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuStats {
    pub cpu: usize,
    pub overrun: u64,
    pub commit_overrun: u64,
    pub dropped: u64,
}

/// What happened.
#[derive(Debug, Clone, Default)]
pub struct RecordSummary {
    pub tracefs: PathBuf,
    pub tracer: String,
    pub enabled: Vec<String>,
    pub missing: Vec<String>,
    pub bytes: u64,
    pub stats: Vec<CpuStats>,
    /// Our own threads' maximum wake-up latency per CPU (ns), if they ran.
    pub own_max: Vec<(usize, u64)>,
    /// Our threads could not get SCHED_FIFO (ran at normal priority).
    pub own_not_fifo: bool,
    pub interrupted: bool,
    pub workload_status: Option<String>,
}

impl RecordSummary {
    pub fn lost(&self) -> u64 {
        self.stats
            .iter()
            .map(|s| s.overrun + s.dropped + s.commit_overrun)
            .sum()
    }
}

/// Errors with what to do about them.
#[derive(Debug)]
pub enum RecordError {
    NoTracefs(String),
    Permission(String),
    Io(String, io::Error),
    Workload(String),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::NoTracefs(m) | RecordError::Permission(m) | RecordError::Workload(m) => {
                f.write_str(m)
            }
            RecordError::Io(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

impl std::error::Error for RecordError {}

static SIGINT_SEEN: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    SIGINT_SEEN.store(true, Ordering::SeqCst);
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> RecordError {
    let what = what.into();
    move |e| {
        if e.kind() == io::ErrorKind::PermissionDenied {
            RecordError::Permission(format!(
                "{what}: permission denied: `rtgpu latency record` needs root (or CAP_SYS_ADMIN with write access to tracefs)"
            ))
        } else {
            RecordError::Io(what, e)
        }
    }
}

/// Finds (and if needed mounts) tracefs.
pub fn find_tracefs() -> Result<PathBuf, RecordError> {
    if let Some(p) = std::env::var_os("RTGPU_TRACEFS") {
        let p = PathBuf::from(p);
        return if p.join("trace").exists() {
            Ok(p)
        } else {
            Err(RecordError::NoTracefs(format!(
                "RTGPU_TRACEFS={} is not a tracefs directory (no `trace` file)",
                p.display()
            )))
        };
    }
    for p in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        match std::fs::metadata(Path::new(p).join("trace")) {
            Ok(_) => return Ok(PathBuf::from(p)),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                return Err(io_err(format!("cannot access tracefs at {p}"))(e));
            }
            Err(_) => {}
        }
    }
    let target = "/sys/kernel/tracing";
    let c =
        |s: &str| std::ffi::CString::new(s).map_err(|_| RecordError::NoTracefs("bad path".into()));
    let (src, dst, fs) = (c("nodev")?, c(target)?, c("tracefs")?);
    // SAFETY: valid NUL-terminated strings; no data argument.
    let rc = unsafe { libc::mount(src.as_ptr(), dst.as_ptr(), fs.as_ptr(), 0, std::ptr::null()) };
    if rc == 0 && Path::new(target).join("trace").exists() {
        return Ok(PathBuf::from(target));
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(libc::EPERM) {
        return Err(RecordError::Permission(format!(
            "tracefs is not mounted and mounting it at {target} was refused ({e}): run as root, or mount it first \
             (`mount -t tracefs nodev {target}`)"
        )));
    }
    Err(RecordError::NoTracefs(format!(
        "no tracefs: not at /sys/kernel/tracing or /sys/kernel/debug/tracing, and mounting it failed ({e}); \
         the kernel needs CONFIG_FTRACE"
    )))
}

fn write_file(dir: &Path, name: &str, value: &str) -> Result<(), RecordError> {
    let p = dir.join(name);
    let mut f = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&p)
        .map_err(io_err(format!("cannot open {}", p.display())))?;
    f.write_all(value.as_bytes())
        .map_err(io_err(format!("cannot write `{value}` to {}", p.display())))
}

fn read_file(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

/// Records until the duration ends, the workload exits, or Ctrl-C.
pub fn record(opts: &RecordOptions) -> Result<RecordSummary, RecordError> {
    let t = find_tracefs()?;
    // Fail early and clearly without permission.
    let was_on = read_file(&t, "tracing_on").trim().to_string();
    write_file(&t, "tracing_on", "0")?;
    let old_tracer = read_file(&t, "current_tracer").trim().to_string();
    // A larger per-CPU buffer rides out bursts between two reads.
    let old_kb = read_file(&t, "buffer_size_kb");
    let old_kb = old_kb
        .split_whitespace()
        .next()
        .and_then(|v| v.parse::<u64>().ok());
    if old_kb.is_some_and(|kb| kb < BUFFER_KB) {
        write_file(&t, "buffer_size_kb", &BUFFER_KB.to_string())?;
    }
    let mut s = RecordSummary {
        tracefs: t.clone(),
        ..RecordSummary::default()
    };
    let result = record_inner(&t, opts, &mut s);
    // Put things back whatever happened.
    for e in &s.enabled {
        let _ = write_file(&t, &format!("events/{e}/enable"), "0");
    }
    if let Some(kb) = old_kb.filter(|&kb| kb < BUFFER_KB) {
        let _ = write_file(&t, "buffer_size_kb", &kb.to_string());
    }
    if !old_tracer.is_empty() {
        let _ = write_file(&t, "current_tracer", &old_tracer);
    }
    let _ = write_file(
        &t,
        "tracing_on",
        if was_on.is_empty() { "1" } else { &was_on },
    );
    result.map(|()| s)
}

fn record_inner(t: &Path, opts: &RecordOptions, s: &mut RecordSummary) -> Result<(), RecordError> {
    for e in EVENTS {
        if t.join("events").join(e).join("enable").exists() {
            write_file(t, &format!("events/{e}/enable"), "1")?;
            s.enabled.push((*e).to_string());
        } else {
            s.missing.push((*e).to_string());
        }
    }
    let timerlat = read_file(t, "available_tracers")
        .split_whitespace()
        .any(|x| x == "timerlat");
    if timerlat {
        let us = (opts.interval.as_micros().max(100)).to_string();
        let _ = write_file(t, "osnoise/timerlat_period_us", &us);
        write_file(t, "current_tracer", "timerlat")?;
        s.tracer = "timerlat".into();
    } else {
        write_file(t, "current_tracer", "nop")?;
        s.tracer = "nop".into();
    }
    write_file(t, "trace", "")?; // clear the buffer

    let mut out = File::create(&opts.output)
        .map_err(io_err(format!("cannot create {}", opts.output.display())))?;
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let header = format!(
        "# tracer: {}\n# rtgpu latency record: {} CPUs, events: {}\n# missing events: {}\n",
        s.tracer,
        ncpu,
        s.enabled.join(" "),
        if s.missing.is_empty() {
            "none".to_string()
        } else {
            s.missing.join(" ")
        }
    );
    out.write_all(header.as_bytes())
        .map_err(io_err("cannot write the trace file"))?;
    let mut pipe = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(t.join("trace_pipe"))
        .map_err(io_err("cannot open trace_pipe"))?;

    SIGINT_SEEN.store(false, Ordering::SeqCst);
    // SAFETY: installs an async-signal-safe handler that only stores to an atomic.
    let old = unsafe { libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t) };
    write_file(t, "tracing_on", "1")?;

    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    if !timerlat {
        let marker = OpenOptions::new()
            .write(true)
            .open(t.join("trace_marker"))
            .ok()
            .map(Arc::new);
        for cpu in 0..ncpu {
            let stop = Arc::clone(&stop);
            let marker = marker.clone();
            let (interval, prio) = (opts.interval, opts.priority);
            threads.push(std::thread::spawn(move || {
                measure(cpu, interval, prio, &stop, marker.as_deref())
            }));
        }
    }
    let mut child: Option<Child> = match opts.workload.split_first() {
        Some((cmd, args)) => match Command::new(cmd).args(args).spawn() {
            Ok(c) => Some(c),
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                for h in threads {
                    let _ = h.join();
                }
                restore_sigint(old);
                return Err(RecordError::Workload(format!(
                    "cannot start the workload `{cmd}`: {e}"
                )));
            }
        },
        None => None,
    };

    let started = Instant::now();
    let mut buf = vec![0u8; 1 << 20];
    let mut pump = |out: &mut File, s: &mut RecordSummary| -> Result<usize, RecordError> {
        match pipe.read(&mut buf) {
            Ok(n) => {
                out.write_all(&buf[..n])
                    .map_err(io_err("cannot write the trace file"))?;
                s.bytes += n as u64;
                Ok(n)
            }
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted =>
            {
                Ok(0)
            }
            Err(e) => Err(io_err("cannot read trace_pipe")(e)),
        }
    };
    // On an error, still stop the threads, the workload and tracing below.
    let mut failed = None;
    loop {
        let n = match pump(&mut out, s) {
            Ok(n) => n,
            Err(e) => {
                failed = Some(e);
                break;
            }
        };
        if SIGINT_SEEN.load(Ordering::SeqCst) {
            s.interrupted = true;
            break;
        }
        if opts.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        if let Some(c) = child.as_mut() {
            if let Ok(Some(st)) = c.try_wait() {
                s.workload_status = Some(st.to_string());
                child = None;
                if opts.duration.is_none() {
                    break;
                }
            }
        } else if opts.duration.is_none() && opts.workload.is_empty() {
            break; // nothing to wait for (the CLI always gives one of them)
        }
        if n == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    stop.store(true, Ordering::SeqCst);
    for h in threads {
        if let Ok((cpu, max, fifo)) = h.join() {
            s.own_max.push((cpu, max));
            s.own_not_fifo |= !fifo;
        }
    }
    let _ = write_file(t, "tracing_on", "0");
    // Drain what is left: read until the pipe stays empty.
    let mut empty = 0;
    while empty < 3 && failed.is_none() {
        match pump(&mut out, s) {
            Ok(0) => {
                empty += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(_) => empty = 0,
            Err(e) => failed = Some(e),
        }
    }
    if let Some(mut c) = child {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
        s.workload_status = c.wait().ok().map(|st| format!("{st} (stopped by rtgpu)"));
    }
    restore_sigint(old);
    if let Some(e) = failed {
        return Err(e);
    }
    for cpu in 0..ncpu {
        let text = read_file(t, &format!("per_cpu/cpu{cpu}/stats"));
        let num = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k).and_then(|v| v.trim().parse::<u64>().ok()))
                .unwrap_or(0)
        };
        let st = CpuStats {
            cpu,
            overrun: num("overrun:"),
            commit_overrun: num("commit overrun:"),
            dropped: num("dropped events:"),
        };
        let line = format!(
            "# rtgpu-stats cpu={cpu} overrun={} commit_overrun={} dropped={}\n",
            st.overrun, st.commit_overrun, st.dropped
        );
        out.write_all(line.as_bytes())
            .map_err(io_err("cannot write the trace file"))?;
        s.stats.push(st);
    }
    out.sync_all()
        .map_err(io_err("cannot write the trace file"))?;
    Ok(())
}

fn restore_sigint(old: libc::sighandler_t) {
    // SAFETY: puts back the handler that was there before.
    unsafe { libc::signal(libc::SIGINT, old) };
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One cyclictest-like thread: returns (cpu, max latency, got SCHED_FIFO).
fn measure(
    cpu: usize,
    interval: Duration,
    prio: i32,
    stop: &AtomicBool,
    marker: Option<&File>,
) -> (usize, u64, bool) {
    // SAFETY: cpu_set_t is plain data; the calls affect only this thread.
    let fifo = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        let p = libc::sched_param {
            sched_priority: prio,
        };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0
    };
    let step = interval.as_nanos().max(10_000) as u64;
    let mut next = now_ns() + step;
    let mut max = 0u64;
    let mut line = String::with_capacity(64);
    while !stop.load(Ordering::Relaxed) {
        let ts = libc::timespec {
            tv_sec: (next / 1_000_000_000) as libc::time_t,
            tv_nsec: (next % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: valid timespec; absolute sleep on CLOCK_MONOTONIC.
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        let lat = now_ns().saturating_sub(next);
        max = max.max(lat);
        if let Some(mut m) = marker {
            use std::fmt::Write as _;
            line.clear();
            let _ = write!(line, "rtgpu_wakeup: latency={lat}");
            let _ = m.write_all(line.as_bytes());
        }
        next += step;
        let now = now_ns();
        if next < now {
            next = now + step; // overran: skip missed periods
        }
    }
    (cpu, max, fifo)
}
