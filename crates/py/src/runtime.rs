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
//!
//! Cross-process mode: `rtgpu.runtime.connect(socket)` registers the calling
//! thread with `rtgpu daemon` instead and returns the same `Client` type;
//! `rtgpu.runtime.Daemon` serves the arbiter from this process.

use std::sync::{Arc, Mutex, Weak};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use rtgpu_runtime::arbiter::{Arbiter, ArbiterConfig, Engine, EventKind};
use rtgpu_runtime::client::{AnyClient, AnyLock, AnyToken};

use crate::args::value_error;

fn runtime_error(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// Time in ns from an int, a string with a unit ("5 ms") or a timedelta.
fn nanos(v: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    crate::args::duration(v, what)
}

/// The arbiter settings shared by [`PyArbiter`] and [`PyDaemon`], checked.
fn arbiter_config(
    gpus: usize,
    copy_engines: u8,
    tokens_per_gpu: usize,
    allocator: &str,
    engine_locks: bool,
    inherit: bool,
) -> PyResult<ArbiterConfig> {
    ArbiterConfig::uniform(
        gpus,
        u64::from(copy_engines),
        tokens_per_gpu,
        allocator,
        engine_locks,
        inherit,
    )
    .map_err(|e| value_error(e.to_string()))
}

fn fifo(priority: u8) -> PyResult<u8> {
    if (1..=99).contains(&priority) {
        Ok(priority)
    } else {
        Err(value_error("priority must be a SCHED_FIFO priority 1..=99"))
    }
}

/// The arbiter: GPU tokens and engine locks for the threads of this process.
#[pyclass(frozen, module = "rtgpu.runtime", name = "Arbiter")]
pub(crate) struct PyArbiter {
    inner: Arc<Arbiter>,
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
        let config = arbiter_config(
            gpus,
            copy_engines,
            tokens_per_gpu,
            allocator,
            engine_locks,
            inherit,
        )?;
        Ok(PyArbiter {
            inner: Arbiter::new(&config),
        })
    }

    /// Registers the calling thread with base SCHED_FIFO `priority` (1-99):
    /// the priority it inherits from and is restored to.
    #[pyo3(signature = (priority=50))]
    fn register(&self, priority: u8) -> PyResult<PyClient> {
        let c = AnyClient::local(&self.inner, fifo(priority)?).map_err(runtime_error)?;
        Ok(PyClient { inner: c })
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
        format!("Arbiter(gpus={})", self.inner.gpus())
    }
}

/// A registered thread (of an in-process arbiter or of the daemon).
#[pyclass(frozen, module = "rtgpu.runtime", name = "Client")]
pub(crate) struct PyClient {
    inner: AnyClient,
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
        self.inner
            .check_gpu("gpu", gpu)
            .map_err(|e| value_error(e.to_string()))?;
        if let Some(g) = last_gpu {
            self.inner
                .check_gpu("last_gpu", g)
                .map_err(|e| value_error(e.to_string()))?;
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

    /// The number of GPUs the arbiter manages.
    #[getter]
    fn gpus(&self) -> usize {
        self.inner.gpus()
    }

    fn __repr__(&self) -> String {
        let mode = match self.inner {
            AnyClient::Local { .. } => "in-process",
            AnyClient::Remote(_) => "daemon",
        };
        format!("Client(job={}, {mode})", self.inner.job())
    }
}

/// A GPU token request; held inside its `with` block.
#[pyclass(frozen, module = "rtgpu.runtime", name = "Token")]
pub(crate) struct PyToken {
    client: AnyClient,
    request: (usize, u64, Option<usize>, usize),
    guard: Mutex<Option<Arc<AnyToken>>>,
}

fn poisoned<T>(_: T) -> PyErr {
    runtime_error("a guard's lock was poisoned by a panicking thread")
}

/// `__exit__` of a token or an engine lock: drops what is held (the
/// release may wake another thread, so without the GIL).
fn release_held<T: Send>(py: Python<'_>, held: &Mutex<Option<T>>) -> PyResult<bool> {
    let g = held.lock().map_err(poisoned)?.take();
    py.detach(move || drop(g));
    Ok(false)
}

impl PyToken {
    fn held(&self) -> PyResult<Arc<AnyToken>> {
        let g = self.guard.lock().map_err(poisoned)?;
        g.clone()
            .ok_or_else(|| runtime_error("the token is not held: use it in a `with` block"))
    }

