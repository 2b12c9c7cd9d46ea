//! End-to-end tests of `rtgpu simulate`: exit statuses, outputs and errors.

use std::path::PathBuf;
use std::process::{Command, Output};

fn rtgpu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtgpu"))
        .args(args)
        .output()
        .expect("the rtgpu binary runs")
}

fn example(name: &str) -> String {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name]
        .iter()
        .collect();
    p.to_string_lossy().into_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn quickstart_runs_as_planned_beside_its_bounds() {
    let o = rtgpu(&["simulate", &example("quickstart.toml"), "--duration", "1 s"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(out.contains("scheduler: P-FP"), "{out}");
    assert!(out.contains("deadline misses: 0"), "{out}");
    // The bound column: joint-control's analysed bound is 600 us.
    let line = out
        .lines()
        .find(|l| l.starts_with("joint-control"))
        .expect("task row");
    assert_eq!(line.matches("600 us").count(), 2, "{line}");
    assert!(!out.contains("WARNING"), "{out}");
}

#[test]
fn outputs_csv_trace_svg_and_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("jobs.csv");
    let trace = dir.path().join("trace.json");
    let svg = dir.path().join("plot.svg");
    let o = rtgpu(&[
        "simulate",
        &example("feature-tracking.toml"),
        "--duration",
        "300 ms",
        "--json",
        "--csv",
        csv.to_str().expect("utf8"),
        "--trace",
        trace.to_str().expect("utf8"),
        "--svg",
        svg.to_str().expect("utf8"),
        "--scenario",
        "AEDG,2MB",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(v["scheduler"], "C-EDF");
    let jobs = v["jobs"].as_u64().expect("jobs");
    assert!(jobs > 0);
    let csv = std::fs::read_to_string(&csv).expect("csv written");
    assert!(csv.starts_with("task,job,release_ns"));
    assert_eq!(csv.lines().count() as u64, 1 + jobs);
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace")).expect("valid");
    assert!(t["traceEvents"].as_array().is_some_and(|a| a.len() > 100));
    let s = std::fs::read_to_string(&svg).expect("svg");
    assert!(s.starts_with("<svg"));
}

#[test]
fn misses_give_exit_status_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("over.toml");
    std::fs::write(
        &f,
        "[platform]\ncores = 1\n[overheads]\nbase = \"zero\"\n[policy]\ncpu_scheduler = \"G-EDF\"\n\
         [[task]]\nname = \"a\"\nwcet = \"6 ms\"\nperiod = \"10 ms\"\n\
         [[task]]\nname = \"b\"\nwcet = \"6 ms\"\nperiod = \"10 ms\"\n",
    )
    .expect("write");
    let o = rtgpu(&[
        "simulate",
        f.to_str().expect("utf8"),
        "--duration",
        "100 ms",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("deadline(s) missed"));
}

#[test]
fn bad_options_are_named() {
    let f = example("quickstart.toml");
    for (args, want) in [
        (vec!["--scenario", "AEXG,2MB"], "letter 3"),
        (vec!["--duration", "10"], "--duration `10`"),
        (vec!["--bcet", "150"], "--bcet must be a percentage"),
        (
            vec!["--klmirqd-server", "100 us/1 ms"],
            "--klmirqd-server needs --klmirqd independent",
        ),
        (
            vec!["--klmirqd", "independent", "--klmirqd-server", "2 ms/1 ms"],
            "at most the period",
        ),
    ] {
        let mut all = vec!["simulate", f.as_str()];
        all.extend(args);
        let o = rtgpu(&all);
        assert_eq!(o.status.code(), Some(2));
        let err = text(&o.stderr);
        assert!(err.contains(want), "{err}");
    }
    let o = rtgpu(&["simulate", "/nonexistent.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("nonexistent"));
    let o = rtgpu(&["simulate", &f, "--bcet", "5x0%"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("is not a percentage"),
        "{}",
        text(&o.stderr)
    );
}

/// Units and percentages as people type them: minutes (`1m`, rtla's and
/// cyclictest's spelling), `%` on the percentages the file writes so.
#[test]
fn durations_and_percentages_as_people_type_them() {
    let f = example("quickstart.toml");
    let o = rtgpu(&[
        "simulate",
        &f,
        "--duration",
        "1m",
        "--bcet",
        "50%",
        "--sporadic",
        "20 %",
        "--json",
    ]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(
        v["duration"].as_u64(),
        Some(60_000_000_000),
        "{}",
        text(&o.stdout)
    );
}

/// klmirqd's independent mode in the simulator: the bottom halves run in
/// a SCHED_DEADLINE server (said in a note), and a starved server slows
/// the GPU tasks down, as the bound column (charging the server's latency)
/// then says.
#[test]
fn klmirqd_independent_runs_each_gpus_bottom_halves_in_a_server() {
    let f = example("perception-1gpu.toml");
    let row = |out: &str| -> String {
        out.lines()
            .find(|l| l.starts_with("lidar"))
            .expect("lidar row")
            .to_string()
    };
    let dependent = rtgpu(&["simulate", &f, "--duration", "1 s"]);
    let out = text(&dependent.stdout);
    assert!(!out.contains("SCHED_DEADLINE threads"), "{out}");
    let starved = rtgpu(&[
        "simulate",
        &f,
        "--duration",
        "1 s",
        "--klmirqd",
        "independent",
        "--klmirqd-server",
        "10 us/5 ms",
    ]);
    let s = text(&starved.stdout);
    assert!(
        s.contains("klmirqd's independent servers (1 server(s) of 10 us every 5 ms)"),
        "{s}"
    );
    // lidar's 10 completions each wait out up to 4 server periods of 5 ms.
    let max_resp = |line: &str| -> f64 {
        let f: Vec<&str> = line.split_whitespace().collect();
        let v: f64 = f[3].parse().expect("a number");
        match f[4] {
            "ms" => v,
            "us" => v / 1e3,
            other => panic!("unit {other} in {line}"),
        }
    };
    assert!(
        max_resp(&row(&s)) > max_resp(&row(&out)) + 20.0,
        "{}\n{}",
        row(&out),
        row(&s)
    );
}

/// `rtgpu analyze FILE --plan OUT`, the plan's path.
fn write_plan(dir: &std::path::Path, workload: &str) -> PathBuf {
    let plan = dir.join("plan.json");
    let o = rtgpu(&["analyze", workload, "--plan", plan.to_str().expect("utf8")]);
    assert!(plan.exists(), "{}{}", text(&o.stdout), text(&o.stderr));
    plan
}

#[test]
fn a_plan_runs_what_the_analysis_placed_without_analysing_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in [
        "pdms-split.toml",
        "quickstart.toml",
        "feature-tracking.toml",
    ] {
        let w = example(name);
        let plan = write_plan(dir.path(), &w);
        let args = ["simulate", w.as_str(), "--duration", "1 s", "--json"];
        let analysed = rtgpu(&args);
        let planned = rtgpu(&[&args[..], &["--plan", plan.to_str().expect("utf8")]].concat());
        assert_eq!(planned.status.code(), analysed.status.code(), "{name}");
        assert_eq!(
            text(&planned.stdout),
            text(&analysed.stdout),
            "{name}: the plan's run differs from the analysed one: {}",
            text(&planned.stderr)
        );
    }
    // P-FP text: the bounds come from the plan's pieces, as analysed
    // (pdms-split's `fast` is split: 4 ms, then 2 ms released 4 ms later).
    let w = example("pdms-split.toml");
    let plan = write_plan(dir.path(), &w);
    let args = ["simulate", w.as_str(), "--duration", "1 s"];
    let analysed = text(&rtgpu(&args).stdout);
    let planned =
        text(&rtgpu(&[&args[..], &["--plan", plan.to_str().expect("utf8")]].concat()).stdout);
    assert_eq!(planned, analysed);
    assert!(planned.contains("6 ms"), "{planned}");
}

#[test]
fn a_plan_of_another_workload_is_refused_naming_what_differs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let w = example("pdms-split.toml");
    let plan = write_plan(dir.path(), &w);
    let original = std::fs::read_to_string(&plan).expect("plan");
    let refused = |edited: &str, expect: &str| {
        let p = dir.path().join("edited.json");
        std::fs::write(&p, edited).expect("write");
        let o = rtgpu(&["simulate", &w, "--plan", p.to_str().expect("utf8")]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{expect}: {err}");
        assert!(err.contains(expect), "expected `{expect}` in: {err}");
        assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    };
    // Another workload's plan.
    let other = write_plan(dir.path(), &example("quickstart.toml"));
    let quick = std::fs::read_to_string(&other).expect("plan");
    refused(
        &quick,
        "it is the plan of workload `quickstart`, not `pdms-split`",
    );
    // A renamed task, a changed period, a core the workload lacks.
    refused(
        &original.replacen("\"name\": \"medium\"", "\"name\": \"middle\"", 1),
        "task 2 is `medium` in the workload but `middle` in the plan",
    );
    refused(
        &original.replacen("\"period\": 20000000", "\"period\": 25000000", 1),
        "task medium has period 20000000 ns",
    );
    refused(
        &original.replacen("\"core\": 1", "\"core\": 7", 1),
        "on core 7, but the workload has 2 core(s)",
    );
    refused(
        &original.replacen("\"scheduler\": \"P-FP\"", "\"scheduler\": \"G-EDF\"", 1),
        "its scheduler is G-EDF, the workload's P-FP",
    );
    // A task too few.
    let mut v: serde_json::Value = serde_json::from_str(&original).expect("json");
    v["tasks"].as_array_mut().expect("tasks").pop();
    refused(&v.to_string(), "it has 2 task(s), the workload 3");
    // Not a plan at all, or none there.
    refused("{\"name\": 1}", "not a plan");
    let o = rtgpu(&["simulate", &w, "--plan", "/nonexistent/plan.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("cannot read the plan /nonexistent/plan.json"),
        "{}",
        text(&o.stderr)
    );
}

/// `--json` carries each task's analysis bound beside its observations, as
/// the text does (issue 23).
#[test]
fn json_carries_the_bound_beside_each_task() {
    let o = rtgpu(&[
        "simulate",
        &example("perception-1gpu.toml"),
        "--duration",
        "300 ms",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    let tasks = v["tasks"].as_array().expect("tasks");
    assert!(!tasks.is_empty());
    for t in tasks {
        let bound = t["bound"]
            .as_u64()
            .expect("every task of the demo has a bound");
        assert!(t["max_response"].as_u64().expect("max") <= bound, "{t}");
        assert_eq!(t["within_bound"], true);
    }
}
