//! klmirqd's completion threads in user space (seed 000 §III-IV).
//!
//! A GPU operation is split the way seed 000 splits an interrupt:
//!
//! - **Top half** (device side): the backend signals that the operation
//!   has completed ([`crate::gpu::OnDone`]: an emulated engine thread, or
//!   the CUDA driver's host-function thread after the operation's end
//!   event). It only marks the operation done and rings the GPU's
//!   completion thread: the `Δth + Δkrel` of seed 000 App. B (Eqs. 14-15).
//! - **Bottom half** (the completion thread of that GPU): the timing
//!   bookkeeping (the event-measured device time), any user callback, and
//!   waking the owner: the `Δbh` of App. B, which App. B charges to the
//!   owner's critical section (it is part of `s_i`, see
//!   docs/seeds/000-klmirqd.md).
//!
//! One thread per GPU (seed 000 §IV, "klmirqd Dispatch"), named
//! `klmirqd/gpuN`, in one of two modes (§III):
//!
//! - **Dependent** ([`Mode::Dependent`]): the thread runs at the effective
//!   priority (including inherited priority, §IV "Owner Identification")
//!   of the GPU's owner. The arbiter sets it through
//!   [`CompletionThread::follower`] on every change of ownership or
//!   inheritance, the same path that applies inheritance to job threads and
//!   mirrors it onto `irq/N-nvidia`; with the GPU idle it is back at its idle
//!   policy. The owner never runs beside its completion work (§III): the
//!   owner submits, then sleeps on a futex word of its own until the
//!   completion thread has finished the bottom half and written the result.
//! - **Independent** ([`Mode::Independent`]): the thread is a bandwidth
//!   server, SCHED_DEADLINE with the configured runtime and period (a CBS,
//!   seed 001 §III-D). Where the kernel refuses SCHED_DEADLINE it falls back
//!   to SCHED_FIFO (no bandwidth limit) or SCHED_OTHER and
//!   [`CompletionThread::mode_report`] says so.
//!
//! Completions are taken in the order the device signalled them, not the
//! order they were submitted, so with several owners of one GPU (ρ > 1
//! tokens) a long kernel does not hold up the completion of a short copy
//! submitted after it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::PriorityFollower;
use crate::futex::{self, Scope};
use crate::gpu::{GpuBackend, GpuError, GpuOp, InFlight};
use crate::os::{self, monotonic_now, thread_cpu_time, Nanos, OsError, SchedPolicy};

/// The bandwidth server of the independent mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerConfig {
    /// CPU time the server may use per period (SCHED_DEADLINE runtime).
    pub runtime: Nanos,
    /// Its period (and relative deadline).
    pub period: Nanos,
    /// SCHED_FIFO priority to fall back to where SCHED_DEADLINE is refused
    /// (50: what the kernel gives threaded interrupt handlers).
    pub fallback_fifo: u8,
}

impl ServerConfig {
    /// The server [`rtgpu_analysis::workload::bottom_half_server`] sizes
    /// for a workload's bottom halves (the analysis and the simulator use
    /// the same), falling back to SCHED_FIFO 50. `None` when no task uses
    /// a GPU.
    pub fn for_workload(w: &rtgpu_model::Workload) -> Option<ServerConfig> {
        let s = rtgpu_analysis::workload::bottom_half_server(w)?;
        Some(ServerConfig {
            runtime: s.runtime,
            period: s.period,
            fallback_fifo: 50,
        })
    }
}

/// How a completion thread is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// At the GPU owner's effective priority; `idle` while the GPU has no
    /// owner (SCHED_OTHER by default: the thread has nothing to do then).
    Dependent { idle: SchedPolicy },
    /// A bandwidth server.
    Independent(ServerConfig),
}

/// What a completion thread got from the kernel at its start, in words.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ModeReport {
    /// "dependent" or "independent".
    pub mode: &'static str,
    /// The policy read back from the thread after its start, e.g.
    /// "SCHED_DEADLINE runtime 100 us period 1 ms".
    pub policy: String,
    /// Why it runs under another policy than its mode asks for, if it does.
    pub fallback: Option<String>,
}

/// Counters of one completion thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CompletionStats {
    /// Bottom halves run.
    pub completions: u64,
    /// Thread CPU time they took, in total and at most.
    pub total_cpu: Nanos,
    pub max_cpu: Nanos,
    /// Wall time from the device signal to the owner's wake-up call, at most.
    pub max_latency: Nanos,
}

/// One bottom half as the thread ran it (recorded with
/// [`CompletionThread::set_tracing`]): CLOCK_MONOTONIC start and end, and
/// the owner's thread id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BottomHalfSpan {
    pub owner: libc::pid_t,
    pub start: Nanos,
    pub end: Nanos,
}

