//! `rtgpu.gpu_analysis`: the GPU-aware bounds of `rtgpu_analysis::{kfmlp,
//! gpusync, overheads, vgpu}` for sweeps (seed 000 §VII, seed 004 App. A),
//! callable from Dask workers. Every time is integer nanoseconds.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use rtgpu_analysis::gpusync::{self, CopyLocking, GpuSyncConfig, GpuSyncMaxima, GpuSyncRequest};
use rtgpu_analysis::overheads::{
    self, ClusterScheduler, ClusterSpec, GpuTaskSpec, InterruptMethod, KfmlpBound,
};
use rtgpu_analysis::{kfmlp, vgpu, Time};
use rtgpu_model::Overheads;

use crate::args::{bad_choice, count, option_name, value_error};

/// (cpu, gpu, period, deadline, interrupts) of a generated task, ns.
type TaskTuple = (Time, Time, Time, Time, u32);

/// The three k-FMLP bounds of one request (seed 000 App. A).
#[pyclass(frozen, get_all, module = "rtgpu", name = "KfmlpBlocking")]
pub(crate) struct PyKfmlpBlocking {
    /// Theorem 1 (l-aware), ns.
    l_aware: Time,
    /// Theorem 2 (l-oblivious), ns.
    l_oblivious: Time,
    /// Eq. (3) solved exactly, or Theorem 1 when `exact_solved` is false.
    exact: Time,
    exact_solved: bool,
}

#[pymethods]
impl PyKfmlpBlocking {
    fn __repr__(&self) -> String {
        format!(
            "KfmlpBlocking(l_aware={}, l_oblivious={}, exact={}, exact_solved={})",
            self.l_aware,
            self.l_oblivious,
            self.exact,
            if self.exact_solved { "True" } else { "False" }
        )
    }
}

/// GPUSync bounds of one task (seed 004 App. A).
#[pyclass(frozen, get_all, module = "rtgpu", name = "GpuSyncBlocking")]
pub(crate) struct PyGpuSyncBlocking {
    /// Theorem 2, ns.
    token_blocking: Time,
    /// Theorem 1, ns.
    engine_blocking: Time,
    /// Lemma 5, ns.
    token_hold_time: Time,
    /// Theorem 3, ns.
    total: Time,
}

#[pymethods]
impl PyGpuSyncBlocking {
    fn __repr__(&self) -> String {
        format!(
            "GpuSyncBlocking(token_blocking={}, engine_blocking={}, token_hold_time={}, total={})",
            self.token_blocking, self.engine_blocking, self.token_hold_time, self.total
        )
    }
}

/// Outcome of the overhead-aware test on a generated set (seed 000 §VII).
#[pyclass(frozen, get_all, module = "rtgpu", name = "GpuSetResult")]
pub(crate) struct PyGpuSetResult {
    schedulable: bool,
    iterations: u32,
    /// Cluster of every task (two-pass worst fit).
    clusters: Vec<usize>,
    /// Inflated cost of every task, ns.
    inflated_costs: Vec<Time>,
    /// GPU blocking b_i of every task, ns.
    gpu_blocking: Vec<Time>,
    /// H_i (Eq. 11) of every task.
    interrupt_counts: Vec<u64>,
    /// C-EDF tardiness bound per task (None under C-RM or when unbounded).
    tardiness: Vec<Option<Time>>,
    response_times: Vec<Option<Time>>,
    /// Σ inflated utilization per cluster.
    inflated_utilization: Vec<f64>,
}

#[pymethods]
impl PyGpuSetResult {
    fn __repr__(&self) -> String {
        format!(
            "GpuSetResult(schedulable={}, iterations={}, inflated_utilization={:?})",
            if self.schedulable { "True" } else { "False" },
            self.iterations,
            self.inflated_utilization
        )
    }
}

