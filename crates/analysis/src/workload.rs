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

use serde::Serialize;

use rtgpu_model::{CpuScheduler, FitRule, Partitioning, PriorityAssignment, SortOrder, Workload};

use crate::overheads::{self, Charges, InterruptMethod, OverheadTask};
use crate::partition::{self, Heuristic, Order, PriorityRule};
use crate::server::{self, Server};
use crate::task::{Task, Time};
use crate::workload_gpu::{self, GpuDomain, GpuTaskReport};
use crate::{bounds, edf, fp, global_fp};

/// The overall answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every deadline holds (hard real time), or every tardiness is bounded
    /// (soft real time under EDF; see [`Report::soft`]).
    Schedulable,
    NotSchedulable,
    /// The workload has parts the analysis cannot cover. Kept for the report
    /// format; this version bounds every part or reports it unbounded (the
    /// task then fails), so it does not produce this verdict.
    NotAnalysed,
}

/// Per-task outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskVerdict {
    MeetsDeadline,
    MissesDeadline,
    BoundedTardiness,
    UnboundedTardiness,
    /// Partitioning could not place (all of) the task.
    Unplaced,
    NotAnalysed,
}

/// One piece of a task on one core (a whole task is a single piece).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PieceReport {
    pub core: u32,
    /// Budget of this piece (its C').
    pub budget: Time,
    /// Offset of this piece's release after the job's release (seed 003
    /// §III.B: τ'' is released R' after τ', R' the response time of τ' on
    /// its core: C' at the top of a core, more with servers charged).
    pub release_offset: Time,
    /// Relative deadline of the piece, from its own release.
    pub deadline: Time,
    /// 1 = highest priority on the core.
    pub priority: u32,
    pub response_time: Option<Time>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskReport {
    pub name: String,
    pub wcet: Time,
    pub period: Time,
    pub deadline: Time,
    pub jitter: Time,
    pub blocking: Time,
    pub utilization: f64,
    pub uses_gpu: bool,
    /// Cluster the task runs in (index), if it was placed.
    pub cluster: Option<usize>,
    /// Cores the task may run on (its pieces' cores for P-FP, the cluster's
    /// cores otherwise).
    pub cores: Vec<u32>,
    /// Global priority rank under FP schedulers (1 = highest), per core for
    /// P-FP in `pieces`.
    pub priority: Option<u32>,
    /// P-FP only: where each piece runs.
    pub pieces: Vec<PieceReport>,
    /// Worst-case response time bound from the job's release, if bounded.
    pub response_time: Option<Time>,
    /// EDF only: tardiness bound.
    pub tardiness: Option<Time>,
    /// The inflated cost the verdict used and the charges that make it up
    /// (seed 000 App. B); `charges.total` is the inflated cost.
    pub charges: Option<Charges>,
    /// GPU-using tasks: GPU wait bounds and GPU time.
    pub gpu: Option<GpuTaskReport>,
    pub verdict: TaskVerdict,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoreReport {
    pub core: u32,
    pub cluster: usize,
    /// Utilization of the pieces partitioned onto this core (P-FP only).
    pub utilization: Option<f64>,
    /// Names of tasks (with piece index for split tasks) in priority order.
    pub tasks: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterReport {
    pub name: String,
    pub cores: u32,
    pub utilization: f64,
    pub tasks: usize,
}

/// A utilization bound evaluated for information (sufficient tests).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoundCheck {
    pub name: String,
    pub source: String,
    pub bound: f64,
    pub value: f64,
    pub applies: bool,
    pub passes: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub workload: String,
    pub scheduler: String,
    /// The test that decided the verdict, with its source.
    pub method: String,
    pub verdict: Verdict,
    /// Whether the verdict is soft real time (bounded tardiness).
    pub soft: bool,
    /// One sentence explaining the verdict.
    pub reason: String,
    pub total_utilization: f64,
    pub tasks: Vec<TaskReport>,
    pub cores: Vec<CoreReport>,
    pub clusters: Vec<ClusterReport>,
    pub bounds: Vec<BoundCheck>,
    pub notes: Vec<String>,
    /// Bandwidth servers charged as top-priority interference on every core
    /// ([`analyze_with`]); empty for the plain analysis, and under EDF,
    /// whose tardiness test cannot charge them (a note then says so).
    pub servers: Vec<Server>,
    /// klmirqd's independent mode: the server whose latency is charged to
    /// every GPU hold ([`Extra::bottom_halves`]); `None` otherwise.
    pub bottom_halves: Option<Server>,
}

/// The deployment plan `rtgpu run` consumes (JSON, `format` versioned).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub format: &'static str,
    pub workload: String,
    pub scheduler: String,
    pub verdict: Verdict,
    pub tasks: Vec<PlanTask>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanTask {
    pub name: String,
    pub period: Time,
    pub deadline: Time,
    /// Cores the task's thread may run on (affinity) when not split.
    pub cores: Vec<u32>,
    /// Suggested SCHED_FIFO priority (1..=98, higher = more urgent) for FP
    /// schedulers; `None` under EDF (use SCHED_DEADLINE with runtime = wcet,
    /// deadline, period).
    pub sched_fifo_priority: Option<u8>,
    /// A CPU reservation (`reservation = true`): run the thread under
    /// SCHED_DEADLINE with these parameters, on every CPU, instead of at a
    /// SCHED_FIFO priority.
    pub reservation: Option<Reservation>,
    /// P-FP: one entry per piece, in execution order. Piece k runs on its
    /// core, released `release_offset` after the job's release and never
    /// earlier (the analysis assumes these fixed offsets, seed 003 §III.B: a
    /// piece that started as soon as the previous one finished early would
    /// add release jitter it did not charge), for at most `budget` ns of CPU
    /// time; the job then migrates to the next piece's core.
    pub pieces: Vec<PieceReport>,
}

/// SCHED_DEADLINE parameters of a CPU reservation (runtime <= deadline <=
/// period), in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Reservation {
    pub runtime: Time,
    pub deadline: Time,
    pub period: Time,
}

impl Reservation {
    /// The reservation of a task with `reservation = true`: its period, a
    /// relative deadline of D − J, and a runtime of C plus a margin of 20%
    /// of C, at least 200 us, at most up to D − J.
    ///
    /// The deadline: the kernel sees a job when its thread wakes, at its
    /// release r + j (j ≤ J, the release jitter), and the CBS gives it its
    /// deadline from there (the wake-up rule, `rtgpu_policy::cbs`): D − J
    /// keeps r + j + D − J ≤ r + D.
    ///
    /// The margin: the kernel charges more than the job's own CPU time to
    /// its runtime (its wake-up and switch, ticks): on the 2-vCPU dev VM a
    /// job of 1 ms of thread CPU time used 1.04-1.07 ms of runtime, so a
    /// 1.03 ms reservation was throttled in every job, and `rtgpu run`'s
    /// jobs still missed now and then at 1.1 ms, never at 1.2 ms
    /// (`docs/runtime.md`, "CPU reservations"). The analysis charges this
    /// runtime, not C.
    pub fn of(t: &rtgpu_model::Task) -> Reservation {
        let margin = Reservation::margin(t.wcet);
        let deadline = t.deadline.saturating_sub(t.jitter).max(1);
        Reservation {
            runtime: t.wcet.saturating_add(margin).min(deadline),
            deadline,
            period: t.period,
        }
    }

    /// The margin above a job's WCET `wcet` that its runtime leaves for
    /// what the kernel charges besides (see [`Reservation::of`]): 20% of
    /// `wcet`, at least 200 us.
    pub fn margin(wcet: Time) -> Time {
        (wcet / 5).max(200_000)
    }
}

/// CPU interference beyond the workload's own tasks, for [`analyze_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extra {
    /// Bandwidth servers (runtime Q, period T) above every task, each of
    /// which may run on any core: klmirqd's independent mode, one
    /// SCHED_DEADLINE server per GPU that gets a completion thread.
    pub servers: Vec<Server>,
    /// klmirqd's independent mode: every GPU's bottom halves run in a
    /// server of these parameters (its own, one of `servers`) instead of
    /// in the owner's scheduling domain. Each GPU hold is then stretched
    /// by the server's latency per interrupt ([`Server::latency`]) in
    /// place of the dependent mode's stretch ([`section_stretch`]).
    /// Ignored unless the workload's interrupts are `klmirqd`.
    pub bottom_halves: Option<Server>,
}

impl Extra {
    /// The servers that run (a positive runtime and period).
    pub fn active_servers(&self) -> Vec<Server> {
        self.servers
            .iter()
            .copied()
            .filter(Server::is_active)
            .collect()
    }
}

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
    analyze_tasks(w, extra, &[])
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
    let (mut tasks, method, soft, cores) = loop {
        rounds += 1;
        let mut round_notes = Vec::new();
        let mut gpu = workload_gpu::analyze_gpus(w, &domains, &stretch, &mut round_notes);
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
        let cx = Cx {
            w,
            gpu: &gpu,
            method: imethod,
            servers: &charged,
            bottom_halves,
            owners: &owner_tasks,
        };
        round_notes.push(overhead_note(w, imethod));
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
    // Fixed-priority interrupt threads are charged as klmirqd plus every
    // bottom half for every task, which holds only while the threads run
    // above every GPU-using task; a GPU-using task at or above them delays
    // every GPU's bottom halves (a targeted search found a task at 3.8×
    // its bound). Under EDF the threads run above every job.
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
                above.join(", "),
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
    // A GPU-using task split across cores (seed 003) suspends inside a
    // piece: the piece's CPU time on its core can come late in the period,
    // after the GPU section, with the task's bottom halves beside it, which
    // the per-core analysis of pieces at fixed offsets does not charge
    // (seed 003's tasks never suspend; a targeted search found tasks past
    // their bounds on such cores). No bound for the tasks on its cores.
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
                split.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
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
    };
    (report, plan)
}

/// A duration in words for notes ("533333 ns" style is unreadable).
fn duration_words(ns: Time) -> String {
    rtgpu_model::units::format_duration(ns)
}

/// Rounds of the hold-stretch / partition iteration of [`analyze`] before
/// it gives up (in practice P-FP settles in two or three, the others in
/// one or two).
const MAX_STRETCH_ROUNDS: u32 = 16;

/// Version tag of the plan file format.
pub const PLAN_FORMAT: &str = "rtgpu-plan/1";

fn verdict_word(v: TaskVerdict) -> &'static str {
    match v {
        TaskVerdict::MeetsDeadline => "meets deadline",
        TaskVerdict::MissesDeadline => "misses deadline",
        TaskVerdict::BoundedTardiness => "bounded tardiness",
        TaskVerdict::UnboundedTardiness => "unbounded tardiness",
        TaskVerdict::Unplaced => "could not be placed",
        TaskVerdict::NotAnalysed => "not analysed",
    }
}

