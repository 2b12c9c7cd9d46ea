//! `rtgpu run` end to end: real threads on a small CPU-only workload, the
//! CSV and trace files, and clear refusals.

use std::process::{Command, Output};

/// `rtgpu` with a cache directory of this test binary's own, so no test
/// writes this machine's measured overheads into the real ~/.cache.
fn rtgpu(args: &[&str]) -> Output {
    static CACHE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(|| tempfile::tempdir().expect("tempdir"));
    rtgpu_with_cache(args, cache.path(), None)
}

fn rtgpu_with_cache(
    args: &[&str],
    cache: &std::path::Path,
    cwd: Option<&std::path::Path>,
) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtgpu"));
    c.args(args).env("XDG_CACHE_HOME", cache);
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    c.output().expect("the rtgpu binary runs")
}

fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

const LIGHT: &str = r#"
[platform]
cores = 1
[policy]
cpu_scheduler = "P-FP"
[[task]]
name = "ctl"
wcet = "500 us"
period = "10 ms"
[[task]]
name = "log, slow"
wcet = "1 ms"
period = "50 ms"
"#;

#[test]
fn a_light_workload_runs_and_writes_its_jobs_and_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("light.toml");
    std::fs::write(&file, LIGHT).expect("write");
    let csv = dir.path().join("jobs.csv");
    let trace = dir.path().join("trace.json");
    let o = rtgpu(&[
        "run",
        file.to_str().expect("utf-8 path"),
        "--duration",
        "200 ms",
        "--no-realtime",
        "--csv",
        csv.to_str().expect("utf-8"),
        "--trace",
        trace.to_str().expect("utf-8"),
        "--overheads",
        "workload",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    // Exit 0 or 1 (a loaded test machine may make a job late); never 2.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}");
    assert!(
        out.contains("policy     SCHED_OTHER (ordinary priorities)"),
        "{out}"
    );
    assert!(out.contains("ctl"), "{out}");
    let jobs = std::fs::read_to_string(&csv).expect("csv written");
    // 20 releases of ctl and 4 of the slow logger, plus the header.
    assert_eq!(jobs.lines().count(), 1 + 20 + 4, "{jobs}");
    assert!(jobs.contains("\"log, slow\",0,0,"), "{jobs}");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace written"))
            .expect("trace is JSON");
    let events = t["traceEvents"].as_array().expect("events");
    assert_eq!(
        events.iter().filter(|e| e["ph"] == "X").count(),
        24,
        "one slice per job piece"
    );
    // One time unit with `rtgpu simulate --trace`, and job slices on their
    // task's track (never overlapping there), named after it.
    assert_eq!(t["displayTimeUnit"], "ns");
    let track_of = |name: &str| {
        events
            .iter()
            .find(|e| e["name"] == "thread_name" && e["args"]["name"] == name)
            .map(|e| e["tid"].clone())
            .unwrap_or_else(|| panic!("no track {name}"))
    };
    let ctl = track_of("ctl");
    let mut spans: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == ctl)
        .map(|e| {
            let ts = e["ts"].as_f64().expect("ts");
            (ts, ts + e["dur"].as_f64().expect("dur"))
        })
        .collect();
    assert_eq!(spans.len(), 20);
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "{spans:?}");
}

#[test]
fn unrunnable_workloads_and_bad_durations_are_refused_clearly() {
    // The CUDA backend asked for on a machine without the NVIDIA driver.
    if no_nvidia_driver() {
        let o = rtgpu(&[
            "run",
            &example("perception-1gpu.toml"),
            "--duration",
            "100 ms",
            "--backend",
            "cuda",
        ]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("libcuda.so.1"), "{err}");
    }

    let o = rtgpu(&["run", &example("quickstart.toml"), "--duration", "soon"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--duration \"soon\""), "{err}");
}

/// Whether this machine lacks the NVIDIA driver (the CUDA refusal above
/// only happens there).
fn no_nvidia_driver() -> bool {
    ![
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib64/libcuda.so.1",
        "/usr/lib/libcuda.so.1",
    ]
    .iter()
    .any(|p| std::path::Path::new(p).exists())
}