    fn engine_request(
        &self,
        wanted: impl FnOnce(usize) -> Vec<(usize, Engine)>,
    ) -> PyResult<PyEngine> {
        let held = self.held()?;
        Ok(PyEngine {
            token: Mutex::new(Some(Arc::downgrade(&held))),
            wanted: wanted(held.gpu()),
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
        release_held(py, &self.guard)
    }

    /// The GPU the held token is for.
    #[getter]
    fn gpu(&self) -> PyResult<usize> {
        Ok(self.held()?.gpu())
    }

    /// The execution engine of the token's GPU, as a context manager. Enter
    /// it inside the token's `with` block: once the token is released,
    /// entering it raises RuntimeError.
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
    /// The token it was requested under, until the lock is acquired: not
    /// kept alive by the request (a token released at the end of its
    /// `with` block is released, and an engine lock through it refused).
    token: Mutex<Option<Weak<AnyToken>>>,
    wanted: Vec<(usize, Engine)>,
    /// The lock, and the token it was taken under, kept until the lock is
    /// released (the lock goes first).
    guard: Mutex<Option<(AnyLock, Arc<AnyToken>)>>,
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
                .ok_or_else(|| runtime_error("an engine lock can be entered only once"))?
                .upgrade()
                .ok_or_else(|| {
                    runtime_error(
                        "the token this engine lock was requested under has been released: \
                         take engine locks inside the token's `with` block",
                    )
                })?;
            let wanted = me.wanted.clone();
            let guard = py.detach(|| token.locks(&wanted)).map_err(runtime_error)?;
            *me.guard.lock().map_err(poisoned)? = Some((guard, token));
        }
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        release_held(py, &self.guard)
    }
}

/// Registers the calling thread with `rtgpu daemon` at `socket` (default
/// /tmp/rtgpud.sock) with base SCHED_FIFO `priority`: a `Client` whose
/// tokens and engine locks the daemon arbitrates between processes. If
/// this process dies, the daemon releases what it held at once.
#[pyfunction]
#[pyo3(signature = (socket=None, priority=50))]
fn connect(py: Python<'_>, socket: Option<PathBuf>, priority: u8) -> PyResult<PyClient> {
    let path = socket.unwrap_or_else(|| PathBuf::from(rtgpu_runtime::daemon::DEFAULT_SOCKET));
    let prio = fifo(priority)?;
    let c = py
        .detach(|| AnyClient::connect(&path, prio))
        .map_err(|e| runtime_error(format!("{}: {e}", path.display())))?;
    Ok(PyClient { inner: c })
}

/// The cross-process arbiter served from this process on a Unix socket
/// (what `rtgpu daemon` runs), on a background thread until `stop()` or the
/// end of a `with` block. `spin_cpu=N`: poll without sleeping, pinned to
/// CPU N (`rtgpu daemon --spin --cpu N`). As `rtgpu daemon`, it refuses a
/// socket another daemon serves and any existing file at `socket` but a
/// stale socket (RuntimeError).
#[pyclass(module = "rtgpu.runtime", name = "Daemon")]
pub(crate) struct PyDaemon {
    socket: PathBuf,
    running: Option<rtgpu_runtime::daemon::Spawned>,
}

#[pymethods]
impl PyDaemon {
    #[new]
    #[pyo3(signature = (socket, gpus=1, copy_engines=2, tokens_per_gpu=2, allocator="gpusync", engine_locks=true, inherit=true, spin_cpu=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        socket: PathBuf,
        gpus: usize,
        copy_engines: u8,
        tokens_per_gpu: usize,
        allocator: &str,
        engine_locks: bool,
        inherit: bool,
        spin_cpu: Option<usize>,
    ) -> PyResult<Self> {
        let config = arbiter_config(
            gpus,
            copy_engines,
            tokens_per_gpu,
            allocator,
            engine_locks,
            inherit,
        )?;
        if inherit {
            // As `rtgpu daemon` says at start: inheritance needs the
            // privilege to change other processes' scheduling.
            let caps = rtgpu_runtime::os::probe_capabilities();
            if let Some(why) = caps.reason {
                let msg = std::ffi::CString::new(format!(
                    "rtgpu Daemon: priority inheritance cannot be applied to clients: {why}"
                ))
                .unwrap_or_default();
                let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
                PyErr::warn(py, &category, &msg, 1)?;
            }
        }
        let waiting = match spin_cpu {
            Some(cpu) => rtgpu_runtime::daemon::Waiting::Spin { cpu: Some(cpu) },
            None => rtgpu_runtime::daemon::Waiting::Sleep,
        };
        let running = rtgpu_runtime::daemon::spawn_with(&socket, config, waiting)
            .map_err(|e| runtime_error(format!("{}: {e}", socket.display())))?;
        Ok(PyDaemon {
            socket,
            running: Some(running),
        })
    }

    /// The socket clients connect to.
    #[getter]
    fn socket(&self) -> String {
        self.socket.display().to_string()
    }

    /// Stops serving; returns the run's statistics as a dict (clients,
    /// crashed_clients, token_grants, lock_grants, direct_handoffs: grants
    /// the releasing client made itself, handoff_mismatches: always 0
    /// unless there is a bug, apply_errors: inherited priorities the OS
    /// refused to apply).
    fn stop(&mut self, py: Python<'_>) -> PyResult<std::collections::HashMap<&'static str, u64>> {
        let (flag, thread) = self
            .running
            .take()
            .ok_or_else(|| runtime_error("the daemon was already stopped"))?;
        flag.store(true, Ordering::Relaxed);
        let s = py
            .detach(move || thread.join())
            .map_err(|_| runtime_error("the daemon thread panicked"))?
            .map_err(runtime_error)?;
        Ok([
            ("clients", s.clients),
            ("crashed_clients", s.crashed_clients),
            ("token_grants", s.token_grants),
            ("lock_grants", s.lock_grants),
            ("direct_handoffs", s.direct_handoffs),
            ("handoff_mismatches", s.handoff_mismatches),
            ("apply_errors", s.apply_errors),
            ("disconnected", s.disconnected),
        ]
        .into_iter()
        .collect())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        if self.running.is_some() {
            self.stop(py)?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.running.is_some() {
            "serving"
        } else {
            "stopped"
        };
        format!("Daemon({:?}, {state})", self.socket.display().to_string())
    }
}

impl Drop for PyDaemon {
    fn drop(&mut self) {
        if let Some((flag, thread)) = self.running.take() {
            flag.store(true, Ordering::Relaxed);
            let _ = thread.join();
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(connect, m)?)?;
    m.add_class::<PyDaemon>()?;
    m.add_class::<PyArbiter>()?;
    m.add_class::<PyClient>()?;
    m.add_class::<PyToken>()?;
    m.add_class::<PyEngine>()?;
    Ok(())
}
