//! The workload file: `parse_workload`, `load_workload` and the read-only
//! view of a validated `Workload`.

use std::path::PathBuf;
use std::sync::OnceLock;

use pyo3::exceptions::{PyFileNotFoundError, PyIsADirectoryError, PyOSError, PyPermissionError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple, PyType};

use rtgpu_analysis::workload::{analyze, scheduler_name, Plan, Report};
use rtgpu_analysis::Time;
use rtgpu_model::{
    FitRule, GpuPart, ModelError, Partitioning, PriorityAssignment, SortOrder, Workload,
};

use crate::args::value_error;
use crate::report::PyReport;
use crate::sim::{PySimResult, SimArgs};
use crate::task::{duration_repr, py_bool, py_opt_str, py_str, py_str_list, PyTask};
use rtgpu_model::units::format_size;

/// Convert a model error: invalid files raise `rtgpu.WorkloadError` with
/// every diagnostic; unreadable files raise the matching `OSError`.
pub(crate) fn model_error(py: Python<'_>, err: ModelError) -> PyErr {
    match err {
        ModelError::Io { path, source } => {
            let message = source.to_string();
            let args = (
                source.raw_os_error().unwrap_or(0),
                message,
                path.display().to_string(),
            );
            match source.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(args),
                std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(args),
                std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(args),
                _ => PyOSError::new_err(args),
            }
        }
        ModelError::Invalid(diagnostics) => {
            let message = ModelError::Invalid(diagnostics.clone()).to_string();
            match workload_error(py, message, &diagnostics) {
                Ok(e) | Err(e) => e,
            }
        }
    }
}

