//! `rtgpu.Task`: the analysis task (C, T, D, J, B) as an immutable value.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use rtgpu_analysis::{Task, Time};
use rtgpu_model::units::format_duration;

use crate::args::{count, duration, positive_duration};

/// A sporadic task: worst-case execution time C, period T, relative deadline
/// D (default T), release jitter J and blocking B, in integer nanoseconds.
///
/// Every time accepts an int (ns), a string with a unit (`"2 ms"`, `"250 us"`,
/// parsed exactly) or a `datetime.timedelta`. C, T and D must be > 0. `id` is
/// a free handle of yours; analyses report tasks by list position.
/// Tasks are immutable, hashable values: use `replace()` for a changed copy.
#[pyclass(frozen, eq, hash, module = "rtgpu", name = "Task", from_py_object)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyTask(pub Task);

/// `repr` of a duration: a string the constructor parses back exactly.
pub(crate) fn duration_repr(ns: Time) -> String {
    format!("'{}'", format_duration(ns))
}

pub(crate) fn optional_duration_repr(ns: Option<Time>) -> String {
    ns.map_or_else(|| "None".to_string(), duration_repr)
}

fn build(
    wcet: &Bound<'_, PyAny>,
    period: &Bound<'_, PyAny>,
    deadline: Option<&Bound<'_, PyAny>>,
    jitter: &Bound<'_, PyAny>,
    blocking: &Bound<'_, PyAny>,
    id: &Bound<'_, PyAny>,
) -> PyResult<Task> {
    let wcet = positive_duration(wcet, "wcet")?;
    let period = positive_duration(period, "period")?;
    let deadline = match deadline {
        Some(d) if !d.is_none() => positive_duration(d, "deadline")?,
        _ => period,
    };
    Ok(Task {
        id: count(id, "id")?,
        wcet,
        period,
        deadline,
        jitter: duration(jitter, "jitter")?,
        blocking: duration(blocking, "blocking")?,
    })
}

#[pymethods]
impl PyTask {
    #[new]
    #[pyo3(
        signature = (wcet, period, deadline=None, jitter=None, blocking=None, id=None),
        text_signature = "(wcet, period, deadline=None, jitter=0, blocking=0, id=0)"
    )]
    fn new(
        py: Python<'_>,
        wcet: &Bound<'_, PyAny>,
        period: &Bound<'_, PyAny>,
        deadline: Option<&Bound<'_, PyAny>>,
        jitter: Option<&Bound<'_, PyAny>>,
        blocking: Option<&Bound<'_, PyAny>>,
        id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let zero = 0u64.into_pyobject(py)?.into_any();
        build(
            wcet,
            period,
            deadline,
            jitter.unwrap_or(&zero),
            blocking.unwrap_or(&zero),
            id.unwrap_or(&zero),
        )
        .map(PyTask)
    }

    /// The caller's handle; split pieces and results refer to tasks by
    /// position in the list passed in, not by id.
    #[getter]
    fn id(&self) -> usize {
        self.0.id
    }

    /// Worst-case execution time C (ns).
    #[getter]
    fn wcet(&self) -> Time {
        self.0.wcet
    }

    /// Period or minimum inter-arrival time T (ns).
    #[getter]
    fn period(&self) -> Time {
        self.0.period
    }

    /// Relative deadline D (ns).
    #[getter]
    fn deadline(&self) -> Time {
        self.0.deadline
    }

    /// Release jitter J (ns).
    #[getter]
    fn jitter(&self) -> Time {
        self.0.jitter
    }

    /// Blocking term B (ns).
    #[getter]
    fn blocking(&self) -> Time {
        self.0.blocking
    }

    /// C / T (for reporting; analyses decide with integers).
    #[getter]
    fn utilization(&self) -> f64 {
        self.0.utilization()
    }

    /// C / D, the task's size or density (seed 003 §III.A).
    #[getter]
    fn density(&self) -> f64 {
        self.0.size()
    }

    /// A copy with some fields changed (tasks are immutable values).
    // One argument per field, as Python callers name them.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (*, wcet=None, period=None, deadline=None, jitter=None, blocking=None, id=None))]
    fn replace(
        &self,
        py: Python<'_>,
        wcet: Option<&Bound<'_, PyAny>>,
        period: Option<&Bound<'_, PyAny>>,
        deadline: Option<&Bound<'_, PyAny>>,
        jitter: Option<&Bound<'_, PyAny>>,
        blocking: Option<&Bound<'_, PyAny>>,
        id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let t = self.0;
        let cur = |v: u64| v.into_pyobject(py).map(|b| b.into_any());
        let (w, p, d) = (cur(t.wcet)?, cur(t.period)?, cur(t.deadline)?);
        let (j, b, i) = (cur(t.jitter)?, cur(t.blocking)?, cur(t.id as u64)?);
        build(
            wcet.unwrap_or(&w),
            period.unwrap_or(&p),
            Some(deadline.unwrap_or(&d)),
            jitter.unwrap_or(&j),
            blocking.unwrap_or(&b),
            id.unwrap_or(&i),
        )
        .map(PyTask)
    }

    /// `copy.replace` support (Python 3.13+).
    #[pyo3(signature = (**changes))]
    fn __replace__(
        slf: &Bound<'_, Self>,
        changes: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        Ok(slf.getattr("replace")?.call((), changes)?.unbind())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let t = slf.get().0;
        let args = (t.wcet, t.period, t.deadline, t.jitter, t.blocking, t.id);
        (slf.get_type(), args).into_pyobject(slf.py())
    }

    fn __repr__(&self) -> String {
        let t = &self.0;
        let mut s = format!(
            "Task(wcet={}, period={}",
            duration_repr(t.wcet),
            duration_repr(t.period)
        );
        if t.deadline != t.period {
            s += &format!(", deadline={}", duration_repr(t.deadline));
        }
        if t.jitter != 0 {
            s += &format!(", jitter={}", duration_repr(t.jitter));
        }
        if t.blocking != 0 {
            s += &format!(", blocking={}", duration_repr(t.blocking));
        }
        if t.id != 0 {
            s += &format!(", id={}", t.id);
        }
        s + ")"
    }
}

pub(crate) fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// Python's `repr` of a string: single-quoted, with escapes.
pub(crate) fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Python's `repr` of a list of strings.
pub(crate) fn py_str_list<S: AsRef<str>>(items: &[S]) -> String {
    let parts: Vec<String> = items.iter().map(|s| py_str(s.as_ref())).collect();
    format!("[{}]", parts.join(", "))
}

/// Python's `repr` of an optional string.
pub(crate) fn py_opt_str(s: Option<&str>) -> String {
    s.map_or_else(|| "None".to_string(), py_str)
}
