//! The measured overheads as an `[overheads]` TOML table, the format
//! `rtgpu analyze --overheads FILE` imports (crates/model README,
//! `[overheads]`). Keys that this trace cannot measure are left out, so
//! they keep seed 000 Table III's value (`base = "table-iii"`).

use std::fmt::Write as _;

use crate::trace::MeasuredOverheads;

/// The `[overheads]` table for `m`, with a comment saying where each value
/// came from.
pub fn to_toml(m: &MeasuredOverheads, source: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Measured by `rtgpu latency report` from {source}.");
    let _ = writeln!(
        o,
        "# Keys not listed were not measurable from the trace and keep"
    );
    let _ = writeln!(o, "# seed 000 Table III's values.");
    let _ = writeln!(o, "[overheads]");
    let _ = writeln!(o, "base = \"table-iii\"");
    for (key, value, what) in [
        (
            "th",
            m.th,
            "longest device IRQ handler (top half), nested interrupts removed",
        ),
        ("bh", m.bh, "longest softirq (bottom half)"),
        ("tck", m.tck, "longest local timer interrupt"),
        (
            "rel",
            m.rel,
            "longest timer interrupt that woke a thread (release)",
        ),
        (
            "ipi",
            m.ipi,
            "longest remote wake-up to reschedule-IPI entry on the target CPU",
        ),
        (
            "sch",
            m.sch,
            "D_PSD - D_ST: scheduler with preemption disabled, IRQs enabled",
        ),
        (
            "cxs",
            m.cxs,
            "D_ST: scheduler with IRQs disabled around the context switch",
        ),
    ] {
        match value {
            Some(v) => {
                let _ = writeln!(o, "{key} = \"{v} ns\"  # {what}");
            }
            None => {
                let _ = writeln!(o, "# {key}: not measurable from this trace ({what})");
            }
        }
    }
    o
}
