//! One core during partitioning ([`Core`]): its pieces in priority order
//! below the servers, their response times, and the fast exact RTA that
//! accepts or rejects a new piece (deadline-point pre-test, warm starts;
//! the same answers as [`crate::fp`], property-tested).

use crate::fp;
use crate::task::{Task, Time};

use super::step_sum::StepSum;
use super::{dm_less, rm_less, Piece};

/// From this many pieces on, [`Core::make_exact`] keeps the interference of
/// the pieces above in a [`StepSum`] instead of summing it afresh in every
/// RTA iteration (below, the plain sum is faster).
const STEP_SUM_PIECES: usize = 64;

/// From this many pieces on, the walk of [`Core::try_insert_fast`] below a
/// new piece goes by [`Block`]s (small in unit tests, so that their
/// property tests against the reference insertion go through blocks).
const BLOCK_PIECES: usize = if cfg!(test) { 6 } else { 512 };

/// The least number of pieces per [`Block`] when the blocks are built
/// (more on longer cores, [`Core::build_blocks`]); a block that grows to
/// twice the length the blocks were built with is split.
const BLOCK_LEN: usize = if cfg!(test) { 3 } else { 8 };

/// The cost of one [`StepSum`] step against one term of a plain RTA pass
/// ([`window_from`] switches to the StepSum once a pass would cross fewer
/// steps than n / STEP_COST).
const STEP_COST: f64 = 16.0;

/// The priority order of a core's pieces ([`dm_less`] or [`rm_less`]), as
/// a value: the insertion's binary search compares inline where a `fn`
/// pointer cost a call per probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    Dm,
    Rm,
}

impl Key {
    /// Whether `a` goes above `b`.
    #[inline(always)]
    pub(super) fn less(self, a: &Task, b: &Task) -> bool {
        match self {
            Key::Dm => dm_less(a, b),
            Key::Rm => rm_less(a, b),
        }
    }
}

/// A piece waiting for, or placed on, a core.
#[derive(Debug, Clone, Copy)]
pub(super) struct Item {
    /// The piece's parameters: remaining C, T, remaining D, J, B; id kept.
    pub(super) task: Task,
    pub(super) index: usize,
    pub(super) piece: usize,
    pub(super) offset: Time,
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

/// The analysis state of one piece on a core (beside its task in
/// [`Core::tasks`]): one vector of these, so that an insertion moves one
/// tail where five vectors moved five (issue 24: the inserts were a tenth
/// of PDMS_HPTS_DS's instructions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    /// Response time, exact where `exact` says so and a lower bound
    /// elsewhere (a deadline-point test showed the deadline is met).
    pub(super) resp: Time,
    /// The time demand W(t) at its deadline point t = D − J
    /// ([`point_demand`]), kept up to date on insertion with one division.
    pub(super) point: Time,
    /// D − J ([`deadline_point`]), beside `point` for the walk of
    /// [`Core::try_insert_by`].
    pub(super) limit: Time,
    pub(super) exact: bool,
    /// Whether `point` is the exact demand (not an upper bound from
    /// [`Core::bound_from_below`]); `false` wherever the core was built
    /// outside [`Core::try_insert_by`].
    pub(super) tight: bool,
}

impl Slot {
    /// The state of `task` built outside [`Core::try_insert_by`]: response
    /// time `resp` (exact or not), demand `point`, not known to be tight.
    pub(super) fn new(task: &Task, resp: Time, exact: bool, point: Time) -> Slot {
        Slot {
            resp,
            point,
            limit: deadline_point(task),
            exact,
            tight: false,
        }
    }
}

/// A run of consecutive pieces of a long core, for the walk of
/// [`Core::try_insert_fast`] below a new piece: where the new piece puts
/// the same number of jobs v = ⌈(t + J)/T⌉·C in every deadline-point window
/// t = D − J of the run (its least and largest t give the same count: the
/// count is non-decreasing in t) and every piece of the run keeps W(D − J)
/// ≤ D − J with v added (`room`), v is added to `add` instead of to each
/// piece's `point` (O(1) for the run, where the walk was O(1) per piece).
/// The pieces' `point`s (less `add`) and `exact` flags (false where
/// `stale`) are brought up to date ([`Core::settle_block`]) before any of
/// them is read, and every block is settled, its pieces put back in the
/// core's `tasks` and `slots`, and dropped when the core is read as a
/// whole ([`Core::sort_items`]).
///
/// While a core has blocks, they hold its pieces (tasks and slots), so
/// that an insertion moves the tail of one block, not of the core: at
/// 100,000 tasks the move of the core's tail was 38 % of `rtgpu
/// analyze`'s time (issue 24). The core's `tasks` then keeps only a
/// prefix, extended from the blocks when an RTA reads the tasks above a
/// piece ([`Core::extend_prefix`]), and its `slots` is empty.
#[derive(Debug, Clone)]
struct Block {
    /// The pieces of the run, in priority order.
    tasks: Vec<Task>,
    slots: Vec<Slot>,
    /// Demand added to every piece's `point` but not yet written there.
    add: Time,
    /// Whether pieces passed the point test since `exact` was written
    /// (they are all inexact then: their response times are lower bounds).
    stale: bool,
    /// Least and largest deadline point D − J (`limit`) of the pieces.
    low: Time,
    high: Time,
    /// min over the pieces of `limit − point` (`add` not counted), or
    /// `None` where a piece fails the point test (point > limit, or no
    /// point demand: Time::MAX).
    room: Option<Time>,
    /// Whether `low`, `high` and `room` are out of date (pieces changed).
    dirty: bool,
}

impl Block {
    fn new(tasks: Vec<Task>, slots: Vec<Slot>) -> Block {
        debug_assert_eq!(tasks.len(), slots.len());
        Block {
            tasks,
            slots,
            add: 0,
            stale: false,
            low: 0,
            high: 0,
            room: None,
            dirty: true,
        }
    }

    fn len(&self) -> usize {
        self.slots.len()
    }
}

/// One core: pieces in priority order, the same as plain tasks (for the RTA
/// slices) and their response times.
///
/// `tasks` starts with the `top` servers (as tasks, never analysed, never
/// removed) and then holds the pieces: the piece at index i of `items`
/// and `slots` is `tasks[top + i]`, so that `tasks[..top + i]` is
/// everything above it. While the core has [`Block`]s (a long core
/// between insertions), they hold the pieces instead: `slots` is empty and
/// `tasks` a prefix of the servers and pieces.
#[derive(Debug, Clone, Default)]
pub(super) struct Core {
    /// The pieces in priority order, except the `late` ones
    /// ([`Core::sort_items`]).
    pub(super) items: Vec<Item>,
    /// Pieces accepted by [`Core::try_insert_by`] but not yet moved into
    /// `items` (moving a 72-byte item at every insertion was a third of the
    /// cost of 10⁵-task sets): each with its insertion number, merged into
    /// `items` by [`Core::sort_items`] under `late_key`.
    late: Vec<(u64, Item)>,
    late_key: Option<Key>,
    inserted: u64,
    pub(super) tasks: Vec<Task>,
    pub(super) top: usize,
    /// Per piece, its response time and deadline-point state ([`Slot`]).
    pub(super) slots: Vec<Slot>,
    /// Scratch for the RTAs of [`Core::try_insert_by`].
    steps: StepSum,
    /// The interference of every task above the lowest piece (servers
    /// included), kept from one [`Core::try_insert_by`] to the next at a w
    /// no higher than the lowest piece's least fixed point
    /// ([`Core::bottom_window`]); valid while `bottom_held` is the number
    /// of tasks it holds (reset wherever the core changes outside
    /// [`Core::try_insert_by`], [`Core::rebuilt`]).
    bottom: StepSum,
    bottom_held: Option<usize>,
    /// The pieces as runs ([`Block`]) on a core of [`BLOCK_PIECES`] pieces
    /// or more (empty elsewhere), holding them.
    blocks: Vec<Block>,
    /// The number of pieces the blocks hold.
    in_blocks: usize,
    /// Scratch of one walk: the blocks it passed whole (index, first
    /// piece) with the demand added to each ([`Core::undo_insert`] takes it
    /// back).
    passed: Vec<(usize, usize, Time)>,
    /// The blocks' length when built, and the number of pieces then.
    block_len: usize,
    blocks_built: usize,
    /// Scratch for [`Core::make_exact`]: the interference of the pieces
    /// above, kept down the core ([`Interference`]).
    interference: Interference,
    /// Scratch for [`Core::make_exact_plain`].
    plain: Vec<PlainTerm>,
    /// Σ C/T of everything on the core, servers included (f64, for the
    /// O(1) overload pre-check of [`Core::try_insert_by`] only; every
    /// decision near U = 1 is left to the exact RTA).
    pub(super) util: f64,
}

impl Core {
    pub(super) fn with_capacity(n: usize) -> Core {
        Core {
            items: Vec::with_capacity(n),
            late: Vec::new(),
            late_key: None,
            inserted: 0,
            tasks: Vec::with_capacity(n),
            top: 0,
            slots: Vec::with_capacity(n),
            steps: StepSum::default(),
            bottom: StepSum::default(),
            bottom_held: None,
            blocks: Vec::new(),
            in_blocks: 0,
            passed: Vec::new(),
            block_len: BLOCK_LEN,
            blocks_built: 0,
            interference: Interference::default(),
            plain: Vec::new(),
            util: 0.0,
        }
    }

    /// Replace the lower bounds in `resp` by exact response times (the core
    /// is known to be schedulable), top down so that each can warm-start
    /// from the one above.
    pub(super) fn make_exact<const S: bool>(&mut self) {
        self.sort_items();
        let top = self.top::<S>();
        if self.slots.len() >= STEP_SUM_PIECES {
            return self.make_exact_stepped(top);
        }
        if self.make_exact_plain(top) {
            return;
        }
        // Not plain: the general RTA, for the pieces still inexact.
        // The interference of the pieces above, kept down the core: the
        // fixed points mostly grow from one piece to the next
        // ([`chain_start`]), so most terms of most passes are unchanged
        // ([`Interference`]).
        let mut sum = std::mem::take(&mut self.interference);
        sum.clear();
        for i in 0..self.slots.len() {
            if self.slots[i].exact {
                continue;
            }
            let task = &self.tasks[top + i];
            let mut start = self.slots[i].resp.saturating_sub(task.jitter);
            if i > 0 {
                start = start.max(chain_start(
                    &self.tasks[top + i - 1],
                    self.slots[i - 1].resp,
                    task,
                ));
            }
            let higher = &self.tasks[..top + i];
            let r = if windowed(task) {
                sum.extend_to(higher);
                sum.window(task, start, deadline_point(task))
                    .map(|w| w + task.jitter)
            } else {
                fp::response_time_from(higher, task, start)
            };
            self.slots[i].resp = r.expect("the deadline-point test showed the core schedulable");
            self.slots[i].exact = true;
        }
        self.interference = sum;
    }

