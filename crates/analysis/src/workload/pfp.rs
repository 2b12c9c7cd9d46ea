//! The P-FP driver: partitioning (bin packing or PDMS_HPTS / _DS task
//! splitting, [`crate::partition`]) with exact RTA per core, and what the
//! per-core RTA does not see, charged after partitioning (inheritance
//! blocking, servers, release jitter of later pieces).

use rtgpu_model::{FitRule, Partitioning, PriorityAssignment, SortOrder, Workload};

use crate::fp;
use crate::partition::{self, Heuristic, Order, PriorityRule};
use crate::server;
use crate::task::{Task, Time};

use super::charges::Cx;
use super::groups::{groups, Group};
use super::report::{CoreReport, PieceReport, TaskReport, TaskVerdict};
use super::{duration_words, MAX_STRETCH_ROUNDS};

/// How many tasks [`analyze_pfp`] sets aside, each costing a partitioning
/// of the rest, before it reports the tasks not reached as unplaced.
const MAX_SET_ASIDE: usize = 64;

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

pub(super) fn analyze_pfp(
    cx: &Cx,
    tasks: &mut [TaskReport],
    notes: &mut Vec<String>,
) -> (String, Vec<CoreReport>) {
    let w = cx.w;
    let aware = cx.aware;
    let (heur, mut method) = heuristic(w);
    if aware {
        method.push_str(
            ", suspension-aware for GPU-using tasks (GPU wait and GPU time in their own \
             response, release jitter R − C' as interferers: our derivation, docs/analyses.md)",
        );
    }
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
        // Suspension-aware: a GPU-using task is placed and analysed with
        // its CPU demand, its GPU wait and GPU time as blocking of its own
        // response (D capped at T: one job at a time, as the per-job
        // suspension term needs); the per-core re-analysis after
        // partitioning gives it, as an interferer, release jitter R − C'
        // (`charge_core_interference`).
        let input: Vec<Task> = input
            .iter()
            .map(|t| {
                let (cpu, suspension) = cx.costs(t.id, &charges[t.id]);
                Task {
                    wcet: cpu,
                    blocking: t.blocking.saturating_add(suspension),
                    deadline: if suspension > 0 {
                        t.deadline.min(t.period)
                    } else {
                        t.deadline
                    },
                    ..*t
                }
            })
            .collect();
        // The servers are charged in the placement itself (every per-core
        // test, split budgets included), and only there: the pieces'
        // response times come out with them, and charge_core_interference
        // adds what the partitioner does not see.
        // A split GPU-using task leaves the tasks of its cores without a
        // bound (`a_split_gpu_task_takes_the_bounds_of_its_cores`): place
        // GPU-using tasks whole where that works, else split them too.
        let place = |active: &[Task]| {
            let whole: Vec<bool> = active.iter().map(|t| w.tasks[t.id].uses_gpu()).collect();
            let result =
                partition::partition_keeping(active, cores.len(), heur, cx.servers, &whole);
            if !result.schedulable && whole.contains(&true) {
                partition::partition_with(active, cores.len(), heur, cx.servers)
            } else {
                result
            }
        };
        // Place every task that can be placed: a task the heuristic cannot
        // place is set aside and the rest partitioned again without it,
        // until all that remain are placed (the tasks set aside are named
        // and reported unplaced; the bounds of the others hold with those
        // tasks not running, as `rtgpu simulate` runs them).
        let mut active = input.clone();
        let mut set_aside: Vec<partition::Unplaced> = Vec::new();
        let mut result = place(&active);
        while let Some(u) = result.unplaced {
            set_aside.push(u);
            if active.len() <= 1 || set_aside.len() >= MAX_SET_ASIDE {
                break;
            }
            active.retain(|t| t.id != u.task);
            result = place(&active);
        }
        charge_core_interference(cx, any_gpu, aware, &mut result);
        if !set_aside.is_empty() {
            let reasons: Vec<String> = set_aside
                .iter()
                .map(|u| {
                    let why = match (u.reason, cx.servers.is_empty()) {
                        (partition::Failure::Infeasible, true) => {
                            "misses its deadline even alone on a core".to_string()
                        }
                        (partition::Failure::Infeasible, false) => format!(
                            "misses its deadline even alone on a core below {}",
                            server::describe(cx.servers)
                        ),
                        (partition::Failure::NoCoreLeft, true) => {
                            "fits on none of the cores left".to_string()
                        }
                        (partition::Failure::NoCoreLeft, false) => format!(
                            "fits on none of the cores left below {}",
                            server::describe(cx.servers)
                        ),
                    };
                    let piece = if u.piece > 0 {
                        format!(" (its piece {} of {})", u.piece + 1, duration_words(u.wcet))
                    } else {
                        String::new()
                    };
                    format!(
                        "{}{piece}: {why}",
                        w.tasks.get(u.task).map_or("?", |t| t.name.as_str())
                    )
                })
                .collect();
            let stopped = if result.unplaced.is_some() && set_aside.len() >= MAX_SET_ASIDE {
                format!(
                    "; after setting aside {MAX_SET_ASIDE} tasks the partitioning stopped, and \
                     the tasks it had not reached are reported unplaced too"
                )
            } else {
                String::new()
            };
            notes.push(format!(
                "partitioning could not place {} task(s): {}; every other task is placed and \
                 analysed without them (they must not run beside the placed ones: `rtgpu \
                 simulate` leaves them out){stopped}",
                set_aside.len(),
                rtgpu_model::listing::listing_with(&reasons, "; ")
            ));
        }
        for (local, pieces) in result.cores.iter().enumerate() {
            let core = cores[local];
            let mut names = Vec::new();
            let mut util = 0.0;
            for (rank, p) in pieces.iter().enumerate() {
                let tr = &mut tasks[p.task];
                let split = active[p.index].wcet != p.wcet;
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
fn charge_core_interference(
    cx: &Cx,
    any_gpu: bool,
    aware: bool,
    result: &mut partition::Partition,
) {
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
            // A suspending interferer above without a bound: no bound below.
            let mut unbounded_above = false;
            for k in 0..pieces.len() {
                let mut t = pieces[k].as_task();
                t.jitter = t.jitter.saturating_add(jitter[c][k]);
                jittered |= jitter[c][k] > 0;
                if unbounded_above {
                    pieces[k].response_time = t.deadline.saturating_add(1);
                    hp.push(t);
                    continue;
                }
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
                // A suspending (GPU-using, suspension-aware) piece executes
                // its C' anywhere in [release, release + R]: as an
                // interferer, release jitter R − C' (seed-independent; the
                // jitter-based treatment of a self-suspending higher-
                // priority task, correct with its response time bound:
                // Chen et al., "Many suspensions, many problems", §5).
                // (R is from arrival, so R − C' covers the release jitter.)
                if aware && cx.w.tasks[pieces[k].task].uses_gpu() {
                    if pieces[k].response_time > t.deadline {
                        unbounded_above = true;
                    }
                    t.jitter = t.jitter.max(pieces[k].response_time.saturating_sub(t.wcet));
                    jittered = true;
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
