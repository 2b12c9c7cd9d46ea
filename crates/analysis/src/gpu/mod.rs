//! GPU wait bounds: everything `rtgpu analyze` knows about how long a job
//! waits for a GPU and its engines, and how long it holds them.
//!
//! - [`kfmlp`]: k-FMLP blocking (seed 000 App. A, Theorems 1-2, Eq. 3).
//! - [`gpusync`]: GPUSync token and engine blocking (seed 004 App. A).
//! - [`vgpu`]: vGPU reservation bounds (seed 001; our derivation).
//! - [`wait`]: request-counted waits, the suspension-aware method's bounds
//!   (one request per task in FIFO token queues; our derivation).
//! - [`workload_gpu`]: the above applied to a workload's GPU pools.
//!
//! [`Method`] says how GPU-using tasks enter the CPU analyses.

use serde::Serialize;

pub mod gpusync;
pub mod kfmlp;
pub mod vgpu;
pub mod wait;
pub mod workload_gpu;

/// How `rtgpu analyze` treats a GPU-using job's GPU wait and GPU time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Suspension-aware: the GPU wait and GPU time are suspensions. Waits
    /// are request-counted ([`wait`]); under fixed priority (C-FP, G-FP)
    /// the task's own response time adds them while the tasks below it
    /// see only its CPU demand (docs/analyses.md). Where a scheduler or
    /// setting has no suspension-aware test, the suspension-oblivious test
    /// decides on the request-counted waits, and the report says so.
    #[default]
    Aware,
    /// The seeds' suspension-oblivious analysis: GPU waits from their
    /// theorems (seed 000 App. A, seed 004 App. A), and the wait and the GPU
    /// time count as CPU demand (seed 000 App. B).
    Oblivious,
    /// Request-counted waits ([`wait`]) with the suspension-oblivious
    /// test: what [`Method::Aware`] falls back to where it has no
    /// suspension-aware test (EDF), and what it also tries under P-FP,
    /// whose suspension-aware placement can lose to this one.
    CountedOblivious,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Aware => "suspension-aware",
            Method::Oblivious => "suspension-oblivious",
            Method::CountedOblivious => "suspension-oblivious on request-counted waits",
        }
    }
}