/// A user callback run in the bottom half with the device-side duration.
pub type Callback = Box<dyn FnOnce(Nanos) + Send>;

const SIGNALLED: u32 = 1;
const ARMED: u32 = 2;
const WAITING: u32 = 0;
const DONE: u32 = 1;

/// One submitted operation between its owner and the completion thread.
struct Entry {
    /// SIGNALLED | ARMED: the device finished it / the owner handed it over.
    state: AtomicU32,
    /// Order in which the device signalled (for completion order).
    signal_seq: AtomicU64,
    signalled_at: AtomicU64,
    /// The owner sleeps on this word until DONE.
    owner_word: AtomicU32,
    owner: libc::pid_t,
    inflight: Mutex<Option<Box<dyn InFlight>>>,
    callback: Mutex<Option<Callback>>,
    result: Mutex<Option<Result<Nanos, GpuError>>>,
}

struct Shared {
    /// Bumped whenever an entry becomes ready; the thread sleeps on it.
    doorbell: AtomicU32,
    next_seq: AtomicU64,
    /// Entries handed over by their owners, ready or not yet signalled.
    armed: Mutex<Vec<Arc<Entry>>>,
    stop: AtomicBool,
    stats: Mutex<CompletionStats>,
    tracing: AtomicBool,
    trace: Mutex<Vec<BottomHalfSpan>>,
    /// What the arbiter last asked the thread to run at (dependent mode);
    /// `None`: the idle policy.
    assigned: Mutex<Option<SchedPolicy>>,
}

impl Shared {
    fn ring(&self) {
        self.doorbell.fetch_add(1, Ordering::Release);
        futex::wake(&self.doorbell, 1, Scope::Private);
    }

    /// Marks `bits` of `e`; rings the thread when that made it ready.
    fn mark(&self, e: &Entry, bits: u32) {
        let before = e.state.fetch_or(bits, Ordering::AcqRel);
        if (before | bits) == (SIGNALLED | ARMED) && before != (SIGNALLED | ARMED) {
            self.ring();
        }
    }
}

/// The completion thread of one GPU. Dropping it stops the thread after
/// the operations handed to it have completed.
pub struct CompletionThread {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
    tid: libc::pid_t,
    gpu: usize,
    mode: Mode,
    report: ModeReport,
}

/// Applies the independent mode's policy to the calling thread: DEADLINE,
/// else FIFO, else OTHER; returns why it fell back, if it did.
fn start_server(s: &ServerConfig) -> Option<String> {
    let dl = SchedPolicy::Deadline {
        runtime: s.runtime,
        deadline: s.period,
        period: s.period,
        reclaim: false,
    };
    let err = match os::set_sched_policy(0, dl) {
        Ok(()) => return None,
        Err(e) => e,
    };
    let fifo = SchedPolicy::Fifo {
        priority: s.fallback_fifo.clamp(1, 99),
    };
    Some(match os::set_sched_policy(0, fifo) {
        Ok(()) => format!(
            "SCHED_DEADLINE was refused ({err}); the completion thread runs SCHED_FIFO {} \
             instead, with NO bandwidth limit",
            s.fallback_fifo.clamp(1, 99)
        ),
        Err(e2) => format!(
            "SCHED_DEADLINE was refused ({err}) and SCHED_FIFO too ({e2}); the completion \
             thread runs SCHED_OTHER, with no bandwidth limit and no real-time priority"
        ),
    })
}

