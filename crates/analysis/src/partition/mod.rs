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
//! branch-and-bound sweep over all of them
//! ([`maximal_split`](fn@maximal_split) is the plain fp-based reference).
//! Scratch space is kept per thread.
//!
//! Scale (issue 24: sets of 10^4-10^5 tasks): an insertion rejects an
//! overloaded core in O(1), bounds the new piece's deadline-point demand
//! in O(1) from the piece below it, updates the demands of the pieces
//! below the new one in place (one tight pass, a division only where the
//! new piece's job count changes) and runs the RTA only for those that
//! fail it (restarted from their previous fixed point, the long ones
//! through a step-indexed sum shared down the core); accepted items are
//! merged into priority order only when read; HPTaskSplit tests
//! its removals from those demands; MaximalSplit searches only the pieces
//! that lose room; the exact response times of long cores go through a
//! step-indexed interference sum (`step_sum`). The pre-issue-24 insertion,
//! HPTaskSplit and MaximalSplit are kept for tests and the benchmark
//! (feature `reference`, `with_reference_insertion`), and the results are
//! property-tested to be identical (`scale_tests`).
//!
//! Where the code is: the public types and entry points here; the state of
//! one core and its fast exact RTA in `cores`; bin packing in `fit`;
//! PDMS_HPTS / PDMS_HPTS_DS (HPTaskSplit inside Algorithm 2) in `splitting`;
//! MaximalSplit, the plain reference and its fast twin, in `maximal_split`.

use crate::fp;
use crate::server::{self, Server};
use crate::task::{cmp_ratio, Task, Time};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

mod cores;
mod fit;
mod maximal_split;
mod splitting;
mod step_sum;
#[cfg(test)]
mod tests;

pub use maximal_split::{maximal_split, maximal_split_with};
pub use splitting::{is_splittable, split};

use cores::Core;
use fit::fit;
use splitting::{pdms_hpts, Build};

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
    pub cores: CoreList,
}

/// The cores of one task's pieces, in piece order ([`Placement::cores`]):
/// read as a slice (`Deref<Target = [usize]>`; `to_vec()` for a `Vec`),
/// compared and serialized as the list of cores. Up to two cores (an
/// unsplit task, or one split once) are kept inline, so that a plan does
/// not allocate once per task (issue 24: 40 small allocations were most of
/// the cost of building a plan); more go to the heap.
#[derive(Clone, Default)]
pub struct CoreList(CoreRepr);

#[derive(Clone)]
enum CoreRepr {
    Inline { len: u8, cores: [usize; 2] },
    Heap(Vec<usize>),
}

impl Default for CoreRepr {
    fn default() -> Self {
        CoreRepr::Inline {
            len: 0,
            cores: [0; 2],
        }
    }
}

impl CoreList {
    /// An empty list.
    pub fn new() -> CoreList {
        CoreList::default()
    }

    /// The cores, in piece order.
    pub fn as_slice(&self) -> &[usize] {
        match &self.0 {
            CoreRepr::Inline { len, cores } => &cores[..usize::from(*len)],
            CoreRepr::Heap(v) => v,
        }
    }

    /// Append `core` (the core of the next piece).
    pub fn push(&mut self, core: usize) {
        match &mut self.0 {
            CoreRepr::Inline { len, cores } if usize::from(*len) < cores.len() => {
                cores[usize::from(*len)] = core;
                *len += 1;
            }
            CoreRepr::Inline { cores, .. } => {
                let mut v = Vec::with_capacity(2 * cores.len());
                v.extend_from_slice(&cores[..]);
                v.push(core);
                self.0 = CoreRepr::Heap(v);
            }
            CoreRepr::Heap(v) => v.push(core),
        }
    }
}

impl std::ops::Deref for CoreList {
    type Target = [usize];

    fn deref(&self) -> &[usize] {
        self.as_slice()
    }
}

