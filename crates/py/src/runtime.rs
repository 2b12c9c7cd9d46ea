//! `rtgpu.runtime`: the in-process GPU arbiter for Python threads (issue 5's
//! Python client API). A thread registers with its base SCHED_FIFO priority,
//! then takes a GPU token and engine locks in `with` blocks around its own
//! GPU calls (PyTorch, CuPy, ...):
//!
//! ```python
//! arb = rtgpu.runtime.Arbiter(gpus=1, copy_engines=2)
//! me = arb.register(priority=50)
//! with me.token(hold="5 ms") as tok:
//!     with tok.copy_in():
//!         x = cupy.asarray(frame)
//!     with tok.exec_engine():
//!         y = model(x); cupy.cuda.get_current_stream().synchronize()
//!     with tok.copy_out():
//!         out = y.get()
//! ```
//!
//! Every blocking wait releases the GIL. Leaving a `with` block releases what
//! it holds, also on an exception; so does garbage collection of a guard.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use rtgpu_runtime::arbiter::{
    Arbiter, ArbiterConfig, Client, Engine, EngineGuard, EventKind, QueueRule, TokenConfig,
    TokenGuard,
};

use crate::args::{bad_choice, value_error};

fn runtime_error(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// Time in ns from an int, a string with a unit ("5 ms") or a timedelta.
fn nanos(v: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    crate::args::duration(v, what)
}

/// The arbiter: GPU tokens and engine locks for the threads of this process.
#[pyclass(frozen, module = "rtgpu.runtime", name = "Arbiter")]
pub(crate) struct PyArbiter {
    inner: Arc<Arbiter>,
    gpus: usize,
}

#[pymethods]
impl PyArbiter {
    #[new]
    #[pyo3(signature = (gpus=1, copy_engines=2, tokens_per_gpu=2, allocator="gpusync", engine_locks=true, inherit=true))]
    fn new(
        gpus: usize,
        copy_engines: u8,
        tokens_per_gpu: usize,
        allocator: &str,
        engine_locks: bool,
        inherit: bool,
    ) -> PyResult<Self> {
        if gpus == 0 {
            return Err(value_error("gpus must be at least 1"));
        }
        if !(1..=2).contains(&copy_engines) {
            return Err(value_error("copy_engines must be 1 or 2"));
        }
        if tokens_per_gpu == 0 {
            return Err(value_error("tokens_per_gpu must be at least 1"));
        }
        let (rule, stealing) = match allocator {
            "gpusync" => (QueueRule::EarliestCompletion, false),
            "shortest-queue" => (QueueRule::ShortestQueue, false),
            "k-fmlp" => (QueueRule::LAware, true),
            "static" => (QueueRule::Static, false),
            other => {
                return Err(bad_choice(
                    "allocator",
                    other,
                    &["gpusync", "shortest-queue", "k-fmlp", "static"],
                ))
            }
        };
        let inner = Arbiter::new(&ArbiterConfig {
            copy_engines: vec![copy_engines; gpus],
            tokens: TokenConfig {
                gpus,
                tokens_per_gpu,
                rule,
                stealing,
            },
            distance: Vec::new(),
            engine_locks,
            apply_priorities: inherit,
            priors: Vec::new(),
        });
        Ok(PyArbiter { inner, gpus })
    }

    /// Registers the calling thread with base SCHED_FIFO `priority` (1-99):
    /// the priority it inherits from and is restored to.
    #[pyo3(signature = (priority=50))]
    fn register(&self, priority: u8) -> PyResult<PyClient> {
        if !(1..=99).contains(&priority) {
            return Err(value_error("priority must be a SCHED_FIFO priority 1..=99"));
        }
        let c = self.inner.register(priority).map_err(runtime_error)?;
        Ok(PyClient {
            inner: c,
            gpus: self.gpus,
        })
    }

    /// Number of token and lock hand-offs recorded so far (and clears the log).
    fn take_handoffs(&self) -> Vec<(u64, u32, String)> {
        self.inner
            .take_events()
            .into_iter()
            .map(|e| {
                let what = match e.what {
                    EventKind::TokenRequested { gpu } => format!("token-requested gpu={gpu}"),
                    EventKind::TokenGranted { gpu, token } => {
                        format!("token-granted gpu={gpu} token={token}")
                    }
                    EventKind::TokenReleased { token } => format!("token-released token={token}"),
                    EventKind::LockRequested { lock } => format!("lock-requested lock={lock}"),
                    EventKind::LockGranted { lock } => format!("lock-granted lock={lock}"),
                    EventKind::LockReleased { lock } => format!("lock-released lock={lock}"),
                    EventKind::PriorityChanged { fifo } => format!("priority fifo={fifo}"),
                };
                (e.at, e.job, what)
            })
            .collect()
    }

    /// Priority changes the OS refused (no real-time privilege), in words.
    fn apply_errors(&self) -> Vec<String> {
        self.inner.apply_errors()
    }

    fn __repr__(&self) -> String {
        format!("Arbiter(gpus={})", self.gpus)
    }
}

/// A registered thread.
#[pyclass(frozen, module = "rtgpu.runtime", name = "Client")]
pub(crate) struct PyClient {
    inner: Client,
    gpus: usize,
}

#[pymethods]
impl PyClient {
    /// A GPU token as a context manager: `with client.token(hold="5 ms") as
    /// tok:`. `hold` is the worst-case time the token is held (the
    /// allocator's queue choice uses it); `task` names the task for the cost
    /// predictor; `last_gpu` where its state lives; `gpu` the GPU for the
    /// static allocator.
    #[pyo3(signature = (hold=None, task=0, last_gpu=None, gpu=0))]
    fn token(
        &self,
        hold: Option<&Bound<'_, PyAny>>,
        task: usize,
        last_gpu: Option<usize>,
        gpu: usize,
    ) -> PyResult<PyToken> {
        for (name, g) in [("last_gpu", last_gpu), ("gpu", Some(gpu))] {
            if let Some(g) = g.filter(|&g| g >= self.gpus) {
                return Err(value_error(format!(
                    "{name} {g} is out of range: the arbiter has {} GPU(s)",
                    self.gpus
                )));
            }
        }
        let hold = match hold {
            Some(h) => nanos(h, "hold")?,
            None => 1,
        };
        Ok(PyToken {
            client: self.inner.clone(),
            request: (task, hold, last_gpu, gpu),
            guard: Mutex::new(None),
        })
    }

    fn __repr__(&self) -> String {
        format!("Client(job={})", self.inner.job())
    }
}

/// A GPU token request; held inside its `with` block.
#[pyclass(frozen, module = "rtgpu.runtime", name = "Token")]
pub(crate) struct PyToken {
    client: Client,
    request: (usize, u64, Option<usize>, usize),
    guard: Mutex<Option<Arc<TokenGuard>>>,
}

fn poisoned<T>(_: T) -> PyErr {
    runtime_error("a guard's lock was poisoned by a panicking thread")
}

impl PyToken {
    fn held(&self) -> PyResult<Arc<TokenGuard>> {
        let g = self.guard.lock().map_err(poisoned)?;
        g.clone()
            .ok_or_else(|| runtime_error("the token is not held: use it in a `with` block"))
    }

    fn engine_request(
        &self,
        wanted: impl FnOnce(usize) -> Vec<(usize, Engine)>,
    ) -> PyResult<PyEngine> {
        let gpu = self.held()?.gpu();
        Ok(PyEngine {
            token: Mutex::new(Some(self.held()?)),
            wanted: wanted(gpu),
            guard: Mutex::new(None),
        })
    }
}

#[pymethods]
impl PyToken {
    fn __enter__<'py>(slf: Bound<'py, Self>, py: Python<'py>) -> PyResult<Bound<'py, Self>> {
        {
            let me = slf.get();
            let (task, hold, last, gpu) = me.request;
            let client = me.client.clone();
            let guard = py
                .detach(move || client.token(task, hold, last, gpu))
                .map_err(runtime_error)?;
            *me.guard.lock().map_err(poisoned)? = Some(Arc::new(guard));
        }
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        let g = self.guard.lock().map_err(poisoned)?.take();
        py.detach(move || drop(g));
        Ok(false)
    }

    /// The GPU the held token is for.
    #[getter]
    fn gpu(&self) -> PyResult<usize> {
        Ok(self.held()?.gpu())
    }

    /// The execution engine of the token's GPU, as a context manager.
    fn exec_engine(&self) -> PyResult<PyEngine> {
        self.engine_request(|gpu| vec![(gpu, Engine::Exec)])
    }

    /// The host-to-device copy engine, as a context manager (hold it per
    /// chunk of a chunked copy, seed 004 §4.3).
    fn copy_in(&self) -> PyResult<PyEngine> {
        self.engine_request(|gpu| vec![(gpu, Engine::CopyIn)])
    }

    /// The device-to-host copy engine, as a context manager.
    fn copy_out(&self) -> PyResult<PyEngine> {
        self.engine_request(|gpu| vec![(gpu, Engine::CopyOut)])
    }

    /// Both copy locks of a peer copy from GPU `src` to this token's GPU,
    /// taken atomically (a dynamic group lock, seed 004 §4.3).
    fn peer_copy(&self, src: usize) -> PyResult<PyEngine> {
        self.engine_request(|gpu| vec![(src, Engine::CopyOut), (gpu, Engine::CopyIn)])
    }
}

/// An engine lock request; held inside its `with` block.
#[pyclass(frozen, module = "rtgpu.runtime", name = "EngineLock")]
pub(crate) struct PyEngine {
    /// The token it was requested under, until the lock is acquired.
    token: Mutex<Option<Arc<TokenGuard>>>,
    wanted: Vec<(usize, Engine)>,
    guard: Mutex<Option<EngineGuard>>,
}

#[pymethods]
impl PyEngine {
    fn __enter__<'py>(slf: Bound<'py, Self>, py: Python<'py>) -> PyResult<Bound<'py, Self>> {
        {
            let me = slf.get();
            let token = me
                .token
                .lock()
                .map_err(poisoned)?
                .take()
                .ok_or_else(|| runtime_error("an engine lock can be entered only once"))?;
            let wanted = me.wanted.clone();
            let guard = py
                .detach(move || token.locks(&wanted))
                .map_err(runtime_error)?;
            *me.guard.lock().map_err(poisoned)? = Some(guard);
        }
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        let g = self.guard.lock().map_err(poisoned)?.take();
        py.detach(move || drop(g));
        Ok(false)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyArbiter>()?;
    m.add_class::<PyClient>()?;
    m.add_class::<PyToken>()?;
    m.add_class::<PyEngine>()?;
    Ok(())
}
