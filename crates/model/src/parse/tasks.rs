//! `[[vgpu]]` and `[[task]]`.

use std::collections::{HashMap, HashSet};

use toml::de::DeValue;

use super::*;
use crate::schema;
use crate::units;

pub(super) fn parse_vgpus(cx: &mut Cx, v: &Val, plat: &ParsedPlatform) -> (Vec<Vgpu>, Names) {
    let mut names = Names::new("vGPU");
    let mut out = Vec::new();
    // Sum of shares per GPU in units of 1e-18 (exact for shares; budgets
    // divide down, which can hide at most 1e-18 per vGPU).
    const ONE: u128 = 1_000_000_000_000_000_000;
    let mut used: HashMap<usize, u128> = HashMap::new();
    let gpus = &plat.platform.gpus;
    for t in read_tables(cx, v, "vgpu", schema::VGPU) {
        let name_v = t.required(cx, "name", "");
        let name = name_v.and_then(|v| read_name(cx, v, &t.field("name")));
        add_name(cx, &mut names, name.clone(), name_v, &t.field("name"));
        let gpu = match t.get("gpu") {
            Some(gv) => plat.gpu_names.resolve(cx, gv, &t.field("gpu")),
            None if gpus.len() == 1 => Some(0),
            None => {
                if plat.gpu_names.complete {
                    cx.error(
                        t.start,
                        &t.field("gpu"),
                        if gpus.is_empty() {
                            "a vGPU needs a GPU, but the platform has no GPUs".to_string()
                        } else {
                            format!(
                                "missing required key `gpu`: the platform has {} GPUs",
                                gpus.len()
                            )
                        },
                    );
                }
                None
            }
        };
        let reservation = match (t.get("share"), t.get("budget"), t.get("period")) {
            (Some(sv), b, p) => {
                for (key, other) in [("budget", b), ("period", p)] {
                    if let Some(ov) = other {
                        cx.error(
                            ov.span().start,
                            &t.field(key),
                            "give either `share` or `budget` and `period`, not both",
                        );
                    }
                }
                let field = t.field("share");
                read_quantity(cx, sv, &field, Quantity::Percent).and_then(|ppm| {
                    if ppm == 0 || ppm > 1_000_000 {
                        cx.error(
                            sv.span().start,
                            &field,
                            "a share must be above 0% and at most 100%",
                        );
                        None
                    } else {
                        u32::try_from(ppm)
                            .ok()
                            .map(|ppm| (VgpuReservation::Share { ppm }, sv))
                    }
                })
            }
            (None, Some(bv), Some(pv)) => {
                let budget = read_duration(cx, bv, &t.field("budget"));
                let period = read_duration(cx, pv, &t.field("period"));
                match (budget, period) {
                    (Some(b), Some(p)) => {
                        if p == 0 {
                            cx.error(
                                pv.span().start,
                                &t.field("period"),
                                "the period must be positive",
                            );
                            None
                        } else if b == 0 {
                            cx.error(
                                bv.span().start,
                                &t.field("budget"),
                                "the budget must be positive",
                            );
                            None
                        } else if b > p {
                            cx.error(
                                bv.span().start,
                                &t.field("budget"),
                                format!(
                                    "the budget ({}) exceeds the period ({})",
                                    units::format_duration(b),
                                    units::format_duration(p)
                                ),
                            );
                            None
                        } else {
                            Some((
                                VgpuReservation::Budget {
                                    budget: b,
                                    period: p,
                                },
                                bv,
                            ))
                        }
                    }
                    _ => None,
                }
            }
            (None, b, p) => {
                let (key, hint) = match (b, p) {
                    (Some(_), None) => ("period", " (the budget's replenishment period)"),
                    (None, Some(_)) => ("budget", " (the budget per period)"),
                    _ => ("share", ", e.g. share = \"60%\" (or `budget` and `period`)"),
                };
                cx.error(
                    t.start,
                    &t.field(key),
                    format!("missing required key `{key}`{hint}"),
                );
                None
            }
        };
        let policy = t
            .get("policy")
            .map(|pv| {
                read_choice(
                    cx,
                    pv,
                    &t.field("policy"),
                    "vGPU policy",
                    &[
                        ("band", VgpuPolicy::Band),
                        ("fifo", VgpuPolicy::Fifo),
                        ("fixed-priority", VgpuPolicy::FixedPriority),
                        ("fp", VgpuPolicy::FixedPriority),
                    ],
                    schema::VGPU_POLICIES,
                )
            })
            .unwrap_or(Some(VgpuPolicy::Band));
        if let (Some(g), Some((res, rv))) = (gpu, &reservation) {
            let share = match *res {
                VgpuReservation::Share { ppm } => u128::from(ppm) * 1_000_000_000_000,
                VgpuReservation::Budget { budget, period } => {
                    u128::from(budget) * ONE / u128::from(period.max(1))
                }
            };
            let total = used.entry(g).or_insert(0);
            let before = *total;
            *total += share;
            if *total > ONE && before <= ONE {
                cx.error(
                    rv.span().start,
                    &t.path,
                    format!(
                        "the vGPUs of GPU \"{}\" reserve more than 100% of it",
                        gpus.get(g).map_or("", |x| x.name.as_str()).escape_debug()
                    ),
                );
            }
        }
        if let (Some(name), Some(gpu), Some((reservation, _)), Some(policy)) =
            (name.clone(), gpu, reservation, policy)
        {
            out.push(Vgpu {
                name,
                gpu,
                reservation,
                policy,
            });
        } else {
            // Keep indices aligned with `names`; the file has errors, so this
            // placeholder (on no GPU) is never returned.
            names.complete = false;
            out.push(Vgpu {
                name: name.unwrap_or_default(),
                gpu: usize::MAX,
                reservation: VgpuReservation::Share { ppm: 0 },
                policy: VgpuPolicy::Band,
            });
        }
    }
    (out, names)
}