impl std::fmt::Debug for CoreList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl PartialEq for CoreList {
    fn eq(&self, other: &CoreList) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for CoreList {}

impl std::hash::Hash for CoreList {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl PartialEq<[usize]> for CoreList {
    fn eq(&self, other: &[usize]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<Vec<usize>> for CoreList {
    fn eq(&self, other: &Vec<usize>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<const N: usize> PartialEq<[usize; N]> for CoreList {
    fn eq(&self, other: &[usize; N]) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl From<Vec<usize>> for CoreList {
    fn from(v: Vec<usize>) -> CoreList {
        v.into_iter().collect()
    }
}

impl From<&[usize]> for CoreList {
    fn from(v: &[usize]) -> CoreList {
        v.iter().copied().collect()
    }
}

impl From<CoreList> for Vec<usize> {
    fn from(c: CoreList) -> Vec<usize> {
        match c.0 {
            CoreRepr::Heap(v) => v,
            CoreRepr::Inline { .. } => c.as_slice().to_vec(),
        }
    }
}

impl FromIterator<usize> for CoreList {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> CoreList {
        let mut c = CoreList::new();
        for core in iter {
            c.push(core);
        }
        c
    }
}

impl<'a> IntoIterator for &'a CoreList {
    type Item = &'a usize;
    type IntoIter = std::slice::Iter<'a, usize>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl Serialize for CoreList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.as_slice())
    }
}

impl<'de> Deserialize<'de> for CoreList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<usize>::deserialize(deserializer).map(CoreList::from)
    }
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

/// Run `f` with this thread's partitioners using the per-core insertion as
/// it was before issue 24 (the same results, more slowly), for the
/// benchmark's old-vs-new comparison in one run. Only with the `reference`
/// feature.
#[cfg(feature = "reference")]
#[doc(hidden)]
pub fn with_reference_insertion<R>(f: impl FnOnce() -> R) -> R {
    cores::reference::with(f)
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
/// near-ties that f64 rounding (below 4e-16 relative) and the key's
/// dropped low bits (below 2^(b − 52) relative for positions of b bits)
/// may have misordered.
fn task_order_into(tasks: &[Task], order: Order, idx: &mut Vec<usize>, keys: &mut Vec<u64>) {
    idx.clear();
    // One copy per ratio, so that the denominator is read inline.
    match order {
        Order::Given => idx.extend(0..tasks.len()),
        Order::DecreasingUtilization => order_by(tasks, |t| t.period, idx, keys),
        Order::DecreasingSize => order_by(tasks, |t| t.deadline, idx, keys),
    }
}

/// [`task_order_into`] by decreasing C/`den`, into the empty `idx`.
#[inline(always)]
fn order_by(
    tasks: &[Task],
    den: impl Fn(&Task) -> Time,
    idx: &mut Vec<usize>,
    keys: &mut Vec<u64>,
) {
    // Decreasing ratio (by f64::total_cmp), ties by increasing position, as
    // one integer per task (integer keys sort several times faster than the
    // pairs): total_cmp's order of the bits, reversed, with the position in
    // the low bits (as many as it needs: 6 for 40 tasks, so a ratio keeps
    // 58 of its 64 bits; the exact pass below repairs what that ties).
    let shift = usize::BITS - tasks.len().leading_zeros();
    let mask = 1u64.checked_shl(shift).map_or(u64::MAX, |b| b - 1);
    let mut finite = true;
    keys.clear();
    keys.extend(tasks.iter().enumerate().map(|(i, t)| {
        let ratio = t.wcet as f64 / den(t) as f64;
        finite &= ratio.is_finite();
        let bits = ratio.to_bits() as i64;
        let total = (bits ^ (((bits >> 63) as u64) >> 1) as i64) as u64 ^ (1 << 63);
        (!total & !mask) | i as u64
    }));
    keys.sort_unstable();
    idx.extend(keys.iter().map(|&k| (k & mask) as usize));
    let before = |a: usize, b: usize| {
        let (x, y) = (&tasks[a], &tasks[b]);
        cmp_ratio(y.wcet, den(y), x.wcet, den(x))
            .then(x.id.cmp(&y.id))
            .then(a.cmp(&b))
            == Ordering::Less
    };
    // Keys whose ratio bits differ by at least 16 units in the last place
    // (of the f64 ratios, `gap` in units of the key's kept bits) order
    // their ratios as the exact comparator does: each computed ratio is
    // within 3 rounding errors (two conversions, one division; relative
    // 2^-53 each) of C/den, far less than the 16 ulps (relative ≥ 2^-53
    // each) between them. There the exact comparison is skipped, where
    // the task before is still the one the key put there (no repair moved
    // it) and every ratio is finite (den > 0).
    let gap = 1 + (16u64 >> shift.min(63)).max(1);
    let kept = |k: u64| k.checked_shr(shift).unwrap_or(0);
    for i in 1..idx.len() {
        if finite
            && idx[i - 1] == (keys[i - 1] & mask) as usize
            && kept(keys[i]) - kept(keys[i - 1]) >= gap
        {
            continue;
        }
        let mut j = i;
        while j > 0 && before(idx[j], idx[j - 1]) {
            idx.swap(j, j - 1);
            j -= 1;
        }
    }
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
    let mut out: Vec<Placement> = tasks
        .iter()
        .map(|t| Placement {
            task: t.id,
            cores: CoreList::new(),
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

fn dm_less(a: &Task, b: &Task) -> bool {
    (a.deadline, a.period, a.id) < (b.deadline, b.period, b.id)
}

fn rm_less(a: &Task, b: &Task) -> bool {
    (a.period, a.deadline, a.id) < (b.period, b.deadline, b.id)
}

fn finish(tasks: &[Task], cores: &mut [Core], unplaced: Option<Unplaced>) -> Partition {
    // One pass over the cores: exact response times, the pieces, and each
    // piece's core into its task's placement (as [`placements`] does from
    // the pieces, without reading them back).
    let mut placed = placements(tasks, &[]);
    let mut out = Vec::with_capacity(cores.len());
    for (j, core) in cores.iter_mut().enumerate() {
        if core.top > 0 {
            core.make_exact::<true>();
        } else {
            core.make_exact::<false>();
        }
        for it in &core.items {
            let cores = &mut placed[it.index].cores;
            debug_assert_eq!(cores.len(), it.piece, "pieces in core order");
            cores.push(j);
        }
        out.push(core.pieces());
    }
    Partition {
        tasks: placed,
        cores: out,
        schedulable: unplaced.is_none(),
        unplaced,
    }
}
