//! End-to-end tests of `rtgpu latency report` / `record` on the real traces
//! committed in crates/latency/tests/fixtures, and of the overheads they
//! export into `rtgpu analyze --overheads`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn rtgpu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtgpu"))
        .args(args)
        .output()
        .expect("the rtgpu binary runs")
}

fn fixture(name: &str) -> String {
    let p: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "latency",
        "tests",
        "fixtures",
        name,
    ]
    .iter()
    .collect();
    p.to_string_lossy().into_owned()
}

fn example(name: &str) -> String {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name]
        .iter()
        .collect();
    p.to_string_lossy().into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const FIXTURES: [&str; 3] = [
    "rt-qemu-timerlat.trace.txt",
    "host-trace-cmd-report.txt",
    "host-perf-script.txt",
];

#[test]
fn text_report_on_every_format() {
    for (f, format) in FIXTURES
        .iter()
        .zip(["ftrace text", "trace-cmd report", "perf script"])
    {
        let o = rtgpu(&["latency", "report", &fixture(f)]);
        assert!(o.status.success(), "{f}: {}", err(&o));
        let s = out(&o);
        assert!(s.contains(format), "{f}: format not named\n{s}");
        assert!(s.contains("=== CPU 0") && s.contains("=== CPU 1"), "{s}");
        for label in [
            "No Interrupts",
            "Worst single interrupt",
            "Single (worst) of each interrupt",
            "Sporadic",
            "Sliding window  ",
            "Sliding window with oWCET",
        ] {
            assert_eq!(
                s.matches(label).count(),
                2,
                "{f}: `{label}` not once per CPU\n{s}"
            );
        }
        // Stock kernels: no preemptirq events, said plainly.
        assert!(s.contains("are NOT latency bounds"), "{s}");
        assert!(s.contains("the dominant term is"), "{s}");
    }
}

#[test]
fn rt_kernel_report_shows_timerlat_and_osnoise_beside_the_bounds() {
    let s = out(&rtgpu(&[
        "latency",
        "report",
        &fixture("rt-qemu-timerlat.trace.txt"),
    ]));
    assert!(s.contains("timerlat thread max"), "{s}");
    assert!(s.contains("osnoise: irq local_timer:236"), "{s}");
    // On PREEMPT_RT, softirqs run in threads (ktimers/N, rcuc/N, ksoftirqd/N).
    assert!(
        s.contains("softirqs in thread context (not interference)"),
        "{s}"
    );
}