    /// [`Core::make_exact`] for a short core (below [`STEP_SUM_PIECES`]
    /// pieces) whose tasks are plain: no jitter, no blocking, 0 < C and
    /// D ≤ T (every piece of a (C, T, D) set, seed 003's model). The same
    /// RTAs from the same starts, so the same least fixed points (Tindell et
    /// al. 1994, Eq. 4 with J = B = 0): w = C + Σ_hp ⌈w/T_j⌉·C_j from the
    /// lower bound kept in `resp`, raised by [`chain_start`] (w ≥ w_above +
    /// C). The interference of the pieces above is kept down the core
    /// ([`PlainTerm`]: each term's job count and the last w at which it
    /// holds, k·T_j) with the least of those w: a pass at a w no larger (most
    /// passes: no job of a piece above arrives between the previous w and
    /// this one) reads the sum in O(1), and the terms of the pieces added
    /// since the last RTA are computed at their first w directly. Stops at
    /// the first piece whose RTA involves a task that is not plain, or where
    /// a value overflows or passes a deadline, and returns false, having set
    /// only exact response times: [`Core::make_exact`]'s general path then
    /// finishes (and fails where it did before).
    fn make_exact_plain(&mut self, top: usize) -> bool {
        let mut terms = std::mem::take(&mut self.plain);
        terms.clear();
        let done = plain_rtas(&self.tasks, top, &mut self.slots, &mut terms).is_some();
        self.plain = terms;
        done
    }

    /// [`Core::make_exact`] for a core of many pieces: the interference of
    /// the pieces above is kept in a [`StepSum`] as the RTA goes down the
    /// core (the same fixed points, the same warm starts; the pieces with
    /// D > T, whose busy period may hold several jobs, still go to fp).
    fn make_exact_stepped(&mut self, top: usize) {
        let mut steps = StepSum::default();
        for t in &self.tasks[..top] {
            steps.add(t);
        }
        for i in 0..self.slots.len() {
            let task = self.tasks[top + i];
            if !self.slots[i].exact {
                let mut start = self.slots[i].resp.saturating_sub(task.jitter);
                if i > 0 {
                    start = start.max(chain_start(
                        &self.tasks[top + i - 1],
                        self.slots[i - 1].resp,
                        &task,
                    ));
                }
                let base = task.blocking.saturating_add(task.wcet);
                let r = if task.deadline <= task.period && base > 0 {
                    // fp's first iterate is B + C + Σ_hp C; any start up to
                    // the least fixed point reaches the same point (with
                    // B + C = 0, fp stops at the least one above Σ_hp C, not
                    // at 0: left to fp).
                    let limit = task.deadline.saturating_sub(task.jitter);
                    steps
                        .fixed_point(base, start.max(base), limit)
                        .map(|w| w.saturating_add(task.jitter))
                } else {
                    fp::response_time_from(&self.tasks[..top + i], &task, start)
                };
                self.slots[i].resp =
                    r.expect("the deadline-point test showed the core schedulable");
                self.slots[i].exact = true;
            }
            steps.add(&task);
        }
    }

    /// The number of servers in front of the pieces: `top`, known to be 0
    /// when `S` is false (the hot paths are compiled once for cores with
    /// servers and once for cores without, which then index exactly as
    /// they did before servers existed).
    #[inline(always)]
    pub(super) fn top<const S: bool>(&self) -> usize {
        if S {
            self.top
        } else {
            debug_assert_eq!(self.top, 0, "a core with servers analysed as one without");
            0
        }
    }

    /// Empty the core and put the servers `top` (as tasks) above it.
    pub(super) fn reset(&mut self, top: &[Task]) {
        self.items.clear();
        self.late.clear();
        self.late_key = None;
        self.tasks.clear();
        self.tasks.extend_from_slice(top);
        self.top = top.len();
        self.slots.clear();
        self.drop_blocks();
        self.bottom_held = None;
        self.util = top.iter().map(Task::utilization).sum();
    }

    /// Mark the core as changed outside [`Core::try_insert_by`] (its
    /// `slots` rebuilt, each by [`Slot::new`]): the StepSum kept for the
    /// lowest piece no longer holds.
    pub(super) fn rebuilt(&mut self) {
        debug_assert!(
            self.blocks.is_empty(),
            "a core rebuilt while its blocks held its pieces"
        );
        self.bottom_held = None;
        self.drop_blocks();
    }

    /// Forget the [`Block`]s (and the last walk's passes over them: an
    /// insertion on a short core finds none to undo).
    fn drop_blocks(&mut self) {
        self.blocks.clear();
        self.in_blocks = 0;
        self.passed.clear();
    }

    /// The number of pieces on the core.
    fn len(&self) -> usize {
        if self.blocks.is_empty() {
            self.slots.len()
        } else {
            self.in_blocks
        }
    }

