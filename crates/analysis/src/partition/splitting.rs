//! Task splitting: PDMS_HPTS and PDMS_HPTS_DS (seed 003 Algorithms 1 and
//! 2, with the fixes (a)-(d) of the module docs of [`super`]): cores filled
//! one at a time, HPTaskSplit when a task does not fit, the split itself
//! ([`split`]) and which tasks it applies to ([`is_splittable`]).

use crate::bounds::RatioSum;
use crate::fp;
use crate::task::{cmp_ratio, Task, Time};
use std::cmp::Ordering;

#[cfg(any(test, feature = "reference"))]
use super::cores::schedulable_into;
use super::cores::{
    chain_start, point_demand, point_jobs, response_time_from, Core, Item, Key, Slot,
};
use super::maximal_split::{max_top_wcet, PointScratch};
#[cfg(doc)]
use super::maximal_split::{maximal_split, maximal_split_with};
use super::{dm_less, finish, task_order_into, Failure, Order, Partition, Unplaced};

/// Whether seed 003's split applies to `task`: the (C,T,D) model with D ≤ T,
/// no jitter and no blocking. Only then is the response time of τ' at the
/// highest priority exactly C', the release of τ'' exactly C' after the job's
/// release, and the pieces of one job never run in parallel. Other tasks are
/// placed whole (MaximalSplit gives them C' = 0).
pub fn is_splittable(task: &Task) -> bool {
    task.jitter == 0 && task.blocking == 0 && task.deadline <= task.period
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

/// Dequeue order of the unallocated queue: `Less` = `a` is dequeued first.
/// `den` is the order's denominator (C/T or C/D), `None` for the given
/// order; [`Queue::enqueue`] matches on the order once per call, not once
/// per probe.
#[inline(always)]
fn dequeue_cmp(den: Option<fn(&Task) -> Time>, a: &Item, b: &Item) -> Ordering {
    let key = match den {
        None => Ordering::Equal,
        Some(den) => cmp_ratio(b.task.wcet, den(&b.task), a.task.wcet, den(&a.task)),
    };
    // The ties only where the key is equal (rare: read lazily).
    key.then_with(|| (a.task.id, a.index, a.piece).cmp(&(b.task.id, b.index, b.piece)))
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
        let before = |den, x: &Item| dequeue_cmp(den, &item, x) == Ordering::Less;
        let items = &self.items;
        let pos = match self.order {
            Order::Given => items.partition_point(|x| before(None, x)),
            Order::DecreasingUtilization => {
                items.partition_point(|x| before(Some(|t| t.period), x))
            }
            Order::DecreasingSize => items.partition_point(|x| before(Some(|t| t.deadline), x)),
        };
        self.items.insert(pos, item);
    }

    fn dequeue(&mut self) -> Option<Item> {
        self.items.pop()
    }
}

/// Scratch space for HPTaskSplit, reused across cores.
#[derive(Default)]
struct SplitScratch {
    items: Vec<Item>,
    tasks: Vec<Task>,
    resp: Vec<Time>,
    /// Deadline-point demands of the remaining pieces ([`rest_schedulable`]).
    point: Vec<Time>,
    points: PointScratch,
    removed: Option<RatioSum>,
    gained: Option<RatioSum>,
}

/// Algorithm 2 with Algorithm 1, cores j = 1..m one at a time.
/// What [`pdms_hpts`] returns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Build {
    /// `Some(partition)`.
    Partition,
    /// `None` if every task was placed, else `Some` of an empty partition.
    Decision,
}

