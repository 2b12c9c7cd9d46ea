//! The in-process arbiter: the pure policy core (`rtgpu-policy`) hosted with
//! the real clock for the threads of one program (DESIGN.md §3.1; the
//! mechanism is chosen in docs/design/arbiter.md).
//!
//! - One mutex guards the policy core's state. No thread ever sleeps while
//!   holding it.
//! - A job that must wait (for a GPU token, or an engine lock) sleeps on its
//!   own futex word. The thread that releases runs the core's release step
//!   itself, writes the grant into the next holder's word and wakes it: one
//!   wake-up per hand-off, the floor measured by `bench --bin handoff`.
//! - After every change of the blocking relations, effective priorities are
//!   recomputed with the core's inheritance rule (seed 004 §4.2, seed 000
//!   App. A R2: a holder inherits the priorities of the jobs it blocks,
//!   token-queue inheritance propagating to engine holders) and applied to
//!   the real threads with `sched_setattr`, and undone when they end.
//! - Every grant and release is recorded with its time, for the run's
//!   report and trace.
//! - Guards release what they hold when dropped, also during a panic's
//!   unwinding: a panicking client thread never strands a token or a lock.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Re-exported so clients need not depend on the policy crate.
pub use rtgpu_policy::engine_lock::Engine;
use rtgpu_policy::engine_lock::{EngineLocks, LockGrant, LockId, ReqId};
use rtgpu_policy::inherit::{effective_priority, gpu_owner_priority};
use rtgpu_policy::predictor::CostPredictor;
use rtgpu_policy::token::{self, Decision, TokenAllocator};
pub use rtgpu_policy::token::{Config as TokenConfig, QueueRule};
use rtgpu_policy::{JobId, Prio};

use crate::futex::{self, Scope};
use crate::os::{self, monotonic_now, Nanos, SchedPolicy};

/// What the arbiter manages.
#[derive(Debug, Clone)]
pub struct ArbiterConfig {
    /// Copy engines (1 or 2) of each GPU.
    pub copy_engines: Vec<u8>,
    /// GPU allocation (queue rule, ρ, stealing).
    pub tokens: TokenConfig,
    /// Row-major migration distances between GPUs (empty: 0 on the diagonal,
    /// 1 elsewhere).
    pub distance: Vec<u32>,
    /// Whether the engines are locked (seed 004's E) or free-for-all (e).
    pub engine_locks: bool,
    /// Apply priority inheritance to the real threads.
    pub apply_priorities: bool,
    /// Per task, the cost of a GPU section assumed before any observation,
    /// by migration distance 0..=3 (seed 004 §4.1's predictor).
    pub priors: Vec<[Nanos; 4]>,
}

/// Why the settings of an arbiter for the client APIs (Python, C,
/// `rtgpu daemon`) are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("unknown allocator {0:?}: expected one of {expected}", expected = ALLOCATORS.join(", "))]
    Allocator(String),
    #[error("gpus must be at least 1")]
    NoGpus,
    #[error("copy_engines must be 1 or 2, got {0}")]
    CopyEngines(u64),
    #[error("tokens_per_gpu must be at least 1")]
    NoTokens,
    #[error("gpus must be at most {MAX_GPUS} (the model's cap), got {0}")]
    TooManyGpus(usize),
    #[error("tokens_per_gpu must be at most {MAX_TOKENS_PER_GPU}, got {0}")]
    TooManyTokens(usize),
}

/// The most GPUs an arbiter serves (the model's cap on generated GPUs;
/// a token grant carries its GPU in 15 bits).
pub const MAX_GPUS: usize = 1024;
/// The most tokens (ρ) per GPU (a token grant carries its token index in
/// 16 bits: [`MAX_GPUS`] × this fits).
pub const MAX_TOKENS_PER_GPU: usize = 64;

