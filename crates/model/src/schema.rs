//! The keys of every table of the file format, in one place: the parser
//! checks unknown keys against them (with "did you mean" suggestions) and
//! [`json_schema`] turns them into a JSON Schema for editors.

use serde_json::{json, Map, Value};

/// The type of a key's value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ty {
    Duration,
    Size,
    Bandwidth,
    Percent,
    /// A free-form name (string).
    Name,
    /// The name of another item (string).
    Ref,
    Int {
        min: i64,
        max: i64,
    },
    Bool,
    /// A number > 0, integer or float.
    PositiveNumber,
    /// One of these strings (matched case-insensitively, `-`/`_` ignored).
    Enum(&'static [&'static str]),
    /// A table with these keys.
    Table(&'static [KeySpec]),
    /// An array of tables with these keys (`[[x]]` or `x = [{..}]`).
    Tables(&'static [KeySpec]),
    /// An array of durations, or one duration.
    Durations,
    /// A count of GPUs to create, or the names of `[[platform.gpu]]`s.
    GpuList,
    /// `"slih" | "pai" | "klmirqd" | { threads = N }`.
    Interrupts,
    /// A size or `"none"`.
    SizeOrNone,
}

/// One key of a table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeySpec {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    pub doc: &'static str,
}

const fn key(name: &'static str, ty: Ty, doc: &'static str) -> KeySpec {
    KeySpec {
        name,
        ty,
        required: false,
        doc,
    }
}

const fn required(name: &'static str, ty: Ty, doc: &'static str) -> KeySpec {
    KeySpec {
        name,
        ty,
        required: true,
        doc,
    }
}

pub(crate) const CPU_SCHEDULERS: &[&str] = &["P-FP", "C-FP", "G-FP", "C-EDF", "G-EDF"];
pub(crate) const PARTITIONINGS: &[&str] = &[
    "first-fit",
    "best-fit",
    "worst-fit",
    "next-fit",
    "pdms-hpts",
    "pdms-hpts-ds",
];
pub(crate) const SORT_ORDERS: &[&str] = &["decreasing-utilization", "decreasing-size"];
pub(crate) const PRIORITIES: &[&str] = &["DM", "RM", "Audsley"];
pub(crate) const GPU_ALLOCATORS: &[&str] = &[
    "static",
    "static-priority",
    "k-fmlp",
    "gpusync",
    "gpusync-affinity",
];
pub(crate) const PEER_COPIES: &[&str] = &["dgl", "nested"];
pub(crate) const ENGINE_HANDOFFS: &[&str] = &["completion", "device"];
pub(crate) const INTERRUPT_MODES: &[&str] = &["slih", "pai", "klmirqd"];
pub(crate) const VGPU_POLICIES: &[&str] = &["band", "fifo", "fixed-priority"];
pub(crate) const OVERHEAD_BASES: &[&str] = &["table-iii", "zero"];

pub(crate) const ROOT: &[KeySpec] = &[
    key("name", Ty::Name, "Workload name; default: the file stem."),
    required(
        "platform",
        Ty::Table(PLATFORM),
        "Cores, GPUs and PCIe topology.",
    ),
    key(
        "overheads",
        Ty::Table(OVERHEADS),
        "System overheads (seed 000 App. B); default: seed 000 Table III.",
    ),
    key(
        "policy",
        Ty::Table(POLICY),
        "Scheduling and GPU management choices.",
    ),
    key(
        "vgpu",
        Ty::Tables(VGPU),
        "Virtual GPUs with budget reservations (seed 001).",
    ),
    required("task", Ty::Tables(TASK), "Sporadic tasks; at least one."),
];

pub(crate) const PLATFORM: &[KeySpec] = &[
    key(
        "cores",
        Ty::Int { min: 1, max: u32::MAX as i64 },
        "Shorthand for a single cluster `node0` with this many cores (instead of [[platform.cluster]]).",
    ),
    key(
        "gpus",
        Ty::GpuList,
        "With `cores`: GPUs of the single cluster, a count (named gpu0, gpu1, ...) or names of [[platform.gpu]] tables.",
    ),
    key("cluster", Ty::Tables(CLUSTER), "Clusters / NUMA nodes."),
    key("gpu", Ty::Tables(GPU), "GPU declarations."),
    key("pcie", Ty::Tables(PCIE), "PCIe switches and I/O hubs (seed 004 Fig. 1)."),
    key("bandwidth", Ty::Table(BANDWIDTH), "Bus bandwidths."),
];

pub(crate) const CLUSTER: &[KeySpec] = &[
    required("name", Ty::Name, "Cluster name."),
    required(
        "cores",
        Ty::Int {
            min: 1,
            max: u32::MAX as i64,
        },
        "Number of cores (>= 1).",
    ),
    key(
        "gpus",
        Ty::GpuList,
        "GPUs of this cluster: a count (creates gpuN names) or names of [[platform.gpu]] tables.",
    ),
];

