//! `Workload.simulate()`: the workload in virtual time (`rtgpu-sim`, what
//! `rtgpu simulate` runs), with typed, read-only views of the result.

use std::borrow::Cow;

use pyo3::prelude::*;

use rtgpu_analysis::server::Server;
use rtgpu_analysis::Time;
use rtgpu_model::Workload;
use rtgpu_sim::{
    Klmirqd, Plan, Releases, Scenario, SimConfig, SimResult, TaskStats, UtilizationSeries,
};

use crate::args::{bad_choice, count, option_name, positive_duration, server, value_error};
use crate::task::{duration_repr, optional_duration_repr, py_bool, py_str};

/// What `rtgpu simulate` releases jobs for unless told (`--duration`).
const DEFAULT_DURATION: Time = 10_000_000_000;

/// The arguments of `Workload.simulate`, as Python passed them.
pub(crate) struct SimArgs<'a, 'py> {
    pub duration: Option<&'a Bound<'py, PyAny>>,
    pub seed: Option<&'a Bound<'py, PyAny>>,
    pub klmirqd: &'a str,
    pub klmirqd_server: Option<&'a Bound<'py, PyAny>>,
    pub scenario: Option<&'a str>,
    pub sporadic: Option<f64>,
    pub bcet: Option<f64>,
    pub shift_tardy: bool,
    pub overheads: bool,
    pub drain: bool,
    /// The analysis whose placement, priorities and bounds the run uses.
    pub method: &'a str,
    /// A plan to run instead of analysing: its JSON text (what
    /// `Workload.plan()` returns) or the path of a file holding it.
    pub plan: Option<&'a Bound<'py, PyAny>>,
    /// Keep one record per job (`SimResult.job_rows()`).
    pub record_jobs: bool,
}

/// The plan `simulate(plan=...)` names: JSON text (`Workload.plan()`), or
/// the path (a `str` or any `os.PathLike`) of a file `rtgpu analyze
/// --plan` wrote.
fn plan_arg(plan: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Plan>> {
    let Some(p) = plan.filter(|p| !p.is_none()) else {
        return Ok(None);
    };
    if let Some(text) = p
        .extract::<String>()
        .ok()
        .filter(|t| t.trim_start().starts_with('{'))
    {
        return Plan::parse(&text, "plan")
            .map(Some)
            .map_err(|e| value_error(e.to_string()));
    }
    if let Ok(path) = p.extract::<std::path::PathBuf>() {
        return Plan::load(&path)
            .map(Some)
            .map_err(|e| value_error(e.to_string()));
    }
    Err(value_error(
        "plan: expected the plan's JSON text (Workload.plan()) or the path of a plan file \
         (rtgpu analyze --plan)",
    ))
}

/// A percentage in [0, 100] as parts per million (`--sporadic`, `--bcet`).
fn percent_ppm(arg: &str, v: f64) -> PyResult<u32> {
    if !(0.0..=100.0).contains(&v) {
        return Err(value_error(format!(
            "{arg} must be a percentage in [0, 100], got {v}"
        )));
    }
    Ok((v * 10_000.0).round() as u32)
}

/// The klmirqd mode asked for (`--klmirqd`, `--klmirqd-server`).
fn klmirqd_mode(mode: &str, server_arg: Option<&Bound<'_, PyAny>>) -> PyResult<Klmirqd> {
    let server_arg = server_arg.filter(|s| !s.is_none());
    match option_name(mode).as_str() {
        "dependent" => match server_arg {
            None => Ok(Klmirqd::Dependent),
            Some(_) => Err(value_error(
                "klmirqd_server: a server needs klmirqd=\"independent\" (dependent klmirqd \
                 threads run at the GPU owner's priority, not as servers)",
            )),
        },
        "independent" => Ok(Klmirqd::Independent(
            server_arg
                .map(|s| {
                    server(
                        s,
                        "klmirqd_server",
                        rtgpu_analysis::server::MIN_DEADLINE_RUNTIME,
                    )
                })
                .transpose()?,
        )),
        _ => Err(bad_choice("klmirqd", mode, &["dependent", "independent"])),
    }
}

/// The settings of the run, checked, and the workload with any scenario
/// applied (the CLI's `rtgpu simulate` builds them the same way).
fn config<'w>(w: &'w Workload, a: &SimArgs<'_, '_>) -> PyResult<(Cow<'w, Workload>, SimConfig)> {
    let mut cfg = SimConfig {
        duration: match a.duration {
            Some(d) if !d.is_none() => positive_duration(d, "duration")?,
            _ => DEFAULT_DURATION,
        },
        seed: match a.seed {
            Some(s) if !s.is_none() => count(s, "seed")?,
            _ => SimConfig::default().seed,
        },
        overheads: a.overheads,
        drain: a.drain,
        record_jobs: a.record_jobs,
        shift_tardy: a.shift_tardy,
        klmirqd: klmirqd_mode(a.klmirqd, a.klmirqd_server)?,
        method: match a.method {
            "aware" => rtgpu_analysis::gpu::Method::Aware,
            "oblivious" => rtgpu_analysis::gpu::Method::Oblivious,
            other => return Err(bad_choice("method", other, &["aware", "oblivious"])),
        },
        ..SimConfig::default()
    };
    if let Some(p) = a.sporadic {
        cfg.releases = Releases::Sporadic {
            max_extra_ppm: percent_ppm("sporadic", p)?,
        };
    }
    if let Some(p) = a.bcet {
        cfg.bcet_ppm = percent_ppm("bcet", p)?;
    }
    let mut w = Cow::Borrowed(w);
    if let Some(s) = a.scenario {
        let scenario = Scenario::parse(s).map_err(|e| value_error(format!("scenario: {e}")))?;
        scenario.apply(&mut w.to_mut().policy, &mut cfg);
    }
    Ok((w, cfg))
}