fn workload_error(
    py: Python<'_>,
    message: String,
    diagnostics: &[rtgpu_model::Diagnostic],
) -> PyResult<PyErr> {
    static DIAGNOSTIC: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    static ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let diagnostic = DIAGNOSTIC.import(py, "rtgpu._errors", "Diagnostic")?;
    let error = ERROR.import(py, "rtgpu._errors", "WorkloadError")?;
    let items = diagnostics
        .iter()
        .map(|d| {
            diagnostic.call1((
                d.file.as_str(),
                d.line,
                d.column,
                d.field.as_str(),
                d.message.as_str(),
            ))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let exc = error.call1((message, PyList::new(py, items)?))?;
    Ok(PyErr::from_value(exc))
}

/// Parse a workload from TOML text; `file_name` is used in error messages.
#[pyfunction]
#[pyo3(signature = (text, file_name = "<string>"))]
pub(crate) fn parse_workload(py: Python<'_>, text: &str, file_name: &str) -> PyResult<PyWorkload> {
    let result = py.detach(|| rtgpu_model::parse_workload(text, file_name));
    result.map(PyWorkload::new).map_err(|e| model_error(py, e))
}

/// Load and validate a workload file.
#[pyfunction]
pub(crate) fn load_workload(py: Python<'_>, path: PathBuf) -> PyResult<PyWorkload> {
    let result = py.detach(|| rtgpu_model::load_workload(&path));
    result.map(PyWorkload::new).map_err(|e| model_error(py, e))
}

/// Rebuild a workload from `Workload.to_json()` (used by pickle).
#[pyfunction]
#[pyo3(name = "_workload_from_json")]
pub(crate) fn workload_from_json(text: &str) -> PyResult<PyWorkload> {
    serde_json::from_str::<Workload>(text)
        .map(PyWorkload::new)
        .map_err(|e| value_error(format!("text is not a workload in rtgpu JSON form: {e}")))
}

/// The JSON Schema of the workload file format.
#[pyfunction]
pub(crate) fn json_schema() -> String {
    rtgpu_model::json_schema()
}

/// Parse a duration such as `"2.5 ms"` into integer nanoseconds.
#[pyfunction]
pub(crate) fn parse_duration(text: &str) -> PyResult<Time> {
    rtgpu_model::units::parse_duration(text).map_err(|e| value_error(e.to_string()))
}

/// Format nanoseconds as a duration string that parses back exactly.
#[pyfunction]
pub(crate) fn format_duration(ns: Time) -> String {
    rtgpu_model::units::format_duration(ns)
}

/// A validated workload: platform, tasks and policy. Build one with
/// `rtgpu.load_workload` or `rtgpu.parse_workload`.
#[pyclass(frozen, module = "rtgpu", name = "Workload")]
pub(crate) struct PyWorkload {
    workload: Workload,
    /// `analyze` is deterministic: computed once, on first use.
    analysis: OnceLock<(Report, Plan)>,
}

impl PyWorkload {
    fn new(workload: Workload) -> Self {
        PyWorkload {
            workload,
            analysis: OnceLock::new(),
        }
    }

    fn analysis(&self, py: Python<'_>) -> &(Report, Plan) {
        if let Some(a) = self.analysis.get() {
            return a;
        }
        let computed = py.detach(|| analyze(&self.workload));
        self.analysis.get_or_init(|| computed)
    }

    fn cluster_name(&self, index: Option<usize>) -> Option<String> {
        index.and_then(|i| {
            self.workload
                .platform
                .clusters
                .get(i)
                .map(|c| c.name.clone())
        })
    }
}

fn partitioning_name(p: Partitioning) -> String {
    let order = |o: SortOrder| match o {
        SortOrder::DecreasingUtilization => "decreasing-utilization",
        SortOrder::DecreasingSize => "decreasing-size",
    };
    match p {
        Partitioning::Fit { rule, order: o } => {
            let rule = match rule {
                FitRule::First => "first-fit",
                FitRule::Best => "best-fit",
                FitRule::Worst => "worst-fit",
                FitRule::Next => "next-fit",
            };
            format!("{rule} ({})", order(o))
        }
        Partitioning::PdmsHpts { order: o } => format!("pdms-hpts ({})", order(o)),
        Partitioning::PdmsHptsDs => "pdms-hpts-ds".to_string(),
    }
}

#[pymethods]
impl PyWorkload {
    /// The workload's name (the file stem unless the file names it).
    #[getter]
    fn name(&self) -> &str {
        &self.workload.name
    }

    /// The tasks, in file order.
    #[getter]
    fn tasks(&self) -> Vec<PyWorkloadTask> {
        self.workload
            .tasks
            .iter()
            .enumerate()
            .map(|(index, t)| PyWorkloadTask {
                index,
                task: t.clone(),
                cluster: self.cluster_name(t.cluster),
                vgpu: t
                    .gpu
                    .as_ref()
                    .and_then(|g| g.vgpu)
                    .and_then(|v| self.workload.vgpus.get(v))
                    .map(|v| v.name.clone()),
            })
            .collect()
    }

    /// Total number of CPU cores over all clusters.
    #[getter]
    fn cores(&self) -> u32 {
        self.workload.platform.total_cores()
    }

    /// The clusters (NUMA nodes) with their cores and GPUs.
    #[getter]
    fn clusters(&self) -> Vec<PyCluster> {
        let p = &self.workload.platform;
        p.clusters
            .iter()
            .enumerate()
            .map(|(index, c)| PyCluster {
                index,
                name: c.name.clone(),
                cores: c.cores,
                first_core: c.first_core,
                gpus: c
                    .gpus
                    .iter()
                    .filter_map(|&g| p.gpus.get(g).map(|g| g.name.clone()))
                    .collect(),
            })
            .collect()
    }

    /// Names of the GPUs, in file order.
    #[getter]
    fn gpus(&self) -> Vec<String> {
        self.workload
            .platform
            .gpus
            .iter()
            .map(|g| g.name.clone())
            .collect()
    }

    /// The CPU scheduler: "P-FP", "C-FP", "G-FP", "C-EDF" or "G-EDF".
    #[getter]
    fn scheduler(&self) -> &'static str {
        scheduler_name(self.workload.policy.cpu_scheduler)
    }

    /// The partitioning heuristic (P-FP), e.g. "pdms-hpts-ds" or
    /// "first-fit (decreasing-utilization)".
    #[getter]
    fn partitioning(&self) -> String {
        partitioning_name(self.workload.policy.partitioning)
    }

    /// Priority assignment: "dm", "rm" or "audsley".
    #[getter]
    fn priority(&self) -> &'static str {
        match self.workload.policy.priority {
            PriorityAssignment::DeadlineMonotonic => "dm",
            PriorityAssignment::RateMonotonic => "rm",
            PriorityAssignment::Audsley => "audsley",
        }
    }

    /// Σ C/T over all tasks.
    #[getter]
    fn utilization(&self) -> f64 {
        self.workload
            .tasks
            .iter()
            .map(|t| t.wcet as f64 / t.period as f64)
            .sum()
    }

    /// Schedulability analysis according to the workload's policy (what
    /// `rtgpu analyze` prints). `method`: `"aware"` (default, the
    /// suspension-aware GPU analysis) or `"oblivious"` (the seeds'
    /// suspension-oblivious one, `rtgpu analyze --method oblivious`). Runs
    /// without the GIL.
    #[pyo3(signature = (*, method = "aware"))]
    fn analyze(&self, py: Python<'_>, method: &str) -> PyResult<PyReport> {
        match method {
            "aware" => Ok(PyReport::new(self.analysis(py).0.clone())),
            "oblivious" => {
                let extra = rtgpu_analysis::workload::Extra {
                    method: rtgpu_analysis::gpu::Method::Oblivious,
                    ..Default::default()
                };
                let (report, _) =
                    py.detach(|| rtgpu_analysis::workload::analyze_with(&self.workload, &extra));
                Ok(PyReport::new(report))
            }
            other => Err(crate::args::bad_choice(
                "method",
                other,
                &["aware", "oblivious"],
            )),
        }
    }

    /// The workload with every task a SCHED_DEADLINE reservation (`rtgpu
    /// analyze/simulate/run --sched deadline`): its analysis and simulation
    /// are the deadline mode's. ValueError naming what cannot be one (a
    /// vGPU member, D > T, CPU work inside a GPU section, GPUs in several
    /// clusters).
    fn under_deadline(&self) -> PyResult<PyWorkload> {
        self.workload
            .under_deadline()
            .map(PyWorkload::new)
            .map_err(value_error)
    }

    /// Runs the workload in virtual time (what `rtgpu simulate` runs) and
    /// returns what each task did beside its analysis bound. Runs without
    /// the GIL. `plan`: run this plan's placement, priorities and split
    /// budgets instead of analysing again (`rtgpu simulate --plan`): its
    /// JSON text (`plan()`) or the path of a file `rtgpu analyze --plan`
    /// wrote; ValueError naming what differs if it is not this workload's.
    /// `record_jobs`: keep one row per job (`SimResult.job_rows()`, what
    /// `rtgpu simulate --csv` writes; costs memory on long runs).
    #[pyo3(signature = (
        *,
        duration = None,
        seed = None,
        klmirqd = "dependent",
        klmirqd_server = None,
        scenario = None,
        sporadic = None,
        bcet = None,
        shift_tardy = false,
        overheads = true,
        drain = false,
        method = "aware",
        plan = None,
        record_jobs = false,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn simulate(
        &self,
        py: Python<'_>,
        duration: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        klmirqd: &str,
        klmirqd_server: Option<&Bound<'_, PyAny>>,
        scenario: Option<&str>,
        sporadic: Option<f64>,
        bcet: Option<f64>,
        shift_tardy: bool,
        overheads: bool,
        drain: bool,
        method: &str,
        plan: Option<&Bound<'_, PyAny>>,
        record_jobs: bool,
    ) -> PyResult<PySimResult> {
        let args = SimArgs {
            plan,
            record_jobs,
            method,
            duration,
            seed,
            klmirqd,
            klmirqd_server,
            scenario,
            sporadic,
            bcet,
            shift_tardy,
            overheads,
            drain,
        };
        crate::sim::simulate(py, &self.workload, &args)
    }

    /// The deployment plan `rtgpu run` consumes, as JSON text.
    fn plan(&self, py: Python<'_>) -> PyResult<String> {
        serde_json::to_string_pretty(&self.analysis(py).1)
            .map_err(|e| value_error(format!("cannot encode the plan as JSON: {e}")))
    }

    /// The validated model as JSON text (times in ns, sizes in bytes).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.workload)
            .map_err(|e| value_error(format!("cannot encode the workload as JSON: {e}")))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let rebuild = py.import("rtgpu._rtgpu")?.getattr("_workload_from_json")?;
        (rebuild, (slf.get().to_json()?,)).into_pyobject(py)
    }

    fn __repr__(&self) -> String {
        let w = &self.workload;
        format!(
            "Workload(name={}, scheduler='{}', tasks={}, cores={}, clusters={}, gpus={})",
            py_str(&w.name),
            self.scheduler(),
            w.tasks.len(),
            w.platform.total_cores(),
            w.platform.clusters.len(),
            w.platform.gpus.len()
        )
    }
}