pub fn scheduler_name(s: CpuScheduler) -> &'static str {
    match s {
        CpuScheduler::PartitionedFp => "P-FP",
        CpuScheduler::ClusteredFp => "C-FP",
        CpuScheduler::GlobalFp => "G-FP",
        CpuScheduler::ClusteredEdf => "C-EDF",
        CpuScheduler::GlobalEdf => "G-EDF",
    }
}

fn task_report(t: &rtgpu_model::Task) -> TaskReport {
    TaskReport {
        name: t.name.clone(),
        wcet: t.wcet,
        period: t.period,
        deadline: t.deadline,
        jitter: t.jitter,
        blocking: t.blocking,
        utilization: t.wcet as f64 / t.period as f64,
        uses_gpu: t.uses_gpu(),
        cluster: t.cluster,
        cores: Vec::new(),
        priority: None,
        pieces: Vec::new(),
        response_time: None,
        tardiness: None,
        charges: None,
        gpu: None,
        verdict: TaskVerdict::NotAnalysed,
    }
}

fn analysis_task(id: usize, t: &rtgpu_model::Task) -> Task {
    Task {
        id,
        wcet: t.wcet,
        period: t.period,
        deadline: t.deadline,
        jitter: t.jitter,
        blocking: t.blocking,
    }
}

/// Assign every task to a cluster: bound tasks to theirs; unbound tasks, in
/// decreasing utilization, to the cluster with the most spare capacity
/// (cores − utilization), a worst-fit spread. Returns per cluster the model
/// task indices.
fn assign_clusters(w: &Workload) -> Vec<Vec<usize>> {
    let n = w.platform.clusters.len();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut load: Vec<f64> = vec![0.0; n];
    let mut unbound: Vec<usize> = Vec::new();
    // A GPU-using reservation runs on every CPU but uses the GPUs of the
    // first cluster that has any (the simulator's and the runtime's rule).
    let gpu_cluster = w.platform.first_gpu_cluster();
    for (i, t) in w.tasks.iter().enumerate() {
        let cluster = match (t.reservation, gpu_cluster) {
            (true, Some(g)) => Some(g),
            _ => t.cluster,
        };
        match cluster {
            Some(c) if c < n => {
                members[c].push(i);
                load[c] += t.wcet as f64 / t.period as f64;
            }
            _ => unbound.push(i),
        }
    }
    unbound.sort_by(|&a, &b| {
        let (ta, tb) = (&w.tasks[a], &w.tasks[b]);
        crate::task::cmp_ratio(tb.wcet, tb.period, ta.wcet, ta.period).then(a.cmp(&b))
    });
    for i in unbound {
        let t = &w.tasks[i];
        let best = (0..n)
            .max_by(|&a, &b| {
                let sa = w.platform.clusters[a].cores as f64 - load[a];
                let sb = w.platform.clusters[b].cores as f64 - load[b];
                sa.total_cmp(&sb).then(b.cmp(&a))
            })
            .unwrap_or(0);
        members[best].push(i);
        load[best] += t.wcet as f64 / t.period as f64;
    }
    members
}

/// A set of cores analysed together and the tasks that run on them.
struct Group {
    /// The cluster, or `None` for the whole platform.
    cluster: Option<usize>,
    cores: Vec<u32>,
    /// Analysis tasks whose `id` is the task's index in the workload.
    tasks: Vec<Task>,
}

/// The groups a scheduler analyses: the whole platform with every task when
/// `global`, otherwise one group per cluster with the tasks
/// [`assign_clusters`] gives it.
fn groups(w: &Workload, global: bool) -> Vec<Group> {
    // GPU-using reservations ([`analyze_tasks`]) are in no CPU group.
    let tasks_of = |members: &[usize]| -> Vec<Task> {
        members
            .iter()
            .filter(|&&i| !w.tasks[i].reservation)
            .map(|&i| analysis_task(i, &w.tasks[i]))
            .collect()
    };
    if global {
        let all: Vec<usize> = (0..w.tasks.len())
            .filter(|&i| !w.tasks[i].reservation)
            .collect();
        return vec![Group {
            cluster: None,
            cores: (0..w.platform.total_cores()).collect(),
            tasks: tasks_of(&all),
        }];
    }
    assign_clusters(w)
        .iter()
        .enumerate()
        .map(|(ci, members)| {
            let c = &w.platform.clusters[ci];
            Group {
                cluster: Some(ci),
                cores: (c.first_core..c.first_core + c.cores).collect(),
                tasks: tasks_of(members),
            }
        })
        .collect()
}

fn heuristic(w: &Workload) -> (Heuristic, String) {
    let order = |o: SortOrder| match o {
        SortOrder::DecreasingUtilization => Order::DecreasingUtilization,
        SortOrder::DecreasingSize => Order::DecreasingSize,
    };
    let prio = match w.policy.priority {
        PriorityAssignment::DeadlineMonotonic => PriorityRule::DeadlineMonotonic,
        PriorityAssignment::RateMonotonic => PriorityRule::RateMonotonic,
        PriorityAssignment::Audsley => PriorityRule::Audsley,
    };
    match w.policy.partitioning {
        Partitioning::Fit { rule, order: o } => {
            let (r, name) = match rule {
                FitRule::First => (partition::FitRule::FirstFit, "first fit"),
                FitRule::Best => (partition::FitRule::BestFit, "best fit"),
                FitRule::Worst => (partition::FitRule::WorstFit, "worst fit"),
                FitRule::Next => (partition::FitRule::NextFit, "next fit"),
            };
            let oname = match o {
                SortOrder::DecreasingUtilization => "decreasing utilization",
                SortOrder::DecreasingSize => "decreasing size",
            };
            (
                Heuristic::Fit {
                    rule: r,
                    order: order(o),
                    priority: prio,
                },
                format!(
                    "{name} by {oname} with exact RTA per core, {} priorities",
                    match prio {
                        PriorityRule::DeadlineMonotonic => "deadline-monotonic",
                        PriorityRule::RateMonotonic => "rate-monotonic",
                        PriorityRule::Audsley => "Audsley (optimal)",
                    }
                ),
            )
        }
        Partitioning::PdmsHpts { order: o } => (
            Heuristic::PdmsHpts { order: order(o) },
            "PDMS_HPTS task splitting (seed 003 Algorithm 1) with exact RTA per core".into(),
        ),
        Partitioning::PdmsHptsDs => (
            Heuristic::PdmsHptsDs,
            "PDMS_HPTS_DS task splitting (seed 003 Algorithm 2) with exact RTA per core".into(),
        ),
    }
}

/// What every scheduler-specific analysis needs besides the workload.
struct Cx<'a> {
    w: &'a Workload,
    /// Per workload task: its GPU analysis (None for CPU-only tasks).
    gpu: &'a [Option<GpuTaskReport>],
    method: InterruptMethod,
    /// Bandwidth servers charged above every task on every core.
    servers: &'a [Server],
    /// The server that runs every GPU's bottom halves (klmirqd's
    /// independent mode, [`Extra::bottom_halves`]).
    bottom_halves: Option<Server>,
    /// GPU-using reservations (workload indices): in no CPU analysis, but
    /// their interrupts count in every other task's H.
    owners: &'a [usize],
}

impl Cx<'_> {
    /// Inflated charges of `members` (workload indices) with response-time
    /// windows `windows[k]` for member k; H_i (seed 000 Eq. 11) counts the
    /// other members' interrupts.
    fn charges(&self, members: &[usize], windows: &[Time]) -> Vec<Charges> {
        let w = self.w;
        // The GPU-using reservations' interrupts too (windows: their
        // deadlines, seed 000's argument up to the first miss).
        let owners = self.owners.iter().filter(|i| !members.contains(i));
        let all: Vec<usize> = members.iter().chain(owners).copied().collect();
        let mut windows = windows.to_vec();
        windows.extend(all[members.len()..].iter().map(|&i| w.tasks[i].deadline));
        let windows = &windows[..];
        let periods: Vec<Time> = all.iter().map(|&i| w.tasks[i].period).collect();
        let etas: Vec<u32> = all
            .iter()
            .map(|&i| w.tasks[i].gpu.as_ref().map_or(0, |g| g.interrupts))
            .collect();
        members
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let t = &w.tasks[i];
                let input = match &self.gpu[i] {
                    Some(g) => g.overhead_input(t.wcet),
                    None => OverheadTask {
                        cpu: t.wcet,
                        gpu: None,
                    },
                };
                let h = overheads::interrupt_count(k, windows, &periods, &etas);
                overheads::inflate(&input, h, windows[k], &w.overheads, self.method)
            })
            .collect()
    }

    /// 1 + the number of times a job of task `i` suspends and becomes ready
    /// again (seed 000 Eq. 7: 1 + 1 + η_i), 1 for CPU-only tasks.
    fn ready_intervals(&self, i: usize) -> u64 {
        match &self.w.tasks[i].gpu {
            Some(g) => 2 + g.interrupts as u64,
            None => 1,
        }
    }
}

/// The GPU domains: the GPU pools of the simulator and `rtgpu run`
/// ([`Workload::gpu_pools`]: per cluster, with the tasks [`assign_clusters`]
/// gives it, or the whole platform under global scheduling). m for
/// GPUSync is the pool's cores, or every core under P-FP (whose
/// partitioning may spread a cluster's tasks further).
fn gpu_domains(w: &Workload) -> Vec<GpuDomain> {
    let pools = w.gpu_pools();
    if w.policy.cpu_scheduler.is_global() {
        return pools
            .into_iter()
            .map(|p| GpuDomain {
                cpus: p.cores,
                gpus: p.gpus,
                members: (0..w.tasks.len()).collect(),
            })
            .collect();
    }
    let pfp = w.policy.cpu_scheduler == CpuScheduler::PartitionedFp;
    let total = w.platform.total_cores();
    assign_clusters(w)
        .into_iter()
        .zip(pools)
        .map(|(members, p)| GpuDomain {
            cpus: if pfp { total } else { p.cores },
            gpus: p.gpus,
            members,
        })
        .collect()
}

fn overhead_note(w: &Workload, method: InterruptMethod) -> String {
    let o = &w.overheads;
    let which = if *o == rtgpu_model::Overheads::zero() {
        "zero overheads (overhead-oblivious)".to_string()
    } else if *o == rtgpu_model::Overheads::default() {
        "seed 000 Table III overheads".to_string()
    } else {
        "the workload's [overheads]".to_string()
    };
    if !w.tasks.iter().any(|t| t.uses_gpu()) {
        return format!("costs inflated with {which} (seed 000 App. B Eqs. 6, 9, 24)");
    }
    let mut n = format!(
        "costs inflated with {which} for {} interrupt handling (seed 000 App. B Eqs. 6-24), \
         suspension-oblivious: GPU waits and GPU time count as CPU demand",
        method.name()
    );
    if method == InterruptMethod::FixedPriorityThreads {
        n.push_str(
            "; fixed-priority interrupt threads are charged as klmirqd plus every bottom half \
             for every task (rtgpu's own accounting, sound only if the threads' priority is above \
             every GPU-using task's)",
        );
    }
    n
}

