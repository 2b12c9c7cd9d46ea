//! Thread set-up for `rtgpu run`: what the machine permits and the plan
//! needs (CPUs, folding, SCHED_FIFO, SCHED_DEADLINE reservations, user-space
//! EDF, with the warnings when they differ), the GPU backend and the
//! clusters' arbiters, klmirqd's completion threads (their mode, the servers
//! the analysis charges or not), and each task thread's specification:
//! affinities, policies and priorities per piece, its GPU work and its EDF
//! dispatcher. [`place`] applies a piece's affinity and policy to a thread.

use std::sync::Arc;

use rtgpu_analysis::server::{self, Server};
use rtgpu_analysis::workload::{fifo_priority, Plan, Report, Verdict};
use rtgpu_model::{CpuScheduler, Workload};

use super::gpu_section::{self, ClusterGpus, GpuWork};
use super::{edf, KlmirqdMode, RunConfig, RunError};
use crate::gpu::emulated::{EmulatedBackend, EmulatedConfig};
use crate::gpu::GpuBackend;
use crate::klmirqd::{CompletionThread, Mode, ServerConfig};
use crate::os::{self, Nanos, SchedPolicy};

/// One task thread as set up: its pieces, its priorities, its GPU work.
pub(super) struct TaskSpec {
    pub(super) index: usize,
    pub(super) wcet: Nanos,
    pub(super) period: Nanos,
    pub(super) deadline: Nanos,
    /// (CPU, policy, budget, release offset, planned core) per piece; a
    /// task that is not split has one piece with its whole WCET.
    pub(super) pieces: Vec<(Vec<usize>, SchedPolicy, Nanos, Nanos, u32)>,
    /// The base SCHED_FIFO priority the arbiter restores after inheritance.
    pub(super) base_fifo: u8,
    pub(super) gpu: Option<(Arc<ClusterGpus>, Arc<dyn GpuBackend>, GpuWork)>,
    /// EDF plans: the cluster's dispatcher that ranks active jobs by deadline.
    pub(super) edf: Option<Arc<edf::EdfDispatcher>>,
}

/// What `run` sets up before the task threads start, and reports from.
pub(super) struct Prepared {
    pub(super) warnings: Vec<String>,
    pub(super) notes: Vec<String>,
    /// The policy the task threads run under, in words.
    pub(super) policy_words: String,
    /// CPUs used for each planned core.
    pub(super) core_map: Vec<usize>,
    pub(super) backend: Option<Arc<dyn GpuBackend>>,
    /// Per cluster, its GPUs' arbiter and completion threads.
    pub(super) clusters: Vec<Option<Arc<ClusterGpus>>>,
}

/// Says what the kernel's preemption model does to the run's real-time
/// threads: with `none` or `voluntary`, a thread inside a system call keeps
/// its CPU until it returns or yields, and no bound charges that wait.
fn preemption_note(p: &os::Preemption, warnings: &mut Vec<String>, notes: &mut Vec<String>) {
    const HOW: &str = "`echo full > /sys/kernel/debug/sched/preempt` (PREEMPT_DYNAMIC kernels) \
                       or `preempt=full` on the kernel command line makes kernel code \
                       preemptible";
    const WHAT: &str = "a thread inside a system call keeps its CPU until it returns or \
                        yields, and a real-time thread woken on that CPU waits meanwhile, a \
                        wait no bound charges (on the H100 box, up to 1 ms behind the GPU \
                        driver)";
    match &p.model {
        Some(m) if p.kernel_code_blocks() => warnings.push(format!(
            "kernel preemption model `{m}` ({}): {WHAT}; {HOW}",
            p.source
        )),
        Some(_) => {}
        None => notes.push(format!(
            "kernel preemption model unknown ({}): if it is `none` or `voluntary`, {WHAT}; {HOW}",
            p.source
        )),
    }
}

/// What the machine permits and the plan needs.
struct Placement {
    caps: os::Capabilities,
    core_map: Vec<usize>,
    edf: bool,
    realtime: bool,
    reserve: bool,
    /// The task reservations reclaim unused bandwidth (SCHED_FLAG_RECLAIM).
    reclaim: bool,
    policy_words: String,
}