/// One task of a workload file, as validated (times in ns).
#[pyclass(frozen, module = "rtgpu", name = "WorkloadTask")]
pub(crate) struct PyWorkloadTask {
    index: usize,
    task: rtgpu_model::Task,
    cluster: Option<String>,
    vgpu: Option<String>,
}

#[pymethods]
impl PyWorkloadTask {
    #[getter]
    fn name(&self) -> &str {
        &self.task.name
    }
    #[getter]
    fn wcet(&self) -> Time {
        self.task.wcet
    }
    #[getter]
    fn period(&self) -> Time {
        self.task.period
    }
    #[getter]
    fn deadline(&self) -> Time {
        self.task.deadline
    }
    #[getter]
    fn jitter(&self) -> Time {
        self.task.jitter
    }
    #[getter]
    fn blocking(&self) -> Time {
        self.task.blocking
    }
    /// Name of the cluster the task is bound to, if any.
    #[getter]
    fn cluster(&self) -> Option<&str> {
        self.cluster.as_deref()
    }
    #[getter]
    fn uses_gpu(&self) -> bool {
        self.task.uses_gpu()
    }
    /// Whether the task is a CPU reservation (SCHED_DEADLINE).
    #[getter]
    fn reservation(&self) -> bool {
        self.task.reservation
    }
    /// The task's GPU work, if it uses a GPU.
    #[getter]
    fn gpu(&self) -> Option<PyGpuWork> {
        self.task.gpu.as_ref().map(|g| PyGpuWork {
            part: g.clone(),
            vgpu: self.vgpu.clone(),
        })
    }
    #[getter]
    fn utilization(&self) -> f64 {
        self.task.wcet as f64 / self.task.period as f64
    }
    /// Line of the task's table in the file (1-based).
    #[getter]
    fn line(&self) -> usize {
        self.task.location.line
    }

