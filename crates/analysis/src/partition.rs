//! Partitioning tasks onto m cores, without and with task splitting.
//!
//! - Bin packing without splitting ([`Heuristic::Fit`]): first, best, worst
//!   and next fit, tasks taken in input order, decreasing utilization or
//!   decreasing size, each core accepted by the exact uniprocessor
//!   fixed-priority RTA under DM, RM or Audsley's OPA ([`fp::audsley_order`]).
//!   Best/worst fit rank cores by remaining capacity 1 − U, compared exactly.
//! - Task splitting ([`Heuristic::PdmsHpts`], [`Heuristic::PdmsHptsDs`]):
//!   seed 003 (Lakshmanan, Rajkumar & Lehoczky, ECRTS 2009) Algorithm 1
//!   (HPTaskSplit) inside Algorithm 2's one-core-at-a-time allocation, with DM
//!   priorities on every core and the exact MaximalSplit.
//!
//! Splitting τ:(C,T,D) at C' gives τ':(C',T,D), which stays on the current
//! core as its highest-priority task (so its response time is C'), and
//! τ'':(C − C', T, D − C'), released C' after the job's release (the runtime
//! migrates the job when its budget C' on the first core is spent). A
//! remainder may be split again, so one task may span several cores; each
//! core holds at most one split. Tasks are never changed in place: every
//! piece is a new value ([`split`]).
//!
//! Where the seed's pseudocode is incomplete, this module does the following:
//! - (a) HPTaskSplit's restore branch sets Unallocated_Queue to a copy taken
//!   after τ_f was dequeued, which would lose τ_f: τ_f is enqueued again.
//! - (b) Algorithm 2 never bounds j: when tasks remain after the m-th core
//!   was closed, the set is not schedulable and the first of them is
//!   reported ([`Unplaced`], [`Failure::NoCoreLeft`]).
//! - (c) MaximalSplit may find no room (C' = 0). No empty piece is placed;
//!   the pseudocode's test then reads Removed_Size ≥ S(τ_f): if it holds the
//!   core is restored (always the case under decreasing size), otherwise τ
//!   goes back to the queue whole and the core keeps τ_f and the rest (a
//!   displacement without a split). Either way the core is closed.
//! - (d) Enqueue / EnqueueDS re-insert displaced tasks and remainders by the
//!   allocation order on their current parameters: a remainder τ'' by its own
//!   size (C − C')/(D − C') (or utilization (C − C')/T); in input order by
//!   the original task's position.
//! - Seed 003 splits (C,T,D) tasks. A task with release jitter, blocking or
//!   D > T is placed whole (MaximalSplit gives it C' = 0, see (c)): only
//!   without them is R' = C' at the top of a core and τ'' released exactly C'
//!   after the job.
//!
//! Bandwidth servers ([`partition_with`]; klmirqd's independent mode and
//! CPU reservations, [`crate::server`]) may run on every core above every
//! task. Each is charged on every core as a top-priority sporadic task
//! C = Q, T, D = T with release jitter J = T − Q ([`Server::as_task`], the
//! back-to-back bound of [`crate::server`]) in front of the core's pieces,
//! in every per-core test: the RTA of a new piece and of those below it,
//! every fit heuristic, HPTaskSplit's removals and MaximalSplit. The
//! servers are interferers only: their own deadlines are not checked here
//! (the caller's G-EDF density test is their guarantee). With servers a
//! first piece τ' at the top of its core no longer finishes within C':
//! its response time R' is that of (C', T, D) below the servers, and the
//! split follows seed 003 §III.B's general rule, τ' = (C', T, D) and
//! τ'' = (C − C', T, D − R') released R' after τ'. So a later piece is
//! released no earlier than its predecessor's worst-case completion and
//! inherits no release jitter. MaximalSplit then also requires that τ'
//! leaves its remainder feasible alone on a core below the servers,
//! R_S(C') + R_S(C − C') ≤ D ([`fp::max_wcet_below_top`], which says how
//! this non-monotone condition is searched; [`maximal_split_with`] is the
//! plain reference). Without servers R' = C' and everything is as above,
//! bit for bit.
//!
//! All decisions are exact: response times are integer RTA, orderings
//! compare C/T or C/D by cross-multiplication (after an f64 pre-sort), and
//! sums of sizes or utilizations (HPTaskSplit's Removed_Size, best/worst-fit
//! capacities) are exact big rationals where f64 cannot separate them.
//!
//! Speed (PDMS_HPTS_DS is run on many random sets): the per-core RTA of
//! [`crate::fp`] is reproduced here for D ≤ T with warm starts and a
//! deadline-point pre-test (same answers, property-tested against fp), and
//! MaximalSplit uses either Bini & Buttazzo's reduced scheduling points or a
//! branch-and-bound sweep over all of them ([`maximal_split`] is the plain
//! fp-based reference). Scratch space is kept per thread.

use crate::bounds::RatioSum;
use crate::fp;
use crate::server::{self, Server};
use crate::task::{cmp_ratio, Task, Time};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// Priority rule used on each core by the non-splitting heuristics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriorityRule {
    /// Deadline monotonic, ties by (T, id) ([`fp::dm_order`]).
    DeadlineMonotonic,
    /// Rate monotonic, ties by (D, id) ([`fp::rm_order`]).
    RateMonotonic,
    /// Audsley's optimal priority assignment per core ([`fp::audsley_order`]).
    Audsley,
}

/// Which core receives the next task among those where it passes the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitRule {
    /// The lowest-numbered core.
    FirstFit,
    /// The core with the least remaining capacity 1 − U (ties: lowest index).
    BestFit,
    /// The core with the most remaining capacity 1 − U (ties: lowest index).
    WorstFit,
    /// The current core, else the next one; earlier cores are never revisited.
    NextFit,
}

/// Order in which tasks are taken (and split remainders re-queued).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Input order.
    Given,
    /// Decreasing C/T, ties by id then input position.
    DecreasingUtilization,
    /// Decreasing size C/D (seed 003 §III.A), ties by id then input position.
    DecreasingSize,
}

/// A partitioning heuristic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Heuristic {
    /// Bin packing without splitting.
    Fit {
        rule: FitRule,
        order: Order,
        priority: PriorityRule,
    },
    /// PDMS_HPTS (seed 003 §IV): HPTaskSplit with tasks taken in `order`,
    /// split remainders and displaced tasks re-queued by the same order.
    PdmsHpts { order: Order },
    /// PDMS_HPTS_DS (seed 003 §V, Algorithm 2): PDMS_HPTS in decreasing size
    /// order; the same as `PdmsHpts { order: Order::DecreasingSize }`.
    PdmsHptsDs,
}

/// One piece of a task on one core (an unsplit task is a single piece).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Piece {
    /// The task's id.
    pub task: usize,
    /// The task's position in the input slice.
    pub index: usize,
    /// 0 for an unsplit task or a first piece, then 1, 2, … along the job.
    pub piece: usize,
    /// Execution budget of this piece on this core.
    pub wcet: Time,
    pub period: Time,
    /// Relative deadline of this piece, from its own release: the task's D
    /// minus `offset`.
    pub deadline: Time,
    /// Release offset from the job's release: 0, R', R' + R'', … where R'
    /// is the previous piece's response time on its core (its budget C'
    /// without servers, seed 003 §III.B; see the module docs).
    pub offset: Time,
    /// Release jitter (only unsplit tasks may have any).
    pub jitter: Time,
    /// Blocking term (only unsplit tasks may have any).
    pub blocking: Time,
    /// Worst-case response time on this core, from the piece's release.
    pub response_time: Time,
}

impl Piece {
    /// The piece as a task for per-core analysis (same id as its task).
    pub fn as_task(&self) -> Task {
        Task {
            id: self.task,
            wcet: self.wcet,
            period: self.period,
            deadline: self.deadline,
            jitter: self.jitter,
            blocking: self.blocking,
        }
    }
}

/// Where one input task runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The task's id.
    pub task: usize,
    /// Cores of its pieces, in piece order (empty if not placed).
    pub cores: Vec<usize>,
}

/// Why a task could not be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// It misses its deadline even alone on a core (C + J + B > D, or T or D
    /// is zero).
    Infeasible,
    /// It (or its remaining piece) fits on none of the cores.
    NoCoreLeft,
}

/// The task (or remaining piece) that could not be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unplaced {
    /// The task's id.
    pub task: usize,
    /// The task's position in the input slice.
    pub index: usize,
    /// The piece that was left (0 if the task was never split).
    pub piece: usize,
    /// Its remaining execution time.
    pub wcet: Time,
    pub reason: Failure,
}

/// The outcome of [`partition`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    /// Per core, its pieces in priority order (index 0 = highest). When
    /// partitioning fails this is the state reached at the failure.
    pub cores: Vec<Vec<Piece>>,
    /// Per input task, in input order.
    pub tasks: Vec<Placement>,
    /// Whether every task was placed (every core then passes exact RTA).
    pub schedulable: bool,
    /// The first task that could not be placed.
    pub unplaced: Option<Unplaced>,
}

impl Partition {
    /// Whether every task was placed (same as `schedulable`).
    pub fn is_ok(&self) -> bool {
        self.schedulable
    }

    /// Number of tasks that run on more than one core.
    pub fn split_tasks(&self) -> usize {
        self.tasks.iter().filter(|p| p.cores.len() > 1).count()
    }
}

/// Partition `tasks` onto `cores` cores with `heuristic`.
pub fn partition(tasks: &[Task], cores: usize, heuristic: Heuristic) -> Partition {
    partition_with(tasks, cores, heuristic, &[])
}

/// [`partition`] with `servers` charged on every core above every piece
/// (module docs): placement, split budgets and the pieces' response times
/// all account for them, and every core of the result passes the exact RTA
/// with the servers in front of its pieces ([`server::with_servers_above`],
/// [`fp::response_time`]). Inactive servers are ignored; with none the
/// result is [`partition`]'s. A task that misses its deadline alone on a
/// core below the servers is [`Failure::Infeasible`].
pub fn partition_with(
    tasks: &[Task],
    cores: usize,
    heuristic: Heuristic,
    servers: &[Server],
) -> Partition {
    partition_keeping(tasks, cores, heuristic, servers, &[])
}

