//! Real threads: a task split by PDMS_HPTS_DS (seed 003) really runs its
//! first piece on one core and its second on the next, each for its budget
//! of thread CPU time, released at the fixed offset the analysis assumed.

use rtgpu_runtime::run::{run, RunConfig};

const WORKLOAD: &str = r#"
[platform]
cores = 2
# Overhead-oblivious: the piece budgets are then exactly the split WCET
# that the runtime spins (with Table III charged, budgets exceed it).
[overheads]
base = "zero"
[policy]
cpu_scheduler = "P-FP"
partitioning = "PDMS_HPTS_DS"
[[task]]
name = "a"
wcet = "6 ms"
period = "20 ms"
[[task]]
name = "b"
wcet = "6 ms"
period = "20 ms"
[[task]]
name = "c"
wcet = "12 ms"
period = "40 ms"
[[task]]
name = "d"
wcet = "12 ms"
period = "40 ms"
"#;

#[test]
fn a_split_task_changes_cores_between_its_pieces() {
    let cpus = rtgpu_runtime::os::affinity(0).expect("affinity");
    if cpus.len() < 2 {
        panic!("this test needs 2 CPUs; this machine allows {cpus:?}");
    }
    let w = rtgpu_model::parse_workload(WORKLOAD, "split.toml").expect("valid");
    let (report, plan) = rtgpu_analysis::workload::analyze(&w);
    // The analysis splits `a`: 2 ms on core 0 from +0, then 4 ms on core 1
    // from +2 ms (see `rtgpu analyze` on this file).
    let a = &plan.tasks[0];
    assert_eq!(a.pieces.len(), 2, "{a:?}");
    assert_ne!(a.pieces[0].core, a.pieces[1].core);
    let out = run(&w, &report, &plan, &RunConfig::new(200_000_000, true)).expect("runs");
    let jobs: Vec<_> = out.jobs.iter().filter(|j| j.task == 0).collect();
    assert_eq!(jobs.len(), 10);
    for j in &jobs {
        assert_eq!(j.pieces.len(), 2, "{j:?}");
        // Each piece does its budget of the job's 6 ms of work, or what is
        // left of it (the budgets include the overheads the analysis charges,
        // so they add up to more than the work itself).
        let mut left = w.tasks[0].wcet;
        for (p, planned) in j.pieces.iter().zip(&a.pieces) {
            let cpu = out.core_map[planned.core as usize];
            assert_eq!(p.cpu_at_start, Some(cpu), "{j:?}");
            assert_eq!(p.cpu_at_end, Some(cpu), "{j:?}");
            let work = left.min(planned.budget);
            left -= work;
            assert!(p.cpu_time >= work, "{p:?} vs {planned:?}");
            // Never released before its fixed offset.
            assert!(p.start >= j.release + planned.release_offset, "{j:?}");
        }
    }
    assert_eq!(out.tasks[0].pieces_off_core, 0);
    // Every other task's single piece stayed on its core too.
    assert!(
        out.tasks.iter().all(|t| t.pieces_off_core == 0),
        "{:?}",
        out.tasks
    );
}
