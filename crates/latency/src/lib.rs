//! # rtgpu-latency
//!
//! Measure and bound the platform's scheduling latency the way seed 002
//! (de Oliveira et al., "Demystifying the real-time Linux scheduling
//! latency", ECRTS 2020: rtsl) does, from traces of the kernels users
//! actually run:
//!
//! - [`parse`]: ftrace text (`trace`, `trace_pipe`), `trace-cmd report`
//!   and `perf script` lines to [`parse::Event`]s (fuzzed: never panics).
//! - [`trace`]: per-CPU IRQ/NMI/softirq occurrences with nested
//!   interference removed, the thread variables D_POID, D_PAIE, D_PSD,
//!   D_ST (seed 002 Table 1) where preemptirq events exist, osnoise and
//!   timerlat observations, and measured overheads.
//! - [`bound`]: the six interrupt characterisations of seed 002 §5 and the
//!   fixed point of seed 002 Theorem 8, with non-convergence reported.
//! - [`report`]: text (seed 002 Figure 24 style), JSON and SVG.
//! - [`overheads`]: the `[overheads]` table `rtgpu analyze` imports.
//! - [`record`]: tracefs set-up, measurement threads and streaming of the
//!   trace to a file (Linux, root).
//!
//! Times are integer nanoseconds throughout.
//!
//! ```
//! let text = "# tracer: nop\n\
//!   <idle>-0 [000] d.h1. 1.000000: irq_handler_entry: irq=5 name=eth0\n\
//!   <idle>-0 [000] d.h1. 1.000010: irq_handler_exit: irq=5 ret=handled\n";
//! let trace = rtgpu_latency::trace::parse_trace(text).unwrap();
//! let src = &trace.cpus[0].sources[0];
//! assert_eq!((src.name.as_str(), src.occurrences[0].duration), ("irq 5 eth0", 10_000));
//! ```

pub mod bound;
pub mod overheads;
pub mod parse;
pub mod record;
pub mod report;
pub mod trace;
