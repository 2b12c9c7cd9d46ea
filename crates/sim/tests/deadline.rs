//! SCHED_DEADLINE threads in the simulator (CPU reservations, klmirqd's
//! independent servers) on workloads whose outcome is computed by hand,
//! each checked against the analysed bound too.

use rtgpu_analysis::server::Server;
use rtgpu_analysis::workload::{analyze, analyze_with, klmirqd_independent, Verdict};
use rtgpu_model::{parse_workload, Workload};
use rtgpu_sim::{simulate, Klmirqd, SimConfig, SimResult};

fn wl(text: &str) -> Workload {
    parse_workload(text, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn run(w: &Workload, klmirqd: Klmirqd) -> SimResult {
    simulate(
        w,
        &SimConfig {
            duration: 100_000_000,
            record_jobs: true,
            klmirqd,
            ..SimConfig::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

const ONE_CORE: &str = r#"
[platform]
cores = 1

[overheads]
base = "zero"

[policy]
cpu_scheduler = "P-FP"
partitioning = "first-fit"
priority = "DM"
"#;

/// A reservation runs before the most urgent fixed-priority task, and that
/// task's bound charges it (runtime C + 200 us every T, jitter T − Q).
#[test]
fn a_reservation_runs_above_every_fixed_priority_task() {
    let w = wl(&format!(
        r#"{ONE_CORE}
[[task]]
name = "urgent"
wcet = "4 ms"
period = "10 ms"
deadline = "8 ms"

[[task]]
name = "reserved"
wcet = "1 ms"
period = "10 ms"
reservation = true
"#
    ));
    let r = run(&w, Klmirqd::Dependent);
    assert_eq!(r.misses, 0);
    assert_eq!(r.tasks[1].max_response, 1_000_000);
    assert_eq!(r.tasks[0].max_response, 5_000_000);
    let (report, _) = analyze(&w);
    assert_eq!(report.verdict, Verdict::Schedulable);
    // R = 4 + ⌈(R + 8.8)/10⌉·1.2 ms = 6.4 ms.
    assert_eq!(report.tasks[0].response_time, Some(6_400_000));
    assert_eq!(report.tasks[1].response_time, Some(10_000_000));
}

/// Two reservations on one core: the earlier absolute deadline runs first,
/// whatever the order of the file.
#[test]
fn reservations_share_a_core_by_earliest_deadline() {
    let w = wl(&format!(
        r#"{ONE_CORE}
[[task]]
name = "late"
wcet = "3 ms"
period = "10 ms"
reservation = true

[[task]]
name = "early"
wcet = "2 ms"
period = "10 ms"
deadline = "4 ms"
reservation = true
"#
    ));
    let r = run(&w, Klmirqd::Dependent);
    assert_eq!(r.misses, 0);
    assert_eq!(r.tasks[1].max_response, 2_000_000);
    assert_eq!(r.tasks[0].max_response, 5_000_000);
    let (report, _) = analyze(&w);
    assert_eq!(report.verdict, Verdict::Schedulable);
}

/// More reservations than cores, and one whose runtime the kernel's
/// parameters cap: with two cores, three reservations of 6 ms every 10 ms
/// cannot all run by their deadlines (the density test fails), and the
/// simulator shows the miss the analysis predicts.
#[test]
fn an_overloaded_set_of_reservations_misses() {
    let w = wl(r#"
[platform]
cores = 2

[overheads]
base = "zero"

[policy]
cpu_scheduler = "G-FP"

[[task]]
name = "r"
count = 3
wcet = "6 ms"
period = "10 ms"
reservation = true
"#);
    let (report, _) = analyze(&w);
    assert_eq!(report.verdict, Verdict::NotSchedulable);
    let r = run(&w, Klmirqd::Dependent);
    assert!(r.misses > 0, "3 × 0.62 of 2 cores under global EDF");
}

const ONE_GPU: &str = r#"
[[platform.cluster]]
name = "c0"
cores = 1
gpus = ["gpu0"]

[[platform.gpu]]
name = "gpu0"
copy_engines = 1

[overheads]
base = "zero"
bh = "30 us"

[policy]
cpu_scheduler = "P-FP"
partitioning = "first-fit"
interrupts = "klmirqd"

[[task]]
name = "vision"
wcet = "2 ms"
period = "20 ms"
gpu = { kernels = ["1 ms"], interrupts = 1 }
"#;

/// klmirqd's independent mode: a 30 us bottom half in a server of 10 us
/// every 1 ms runs 10 us in each of three server periods. The job: 1 ms of
/// CPU, the kernel until 2 ms, its completion's bottom half from 2 ms:
/// 10 us, throttled until the replenishment at 3 ms (the deadline 2 ms +
/// 1 ms less D plus T), 10 us, again at 4 ms, done at 4.01 ms; then its
/// last 1 ms of CPU: 5.01 ms. In dependent mode the bottom half runs at
/// once: 3.03 ms. The analysed bound charges the server's latency,
/// (⌈30/10⌉ + 1) · 1 ms, per interrupt.
#[test]
fn a_spent_server_budget_delays_the_completion() {
    let w = wl(ONE_GPU);
    let dependent = run(&w, Klmirqd::Dependent);
    assert_eq!(dependent.tasks[0].max_response, 3_030_000);
    let server = Server::new(10_000, 1_000_000);
    let r = run(&w, Klmirqd::Independent(Some(server)));
    assert_eq!(r.tasks[0].max_response, 5_010_000);
    assert_eq!(r.misses, 0);
    let (report, _) = analyze_with(&w, &klmirqd_independent(&w, Some(server)));
    let bound = report.tasks[0].response_time.expect("bounded");
    assert!(bound >= 5_010_000, "bound {bound}");
    // A server whose runtime covers the bottom half serves it at once.
    let roomy = run(
        &w,
        Klmirqd::Independent(Some(Server::new(100_000, 1_000_000))),
    );
    assert_eq!(roomy.tasks[0].max_response, 3_030_000);
}

/// The server is above every fixed-priority thread: a CPU hog of the most
/// urgent priority does not delay the bottom half (in dependent mode it
/// runs at its owner's priority, below the hog).
#[test]
fn the_server_runs_above_a_more_urgent_hog() {
    let w = wl(&format!(
        r#"{ONE_GPU}
[[task]]
name = "hog"
wcet = "2.5 ms"
period = "4 ms"
"#
    ));
    // Timeline (DM: hog first). Hog 0..2.5; vision CPU 2.5..3.5; kernel
    // 3.5..4.5; hog's second job 4..6.5 (vision's kernel on the GPU
    // meanwhile). At 4.5 the completion: independent, the server preempts
    // the hog for 30 us (4.5..4.53), vision's last CPU waits for the hog
    // (done 6.53) and runs 6.53..7.53. Dependent: the bottom half waits at
    // vision's priority until 6.5, runs to 6.53, then vision 6.53..7.53.
    let dependent = run(&w, Klmirqd::Dependent);
    let independent = run(
        &w,
        Klmirqd::Independent(Some(Server::new(100_000, 1_000_000))),
    );
    assert_eq!(dependent.tasks[0].max_response, 7_530_000);
    assert_eq!(independent.tasks[0].max_response, 7_530_000);
    // The hog pays the server's 30 us in the independent mode only.
    assert_eq!(dependent.tasks[1].max_response, 2_500_000);
    assert_eq!(independent.tasks[1].max_response, 2_530_000);
}
