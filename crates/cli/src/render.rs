//! Text rendering of an analysis report: a header, a task table, split-task
//! details, a core table, the informative bounds, notes, and the verdict in
//! one sentence naming the test that decided it.

use std::fmt::Write;

use rtgpu_analysis::workload::{Report, TaskVerdict, Verdict};
use rtgpu_analysis::Time;
use rtgpu_model::Workload;

/// Human duration: the largest unit that keeps at least one integer digit,
/// up to 4 significant decimals, exact for whole units ("10 ms", "2.5 us").
pub fn duration(ns: Time) -> String {
    rtgpu_model::units::display_duration(ns)
}

fn opt_duration(v: Option<Time>) -> String {
    v.map_or_else(|| "-".into(), duration)
}

fn task_verdict(v: TaskVerdict) -> &'static str {
    match v {
        TaskVerdict::MeetsDeadline => "ok",
        TaskVerdict::MeetsDeadlineIf => "ok if",
        TaskVerdict::MissesDeadline => "MISS",
        TaskVerdict::BoundedTardiness => "bounded",
        TaskVerdict::UnboundedTardiness => "UNBOUNDED",
        TaskVerdict::Unplaced => "UNPLACED",
        TaskVerdict::NotAnalysed => "not analysed",
    }
}

fn cores_list(cores: &[u32]) -> String {
    rtgpu_model::listing::ranges(cores)
}

pub fn report_text(w: &Workload, r: &Report) -> String {
    let mut o = String::new();
    let m = w.platform.total_cores();
    let _ = writeln!(
        o,
        "workload   {}: {} task(s), {} core(s) in {} cluster(s), {} GPU(s)",
        r.workload,
        r.tasks.len(),
        m,
        w.platform.clusters.len(),
        w.platform.gpus.len()
    );
    let _ = writeln!(
        o,
        "load       U = {:.4} ({:.1}% of {} cores)",
        r.total_utilization,
        100.0 * r.total_utilization / m.max(1) as f64,
        m
    );
    let _ = writeln!(o, "scheduler  {}: {}", r.scheduler, r.method);
    if let Some(g) = &r.gpu_analysis {
        let _ = writeln!(o, "GPU tasks  {g}");
    }
    let _ = writeln!(o);

    let edf = r.soft;
    let _ = writeln!(
        o,
        "{:<16} {:>10} {:>10} {:>10} {:>7} {:>8} {:>5} {:>11} {:>11}  verdict",
        "task",
        "C",
        "T",
        "D",
        "U",
        "cores",
        "prio",
        "R bound",
        if edf { "tardiness" } else { "slack" }
    );
    for t in &r.tasks {
        let extra = if edf {
            opt_duration(t.tardiness)
        } else {
            t.response_time
                .filter(|&rt| rt <= t.deadline)
                .map_or_else(|| "-".into(), |rt| duration(t.deadline - rt))
        };
        let _ = writeln!(
            o,
            "{:<16} {:>10} {:>10} {:>10} {:>7.4} {:>8} {:>5} {:>11} {:>11}  {}",
            truncate(&t.name, 16),
            duration(t.wcet),
            duration(t.period),
            duration(t.deadline),
            t.utilization,
            cores_list(&t.cores),
            t.priority.map_or_else(|| "-".into(), |p| p.to_string()),
            opt_duration(t.response_time),
            extra,
            task_verdict(t.verdict)
        );
    }

    gpu_sections(&mut o, r);

    let split: Vec<_> = r.tasks.iter().filter(|t| t.pieces.len() > 1).collect();
    if !split.is_empty() {
        let _ = writeln!(
            o,
            "\nsplit tasks (seed 003: each piece runs its budget, then the job migrates)"
        );
        for t in split {
            let pieces: Vec<String> = t
                .pieces
                .iter()
                .map(|p| {
                    format!(
                        "core {} budget {} from +{} (D {}, R {})",
                        p.core,
                        duration(p.budget),
                        duration(p.release_offset),
                        duration(p.deadline),
                        opt_duration(p.response_time)
                    )
                })
                .collect();
            let _ = writeln!(o, "  {}: {}", t.name, pieces.join(" -> "));
        }
    }

    if !r.cores.is_empty() {
        let _ = writeln!(
            o,
            "\n{:<5} {:<10} {:>7}  tasks in priority order",
            "core", "cluster", "U"
        );
        for c in &r.cores {
            let cluster = w
                .platform
                .clusters
                .get(c.cluster)
                .map_or("-", |k| k.name.as_str());
            let _ = writeln!(
                o,
                "{:<5} {:<10} {:>7}  {}",
                c.core,
                truncate(cluster, 10),
                c.utilization
                    .map_or_else(|| "-".into(), |u| format!("{u:.4}")),
                rtgpu_model::listing::listing(&c.tasks)
            );
        }
    }
    if w.platform.clusters.len() > 1 {
        let _ = writeln!(
            o,
            "\n{:<10} {:>5} {:>7} {:>6}",
            "cluster", "cores", "U", "tasks"
        );
        for c in &r.clusters {
            let _ = writeln!(
                o,
                "{:<10} {:>5} {:>7.4} {:>6}",
                truncate(&c.name, 10),
                c.cores,
                c.utilization,
                c.tasks
            );
        }
    }

    if !r.bounds.is_empty() {
        let _ = writeln!(
            o,
            "\nutilization bounds (sufficient tests, for information)"
        );
        for b in &r.bounds {
            let status = if !b.applies {
                "does not apply (needs implicit deadlines, no jitter or blocking)"
            } else if b.passes {
                "passes"
            } else {
                "inconclusive"
            };
            let _ = writeln!(
                o,
                "  {:<28} {:.4} vs bound {:.4}: {}  [{}]",
                b.name, b.value, b.bound, status, b.source
            );
        }
    }
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    let word = match r.verdict {
        Verdict::Schedulable if r.soft => "SCHEDULABLE (soft real time: bounded tardiness)",
        Verdict::Schedulable => "SCHEDULABLE",
        Verdict::NotSchedulable => "NOT SCHEDULABLE",
        Verdict::NotAnalysed => "NOT ANALYSED",
    };
    let _ = writeln!(o, "\nverdict: {word}: {}", r.reason);
    o
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('~');
        t
    }
}

