//! The report of `Workload.analyze()`: typed, read-only views of
//! `rtgpu_analysis::workload::Report` and its parts.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use rtgpu_analysis::workload::{
    BoundCheck, ClusterReport, CoreReport, PieceReport, Report, TaskReport, TaskVerdict, Verdict,
};
use rtgpu_analysis::Time;

use crate::args::value_error;
use crate::task::{duration_repr, optional_duration_repr, py_bool, py_str, py_str_list};
use rtgpu_model::units::format_duration;

/// `Verdict.NOT_SCHEDULABLE` for `("Verdict", "not-schedulable")`.
fn enum_repr(name: &str, value: &str) -> String {
    format!("{name}.{}", value.replace('-', "_").to_uppercase())
}

fn verdict_value(v: Verdict) -> &'static str {
    match v {
        Verdict::Schedulable => "schedulable",
        Verdict::NotSchedulable => "not-schedulable",
        Verdict::NotAnalysed => "not-analysed",
    }
}

fn task_verdict_value(v: TaskVerdict) -> &'static str {
    match v {
        TaskVerdict::MeetsDeadline => "meets-deadline",
        TaskVerdict::MeetsDeadlineIf => "meets-deadline-if",
        TaskVerdict::MissesDeadline => "misses-deadline",
        TaskVerdict::BoundedTardiness => "bounded-tardiness",
        TaskVerdict::UnboundedTardiness => "unbounded-tardiness",
        TaskVerdict::Unplaced => "unplaced",
        TaskVerdict::NotAnalysed => "not-analysed",
    }
}

/// The member of the Python enum `rtgpu.<name>` with this value.
fn python_enum<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
    value: &str,
) -> PyResult<Bound<'py, PyAny>> {
    cell.import(py, "rtgpu._enums", name)?.call1((value,))
}

static VERDICT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static TASK_VERDICT: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The outcome of `Workload.analyze()`.
#[pyclass(frozen, module = "rtgpu", name = "Report")]
pub(crate) struct PyReport(Report);

impl PyReport {
    pub(crate) fn new(report: Report) -> Self {
        PyReport(report)
    }
}