    /// The task for the `rtgpu.fp` / `partition` / `edf` analyses, with
    /// `id` = its position in the workload.
    fn to_task(&self) -> PyTask {
        let t = &self.task;
        PyTask(rtgpu_analysis::Task {
            id: self.index,
            wcet: t.wcet,
            period: t.period,
            deadline: t.deadline,
            jitter: t.jitter,
            blocking: t.blocking,
        })
    }

    fn __repr__(&self) -> String {
        let t = &self.task;
        let mut s = format!(
            "WorkloadTask(name={}, wcet={}, period={}, deadline={}",
            py_str(&t.name),
            duration_repr(t.wcet),
            duration_repr(t.period),
            duration_repr(t.deadline)
        );
        if t.jitter != 0 {
            s += &format!(", jitter={}", duration_repr(t.jitter));
        }
        if t.blocking != 0 {
            s += &format!(", blocking={}", duration_repr(t.blocking));
        }
        if let Some(c) = &self.cluster {
            s += &format!(", cluster={}", py_str(c));
        }
        s += &format!(", uses_gpu={})", py_bool(t.uses_gpu()));
        s
    }
}

/// GPU work of one job: copies, kernels and interrupts (seed 000, 004).
#[pyclass(frozen, module = "rtgpu", name = "GpuWork")]
pub(crate) struct PyGpuWork {
    part: GpuPart,
    vgpu: Option<String>,
}

#[pymethods]
impl PyGpuWork {
    /// Bytes copied host to device before the kernels.
    #[getter]
    fn copy_in(&self) -> u64 {
        self.part.copy_in
    }
    /// Kernel execution times (ns), in launch order.
    #[getter]
    fn kernels(&self) -> Vec<Time> {
        self.part.kernels.clone()
    }
    /// Bytes copied device to host after the kernels.
    #[getter]
    fn copy_out(&self) -> u64 {
        self.part.copy_out
    }
    /// Bytes of GPU-resident state (migrated with the task).
    #[getter]
    fn state(&self) -> u64 {
        self.part.state
    }
    /// GPU interrupts per job.
    #[getter]
    fn interrupts(&self) -> u32 {
        self.part.interrupts
    }
    /// Name of the virtual GPU the work runs in, if any.
    #[getter]
    fn vgpu(&self) -> Option<&str> {
        self.vgpu.as_deref()
    }

    fn __repr__(&self) -> String {
        let p = &self.part;
        let kernels: Vec<String> = p.kernels.iter().map(|&k| duration_repr(k)).collect();
        format!(
            "GpuWork(copy_in={}, kernels=[{}], copy_out={}, state={}, interrupts={}, vgpu={})",
            py_str(&format_size(p.copy_in)),
            kernels.join(", "),
            py_str(&format_size(p.copy_out)),
            py_str(&format_size(p.state)),
            p.interrupts,
            py_opt_str(self.vgpu.as_deref())
        )
    }
}

/// A cluster of cores (a NUMA node) and the GPUs attached to it.
#[pyclass(frozen, get_all, module = "rtgpu", name = "Cluster")]
pub(crate) struct PyCluster {
    /// Position in the workload's cluster list.
    index: usize,
    name: String,
    /// Number of cores.
    cores: u32,
    /// First global core id; the cluster owns first_core .. first_core + cores.
    first_core: u32,
    /// Names of the cluster's GPUs.
    gpus: Vec<String>,
}

#[pymethods]
impl PyCluster {
    /// Global ids of the cluster's cores.
    #[getter]
    fn core_ids(&self) -> Vec<u32> {
        (self.first_core..self.first_core + self.cores).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "Cluster(name={}, cores={}, first_core={}, gpus={})",
            py_str(&self.name),
            self.cores,
            self.first_core,
            py_str_list(&self.gpus)
        )
    }
}
