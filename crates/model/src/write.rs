//! [`Workload`] -> workload file text, so that tools can save what they
//! generate or change (and so that every example round-trips).

use std::fmt::Write as _;

use crate::types::*;
use crate::units::{format_bandwidth, format_duration, format_ppm, format_size};

/// Writes `workload` in the workload file format. Parsing the result gives
/// back an equal workload except for [`Task::location`]s. Every key is
/// written explicitly, so the file does not depend on defaults changing.
///
/// Never panics: indices that a hand-built workload gets wrong are written
/// as the name `"?"`, which the parser then rejects.
pub fn to_toml(w: &Workload) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_workload(&mut out, w);
    out
}

fn write_workload(o: &mut String, w: &Workload) -> std::fmt::Result {
    let p = &w.platform;
    let cluster_name = |i: usize| p.clusters.get(i).map_or("?", |c| c.name.as_str());
    let gpu_name = |i: usize| p.gpus.get(i).map_or("?", |g| g.name.as_str());
    let pcie_name = |i: usize| p.pcie.get(i).map_or("?", |n| n.name.as_str());

    writeln!(o, "name = {}", quote(&w.name))?;
    for c in &p.clusters {
        writeln!(o, "\n[[platform.cluster]]")?;
        writeln!(o, "name = {}", quote(&c.name))?;
        writeln!(o, "cores = {}", c.cores)?;
    }
    for g in &p.gpus {
        writeln!(o, "\n[[platform.gpu]]")?;
        writeln!(o, "name = {}", quote(&g.name))?;
        writeln!(o, "cluster = {}", quote(cluster_name(g.cluster)))?;
        writeln!(o, "copy_engines = {}", g.copy_engines)?;
        if let Some(a) = g.attach {
            writeln!(o, "attach = {}", quote(pcie_name(a)))?;
        }
    }
    for n in &p.pcie {
        writeln!(o, "\n[[platform.pcie]]")?;
        writeln!(o, "name = {}", quote(&n.name))?;
        if let Some(parent) = n.parent {
            writeln!(o, "parent = {}", quote(pcie_name(parent)))?;
        }
    }
    let b = &p.bandwidth;
    writeln!(o, "\n[platform.bandwidth]")?;
    writeln!(
        o,
        "host_to_device = \"{}\"",
        format_bandwidth(b.host_to_device)
    )?;
    writeln!(
        o,
        "device_to_host = \"{}\"",
        format_bandwidth(b.device_to_host)
    )?;
    writeln!(o, "peer = \"{}\"", format_bandwidth(b.peer))?;

    let v = &w.overheads;
    writeln!(o, "\n[overheads]")?;
    for (key, value) in [
        ("sch", v.sch),
        ("cxs", v.cxs),
        ("ipi", v.ipi),
        ("rel", v.rel),
        ("th", v.th),
        ("bh", v.bh),
        ("krel", v.krel),
        ("paisch", v.paisch),
        ("pairel", v.pairel),
        ("tck", v.tck),
        ("quantum", v.quantum),
    ] {
        writeln!(o, "{key} = \"{}\"", format_duration(value))?;
    }

    write_policy(o, &w.policy)?;

    for vg in &w.vgpus {
        writeln!(o, "\n[[vgpu]]")?;
        writeln!(o, "name = {}", quote(&vg.name))?;
        writeln!(o, "gpu = {}", quote(gpu_name(vg.gpu)))?;
        match vg.reservation {
            VgpuReservation::Share { ppm } => {
                writeln!(o, "share = \"{}\"", format_ppm(u64::from(ppm)))?
            }
            VgpuReservation::Budget { budget, period } => {
                writeln!(o, "budget = \"{}\"", format_duration(budget))?;
                writeln!(o, "period = \"{}\"", format_duration(period))?;
            }
        }
        let policy = match vg.policy {
            VgpuPolicy::Band => "band",
            VgpuPolicy::Fifo => "fifo",
            VgpuPolicy::FixedPriority => "fixed-priority",
        };
        writeln!(o, "policy = \"{policy}\"")?;
    }

    for t in &w.tasks {
        writeln!(o, "\n[[task]]")?;
        writeln!(o, "name = {}", quote(&t.name))?;
        writeln!(o, "wcet = \"{}\"", format_duration(t.wcet))?;
        writeln!(o, "period = \"{}\"", format_duration(t.period))?;
        writeln!(o, "deadline = \"{}\"", format_duration(t.deadline))?;
        if t.jitter != 0 {
            writeln!(o, "jitter = \"{}\"", format_duration(t.jitter))?;
        }
        if t.blocking != 0 {
            writeln!(o, "blocking = \"{}\"", format_duration(t.blocking))?;
        }
        if let Some(c) = t.cluster {
            writeln!(o, "cluster = {}", quote(cluster_name(c)))?;
        }
        if t.reservation {
            writeln!(o, "reservation = true")?;
        }
        if let Some(g) = &t.gpu {
            let kernels: Vec<String> = g
                .kernels
                .iter()
                .map(|k| format!("\"{}\"", format_duration(*k)))
                .collect();
            write!(
                o,
                "gpu = {{ copy_in = \"{}\", kernels = [{}], copy_out = \"{}\", state = \"{}\", interrupts = {}",
                format_size(g.copy_in),
                kernels.join(", "),
                format_size(g.copy_out),
                format_size(g.state),
                g.interrupts
            )?;
            if g.cpu > 0 {
                write!(o, ", cpu = \"{}\"", format_duration(g.cpu))?;
            }
            if let Some(vg) = g.vgpu {
                let name = w.vgpus.get(vg).map_or("?", |x| x.name.as_str());
                write!(o, ", vgpu = {}", quote(name))?;
            }
            if let Some(d) = g.device {
                let name = w.platform.gpus.get(d).map_or("?", |x| x.name.as_str());
                write!(o, ", device = {}", quote(name))?;
            }
            writeln!(o, " }}")?;
        }
    }
    Ok(())
}

