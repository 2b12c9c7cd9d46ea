//! `[platform]`: clusters, GPUs, PCIe topology and bandwidths.

use toml::de::DeValue;

use super::*;
use crate::schema;

/// The platform with the names that tasks and vGPUs refer to.
pub(super) struct ParsedPlatform {
    pub(super) platform: Platform,
    pub(super) cluster_names: Names,
    pub(super) gpu_names: Names,
}

impl ParsedPlatform {
    /// Stands in for a platform that failed to parse: references to it are
    /// not reported (the platform's own errors are).
    pub(super) fn broken() -> Self {
        let mut cluster_names = Names::new("cluster");
        cluster_names.complete = false;
        let mut gpu_names = Names::new("GPU");
        gpu_names.complete = false;
        ParsedPlatform {
            platform: Platform {
                clusters: Vec::new(),
                gpus: Vec::new(),
                pcie: Vec::new(),
                bandwidth: Bandwidth::default(),
            },
            cluster_names,
            gpu_names,
        }
    }
}

/// A cluster before its GPUs are resolved.
struct ClusterDraft<'t, 'i> {
    name: String,
    cores: u32,
    gpus: Option<&'t Val<'i>>,
    gpus_field: String,
}

struct GpuDraft<'t, 'i> {
    name: String,
    cluster: Option<(usize, Option<&'t Val<'i>>)>,
    copy_engines: u8,
    attach: Option<&'t Val<'i>>,
    attach_field: String,
    start: usize,
    path: String,
}