#[pymethods]
impl PyReport {
    /// Name of the analysed workload.
    #[getter]
    fn workload(&self) -> &str {
        &self.0.workload
    }
    /// CPU scheduler ("P-FP", "G-EDF", ...).
    #[getter]
    fn scheduler(&self) -> &str {
        &self.0.scheduler
    }
    /// The overall answer, an `rtgpu.Verdict`.
    #[getter]
    fn verdict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        python_enum(py, &VERDICT, "Verdict", verdict_value(self.0.verdict))
    }
    /// Whether every deadline holds (or, if `soft`, every tardiness is bounded).
    #[getter]
    fn schedulable(&self) -> bool {
        self.0.verdict == Verdict::Schedulable
    }
    /// The test that decided the verdict, with its source.
    #[getter]
    fn method(&self) -> &str {
        &self.0.method
    }
    /// Whether the suspension-aware test decided for the GPU-using tasks.
    #[getter]
    fn suspension_aware(&self) -> bool {
        self.0.suspension_aware
    }
    /// How GPU-using tasks were analysed, in words (`None` without any).
    #[getter]
    fn gpu_analysis(&self) -> Option<&str> {
        self.0.gpu_analysis.as_deref()
    }
    /// One sentence explaining the verdict.
    #[getter]
    fn reason(&self) -> &str {
        &self.0.reason
    }
    /// Whether the verdict is soft real time (bounded tardiness under EDF).
    #[getter]
    fn soft(&self) -> bool {
        self.0.soft
    }
    #[getter]
    fn total_utilization(&self) -> f64 {
        self.0.total_utilization
    }
    /// Per task, in workload order.
    #[getter]
    fn tasks(&self) -> Vec<PyTaskReport> {
        self.0.tasks.iter().cloned().map(PyTaskReport).collect()
    }
    /// Per core (P-FP only; empty otherwise).
    #[getter]
    fn cores(&self) -> Vec<PyCoreReport> {
        self.0.cores.iter().cloned().map(PyCoreReport).collect()
    }
    /// Per cluster.
    #[getter]
    fn clusters(&self) -> Vec<PyClusterReport> {
        self.0
            .clusters
            .iter()
            .cloned()
            .map(PyClusterReport)
            .collect()
    }
    /// Sufficient utilization-bound tests, evaluated for information.
    #[getter]
    fn bounds(&self) -> Vec<PyBoundCheck> {
        self.0.bounds.iter().cloned().map(PyBoundCheck).collect()
    }
    /// Remarks on how the analysis was applied.
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.0.notes.clone()
    }

    /// The task report named `name`.
    fn task(&self, name: &str) -> PyResult<PyTaskReport> {
        self.0
            .tasks
            .iter()
            .find(|t| t.name == name)
            .cloned()
            .map(PyTaskReport)
            .ok_or_else(|| {
                pyo3::exceptions::PyKeyError::new_err(format!(
                    "no task named {} in the report",
                    py_str(name)
                ))
            })
    }

    /// One dict per task, flat and typed (times in integer nanoseconds,
    /// `None` where the analysis gives no value): `name`, `wcet`, `period`,
    /// `deadline`, `utilization`, `uses_gpu`, `cluster`, `cores` (text,
    /// e.g. "0-3"), `priority`, `split`, `response_time`, `tardiness`,
    /// `slack` (deadline − response time), `verdict` (its value, e.g.
    /// "meets-deadline"), `depends_on` (comma-separated), `gpu_wait`,
    /// `gpu_time` (copies + kernels), `gpu_allocator`. For a DataFrame:
    /// `pandas.DataFrame(report.rows())`, or `report.to_pandas()`.
    fn rows<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, pyo3::types::PyDict>>> {
        self.0.tasks.iter().map(|t| task_row(py, t)).collect()
    }

    /// [`rows`] as a pandas DataFrame with nullable dtypes (integers stay
    /// integers where a value is missing). Needs pandas (`pip install
    /// pandas`, or the wheel's `experiment` extra).
    fn to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pd = py.import("pandas").map_err(|_| {
            pyo3::exceptions::PyImportError::new_err(
                "Report.to_pandas() needs pandas: pip install pandas (or the rtgpu wheel's \
                 `experiment` extra); Report.rows() gives the same rows without it",
            )
        })?;
        let rows = self.rows(py)?;
        let columns: Vec<&str> = ROW_COLUMNS.to_vec();
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("columns", columns)?;
        pd.getattr("DataFrame")?
            .call((rows,), Some(&kwargs))?
            .call_method0("convert_dtypes")
    }

    /// The report as JSON text (the same as `rtgpu analyze --json`).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.0)
            .map_err(|e| value_error(format!("cannot encode the report as JSON: {e}")))
    }

    fn __repr__(&self) -> String {
        let r = &self.0;
        format!(
            "Report(workload={}, scheduler='{}', verdict={}, tasks={}, total_utilization={:.4})",
            py_str(&r.workload),
            r.scheduler,
            enum_repr("Verdict", verdict_value(r.verdict)),
            r.tasks.len(),
            r.total_utilization
        )
    }

    /// A short text summary: verdict, reason, one line per task.
    fn __str__(&self) -> String {
        let r = &self.0;
        let mut s = format!(
            "{} ({}): {}\n  {}\n  method: {}\n",
            r.workload,
            r.scheduler,
            verdict_value(r.verdict),
            r.reason,
            r.method
        );
        for t in &r.tasks {
            let bound = match (t.response_time, t.tardiness) {
                (_, Some(x)) if r.soft => format!("tardiness <= {}", format_duration(x)),
                (Some(rt), _) => format!("R = {}", format_duration(rt)),
                _ => "no bound".to_string(),
            };
            s += &format!(
                "  {:<20} {:<20} {bound}  (D = {})\n",
                t.name,
                task_verdict_value(t.verdict),
                format_duration(t.deadline)
            );
        }
        for n in &r.notes {
            s += &format!("  note: {n}\n");
        }
        s.trim_end().to_string()
    }
}

/// Outcome of one task.
/// The columns of `Report.rows()`, in order.
const ROW_COLUMNS: [&str; 18] = [
    "name",
    "wcet",
    "period",
    "deadline",
    "utilization",
    "uses_gpu",
    "cluster",
    "cores",
    "priority",
    "split",
    "response_time",
    "tardiness",
    "slack",
    "verdict",
    "depends_on",
    "gpu_wait",
    "gpu_time",
    "gpu_allocator",
];