/// Inflated analysis tasks of one group; `windows[k]` is the response-time
/// window of `input[k]`.
fn inflated_tasks(cx: &Cx, input: &[Task], windows: &[Time]) -> (Vec<Task>, Vec<Charges>) {
    let members: Vec<usize> = input.iter().map(|t| t.id).collect();
    let charges = cx.charges(&members, windows);
    let tasks = input
        .iter()
        .zip(&charges)
        .map(|(t, c)| Task {
            wcet: c.total,
            ..*t
        })
        .collect();
    (tasks, charges)
}

fn analyze_pfp(
    cx: &Cx,
    tasks: &mut [TaskReport],
    notes: &mut Vec<String>,
) -> (String, Vec<CoreReport>) {
    let w = cx.w;
    let (heur, method) = heuristic(w);
    if !matches!(heur, Heuristic::Fit { .. })
        && w.policy.priority != PriorityAssignment::DeadlineMonotonic
    {
        notes.push(
            "PDMS_HPTS and PDMS_HPTS_DS assign deadline-monotonic priorities on every core \
             (seed 003 §IV); the workload's priority setting does not apply to them"
                .into(),
        );
    }
    let any_bound = w.tasks.iter().any(|t| t.cluster.is_some());
    // GPU-using tasks use the GPUs of the cluster their first core is in
    // (the simulator and `rtgpu run`), and the GPU analysis puts each task
    // in the cluster `assign_clusters` gives it: so with GPU-using tasks
    // every cluster is partitioned on its own cores, as with bound tasks
    // (a partition over the whole platform could place a task on another
    // cluster's cores than its GPU domain's; found in the ninth session).
    let any_gpu_user = w.tasks.iter().any(|t| t.uses_gpu());
    let whole_platform = (!any_bound && !any_gpu_user) || w.platform.clusters.len() == 1;
    if !whole_platform {
        notes.push(
            if any_bound {
                "tasks are bound to clusters: each cluster is partitioned on its own cores; \
                 unbound tasks were spread over clusters by spare capacity"
            } else {
                "GPU-using tasks use their cluster's GPUs: each cluster is partitioned on its \
                 own cores, the tasks spread over clusters by spare capacity"
            }
            .into(),
        );
    }
    // Interrupts may land on any core a partitioned task can be placed on:
    // H_i counts every task's interrupts; windows are the deadlines.
    let all: Vec<usize> = (0..w.tasks.len()).collect();
    let deadlines: Vec<Time> = w.tasks.iter().map(|t| t.deadline).collect();
    let charges = cx.charges(&all, &deadlines);
    let any_gpu = w.tasks.iter().any(|t| t.uses_gpu());
    let core_cluster = |core: u32| {
        w.platform
            .clusters
            .iter()
            .position(|c| core >= c.first_core && core < c.first_core + c.cores)
            .unwrap_or(0)
    };
    let mut core_reports = Vec::new();
    for Group {
        cores,
        tasks: input,
        ..
    } in groups(w, whole_platform)
    {
        let input: Vec<Task> = input
            .iter()
            .map(|t| Task {
                wcet: charges[t.id].total,
                ..*t
            })
            .collect();
        // The servers are charged in the placement itself (every per-core
        // test, split budgets included), and only there: the pieces'
        // response times come out with them, and charge_core_interference
        // adds what the partitioner does not see.
        // A split GPU-using task leaves the tasks of its cores without a
        // bound (`a_split_gpu_task_takes_the_bounds_of_its_cores`): place
        // GPU-using tasks whole where that works, else split them too.
        let whole: Vec<bool> = input.iter().map(|t| w.tasks[t.id].uses_gpu()).collect();
        let mut result =
            partition::partition_keeping(&input, cores.len(), heur, cx.servers, &whole);
        if !result.schedulable && whole.contains(&true) {
            result = partition::partition_with(&input, cores.len(), heur, cx.servers);
        }
        charge_core_interference(cx, any_gpu, &mut result);
        if let Some(u) = &result.unplaced {
            let why = match u.reason {
                partition::Failure::Infeasible if !cx.servers.is_empty() => format!(
                    "it misses its deadline even alone on a core below {} (charged on every \
                     core)",
                    server::describe(cx.servers)
                ),
                partition::Failure::Infeasible => {
                    "it misses its deadline even alone on a core".to_string()
                }
                partition::Failure::NoCoreLeft if !cx.servers.is_empty() => format!(
                    "it fits on none of the remaining cores below {}",
                    server::describe(cx.servers)
                ),
                partition::Failure::NoCoreLeft => {
                    "it fits on none of the remaining cores".to_string()
                }
            };
            let piece = if u.piece > 0 {
                format!(" (its piece {} of {})", u.piece + 1, duration_words(u.wcet))
            } else {
                String::new()
            };
            notes.push(format!(
                "partitioning stopped at {}{piece}: {why}; tasks it had not reached are reported \
                 as unplaced",
                w.tasks.get(u.task).map_or("?", |t| t.name.as_str())
            ));
        }
        for (local, pieces) in result.cores.iter().enumerate() {
            let core = cores[local];
            let mut names = Vec::new();
            let mut util = 0.0;
            for (rank, p) in pieces.iter().enumerate() {
                let tr = &mut tasks[p.task];
                let split = charges[p.task].total != p.wcet;
                names.push(if split {
                    format!("{}#{}", tr.name, p.piece + 1)
                } else {
                    tr.name.clone()
                });
                util += p.wcet as f64 / p.period as f64;
                tr.pieces.push(PieceReport {
                    core,
                    budget: p.wcet,
                    release_offset: p.offset,
                    deadline: p.deadline,
                    priority: rank as u32 + 1,
                    response_time: (p.response_time <= p.deadline).then_some(p.response_time),
                });
            }
            core_reports.push(CoreReport {
                core,
                cluster: core_cluster(core),
                utilization: Some(util),
                tasks: names,
            });
        }
        for t in &input {
            let tr = &mut tasks[t.id];
            tr.charges = Some(charges[t.id]);
            tr.pieces.sort_by_key(|p| p.release_offset);
            tr.cores = tr.pieces.iter().map(|p| p.core).collect();
            tr.cluster = tr.cores.first().map(|&c| core_cluster(c));
            let placed: Time = tr.pieces.iter().map(|p| p.budget).sum();
            if placed < t.wcet || tr.pieces.is_empty() {
                tr.verdict = TaskVerdict::Unplaced;
                continue;
            }
            // Response time of the job = offset of its last piece + that
            // piece's response time on its core.
            let last = tr
                .pieces
                .last()
                .and_then(|p| p.response_time.map(|r| p.release_offset + r));
            tr.response_time = last;
            tr.priority = tr.pieces.first().map(|p| p.priority);
            tr.verdict = match last {
                Some(r)
                    if r <= tr.deadline && tr.pieces.iter().all(|p| p.response_time.is_some()) =>
                {
                    TaskVerdict::MeetsDeadline
                }
                _ => TaskVerdict::MissesDeadline,
            };
        }
    }
    core_reports.sort_by_key(|c| c.core);
    (method, core_reports)
}