pub(crate) const GPU: &[KeySpec] = &[
    required("name", Ty::Name, "GPU name."),
    key(
        "cluster",
        Ty::Ref,
        "Cluster the GPU belongs to; optional with one cluster or when a cluster lists the GPU.",
    ),
    key(
        "copy_engines",
        Ty::Int { min: 1, max: 2 },
        "DMA copy engines, 1 or 2; default 2.",
    ),
    key(
        "attach",
        Ty::Ref,
        "The [[platform.pcie]] switch or hub the GPU is attached to.",
    ),
];

pub(crate) const PCIE: &[KeySpec] = &[
    required("name", Ty::Name, "Switch or I/O hub name."),
    key(
        "parent",
        Ty::Ref,
        "Parent switch or hub; omit for an I/O hub (a root).",
    ),
];

pub(crate) const BANDWIDTH: &[KeySpec] = &[
    key(
        "host_to_device",
        Ty::Bandwidth,
        "Host to GPU copy bandwidth; default 6 GB/s (PCIe 2.0 x16 in practice).",
    ),
    key(
        "device_to_host",
        Ty::Bandwidth,
        "GPU to host copy bandwidth; default 6 GB/s.",
    ),
    key(
        "peer",
        Ty::Bandwidth,
        "GPU to GPU (peer) copy bandwidth; default 5 GB/s.",
    ),
];

pub(crate) const OVERHEADS: &[KeySpec] = &[
    key(
        "base",
        Ty::Enum(OVERHEAD_BASES),
        "Values of the keys not given: `table-iii` (seed 000 Table III, default) or `zero` (quantum stays 1 ms).",
    ),
    key("sch", Ty::Duration, "Scheduling decision; default 0.63 us."),
    key("cxs", Ty::Duration, "Context switch; default 0.36 us."),
    key("ipi", Ty::Duration, "Inter-processor interrupt latency; default 0.6 us."),
    key("rel", Ty::Duration, "Job release; default 0.67 us."),
    key("th", Ty::Duration, "Interrupt top half; default 16.44 us."),
    key("bh", Ty::Duration, "Interrupt bottom half; default 29.9 us."),
    key("krel", Ty::Duration, "klmirqd thread release; default 1.39 us."),
    key("paisch", Ty::Duration, "PAI scheduling; default 0.13 us."),
    key("pairel", Ty::Duration, "PAI release; default 0.56 us."),
    key("tck", Ty::Duration, "Tick handler; default 0.86 us."),
    key("quantum", Ty::Duration, "Tick quantum Q (> 0); default 1 ms."),
];

pub(crate) const POLICY: &[KeySpec] = &[
    key(
        "cpu_scheduler",
        Ty::Enum(CPU_SCHEDULERS),
        "CPU scheduler; default P-FP.",
    ),
    key(
        "partitioning",
        Ty::Enum(PARTITIONINGS),
        "Task-to-core assignment under P-FP; default pdms-hpts-ds.",
    ),
    key(
        "partition_order",
        Ty::Enum(SORT_ORDERS),
        "Order in which first/best/worst/next-fit and pdms-hpts take tasks; default decreasing-utilization.",
    ),
    key("priority", Ty::Enum(PRIORITIES), "Priority assignment; default DM."),
    key(
        "gpu_allocator",
        Ty::Enum(GPU_ALLOCATORS),
        "GPU allocation; default gpusync-affinity.",
    ),
    key(
        "tokens_per_gpu",
        Ty::Int { min: 1, max: u32::MAX as i64 },
        "rho, GPUSync and static tokens per GPU (>= 1); default 2. The k-FMLP always has one per GPU.",
    ),
    key(
        "engine_locks",
        Ty::Bool,
        "Arbitrate copy/execution engines with real-time locks; default true. Without them and with rho > 1 the driver arbitrates (no bound).",
    ),
    key(
        "peer_copies",
        Ty::Enum(PEER_COPIES),
        "How peer-to-peer copies lock both GPUs' engines; default dgl.",
    ),
    key(
        "engine_handoff",
        Ty::Enum(ENGINE_HANDOFFS),
        "When an engine lock passes on: once the holder learned its operation completed, or as of its completion on the device; default completion.",
    ),
    key(
        "chunk_size",
        Ty::SizeOrNone,
        "Split copies into chunks of this size, or \"none\"; default none.",
    ),
    key(
        "interrupts",
        Ty::Interrupts,
        "GPU interrupt handling; default klmirqd.",
    ),
    key(
        "gpu_speedup",
        Ty::PositiveNumber,
        "GPU-to-CPU speed-up R (seed 000 §VII), > 0; default 16.",
    ),
];

