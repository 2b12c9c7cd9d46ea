//! `rtgpu.partition`: bin packing and task splitting onto m cores, optionally
//! with bandwidth servers charged on every core (`servers=`).

use pyo3::prelude::*;

use rtgpu_analysis::partition::{
    self, Failure, FitRule, Heuristic, Order, Partition, Piece, PriorityRule, Unplaced,
};
use rtgpu_analysis::server::Server;
use rtgpu_analysis::{Task, Time};

use crate::args::{self, bad_choice, count, option_name, value_error};
use crate::fp::task_list;
use crate::task::py_bool;
use crate::task::{duration_repr, PyTask};

/// More cores than this is certainly a mistake (and a large allocation).
const MAX_CORES: usize = 1 << 20;

fn parse_order(value: &str) -> PyResult<Order> {
    match option_name(value).as_str() {
        "given" => Ok(Order::Given),
        "decreasing-utilization" | "du" => Ok(Order::DecreasingUtilization),
        "decreasing-size" | "ds" => Ok(Order::DecreasingSize),
        _ => Err(bad_choice(
            "order",
            value,
            &["decreasing-utilization", "decreasing-size", "given"],
        )),
    }
}

fn parse_priority(value: &str) -> PyResult<PriorityRule> {
    match option_name(value).as_str() {
        "dm" | "deadline-monotonic" => Ok(PriorityRule::DeadlineMonotonic),
        "rm" | "rate-monotonic" => Ok(PriorityRule::RateMonotonic),
        "audsley" | "opa" => Ok(PriorityRule::Audsley),
        _ => Err(bad_choice("priority", value, &["dm", "rm", "audsley"])),
    }
}

pub(crate) fn parse_heuristic(
    heuristic: &str,
    order: Option<&str>,
    priority: Option<&str>,
) -> PyResult<Heuristic> {
    let name = option_name(heuristic);
    let rule = match name.as_str() {
        "first-fit" | "ff" => Some(FitRule::FirstFit),
        "best-fit" | "bf" => Some(FitRule::BestFit),
        "worst-fit" | "wf" => Some(FitRule::WorstFit),
        "next-fit" | "nf" => Some(FitRule::NextFit),
        "pdms-hpts" | "pdms-hpts-ds" => None,
        _ => {
            return Err(bad_choice(
                "heuristic",
                heuristic,
                &[
                    "pdms-hpts-ds",
                    "pdms-hpts",
                    "first-fit",
                    "best-fit",
                    "worst-fit",
                    "next-fit",
                ],
            ))
        }
    };
    let order = order.map(parse_order).transpose()?;
    let priority = priority.map(parse_priority).transpose()?;
    if let Some(rule) = rule {
        return Ok(Heuristic::Fit {
            rule,
            order: order.unwrap_or(Order::DecreasingUtilization),
            priority: priority.unwrap_or(PriorityRule::DeadlineMonotonic),
        });
    }
    if priority.is_some_and(|p| p != PriorityRule::DeadlineMonotonic) {
        return Err(value_error(format!(
            "priority: {heuristic} assigns deadline-monotonic priorities on every core \
             (seed 003 §IV); leave priority unset or \"dm\""
        )));
    }
    if name == "pdms-hpts-ds" {
        if order.is_some_and(|o| o != Order::DecreasingSize) {
            return Err(value_error(
                "order: pdms-hpts-ds always takes tasks in decreasing size (seed 003 \
                 Algorithm 2); use heuristic=\"pdms-hpts\" for another order",
            ));
        }
        return Ok(Heuristic::PdmsHptsDs);
    }
    Ok(Heuristic::PdmsHpts {
        order: order.unwrap_or(Order::DecreasingUtilization),
    })
}

fn heuristic_name(h: Heuristic) -> String {
    let order = |o: Order| match o {
        Order::Given => "given",
        Order::DecreasingUtilization => "decreasing-utilization",
        Order::DecreasingSize => "decreasing-size",
    };
    match h {
        Heuristic::Fit {
            rule,
            order: o,
            priority,
        } => {
            let rule = match rule {
                FitRule::FirstFit => "first-fit",
                FitRule::BestFit => "best-fit",
                FitRule::WorstFit => "worst-fit",
                FitRule::NextFit => "next-fit",
            };
            let priority = match priority {
                PriorityRule::DeadlineMonotonic => "dm",
                PriorityRule::RateMonotonic => "rm",
                PriorityRule::Audsley => "audsley",
            };
            format!("{rule} ({}, {priority})", order(o))
        }
        Heuristic::PdmsHpts { order: o } => format!("pdms-hpts ({})", order(o)),
        Heuristic::PdmsHptsDs => "pdms-hpts-ds".to_string(),
    }
}

