//! `rtgpu analyze` on a whole workload file: maps the validated model
//! ([`rtgpu_model::Workload`]) onto the analyses of this crate according to
//! its `[policy]`, and assembles one [`Report`] (what the CLI prints and the
//! Python bindings return) and one deployment [`Plan`] (what `rtgpu run`
//! consumes).
//!
//! Which test decides, per CPU scheduler:
//! - P-FP: partitioning ([`crate::partition`]) with exact uniprocessor RTA per
//!   core ([`crate::fp`]); PDMS_HPTS / PDMS_HPTS_DS split tasks (seed 003).
//! - C-FP / G-FP: global fixed-priority response-time bounds per cluster
//!   ([`crate::global_fp`]).
//! - C-EDF / G-EDF: bounded tardiness per cluster ([`crate::edf`], seed 000
//!   App. B Eqs. 4-5); a hard-deadline density test is reported beside it.
//!
//! Every task's cost is inflated first with the overheads of seed 000 App. B
//! (Eqs. 6-24, [`crate::overheads`]) for the policy's interrupt handling;
//! GPU-using tasks are analysed suspension-oblivious: their GPU wait
//! (k-FMLP, GPUSync, static queue or vGPU bound, [`crate::workload_gpu`]) and
//! GPU time count as CPU demand (seed 000 App. B, seed 004 App. A). H_i
//! (Eq. 11) uses response-time windows: the deadlines under fixed priority
//! (a task set is accepted only if no deadline is missed, so until the first
//! miss no response time exceeds its deadline), p + x with the tardiness
//! fixed point under EDF. Under P-FP a lower-priority GPU holder on the same
//! core may run with an inherited priority each time a job becomes ready,
//! which is charged as extra local blocking after partitioning.
//!
//! The pipeline lives here ([`analyze_with`]: GPU bounds, charges, the
//! scheduler's test, the hold-stretch fixed point, the verdict); each
//! concern has its own module:
//! - `report` and `plan`: what the analysis returns ([`Report`], [`Plan`]);
//! - `extra`: interference beyond the workload's tasks ([`Extra`],
//!   klmirqd's independent-mode server);
//! - `groups`: clusters, the groups each scheduler analyses, GPU domains;
//! - `charges`: the overhead charges (seed 000 App. B) every driver uses;
//! - `pfp`, `gfp`, `edf`: one driver per scheduler family;
//! - `stretch`: how long bottom halves waiting for a CPU stretch GPU holds;
//! - `reservations`: CPU reservations (SCHED_DEADLINE) and their GPU
//!   wake-ups.

use rtgpu_model::{CpuScheduler, Workload};

use crate::gpu::Method;
use crate::overheads::InterruptMethod;
#[cfg(doc)]
use crate::partition;
use crate::server::{self, Server};
use crate::task::Time;
use crate::workload_gpu;

mod charges;
mod edf;
mod explain;
mod extra;
mod gfp;
mod groups;
mod pfp;
mod plan;
mod report;
mod reservations;
mod stretch;

pub use explain::{suggest, Suggestion};
pub use extra::{bottom_half_backlog, bottom_half_server, klmirqd_independent, Extra};
pub use plan::{fifo_priority, Plan, PlanTask, Reservation, PLAN_FORMAT};
pub use report::{
    scheduler_name, BoundCheck, ClusterReport, CoreReport, PieceReport, Report, TaskReport,
    TaskVerdict, Verdict,
};

use charges::{aware_test_applies, overhead_note, Cx};
use edf::analyze_edf;
use gfp::analyze_gfp;
use groups::gpu_domains;
use pfp::analyze_pfp;
use plan::make_plan;
use report::{bound_checks, task_report, verdict_word};
use reservations::{analyze_reservations, DlGpuOwner};
use stretch::{section_stretch, server_wait_per_interrupt};