pub(crate) const VGPU: &[KeySpec] = &[
    required("name", Ty::Name, "vGPU name."),
    key(
        "gpu",
        Ty::Ref,
        "Physical GPU; optional when the platform has one GPU.",
    ),
    key(
        "share",
        Ty::Percent,
        "Reserved share of the GPU, e.g. \"60%\".",
    ),
    key(
        "budget",
        Ty::Duration,
        "Budget per period (with `period`, instead of `share`).",
    ),
    key(
        "period",
        Ty::Duration,
        "Replenishment period (with `budget`).",
    ),
    key(
        "policy",
        Ty::Enum(VGPU_POLICIES),
        "Scheduling of the vGPU: band, fifo or fixed-priority; default band.",
    ),
];

pub(crate) const TASK: &[KeySpec] = &[
    required("name", Ty::Name, "Task name (with `count`: the prefix)."),
    key(
        "count",
        Ty::Int {
            min: 1,
            max: 10_000,
        },
        "Number of identical tasks, named NAME-0, NAME-1, ...; default 1.",
    ),
    required(
        "wcet",
        Ty::Duration,
        "Worst-case CPU execution time C (> 0).",
    ),
    required(
        "period",
        Ty::Duration,
        "Period or minimum inter-arrival time T (> 0).",
    ),
    key(
        "deadline",
        Ty::Duration,
        "Relative deadline D (C <= D; D > T allowed); default T.",
    ),
    key("jitter", Ty::Duration, "Release jitter J (< T); default 0."),
    key(
        "blocking",
        Ty::Duration,
        "Local blocking term B; default 0.",
    ),
    key("cluster", Ty::Ref, "Bind the task to this cluster."),
    key(
        "reservation",
        Ty::Bool,
        "Run as a CPU reservation (SCHED_DEADLINE) above every fixed-priority task, on any CPU: CPU-only, runtime C plus a margin, deadline D less the jitter, period T; GPU-using, a server sized by the analysis for the CBS wake-up rule. Tasks without `cluster` or `vgpu`, D <= T; default false.",
    ),
    key("gpu", Ty::Table(GPU_PART), "The task's GPU work per job."),
];

pub(crate) const GPU_PART: &[KeySpec] = &[
    key(
        "copy_in",
        Ty::Size,
        "Bytes copied host to GPU per job; default 0.",
    ),
    required(
        "kernels",
        Ty::Durations,
        "Kernel execution times in launch order (at least one, each > 0).",
    ),
    key(
        "copy_out",
        Ty::Size,
        "Bytes copied GPU to host per job; default 0.",
    ),
    key(
        "state",
        Ty::Size,
        "GPU-resident state that migrates with the task; default 0.",
    ),
    key(
        "cpu",
        Ty::Duration,
        "CPU time of the wcet that runs inside the GPU section, after the copy-in and before the first kernel, while the job holds its GPU (seed 004's L^P); at most the wcet; default 0.",
    ),
    key(
        "interrupts",
        Ty::Int {
            min: 1,
            max: u32::MAX as i64,
        },
        "GPU interrupts per job, eta (>= 1); default: kernels + non-empty copies.",
    ),
    key("vgpu", Ty::Ref, "Run the GPU work in this [[vgpu]]."),
    key(
        "device",
        Ty::Ref,
        "The GPU this task's requests go to under gpu_allocator = \"static\" or \"static-priority\" (a [[platform.gpu]] name, in the task's cluster; binds the task to that cluster); default: round robin over its pool's GPUs in file order.",
    ),
];

/// Every table of the format with its path, for documentation tests.
#[cfg(test)]
pub(crate) const ALL_TABLES: &[(&str, &[KeySpec])] = &[
    ("", ROOT),
    ("platform", PLATFORM),
    ("platform.cluster", CLUSTER),
    ("platform.gpu", GPU),
    ("platform.pcie", PCIE),
    ("platform.bandwidth", BANDWIDTH),
    ("overheads", OVERHEADS),
    ("policy", POLICY),
    ("vgpu", VGPU),
    ("task", TASK),
    ("task.gpu", GPU_PART),
];

fn unit_string(pattern_units: &str, example: &str, what: &str) -> Value {
    json!({
        "type": "string",
        "pattern": format!(r"^\s*[0-9][0-9_]*(\.[0-9][0-9_]*)?\s*({pattern_units})\s*$"),
        "examples": [example],
        "description": what,
    })
}

