//! What the benchmark binaries share: issue 24's scaling task sets and their
//! workload files (`scale`, `sim_scale`).

use std::fmt::Write as _;

use rtgpu_analysis::generate::{uunifast_tasks, Rng};
use rtgpu_analysis::Task;

/// CPU seconds the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`):
/// what a simulation or analysis cost, whatever else loads the machine.
pub fn thread_cpu() -> f64 {
    rtgpu_runtime::os::thread_cpu_time() as f64 * 1e-9
}

/// A comma-separated list of numbers (or other `FromStr` values) given to
/// option `what`; `Err` naming the option and the item it does not read.
pub fn parse_list<T: std::str::FromStr>(arg: Option<&str>, what: &str) -> Result<Vec<T>, String> {
    let Some(a) = arg else {
        return Err(format!("{what} needs a comma-separated list"));
    };
    a.split(',')
        .map(|x| {
            x.trim()
                .parse()
                .map_err(|_| format!("{what}: `{}` is not understood", x.trim()))
        })
        .collect()
}

/// Writes `text` to `path` when one was given; on failure says so as
/// `program` and exits with status 1.
pub fn write_or_exit(path: Option<&str>, text: &str, program: &str) {
    if let Some(path) = path {
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("{program}: cannot write {path}: {e}");
            std::process::exit(1);
        }
    }
}

/// Prints `err` (as `program`, when not empty) and the usage `synopsis`,
/// then exits: status 0 for a plain `--help` (empty `err`), 2 otherwise.
pub fn usage_exit(program: &str, synopsis: &str, err: &str) -> ! {
    if !err.is_empty() {
        eprintln!("{program}: {err}");
    }
    eprintln!("{synopsis}");
    std::process::exit(if err.is_empty() { 0 } else { 2 })
}

/// Issue 24's task sets: n tasks, Σ U = 0.7·m (UUniFast), T log-uniform in
/// 1 .. 100 ms, implicit deadlines; the same set for the same (n, m).
pub fn task_set(n: usize, m: usize) -> Vec<Task> {
    let mut rng = Rng::new(24_000 + (n as u64) * 131 + m as u64);
    uunifast_tasks(&mut rng, n, 0.7 * m as f64, 1_000_000, 100_000_000)
}

/// The workload file of a task set on `m` cores with zero overheads, under
/// `scheduler`: `"P-FP"` (PDMS_HPTS_DS, deadline-monotonic) or one of the
/// other CPU schedulers (`"G-EDF"`, ...; one cluster of every core).
pub fn workload_toml(tasks: &[Task], m: usize, scheduler: &str) -> String {
    let policy = if scheduler == "P-FP" {
        "cpu_scheduler = \"P-FP\"\npartitioning = \"pdms-hpts-ds\"\npriority = \"DM\"\n".to_string()
    } else {
        format!("cpu_scheduler = \"{scheduler}\"\n")
    };
    let mut s = format!(
        "name = \"scale-n{}-m{m}\"\n\n[platform]\ncores = {m}\n\n[overheads]\nbase = \"zero\"\n\n\
         [policy]\n{policy}",
        tasks.len()
    );
    for t in tasks {
        let _ = write!(
            s,
            "\n[[task]]\nname = \"t{}\"\nwcet = \"{} ns\"\nperiod = \"{} ns\"\n",
            t.id, t.wcet, t.period
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_or_name_the_bad_item() {
        assert_eq!(
            parse_list::<usize>(Some("4, 8,16"), "--m"),
            Ok(vec![4, 8, 16])
        );
        assert_eq!(
            parse_list::<usize>(Some("4,x"), "--m"),
            Err("--m: `x` is not understood".to_string())
        );
        assert!(parse_list::<usize>(None, "--n").is_err());
        let t0 = thread_cpu();
        let spin: u64 = (0..200_000u64).map(std::hint::black_box).sum();
        assert!(spin > 0 && thread_cpu() > t0, "the thread's clock moves");
    }

    /// Every scheduler's file parses, with the set's tasks and cores.
    #[test]
    fn workload_files_parse() {
        let tasks = task_set(50, 4);
        let u: f64 = tasks.iter().map(Task::utilization).sum();
        assert!((u - 2.8).abs() < 0.01, "Σ U = 0.7·m: {u}");
        for sched in ["P-FP", "G-EDF", "C-EDF", "G-FP"] {
            let w = rtgpu_model::parse_workload(&workload_toml(&tasks, 4, sched), "<test>")
                .unwrap_or_else(|e| panic!("{sched}: {e}"));
            assert_eq!(w.tasks.len(), 50, "{sched}");
        }
    }
}
