//! `scale`: how the cost of the P-FP analysis grows with the number of tasks
//! (issue 24), and the partitioner before and after issue 24 side by side.
//!
//! ```text
//! cargo run --release -p rtgpu-bench --bin scale -- [--n 100,1000,...] [--m 4,8,...]
//!     [--reference-max N] [--csv PATH]
//! cargo run --release -p rtgpu-bench --bin scale -- --emit-toml N M PATH
//! ```
//!
//! Task sets: n tasks on m cores, UUniFast utilizations summing to 0.7·m,
//! periods log-uniform in 1 ms .. 100 ms, implicit deadlines
//! ([`uunifast_tasks`]), P-FP with PDMS_HPTS_DS, zero overheads. Per (m, n):
//! - `analyze`: CPU time of `rtgpu analyze`'s analysis of the workload
//!   ([`analyze`]: partitioning, per-core RTA, bounds, the report; the TOML
//!   is parsed before timing);
//! - `partition`: CPU time of [`partition`] alone, and of the pre-issue-24
//!   partitioner on the same set ([`with_reference_insertion`], for
//!   n ≤ `--reference-max`), with their ratio; both results are compared
//!   and must be equal.
//!
//! Small cases repeat until 0.3 s have passed; the best of three rounds is
//! kept. `--emit-toml` writes one such workload file, for timing the
//! `rtgpu analyze` command itself.

use std::fmt::Write as _;
use std::hint::black_box;

use rtgpu_analysis::partition::{partition, with_reference_insertion, Heuristic};
use rtgpu_analysis::workload::analyze;
use rtgpu_bench::{parse_list, task_set, usage_exit, workload_toml, write_or_exit};
use rtgpu_model::parse_workload;

/// CPU time of this process, in seconds.
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// CPU seconds per call of `f`: repeated until 0.3 s have passed, best of
/// three rounds (one round when a single call takes over a second).
fn time<R>(mut f: impl FnMut() -> R) -> f64 {
    let mut best = f64::INFINITY;
    for round in 0..3 {
        let start = cpu_seconds();
        let mut calls = 0u32;
        loop {
            black_box(f());
            calls += 1;
            let spent = cpu_seconds() - start;
            if spent >= 0.3 {
                best = best.min(spent / calls as f64);
                break;
            }
        }
        if round == 0 && best > 1.0 {
            break;
        }
    }
    best
}

fn list(arg: Option<String>, what: &str) -> Vec<usize> {
    parse_list(arg.as_deref(), what).unwrap_or_else(|e| usage(&e))
}

fn main() {
    let mut ns = vec![100, 300, 1_000, 3_000, 10_000, 30_000, 100_000];
    let mut ms = vec![4, 8, 16, 32, 64];
    let mut reference_max = 10_000;
    let mut csv_path: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--n" => ns = list(args.next(), "--n"),
            "--m" => ms = list(args.next(), "--m"),
            "--reference-max" => {
                reference_max = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| usage("--reference-max needs a number"))
            }
            "--csv" => csv_path = Some(args.next().unwrap_or_else(|| usage("--csv needs a path"))),
            "--emit-toml" => {
                let n = list(args.next(), "--emit-toml N");
                let m = list(args.next(), "--emit-toml M");
                let path = args.next().unwrap_or_else(|| usage("--emit-toml N M PATH"));
                let (n, m) = (n[0], m[0]);
                if let Err(e) = std::fs::write(&path, workload_toml(&task_set(n, m), m, "P-FP")) {
                    eprintln!("scale: cannot write {path}: {e}");
                    std::process::exit(1);
                }
                return;
            }
            "-h" | "--help" => usage(""),
            other => usage(&format!("unknown argument `{other}`")),
        }
    }
    let mut csv = String::from("m,n,analyze_s,partition_s,reference_s,schedulable\n");
    println!(
        "scale: P-FP PDMS_HPTS_DS, U = 0.7·m, T log-uniform 1..100 ms; CPU seconds per analysis"
    );
    println!(
        "{:>4} {:>7} {:>12} {:>12} {:>14} {:>9} {:>6}",
        "m", "n", "analyze", "partition", "partition old", "old/new", "sched"
    );
    for &m in &ms {
        for &n in &ns {
            let tasks = task_set(n, m);
            let workload = match parse_workload(&workload_toml(&tasks, m, "P-FP"), "<scale>") {
                Ok(w) => w,
                Err(e) => {
                    eprintln!("scale: generated workload rejected: {e}");
                    std::process::exit(1);
                }
            };
            let analyze_s = time(|| analyze(&workload));
            let h = Heuristic::PdmsHptsDs;
            let new = partition(&tasks, m, h);
            let partition_s = time(|| partition(&tasks, m, h));
            let reference_s = if n <= reference_max {
                let old = with_reference_insertion(|| partition(&tasks, m, h));
                assert_eq!(old, new, "m={m} n={n}: the partitions differ");
                Some(with_reference_insertion(|| {
                    time(|| partition(&tasks, m, h))
                }))
            } else {
                None
            };
            let (old, ratio) = match reference_s {
                Some(r) => (format!("{r:.6}"), format!("{:.1}x", r / partition_s)),
                None => ("-".into(), "-".into()),
            };
            println!(
                "{m:>4} {n:>7} {analyze_s:>12.6} {partition_s:>12.6} {old:>14} {ratio:>9} {:>6}",
                new.schedulable
            );
            let _ = writeln!(
                csv,
                "{m},{n},{analyze_s:.9},{partition_s:.9},{},{}",
                reference_s.map_or(String::new(), |r| format!("{r:.9}")),
                new.schedulable
            );
        }
    }
    write_or_exit(csv_path.as_deref(), &csv, "scale");
}

fn usage(err: &str) -> ! {
    usage_exit(
        "scale",
        "usage: scale [--n N,N,...] [--m M,M,...] [--reference-max N] [--csv PATH]\n       \
         scale --emit-toml N M PATH",
        err,
    )
}