/// `--json` writes JSON alone to standard output, also where `--backend
/// auto` falls back to the emulated GPU (that notice goes to standard
/// error), with the run's start on CLOCK_MONOTONIC for lining it up with a
/// kernel trace; under `--sched deadline` the reservations reclaim unused
/// bandwidth unless `--no-reclaim`.
#[test]
fn json_output_is_json_alone_and_reclaim_is_the_deadline_default() {
    let ex = example("perception-1gpu.toml");
    for extra in [&[][..], &["--no-reclaim"][..]] {
        let mut args = vec![
            "run",
            &ex,
            "--duration",
            "50 ms",
            "--sched",
            "deadline",
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = rtgpu(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{err}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
        if no_nvidia_driver() {
            assert!(err.contains("GPU backend: emulated"), "{err}");
        }
        assert!(v["run"]["started_at_monotonic"].as_u64().unwrap_or(0) > 0);
        let policy = v["run"]["policy"].as_str().expect("policy");
        if policy.starts_with("SCHED_DEADLINE") {
            assert_eq!(
                policy.contains("SCHED_FLAG_RECLAIM"),
                extra.is_empty(),
                "{policy}"
            );
            let ran = v["run"]["tasks"][0]["ran_under"].as_str().unwrap_or("");
            assert_eq!(ran.ends_with(", reclaiming"), extra.is_empty(), "{ran}");
        } else {
            eprintln!("SCHED_DEADLINE not permitted here: {policy}");
        }
    }
}

/// Seed 004's tracker: C-EDF with GPU-using tasks on 2 x 6 cores and 8
/// (emulated) GPUs runs, folded onto this machine's CPUs.
#[test]
fn an_edf_plan_with_gpu_tasks_runs() {
    let o = rtgpu(&[
        "run",
        &example("feature-tracking.toml"),
        "--duration",
        "100 ms",
        "--overheads",
        "workload",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_ne!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("run        feature-tracking"), "{out}");
    assert!(out.contains("emulated backend"), "{out}");
}

/// klmirqd's completion threads: the mode used is printed, and bad
/// server settings are refused with the reason.
#[test]
fn klmirqd_modes_are_reported_and_bad_server_settings_refused() {
    let file = example("perception-1gpu.toml");
    for (mode, expect) in [
        (
            "dependent",
            "klmirqd    dependent mode: klmirqd/gpu0 idle at",
        ),
        (
            "independent",
            "klmirqd    independent mode: klmirqd/gpu0 at",
        ),
    ] {
        let o = rtgpu(&[
            "run",
            &file,
            "--duration",
            "200 ms",
            "--backend",
            "emulated",
            "--klmirqd",
            mode,
            "--overheads",
            "workload",
        ]);
        let out = String::from_utf8_lossy(&o.stdout);
        // Without real-time privilege both modes run SCHED_OTHER and say so.
        let unprivileged = out.contains("WARNING: klmirqd: without real-time priorities");
        assert!(out.contains(expect) || unprivileged, "{out}");
        assert!(
            out.contains("GPU completion(s) ran on the completion threads"),
            "{out}"
        );
        // Independent servers are charged in the bounds printed (C-FP).
        if mode == "independent" && out.contains(expect) {
            assert!(
                out.contains("note: klmirqd independent: the analysed bounds charge each GPU's"),
                "{out}"
            );
            assert!(!out.contains("do not charge"), "{out}");
        }
    }
    let o = rtgpu(&["run", &file, "--klmirqd-server", "100 us/1 ms"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs --klmirqd independent"));
    for bad in ["100 us", "2 ms/1 ms", "fast/1 ms", "100 ns/1 ms"] {
        let o = rtgpu(&[
            "run",
            &file,
            "--klmirqd",
            "independent",
            "--klmirqd-server",
            bad,
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--klmirqd-server"), "{bad}: {err}");
        assert!(err.contains("RUNTIME/PERIOD"), "{bad}: {err}");
    }
}

/// `--overheads workload`: the file's own `[overheads]`, Table III where it
/// sets none (what `rtgpu run` charged before it measured the machine).
#[test]
fn workload_overheads_keep_table_iii() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("light.toml");
    std::fs::write(&file, LIGHT).expect("write");
    let f = file.to_str().expect("utf-8");
    let args = [
        "run",
        f,
        "--duration",
        "50 ms",
        "--no-realtime",
        "--overheads",
        "workload",
    ];
    let o = rtgpu_with_cache(&args, dir.path(), None);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}");
    assert!(
        out.contains(
            "overheads  the workload's: seed 000 Table III (not measured here) (`--overheads \
             machine` charges this machine's, measured in about 2 s): rel 670 ns, sch 630 ns, cxs 360 ns, ipi 600 ns, tck 860 ns, th 16.44 us"
        ),
        "{out}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("measuring"), "{err}");
    assert!(
        !dir.path().join("rtgpu").exists(),
        "nothing measured, nothing cached"
    );
    let mut json = args.to_vec();
    json.push("--json");
    let o = rtgpu_with_cache(&json, dir.path(), None);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["overheads"]["source"], "workload");
    let t3 = rtgpu_model::Overheads::default();
    assert_eq!(
        v["overheads"]["values"],
        serde_json::to_value(t3).expect("json")
    );
}

/// `--overheads measure` measures (one progress line), caches, and says
/// so; `machine` then reads the cache; analyze notes it.
#[test]
fn measured_overheads_are_cached_and_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let file = dir.path().join("light.toml");
    std::fs::write(&file, LIGHT).expect("write");
    let f = file.to_str().expect("utf-8");
    let o = rtgpu_with_cache(
        &["run", f, "--duration", "50 ms", "--overheads", "measure"],
        &cache,
        None,
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}{err}");
    assert_eq!(
        err.matches("measuring this machine's overheads (about 2 s; cached for later runs)...")
            .count(),
        1,
        "{err}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("overheads  "))
        .unwrap_or_else(|| panic!("no overheads line: {out}"));
    assert!(
        line.starts_with(&format!(
            "overheads  measured on this machine now (cached to {}",
            cache.join("rtgpu").join("overheads-").display()
        )),
        "{line}"
    );
    assert!(line.contains(" probes): rel "), "{line}");
    assert!(line.contains(", tck "), "{line}");
    assert!(
        line.ends_with("; Table III (not measured here): th, bh, krel, paisch, pairel"),
        "{line}"
    );
    let cached: Vec<_> = std::fs::read_dir(cache.join("rtgpu"))
        .expect("cache dir")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    let oh = rtgpu_model::load_overheads(&cached[0]).expect("an [overheads] file");

    // `machine`: the cache, no measurement.
    let o = rtgpu_with_cache(
        &[
            "run",
            f,
            "--duration",
            "50 ms",
            "--json",
            "--overheads",
            "machine",
        ],
        &cache,
        None,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("measuring"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let j = &v["overheads"];
    assert_eq!(j["source"], "machine", "{j}");
    assert_eq!(j["cache"]["read"], cached[0].display().to_string(), "{j}");
    assert_eq!(j["values"], serde_json::to_value(oh).expect("json"), "{j}");
    assert_eq!(
        j["not_measured"].as_array().map(|a| a.len() >= 5),
        Some(true),
        "{j}"
    );
    assert_eq!(
        j["samples"]["wake"].as_u64().map(|n| n >= 2_000),
        Some(true),
        "{j}"
    );

    // analyze: the source in the report's notes; the default stays the
    // workload's own overheads.
    let o = rtgpu_with_cache(&["analyze", f, "--overheads", "machine"], &cache, None);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("note: overheads: measured on this machine (cached "),
        "{out}"
    );
    let o = rtgpu_with_cache(&["analyze", f], &cache, None);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("note: overheads:"), "{out}");
    assert!(out.contains("seed 000 Table III overheads"), "{out}");
}

/// A file named like a keyword: the keyword wins, with a note; `./machine`
/// is the file.
#[test]
fn keywords_win_over_files_of_the_same_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("light.toml");
    std::fs::write(&file, LIGHT).expect("write");
    std::fs::write(
        dir.path().join("machine"),
        "[overheads]\nrel = \"123 us\"\n",
    )
    .expect("write");
    let o = rtgpu_with_cache(
        &[
            "analyze",
            "light.toml",
            "--json",
            "--overheads",
            "./machine",
        ],
        &dir.path().join("cache"),
        Some(dir.path()),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["tasks"][0]["charges"]["release"], 123_000 + 600, "{out}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("overheads: the [overheads] of ./machine"),
        "{notes}"
    );
    // The keyword `machine` measures, though a file of that name is here.
    let o = rtgpu_with_cache(
        &["analyze", "light.toml", "--overheads", "machine"],
        &dir.path().join("cache"),
        Some(dir.path()),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the keyword wins over the file ./machine here; pass ./machine"),
        "{err}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("note: overheads: measured on this machine")
    );
    // A missing file is an error naming it.
    let o = rtgpu_with_cache(
        &["analyze", "light.toml", "--overheads", "nothing.toml"],
        &dir.path().join("cache"),
        Some(dir.path()),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing.toml"));
}

/// SIGTERM (or Ctrl-C) stops releasing jobs: the run still prints its
/// summary and writes its CSV, promptly (issue 22: it used to exit at once
/// with nothing).
#[test]
fn a_signal_stops_the_run_which_still_reports_and_writes() {
    let dir = tempfile::tempdir().expect("tmp");
    let csv = dir.path().join("jobs.csv");
    let child = Command::new(env!("CARGO_BIN_EXE_rtgpu"))
        .args([
            "run",
            &example("control-2core.toml"),
            "--duration",
            "60s",
            "--no-realtime",
            "--overheads",
            "workload",
            "--csv",
            csv.to_str().expect("utf8"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rtgpu runs");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let sent = std::time::Instant::now();
    let k = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(k.success());
    let o = child.wait_with_output().expect("rtgpu exits");
    assert!(sent.elapsed().as_secs() < 20, "stopped promptly");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}");
    assert!(out.contains("stopped by a signal"), "{out}");
    assert!(out.contains("joint-control"), "{out}");
    let rows = std::fs::read_to_string(&csv)
        .expect("CSV written")
        .lines()
        .count();
    assert!(rows > 100, "{rows} rows");
}