/// [`partition_with`] that never splits the tasks with `whole[i]` set (input
/// positions; missing entries are false): MaximalSplit gives them C' = 0,
/// as tasks seed 003's split does not apply to ([`is_splittable`]), so they
/// go whole to a later core. For tasks whose pieces could not be analysed
/// (GPU-using tasks that suspend, `rtgpu analyze` under P-FP).
pub fn partition_keeping(
    tasks: &[Task],
    cores: usize,
    heuristic: Heuristic,
    servers: &[Server],
    whole: &[bool],
) -> Partition {
    let top = server::with_servers_above(servers, &[]);
    if let Some(unplaced) = first_infeasible(tasks, &top) {
        return Partition {
            cores: vec![Vec::new(); cores],
            tasks: placements(tasks, &[]),
            schedulable: false,
            unplaced: Some(unplaced),
        };
    }
    match heuristic {
        Heuristic::Fit {
            rule,
            order,
            priority,
        } => fit(tasks, cores, rule, order, priority, &top),
        Heuristic::PdmsHpts { order } => {
            pdms_hpts(tasks, cores, order, Build::Partition, &top, whole)
                .expect("Build::Partition returns a partition")
        }
        Heuristic::PdmsHptsDs => pdms_hpts(
            tasks,
            cores,
            Order::DecreasingSize,
            Build::Partition,
            &top,
            whole,
        )
        .expect("Build::Partition returns a partition"),
    }
}

/// Whether [`partition`] would place every task, without building the
/// result (no per-piece response times, no placements): the decision alone,
/// for sweeps and benchmarks that only count schedulable sets.
pub fn is_partitionable(tasks: &[Task], cores: usize, heuristic: Heuristic) -> bool {
    is_partitionable_with(tasks, cores, heuristic, &[])
}

/// [`is_partitionable`] with `servers` charged on every core
/// ([`partition_with`]).
pub fn is_partitionable_with(
    tasks: &[Task],
    cores: usize,
    heuristic: Heuristic,
    servers: &[Server],
) -> bool {
    let top = server::with_servers_above(servers, &[]);
    if first_infeasible(tasks, &top).is_some() {
        return false;
    }
    match heuristic {
        Heuristic::Fit { .. } => partition_with(tasks, cores, heuristic, servers).schedulable,
        Heuristic::PdmsHpts { order } => {
            pdms_hpts(tasks, cores, order, Build::Decision, &top, &[]).is_none()
        }
        Heuristic::PdmsHptsDs => pdms_hpts(
            tasks,
            cores,
            Order::DecreasingSize,
            Build::Decision,
            &top,
            &[],
        )
        .is_none(),
    }
}

/// Input positions of `tasks` in the order `order` takes them (exact).
pub fn task_order(tasks: &[Task], order: Order) -> Vec<usize> {
    let mut idx = Vec::with_capacity(tasks.len());
    let mut keys = Vec::with_capacity(tasks.len());
    task_order_into(tasks, order, &mut idx, &mut keys);
    idx
}