/// Analyse a workload according to its policy.
pub fn analyze(w: &Workload) -> (Report, Plan) {
    analyze_with(w, &Extra::default())
}

/// [`analyze`] with `extra` interference charged: every bandwidth server
/// is charged on every core as a highest-priority sporadic task with
/// C = Q, period T and release jitter T − Q ([`crate::server`], our
/// derivation), in every response-time analysis with a higher-priority
/// demand term: the P-FP partitioning and RTA of every core, the G-FP /
/// C-FP workload bound, and the CPU interference that stretches GPU holds
/// (`section_stretch`). Under P-FP the partitioner places tasks and sizes
/// split budgets with the servers charged on every core
/// ([`partition::partition_with`]): a split's first piece gets the room its
/// response time below the servers needs and its remainder is released
/// that response time later (seed 003 §III.B), so a split does not fill a
/// core to the last nanosecond and leave none for the servers.
/// Under C-EDF / G-EDF they are not charged (the tardiness theorem has no
/// term for them): no task gets a bound (`NotAnalysed`), the verdict is
/// not schedulable, a note says why and [`Report::servers`] is empty.
pub fn analyze_with(w: &Workload, extra: &Extra) -> (Report, Plan) {
    if w.tasks.iter().any(|t| t.reservation) {
        return analyze_reservations(w, extra);
    }
    let aware = analyze_tasks(w, extra, &[]);
    // P-FP: the suspension-aware placement can lose to the oblivious test
    // on the same request-counted waits (its partitioner does not see the
    // suspension jitter its per-core re-analysis charges). Both are sound,
    // so the one that bounds more tasks decides, with its placement (what
    // the simulator and `rtgpu run` then run), and the report says so.
    let pfp = w.policy.cpu_scheduler == CpuScheduler::PartitionedFp;
    if extra.method != Method::Aware
        || !pfp
        || !w.tasks.iter().any(|t| t.uses_gpu())
        || aware.0.verdict == Verdict::Schedulable
    {
        return aware;
    }
    let counted = Extra {
        method: Method::CountedOblivious,
        ..extra.clone()
    };
    let mut alt = analyze_tasks(w, &counted, &[]);
    let score = |r: &Report| {
        (
            r.verdict == Verdict::Schedulable,
            r.tasks
                .iter()
                .filter(|t| {
                    matches!(
                        t.verdict,
                        TaskVerdict::MeetsDeadline | TaskVerdict::MeetsDeadlineIf
                    )
                })
                .count(),
        )
    };
    if score(&alt.0) > score(&aware.0) {
        alt.0.notes.push(format!(
            "the suspension-oblivious P-FP test on request-counted GPU waits bounds {} task(s), \
             the suspension-aware one {}: the former decides, with its placement",
            score(&alt.0).1,
            score(&aware.0).1
        ));
        return alt;
    }
    aware
}

