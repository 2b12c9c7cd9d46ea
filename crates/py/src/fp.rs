//! `rtgpu.fp`: uniprocessor fixed-priority analyses on lists of `Task`.
//!
//! Results are per task in the caller's list order, whatever the priority
//! order used: `response_times(ts)[i]` is the response time of `ts[i]`.

use pyo3::prelude::*;

use rtgpu_analysis::{fp, Task, Time};

use crate::args::{bad_choice, count, indexed, option_name, positive_duration, tasks};
use crate::task::PyTask;

/// How to order tasks by priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PriorityOrder {
    /// The list order is the priority order (index 0 highest).
    Given,
    DeadlineMonotonic,
    RateMonotonic,
    Audsley,
}

pub(crate) fn priority_order(value: &str, arg: &str) -> PyResult<PriorityOrder> {
    match option_name(value).as_str() {
        "given" => Ok(PriorityOrder::Given),
        "dm" | "deadline-monotonic" => Ok(PriorityOrder::DeadlineMonotonic),
        "rm" | "rate-monotonic" => Ok(PriorityOrder::RateMonotonic),
        "audsley" | "opa" => Ok(PriorityOrder::Audsley),
        _ => Err(bad_choice(arg, value, &["dm", "rm", "audsley", "given"])),
    }
}

/// `tasks` (with ids = list positions) sorted into priority order. Audsley's
/// assignment falls back to DM when no fixed-priority order is feasible (OPA
/// is optimal, so DM then also misses a deadline, and says where).
pub(crate) fn prioritized(tasks: &[Task], order: PriorityOrder) -> Vec<Task> {
    let mut ts = indexed(tasks);
    match order {
        PriorityOrder::Given => {}
        PriorityOrder::DeadlineMonotonic => fp::dm_order(&mut ts),
        PriorityOrder::RateMonotonic => fp::rm_order(&mut ts),
        PriorityOrder::Audsley => match fp::audsley_order(&ts) {
            Some(o) => ts = o,
            None => fp::dm_order(&mut ts),
        },
    }
    ts
}

/// `values[k]` belongs to `ordered[k]`; put it at the task's list position.
pub(crate) fn scatter<T: Clone>(ordered: &[Task], values: Vec<T>, fill: T) -> Vec<T> {
    let mut out = vec![fill; ordered.len()];
    for (t, v) in ordered.iter().zip(values) {
        if let Some(slot) = out.get_mut(t.id) {
            *slot = v;
        }
    }
    out
}

/// The caller's tasks in the order of `ordered` (whose ids are positions).
fn originals(original: &[Task], ordered: &[Task]) -> Vec<PyTask> {
    ordered
        .iter()
        .filter_map(|t| original.get(t.id).copied().map(PyTask))
        .collect()
}

#[pyfunction]
#[pyo3(signature = (task, higher_priority))]
pub(crate) fn fp_response_time(
    py: Python<'_>,
    task: PyTask,
    higher_priority: &Bound<'_, PyAny>,
) -> PyResult<Option<Time>> {
    let higher = tasks(higher_priority, "higher_priority")?;
    Ok(py.detach(|| fp::response_time(&higher, &task.0)))
}

#[pyfunction]
#[pyo3(signature = (tasks, order))]
pub(crate) fn fp_response_times(
    py: Python<'_>,
    #[pyo3(from_py_with = task_list)] tasks: Vec<Task>,
    order: &str,
) -> PyResult<Vec<Option<Time>>> {
    let order = priority_order(order, "order")?;
    Ok(py.detach(|| {
        let ordered = prioritized(&tasks, order);
        let rts = fp::response_times(&ordered);
        scatter(&ordered, rts, None)
    }))
}

#[pyfunction]
#[pyo3(signature = (tasks, order))]
pub(crate) fn fp_is_schedulable(
    py: Python<'_>,
    #[pyo3(from_py_with = task_list)] tasks: Vec<Task>,
    order: &str,
) -> PyResult<bool> {
    let order = priority_order(order, "order")?;
    Ok(py.detach(|| match order {
        PriorityOrder::Audsley => fp::audsley_order(&tasks).is_some(),
        _ => fp::is_schedulable(&prioritized(&tasks, order)),
    }))
}

#[pyfunction]
pub(crate) fn fp_dm_order(#[pyo3(from_py_with = task_list)] tasks: Vec<Task>) -> Vec<PyTask> {
    originals(
        &tasks,
        &prioritized(&tasks, PriorityOrder::DeadlineMonotonic),
    )
}

#[pyfunction]
pub(crate) fn fp_rm_order(#[pyo3(from_py_with = task_list)] tasks: Vec<Task>) -> Vec<PyTask> {
    originals(&tasks, &prioritized(&tasks, PriorityOrder::RateMonotonic))
}

#[pyfunction]
pub(crate) fn fp_audsley_order(
    py: Python<'_>,
    #[pyo3(from_py_with = task_list)] tasks: Vec<Task>,
) -> Option<Vec<PyTask>> {
    let order = py.detach(|| fp::audsley_order(&indexed(&tasks)))?;
    Some(originals(&tasks, &order))
}

#[pyfunction]
pub(crate) fn fp_max_split(
    py: Python<'_>,
    #[pyo3(from_py_with = task_list)] tasks: Vec<Task>,
    period: &Bound<'_, PyAny>,
    deadline: &Bound<'_, PyAny>,
    cap: &Bound<'_, PyAny>,
) -> PyResult<Option<Time>> {
    let period = positive_duration(period, "period")?;
    let deadline = positive_duration(deadline, "deadline")?;
    let cap = crate::args::duration(cap, "cap")?;
    Ok(py.detach(|| fp::max_top_priority_wcet(&tasks, period, deadline, cap)))
}

#[pyfunction]
pub(crate) fn fp_liu_layland_bound(n: &Bound<'_, PyAny>) -> PyResult<f64> {
    Ok(fp::liu_layland_bound(count(n, "n")?))
}

#[pyfunction]
pub(crate) fn fp_liu_layland_test(#[pyo3(from_py_with = task_list)] tasks: Vec<Task>) -> bool {
    fp::liu_layland_test(&tasks)
}

#[pyfunction]
pub(crate) fn fp_hyperbolic_test(#[pyo3(from_py_with = task_list)] tasks: Vec<Task>) -> bool {
    fp::hyperbolic_test(&tasks)
}

/// `from_py_with` adapter: the argument named `tasks`.
pub(crate) fn task_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Task>> {
    tasks(obj, "tasks")
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fp_response_time, m)?)?;
    m.add_function(wrap_pyfunction!(fp_response_times, m)?)?;
    m.add_function(wrap_pyfunction!(fp_is_schedulable, m)?)?;
    m.add_function(wrap_pyfunction!(fp_dm_order, m)?)?;
    m.add_function(wrap_pyfunction!(fp_rm_order, m)?)?;
    m.add_function(wrap_pyfunction!(fp_audsley_order, m)?)?;
    m.add_function(wrap_pyfunction!(fp_max_split, m)?)?;
    m.add_function(wrap_pyfunction!(fp_liu_layland_bound, m)?)?;
    m.add_function(wrap_pyfunction!(fp_liu_layland_test, m)?)?;
    m.add_function(wrap_pyfunction!(fp_hyperbolic_test, m)?)?;
    Ok(())
}
