//! `rtgpu.bounds`: the utilization and size bounds of seed 003 (task
//! splitting under partitioned DM), their exact sufficient tests, and the
//! numeric minimisers they are computed with.

use std::cell::RefCell;

use pyo3::prelude::*;

use rtgpu_analysis::{bounds, Task};

use crate::args::{count, value_error};
use crate::fp::task_list;

/// Largest r accepted by the functions minimising over r (each r costs a
/// 512-point scan).
const MAX_R: u32 = 100_000;

fn r_arg(r: &Bound<'_, PyAny>, arg: &str) -> PyResult<u32> {
    let r: u32 = count(r, arg)?;
    if r == 0 || r > MAX_R {
        return Err(value_error(format!(
            "{arg} must be between 1 and {MAX_R}, got {r}"
        )));
    }
    Ok(r)
}

fn m_arg(m: &Bound<'_, PyAny>) -> PyResult<usize> {
    let m: usize = count(m, "m")?;
    if m == 0 {
        return Err(value_error("m must be >= 1 core, got 0"));
    }
    Ok(m)
}

fn finite(v: f64, arg: &str) -> PyResult<f64> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(value_error(format!(
            "{arg} must be a finite number, got {v}"
        )))
    }
}

macro_rules! unary {
    ($name:ident, $f:path) => {
        #[pyfunction]
        pub(crate) fn $name(x: f64) -> f64 {
            $f(x)
        }
    };
}

unary!(bounds_split_total_size_max, bounds::split_total_size_max);
unary!(
    bounds_split_worst_first_size,
    bounds::split_worst_first_size
);
unary!(bounds_split_penalty_max, bounds::split_penalty_max);
unary!(
    bounds_dms_size_bound_given_limit,
    bounds::dms_size_bound_given_limit
);
unary!(
    bounds_pdms_hpts_fixed_point_size,
    bounds::pdms_hpts_fixed_point_size
);
unary!(bounds_lambert_w0, bounds::lambert_w0);
unary!(bounds_sblw_limit, bounds::sblw_limit);

#[pyfunction]
pub(crate) fn bounds_split_remainder_size(s: f64, s_first: f64) -> f64 {
    bounds::split_remainder_size(s, s_first)
}

#[pyfunction]
pub(crate) fn bounds_split_penalty(s: f64, s_first: f64) -> f64 {
    bounds::split_penalty(s, s_first)
}

#[pyfunction]
pub(crate) fn bounds_pdms_hpts_bound_with_penalty(
    max_size: f64,
    m: &Bound<'_, PyAny>,
) -> PyResult<f64> {
    Ok(bounds::pdms_hpts_bound_with_penalty(max_size, m_arg(m)?))
}

#[pyfunction]
pub(crate) fn bounds_dms_size_bound_given(s: f64, r: &Bound<'_, PyAny>) -> PyResult<f64> {
    Ok(bounds::dms_size_bound_given(s, r_arg(r, "r")?))
}

#[pyfunction]
pub(crate) fn bounds_pdms_hpts_core_size_bound(x: f64, s: f64) -> f64 {
    bounds::pdms_hpts_core_size_bound(x, s)
}

#[pyfunction]
pub(crate) fn bounds_pdms_hpts_minimizing_share() -> f64 {
    bounds::pdms_hpts_minimizing_share()
}

#[pyfunction]
pub(crate) fn bounds_pdms_hpts_size_bound() -> f64 {
    bounds::pdms_hpts_size_bound()
}

#[pyfunction]
pub(crate) fn bounds_pdms_hpts_utilization_bound(m: &Bound<'_, PyAny>) -> PyResult<f64> {
    Ok(bounds::pdms_hpts_utilization_bound(m_arg(m)?))
}

#[pyfunction]
pub(crate) fn bounds_pdms_hpts_ds_core_size_bound(
    x: f64,
    r: &Bound<'_, PyAny>,
    cap: f64,
) -> PyResult<f64> {
    Ok(bounds::pdms_hpts_ds_core_size_bound(x, r_arg(r, "r")?, cap))
}

#[pyfunction]
pub(crate) fn bounds_pdms_hpts_ds_size_bound_for(
    py: Python<'_>,
    r: &Bound<'_, PyAny>,
    cap: f64,
) -> PyResult<(f64, f64)> {
    let r = r_arg(r, "r")?;
    let cap = finite(cap, "cap")?;
    Ok(py.detach(|| bounds::pdms_hpts_ds_size_bound_for(r, cap)))
}

#[pyfunction]
pub(crate) fn bounds_pdms_hpts_ds_size_bound(py: Python<'_>) -> f64 {
    py.detach(bounds::pdms_hpts_ds_size_bound)
}

#[pyfunction]
pub(crate) fn bounds_sblw(x: f64, r: &Bound<'_, PyAny>, alpha: f64) -> PyResult<f64> {
    Ok(bounds::sblw(x, r_arg(r, "r")?, alpha))
}

#[pyfunction]
pub(crate) fn bounds_sblw_min(
    py: Python<'_>,
    alpha: f64,
    max_r: &Bound<'_, PyAny>,
) -> PyResult<(Option<u32>, f64, f64)> {
    let alpha = finite(alpha, "alpha")?;
    let max_r = r_arg(max_r, "max_r")?;
    Ok(py.detach(|| bounds::sblw_min(alpha, max_r)))
}

/// A Python callable as `Fn(f64) -> f64`: the first exception is kept and
/// raised after the search; later evaluations return NaN, which every
/// comparison of the minimisers treats as "not better", so they still end.
struct Callable<'py> {
    f: Bound<'py, PyAny>,
    error: RefCell<Option<PyErr>>,
}