/// [`analyze_with`]'s analysis of the fixed-priority or EDF tasks. The
/// workload's tasks with `reservation` set are GPU-using reservations
/// (`owners`, from [`analyze_reservations`]): they take part in the GPU
/// analysis (they request tokens and engine locks; their interrupts count
/// in H) with their holds stretched by `owners`' wake-up latencies, but in
/// no CPU analysis (their CPU demand is in `extra`'s servers); their
/// reports keep `NotAnalysed`, for the caller to bound.
fn analyze_tasks(w: &Workload, extra: &Extra, owners: &[DlGpuOwner]) -> (Report, Plan) {
    let mut notes = Vec::new();
    let servers = extra.active_servers();
    let edf_sched = matches!(
        w.policy.cpu_scheduler,
        CpuScheduler::ClusteredEdf | CpuScheduler::GlobalEdf
    );
    let charged: Vec<Server> = if edf_sched {
        Vec::new()
    } else {
        servers.clone()
    };
    let scheduler = scheduler_name(w.policy.cpu_scheduler).to_string();
    let total_utilization: f64 = w
        .tasks
        .iter()
        .map(|t| t.wcet as f64 / t.period as f64)
        .sum();
    let clusters_report = |tasks: &[TaskReport]| -> Vec<ClusterReport> {
        w.platform
            .clusters
            .iter()
            .enumerate()
            .map(|(ci, c)| ClusterReport {
                name: c.name.clone(),
                cores: c.cores,
                // A fold from +0.0: `sum()` of no floats is -0.0, which
                // would print as "-0.0000" for a cluster without tasks.
                utilization: tasks
                    .iter()
                    .filter(|t| t.cluster == Some(ci))
                    .fold(0.0, |a, t| a + t.utilization),
                tasks: tasks.iter().filter(|t| t.cluster == Some(ci)).count(),
            })
            .collect()
    };

    let imethod = workload_gpu::interrupt_method(&w.policy);
    let domains = gpu_domains(w);
    let owner_tasks: Vec<usize> = owners.iter().map(|o| o.task).collect();
    let bottom_halves = extra
        .bottom_halves
        .filter(|_| imethod == InterruptMethod::Klmirqd);
    // GPU bounds, then the scheduler's test, with every GPU holder's hold
    // stretched by what its bottom halves may wait for a CPU
    // ([`section_stretch`]); under P-FP the stretch depends on the
    // partition, which depends on the bounds: iterate until the partition
    // analysed was analysed with stretches no smaller than its own.
    let mut owner_stretch: Vec<Time> = vec![0; w.tasks.len()];
    for o in owners {
        owner_stretch[o.task] = o.hold_stretch;
    }
    let mut stretch = owner_stretch.clone();
    let mut rounds = 0;
    let mut suspension_aware;
    let (mut tasks, method, soft, cores) = loop {
        rounds += 1;
        let mut round_notes = Vec::new();
        let mut gpu =
            workload_gpu::analyze_gpus(w, &domains, &stretch, extra.method, &mut round_notes);
        if bottom_halves.is_some() {
            // Independent mode: a holder's own bottom halves wait for their
            // server too, not for its domain's tasks (server_stretch).
            for (g, &s) in gpu.iter_mut().zip(&stretch) {
                let Some(g) = g.as_mut() else { continue };
                if g.vgpu_share.is_some() && g.unbounded_because.is_none() {
                    g.unbounded_because = Some(
                        "klmirqd independent mode: the vGPU bound (seed 001) has no term for \
                         the bottom-half server's latency between a member's kernels, during \
                         which the GPU may idle"
                            .into(),
                    );
                } else if s > 0 {
                    g.bottom_half_wait = Some(s);
                }
            }
        }
        let mut tasks: Vec<TaskReport> = w.tasks.iter().map(task_report).collect();
        for (t, g) in tasks.iter_mut().zip(&gpu) {
            if let Some(why) = g.as_ref().and_then(|g| g.unbounded_because.as_ref()) {
                round_notes.push(format!("{}: GPU wait unbounded: {why}", t.name));
            }
            t.gpu = g.clone();
        }
        suspension_aware = aware_test_applies(w, extra.method);
        let cx = Cx {
            w,
            gpu: &gpu,
            method: imethod,
            aware: suspension_aware,
            servers: &charged,
            bottom_halves,
            owners: &owner_tasks,
        };
        round_notes.push(overhead_note(w, imethod, suspension_aware));
        let (method, soft, cores) = match w.policy.cpu_scheduler {
            CpuScheduler::PartitionedFp => {
                let (m, c) = analyze_pfp(&cx, &mut tasks, &mut round_notes);
                (m, false, c)
            }
            CpuScheduler::ClusteredFp | CpuScheduler::GlobalFp => {
                let global = w.policy.cpu_scheduler == CpuScheduler::GlobalFp;
                (
                    analyze_gfp(&cx, global, &mut tasks, &mut round_notes),
                    false,
                    Vec::new(),
                )
            }
            CpuScheduler::ClusteredEdf | CpuScheduler::GlobalEdf => {
                let global = w.policy.cpu_scheduler == CpuScheduler::GlobalEdf;
                (
                    analyze_edf(&cx, global, &mut tasks, &mut round_notes),
                    true,
                    Vec::new(),
                )
            }
        };
        let mut needed = section_stretch(&cx, &tasks);
        for (n, o) in needed.iter_mut().zip(&owner_stretch) {
            *n = n.saturating_add(*o);
        }
        if needed.iter().zip(&stretch).all(|(n, s)| n <= s) {
            notes.append(&mut round_notes);
            break (tasks, method, soft, cores);
        }
        if rounds >= MAX_STRETCH_ROUNDS {
            notes.append(&mut round_notes);
            notes.push(format!(
                "the GPU hold stretches (bottom halves waiting for a CPU) and the partition did \
                 not settle within {MAX_STRETCH_ROUNDS} rounds; no task is reported as meeting \
                 its deadline"
            ));
            for t in &mut tasks {
                t.response_time = None;
                t.tardiness = None;
                t.verdict = if soft {
                    TaskVerdict::UnboundedTardiness
                } else {
                    TaskVerdict::MissesDeadline
                };
            }
            break (tasks, method, soft, cores);
        }
        for (s, n) in stretch.iter_mut().zip(needed) {
            *s = (*s).max(n);
        }
    };

    // Under EDF the servers are not charged: no theorem here bounds what
    // they take from the EDF tasks (a reservation of 48 % beside an EDF
    // task of 65 % on one core overloads it, while the tardiness test of
    // the task alone says 0), so no bound is claimed.
    let unanalysed = edf_sched && !servers.is_empty();
    if unanalysed {
        for t in &mut tasks {
            t.response_time = None;
            t.tardiness = None;
            t.verdict = TaskVerdict::NotAnalysed;
        }
    }
    unbound_above_interrupt_threads(w, edf_sched, &mut tasks, &mut notes);
    unbound_split_gpu_cores(w, &mut tasks, &mut notes);
    bounds_that_depend_on_failing_tasks(w, &mut tasks, &mut notes);
    notes.extend(explain::explain_failures(w, &tasks, suspension_aware));
    let failing: Vec<&TaskReport> = tasks
        .iter()
        .filter(|t| {
            matches!(
                t.verdict,
                TaskVerdict::MissesDeadline
                    | TaskVerdict::Unplaced
                    | TaskVerdict::UnboundedTardiness
            )
        })
        .collect();
    let verdict = if failing.is_empty() && !unanalysed {
        Verdict::Schedulable
    } else {
        Verdict::NotSchedulable
    };
    if !servers.is_empty() {
        notes.push(if charged.is_empty() {
            format!(
                "{} (klmirqd independent mode, CPU reservations) run above every task: the EDF \
                 tardiness test (Devi & Anderson 2005) has no term for interference above every \
                 task, so no bound is given for the {scheduler} tasks (fixed-priority \
                 schedulers charge the servers)",
                server::describe(&servers)
            )
        } else {
            format!(
                "{} (klmirqd independent mode, CPU reservations) charged on every core above \
                 every task, ⌈(t + T − Q)/T⌉·Q each in a window t (back-to-back budgets: C = Q, \
                 jitter T − Q; our derivation, rtgpu_analysis::server); sound if each uses its \
                 budget within its period (no more SCHED_DEADLINE threads than CPUs, or the \
                 reservations' density test passes) and its runtime is enforced exactly",
                server::describe(&charged)
            )
        });
    }
    if let Some(s) = bottom_halves {
        notes.push(format!(
            "klmirqd independent: every GPU's bottom halves run in a server of {} every {}; \
             each interrupt of a GPU holder is charged {} beyond its Δbh for the server's \
             latency ((⌈W/Q⌉ + 1)·T with a backlog W of one Δbh per concurrent owner; our \
             derivation, rtgpu_analysis::server::Server::latency), in its own GPU time and in \
             its hold where it blocks others",
            duration_words(s.runtime),
            duration_words(s.period),
            duration_words(server_wait_per_interrupt(w, s)),
        ));
    }
    let with_servers = if charged.is_empty() {
        String::new()
    } else {
        format!(" with {} charged", server::describe(&charged))
    };
    let reason = if unanalysed {
        format!(
            "no bound under {scheduler} with {} above every task (the EDF tardiness test has \
             no term for them)",
            server::describe(&servers)
        )
    } else if failing.is_empty() {
        if soft {
            format!("every task has bounded tardiness under {scheduler}")
        } else {
            format!("every task meets its deadline under {scheduler}{with_servers}")
        }
    } else {
        let names: Vec<String> = failing
            .iter()
            .take(5)
            .map(|t| format!("{} ({})", t.name, verdict_word(t.verdict)))
            .collect();
        let more = if failing.len() > 5 {
            format!(" and {} more", failing.len() - 5)
        } else {
            String::new()
        };
        format!(
            "{} of {} task(s) fail{with_servers}: {}{more}",
            failing.len(),
            tasks.len(),
            names.join(", ")
        )
    };

    // The bounds are about (partitioned) fixed priority; under global or EDF
    // schedulers they would only confuse.
    let bounds = if w.policy.cpu_scheduler == CpuScheduler::PartitionedFp {
        bound_checks(w)
    } else {
        Vec::new()
    };
    let gpu_analysis =
        w.tasks
            .iter()
            .any(|t| t.uses_gpu())
            .then(|| match (extra.method, suspension_aware) {
                (Method::Oblivious, _) => {
                    "suspension-oblivious, the seeds' GPU wait bounds (seed 000 \
                 App. A-B, seed 004 App. A)"
                        .to_string()
                }
                (Method::Aware, true) => "suspension-aware, request-counted GPU waits".to_string(),
                (Method::CountedOblivious, _) => "suspension-oblivious on request-counted GPU \
                     waits (it bounds more tasks here than the suspension-aware test)"
                    .to_string(),
                // `aware_test_applies` is false only under EDF here.
                (Method::Aware, false) => "suspension-oblivious on request-counted GPU waits \
                     (the EDF tardiness test has no suspension-aware form here)"
                    .to_string(),
            });
    let plan = make_plan(w, &tasks, &scheduler, verdict);
    let report = Report {
        workload: w.name.clone(),
        scheduler,
        method,
        verdict,
        soft,
        reason,
        total_utilization,
        clusters: clusters_report(&tasks),
        tasks,
        cores,
        bounds,
        notes,
        servers: charged,
        bottom_halves,
        suspension_aware,
        gpu_analysis,
    };
    (report, plan)
}