pub(super) fn pdms_hpts(
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
    keys: Vec<u64>,
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
    // The switch to the pre-issue-24 insertion and HPTaskSplit, read once
    // per run (not once per insertion).
    #[cfg(any(test, feature = "reference"))]
    let reference = super::cores::reference::enabled();
    #[cfg(not(any(test, feature = "reference")))]
    let reference = false;
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
        let fits = if reference {
            cores[j].try_insert_by::<S>(&item, Key::Dm, resp_scratch)
        } else {
            cores[j].try_insert_fast::<S>(&item, Key::Dm, resp_scratch)
        };
        if fits {
            continue;
        }
        #[cfg(any(test, feature = "reference"))]
        if reference {
            hp_task_split_reference::<S>(&mut cores[j], &mut queue, item, scratch, whole);
            j += 1;
            continue;
        }
        hp_task_split::<S>(&mut cores[j], &mut queue, item, scratch, whole, build);
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
///
/// A closed core is only read again by [`finish`] (its pieces and their
/// exact response times), so the core is rebuilt only for a
/// [`Build::Partition`], and there without the deadline-point demands
/// (read by [`Core::try_insert_by`] only): the pieces below τ' with D ≤ T
/// keep lower bounds for [`Core::make_exact`] (the same least fixed
/// points), the others get their exact RTA here, as before.
fn hp_task_split<const S: bool>(
    core: &mut Core,
    queue: &mut Queue,
    failed: Item,
    s: &mut SplitScratch,
    whole: &[bool],
    build: Build,
) {
    // EnqueueHP(Allocated_Queue_j, τ_f) on a copy, so that the restore
    // branch needs no undo.
    core.sort_items();
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
    // Each test reuses the core's deadline-point demands ([`rest_schedulable`]):
    // O(n·k) per step, not a full RTA of the core.
    let mut k = 1;
    if top > 0 {
        s.tasks.copy_within(0..top, 1);
    }
    while !rest_schedulable(core, pos, k, top, s) {
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
        max_top_wcet(rest, top, &s.resp, Some(&s.point), p, d, cap, &mut s.points)
    } else {
        0
    };
    debug_assert!(first < last.task.wcet || last.task.wcet == 0);
    // if Removed_Size − S(τ') ≥ S(τ_f): restore.
    let restore = restore_instead(s, k, &failed, first, &last);
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
    let rebuild = build == Build::Partition;
    if rebuild {
        core.items.clear();
        core.tasks.truncate(top);
        core.slots.clear();
        core.rebuilt();
    }
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
        if rebuild {
            core.items.push(Item { task: head, ..last });
            core.tasks.push(head);
            core.slots
                .push(Slot::new(&head, head_resp, true, Time::MAX));
        }
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
    if !rebuild {
        return;
    }
    let above = core.items.len();
    // One copy of the remaining items (a push each moved every 72-byte item
    // through the stack twice).
    core.items.extend_from_slice(&s.items[k..]);
    core.tasks.extend(s.items[k..].iter().map(|it| it.task));
    // The pieces below τ': s.resp, a lower bound on each response time
    // (the response time without τ' or a lower bound on it; adding τ' only
    // raises the least fixed point, Tindell et al. 1994, Eq. 4), made exact
    // by [`Core::make_exact`] where its window RTA applies (D ≤ T, B + C >
    // 0; it raises the start by the chain from the piece above first); the
    // others get their exact RTA now, from that start and the chain.
    for i in above..core.items.len() {
        let task = core.tasks[top + i];
        let slot = if task.deadline <= task.period && task.blocking.saturating_add(task.wcet) > 0 {
            // [`Core::make_exact`] raises it by the chain from the piece
            // above, then exact.
            Slot::new(&task, s.resp[i - above], false, Time::MAX)
        } else {
            let mut start = s.resp[i - above].saturating_sub(task.jitter);
            if i > 0 {
                start = start.max(chain_start(
                    &core.tasks[top + i - 1],
                    core.slots[i - 1].resp,
                    &task,
                ));
            }
            let r = response_time_from(&core.tasks[..top + i], &task, start)
                .expect("MaximalSplit keeps the core schedulable");
            Slot::new(&task, r, true, Time::MAX)
        };
        core.slots.push(slot);
    }
    // Closed: no insertion reads Σ C/T again.
    core.util = f64::INFINITY;
}

/// HPTaskSplit's restore test (seed 003 Algorithm 1): whether
/// Removed_Size − S(τ') ≥ S(τ_f), i.e. Σ C/D over the `k` removed items
/// of `s.items` ≥ C_f/D_f + C'/D, with τ' the first `first` ns of `last`.
/// Decided in f64 when the sides differ by more than 1e-9 relative (far
/// above the ~1e-14 rounding of these short sums), else with exact
/// rationals.
fn restore_instead(
    s: &mut SplitScratch,
    k: usize,
    failed: &Item,
    first: Time,
    last: &Item,
) -> bool {
    let removed_items = &s.items[..k];
    let removed_f: f64 = removed_items
        .iter()
        .map(|it| it.task.wcet as f64 / it.task.deadline as f64)
        .sum();
    let gained_f = failed.task.wcet as f64 / failed.task.deadline as f64
        + first as f64 / last.task.deadline as f64;
    if removed_f > gained_f * (1.0 + 1e-9) {
        return true;
    }
    if removed_f < gained_f * (1.0 - 1e-9) {
        return false;
    }
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
}

/// Whether the core with `failed` inserted at `pos` (in `s.items` and, below
/// the servers, `s.tasks`) and its top `k` pieces removed is schedulable:
/// the test of HPTaskSplit's loop (seed 003 Algorithm 1, "while
/// ¬IsSchedulable"), with the same answers as a full RTA of the remaining
/// core (`schedulable_into`) but from the core's deadline-point demands:
/// each remaining piece's W(D − J) loses the jobs of the removed pieces and
/// gains τ_f's if τ_f stays above it (one division each), the demand test
/// W(D − J) ≤ D − J decides where it holds and the exact RTA elsewhere.
/// Pieces above τ_f (or all, once τ_f is removed) lost interference only
/// and stay schedulable; they are still tested so that `s.point` holds
/// their demands. Fills `s.resp` with lower bounds on (or, where the RTA
/// ran, exactly) the remaining pieces' response times and `s.point` with
/// their demands, both indexed from piece k.
fn rest_schedulable(core: &Core, pos: usize, k: usize, top: usize, s: &mut SplitScratch) -> bool {
    let failed = s.items[pos].task;
    s.resp.clear();
    s.point.clear();
    let rest = &s.tasks[k..];
    for l in k..s.items.len() {
        let task = &rest[top + l - k];
        let higher = &rest[..top + l - k];
        let point = if l == pos {
            point_demand(higher, task)
        } else {
            let o = if l < pos { l } else { l - 1 };
            let mut point = core.slots[o].point;
            if point != Time::MAX {
                for r in (0..k).filter(|&r| r != pos) {
                    // Exact (no saturation happened below Time::MAX), so
                    // never below; Time::MAX sends it to the RTA if it were.
                    point = point
                        .checked_sub(point_jobs(task, &s.items[r].task))
                        .unwrap_or(Time::MAX);
                }
                if pos >= k && pos < l {
                    point = point.saturating_add(point_jobs(task, &failed));
                }
            }
            point
        };
        let start = match l.checked_sub(1) {
            Some(a) if a >= k => chain_start(&rest[top + a - k], s.resp[a - k], task),
            _ => 0,
        };
        let resp = if point <= task.deadline.saturating_sub(task.jitter) {
            task.jitter.saturating_add(start)
        } else {
            match response_time_from(higher, task, start) {
                Some(r) => r,
                None => return false,
            }
        };
        s.resp.push(resp);
        s.point.push(point);
    }
    true
}

/// [`hp_task_split`] as it was before issue 24 (full RTA of the core after
/// each removal, O(n²) per step), the reference for the property tests and
/// the benchmark's side-by-side run.
///
/// Seed 003 Algorithm 1 (HPTaskSplit) for the core `core`, on which `failed`
/// (τ_f) does not fit. The core is closed by the caller afterwards.
#[cfg(any(test, feature = "reference"))]
fn hp_task_split_reference<const S: bool>(
    core: &mut Core,
    queue: &mut Queue,
    failed: Item,
    s: &mut SplitScratch,
    whole: &[bool],
) {
    // EnqueueHP(Allocated_Queue_j, τ_f) on a copy, so that the restore
    // branch needs no undo.
    core.sort_items();
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
        max_top_wcet(rest, top, &s.resp, None, p, d, cap, &mut s.points)
    } else {
        0
    };
    debug_assert!(first < last.task.wcet || last.task.wcet == 0);
    // if Removed_Size − S(τ') ≥ S(τ_f): restore.
    let restore = restore_instead(s, k, &failed, first, &last);
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
    core.slots.clear();
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
        core.slots.push(Slot::new(&head, head_resp, true, 0));
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
                core.slots[i - 1].resp,
                task,
            ));
        }
        let r = fp::response_time_from(&core.tasks[..top + i], task, start)
            .expect("MaximalSplit keeps the core schedulable");
        core.slots.push(Slot::new(task, r, true, 0));
    }
    core.set_exact::<S>();
}
