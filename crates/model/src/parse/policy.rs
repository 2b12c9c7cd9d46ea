//! `[overheads]` and `[policy]`.

use toml::de::DeValue;

use super::*;
use crate::schema::{self, KeySpec};

/// The largest overhead (and tick quantum) a file may give: 10 s.
const MAX_OVERHEAD: u64 = 10_000_000_000;

pub(super) fn parse_overheads(cx: &mut Cx, t: &Tbl) -> Overheads {
    let base = t.get("base").and_then(|v| {
        read_choice(
            cx,
            v,
            &t.field("base"),
            "overhead base",
            &[("table-iii", false), ("table3", false), ("zero", true)],
            schema::OVERHEAD_BASES,
        )
    });
    let mut o = if base == Some(true) {
        Overheads::zero()
    } else {
        Overheads::default()
    };
    for (key, slot) in [
        ("sch", &mut o.sch),
        ("cxs", &mut o.cxs),
        ("ipi", &mut o.ipi),
        ("rel", &mut o.rel),
        ("th", &mut o.th),
        ("bh", &mut o.bh),
        ("krel", &mut o.krel),
        ("paisch", &mut o.paisch),
        ("pairel", &mut o.pairel),
        ("tck", &mut o.tck),
        ("quantum", &mut o.quantum),
    ] {
        if let Some(v) = t.get(key) {
            let field = t.field(key);
            if let Some(x) = read_duration(cx, v, &field) {
                if key == "quantum" && x == 0 {
                    cx.error(v.span().start, &field, "the tick quantum must be positive");
                } else if x > MAX_OVERHEAD {
                    // Sums of these saturate near 2^64 ns, which would make
                    // a cost vanish rather than dominate.
                    cx.error(
                        v.span().start,
                        &field,
                        format!(
                            "{} is above {}, more than any overhead (they are microseconds)",
                            crate::units::format_duration(x),
                            crate::units::format_duration(MAX_OVERHEAD)
                        ),
                    );
                } else {
                    *slot = x;
                }
            }
        }
    }
    o
}