/// Fixed-priority interrupt threads are charged as klmirqd plus every
/// bottom half for every task, which holds only while the threads run
/// above every GPU-using task; a GPU-using task at or above them delays
/// every GPU's bottom halves (a targeted search found a task at 3.8×
/// its bound). Under EDF the threads run above every job.
fn unbound_above_interrupt_threads(
    w: &Workload,
    edf_sched: bool,
    tasks: &mut [TaskReport],
    notes: &mut Vec<String>,
) {
    if let rtgpu_model::InterruptHandling::FixedPriorityThreads { priority } = w.policy.interrupts {
        let above: Vec<&str> = if edf_sched {
            Vec::new()
        } else {
            tasks
                .iter()
                .zip(&w.tasks)
                .filter(|(r, t)| {
                    t.uses_gpu() && r.priority.is_some_and(|p| fifo_priority(p) >= priority)
                })
                .map(|(r, _)| r.name.as_str())
                .collect()
        };
        if !above.is_empty() {
            let why = format!(
                "the interrupt threads' SCHED_FIFO priority {priority} is not above every \
                 GPU-using task's ({} at or above it), so bottom halves wait for those tasks; \
                 rtgpu has no bound for that (raise `interrupts.threads` above {})",
                rtgpu_model::listing::listing(&above),
                tasks
                    .iter()
                    .zip(&w.tasks)
                    .filter(|(_, t)| t.uses_gpu())
                    .filter_map(|(r, _)| r.priority.map(fifo_priority))
                    .max()
                    .unwrap_or(0)
            );
            for (r, t) in tasks.iter_mut().zip(&w.tasks) {
                if !t.uses_gpu() || t.reservation {
                    continue;
                }
                r.response_time = None;
                r.verdict = TaskVerdict::MissesDeadline;
                if let Some(g) = r.gpu.as_mut() {
                    g.unbounded_because = Some(why.clone());
                }
            }
            notes.push(why);
        }
    }
}