/// A workload with CPU reservations (`reservation = true`: SCHED_DEADLINE
/// threads, above every SCHED_FIFO thread and on any CPU, the kernel
/// keeping a deadline thread's affinity to its whole root domain).
///
/// - The other tasks are analysed as the workload without the reservations,
///   each reservation charged on every core (in the P-FP partitioning too,
///   [`partition::partition_with`]) as a bandwidth server of its
///   runtime ([`Reservation::of`]: C and a margin) every T
///   ([`crate::server`]'s back-to-back bound), beside
///   `extra`'s servers. The bound holds when every reservation's job ends
///   within its deadline D <= T (its response then is at most T: the
///   server argument with R = T).
/// - The reservations and the servers among themselves are global EDF on
///   all m cores (SCHED_DEADLINE), each job given at most its runtime by
///   the CBS: they meet their deadlines if the density test passes,
///   Σ δ_i + (m − 1)·δ_max <= m with δ = C / min(D, T) (Goossens, Funk &
///   Baruah 2003, in the density form; [`edf::gedf_density_test`]); their
///   bound is then D.
/// - Overheads ([`ReservationCosts`]): a job's runtime must cover its WCET
///   and the overheads charged to it (its release, scheduling and context
///   switches, ticks, one switch pair per preemption by another deadline
///   thread), else the job is throttled and finishes a period late: a
///   named miss. In the density test each reservation and server holds a
///   core for its runtime plus the GPU top halves that may freeze it in
///   its window (seed 000 Eq. 11).
/// - GPU-using reservations ([`GpuWakes`]): seed 001 §III-D's second
///   problem, the CBS wake-up rule postponing the deadline of a job woken
///   by its GPU, is charged through a short server period; each wake-up is
///   also a dispatch that may preempt, counted in the other reservations'
///   preemptions and charged to the fixed-priority tasks
///   ([`GpuWakes::charged_servers`]).
fn analyze_reservations(w: &Workload, extra: &Extra) -> (Report, Plan) {
    let reserved: Vec<usize> = (0..w.tasks.len())
        .filter(|&i| w.tasks[i].reservation)
        .collect();
    let servers = extra.active_servers();
    let method = workload_gpu::interrupt_method(&w.policy);
    let own_bottom_halves = extra.bottom_halves.is_none()
        && matches!(method, InterruptMethod::Klmirqd | InterruptMethod::Pai);
    // GPU-using reservations get a server sized for their wake-ups first:
    // every reservation's period counts in the others' preemptions.
    let wakes: Vec<Option<GpuWakes>> = reserved
        .iter()
        .map(|&i| GpuWakes::of(w, &w.tasks[i], own_bottom_halves))
        .collect();
    let res: Vec<Reservation> = reserved
        .iter()
        .zip(&wakes)
        .map(|(&i, wk)| match wk {
            Some(wk) => wk.server(w, &w.tasks[i]),
            None => Reservation::of(&w.tasks[i]),
        })
        .collect();
    let dl_wakes = reserved
        .iter()
        .zip(&wakes)
        .map(|(&i, wk)| {
            let t = &w.tasks[i];
            wk.as_ref().map(|wk| (t.period, t.jitter, wk.wakes()))
        })
        .collect();
    let costs = ReservationCosts::new(w, &res, dl_wakes, &servers);
    let owners: Vec<DlGpuOwner> = reserved
        .iter()
        .zip(&res)
        .zip(&wakes)
        .enumerate()
        .filter_map(|(k, ((&i, r), wk))| {
            let wk = wk.as_ref()?;
            let t = &w.tasks[i];
            let switches = costs.preemption_switches(k, t.deadline.saturating_sub(t.jitter));
            Some(DlGpuOwner {
                task: i,
                hold_stretch: wk.hold_latency(r, switches),
            })
        })
        .collect();
    // A task's index in `rest`: past the CPU-only reservations before it.
    let rest_index = |i: usize| {
        i - reserved
            .iter()
            .filter(|&&j| j < i && !w.tasks[j].uses_gpu())
            .count()
    };
    // The others (GPU-using reservations stay, for the GPU analysis), with
    // every reservation charged as a server.
    let mut rest = w.clone();
    rest.tasks.retain(|t| !t.reservation || t.uses_gpu());
    let mut more = extra.clone();
    for ((&i, r), wk) in reserved.iter().zip(&res).zip(&wakes) {
        match wk {
            Some(wk) => more.servers.extend(wk.charged_servers(w, &w.tasks[i], r)),
            None => more.servers.push(Server::new(r.runtime, r.period)),
        }
    }
    let (mut report, mut plan) = if rest.tasks.is_empty() {
        (
            empty_report(w),
            make_plan(
                w,
                &[],
                scheduler_name(w.policy.cpu_scheduler),
                Verdict::Schedulable,
            ),
        )
    } else {
        // Indices of `rest`: the owners' shift down past the CPU-only
        // reservations before them.
        let shifted: Vec<DlGpuOwner> = owners
            .iter()
            .map(|o| DlGpuOwner {
                task: rest_index(o.task),
                ..*o
            })
            .collect();
        analyze_tasks(&rest, &more, &shifted)
    };
    let m: u32 = w.platform.clusters.iter().map(|c| c.cores).sum();
    let all_cores: Vec<u32> = (0..m).collect();
    let demands: Vec<ReservationDemand> = reserved
        .iter()
        .zip(&res)
        .zip(&wakes)
        .enumerate()
        .map(|(k, ((&i, r), wk))| {
            let t = &w.tasks[i];
            match wk {
                None => costs.demand(k, t.wcet, r),
                Some(wk) => {
                    costs.demand_over(k, wk.job_work(t), t.deadline.saturating_sub(t.jitter), r)
                }
            }
        })
        .collect();
    // SCHED_DEADLINE entities: the reservations and the servers, each with
    // the time it holds a core per job: its runtime and the top halves
    // that may freeze it.
    let mut dl: Vec<Task> = reserved
        .iter()
        .zip(&res)
        .zip(&demands)
        .map(|((&i, r), d)| Task::new(i, d.occupancy, r.period, r.deadline))
        .collect();
    dl.extend(servers.iter().map(|s| {
        let occupancy = s.runtime.saturating_add(costs.top_halves(s.period));
        Task::new(usize::MAX, occupancy, s.period, s.period)
    }));
    let dense = edf::gedf_density_test(&dl, m);
    // Per reservation: its bound, or why it has none.
    let mut short: Vec<String> = Vec::new();
    let mut bounds: Vec<Option<Time>> = Vec::new();
    for (((&i, r), d), wk) in reserved.iter().zip(&res).zip(&demands).zip(&wakes) {
        let t = &w.tasks[i];
        let bound = match wk {
            // A CPU-only job needs its whole WCET and the overheads charged
            // to its runtime within its first budget (the bound assumes it
            // finishes in its first server period; a throttled job waits
            // for its next period).
            None if d.runtime_need > r.runtime => {
                short.push(format!(
                    "{} (C + overheads = {} > runtime {})",
                    t.name,
                    duration_words(d.runtime_need),
                    duration_words(r.runtime)
                ));
                None
            }
            None => Some(t.deadline),
            Some(wk) => {
                let gpu = report
                    .tasks
                    .get(rest_index(i))
                    .and_then(|tr| tr.gpu.as_ref());
                match wk.response(w, t, r, d, gpu, &costs) {
                    Ok(b) => Some(b),
                    Err(why) => {
                        short.push(format!("{} ({why})", t.name));
                        None
                    }
                }
            }
        };
        bounds.push(bound);
    }
    for (k, (&i, &r)) in reserved.iter().zip(&res).enumerate() {
        let t = &w.tasks[i];
        // Earlier reservations are in place: a GPU-using one (analysed
        // with the rest) is at its own index now, a CPU-only one goes in.
        let gpu = if t.uses_gpu() {
            report.tasks.remove(i).gpu
        } else {
            None
        };
        let response_time = if dense { bounds[k] } else { None };
        report.tasks.insert(
            i,
            TaskReport {
                cores: all_cores.clone(),
                response_time,
                charges: Some(demands[k].charges),
                gpu,
                verdict: if response_time.is_some_and(|b| b <= t.deadline) {
                    TaskVerdict::MeetsDeadline
                } else {
                    TaskVerdict::MissesDeadline
                },
                ..task_report(t)
            },
        );
        let entry = PlanTask {
            name: t.name.clone(),
            period: t.period,
            deadline: t.deadline,
            cores: all_cores.clone(),
            sched_fifo_priority: None,
            reservation: Some(r),
            pieces: Vec::new(),
        };
        if t.uses_gpu() {
            plan.tasks[i] = entry;
        } else {
            plan.tasks.insert(i, entry);
        }
    }
    let names: Vec<&str> = reserved.iter().map(|&i| w.tasks[i].name.as_str()).collect();
    report.total_utilization = w
        .tasks
        .iter()
        .map(|t| t.wcet as f64 / t.period as f64)
        .sum();
    report.notes.push(format!(
        "CPU reservations ({}) run as SCHED_DEADLINE threads on all {m} core(s), above every \
         fixed-priority task: the other tasks are analysed with each charged on every core as \
         a server of its runtime every period; the reservations{} by the G-EDF density test \
         (Goossens, Funk & Baruah 2003): {}",
        names.join(", "),
        if extra.servers.is_empty() {
            ""
        } else {
            " and klmirqd's servers"
        },
        if dense {
            "passes"
        } else {
            "fails, so no reservation is shown to meet its deadline"
        }
    ));
    if wakes.iter().any(Option::is_some) {
        report.notes.push(
            "GPU-using reservations: an implicit-deadline server (runtime Q every P, P short) \
             whose job wakes at its release, for its token and each engine lock, and at each \
             operation's completion; each wake's work x ends within (⌈x/Q⌉ + 1)·P of the wake \
             whatever the CBS wake-up rule does to its deadline (seed 001 §III-D; the server \
             gets Q by each deadline, Baruah, Goossens & Lipari, RTAS 2002); the bound adds \
             its GPU wait and GPU time, and its holds are stretched by its wakes inside them \
             (our derivation, rtgpu_analysis::workload::GpuWakes)"
                .to_string(),
        );
    }
    if !short.is_empty() {
        report.verdict = Verdict::NotSchedulable;
        report.reason = format!(
            "the CPU reservation(s) {} have no bound within their deadline; {}",
            short.join(", "),
            report.reason
        );
    } else if !dense {
        report.verdict = Verdict::NotSchedulable;
        report.reason = format!(
            "the CPU reservations ({}) fail the G-EDF density test on {m} core(s); {}",
            names.join(", "),
            report.reason
        );
    }
    plan.verdict = report.verdict;
    (report, plan)
}

/// A GPU-using reservation in [`analyze_tasks`]: its workload index and how
/// much longer its wake-ups may make a GPU hold ([`GpuWakes::hold_latency`]).
#[derive(Debug, Clone, Copy)]
struct DlGpuOwner {
    task: usize,
    hold_stretch: Time,
}

/// The wake-ups of a GPU-using reservation's job and the CPU work each
/// needs. **Our derivation** (seed 001 §III-D names the problem: a job
/// woken by its GPU's completion may have its deadline postponed by the
/// CBS wake-up rule; Linux-RTXG changes the kernel, rtgpu charges it):
///
/// - **Wake-ups**: its release (the first half of its CPU work, with its
///   release and switches), the grant of its token, of each engine lock
///   (at most one per operation, and one for the GPU lock), each
///   operation's completion (at most max(η, operations) of them: the
///   owner resumes to go on, paying 2(Δsch + Δcxs), and under klmirqd's
///   dependent mode or PAI also the bottom half, which a SCHED_DEADLINE
///   owner runs in its own thread and budget: no fixed priority can stand
///   for a deadline), and the end of its GPU section (the second half).
/// - **Per wake** (implicit-deadline server, runtime Q, period P): work x
///   starting at wake t ends by t + (⌈x/Q⌉ + 1)·P. At the wake the CBS
///   either keeps the current deadline d and budget q (d ≤ t + P: every
///   deadline was set P after some earlier instant) or starts a new one at
///   t + P with Q. Either way q (or Q) is served by the deadline (the
///   server meets its deadlines if the reservations pass the density test:
///   Baruah, Goossens & Lipari, RTAS 2002, for the M-CBS on global EDF),
///   and each replenishment serves Q more one period later.
/// - **Per job**: Σ_k (⌈x_k/Q⌉ + 1)·P ≤ (⌈X/Q⌉ + 2w − 1)·P with X = Σ x_k
///   and w wakes (Σ⌈a_k⌉ ≤ ⌈Σ a_k⌉ + w − 1); when Q ≥ X no wake after the
///   first throttle of the job can find its budget short, so at most
///   (w + 1)·P. The bound is this, the release jitter, and the GPU part
///   ([`GpuWakes::response`]).
/// - **Server**: P = (D − J)/(8(w + 1)), within [100 us, T] (Linux's
///   default `sched_deadline_period_min_us`); Q = 4·X'·P/(D − J), X' the
///   job's CPU work with the margin of [`Reservation::of`], so that the
///   CPU work takes about a quarter of D − J and the wake-ups another
///   quarter, within [the largest in-section wake's work, P].
#[derive(Debug, Clone, Copy)]
struct GpuWakes {
    /// Wake-ups inside the GPU section (token, locks, completions).
    in_section: u64,
    /// The work of one of them.
    resume: Time,
}

impl GpuWakes {
    /// `None` for a CPU-only task.
    fn of(w: &Workload, t: &rtgpu_model::Task, own_bottom_halves: bool) -> Option<GpuWakes> {
        let g = t.gpu.as_ref()?;
        let staged = w.policy.gpu_allocator == rtgpu_model::GpuAllocator::KFmlp;
        let ops = u64::from(g.operations_for(w.policy.chunk_size, staged));
        let completions = ops.max(u64::from(g.interrupts));
        let o = &w.overheads;
        let mut resume = o.sch.saturating_add(o.cxs).saturating_mul(2);
        if own_bottom_halves {
            let bh = match workload_gpu::interrupt_method(&w.policy) {
                // PAI's bottom half and its two scheduling decisions
                // (the simulator's cost of a PAI bottom half).
                InterruptMethod::Pai => o.bh.saturating_add(o.paisch.saturating_mul(2)),
                _ => o.bh,
            };
            resume = resume.saturating_add(bh);
        }
        Some(GpuWakes {
            // The token, one lock per operation and the GPU lock, and
            // every completion.
            in_section: 1 + (ops + 1) + completions,
            resume,
        })
    }

