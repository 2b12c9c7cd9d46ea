//! # rtgpu-analysis
//!
//! Schedulability analyses for rtgpu, all on integer nanoseconds:
//!
//! - [`fp`]: uniprocessor fixed priority — exact response-time analysis with
//!   jitter and blocking, DM/RM/Audsley priority assignment, Liu & Layland and
//!   hyperbolic bounds, and the exact MaximalSplit budget (seed 003 §IV).
//! - [`partition`]: bin packing (first/best/worst/next fit) and task splitting
//!   with PDMS_HPTS and PDMS_HPTS_DS (seed 003 Algorithms 1 and 2).
//! - [`bounds`]: the utilization and size bounds of seed 003 (Lemmas 4-5,
//!   Theorems 6-7, SBLW).
//! - [`global_fp`]: global / clustered fixed priority response-time bounds.
//! - [`edf`]: G-EDF / C-EDF bounded tardiness (soft real time).
//! - [`gpu`]: GPU wait bounds — k-FMLP (seed 000 App. A), GPUSync (seed
//!   004 App. A), vGPU reservations (seed 001), request-counted waits of
//!   the suspension-aware method, and their application to a workload.
//! - [`overheads`]: overhead-aware accounting (seed 000 App. B, Eqs. 6-24)
//!   and the overhead-aware C-EDF / C-RM test on generated task sets.
//! - [`server`]: bandwidth servers (klmirqd's independent mode) as
//!   top-priority interference on every core (our own derivation).
//!
//! - [`generate`] and [`experiment`]: seeded random task sets and batch
//!   evaluation (schedulable counts, breakdown utilization) for studies.
//!
//! - [`workload`]: `rtgpu analyze` on a whole workload file: report and
//!   deployment plan.
//!
//! Analyses never change a task in place: inflation and splitting return new
//! values (DESIGN.md §4).

pub mod bounds;
pub mod edf;
pub mod experiment;
pub mod fp;
pub mod generate;
pub mod global_fp;
pub mod gpu;
pub mod overheads;
pub mod partition;
pub mod server;
pub mod task;
pub mod workload;

// The GPU bounds' modules at their former paths.
pub use gpu::{gpusync, kfmlp, vgpu, workload_gpu};

pub use task::{Task, Time};