/// A GPU-using task split across cores (seed 003) suspends inside a
/// piece: the piece's CPU time on its core can come late in the period,
/// after the GPU section, with the task's bottom halves beside it, which
/// the per-core analysis of pieces at fixed offsets does not charge
/// (seed 003's tasks never suspend; a targeted search found tasks past
/// their bounds on such cores). No bound for the tasks on its cores.
/// Honest per-task verdicts: a bound that holds only if some failing task
/// meets its deadline after all becomes [`TaskVerdict::MeetsDeadlineIf`]
/// naming those tasks. What a bound assumes of other tasks: their CPU
/// interference comes from their own bounds where they have one and is
/// capped whatever they do where they have none (uniprocessor RTA of
/// higher-priority tasks, BC's clamp: `gfp_response_times_each`), and GPU
/// holds are each task's own; but every GPU interrupt of the interrupt
/// domain (the cluster, the platform under P-FP and global schedulers) is
/// counted over the interrupting task's deadline (seed 000 Eq. 11, sound
/// up to the first miss), and under P-FP a GPU hold's stretch counts the
/// holder's cores' tasks over their deadlines where they have no bound.
/// So a failing GPU-using task with interrupts makes every bound of its
/// domain conditional, and under P-FP with stretched holds a failing task
/// on a GPU holder's core makes the GPU-using tasks' bounds conditional;
/// priority-ordered token queues count the more urgent users' requests
/// over their deadlines too.
fn bounds_that_depend_on_failing_tasks(
    w: &Workload,
    tasks: &mut [TaskReport],
    notes: &mut Vec<String>,
) {
    let failing = |t: &TaskReport| {
        matches!(
            t.verdict,
            TaskVerdict::MissesDeadline | TaskVerdict::Unplaced | TaskVerdict::UnboundedTardiness
        )
    };
    let whole_platform = matches!(
        w.policy.cpu_scheduler,
        CpuScheduler::PartitionedFp | CpuScheduler::GlobalFp | CpuScheduler::GlobalEdf
    );
    let interrupting: Vec<(usize, Option<usize>)> = tasks
        .iter()
        .enumerate()
        .filter(|&(i, t)| failing(t) && w.tasks[i].gpu.as_ref().is_some_and(|g| g.interrupts > 0))
        .map(|(i, t)| (i, t.cluster.or(w.tasks[i].cluster)))
        .collect();
    let stretched = w.policy.cpu_scheduler == CpuScheduler::PartitionedFp
        && tasks
            .iter()
            .any(|t| t.gpu.as_ref().is_some_and(|g| g.hold_stretch.is_some()));
    let gpu_cores: Vec<u32> = tasks
        .iter()
        .filter(|t| t.uses_gpu)
        .flat_map(|t| t.cores.iter().copied())
        .collect();
    let on_gpu_cores: Vec<usize> = if stretched {
        (0..tasks.len())
            .filter(|&i| failing(&tasks[i]) && tasks[i].cores.iter().any(|c| gpu_cores.contains(c)))
            .collect()
    } else {
        Vec::new()
    };
    let mut conditional = Vec::new();
    for k in 0..tasks.len() {
        if tasks[k].verdict != TaskVerdict::MeetsDeadline {
            continue;
        }
        let mut deps: Vec<usize> = interrupting
            .iter()
            .filter(|&&(i, c)| i != k && (whole_platform || c == tasks[k].cluster))
            .map(|&(i, _)| i)
            .collect();
        if tasks[k].uses_gpu {
            deps.extend(on_gpu_cores.iter().copied().filter(|&i| i != k));
            // Priority-ordered token queues count the more urgent users'
            // requests over their deadlines (`static-priority`).
            if w.policy.gpu_allocator == rtgpu_model::GpuAllocator::StaticPriority {
                deps.extend((0..tasks.len()).filter(|&i| {
                    i != k
                        && tasks[i].uses_gpu
                        && failing(&tasks[i])
                        && tasks[i].cluster.or(w.tasks[i].cluster) == tasks[k].cluster
                }));
            }
        }
        deps.sort_unstable();
        deps.dedup();
        if !deps.is_empty() {
            tasks[k].verdict = TaskVerdict::MeetsDeadlineIf;
            tasks[k].depends_on = deps.iter().map(|&i| tasks[i].name.clone()).collect();
            conditional.push(tasks[k].name.clone());
        }
    }
    if !conditional.is_empty() {
        notes.push(format!(
            "{} task(s) meet their deadlines only if failing tasks meet theirs after all (their \
             interrupts, or their share of a GPU hold's stretch, are counted over their \
             deadlines: seed 000 Eq. 11 holds up to the first miss): {}",
            conditional.len(),
            conditional
                .iter()
                .zip(
                    tasks
                        .iter()
                        .filter(|t| t.verdict == TaskVerdict::MeetsDeadlineIf)
                )
                .take(5)
                .map(|(n, t)| format!("{n} (if {})", t.depends_on.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
                + &if conditional.len() > 5 {
                    format!(" and {} more", conditional.len() - 5)
                } else {
                    String::new()
                }
        ));
    }
}

fn unbound_split_gpu_cores(w: &Workload, tasks: &mut [TaskReport], notes: &mut Vec<String>) {
    if w.policy.cpu_scheduler == CpuScheduler::PartitionedFp {
        let split: Vec<(&str, &[u32])> = tasks
            .iter()
            .zip(&w.tasks)
            .filter(|(r, t)| t.uses_gpu() && r.pieces.len() > 1)
            .map(|(r, _)| (r.name.as_str(), r.cores.as_slice()))
            .collect();
        if !split.is_empty() {
            let mut cores: Vec<u32> = split.iter().flat_map(|(_, c)| c.iter().copied()).collect();
            cores.sort_unstable();
            cores.dedup();
            let why = format!(
                "GPU-using task(s) {} are split across cores {:?} (seed 003), but a split task \
                 that suspends for its GPU is outside seed 003's model (its piece's CPU time can \
                 come late in the period, beside its bottom halves): no bound for the tasks on \
                 those cores",
                rtgpu_model::listing::listing(&split.iter().map(|(n, _)| *n).collect::<Vec<_>>()),
                cores
            );
            for r in tasks.iter_mut() {
                if r.cores.iter().any(|c| cores.contains(c)) && r.response_time.is_some() {
                    r.response_time = None;
                    r.verdict = TaskVerdict::MissesDeadline;
                }
            }
            notes.push(why);
        }
    }
}

/// A duration in words for notes ("533333 ns" style is unreadable).
fn duration_words(ns: Time) -> String {
    rtgpu_model::units::format_duration(ns)
}

/// Rounds of the hold-stretch / partition iteration of [`analyze`] before
/// it gives up (in practice P-FP settles in two or three, the others in
/// one or two).
const MAX_STRETCH_ROUNDS: u32 = 16;
