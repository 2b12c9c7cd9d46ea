//! `rtgpu.global_fp`: global / clustered fixed-priority response-time bounds
//! (Bertogna & Cirinei, RTSS 2007).

use pyo3::prelude::*;

use rtgpu_analysis::{global_fp, Task, Time};

use crate::args::{count, value_error};
use crate::fp::{prioritized, priority_order, scatter, task_list, PriorityOrder};

/// Audsley's assignment needs an OPA-compatible test, which this bound is not.
fn global_order(order: &str) -> PyResult<PriorityOrder> {
    match priority_order(order, "order")? {
        PriorityOrder::Audsley => Err(value_error(
            "order: Audsley's assignment needs an OPA-compatible test, and the global \
             FP response-time bound is not one; use \"dm\", \"rm\" or \"given\"",
        )),
        o => Ok(o),
    }
}

#[pyfunction]
pub(crate) fn global_fp_response_times(
    py: Python<'_>,
    #[pyo3(from_py_with = task_list)] tasks: Vec<Task>,
    m: &Bound<'_, PyAny>,
    order: &str,
) -> PyResult<Vec<Option<Time>>> {
    let m: u32 = count(m, "m")?;
    let order = global_order(order)?;
    Ok(py.detach(|| {
        let ordered = prioritized(&tasks, order);
        let rts = global_fp::gfp_response_times(&ordered, m);
        scatter(&ordered, rts, None)
    }))
}

#[pyfunction]
pub(crate) fn global_fp_clustered_response_times(
    py: Python<'_>,
    clusters: &Bound<'_, PyAny>,
    order: &str,
) -> PyResult<Vec<Vec<Option<Time>>>> {
    let order = global_order(order)?;
    let input: Vec<(u32, Vec<Task>)> = crate::args::clusters(clusters, "clusters")?
        .into_iter()
        .map(|(m, ts)| (m, prioritized(&ts, order)))
        .collect();
    Ok(py.detach(|| {
        let results = global_fp::cfp_response_times(&input);
        input
            .iter()
            .zip(results)
            .map(|((_, ordered), rts)| scatter(ordered, rts, None))
            .collect()
    }))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(global_fp_response_times, m)?)?;
    m.add_function(wrap_pyfunction!(global_fp_clustered_response_times, m)?)?;
    Ok(())
}