/// One task of the report as a flat dict of [`ROW_COLUMNS`].
fn task_row<'py>(py: Python<'py>, t: &TaskReport) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let d = pyo3::types::PyDict::new(py);
    let gpu = t.gpu.as_ref();
    let cores = rtgpu_model::listing::ranges(&t.cores);
    let values: [Bound<'py, PyAny>; 18] = [
        t.name.clone().into_pyobject(py)?.into_any(),
        t.wcet.into_pyobject(py)?.into_any(),
        t.period.into_pyobject(py)?.into_any(),
        t.deadline.into_pyobject(py)?.into_any(),
        t.utilization.into_pyobject(py)?.into_any(),
        pyo3::types::PyBool::new(py, t.uses_gpu)
            .to_owned()
            .into_any(),
        t.cluster.into_pyobject(py)?.into_any(),
        cores.into_pyobject(py)?.into_any(),
        t.priority.into_pyobject(py)?.into_any(),
        pyo3::types::PyBool::new(py, t.pieces.len() > 1)
            .to_owned()
            .into_any(),
        t.response_time.into_pyobject(py)?.into_any(),
        t.tardiness.into_pyobject(py)?.into_any(),
        t.response_time
            .map(|r| i128::from(t.deadline) - i128::from(r))
            .into_pyobject(py)?
            .into_any(),
        task_verdict_value(t.verdict).into_pyobject(py)?.into_any(),
        t.depends_on.join(",").into_pyobject(py)?.into_any(),
        gpu.and_then(|g| g.token_blocking)
            .into_pyobject(py)?
            .into_any(),
        gpu.map(|g| g.copy_time + g.kernel_time)
            .into_pyobject(py)?
            .into_any(),
        gpu.map(|g| g.allocator.clone())
            .into_pyobject(py)?
            .into_any(),
    ];
    for (k, v) in ROW_COLUMNS.iter().zip(values) {
        d.set_item(k, v)?;
    }
    Ok(d)
}

#[pyclass(frozen, module = "rtgpu", name = "TaskReport")]
pub(crate) struct PyTaskReport(TaskReport);

#[pymethods]
impl PyTaskReport {
    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }
    #[getter]
    fn wcet(&self) -> Time {
        self.0.wcet
    }
    #[getter]
    fn period(&self) -> Time {
        self.0.period
    }
    #[getter]
    fn deadline(&self) -> Time {
        self.0.deadline
    }
    #[getter]
    fn jitter(&self) -> Time {
        self.0.jitter
    }
    #[getter]
    fn blocking(&self) -> Time {
        self.0.blocking
    }
    #[getter]
    fn utilization(&self) -> f64 {
        self.0.utilization
    }
    #[getter]
    fn uses_gpu(&self) -> bool {
        self.0.uses_gpu
    }
    /// Index of the cluster the task runs in, if placed in one.
    #[getter]
    fn cluster(&self) -> Option<usize> {
        self.0.cluster
    }
    /// Cores the task may run on.
    #[getter]
    fn cores(&self) -> Vec<u32> {
        self.0.cores.clone()
    }
    /// Priority rank under FP (1 = highest).
    #[getter]
    fn priority(&self) -> Option<u32> {
        self.0.priority
    }
    /// P-FP: where each piece of the task runs, in execution order.
    #[getter]
    fn pieces(&self) -> Vec<PyPieceReport> {
        self.0.pieces.iter().cloned().map(PyPieceReport).collect()
    }
    /// Whether the task was split over several cores.
    #[getter]
    fn split(&self) -> bool {
        self.0.pieces.len() > 1
    }
    /// Worst-case response-time bound from release (ns), if bounded.
    #[getter]
    fn response_time(&self) -> Option<Time> {
        self.0.response_time
    }
    /// EDF: tardiness bound (ns), if bounded.
    #[getter]
    fn tardiness(&self) -> Option<Time> {
        self.0.tardiness
    }

    /// Verdict `meets-deadline-if`: the failing tasks whose deadlines the
    /// bound assumes met.
    #[getter]
    fn depends_on(&self) -> Vec<String> {
        self.0.depends_on.clone()
    }
    /// The inflated cost the verdict used (seed 000 App. B), ns.
    #[getter]
    fn inflated_cost(&self) -> Option<Time> {
        self.0.charges.map(|c| c.total)
    }
    /// What the inflated cost is made of.
    #[getter]
    fn charges(&self) -> Option<PyCharges> {
        self.0.charges.map(PyCharges::from)
    }
    /// GPU-using tasks: GPU wait bounds and GPU time.
    #[getter]
    fn gpu(&self) -> Option<PyGpuReport> {
        self.0.gpu.as_ref().map(PyGpuReport::from)
    }
    /// An `rtgpu.TaskVerdict`.
    #[getter]
    fn verdict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        python_enum(
            py,
            &TASK_VERDICT,
            "TaskVerdict",
            task_verdict_value(self.0.verdict),
        )
    }

    fn __repr__(&self) -> String {
        let t = &self.0;
        let mut s = format!(
            "TaskReport(name={}, verdict={}, response_time={}, deadline={}, cores={:?}",
            py_str(&t.name),
            enum_repr("TaskVerdict", task_verdict_value(t.verdict)),
            optional_duration_repr(t.response_time),
            duration_repr(t.deadline),
            t.cores
        );
        if t.tardiness.is_some() {
            s += &format!(", tardiness={}", optional_duration_repr(t.tardiness));
        }
        if t.pieces.len() > 1 {
            s += &format!(", pieces={}", t.pieces.len());
        }
        s + ")"
    }
}

