//! Why a GPU-using task fails, and which GPU setting would guarantee more:
//! the largest term of each failing GPU task's demand with what would fix
//! it ([`explain_failures`], part of every report), and a search over the
//! GPU allocators and token counts for the one under which the most tasks
//! get a bound ([`suggest`], what `rtgpu analyze` prints below the notes).

use rtgpu_model::{GpuAllocator, Workload};

use crate::task::Time;

use super::report::{Report, TaskReport, TaskVerdict, Verdict};
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
    pub allocator: GpuAllocator,
    pub tokens_per_gpu: u32,
    /// Whether the setting turns engine locks on (ρ > 1 needs them).
    pub engine_locks: bool,
    /// Each GPU task's fixed GPU (`gpu.device`: task index, index into
    /// `Platform::gpus`) where the setting is a static assignment found by
    /// [`suggest`]'s search; empty otherwise.
    pub devices: Vec<(usize, usize)>,
    /// Tasks with a bound under it, and under the workload's own setting.
    pub bounded: usize,
    pub bounded_now: usize,
    pub tasks: usize,
    /// Whether the analysis finds the whole workload schedulable under it.
    pub schedulable: bool,
}

impl Suggestion {
    /// `w` (the workload the suggestion was made for) with the setting
    /// applied: what `rtgpu analyze --suggestion` writes.
    pub fn apply(&self, w: &Workload) -> Workload {
        let mut alt = w.clone();
        set_allocator(&mut alt, self.allocator, self.tokens_per_gpu);
        for &(i, g) in &self.devices {
            pin(&mut alt, i, g);
        }
        alt
    }

    pub fn describe(&self, w: &Workload) -> String {
        let all = if self.bounded == self.tasks {
            " (every task)"
        } else {
            ""
        };
        let devices = if self.devices.is_empty() {
            String::new()
        } else {
            let each: Vec<String> = self
                .devices
                .iter()
                .map(|&(t, g)| format!("{} on {}", w.tasks[t].name, w.platform.gpus[g].name))
                .collect();
            format!(
                " and `device` fixing each GPU task's GPU ({})",
                rtgpu_model::listing::listing(&each)
            )
        };
        format!(
            "suggestion: with {}{devices} the analysis bounds {} of {} tasks{all}, against {} \
             with the workload's setting",
            self.setting, self.bounded, self.tasks, self.bounded_now
        )
    }
}

/// Sets the GPU allocator and ρ (engine locks on where ρ > 1 needs them);
/// a non-static allocator drops every `device`. Returns whether it turned
/// engine locks on.
fn set_allocator(w: &mut Workload, allocator: GpuAllocator, rho: u32) -> bool {
    let p = &mut w.policy;
    p.gpu_allocator = allocator;
    p.tokens_per_gpu = rho;
    let locks = rho > 1 && !p.engine_locks;
    p.engine_locks |= locks;
    if !allocator.is_static() {
        for t in &mut w.tasks {
            if let Some(g) = &mut t.gpu {
                g.device = None;
            }
        }
    }
    locks
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

/// How good a report is for [`suggest`]: whole-workload schedulability,
/// then tasks bounded, then (to climb plateaus in the device search) the
/// smaller sum over GPU tasks of GPU wait / deadline.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
struct Score(bool, usize, f64);

fn score(r: &Report) -> Score {
    let waits: f64 = r
        .tasks
        .iter()
        .filter_map(|t| {
            let g = t.gpu.as_ref()?;
            let wait = g.token_blocking.unwrap_or(t.deadline.saturating_mul(4));
            Some(wait as f64 / t.deadline.max(1) as f64)
        })
        .sum();
    Score(r.verdict == Verdict::Schedulable, bounded(r), -waits)
}

/// Analyses one candidate workload, at most `budget` times in all.
struct Evaluator<'a> {
    extra: &'a Extra,
    budget: usize,
}

impl Evaluator<'_> {
    fn eval(&mut self, w: &Workload) -> Option<(Score, Report)> {
        if self.budget == 0 {
            return None;
        }
        self.budget -= 1;
        let r = analyze_with(w, self.extra).0;
        Some((score(&r), r))
    }
}

/// Analyses per [`suggest`] call: the candidate settings plus the device
/// search (a few passes of moves and swaps over a pool's GPU users).
const SEARCH_BUDGET: usize = 400;