/// The outcome of `rtgpu.partition`.
#[pyclass(frozen, module = "rtgpu", name = "Partition")]
pub(crate) struct PyPartition {
    result: Partition,
    heuristic: Heuristic,
    /// The bandwidth servers charged on every core.
    servers: Vec<Server>,
}

#[pymethods]
impl PyPartition {
    /// Whether every task was placed (every core then passes exact RTA).
    #[getter]
    fn ok(&self) -> bool {
        self.result.schedulable
    }
    /// The heuristic used, e.g. "pdms-hpts-ds" or "first-fit
    /// (decreasing-utilization, dm)".
    #[getter]
    fn heuristic(&self) -> String {
        heuristic_name(self.heuristic)
    }
    /// Per core, its pieces in priority order (index 0 highest). When
    /// partitioning failed, the state reached at the failure.
    #[getter]
    fn cores(&self) -> Vec<Vec<PyPiece>> {
        self.result
            .cores
            .iter()
            .enumerate()
            .map(|(core, ps)| ps.iter().map(|&piece| PyPiece { piece, core }).collect())
            .collect()
    }
    /// Per input task (list order), the cores of its pieces in execution
    /// order; empty if the task was not placed.
    #[getter]
    fn task_cores(&self) -> Vec<Vec<usize>> {
        self.result.tasks.iter().map(|p| p.cores.to_vec()).collect()
    }
    /// Number of tasks split over more than one core.
    #[getter]
    fn split_tasks(&self) -> usize {
        self.result.split_tasks()
    }
    /// The first task (or remaining piece) that could not be placed.
    #[getter]
    fn unplaced(&self) -> Option<PyUnplaced> {
        self.result.unplaced.map(PyUnplaced)
    }
    /// The bandwidth servers (runtime, period) in ns charged on every core
    /// above every piece; empty when none were given.
    #[getter]
    fn servers(&self) -> Vec<(Time, Time)> {
        self.servers.iter().map(|s| (s.runtime, s.period)).collect()
    }

    /// The pieces of input task `index`, in execution order.
    fn pieces(&self, index: usize) -> PyResult<Vec<PyPiece>> {
        if index >= self.result.tasks.len() {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "index {index} out of range for {} task(s)",
                self.result.tasks.len()
            )));
        }
        let mut out: Vec<PyPiece> = self
            .result
            .cores
            .iter()
            .enumerate()
            .flat_map(|(core, ps)| {
                ps.iter()
                    .filter(|p| p.index == index)
                    .map(move |&piece| PyPiece { piece, core })
            })
            .collect();
        out.sort_by_key(|p| p.piece.piece);
        Ok(out)
    }

    fn __repr__(&self) -> String {
        let r = &self.result;
        let pieces: usize = r.cores.iter().map(Vec::len).sum();
        let mut s = format!(
            "Partition(ok={}, heuristic='{}', cores={}, tasks={}, pieces={}, split_tasks={}",
            py_bool(r.schedulable),
            heuristic_name(self.heuristic),
            r.cores.len(),
            r.tasks.len(),
            pieces,
            r.split_tasks()
        );
        if !self.servers.is_empty() {
            let servers: Vec<String> = self
                .servers
                .iter()
                .map(|s| {
                    format!(
                        "({}, {})",
                        duration_repr(s.runtime),
                        duration_repr(s.period)
                    )
                })
                .collect();
            s += &format!(", servers=[{}]", servers.join(", "));
        }
        if let Some(u) = &r.unplaced {
            s += &format!(", unplaced={}", unplaced_repr(u));
        }
        s + ")"
    }
}

/// One piece of a task on one core (an unsplit task is one piece).
#[pyclass(frozen, module = "rtgpu", name = "Piece")]
pub(crate) struct PyPiece {
    piece: Piece,
    core: usize,
}