    /// All wake-ups of a job: the two CPU halves too.
    fn wakes(&self) -> u64 {
        self.in_section + 2
    }

    /// The server (runtime Q, period P) as the fixed-priority tasks are
    /// charged it, with one scheduling decision and context switch c =
    /// Δsch + Δcxs for each dispatch of its thread that may preempt one of
    /// them (the victim's, as the simulator charges a preempted thread):
    /// - Q + 2c every P: a replenishment after a throttle (at least P
    ///   apart), 2c so that the back-to-back staircase covers the ⌈t/P⌉ + 1
    ///   of them a window t can hold;
    /// - 2wc(1 + ⌈J/T⌉) every T, w = [`Self::wakes`]: the wake-ups of the
    ///   ⌈(t + J)/T⌉ + 1 jobs that can wake in a window t (a job wakes
    ///   within its deadline D <= T of its release), likewise covered.
    ///
    /// (Found missing by a targeted search: a reservation waking at each of
    /// many short copy chunks preempted a FIFO task past its bound.)
    fn charged_servers(&self, w: &Workload, t: &rtgpu_model::Task, r: &Reservation) -> [Server; 2] {
        let o = &w.overheads;
        let c = o.sch.saturating_add(o.cxs);
        let jobs = 1 + t.jitter.div_ceil(t.period.max(1));
        let wake_switches = overheads::mul(self.wakes().saturating_mul(2).saturating_mul(jobs), c);
        [
            Server::new(r.runtime.saturating_add(overheads::mul(2, c)), r.period),
            Server::new(wake_switches, t.period),
        ]
    }

    /// The job's CPU work before the overheads that [`ReservationCosts`]
    /// adds (release, switches, ticks, preemptions): C and the in-section
    /// wake-ups' work.
    fn job_work(&self, t: &rtgpu_model::Task) -> Time {
        t.wcet
            .saturating_add(overheads::mul(self.in_section, self.resume))
    }

    /// The server (module docs of [`GpuWakes`]).
    fn server(&self, w: &Workload, t: &rtgpu_model::Task) -> Reservation {
        let o = &w.overheads;
        let window = t.deadline.saturating_sub(t.jitter).max(1);
        let wakes = self.wakes();
        let period = (window / (8 * (wakes + 1)))
            .max(MIN_GPU_SERVER_PERIOD)
            .min(t.period);
        let work = self
            .job_work(t)
            .saturating_add(o.rel)
            .saturating_add(o.ipi)
            .saturating_add(o.sch.saturating_add(o.cxs).saturating_mul(2));
        let work = work.saturating_add(Reservation::margin(t.wcet));
        let runtime = ((4 * work as u128 * period as u128).div_ceil(window as u128))
            .min(Time::MAX as u128) as Time;
        let floor = self.resume.max(server::MIN_DEADLINE_RUNTIME);
        Reservation {
            runtime: runtime.max(floor).min(period),
            deadline: period,
            period,
        }
    }

    /// How long `n` wake-ups with `work` in all (their own work and
    /// `switches` of preemptions) may take: (⌈X/Q⌉ + 2n − 1)·P, or
    /// (n + 1)·P when Q ≥ X (module docs).
    fn latency(n: u64, work: Time, r: &Reservation) -> Time {
        if n == 0 {
            return 0;
        }
        let q = r.runtime.max(1);
        let periods = if work <= q {
            n + 1
        } else {
            work.div_ceil(q).saturating_add(2 * n - 1)
        };
        overheads::mul(periods, r.period)
    }

    /// How much longer its wake-ups inside its GPU section may keep its
    /// GPU (added to its hold where it blocks others).
    fn hold_latency(&self, r: &Reservation, switches: Time) -> Time {
        let work = overheads::mul(self.in_section, self.resume).saturating_add(switches);
        GpuWakes::latency(self.in_section, work, r)
    }

    /// The bound on a job's response: J + its wake-ups' latency + its GPU
    /// part (its GPU wait b_i, own GPU time with engine waits and
    /// bottom-half server waits, its own η(Δth + Δbh), and the top halves
    /// of the window that may delay its completions). Err: why there is
    /// none (named in the verdict).
    fn response(
        &self,
        w: &Workload,
        t: &rtgpu_model::Task,
        r: &Reservation,
        d: &ReservationDemand,
        gpu: Option<&GpuTaskReport>,
        costs: &ReservationCosts,
    ) -> Result<Time, String> {
        if w.policy.cpu_scheduler != CpuScheduler::PartitionedFp {
            return Err(format!(
                "a GPU-using reservation is bounded under P-FP only: under {} the hold stretch \
                 of its fixed-priority or EDF token holders is not charged",
                scheduler_name(w.policy.cpu_scheduler)
            ));
        }
        if workload_gpu::interrupt_method(&w.policy) == InterruptMethod::FixedPriorityThreads {
            return Err(
                "fixed-priority interrupt threads run below SCHED_DEADLINE, so its bottom halves \
                 have no bound; use klmirqd, PAI or SLIH"
                    .into(),
            );
        }
        let Some(g) = gpu else {
            return Err("no GPU analysis".into());
        };
        if let Some(why) = &g.unbounded_because {
            return Err(format!("GPU wait unbounded: {why}"));
        }
        if r.runtime < self.resume {
            return Err(format!(
                "runtime {} < one resumption's work {}",
                duration_words(r.runtime),
                duration_words(self.resume)
            ));
        }
        let o = &w.overheads;
        let window = t.deadline.saturating_sub(t.jitter);
        let own_irq = overheads::mul(u64::from(g.interrupts), o.th.saturating_add(o.bh));
        let gpu_part = [
            g.token_blocking.unwrap_or(Time::MAX),
            g.copy_time,
            g.kernel_time,
            g.engine_blocking.unwrap_or(0),
            g.bottom_half_wait.unwrap_or(0),
            own_irq,
            costs.top_halves(window),
        ]
        .into_iter()
        .fold(0, Time::saturating_add);
        let cpu = GpuWakes::latency(self.wakes(), d.runtime_need, r);
        let bound = t.jitter.saturating_add(cpu).saturating_add(gpu_part);
        if bound > t.deadline {
            return Err(format!(
                "bound {} > deadline {}: wake-ups {} every {} with {} of work, GPU part {}",
                duration_words(bound),
                duration_words(t.deadline),
                self.wakes(),
                duration_words(r.period),
                duration_words(d.runtime_need),
                duration_words(gpu_part)
            ));
        }
        Ok(bound)
    }
}

/// Linux's default `kernel.sched_deadline_period_min_us` (100 us): the
/// shortest period `sched_setattr` accepts.
const MIN_GPU_SERVER_PERIOD: Time = 100_000;

/// What seed 000 App. B's overheads add to the jobs of CPU reservations
/// ([`analyze_reservations`]), as the simulator injects them and a stock
/// kernel incurs them.
///
/// A reservation's job pays from its runtime its own release and
/// scheduling (Eqs. 6, 9: rel + ipi, 2(sch + cxs)), the ticks of its window
/// (Eq. 24) and one scheduling and context switch each time another
/// deadline thread preempts it (a preempted job pays for its preemption in
/// the simulator; at most one per release or replenishment of another
/// reservation or server in its window, and one per wake-up of a klmirqd
/// server, which wakes at most once per GPU interrupt). The top halves of
/// GPU interrupts (H of Eq. 11 over the window D − J, each as long as the
/// method's non-preemptive part, Eqs. 12, 14, 17) freeze the core they land
/// on, a deadline thread's included, without consuming its runtime (the
/// simulator; a kernel built with `CONFIG_IRQ_TIME_ACCOUNTING`, which does
/// not charge hard-interrupt time to the running task): they lengthen the
/// time a job holds a core, which the density test counts.
struct ReservationCosts<'a> {
    w: &'a Workload,
    method: InterruptMethod,
    /// Per GPU-using task: (window w_j, period p_j, η_j) for Eq. 11, w_j its
    /// response bound in the analysis of the other tasks, at least its
    /// deadline (fixed priority accepts a set only if no deadline is
    /// missed).
    gpu: Vec<(Time, Time, u32)>,
    /// The periods of the reservations, then of the servers.
    dl_periods: Vec<Time>,
    /// Per reservation (same order): a GPU-using one's (T, J, wake-ups per
    /// job), each wake-up a dispatch that may preempt ([`GpuWakes`]).
    dl_wakes: Vec<Option<(Time, Time, u64)>>,
    servers: bool,
}

/// One reservation's job, overheads included.
struct ReservationDemand {
    /// Seed 000 App. B's charges (`total`: C and every overhead, the top
    /// halves included).
    charges: Charges,
    /// What its runtime pays: `total` less the top halves.
    runtime_need: Time,
    /// How long it holds a core: its runtime and the top halves.
    occupancy: Time,
}

impl<'a> ReservationCosts<'a> {
    /// Every GPU-using task's interrupts count, each in windows of its
    /// deadline: seed 000's argument up to the first deadline miss (a
    /// workload with a miss is not schedulable anyway).
    fn new(
        w: &'a Workload,
        res: &[Reservation],
        dl_wakes: Vec<Option<(Time, Time, u64)>>,
        servers: &[Server],
    ) -> ReservationCosts<'a> {
        let gpu = w
            .tasks
            .iter()
            .filter_map(|t| Some((t.deadline, t.period, t.gpu.as_ref()?.interrupts)))
            .collect();
        ReservationCosts {
            w,
            method: workload_gpu::interrupt_method(&w.policy),
            gpu,
            dl_periods: res
                .iter()
                .map(|r| r.period)
                .chain(servers.iter().map(|s| s.period))
                .collect(),
            dl_wakes,
            servers: !servers.is_empty(),
        }
    }

    /// H (seed 000 Eq. 11): the GPU interrupts that may occur in a window.
    fn interrupts(&self, window: Time) -> u64 {
        let mut windows = vec![window];
        let mut periods = vec![1];
        let mut etas = vec![0];
        for &(w, p, eta) in &self.gpu {
            windows.push(w);
            periods.push(p);
            etas.push(eta);
        }
        overheads::interrupt_count(0, &windows, &periods, &etas)
    }

    /// The charges of a job of `cpu` ns of work with window `window`.
    fn charges(&self, cpu: Time, window: Time) -> Charges {
        let task = OverheadTask { cpu, gpu: None };
        let h = self.interrupts(window);
        overheads::inflate(&task, h, window, &self.w.overheads, self.method)
    }

    /// The top halves that may freeze a deadline thread within a window.
    fn top_halves(&self, window: Time) -> Time {
        self.charges(0, window).interrupts
    }

    /// Reservation `k` (of WCET `wcet`, reservation `r`): over its
    /// deadline.
    fn demand(&self, k: usize, wcet: Time, r: &Reservation) -> ReservationDemand {
        self.demand_over(k, wcet, r.deadline, r)
    }

    /// Reservation `k`'s job of `work` ns of CPU work whose events are
    /// counted over `window`.
    fn demand_over(
        &self,
        k: usize,
        work: Time,
        window: Time,
        r: &Reservation,
    ) -> ReservationDemand {
        let mut charges = self.charges(work, window);
        let switches = self.preemption_switches(k, window);
        charges.scheduling = charges.scheduling.saturating_add(switches);
        charges.total = charges.total.saturating_add(switches);
        ReservationDemand {
            runtime_need: charges.total - charges.interrupts,
            occupancy: r.runtime.saturating_add(charges.interrupts),
            charges,
        }
    }

    /// One scheduling decision and context switch per possible preemption
    /// of reservation `k` by another deadline thread in `window`: a
    /// release or replenishment of another reservation or server, a
    /// wake-up of a GPU-using reservation (each of its jobs' wake-ups,
    /// [`GpuWakes::wakes`], for every job that can wake in the window: at
    /// most ⌈(window + J)/T⌉ + 1), and a wake-up of a klmirqd server (at
    /// most one per GPU interrupt).
    fn preemption_switches(&self, k: usize, window: Time) -> Time {
        let o = &self.w.overheads;
        let mut preemptions: u64 = self
            .dl_periods
            .iter()
            .enumerate()
            .filter(|&(e, _)| e != k)
            .map(|(e, &p)| {
                let wakes = match self.dl_wakes.get(e).copied().flatten() {
                    Some((t, j, n)) => {
                        (window.saturating_add(j).div_ceil(t.max(1)) + 1).saturating_mul(n)
                    }
                    None => 0,
                };
                (window.div_ceil(p.max(1)) + 1).saturating_add(wakes)
            })
            .sum();
        if self.servers {
            preemptions = preemptions.saturating_add(self.interrupts(window));
        }
        overheads::mul(preemptions, o.sch.saturating_add(o.cxs))
    }
}

