//! CPU reservations (`reservation = true`): SCHED_DEADLINE threads above
//! every fixed-priority task. The other tasks are analysed with each
//! reservation charged as a bandwidth server on every core; the
//! reservations by the G-EDF density test. Zero overheads; every number is
//! derived by hand in the comments.

use rtgpu_analysis::workload::{analyze, TaskVerdict, Verdict};

const MS: u64 = 1_000_000;

fn workload(cores: u32, tasks: &str) -> rtgpu_model::Workload {
    let text = format!(
        "name = \"reservations\"\n[platform]\ncores = {cores}\n[overheads]\nbase = \"zero\"\n{tasks}"
    );
    rtgpu_model::parse_workload(&text, "r.toml").expect("valid workload")
}

/// One core: reservation r (C = 1 ms, T = 5 ms) declared before the
/// fixed-priority task t (C = 2 ms, T = 10 ms). r's runtime is C + 200 us
/// (the margin's floor) = 1.2 ms: a server Q = 1.2 ms, T = 5 ms, jitter
/// 3.8 ms above t: R = 2 + ⌈(R + 3.8)/5⌉·1.2; R = 3.2 gives
/// 2 + 2·1.2 = 4.4, R = 4.4 gives ⌈8.2/5⌉ = 2 again: t's bound is 4.4 ms
/// (2 ms alone). r alone on one core has density 0.24 <= 1: it meets its
/// 5 ms deadline.
#[test]
fn a_reservation_is_charged_on_the_fixed_priority_tasks_and_planned_as_deadline() {
    let w = workload(
        1,
        "[[task]]\nname = \"r\"\nwcet = \"1 ms\"\nperiod = \"5 ms\"\nreservation = true\n\
         [[task]]\nname = \"t\"\nwcet = \"2 ms\"\nperiod = \"10 ms\"\n",
    );
    let (report, plan) = analyze(&w);
    assert_eq!(report.verdict, Verdict::Schedulable, "{}", report.reason);
    assert_eq!(report.tasks[0].name, "r");
    assert_eq!(report.tasks[0].response_time, Some(5 * MS));
    assert_eq!(report.tasks[0].verdict, TaskVerdict::MeetsDeadline);
    assert_eq!(report.tasks[1].name, "t");
    assert_eq!(report.tasks[1].response_time, Some(4_400_000));
    let r = plan.tasks[0].reservation.expect("r is a reservation");
    assert_eq!(
        (r.runtime, r.deadline, r.period),
        (1_200_000, 5 * MS, 5 * MS)
    );
    assert_eq!(plan.tasks[0].sched_fifo_priority, None);
    assert!(plan.tasks[1].reservation.is_none());
    assert!(plan.tasks[1].sched_fifo_priority.is_some());
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("G-EDF density test")),
        "{:?}",
        report.notes
    );
    // Without the reservation, t alone: 2 ms.
    let alone = workload(
        1,
        "[[task]]\nname = \"t\"\nwcet = \"2 ms\"\nperiod = \"10 ms\"\n",
    );
    assert_eq!(analyze(&alone).0.tasks[0].response_time, Some(2 * MS));
}

/// Two reservations of C = 2.5 ms, T = 5 ms (runtime 3 ms, density 0.6)
/// on one core: 1.2 > 1, the density test fails; on two cores
/// 1.2 + 0.6 = 1.8 <= 2 passes.
#[test]
fn reservations_beyond_the_density_bound_are_not_schedulable() {
    let two = "[[task]]\nname = \"r\"\ncount = 2\nwcet = \"2.5 ms\"\nperiod = \"5 ms\"\nreservation = true\n";
    let (report, plan) = analyze(&workload(1, two));
    assert_eq!(report.verdict, Verdict::NotSchedulable);
    assert!(report.reason.contains("density test"), "{}", report.reason);
    assert!(report.tasks.iter().all(|t| t.response_time.is_none()));
    assert_eq!(plan.tasks.len(), 2);
    let (report, _) = analyze(&workload(2, two));
    assert_eq!(report.verdict, Verdict::Schedulable, "{}", report.reason);
    assert_eq!(report.tasks[1].response_time, Some(5 * MS));
}

/// A jittered reservation: the kernel sees the job only when its thread
/// wakes, up to J after the release, and the CBS counts the deadline from
/// there, so the plan's deadline is D − J (2 ms of jitter on D = 10 ms:
/// 8 ms) and the runtime fits in it. A WCET above D − J cannot be served
/// in time: the verdict says so and names the task.
#[test]
fn a_jittered_reservation_gets_the_deadline_less_its_jitter() {
    let w = workload(
        1,
        "[[task]]\nname = \"r\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\njitter = \"2 ms\"\n\
         reservation = true\n",
    );
    let (report, plan) = analyze(&w);
    assert_eq!(report.verdict, Verdict::Schedulable, "{}", report.reason);
    let r = plan.tasks[0].reservation.expect("r is a reservation");
    assert_eq!(
        (r.runtime, r.deadline, r.period),
        (1_200_000, 8 * MS, 10 * MS)
    );
    assert_eq!(report.tasks[0].response_time, Some(10 * MS));
    let late = workload(
        1,
        "[[task]]\nname = \"r\"\nwcet = \"3 ms\"\nperiod = \"10 ms\"\ndeadline = \"4 ms\"\n\
         jitter = \"2 ms\"\nreservation = true\n",
    );
    let (report, plan) = analyze(&late);
    assert_eq!(report.verdict, Verdict::NotSchedulable);
    assert!(
        report.reason.contains("r have a WCET above their runtime"),
        "{}",
        report.reason
    );
    assert_eq!(plan.tasks[0].reservation.map(|r| r.runtime), Some(2 * MS));
    assert_eq!(report.tasks[0].verdict, TaskVerdict::MissesDeadline);
}