pub(super) fn parse_tasks(
    cx: &mut Cx,
    v: &Val,
    plat: &ParsedPlatform,
    vgpus: &[Vgpu],
    vgpu_names: &Names,
    allocator: Option<GpuAllocator>,
) -> Vec<Task> {
    let tables = read_tables(cx, v, "task", schema::TASK);
    if tables.is_empty() && matches!(v.get_ref(), DeValue::Array(a) if a.is_empty()) {
        cx.error(
            v.span().start,
            "task",
            "the workload has no tasks: add at least one [[task]] table",
        );
    }
    let mut out: Vec<Task> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut too_many_reported = false;
    for t in &tables {
        let (count, count_v) = match t.get("count") {
            Some(cv) => (read_int(cx, cv, &t.field("count"), 1, 10_000), Some(cv)),
            None => (Some(1), None),
        };
        let task = parse_task(cx, t, plat, vgpus, vgpu_names, allocator);
        let (Some(task), Some(count)) = (task, count) else {
            continue;
        };
        let Ok(count) = usize::try_from(count) else {
            continue;
        };
        if out.len().saturating_add(count) > MAX_TASKS {
            if !too_many_reported {
                cx.error(
                    count_v.map_or(t.start, |c| c.span().start),
                    &t.field("count"),
                    format!("too many tasks: at most {MAX_TASKS} in one workload"),
                );
                too_many_reported = true;
            }
            continue;
        }
        let name_v = t.get("name");
        let base = task.name.clone();
        for i in 0..count {
            let mut copy = task.clone();
            if count_v.is_some() {
                copy.name = format!("{base}-{i}");
            }
            if !seen.insert(copy.name.clone()) {
                cx.error(
                    name_v.map_or(t.start, |n| n.span().start),
                    &t.field("name"),
                    format!("duplicate task name \"{}\"", copy.name.escape_debug()),
                );
            }
            out.push(copy);
        }
    }
    out
}