/// The report of a workload whose every task is a reservation, before
/// [`analyze_reservations`] adds them.
fn empty_report(w: &Workload) -> Report {
    Report {
        workload: w.name.clone(),
        scheduler: scheduler_name(w.policy.cpu_scheduler).to_string(),
        method:
            "G-EDF density test of the SCHED_DEADLINE reservations (Goossens, Funk & Baruah 2003)"
                .to_string(),
        verdict: Verdict::Schedulable,
        soft: false,
        reason: "every task is a CPU reservation".to_string(),
        total_utilization: 0.0,
        tasks: Vec::new(),
        cores: Vec::new(),
        clusters: Vec::new(),
        bounds: Vec::new(),
        notes: Vec::new(),
        servers: Vec::new(),
        bottom_halves: None,
    }
}

/// What the per-core RTA of [`partition::partition_with`] does not see,
/// charged after partitioning; a piece whose response time then exceeds
/// its deadline keeps a response time above it (reported as a miss).
///
/// - **Inheritance blocking** (P-FP with GPU locks): a lower-priority job
///   on the same core that holds a GPU (or token) may run with a priority
///   inherited from a remote waiter. It can do so each time a
///   higher-priority job becomes ready (release and every resumption), once
///   per lower-priority GPU-using piece, for at most that piece's budget
///   (all of its CPU work may be inside the section).
/// - **Bandwidth servers** ([`Cx::servers`]): above every piece of every
///   core, as sporadic tasks C = Q, T, J = T − Q ([`crate::server`]). The
///   partitioner already charged them ([`partition::partition_with`]), so
///   a piece that gets no other charge keeps its response time; a piece
///   that does is re-analysed from scratch below the servers and the
///   pieces above it, so the servers are counted exactly once either way.
/// - **Release jitter of later pieces** (split tasks): piece k + 1 is
///   released at its fixed offset, or when piece k finishes if that is
///   later (a job runs its pieces in order), so it has release jitter
///   max(0, O_k + R_k − O_{k+1}) (Tindell, Burns & Wellings 1994). The
///   partitioner sets O_{k+1} = O_k + R_k with R_k the piece's response
///   time at the top of its core below the servers (seed 003 §III.B), so
///   there is none unless the inheritance blocking above lengthens R_k;
///   then it is charged, and the cores are re-analysed until no jitter
///   grows (holistic analysis, Tindell & Clark 1994). If that does not
///   settle within [`MAX_STRETCH_ROUNDS`] rounds every later piece is
///   reported as missing its deadline.
fn charge_core_interference(cx: &Cx, any_gpu: bool, result: &mut partition::Partition) {
    if !any_gpu && cx.servers.is_empty() {
        return;
    }
    // Inheritance blocking per piece (fixed across rounds).
    let extra: Vec<Vec<Time>> = result
        .cores
        .iter()
        .map(|pieces| {
            (0..pieces.len())
                .map(|k| {
                    if !any_gpu {
                        return 0;
                    }
                    let lower: Time = pieces[k + 1..]
                        .iter()
                        .filter(|p| cx.w.tasks[p.task].uses_gpu())
                        .map(|p| p.wcet)
                        .fold(0, Time::saturating_add);
                    (cx.ready_intervals(pieces[k].task) as u128 * lower as u128)
                        .min(Time::MAX as u128) as Time
                })
                .collect()
        })
        .collect();
    // (core, position) of each piece of each split task, in piece order.
    let mut chains: Vec<Vec<(usize, usize)>> = Vec::new();
    {
        let mut by_task: std::collections::BTreeMap<usize, Vec<(usize, usize, usize)>> =
            std::collections::BTreeMap::new();
        for (c, pieces) in result.cores.iter().enumerate() {
            for (k, p) in pieces.iter().enumerate() {
                by_task.entry(p.index).or_default().push((p.piece, c, k));
            }
        }
        for (_, mut v) in by_task {
            if v.len() > 1 {
                v.sort_unstable();
                chains.push(v.into_iter().map(|(_, c, k)| (c, k)).collect());
            }
        }
    }
    let mut jitter: Vec<Vec<Time>> = result.cores.iter().map(|p| vec![0; p.len()]).collect();
    let mut settled = false;
    for _ in 0..MAX_STRETCH_ROUNDS {
        for (c, pieces) in result.cores.iter_mut().enumerate() {
            let mut hp = server::with_servers_above(cx.servers, &[]);
            let mut jittered = false;
            for k in 0..pieces.len() {
                let mut t = pieces[k].as_task();
                t.jitter = t.jitter.saturating_add(jitter[c][k]);
                jittered |= jitter[c][k] > 0;
                // The partitioner's response time already has the servers.
                let plain = extra[c][k] == 0 && !jittered;
                debug_assert!(
                    !plain
                        || fp::response_time(&hp, &t) == Some(pieces[k].response_time)
                        || pieces[k].response_time > t.deadline,
                    "the partitioner charged the servers exactly once"
                );
                if !plain {
                    let mut analysed = t;
                    analysed.blocking = analysed.blocking.saturating_add(extra[c][k]);
                    pieces[k].response_time =
                        fp::response_time(&hp, &analysed).unwrap_or(t.deadline.saturating_add(1));
                }
                hp.push(t);
            }
        }
        let mut grew = false;
        for chain in &chains {
            for pair in chain.windows(2) {
                let (a, b) = (&result.cores[pair[0].0][pair[0].1], pair[1]);
                let late = a
                    .offset
                    .saturating_add(a.response_time)
                    .saturating_sub(result.cores[b.0][b.1].offset);
                if late > jitter[b.0][b.1] {
                    jitter[b.0][b.1] = late;
                    grew = true;
                }
            }
        }
        if !grew {
            settled = true;
            break;
        }
    }
    if !settled {
        for chain in &chains {
            for &(c, k) in &chain[1..] {
                let p = &mut result.cores[c][k];
                p.response_time = p.deadline.saturating_add(1);
            }
        }
    }
}