fn ty_schema(ty: Ty) -> Value {
    match ty {
        Ty::Duration => json!({ "$ref": "#/$defs/duration" }),
        Ty::Size => json!({ "$ref": "#/$defs/size" }),
        Ty::Bandwidth => json!({ "$ref": "#/$defs/bandwidth" }),
        Ty::Percent => json!({ "$ref": "#/$defs/percent" }),
        Ty::Name | Ty::Ref => json!({ "type": "string", "minLength": 1 }),
        Ty::Int { min, max } => json!({ "type": "integer", "minimum": min, "maximum": max }),
        Ty::Bool => json!({ "type": "boolean" }),
        Ty::PositiveNumber => json!({ "type": "number", "exclusiveMinimum": 0 }),
        Ty::Enum(values) => json!({ "type": "string", "enum": values }),
        Ty::Table(keys) => table_schema(keys),
        Ty::Tables(keys) => json!({ "type": "array", "items": table_schema(keys) }),
        Ty::Durations => json!({
            "oneOf": [
                { "type": "array", "items": { "$ref": "#/$defs/duration" }, "minItems": 1 },
                { "$ref": "#/$defs/duration" }
            ]
        }),
        Ty::GpuList => json!({
            "oneOf": [
                { "type": "integer", "minimum": 0, "maximum": 1024 },
                { "type": "array", "items": { "type": "string" } }
            ]
        }),
        Ty::Interrupts => json!({
            "oneOf": [
                { "type": "string", "enum": INTERRUPT_MODES },
                {
                    "type": "object",
                    "properties": { "threads": {
                        "type": "integer", "minimum": 1, "maximum": 99,
                        "description": "Fixed SCHED_FIFO priority of the interrupt threads (PREEMPT_RT style)."
                    } },
                    "required": ["threads"],
                    "additionalProperties": false
                }
            ]
        }),
        Ty::SizeOrNone => json!({
            "oneOf": [ { "$ref": "#/$defs/size" }, { "const": "none" } ]
        }),
    }
}

fn table_schema(keys: &[KeySpec]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for k in keys {
        let mut schema = ty_schema(k.ty);
        if let Value::Object(obj) = &mut schema {
            obj.insert("description".into(), Value::String(k.doc.into()));
        }
        properties.insert(k.name.into(), schema);
        if k.required {
            required.push(Value::String(k.name.into()));
        }
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The JSON Schema (draft 2020-12) of the workload file format, for editors
/// (e.g. Taplo / Even Better TOML). It checks structure, types and unit
/// spelling; the parser checks the rest (references, C <= D, ...).
pub fn json_schema() -> String {
    let mut root = table_schema(ROOT);
    if let Value::Object(obj) = &mut root {
        obj.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        obj.insert("title".into(), json!("rtgpu workload"));
        obj.insert(
            "description".into(),
            json!(
                "An rtgpu workload file: platform, tasks and policy (see crates/model/README.md)."
            ),
        );
        obj.insert(
            "$defs".into(),
            json!({
                "duration": unit_string("ns|us|µs|μs|ms|s", "10 ms", "A duration: a number and one of ns, us (µs), ms, s."),
                "size": unit_string("B|kB|KB|MB|GB|TB|KiB|MiB|GiB|TiB", "2 MiB", "A size in bytes: a number and one of B, kB, MB, GB, TB (1000) or KiB, MiB, GiB, TiB (1024)."),
                "bandwidth": unit_string("(B|kB|KB|MB|GB|TB|KiB|MiB|GiB|TiB)/s", "6 GB/s", "A bandwidth: a size unit followed by /s."),
                "percent": unit_string("%", "60%", "A percentage."),
            }),
        );
    }
    serde_json::to_string_pretty(&root).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_is_json_with_all_tables() {
        let text = json_schema();
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(v["properties"]["task"]["type"], "array");
        assert_eq!(
            v["properties"]["task"]["items"]["properties"]["gpu"]["properties"]["kernels"]
                ["description"],
            "Kernel execution times in launch order (at least one, each > 0)."
        );
        assert_eq!(v["required"], json!(["platform", "task"]));
        assert!(v["$defs"]["duration"]["pattern"].is_string());
    }

    #[test]
    fn readme_documents_every_key() {
        let readme = include_str!("../README.md");
        for (path, keys) in ALL_TABLES {
            for k in *keys {
                assert!(
                    readme.contains(&format!("| `{}` |", k.name)),
                    "README.md does not document `{}` of [{path}]",
                    k.name
                );
            }
        }
    }

    #[test]
    fn table_keys_are_unique() {
        for (path, keys) in ALL_TABLES {
            let mut names: Vec<&str> = keys.iter().map(|k| k.name).collect();
            names.sort_unstable();
            let before = names.len();
            names.dedup();
            assert_eq!(before, names.len(), "duplicate key in {path}");
        }
    }
}