pub(super) fn parse_platform(cx: &mut Cx, plat: &Tbl) -> Option<ParsedPlatform> {
    let mut cluster_names = Names::new("cluster");
    let mut drafts: Vec<ClusterDraft> = Vec::new();

    // Clusters: [[platform.cluster]] or the `cores` shorthand.
    match (plat.get("cluster"), plat.get("cores")) {
        (Some(list), _) => {
            for key in ["cores", "gpus"] {
                if let Some(v) = plat.get(key) {
                    cx.error(
                        v.span().start,
                        &plat.field(key),
                        format!(
                            "`{key}` is the single-cluster shorthand; with [[platform.cluster]] \
                             give each cluster its own `{key}`"
                        ),
                    );
                }
            }
            for t in read_tables(cx, list, "platform.cluster", schema::CLUSTER) {
                let name_v = t.required(cx, "name", "");
                let name = name_v.and_then(|v| read_name(cx, v, &t.field("name")));
                let cores = t
                    .required(cx, "cores", " (the number of cores, >= 1)")
                    .and_then(|v| read_u32(cx, v, &t.field("cores"), 1));
                add_name(
                    cx,
                    &mut cluster_names,
                    name.clone(),
                    name_v,
                    &t.field("name"),
                );
                drafts.push(ClusterDraft {
                    name: name.unwrap_or_default(),
                    cores: cores.unwrap_or(1),
                    gpus: t.get("gpus"),
                    gpus_field: t.field("gpus"),
                });
            }
        }
        (None, Some(cores_v)) => {
            let cores = read_u32(cx, cores_v, &plat.field("cores"), 1);
            cluster_names.names.push(DEFAULT_SINGLE_CLUSTER.to_string());
            drafts.push(ClusterDraft {
                name: DEFAULT_SINGLE_CLUSTER.to_string(),
                cores: cores.unwrap_or(1),
                gpus: plat.get("gpus"),
                gpus_field: plat.field("gpus"),
            });
        }
        (None, None) => {
            cx.error(
                plat.start,
                "platform.cores",
                "the platform has no cores: write `cores = N` for one cluster, \
                 or [[platform.cluster]] tables with `name` and `cores`",
            );
            cluster_names.complete = false;
        }
    }

    // Global core ids, at most MAX_CORES of them (as Python's
    // `partition(cores=)`): every analysis and the simulator keep per-core
    // state, so 2^32 cores would be a 550 GB allocation, not an answer.
    let mut first_core: u32 = 0;
    let mut first_cores = Vec::with_capacity(drafts.len());
    for d in &drafts {
        first_cores.push(first_core);
        match first_core.checked_add(d.cores).filter(|&n| n <= MAX_CORES) {
            Some(next) => first_core = next,
            None => {
                cx.error(
                    plat.start,
                    "platform",
                    format!("more than {MAX_CORES} cores in total, the most rtgpu analyses"),
                );
                break;
            }
        }
    }

    // Declared GPUs.
    let mut gpu_names = Names::new("GPU");
    let mut gpus: Vec<GpuDraft> = Vec::new();
    if let Some(list) = plat.get("gpu") {
        for t in read_tables(cx, list, "platform.gpu", schema::GPU) {
            let name_v = t.required(cx, "name", "");
            let name = name_v.and_then(|v| read_name(cx, v, &t.field("name")));
            add_name(cx, &mut gpu_names, name.clone(), name_v, &t.field("name"));
            let cluster = t.get("cluster").and_then(|v| {
                cluster_names
                    .resolve(cx, v, &t.field("cluster"))
                    .map(|c| (c, Some(v)))
            });
            let copy_engines = t
                .get("copy_engines")
                .and_then(|v| read_int(cx, v, &t.field("copy_engines"), 1, 2))
                .and_then(|n| u8::try_from(n).ok())
                .unwrap_or(2);
            gpus.push(GpuDraft {
                name: name.unwrap_or_default(),
                cluster,
                copy_engines,
                attach: t.get("attach"),
                attach_field: t.field("attach"),
                start: t.start,
                path: t.path.clone(),
            });
        }
    }
    let declared = gpus.len();
    let mut listed_by: Vec<Option<(usize, usize)>> = vec![None; declared]; // (cluster, offset)

    // Cluster `gpus`: a count creates GPUs, names assign declared ones.
    let mut generated = 0usize;
    for (c, d) in drafts.iter().enumerate() {
        let Some(v) = d.gpus else { continue };
        match v.get_ref() {
            DeValue::Integer(_) => {
                let Some(n) = read_int(cx, v, &d.gpus_field, 0, MAX_GENERATED_GPUS) else {
                    continue;
                };
                for _ in 0..n {
                    let name = format!("gpu{generated}");
                    generated += 1;
                    if gpu_names.index(&name).is_some() {
                        cx.error(
                            v.span().start,
                            &d.gpus_field,
                            format!(
                                "`gpus = {n}` creates GPU \"{name}\", but a GPU of that name \
                                 is already declared; list GPU names instead"
                            ),
                        );
                    }
                    gpu_names.names.push(name.clone());
                    gpus.push(GpuDraft {
                        name,
                        cluster: Some((c, None)),
                        copy_engines: 2,
                        attach: None,
                        attach_field: String::new(),
                        start: v.span().start,
                        path: d.gpus_field.clone(),
                    });
                }
            }
            DeValue::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let field = format!("{}[{i}]", d.gpus_field);
                    let Some(g) = gpu_names.resolve(cx, item, &field) else {
                        continue;
                    };
                    if g >= declared {
                        cx.error(
                            item.span().start,
                            &field,
                            "this GPU was created by a `gpus = N` count and already belongs to a cluster",
                        );
                        continue;
                    }
                    match listed_by.get(g).copied().flatten() {
                        Some((other, _)) => {
                            let other_name = drafts.get(other).map_or("", |o| o.name.as_str());
                            cx.error(
                                item.span().start,
                                &field,
                                format!(
                                    "GPU \"{}\" is already listed by cluster \"{other_name}\"",
                                    item.get_ref().as_str().unwrap_or_default().escape_debug()
                                ),
                            );
                        }
                        None => {
                            if let Some(slot) = listed_by.get_mut(g) {
                                *slot = Some((c, item.span().start));
                            }
                        }
                    }
                }
            }
            other => cx.error(
                v.span().start,
                &d.gpus_field,
                format!(
                    "expected a number of GPUs or a list of GPU names, found {}",
                    found(other)
                ),
            ),
        }
    }

    // Each declared GPU belongs to exactly one cluster.
    for (g, gpu) in gpus.iter_mut().enumerate().take(declared) {
        let listed = listed_by.get(g).copied().flatten();
        match (gpu.cluster, listed) {
            (Some((own, own_v)), Some((by, _))) if own != by => {
                let start = own_v.map_or(gpu.start, |v| v.span().start);
                cx.error(
                    start,
                    &join(&gpu.path, "cluster"),
                    format!(
                        "GPU \"{}\" says cluster \"{}\" but cluster \"{}\" lists it in `gpus`",
                        gpu.name.escape_debug(),
                        drafts.get(own).map_or("", |d| d.name.as_str()),
                        drafts.get(by).map_or("", |d| d.name.as_str())
                    ),
                );
            }
            (Some(_), _) => {}
            (None, Some((by, _))) => gpu.cluster = Some((by, None)),
            (None, None) => {
                if drafts.len() == 1 {
                    gpu.cluster = Some((0, None));
                } else if cluster_names.complete && !drafts.is_empty() {
                    cx.error(
                        gpu.start,
                        &join(&gpu.path, "cluster"),
                        format!(
                            "GPU \"{}\" belongs to no cluster: set `cluster`, or list it in a \
                             cluster's `gpus`",
                            gpu.name.escape_debug()
                        ),
                    );
                }
            }
        }
    }

    // PCIe topology.
    let mut pcie_names = Names::new("PCIe switch or hub");
    let mut pcie: Vec<PcieNode> = Vec::new();
    let mut parent_values: Vec<Option<(&Val, String)>> = Vec::new();
    if let Some(list) = plat.get("pcie") {
        let tables = read_tables(cx, list, "platform.pcie", schema::PCIE);
        for t in &tables {
            let name_v = t.required(cx, "name", "");
            let name = name_v.and_then(|v| read_name(cx, v, &t.field("name")));
            add_name(cx, &mut pcie_names, name.clone(), name_v, &t.field("name"));
            pcie.push(PcieNode {
                name: name.unwrap_or_default(),
                parent: None,
            });
            parent_values.push(t.get("parent").map(|v| (v, t.field("parent"))));
        }
        for (node, pv) in pcie.iter_mut().zip(&parent_values) {
            if let Some((v, field)) = pv {
                node.parent = pcie_names.resolve(cx, v, field);
            }
        }
        report_pcie_cycles(cx, &pcie, &parent_values);
    }

    // Attachments: all GPUs or none.
    let mut attach: Vec<Option<usize>> = vec![None; gpus.len()];
    for (g, gpu) in gpus.iter().enumerate() {
        match gpu.attach {
            Some(v) => {
                if let Some(slot) = attach.get_mut(g) {
                    *slot = pcie_names.resolve(cx, v, &gpu.attach_field);
                }
            }
            None if !pcie.is_empty() && pcie_names.complete => cx.error(
                gpu.start,
                &join(&gpu.path, "attach"),
                format!(
                    "GPU \"{}\" is not attached to the PCIe topology: with [[platform.pcie]], \
                     every GPU needs `attach` (write [[platform.gpu]] tables for GPUs made by `gpus = N`)",
                    gpu.name.escape_debug()
                ),
            ),
            None => {}
        }
    }

    let bandwidth = match plat.get("bandwidth") {
        Some(v) => read_table(cx, v, "platform.bandwidth".into(), schema::BANDWIDTH)
            .map(|t| parse_bandwidth(cx, &t))
            .unwrap_or_default(),
        None => Bandwidth::default(),
    };

    // After errors the platform may be inconsistent (a GPU without a
    // cluster gets index usize::MAX); it is then only used to check tasks
    // and vGPUs, never returned.
    let mut clusters: Vec<Cluster> = drafts
        .iter()
        .enumerate()
        .map(|(i, d)| Cluster {
            name: d.name.clone(),
            cores: d.cores,
            first_core: first_cores.get(i).copied().unwrap_or(0),
            gpus: Vec::new(),
        })
        .collect();
    let mut out_gpus = Vec::with_capacity(gpus.len());
    for (g, gpu) in gpus.into_iter().enumerate() {
        let cluster = gpu.cluster.map_or(usize::MAX, |(c, _)| c);
        if let Some(c) = clusters.get_mut(cluster) {
            c.gpus.push(g);
        }
        out_gpus.push(Gpu {
            name: gpu.name,
            cluster,
            copy_engines: gpu.copy_engines,
            attach: attach.get(g).copied().flatten(),
        });
    }
    Some(ParsedPlatform {
        platform: Platform {
            clusters,
            gpus: out_gpus,
            pcie,
            bandwidth,
        },
        cluster_names,
        gpu_names,
    })
}

