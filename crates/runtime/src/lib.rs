//! # rtgpu-runtime
//!
//! The parts of `rtgpu run` that touch the real machine (DESIGN.md §3.5):
//!
//! - [`os`]: real-time scheduling policies through `sched_setattr`
//!   (SCHED_FIFO, SCHED_DEADLINE), CPU affinity, absolute-time sleeps on
//!   CLOCK_MONOTONIC, per-thread CPU time (the budget clock of split tasks,
//!   seed 003), a privilege probe so the runtime can degrade plainly
//!   without root, and discovery of the NVIDIA driver's interrupt threads
//!   (`irq/N-nvidia`) whose priority klmirqd mirrors (seed 000).
//! - [`gpu`]: GPU backends behind one trait: the emulated backend (engine
//!   threads, bus-bandwidth sharing; the default, no GPU needed) and the CUDA
//!   backend (driver API loaded at run time, so the build needs no CUDA).
//! - [`klmirqd`]: seed 000's klmirqd in user space: per-GPU completion
//!   threads that run the bottom half of every GPU operation at the GPU
//!   owner's effective priority while the owner sleeps (dependent mode) or
//!   as a SCHED_DEADLINE server (independent mode), and the mirroring of
//!   the owner's priority onto the driver's `irq/N-nvidia` threads.
//! - [`selftest`]: a measured check of a backend (kernel timing accuracy,
//!   copy bandwidth, chunked copies, copy-engine overlap), behind `rtgpu gpu`.
//! - [`arbiter`]: the in-process arbiter hosting the policy core with the
//!   real clock (tokens, engine locks, inheritance applied to threads);
//!   [`daemon`]: the same for several processes over a Unix socket;
//!   [`client`]: one guard-based client API over both; [`klmirqd`]: the
//!   owner's priority mirrored onto the driver's interrupt threads.
//! - [`run`]: `rtgpu run`, the workload launched on real threads.
//! - [`calibrate`]: a short self-measurement of the seed 000 overheads user
//!   space can see on this machine (release, scheduling and context switch,
//!   IPI, tick), and its per-machine cache, which `rtgpu run` charges in the
//!   bounds it prints by default.

pub mod arbiter;
pub mod calibrate;
pub mod client;
pub mod daemon;
pub mod futex;
pub mod gpu;
pub mod klmirqd;
pub mod os;
pub mod run;
pub mod selftest;