fn parse_task(
    cx: &mut Cx,
    t: &Tbl,
    plat: &ParsedPlatform,
    vgpus: &[Vgpu],
    vgpu_names: &Names,
    allocator: Option<GpuAllocator>,
) -> Option<Task> {
    let name = t
        .required(cx, "name", "")
        .and_then(|v| read_name(cx, v, &t.field("name")));
    let wcet_v = t.required(
        cx,
        "wcet",
        ", the worst-case execution time, e.g. wcet = \"2 ms\"",
    );
    let period_v = t.required(cx, "period", ", e.g. period = \"10 ms\"");
    let wcet = wcet_v.and_then(|v| read_duration(cx, v, &t.field("wcet")));
    let period = period_v.and_then(|v| read_duration(cx, v, &t.field("period")));
    let deadline_v = t.get("deadline");
    let deadline = match deadline_v {
        Some(v) => read_duration(cx, v, &t.field("deadline")).map(Some),
        None => Some(None),
    };
    let jitter_v = t.get("jitter");
    let jitter = match jitter_v {
        Some(v) => read_duration(cx, v, &t.field("jitter")),
        None => Some(0),
    };
    let blocking = match t.get("blocking") {
        Some(v) => read_duration(cx, v, &t.field("blocking")),
        None => Some(0),
    };
    let cluster = match t.get("cluster") {
        Some(v) => plat
            .cluster_names
            .resolve(cx, v, &t.field("cluster"))
            .map(Some),
        None => Some(None),
    };
    let reservation_v = t.get("reservation");
    let reservation = match reservation_v {
        Some(v) => read_bool(cx, v, &t.field("reservation")),
        None => Some(false),
    };

    // Zero checks and C <= D, J < T.
    if let (Some(0), Some(v)) = (wcet, wcet_v) {
        cx.error(
            v.span().start,
            &t.field("wcet"),
            "the wcet must be positive",
        );
    }
    if let (Some(0), Some(v)) = (period, period_v) {
        cx.error(
            v.span().start,
            &t.field("period"),
            "the period must be positive",
        );
    }
    if let (Some(Some(0)), Some(v)) = (deadline, deadline_v) {
        cx.error(
            v.span().start,
            &t.field("deadline"),
            "the deadline must be positive",
        );
    }
    let effective_deadline = match deadline {
        Some(Some(d)) => Some(d),
        Some(None) => period,
        None => None,
    };
    if let (Some(c), Some(d), Some(v)) = (wcet, effective_deadline, wcet_v) {
        if c > d && d > 0 {
            let deadline = if deadline_v.is_some() {
                format!("deadline ({})", units::format_duration(d))
            } else {
                format!(
                    "implicit deadline (the period, {})",
                    units::format_duration(d)
                )
            };
            cx.error(
                v.span().start,
                &t.field("wcet"),
                format!(
                    "the wcet ({}) exceeds the {deadline}: the task can never meet its deadline",
                    units::format_duration(c),
                ),
            );
        }
    }
    if let (Some(j), Some(p), Some(v)) = (jitter, period, jitter_v) {
        if j >= p && p > 0 {
            cx.error(
                v.span().start,
                &t.field("jitter"),
                format!(
                    "the release jitter ({}) must be smaller than the period ({})",
                    units::format_duration(j),
                    units::format_duration(p)
                ),
            );
        }
    }

    if let (Some(true), Some(v)) = (reservation, reservation_v) {
        let field = t.field("reservation");
        if cluster.flatten().is_some() {
            cx.error(
                v.span().start,
                &field,
                "a CPU reservation runs on every CPU (SCHED_DEADLINE threads keep the affinity \
                 of their whole root domain): drop the task's `cluster`",
            );
        }
        if let (Some(Some(d)), Some(p)) = (deadline, period) {
            if d > p {
                cx.error(
                    v.span().start,
                    &field,
                    format!(
                        "a CPU reservation needs deadline <= period (SCHED_DEADLINE: runtime <= \
                         deadline <= period); the deadline is {} and the period {}",
                        units::format_duration(d),
                        units::format_duration(p)
                    ),
                );
            }
        }
    }
    let gpu = match t.get("gpu") {
        Some(gv) => {
            check_gpu_available(cx, t, gv, cluster.flatten(), plat);
            read_table(cx, gv, t.field("gpu"), schema::GPU_PART)
                .and_then(|g| {
                    let on = GpuContext {
                        cluster: cluster.flatten(),
                        wcet,
                        reservation: reservation == Some(true),
                        allocator,
                    };
                    parse_gpu_part(cx, &g, on, plat, vgpus, vgpu_names)
                })
                .map(Some)
        }
        None => Some(None),
    };
    // A GPU-using reservation is analysed with seed 001 §III-D's CBS
    // wake-up rule charged (rtgpu_analysis, `analyze_reservations`); the
    // vGPU bound (our derivation after seed 001 Fig. 10) has no term for it.
    if let (Some(true), Some(v), Some(Some(g))) = (reservation, reservation_v, &gpu) {
        if g.vgpu.is_some() {
            cx.error(
                v.span().start,
                &t.field("reservation"),
                "a CPU reservation (SCHED_DEADLINE) on a vGPU member is not supported: the vGPU \
                 bound has no term for the CBS wake-up rule delaying the member between its \
                 kernels; drop `reservation` or the task's `vgpu`",
            );
        }
    }

    Some(Task {
        name: name?,
        wcet: wcet?,
        period: period?,
        deadline: effective_deadline?,
        jitter: jitter?,
        blocking: blocking?,
        // A `device` binds the task to its GPU's cluster (its pool).
        cluster: cluster?.or_else(|| {
            let d = gpu.as_ref()?.as_ref()?.device?;
            plat.platform.gpus.get(d).map(|g| g.cluster)
        }),
        gpu: gpu?,
        reservation: reservation?,
        location: cx.location(t.start),
    })
}

