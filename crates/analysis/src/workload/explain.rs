//! Why a GPU-using task fails, and which GPU setting would guarantee more:
//! the largest term of each failing GPU task's demand with what would fix
//! it ([`explain_failures`], part of every report), and a search over the
//! GPU allocators and token counts for the one under which the most tasks
//! get a bound ([`suggest`], what `rtgpu analyze` prints below the notes).

use rtgpu_model::{GpuAllocator, Workload};

use crate::task::Time;

use super::report::{Report, TaskReport, TaskVerdict};
use super::{analyze_with, Extra};

use rtgpu_model::units::display_duration as duration_words;

/// One sentence per GPU-using task that misses its deadline: its own
/// demand (CPU, GPU time, GPU wait, the holds it waits behind), whether it
/// alone exceeds the deadline and by how much, and its largest term with
/// what would shrink it. `aware`: the suspension-aware test decided (the
/// demand is C' + S); otherwise the inflated cost.
pub(super) fn explain_failures(w: &Workload, tasks: &[TaskReport], aware: bool) -> Vec<String> {
    let mut out = Vec::new();
    for t in tasks {
        if !t.uses_gpu || t.verdict != TaskVerdict::MissesDeadline {
            continue;
        }
        let (Some(g), Some(c)) = (&t.gpu, &t.charges) else {
            continue;
        };
        if g.unbounded_because.is_some() {
            continue; // the notes already say why its wait has no bound
        }
        let gpu_time = g.overhead_input(c.cpu).gpu.map_or(0, |u| u.gpu_time);
        let wait = c.gpu_blocking;
        let cpu = if aware {
            g.suspension_split(c).cpu
        } else {
            c.total.saturating_sub(wait).saturating_sub(gpu_time)
        };
        let own = cpu.saturating_add(gpu_time).saturating_add(wait);
        let behind: Vec<&str> = g
            .wait_behind
            .iter()
            .filter_map(|&j| w.tasks.get(j).map(|x| x.name.as_str()))
            .collect();
        let behind = if behind.is_empty() {
            String::new()
        } else {
            format!(" behind {}", rtgpu_model::listing::listing(&behind))
        };
        let terms = [
            ("GPU wait", wait),
            ("GPU time", gpu_time),
            ("CPU demand", cpu),
        ];
        let (largest, size) = terms
            .iter()
            .copied()
            .max_by_key(|&(_, v)| v)
            .unwrap_or(("CPU demand", cpu));
        let fix = match largest {
            "GPU wait" if g.vgpu_share.is_some() => {
                "a larger budget for its vGPU (seed 001's BAND reservation)"
            }
            "GPU wait" => {
                "fewer or shorter GPU holds ahead of it (its own GPU, more tokens with engine \
                 locks, or another allocator: see the suggestion, if any)"
            }
            "GPU time" => "shorter copies and kernels (chunking, a faster link, smaller frames)",
            _ => "less CPU work or overhead (fewer interrupts in its cluster)",
        };
        let head = format!(
            "{}: CPU demand {}, GPU time {}, GPU wait {}{behind}",
            t.name,
            duration_words(cpu),
            duration_words(gpu_time),
            duration_words(wait)
        );
        let d: Time = t.deadline;
        out.push(if own > d {
            format!(
                "{head}: {} alone, {} more than its deadline {}; its largest term is its {largest} \
                 ({}): it needs {} less, e.g. {fix}",
                duration_words(own),
                duration_words(own - d),
                duration_words(d),
                duration_words(size),
                duration_words(own - d),
            )
        } else {
            format!(
                "{head}: {} alone fits in its deadline {}, but not with the interference of the \
                 tasks above it; its largest term is its {largest} ({}): {fix}, or a higher \
                 priority",
                duration_words(own),
                duration_words(d),
                duration_words(size),
            )
        });
    }
    out
}

/// A GPU setting and what it guarantees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// The `[policy]` keys to set, as in a workload file.
    pub setting: String,
    /// Tasks with a bound under it, and under the workload's own setting.
    pub bounded: usize,
    pub bounded_now: usize,
    pub tasks: usize,
}

impl Suggestion {
    pub fn describe(&self) -> String {
        let all = if self.bounded == self.tasks {
            " (every task)"
        } else {
            ""
        };
        format!(
            "suggestion: with {} the analysis bounds {} of {} tasks{all}, against {} with the \
             workload's setting",
            self.setting, self.bounded, self.tasks, self.bounded_now
        )
    }
}

/// Tasks with a bound, conditional ones included (`meets-deadline-if`).
fn bounded(r: &Report) -> usize {
    r.tasks
        .iter()
        .filter(|t| {
            matches!(
                t.verdict,
                TaskVerdict::MeetsDeadline
                    | TaskVerdict::MeetsDeadlineIf
                    | TaskVerdict::BoundedTardiness
            )
        })
        .count()
}

/// The GPU allocator and token count (GPUSync with or without affinity,
/// static assignment, the k-FMLP; ρ = 1 or 2, ρ = 2 with engine locks)
/// under which `rtgpu analyze` gives the most tasks a bound, if that is
/// more than the workload's own setting gives (`report`). One analysis
/// per candidate: for a report, not inside sweeps.
pub fn suggest(w: &Workload, extra: &Extra, report: &Report) -> Option<Suggestion> {
    if !w.tasks.iter().any(|t| t.uses_gpu()) {
        return None;
    }
    let now = bounded(report);
    if now == w.tasks.len() {
        return None;
    }
    let candidates = [
        (GpuAllocator::GpuSync { affinity: true }, 1),
        (GpuAllocator::GpuSync { affinity: true }, 2),
        (GpuAllocator::GpuSync { affinity: false }, 1),
        (GpuAllocator::GpuSync { affinity: false }, 2),
        (GpuAllocator::Static, 1),
        (GpuAllocator::Static, 2),
        (GpuAllocator::StaticPriority, 1),
        (GpuAllocator::KFmlp, 1),
    ];
    let mut best: Option<Suggestion> = None;
    for (allocator, rho) in candidates {
        let mut alt = w.clone();
        let p = &mut alt.policy;
        if p.gpu_allocator == allocator && p.tokens() == rho {
            continue;
        }
        p.gpu_allocator = allocator;
        p.tokens_per_gpu = rho;
        let locks = rho > 1 && !p.engine_locks;
        if locks {
            p.engine_locks = true;
        }
        let n = bounded(&analyze_with(&alt, extra).0);
        if n > best.as_ref().map_or(now, |b| b.bounded) {
            let mut setting = format!("gpu_allocator = \"{}\"", allocator.name());
            if allocator != GpuAllocator::KFmlp {
                setting.push_str(&format!(", tokens_per_gpu = {rho}"));
            }
            if locks {
                setting.push_str(", engine_locks = true");
            }
            best = Some(Suggestion {
                setting,
                bounded: n,
                bounded_now: now,
                tasks: w.tasks.len(),
            });
        }
    }
    best
}
