//! The reliability suite's command-line part (issue 22; docs/testing.md,
//! "Reliability suite"): many writers at once on one output, a full disk
//! under every writing command, and signal storms on `rtgpu run`. Every
//! test is named `reliability_*`: `scripts/test.sh` runs them in their own
//! step through `scripts/reliability.sh`. Counts are the suite's;
//! `RTGPU_RELIABILITY_SCALE=N` multiplies them. Each test prints what it
//! tried (`--nocapture`).

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn scale() -> usize {
    std::env::var("RTGPU_RELIABILITY_SCALE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1)
}

fn rtgpu() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rtgpu"))
}

fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A small pseudo-random sequence (xorshift), fixed seed: reproducible.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// 8 processes at once write the same `--plan` and the same
/// `simulate --csv` (issue 22: two `--plan` writers made invalid JSON):
/// after every round each file is whole (the one a single writer makes)
/// and no temporary file is left.
#[test]
fn reliability_concurrent_writers_leave_one_whole_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let w = example("control-2core.toml");
    let plan = dir.path().join("plan.json");
    let csv = dir.path().join("jobs.csv");
    let (plan_s, csv_s) = (plan.to_str().expect("utf8"), csv.to_str().expect("utf8"));
    let plan_args = ["analyze", &w, "--plan", plan_s];
    let csv_args = ["simulate", &w, "--duration", "2 s", "--csv", csv_s];
    // What one writer alone makes.
    for args in [&plan_args[..], &csv_args[..]] {
        let o = rtgpu().args(args).output().expect("rtgpu runs");
        assert!(
            o.status.code().is_some_and(|c| c <= 1),
            "{}",
            text(&o.stderr)
        );
    }
    let want_plan = std::fs::read(&plan).expect("plan");
    let want_csv = std::fs::read(&csv).expect("csv");
    serde_json::from_slice::<serde_json::Value>(&want_plan).expect("plan is JSON");
    let rounds = 10 * scale();
    let writers = 8;
    for round in 0..rounds {
        let children: Vec<Child> = (0..writers)
            .map(|i| {
                let args = if i % 2 == 0 {
                    &plan_args[..]
                } else {
                    &csv_args[..]
                };
                rtgpu()
                    .args(args)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("rtgpu runs")
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().expect("wait");
            assert!(
                o.status.code().is_some_and(|c| c <= 1),
                "round {round}: {}",
                text(&o.stderr)
            );
        }
        assert_eq!(
            std::fs::read(&plan).expect("plan"),
            want_plan,
            "round {round}"
        );
        assert_eq!(std::fs::read(&csv).expect("csv"), want_csv, "round {round}");
        assert_eq!(
            listing(dir.path()),
            ["jobs.csv", "plan.json"],
            "round {round}"
        );
    }
    eprintln!(
        "reliability: {rounds} rounds of {writers} concurrent writers ({} processes), every file whole, no temporary left",
        rounds * writers
    );
}

/// Runs `cmd` with its files capped at `limit` bytes (RLIMIT_FSIZE, with
/// SIGXFSZ ignored so a write fails with EFBIG as on a full disk).
fn with_full_disk(cmd: &mut Command, limit: u64) -> Output {
    // SAFETY: between fork and exec, only setrlimit and signal
    // (async-signal-safe).
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    cmd.output().expect("rtgpu runs")
}