/// Sets up the run of `workload` under `plan`: everything but the task
/// threads themselves, whose specifications it returns.
pub(super) fn prepare(
    workload: &Workload,
    report: &Report,
    plan: &Plan,
    config: &RunConfig,
) -> Result<(Prepared, Vec<TaskSpec>), RunError> {
    if plan.tasks.len() != workload.tasks.len() {
        return Err(RunError::NoPlan {
            workload: workload.name.clone(),
            reason: report.reason.clone(),
        });
    }
    let mut warnings = Vec::new();
    let placement = policies(workload, report, plan, config, &mut warnings);
    // One EDF dispatcher per cluster (G-EDF: the only one).
    let dispatchers: Vec<Arc<edf::EdfDispatcher>> = (0..workload.platform.clusters.len())
        .map(|_| Arc::new(edf::EdfDispatcher::default()))
        .collect();
    let mut notes = Vec::new();
    if placement.realtime || placement.reserve {
        preemption_note(&os::preemption(), &mut warnings, &mut notes);
    }
    let (backend, clusters) = gpus(
        workload,
        report,
        plan,
        config,
        &placement,
        &mut warnings,
        &mut notes,
    )?;
    let specs = task_specs(
        workload,
        plan,
        &placement,
        &dispatchers,
        &backend,
        &clusters,
    )?;
    let Placement {
        core_map,
        policy_words,
        ..
    } = placement;
    let prepared = Prepared {
        warnings,
        notes,
        policy_words,
        core_map,
        backend,
        clusters,
    };
    Ok((prepared, specs))
}

