//! Bin packing without splitting ([`super::Heuristic::Fit`]): first, best,
//! worst and next fit, each core accepted by the exact uniprocessor RTA
//! under DM, RM or Audsley's OPA.

use crate::bounds::RatioSum;
use crate::fp;
use crate::task::{Task, Time};

use super::cores::{Core, Item, Key, Slot};
use super::{finish, task_order, Failure, FitRule, Order, Partition};
use super::{PriorityRule, Unplaced};

pub(super) fn fit(
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
            core.try_insert_by::<true>(&item, Key::Dm, scratch)
        }
        PriorityRule::DeadlineMonotonic => core.try_insert_by::<false>(&item, Key::Dm, scratch),
        PriorityRule::RateMonotonic if core.top > 0 => {
            core.try_insert_by::<true>(&item, Key::Rm, scratch)
        }
        PriorityRule::RateMonotonic => core.try_insert_by::<false>(&item, Key::Rm, scratch),
        PriorityRule::Audsley => {
            core.sort_items();
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
            let resp = resp.expect("audsley_order returns a schedulable order");
            core.slots.clear();
            core.slots.extend(
                order
                    .iter()
                    .zip(resp)
                    .map(|(t, r)| Slot::new(t, r, true, 0)),
            );
            if top == 0 {
                core.tasks = order;
            }
            core.items = items;
            core.set_exact::<true>();
            true
        }
    }
}