impl ArbiterConfig {
    /// The arbiter of the client APIs: `gpus` alike GPUs with
    /// `copy_engines` each, `tokens_per_gpu` tokens (ρ) per GPU, the
    /// allocator named (one of [`ALLOCATORS`]), no topology or priors.
    pub fn uniform(
        gpus: usize,
        copy_engines: u64,
        tokens_per_gpu: usize,
        allocator_name: &str,
        engine_locks: bool,
        apply_priorities: bool,
    ) -> Result<ArbiterConfig, SettingsError> {
        let (rule, stealing) = allocator(allocator_name)
            .ok_or_else(|| SettingsError::Allocator(allocator_name.to_string()))?;
        if gpus == 0 {
            return Err(SettingsError::NoGpus);
        }
        if gpus > MAX_GPUS {
            return Err(SettingsError::TooManyGpus(gpus));
        }
        let copies = match copy_engines {
            1 => 1,
            2 => 2,
            other => return Err(SettingsError::CopyEngines(other)),
        };
        if tokens_per_gpu == 0 {
            return Err(SettingsError::NoTokens);
        }
        if tokens_per_gpu > MAX_TOKENS_PER_GPU {
            return Err(SettingsError::TooManyTokens(tokens_per_gpu));
        }
        // The k-FMLP's k = g resources are whole GPUs: one token each
        // (seed 000 App. A), as the model's `Policy::tokens()` gives its
        // analysis and simulator, whatever ρ says.
        let tokens_per_gpu = if stealing { 1 } else { tokens_per_gpu };
        Ok(ArbiterConfig {
            copy_engines: vec![copies; gpus],
            tokens: TokenConfig {
                gpus,
                tokens_per_gpu,
                rule,
                stealing,
                // m: this machine's CPUs (no cap if it cannot say).
                queue_cap: std::thread::available_parallelism().map_or(usize::MAX, |m| {
                    rtgpu_policy::token::r2dglp_queue_cap(m.get(), gpus * tokens_per_gpu)
                }),
            },
            distance: Vec::new(),
            engine_locks,
            apply_priorities,
            priors: Vec::new(),
        })
    }
}

/// One recorded hand-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Event {
    /// CLOCK_MONOTONIC time.
    pub at: Nanos,
    pub job: JobId,
    pub what: EventKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum EventKind {
    TokenRequested { gpu: usize },
    TokenGranted { gpu: usize, token: usize },
    TokenReleased { token: usize },
    LockRequested { lock: LockId },
    LockGranted { lock: LockId },
    LockReleased { lock: LockId },
    PriorityChanged { fifo: u8 },
}

const IDLE: u32 = 0;
const WAITING: u32 = 1;
const GRANTED: u32 = 2;

struct JobSlot {
    tid: libc::pid_t,
    base: Prio,
    /// The policy the thread had when it registered (restored at the end).
    own_policy: SchedPolicy,
    /// The effective priority last applied to the thread.
    applied: Prio,
    word: Arc<AtomicU32>,
    live: bool,
    /// Token the job holds, once granted.
    token: Option<(usize, usize)>,
}

struct State {
    tokens: TokenAllocator,
    locks: EngineLocks,
    jobs: Vec<JobSlot>,
    free: Vec<JobId>,
    events: Vec<Event>,
    apply_errors: Vec<String>,
    scratch: Vec<Prio>,
    /// klmirqd: per GPU, its interrupt threads, given the highest effective
    /// priority among the GPU's token holders (seed 000 §IV).
    mirrors: Vec<Option<crate::klmirqd::IrqMirror>>,
    /// klmirqd: other threads that follow a GPU's owner (the completion
    /// threads of dependent mode), with their GPU.
    followers: Vec<(usize, Box<dyn crate::klmirqd::PriorityFollower>)>,
}

/// The arbiter. Share it between threads with an [`Arc`].
pub struct Arbiter {
    state: Mutex<State>,
    engine_locks: bool,
    apply_priorities: bool,
    gpus: usize,
}

/// Why an arbiter call failed.
#[derive(Debug, thiserror::Error)]
pub enum ArbiterError {
    #[error("the arbiter's state lock was poisoned by a panicking thread")]
    Poisoned,
    #[error("job {0} already holds a GPU token")]
    AlreadyHolds(JobId),
}