/// The CPUs (folded onto this machine's where it has fewer), whether
/// real-time policies and CPU reservations apply, and the policy in words;
/// what differs from the plan becomes a warning.
fn policies(
    workload: &Workload,
    report: &Report,
    plan: &Plan,
    config: &RunConfig,
    warnings: &mut Vec<String>,
) -> Placement {
    let edf = matches!(
        workload.policy.cpu_scheduler,
        CpuScheduler::ClusteredEdf | CpuScheduler::GlobalEdf
    );
    if plan.verdict == Verdict::NotAnalysed {
        warnings.push(format!(
            "the analysis did not decide this workload ({}); running it anyway",
            report.reason
        ));
    }
    let caps = os::probe_capabilities();
    let needed = workload.platform.total_cores() as usize;
    let folded = caps.cpus.len() < needed;
    let core_map: Vec<usize> = (0..needed)
        .map(|c| {
            caps.cpus
                .get(c % caps.cpus.len().max(1))
                .copied()
                .unwrap_or(0)
        })
        .collect();
    // Folded CPU load: per CPU, the planned cores' utilization mapped onto
    // it (P-FP), or the total spread evenly (global and clustered FP).
    let n_cpus = caps.cpus.len().max(1);
    let folded_load = if report.cores.iter().any(|c| c.utilization.is_some()) {
        let mut per_cpu = vec![0.0f64; n_cpus];
        for c in &report.cores {
            per_cpu[c.core as usize % n_cpus] += c.utilization.unwrap_or(0.0);
        }
        per_cpu.into_iter().fold(0.0, f64::max)
    } else {
        report.total_utilization / n_cpus as f64
    };
    // Real-time priorities on a fold only while its load leaves the machine
    // room (below 90% per CPU); an overloaded fold runs at ordinary priorities.
    let fold_fits = folded_load <= 0.9;
    if folded {
        warnings.push(format!(
            "the plan needs {needed} cores but this machine allows {} CPU(s) ({:?}): cores are \
             folded onto them (core i on CPU i mod {}), a CPU load of up to {folded_load:.2}, \
             {}; the analysis's guarantees do not hold for this run",
            caps.cpus.len(),
            caps.cpus,
            caps.cpus.len(),
            if fold_fits {
                "which leaves room, so priorities stay real-time"
            } else {
                "so they run at ordinary priorities and the overload cannot starve the machine"
            }
        ));
    }
    let realtime = config.realtime && caps.fifo && (!folded || fold_fits);
    // CPU reservations need SCHED_DEADLINE only (some machines permit it
    // and refuse SCHED_FIFO).
    let reserve = config.realtime && caps.deadline && (!folded || fold_fits);
    let reserved: Vec<&str> = plan
        .tasks
        .iter()
        .filter(|t| t.reservation.is_some())
        .map(|t| t.name.as_str())
        .collect();
    if !reserved.is_empty() && !reserve {
        warnings.push(format!(
            "CPU reservations ({}) run at SCHED_OTHER: {}",
            rtgpu_model::listing::listing(&reserved),
            if !config.realtime {
                "real-time policies were not asked for"
            } else if !caps.deadline {
                caps.reason
                    .as_deref()
                    .unwrap_or("SCHED_DEADLINE was refused")
            } else {
                "the folded load leaves no room"
            }
        ));
    }
    // (Every task a reservation: no thread needs SCHED_FIFO.)
    if config.realtime && !caps.fifo && reserved.len() < plan.tasks.len() {
        warnings.push(format!(
            "running with ordinary priorities (SCHED_OTHER): {}",
            caps.reason.as_deref().unwrap_or("SCHED_FIFO was refused")
        ));
    }
    if realtime {
        if let Some((rt, period)) = os::rt_bandwidth_limit() {
            let cap = rt as f64 / period as f64;
            let over: Vec<String> = report
                .cores
                .iter()
                .filter_map(|c| {
                    c.utilization
                        .filter(|&u| u > cap)
                        .map(|u| format!("core {} ({u:.3})", c.core))
                })
                .collect();
            if !over.is_empty() {
                warnings.push(format!(
                    "the kernel caps real-time threads at {:.1}% of each CPU (sched_rt_runtime_us = {rt} of sched_rt_period_us = {period}), below the planned utilization of {}: those cores will fall behind; write -1 to /proc/sys/kernel/sched_rt_runtime_us to lift the cap for this run",
                    100.0 * cap,
                    over.join(", ")
                ));
            }
        }
    }
    let policy_words = match (realtime, edf) {
        (true, false) => "SCHED_FIFO with the plan's priorities".to_string(),
        (true, true) => "EDF in user space: SCHED_FIFO priorities in deadline order, re-ranked \
                         at every release and completion"
            .to_string(),
        (false, _) => "SCHED_OTHER (ordinary priorities)".to_string(),
    };
    let policy_words = if reserve && !reserved.is_empty() && reserved.len() == plan.tasks.len() {
        "SCHED_DEADLINE: every task a reservation with the plan's runtime, deadline and period, \
         global EDF on every CPU"
            .to_string()
    } else if reserve && !reserved.is_empty() {
        format!(
            "{policy_words}; CPU reservations ({}) under SCHED_DEADLINE with the plan's runtime, \
             deadline and period, on every CPU",
            rtgpu_model::listing::listing(&reserved)
        )
    } else {
        policy_words
    };
    let reclaim = config.dl_reclaim && reserve && !reserved.is_empty();
    let policy_words = if reclaim {
        format!("{policy_words}; the reservations reclaim bandwidth none uses (SCHED_FLAG_RECLAIM)")
    } else {
        policy_words
    };
    if edf && !realtime {
        warnings.push(
            "the EDF order cannot be enforced without real-time priorities: jobs run in \
             whatever order Linux's fair scheduler picks"
                .to_string(),
        );
    }
    Placement {
        caps,
        core_map,
        edf,
        realtime,
        reserve,
        reclaim,
        policy_words,
    }
}

/// The GPU backend, and per cluster its GPUs' arbiter and completion
/// threads.
type Gpus = (Option<Arc<dyn GpuBackend>>, Vec<Option<Arc<ClusterGpus>>>);