    /// Set every response time (`slots[i].resp`, one slot per piece) as
    /// exact, after the core was rebuilt, and recompute the deadline-point
    /// demands.
    pub(super) fn set_exact<const S: bool>(&mut self) {
        let top = self.top::<S>();
        self.sort_items();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let (higher, task) = (&self.tasks[..top + i], &self.tasks[top + i]);
            *slot = Slot::new(task, slot.resp, true, point_demand(higher, task));
        }
        self.rebuilt();
        self.util = self.tasks.iter().map(Task::utilization).sum();
    }

    /// Bring the core up to date for reading as a whole: every [`Block`]'s
    /// demand written to its pieces (the blocks dropped; the next long
    /// insertion builds them again), and the pieces accepted since the last
    /// call moved into `items`, at their places in priority order: by
    /// `late_key`, and among equal keys the later insertion first (where
    /// `Vec::insert` at the partition point would have put it).
    pub(super) fn sort_items(&mut self) {
        self.settle_blocks();
        let Some(key) = self.late_key else {
            return;
        };
        if self.late.is_empty() {
            return;
        }
        let before = |a: &(u64, Item), b: &(u64, Item)| {
            key.less(&a.1.task, &b.1.task) || (!key.less(&b.1.task, &a.1.task) && a.0 > b.0)
        };
        self.late.sort_unstable_by(|a, b| {
            if before(a, b) {
                std::cmp::Ordering::Less
            } else if before(b, a) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        // Merge from the back: every late piece is newer than every piece
        // of `items`, so it goes before those of equal key.
        let old = self.items.len();
        let mut i = old;
        let mut j = self.late.len();
        self.items.resize(old + j, self.late[0].1);
        let mut k = self.items.len();
        while j > 0 {
            let late = self.late[j - 1].1;
            if i > 0 && !key.less(&self.items[i - 1].task, &late.task) {
                self.items[k - 1] = self.items[i - 1];
                i -= 1;
            } else {
                self.items[k - 1] = late;
                j -= 1;
            }
            k -= 1;
        }
        self.late.clear();
    }

    pub(super) fn pieces(&self) -> Vec<Piece> {
        debug_assert!(self.slots.iter().all(|s| s.exact));
        debug_assert!(self.late.is_empty());
        self.items
            .iter()
            .zip(&self.slots)
            .map(|(it, s)| it.to_piece(s.resp))
            .collect()
    }

    /// Insert `item` at its place under the key order `key` if the core
    /// stays schedulable (issue 24: the cost per insertion does not grow
    /// with the work already analysed on the core beyond one O(1) step per
    /// lower-priority piece, or per [`Block`] of them on a long core, and
    /// the move of the tail of `tasks` and `slots`, on a long core of one
    /// block's).
    ///
    /// - O(1) overload pre-check: if Σ C/T of the core with the new piece
    ///   exceeds 1 (f64, by a margin far above its rounding), the lowest
    ///   piece's level-i busy period never closes and the exact RTA would
    ///   reject it too (Liu & Layland 1973's necessary condition U ≤ 1).
    /// - Only the new piece and those below it are re-analysed (the
    ///   response times of higher-priority pieces do not change). The new
    ///   piece is tried at its deadline point, first against the O(1) upper
    ///   bound of [`Core::bound_from_below`] and only where that fails
    ///   against its exact demand ([`point_demand`], O(n)); each piece
    ///   below it adds the new piece's jobs to its deadline-point demand
    ///   ([`Jobs`]: a division only where the job count changes), in one
    ///   pass over `point` and `limit`; on a core of [`BLOCK_PIECES`] or
    ///   more, one step per block of √n/4 pieces where the new piece's job
    ///   count is the same across the block and every piece has room for it
    ///   ([`Block`], [`Core::next_block`]). `point` may hold upper bounds; one
    ///   that fails is recomputed exactly before any RTA. A piece that passes keeps its
    ///   previous response time as a lower bound (adding interference only
    ///   raises the least fixed point, Tindell et al. 1994, Eq. 4), raised
    ///   by [`chain_start`] from the piece above: O(1), no sum over the
    ///   pieces above. Only a piece that fails the point test runs the exact
    ///   RTA, warm-started from that lower bound ([`window_in`]; the RTAs of
    ///   one walk share a [`StepSum`] from warm starts).
    /// - The item waits in `late` and joins `items` when read
    ///   ([`Core::sort_items`]), except on short cores.
    /// - Exact response times of the pieces that passed the point test are
    ///   computed once, at the end ([`Core::make_exact`]).
    ///
    /// The same decisions and (after [`Core::make_exact`]) the same response
    /// times as `Core::try_insert_by_reference`, property-tested.
    pub(super) fn try_insert_by<const S: bool>(
        &mut self,
        item: &Item,
        key: Key,
        scratch: &mut Vec<(Time, bool, Time)>,
    ) -> bool {
        #[cfg(any(test, feature = "reference"))]
        if reference::enabled() {
            return self.try_insert_by_reference::<S>(*item, |a, b| key.less(a, b), scratch);
        }
        self.try_insert_fast::<S>(item, key, scratch)
    }

    /// [`Core::try_insert_by`] without its switch to the reference
    /// insertion (a thread-local read per call): for callers that read the
    /// switch once per run ([`super::splitting`]).
    pub(super) fn try_insert_fast<const S: bool>(
        &mut self,
        item: &Item,
        key: Key,
        scratch: &mut Vec<(Time, bool, Time)>,
    ) -> bool {
        if !self.blocks.is_empty() || self.slots.len() >= BLOCK_PIECES {
            self.insert::<S, true>(item, key, scratch)
        } else {
            self.insert::<S, false>(item, key, scratch)
        }
    }

    /// [`Core::try_insert_fast`], compiled once for long cores (`LONG`: the
    /// blocks hold the pieces and the walk goes by [`Block`]s) and once for
    /// short ones (as before them).
    fn insert<const S: bool, const LONG: bool>(
        &mut self,
        item: &Item,
        key: Key,
        scratch: &mut Vec<(Time, bool, Time)>,
    ) -> bool {
        let new = item.task;
        // The f64 sum of n terms is within about n·ε·U of Σ C/T (ε = 2⁻⁵³):
        // far below the 1e-9 margin for any n < 10⁶, so only sets that
        // truly exceed 1 are rejected here.
        let util = self.util + new.utilization();
        if util > 1.0 + 1e-9 {
            return false;
        }
        // Indices below are of pieces (`items`, `resp`, ...); piece i is
        // `tasks[top + i]` (on a long core, in the blocks).
        let top = self.top::<S>();
        // On a long core, the block that gets the new piece (the one of the
        // piece now at `pos`, or the last) is brought up to date first: the
        // new piece reads the piece at `pos`, and the walk starts there.
        // `tasks` keeps the tasks above the new piece at most (the new one
        // goes into its block at the end of an accepted insertion).
        let (pos, block) = if LONG {
            if self.blocks.is_empty() || self.len() >= 4 * self.blocks_built {
                self.settle_blocks();
                self.build_blocks();
            }
            let (pos, b, start) = self.place_in_blocks(key, &new);
            self.settle_block(b);
            self.blocks[b].dirty = true;
            self.tasks.truncate(self.tasks.len().min(top + pos));
            (pos, Some((b, start)))
        } else {
            (partition_point(&self.tasks[top..], key, &new), None)
        };
        // The new piece, against everything above it.
        let (first, first_exact, first_point, first_tight) = {
            let above = match pos.checked_sub(1) {
                None => 0,
                Some(a) => {
                    let (task, slot) = self.piece::<LONG>(top, a, block);
                    chain_start(task, slot.resp, &new)
                }
            };
            // W(D − J) ([`point_demand`]) and the RTA's cold start
            // B + C + Σ_hp C in one pass, unless the piece below bounds
            // W(D − J) in O(1) ([`Core::bound_from_below`]).
            let own = new.blocking.saturating_add(new.wcet);
            let bound = self.bound_from_below::<LONG>(top, pos, &new, block);
            let (point, cold, tight) = if new.deadline > new.period || new.jitter > new.deadline {
                (Time::MAX, 0, true)
            } else if let Some(bound) = bound.filter(|&b| b <= deadline_point(&new)) {
                // A lower bound on the start only (B + C; the piece above
                // gives a better one through `above`).
                (bound, own, false)
            } else {
                let (p, c) =
                    self.above::<LONG>(top + pos, None)
                        .iter()
                        .fold((own, own), |(p, c), h| {
                            (
                                p.saturating_add(point_jobs(&new, h)),
                                c.saturating_add(h.wcet),
                            )
                        });
                (p, c, true)
            };
            if point <= new.deadline.saturating_sub(new.jitter) {
                (
                    new.jitter.saturating_add(above.max(cold)),
                    false,
                    point,
                    tight,
                )
            } else if new.deadline <= new.period && new.blocking.saturating_add(new.wcet) > 0 {
                let higher = self.above::<LONG>(top + pos, None);
                match window_from(higher, &new, above, deadline_point(&new)) {
                    Some(w) => (w + new.jitter, true, point, tight),
                    None => return false,
                }
            } else {
                let higher = self.above::<LONG>(top + pos, None);
                match fp::response_time_from(higher, &new, above) {
                    Some(r) => (r, true, point, tight),
                    None => return false,
                }
            }
        };
        // The pieces below it (old indices pos..; in `tasks` of a short
        // core they moved one down), updated in place. A piece that passes
        // the point test keeps its response time as a lower bound (no
        // longer exact); one that fails gets its exact RTA, and `scratch`
        // remembers its previous (resp, exact) so that a rejection can
        // restore the core.
        if !LONG {
            self.tasks.insert(top + pos, new);
        }
        scratch.clear();
        // The new piece's jobs in each window below it: the windows mostly
        // grow down the core, so ⌈(t + J)/T⌉ is mostly the previous one
        // ([`Jobs`]).
        let mut jobs = Jobs::new(&new);
        let len = self.len();
        // The new least fixed point w_b of the lowest piece (old index
        // len − 1), once computed ([`Core::bottom_window`]): `Some(None)`
        // if it misses its deadline.
        let mut bottom: Option<Option<Time>> = None;
        let mut bottom_added = false;
        let mut i = pos;
        // How many of `tasks` (a prefix) `self.steps` holds, if it holds the
        // interference of the last RTA below ([`window_in`]).
        let mut stepped: Option<usize> = None;
        // The walk goes piece by piece up to `end`: the end of the block
        // `cur` on a long core (then block by block, [`Block`]), else the
        // end of the core.
        let (mut cur, mut end) = match block {
            Some((b, start)) => {
                self.passed.clear();
                (b, start + self.blocks[b].len())
            }
            None => (0, len),
        };
        // Whether the walk went through block `cur` from its first piece
        // without a failure so far, and the least room of those pieces.
        let (mut whole, mut room) = (false, Time::MAX);
        while i < len {
            // The pieces that pass the point test, in one tight pass over
            // their slots (W(D − J) ≤ D − J: the least fixed point is at
            // most D − J; the response time becomes a lower bound).
            let slots = if LONG {
                let b = &mut self.blocks[cur];
                let start = end - b.len();
                &mut b.slots[i - start..]
            } else {
                &mut self.slots[i..end]
            };
            for slot in slots {
                slot.point = slot.point.saturating_add(jobs.at(slot.limit));
                if slot.point > slot.limit {
                    break;
                }
                if LONG {
                    room = room.min(slot.limit - slot.point);
                }
                slot.exact = false;
                i += 1;
            }
            if i == end {
                if !LONG || end == len {
                    break;
                }
                if whole {
                    // Every piece passed: the block's room is known.
                    let b = &mut self.blocks[cur];
                    b.room = Some(room);
                    b.dirty = false;
                }
                (cur, end, i) = self.next_block(cur, end, &mut jobs, &new);
                // Walked piece by piece from its start, or passed.
                (whole, room) = (i < end, Time::MAX);
                continue;
            }
            whole = false;
            // Piece i failed the point test: where it is, and its task.
            let at = if LONG {
                (cur, i + self.blocks[cur].len() - end)
            } else {
                (0, i)
            };
            let task = if LONG {
                self.blocks[at.0].tasks[at.1]
            } else {
                self.tasks[top + i + 1]
            };
            // Everything above piece i now: `tasks[..to]`, once extended.
            let to = top + i + 1;
            let slot = *self.slot::<LONG>(at);
            if slot.point != Time::MAX && !slot.exact && !slot.tight {
                // `point` may be an upper bound (the new pieces' are taken
                // from the piece below them, [`Core::bound_from_below`]):
                // recompute it before running the RTA.
                let exact = point_demand(self.above::<LONG>(to, Some((pos, &new))), &task);
                let slot = self.slot::<LONG>(at);
                slot.point = slot.point.min(exact);
                slot.tight = true;
                if slot.point <= slot.limit {
                    slot.exact = false;
                    i += 1;
                    continue;
                }
            }
            // The lowest piece's new fixed point w_b, from the StepSum kept
            // across insertions: as a test point for the pieces above it
            // (below), and as its own response time.
            if bottom.is_none() && windowed(&self.lowest::<LONG>(top, len)) {
                bottom = Some(self.bottom_window::<S, LONG>(len, pos, first, &new));
                bottom_added = true;
            }
            if let Some(wb) = bottom {
                let Some(wb) = wb else {
                    self.undo_insert::<LONG>(top, pos, i, &new, scratch);
                    self.bottom_held = None;
                    return false;
                };
                if i + 1 == len {
                    // The lowest piece itself.
                    let slot = self.slot::<LONG>(at);
                    scratch.push((i as Time, slot.exact, slot.resp));
                    slot.resp = wb + task.jitter;
                    slot.exact = true;
                    i += 1;
                    continue;
                }
                // A sufficient test at t = w_b instead of D − J (Lehoczky,
                // Sha & Ding 1989; Bini & Buttazzo 2004, Theorem 3: the
                // piece meets its deadline if W(t) ≤ t for some
                // 0 < t ≤ D − J). Every task above this piece is above the
                // lowest one too, and this piece is one of them with
                // ⌈(t + J)/T⌉ ≥ 1 job, so with B = 0 W(t) ≤ W_b(t) (Tindell
                // et al. 1994, Eq. 4, term by term), and W_b(w_b) = w_b.
                // Then the least fixed point is ≤ w_b ≤ D − J: the exact
                // RTA would accept it; its response time stays a lower
                // bound, made exact at the end ([`Core::make_exact`]).
                if task.blocking == 0
                    && task.deadline <= task.period
                    && wb >= 1
                    && wb <= deadline_point(&task)
                {
                    #[cfg(test)]
                    tests::BOTTOM_POINT_PASSES.with(|c| c.set(c.get() + 1));
                    self.slot::<LONG>(at).exact = false;
                    i += 1;
                    continue;
                }
            }
            // The piece right above piece i now: the new one, or old piece
            // i − 1.
            let (above_task, above) = if i == pos {
                (new, first)
            } else if LONG {
                let (task, slot) =
                    self.piece::<LONG>(top, i - 1, Some((cur, end - self.blocks[cur].len())));
                (*task, slot.resp)
            } else {
                (self.tasks[top + i], self.slots[i - 1].resp)
            };
            let mut own = slot.resp.saturating_sub(task.jitter);
            if slot.exact && task.deadline <= task.period {
                // w was the fixed point without the new piece: W'(w) = w +
                // the new piece's jobs in w, a lower bound on the new fixed
                // point (W' ≥ W is monotone), one RTA pass saved.
                own = own.saturating_add(jobs_at(own, &new));
            }
            let start = chain_start(&above_task, above, &task).max(own);
            if LONG {
                self.extend_prefix(to, Some((pos, &new)));
            }
            let r = match stepped {
                // The pieces that fail the point test are mostly a few
                // near the bottom: the StepSum of the last one's RTA is
                // carried down to this one (the pieces in between added,
                // each in O(log n)) instead of being rebuilt; only from a
                // warm start (this piece's own fixed point, or the one of
                // the piece right above it): a stale lower bound can lie
                // far below the fixed point, and the plain passes of
                // [`window_in`] climb there faster than single steps.
                Some(n)
                    if (to - n) * STEP_COST as usize <= to
                        && (slot.exact || n + 1 == to)
                        && windowed(&task) =>
                {
                    for t in &self.tasks[n..to] {
                        self.steps.add(t);
                    }
                    stepped = Some(to);
                    let base = task.blocking.saturating_add(task.wcet);
                    self.steps
                        .fixed_point(base, start.max(base), deadline_point(&task))
                        .map(|w| w + task.jitter)
                }
                _ if windowed(&task) => {
                    let limit = deadline_point(&task);
                    let (r, in_steps) =
                        window_in(&self.tasks[..to], &task, start, limit, &mut self.steps);
                    stepped = in_steps.then_some(to);
                    r.map(|w| w + task.jitter)
                }
                _ => fp::response_time_from(&self.tasks[..to], &task, start),
            };
            match r {
                Some(r) => {
                    let slot = self.slot::<LONG>(at);
                    scratch.push((i as Time, slot.exact, slot.resp));
                    slot.resp = r;
                    slot.exact = true;
                }
                None => {
                    self.undo_insert::<LONG>(top, pos, i, &new, scratch);
                    if bottom_added {
                        self.bottom_held = None;
                    }
                    return false;
                }
            }
            i += 1;
        }
        self.util = util;
        // Keep `bottom` holding every task above the lowest piece.
        if let Some(held) = self.bottom_held {
            if pos == len {
                // The new piece is the lowest now.
                self.bottom_held = None;
            } else if !bottom_added {
                self.bottom.add(&new);
                self.bottom_held = Some(held + 1);
            }
        }
        if self.late.is_empty() && len < STEP_SUM_PIECES {
            // A short core: `items` is every piece, in order; insert in place.
            self.items.insert(pos, *item);
        } else {
            // One order per core between resets (the partitioners use one
            // rule).
            self.late_key = Some(key);
            self.late.push((self.inserted, *item));
            self.inserted += 1;
        }
        let slot = Slot {
            resp: first,
            point: first_point,
            limit: deadline_point(&new),
            exact: first_exact,
            tight: first_tight,
        };
        match block {
            Some((b, start)) => {
                let cap = 2 * self.block_len;
                let block = &mut self.blocks[b];
                block.tasks.insert(pos - start, new);
                block.slots.insert(pos - start, slot);
                self.in_blocks += 1;
                if block.len() >= 2 * self.block_len {
                    // Split in two (the block is settled and dirty).
                    let half = block.len() / 2;
                    let mut tasks = Vec::with_capacity(cap);
                    tasks.extend(block.tasks.drain(half..));
                    let mut slots = Vec::with_capacity(cap);
                    slots.extend(block.slots.drain(half..));
                    self.blocks.insert(b + 1, Block::new(tasks, slots));
                }
            }
            None => self.slots.insert(pos, slot),
        }
        true
    }

    /// `tasks[..to]` (on a long core extended first, with `new` as in
    /// [`Core::extend_prefix`]).
    #[inline(always)]
    fn above<const LONG: bool>(&mut self, to: usize, new: Option<(usize, &Task)>) -> &[Task] {
        if LONG {
            self.extend_prefix(to, new);
        }
        &self.tasks[..to]
    }

    /// The slot of a piece: `at` is (block, place in it) on a long core,
    /// (0, piece) on a short one.
    #[inline(always)]
    fn slot<const LONG: bool>(&mut self, at: (usize, usize)) -> &mut Slot {
        if LONG {
            &mut self.blocks[at.0].slots[at.1]
        } else {
            &mut self.slots[at.1]
        }
    }

    /// Piece `i`'s task and slot before an insertion changes `tasks`; on a
    /// long core found from `near`, a block and its first piece, where `i`
    /// is in it or in the block before.
    #[inline(always)]
    fn piece<const LONG: bool>(
        &self,
        top: usize,
        i: usize,
        near: Option<(usize, usize)>,
    ) -> (&Task, &Slot) {
        if !LONG {
            return (&self.tasks[top + i], &self.slots[i]);
        }
        let (b, k) = match near {
            Some((b, start)) if i >= start && i < start + self.blocks[b].len() => (b, i - start),
            Some((b, start)) if b > 0 && i < start && i + self.blocks[b - 1].len() >= start => {
                (b - 1, i + self.blocks[b - 1].len() - start)
            }
            _ => self.piece_at(i),
        };
        (&self.blocks[b].tasks[k], &self.blocks[b].slots[k])
    }

    /// The lowest piece's task (`tasks[top + len]` of a short core under
    /// the walk, the new piece in it).
    #[inline(always)]
    fn lowest<const LONG: bool>(&self, top: usize, len: usize) -> Task {
        match self.blocks.last() {
            Some(b) if LONG => b.tasks[b.len() - 1],
            _ => self.tasks[top + len],
        }
    }

    /// The walk's step to the block after `cur`, which starts at piece
    /// `start`: passed whole where the new piece puts the same jobs v in
    /// each of its windows and every piece keeps room for v ([`Block`]),
    /// else brought up to date to be walked piece by piece. Returns the
    /// block, its end and the piece the walk goes on from.
    #[inline(always)]
    fn next_block(
        &mut self,
        cur: usize,
        start: usize,
        jobs: &mut Jobs,
        #[cfg_attr(not(test), allow(unused_variables))] new: &Task,
    ) -> (usize, usize, usize) {
        let cur = cur + 1;
        let end = start + self.blocks[cur].len();
        if self.blocks[cur].dirty {
            self.refresh_block(cur);
        }
        let v = jobs.at(self.blocks[cur].low);
        let b = &mut self.blocks[cur];
        let total = b.add.checked_add(v);
        if !(b.room.zip(total).is_some_and(|(r, t)| t <= r) && jobs.at(b.high) == v) {
            self.settle_block(cur);
            self.blocks[cur].dirty = true;
            return (cur, end, start);
        }
        b.add += v;
        b.stale = true;
        self.passed.push((cur, start, v));
        #[cfg(test)]
        {
            tests::BLOCKS_PASSED.with(|c| c.set(c.get() + 1));
            // Every piece of the block passes with the new piece's exact
            // jobs, as the walk piece by piece has it.
            let add = self.blocks[cur].add;
            for slot in &self.blocks[cur].slots {
                assert_eq!(jobs_at(slot.limit, new), v);
                assert!(
                    slot.point + add <= slot.limit,
                    "a block passed a failing piece"
                );
            }
        }
        (cur, end, end)
    }

    /// [`Block`]s of `block_len` pieces over the core (the last up to
    /// twice that), to be refreshed before use. A walk below a new piece
    /// visits about n_below / L blocks and walks piece by piece the blocks
    /// where the new piece's job count steps (about as many as multiples
    /// of its period among the deadline points below it, whatever L), so
    /// the best L grows as √n: L = √n / 4, at least 8 (of fixed lengths 8,
    /// 12 and 32, 12 cost the fewest instructions at 10⁴ tasks on 4 cores,
    /// 2,500 per core: 770 M against 779 M and 789 M, callgrind). The
    /// blocks are built again, with the larger L, each time the core has
    /// grown four times (8 from 512 pieces, 11 from 2,048, 22 from 8,192).
    ///
    /// The blocks take the pieces from `slots` and `tasks` (which keeps
    /// them all as its prefix).
    fn build_blocks(&mut self) {
        debug_assert!(self.blocks.is_empty());
        let n = self.slots.len();
        self.blocks_built = n;
        self.in_blocks = n;
        self.block_len = if cfg!(test) {
            BLOCK_LEN
        } else {
            (n.isqrt() / 4).max(BLOCK_LEN)
        };
        // (A block grows to 2 · block_len pieces, then is split.)
        let (top, cap) = (self.top, 2 * self.block_len);
        let mut start = 0;
        while start < n {
            let left = n - start;
            let len = if left < 2 * self.block_len {
                left
            } else {
                self.block_len
            };
            let mut tasks = Vec::with_capacity(cap);
            tasks.extend_from_slice(&self.tasks[top + start..top + start + len]);
            let mut slots = Vec::with_capacity(cap);
            slots.extend_from_slice(&self.slots[start..start + len]);
            self.blocks.push(Block::new(tasks, slots));
            start += len;
        }
        self.slots.clear();
    }

    /// The block holding piece `pos` (the last one for `pos` = the number
    /// of pieces) and its first piece.
    fn block_of(&self, pos: usize) -> (usize, usize) {
        debug_assert_eq!(
            self.blocks.iter().map(Block::len).sum::<usize>(),
            self.in_blocks,
            "the blocks no longer hold the core"
        );
        let last = self.blocks.len().saturating_sub(1);
        let mut start = 0;
        for (b, block) in self.blocks[..last].iter().enumerate() {
            if pos < start + block.len() {
                return (b, start);
            }
            start += block.len();
        }
        (last, start)
    }

    /// The block of piece `pos` (as [`Core::block_of`]) and the piece's
    /// place in it.
    fn piece_at(&self, pos: usize) -> (usize, usize) {
        let (b, start) = self.block_of(pos);
        (b, pos - start)
    }

    /// The place `new` takes among the pieces held by the blocks (as
    /// [`partition_point`] over them), the block that gets it (as
    /// [`Core::block_of`] of that place) and the block's first piece.
    fn place_in_blocks(&self, key: Key, new: &Task) -> (usize, usize, usize) {
        // The last block whose first piece goes above `new` (or the first
        // block): the place is in it or at its end, which is the next
        // block's start (then that block gets it).
        let b = self
            .blocks
            .partition_point(|b| key.less(&b.tasks[0], new))
            .saturating_sub(1);
        let start = self.blocks[..b].iter().map(Block::len).sum::<usize>();
        let pos = start + partition_point(&self.blocks[b].tasks, key, new);
        let (b, start) = if pos == start + self.blocks[b].len() && b + 1 < self.blocks.len() {
            (b + 1, pos)
        } else {
            (b, start)
        };
        (pos, b, start)
    }

    /// Extend `tasks` (while the blocks hold the pieces, a prefix of the
    /// servers and pieces) to its first `to` entries, from the blocks, with
    /// `new` taken as piece `pos` above the pieces from `pos` on (a new
    /// piece under [`Core::try_insert_fast`]'s walk) where given.
    fn extend_prefix(&mut self, to: usize, new: Option<(usize, &Task)>) {
        let top = self.top;
        // Without `new`, only up to the new piece's place (before the walk,
        // which may have put the new piece in): past it, a prefix holding
        // the new piece would be extended as if it did not.
        debug_assert!(new.is_some() || self.tasks.len() <= to);
        if self.tasks.len() >= to {
            return;
        }
        let (pos, new) = match new {
            Some((pos, task)) => (pos, Some(*task)),
            None => (usize::MAX, None),
        };
        // The next piece of `tasks`, and the next piece of the blocks.
        let k = self.tasks.len() - top;
        let mut old = if k > pos { k - 1 } else { k };
        let (mut b, mut start) = self.block_of(old);
        while self.tasks.len() < to {
            if self.tasks.len() - top == pos {
                if let Some(new) = new {
                    self.tasks.push(new);
                }
                continue;
            }
            let block = &self.blocks[b];
            let from = old - start;
            if from >= block.len() {
                start += block.len();
                b += 1;
                continue;
            }
            let mut take = (block.len() - from).min(to - self.tasks.len());
            if old < pos {
                take = take.min(pos - old);
            }
            self.tasks
                .extend_from_slice(&block.tasks[from..from + take]);
            old += take;
        }
    }

    /// Write block `b`'s pending demand to its
    /// pieces' `point`s, and clear their `exact` flags where they passed
    /// the point test since ([`Block`]).
    fn settle_block(&mut self, b: usize) {
        let block = &mut self.blocks[b];
        if block.add == 0 && !block.stale {
            return;
        }
        let (add, stale) = (block.add, block.stale);
        // Demand is only added where every piece had room for it.
        block.room = block.room.map(|r| r - add);
        block.add = 0;
        block.stale = false;
        for slot in &mut block.slots {
            slot.point += add;
            slot.exact &= !stale;
        }
    }

    /// Every block settled ([`Core::settle_block`]), its pieces put back
    /// in `tasks` and `slots`, then the blocks dropped.
    fn settle_blocks(&mut self) {
        if self.blocks.is_empty() {
            return self.drop_blocks();
        }
        self.tasks.truncate(self.top);
        self.slots.clear();
        for b in 0..self.blocks.len() {
            self.settle_block(b);
            let block = &self.blocks[b];
            self.tasks.extend_from_slice(&block.tasks);
            self.slots.extend_from_slice(&block.slots);
        }
        self.drop_blocks();
    }

    /// Recompute block `b`'s (settled) least and
    /// largest deadline points and its room.
    fn refresh_block(&mut self, b: usize) {
        let block = &mut self.blocks[b];
        debug_assert!(block.add == 0 && !block.stale);
        // Branch-free: the differences wrap where a piece fails, which
        // `fails` records.
        let (mut low, mut high, mut room, mut fails) = (Time::MAX, 0, Time::MAX, false);
        for slot in &block.slots {
            low = low.min(slot.limit);
            high = high.max(slot.limit);
            room = room.min(slot.limit.wrapping_sub(slot.point));
            fails |= slot.point > slot.limit;
        }
        block.low = low;
        block.high = high;
        block.room = (!fails).then_some(room);
        block.dirty = false;
    }

    /// The new least fixed point w of the lowest piece (old index
    /// `len − 1`, windowed: D ≤ T, B + C > 0) after `new` was put in
    /// `tasks` above it, or `None` if it exceeds D − J: [`window_from`]'s
    /// answer, from `self.bottom` where it still holds every task above
    /// the lowest piece but `new` (then `new` is added, O(log n), and the
    /// iteration goes on from its w, which is at most the old least fixed
    /// point, itself at most the new one: interference was only added),
    /// else rebuilt. Leaves `self.bottom` holding every task above the
    /// lowest piece (`bottom_held`) where the answer came from it.
    fn bottom_window<const S: bool, const LONG: bool>(
        &mut self,
        len: usize,
        pos: usize,
        first: Time,
        new: &Task,
    ) -> Option<Time> {
        let top = self.top::<S>();
        let b = len - 1;
        let task = self.lowest::<LONG>(top, len);
        let limit = deadline_point(&task);
        let base = task.blocking.saturating_add(task.wcet);
        // Lower bounds on the new fixed point, as for the other pieces:
        // the old one (plus the new piece's jobs in it where it was exact)
        // and the chain from the piece above.
        // On a long core both pieces read below are in the last block (of
        // at least `block_len` ≥ 2 pieces) or the one before.
        let last = self
            .blocks
            .last()
            .map(|k| (self.blocks.len() - 1, self.in_blocks - k.len()));
        let slot = *self.piece::<LONG>(top, b, last).1;
        let mut own = slot.resp.saturating_sub(task.jitter);
        // (Its block, the last, may have passed point tests unsettled.)
        if slot.exact && !self.blocks.last().is_some_and(|k| k.stale) {
            own = own.saturating_add(jobs_at(own, new));
        }
        // The piece right above it: the new one (response time `first`)
        // or old piece b − 1 (on a short core both now at tasks[top + b]).
        let (above_task, above_resp) = if b == pos {
            (*new, first)
        } else if LONG {
            let (task, slot) = self.piece::<LONG>(top, b - 1, last);
            (*task, slot.resp)
        } else {
            (self.tasks[top + b], self.slots[b - 1].resp)
        };
        let above = chain_start(&above_task, above_resp, &task);
        let start = own.max(above).max(base);
        let r = if self.bottom_held == Some(top + len - 1) {
            #[cfg(test)]
            tests::BOTTOM_KEPT.with(|c| c.set(c.get() + 1));
            self.bottom.add(new);
            self.bottom_held = Some(top + len);
            self.bottom
                .fixed_point(base, start.max(self.bottom.w()), limit)
        } else {
            if LONG {
                self.extend_prefix(top + len, Some((pos, new)));
            }
            let higher = &self.tasks[..top + len];
            let (r, in_steps) = window_in(higher, &task, start, limit, &mut self.bottom);
            self.bottom_held = in_steps.then_some(top + len);
            r
        };
        #[cfg(test)]
        assert_eq!(
            r,
            window_in(
                self.above::<LONG>(top + len, Some((pos, new))),
                &task,
                0,
                limit,
                &mut StepSum::default()
            )
            .0,
            "the kept StepSum of the lowest piece went stale"
        );
        r
    }

    /// An upper bound on the deadline-point demand W(D − J) of `new` placed
    /// at `pos` (above the piece now at `pos`, q), in O(1): both have the
    /// same higher-priority pieces, so with I(t) their interference,
    /// W_new(t_new) = B + C + I(t_new) ≤ B + C + I(t_q) ≤ B + C + point_q −
    /// B_q − C_q when t_new ≤ t_q (I is non-decreasing; `point_q` is W_q(t_q)
    /// or an upper bound on it, never saturated). `None` where q is missing
    /// or has no point demand (Time::MAX), or t_q < t_new.
    fn bound_from_below<const LONG: bool>(
        &self,
        top: usize,
        pos: usize,
        new: &Task,
        near: Option<(usize, usize)>,
    ) -> Option<Time> {
        if pos >= self.len() {
            return None;
        }
        let (below, slot) = self.piece::<LONG>(top, pos, near);
        let point = slot.point;
        if point == Time::MAX || deadline_point(below) < deadline_point(new) {
            return None;
        }
        let interference = point.checked_sub(below.blocking.saturating_add(below.wcet))?;
        interference.checked_add(new.blocking.saturating_add(new.wcet))
    }

    /// Undo what [`Core::try_insert_by`] changed before piece `failed`
    /// (old index) failed: the new piece out of `tasks`, the demands of the
    /// pieces pos..=failed back, and the response times the RTA raised
    /// (`scratch`). Pieces that passed stay marked inexact, which is always
    /// sound (their response time is still a lower bound).
    #[cold]
    fn undo_insert<const LONG: bool>(
        &mut self,
        top: usize,
        pos: usize,
        failed: usize,
        new: &Task,
        scratch: &[(Time, bool, Time)],
    ) {
        debug_assert!(self.passed.is_empty() || !self.blocks.is_empty());
        // On a long core, the block of piece i and its first piece.
        let (mut b, mut start) = if LONG { self.block_of(pos) } else { (0, 0) };
        let mut passed = self.passed.iter().copied().peekable();
        let mut i = pos;
        while i <= failed {
            // A block passed whole took the jobs in its pending demand.
            if let Some((b, _, v)) = passed.next_if(|&(_, start, _)| start == i) {
                #[cfg(test)]
                tests::BLOCKS_UNDONE.with(|c| c.set(c.get() + 1));
                self.blocks[b].add -= v;
                i += self.blocks[b].len();
                continue;
            }
            let (task, slot) = if LONG {
                while i >= start + self.blocks[b].len() {
                    start += self.blocks[b].len();
                    b += 1;
                }
                let block = &mut self.blocks[b];
                (&block.tasks[i - start], &mut block.slots[i - start])
            } else {
                (&self.tasks[top + i + 1], &mut self.slots[i])
            };
            // Exactly what was added (saturation only ever reaches MAX,
            // which stays MAX: the point test does not apply there).
            if slot.point != Time::MAX {
                slot.point -= point_jobs(task, new);
            }
            i += 1;
        }
        for &(i, exact, resp) in scratch {
            let at = if LONG {
                self.piece_at(i as usize)
            } else {
                (0, i as usize)
            };
            let slot = self.slot::<LONG>(at);
            slot.resp = resp;
            slot.exact = exact;
        }
        if LONG {
            // The new piece was never put in the blocks; `tasks` may hold it.
            self.tasks.truncate(self.tasks.len().min(top + pos));
        } else {
            self.tasks.remove(top + pos);
        }
    }

    /// The insertion as it was before issue 24 (kept, for the property tests
    /// and the benchmark's side-by-side run, as the reference the fast
    /// [`Core::try_insert_by`] must agree with): the same decisions, but each
    /// piece below the new one sums Σ_hp C afresh, O(n) per piece.
    ///
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
    #[cfg(any(test, feature = "reference"))]
    pub(super) fn try_insert_by_reference<const S: bool>(
        &mut self,
        item: Item,
        key_less: impl Fn(&Task, &Task) -> bool,
        scratch: &mut Vec<(Time, bool, Time)>,
    ) -> bool {
        // Indices below are of pieces (`items`, `resp`, ...); piece i is
        // `tasks[top + i]`.
        self.settle_blocks();
        let top = self.top::<S>();
        let pos = self.tasks[top..].partition_point(|t| key_less(t, &item.task));
        self.tasks.insert(top + pos, item.task);
        scratch.clear();
        let new = item.task;
        for i in pos..self.tasks.len() - top {
            let task = &self.tasks[top + i];
            let above = match i.checked_sub(1) {
                None => 0,
                Some(a) if a < pos => chain_start(&self.tasks[top + a], self.slots[a].resp, task),
                Some(a) => chain_start(&self.tasks[top + a], scratch[a - pos].0, task),
            };
            let previous = if i == pos {
                0
            } else {
                self.slots[i - 1].resp.saturating_sub(task.jitter)
            };
            let start = above.max(previous);
            let higher = &self.tasks[..top + i];
            // Demand at the deadline point: from scratch for the new piece,
            // plus the new piece's jobs for those below it.
            let point = if i == pos {
                point_demand(higher, task)
            } else {
                self.slots[i - 1]
                    .point
                    .saturating_add(point_jobs(task, &new))
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
        self.slots.truncate(pos);
        self.slots.extend(scratch.iter().map(|e| Slot {
            resp: e.0,
            point: e.2,
            limit: 0,
            exact: e.1,
            tight: false,
        }));
        // As a core built outside the fast insertion: every limit D − J,
        // no demand known to be tight.
        for (slot, task) in self.slots.iter_mut().zip(&self.tasks[top..]) {
            *slot = Slot::new(task, slot.resp, slot.exact, slot.point);
        }
        self.rebuilt();
        true
    }
}

/// The time demand W(t) = B + C + Σ_hp ⌈(t + J_j)/T_j⌉C_j of `task` at its
/// deadline point t = D − J, saturating; `Time::MAX` when the point test
/// does not apply (D > T, or J > D). W(t) ≤ t is a sufficient test (the
/// least fixed point is then ≤ t); `false` means "run the exact RTA".
pub(super) fn point_demand(higher: &[Task], task: &Task) -> Time {
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
pub(super) fn point_jobs(task: &Task, h: &Task) -> Time {
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
pub(super) fn chain_start(above: &Task, above_resp: Time, task: &Task) -> Time {
    if above.blocking != 0 || above.deadline > above.period {
        return 0;
    }
    above_resp
        .saturating_sub(above.jitter)
        .saturating_add(task.blocking)
        .saturating_add(task.wcet)
}

/// The least fixed point w ≥ `start` of w = B + C + Σ_hp ⌈(w + J_j)/T_j⌉·C_j
/// for `task` with D ≤ T below `higher`, or `None` once w exceeds `limit` =
/// D − J (or on overflow): [`fp::response_time_from`]'s first job without
/// its up-front passes over `higher` (the Σ C/T > 1 shortcut and the cold
/// start Σ C): with D ≤ T no fixed point within D − J exists when the
/// level's utilization exceeds 1 (W(w) ≥ w·U_hp + C > w for 0 < w ≤ T), and
/// any `start` up to the least fixed point reaches it. The response time
/// is w + J. Requires B + C > 0 (fp starts above the fixed point 0).
pub(super) fn window_from(higher: &[Task], task: &Task, start: Time, limit: Time) -> Option<Time> {
    thread_local! {
        static STEPS: std::cell::RefCell<StepSum> = Default::default();
    }
    if higher.len() < STEP_SUM_PIECES {
        // No StepSum below few pieces (an empty one allocates nothing).
        return window_in(higher, task, start, limit, &mut StepSum::default()).0;
    }
    STEPS.with(|s| match s.try_borrow_mut() {
        Ok(mut steps) => window_in(higher, task, start, limit, &mut steps).0,
        Err(_) => window_in(higher, task, start, limit, &mut StepSum::default()).0,
    })
}

/// Whether [`window_from`] applies to `task` (D ≤ T, B + C > 0).
fn windowed(task: &Task) -> bool {
    task.deadline <= task.period && task.blocking.saturating_add(task.wcet) > 0
}

/// [`window_from`] with `steps` as the [`StepSum`], and whether the answer
/// came from it (then `steps` holds `higher` at the last w).
fn window_in(
    higher: &[Task],
    task: &Task,
    start: Time,
    limit: Time,
    steps: &mut StepSum,
) -> (Option<Time>, bool) {
    let Some(base) = task.blocking.checked_add(task.wcet) else {
        return (None, false);
    };
    let mut w = start.max(base);
    if higher.len() <= SHORT_WINDOW {
        return (window_short(higher, base, w, limit), false);
    }
    // Below many pieces, once a pass moves w so little that few job counts
    // change, the remaining passes go through a [`StepSum`] built at the
    // current w (one pass, then only the terms whose job count grows are
    // updated: near U = 1 the iteration may take hundreds of passes, each
    // crossing a few steps). The same iterates, so the same fixed point.
    // A pass from w to w' crosses about (w' − w)·Σ 1/T_j steps, each a heap
    // update of about log n ≈ [`STEP_COST`] plain terms.
    let stepped = higher.len() >= STEP_SUM_PIECES;
    let mut rate = 0.0;
    loop {
        let Some(next) = demand_at(higher, base, w) else {
            return (None, false);
        };
        if next > limit {
            return (None, false);
        }
        if next == w {
            return (Some(w), false);
        }
        if stepped {
            if rate == 0.0 {
                rate = higher.iter().map(|h| 1.0 / h.period as f64).sum();
            }
            if (next - w) as f64 * rate * STEP_COST < higher.len() as f64 {
                steps.reset_at(higher, next);
                return (steps.fixed_point(base, next, limit), true);
            }
        }
        w = next;
    }
}

/// Up to this many interferers, [`window_in`] keeps their terms on the
/// stack ([`window_short`]).
const SHORT_WINDOW: usize = 16;

/// Whether `task` is plain for [`Core::make_exact_plain`]: no jitter, no
/// blocking, 0 < C and D ≤ T.
#[inline(always)]
fn plain(task: &Task) -> bool {
    // One test of the four conditions (no branch each).
    ((task.jitter | task.blocking) == 0) & (task.wcet > 0) & (task.deadline <= task.period)
}

/// [`Core::make_exact_plain`]'s RTAs, down the pieces `slots` (of
/// `tasks[top..]`) with the terms of `tasks[..terms.len()]` in `terms`
/// (empty at the start); `None` where it stops.
fn plain_rtas(
    tasks: &[Task],
    top: usize,
    slots: &mut [Slot],
    terms: &mut Vec<PlainTerm>,
) -> Option<()> {
    let mut sum = PlainSum {
        at: 0,
        sum: 0,
        least: Time::MAX,
    };
    // The response time of the piece above (0 above the first).
    let mut above: Time = 0;
    for (i, (task, slot)) in tasks[top..].iter().zip(slots.iter_mut()).enumerate() {
        if slot.exact {
            above = slot.resp;
            continue;
        }
        if !plain(task) {
            return None;
        }
        let (c, deadline) = (task.wcet, task.deadline);
        // chain_start, with no jitter or blocking above and here (0 above
        // the first piece, where C ≥ 1 is the larger).
        let mut w = slot.resp.max(above.saturating_add(c));
        sum.bring(terms, w)?;
        // The pieces added since the last RTA, at their first w.
        for h in &tasks[terms.len()..top + i] {
            if !plain(h) {
                return None;
            }
            // One job where w ≤ T (w > 0), else the division.
            let (value, until) = match w <= h.period {
                true => (h.wcet, h.period),
                false => plain_term(w, h.period, h.wcet)?,
            };
            terms.push(PlainTerm {
                period: h.period,
                wcet: h.wcet,
                value,
                until,
            });
            sum.sum = sum.sum.checked_add(value)?;
            sum.least = sum.least.min(until);
        }
        loop {
            let next = c.checked_add(sum.sum)?;
            if next > deadline {
                return None;
            }
            if next == w {
                break;
            }
            w = next;
            sum.bring(terms, w)?;
        }
        slot.resp = w;
        slot.exact = true;
        above = w;
    }
    Some(())
}

/// The sum of [`PlainTerm`]s at the w `at`, and the least of their untils.
struct PlainSum {
    at: Time,
    sum: Time,
    least: Time,
}

impl PlainSum {
    /// Bring `terms` from `at` to `w`: nothing where w is at most every
    /// term's until (O(1)), else [`PlainSum::step`]. `None` on overflow.
    #[inline(always)]
    fn bring(&mut self, terms: &mut [PlainTerm], w: Time) -> Option<()> {
        if w < self.at || w > self.least {
            self.step(terms, w)?;
        }
        self.at = w;
        Some(())
    }

    /// [`PlainSum::bring`] where some term changes: one more job where w is
    /// at most a period past the term's until, else the division; every
    /// term afresh below `at`.
    #[inline(never)]
    fn step(&mut self, terms: &mut [PlainTerm], w: Time) -> Option<()> {
        let (mut sum, mut least) = (self.sum, Time::MAX);
        if w < self.at {
            sum = 0;
            for t in terms.iter_mut() {
                (t.value, t.until) = plain_term(w, t.period, t.wcet)?;
                sum = sum.checked_add(t.value)?;
                least = least.min(t.until);
            }
        } else {
            for t in terms.iter_mut() {
                if w > t.until {
                    let (value, until) = match t.until.checked_add(t.period) {
                        Some(next) if w <= next => (t.value.checked_add(t.wcet)?, next),
                        _ => plain_term(w, t.period, t.wcet)?,
                    };
                    // The job count only grows with w: no underflow.
                    sum = (sum - t.value).checked_add(value)?;
                    (t.value, t.until) = (value, until);
                }
                least = least.min(t.until);
            }
        }
        (self.sum, self.least) = (sum, least);
        Some(())
    }
}

/// One interference term of [`Core::make_exact_plain`]: ⌈w/T⌉·C at the
/// current w (`value`) and the last w with that job count (`until`, k·T).
#[derive(Debug, Clone, Copy, Default)]
struct PlainTerm {
    period: Time,
    wcet: Time,
    value: Time,
    until: Time,
}

/// ⌈w/T⌉·C and the last w with that job count, k·T, for w > 0 (no
/// jitter); `None` where either overflows.
#[inline(always)]
fn plain_term(w: Time, period: Time, wcet: Time) -> Option<(Time, Time)> {
    let k = w.div_ceil(period);
    Some((k.checked_mul(wcet)?, k.checked_mul(period)?))
}

/// [`window_in`]'s plain passes below at most [`SHORT_WINDOW`] interferers
/// from w (≥ B + C = `base`), the same iterates (so the same answer):
/// the first pass computes every term ⌈(w + J)/T⌉·C and the last w at
/// which it holds ([`Interference::term`]); a later pass at a larger w
/// only compares and divides where a job count grows (a smaller w, from a
/// start above the least fixed point, recomputes every term). `None` where
/// [`demand_at`] overflows or w exceeds `limit`.
fn window_short(higher: &[Task], base: Time, mut w: Time, limit: Time) -> Option<Time> {
    let mut value = [0 as Time; SHORT_WINDOW];
    let mut until = [0 as Time; SHORT_WINDOW];
    let (value, until) = (&mut value[..higher.len()], &mut until[..higher.len()]);
    let mut sum: Time = 0;
    let mut fresh = true;
    loop {
        if fresh {
            sum = 0;
            for ((h, v), u) in higher.iter().zip(value.iter_mut()).zip(until.iter_mut()) {
                (*v, *u) = Interference::term(w, h.period, h.wcet, h.jitter)?;
                sum = sum.checked_add(*v)?;
            }
        } else {
            for ((h, v), u) in higher.iter().zip(value.iter_mut()).zip(until.iter_mut()) {
                if w > *u {
                    let (new, last) =
                        Interference::next_term(w, h.period, h.wcet, h.jitter, *v, *u)?;
                    // The job count only grows with w: no underflow; an
                    // overflow means the sum at w does.
                    sum = (sum - *v).checked_add(new)?;
                    (*v, *u) = (new, last);
                }
            }
        }
        let next = base.checked_add(sum)?;
        if next > limit {
            return None;
        }
        if next == w {
            return Some(w);
        }
        fresh = next < w;
        w = next;
    }
}

/// The interference I(w) = Σ_j ⌈(w + J_j)/T_j⌉·C_j of a growing prefix of
/// a core's tasks (Tindell et al. 1994, Eq. 4) at the current w, for
/// [`Core::make_exact`]: each term keeps the last w at which its job count
/// holds, so a pass at a larger w only compares, and divides where a job
/// count grows (a linear scan: [`StepSum`]'s heap does not pay below
/// [`STEP_SUM_PIECES`] tasks). A smaller w recomputes every term.
#[derive(Debug, Clone, Default)]
struct Interference {
    /// Per task: (T, C, J, ⌈(w + J)/T⌉·C, the last w with that value).
    terms: Vec<(Time, Time, Time, Time, Time)>,
    /// The w of the terms' values, and their sum.
    w: Time,
    sum: Time,
    /// Whether `sum` and every term hold at `w` (false after an overflow).
    valid: bool,
}

impl Interference {
    fn clear(&mut self) {
        self.terms.clear();
        self.w = 0;
        self.sum = 0;
        self.valid = true;
    }

    /// ⌈(w + J)/T⌉·C and the last w with that job count; `None` where
    /// w + J or the product overflows ([`demand_at`]'s terms).
    #[inline(always)]
    fn term(w: Time, period: Time, wcet: Time, jitter: Time) -> Option<(Time, Time)> {
        let k = w.checked_add(jitter)?.div_ceil(period);
        let value = k.checked_mul(wcet)?;
        // k·T ≥ w + J, so k·T − J ≥ w. Where k·T overflows, every w + J
        // that does not holds k jobs: the last such w is MAX − J.
        let until = k
            .checked_mul(period)
            .map_or(Time::MAX - jitter, |high| high - jitter);
        Some((value, until))
    }

    /// [`Interference::term`] at w > `until` from the term (`value`,
    /// `until`) of k jobs: where w is at most one period past `until`, k + 1
    /// jobs without a division (w + J lies in (kT, (k + 1)T]), else the
    /// division.
    #[inline(always)]
    fn next_term(
        w: Time,
        period: Time,
        wcet: Time,
        jitter: Time,
        value: Time,
        until: Time,
    ) -> Option<(Time, Time)> {
        // w + J must not overflow ([`demand_at`]); beyond an `until` of
        // MAX − J it always does, so no `until` exceeds MAX − J.
        w.checked_add(jitter)?;
        match until.checked_add(period) {
            Some(next) if w <= next => {
                Some((value.checked_add(wcet)?, next.min(Time::MAX - jitter)))
            }
            _ => Self::term(w, period, wcet, jitter),
        }
    }

    /// Add the tasks of `higher` beyond those held (a prefix of `higher`),
    /// each with its term at w = 0 (0 jobs up to w = 0 without jitter), to
    /// be brought to the current w by the next [`Interference::at`], whose
    /// w is above 0 (w ≥ B + C > 0 in [`Interference::window`]).
    #[inline(always)]
    fn extend_to(&mut self, higher: &[Task]) {
        for h in &higher[self.terms.len()..] {
            let (value, until) = match h.jitter {
                0 => (0, 0),
                _ => match Self::term(0, h.period, h.wcet, h.jitter) {
                    Some(term) => term,
                    None => {
                        self.valid = false;
                        (0, 0)
                    }
                },
            };
            match self.sum.checked_add(value) {
                Some(sum) => self.sum = sum,
                None => self.valid = false,
            }
            self.terms.push((h.period, h.wcet, h.jitter, value, until));
        }
    }

    /// I(w) over the terms held, or `None` where [`demand_at`] overflows.
    /// Requires w > 0 where terms were added since the last call.
    #[inline(always)]
    fn at(&mut self, w: Time) -> Option<Time> {
        if self.valid && w >= self.w {
            let mut sum = self.sum;
            for t in self.terms.iter_mut() {
                if w > t.4 {
                    let (value, until) =
                        Self::next_term(w, t.0, t.1, t.2, t.3, t.4).or_else(|| {
                            self.valid = false;
                            None
                        })?;
                    // The job count only grows with w: no underflow; an
                    // overflow means the sum at w does.
                    sum = (sum - t.3).checked_add(value).or_else(|| {
                        self.valid = false;
                        None
                    })?;
                    t.3 = value;
                    t.4 = until;
                }
            }
            self.w = w;
            self.sum = sum;
            return Some(sum);
        }
        let mut sum: Time = 0;
        self.valid = false;
        for t in self.terms.iter_mut() {
            let (value, until) = Self::term(w, t.0, t.1, t.2)?;
            sum = sum.checked_add(value)?;
            t.3 = value;
            t.4 = until;
        }
        self.w = w;
        self.sum = sum;
        self.valid = true;
        Some(sum)
    }

    /// [`window_from`]'s plain passes (the same iterates, so the same
    /// answer) for `task` below the tasks held. Requires B + C > 0 (as
    /// [`window_from`]).
    #[inline(always)]
    fn window(&mut self, task: &Task, start: Time, limit: Time) -> Option<Time> {
        let base = task.blocking.checked_add(task.wcet)?;
        debug_assert!(base > 0, "Interference::window needs B + C > 0");
        let mut w = start.max(base);
        loop {
            let next = base.checked_add(self.at(w)?)?;
            if next > limit {
                return None;
            }
            if next == w {
                return Some(w);
            }
            w = next;
        }
    }
}

/// base + Σ_hp ⌈(w + J)/T⌉·C, or `None` on overflow.
fn demand_at(higher: &[Task], base: Time, w: Time) -> Option<Time> {
    let mut next = base;
    for h in higher {
        let jobs = w.checked_add(h.jitter)?.div_ceil(h.period);
        next = next.checked_add(jobs.checked_mul(h.wcet)?)?;
    }
    Some(next)
}

/// [`fp::response_time_from`], by [`window_from`] where it applies (D ≤ T,
/// B + C > 0: with B + C = 0 fp starts from Σ_hp C, above the fixed point
/// 0): the same answers without fp's up-front passes over `higher`.
pub(super) fn response_time_from(higher: &[Task], task: &Task, start: Time) -> Option<Time> {
    if task.deadline <= task.period && task.blocking.saturating_add(task.wcet) > 0 {
        window_from(higher, task, start, deadline_point(task)).map(|w| w + task.jitter)
    } else {
        fp::response_time_from(higher, task, start)
    }
}

/// ⌈(t + J)/T⌉·C of one task (`h`) for a run of windows t: the last job
/// count k is kept with the range (k − 1)·T < t + J ≤ k·T where it holds,
/// so windows that mostly grow cost one comparison each and a division
/// only when t + J leaves the range (the same values as [`point_jobs`]).
struct Jobs {
    period: Time,
    jitter: Time,
    wcet: Time,
    /// (k − 1)·T and k·T (exclusive and inclusive ends), or (0, 0) before
    /// the first division or where k·T overflows.
    low: Time,
    high: Time,
    value: Time,
}

impl Jobs {
    fn new(h: &Task) -> Jobs {
        Jobs {
            period: h.period,
            jitter: h.jitter,
            wcet: h.wcet,
            low: 0,
            high: 0,
            value: 0,
        }
    }

    /// ⌈(t + J)/T⌉·C, saturating.
    #[inline(always)]
    fn at(&mut self, t: Time) -> Time {
        let x = t.saturating_add(self.jitter);
        if self.low < x && x <= self.high {
            return self.value;
        }
        let k = x.div_ceil(self.period);
        self.value = k.saturating_mul(self.wcet);
        match k.checked_mul(self.period) {
            Some(high) if k > 0 => {
                self.high = high;
                self.low = high - self.period;
            }
            _ => {
                self.high = 0;
                self.low = 0;
            }
        }
        self.value
    }
}

/// Up to this many pieces, [`partition_point`] scans instead of bisecting.
const SHORT_SCAN: usize = 8;

/// The number of pieces of `tasks` (sorted by `key`) that go above `new`:
/// `tasks.partition_point(|t| key.less(t, new))`, by a scan on a short core
/// (most of PDMS_HPTS_DS's cores; one comparison of deadlines decides most
/// steps, where the bisection's probes cost more than the scan's) and by
/// the bisection on a longer one.
#[inline(always)]
fn partition_point(tasks: &[Task], key: Key, new: &Task) -> usize {
    if tasks.len() <= SHORT_SCAN {
        tasks.iter().take_while(|t| key.less(t, new)).count()
    } else {
        tasks.partition_point(|t| key.less(t, new))
    }
}

/// t = D − J, the point of the deadline-point test.
fn deadline_point(task: &Task) -> Time {
    task.deadline.saturating_sub(task.jitter)
}

/// ⌈(t + J_h)/T_h⌉·C_h: the demand of `h` in a window of length t
/// (Tindell et al. 1994, Eq. 4).
fn jobs_at(t: Time, h: &Task) -> Time {
    t.saturating_add(h.jitter)
        .div_ceil(h.period)
        .saturating_mul(h.wcet)
}

/// Whether every task of `tasks[top..]` (priority order, below the
/// servers `tasks[..top]`, which are not analysed) meets its deadline; the
/// response times of `tasks[top..]` go to `resp`.
#[cfg(any(test, feature = "reference"))]
pub(super) fn schedulable_into(tasks: &[Task], top: usize, resp: &mut Vec<Time>) -> bool {
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

/// The switch between [`Core::try_insert_by`] and the pre-issue-24
/// `Core::try_insert_by_reference` (tests and the benchmark's
/// side-by-side run; per thread).
#[cfg(any(test, feature = "reference"))]
pub(crate) mod reference {
    use std::cell::Cell;

    thread_local! {
        static ENABLED: Cell<bool> = const { Cell::new(false) };
    }

    pub(crate) fn enabled() -> bool {
        ENABLED.with(Cell::get)
    }

    /// Run `f` with the reference insertion on this thread.
    pub(crate) fn with<R>(f: impl FnOnce() -> R) -> R {
        struct Reset(bool);
        impl Drop for Reset {
            fn drop(&mut self) {
                ENABLED.with(|e| e.set(self.0));
            }
        }
        let _reset = Reset(ENABLED.with(|e| e.replace(true)));
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::partition::tests::dm_core as tasks_from;

    thread_local! {
        /// How often a piece passed the test at the lowest piece's fixed
        /// point, and how often that fixed point came from the kept
        /// StepSum (the tests below check that both paths run).
        pub(super) static BOTTOM_POINT_PASSES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        pub(super) static BOTTOM_KEPT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// How often the walk passed a [`Block`] whole, and how often a
        /// rejection took such a pass back.
        pub(super) static BLOCKS_PASSED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        pub(super) static BLOCKS_UNDONE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// Random pieces (some with jitter, blocking or D < T) inserted one by
    /// one in random order into one DM core, by [`Core::try_insert_by`]
    /// and by the pre-issue-24 `Core::try_insert_by_reference`: the same
    /// decisions, and after [`Core::make_exact`] the same response times.
    fn insert_like_reference(
        raw: &[(u64, u64, u64, u8)],
        dpct: &[u64],
    ) -> Result<(), TestCaseError> {
        let mut core = Core::with_capacity(raw.len());
        let mut reference = Core::with_capacity(raw.len());
        core.reset(&[]);
        reference.reset(&[]);
        let (mut s1, mut s2) = (Vec::new(), Vec::new());
        for (n, &(t, c, j, kind)) in raw.iter().enumerate() {
            let d = (t * dpct[n % dpct.len()] / 100).max(c.min(t)).max(1);
            let task = Task {
                jitter: if kind == 0 { j.min(d / 4) } else { 0 },
                blocking: if kind == 1 { c } else { 0 },
                ..Task::new(n, c.min(d), t, d)
            };
            let item = Item {
                task,
                index: n,
                piece: 0,
                offset: 0,
            };
            let got = core.try_insert_by::<false>(&item, Key::Dm, &mut s1);
            let want =
                reference.try_insert_by_reference::<false>(item, super::super::dm_less, &mut s2);
            prop_assert_eq!(got, want, "insertion {} of {:?}", n, task);
        }
        core.make_exact::<false>();
        reference.make_exact::<false>();
        prop_assert_eq!(&core.tasks, &reference.tasks);
        let resp = |c: &Core| c.slots.iter().map(|s| s.resp).collect::<Vec<_>>();
        prop_assert_eq!(resp(&core), resp(&reference));
        for i in 0..core.tasks.len() {
            prop_assert_eq!(
                Some(core.slots[i].resp),
                fp::response_time(&core.tasks[..i], &core.tasks[i])
            );
        }
        Ok(())
    }

    proptest! {
        /// Near-full cores of plain and mixed pieces: the lowest piece's
        /// fixed point as a test point ([`Core::bottom_window`]) gives the
        /// reference's decisions and response times.
        #[test]
        fn bottom_point_test_matches_reference(
            raw in prop::collection::vec((100u64..=3000, 1u64..=60, 0u64..=40, 0u8..12), 20..90),
            dpct in prop::collection::vec(70u64..=100, 1..4),
        ) {
            insert_like_reference(&raw, &dpct)?;
        }
    }

    /// The test point of the lowest piece passes pieces and its StepSum is
    /// kept across insertions, on cores like the property test's.
    #[test]
    fn bottom_point_test_fires() {
        let mut rng = crate::generate::Rng::new(7);
        BOTTOM_POINT_PASSES.with(|c| c.set(0));
        BOTTOM_KEPT.with(|c| c.set(0));
        for _ in 0..40 {
            let tasks = crate::generate::uunifast_tasks(&mut rng, 150, 0.99, 1_000, 100_000);
            let raw: Vec<_> = tasks
                .iter()
                .map(|t| (t.period, t.wcet.max(1), 0, 2))
                .collect();
            insert_like_reference(&raw, &[100]).unwrap();
        }
        assert!(BOTTOM_POINT_PASSES.with(|c| c.get()) > 0);
        assert!(BOTTOM_KEPT.with(|c| c.get()) > 0);
    }

    /// A core reused after long walks (their passes kept for an undo) and
    /// a reset: a rejection on the short core undoes only its own walk
    /// (the `scale` benchmark once indexed a dropped block here).
    #[test]
    fn reset_forgets_the_passes() {
        let mut rng = crate::generate::Rng::new(5);
        let mut core = Core::with_capacity(200);
        let mut scratch = Vec::new();
        let mut passes = false;
        for round in 0..20 {
            core.reset(&[]);
            for (n, t) in crate::generate::uunifast_tasks(&mut rng, 120, 0.97, 1_000, 20_000)
                .into_iter()
                .enumerate()
            {
                let item = Item {
                    task: Task::new(n, t.wcet.max(1), t.period, t.period),
                    index: n,
                    piece: 0,
                    offset: 0,
                };
                core.try_insert_by::<false>(&item, Key::Dm, &mut scratch);
                passes |= !core.passed.is_empty();
            }
            core.reset(&[]);
            assert!(core.passed.is_empty() && core.blocks.is_empty());
            // A piece that misses its deadline once the new one goes above
            // it: rejected in the walk, undone.
            let low = Item {
                task: Task::new(0, 4, 7 + round % 2, 7),
                index: 0,
                piece: 0,
                offset: 0,
            };
            let high = Item {
                task: Task::new(1, 2, 5, 5),
                ..low
            };
            assert!(core.try_insert_by::<false>(&low, Key::Dm, &mut scratch));
            assert!(!core.try_insert_by::<false>(&high, Key::Dm, &mut scratch));
            assert_eq!(core.tasks, vec![low.task]);
        }
        assert!(passes, "no walk passed a block");
    }

    /// The walk passes [`Block`]s whole and rejections take such passes
    /// back, on cores like the property test's (many short periods, so
    /// that the new piece's job count differs across some blocks and not
    /// others), with the reference's decisions and response times.
    #[test]
    fn blocks_pass_and_undo() {
        let mut rng = crate::generate::Rng::new(11);
        BLOCKS_PASSED.with(|c| c.set(0));
        BLOCKS_UNDONE.with(|c| c.set(0));
        for _ in 0..40 {
            let tasks = crate::generate::uunifast_tasks(&mut rng, 120, 1.05, 1_000, 20_000);
            let raw: Vec<_> = tasks
                .iter()
                .map(|t| (t.period, t.wcet.max(1), t.period / 7, (t.id % 6) as u8))
                .collect();
            insert_like_reference(&raw, &[100, 90, 75]).unwrap();
        }
        assert!(BLOCKS_PASSED.with(|c| c.get()) > 0);
        assert!(BLOCKS_UNDONE.with(|c| c.get()) > 0);
    }

    proptest! {
        /// [`partition_point`] (a scan up to [`SHORT_SCAN`] pieces, the
        /// bisection beyond) gives the bisection's place under both keys,
        /// with ties in D and T.
        #[test]
        fn partition_point_matches_bisection(
            raw in prop::collection::vec((1u64..=6, 0u64..=2), 0..=2 * SHORT_SCAN),
            new in (1u64..=6, 0u64..=2, 0usize..40),
        ) {
            let tasks: Vec<Task> = raw
                .iter()
                .enumerate()
                .map(|(id, &(d, extra))| Task::new(id, 1, d + extra, d))
                .collect();
            let new = Task::new(new.2, 1, new.0 + new.1, new.0);
            for key in [Key::Dm, Key::Rm] {
                let mut sorted = tasks.clone();
                sorted.sort_by(|a, b| match (key.less(a, b), key.less(b, a)) {
                    (true, _) => std::cmp::Ordering::Less,
                    (_, true) => std::cmp::Ordering::Greater,
                    _ => std::cmp::Ordering::Equal,
                });
                prop_assert_eq!(
                    partition_point(&sorted, key, &new),
                    sorted.partition_point(|t| key.less(t, &new))
                );
            }
        }

        /// [`Jobs`] gives [`point_jobs`]' values over any run of windows.
        #[test]
        fn jobs_match_point_jobs(
            h in (1u64..=5000, 0u64..=100, 0u64..=3000),
            windows in prop::collection::vec(0u64..=20_000, 1..60),
        ) {
            let h = Task { jitter: h.2, ..Task::implicit(0, h.1, h.0) };
            let mut jobs = Jobs::new(&h);
            for t in windows {
                let task = Task::implicit(1, 0, t.max(1));
                let expected = point_jobs(&Task { deadline: t, ..task }, &h);
                prop_assert_eq!(jobs.at(t), expected);
            }
        }

        /// [`window_from`] (plain passes, then the [`StepSum`] beyond
        /// [`STEP_SUM_PIECES`] interferers) finds fp's response times, from
        /// cold and warm starts.
        #[test]
        fn window_from_matches_fp(
            raw in prop::collection::vec((100u64..=5000, 1u64..=12, 0u64..=40, 0u8..6), 60..140),
            extra in 0u64..=200,
        ) {
            let tasks = tasks_from(&raw);
            for i in [tasks.len() / 2, tasks.len() - 1] {
                let (higher, task) = (&tasks[..i], &tasks[i]);
                let exact = fp::response_time(higher, task);
                prop_assert_eq!(response_time_from(higher, task, 0), exact);
                if let Some(r) = exact {
                    // Any start up to the least fixed point w = R − J.
                    let w = r - task.jitter;
                    let start = w.saturating_sub(extra);
                    prop_assert_eq!(response_time_from(higher, task, start), exact);
                }
            }
        }

        /// [`window_short`] takes the plain passes' iterates (from any
        /// start, above the least fixed point too) and finds fp's response
        /// times from starts up to it.
        #[test]
        fn window_short_matches_plain_passes(
            raw in prop::collection::vec((100u64..=5000, 1u64..=40, 0u64..=40, 0u8..6), 1..=17),
            shift in prop::collection::vec(0u64..=3000, 17),
        ) {
            let tasks = tasks_from(&raw);
            for i in 0..tasks.len() {
                let (higher, task) = (&tasks[..i], &tasks[i]);
                if !windowed(task) {
                    continue;
                }
                let base = task.blocking + task.wcet;
                let limit = deadline_point(task);
                let plain = |mut w: Time| loop {
                    let next = demand_at(higher, base, w)?;
                    if next > limit {
                        return None;
                    }
                    if next == w {
                        return Some(w);
                    }
                    w = next;
                };
                let exact = fp::response_time(higher, task);
                let lfp = exact.map_or(base, |r| r - task.jitter);
                for w in [base, lfp.saturating_sub(shift[i]).max(base), lfp + shift[i]] {
                    prop_assert_eq!(window_short(higher, base, w, limit), plain(w));
                }
                let got = window_short(higher, base, base, limit).map(|w| w + task.jitter);
                prop_assert_eq!(got, exact);
            }
        }

        /// [`Interference::next_term`] (one job more without a division
        /// where it can) gives [`Interference::term`]'s values beyond a
        /// term's `until`, at the period boundaries and anywhere, small
        /// values and near overflow.
        #[test]
        fn next_term_matches_term(
            small in (1u64..=5000, 0u64..=5000, 0u64..=3000, 0u64..=20_000, 0u64..=10_000),
            large in (1u64.., any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()),
        ) {
            for (period, wcet, jitter, w0, off) in [small, large] {
                let Some((value, until)) = Interference::term(w0, period, wcet, jitter) else {
                    continue;
                };
                let beyond = [
                    until.checked_add(1),
                    until.checked_add(period),
                    until.checked_add(period).and_then(|w| w.checked_add(1)),
                    until.checked_add(1).and_then(|w| w.checked_add(off)),
                ];
                for w in beyond.into_iter().flatten() {
                    prop_assert_eq!(
                        Interference::next_term(w, period, wcet, jitter, value, until),
                        Interference::term(w, period, wcet, jitter)
                    );
                }
            }
        }

        /// [`Interference`], carried down a core as [`Core::make_exact`]
        /// does (starts that mostly grow, some below the previous w), finds
        /// fp's response times.
        #[test]
        fn interference_matches_fp(
            raw in prop::collection::vec((100u64..=5000, 1u64..=40, 0u64..=40, 0u8..6), 1..40),
            back in prop::collection::vec(0u64..=400, 40),
        ) {
            let tasks = tasks_from(&raw);
            let mut sum = Interference::default();
            sum.clear();
            for i in 0..tasks.len() {
                let (higher, task) = (&tasks[..i], &tasks[i]);
                if !windowed(task) {
                    continue;
                }
                let exact = fp::response_time(higher, task);
                let w = exact.map_or(0, |r| r - task.jitter);
                sum.extend_to(higher);
                let got = sum
                    .window(task, w.saturating_sub(back[i]), deadline_point(task))
                    .map(|w| w + task.jitter);
                prop_assert_eq!(got, exact);
            }
        }

        /// [`Core::make_exact_plain`] on plain cores (D ≤ T, no jitter or
        /// blocking), some pieces exact and the others holding lower bounds
        /// (the response time less up to `back`, or 0), finds fp's
        /// response times; where a piece is not plain it stops, and
        /// [`Core::make_exact`]'s general path finishes with the same
        /// answers. Periods up to 2^40 and near-full cores reach the
        /// divisions, the one-more-job steps and the restarts below `at`.
        #[test]
        fn make_exact_plain_matches_fp(
            raw in prop::collection::vec(
                (100u64..=5000, 1u64..=60, 50u64..=100, 0u8..8, 0u64..=400),
                1..40,
            ),
            scale in prop::sample::select(vec![1u64, 1000, 1 << 28, 1 << 50]),
            mixed in any::<bool>(),
        ) {
            let mut tasks: Vec<Task> = raw
                .iter()
                .enumerate()
                .map(|(id, &(t, c, dpct, kind, _))| {
                    let (t, c) = (t * scale, c * scale);
                    let d = (t / 100 * dpct).max(c.min(t));
                    Task {
                        jitter: if mixed && kind == 7 { c / 2 } else { 0 },
                        ..Task::new(id, c.min(d), t, d)
                    }
                })
                .collect();
            crate::fp::dm_order(&mut tasks);
            // The schedulable prefix (make_exact expects a schedulable core).
            let mut exact = Vec::new();
            for i in 0..tasks.len() {
                match fp::response_time(&tasks[..i], &tasks[i]) {
                    Some(r) => exact.push(r),
                    None => break,
                }
            }
            tasks.truncate(exact.len());
            let mut core = Core::with_capacity(tasks.len());
            core.reset(&[]);
            core.tasks.extend_from_slice(&tasks);
            for (i, (t, &r)) in tasks.iter().zip(&exact).enumerate() {
                let (kind, back) = (raw[t.id].3, raw[t.id].4 * scale / 8);
                let (resp, known) = match kind {
                    0 | 1 => (r, true),
                    2 => (0, false),
                    _ => (r.saturating_sub(back).max(t.jitter), false),
                };
                core.items.push(Item { task: *t, index: i, piece: 0, offset: 0 });
                core.slots.push(Slot::new(t, resp, known, 0));
            }
            let all_plain = tasks.iter().all(plain);
            let done = core.make_exact_plain(0);
            prop_assert!(done || !all_plain, "a plain core left to the general path");
            core.make_exact::<false>();
            let got: Vec<Time> = core.slots.iter().map(|s| s.resp).collect();
            prop_assert_eq!(got, exact);
        }

        /// [`Core::sort_items`] puts the late pieces where `Vec::insert` at
        /// the partition point would have (equal keys: the newer first),
        /// sorted in several rounds.
        #[test]
        fn sort_items_matches_insertion(
            raw in prop::collection::vec((1u64..=3, 1u64..=3, 0usize..=2, 0u8..4), 0..40),
        ) {
            let mut expected: Vec<Item> = Vec::new();
            let mut core = Core::with_capacity(0);
            core.reset(&[]);
            for (n, &(d, t, id, round)) in raw.iter().enumerate() {
                let item = Item {
                    task: Task::new(id, 1, t.max(d), d),
                    index: n,
                    piece: 0,
                    offset: 0,
                };
                let pos = expected.partition_point(|x| super::super::dm_less(&x.task, &item.task));
                expected.insert(pos, item);
                core.late_key = Some(Key::Dm);
                core.late.push((core.inserted, item));
                core.inserted += 1;
                if round == 0 {
                    core.sort_items();
                }
            }
            core.sort_items();
            let got: Vec<usize> = core.items.iter().map(|it| it.index).collect();
            let want: Vec<usize> = expected.iter().map(|it| it.index).collect();
            prop_assert_eq!(got, want);
        }

        /// [`Core::bound_from_below`] never lies below the exact
        /// deadline-point demand of the new piece.
        #[test]
        fn bound_from_below_is_an_upper_bound(
            raw in prop::collection::vec((100u64..=5000, 1u64..=40, 0u64..=40, 0u8..6), 2..60),
            at in 0usize..60,
        ) {
            let tasks = tasks_from(&raw);
            let new_at = at % tasks.len();
            let new = tasks[new_at];
            let rest: Vec<Task> = tasks.iter().copied().enumerate()
                .filter(|&(i, _)| i != new_at).map(|(_, t)| t).collect();
            let mut core = Core::with_capacity(rest.len());
            core.reset(&[]);
            core.tasks.extend_from_slice(&rest);
            core.slots
                .extend(rest.iter().map(|t| Slot::new(t, 0, true, 0)));
            core.set_exact::<false>();
            if let Some(bound) = core.bound_from_below::<false>(0, new_at, &new, None) {
                let exact = point_demand(&rest[..new_at], &new);
                prop_assert!(exact <= bound, "{} > {}", exact, bound);
            }
        }
    }
}