/// Runs `w` in virtual time under the arguments of `Workload.simulate`,
/// without the GIL; the analysis bounds shown beside the observations are
/// `rtgpu simulate`'s (klmirqd's independent servers charged).
pub(crate) fn simulate(py: Python<'_>, w: &Workload, a: &SimArgs<'_, '_>) -> PyResult<PySimResult> {
    let (w, cfg) = config(w, a)?;
    let plan = plan_arg(a.plan)?;
    // The simulation runs on a thread of its own while this one, every
    // 50 ms, lets Python handle its signals: Ctrl-C raises
    // KeyboardInterrupt and stops the simulation (issue 22).
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel();
        let (w, cfg, cancel, plan) = (&w, &cfg, &cancel, plan.as_ref());
        scope.spawn(move || {
            let run = || {
                let extra = rtgpu_sim::analysis_extra(w, cfg);
                // With a plan, the bounds it carries and no analysis;
                // without, the bounds of the analysis that placed the run.
                let (result, bounds): (SimResult, Vec<Option<Time>>) = match plan {
                    Some(p) => (
                        rtgpu_sim::simulate_planned_cancellable(w, cfg, Some(p), cancel)?,
                        p.bounds(w),
                    ),
                    None => {
                        let (result, report) = rtgpu_sim::simulate_analysed(w, cfg, Some(cancel))?;
                        let bounds = report.tasks.iter().map(|t| t.response_time).collect();
                        (result, bounds)
                    }
                };
                Ok::<_, rtgpu_sim::SimError>((result, bounds, extra.bottom_halves))
            };
            let _ = tx.send(run());
        });
        let mut rx = rx;
        loop {
            // (The receiver goes into the GIL-free closure and back: it is
            // Send, not Sync.)
            let (waited, back) = py.detach(move || {
                let waited = rx.recv_timeout(std::time::Duration::from_millis(50));
                (waited, rx)
            });
            rx = back;
            match waited {
                Ok(done) => return Ok(done),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                        let _ = py.detach(move || rx.recv());
                        return Err(e);
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(value_error("the simulation thread panicked"));
                }
            }
        }
    })?;
    let (result, bounds, server) =
        outcome.map_err(|e| value_error(format!("the simulator cannot run {}: {e}", w.name)))?;
    Ok(PySimResult {
        result,
        bounds,
        klmirqd: match cfg.klmirqd {
            Klmirqd::Dependent => "dependent",
            Klmirqd::Independent(_) => "independent",
        },
        server,
    })
}

/// What `Workload.simulate()` observed.
#[pyclass(frozen, module = "rtgpu", name = "SimResult")]
pub(crate) struct PySimResult {
    result: SimResult,
    /// Per task, the analysis bound on its response time, if any.
    bounds: Vec<Option<Time>>,
    klmirqd: &'static str,
    /// The server each GPU's klmirqd thread ran as, if any.
    server: Option<Server>,
}

impl PySimResult {
    fn task_stats(&self, i: usize, t: &TaskStats) -> PySimTaskStats {
        PySimTaskStats {
            stats: t.clone(),
            bound: self.bounds.get(i).copied().flatten(),
        }
    }
}

fn series(v: &[UtilizationSeries]) -> Vec<PyUtilizationSeries> {
    v.iter().cloned().map(PyUtilizationSeries).collect()
}