fn write_policy(o: &mut String, p: &Policy) -> std::fmt::Result {
    writeln!(o, "\n[policy]")?;
    let scheduler = match p.cpu_scheduler {
        CpuScheduler::PartitionedFp => "P-FP",
        CpuScheduler::ClusteredFp => "C-FP",
        CpuScheduler::GlobalFp => "G-FP",
        CpuScheduler::ClusteredEdf => "C-EDF",
        CpuScheduler::GlobalEdf => "G-EDF",
    };
    writeln!(o, "cpu_scheduler = \"{scheduler}\"")?;
    let order_name = |order: SortOrder| match order {
        SortOrder::DecreasingUtilization => "decreasing-utilization",
        SortOrder::DecreasingSize => "decreasing-size",
    };
    match p.partitioning {
        Partitioning::Fit { rule, order } => {
            let rule = match rule {
                FitRule::First => "first-fit",
                FitRule::Best => "best-fit",
                FitRule::Worst => "worst-fit",
                FitRule::Next => "next-fit",
            };
            writeln!(o, "partitioning = \"{rule}\"")?;
            writeln!(o, "partition_order = \"{}\"", order_name(order))?;
        }
        Partitioning::PdmsHpts { order } => {
            writeln!(o, "partitioning = \"pdms-hpts\"")?;
            writeln!(o, "partition_order = \"{}\"", order_name(order))?;
        }
        Partitioning::PdmsHptsDs => writeln!(o, "partitioning = \"pdms-hpts-ds\"")?,
    }
    let priority = match p.priority {
        PriorityAssignment::DeadlineMonotonic => "DM",
        PriorityAssignment::RateMonotonic => "RM",
        PriorityAssignment::Audsley => "Audsley",
    };
    writeln!(o, "priority = \"{priority}\"")?;
    writeln!(o, "gpu_allocator = \"{}\"", p.gpu_allocator.name())?;
    writeln!(o, "tokens_per_gpu = {}", p.tokens_per_gpu)?;
    writeln!(o, "engine_locks = {}", p.engine_locks)?;
    let peer = match p.peer_locking {
        PeerLocking::Dgl => "dgl",
        PeerLocking::Nested => "nested",
    };
    writeln!(o, "peer_copies = \"{peer}\"")?;
    let handoff = match p.engine_handoff {
        EngineHandoff::Completion => "completion",
        EngineHandoff::Device => "device",
    };
    writeln!(o, "engine_handoff = \"{handoff}\"")?;
    match p.chunk_size {
        Some(c) => writeln!(o, "chunk_size = \"{}\"", format_size(c))?,
        None => writeln!(o, "chunk_size = \"none\"")?,
    }
    match p.interrupts {
        InterruptHandling::Slih => writeln!(o, "interrupts = \"slih\"")?,
        InterruptHandling::Pai => writeln!(o, "interrupts = \"pai\"")?,
        InterruptHandling::Klmirqd => writeln!(o, "interrupts = \"klmirqd\"")?,
        InterruptHandling::FixedPriorityThreads { priority } => {
            writeln!(o, "interrupts = {{ threads = {priority} }}")?
        }
    }
    // Debug formatting of f64 is the shortest text that reads back exactly
    // and is valid TOML (`16.0`, `0.1`, `1e-7`).
    writeln!(o, "gpu_speedup = {:?}", p.gpu_speedup)
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000A\"");
    }

    #[test]
    fn speedup_formats_as_toml_float() {
        let mut p = Policy::default();
        for r in [16.0, 0.1, 1e-7, 1e300, 2.5] {
            p.gpu_speedup = r;
            let mut s = String::new();
            write_policy(&mut s, &p).unwrap();
            let line = s.lines().last().unwrap();
            let value: f64 = line.trim_start_matches("gpu_speedup = ").parse().unwrap();
            assert_eq!(value, r);
        }
    }
}
