//! # rtgpu-py
//!
//! The native core of the `rtgpu` Python package (`rtgpu._rtgpu`): a thin
//! PyO3 layer over `rtgpu-model`, `rtgpu-analysis` and `rtgpu-sim`
//! (`Workload.simulate`). The public Python API lives in `python/rtgpu/`
//! (modules `rtgpu`, `rtgpu.fp`, `rtgpu.edf`, `rtgpu.global_fp`,
//! `rtgpu.bounds`, `rtgpu.generate`), which re-exports these classes and
//! wraps these functions with documented signatures; the type stubs are
//! `python/rtgpu/_rtgpu.pyi`.
//!
//! Conventions of the layer:
//! - Every result is a typed, immutable object (a frozen pyclass) with
//!   read-only properties and an informative `repr`; never a dict.
//! - Times are integer nanoseconds; arguments also accept strings with units
//!   (`"2 ms"`, parsed by the workload file's exact parser) and
//!   `datetime.timedelta`.
//! - Invalid arguments raise `ValueError` (or `TypeError` for a wrong type)
//!   naming the argument; invalid workload files raise `rtgpu.WorkloadError`
//!   with every diagnostic. Nothing a caller passes can reach a panic.
//! - Analyses run with the GIL released (`Python::detach`).
//! - Results are per task in the caller's list order, whatever priority
//!   order an analysis used internally.

use pyo3::prelude::*;

mod args;
mod bounds;
mod edf;
mod experiment;
mod fp;
mod generate;
mod global_fp;
mod gpu_analysis;
mod model;
mod partition;
mod report;
mod runtime;
mod sim;
mod task;

#[pymodule]
fn _rtgpu(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;

    m.add_class::<task::PyTask>()?;
    m.add_class::<model::PyWorkload>()?;
    m.add_class::<model::PyWorkloadTask>()?;
    m.add_class::<model::PyGpuWork>()?;
    m.add_class::<model::PyCluster>()?;
    m.add_class::<report::PyReport>()?;
    m.add_class::<report::PyTaskReport>()?;
    m.add_class::<report::PyPieceReport>()?;
    m.add_class::<report::PyCoreReport>()?;
    m.add_class::<report::PyClusterReport>()?;
    m.add_class::<report::PyBoundCheck>()?;
    m.add_class::<report::PyCharges>()?;
    m.add_class::<report::PyGpuReport>()?;

    m.add_function(wrap_pyfunction!(model::parse_workload, m)?)?;
    m.add_function(wrap_pyfunction!(model::load_workload, m)?)?;
    m.add_function(wrap_pyfunction!(model::json_schema, m)?)?;
    m.add_function(wrap_pyfunction!(model::parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(model::format_duration, m)?)?;
    m.add_function(wrap_pyfunction!(model::workload_from_json, m)?)?;

    fp::register(m)?;
    partition::register(m)?;
    edf::register(m)?;
    global_fp::register(m)?;
    bounds::register(m)?;
    generate::register(m)?;
    gpu_analysis::register(m)?;
    experiment::register(m)?;
    runtime::register(m)?;
    sim::register(m)?;
    Ok(())
}