impl CompletionThread {
    /// Starts the completion thread of `gpu` (the backend's index).
    pub fn start(gpu: usize, mode: Mode) -> std::io::Result<CompletionThread> {
        let shared = Arc::new(Shared {
            doorbell: AtomicU32::new(0),
            next_seq: AtomicU64::new(1),
            armed: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            stats: Mutex::new(CompletionStats::default()),
            tracing: AtomicBool::new(false),
            trace: Mutex::new(Vec::new()),
            assigned: Mutex::new(None),
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let sh = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name(format!("klmirqd/gpu{gpu}"))
            .spawn(move || {
                let fallback = match mode {
                    Mode::Dependent { idle } => os::set_sched_policy(0, idle).err().map(|e| {
                        format!("cannot set the idle policy of the completion thread: {e}")
                    }),
                    Mode::Independent(s) => start_server(&s),
                };
                let policy = os::sched_policy(0)
                    .map(SchedPolicy::describe)
                    .unwrap_or_else(|e| format!("unknown ({e})"));
                let _ = tx.send((os::gettid(), policy, fallback));
                completion_loop(&sh);
            })?;
        let (tid, policy, fallback) = rx.recv().map_err(|_| {
            std::io::Error::other(format!("the completion thread of GPU {gpu} died at start"))
        })?;
        Ok(CompletionThread {
            shared,
            handle: Some(handle),
            tid,
            gpu,
            mode,
            report: ModeReport {
                mode: match mode {
                    Mode::Dependent { .. } => "dependent",
                    Mode::Independent(_) => "independent",
                },
                policy,
                fallback,
            },
        })
    }

    /// The thread's kernel thread id.
    pub fn tid(&self) -> libc::pid_t {
        self.tid
    }

    /// The GPU it serves.
    pub fn gpu(&self) -> usize {
        self.gpu
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The policy it got at its start, and any fallback, in words.
    pub fn mode_report(&self) -> &ModeReport {
        &self.report
    }

    /// Counters so far.
    pub fn stats(&self) -> CompletionStats {
        self.shared.stats.lock().map(|s| *s).unwrap_or_default()
    }

    /// What the arbiter last asked the thread to run at (dependent mode;
    /// `None`: the GPU is idle, or no arbiter follows it). This is the
    /// bookkeeping; [`os::sched_policy`] on [`Self::tid`] is what the kernel
    /// applied, which differs only where the kernel refused.
    pub fn assigned(&self) -> Option<SchedPolicy> {
        self.shared.assigned.lock().map(|a| *a).unwrap_or(None)
    }

    /// Records every bottom half's span from now on (for tests; off by
    /// default, so a long run does not grow a log).
    pub fn set_tracing(&self, on: bool) {
        self.shared.tracing.store(on, Ordering::Release);
    }

    /// The spans recorded so far (drains them).
    pub fn take_trace(&self) -> Vec<BottomHalfSpan> {
        self.shared
            .trace
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default()
    }

    /// The follower that the arbiter drives (dependent mode): it sets this
    /// thread to the GPU owner's effective priority, or to `idle`.
    pub fn follower(&self) -> Box<dyn PriorityFollower> {
        let idle = match self.mode {
            Mode::Dependent { idle } => idle,
            // An independent server keeps its own policy: follow nothing.
            Mode::Independent(_) => {
                return Box::new(Bookkeeping {
                    shared: Arc::clone(&self.shared),
                })
            }
        };
        Box::new(OwnerFollower {
            shared: Arc::clone(&self.shared),
            tid: self.tid,
            idle,
            name: format!("klmirqd/gpu{}", self.gpu),
            current: None,
        })
    }

    /// Runs `op` on `gpu` of `backend` with its completion handled by this
    /// thread: the calling job submits it (the launch), then sleeps until
    /// this thread has run the bottom half (the device time's bookkeeping,
    /// `callback` if any) and woken it. Returns the device-side duration.
    pub fn complete(
        &self,
        backend: &dyn GpuBackend,
        gpu: usize,
        op: GpuOp,
        callback: Option<Callback>,
    ) -> Result<Nanos, GpuError> {
        self.complete_then(backend, gpu, op, callback, || {})
    }

    /// [`Self::complete`], calling `submitted` once `op` is queued on its
    /// engine, before the job goes to sleep (the device-side hand-off
    /// releases the engine lock there). When submission fails, `submitted`
    /// is dropped uncalled.
    pub fn complete_then(
        &self,
        backend: &dyn GpuBackend,
        gpu: usize,
        op: GpuOp,
        callback: Option<Callback>,
        submitted: impl FnOnce(),
    ) -> Result<Nanos, GpuError> {
        let entry = Arc::new(Entry {
            state: AtomicU32::new(0),
            signal_seq: AtomicU64::new(0),
            signalled_at: AtomicU64::new(0),
            owner_word: AtomicU32::new(WAITING),
            owner: os::gettid(),
            inflight: Mutex::new(None),
            callback: Mutex::new(callback),
            result: Mutex::new(None),
        });
        let (e, sh) = (Arc::clone(&entry), Arc::clone(&self.shared));
        let inflight = backend.submit(
            gpu,
            op,
            Box::new(move || {
                // The top half: note the signal, ring the thread if ready.
                e.signalled_at.store(monotonic_now(), Ordering::Relaxed);
                e.signal_seq.store(
                    sh.next_seq.fetch_add(1, Ordering::Relaxed),
                    Ordering::Relaxed,
                );
                sh.mark(&e, SIGNALLED);
            }),
        )?;
        submitted();
        let poisoned = || GpuError::Stopped("a completion thread's lock was poisoned".into());
        *entry.inflight.lock().map_err(|_| poisoned())? = Some(inflight);
        self.shared
            .armed
            .lock()
            .map_err(|_| poisoned())?
            .push(Arc::clone(&entry));
        // From here the owner only goes to sleep.
        self.shared.mark(&entry, ARMED);
        while entry.owner_word.load(Ordering::Acquire) != DONE {
            futex::wait(&entry.owner_word, WAITING, None, Scope::Private);
        }
        let result = entry.result.lock().map_err(|_| poisoned())?.take();
        result.unwrap_or_else(|| {
            Err(GpuError::Stopped(
                "the completion thread gave no result".into(),
            ))
        })
    }
}

impl Drop for CompletionThread {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.ring();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The thread's loop: take the earliest-signalled ready entry, run its
/// bottom half; sleep on the doorbell when none is ready.
fn completion_loop(sh: &Shared) {
    // 1 ns timer slack, like the emulated engines.
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    loop {
        let seen = sh.doorbell.load(Ordering::Acquire);
        let (next, empty) = match sh.armed.lock() {
            Ok(mut armed) => {
                let pick = armed
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.state.load(Ordering::Acquire) == SIGNALLED | ARMED)
                    .min_by_key(|(_, e)| e.signal_seq.load(Ordering::Relaxed))
                    .map(|(i, _)| i);
                let next = pick.map(|i| armed.swap_remove(i));
                (next, armed.is_empty())
            }
            Err(_) => return,
        };
        match next {
            Some(e) => bottom_half(sh, &e),
            // Stop only when nothing handed over is left.
            None if empty && sh.stop.load(Ordering::Acquire) => return,
            None => {
                futex::wait(&sh.doorbell, seen, None, Scope::Private);
            }
        }
    }
}

/// The bottom half of one completion.
fn bottom_half(sh: &Shared, e: &Entry) {
    let start = monotonic_now();
    let cpu0 = thread_cpu_time();
    let inflight = e.inflight.lock().ok().and_then(|mut f| f.take());
    let result = match inflight {
        Some(f) => f.finish(),
        None => Err(GpuError::Stopped(
            "an operation reached its completion thread without its handle".into(),
        )),
    };
    if let (Ok(d), Some(cb)) = (&result, e.callback.lock().ok().and_then(|mut c| c.take())) {
        cb(*d);
    }
    let cpu = thread_cpu_time().saturating_sub(cpu0);
    let end = monotonic_now();
    if let Ok(mut s) = sh.stats.lock() {
        s.completions += 1;
        s.total_cpu += cpu;
        s.max_cpu = s.max_cpu.max(cpu);
        let latency = end.saturating_sub(e.signalled_at.load(Ordering::Relaxed));
        s.max_latency = s.max_latency.max(latency);
    }
    if sh.tracing.load(Ordering::Acquire) {
        if let Ok(mut t) = sh.trace.lock() {
            t.push(BottomHalfSpan {
                owner: e.owner,
                start,
                end,
            });
        }
    }
    if let Ok(mut r) = e.result.lock() {
        *r = Some(result);
    }
    // Wake the owner: the last thing the bottom half does.
    e.owner_word.store(DONE, Ordering::Release);
    futex::wake(&e.owner_word, 1, Scope::Private);
}

/// Dependent mode: the thread follows the GPU owner's effective priority.
struct OwnerFollower {
    shared: Arc<Shared>,
    tid: libc::pid_t,
    idle: SchedPolicy,
    name: String,
    current: Option<Option<SchedPolicy>>,
}

impl PriorityFollower for OwnerFollower {
    fn follow(&mut self, owner: Option<SchedPolicy>) -> Result<(), OsError> {
        if self.current == Some(owner) {
            return Ok(());
        }
        // The bookkeeping first: it is what the arbiter computed, whether
        // or not the kernel accepts it.
        if let Ok(mut a) = self.shared.assigned.lock() {
            *a = owner;
        }
        self.current = Some(owner);
        os::set_sched_policy(self.tid, owner.unwrap_or(self.idle))
    }

    fn names(&self) -> Vec<String> {
        vec![self.name.clone()]
    }
}

/// Independent mode: only the bookkeeping of who owns the GPU.
struct Bookkeeping {
    shared: Arc<Shared>,
}

impl PriorityFollower for Bookkeeping {
    fn follow(&mut self, owner: Option<SchedPolicy>) -> Result<(), OsError> {
        if let Ok(mut a) = self.shared.assigned.lock() {
            *a = owner;
        }
        Ok(())
    }

    fn names(&self) -> Vec<String> {
        Vec::new()
    }
}