#[pymethods]
impl PySimResult {
    /// Name of the simulated workload.
    #[getter]
    fn workload(&self) -> &str {
        &self.result.workload
    }
    /// CPU scheduler ("P-FP", "C-FP", "G-FP", "C-EDF" or "G-EDF").
    #[getter]
    fn scheduler(&self) -> &str {
        &self.result.scheduler
    }
    /// Jobs were released in [0, duration) (ns).
    #[getter]
    fn duration(&self) -> Time {
        self.result.duration
    }
    /// Virtual time when the run stopped (ns; > duration when draining).
    #[getter]
    fn end(&self) -> Time {
        self.result.end
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.result.seed
    }
    /// Finished jobs over all tasks.
    #[getter]
    fn jobs(&self) -> u64 {
        self.result.jobs
    }
    /// Deadline misses over all tasks.
    #[getter]
    fn misses(&self) -> u64 {
        self.result.misses
    }
    /// Per task, in workload order.
    #[getter]
    fn tasks(&self) -> Vec<PySimTaskStats> {
        self.result
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| self.task_stats(i, t))
            .collect()
    }
    /// Priority-inversion durations (ns), sorted ascending.
    #[getter]
    fn inversions(&self) -> Vec<Time> {
        self.result.inversions.clone()
    }
    /// Utilization of each GPU engine over the run.
    #[getter]
    fn engines(&self) -> Vec<PyUtilizationSeries> {
        series(&self.result.engines)
    }
    /// Utilization of each virtual GPU over the run.
    #[getter]
    fn vgpus(&self) -> Vec<PyUtilizationSeries> {
        series(&self.result.vgpus)
    }
    /// Utilization of each core over the run.
    #[getter]
    fn cores(&self) -> Vec<PyUtilizationSeries> {
        series(&self.result.cores)
    }
    /// Remarks on what was simulated and how.
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.result.notes.clone()
    }
    /// The klmirqd mode asked for: "dependent" or "independent".
    #[getter]
    fn klmirqd(&self) -> &'static str {
        self.klmirqd
    }
    /// The (runtime, period) in ns each GPU's klmirqd thread ran as in
    /// independent mode (the one asked for, or the one sized from the
    /// workload's bottom halves); None when no server ran.
    #[getter]
    fn klmirqd_server(&self) -> Option<(Time, Time)> {
        self.server.map(|s| (s.runtime, s.period))
    }

    /// The statistics of the task named `name`.
    fn task(&self, name: &str) -> PyResult<PySimTaskStats> {
        self.result
            .tasks
            .iter()
            .enumerate()
            .find(|(_, t)| t.name == name)
            .map(|(i, t)| self.task_stats(i, t))
            .ok_or_else(|| {
                pyo3::exceptions::PyKeyError::new_err(format!(
                    "no task named {} in the result",
                    py_str(name)
                ))
            })
    }

    /// One dict per job, in release order (what `rtgpu simulate --csv`
    /// writes): `task` (name), `job`, `release`, `ready`, `start`,
    /// `finish`, `response` (ns; `None` for a job still running at the
    /// end), `deadline_miss`, `tardiness`, `blocking` (ns waiting for GPU
    /// tokens and engine locks) and `gpu` (index, or `None`). Needs
    /// `simulate(record_jobs=True)`; ValueError otherwise. For a DataFrame:
    /// `pandas.DataFrame(result.job_rows())`.
    fn job_rows<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, pyo3::types::PyDict>>> {
        if self.result.records.is_empty() && self.result.jobs > 0 {
            return Err(value_error(
                "no per-job rows: run Workload.simulate(record_jobs=True)",
            ));
        }
        self.result
            .records
            .iter()
            .map(|r| {
                let d = pyo3::types::PyDict::new(py);
                let name = self
                    .result
                    .tasks
                    .get(r.task as usize)
                    .map_or("?", |t| t.name.as_str());
                d.set_item("task", name)?;
                d.set_item("job", r.job)?;
                d.set_item("release", r.release)?;
                d.set_item("ready", r.ready)?;
                d.set_item("start", r.start)?;
                d.set_item("finish", r.finish)?;
                d.set_item("response", r.response)?;
                d.set_item("deadline_miss", r.deadline_miss)?;
                d.set_item("tardiness", r.tardiness)?;
                d.set_item("blocking", r.blocking)?;
                d.set_item("gpu", r.gpu)?;
                Ok(d)
            })
            .collect()
    }

    /// The result as JSON text (the same as `rtgpu simulate --json`).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.result)
            .map_err(|e| value_error(format!("cannot encode the result as JSON: {e}")))
    }

    fn __repr__(&self) -> String {
        let r = &self.result;
        format!(
            "SimResult(workload={}, scheduler={}, duration={}, seed={}, klmirqd='{}', \
             jobs={}, misses={}, tasks={})",
            py_str(&r.workload),
            py_str(&r.scheduler),
            duration_repr(r.duration),
            r.seed,
            self.klmirqd,
            r.jobs,
            r.misses,
            r.tasks.len()
        )
    }
}

