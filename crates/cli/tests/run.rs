//! `rtgpu run` end to end: real threads on a small CPU-only workload, the
//! CSV and trace files, and clear refusals.

use std::process::{Command, Output};

fn rtgpu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtgpu"))
        .args(args)
        .output()
        .expect("the rtgpu binary runs")
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

/// Seed 004's tracker: C-EDF with GPU-using tasks on 2 x 6 cores and 8
/// (emulated) GPUs runs, folded onto this machine's CPUs.
#[test]
fn an_edf_plan_with_gpu_tasks_runs() {
    let o = rtgpu(&[
        "run",
        &example("feature-tracking.toml"),
        "--duration",
        "100 ms",
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