fn check_gpu_available(
    cx: &mut Cx,
    t: &Tbl,
    gv: &Val,
    cluster: Option<usize>,
    plat: &ParsedPlatform,
) {
    if !plat.gpu_names.complete && plat.platform.gpus.is_empty() {
        return;
    }
    if plat.platform.gpus.is_empty() {
        cx.error(
            gv.span().start,
            &t.field("gpu"),
            "the task uses a GPU but the platform has no GPUs \
             (add `gpus = N` to the platform or a cluster)",
        );
        return;
    }
    if let Some(c) = cluster.and_then(|c| plat.platform.clusters.get(c)) {
        if c.gpus.is_empty() {
            cx.error(
                gv.span().start,
                &t.field("gpu"),
                format!(
                    "the task uses a GPU but is bound to cluster \"{}\", which has no GPUs",
                    c.name.escape_debug()
                ),
            );
        }
    }
}

/// What a task's `gpu` table is checked against.
struct GpuContext {
    cluster: Option<usize>,
    wcet: Option<Nanos>,
    reservation: bool,
    /// The policy's GPU allocator, where the policy parsed.
    allocator: Option<GpuAllocator>,
}

fn parse_gpu_part(
    cx: &mut Cx,
    g: &Tbl,
    on: GpuContext,
    plat: &ParsedPlatform,
    vgpus: &[Vgpu],
    vgpu_names: &Names,
) -> Option<GpuPart> {
    let cluster = on.cluster;
    let cpu = match g.get("cpu") {
        Some(v) => {
            let field = g.field("cpu");
            let cpu = read_duration(cx, v, &field);
            if let (Some(c), Some(w)) = (cpu, on.wcet) {
                if c > w {
                    cx.error(
                        v.span().start,
                        &field,
                        format!(
                            "the CPU time inside the GPU section ({}) is part of the wcet and \
                             cannot exceed it ({})",
                            units::format_duration(c),
                            units::format_duration(w)
                        ),
                    );
                }
            }
            if cpu.is_some_and(|c| c > 0) && on.reservation {
                cx.error(
                    v.span().start,
                    &field,
                    "CPU time inside the GPU section is not supported for a CPU reservation \
                     (SCHED_DEADLINE): its server analysis has no term for it; drop \
                     `reservation` or `cpu`",
                );
            }
            cpu
        }
        None => Some(0),
    };
    let copy_in = match g.get("copy_in") {
        Some(v) => read_size(cx, v, &g.field("copy_in")),
        None => Some(0),
    };
    let copy_out = match g.get("copy_out") {
        Some(v) => read_size(cx, v, &g.field("copy_out")),
        None => Some(0),
    };
    let state = match g.get("state") {
        Some(v) => read_size(cx, v, &g.field("state")),
        None => Some(0),
    };
    let kernels = g
        .required(cx, "kernels", ", e.g. kernels = [\"3 ms\"]")
        .and_then(|v| parse_kernels(cx, v, &g.field("kernels")));
    let interrupts = match g.get("interrupts") {
        Some(v) => read_u32(cx, v, &g.field("interrupts"), 1).map(Some),
        None => Some(None),
    };
    let vgpu = match g.get("vgpu") {
        Some(v) => {
            let field = g.field("vgpu");
            let idx = vgpu_names.resolve(cx, v, &field);
            if let (Some(i), Some(c)) = (idx, cluster) {
                let vgpu_gpu = vgpus.get(i).and_then(|vg| plat.platform.gpus.get(vg.gpu));
                let task_cluster = plat.platform.clusters.get(c);
                if let (Some(gpu), Some(tc)) = (vgpu_gpu, task_cluster) {
                    if gpu.cluster != c {
                        cx.error(
                            v.span().start,
                            &field,
                            format!(
                                "vGPU \"{}\" runs on GPU \"{}\", which is not in the task's \
                                 cluster \"{}\"",
                                vgpus.get(i).map_or("", |x| x.name.as_str()).escape_debug(),
                                gpu.name.escape_debug(),
                                tc.name.escape_debug()
                            ),
                        );
                    }
                }
            }
            idx.map(Some)
        }
        None => Some(None),
    };
    let device = match g.get("device") {
        Some(v) => parse_device(cx, v, &g.field("device"), &on, plat, vgpu),
        None => Some(None),
    };
    let (copy_in, copy_out, kernels) = (copy_in?, copy_out?, kernels?);
    // eta: one completion interrupt per GPU operation the job waits for.
    let default_interrupts = u32::try_from(kernels.len())
        .unwrap_or(u32::MAX)
        .saturating_add(u32::from(copy_in > 0))
        .saturating_add(u32::from(copy_out > 0));
    Some(GpuPart {
        copy_in,
        kernels,
        copy_out,
        state: state?,
        cpu: cpu?,
        interrupts: interrupts?.unwrap_or(default_interrupts),
        vgpu: vgpu?,
        device: device?,
    })
}