/// How much longer than its unstretched hold (critical section l_j, or
/// GPUSync's Lemma 5 hold time) each GPU-using task may keep its GPU
/// because its klmirqd (or PAI) bottom halves wait for a CPU; 0 where no
/// charge is needed. Our own derivation: seed 000 App. A/B and seed 004
/// App. A treat a holder's bottom halves as part of its GPU time s_i and
/// never delayed, which their clustered and global schedulers justify and
/// P-FP and ρ > 1 do not:
///
/// - **Why a stretch.** A holder is suspended while the GPU works; each
///   completion interrupt's bottom half runs in the owner's scheduling
///   domain at the owner's effective priority (seed 000 §III "dependent
///   mode"; what `rtgpu simulate` and `rtgpu run` do), and the holder goes
///   on only after it. Under C-FP / G-FP with ρ = 1 a waiter's own
///   analysis covers the holder's delays: the holder inherits the waiter's
///   priority (k-FMLP R2, R²DGLP), so whenever the waiter is not
///   interfered by m higher-priority jobs (the only time BC's recurrence
///   counts as its "execution" of b_i) the holder's bottom half runs; with
///   ρ > 1 the GPU's thread runs at the highest effective priority among
///   the GPU's token holders (`rtgpu run`, docs/seeds/000-klmirqd.md), so a
///   co-holder's bottom half ahead of the holder's runs at least as urgently
///   and the argument holds too. Under **P-FP** priorities are per core:
///   the holder's core may run its own higher-priority tasks while the
///   waiter's core is idle (workload 2585 of the GPU soundness run with
///   overheads: 4.4 ms of blocking against a 3.66 ms hold). The stretch is
///   charged to the hold of the task whose bottom half is preempted, so
///   every blocking bound that sums holds (static queue, k-FMLP, GPUSync's
///   THT_max) covers it, including a co-holder's bottom half queued ahead
///   of another holder's.
/// - **Bound.** A hold of unstretched length l is not progressing only
///   while one of its bottom halves is pending and every processor of its
///   owner's domain runs more urgent work: tasks of higher base priority
///   (CPU demand X_h per job: its inflated cost without GPU wait and GPU
///   time, plus its own η_h·Δbh, which run on CPUs) and lower-priority
///   GPU users whose bottom halves run with an inherited priority (per
///   job η_l(Δbh + 2(Δsch + Δcxs) + Δipi), seed 000 Eq. 16's charge). The
///   hold's length L is then the least fixed point of Bertogna & Cirinei's
///   recurrence (RTSS 2007) with the hold as the analysed work:
///   L = l + ⌊(1/m) Σ_h min(W_h(L), L − l + 1)⌋, W_h with C_h = X_h and
///   R_h = the interferer's (piece's) response-time bound of this round
///   (its deadline where it has none). A job's CPU demand in a window
///   bounded through its response window, not its period, is the usual
///   treatment of a self-suspending interferer (jitter R − C; Bletsas et
///   al., "Errata for three papers (2004-05) on fixed-priority scheduling
///   with self-suspensions", LITES 2018). Holds and response times depend
///   on each other; [`analyze`] iterates until the stretches its last round
///   used are no smaller than the ones that round's response times give,
///   i.e. a mutually consistent set of bounds, sound by the usual
///   first-violation induction of holistic analysis (Tindell & Clark,
///   1994: no bound can be the first one exceeded). Under P-FP m = 1 and the
///   interferers are those of every core the holder has a piece on (its
///   bottom half runs on one of them at a time). No fixed point within the
///   holder's deadline: `Time::MAX` (its waiters are unbounded).
/// - Bandwidth servers ([`analyze_with`]) may run on any core: each is one
///   more interferer (C = Q, T, R = T; [`crate::server`]), counted once.
/// - Top halves of other interrupts that land on the holder's core are not
///   added: each is charged whole (Δth + Δkrel) in every waiter's H_i
///   (seed 000 Eq. 11 counts every interrupt of the window on every CPU).
/// - Not charged: C-FP, G-FP, C-EDF and G-EDF (the waiter argument above;
///   under EDF with the waiter's deadline inherited), SLIH (bottom halves
///   run inline, not preemptible), fixed-priority interrupt threads (their
///   accounting assumes the threads run above every GPU-using task) and
///   vGPU members (no token holds).
fn section_stretch(cx: &Cx, tasks: &[TaskReport]) -> Vec<Time> {
    let w = cx.w;
    let pfp = w.policy.cpu_scheduler == CpuScheduler::PartitionedFp;
    // CPU work inside GPU sections (`GpuPart::cpu`) waits for the holder's
    // core as its bottom halves do, whatever the interrupt handling.
    let section_cpu = |i: usize| w.tasks[i].gpu.as_ref().map_or(0, |g| g.cpu);
    let any_cpu = pfp && (0..w.tasks.len()).any(|i| section_cpu(i) > 0);
    let mut out = vec![0; tasks.len()];
    if let Some(server) = cx.bottom_halves {
        out = server_stretch(w, server, tasks);
        if !any_cpu {
            return out;
        }
    }
    let o = &w.overheads;
    // Without any interrupt processing cost the simulator and the runtime
    // complete operations at once: no bottom half ever waits. In a server
    // (independent mode) they wait for its budget, not for the holder's
    // core (`server_stretch`).
    let irq_cost = match cx.method {
        InterruptMethod::Pai => [o.th, o.pairel, o.bh, o.paisch],
        _ => [o.th, o.krel, o.bh, 0],
    };
    let deferred = matches!(cx.method, InterruptMethod::Klmirqd | InterruptMethod::Pai)
        && irq_cost.iter().any(|&c| c > 0)
        && cx.bottom_halves.is_none();
    if !pfp || !(deferred || any_cpu) {
        return out;
    }
    let eta = |i: usize| w.tasks[i].gpu.as_ref().map_or(0, |g| g.interrupts) as u64;
    let mul = overheads::mul;
    // X_h: CPU demand of one job (inflated cost without GPU wait and GPU
    // time, plus its own bottom halves).
    let demand = |i: usize| -> Option<Time> {
        let c = tasks[i].charges?;
        let parts = [
            c.cpu,
            c.scheduling,
            c.release,
            c.interrupts,
            c.bottom_half_scheduling,
            c.ticks,
            mul(eta(i), o.bh),
        ];
        Some(parts.into_iter().fold(0, Time::saturating_add))
    };
    // Per job of a lower-priority GPU user: what runs at an inherited
    // priority, its bottom halves with their scheduling (seed 000 Eq. 16)
    // where they run in its domain, and its CPU work inside its section.
    let bottom_halves = |i: usize| -> Time {
        let per =
            o.bh.saturating_add(o.sch.saturating_add(o.cxs).saturating_mul(2))
                .saturating_add(o.ipi);
        let halves = if deferred { mul(eta(i), per) } else { 0 };
        halves.saturating_add(section_cpu(i))
    };
    for (j, tr) in tasks.iter().enumerate() {
        let Some(g) = tr.gpu.as_ref() else { continue };
        if g.vgpu_share.is_some() || g.unbounded_because.is_some() {
            continue;
        }
        let hold = g.token_hold_time.unwrap_or_else(|| {
            workload_gpu::critical_section(w, j, g.copy_time.saturating_add(g.kernel_time))
        });
        let t = &w.tasks[j];
        if tr.pieces.is_empty() {
            continue;
        }
        // (C, T, R) of every interferer on the holder's cores (m = 1).
        let mut interferers: Vec<(Time, Time, Time)> = Vec::new();
        for pj in &tr.pieces {
            for (h, other) in tasks.iter().enumerate() {
                if h == j {
                    continue;
                }
                for ph in other.pieces.iter().filter(|p| p.core == pj.core) {
                    let c = if ph.priority < pj.priority {
                        demand(h).map_or(ph.budget, |x| x.min(ph.budget))
                    } else if other.uses_gpu {
                        bottom_halves(h).min(ph.budget)
                    } else {
                        continue;
                    };
                    // The piece's RTA includes its jitter.
                    let r = ph.response_time.unwrap_or(ph.deadline);
                    interferers.push((c, w.tasks[h].period, r));
                }
            }
        }
        // Bandwidth servers may run on any core, each once in the window.
        interferers.extend(cx.servers.iter().map(Server::interferer));
        let cap = t.deadline.max(hold);
        out[j] = match global_fp::interfered_completion(&interferers, hold, 1, cap) {
            Some(l) => out[j].saturating_add(l - hold),
            None => Time::MAX,
        };
    }
    out
}

/// [`section_stretch`] in klmirqd's independent mode: every GPU's bottom
/// halves run in a bandwidth server above every task ([`Extra::bottom_halves`],
/// what `rtgpu run --klmirqd independent` starts), so a bottom half waits
/// for no task of the owner's domain, only for the server's budget. Per
/// interrupt of a holder its hold grows by the server's latency
/// ([`Server::latency`]) less the Δbh the hold already counts, per
/// operation where it has more than its declared η (each completes through
/// the server in `rtgpu run`). The backlog ahead of a bottom half
/// ([`bottom_half_backlog`]) is at most one completion per concurrent owner
/// of the GPU: an owner waits for each operation's completion before its
/// next one (its lock is passed on at completion, or at submission with the
/// device-side hand-off, but its next operation depends on this one), and
/// the server takes completions in the order the device signalled them.
/// Under every scheduler (the server is not in the owner's domain);
/// vGPU members and unbounded holds as in [`section_stretch`]. Our
/// derivation; the seeds do not treat the independent mode's latency.
fn server_stretch(w: &Workload, server: Server, tasks: &[TaskReport]) -> Vec<Time> {
    let per_interrupt = server_wait_per_interrupt(w, server);
    // The k-FMLP stages a migration through system memory (two transfers).
    let staged = w.policy.gpu_allocator == rtgpu_model::GpuAllocator::KFmlp;
    tasks
        .iter()
        .enumerate()
        .map(|(j, tr)| match tr.gpu.as_ref() {
            Some(g) if g.vgpu_share.is_none() && g.unbounded_because.is_none() => {
                // Every operation completes through the server (the
                // runtime's completion threads), even beyond a declared η.
                let n = w.tasks[j].gpu.as_ref().map_or(0, |g| {
                    g.interrupts
                        .max(g.operations_for(w.policy.chunk_size, staged))
                });
                overheads::mul(u64::from(n), per_interrupt)
            }
            _ => 0,
        })
        .collect()
}

/// [`server_stretch`]'s charge per interrupt: the server's latency for
/// [`bottom_half_backlog`], less the Δbh a hold already counts.
fn server_wait_per_interrupt(w: &Workload, server: Server) -> Time {
    server
        .latency(bottom_half_backlog(w))
        .saturating_sub(w.overheads.bh)
}

/// The most bottom-half work pending at once in a GPU's klmirqd server
/// (independent mode): one Δbh per concurrent owner of the GPU, ρ token
/// holders (every GPU-using task when vGPUs let tasks share a GPU without
/// a token), never more than the GPU-using tasks; each owner waits for an
/// operation's completion before its next operation. A server whose
/// runtime covers it serves any backlog within two periods
/// ([`Server::latency`]).
pub fn bottom_half_backlog(w: &Workload) -> Time {
    let users = w.tasks.iter().filter(|t| t.uses_gpu()).count() as u64;
    let owners = if w.vgpus.is_empty() {
        users.min(u64::from(w.policy.tokens()))
    } else {
        users
    };
    overheads::mul(owners, w.overheads.bh)
}

/// klmirqd's independent mode's default server for `w`'s bottom halves
/// (what `rtgpu run` and `rtgpu simulate` start unless told otherwise).
///
/// Demand: a job of task i raises `n_i` completions, the larger of its
/// declared η_i (seed 000 App. B) and the operations the runtime really
/// issues (one per copy chunk, per kernel, and per chunk of its state
/// when it migrates), each costing `Δbh` (the workload's
/// `[overheads] bh`, Table III's 29.9 us by default). Over the shortest
/// period P of those tasks they raise `Σ ⌈P/T_i⌉·n_i·Δbh`.
///
/// The server's period is P/10 (at least 1 ms, at most P), since a
/// completion that finds the budget spent waits for the next period: a
/// server period as long as the tasks' own adds up to a whole period to
/// their response times (measured: docs/seeds/000-klmirqd.md). Its runtime
/// is the demand scaled to that period, doubled for bursts, and at least
/// the largest backlog of bottom halves pending at once
/// ([`bottom_half_backlog`]), so that each completion is charged at most
/// two server periods ([`Server::latency`]); kept within 10 us .. half
/// the period. `None` when no task uses a GPU.
pub fn bottom_half_server(w: &Workload) -> Option<Server> {
    let chunk = w.policy.chunk_size;
    let gpu_tasks: Vec<(Time, Time)> = w
        .tasks
        .iter()
        .filter_map(|t| {
            let g = t.gpu.as_ref()?;
            let ops = Time::from(g.operations(chunk));
            Some((t.period.max(1), ops.max(Time::from(g.interrupts))))
        })
        .collect();
    let p = gpu_tasks.iter().map(|t| t.0).min()?;
    let demand: Time = gpu_tasks
        .iter()
        .map(|&(t, n)| p.div_ceil(t) * n * w.overheads.bh)
        .sum();
    let period = (p / 10).max(1_000_000).min(p);
    let runtime = ((2 * u128::from(demand) * u128::from(period) / u128::from(p)) as Time)
        .max(bottom_half_backlog(w));
    Some(Server::new(
        runtime.clamp(10_000, (period / 2).max(10_000)),
        period,
    ))
}