/// The GPU and overhead breakdown of every task: where its GPU wait comes
/// from (seed 000 App. A, seed 004 App. A, vGPU) and what its inflated cost
/// is made of (seed 000 App. B), so a reader sees which charge dominates.
fn gpu_sections(o: &mut String, r: &Report) {
    let gpu: Vec<_> = r
        .tasks
        .iter()
        .filter_map(|t| t.gpu.as_ref().map(|g| (t, g)))
        .collect();
    if !gpu.is_empty() {
        let aware = gpu.iter().any(|(_, g)| g.hold.is_some());
        let _ = writeln!(
            o,
            "\nGPU use (wait bounds: {})",
            if aware {
                "request-counted, the other tasks' own holds that can be ahead of a request \
                 (docs/analyses.md); vGPU members seed 001"
            } else {
                "seed 000 App. A, seed 004 App. A, vGPU"
            }
        );
        // The CPU time inside sections, when some task has any.
        let in_section = gpu.iter().any(|(_, g)| g.section_cpu > 0);
        let cpu_col = |v: String| {
            if in_section {
                format!(" {v:>10}")
            } else {
                String::new()
            }
        };
        let _ = writeln!(
            o,
            "{:<16} {:>10} {:>10}{} {:>4} {:>11} {:>11} {:>11}  allocator",
            "task",
            "copies",
            "kernels",
            cpu_col("CPU in".into()),
            "eta",
            "GPU wait",
            "engine blk",
            if aware { "own hold" } else { "token hold" }
        );
        for (t, g) in &gpu {
            let _ = writeln!(
                o,
                "{:<16} {:>10} {:>10}{} {:>4} {:>11} {:>11} {:>11}  {}",
                truncate(&t.name, 16),
                duration(g.copy_time),
                duration(g.kernel_time),
                cpu_col(duration(g.section_cpu)),
                g.interrupts,
                if g.unbounded_because.is_some() {
                    "unbounded".to_string()
                } else {
                    opt_duration(g.token_blocking)
                },
                opt_duration(g.engine_blocking),
                opt_duration(g.hold.or(g.token_hold_time)),
                match g.requests_ahead {
                    Some(n) => format!("{} ({n} ahead)", g.allocator),
                    None => g.allocator.clone(),
                }
            );
        }
    }
    let charged: Vec<_> = r
        .tasks
        .iter()
        .filter_map(|t| t.charges.map(|c| (t, c)))
        .filter(|(t, c)| c.total != t.wcet)
        .collect();
    if charged.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\ninflated costs (seed 000 App. B Eqs. 6-24; {})",
        if r.suspension_aware {
            "the suspension-aware test charges GPU wait and GPU time to the task's own \
             response only, the rest as CPU demand"
        } else {
            "GPU wait and GPU time count as CPU demand"
        }
    );
    let _ = writeln!(
        o,
        "{:<16} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9}  largest overhead",
        "task",
        "C",
        "inflated",
        "GPU wait",
        "GPU",
        "sched",
        "release",
        "H",
        "irq",
        "bh sched",
        "ticks"
    );
    for (t, c) in charged {
        let sat = |v: u64| {
            if v == u64::MAX {
                "unbounded".to_string()
            } else {
                duration(v)
            }
        };
        let (name, size) = c.dominant_overhead();
        let _ = writeln!(
            o,
            "{:<16} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9}  {}",
            truncate(&t.name, 16),
            duration(t.wcet),
            sat(c.total),
            sat(c.gpu_blocking),
            sat(c.gpu),
            duration(c.scheduling),
            duration(c.release),
            c.interrupt_count,
            sat(c.interrupts),
            duration(c.bottom_half_scheduling),
            sat(c.ticks),
            if size == 0 {
                "-".to_string()
            } else {
                format!("{name} ({})", sat(size))
            }
        );
    }
}

/// The `p`-th percentile (nearest rank) of ascending `sorted`; 0 if empty.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One line summing up ascending durations `sorted` (priority inversions,
/// delays): count, percentiles, max and total, or "none observed".
pub fn distribution(what: &str, sorted: &[u64]) -> String {
    if sorted.is_empty() {
        return format!("{what}: none observed");
    }
    format!(
        "{what}: {}   p50 {}   p90 {}   p99 {}   max {}   total {}",
        sorted.len(),
        duration(percentile(sorted, 50.0)),
        duration(percentile(sorted, 90.0)),
        duration(percentile(sorted, 99.0)),
        duration(*sorted.last().unwrap_or(&0)),
        duration(sorted.iter().sum())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration(0), "0 ns");
        assert_eq!(duration(10_000_000), "10 ms");
        assert_eq!(duration(2_500), "2.5 us");
        assert_eq!(duration(1_234_567), "1.234 ms");
        assert_eq!(duration(999), "999 ns");
        assert_eq!(duration(3_000_000_000), "3 s");
    }

    #[test]
    fn core_ranges() {
        assert_eq!(cores_list(&[0, 1, 2, 3, 5]), "0-3,5");
        assert_eq!(cores_list(&[2]), "2");
        assert_eq!(cores_list(&[0, 1]), "0,1");
        assert_eq!(cores_list(&[]), "-");
    }
}
