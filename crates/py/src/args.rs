//! Argument conversion shared by every binding: durations in any of the forms
//! Python users write them, task lists, and option names. Every error names
//! the argument it is about, so a message points at the caller's mistake.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString, PyType};

use rtgpu_analysis::{Task, Time};

use crate::task::PyTask;

pub(crate) fn value_error(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_string())
}

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// A duration in integer nanoseconds from an `int` (nanoseconds), a `str`
/// with a unit (`"2 ms"`, parsed exactly by the workload file's parser) or a
/// `datetime.timedelta`. Floats are refused: time is exact (DESIGN.md §3.3).
pub(crate) fn duration(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Time> {
    duration_at_least(obj, arg, 0)
}

/// [`duration`] that must be > 0.
pub(crate) fn positive_duration(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Time> {
    duration_at_least(obj, arg, 1)
}

fn duration_at_least(obj: &Bound<'_, PyAny>, arg: &str, min: Time) -> PyResult<Time> {
    let expected = "integer nanoseconds, a string with a unit such as \"10 ms\", \
                    or a datetime.timedelta";
    let bound = if min == 0 { ">= 0" } else { "> 0" };
    let too_small = |shown: &dyn std::fmt::Display| {
        value_error(format!("{arg} must be {bound} ns, got {shown}"))
    };
    if obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{arg} must be {expected}, got a bool"
        )));
    }
    let value = if obj.is_instance_of::<PyInt>() {
        match obj.extract::<u64>() {
            Ok(v) => v,
            Err(_) if obj.lt(0i64).unwrap_or(false) => return Err(too_small(obj)),
            Err(_) => {
                return Err(value_error(format!(
                    "{arg} is too large: {obj} ns does not fit in 64 bits"
                )))
            }
        }
    } else if let Ok(s) = obj.cast::<PyString>() {
        let text = s.to_cow()?;
        rtgpu_model::units::parse_duration(&text).map_err(|e| value_error(format!("{arg}: {e}")))?
    } else if obj.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(format!(
            "{arg} must be {expected}, got the float {obj}: time is exact integer \
             nanoseconds; write an int or a string such as \"2.5 ms\""
        )));
    } else {
        static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();
        let timedelta = TIMEDELTA.import(obj.py(), "datetime", "timedelta")?;
        if !obj.is_instance(timedelta)? {
            return Err(PyTypeError::new_err(format!(
                "{arg} must be {expected}, got {}",
                type_name(obj)
            )));
        }
        // timedelta is normalised to days, 0 <= seconds < 86400,
        // 0 <= microseconds < 10^6: the sign is the sign of `days`.
        let days: i64 = obj.getattr("days")?.extract()?;
        let seconds: u64 = obj.getattr("seconds")?.extract()?;
        let micros: u64 = obj.getattr("microseconds")?.extract()?;
        if days < 0 {
            return Err(too_small(obj));
        }
        let ns = days as u128 * 86_400 * NANOS_PER_SECOND
            + seconds as u128 * NANOS_PER_SECOND
            + micros as u128 * 1_000;
        Time::try_from(ns).map_err(|_| {
            value_error(format!(
                "{arg} is too large: {obj} does not fit in 64-bit nanoseconds"
            ))
        })?
    };
    if value < min {
        return Err(too_small(&value));
    }
    Ok(value)
}

/// A non-negative integer (counts, seeds, ids) with an error naming `arg`.
pub(crate) fn count<T: TryFrom<u64>>(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<T> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{arg} must be an int, got {}",
            type_name(obj)
        )));
    }
    if obj.lt(0i64).unwrap_or(false) {
        return Err(value_error(format!(
            "{arg} must be a non-negative integer, got {obj}"
        )));
    }
    match obj.extract::<u64>().ok().and_then(|v| T::try_from(v).ok()) {
        Some(v) => Ok(v),
        None => Err(value_error(format!("{arg} is too large: {obj}"))),
    }
}

/// A finite, non-negative float (utilizations).
pub(crate) fn non_negative_float(value: f64, arg: &str) -> PyResult<f64> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(value_error(format!(
            "{arg} must be a finite number >= 0, got {value}"
        )))
    }
}