/// What klmirqd's independent mode adds to the analysis ([`analyze_with`]):
/// one server per GPU (each GPU's completion thread is one), of `server`'s
/// parameters or [`bottom_half_server`]'s, charged above every task, and
/// its latency on every GPU hold ([`Extra::bottom_halves`]). Nothing when
/// the workload's interrupts are not `klmirqd` or no task uses a GPU.
pub fn klmirqd_independent(w: &Workload, server: Option<Server>) -> Extra {
    if w.policy.interrupts != rtgpu_model::InterruptHandling::Klmirqd
        || !w.tasks.iter().any(|t| t.uses_gpu())
    {
        return Extra::default();
    }
    let Some(s) = server.or_else(|| bottom_half_server(w)) else {
        return Extra::default();
    };
    let gpus: usize = w.platform.clusters.iter().map(|c| c.gpus.len()).sum();
    Extra {
        servers: vec![s; gpus],
        bottom_halves: Some(s),
    }
}

fn analyze_gfp(cx: &Cx, global: bool, tasks: &mut [TaskReport], notes: &mut Vec<String>) -> String {
    let w = cx.w;
    if w.policy.priority == PriorityAssignment::Audsley {
        notes.push(
            "Audsley's priority assignment is applied to uniprocessor (P-FP) analysis only; \
             global FP uses deadline-monotonic priorities here"
                .into(),
        );
    }
    for Group {
        cluster,
        cores,
        tasks: input,
    } in groups(w, global)
    {
        let m = cores.len() as u32;
        let deadlines: Vec<Time> = input.iter().map(|t| t.deadline).collect();
        let (mut input, charges) = inflated_tasks(cx, &input, &deadlines);
        for (t, c) in input.iter().zip(&charges) {
            tasks[t.id].charges = Some(*c);
        }
        match w.policy.priority {
            PriorityAssignment::RateMonotonic => fp::rm_order(&mut input),
            _ => fp::dm_order(&mut input),
        }
        let servers: Vec<(Time, Time, Time)> = cx.servers.iter().map(Server::interferer).collect();
        let rts = global_fp::gfp_response_times_below(&servers, &input, m);
        for (rank, (t, r)) in input.iter().zip(rts).enumerate() {
            let tr = &mut tasks[t.id];
            tr.cluster = cluster;
            tr.cores = cores.clone();
            tr.priority = Some(rank as u32 + 1);
            tr.response_time = r;
            tr.verdict = if r.is_some() {
                TaskVerdict::MeetsDeadline
            } else {
                TaskVerdict::MissesDeadline
            };
        }
    }
    if global {
        "global fixed-priority response-time analysis (Bertogna & Cirinei, RTSS 2007) on \
         overhead-inflated, suspension-oblivious costs"
            .into()
    } else {
        "clustered fixed priority: global FP response-time analysis per cluster \
         (Bertogna & Cirinei, RTSS 2007) on overhead-inflated, suspension-oblivious costs"
            .into()
    }
}

fn analyze_edf(cx: &Cx, global: bool, tasks: &mut [TaskReport], notes: &mut Vec<String>) -> String {
    let w = cx.w;
    for Group {
        cluster,
        cores,
        tasks: input,
    } in groups(w, global)
    {
        let m = cores.len() as u32;
        let label = match cluster {
            None => "the platform".to_string(),
            Some(ci) => format!("cluster {}", w.platform.clusters[ci].name),
        };
        // seed 000 App. B: windows p + x (D + x), from x = 0 until every
        // tardiness bound is unchanged.
        let mut x: Vec<Time> = vec![0; input.len()];
        let mut settled = false;
        let (mut inflated, mut charges, mut res);
        let mut iterations = 0;
        loop {
            iterations += 1;
            let windows: Vec<Time> = input
                .iter()
                .zip(&x)
                .map(|(t, &xi)| t.deadline.saturating_add(xi))
                .collect();
            (inflated, charges) = inflated_tasks(cx, &input, &windows);
            res = edf::gedf_tardiness(&inflated, m);
            let nx: Option<Vec<Time>> = res.tasks.iter().map(|t| t.tardiness).collect();
            match nx {
                Some(nx) if res.bounded => {
                    if nx == x {
                        settled = true;
                        break;
                    }
                    x = nx.iter().zip(&x).map(|(&a, &b)| a.max(b)).collect();
                }
                _ => break,
            }
            if iterations >= overheads::MAX_FIXED_POINT_ITERATIONS {
                break;
            }
        }
        let bounded = settled && res.bounded;
        if res.bounded && !settled {
            notes.push(format!(
                "{label}: the tardiness / interrupt-count fixed point did not settle within {} \
                 iterations; tardiness is reported unbounded",
                overheads::MAX_FIXED_POINT_ITERATIONS
            ));
        }
        let hard = edf::gedf_density_test(&inflated, m);
        notes.push(format!(
            "hard deadlines on {label}: the G-EDF density test (Goossens, Funk & Baruah 2003) {}",
            if hard {
                "passes: every deadline holds"
            } else {
                "fails: deadlines may be missed (tardiness stays bounded if reported so)"
            }
        ));
        if let Some(why) = &res.reason {
            notes.push(format!("{label}: {}", describe_rejection(why, w)));
        }
        for (k, t) in input.iter().enumerate() {
            let tr = &mut tasks[t.id];
            tr.cluster = cluster;
            tr.cores = cores.clone();
            tr.charges = Some(charges[k]);
            tr.tardiness = res
                .tasks
                .get(k)
                .and_then(|x| x.tardiness)
                .filter(|_| bounded);
            tr.response_time = res
                .tasks
                .get(k)
                .and_then(|x| x.response_bound)
                .filter(|_| bounded);
            tr.verdict = if bounded && tr.tardiness.is_some() {
                TaskVerdict::BoundedTardiness
            } else {
                TaskVerdict::UnboundedTardiness
            };
        }
    }
    if global {
        "G-EDF bounded tardiness (Devi & Anderson 2005; seed 000 App. B Eqs. 4-5) on \
         overhead-inflated, suspension-oblivious costs with the App. B fixed point"
            .into()
    } else {
        "C-EDF bounded tardiness: G-EDF test per cluster (Devi & Anderson 2005; seed 000 \
         App. B Eqs. 4-5) on overhead-inflated, suspension-oblivious costs with the App. B \
         fixed point"
            .into()
    }
}

/// A rejection of the tardiness analysis in words, with task names.
fn describe_rejection(r: &edf::EdfRejection, w: &Workload) -> String {
    let name = |i: usize| w.tasks.get(i).map_or("?", |t| t.name.as_str());
    match r {
        edf::EdfRejection::NoProcessors => "no processors".into(),
        edf::EdfRejection::InvalidTask { task, what } => {
            format!("task {} is invalid: {what}", name(*task))
        }
        edf::EdfRejection::Unsupported { task, what } => format!(
            "task {} has {what}, which the tardiness theorem does not cover",
            name(*task)
        ),
        edf::EdfRejection::ExecutionExceedsPeriod { task, .. } => format!(
            "task {} has C > T, so its tardiness grows without bound (seed 000 App. B Eq. 4)",
            name(*task)
        ),
        edf::EdfRejection::Overutilized { utilization, cores } => format!(
            "total utilization {utilization:.4} exceeds {cores} core(s), so tardiness grows \
             without bound (seed 000 App. B Eq. 5)"
        ),
        edf::EdfRejection::Overflow => {
            "the tardiness bound does not fit in 64-bit nanoseconds".into()
        }
    }
}

/// Informative utilization-bound tests on the whole task set.
fn bound_checks(w: &Workload) -> Vec<BoundCheck> {
    let tasks: Vec<Task> = w
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.reservation)
        .map(|(i, t)| analysis_task(i, t))
        .collect();
    let u: f64 = tasks.iter().map(Task::utilization).sum();
    let m = w.platform.total_cores() as usize;
    let implicit = tasks
        .iter()
        .all(|t| t.deadline == t.period && t.jitter == 0 && t.blocking == 0);
    let max_u = tasks.iter().map(Task::utilization).fold(0.0, f64::max);
    let mut out = Vec::new();
    if m == 1 {
        let ll = fp::liu_layland_bound(tasks.len());
        out.push(BoundCheck {
            name: "Liu & Layland".into(),
            source: "Liu & Layland 1973, Theorem 5".into(),
            bound: ll,
            value: u,
            applies: implicit,
            passes: implicit && fp::liu_layland_test(&tasks),
        });
        let prod: f64 = tasks.iter().map(|t| t.utilization() + 1.0).product();
        out.push(BoundCheck {
            name: "hyperbolic".into(),
            source: "Bini, Buttazzo & Buttazzo 2003, Theorem 1".into(),
            bound: 2.0,
            value: prod,
            applies: implicit,
            passes: implicit && fp::hyperbolic_test(&tasks),
        });
    }
    // seed 003 bounds, decided exactly by `bounds` (the f64 value and bound
    // are for the report).
    let hpts = bounds::pdms_hpts_utilization_bound(m);
    out.push(BoundCheck {
        name: "PDMS_HPTS".into(),
        source: "seed 003 Theorem 6 (every task U < 60.03%)".into(),
        bound: hpts * m as f64,
        value: u,
        applies: implicit,
        passes: bounds::pdms_hpts_utilization_test(&tasks, m),
    });
    let light = max_u <= bounds::LIGHT_TASK_ALPHA;
    let ds = if light {
        bounds::PDMS_HPTS_DS_LIGHT_BOUND_PAPER
    } else {
        bounds::PDMS_HPTS_DS_BOUND_PAPER
    };
    out.push(BoundCheck {
        name: if light {
            "PDMS_HPTS_DS (light tasks)".into()
        } else {
            "PDMS_HPTS_DS".into()
        },
        source: if light {
            "seed 003 §V.A, SBLW with α = √2 − 1".into()
        } else {
            "seed 003 Theorem 7".into()
        },
        bound: ds * m as f64,
        value: u,
        applies: implicit,
        passes: bounds::pdms_hpts_ds_utilization_test(&tasks, m),
    });
    out
}

/// Map FP ranks to SCHED_FIFO priorities 98 (rank 1) downwards, clamped at 1.
pub fn fifo_priority(rank: u32) -> u8 {
    98u32.saturating_sub(rank.saturating_sub(1)).max(1) as u8
}

fn make_plan(w: &Workload, tasks: &[TaskReport], scheduler: &str, verdict: Verdict) -> Plan {
    let fp_sched = !matches!(
        w.policy.cpu_scheduler,
        CpuScheduler::ClusteredEdf | CpuScheduler::GlobalEdf
    );
    Plan {
        format: PLAN_FORMAT,
        workload: w.name.clone(),
        scheduler: scheduler.to_string(),
        verdict,
        tasks: tasks
            .iter()
            .map(|t| PlanTask {
                name: t.name.clone(),
                period: t.period,
                deadline: t.deadline,
                cores: t.cores.clone(),
                sched_fifo_priority: if fp_sched {
                    t.priority.map(fifo_priority)
                } else {
                    None
                },
                reservation: None,
                pieces: t.pieces.clone(),
            })
            .collect(),
    }
}