/// GPU-using workloads: the backend, and per cluster with GPUs its arbiter
/// and klmirqd's completion threads, with notes on what they do.
fn gpus(
    workload: &Workload,
    report: &Report,
    plan: &Plan,
    config: &RunConfig,
    placement: &Placement,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Gpus, RunError> {
    let (caps, realtime) = (&placement.caps, placement.realtime);
    // GPU-using tasks: a backend (the emulated one of the platform unless
    // given) and one arbiter per cluster with GPUs.
    let uses_gpu = workload.tasks.iter().any(|t| t.uses_gpu());
    let backend: Option<Arc<dyn GpuBackend>> = if uses_gpu {
        let b = match &config.backend {
            Some(b) => Arc::clone(b),
            None => Arc::new(
                EmulatedBackend::new(&EmulatedConfig::from_platform(&workload.platform)).map_err(
                    |e| RunError::Unsupported {
                        workload: workload.name.clone(),
                        reason: e.to_string(),
                    },
                )?,
            ),
        };
        if b.devices().len() < workload.platform.gpus.len() {
            return Err(RunError::Unsupported {
                workload: workload.name.clone(),
                reason: format!(
                    "the platform has {} GPU(s) but the {} backend has {}",
                    workload.platform.gpus.len(),
                    b.name(),
                    b.devices().len()
                ),
            });
        }
        Some(b)
    } else {
        None
    };
    let clusters: Vec<Option<Arc<ClusterGpus>>> = if uses_gpu {
        let pci: Vec<Option<String>> = backend
            .as_ref()
            .map(|b| b.devices().iter().map(|d| d.pci_bus_id.clone()).collect())
            .unwrap_or_default();
        // GPU-using tasks per pool: no more requests can be pending there.
        let (_, pools_of) = clusters_and_pools(workload, plan);
        let mut users = vec![0; workload.gpu_pools().len()];
        for (t, p) in workload.tasks.iter().zip(&pools_of) {
            if let (true, Some(p)) = (t.uses_gpu(), p) {
                if let Some(n) = users.get_mut(*p) {
                    *n += 1;
                }
            }
        }
        let mut cs = gpu_section::cluster_arbiters(workload, realtime, &pci, &users);
        if workload.policy.interrupts == rtgpu_model::InterruptHandling::Klmirqd {
            let server_ok = realtime || caps.deadline;
            start_completion_threads(
                workload, report, config, realtime, server_ok, &mut cs, warnings, notes,
            )?;
        }
        cs.into_iter().map(|c| c.map(Arc::new)).collect()
    } else {
        Vec::new()
    };
    let gpu_reservations: Vec<&str> = workload
        .tasks
        .iter()
        .zip(&plan.tasks)
        .filter(|(t, p)| t.uses_gpu() && p.reservation.is_some())
        .map(|(t, _)| t.name.as_str())
        .collect();
    if let Some(n) = klmirqd_note(&clusters, realtime, &gpu_reservations) {
        notes.push(n);
    }
    // A completion the driver signals needs its interrupt thread, which
    // no reservation lets run: its wait is in no bound.
    if !gpu_reservations.is_empty() && backend.as_ref().is_some_and(|b| b.name() == "cuda") {
        let irq = os::find_threads(os::is_nvidia_irq_thread).unwrap_or_default();
        if !irq.is_empty() {
            warnings.push(format!(
                "the NVIDIA driver's interrupt threads ({}) run at {}, below every \
                 SCHED_DEADLINE thread: a GPU completion of the reservations ({}) waits until \
                 a CPU has no runnable reservation, which no analysed bound charges",
                irq.iter()
                    .map(|(_, c)| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                os::sched_policy(irq[0].0).map_or("a fixed priority".to_string(), |p| p.describe()),
                rtgpu_model::listing::listing(&gpu_reservations)
            ));
        }
    }
    let mirrored: Vec<String> = clusters
        .iter()
        .flatten()
        .flat_map(|c| c.arbiter.irq_threads())
        .collect();
    if !mirrored.is_empty() {
        notes.push(format!(
            "klmirqd: the GPU owner's priority is mirrored onto {} (seed 000 §IV)",
            mirrored.join(", ")
        ));
    }
    Ok((backend, clusters))
}

/// Each task thread's specification: per piece its CPUs, policy, budget
/// and release offset; its base priority; its GPU work (cluster, backend,
/// static GPU, vGPU); its cluster's EDF dispatcher.
/// Each task's cluster (its own, or that of its first core; a GPU-using
/// reservation, on every CPU, uses the GPUs of the first cluster that has
/// any: the analysis' and the simulator's rule) and GPU pool
/// (`Workload::gpu_pools`: its cluster's, or the one over every GPU under
/// a global scheduler).
fn clusters_and_pools(
    workload: &Workload,
    plan: &Plan,
) -> (Vec<Option<usize>>, Vec<Option<usize>>) {
    let clusters: Vec<Option<usize>> = workload
        .tasks
        .iter()
        .zip(&plan.tasks)
        .map(|(task, pt)| {
            let cluster = match (pt.reservation, task.uses_gpu()) {
                (Some(_), true) => workload.platform.first_gpu_cluster(),
                _ => task.cluster,
            };
            cluster.or_else(|| {
                let core = pt.cores.first().copied()?;
                workload
                    .platform
                    .clusters
                    .iter()
                    .position(|c| (c.first_core..c.first_core + c.cores).contains(&core))
            })
        })
        .collect();
    let pools = clusters
        .iter()
        .map(|c| c.map(|c| workload.gpu_pool_of(c)))
        .collect();
    (clusters, pools)
}

fn task_specs(
    workload: &Workload,
    plan: &Plan,
    placement: &Placement,
    dispatchers: &[Arc<edf::EdfDispatcher>],
    backend: &Option<Arc<dyn GpuBackend>>,
    clusters: &[Option<Arc<ClusterGpus>>],
) -> Result<Vec<TaskSpec>, RunError> {
    let (caps, core_map) = (&placement.caps, &placement.core_map);
    let (edf, realtime, reserve) = (placement.edf, placement.realtime, placement.reserve);
    let bw = workload.platform.bandwidth;
    let (clusters_of, pools_of) = clusters_and_pools(workload, plan);
    // Static assignment (`Workload::static_gpus`, the analysis' and the
    // simulator's rule), as an index into the task's cluster arbiter's
    // GPUs (`global`).
    let pools = workload.gpu_pools();
    let static_of = workload
        .static_gpus(|i| pools_of[i].and_then(|p| Some((p, pools.get(p)?.gpus.as_slice()))));
    let static_local = |index: usize, global: &[usize]| {
        static_of[index].and_then(|g| global.iter().position(|&x| x == g))
    };
    // P-FP tasks the partitioning could not place.
    let pfp = plan.scheduler == "P-FP";
    let unplaced = |j: usize| {
        pfp && plan
            .tasks
            .get(j)
            .is_some_and(|t| t.pieces.is_empty() && t.reservation.is_none())
    };
    let specs: Vec<TaskSpec> = workload
        .tasks
        .iter()
        .zip(&plan.tasks)
        .enumerate()
        .map(|(index, (task, pt))| {
            let policy_for =
                |rank: Option<u32>, fallback: Option<u8>| match (realtime, rank, fallback) {
                    (true, Some(r), _) => SchedPolicy::Fifo {
                        priority: fifo_priority(r),
                    },
                    (true, None, Some(p)) => SchedPolicy::Fifo { priority: p },
                    _ => SchedPolicy::Other { nice: 0 },
                };
            let pieces = if let Some(r) = pt.reservation {
                // A SCHED_DEADLINE thread keeps the affinity of its whole
                // root domain: every CPU this process may use.
                let policy = if reserve {
                    SchedPolicy::Deadline {
                        runtime: r.runtime,
                        deadline: r.deadline,
                        period: r.period,
                        reclaim: placement.reclaim,
                    }
                } else {
                    SchedPolicy::Other { nice: 0 }
                };
                vec![(caps.cpus.clone(), policy, task.wcet, 0, 0)]
            } else if unplaced(index) {
                // P-FP could not place it (`rtgpu analyze` names it): below
                // every placed task (SCHED_OTHER, under every SCHED_FIFO
                // thread) on one core in turn, as `rtgpu simulate` runs it,
                // so the placed tasks keep their bounds.
                let k = (0..index).filter(|&j| unplaced(j)).count() % core_map.len().max(1);
                vec![(
                    core_map.get(k).map(|&c| vec![c]).unwrap_or_default(),
                    SchedPolicy::Other { nice: 0 },
                    task.wcet,
                    0,
                    k as u32,
                )]
            } else if pt.pieces.is_empty() {
                // C-FP / G-FP: the cluster's cores, the task's global priority.
                let cpus = pt.cores.iter().map(|&c| core_map[c as usize]).collect();
                vec![(
                    cpus,
                    policy_for(None, pt.sched_fifo_priority),
                    task.wcet,
                    0,
                    pt.cores.first().copied().unwrap_or(0),
                )]
            } else {
                // P-FP: each piece on its core at its per-core rank.
                pt.pieces
                    .iter()
                    .map(|p| {
                        (
                            vec![core_map[p.core as usize]],
                            policy_for(Some(p.priority), None),
                            p.budget,
                            p.release_offset,
                            p.core,
                        )
                    })
                    .collect()
            };
            let base_fifo = match pieces.last().map(|p| p.1) {
                Some(SchedPolicy::Fifo { priority }) => priority,
                // A reservation runs above every SCHED_FIFO thread: its
                // GPU requests are the most urgent, and a holder it waits
                // for inherits the top FIFO priority (as in the simulator).
                _ if pt.reservation.is_some() => 99,
                _ => pt.sched_fifo_priority.unwrap_or(1),
            };
            let cluster = clusters_of[index];
            let gpu =
                match (&task.gpu, &backend, pools_of[index]) {
                    (Some(part), Some(b), Some(pi)) => match clusters.get(pi).cloned().flatten() {
                        Some(cg) => {
                            // A SCHED_DEADLINE owner runs its own bottom halves
                            // in its reservation (klmirqd's dependent mode and
                            // PAI: no fixed priority stands for a deadline; the
                            // analysis charges them to its budget): it waits
                            // for its operations itself. An independent-mode
                            // server still runs them.
                            let cg = if pt.reservation.is_some()
                                && cg.completion.iter().all(|c| {
                                    matches!(c.mode(), crate::klmirqd::Mode::Dependent { .. })
                                }) {
                                Arc::new(ClusterGpus {
                                    completion: Vec::new(),
                                    ..(*cg).clone()
                                })
                            } else {
                                cg
                            };
                            // (A vGPU member runs on its vGPU's GPU.)
                            let static_gpu = match static_local(index, &cg.global) {
                                Some(g) => g,
                                None if workload.policy.gpu_allocator.is_static()
                                    && part.vgpu.is_none() =>
                                {
                                    return Err(RunError::Unsupported {
                                        workload: workload.name.clone(),
                                        reason: format!(
                                            "task {} is fixed (`device`) on a GPU outside its \
                                             GPU pool",
                                            task.name
                                        ),
                                    })
                                }
                                None => 0,
                            };
                            let vgpu = match part.vgpu {
                                Some(v) => Some(vgpu_local(workload, &cg, v, &task.name)?),
                                None => None,
                            };
                            Some((
                                cg,
                                Arc::clone(b),
                                GpuWork {
                                    task: index,
                                    part: part.clone(),
                                    chunk: workload.policy.chunk_size,
                                    peer_locking: workload.policy.peer_locking,
                                    handoff: workload.policy.engine_handoff,
                                    hold: gpu_section::hold_estimate(
                                        part,
                                        bw.host_to_device,
                                        bw.device_to_host,
                                    ),
                                    static_gpu,
                                    vgpu,
                                    batched: workload.batched_section(index),
                                },
                            ))
                        }
                        None => None,
                    },
                    _ => None,
                };
            if task.gpu.is_some() && gpu.is_none() {
                return Err(RunError::Unsupported {
                    workload: workload.name.clone(),
                    reason: format!("task {} uses a GPU but its cluster has none", task.name),
                });
            }
            // A reservation is EDF-scheduled by the kernel itself.
            let edf = (edf && realtime && pt.reservation.is_none())
                .then(|| cluster.and_then(|ci| dispatchers.get(ci).cloned()))
                .flatten();
            Ok(TaskSpec {
                index,
                wcet: task.wcet,
                period: task.period,
                deadline: task.deadline,
                pieces,
                base_fifo,
                gpu,
                edf,
            })
        })
        .collect::<Result<_, RunError>>()?;
    Ok(specs)
}

/// Starts one completion thread per GPU of every cluster (seed 000 §IV:
/// one klmirqd thread per GPU). Dependent mode with real-time priorities:
/// each follows its GPU's owner through the cluster's arbiter. Independent
/// mode wherever SCHED_DEADLINE is permitted (`server_ok`; some machines
/// refuse SCHED_FIFO but permit it). Otherwise the threads run
/// SCHED_OTHER, and a warning says so. In independent mode it also says
/// whether `report`'s bounds charge the servers started
/// ([`servers_charged`]).
#[allow(clippy::too_many_arguments)]
fn start_completion_threads(
    workload: &Workload,
    report: &Report,
    config: &RunConfig,
    realtime: bool,
    server_ok: bool,
    clusters: &mut [Option<ClusterGpus>],
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<(), RunError> {
    let idle = SchedPolicy::Other { nice: 0 };
    let mode = match (config.klmirqd, server_ok) {
        (KlmirqdMode::Independent(server), true) => {
            match server.or_else(|| ServerConfig::for_workload(workload)) {
                Some(s) => Mode::Independent(s),
                None => Mode::Dependent { idle },
            }
        }
        _ => Mode::Dependent { idle },
    };
    // (The reservations' servers are in `report.servers` too: only the
    // bottom-half servers of an independent-mode analysis are missing.)
    if matches!(mode, Mode::Dependent { .. }) && report.bottom_halves.is_some() {
        notes.push(format!(
            "klmirqd: the analysed bounds charge {} that this run does not start (the \
             completion threads run in dependent mode): conservative",
            server::describe(&report.servers)
        ));
    }
    if !realtime && matches!(mode, Mode::Dependent { .. }) {
        warnings.push(format!(
            "klmirqd: without real-time priorities the completion threads run SCHED_OTHER: \
             the owner still sleeps while its completion work runs, but the owner's priority \
             is not applied{}",
            if !server_ok {
                " (nor a SCHED_DEADLINE server: the kernel refuses SCHED_DEADLINE too)"
            } else if matches!(config.klmirqd, KlmirqdMode::Dependent) {
                " (SCHED_DEADLINE is permitted here: `--klmirqd independent` runs the \
                 completion threads as bandwidth servers)"
            } else {
                ""
            }
        ));
    }
    for c in clusters.iter_mut().flatten() {
        for (local, &gpu) in c.global.iter().enumerate() {
            let ct = CompletionThread::start(gpu, mode).map_err(|e| RunError::Unsupported {
                workload: workload.name.clone(),
                reason: format!("cannot start the klmirqd completion thread of GPU {gpu}: {e}"),
            })?;
            if let Some(why) = &ct.mode_report().fallback {
                warnings.push(format!("klmirqd/gpu{gpu}: {why}"));
            }
            if realtime && matches!(mode, Mode::Dependent { .. }) {
                c.arbiter.add_follower(local, ct.follower());
            }
            c.completion.push(Arc::new(ct));
        }
    }
    if let Mode::Independent(s) = mode {
        let threads: Vec<&Arc<CompletionThread>> = clusters
            .iter()
            .flatten()
            .flat_map(|c| &c.completion)
            .collect();
        let unbudgeted = threads
            .iter()
            .filter(|t| t.mode_report().fallback.is_some())
            .count();
        let started = vec![Server::new(s.runtime, s.period); threads.len()];
        servers_charged(report, &started, unbudgeted, warnings, notes);
    }
    Ok(())
}

/// In words, whether the analysed bounds of `report` charge the servers
/// `started` (independent mode; `unbudgeted` of them fell back to a policy
/// without a budget): a note when they do, a warning for what they do not.
fn servers_charged(
    report: &Report,
    started: &[Server],
    unbudgeted: usize,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let Some(&s) = started.first() else { return };
    let share = 100.0 * s.runtime as f64 / s.period.max(1) as f64;
    let covered = report.servers.iter().filter(|&&r| r == s).count() >= started.len();
    if unbudgeted > 0 {
        warnings.push(format!(
            "klmirqd independent: {unbudgeted} of {} completion thread(s) run without a \
             SCHED_DEADLINE budget (see above), interference that no analysed bound charges",
            started.len()
        ));
    } else if covered {
        notes.push(format!(
            "klmirqd independent: the analysed bounds charge each GPU's completion thread as \
             a SCHED_DEADLINE server above every task on every core ({}, {share:.1}% of a CPU \
             each; ⌈(t + T − Q)/T⌉·Q in a window t, rtgpu_analysis::server)",
            server::describe(started)
        ));
        if report.verdict != Verdict::Schedulable {
            warnings.push(format!(
                "klmirqd independent: with its servers charged the analysis finds this \
                 workload NOT schedulable: {}",
                report.reason
            ));
        }
        // The bottom halves' own wait for their server's budget.
        if report.bottom_halves != Some(s) {
            warnings.push(
                "klmirqd independent: a completion that finds its server's budget spent waits \
                 for the next server period; that wait lengthens the owner's GPU hold and is not \
                 in the analysed bounds (run::klmirqd_extra charges it)"
                    .to_string(),
            );
        }
    } else {
        let why = if report.scheduler.ends_with("EDF") {
            "the EDF tardiness test has no term for interference above every task, so the \
             analysis gives no bound beside them"
        } else {
            "the analysis was made without them (rtgpu_analysis::workload::analyze_with with \
             run::klmirqd_servers charges them)"
        };
        warnings.push(format!(
            "klmirqd independent: each GPU's completion thread is a SCHED_DEADLINE server ({}, \
             {share:.1}% of a CPU each) above every SCHED_FIFO task; the analysed bounds do not \
             charge this interference: {why}",
            server::describe(started)
        ));
    }
}

/// The run's note on klmirqd's completion threads: which mode, which
/// threads, at which policy.
fn klmirqd_note(
    clusters: &[Option<Arc<ClusterGpus>>],
    realtime: bool,
    gpu_reservations: &[&str],
) -> Option<String> {
    let threads: Vec<&Arc<CompletionThread>> = clusters
        .iter()
        .flatten()
        .flat_map(|c| &c.completion)
        .collect();
    let first = threads.first()?;
    let names: Vec<String> = threads
        .iter()
        .map(|t| format!("klmirqd/gpu{} ({})", t.gpu(), t.mode_report().policy))
        .collect();
    let how = match (first.mode(), realtime) {
        (Mode::Dependent { .. }, true) => {
            "dependent mode: each runs at the effective priority of its GPU's owner \
             (inheritance included, applied by the arbiter), and back at SCHED_OTHER while \
             the GPU is idle"
        }
        (Mode::Dependent { .. }, false) => "dependent mode at ordinary priority",
        (Mode::Independent(_), _) => "independent mode: a bandwidth server per GPU",
    };
    let own = if matches!(first.mode(), Mode::Dependent { .. }) && !gpu_reservations.is_empty() {
        format!(
            "; the GPU-using CPU reservations ({}) wait for their operations themselves and run \
             their completion work in their own reservation (SCHED_DEADLINE), as the analysis \
             charges it",
            rtgpu_model::listing::listing(gpu_reservations)
        )
    } else {
        String::new()
    };
    Some(format!(
        "klmirqd: GPU completions run on per-GPU completion threads {}, {how}; the owner \
         sleeps while its completion work runs (seed 000 §III-IV){own}",
        rtgpu_model::listing::listing(&names)
    ))
}

/// A vGPU member's (local GPU, local vGPU index) in its cluster, or why it
/// cannot run there.
fn vgpu_local(
    w: &Workload,
    cluster: &ClusterGpus,
    v: usize,
    task: &str,
) -> Result<(usize, usize), RunError> {
    let unsupported = |reason: String| RunError::Unsupported {
        workload: w.name.clone(),
        reason,
    };
    let (gpu, k) = gpu_section::vgpu_slot(w, v)
        .ok_or_else(|| unsupported(format!("task {task} names vGPU {v}, which does not exist")))?;
    let local = cluster
        .global
        .iter()
        .position(|&g| g == gpu)
        .ok_or_else(|| {
            unsupported(format!(
                "task {task} is in vGPU {} on GPU {}, which is not in the task's cluster",
                w.vgpus[v].name, w.platform.gpus[gpu].name
            ))
        })?;
    Ok((local, k))
}

/// Moves the calling thread (task `index`'s) to `cpus` under `policy`;
/// what the OS refuses becomes a warning.
pub(super) fn place(index: usize, cpus: &[usize], policy: SchedPolicy, warnings: &mut Vec<String>) {
    if let Err(e) = os::set_affinity(0, cpus) {
        warnings.push(format!("task {index}: {e}"));
    }
    if let Err(e) = os::set_sched_policy(0, policy) {
        warnings.push(format!("task {index}: {e}"));
    }
}