/// The tasks of any iterable of `rtgpu.Task`, in order.
pub(crate) fn tasks(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Vec<Task>> {
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{arg} must be a sequence of rtgpu.Task, got str"
        )));
    }
    let iter = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "{arg} must be a sequence of rtgpu.Task, got {}",
            type_name(obj)
        ))
    })?;
    let mut out = Vec::new();
    for (i, item) in iter.enumerate() {
        let item = item?;
        match item.cast::<PyTask>() {
            Ok(t) => out.push(t.get().0),
            Err(_) => {
                return Err(PyTypeError::new_err(format!(
                    "{arg}[{i}] must be an rtgpu.Task, got {}",
                    type_name(&item)
                )))
            }
        }
    }
    Ok(out)
}

/// `tasks` with `id` replaced by the position in the list, so results can be
/// mapped back to the caller's list whatever ids the caller chose.
pub(crate) fn indexed(tasks: &[Task]) -> Vec<Task> {
    tasks
        .iter()
        .enumerate()
        .map(|(i, t)| Task { id: i, ..*t })
        .collect()
}

/// Lower-case an option name and treat `_` and spaces like `-`
/// (`"PDMS_HPTS_DS"`, `"pdms hpts ds"` and `"pdms-hpts-ds"` are the same).
pub(crate) fn option_name(value: &str) -> String {
    value
        .trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// An error for an option value that is not one of `choices`.
pub(crate) fn bad_choice(arg: &str, value: &str, choices: &[&str]) -> PyErr {
    let quoted: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
    value_error(format!(
        "{arg} must be one of {}, got \"{value}\"",
        quoted.join(", ")
    ))
}

/// A list of `(m, tasks)` pairs: one cluster of `m` cores each.
pub(crate) fn clusters(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Vec<(u32, Vec<Task>)>> {
    let iter = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "{arg} must be a sequence of (m, tasks) pairs, got {}",
            type_name(obj)
        ))
    })?;
    let mut out = Vec::new();
    for (i, item) in iter.enumerate() {
        let item = item?;
        let pair: (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "{arg}[{i}] must be a pair (m, tasks) of a core count and a list of Task, got {}",
                type_name(&item)
            ))
        })?;
        let m: u32 = count(&pair.0, &format!("{arg}[{i}][0]"))?;
        out.push((m, tasks(&pair.1, &format!("{arg}[{i}][1]"))?));
    }
    Ok(out)
}

/// A bandwidth server `(runtime, period)`: two durations (int ns, strings
/// with a unit or timedeltas) with `min_runtime <= runtime <= period`.
pub(crate) fn server(
    obj: &Bound<'_, PyAny>,
    arg: &str,
    min_runtime: Time,
) -> PyResult<rtgpu_analysis::server::Server> {
    let not_a_pair = || {
        PyTypeError::new_err(format!(
            "{arg} must be a pair (runtime, period) of durations, got {}",
            type_name(obj)
        ))
    };
    if obj.is_instance_of::<PyString>() {
        return Err(not_a_pair());
    }
    let items = obj
        .try_iter()
        .map_err(|_| not_a_pair())?
        .take(3)
        .collect::<PyResult<Vec<_>>>()?;
    let [runtime, period] = items.as_slice() else {
        return Err(not_a_pair());
    };
    let runtime = duration(runtime, &format!("{arg} runtime"))?;
    let period = duration(period, &format!("{arg} period"))?;
    if runtime == 0 {
        return Err(value_error(format!(
            "{arg}: the runtime must be > 0 ns, got 0 ns"
        )));
    }
    if runtime < min_runtime {
        return Err(value_error(format!(
            "{arg}: the runtime must be at least {min_runtime} ns (the kernel's minimum for \
             SCHED_DEADLINE), got {runtime} ns"
        )));
    }
    if runtime > period {
        return Err(value_error(format!(
            "{arg}: the runtime ({runtime} ns) must be at most the period ({period} ns)"
        )));
    }
    Ok(rtgpu_analysis::server::Server { runtime, period })
}

/// A list of bandwidth servers, each checked by [`server`] as `arg[i]`.
pub(crate) fn servers(
    obj: &Bound<'_, PyAny>,
    arg: &str,
) -> PyResult<Vec<rtgpu_analysis::server::Server>> {
    let iter = if obj.is_instance_of::<PyString>() {
        None
    } else {
        obj.try_iter().ok()
    }
    .ok_or_else(|| {
        PyTypeError::new_err(format!(
            "{arg} must be a sequence of (runtime, period) pairs, got {}",
            type_name(obj)
        ))
    })?;
    let mut out = Vec::new();
    for (i, item) in iter.enumerate() {
        out.push(server(&item?, &format!("{arg}[{i}]"), 1)?);
    }
    Ok(out)
}
