//! `rtgpu.generate`: seeded, reproducible random task sets.

use pyo3::prelude::*;

use rtgpu_analysis::generate::{self, Rng};

use crate::args::{count, non_negative_float, positive_duration, value_error};
use crate::task::PyTask;

/// Largest task count generated at once (a guard against exhausting memory
/// by a typo; studies use thousands).
const MAX_TASKS: usize = 1_000_000;

fn task_count(n: &Bound<'_, PyAny>) -> PyResult<usize> {
    let n: usize = count(n, "n")?;
    if n > MAX_TASKS {
        return Err(value_error(format!(
            "n must be at most {MAX_TASKS}, got {n}"
        )));
    }
    Ok(n)
}

#[pyfunction]
pub(crate) fn generate_uunifast(
    n: &Bound<'_, PyAny>,
    utilization: f64,
    seed: &Bound<'_, PyAny>,
) -> PyResult<Vec<f64>> {
    let n = task_count(n)?;
    let total = non_negative_float(utilization, "utilization")?;
    let seed: u64 = count(seed, "seed")?;
    Ok(generate::uunifast(&mut Rng::new(seed), n, total))
}

#[pyfunction]
pub(crate) fn generate_uunifast_tasks(
    py: Python<'_>,
    n: &Bound<'_, PyAny>,
    utilization: f64,
    period_min: &Bound<'_, PyAny>,
    period_max: &Bound<'_, PyAny>,
    seed: &Bound<'_, PyAny>,
) -> PyResult<Vec<PyTask>> {
    let n = task_count(n)?;
    let total = non_negative_float(utilization, "utilization")?;
    let lo = positive_duration(period_min, "period_min")?;
    let hi = positive_duration(period_max, "period_max")?;
    if lo > hi {
        return Err(value_error(format!(
            "period_min ({lo} ns) must be <= period_max ({hi} ns)"
        )));
    }
    let seed: u64 = count(seed, "seed")?;
    let tasks = py.detach(|| generate::uunifast_tasks(&mut Rng::new(seed), n, total, lo, hi));
    Ok(tasks.into_iter().map(PyTask).collect())
}

#[pyfunction]
pub(crate) fn generate_seed003_tasks(
    py: Python<'_>,
    m: &Bound<'_, PyAny>,
    scale: &Bound<'_, PyAny>,
    seed: &Bound<'_, PyAny>,
) -> PyResult<Vec<PyTask>> {
    let m: usize = count(m, "m")?;
    let scale = positive_duration(scale, "scale")?;
    // Periods go up to 5000 paper units; C up to 0.4 T computed as 2T.
    if scale > u64::MAX / 10_000 {
        return Err(value_error(format!(
            "scale is too large: {scale} ns per paper time unit overflows 64-bit periods"
        )));
    }
    if m > 1_000_000 {
        return Err(value_error(format!(
            "m must be at most 1000000 cores, got {m}"
        )));
    }
    let seed: u64 = count(seed, "seed")?;
    let tasks = py.detach(|| generate::seed003_tasks(&mut Rng::new(seed), m, scale));
    Ok(tasks.into_iter().map(PyTask).collect())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(generate_uunifast, m)?)?;
    m.add_function(wrap_pyfunction!(generate_uunifast_tasks, m)?)?;
    m.add_function(wrap_pyfunction!(generate_seed003_tasks, m)?)?;
    Ok(())
}