impl<'py> Callable<'py> {
    fn new(f: Bound<'py, PyAny>) -> PyResult<Self> {
        if !f.is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "f must be a callable taking and returning a float",
            ));
        }
        Ok(Callable {
            f,
            error: RefCell::new(None),
        })
    }

    fn call(&self, x: f64) -> f64 {
        if self.error.borrow().is_some() {
            return f64::NAN;
        }
        match self.f.call1((x,)).and_then(|v| v.extract::<f64>()) {
            Ok(v) => v,
            Err(e) => {
                *self.error.borrow_mut() = Some(e);
                f64::NAN
            }
        }
    }

    fn finish<T>(self, value: T) -> PyResult<T> {
        match self.error.into_inner() {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
}

fn interval(lo: f64, hi: f64) -> PyResult<()> {
    finite(lo, "lo")?;
    finite(hi, "hi")?;
    if lo > hi {
        return Err(value_error(format!("lo ({lo}) must be <= hi ({hi})")));
    }
    Ok(())
}

#[pyfunction]
pub(crate) fn bounds_golden_section_min(
    f: Bound<'_, PyAny>,
    lo: f64,
    hi: f64,
    tol: f64,
) -> PyResult<(f64, f64)> {
    interval(lo, hi)?;
    // Below a few ulps of the interval's magnitude the interval stops
    // shrinking and the search would never end.
    let floor = 1e-15 * lo.abs().max(hi.abs()).max(1.0);
    if !(tol.is_finite() && tol >= floor) {
        return Err(value_error(format!(
            "tol must be a finite number >= {floor:e} for this interval, got {tol}"
        )));
    }
    let f = Callable::new(f)?;
    let result = bounds::golden_section_min(|x| f.call(x), lo, hi, tol);
    f.finish(result)
}

#[pyfunction]
pub(crate) fn bounds_scan_then_golden_min(
    f: Bound<'_, PyAny>,
    lo: f64,
    hi: f64,
    samples: &Bound<'_, PyAny>,
) -> PyResult<(f64, f64)> {
    interval(lo, hi)?;
    if lo.abs().max(hi.abs()) > 1e3 {
        // The refinement runs to an absolute 1e-12, which needs |x| small.
        return Err(value_error(format!(
            "lo and hi must be within [-1000, 1000] (the refinement is to 1e-12), got [{lo}, {hi}]"
        )));
    }
    let samples: usize = count(samples, "samples")?;
    if samples > 100_000_000 {
        return Err(value_error(format!(
            "samples must be at most 100000000, got {samples}"
        )));
    }
    let f = Callable::new(f)?;
    let result = bounds::scan_then_golden_min(|x| f.call(x), lo, hi, samples);
    f.finish(result)
}

#[pyfunction]
pub(crate) fn bounds_pdms_hpts_utilization_test(
    py: Python<'_>,
    #[pyo3(from_py_with = task_list)] tasks: Vec<Task>,
    m: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let m: usize = count(m, "m")?;
    Ok(py.detach(|| bounds::pdms_hpts_utilization_test(&tasks, m)))
}

#[pyfunction]
pub(crate) fn bounds_pdms_hpts_ds_utilization_test(
    py: Python<'_>,
    #[pyo3(from_py_with = task_list)] tasks: Vec<Task>,
    m: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let m: usize = count(m, "m")?;
    Ok(py.detach(|| bounds::pdms_hpts_ds_utilization_test(&tasks, m)))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("BOUNDS_RMS_BOUND", bounds::RMS_BOUND)?;
    m.add(
        "BOUNDS_PDMS_HPTS_BOUND_PAPER",
        bounds::PDMS_HPTS_BOUND_PAPER,
    )?;
    m.add(
        "BOUNDS_PDMS_HPTS_LAST_CORE_GAIN_PAPER",
        bounds::PDMS_HPTS_LAST_CORE_GAIN_PAPER,
    )?;
    m.add(
        "BOUNDS_PDMS_HPTS_DS_BOUND_PAPER",
        bounds::PDMS_HPTS_DS_BOUND_PAPER,
    )?;
    m.add(
        "BOUNDS_PDMS_HPTS_DS_LIGHT_BOUND_PAPER",
        bounds::PDMS_HPTS_DS_LIGHT_BOUND_PAPER,
    )?;
    m.add("BOUNDS_LIGHT_TASK_ALPHA", bounds::LIGHT_TASK_ALPHA)?;
    m.add("BOUNDS_PDMS_HPTS_DS_MAX_R", bounds::PDMS_HPTS_DS_MAX_R)?;
    m.add_function(wrap_pyfunction!(bounds_split_remainder_size, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_split_total_size_max, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_split_worst_first_size, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_split_penalty, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_split_penalty_max, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_pdms_hpts_bound_with_penalty, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_dms_size_bound_given, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_dms_size_bound_given_limit, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_pdms_hpts_core_size_bound, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_pdms_hpts_fixed_point_size, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_lambert_w0, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_pdms_hpts_minimizing_share, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_pdms_hpts_size_bound, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_pdms_hpts_utilization_bound, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_pdms_hpts_ds_core_size_bound, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_pdms_hpts_ds_size_bound_for, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_pdms_hpts_ds_size_bound, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_sblw, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_sblw_limit, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_sblw_min, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_golden_section_min, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_scan_then_golden_min, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_pdms_hpts_utilization_test, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_pdms_hpts_ds_utilization_test, m)?)?;
    Ok(())
}