/// What one task did in a simulation (times in ns).
#[pyclass(frozen, module = "rtgpu", name = "SimTaskStats")]
pub(crate) struct PySimTaskStats {
    stats: TaskStats,
    bound: Option<Time>,
}

#[pymethods]
impl PySimTaskStats {
    #[getter]
    fn name(&self) -> &str {
        &self.stats.name
    }
    #[getter]
    fn period(&self) -> Time {
        self.stats.period
    }
    #[getter]
    fn deadline(&self) -> Time {
        self.stats.deadline
    }
    #[getter]
    fn uses_gpu(&self) -> bool {
        self.stats.uses_gpu
    }
    /// Finished jobs.
    #[getter]
    fn jobs(&self) -> u64 {
        self.stats.jobs
    }
    /// Jobs released but not finished by the end of the run.
    #[getter]
    fn unfinished(&self) -> u64 {
        self.stats.unfinished
    }
    /// Deadline misses (finished late, or unfinished past the deadline).
    #[getter]
    fn misses(&self) -> u64 {
        self.stats.misses
    }
    /// Longest observed response time, from the nominal release.
    #[getter]
    fn max_response(&self) -> Time {
        self.stats.max_response
    }
    /// Mean observed response time (ns, a float).
    #[getter]
    fn mean_response(&self) -> f64 {
        self.stats.mean_response
    }
    /// Mean response time as % of the period.
    #[getter]
    fn mean_response_pct(&self) -> f64 {
        self.stats.mean_response_pct
    }
    /// Longest response time as % of the period.
    #[getter]
    fn max_response_pct(&self) -> f64 {
        self.stats.max_response_pct
    }
    #[getter]
    fn max_tardiness(&self) -> Time {
        self.stats.max_tardiness
    }
    /// Longest wait for a GPU token or an engine lock.
    #[getter]
    fn max_blocking(&self) -> Time {
        self.stats.max_blocking
    }
    /// GPU migrations of the task's state.
    #[getter]
    fn migrations(&self) -> u64 {
        self.stats.migrations
    }
    /// The analysis bound on the response time (`rtgpu simulate`'s `bound`
    /// column; with klmirqd's independent servers charged), or None where
    /// the analysis gives none.
    #[getter]
    fn bound(&self) -> Option<Time> {
        self.bound
    }

    fn __repr__(&self) -> String {
        let t = &self.stats;
        format!(
            "SimTaskStats(name={}, jobs={}, unfinished={}, misses={}, max_response={}, \
             mean_response_pct={:.1}, bound={}, uses_gpu={})",
            py_str(&t.name),
            t.jobs,
            t.unfinished,
            t.misses,
            duration_repr(t.max_response),
            t.mean_response_pct,
            optional_duration_repr(self.bound),
            py_bool(t.uses_gpu)
        )
    }
}

/// Utilization of one resource (an engine, a vGPU, a core) per time bucket.
#[pyclass(frozen, module = "rtgpu", name = "UtilizationSeries")]
pub(crate) struct PyUtilizationSeries(UtilizationSeries);

#[pymethods]
impl PyUtilizationSeries {
    /// The resource, e.g. "gpu0 exec" or "core 0".
    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }
    /// Length of one bucket (ns).
    #[getter]
    fn bucket(&self) -> Time {
        self.0.bucket
    }
    /// Busy fraction (0..=1) in each bucket, in time order.
    #[getter]
    fn values(&self) -> Vec<f64> {
        self.0.values.clone()
    }
    /// Busy fraction over the whole run.
    #[getter]
    fn mean(&self) -> f64 {
        self.0.mean
    }

    fn __repr__(&self) -> String {
        format!(
            "UtilizationSeries(name={}, bucket={}, buckets={}, mean={:.4})",
            py_str(&self.0.name),
            duration_repr(self.0.bucket),
            self.0.values.len(),
            self.0.mean
        )
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySimResult>()?;
    m.add_class::<PySimTaskStats>()?;
    m.add_class::<PyUtilizationSeries>()?;
    Ok(())
}
