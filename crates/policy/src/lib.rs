//! # rtgpu-policy
//!
//! The pure policy core of rtgpu (DESIGN.md §3.1): every allocator, lock,
//! inheritance rule, vGPU budget and interrupt-handling policy as a
//! deterministic state machine. Events and a time go in, decisions come out.
//! There are no threads, no I/O and no clock inside: the simulator
//! (`rtgpu-sim`) drives these types with virtual time and the runtime drives
//! the very same types with real time, so the simulator tests the code that
//! runs.
//!
//! ## Conventions
//!
//! - Time is integer nanoseconds ([`Time`]); the caller passes `now`.
//! - A job is named by a caller-chosen [`JobId`] (dense small integers work
//!   best; nothing is hashed).
//! - Priorities are [`Prio`] keys where **smaller is more urgent**: a
//!   fixed-priority rank, or an absolute deadline under EDF. Ties are the
//!   caller's business (add a tie-breaker into the low bits if needed).
//! - Calls never block and never allocate on the steady-state path beyond
//!   growing internal queues; decisions are returned as values
//!   ([`token::Decision`], [`token::Grant`], [`engine_lock::LockGrant`]).
//!
//! ## Hosting the core (what a runtime or the simulator does)
//!
//! ```text
//!  job wants a GPU ──▶ TokenAllocator::request(req, now) ─▶ Granted{gpu} | Queued{gpu}
//!                        (suspend the job if Queued)
//!  job holds token ──▶ EngineLocks::request(job, prio, &[lock], now) ─▶ granted?
//!  engine op done  ──▶ EngineLocks::release(req, &mut grants)  ─▶ wake the granted jobs
//!  GPU section done ─▶ TokenAllocator::release(job, now)       ─▶ Option<Grant> (wake it)
//!                      CostPredictor::observe(task, distance, cost)
//!  GPU interrupt   ──▶ interrupt::plan(handling, owner, ...)   ─▶ where the bottom half runs
//!  any change      ──▶ inherit::effective_priority(job, base, &tokens, &locks)
//! ```
//!
//! Modules:
//! - [`token`]: GPU allocation: static assignment, k-FMLP (seed 000 App. A,
//!   rules R1-R3, l-aware and l-oblivious, with request stealing), GPUSync
//!   tokens (seed 004 §4.2: ρ tokens per GPU in one k-exclusion lock, FIFO
//!   token queues, earliest-estimated-completion queue choice including the
//!   predicted migration cost) and plain shortest-queue.
//! - [`predictor`]: seed 004 §4.1 cost predictor, one robust feedback
//!   estimator per task and migration distance.
//! - [`engine_lock`]: FIFO engine locks (execution, copy-in, copy-out; one
//!   shared copy lock on a one-copy-engine GPU), dynamic group locks (DGL)
//!   for peer copies, the nested-request order, chunking.
//! - [`inherit`]: effective priorities: holders inherit from the jobs they
//!   block in engine-lock queues and in their token queue (seed 000 R2,
//!   seed 004 §4.2), propagating from token queues to engine holders.
//! - [`vgpu`]: Linux-RTXG virtual GPUs (seed 001): FIFO, fixed priority and
//!   BAND scheduling with a budget replenished every period.
//! - [`interrupt`]: where and at which priority a GPU interrupt's bottom half
//!   runs under SLIH, PAI, fixed-priority threads and klmirqd (seed 000), and
//!   klmirqd's independent mode as a bandwidth server.
//! - [`cbs`]: SCHED_DEADLINE's constant bandwidth server (wake-up rule,
//!   throttling, replenishment), for CPU reservations and klmirqd's
//!   independent servers.

pub mod cbs;
pub mod engine_lock;
pub mod inherit;
pub mod interrupt;
pub mod predictor;
pub mod token;
pub mod vgpu;

/// Integer nanoseconds (DESIGN.md §3.3).
pub type Time = u64;
/// A caller-chosen job handle.
pub type JobId = u32;
/// Priority key: smaller is more urgent.
pub type Prio = u64;
/// The least urgent priority.
pub const LOWEST: Prio = Prio::MAX;