/// [`task_order`] into `idx`, with `keys` as scratch: sorted by the f64
/// ratios first, then an insertion-sort pass with the exact comparator
/// (cross-multiplication, then id, then input position) repairs the few
/// near-ties f64 rounding (below 4e-16 relative) may have misordered.
fn task_order_into(
    tasks: &[Task],
    order: Order,
    idx: &mut Vec<usize>,
    keys: &mut Vec<(f64, usize)>,
) {
    idx.clear();
    let den: fn(&Task) -> Time = match order {
        Order::Given => {
            idx.extend(0..tasks.len());
            return;
        }
        Order::DecreasingUtilization => |t| t.period,
        Order::DecreasingSize => |t| t.deadline,
    };
    keys.clear();
    keys.extend(
        tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.wcet as f64 / den(t) as f64, i)),
    );
    keys.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    idx.extend(keys.iter().map(|k| k.1));
    let before = |a: usize, b: usize| {
        let (x, y) = (&tasks[a], &tasks[b]);
        cmp_ratio(y.wcet, den(y), x.wcet, den(x))
            .then(x.id.cmp(&y.id))
            .then(a.cmp(&b))
            == Ordering::Less
    };
    for i in 1..idx.len() {
        let mut j = i;
        while j > 0 && before(idx[j], idx[j - 1]) {
            idx.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// Whether seed 003's split applies to `task`: the (C,T,D) model with D ≤ T,
/// no jitter and no blocking. Only then is the response time of τ' at the
/// highest priority exactly C', the release of τ'' exactly C' after the job's
/// release, and the pieces of one job never run in parallel. Other tasks are
/// placed whole (MaximalSplit gives them C' = 0).
pub fn is_splittable(task: &Task) -> bool {
    task.jitter == 0 && task.blocking == 0 && task.deadline <= task.period
}

/// MaximalSplit (seed 003 §IV): the largest C' < C such that τ':(C',T,D) at
/// the highest priority above `core` (priority order) keeps `core`
/// schedulable; 0 if none, if `task` is not [`is_splittable`], or if `core`
/// is not schedulable on its own.
pub fn maximal_split(core: &[Task], task: &Task) -> Time {
    if !is_splittable(task) || task.wcet == 0 {
        return 0;
    }
    fp::max_top_priority_wcet(core, task.period, task.deadline, task.wcet - 1).unwrap_or(0)
}

/// [`maximal_split`] with `servers` above every task of the core: the
/// largest C' < C such that τ':(C',T,D), placed below the servers and
/// above `core`, keeps every task of `core` schedulable with the servers
/// and completes (response time R' with the servers' jittered demand)
/// early enough for its remainder τ'' = (C − C', T, D − R') to keep
/// C − C' ≤ D − R' (seed 003 §III.B's split; [`fp::max_wcet_below_top`]). The plain
/// reference for the partitioner's MaximalSplit with servers; with no
/// servers it is [`maximal_split`].
pub fn maximal_split_with(core: &[Task], servers: &[Server], task: &Task) -> Time {
    if !is_splittable(task) || task.wcet == 0 {
        return 0;
    }
    let all = server::with_servers_above(servers, core);
    let top = all.len() - core.len();
    let (p, d, c) = (task.period, task.deadline, task.wcet);
    fp::max_wcet_below_top(&all, top, p, d, c, c - 1).unwrap_or(0)
}

/// Split τ:(C,T,D) at `first` = C' into τ':(C',T,D) and τ'':(C − C', T, D − C')
/// (seed 003 §III.B, HPTS). New values; `task` is untouched.
/// Requires `first` ≤ C ≤ D.
pub fn split(task: &Task, first: Time) -> (Task, Task) {
    debug_assert!(first <= task.wcet && task.wcet <= task.deadline);
    let head = Task {
        wcet: first,
        ..*task
    };
    let tail = Task {
        wcet: task.wcet - first,
        deadline: task.deadline - first,
        ..*task
    };
    (head, tail)
}

// ---------------------------------------------------------------------------
// Shared helpers.

/// The first task that cannot meet its deadline even alone on a core
/// below the servers `top` (as tasks, [`server::with_servers_above`]).
fn first_infeasible(tasks: &[Task], top: &[Task]) -> Option<Unplaced> {
    tasks.iter().enumerate().find_map(|(index, t)| {
        // Alone on a core the response time is J + B + C (D ≤ T), or fp's.
        let alone = t.jitter.saturating_add(t.blocking).saturating_add(t.wcet);
        let infeasible = t.period == 0
            || t.deadline == 0
            || if !top.is_empty() {
                fp::response_time(top, t).is_none()
            } else if t.deadline <= t.period {
                alone > t.deadline
            } else {
                fp::response_time_from(&[], t, 0).is_none()
            };
        infeasible.then_some(Unplaced {
            task: t.id,
            index,
            piece: 0,
            wcet: t.wcet,
            reason: Failure::Infeasible,
        })
    })
}

/// Per-task placements from the per-core pieces. A task's later pieces
/// always land on later cores (cores are filled one after the other, and a
/// remainder goes back to the queue of the cores still open), so visiting
/// the cores in order lists each task's cores in piece order.
fn placements(tasks: &[Task], cores: &[Vec<Piece>]) -> Vec<Placement> {
    let mut count = vec![0usize; tasks.len()];
    for p in cores.iter().flatten() {
        count[p.index] += 1;
    }
    let mut out: Vec<Placement> = tasks
        .iter()
        .zip(count)
        .map(|(t, n)| Placement {
            task: t.id,
            cores: Vec::with_capacity(n),
        })
        .collect();
    for (j, core) in cores.iter().enumerate() {
        for p in core {
            let cores = &mut out[p.index].cores;
            debug_assert_eq!(cores.len(), p.piece, "pieces in core order");
            cores.push(j);
        }
    }
    out
}

/// A piece waiting for, or placed on, a core.
#[derive(Debug, Clone, Copy)]
struct Item {
    /// The piece's parameters: remaining C, T, remaining D, J, B; id kept.
    task: Task,
    index: usize,
    piece: usize,
    offset: Time,
}

impl Item {
    fn to_piece(self, response_time: Time) -> Piece {
        Piece {
            task: self.task.id,
            index: self.index,
            piece: self.piece,
            wcet: self.task.wcet,
            period: self.task.period,
            deadline: self.task.deadline,
            offset: self.offset,
            jitter: self.task.jitter,
            blocking: self.task.blocking,
            response_time,
        }
    }
}

/// One core: pieces in priority order, the same as plain tasks (for the RTA
/// slices) and their response times.
///
/// `tasks` starts with the `top` servers (as tasks, never analysed, never
/// removed) and then holds the pieces: the piece at index i of `items`,
/// `resp`, `exact` and `point` is `tasks[top + i]`, so that
/// `tasks[..top + i]` is everything above it.
#[derive(Debug, Clone, Default)]
struct Core {
    items: Vec<Item>,
    tasks: Vec<Task>,
    top: usize,
    /// Response times, exact where `exact` says so and lower bounds
    /// elsewhere (a deadline-point test showed the deadline is met).
    resp: Vec<Time>,
    exact: Vec<bool>,
    /// Per piece, the time demand W(t) at its deadline point t = D − J
    /// ([`point_demand`]), kept up to date on insertion with one division.
    point: Vec<Time>,
}

impl Core {
    fn with_capacity(n: usize) -> Core {
        Core {
            items: Vec::with_capacity(n),
            tasks: Vec::with_capacity(n),
            top: 0,
            resp: Vec::with_capacity(n),
            exact: Vec::with_capacity(n),
            point: Vec::with_capacity(n),
        }
    }

    /// Replace the lower bounds in `resp` by exact response times (the core
    /// is known to be schedulable), top down so that each can warm-start
    /// from the one above.
    fn make_exact<const S: bool>(&mut self) {
        let top = self.top::<S>();
        for i in 0..self.items.len() {
            if self.exact[i] {
                continue;
            }
            let task = &self.tasks[top + i];
            let mut start = self.resp[i].saturating_sub(task.jitter);
            if i > 0 {
                start = start.max(chain_start(
                    &self.tasks[top + i - 1],
                    self.resp[i - 1],
                    task,
                ));
            }
            self.resp[i] = fp::response_time_from(&self.tasks[..top + i], task, start)
                .expect("the deadline-point test showed the core schedulable");
            self.exact[i] = true;
        }
    }

    /// The number of servers in front of the pieces: `top`, known to be 0
    /// when `S` is false (the hot paths are compiled once for cores with
    /// servers and once for cores without, which then index exactly as
    /// they did before servers existed).
    #[inline(always)]
    fn top<const S: bool>(&self) -> usize {
        if S {
            self.top
        } else {
            debug_assert_eq!(self.top, 0, "a core with servers analysed as one without");
            0
        }
    }

    /// Empty the core and put the servers `top` (as tasks) above it.
    fn reset(&mut self, top: &[Task]) {
        self.items.clear();
        self.tasks.clear();
        self.tasks.extend_from_slice(top);
        self.top = top.len();
        self.resp.clear();
        self.exact.clear();
        self.point.clear();
    }

    /// Set every response time as exact, after the core was rebuilt, and
    /// recompute the deadline-point demands.
    fn set_exact<const S: bool>(&mut self) {
        let top = self.top::<S>();
        self.exact.clear();
        self.exact.resize(self.items.len(), true);
        self.point.clear();
        for i in top..self.tasks.len() {
            self.point
                .push(point_demand(&self.tasks[..i], &self.tasks[i]));
        }
    }

    fn pieces(&self) -> Vec<Piece> {
        debug_assert!(self.exact.iter().all(|&e| e));
        self.items
            .iter()
            .zip(&self.resp)
            .map(|(it, &r)| it.to_piece(r))
            .collect()
    }

    /// Insert `item` at its place under the key order `key_less` if the core
    /// stays schedulable. Only the new piece and those below it are
    /// re-analysed (higher-priority response times do not change). Each is
    /// first tried at its deadline point ([`point_demand`], updated with one
    /// division for the pieces below the new one); only
    /// if that fails is the exact RTA run, warm-started from its previous
    /// response time (fixed points only grow when interference is added) or
    /// from the one above ([`chain_start`]). Exact response times of the
    /// pieces that passed the point test are computed once, at the end
    /// ([`Core::make_exact`]).
    fn try_insert_by<const S: bool>(
        &mut self,
        item: Item,
        key_less: impl Fn(&Task, &Task) -> bool,
        scratch: &mut Vec<(Time, bool, Time)>,
    ) -> bool {
        // Indices below are of pieces (`items`, `resp`, ...); piece i is
        // `tasks[top + i]`.
        let top = self.top::<S>();
        let pos = self.tasks[top..].partition_point(|t| key_less(t, &item.task));
        self.tasks.insert(top + pos, item.task);
        scratch.clear();
        let new = item.task;
        for i in pos..self.tasks.len() - top {
            let task = &self.tasks[top + i];
            let above = match i.checked_sub(1) {
                None => 0,
                Some(a) if a < pos => chain_start(&self.tasks[top + a], self.resp[a], task),
                Some(a) => chain_start(&self.tasks[top + a], scratch[a - pos].0, task),
            };
            let previous = if i == pos {
                0
            } else {
                self.resp[i - 1].saturating_sub(task.jitter)
            };
            let start = above.max(previous);
            let higher = &self.tasks[..top + i];
            // Demand at the deadline point: from scratch for the new piece,
            // plus the new piece's jobs for those below it.
            let point = if i == pos {
                point_demand(higher, task)
            } else {
                self.point[i - 1].saturating_add(point_jobs(task, &new))
            };
            let outcome = if point <= task.deadline.saturating_sub(task.jitter) {
                // W(D − J) ≤ D − J: the least fixed point is at most D − J.
                let cold = higher
                    .iter()
                    .fold(task.blocking.saturating_add(task.wcet), |s, h| {
                        s.saturating_add(h.wcet)
                    });
                Some((task.jitter.saturating_add(start.max(cold)), false, point))
            } else {
                fp::response_time_from(higher, task, start).map(|r| (r, true, point))
            };
            match outcome {
                Some(entry) => scratch.push(entry),
                None => {
                    self.tasks.remove(top + pos);
                    return false;
                }
            }
        }
        self.items.insert(pos, item);
        self.resp.truncate(pos);
        self.exact.truncate(pos);
        self.point.truncate(pos);
        self.resp.extend(scratch.iter().map(|e| e.0));
        self.exact.extend(scratch.iter().map(|e| e.1));
        self.point.extend(scratch.iter().map(|e| e.2));
        true
    }
}

/// The time demand W(t) = B + C + Σ_hp ⌈(t + J_j)/T_j⌉C_j of `task` at its
/// deadline point t = D − J, saturating; `Time::MAX` when the point test
/// does not apply (D > T, or J > D). W(t) ≤ t is a sufficient test (the
/// least fixed point is then ≤ t); `false` means "run the exact RTA".
fn point_demand(higher: &[Task], task: &Task) -> Time {
    if task.deadline > task.period || task.jitter > task.deadline {
        return Time::MAX;
    }
    higher
        .iter()
        .fold(task.blocking.saturating_add(task.wcet), |s, h| {
            s.saturating_add(point_jobs(task, h))
        })
}

/// The demand of `h` in `task`'s deadline-point window: ⌈(D − J + J_h)/T_h⌉·C_h.
fn point_jobs(task: &Task, h: &Task) -> Time {
    let t = task.deadline.saturating_sub(task.jitter);
    t.saturating_add(h.jitter)
        .div_ceil(h.period)
        .saturating_mul(h.wcet)
}

/// A lower bound on the fixed point w of `task` placed right below `above`
/// (whose response time is `above_resp`): w ≥ w_above + B + C. Every
/// interference term of `above` also delays `task`, and `above` itself adds
/// at least C_above, so W_task(t) ≥ B + C + W_above(t) − B_above; with
/// B_above = 0 no t below w_above can be a fixed point of W_task and
/// W_task(w) ≥ B + C + w_above. Only when `above` has D ≤ T (then its
/// response time is J + w of job 0) and no blocking; otherwise 0.
fn chain_start(above: &Task, above_resp: Time, task: &Task) -> Time {
    if above.blocking != 0 || above.deadline > above.period {
        return 0;
    }
    above_resp
        .saturating_sub(above.jitter)
        .saturating_add(task.blocking)
        .saturating_add(task.wcet)
}

/// Whether every task of `tasks[top..]` (priority order, below the
/// servers `tasks[..top]`, which are not analysed) meets its deadline; the
/// response times of `tasks[top..]` go to `resp`.
fn schedulable_into(tasks: &[Task], top: usize, resp: &mut Vec<Time>) -> bool {
    resp.clear();
    for i in top..tasks.len() {
        let start = match i.checked_sub(1) {
            Some(a) if a >= top => chain_start(&tasks[a], resp[a - top], &tasks[i]),
            _ => 0,
        };
        match fp::response_time_from(&tasks[..i], &tasks[i], start) {
            Some(r) => resp.push(r),
            None => return false,
        }
    }
    true
}

/// [`fp::max_top_priority_wcet`] for a core that is schedulable on its own,
/// with `resp` its response times, faster on cores whose tasks all have
/// J = 0 and D ≤ T (same answer, tested); other cores go to fp. With
/// servers (the first `top` tasks of `core`, jittered) the new task goes
/// below them and [`fp::max_wcet_below_top`] answers (seed 003 §IV's
/// MaximalSplit with R' ≤ D, §III.B).
///
/// For each τ_k in priority order, with `best` the largest C' still allowed:
/// 1. one warm-started RTA of τ_k with the new task at C' = `best` (from
///    τ_k's response time without it); if τ_k meets its deadline, it does
///    not lower `best`;
/// 2. otherwise the largest admissible C' is
///    max_t ⌊(t − B_k − C_k − Σ_hp ⌈t/T_j⌉C_j)/⌈t/T'⌉⌋ over the scheduling
///    points t ≤ D_k of the time-demand test (Lehoczky, Sha & Ding 1989; seed
///    003 footnote 4). Either the reduced set of Bini & Buttazzo
///    ("Schedulability analysis of periodic fixed priority systems", IEEE TC
///    53(11), 2004, Theorem 2: P_0(t) = {t}, P_j(t) = P_{j−1}(⌊t/T_j⌋T_j) ∪
///    P_{j−1}(t) from t = D_k over the interferers, the new task included),
///    or all multiples of the interferers' periods, swept in increasing order
///    with W(t) updated incrementally ([`sweep_max_top_wcet`]), whichever is
///    cheaper.
///    The reduced set depends on the periods only, so it is exact for every
///    C'. Points below B_k + C_k + Σ_hp C_j admit nothing, nor do the points
///    the recursion derives from them (they are smaller), so they are pruned.
fn max_top_wcet(
    core: &[Task],
    top: usize,
    resp: &[Time],
    period: Time,
    deadline: Time,
    cap: Time,
    scratch: &mut PointScratch,
) -> Time {
    if top > 0 {
        // `cap` is C − 1 of the task being split.
        let whole = cap.saturating_add(1);
        return fp::max_wcet_below_top(core, top, period, deadline, whole, cap).unwrap_or(0);
    }
    let PointScratch {
        points,
        periods,
        sweep,
    } = scratch;
    let plain = core.iter().all(|t| t.jitter == 0 && t.deadline <= t.period);
    if !plain {
        return fp::max_top_priority_wcet(core, period, deadline, cap).unwrap_or(0);
    }
    let mut best = cap.min(deadline);
    for k in 0..core.len() {
        if best == 0 {
            break;
        }
        let (higher, task) = (&core[..k], &core[k]);
        if fits_below_new_task(higher, task, period, best, resp[k]) {
            continue;
        }
        // Points of the full set: the multiples of each interferer's period.
        let linear = higher.iter().fold(task.deadline / period, |s, h| {
            s.saturating_add(task.deadline / h.period)
        });
        if linear > fp::MAX_SCHEDULING_POINTS {
            // Long deadlines over short periods: sweeping every point would
            // take as long as D/T (10^12 steps for D = 1000 s, T' = 1 ns);
            // fp's reference answers by a search whose cost does not grow
            // with D/T. `best` only ever decreases, so it is a valid cap.
            return fp::max_top_priority_wcet(core, period, deadline, best).unwrap_or(0);
        }
        // A reduced point costs k + 1 divisions, a swept point about as much
        // as three (measured): use the reduced set while it is cheaper.
        let limit = usize::try_from(linear.saturating_mul(3) / (k as Time + 2))
            .unwrap_or(usize::MAX)
            .max(4);
        let found = match reduced_points(higher, task, period, limit, points, periods) {
            true => points
                .iter()
                .map(|&t| slack_per_job(higher, task, period, t))
                .max()
                .flatten(),
            false => sweep_max_top_wcet(higher, task, period, sweep),
        };
        // A core schedulable on its own admits C' = 0 at some point.
        debug_assert!(found.is_some(), "core not schedulable on its own");
        best = best.min(found.unwrap_or(0));
    }
    best
}

/// The reduced scheduling points of Bini & Buttazzo (IEEE TC 53(11), 2004,
/// Theorem 2) for τ below the interferers (the higher-priority tasks and the
/// new task of period T'): P_0(t) = {t}, P_j(t) = P_{j−1}(⌊t/T_j⌋T_j) ∪
/// P_{j−1}(t) from t = D, largest period first (its floors add the fewest
/// points). The set depends on the periods only, so "∃t ∈ P: W(t) +
/// ⌈t/T'⌉C' ≤ t" is exact for every C'. Points below B + C + Σ_hp C_j admit
/// nothing, nor do the points derived from them (smaller), so they are
/// dropped. Fills `points`; `false` if it would exceed `limit` points.
fn reduced_points(
    higher: &[Task],
    task: &Task,
    period: Time,
    limit: usize,
    points: &mut Vec<Time>,
    periods: &mut Vec<Time>,
) -> bool {
    let floor_demand = higher
        .iter()
        .fold(task.blocking.saturating_add(task.wcet), |s, h| {
            s.saturating_add(h.wcet)
        });
    periods.clear();
    periods.push(period);
    periods.extend(higher.iter().map(|h| h.period));
    periods.sort_unstable_by(|a, b| b.cmp(a));
    points.clear();
    points.push(task.deadline);
    for &p in periods.iter() {
        let n = points.len();
        for i in 0..n {
            let t = points[i];
            let floor = t / p * p;
            if floor >= floor_demand && floor != t {
                points.push(floor);
            }
        }
        if points.len() > limit {
            return false;
        }
    }
    true
}

/// g(t) = ⌊(t − W(t))/⌈t/T'⌉⌋ with W(t) = B + C + Σ_hp ⌈t/T_j⌉C_j, or
/// `None` if W(t) > t.
fn slack_per_job(higher: &[Task], task: &Task, period: Time, t: Time) -> Option<Time> {
    let demand = higher
        .iter()
        .fold(task.blocking.saturating_add(task.wcet), |s, h| {
            s.saturating_add(t.div_ceil(h.period).saturating_mul(h.wcet))
        });
    t.checked_sub(demand)
        .map(|slack| slack / t.div_ceil(period))
}

/// max over all scheduling points t ≤ D (multiples of T' and of the
/// higher-priority periods, and D) of g(t) = ⌊(t − W(t))/⌈t/T'⌉⌋ with
/// W(t) = B + C + Σ_hp ⌈t/T_j⌉C_j, or `None` if no point has W(t) ≤ t.
///
/// Branch and bound over blocks of windows of T' (window a is
/// ((a−1)·T', a·T']), latest blocks first since late windows usually hold
/// the maximum: every t in windows a..=b has t ≤ min(b·T', D), W(t) ≥
/// W((a−1)·T' + 1) and ⌈t/T'⌉ ≥ a, so g(t) ≤ (min(b·T', D) − W((a−1)·T' +
/// 1))/a; a block whose bound cannot beat the best value found is dropped,
/// others are halved down to [`BLOCK_WINDOWS`] windows and swept by
/// [`sweep_range`]. `scratch` holds the heap and the block stack.
fn sweep_max_top_wcet(
    higher: &[Task],
    task: &Task,
    period: Time,
    scratch: &mut SweepScratch,
) -> Option<Time> {
    let SweepScratch {
        heap: queue,
        blocks,
    } = scratch;
    let own = task.blocking.saturating_add(task.wcet);
    let windows = task.deadline.div_ceil(period);
    let mut found: Option<Time> = None;
    blocks.clear();
    blocks.push((1, windows));
    while let Some((a, b)) = blocks.pop() {
        let start = (a - 1).saturating_mul(period);
        let end = b.saturating_mul(period).min(task.deadline);
        let floor = higher.iter().fold(own, |s, h| {
            s.saturating_add((start / h.period + 1).saturating_mul(h.wcet))
        });
        let Some(room) = end.checked_sub(floor) else {
            continue; // W(t) > t everywhere in the block
        };
        if found.is_some_and(|f| room / a <= f) {
            continue;
        }
        if b - a < BLOCK_WINDOWS {
            found = sweep_range(higher, task, period, start, end, found, queue);
        } else {
            let mid = a + (b - a) / 2;
            blocks.push((a, mid));
            blocks.push((mid + 1, b));
        }
    }
    found
}

/// Windows of T' swept at once by [`sweep_max_top_wcet`] (tuned on the
/// benchmark workload: fewer bounds vs. fewer swept points).
const BLOCK_WINDOWS: Time = 4;

/// max(`found`, max g(t) over the points t in (`from`, `to`]); `to` itself
/// is a point. Sweeps the points in increasing order, updating W(t) and
/// ⌈t/T'⌉ at each release instead of dividing (W is constant on
/// (l·T_j, (l+1)·T_j]). A run of consecutive points of one interferer with no
/// other release in between is collapsed to its last point: along it
/// t − W(t) grows by T_j − C_j ≥ 0 per point (or, for the new task, t grows
/// by T' while ⌈t/T'⌉ grows by one and t − W ≤ ⌈t/T'⌉·T'), so g is
/// non-decreasing along the run. `queue` is scratch space.
fn sweep_range(
    higher: &[Task],
    task: &Task,
    period: Time,
    from: Time,
    to: Time,
    mut found: Option<Time>,
    queue: &mut Vec<(Time, usize)>,
) -> Option<Time> {
    let own = task.blocking.saturating_add(task.wcet);
    let collapse = higher.iter().all(|h| h.wcet <= h.period);
    // State for t just above `from`: `queue` is a min-heap of (end of the
    // current constant piece, interferer); the new task is interferer
    // `higher.len()`. A sorted array is a valid heap.
    let new_task = higher.len();
    let mut demand = higher.iter().fold(own, |s, h| {
        s.saturating_add((from / h.period + 1).saturating_mul(h.wcet))
    });
    let mut jobs_new: Time = from / period + 1;
    queue.clear();
    queue.extend(
        higher
            .iter()
            .enumerate()
            .map(|(j, h)| ((from / h.period + 1).saturating_mul(h.period), j)),
    );
    queue.push((jobs_new.saturating_mul(period), new_task));
    queue.sort_unstable();
    // Divide only when the point beats `found`: slack ≥ (found + 1)·jobs.
    let mut consider = |t: Time, demand: Time, jobs: Time| {
        if let Some(slack) = t.checked_sub(demand) {
            let beats = match found {
                None => true,
                Some(f) => (slack as u128) >= (f as u128 + 1) * jobs as u128,
            };
            if beats {
                found = Some(slack / jobs);
            }
        }
    };
    loop {
        let (first, who) = queue[0];
        if first >= to {
            consider(to, demand, jobs_new);
            return found;
        }
        let second = match (queue.get(1), queue.get(2)) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            _ => Time::MAX,
        }
        .min(to);
        let (p, c) = if who == new_task {
            (period, 0)
        } else {
            (higher[who].period, higher[who].wcet)
        };
        // Points first, first + p, …, last < second of `who` alone.
        let run = if collapse && first.saturating_add(p) < second {
            (second - 1 - first) / p
        } else {
            0
        };
        let last = first + run * p;
        if who == new_task {
            consider(last, demand, jobs_new + run);
        } else {
            consider(last, demand.saturating_add(run.saturating_mul(c)), jobs_new);
        }
        // Past `last`: `who` gains run + 1 jobs, and every interferer whose
        // piece also ends at `last` (a tie, only when run = 0) one job.
        let mut steps = run + 1;
        loop {
            let (at, j) = queue[0];
            let p = if j == new_task {
                jobs_new += steps;
                period
            } else {
                demand = demand.saturating_add(steps.saturating_mul(higher[j].wcet));
                higher[j].period
            };
            queue[0].0 = at.saturating_add(steps.saturating_mul(p));
            sift_down(queue);
            if queue[0].0 != last {
                break;
            }
            steps = 1;
        }
    }
}

/// Restore the min-heap order of `heap` (by time) after its root grew.
fn sift_down(heap: &mut [(Time, usize)]) {
    let n = heap.len();
    let item = heap[0];
    let mut i = 0;
    loop {
        let l = 2 * i + 1;
        if l >= n {
            break;
        }
        let r = l + 1;
        let c = if r < n && heap[r].0 < heap[l].0 { r } else { l };
        if heap[c].0 >= item.0 {
            break;
        }
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = item;
}

/// Whether `task` (J = 0, D ≤ T) meets its deadline below `higher` and a new
/// highest-priority task (C' = `wcet`, T' = `period`, no jitter); the RTA
/// starts from `resp`, its response time without the new task.
fn fits_below_new_task(higher: &[Task], task: &Task, period: Time, wcet: Time, resp: Time) -> bool {
    let Some(base) = task.blocking.checked_add(task.wcet) else {
        return false;
    };
    let mut w = resp;
    loop {
        let mut next = match w
            .div_ceil(period)
            .checked_mul(wcet)
            .and_then(|x| x.checked_add(base))
        {
            Some(v) => v,
            None => return false,
        };
        for h in higher {
            match w
                .div_ceil(h.period)
                .checked_mul(h.wcet)
                .and_then(|x| next.checked_add(x))
            {
                Some(v) => next = v,
                None => return false,
            }
        }
        if next > task.deadline {
            return false;
        }
        if next == w {
            return true;
        }
        w = next;
    }
}

fn dm_less(a: &Task, b: &Task) -> bool {
    (a.deadline, a.period, a.id) < (b.deadline, b.period, b.id)
}

fn rm_less(a: &Task, b: &Task) -> bool {
    (a.period, a.deadline, a.id) < (b.period, b.deadline, b.id)
}

fn finish(tasks: &[Task], cores: &mut [Core], unplaced: Option<Unplaced>) -> Partition {
    for core in cores.iter_mut() {
        if core.top > 0 {
            core.make_exact::<true>();
        } else {
            core.make_exact::<false>();
        }
    }
    let cores: Vec<Vec<Piece>> = cores.iter().map(Core::pieces).collect();
    Partition {
        tasks: placements(tasks, &cores),
        cores,
        schedulable: unplaced.is_none(),
        unplaced,
    }
}

// ---------------------------------------------------------------------------
// Bin packing without splitting.

fn fit(
    tasks: &[Task],
    m: usize,
    rule: FitRule,
    order: Order,
    priority: PriorityRule,
    top: &[Task],
) -> Partition {
    let mut cores: Vec<Core> = (0..m)
        .map(|_| {
            let mut core = Core::with_capacity(tasks.len() + top.len());
            core.reset(top);
            core
        })
        .collect();
    // Exact Σ C/T per core, for best/worst fit.
    let mut util: Vec<RatioSum> = vec![RatioSum::zero(); m];
    let mut candidates: Vec<usize> = Vec::with_capacity(m);
    let mut scratch: Vec<(Time, bool, Time)> = Vec::new();
    let mut next_fit_core = 0;
    for index in task_order(tasks, order) {
        let task = tasks[index];
        let item = Item {
            task,
            index,
            piece: 0,
            offset: 0,
        };
        candidates.clear();
        match rule {
            FitRule::FirstFit => candidates.extend(0..m),
            FitRule::NextFit => candidates.extend(next_fit_core..m),
            FitRule::BestFit | FitRule::WorstFit => {
                candidates.extend(0..m);
                // Stable sort: ties keep the lowest index first.
                candidates.sort_by(|&a, &b| match rule {
                    FitRule::BestFit => util[b].cmp(&util[a]),
                    _ => util[a].cmp(&util[b]),
                });
            }
        }
        let placed = candidates
            .iter()
            .copied()
            .find(|&j| accept(&mut cores[j], item, priority, &mut scratch));
        match placed {
            Some(j) => {
                util[j].add(task.wcet, task.period);
                if rule == FitRule::NextFit {
                    next_fit_core = j;
                }
            }
            None => {
                let unplaced = Unplaced {
                    task: task.id,
                    index,
                    piece: 0,
                    wcet: task.wcet,
                    reason: Failure::NoCoreLeft,
                };
                return finish(tasks, &mut cores, Some(unplaced));
            }
        }
    }
    finish(tasks, &mut cores, None)
}

/// Add `item` to `core` if the core stays schedulable under `priority`.
fn accept(
    core: &mut Core,
    item: Item,
    priority: PriorityRule,
    scratch: &mut Vec<(Time, bool, Time)>,
) -> bool {
    match priority {
        PriorityRule::DeadlineMonotonic if core.top > 0 => {
            core.try_insert_by::<true>(item, dm_less, scratch)
        }
        PriorityRule::DeadlineMonotonic => core.try_insert_by::<false>(item, dm_less, scratch),
        PriorityRule::RateMonotonic if core.top > 0 => {
            core.try_insert_by::<true>(item, rm_less, scratch)
        }
        PriorityRule::RateMonotonic => core.try_insert_by::<false>(item, rm_less, scratch),
        PriorityRule::Audsley => {
            let top = core.top;
            let mut candidate = core.tasks[top..].to_vec();
            candidate.push(item.task);
            let Some(order) = fp::audsley_order_below(&core.tasks[..top], &candidate) else {
                return false;
            };
            // Map the order back to items (equal tasks are interchangeable).
            let mut pool: Vec<Option<Item>> = core.items.iter().copied().map(Some).collect();
            pool.push(Some(item));
            let mut items = Vec::with_capacity(order.len());
            for t in &order {
                let slot = pool
                    .iter_mut()
                    .find(|s| s.is_some_and(|it| it.task == *t))
                    .expect("audsley_order returns a permutation");
                items.push(slot.take().expect("slot is some"));
            }
            let resp: Option<Vec<Time>> = if top == 0 {
                fp::response_times(&order).into_iter().collect()
            } else {
                core.tasks.truncate(top);
                core.tasks.extend_from_slice(&order);
                (top..core.tasks.len())
                    .map(|i| fp::response_time(&core.tasks[..i], &core.tasks[i]))
                    .collect()
            };
            core.resp = resp.expect("audsley_order returns a schedulable order");
            if top == 0 {
                core.tasks = order;
            }
            core.items = items;
            core.set_exact::<true>();
            true
        }
    }
}

// ---------------------------------------------------------------------------
// PDMS_HPTS and PDMS_HPTS_DS (seed 003 Algorithms 1 and 2).

/// Dequeue order of the unallocated queue: `Less` = `a` is dequeued first.
fn dequeue_cmp(order: Order, a: &Item, b: &Item) -> Ordering {
    let key = match order {
        Order::Given => Ordering::Equal,
        Order::DecreasingUtilization => {
            cmp_ratio(b.task.wcet, b.task.period, a.task.wcet, a.task.period)
        }
        Order::DecreasingSize => {
            cmp_ratio(b.task.wcet, b.task.deadline, a.task.wcet, a.task.deadline)
        }
    };
    key.then(a.task.id.cmp(&b.task.id))
        .then(a.index.cmp(&b.index))
        .then(a.piece.cmp(&b.piece))
}

/// The unallocated queue, kept sorted so that `pop` dequeues the next item
/// (the last element is the first in `order`).
struct Queue {
    order: Order,
    items: Vec<Item>,
}

impl Queue {
    /// Enqueue (seed 003 §IV) / EnqueueDS (§V): insert at the item's place in
    /// the allocation order, by its current parameters (a remainder τ'' by
    /// its own size (C − C')/(D − C'), fix (d)).
    fn enqueue(&mut self, item: Item) {
        let order = self.order;
        let pos = self
            .items
            .partition_point(|x| dequeue_cmp(order, &item, x) == Ordering::Less);
        self.items.insert(pos, item);
    }

    fn dequeue(&mut self) -> Option<Item> {
        self.items.pop()
    }
}

/// Scratch space for [`max_top_wcet`].
#[derive(Default)]
struct PointScratch {
    points: Vec<Time>,
    periods: Vec<Time>,
    sweep: SweepScratch,
}

/// Scratch space for [`sweep_max_top_wcet`]: the event heap of
/// [`sweep_range`] and the stack of window blocks.
#[derive(Default)]
struct SweepScratch {
    heap: Vec<(Time, usize)>,
    blocks: Vec<(Time, Time)>,
}

/// Scratch space for HPTaskSplit, reused across cores.
#[derive(Default)]
struct SplitScratch {
    items: Vec<Item>,
    tasks: Vec<Task>,
    resp: Vec<Time>,
    points: PointScratch,
    removed: Option<RatioSum>,
    gained: Option<RatioSum>,
}

/// Algorithm 2 with Algorithm 1, cores j = 1..m one at a time.
/// What [`pdms_hpts`] returns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Build {
    /// `Some(partition)`.
    Partition,
    /// `None` if every task was placed, else `Some` of an empty partition.
    Decision,
}

fn pdms_hpts(
    tasks: &[Task],
    m: usize,
    order: Order,
    build: Build,
    top: &[Task],
    whole: &[bool],
) -> Option<Partition> {
    // Scratch space is kept per thread across calls: partitioning many
    // small task sets is the common use and would otherwise spend a tenth
    // of its time in the allocator.
    thread_local! {
        static WORKSPACE: std::cell::RefCell<Workspace> = Default::default();
    }
    WORKSPACE.with(|ws| match ws.try_borrow_mut() {
        Ok(mut ws) if top.is_empty() => {
            pdms_hpts_in::<false>(tasks, m, order, build, top, whole, &mut ws)
        }
        Ok(mut ws) => pdms_hpts_in::<true>(tasks, m, order, build, top, whole, &mut ws),
        Err(_) if top.is_empty() => {
            let ws = &mut Workspace::default();
            pdms_hpts_in::<false>(tasks, m, order, build, top, whole, ws)
        }
        Err(_) => {
            let ws = &mut Workspace::default();
            pdms_hpts_in::<true>(tasks, m, order, build, top, whole, ws)
        }
    })
}

/// Reusable scratch space of [`pdms_hpts`].
#[derive(Default)]
struct Workspace {
    cores: Vec<Core>,
    queue: Vec<Item>,
    order: Vec<usize>,
    keys: Vec<(f64, usize)>,
    split: SplitScratch,
    resp: Vec<(Time, bool, Time)>,
}

/// `S`: whether `top` (the servers) is non-empty ([`Core::top`]).
fn pdms_hpts_in<const S: bool>(
    tasks: &[Task],
    m: usize,
    order: Order,
    build: Build,
    top: &[Task],
    whole: &[bool],
    ws: &mut Workspace,
) -> Option<Partition> {
    let Workspace {
        cores,
        queue: queue_items,
        order: idx,
        keys,
        split: scratch,
        resp: resp_scratch,
    } = ws;
    task_order_into(tasks, order, idx, keys);
    // Reverse of the allocation order, so that pop() yields the first task.
    queue_items.clear();
    queue_items.extend(idx.iter().rev().map(|&index| Item {
        task: tasks[index],
        index,
        piece: 0,
        offset: 0,
    }));
    let mut queue = Queue {
        order,
        items: std::mem::take(queue_items),
    };
    if cores.len() < m {
        cores.resize_with(m, || Core::with_capacity(tasks.len()));
    }
    let cores = &mut cores[..m];
    cores.iter_mut().for_each(|c| c.reset(top));
    let mut outcome = None;
    let mut j = 0;
    while let Some(item) = queue.dequeue() {
        // Fix (b): Algorithm 2 does not bound j; tasks left after the last
        // core has been closed mean the set is not schedulable.
        if j == m {
            outcome = Some(Unplaced {
                task: item.task.id,
                index: item.index,
                piece: item.piece,
                wcet: item.task.wcet,
                reason: Failure::NoCoreLeft,
            });
            break;
        }
        // EnqueueHP + IsSchedulable; on failure the core is left as it was
        // (Allocated_Queue_j ← Old_Allocated_Queue_j).
        if cores[j].try_insert_by::<S>(item, dm_less, resp_scratch) {
            continue;
        }
        hp_task_split::<S>(&mut cores[j], &mut queue, item, scratch, whole);
        j += 1; // Available_j ← FALSE
    }
    *queue_items = queue.items;
    match build {
        Build::Partition => Some(finish(tasks, cores, outcome)),
        Build::Decision if outcome.is_none() => None,
        Build::Decision => Some(Partition {
            cores: Vec::new(),
            tasks: Vec::new(),
            schedulable: false,
            unplaced: outcome,
        }),
    }
}

/// Seed 003 Algorithm 1 (HPTaskSplit) for the core `core`, on which `failed`
/// (τ_f) does not fit. The core is closed by the caller afterwards.
fn hp_task_split<const S: bool>(
    core: &mut Core,
    queue: &mut Queue,
    failed: Item,
    s: &mut SplitScratch,
    whole: &[bool],
) {
    // EnqueueHP(Allocated_Queue_j, τ_f) on a copy, so that the restore
    // branch needs no undo.
    s.items.clear();
    s.items.extend_from_slice(&core.items);
    let pos = s.items.partition_point(|x| dm_less(&x.task, &failed.task));
    s.items.insert(pos, failed);
    let top = core.top::<S>();
    s.tasks.clear();
    s.tasks.extend_from_slice(&core.tasks[..top]);
    s.tasks.extend(s.items.iter().map(|it| it.task));
    // while ¬IsSchedulable: τ ← DequeueHP. Removals are always from the top
    // of the pieces, below the `top` servers: after k removals the core is
    // s.tasks[k..], the servers moved down one place over each removed
    // piece. k = 0 is known to fail; k = len (no piece left) always passes.
    let mut k = 1;
    if top > 0 {
        s.tasks.copy_within(0..top, 1);
    }
    while !schedulable_into(&s.tasks[k..], top, &mut s.resp) {
        k += 1;
        if top > 0 {
            s.tasks.copy_within(k - 1..k - 1 + top, k);
        }
    }
    let last = s.items[k - 1];
    let rest = &s.tasks[k..];
    // (τ', τ'') = MaximalSplit(Allocated_Queue_j, τ) ([`maximal_split`] /
    // [`maximal_split_with`], by the faster equivalent [`max_top_wcet`]).
    // The core without τ is schedulable; C' < C because the core with all
    // of τ on top was not.
    let kept_whole = whole.get(last.index).copied().unwrap_or(false);
    let first = if is_splittable(&last.task) && !kept_whole && last.task.wcet > 0 {
        let (p, d, cap) = (last.task.period, last.task.deadline, last.task.wcet - 1);
        max_top_wcet(rest, top, &s.resp, p, d, cap, &mut s.points)
    } else {
        0
    };
    debug_assert!(first < last.task.wcet || last.task.wcet == 0);
    // if Removed_Size − S(τ') ≥ S(τ_f): restore, i.e. Σ_removed C/D ≥
    // C_f/D_f + C'/D. Decided in f64 when the sides differ by more than
    // 1e-9 relative (far above the ~1e-14 rounding of these short sums),
    // else with exact rationals.
    let removed_items = &s.items[..k];
    let removed_f: f64 = removed_items
        .iter()
        .map(|it| it.task.wcet as f64 / it.task.deadline as f64)
        .sum();
    let gained_f = failed.task.wcet as f64 / failed.task.deadline as f64
        + first as f64 / last.task.deadline as f64;
    let restore = if removed_f > gained_f * (1.0 + 1e-9) {
        true
    } else if removed_f < gained_f * (1.0 - 1e-9) {
        false
    } else {
        let removed = s.removed.get_or_insert_with(RatioSum::zero);
        removed.clear();
        for it in removed_items {
            removed.add(it.task.wcet, it.task.deadline);
        }
        let gained = s.gained.get_or_insert_with(RatioSum::zero);
        gained.clear();
        gained.add(failed.task.wcet, failed.task.deadline);
        gained.add(first, last.task.deadline);
        removed.cmp(gained) != Ordering::Less
    };
    if restore {
        // Unallocated_Queue ← Old_Unallocated_Queue; Allocated_Queue_j ←
        // Old_Allocated_Queue_j. Fix (a): Old_Unallocated_Queue was saved
        // after τ_f was dequeued, so τ_f must go back or it is lost.
        queue.enqueue(failed);
        return;
    }
    // The tasks removed before τ (the loop's Enqueue), by the queue's order.
    for &it in &s.items[..k - 1] {
        queue.enqueue(it);
    }
    core.items.clear();
    core.tasks.truncate(top);
    core.resp.clear();
    if first > 0 {
        let (head, mut tail) = split(&last.task, first);
        // EnqueueHP(Allocated_Queue_j, τ'): τ' keeps τ's (D, T, id), which
        // was the highest priority left, so it goes on top (below the
        // servers); its response time R' is C' (no jitter or blocking, see
        // is_splittable), or with servers its RTA below them, which
        // MaximalSplit kept within D.
        let head_resp = if top == 0 {
            first
        } else {
            fp::response_time(&core.tasks[..top], &head)
                .expect("MaximalSplit keeps τ' within its deadline")
        };
        core.items.push(Item { task: head, ..last });
        core.tasks.push(head);
        core.resp.push(head_resp);
        // Enqueue(Unallocated_Queue, τ''): τ'' = (C − C', T, D − R'),
        // released R' after τ' (seed 003 §III.B; R' = C' without servers,
        // which is `split`'s D − C'), by its own size (fix (d)).
        tail.deadline = last.task.deadline - head_resp;
        queue.enqueue(Item {
            task: tail,
            index: last.index,
            piece: last.piece + 1,
            offset: last.offset + head_resp,
        });
    } else {
        // Fix (c): MaximalSplit found no room (C' = 0). No empty piece is
        // placed; τ goes back whole and the core keeps the rest, which is
        // still better than restoring by the test above. Under decreasing
        // size this branch cannot be reached (every removed task is at least
        // as large as τ_f, so the restore test holds).
        queue.enqueue(last);
    }
    let above = core.items.len();
    for &it in &s.items[k..] {
        core.items.push(it);
        core.tasks.push(it.task);
    }
    // Response times below τ', warm-started from those without it (s.resp,
    // from the last schedulability check above).
    for i in above..core.items.len() {
        let task = &core.tasks[top + i];
        let mut start = s.resp[i - above].saturating_sub(task.jitter);
        if i > 0 {
            start = start.max(chain_start(
                &core.tasks[top + i - 1],
                core.resp[i - 1],
                task,
            ));
        }
        let r = fp::response_time_from(&core.tasks[..top + i], task, start)
            .expect("MaximalSplit keeps the core schedulable");
        core.resp.push(r);
    }
    core.set_exact::<S>();
}

#[cfg(test)]
mod tests {
    use super::*;

    const DS: Heuristic = Heuristic::PdmsHptsDs;

    fn ff(order: Order) -> Heuristic {
        Heuristic::Fit {
            rule: FitRule::FirstFit,
            order,
            priority: PriorityRule::DeadlineMonotonic,
        }
    }

    fn ids(core: &[Piece]) -> Vec<(usize, usize, Time)> {
        core.iter().map(|p| (p.task, p.piece, p.wcet)).collect()
    }

    #[test]
    fn first_fit_fails_ds_splits() {
        // m = 2, three tasks (C 6, T = D 10), U = 0.6 each, total 1.8.
        let ts: Vec<Task> = (0..3).map(|i| Task::implicit(i, 6, 10)).collect();
        // First fit: 0.6 + 0.6 on one core gives R = 12 > 10, so one task per
        // core and the third does not fit.
        let p = partition(&ts, 2, ff(Order::DecreasingSize));
        assert!(!p.schedulable);
        let u = p.unplaced.unwrap();
        assert_eq!((u.task, u.reason), (2, Failure::NoCoreLeft));
        // PDMS_HPTS_DS: core 0 takes τ0; τ1 fails (R1 = 12). HPTaskSplit:
        // DequeueHP removes τ0 (ties by id), τ1 alone fits. MaximalSplit of
        // τ0 over {τ1}: τ1 meets D iff ∃t ∈ (0,10]: 6 + ⌈t/10⌉C' ≤ t, best
        // at t = 10: C' ≤ 4. Removed_Size 0.6 − S(τ0') 0.4 < S(τ1) 0.6: split.
        // Core 0 = [τ0' (4,10,10), τ1 (R = 10)]; τ0'' = (2, 10, D 6) at
        // offset 4, size 1/3, queued after τ2. Core 1: τ2, then τ0'' on top
        // (D 6): R = 2; τ2: w = 6 + ⌈w/10⌉·2 = 8 ≤ 10.
        let p = partition(&ts, 2, DS);
        assert!(p.schedulable, "{p:?}");
        assert_eq!(ids(&p.cores[0]), vec![(0, 0, 4), (1, 0, 6)]);
        assert_eq!(ids(&p.cores[1]), vec![(0, 1, 2), (2, 0, 6)]);
        let tail = p.cores[1][0];
        assert_eq!((tail.offset, tail.deadline, tail.response_time), (4, 6, 2));
        assert_eq!(p.cores[0][1].response_time, 10);
        assert_eq!(p.cores[1][1].response_time, 8);
        assert_eq!(p.tasks[0].cores, vec![0, 1]);
        assert_eq!(p.split_tasks(), 1);
    }

    /// The set above with τ0 kept whole: MaximalSplit gives it C' = 0, the
    /// restore branch puts it back on core 0 and τ1 goes on; τ1 is split
    /// on core 1 instead and its remainder finds no core. τ0 is never cut.
    #[test]
    fn kept_whole_tasks_are_never_split() {
        let ts: Vec<Task> = (0..3).map(|i| Task::implicit(i, 6, 10)).collect();
        let p = partition_keeping(&ts, 2, DS, &[], &[true]);
        assert_eq!(p.tasks[0].cores.len(), 1, "{p:?}");
        assert!(p.cores.iter().flatten().all(|x| x.task != 0 || x.wcet == 6));
        assert!(!p.schedulable);
        // Nothing kept whole: the split of `first_fit_fails_ds_splits`.
        assert!(partition_keeping(&ts, 2, DS, &[], &[false; 3]).schedulable);
    }

    #[test]
    fn restore_branch_requeues_failed_task() {
        // Core 0 gets τa = (5,10,10) S 0.5, then τb = (9,20,20) S 0.45:
        // Rb: w = 9 + ⌈w/10⌉5 = 19 ≤ 20. τf = (2,20,20) S 0.1 fails:
        // w = 2 + ⌈w/10⌉5 + ⌈w/20⌉9 = 21 > 20. HPTaskSplit removes τa;
        // {τb, τf} fits. MaximalSplit of τa (T = D = 10) over {τb, τf}:
        // τb: t=10: 9 + C' ≤ 10 → 1; t=20: 9 + 2C' ≤ 20 → 5: 5.
        // τf: t=10: 2 + 9 > 10; t=20: 11 + 2C' ≤ 20 → 4: 4. So C' = 4.
        // Removed_Size 0.5 − 0.4 = 0.1 ≥ S(τf) = 0.1 (equality, exact):
        // restore, and τf must go back to the queue (fix (a)) → core 1.
        let ts = [
            Task::implicit(0, 5, 10),
            Task::implicit(1, 9, 20),
            Task::implicit(2, 2, 20),
        ];
        let p = partition(&ts, 2, DS);
        assert!(p.schedulable, "{p:?}");
        assert_eq!(ids(&p.cores[0]), vec![(0, 0, 5), (1, 0, 9)]);
        assert_eq!(ids(&p.cores[1]), vec![(2, 0, 2)]);
        assert_eq!(p.split_tasks(), 0);
        // With one core: τf is not lost but reported (fix (b)).
        let p = partition(&ts, 1, DS);
        assert!(!p.schedulable);
        assert_eq!(p.unplaced.unwrap().task, 2);
    }

    #[test]
    fn zero_split_restores_under_ds() {
        // τa = (10,10,10) (S 1) on core 0; τf = (5,5,5) (S 1, id 1) has the
        // shorter deadline: on top, Ra = 10 + 2·5 > 10. HPTaskSplit removes
        // τf itself; MaximalSplit over {τa} is 0 (no slack). Removed 1 − 0 ≥
        // 1: restore; τf goes to core 1 (fix (a)/(c)).
        let ts = [Task::implicit(0, 10, 10), Task::implicit(1, 5, 5)];
        let p = partition(&ts, 2, DS);
        assert!(p.schedulable, "{p:?}");
        assert_eq!(ids(&p.cores[0]), vec![(0, 0, 10)]);
        assert_eq!(ids(&p.cores[1]), vec![(1, 0, 5)]);
    }

    #[test]
    fn zero_split_displaces_in_given_order() {
        // Given order: core 0 takes τa = (1,4,4) (S 0.25), then τf = (10,10,10)
        // (S 1) fails (R = 10 + 3). HPTaskSplit removes τa; {τf} fits with no
        // slack, so C' = 0 (fix (c)). Removed 0.25 − 0 < 1: no restore; τf
        // stays, τa goes back whole and lands on core 1.
        let ts = [Task::implicit(0, 1, 4), Task::implicit(1, 10, 10)];
        let p = partition(
            &ts,
            2,
            Heuristic::PdmsHpts {
                order: Order::Given,
            },
        );
        assert!(p.schedulable, "{p:?}");
        assert_eq!(ids(&p.cores[0]), vec![(1, 0, 10)]);
        assert_eq!(ids(&p.cores[1]), vec![(0, 0, 1)]);
    }

    #[test]
    fn remainder_split_again_spans_three_cores() {
        // τ0 = (9, T = D 10), S 0.9, then four tasks (5, 10, 10), S 0.5; m = 3.
        // Core 0: τ0; τ1 fails (R1 = 14). HPTaskSplit removes τ0, {τ1} fits;
        // MaximalSplit: 5 + C' ≤ 10 → C' = 5. Removed 0.9 − 0.5 < S(τ1): split.
        // Core 0 = [τ0' (5), τ1 (R 10)]; τ0'' = (4, 10, D 5), S 0.8, offset 5.
        // Core 1: τ0'' first; τ2 below it: w = 5 + 4 = 9 ≤ 10 fits; τ3 fails
        // (w = 5 + 4 + 5 = 14). HPTaskSplit: removing τ0'' (top) leaves
        // {τ2, τ3}, R3 = 10, fits; MaximalSplit of τ0'' (T 10, D 5) over
        // {τ2, τ3}: τ3 needs 10 + C' ≤ 10 → C' = 0. Removed 0.8 − 0 ≥ S(τ3)
        // 0.5: restore, τ3 back. Core 2: τ3, τ4 (R 10). All placed, τ0 on
        // cores 0 and 1.
        let mut ts = vec![Task::implicit(0, 9, 10)];
        ts.extend((1..5).map(|i| Task::implicit(i, 5, 10)));
        let p = partition(&ts, 3, DS);
        assert!(p.schedulable, "{p:?}");
        assert_eq!(ids(&p.cores[0]), vec![(0, 0, 5), (1, 0, 5)]);
        assert_eq!(ids(&p.cores[1]), vec![(0, 1, 4), (2, 0, 5)]);
        assert_eq!(ids(&p.cores[2]), vec![(3, 0, 5), (4, 0, 5)]);
        assert_eq!(p.tasks[0].cores, vec![0, 1]);
        validate(&ts, &p);
        // A remainder split again: τ0 = (3, 10), τ1 = (6, 15), τ2 = (11, 12),
        // τ3 = (8, 12), τ4 = (6, 12), m = 3; DS order τ2, τ3, τ4, τ1, τ0.
        // Core 0: τ2; τ3 below it (tie on D, T; id) misses (19 > 12). Remove
        // τ2; MaximalSplit over {τ3}: 8 + C' ≤ 12 → C' = 4; Removed 11/12 −
        // 4/12 < 8/12: split. τ2'' = (7, 12, D 8) at offset 4, size 7/8.
        // Core 1: τ2''; τ4 misses (6 + 7 > 12). Remove τ2''; MaximalSplit
        // over {τ4} (D' = 8): 6 + C' ≤ 12 → 6; 7/8 − 6/8 < 1/2: split again.
        // τ2''' = (1, 12, D 2) at offset 10. Core 2: τ2''', τ0 (R 4), τ1
        // (w = 6 + 3 + 1 = 10).
        let ts = [
            Task::implicit(0, 3, 10),
            Task::implicit(1, 6, 15),
            Task::implicit(2, 11, 12),
            Task::implicit(3, 8, 12),
            Task::implicit(4, 6, 12),
        ];
        let p = partition(&ts, 3, DS);
        assert!(p.schedulable, "{p:?}");
        assert_eq!(ids(&p.cores[0]), vec![(2, 0, 4), (3, 0, 8)]);
        assert_eq!(ids(&p.cores[1]), vec![(2, 1, 6), (4, 0, 6)]);
        assert_eq!(ids(&p.cores[2]), vec![(2, 2, 1), (0, 0, 3), (1, 0, 6)]);
        let last = p.cores[2][0];
        assert_eq!((last.offset, last.deadline, last.response_time), (10, 2, 1));
        assert_eq!(p.tasks[2].cores, vec![0, 1, 2]);
        assert_eq!(p.cores[2][2].response_time, 10);
        validate(&ts, &p);
    }

    #[test]
    fn theorem6_needs_heavy_tasks_on_own_cores() {
        // Input order, m = 2, U = 10/101 + 1 + 1/10 = 1.199 < 0.6003·2 +
        // 0.0928 = 1.2934, so Theorem 6 as stated would accept it. Core 0:
        // τ0 = (10, 101); τ1 = (100, 100) goes on top, R0 = 10 + 200 > 101.
        // HPTaskSplit removes τ1; MaximalSplit over {τ0}: t = 100: 10 + C' ≤
        // 100 → 90 (t = 101: 10 + 2C' ≤ 101 → 45), C' = 90; Removed 1 − 0.9 <
        // S(τ1): split. τ1'' = (10, 100, D 10), S = 1, goes to core 1 next
        // (input rank 1). τ2 = (1, 10) has D 10 = D(τ1'') and T 10 < 100, so
        // it goes on top and τ1'' misses (10 + 1 > 10); MaximalSplit of τ2
        // over {τ1''} is 0, Removed 0.1 ≥ 0.1: restore; no core left.
        let ts = [
            Task::implicit(0, 10, 101),
            Task::implicit(1, 100, 100),
            Task::implicit(2, 1, 10),
        ];
        let given = Heuristic::PdmsHpts {
            order: Order::Given,
        };
        let p = partition(&ts, 2, given);
        assert!(!p.schedulable);
        assert_eq!(p.unplaced.unwrap().task, 2);
        assert_eq!(ids(&p.cores[1]), vec![(1, 1, 10)]);
        // The proof's assumption (heavy tasks first, on their own cores) is
        // what decreasing size gives: τ1 alone on core 0, the rest on core 1.
        let p = partition(&ts, 2, DS);
        assert!(p.schedulable);
        // And the exact utilization test does not claim it (U(τ1) ≥ 0.6003).
        assert!(!crate::bounds::pdms_hpts_utilization_test(&ts, 2));
    }

    #[test]
    fn fit_rules_choose_cores() {
        // Decreasing utilization: 0.5, 0.4, 0.3, 0.2 with T = D = 10 (all
        // harmonic, so any core up to U = 1 passes).
        let ts = [
            Task::implicit(0, 5, 10),
            Task::implicit(1, 4, 10),
            Task::implicit(2, 3, 10),
            Task::implicit(3, 2, 10),
        ];
        let run = |rule| {
            let h = Heuristic::Fit {
                rule,
                order: Order::DecreasingUtilization,
                priority: PriorityRule::DeadlineMonotonic,
            };
            let p = partition(&ts, 3, h);
            assert!(p.schedulable);
            p.tasks.iter().map(|t| t.cores[0]).collect::<Vec<_>>()
        };
        // FF: 0.5→0, 0.4→0 (0.9), 0.3→1, 0.2→1.
        assert_eq!(run(FitRule::FirstFit), vec![0, 0, 1, 1]);
        // BF: 0.5→0; 0.4→0 (fullest); 0.3: core 0 at 0.9 fails → 1; 0.2:
        // cores 0 (0.9) fails, 1 (0.3) fullest that fits → 1.
        assert_eq!(run(FitRule::BestFit), vec![0, 0, 1, 1]);
        // WF: 0.5→0; 0.4→1 (empty, lowest index); 0.3→2; 0.2→2 (0.3 is the
        // emptiest).
        assert_eq!(run(FitRule::WorstFit), vec![0, 1, 2, 2]);
        // NF: same as FF here; with order 0.5, 0.3, 0.4 NF never goes back.
        assert_eq!(run(FitRule::NextFit), vec![0, 0, 1, 1]);
        let ts2 = [
            Task::implicit(0, 5, 10),
            Task::implicit(1, 6, 10),
            Task::implicit(2, 4, 10),
        ];
        let h = |rule| Heuristic::Fit {
            rule,
            order: Order::Given,
            priority: PriorityRule::DeadlineMonotonic,
        };
        let cores = |p: Partition| p.tasks.iter().map(|t| t.cores[0]).collect::<Vec<_>>();
        // FF: τ1 (0.6) does not fit with 0.5 → core 1; τ2 (0.4) back on core 0.
        assert_eq!(
            cores(partition(&ts2, 2, h(FitRule::FirstFit))),
            vec![0, 1, 0]
        );
        // NF: after τ1 moved to core 1, τ2 stays there (0.6 + 0.4 = 1, harmonic).
        assert_eq!(
            cores(partition(&ts2, 2, h(FitRule::NextFit))),
            vec![0, 1, 1]
        );
        let ts3 = [
            Task::implicit(0, 5, 10),
            Task::implicit(1, 6, 10),
            Task::implicit(2, 5, 10),
        ];
        // FF puts τ2 (0.5) back on core 0; NF cannot (core 1 at 0.6 is full).
        assert_eq!(
            cores(partition(&ts3, 2, h(FitRule::FirstFit))),
            vec![0, 1, 0]
        );
        assert!(!partition(&ts3, 2, h(FitRule::NextFit)).schedulable);
    }

    #[test]
    fn audsley_beats_dm_per_core() {
        // fp's example: τa = (3, 12, D 6), τb = (1, 12, D 7, J 5): DM misses,
        // the order (b, a) meets both deadlines. One core.
        let a = Task::new(0, 3, 12, 6);
        let b = Task {
            jitter: 5,
            ..Task::new(1, 1, 12, 7)
        };
        let with = |priority| Heuristic::Fit {
            rule: FitRule::FirstFit,
            order: Order::Given,
            priority,
        };
        assert!(!partition(&[a, b], 1, with(PriorityRule::DeadlineMonotonic)).schedulable);
        let p = partition(&[a, b], 1, with(PriorityRule::Audsley));
        assert!(p.schedulable);
        assert_eq!(ids(&p.cores[0]), vec![(1, 0, 1), (0, 0, 3)]);
        assert_eq!(p.cores[0][0].response_time, 6);
        // RM and DM differ: τ (1, 10, D 3) vs τ' (2, 5, D 5): RM puts the
        // T = 5 task first, then the D = 3 task sees R = 1 + 2 = 3 ≤ 3.
        let x = Task::new(0, 1, 10, 3);
        let y = Task::new(1, 2, 5, 5);
        let p = partition(&[x, y], 1, with(PriorityRule::RateMonotonic));
        assert_eq!(ids(&p.cores[0]), vec![(1, 0, 2), (0, 0, 1)]);
    }

    #[test]
    fn infeasible_and_empty() {
        let p = partition(&[Task::new(7, 5, 10, 4)], 3, DS);
        assert_eq!(p.unplaced.unwrap().reason, Failure::Infeasible);
        assert_eq!(p.unplaced.unwrap().task, 7);
        assert!(partition(&[], 0, DS).schedulable);
        assert!(!partition(&[Task::implicit(0, 1, 2)], 0, DS).schedulable);
        let p = partition(&[Task::implicit(0, 1, 0)], 1, ff(Order::Given));
        assert_eq!(p.unplaced.unwrap().reason, Failure::Infeasible);
    }

    #[test]
    fn split_is_pure() {
        let t = Task::new(3, 7, 20, 10);
        let (a, b) = split(&t, 3);
        assert_eq!((a.wcet, a.deadline, a.period), (3, 10, 20));
        assert_eq!((b.wcet, b.deadline, b.period), (4, 7, 20));
        assert_eq!(t, Task::new(3, 7, 20, 10));
    }

    /// A random core in DM order for the cross-checks: periods spread over
    /// up to three decades, as in the benchmark, constrained deadlines, some
    /// blocking; schedulable or not.
    fn random_core() -> impl proptest::strategy::Strategy<Value = Vec<Task>> {
        use proptest::prelude::*;
        prop::collection::vec((10u64..=100_000, 1u64..=1000, 50u64..=100, 0u8..8), 0..8).prop_map(
            |raw| {
                let mut ts: Vec<Task> = raw
                    .into_iter()
                    .enumerate()
                    .map(|(id, (period, permille, dpct, kind))| {
                        let deadline = (period * dpct / 100).max(1);
                        let wcet = (deadline * permille / 4000).max(1);
                        let blocking = if kind == 0 { wcet / 2 } else { 0 };
                        Task {
                            blocking,
                            ..Task::new(id, wcet, period, deadline)
                        }
                    })
                    .collect();
                fp::dm_order(&mut ts);
                ts
            },
        )
    }

    proptest::proptest! {
        #[test]
        fn fast_rta_matches_fp(core in random_core(), warm in 0u64..3) {
            for i in 0..core.len() {
                let exact = fp::response_time(&core[..i], &core[i]);
                proptest::prop_assert_eq!(fp::response_time_from(&core[..i], &core[i], 0), exact);
                // Any start not above the fixed point gives the same answer.
                if let Some(r) = exact {
                    let start = r - core[i].jitter - (r - core[i].jitter) * warm / 3;
                    proptest::prop_assert_eq!(fp::response_time_from(&core[..i], &core[i], start), exact);
                }
            }
        }

        #[test]
        fn fast_maximal_split_matches_fp(
            core in random_core(),
            period in 10u64..=100_000,
            dpct in 50u64..=100,
            cap in 0u64..=100_000,
        ) {
            let deadline = (period * dpct / 100).max(1);
            let mut resp = Vec::new();
            proptest::prop_assume!(schedulable_into(&core, 0, &mut resp));
            let exact = fp::max_top_priority_wcet(&core, period, deadline, cap);
            let mut scratch = PointScratch::default();
            let fast = max_top_wcet(&core, 0, &resp, period, deadline, cap, &mut scratch);
            proptest::prop_assert_eq!(Some(fast), exact);
            // And it is maximal: one more ns breaks the core (unless capped).
            if fast < cap.min(deadline) {
                let mut with = vec![Task::new(usize::MAX, fast + 1, period, deadline)];
                with.extend_from_slice(&core);
                proptest::prop_assert!(!fp::is_schedulable(&with));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn task_order_is_exact(
            raw in proptest::collection::vec((1u64..=1_000, 1u64..=4, 0usize..5), 0..30),
        ) {
            // Small integers make many exact ties (2/4 = 1/2) and ids repeat.
            let tasks: Vec<Task> = raw
                .iter()
                .map(|&(t, c, id)| Task::new(id, c.min(t), t, (t / 2).max(c.min(t))))
                .collect();
            for (order, den) in [
                (Order::DecreasingSize, (|t: &Task| t.deadline) as fn(&Task) -> Time),
                (Order::DecreasingUtilization, |t: &Task| t.period),
            ] {
                let mut exact: Vec<usize> = (0..tasks.len()).collect();
                exact.sort_by(|&a, &b| {
                    let (x, y) = (&tasks[a], &tasks[b]);
                    cmp_ratio(y.wcet, den(y), x.wcet, den(x))
                        .then(x.id.cmp(&y.id))
                        .then(a.cmp(&b))
                });
                proptest::prop_assert_eq!(task_order(&tasks, order), exact);
            }
            proptest::prop_assert_eq!(
                task_order(&tasks, Order::Given),
                (0..tasks.len()).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn sweep_and_reduced_points_agree_with_fp_on_wide_periods() {
        // Long deadline, short T': thousands of points, both methods.
        let core = [
            Task::implicit(0, 2_587_711, 10_940_807),
            Task::implicit(1, 3_483_141, 28_063_331),
            Task::implicit(2, 10_584_841, 47_665_237),
            Task::implicit(3, 26_222_272, 127_720_521),
        ];
        let mut resp = Vec::new();
        assert!(schedulable_into(&core, 0, &mut resp));
        let exact = fp::max_top_priority_wcet(&core, 1_556_726, 1_556_726, 1_000_000);
        let mut scratch = PointScratch::default();
        let fast = max_top_wcet(
            &core,
            0,
            &resp,
            1_556_726,
            1_556_726,
            1_000_000,
            &mut scratch,
        );
        assert_eq!(Some(fast), exact);
        let (h, t) = (&core[..3], &core[3]);
        let swept = sweep_max_top_wcet(h, t, 1_556_726, &mut scratch.sweep);
        assert!(reduced_points(
            h,
            t,
            1_556_726,
            usize::MAX,
            &mut scratch.points,
            &mut scratch.periods
        ));
        let reduced = scratch
            .points
            .iter()
            .map(|&x| slack_per_job(h, t, 1_556_726, x))
            .max()
            .flatten();
        assert_eq!(swept, reduced);
        assert_eq!(swept, Some(258_615)); // at t = 82·T' = 127 651 532
    }

    /// The structural checks of tests/partition_props.rs, for unit tests.
    fn validate(tasks: &[Task], p: &Partition) {
        for core in &p.cores {
            let ts: Vec<Task> = core.iter().map(Piece::as_task).collect();
            let r = fp::response_times(&ts);
            for (piece, r) in core.iter().zip(r) {
                assert_eq!(Some(piece.response_time), r);
            }
        }
        for (i, t) in tasks.iter().enumerate() {
            let mut pieces: Vec<Piece> = p
                .cores
                .iter()
                .flatten()
                .filter(|x| x.index == i)
                .copied()
                .collect();
            pieces.sort_by_key(|x| x.piece);
            assert_eq!(pieces.iter().map(|x| x.wcet).sum::<Time>(), t.wcet);
            for x in &pieces {
                assert_eq!(x.deadline + x.offset, t.deadline);
            }
        }
    }
}