/// `gpu.device`: the GPU a task's requests go to under static assignment.
/// It must name a GPU of the task's cluster, and only static allocators
/// honour it (the others choose a GPU per request), nor can a vGPU member
/// or a reservation have one (a vGPU runs on its own GPU; a GPU-using
/// reservation uses the first GPU cluster's pool).
fn parse_device(
    cx: &mut Cx,
    v: &Val,
    field: &str,
    on: &GpuContext,
    plat: &ParsedPlatform,
    vgpu: Option<Option<usize>>,
) -> Option<Option<usize>> {
    let idx = plat.gpu_names.resolve(cx, v, field)?;
    let gpu = plat.platform.gpus.get(idx)?;
    let at = v.span().start;
    if let Some(c) = on.cluster.and_then(|c| plat.platform.clusters.get(c)) {
        if on.cluster != Some(gpu.cluster) {
            cx.error(
                at,
                field,
                format!(
                    "GPU \"{}\" is not in the task's cluster \"{}\"",
                    gpu.name.escape_debug(),
                    c.name.escape_debug()
                ),
            );
        }
    }
    if let Some(a) = on.allocator.filter(|a| !a.is_static()) {
        cx.error(
            at,
            field,
            format!(
                "`device` fixes the task's GPU, which only the static allocators do \
                 (gpu_allocator = \"static\" or \"static-priority\"); the policy's \"{}\" \
                 picks a GPU per request: drop `device` or change the allocator",
                a.name()
            ),
        );
    }
    if matches!(vgpu, Some(Some(_))) {
        cx.error(
            at,
            field,
            "a vGPU member runs on its vGPU's GPU: drop `device`",
        );
    }
    if on.reservation {
        cx.error(
            at,
            field,
            "a GPU-using CPU reservation uses the GPUs of the first cluster that has any; \
             `device` is not supported with `reservation`",
        );
    }
    Some(Some(idx))
}

fn parse_kernels(cx: &mut Cx, v: &Val, field: &str) -> Option<Vec<Nanos>> {
    let items: Vec<(&Val, String)> = match v.get_ref() {
        DeValue::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, k)| (k, format!("{field}[{i}]")))
            .collect(),
        DeValue::String(_) => vec![(v, field.to_string())],
        other => {
            cx.error(
                v.span().start,
                field,
                format!(
                    "expected a list of kernel times like [\"3 ms\"], found {}",
                    found(other)
                ),
            );
            return None;
        }
    };
    if items.is_empty() {
        cx.error(
            v.span().start,
            field,
            "a GPU-using task needs at least one kernel, e.g. kernels = [\"3 ms\"]",
        );
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (k, kf) in items {
        match read_duration(cx, k, &kf) {
            Some(0) => {
                cx.error(k.span().start, &kf, "a kernel time must be positive");
                ok = false;
            }
            Some(x) => out.push(x),
            None => ok = false,
        }
    }
    ok.then_some(out)
}
