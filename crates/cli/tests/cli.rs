//! End-to-end tests of the `rtgpu` binary: exit statuses, error messages,
//! JSON output and the deployment plan, on the bundled examples and on small
//! files written here.

use std::path::{Path, PathBuf};
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

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write test file");
    p.to_string_lossy().into_owned()
}

#[test]
fn quickstart_is_schedulable_only_by_splitting() {
    let o = rtgpu(&["analyze", &example("quickstart.toml")]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("verdict: SCHEDULABLE"), "{out}");
    assert!(out.contains("split tasks"), "{out}");
    assert!(out.contains("PDMS_HPTS_DS"), "{out}");
}

#[test]
fn every_example_gives_a_definite_answer() {
    let dir: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples"]
        .iter()
        .collect();
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("examples/ exists") {
        let path = entry.expect("dir entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let o = rtgpu(&["analyze", "--json", &path.to_string_lossy()]);
        let code = o.status.code();
        assert!(
            matches!(code, Some(0..=1)),
            "{}: {code:?} {}",
            path.display(),
            stderr(&o)
        );
        // Every example is valid input and fully analysed (GPU ones too):
        // exit status 0 or 1, never 2.
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {}", path.display(), stderr(&o)));
        let verdict = v["verdict"].as_str().unwrap_or_default().to_string();
        match code {
            Some(0) => assert_eq!(verdict, "schedulable"),
            Some(1) => assert_eq!(verdict, "not-schedulable"),
            _ => assert_eq!(verdict, "not-analysed"),
        }
        seen += 1;
    }
    assert!(seen >= 4, "expected at least four examples, found {seen}");
}

#[test]
fn first_fit_cannot_place_what_splitting_can() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(example("pdms-split.toml")).expect("example");
    let ff = text.replace(
        "partitioning = \"pdms-hpts-ds\"",
        "partitioning = \"first-fit\"",
    );
    assert_ne!(ff, text, "the example names its partitioning");
    let f = write(dir.path(), "ff.toml", &ff);
    let o = rtgpu(&["analyze", &f]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("UNPLACED"), "{out}");
    assert!(out.contains("verdict: NOT SCHEDULABLE"), "{out}");
}