/// Reports each cycle in the parent graph once, at the `parent` key of its
/// first node in file order.
fn report_pcie_cycles(cx: &mut Cx, pcie: &[PcieNode], parents: &[Option<(&Val, String)>]) {
    let mut reported = vec![false; pcie.len()];
    for start in 0..pcie.len() {
        // Walk up at most len steps; revisiting `start` means a cycle.
        let mut path = vec![start];
        let mut node = start;
        let mut cycle = false;
        for _ in 0..pcie.len() {
            match pcie.get(node).and_then(|n| n.parent) {
                Some(p) if p == start => {
                    cycle = true;
                    break;
                }
                Some(p) => {
                    if path.contains(&p) {
                        break; // a cycle further up, reported from its own node
                    }
                    path.push(p);
                    node = p;
                }
                None => break,
            }
        }
        if !cycle
            || path
                .iter()
                .any(|&n| reported.get(n).copied().unwrap_or(true))
        {
            continue;
        }
        for &n in &path {
            if let Some(r) = reported.get_mut(n) {
                *r = true;
            }
        }
        let mut names: Vec<String> = path
            .iter()
            .map(|&n| format!("\"{}\"", pcie.get(n).map_or("", |p| p.name.as_str())))
            .collect();
        names.push(names.first().cloned().unwrap_or_default());
        if let Some(Some((v, field))) = parents.get(start) {
            cx.error(
                v.span().start,
                field,
                format!(
                    "the PCIe topology has a cycle: {} (every chain of `parent`s must end at an I/O hub)",
                    names.join(" -> ")
                ),
            );
        }
    }
}

fn parse_bandwidth(cx: &mut Cx, t: &Tbl) -> Bandwidth {
    let mut b = Bandwidth::default();
    for (key, slot) in [
        ("host_to_device", &mut b.host_to_device),
        ("device_to_host", &mut b.device_to_host),
        ("peer", &mut b.peer),
    ] {
        if let Some(v) = t.get(key) {
            let field = t.field(key);
            if let Some(x) = read_quantity(cx, v, &field, Quantity::Bandwidth) {
                if x == 0 {
                    cx.error(v.span().start, &field, "a bandwidth must be positive");
                } else {
                    *slot = x;
                }
            }
        }
    }
    b
}