#[pyfunction]
pub(crate) fn kfmlp_blocking(others: Vec<Time>, k: &Bound<'_, PyAny>) -> PyResult<PyKfmlpBlocking> {
    let k: u32 = count(k, "k")?;
    let exact = kfmlp::exact_bound(&others, k);
    Ok(PyKfmlpBlocking {
        l_aware: kfmlp::l_aware_bound(&others, k),
        l_oblivious: kfmlp::l_oblivious_bound(&others, k),
        exact: exact.bound,
        exact_solved: exact.exact,
    })
}

fn copy_locking(value: &str) -> PyResult<CopyLocking> {
    match option_name(value).as_str() {
        "system" | "system-memory" | "sys" => Ok(CopyLocking::SystemMemory),
        "dgl" => Ok(CopyLocking::Dgl),
        "nested" | "nest" => Ok(CopyLocking::Nested),
        _ => Err(bad_choice(
            "copy_locking",
            value,
            &["system-memory", "dgl", "nested"],
        )),
    }
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn gpusync_blocking(
    cpus: &Bound<'_, PyAny>,
    gpus: &Bound<'_, PyAny>,
    rho: &Bound<'_, PyAny>,
    copy_locking_name: &str,
    copy_requests: Vec<u64>,
    exec_requests: Vec<u64>,
    copy_max: Time,
    exec_max: Time,
    cpu_max: Time,
) -> PyResult<Vec<PyGpuSyncBlocking>> {
    if copy_requests.len() != exec_requests.len() {
        return Err(value_error(format!(
            "copy_requests and exec_requests must have the same length, got {} and {}",
            copy_requests.len(),
            exec_requests.len()
        )));
    }
    let rho: u32 = count(rho, "rho")?;
    if rho == 0 {
        return Err(value_error("rho must be >= 1"));
    }
    let cfg = GpuSyncConfig {
        cpus: count(cpus, "cpus")?,
        gpus: count(gpus, "gpus")?,
        rho,
        copy_locking: copy_locking(copy_locking_name)?,
    };
    let reqs: Vec<GpuSyncRequest> = copy_requests
        .iter()
        .zip(&exec_requests)
        .map(|(&c, &e)| GpuSyncRequest {
            copy_requests: c,
            exec_requests: e,
        })
        .collect();
    let max = GpuSyncMaxima {
        copy: copy_max,
        exec: exec_max,
        cpu: cpu_max,
    };
    Ok(gpusync::total_blocking(&cfg, &reqs, &max)
        .into_iter()
        .map(|b| PyGpuSyncBlocking {
            token_blocking: b.token_blocking,
            engine_blocking: b.engine_blocking,
            token_hold_time: b.token_hold_time,
            total: b.total,
        })
        .collect())
}

#[pyfunction]
pub(crate) fn gpusync_best_rho(
    cpus: &Bound<'_, PyAny>,
    gpus: &Bound<'_, PyAny>,
    copy_locking_name: &str,
    max_rho: &Bound<'_, PyAny>,
) -> PyResult<(u32, u64)> {
    Ok(gpusync::best_rho(
        count(cpus, "cpus")?,
        count(gpus, "gpus")?,
        copy_locking(copy_locking_name)?,
        count(max_rho, "max_rho")?,
    ))
}

#[pyfunction]
pub(crate) fn gpusync_copy_requests(transfers: Vec<u64>, chunk: Option<u64>) -> u64 {
    gpusync::copy_requests(&transfers, chunk)
}

fn method(value: &str) -> PyResult<InterruptMethod> {
    match option_name(value).as_str() {
        "slih" => Ok(InterruptMethod::Slih),
        "klmirqd" => Ok(InterruptMethod::Klmirqd),
        "pai" => Ok(InterruptMethod::Pai),
        "threads" | "fixed-priority-threads" => Ok(InterruptMethod::FixedPriorityThreads),
        _ => Err(bad_choice(
            "method",
            value,
            &["slih", "klmirqd", "pai", "threads"],
        )),
    }
}

/// Table III, or zero, with per-field overrides in ns.
fn overheads_from(base: &str, overrides: Option<&Bound<'_, PyDict>>) -> PyResult<Overheads> {
    let mut o = match option_name(base).as_str() {
        "table3" | "table-iii" | "seed000" => Overheads::default(),
        "zero" | "none" => Overheads::zero(),
        _ => return Err(bad_choice("base", base, &["table3", "zero"])),
    };
    if let Some(d) = overrides {
        for (k, v) in d.iter() {
            let key: String = k.extract()?;
            let arg = format!("overheads[{key:?}]");
            let v: Time = count(&v, &arg)?;
            let slot = match key.as_str() {
                "sch" => &mut o.sch,
                "cxs" => &mut o.cxs,
                "ipi" => &mut o.ipi,
                "rel" => &mut o.rel,
                "th" => &mut o.th,
                "bh" => &mut o.bh,
                "krel" => &mut o.krel,
                "paisch" => &mut o.paisch,
                "pairel" => &mut o.pairel,
                "tck" => &mut o.tck,
                "quantum" => &mut o.quantum,
                _ => {
                    return Err(bad_choice(
                        "overheads key",
                        &key,
                        &[
                            "sch", "cxs", "ipi", "rel", "th", "bh", "krel", "paisch", "pairel",
                            "tck", "quantum",
                        ],
                    ))
                }
            };
            *slot = v;
        }
    }
    Ok(o)
}

/// Tasks as (cpu, gpu, period, deadline, interrupts) tuples.
#[pyfunction]
#[pyo3(signature = (tasks, clusters, scheduler="c-edf", method_name="klmirqd", base="table3", overheads=None, bound="exact"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn overhead_aware_test(
    py: Python<'_>,
    tasks: Vec<TaskTuple>,
    clusters: Vec<(u32, u32)>,
    scheduler: &str,
    method_name: &str,
    base: &str,
    overheads: Option<&Bound<'_, PyDict>>,
    bound: &str,
) -> PyResult<PyGpuSetResult> {
    let scheduler = match option_name(scheduler).as_str() {
        "c-edf" | "cedf" | "edf" => ClusterScheduler::CEdf,
        "c-rm" | "crm" | "rm" => ClusterScheduler::CRm,
        _ => return Err(bad_choice("scheduler", scheduler, &["c-edf", "c-rm"])),
    };
    let bound = match option_name(bound).as_str() {
        "exact" | "ilp" => KfmlpBound::Exact,
        "l-aware" | "theorem-1" => KfmlpBound::LAware,
        "l-oblivious" | "theorem-2" => KfmlpBound::LOblivious,
        _ => {
            return Err(bad_choice(
                "bound",
                bound,
                &["exact", "l-aware", "l-oblivious"],
            ))
        }
    };
    let method = method(method_name)?;
    let o = overheads_from(base, overheads)?;
    let mut specs = Vec::with_capacity(tasks.len());
    for (i, &(cpu, gpu, period, deadline, interrupts)) in tasks.iter().enumerate() {
        if period == 0 || deadline == 0 {
            return Err(value_error(format!(
                "tasks[{i}]: period and deadline must be > 0 ns"
            )));
        }
        specs.push(GpuTaskSpec {
            cpu,
            gpu,
            period,
            deadline,
            interrupts,
        });
    }
    let cl: Vec<ClusterSpec> = clusters
        .iter()
        .map(|&(cpus, gpus)| ClusterSpec { cpus, gpus })
        .collect();
    let r = py.detach(|| overheads::soft_test(&specs, &cl, scheduler, method, &o, bound));
    Ok(PyGpuSetResult {
        schedulable: r.schedulable,
        iterations: r.iterations,
        clusters: r.tasks.iter().map(|t| t.cluster).collect(),
        inflated_costs: r.tasks.iter().map(|t| t.charges.total).collect(),
        gpu_blocking: r.tasks.iter().map(|t| t.charges.gpu_blocking).collect(),
        interrupt_counts: r.tasks.iter().map(|t| t.charges.interrupt_count).collect(),
        tardiness: r.tasks.iter().map(|t| t.tardiness).collect(),
        response_times: r.tasks.iter().map(|t| t.response_time).collect(),
        inflated_utilization: r.inflated_utilization,
    })
}