#[test]
fn pdms_split_with_a_reservation_is_split_around_it() {
    // examples/pdms-split.toml plus a CPU reservation of 100 us every
    // 10 ms (runtime 300 us, charged on both cores): the partitioner leaves
    // it room, so the split is 3.55 ms + 2.45 ms, the second piece
    // released 4.15 ms after the job (the first piece's response time
    // below the reservation), and every bound holds (hand-derived in
    // rtgpu-analysis's tests/reservations.rs).
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(example("pdms-split.toml")).expect("example");
    let with_r = format!(
        "{text}\n[[task]]\nname = \"r\"\nwcet = \"100 us\"\nperiod = \"10 ms\"\nreservation = true\n"
    );
    let f = write(dir.path(), "split-r.toml", &with_r);
    let o = rtgpu(&["analyze", &f]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("verdict: SCHEDULABLE"), "{out}");
    let o = rtgpu(&["analyze", "--json", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    let tasks = v["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 4);
    for t in tasks {
        let r = t["response_time"].as_u64().expect("bounded");
        assert!(r <= t["deadline"].as_u64().unwrap(), "{t}");
        assert_eq!(t["verdict"], "meets-deadline", "{t}");
    }
    let fast = tasks.iter().find(|t| t["name"] == "fast").expect("fast");
    let pieces: Vec<(u64, u64)> = fast["pieces"]
        .as_array()
        .expect("pieces")
        .iter()
        .map(|p| {
            (
                p["budget"].as_u64().unwrap(),
                p["release_offset"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(pieces, vec![(3_550_000, 0), (2_450_000, 4_150_000)]);
    assert_eq!(fast["response_time"], 7_200_000);
}

#[test]
fn invalid_input_names_file_line_column_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = write(
        dir.path(),
        "bad.toml",
        "[platform]\ncores = 2\n\n[[task]]\nname = \"a\"\nwcet = \"5 ms\"\nperiod = \"10 ms\"\ndeadlin = \"8 ms\"\n",
    );
    let o = rtgpu(&["analyze", &f]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("bad.toml:8:1"), "{err}");
    assert!(err.contains("deadline"), "{err}");

    let f = write(
        dir.path(),
        "c_gt_d.toml",
        "[platform]\ncores = 1\n[[task]]\nname = \"a\"\nwcet = \"9 ms\"\nperiod = \"10 ms\"\ndeadline = \"8 ms\"\n",
    );
    let o = rtgpu(&["analyze", &f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("c_gt_d.toml:"), "{}", stderr(&o));

    let o = rtgpu(&["analyze", "/nonexistent/workload.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/workload.toml"));
}

#[test]
fn overloaded_core_is_not_schedulable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = write(
        dir.path(),
        "over.toml",
        "[platform]\ncores = 1\n[overheads]\nbase = \"zero\"\n[policy]\npartitioning = \"first-fit\"\n\
         [[task]]\nname = \"a\"\nwcet = \"6 ms\"\nperiod = \"10 ms\"\n\
         [[task]]\nname = \"b\"\nwcet = \"5 ms\"\nperiod = \"10 ms\"\n",
    );
    let o = rtgpu(&["analyze", &f]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
}

#[test]
fn gpu_workloads_get_a_gpu_aware_verdict_with_a_breakdown() {
    // Seed 004's tracker as configured (rho = 2, DGL): suspension-oblivious
    // GPUSync bounds make every inflated cost exceed its period.
    let o = rtgpu(&["analyze", &example("feature-tracking.toml")]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = stdout(&o);
    assert!(text.contains("GPU use"), "{text}");
    assert!(text.contains("inflated costs"), "{text}");
    assert!(!text.contains("not yet analysed"), "{text}");
    let o = rtgpu(&["analyze", "--json", &example("feature-tracking.toml")]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    let t = &v["tasks"][0];
    assert!(t["gpu"]["token_blocking"].as_u64().unwrap_or(0) > 0, "{t}");
    assert!(t["gpu"]["engine_blocking"].as_u64().unwrap_or(0) > 0, "{t}");
    assert!(t["gpu"]["token_hold_time"].as_u64().unwrap_or(0) > 0, "{t}");
    let total = t["charges"]["total"].as_u64().unwrap_or(0);
    assert!(total > t["wcet"].as_u64().unwrap_or(u64::MAX), "{t}");
}

#[test]
fn plan_is_written_and_complete() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("plan.json");
    let o = rtgpu(&[
        "analyze",
        &example("quickstart.toml"),
        "--plan",
        &plan.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).expect("plan exists"))
            .expect("plan is JSON");
    assert_eq!(v["format"], "rtgpu-plan/1");
    let tasks = v["tasks"].as_array().expect("tasks");
    assert!(!tasks.is_empty());
    // Pieces of every task add up to its WCET in the JSON report too.
    let rep: serde_json::Value =
        serde_json::from_slice(&rtgpu(&["analyze", "--json", &example("quickstart.toml")]).stdout)
            .expect("json");
    for (t, p) in rep["tasks"].as_array().expect("tasks").iter().zip(tasks) {
        let budget: u64 = p["pieces"]
            .as_array()
            .expect("pieces")
            .iter()
            .map(|x| x["budget"].as_u64().expect("budget"))
            .sum();
        assert_eq!(Some(budget), t["wcet"].as_u64(), "{}", t["name"]);
        assert!(p["sched_fifo_priority"].as_u64().is_some());
    }
    assert!(
        tasks
            .iter()
            .any(|t| t["pieces"].as_array().is_some_and(|p| p.len() > 1)),
        "the quickstart plan contains a split task"
    );
}

#[test]
fn schema_is_json() {
    let o = rtgpu(&["schema"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("schema is JSON");
    assert!(v.is_object());
}

/// `--sched deadline` on analyze and simulate: every task a reservation
/// (the note says so, the plan gives each SCHED_DEADLINE parameters, the
/// simulator runs them as CBS servers); a workload that cannot be one is
/// refused naming the task; `--sched` takes only its three words.
#[test]
fn sched_deadline_is_the_same_system_in_analyze_and_simulate() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.json");
    let o = rtgpu(&[
        "analyze",
        &example("perception-1gpu.toml"),
        "--sched",
        "deadline",
        "--plan",
        plan.to_str().expect("utf8"),
    ]);
    let text = stdout(&o);
    assert!(
        text.contains("note: --sched deadline: every task thread is a SCHED_DEADLINE"),
        "{text}"
    );
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).expect("plan written")).expect("json");
    let tasks = plan["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 7);
    assert!(
        tasks
            .iter()
            .all(|t| t["reservation"]["runtime"].as_u64().is_some()),
        "{plan}"
    );
    let o = rtgpu(&[
        "simulate",
        &example("perception-1gpu.toml"),
        "--sched",
        "deadline",
        "--duration",
        "300ms",
    ]);
    assert!(
        stdout(&o).contains("SCHED_DEADLINE threads: CPU reservations (joint-control, balance"),
        "{}",
        stdout(&o)
    );
    let late = write(
        dir.path(),
        "late.toml",
        "[platform]\ncores = 1\n[[task]]\nname = \"x\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n\
         deadline = \"20 ms\"\n",
    );
    let o = rtgpu(&["analyze", &late, "--sched", "deadline"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("task x: deadline 20 ms > period 10 ms"),
        "{}",
        stderr(&o)
    );
    let o = rtgpu(&["analyze", &late, "--sched", "rr"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Outputs (issue 22): one equal to an input is refused and the input kept;
/// a missing directory is refused before the work, not after it.
#[test]
fn an_output_never_overwrites_an_input_and_is_checked_first() {
    let dir = tempfile::tempdir().expect("tmp");
    let w = write(
        dir.path(),
        "w.toml",
        "[platform]\ncores = 1\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n",
    );
    let before = std::fs::read_to_string(&w).expect("read");
    for args in [
        vec!["analyze", w.as_str(), "--plan", w.as_str()],
        vec!["analyze", w.as_str(), "--suggestion", w.as_str()],
        vec!["simulate", w.as_str(), "--csv", w.as_str()],
        vec!["simulate", w.as_str(), "--svg", w.as_str()],
    ] {
        let o = rtgpu(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&o).contains("would overwrite the input"),
            "{}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read_to_string(&w).expect("read"),
            before,
            "{args:?}"
        );
    }
    let started = std::time::Instant::now();
    let o = rtgpu(&[
        "run",
        &w,
        "--duration",
        "30s",
        "--no-realtime",
        "--csv",
        "/nonexistent/x.csv",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the directory /nonexistent does not exist"),
        "{}",
        stderr(&o)
    );
    assert!(
        started.elapsed().as_secs() < 20,
        "refused before the 30 s run"
    );
    // A plan is written whole, next to nothing else.
    let plan = dir.path().join("p.json");
    let o = rtgpu(&["analyze", &w, "--plan", plan.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

/// `-` reads standard input (issue 23): `rtgpu analyze -`, with errors
/// naming `<stdin>`.
#[test]
fn a_dash_reads_the_workload_from_standard_input() {
    use std::io::Write as _;
    let run = |text: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rtgpu"))
            .args(["analyze", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("written");
        child.wait_with_output().expect("exits")
    };
    let o = run(&std::fs::read_to_string(example("quickstart.toml")).expect("example"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("SCHEDULABLE"), "{}", stdout(&o));
    let o = run("[platform]\ncores = 1\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = 10\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("<stdin>:6:10:"), "{}", stderr(&o));
}

/// Two GPUs, static assignment: the round robin puts the urgent x beside
/// z's long kernel; fixing x alone on a GPU schedules all three.
const ROUND_ROBIN_FAILS: &str = "[[platform.cluster]]\nname = \"c\"\ncores = 2\n\
gpus = [\"g0\", \"g1\"]\n[[platform.gpu]]\nname = \"g0\"\n[[platform.gpu]]\nname = \"g1\"\n\
[overheads]\nbase = \"zero\"\n[policy]\ncpu_scheduler = \"C-FP\"\ngpu_allocator = \"static\"\n\
[[task]]\nname = \"x\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\ngpu = { kernels = [\"8 ms\"] }\n\
[[task]]\nname = \"y\"\nwcet = \"1 ms\"\nperiod = \"20 ms\"\ngpu = { kernels = [\"1 ms\"] }\n\
[[task]]\nname = \"z\"\nwcet = \"1 ms\"\nperiod = \"100 ms\"\ngpu = { kernels = [\"8 ms\"] }\n";

#[test]
fn the_suggested_gpu_setting_is_written_as_a_workload_that_holds() {
    let dir = tempfile::tempdir().expect("tmp");
    let w = write(dir.path(), "w.toml", ROUND_ROBIN_FAILS);
    let out = dir.path().join("suggested.toml");
    let o = rtgpu(&["analyze", &w, "--suggestion", &out.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("`device` fixing each GPU task's GPU (x on g"),
        "{text}"
    );
    assert!(text.contains("suggested workload written to"), "{text}");
    let written = std::fs::read_to_string(&out).expect("the suggestion is written");
    assert!(written.contains("device = \"g"), "{written}");
    // The written file analyses as schedulable, and simulates without a
    // miss beyond its bounds.
    let again = rtgpu(&["analyze", &out.to_string_lossy()]);
    assert_eq!(again.status.code(), Some(0), "{}", stdout(&again));
    let sim = rtgpu(&["simulate", &out.to_string_lossy(), "--duration", "1s"]);
    assert_eq!(sim.status.code(), Some(0), "{}", stdout(&sim));
    // Nothing better than a schedulable workload: nothing written.
    let none = dir.path().join("none.toml");
    let o = rtgpu(&[
        "analyze",
        &out.to_string_lossy(),
        "--suggestion",
        &none.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("nothing written"), "{}", stderr(&o));
    assert!(!none.exists());
}