/// One piece of a (possibly split) task on one core.
#[pyclass(frozen, module = "rtgpu", name = "PieceReport")]
pub(crate) struct PyPieceReport(PieceReport);

#[pymethods]
impl PyPieceReport {
    #[getter]
    fn core(&self) -> u32 {
        self.0.core
    }
    /// CPU budget of the piece (ns).
    #[getter]
    fn budget(&self) -> Time {
        self.0.budget
    }
    /// Release of the piece after the job's release (ns).
    #[getter]
    fn release_offset(&self) -> Time {
        self.0.release_offset
    }
    /// Relative deadline of the piece from its own release (ns).
    #[getter]
    fn deadline(&self) -> Time {
        self.0.deadline
    }
    /// Priority rank on its core (1 = highest).
    #[getter]
    fn priority(&self) -> u32 {
        self.0.priority
    }
    #[getter]
    fn response_time(&self) -> Option<Time> {
        self.0.response_time
    }

    fn __repr__(&self) -> String {
        let p = &self.0;
        format!(
            "PieceReport(core={}, budget={}, release_offset={}, deadline={}, priority={}, response_time={})",
            p.core,
            duration_repr(p.budget),
            duration_repr(p.release_offset),
            duration_repr(p.deadline),
            p.priority,
            optional_duration_repr(p.response_time)
        )
    }
}

/// What runs on one core (P-FP).
#[pyclass(frozen, module = "rtgpu", name = "CoreReport")]
pub(crate) struct PyCoreReport(CoreReport);

#[pymethods]
impl PyCoreReport {
    #[getter]
    fn core(&self) -> u32 {
        self.0.core
    }
    /// Index of the core's cluster.
    #[getter]
    fn cluster(&self) -> usize {
        self.0.cluster
    }
    #[getter]
    fn utilization(&self) -> Option<f64> {
        self.0.utilization
    }
    /// Task names (split pieces as "name#k") in priority order.
    #[getter]
    fn tasks(&self) -> Vec<String> {
        self.0.tasks.clone()
    }

    fn __repr__(&self) -> String {
        let c = &self.0;
        format!(
            "CoreReport(core={}, cluster={}, utilization={}, tasks={})",
            c.core,
            c.cluster,
            c.utilization
                .map_or_else(|| "None".to_string(), |u| format!("{u:.4}")),
            py_str_list(&c.tasks)
        )
    }
}

/// Load of one cluster.
#[pyclass(frozen, module = "rtgpu", name = "ClusterReport")]
pub(crate) struct PyClusterReport(ClusterReport);

#[pymethods]
impl PyClusterReport {
    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }
    #[getter]
    fn cores(&self) -> u32 {
        self.0.cores
    }
    #[getter]
    fn utilization(&self) -> f64 {
        self.0.utilization
    }
    /// Number of tasks placed in the cluster.
    #[getter]
    fn tasks(&self) -> usize {
        self.0.tasks
    }

    fn __repr__(&self) -> String {
        let c = &self.0;
        format!(
            "ClusterReport(name={}, cores={}, utilization={:.4}, tasks={})",
            py_str(&c.name),
            c.cores,
            c.utilization,
            c.tasks
        )
    }
}

/// A sufficient utilization-bound test, for information.
#[pyclass(frozen, module = "rtgpu", name = "BoundCheck")]
pub(crate) struct PyBoundCheck(BoundCheck);