#[pymethods]
impl PyPiece {
    /// Position of the task in the input list.
    #[getter]
    fn index(&self) -> usize {
        self.piece.index
    }
    /// The task's `id`.
    #[getter]
    fn id(&self) -> usize {
        self.piece.task
    }
    /// 0 for an unsplit task or a first piece, then 1, 2, ... along the job.
    #[getter]
    fn piece(&self) -> usize {
        self.piece.piece
    }
    /// Core the piece runs on.
    #[getter]
    fn core(&self) -> usize {
        self.core
    }
    /// Execution budget on this core (ns).
    #[getter]
    fn wcet(&self) -> Time {
        self.piece.wcet
    }
    #[getter]
    fn period(&self) -> Time {
        self.piece.period
    }
    /// Deadline from the piece's own release (ns).
    #[getter]
    fn deadline(&self) -> Time {
        self.piece.deadline
    }
    /// Release offset after the job's release (ns).
    #[getter]
    fn offset(&self) -> Time {
        self.piece.offset
    }
    #[getter]
    fn jitter(&self) -> Time {
        self.piece.jitter
    }
    #[getter]
    fn blocking(&self) -> Time {
        self.piece.blocking
    }
    /// Worst-case response time on its core, from the piece's release (ns).
    #[getter]
    fn response_time(&self) -> Time {
        self.piece.response_time
    }

    /// The piece as a task (same id as its task).
    fn as_task(&self) -> PyTask {
        PyTask(self.piece.as_task())
    }

    fn __repr__(&self) -> String {
        let p = &self.piece;
        format!(
            "Piece(index={}, piece={}, core={}, wcet={}, deadline={}, offset={}, response_time={})",
            p.index,
            p.piece,
            self.core,
            duration_repr(p.wcet),
            duration_repr(p.deadline),
            duration_repr(p.offset),
            duration_repr(p.response_time)
        )
    }
}

fn failure_name(f: Failure) -> &'static str {
    match f {
        Failure::Infeasible => "infeasible",
        Failure::NoCoreLeft => "no-core-left",
    }
}

fn unplaced_repr(u: &Unplaced) -> String {
    format!(
        "Unplaced(index={}, piece={}, wcet={}, reason='{}')",
        u.index,
        u.piece,
        duration_repr(u.wcet),
        failure_name(u.reason)
    )
}

/// The task (or remaining piece) that could not be placed.
#[pyclass(frozen, module = "rtgpu", name = "Unplaced")]
pub(crate) struct PyUnplaced(Unplaced);

#[pymethods]
impl PyUnplaced {
    /// Position of the task in the input list.
    #[getter]
    fn index(&self) -> usize {
        self.0.index
    }
    /// The task's `id`.
    #[getter]
    fn id(&self) -> usize {
        self.0.task
    }
    /// The piece left over (0 if the task was never split).
    #[getter]
    fn piece(&self) -> usize {
        self.0.piece
    }
    /// Its remaining execution time (ns).
    #[getter]
    fn wcet(&self) -> Time {
        self.0.wcet
    }
    /// "infeasible" (misses its deadline even alone on a core) or
    /// "no-core-left".
    #[getter]
    fn reason(&self) -> &'static str {
        failure_name(self.0.reason)
    }

    fn __repr__(&self) -> String {
        unplaced_repr(&self.0)
    }
}

#[pyfunction]
#[pyo3(name = "partition", signature = (tasks, cores, heuristic, order, priority, servers = None))]
pub(crate) fn partition_tasks(
    py: Python<'_>,
    #[pyo3(from_py_with = task_list)] tasks: Vec<Task>,
    cores: &Bound<'_, PyAny>,
    heuristic: &str,
    order: Option<&str>,
    priority: Option<&str>,
    servers: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyPartition> {
    let cores: usize = count(cores, "cores")?;
    if cores == 0 || cores > MAX_CORES {
        return Err(value_error(format!(
            "cores must be between 1 and {MAX_CORES}, got {cores}"
        )));
    }
    let heuristic = parse_heuristic(heuristic, order, priority)?;
    let servers = match servers {
        Some(s) if !s.is_none() => args::servers(s, "servers")?,
        _ => Vec::new(),
    };
    let result = py.detach(|| partition::partition_with(&tasks, cores, heuristic, &servers));
    Ok(PyPartition {
        result,
        heuristic,
        servers,
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPartition>()?;
    m.add_class::<PyPiece>()?;
    m.add_class::<PyUnplaced>()?;
    m.add_function(wrap_pyfunction!(partition_tasks, m)?)?;
    Ok(())
}
