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
//! - [`kfmlp`]: k-FMLP blocking bounds (seed 000 App. A, Theorems 1-2 and
//!   the exact ILP of Eq. 3).
//! - [`gpusync`]: GPUSync token and engine blocking (seed 004 App. A).
//! - [`overheads`]: overhead-aware accounting (seed 000 App. B, Eqs. 6-24)
//!   and the overhead-aware C-EDF / C-RM test on generated task sets.
//! - [`vgpu`]: vGPU reservation bounds (seed 001; our own derivation).
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
pub mod gpusync;
pub mod kfmlp;
pub mod overheads;
pub mod partition;
pub mod server;
pub mod task;
pub mod vgpu;
pub mod workload;
pub mod workload_gpu;

pub use task::{Task, Time};