#[pymethods]
impl PyBoundCheck {
    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }
    /// Where the bound comes from.
    #[getter]
    fn source(&self) -> &str {
        &self.0.source
    }
    #[getter]
    fn bound(&self) -> f64 {
        self.0.bound
    }
    /// The value compared with the bound.
    #[getter]
    fn value(&self) -> f64 {
        self.0.value
    }
    /// Whether the task set is in the bound's model.
    #[getter]
    fn applies(&self) -> bool {
        self.0.applies
    }
    #[getter]
    fn passes(&self) -> bool {
        self.0.passes
    }

    fn __repr__(&self) -> String {
        let b = &self.0;
        format!(
            "BoundCheck(name={}, value={:.4}, bound={:.4}, applies={}, passes={})",
            py_str(&b.name),
            b.value,
            b.bound,
            py_bool(b.applies),
            py_bool(b.passes)
        )
    }
}

/// The charges of seed 000 App. B that make up a task's inflated cost (ns;
/// `total` is their sum). `Time::MAX` (2**64 - 1) marks an unbounded part.
#[pyclass(frozen, get_all, module = "rtgpu", name = "Charges")]
pub(crate) struct PyCharges {
    cpu: Time,
    scheduling: Time,
    gpu_blocking: Time,
    gpu: Time,
    release: Time,
    interrupt_count: u64,
    interrupts: Time,
    bottom_half_scheduling: Time,
    ticks: Time,
    total: Time,
    /// Name of the largest overhead charge.
    dominant: String,
}

impl From<rtgpu_analysis::overheads::Charges> for PyCharges {
    fn from(c: rtgpu_analysis::overheads::Charges) -> Self {
        PyCharges {
            cpu: c.cpu,
            scheduling: c.scheduling,
            gpu_blocking: c.gpu_blocking,
            gpu: c.gpu,
            release: c.release,
            interrupt_count: c.interrupt_count,
            interrupts: c.interrupts,
            bottom_half_scheduling: c.bottom_half_scheduling,
            ticks: c.ticks,
            total: c.total,
            dominant: c.dominant_overhead().0.to_string(),
        }
    }
}

#[pymethods]
impl PyCharges {
    fn __repr__(&self) -> String {
        format!(
            "Charges(total={}, cpu={}, gpu_blocking={}, gpu={}, interrupts={}, dominant={})",
            self.total,
            self.cpu,
            self.gpu_blocking,
            self.gpu,
            self.interrupts,
            py_str(&self.dominant)
        )
    }
}

/// How a GPU-using task gets its GPU and how long it may wait (ns).
#[pyclass(frozen, get_all, module = "rtgpu", name = "GpuReport")]
pub(crate) struct PyGpuReport {
    allocator: String,
    copy_time: Time,
    kernel_time: Time,
    interrupts: u32,
    copy_requests: Option<u64>,
    exec_requests: Option<u64>,
    token_blocking: Option<Time>,
    engine_blocking: Option<Time>,
    token_hold_time: Option<Time>,
    kfmlp_l_aware: Option<Time>,
    kfmlp_l_oblivious: Option<Time>,
    kfmlp_exact_solved: Option<bool>,
    vgpu_share: Option<f64>,
    vgpu_response: Option<Time>,
    unbounded_because: Option<String>,
}

impl From<&rtgpu_analysis::workload_gpu::GpuTaskReport> for PyGpuReport {
    fn from(g: &rtgpu_analysis::workload_gpu::GpuTaskReport) -> Self {
        PyGpuReport {
            allocator: g.allocator.clone(),
            copy_time: g.copy_time,
            kernel_time: g.kernel_time,
            interrupts: g.interrupts,
            copy_requests: g.copy_requests,
            exec_requests: g.exec_requests,
            token_blocking: g.token_blocking,
            engine_blocking: g.engine_blocking,
            token_hold_time: g.token_hold_time,
            kfmlp_l_aware: g.kfmlp_l_aware,
            kfmlp_l_oblivious: g.kfmlp_l_oblivious,
            kfmlp_exact_solved: g.kfmlp_exact_solved,
            vgpu_share: g.vgpu_share,
            vgpu_response: g.vgpu_response,
            unbounded_because: g.unbounded_because.clone(),
        }
    }
}

#[pymethods]
impl PyGpuReport {
    fn __repr__(&self) -> String {
        format!(
            "GpuReport(allocator={}, token_blocking={:?}, engine_blocking={:?}, \
             token_hold_time={:?})",
            py_str(&self.allocator),
            self.token_blocking,
            self.engine_blocking,
            self.token_hold_time
        )
    }
}