/// The GPU allocator and token count (GPUSync with or without affinity,
/// static assignment FIFO or priority-ordered, the k-FMLP; ρ = 1 or 2,
/// ρ = 2 with engine locks) under which `rtgpu analyze` guarantees the
/// most, if more than the workload's own setting (`report`): a whole
/// schedulable workload first, then the most tasks with a bound. For the
/// static allocators on pools of several GPUs it also searches which GPU
/// each task should use (`gpu.device`): a local search over moving one
/// task to another GPU of its pool and swapping two tasks' GPUs, keeping
/// each change that scores better, from the round robin
/// ([`Workload::static_gpu`]). At most [`SEARCH_BUDGET`] analyses: for a
/// report, not inside sweeps.
pub fn suggest(w: &Workload, extra: &Extra, report: &Report) -> Option<Suggestion> {
    if !w.tasks.iter().any(|t| t.uses_gpu()) {
        return None;
    }
    let now = score(report);
    if now.0 && now.1 == w.tasks.len() {
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
    let mut ev = Evaluator {
        extra,
        budget: SEARCH_BUDGET,
    };
    let mut best: Option<(Score, Suggestion)> = None;
    for (allocator, rho) in candidates {
        let mut alt = w.clone();
        let own = w.policy.gpu_allocator == allocator && w.policy.tokens() == rho;
        let locks = set_allocator(&mut alt, allocator, rho);
        let mut setting = format!("gpu_allocator = \"{}\"", allocator.name());
        if allocator != GpuAllocator::KFmlp {
            setting.push_str(&format!(", tokens_per_gpu = {rho}"));
        }
        if locks {
            setting.push_str(", engine_locks = true");
        }
        let tried = if own {
            Some((now, report.clone()))
        } else {
            ev.eval(&alt)
        };
        let Some((mut sc, r)) = tried else {
            break;
        };
        let mut devices = Vec::new();
        if allocator.is_static() && rho == 1 {
            if let Some((s2, pins)) = search_devices(&alt, &r, sc, &mut ev) {
                (sc, devices) = (s2, pins);
            }
        }
        if sc > best.as_ref().map_or(now, |b| b.0) {
            let s = Suggestion {
                setting,
                allocator,
                tokens_per_gpu: rho,
                engine_locks: locks,
                devices,
                bounded: sc.1,
                bounded_now: now.1,
                tasks: w.tasks.len(),
                schedulable: sc.0,
            };
            best = Some((sc, s));
        }
    }
    // The wait tie-break only steers the search: a suggestion must make
    // the workload schedulable or bound more tasks.
    best.map(|b| b.1)
        .filter(|s| (s.schedulable, s.bounded) > (now.0, now.1))
}

/// The static assignment's device search of [`suggest`] on `w` (a static
/// allocator, ρ = 1), whose report `r` scores `sc`: the score and the
/// (task, GPU) pins of the best assignment it finds, if better than `w`.
/// Each GPU user outside any vGPU (and not a reservation) of a pool of two
/// or more GPUs gets a `device` in that pool (`r`'s cluster, or the one
/// pool under a global scheduler), starting from the round robin over
/// those users (the workload's own assignment unless GPU-using
/// reservations share the pool; either way only a starting point, since
/// every candidate is analysed as written); a `device` binds a task to
/// its GPU's cluster, as in a file.
fn search_devices(
    w: &Workload,
    r: &Report,
    sc: Score,
    ev: &mut Evaluator,
) -> Option<(Score, Vec<(usize, usize)>)> {
    let pools = w.gpu_pools();
    let pool_of = |i: usize| -> Option<usize> {
        let c = r.tasks.get(i)?.cluster.or(w.tasks[i].cluster).unwrap_or(0);
        Some(w.gpu_pool_of(c))
    };
    let users: Vec<(usize, usize)> = (0..w.tasks.len())
        .filter(|&i| {
            let t = &w.tasks[i];
            !t.reservation && t.gpu.as_ref().is_some_and(|g| g.vgpu.is_none())
        })
        .filter_map(|i| Some((i, pool_of(i)?)))
        .filter(|&(_, p)| pools.get(p).is_some_and(|p| p.gpus.len() > 1))
        .collect();
    if users.len() < 2 {
        return None;
    }
    // Pin every user where the round robin puts it.
    let mut cur = w.clone();
    let mut slots = vec![0usize; pools.len()];
    for &(i, p) in &users {
        let pinned = w.tasks[i].gpu.as_ref().and_then(|g| g.device).is_some();
        let gpu = w.static_gpu(i, slots[p], &pools[p].gpus)?;
        slots[p] += usize::from(!pinned);
        pin(&mut cur, i, gpu);
    }
    let mut best = sc;
    let mut improved_any = false;
    let result = |best: Score, cur: &Workload, improved_any: bool| {
        let pins = users
            .iter()
            .filter_map(|&(i, _)| Some((i, device(cur, i)?)));
        improved_any.then(|| (best, pins.collect()))
    };
    let mut improved = true;
    while improved {
        improved = false;
        // Moves: one task to another GPU of its pool.
        for &(i, p) in &users {
            for &g in &pools[p].gpus {
                if device(&cur, i) == Some(g) {
                    continue;
                }
                let mut alt = cur.clone();
                pin(&mut alt, i, g);
                let Some((s, _)) = ev.eval(&alt) else {
                    return result(best, &cur, improved_any);
                };
                if s > best {
                    (best, cur, improved, improved_any) = (s, alt, true, true);
                }
            }
        }
        // Swaps: two tasks of a pool on different GPUs trade them.
        for (a, &(i, p)) in users.iter().enumerate() {
            for &(j, q) in &users[a + 1..] {
                let (gi, gj) = (device(&cur, i), device(&cur, j));
                if p != q || gi == gj {
                    continue;
                }
                let (Some(gi), Some(gj)) = (gi, gj) else {
                    continue;
                };
                let mut alt = cur.clone();
                pin(&mut alt, i, gj);
                pin(&mut alt, j, gi);
                let Some((s, _)) = ev.eval(&alt) else {
                    return result(best, &cur, improved_any);
                };
                if s > best {
                    (best, cur, improved, improved_any) = (s, alt, true, true);
                }
            }
        }
    }
    result(best, &cur, improved_any)
}

fn device(w: &Workload, i: usize) -> Option<usize> {
    w.tasks[i].gpu.as_ref()?.device
}

/// Fixes task `i` on GPU `g`, binding it to `g`'s cluster (as `device`
/// does in a file).
fn pin(w: &mut Workload, i: usize, g: usize) {
    let cluster = w.platform.gpus[g].cluster;
    let t = &mut w.tasks[i];
    if let Some(part) = &mut t.gpu {
        part.device = Some(g);
        t.cluster = Some(cluster);
    }
}