/// Every writing command on a disk that fills up part way through its
/// output (issue 22: `simulate --csv/--trace` destroyed the old file and
/// left a torn one; `--plan` left `PATH.tmp` behind): a clear error
/// naming the file, the old file intact, no temporary left.
#[test]
fn reliability_a_full_disk_loses_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let w = example("control-2core.toml");
    let trace = format!(
        "{}/../latency/tests/fixtures/host-perf-script.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = |name: &str| -> PathBuf { dir.path().join(name) };
    let cases: Vec<(&str, Vec<String>, PathBuf)> = vec![
        (
            "analyze --plan",
            vec!["analyze".into(), w.clone(), "--plan".into()],
            out("plan.json"),
        ),
        (
            "simulate --csv",
            vec![
                "simulate".into(),
                w.clone(),
                "--duration".into(),
                "2 s".into(),
                "--csv".into(),
            ],
            out("jobs.csv"),
        ),
        (
            "simulate --trace",
            vec![
                "simulate".into(),
                w.clone(),
                "--duration".into(),
                "2 s".into(),
                "--trace".into(),
            ],
            out("trace.json"),
        ),
        (
            "simulate --svg",
            vec![
                "simulate".into(),
                w.clone(),
                "--duration".into(),
                "200 ms".into(),
                "--svg".into(),
            ],
            out("chart.svg"),
        ),
        (
            "latency report --occurrences",
            vec![
                "latency".into(),
                "report".into(),
                trace,
                "--occurrences".into(),
            ],
            out("occ.csv"),
        ),
    ];
    let old = b"the previous output, which must survive\n";
    let mut tried = 0;
    for (what, args, path) in &cases {
        // What it writes with room to spare.
        let o = rtgpu()
            .args(args)
            .arg(path)
            .stdout(Stdio::null())
            .output()
            .expect("runs");
        assert!(
            o.status.code().is_some_and(|c| c <= 1),
            "{what}: {}",
            text(&o.stderr)
        );
        let full = std::fs::metadata(path).expect("written").len();
        assert!(full > 64, "{what}: {full} bytes");
        let mut limits = vec![0, 1, full / 2, full - 1];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ full);
        limits.extend((0..4 * scale()).map(|_| rng.below(full)));
        for limit in limits {
            std::fs::write(path, old).expect("old output");
            let o = with_full_disk(rtgpu().args(args).arg(path), limit);
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{what} at {limit} bytes: {err}");
            assert!(
                err.contains("cannot write") && err.contains(&path.display().to_string()),
                "{what} at {limit} bytes: {err}"
            );
            assert_eq!(std::fs::read(path).expect("old"), old, "{what} at {limit}");
            assert_eq!(
                listing(dir.path()).len(),
                cases.iter().filter(|c| c.2.exists()).count(),
                "{what} at {limit} bytes left a temporary: {:?}",
                listing(dir.path())
            );
            tried += 1;
        }
    }
    eprintln!(
        "reliability: {tried} writes cut short by a full disk ({} commands), every old output intact, no temporary left",
        cases.len()
    );
}

/// SIGINT and SIGTERM at random moments of `rtgpu run` (the first second
/// included, and a second signal soon after the first): it stops
/// releasing, prints its summary, writes a whole CSV, and exits 0 or 1.
#[test]
fn reliability_signal_storm_on_rtgpu_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let csv = dir.path().join("jobs.csv");
    let w = example("control-2core.toml");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let rounds = 6 * scale();
    let mut doubled = 0;
    for round in 0..rounds {
        let _ = std::fs::remove_file(&csv);
        let child = rtgpu()
            .args([
                "run",
                &w,
                "--duration",
                "60s",
                "--no-realtime",
                "--overheads",
                "workload",
                "--csv",
                csv.to_str().expect("utf8"),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rtgpu runs");
        let sig = if round % 2 == 0 {
            libc::SIGTERM
        } else {
            libc::SIGINT
        };
        std::thread::sleep(Duration::from_millis(300 + rng.below(1200)));
        let pid = child.id() as libc::pid_t;
        let sent = Instant::now();
        // SAFETY: our own child, not yet reaped.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
        if round % 3 == 2 {
            std::thread::sleep(Duration::from_millis(rng.below(50)));
            // SAFETY: as above (a child that exited is a zombie until reaped).
            unsafe { libc::kill(pid, libc::SIGTERM) };
            doubled += 1;
        }
        let o = child.wait_with_output().expect("rtgpu exits");
        let out = text(&o.stdout);
        assert!(
            sent.elapsed() < Duration::from_secs(20),
            "round {round}: slow stop"
        );
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "round {round}: {:?} {out} {}",
            o.status,
            text(&o.stderr)
        );
        assert!(out.contains("stopped by a signal"), "round {round}: {out}");
        let rows = std::fs::read_to_string(&csv).expect("CSV written");
        assert!(
            rows.ends_with('\n') && rows.lines().count() > 1,
            "round {round}"
        );
        let cols = rows.lines().next().map_or(0, |h| h.split(',').count());
        assert!(
            rows.lines().all(|l| l.split(',').count() == cols),
            "round {round}: a torn row"
        );
    }
    eprintln!(
        "reliability: {rounds} signals to rtgpu run ({doubled} followed by a second), every run summarised with a whole CSV"
    );
}
