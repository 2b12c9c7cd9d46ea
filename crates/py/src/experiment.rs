//! `rtgpu.experiment` native part: random task sets from a generator spec
//! (JSON, the `[generator]` table of a study file) and batch evaluation of
//! schedulability tests on them, with the GIL released. The study runner
//! (`python/rtgpu/experiment/`) calls [`experiment_batch`] once per point.

use pyo3::prelude::*;

use rtgpu_analysis::experiment::{run_batch, Batch, Metrics, Setup, Test};
use rtgpu_analysis::generate::{self, GpuUse, Rng, Spec};

use crate::args::{bad_choice, count, value_error};
use crate::task::PyTask;

/// Parses and validates a generator spec given as JSON.
fn parse_spec(spec: &str) -> PyResult<Spec> {
    let parsed: Spec = serde_json::from_str(spec).map_err(|e| value_error(format!("{e}")))?;
    parsed.validate().map_err(value_error)?;
    Ok(parsed)
}

/// Checks a generator spec (JSON); raises `ValueError` naming the field.
#[pyfunction]
fn experiment_check_spec(spec: &str) -> PyResult<()> {
    parse_spec(spec).map(|_| ())
}

/// The GPU part of a generated task's job.
#[pyclass(frozen, module = "rtgpu", name = "GpuUse")]
pub(crate) struct PyGpuUse(GpuUse);

#[pymethods]
impl PyGpuUse {
    /// Time on the GPU per job (ns), included in the task's wcet.
    #[getter]
    fn time(&self) -> u64 {
        self.0.time
    }
    /// Bytes copied per job.
    #[getter]
    fn bytes(&self) -> u64 {
        self.0.bytes
    }
    /// η: GPU uses (interrupts) per job (seed 000 Eq. 7).
    #[getter]
    fn eta(&self) -> u32 {
        self.0.eta
    }
    fn __repr__(&self) -> String {
        format!(
            "GpuUse(time={}, bytes={}, eta={})",
            self.0.time, self.0.bytes, self.0.eta
        )
    }
}

/// One task set of `spec` drawn with `seed`: per task, the task and its GPU
/// use (or None).
#[pyfunction]
fn experiment_generate(
    py: Python<'_>,
    spec: &str,
    seed: &Bound<'_, PyAny>,
) -> PyResult<Vec<(PyTask, Option<PyGpuUse>)>> {
    let spec = parse_spec(spec)?;
    let seed: u64 = count(seed, "seed")?;
    let set = py.detach(|| generate::generate(&mut Rng::new(seed), &spec));
    Ok(set
        .into_iter()
        .map(|g| (PyTask(g.task), g.gpu.map(PyGpuUse)))
        .collect())
}

/// The seed of set `index` of a point seeded `point_seed`.
#[pyfunction]
fn experiment_set_seed(point_seed: &Bound<'_, PyAny>, index: &Bound<'_, PyAny>) -> PyResult<u64> {
    Ok(generate::set_seed(
        count(point_seed, "point_seed")?,
        count(index, "index")?,
    ))
}

/// Names of the tests [`experiment_batch`] runs.
#[pyfunction]
fn experiment_test_names() -> Vec<&'static str> {
    Test::NAMES.to_vec()
}

/// The outcome of [`experiment_batch`].
#[pyclass(frozen, module = "rtgpu", name = "Batch")]
pub(crate) struct PyBatch(Batch);

#[pymethods]
impl PyBatch {
    /// Task sets drawn.
    #[getter]
    fn sets(&self) -> u64 {
        self.0.sets
    }
    /// Sum over sets of their utilization.
    #[getter]
    fn utilization_sum(&self) -> f64 {
        self.0.utilization_sum
    }
    /// Sum over sets of their effective utilization (seed 000 §VII).
    #[getter]
    fn effective_utilization_sum(&self) -> f64 {
        self.0.effective_utilization_sum
    }
    /// Sum over sets of their task count.
    #[getter]
    fn tasks_sum(&self) -> u64 {
        self.0.tasks_sum
    }
    /// Per test (argument order), the sets it accepted.
    #[getter]
    fn schedulable(&self) -> Vec<u64> {
        self.0.tests.iter().map(|t| t.schedulable).collect()
    }
    /// Per test, whether it accepted each set, in set order (empty unless
    /// the ratio was requested, and for tests that decide nothing).
    #[getter]
    fn accepted(&self) -> Vec<Vec<bool>> {
        self.0.tests.iter().map(|t| t.accepted.clone()).collect()
    }
    /// Per test, each set's breakdown utilization (empty unless requested).
    #[getter]
    fn breakdown(&self) -> Vec<Vec<f64>> {
        self.0.tests.iter().map(|t| t.breakdown.clone()).collect()
    }
    /// Per test, each set's largest GPUSync blocking bound in ms (empty
    /// unless requested, and for tests other than "gpusync").
    #[getter]
    fn blocking(&self) -> Vec<Vec<f64>> {
        self.0.tests.iter().map(|t| t.blocking.clone()).collect()
    }
    fn __repr__(&self) -> String {
        format!(
            "Batch(sets={}, schedulable={:?})",
            self.0.sets,
            self.schedulable()
        )
    }
}

/// Draws sets `first .. first + sets` of the point seeded `seed` and runs
/// `tests` on the platform of `setup` (JSON: cores, clusters, gpus, rho,
/// copy_locking, chunk, bandwidth, token_cpu, overheads; other keys are
/// ignored): counts accepted sets (`ratio`), records each set's breakdown
/// utilization (`breakdown`) and largest GPUSync blocking (`blocking`).
#[pyfunction]
#[pyo3(signature = (spec, seed, first, sets, setup, tests, ratio = true, breakdown = false, blocking = false))]
#[allow(clippy::too_many_arguments)]
fn experiment_batch(
    py: Python<'_>,
    spec: &str,
    seed: &Bound<'_, PyAny>,
    first: &Bound<'_, PyAny>,
    sets: &Bound<'_, PyAny>,
    setup: &str,
    tests: Vec<String>,
    ratio: bool,
    breakdown: bool,
    blocking: bool,
) -> PyResult<PyBatch> {
    let spec = parse_spec(spec)?;
    let seed: u64 = count(seed, "seed")?;
    let first: u64 = count(first, "first")?;
    let sets: u64 = count(sets, "sets")?;
    let setup: Setup =
        serde_json::from_str(setup).map_err(|e| value_error(format!("parameters: {e}")))?;
    setup
        .validate()
        .map_err(|e| value_error(format!("parameters: {e}")))?;
    if first.checked_add(sets).is_none() {
        return Err(value_error("first + sets overflows 64 bits"));
    }
    let tests = tests
        .iter()
        .map(|n| Test::from_name(n).ok_or_else(|| bad_choice("tests", n, &Test::NAMES)))
        .collect::<PyResult<Vec<Test>>>()?;
    let metrics = Metrics {
        ratio,
        breakdown,
        blocking,
    };
    let batch = py.detach(|| run_batch(&spec, seed, first, sets, &setup, &tests, metrics));
    Ok(PyBatch(batch))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGpuUse>()?;
    m.add_class::<PyBatch>()?;
    m.add_function(wrap_pyfunction!(experiment_check_spec, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_generate, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_set_seed, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_test_names, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_batch, m)?)?;
    Ok(())
}