/// Effective utilization with speed-up R of (cpu, gpu, period) triples.
#[pyfunction]
pub(crate) fn effective_utilization(tasks: Vec<(Time, Time, Time)>, speedup: f64) -> PyResult<f64> {
    crate::args::non_negative_float(speedup, "speedup")?;
    let specs: Vec<GpuTaskSpec> = tasks
        .iter()
        .map(|&(cpu, gpu, period)| GpuTaskSpec {
            cpu,
            gpu,
            period: period.max(1),
            deadline: period.max(1),
            interrupts: 0,
        })
        .collect();
    Ok(overheads::effective_utilization(&specs, speedup))
}

/// Seed 000 §VII random task set as (cpu, gpu, period, deadline, interrupts)
/// tuples (defaults: Fig. 5's parameters).
#[pyfunction]
#[pyo3(signature = (seed, utilization, interrupts=3, task_utilization=(0.5, 0.9), gpu_fraction=(0.5, 0.6), gpu_share=0.75, period=(15_000_000, 60_000_000)))]
pub(crate) fn seed000_task_set(
    seed: u64,
    utilization: f64,
    interrupts: u32,
    task_utilization: (f64, f64),
    gpu_fraction: (f64, f64),
    gpu_share: f64,
    period: (Time, Time),
) -> PyResult<Vec<TaskTuple>> {
    crate::args::non_negative_float(utilization, "utilization")?;
    let (lo, hi) = task_utilization;
    if !(lo > 0.0 && lo <= hi && hi <= 1.0) {
        return Err(value_error(format!(
            "task_utilization must satisfy 0 < lo <= hi <= 1, got ({lo}, {hi})"
        )));
    }
    let (flo, fhi) = gpu_fraction;
    if !((0.0..=1.0).contains(&gpu_share) && 0.0 <= flo && flo <= fhi && fhi <= 1.0) {
        return Err(value_error(
            "gpu_share and gpu_fraction must lie in [0, 1] (gpu_fraction as lo <= hi)",
        ));
    }
    if period.0 == 0 || period.0 > period.1 {
        return Err(value_error("period must be (lo, hi) with 0 < lo <= hi ns"));
    }
    let p = overheads::Seed000SetParams {
        utilization,
        task_utilization,
        gpu_fraction,
        gpu_share,
        interrupts,
        period,
    };
    let mut rng = rtgpu_analysis::generate::Rng::new(seed);
    Ok(overheads::seed000_task_set(&mut rng, &p)
        .into_iter()
        .map(|t| (t.cpu, t.gpu, t.period, t.deadline, t.interrupts))
        .collect())
}

/// vGPU GPU-response bound t(W) (own derivation, see docs/seeds/001).
#[pyfunction]
pub(crate) fn vgpu_service_time(
    budget: Time,
    period: Time,
    work: Time,
    other_op: Time,
) -> Option<Time> {
    vgpu::service_time(&vgpu::Reservation { budget, period }, work, other_op)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyKfmlpBlocking>()?;
    m.add_class::<PyGpuSyncBlocking>()?;
    m.add_class::<PyGpuSetResult>()?;
    m.add_function(wrap_pyfunction!(kfmlp_blocking, m)?)?;
    m.add_function(wrap_pyfunction!(gpusync_blocking, m)?)?;
    m.add_function(wrap_pyfunction!(gpusync_best_rho, m)?)?;
    m.add_function(wrap_pyfunction!(gpusync_copy_requests, m)?)?;
    m.add_function(wrap_pyfunction!(overhead_aware_test, m)?)?;
    m.add_function(wrap_pyfunction!(effective_utilization, m)?)?;
    m.add_function(wrap_pyfunction!(vgpu_service_time, m)?)?;
    m.add_function(wrap_pyfunction!(seed000_task_set, m)?)?;
    Ok(())
}