#[test]
fn json_report_has_six_bounds_per_cpu() {
    let o = rtgpu(&[
        "latency",
        "report",
        "--json",
        &fixture("host-perf-script.txt"),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("valid JSON");
    let cpus = v["cpus"].as_array().expect("cpus");
    assert_eq!(cpus.len(), 2);
    for c in cpus {
        let b = c["bounds"].as_array().expect("bounds");
        assert_eq!(b.len(), 6);
        assert_eq!(b[0][0], "no-interrupts");
        assert_eq!(c["l_if_origin"], "unknown");
    }
}

#[test]
fn ifl_gives_l_if_and_the_no_interrupt_bound() {
    let o = rtgpu(&[
        "latency",
        "report",
        "--json",
        "--ifl",
        "25 us",
        &fixture("host-trace-cmd-report.txt"),
    ]);
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("valid JSON");
    let c = &v["cpus"][0];
    assert_eq!(c["l_if"], 25_000);
    assert_eq!(c["l_if_origin"], "user");
    assert_eq!(c["bounds"][0][1]["latency"], 25_000);
    let o = rtgpu(&[
        "latency",
        "report",
        "--ifl",
        "25",
        &fixture("host-trace-cmd-report.txt"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--ifl"), "{}", err(&o));
}

#[test]
fn plot_writes_one_panel_per_cpu() {
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("l.svg");
    let o = rtgpu(&[
        "latency",
        "report",
        &fixture("rt-qemu-timerlat.trace.txt"),
        "--plot",
        svg.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let s = std::fs::read_to_string(&svg).expect("svg written");
    assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
    assert!(s.contains("CPU 0: ") && s.contains("CPU 1: "), "{s}");
    // One scale with labelled ticks (issue 23), and `--svg` is the name
    // `rtgpu simulate` uses too.
    assert!(s.contains(">latency (us)</text>"), "{s}");
    let again = dir.path().join("l2.svg");
    let o = rtgpu(&[
        "latency",
        "report",
        &fixture("rt-qemu-timerlat.trace.txt"),
        "--svg",
        again.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        std::fs::read_to_string(&again).expect("svg written"),
        s,
        "--svg and --plot write the same chart"
    );
    assert!(
        s.contains("did not converge"),
        "the sporadic model does not converge on this trace"
    );
    assert!(s.contains("observed"), "timerlat maximum drawn");
}

#[test]
fn cyclictest_maximum_is_shown_beside() {
    let o = rtgpu(&[
        "latency",
        "report",
        &fixture("host-trace-cmd-report.txt"),
        "--cyclictest",
        &fixture("host-trace-cmd-report.cyclictest.txt"),
    ]);
    // cyclictest's `Max: 80` (us) in that run.
    assert!(
        out(&o).contains("cyclictest max (all threads): 80000 ns"),
        "{}",
        out(&o)
    );
}

#[test]
fn exported_overheads_feed_analyze() {
    let dir = tempfile::tempdir().expect("tempdir");
    let oh = dir.path().join("oh.toml");
    let o = rtgpu(&[
        "latency",
        "report",
        &fixture("host-trace-cmd-report.txt"),
        "--export-overheads",
        oh.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let m = rtgpu_model::load_overheads(&oh).expect("the export loads");
    // The trace's only device IRQ (virtio3-tx) took 28 us; the longest
    // local timer interrupt 33 us (see the text report).
    assert_eq!(m.th, 28_000);
    assert_eq!(m.tck, 33_000);
    // Not measurable without preemptirq events: Table III kept.
    assert_eq!(m.cxs, rtgpu_model::Overheads::default().cxs);
    // quickstart.toml has `base = "zero"` overheads: no tick charge. With
    // the measured file, its 1 ms task is charged one 33 us tick per job
    // (seed 000 App. B, as rtgpu analyze accounts it).
    let ticks = |o: &Output| -> u64 {
        let v: serde_json::Value = serde_json::from_str(&out(o)).expect("analyze JSON");
        assert_eq!(v["tasks"][0]["name"], "joint-control");
        v["tasks"][0]["charges"]["ticks"]
            .as_u64()
            .expect("ticks charge")
    };
    // quickstart.toml has `base = "zero"` overheads; with the measured ones
    // analyze charges them (seed 000 App. B): the 33 us ticks and 128 us
    // release latencies push the tight quickstart (88 % of 4 cores, tasks
    // with zero slack) over the edge.
    let plain = rtgpu(&["analyze", "--json", &example("quickstart.toml")]);
    let with = rtgpu(&[
        "analyze",
        "--json",
        &example("quickstart.toml"),
        "--overheads",
        oh.to_str().expect("utf8"),
    ]);
    assert_eq!(ticks(&plain), 0);
    assert_eq!(ticks(&with), 33_000);
    assert_eq!(plain.status.code(), Some(0));
    assert_eq!(with.status.code(), Some(1), "{}", out(&with));
    assert!(out(&plain).contains("costs inflated with zero overheads"));
    assert!(
        out(&with).contains("costs inflated with the workload's [overheads]"),
        "{}",
        out(&with)
    );
    // A bad overheads file: exit 2, file:line:column and field.
    std::fs::write(&oh, "[overheads]\nth = 5\n").expect("write");
    let bad = rtgpu(&[
        "analyze",
        &example("quickstart.toml"),
        "--overheads",
        oh.to_str().expect("utf8"),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        err(&bad).contains("oh.toml:2:6: error in `overheads.th`"),
        "{}",
        err(&bad)
    );
}

#[test]
fn bad_traces_are_named_with_their_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("bad.txt");
    std::fs::write(&f, "# tracer: nop\n  a-1 [000] d... 1.0: irq_handler_entry: irq=1 name=x\n  a-1 [000] d... 1.x: y: z\n").expect("write");
    let o = rtgpu(&["latency", "report", f.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("bad.txt:line 3: expected seconds"),
        "{}",
        err(&o)
    );
    std::fs::write(&f, "hello\n").expect("write");
    let o = rtgpu(&["latency", "report", f.to_str().expect("utf8")]);
    assert!(err(&o).contains("no trace events found"), "{}", err(&o));
}

/// Recordings share the one tracefs: one at a time.
static TRACEFS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn tracefs_writable() -> bool {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/sys/kernel/tracing/tracing_on")
        .is_ok()
}

#[test]
fn record_then_report() {
    let _one = TRACEFS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let t = dir.path().join("r.trace");
    let o = rtgpu(&[
        "latency",
        "record",
        "--duration",
        "400 ms",
        "-o",
        t.to_str().expect("utf8"),
        "--",
        "sleep",
        "0.1",
    ]);
    if !o.status.success() {
        // Without tracefs or permission: a clear message, not a crash.
        assert_eq!(o.status.code(), Some(2));
        let e = err(&o);
        assert!(
            !tracefs_writable(),
            "tracefs is writable but record failed: {e}"
        );
        assert!(e.contains("needs root") || e.contains("tracefs"), "{e}");
        eprintln!("SKIP record_then_report: cannot trace here ({e})");
        return;
    }
    let s = out(&o);
    assert!(
        s.contains("events dropped by the kernel: 0") || s.contains("WARNING: the kernel dropped"),
        "{s}"
    );
    let text = std::fs::read_to_string(&t).expect("trace written");
    assert!(text.starts_with("# tracer: "));
    assert!(
        text.contains("# rtgpu-stats cpu=0"),
        "per-CPU counters appended"
    );
    let r = rtgpu(&["latency", "report", "--json", t.to_str().expect("utf8")]);
    assert!(r.status.success(), "{}", err(&r));
    let v: serde_json::Value = serde_json::from_str(&out(&r)).expect("json");
    let samples: u64 = v["cpus"]
        .as_array()
        .expect("cpus")
        .iter()
        .map(|c| {
            c["observed"]["rtgpu_samples"].as_u64().unwrap_or(0)
                + c["observed"]["timerlat_thread_samples"]
                    .as_u64()
                    .unwrap_or(0)
        })
        .sum();
    assert!(samples > 0, "wake-up samples in the trace");
}

#[test]
fn record_without_permission_says_so() {
    if !tracefs_writable() || !std::path::Path::new("/usr/bin/setpriv").exists() {
        eprintln!("SKIP record_without_permission_says_so: needs root and setpriv");
        return;
    }
    let o = Command::new("/usr/bin/setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_rtgpu"),
            "latency",
            "record",
            "--duration",
            "100 ms",
            "-o",
            "/tmp/rtgpu-nobody.trace",
        ])
        .output()
        .expect("setpriv runs");
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("permission denied") && err(&o).contains("needs root"),
        "{}",
        err(&o)
    );
}

#[test]
fn ctrl_c_stops_cleanly_and_keeps_the_trace() {
    let _one = TRACEFS.lock().unwrap_or_else(|e| e.into_inner());
    if !tracefs_writable() {
        eprintln!("SKIP ctrl_c_stops_cleanly_and_keeps_the_trace: tracefs not writable here");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let t = dir.path().join("c.trace");
    let child = Command::new(env!("CARGO_BIN_EXE_rtgpu"))
        .args([
            "latency",
            "record",
            "--duration",
            "60 s",
            "-o",
            t.to_str().expect("utf8"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rtgpu runs");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let started = std::time::Instant::now();
    let k = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(k.success());
    let o = child.wait_with_output().expect("rtgpu exits");
    assert!(started.elapsed().as_secs() < 20, "stopped promptly");
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("stopped by Ctrl-C"), "{}", out(&o));
    let text = std::fs::read_to_string(&t).expect("trace kept");
    assert!(
        text.contains("# rtgpu-stats cpu=0"),
        "drained and closed properly"
    );
    assert!(
        text.lines().filter(|l| !l.starts_with('#')).count() > 10,
        "events kept"
    );
    // tracing is back on for others.
    let on = std::fs::read_to_string("/sys/kernel/tracing/tracing_on").unwrap_or_default();
    assert_eq!(on.trim(), "1");
}

#[test]
fn occurrences_csv_lists_every_occurrence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("o.csv");
    let f = fixture("host-perf-script.txt");
    let o = rtgpu(&[
        "latency",
        "report",
        "--json",
        &f,
        "--occurrences",
        csv.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("json");
    let counted: u64 = v["cpus"]
        .as_array()
        .expect("cpus")
        .iter()
        .flat_map(|c| c["sources"].as_array().expect("sources").iter())
        .map(|s| s["count"].as_u64().expect("count"))
        .sum();
    let text = std::fs::read_to_string(&csv).expect("csv written");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("cpu,kind,source,start_ns,duration_ns,task")
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len() as u64, counted);
    assert!(
        rows.iter()
            .any(|r| r.starts_with("0,irq,\"irq 41 virtio3-rx\",5373695090000,7000,")),
        "{}",
        &text[..400.min(text.len())]
    );
}

/// Issue 22: on a PREEMPT_RT trace whose interrupts come from osnoise
/// `irq_noise` events, "worst interrupted" named `ksoftirqd/0` for every
/// source on both CPUs. Each CPU's worst occurrence names the task
/// `sched_switch` put on that CPU.
#[test]
fn worst_interrupted_task_is_the_one_on_the_cpu() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("osnoise.txt");
    std::fs::write(
        &f,
        "# tracer: nop
  <idle>-0 [000] d..2. 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ksoftirqd/0 next_pid=14 next_prio=120
  <idle>-0 [001] d..2. 1.000001: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ksoftirqd/1 next_pid=29 next_prio=120
  ksoftirqd/0-14 [000] d..2. 1.000010: sched_switch: prev_comm=ksoftirqd/0 prev_pid=14 prev_prio=120 prev_state=S ==> next_comm=init next_pid=1 next_prio=120
  ksoftirqd/1-29 [001] d..2. 1.000011: sched_switch: prev_comm=ksoftirqd/1 prev_pid=29 prev_prio=120 prev_state=S ==> next_comm=dd next_pid=300 next_prio=120
  <...>-1 [000] d.h1. 1.000100: irq_noise: local_timer:236 start 1.000050 duration 50000 ns
  <...>-300 [001] d.h1. 1.000120: irq_noise: local_timer:236 start 1.000040 duration 80000 ns
  <...>-1 [000] d..2. 1.000200: sched_switch: prev_comm=init prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=dd next_pid=301 next_prio=120
  <...>-301 [000] d.h1. 1.000300: irq_noise: local_timer:236 start 1.000220 duration 60000 ns
",
    )
    .expect("write");
    let o = rtgpu(&["latency", "report", "--json", f.to_str().expect("utf8")]);
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("json");
    let worst: Vec<(u64, String)> = v["cpus"]
        .as_array()
        .expect("cpus")
        .iter()
        .flat_map(|c| {
            let cpu = c["cpu"].as_u64().expect("cpu");
            c["sources"]
                .as_array()
                .expect("sources")
                .iter()
                .map(move |s| (cpu, s["worst_task"].as_str().unwrap_or("").to_string()))
        })
        .collect();
    assert_eq!(worst, [(0, "dd".to_string()), (1, "dd".to_string())]);
    let text = out(&rtgpu(&["latency", "report", f.to_str().expect("utf8")]));
    assert!(!text.contains("ksoftirqd"), "{text}");
}

/// `latency report` reads the trace line by line: a trace larger than the
/// 64 MiB cap on workload files is read (from a pipe, as `-`) in a few
/// MiB, where reading it whole took twice its size.
#[test]
#[allow(clippy::zombie_processes)] // reaped by wait4, for its rusage
fn a_trace_larger_than_the_input_cap_is_streamed() {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtgpu"))
        .args(["latency", "report", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rtgpu runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, &mut stdin);
        let mut bytes: u64 = 0;
        bytes += w.write(b"# tracer: nop\n").expect("write") as u64;
        let mut i: u64 = 0;
        while bytes <= 72 << 20 {
            let (s, us) = (1 + i / 1_000_000, i % 1_000_000);
            let line = if i.is_multiple_of(1000) {
                format!("  a-1 [000] d.h1. {s}.{us:06}: local_timer_entry: vector=236\n  a-1 [000] d.h1. {s}.{us:06}: local_timer_exit: vector=236\n")
            } else {
                format!("  a-1 [000] d..2. {s}.{us:06}: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n")
            };
            w.write_all(line.as_bytes()).expect("write");
            bytes += line.len() as u64;
            i += 1;
        }
        w.flush().expect("flush");
        bytes
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).expect("read");
        s
    });
    let sent = writer.join().expect("writer");
    let report = reader.join().expect("reader");
    // The child's own peak RSS, from wait4 (getrusage of all children
    // would mix in the other tests' processes).
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 reaps our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    assert!(sent > 64 << 20);
    assert!(report.contains("vector local_timer"), "{report}");
    let peak_mib = usage.ru_maxrss / 1024;
    assert!(
        peak_mib < 40,
        "peak RSS {peak_mib} MiB for a {} MiB trace",
        sent >> 20
    );
}