/// The allocator names of the client APIs (Python, C, `rtgpu daemon`) and
/// their queue rule and request stealing: `gpusync` (earliest estimated
/// completion, seed 004 §4.2), `shortest-queue` (R²DGLP's own choice),
/// `k-fmlp` (l-aware R1 with R3 stealing, seed 000 App. A), `static`,
/// `static-priority` (static with priority-ordered token queues).
pub const ALLOCATORS: [&str; 5] = [
    "gpusync",
    "shortest-queue",
    "k-fmlp",
    "static",
    "static-priority",
];

/// The queue rule and stealing of an allocator name of [`ALLOCATORS`].
/// The workload file's `gpusync-affinity` (its default, the same rule) is
/// accepted too.
pub fn allocator(name: &str) -> Option<(QueueRule, bool)> {
    match name {
        "gpusync" | "gpusync-affinity" => Some((QueueRule::EarliestCompletion, false)),
        "shortest-queue" => Some((QueueRule::ShortestQueue, false)),
        "k-fmlp" => Some((QueueRule::LAware, true)),
        "static" => Some((QueueRule::Static, false)),
        "static-priority" => Some((QueueRule::StaticPriority, false)),
        _ => None,
    }
}

/// Priority key of the policy core (smaller = more urgent) for a SCHED_FIFO
/// priority (larger = more urgent).
pub fn prio_of_fifo(fifo: u8) -> Prio {
    Prio::from(100 - fifo.min(99))
}

/// The policy a client thread runs under: its own while it inherits
/// nothing (effective priority = its base), otherwise SCHED_FIFO at the
/// inherited priority (seed 004 §4.2).
pub(crate) fn inherited_policy(effective: Prio, base: Prio, own: SchedPolicy) -> SchedPolicy {
    // A SCHED_DEADLINE thread already runs above every SCHED_FIFO one;
    // switching it to SCHED_FIFO would drop its reservation.
    if effective == base || matches!(own, SchedPolicy::Deadline { .. }) {
        own
    } else {
        SchedPolicy::Fifo {
            priority: fifo_of_prio(effective),
        }
    }
}

/// The SCHED_FIFO priority of a policy-core key (clamped to 1..=99).
pub fn fifo_of_prio(p: Prio) -> u8 {
    (100 - p.clamp(1, 99)) as u8
}

impl Arbiter {
    pub fn new(config: &ArbiterConfig) -> Arc<Arbiter> {
        let gpus = config.copy_engines.len();
        let predictor = CostPredictor::new(&config.priors);
        let mut cfg = config.tokens;
        cfg.gpus = gpus;
        Arc::new(Arbiter {
            state: Mutex::new(State {
                tokens: TokenAllocator::new(cfg, config.distance.clone(), predictor),
                locks: EngineLocks::new(&config.copy_engines),
                jobs: Vec::new(),
                free: Vec::new(),
                events: Vec::new(),
                apply_errors: Vec::new(),
                scratch: Vec::new(),
                mirrors: Vec::new(),
                followers: Vec::new(),
            }),
            engine_locks: config.engine_locks,
            apply_priorities: config.apply_priorities,
            gpus,
        })
    }

    /// The number of GPUs it arbitrates.
    pub fn gpus(&self) -> usize {
        self.gpus
    }

