//! `rtgpu.edf`: G-EDF / C-EDF bounded tardiness and the G-EDF density test.

use pyo3::prelude::*;

use rtgpu_analysis::edf::{self, EdfRejection, EdfResult, TardinessBound, TaskTardiness};
use rtgpu_analysis::{Task, Time};

use crate::args::{bad_choice, count, indexed, option_name};
use crate::fp::task_list;
use crate::task::py_bool;
use crate::task::{optional_duration_repr, py_str};

fn bound_form(value: &str) -> PyResult<TardinessBound> {
    match option_name(value).as_str() {
        "lambda" => Ok(TardinessBound::Lambda),
        "simple" => Ok(TardinessBound::Simple),
        _ => Err(bad_choice("bound", value, &["lambda", "simple"])),
    }
}

fn bound_name(b: TardinessBound) -> &'static str {
    match b {
        TardinessBound::Lambda => "lambda",
        TardinessBound::Simple => "simple",
    }
}

/// Why there is no bound, in words; `task` indices are list positions.
fn rejection_text(r: &EdfRejection) -> String {
    match r {
        EdfRejection::NoProcessors => "no processors (m = 0) for a non-empty task set".into(),
        EdfRejection::InvalidTask { task, what } => format!("tasks[{task}]: {what}"),
        EdfRejection::Unsupported { task, what } => {
            format!("tasks[{task}] has {what}, which the bound does not cover")
        }
        EdfRejection::ExecutionExceedsPeriod { task, wcet, period } => {
            format!("tasks[{task}] has wcet {wcet} ns > period {period} ns (seed 000 Eq. 4)")
        }
        EdfRejection::Overutilized { utilization, cores } => {
            format!("total utilization {utilization:.4} exceeds {cores} core(s) (seed 000 Eq. 5)")
        }
        EdfRejection::Overflow => "the tardiness bound does not fit in 64-bit nanoseconds".into(),
    }
}

/// Result of the G-EDF tardiness analysis of one task set (one cluster).
#[pyclass(frozen, module = "rtgpu.edf", name = "EdfResult")]
pub(crate) struct PyEdfResult(EdfResult);

#[pymethods]
impl PyEdfResult {
    /// Processors m.
    #[getter]
    fn cores(&self) -> u32 {
        self.0.cores
    }
    /// Whether tardiness is bounded (seed 000 Eqs. 4-5 hold).
    #[getter]
    fn bounded(&self) -> bool {
        self.0.bounded
    }
    /// Why not, when not bounded (`None` when bounded).
    #[getter]
    fn reason(&self) -> Option<String> {
        self.0.reason.as_ref().map(rejection_text)
    }
    /// Form of the bound evaluated: "lambda" or "simple".
    #[getter]
    fn bound(&self) -> &'static str {
        bound_name(self.0.bound)
    }
    /// Λ of the theorem, when bounded.
    #[getter]
    fn lambda_(&self) -> Option<u64> {
        self.0.lambda
    }
    /// ⌈x⌉ in ns, when bounded.
    #[getter]
    fn x(&self) -> Option<Time> {
        self.0.x
    }
    /// Every task has D = T and the density test passed: zero tardiness.
    #[getter]
    fn density_test(&self) -> bool {
        self.0.density_test
    }
    /// Per task, in the caller's list order.
    #[getter]
    fn tasks(&self) -> Vec<PyTaskTardiness> {
        self.0.tasks.iter().cloned().map(PyTaskTardiness).collect()
    }
    /// The largest tardiness bound, if every task is bounded.
    #[getter]
    fn max_tardiness(&self) -> Option<Time> {
        self.0.max_tardiness()
    }

    fn __repr__(&self) -> String {
        let r = &self.0;
        let mut s = format!(
            "EdfResult(cores={}, bounded={}, max_tardiness={}",
            r.cores,
            py_bool(r.bounded),
            optional_duration_repr(r.max_tardiness())
        );
        if let Some(why) = &r.reason {
            s += &format!(", reason={}", py_str(&rejection_text(why)));
        }
        s + &format!(", tasks={})", r.tasks.len())
    }
}

/// Tardiness and response-time bounds of one task.
#[pyclass(frozen, module = "rtgpu.edf", name = "TaskTardiness")]
pub(crate) struct PyTaskTardiness(TaskTardiness);

#[pymethods]
impl PyTaskTardiness {
    /// Position of the task in the list analysed.
    #[getter]
    fn index(&self) -> usize {
        self.0.id
    }
    /// How late a job can finish after its deadline (ns), if bounded.
    #[getter]
    fn tardiness(&self) -> Option<Time> {
        self.0.tardiness
    }
    /// Bound on completion − release (ns), if bounded.
    #[getter]
    fn response_bound(&self) -> Option<Time> {
        self.0.response_bound
    }

    fn __repr__(&self) -> String {
        format!(
            "TaskTardiness(index={}, tardiness={}, response_bound={})",
            self.0.id,
            optional_duration_repr(self.0.tardiness),
            optional_duration_repr(self.0.response_bound)
        )
    }
}

#[pyfunction]
pub(crate) fn edf_gedf_tardiness(
    py: Python<'_>,
    #[pyo3(from_py_with = task_list)] tasks: Vec<Task>,
    m: &Bound<'_, PyAny>,
    bound: &str,
) -> PyResult<PyEdfResult> {
    let m: u32 = count(m, "m")?;
    let bound = bound_form(bound)?;
    let tasks = indexed(&tasks);
    Ok(PyEdfResult(
        py.detach(|| edf::gedf_tardiness_with(&tasks, m, bound)),
    ))
}

#[pyfunction]
pub(crate) fn edf_cedf_tardiness(
    py: Python<'_>,
    clusters: &Bound<'_, PyAny>,
) -> PyResult<Vec<PyEdfResult>> {
    let input: Vec<(u32, Vec<Task>)> = crate::args::clusters(clusters, "clusters")?
        .into_iter()
        .map(|(m, ts)| (m, indexed(&ts)))
        .collect();
    let results = py.detach(|| edf::cedf_tardiness(&input));
    Ok(results.into_iter().map(PyEdfResult).collect())
}

#[pyfunction]
pub(crate) fn edf_density_test(
    py: Python<'_>,
    #[pyo3(from_py_with = task_list)] tasks: Vec<Task>,
    m: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let m: u32 = count(m, "m")?;
    Ok(py.detach(|| edf::gedf_density_test(&tasks, m)))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEdfResult>()?;
    m.add_class::<PyTaskTardiness>()?;
    m.add_function(wrap_pyfunction!(edf_gedf_tardiness, m)?)?;
    m.add_function(wrap_pyfunction!(edf_cedf_tardiness, m)?)?;
    m.add_function(wrap_pyfunction!(edf_density_test, m)?)?;
    Ok(())
}
