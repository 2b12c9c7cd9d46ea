//! Which tasks are analysed together: tasks assigned to clusters, the
//! groups of cores each scheduler analyses, and the GPU domains (the GPU
//! pools of the simulator and `rtgpu run`).

use rtgpu_model::{CpuScheduler, Workload};

use crate::task::Task;
use crate::workload_gpu::GpuDomain;

pub(super) fn analysis_task(id: usize, t: &rtgpu_model::Task) -> Task {
    Task {
        id,
        wcet: t.wcet,
        period: t.period,
        deadline: t.deadline,
        jitter: t.jitter,
        blocking: t.blocking,
    }
}

/// Assign every task to a cluster: bound tasks to theirs; unbound tasks, in
/// decreasing utilization, to the cluster with the most spare capacity
/// (cores − utilization), a worst-fit spread. Returns per cluster the model
/// task indices.
fn assign_clusters(w: &Workload) -> Vec<Vec<usize>> {
    let n = w.platform.clusters.len();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut load: Vec<f64> = vec![0.0; n];
    let mut unbound: Vec<usize> = Vec::new();
    // A GPU-using reservation runs on every CPU but uses the GPUs of the
    // first cluster that has any (the simulator's and the runtime's rule).
    let gpu_cluster = w.platform.first_gpu_cluster();
    for (i, t) in w.tasks.iter().enumerate() {
        let cluster = match (t.reservation, gpu_cluster) {
            (true, Some(g)) => Some(g),
            _ => t.cluster,
        };
        match cluster {
            Some(c) if c < n => {
                members[c].push(i);
                load[c] += t.wcet as f64 / t.period as f64;
            }
            _ => unbound.push(i),
        }
    }
    unbound.sort_by(|&a, &b| {
        let (ta, tb) = (&w.tasks[a], &w.tasks[b]);
        crate::task::cmp_ratio(tb.wcet, tb.period, ta.wcet, ta.period).then(a.cmp(&b))
    });
    for i in unbound {
        let t = &w.tasks[i];
        let best = (0..n)
            .max_by(|&a, &b| {
                let sa = w.platform.clusters[a].cores as f64 - load[a];
                let sb = w.platform.clusters[b].cores as f64 - load[b];
                sa.total_cmp(&sb).then(b.cmp(&a))
            })
            .unwrap_or(0);
        members[best].push(i);
        load[best] += t.wcet as f64 / t.period as f64;
    }
    members
}

/// A set of cores analysed together and the tasks that run on them.
pub(super) struct Group {
    /// The cluster, or `None` for the whole platform.
    pub(super) cluster: Option<usize>,
    pub(super) cores: Vec<u32>,
    /// Analysis tasks whose `id` is the task's index in the workload.
    pub(super) tasks: Vec<Task>,
}

/// The groups a scheduler analyses: the whole platform with every task when
/// `global`, otherwise one group per cluster with the tasks
/// [`assign_clusters`] gives it.
pub(super) fn groups(w: &Workload, global: bool) -> Vec<Group> {
    // GPU-using reservations ([`analyze_tasks`]) are in no CPU group.
    let tasks_of = |members: &[usize]| -> Vec<Task> {
        members
            .iter()
            .filter(|&&i| !w.tasks[i].reservation)
            .map(|&i| analysis_task(i, &w.tasks[i]))
            .collect()
    };
    if global {
        let all: Vec<usize> = (0..w.tasks.len())
            .filter(|&i| !w.tasks[i].reservation)
            .collect();
        return vec![Group {
            cluster: None,
            cores: (0..w.platform.total_cores()).collect(),
            tasks: tasks_of(&all),
        }];
    }
    assign_clusters(w)
        .iter()
        .enumerate()
        .map(|(ci, members)| {
            let c = &w.platform.clusters[ci];
            Group {
                cluster: Some(ci),
                cores: (c.first_core..c.first_core + c.cores).collect(),
                tasks: tasks_of(members),
            }
        })
        .collect()
}

/// The GPU domains: the GPU pools of the simulator and `rtgpu run`
/// ([`Workload::gpu_pools`]: per cluster, with the tasks [`assign_clusters`]
/// gives it, or the whole platform under global scheduling). m for
/// GPUSync is the pool's cores, or every core under P-FP (whose
/// partitioning may spread a cluster's tasks further).
pub(super) fn gpu_domains(w: &Workload) -> Vec<GpuDomain> {
    let pools = w.gpu_pools();
    if w.policy.cpu_scheduler.is_global() {
        return pools
            .into_iter()
            .map(|p| GpuDomain {
                cpus: p.cores,
                gpus: p.gpus,
                members: (0..w.tasks.len()).collect(),
            })
            .collect();
    }
    let pfp = w.policy.cpu_scheduler == CpuScheduler::PartitionedFp;
    let total = w.platform.total_cores();
    assign_clusters(w)
        .into_iter()
        .zip(pools)
        .map(|(members, p)| GpuDomain {
            cpus: if pfp { total } else { p.cores },
            gpus: p.gpus,
            members,
        })
        .collect()
}