    /// Its token allocator's configuration (queue rule, ρ, stealing).
    pub fn token_config(&self) -> Result<TokenConfig, ArbiterError> {
        Ok(*self.lock()?.tokens.config())
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, ArbiterError> {
        self.state.lock().map_err(|_| ArbiterError::Poisoned)
    }

    /// Registers the calling thread as a client at SCHED_FIFO priority
    /// `fifo` (its base priority; the arbiter raises it while it blocks
    /// others and restores it afterwards).
    pub fn register(self: &Arc<Self>, fifo: u8) -> Result<Client, ArbiterError> {
        let mut st = self.lock()?;
        let tid = os::gettid();
        let own_policy = os::sched_policy(0).unwrap_or(SchedPolicy::Other { nice: 0 });
        let slot = JobSlot {
            tid,
            base: prio_of_fifo(fifo),
            own_policy,
            applied: prio_of_fifo(fifo),
            word: Arc::new(AtomicU32::new(IDLE)),
            live: true,
            token: None,
        };
        let job = match st.free.pop() {
            Some(j) => {
                st.jobs[j as usize] = slot;
                j
            }
            None => {
                st.jobs.push(slot);
                (st.jobs.len() - 1) as JobId
            }
        };
        let word = Arc::clone(&st.jobs[job as usize].word);
        Ok(Client(Arc::new(ClientInner {
            arbiter: Arc::clone(self),
            job,
            word,
        })))
    }

    /// Every hand-off recorded so far (drains the log).
    pub fn take_events(&self) -> Vec<Event> {
        self.lock()
            .map(|mut s| std::mem::take(&mut s.events))
            .unwrap_or_default()
    }

    /// The two locks of a peer copy in the fixed order nested requests must
    /// follow to avoid deadlock (seed 004 §4.3).
    pub fn nested_order(&self, a: (usize, Engine), b: (usize, Engine)) -> [(usize, Engine); 2] {
        if self.lock_id(a.0, a.1) <= self.lock_id(b.0, b.1) {
            [a, b]
        } else {
            [b, a]
        }
    }

    /// Migration distance from `from` (none: a first use) to `to`.
    pub fn distance(&self, from: Option<usize>, to: usize) -> u32 {
        self.lock()
            .map(|s| s.tokens.distance(from, to))
            .unwrap_or(0)
    }

    /// The lock id of `engine` of `gpu`, for ordering nested requests.
    pub fn lock_id(&self, gpu: usize, engine: Engine) -> LockId {
        self.lock()
            .map(|s| s.locks.lock_id(gpu, engine))
            .unwrap_or(0)
    }

    /// Requests queued on (holding or waiting for) the lock of `engine` of
    /// `gpu`.
    pub fn queue_len(&self, gpu: usize, engine: Engine) -> usize {
        self.lock()
            .map(|s| s.locks.queue_len(s.locks.lock_id(gpu, engine)))
            .unwrap_or(0)
    }

    /// Priority changes the OS refused (e.g. without privilege), in words.
    pub fn apply_errors(&self) -> Vec<String> {
        self.lock()
            .map(|s| s.apply_errors.clone())
            .unwrap_or_default()
    }

    /// Recomputes every live job's effective priority and applies changes.
    fn update_priorities(&self, st: &mut State) {
        // Reused scratch space: no allocation on the hand-off path.
        let mut bases = std::mem::take(&mut st.scratch);
        bases.clear();
        bases.extend(st.jobs.iter().map(|j| j.base));
        let base = |j: JobId| {
            bases
                .get(j as usize)
                .copied()
                .unwrap_or(rtgpu_policy::LOWEST)
        };
        let now = monotonic_now();
        for j in 0..st.jobs.len() {
            if !st.jobs[j].live {
                continue;
            }
            let eff = effective_priority(j as JobId, &base, &st.tokens, &st.locks);
            if eff == st.jobs[j].applied {
                continue;
            }
            st.jobs[j].applied = eff;
            if !self.apply_priorities {
                continue;
            }
            let fifo = fifo_of_prio(eff);
            let policy = inherited_policy(eff, st.jobs[j].base, st.jobs[j].own_policy);
            if let Err(e) = os::set_sched_policy(st.jobs[j].tid, policy) {
                if st.apply_errors.len() < 16 {
                    st.apply_errors.push(e.to_string());
                }
            }
            st.events.push(Event {
                at: now,
                job: j as JobId,
                what: EventKind::PriorityChanged { fifo },
            });
        }
        st.scratch = bases;
        self.update_mirrors(st);
    }

    /// The policy of a GPU's owner for klmirqd (seed 000 §IV): SCHED_FIFO at
    /// the highest effective priority (inheritance included) among the
    /// GPU's token holders; `None` when nobody holds the GPU.
    fn owner_policy(st: &State, gpu: usize) -> Option<SchedPolicy> {
        let applied = |j: JobId| {
            st.jobs
                .get(j as usize)
                .map_or(rtgpu_policy::LOWEST, |s| s.applied)
        };
        gpu_owner_priority(&st.tokens, gpu, applied).map(|p| SchedPolicy::Fifo {
            priority: fifo_of_prio(p),
        })
    }

    /// Gives each GPU's interrupt threads and completion threads the
    /// highest effective priority of its token holders, or their own
    /// priority when nobody holds the GPU.
    fn update_mirrors(&self, st: &mut State) {
        if !self.apply_priorities || (st.mirrors.is_empty() && st.followers.is_empty()) {
            return;
        }
        for gpu in 0..st.mirrors.len() {
            let policy = Self::owner_policy(st, gpu);
            let result = match st.mirrors.get_mut(gpu) {
                Some(Some(m)) => m.mirror(policy),
                _ => Ok(()),
            };
            if let Err(e) = result {
                if st.apply_errors.len() < 16 {
                    st.apply_errors.push(format!("klmirqd mirroring: {e}"));
                }
            }
        }
        let mut followers = std::mem::take(&mut st.followers);
        for (gpu, f) in &mut followers {
            let policy = Self::owner_policy(st, *gpu);
            if let Err(e) = f.follow(policy) {
                if st.apply_errors.len() < 16 {
                    st.apply_errors
                        .push(format!("klmirqd completion thread of GPU {gpu}: {e}"));
                }
            }
        }
        st.followers = followers;
    }

    /// klmirqd's dependent mode: `follower` (a completion thread's
    /// [`crate::klmirqd::CompletionThread::follower`]) takes the effective
    /// priority of the owner of `gpu` (this arbiter's GPU index) from now
    /// on, through the same path as inheritance and the interrupt-thread
    /// mirror. Only while the arbiter applies priorities.
    pub fn add_follower(&self, gpu: usize, follower: Box<dyn crate::klmirqd::PriorityFollower>) {
        if let Ok(mut st) = self.lock() {
            st.followers.push((gpu, follower));
            self.update_mirrors(&mut st);
        }
    }

    /// The threads that follow GPU owners besides the interrupt threads.
    pub fn follower_threads(&self) -> Vec<String> {
        self.lock()
            .map(|s| s.followers.iter().flat_map(|f| f.1.names()).collect())
            .unwrap_or_default()
    }

    /// The interrupt threads the arbiter mirrors owner priorities onto.
    pub fn irq_threads(&self) -> Vec<String> {
        self.lock()
            .map(|s| {
                s.mirrors
                    .iter()
                    .flatten()
                    .flat_map(|m| m.threads().iter().map(|t| t.1.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// klmirqd in user space: mirror each GPU's owner priority onto its
    /// interrupt threads (one entry per GPU of this arbiter; `None` for a GPU
    /// without threaded interrupts).
    pub fn set_irq_mirrors(&self, mirrors: Vec<Option<crate::klmirqd::IrqMirror>>) {
        if let Ok(mut st) = self.lock() {
            st.mirrors = mirrors;
        }
    }

    /// Wakes the jobs granted locks by a release.
    fn wake_lock_grants(st: &mut State, grants: &[LockGrant], lock: LockId, now: Nanos) {
        for g in grants {
            if let Some(slot) = st.jobs.get(g.job as usize) {
                slot.word.store(GRANTED, Ordering::Release);
                futex::wake(&slot.word, 1, Scope::Private);
            }
            st.events.push(Event {
                at: now,
                job: g.job,
                what: EventKind::LockGranted { lock },
            });
        }
    }
}

/// A registered client (one job at a time). Cheap to clone: the guards it
/// hands out keep it alive, so they own no borrow and can live anywhere (a
/// Python `with` block, a C handle). Unregistered when the last clone goes.
#[derive(Clone)]
pub struct Client(Arc<ClientInner>);

pub struct ClientInner {
    arbiter: Arc<Arbiter>,
    job: JobId,
    word: Arc<AtomicU32>,
}

impl std::ops::Deref for Client {
    type Target = ClientInner;
    fn deref(&self) -> &ClientInner {
        &self.0
    }
}

impl Client {
    pub fn job(&self) -> JobId {
        self.job
    }

    /// Feeds an observed GPU-section cost back to the allocator's cost
    /// predictor (seed 004 §4.1).
    pub fn observe(&self, task: usize, distance: u32, cost: Nanos) {
        if let Ok(mut st) = self.arbiter.lock() {
            st.tokens.predictor_mut().observe(task, distance, cost);
        }
    }

    /// Changes this job's base SCHED_FIFO priority (an EDF plan re-ranks
    /// its jobs by deadline at every release and completion, run/edf.rs):
    /// the thread runs at the new base unless it inherits a higher priority
    /// from jobs it blocks, which keeps precedence (seed 004 §4.2).
    pub fn set_base(&self, fifo: u8) -> Result<(), ArbiterError> {
        let a = &self.arbiter;
        let mut st = a.lock()?;
        let job = &mut st.jobs[self.job as usize];
        let new = prio_of_fifo(fifo);
        if job.base == new {
            return Ok(());
        }
        let was_applied = job.applied == job.base;
        job.base = new;
        job.own_policy = SchedPolicy::Fifo { priority: fifo };
        if was_applied {
            // The thread ran at its old base: mark it stale (no FIFO
            // priority maps to LOWEST) so the update below applies the new
            // base, or what the thread inherits.
            job.applied = rtgpu_policy::LOWEST;
        }
        a.update_priorities(&mut st);
        Ok(())
    }

    /// Acquires one engine lock, or two atomically (a DGL), without a GPU
    /// token: for GPU work the token allocator does not manage, such as the
    /// copies of a vGPU's members (seed 001; the vGPU scheduler orders
    /// their kernels instead of the execution-engine lock). With engine
    /// locks off, returns at once.
    pub fn engine_locks(&self, wanted: &[(usize, Engine)]) -> Result<EngineGuard, ArbiterError> {
        let c = self;
        let a = &c.arbiter;
        if !a.engine_locks {
            return Ok(EngineGuard {
                client: c.clone(),
                req: None,
                lock: 0,
            });
        }
        let mut st = a.lock()?;
        let ids: Vec<LockId> = wanted
            .iter()
            .map(|&(g, e)| st.locks.lock_id(g, e))
            .collect();
        let prio = st.jobs[c.job as usize].base;
        c.word.store(WAITING, Ordering::Release);
        let (req, granted) = st.locks.request(c.job, prio, &ids);
        let now = monotonic_now();
        st.events.push(Event {
            at: now,
            job: c.job,
            what: if granted {
                EventKind::LockGranted { lock: ids[0] }
            } else {
                EventKind::LockRequested { lock: ids[0] }
            },
        });
        a.update_priorities(&mut st);
        drop(st);
        if granted {
            c.word.store(IDLE, Ordering::Release);
        } else {
            c.await_grant();
        }
        Ok(EngineGuard {
            client: c.clone(),
            req: Some(req),
            lock: ids[0],
        })
    }

    /// Sleeps until the arbiter grants this job.
    fn await_grant(&self) {
        while self.word.load(Ordering::Acquire) != GRANTED {
            futex::wait(&self.word, WAITING, None, Scope::Private);
        }
        self.word.store(IDLE, Ordering::Release);
    }

    /// Acquires a GPU token (blocking): `task` and `hold` (worst-case token
    /// hold time) feed the allocator's queue choice; `last_gpu` its
    /// migration-cost prediction; `static_gpu` the static allocator.
    pub fn token(
        &self,
        task: usize,
        hold: Nanos,
        last_gpu: Option<usize>,
        static_gpu: usize,
    ) -> Result<TokenGuard, ArbiterError> {
        let a = &self.arbiter;
        let (gpu, token) = {
            let mut st = a.lock()?;
            let job = self.job as usize;
            if st.jobs[job].token.is_some() {
                return Err(ArbiterError::AlreadyHolds(self.job));
            }
            let now = monotonic_now();
            let req = token::Request {
                job: self.job,
                task,
                prio: st.jobs[job].base,
                hold,
                last_gpu,
                static_gpu,
            };
            self.word.store(WAITING, Ordering::Release);
            match st.tokens.request(&req, now) {
                Decision::Granted { gpu, token } => {
                    self.word.store(IDLE, Ordering::Release);
                    st.jobs[job].token = Some((gpu, token));
                    st.events.push(Event {
                        at: now,
                        job: self.job,
                        what: EventKind::TokenGranted { gpu, token },
                    });
                    a.update_priorities(&mut st);
                    (gpu, token)
                }
                Decision::Queued { gpu, .. } => {
                    st.events.push(Event {
                        at: now,
                        job: self.job,
                        what: EventKind::TokenRequested { gpu },
                    });
                    a.update_priorities(&mut st);
                    drop(st);
                    self.await_grant();
                    let st = a.lock()?;
                    st.jobs[job].token.unwrap_or((gpu, 0))
                }
            }
        };
        Ok(TokenGuard {
            client: self.clone(),
            gpu,
            token,
        })
    }
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        if let Ok(mut st) = self.arbiter.lock() {
            let job = self.job as usize;
            let own = st.jobs[job].own_policy;
            if self.arbiter.apply_priorities && st.jobs[job].applied != st.jobs[job].base {
                let _ = os::set_sched_policy(st.jobs[job].tid, own);
            }
            st.jobs[job].live = false;
            st.free.push(self.job);
        }
    }
}

/// A held GPU token; released when dropped.
pub struct TokenGuard {
    client: Client,
    gpu: usize,
    token: usize,
}

impl TokenGuard {
    /// The GPU the token is for.
    pub fn gpu(&self) -> usize {
        self.gpu
    }

    /// Acquires the lock of one engine of this token's GPU (blocking); with
    /// engine locks off, returns at once (seed 004's "e" scenarios).
    pub fn engine(&self, engine: Engine) -> Result<EngineGuard, ArbiterError> {
        self.locks(&[(self.gpu, engine)])
    }

    /// Acquires one engine lock, or two atomically as a dynamic group lock
    /// (seed 004 §4.3: a peer copy's copy-out lock on the source and copy-in
    /// lock on the destination). For nested requests instead, take them one
    /// at a time in [`Arbiter::nested_order`].
    pub fn locks(&self, wanted: &[(usize, Engine)]) -> Result<EngineGuard, ArbiterError> {
        self.client.engine_locks(wanted)
    }
}

impl Drop for TokenGuard {
    fn drop(&mut self) {
        let c = &self.client;
        let a = &c.arbiter;
        let Ok(mut st) = a.lock() else { return };
        let now = monotonic_now();
        st.jobs[c.job as usize].token = None;
        st.events.push(Event {
            at: now,
            job: c.job,
            what: EventKind::TokenReleased { token: self.token },
        });
        if let Some(g) = st.tokens.release(c.job, now) {
            if let Some(slot) = st.jobs.get_mut(g.job as usize) {
                slot.token = Some((g.gpu, g.token));
                slot.word.store(GRANTED, Ordering::Release);
                futex::wake(&slot.word, 1, Scope::Private);
            }
            st.events.push(Event {
                at: now,
                job: g.job,
                what: EventKind::TokenGranted {
                    gpu: g.gpu,
                    token: g.token,
                },
            });
        }
        a.update_priorities(&mut st);
    }
}

/// A held engine lock (or DGL); released when dropped.
pub struct EngineGuard {
    client: Client,
    req: Option<ReqId>,
    lock: LockId,
}

impl Drop for EngineGuard {
    fn drop(&mut self) {
        let Some(req) = self.req else { return };
        let c = &self.client;
        let a = &c.arbiter;
        let Ok(mut st) = a.lock() else { return };
        let now = monotonic_now();
        let mut grants = Vec::new();
        st.locks.release(req, &mut grants);
        st.events.push(Event {
            at: now,
            job: c.job,
            what: EventKind::LockReleased { lock: self.lock },
        });
        Arbiter::wake_lock_grants(&mut st, &grants, self.lock, now);
        a.update_priorities(&mut st);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A holder inherits SCHED_FIFO at the waiter's priority, except a
    /// SCHED_DEADLINE thread, which is above every SCHED_FIFO one already
    /// and would lose its reservation.
    #[test]
    fn inheritance_keeps_a_deadline_thread_under_sched_deadline() {
        let dl = SchedPolicy::Deadline {
            runtime: 100_000,
            deadline: 1_000_000,
            period: 1_000_000,
            reclaim: false,
        };
        let fifo = SchedPolicy::Fifo { priority: 10 };
        let (base, high) = (prio_of_fifo(10), prio_of_fifo(99));
        assert_eq!(inherited_policy(base, base, fifo), fifo);
        assert_eq!(
            inherited_policy(high, base, fifo),
            SchedPolicy::Fifo { priority: 99 }
        );
        assert_eq!(inherited_policy(high, base, dl), dl);
    }

    #[test]
    fn client_api_settings_are_checked_in_one_place() {
        let c = ArbiterConfig::uniform(2, 1, 3, "k-fmlp", true, false).expect("valid");
        assert_eq!(c.copy_engines, vec![1, 1]);
        // The k-FMLP has one token per GPU, whatever ρ says (issue 22).
        assert_eq!(c.tokens.tokens_per_gpu, 1);
        assert_eq!(c.tokens.rule, QueueRule::LAware);
        let g = ArbiterConfig::uniform(2, 1, 3, "gpusync", true, false).expect("valid");
        assert_eq!(g.tokens.tokens_per_gpu, 3);
        // The workload file's default name is accepted (issue 23).
        let a = ArbiterConfig::uniform(2, 1, 3, "gpusync-affinity", true, false).expect("valid");
        assert_eq!(a.tokens.rule, g.tokens.rule);
        assert!(c.tokens.stealing);
        let err = |r: Result<ArbiterConfig, SettingsError>| r.expect_err("refused");
        assert_eq!(
            err(ArbiterConfig::uniform(1, 2, 1, "round-robin", true, true)),
            SettingsError::Allocator("round-robin".into())
        );
        let e = err(ArbiterConfig::uniform(1, 2, 1, "rr", true, true)).to_string();
        assert!(
            e.contains("expected one of gpusync, shortest-queue, k-fmlp, static"),
            "{e}"
        );
        assert_eq!(
            err(ArbiterConfig::uniform(0, 2, 1, "gpusync", true, true)),
            SettingsError::NoGpus
        );
        assert_eq!(
            err(ArbiterConfig::uniform(1, 3, 1, "gpusync", true, true)),
            SettingsError::CopyEngines(3)
        );
        assert_eq!(
            err(ArbiterConfig::uniform(1, 2, 0, "gpusync", true, true)),
            SettingsError::NoTokens
        );
        // Absurd sizes get a clear error, not an allocation abort.
        assert_eq!(
            err(ArbiterConfig::uniform(
                1_000_000_000,
                2,
                1,
                "gpusync",
                true,
                true
            )),
            SettingsError::TooManyGpus(1_000_000_000)
        );
        assert_eq!(
            err(ArbiterConfig::uniform(
                1,
                2,
                usize::MAX,
                "gpusync",
                true,
                true
            )),
            SettingsError::TooManyTokens(usize::MAX)
        );
        assert!(
            ArbiterConfig::uniform(MAX_GPUS, 2, MAX_TOKENS_PER_GPU, "gpusync", true, true).is_ok()
        );
    }
}