pub(super) fn parse_policy(cx: &mut Cx, t: &Tbl) -> Policy {
    let mut p = Policy::default();
    if let Some(v) = t.get("cpu_scheduler") {
        use CpuScheduler::*;
        if let Some(s) = read_choice(
            cx,
            v,
            &t.field("cpu_scheduler"),
            "CPU scheduler",
            &[
                ("P-FP", PartitionedFp),
                ("partitioned-fp", PartitionedFp),
                ("C-FP", ClusteredFp),
                ("clustered-fp", ClusteredFp),
                ("G-FP", GlobalFp),
                ("global-fp", GlobalFp),
                ("C-EDF", ClusteredEdf),
                ("clustered-edf", ClusteredEdf),
                ("G-EDF", GlobalEdf),
                ("global-edf", GlobalEdf),
            ],
            schema::CPU_SCHEDULERS,
        ) {
            p.cpu_scheduler = s;
        }
    }
    let order = t.get("partition_order").and_then(|v| {
        read_choice(
            cx,
            v,
            &t.field("partition_order"),
            "partition order",
            &[
                ("decreasing-utilization", SortOrder::DecreasingUtilization),
                ("decreasing-size", SortOrder::DecreasingSize),
            ],
            schema::SORT_ORDERS,
        )
    });
    let partitioning = t.get("partitioning").and_then(|v| {
        read_choice(
            cx,
            v,
            &t.field("partitioning"),
            "partitioning",
            &[
                ("first-fit", Part::Fit(FitRule::First)),
                ("best-fit", Part::Fit(FitRule::Best)),
                ("worst-fit", Part::Fit(FitRule::Worst)),
                ("next-fit", Part::Fit(FitRule::Next)),
                ("pdms-hpts", Part::Hpts),
                ("pdms-hpts-ds", Part::HptsDs),
            ],
            schema::PARTITIONINGS,
        )
    });
    let order_or_default = order.unwrap_or(SortOrder::DecreasingUtilization);
    match partitioning {
        Some(Part::Fit(rule)) => {
            p.partitioning = Partitioning::Fit {
                rule,
                order: order_or_default,
            }
        }
        Some(Part::Hpts) => {
            p.partitioning = Partitioning::PdmsHpts {
                order: order_or_default,
            }
        }
        Some(Part::HptsDs) | None => {
            // pdms-hpts-ds (given or default) fixes its own order.
            let ds = partitioning.is_some() || t.get("partitioning").is_none();
            if let (Some(v), true) = (t.get("partition_order"), ds) {
                cx.error(
                    v.span().start,
                    &t.field("partition_order"),
                    "pdms-hpts-ds always takes tasks in decreasing size; `partition_order` \
                     applies to first-fit, best-fit, worst-fit, next-fit and pdms-hpts",
                );
            }
        }
    }
    if let Some(v) = t.get("priority") {
        use PriorityAssignment::*;
        if let Some(x) = read_choice(
            cx,
            v,
            &t.field("priority"),
            "priority assignment",
            &[
                ("DM", DeadlineMonotonic),
                ("deadline-monotonic", DeadlineMonotonic),
                ("RM", RateMonotonic),
                ("rate-monotonic", RateMonotonic),
                ("Audsley", Audsley),
                ("OPA", Audsley),
            ],
            schema::PRIORITIES,
        ) {
            p.priority = x;
        }
    }
    if let Some(v) = t.get("gpu_allocator") {
        if let Some(x) = read_choice(
            cx,
            v,
            &t.field("gpu_allocator"),
            "GPU allocator",
            &[
                ("static", GpuAllocator::Static),
                ("static-priority", GpuAllocator::StaticPriority),
                ("k-fmlp", GpuAllocator::KFmlp),
                ("gpusync", GpuAllocator::GpuSync { affinity: false }),
                ("gpusync-affinity", GpuAllocator::GpuSync { affinity: true }),
            ],
            schema::GPU_ALLOCATORS,
        ) {
            p.gpu_allocator = x;
        }
    }
    if let Some(v) = t.get("tokens_per_gpu") {
        if let Some(x) = read_u32(cx, v, &t.field("tokens_per_gpu"), 1) {
            p.tokens_per_gpu = x;
        }
    }
    if let Some(v) = t.get("engine_locks") {
        if let Some(x) = read_bool(cx, v, &t.field("engine_locks")) {
            p.engine_locks = x;
        }
    }
    if let Some(v) = t.get("peer_copies") {
        if let Some(x) = read_choice(
            cx,
            v,
            &t.field("peer_copies"),
            "peer copy locking",
            &[("dgl", PeerLocking::Dgl), ("nested", PeerLocking::Nested)],
            schema::PEER_COPIES,
        ) {
            p.peer_locking = x;
        }
    }
    if let Some(v) = t.get("engine_handoff") {
        if let Some(x) = read_choice(
            cx,
            v,
            &t.field("engine_handoff"),
            "engine hand-off",
            &[
                ("completion", EngineHandoff::Completion),
                ("device", EngineHandoff::Device),
            ],
            schema::ENGINE_HANDOFFS,
        ) {
            p.engine_handoff = x;
        }
    }
    if let Some(v) = t.get("chunk_size") {
        let field = t.field("chunk_size");
        match v.get_ref() {
            DeValue::String(s) if normalize(s) == "none" => p.chunk_size = None,
            _ => {
                if let Some(x) = read_size(cx, v, &field) {
                    if x == 0 {
                        cx.error(
                            v.span().start,
                            &field,
                            "a chunk size must be positive (write \"none\" to disable chunking)",
                        );
                    } else {
                        p.chunk_size = Some(x);
                    }
                }
            }
        }
    }
    if let Some(v) = t.get("interrupts") {
        if let Some(x) = parse_interrupts(cx, v, &t.field("interrupts")) {
            p.interrupts = x;
        }
    }
    if let Some(v) = t.get("gpu_speedup") {
        let field = t.field("gpu_speedup");
        let x = match v.get_ref() {
            DeValue::Integer(_) => integer_value(v.get_ref())
                .and_then(Result::ok)
                .map(|n| n as f64),
            DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().ok(),
            _ => None,
        };
        match x {
            Some(r) if r.is_finite() && r > 0.0 => p.gpu_speedup = r,
            _ => cx.error(
                v.span().start,
                &field,
                format!(
                    "expected a positive number like 16, found {}",
                    found(v.get_ref())
                ),
            ),
        }
    }
    p
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Fit(FitRule),
    Hpts,
    HptsDs,
}

fn parse_interrupts(cx: &mut Cx, v: &Val, field: &str) -> Option<InterruptHandling> {
    match v.get_ref() {
        DeValue::Table(_) => {
            let t = read_table(
                cx,
                v,
                field.to_string(),
                &[KeySpec {
                    name: "threads",
                    ty: schema::Ty::Int { min: 1, max: 99 },
                    required: true,
                    doc: "",
                }],
            )?;
            let p = t
                .required(
                    cx,
                    "threads",
                    " (the SCHED_FIFO priority of the threads, 1..99)",
                )
                .and_then(|pv| read_int(cx, pv, &t.field("threads"), 1, 99))?;
            Some(InterruptHandling::FixedPriorityThreads {
                priority: u8::try_from(p).ok()?,
            })
        }
        DeValue::String(s) if normalize(s) == "threads" => {
            cx.error(
                v.span().start,
                field,
                "threaded interrupts need a priority: write `interrupts = { threads = 50 }`",
            );
            None
        }
        _ => read_choice(
            cx,
            v,
            field,
            "interrupt handling",
            &[
                ("slih", InterruptHandling::Slih),
                ("pai", InterruptHandling::Pai),
                ("klmirqd", InterruptHandling::Klmirqd),
            ],
            &["slih", "pai", "klmirqd", "{ threads = PRIORITY }"],
        ),
    }
}
