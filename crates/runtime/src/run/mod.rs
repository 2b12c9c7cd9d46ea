//! `rtgpu run` for CPU work: the workload's tasks as real threads, released
//! periodically with absolute sleeps on CLOCK_MONOTONIC, doing their CPU work
//! as busy loops charged in thread CPU time, with the affinities and
//! SCHED_FIFO priorities of the deployment plan.
//!
//! Split tasks (seed 003, PDMS_HPTS / PDMS_HPTS_DS) run piece by piece: piece
//! k is released at its fixed offset after the job's release (never earlier,
//! as the analysis assumes, see [`rtgpu_analysis::workload::PlanTask`]), runs
//! on its core at its per-core priority for at most its budget of thread CPU
//! time, and the job then moves to the next piece's core.
//!
//! Degrades plainly: without the privilege for real-time priorities the
//! threads run SCHED_OTHER and [`RunOutcome::warnings`] says so; a plan that
//! needs more cores than this machine allows is folded onto the CPUs there
//! (core i on CPU i mod n), at ordinary priorities when the folded load
//! would overload a CPU, and says that the analysis's guarantees do not hold
//! for such a run.
//!
//! GPU-using tasks run their GPU section after their CPU work, under the
//! in-process arbiter of their cluster ([`gpu_section`]), on the emulated
//! backend of the platform or the backend given.

pub mod edf;
pub mod gpu_section;
pub mod vgpu;

use std::sync::{Arc, Barrier};

use rtgpu_analysis::server::{self, Server};
use rtgpu_analysis::workload::{fifo_priority, Plan, Report, Verdict};
use rtgpu_model::{CpuScheduler, Workload};

use crate::gpu::emulated::{EmulatedBackend, EmulatedConfig};
use crate::gpu::GpuBackend;
use crate::klmirqd::{CompletionStats, CompletionThread, Mode, ModeReport, ServerConfig};
use crate::os::{self, monotonic_now, Nanos, SchedPolicy};
use gpu_section::{ClusterGpus, GpuRun, GpuWork};

/// How to run.
#[derive(Clone)]
pub struct RunConfig {
    /// How long to release jobs for (jobs released before the end finish).
    pub duration: Nanos,
    /// Use SCHED_FIFO where the plan gives priorities and the OS allows it.
    pub realtime: bool,
    /// The GPU backend for GPU-using tasks; `None`: the emulated backend of
    /// the workload's platform.
    pub backend: Option<Arc<dyn GpuBackend>>,
    /// klmirqd's mode for the completion threads, used when the workload's
    /// `interrupts` is `"klmirqd"`.
    pub klmirqd: KlmirqdMode,
}

impl RunConfig {
    /// `duration` of releases, SCHED_FIFO where permitted when `realtime`,
    /// the platform's emulated GPU and klmirqd's dependent mode (what a
    /// test or a caller without a GPU wants).
    pub fn new(duration: Nanos, realtime: bool) -> RunConfig {
        RunConfig {
            duration,
            realtime,
            backend: None,
            klmirqd: KlmirqdMode::Dependent,
        }
    }
}

/// The mode of klmirqd's completion threads in `rtgpu run` (seed 000 §III).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KlmirqdMode {
    /// At the effective priority of the GPU's owner, who waits meanwhile.
    #[default]
    Dependent,
    /// A SCHED_DEADLINE bandwidth server per GPU; `None`: the server
    /// [`ServerConfig::for_workload`] sizes from the workload.
    Independent(Option<ServerConfig>),
}

/// What klmirqd's completion threads did in a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KlmirqdReport {
    /// "dependent" or "independent".
    pub mode: &'static str,
    /// Per GPU (global index): its thread, the policy it started with, any
    /// fallback, and its counters.
    pub threads: Vec<KlmirqdThreadReport>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct KlmirqdThreadReport {
    pub gpu: usize,
    pub name: String,
    pub started: ModeReport,
    pub stats: CompletionStats,
}

/// One piece of one job as it really ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PieceRun {
    /// The core the plan put it on, and the CPU it was seen on at its start
    /// and end (`None` if the OS did not say).
    pub planned_core: u32,
    pub cpu_at_start: Option<usize>,
    pub cpu_at_end: Option<usize>,
    /// Times from the start of the run.
    pub start: Nanos,
    pub end: Nanos,
    /// Thread CPU time consumed.
    pub cpu_time: Nanos,
}

/// One job.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct JobRun {
    pub task: usize,
    pub job: u64,
    /// Times from the start of the run.
    pub release: Nanos,
    pub start: Nanos,
    pub finish: Nanos,
    pub response_time: Nanos,
    pub deadline_miss: bool,
    /// The CPU work, per piece and per stretch between GPU sections (a
    /// GPU-using job runs half of its CPU time outside the section before
    /// it and the rest after, as the simulator does).
    pub pieces: Vec<PieceRun>,
    /// The GPU section, for GPU-using tasks.
    pub gpu: Option<GpuRun>,
    /// When the GPU section began (it asked for its token), from the start
    /// of the run.
    pub gpu_start: Option<Nanos>,
}

/// Per-task summary beside the analysed bound.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TaskSummary {
    pub name: String,
    pub period: Nanos,
    pub deadline: Nanos,
    pub jobs: usize,
    pub deadline_misses: usize,
    pub max_response_time: Nanos,
    pub mean_response_time: Nanos,
    /// The analysis's bound on the response time, if it gave one.
    pub analysed_bound: Option<Nanos>,
    /// Pieces that ran on a CPU other than their planned core (folded runs
    /// excepted, where the planned core is mapped first).
    pub pieces_off_core: usize,
    /// GPU-using tasks (vGPU members excepted: they take no token): the
    /// longest wait for a GPU token, and how often the task's state
    /// migrated between GPUs.
    pub max_token_wait: Option<Nanos>,
    pub migrations: usize,
    /// The policy the kernel reported for the task's thread once its first
    /// piece's policy was applied (a CPU reservation: SCHED_DEADLINE).
    pub ran_under: Option<String>,
}

/// What a run produced.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunOutcome {
    /// Plain statements of what the run could not do as planned; printed at
    /// the top of the output.
    pub warnings: Vec<String>,
    /// The scheduling policy the task threads really ran under, in words.
    pub policy: String,
    /// CPUs used for each planned core.
    pub core_map: Vec<usize>,
    pub tasks: Vec<TaskSummary>,
    pub jobs: Vec<JobRun>,
    /// The GPU backend used ("emulated", "cuda"), if any task uses a GPU.
    pub backend: Option<String>,
    /// Token and engine-lock hand-offs recorded by the arbiters.
    pub handoffs: Vec<crate::arbiter::Event>,
    /// What the run did beyond the plan, in words (e.g. klmirqd mirroring).
    pub notes: Vec<String>,
    /// klmirqd's completion threads, when the workload's interrupt handling
    /// is klmirqd and a task uses a GPU.
    pub klmirqd: Option<KlmirqdReport>,
    /// vGPUs (seed 001): reserved and used shares of their GPUs.
    pub vgpus: Vec<VgpuShare>,
}

/// Why a workload cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot run {workload}: {reason}")]
    Unsupported { workload: String, reason: String },
    #[error("cannot run {workload}: the analysis made no plan ({reason})")]
    NoPlan { workload: String, reason: String },
    #[error("cannot start a task thread: {0}")]
    Spawn(std::io::Error),
}

struct TaskSpec {
    index: usize,
    wcet: Nanos,
    period: Nanos,
    deadline: Nanos,
    /// (CPU, policy, budget, release offset, planned core) per piece; a
    /// task that is not split has one piece with its whole WCET.
    pieces: Vec<(Vec<usize>, SchedPolicy, Nanos, Nanos, u32)>,
    /// The base SCHED_FIFO priority the arbiter restores after inheritance.
    base_fifo: u8,
    gpu: Option<(Arc<ClusterGpus>, Arc<dyn GpuBackend>, GpuWork)>,
    /// EDF plans: the cluster's dispatcher that ranks active jobs by deadline.
    edf: Option<Arc<edf::EdfDispatcher>>,
}

/// The bandwidth servers `rtgpu run` starts in klmirqd's independent mode
/// (`mode`), to charge in the analysis
/// ([`rtgpu_analysis::workload::analyze_with`]): one per GPU (each gets a
/// completion thread), of the configured runtime and period or the one
/// [`ServerConfig::for_workload`] sizes. Empty in dependent mode, without
/// klmirqd interrupt handling, or without GPU-using tasks. Whether the
/// kernel then grants SCHED_DEADLINE is known only at the run; [`run`]
/// says so when it does not.
pub fn klmirqd_servers(workload: &Workload, mode: &KlmirqdMode) -> Vec<Server> {
    klmirqd_extra(workload, mode).servers
}

/// What the analysis charges for klmirqd's `mode`
/// ([`rtgpu_analysis::workload::klmirqd_independent`]): in independent mode
/// the servers of [`klmirqd_servers`] as interference above every task, and
/// their latency on every GPU hold (a completion that finds its server's
/// budget spent waits for the next period); nothing in dependent mode.
pub fn klmirqd_extra(workload: &Workload, mode: &KlmirqdMode) -> rtgpu_analysis::workload::Extra {
    match mode {
        KlmirqdMode::Independent(server) => rtgpu_analysis::workload::klmirqd_independent(
            workload,
            server.map(|s| Server::new(s.runtime, s.period)),
        ),
        _ => rtgpu_analysis::workload::Extra::default(),
    }
}

/// Runs the CPU work of `workload` according to `plan` (from
/// [`rtgpu_analysis::workload::analyze`], whose `report` supplies the
/// analysed bounds shown beside the measured ones). In klmirqd's
/// independent mode those bounds charge the servers only when `report`
/// comes from [`rtgpu_analysis::workload::analyze_with`] with
/// [`klmirqd_servers`]; the run says which.
pub fn run(
    workload: &Workload,
    report: &Report,
    plan: &Plan,
    config: &RunConfig,
) -> Result<RunOutcome, RunError> {
    if plan.tasks.len() != workload.tasks.len() {
        return Err(RunError::NoPlan {
            workload: workload.name.clone(),
            reason: report.reason.clone(),
        });
    }
    let edf = matches!(
        workload.policy.cpu_scheduler,
        CpuScheduler::ClusteredEdf | CpuScheduler::GlobalEdf
    );
    let mut warnings = Vec::new();
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
            reserved.join(", "),
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
    if config.realtime && !caps.fifo {
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
    let policy_words = if reserve && !reserved.is_empty() {
        format!(
            "{policy_words}; CPU reservations ({}) under SCHED_DEADLINE with the plan's runtime, \
             deadline and period, on every CPU",
            reserved.join(", ")
        )
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
    // One EDF dispatcher per cluster (G-EDF: the only one).
    let dispatchers: Vec<Arc<edf::EdfDispatcher>> = (0..workload.platform.clusters.len())
        .map(|_| Arc::new(edf::EdfDispatcher::default()))
        .collect();

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
    let mut notes = Vec::new();
    let clusters: Vec<Option<Arc<ClusterGpus>>> = if uses_gpu {
        let pci: Vec<Option<String>> = backend
            .as_ref()
            .map(|b| b.devices().iter().map(|d| d.pci_bus_id.clone()).collect())
            .unwrap_or_default();
        let mut cs = gpu_section::cluster_arbiters(workload, realtime, &pci);
        if workload.policy.interrupts == rtgpu_model::InterruptHandling::Klmirqd {
            let server_ok = realtime || caps.deadline;
            start_completion_threads(
                workload,
                report,
                config,
                realtime,
                server_ok,
                &mut cs,
                &mut warnings,
                &mut notes,
            )?;
        }
        cs.into_iter().map(|c| c.map(Arc::new)).collect()
    } else {
        Vec::new()
    };
    let bw = workload.platform.bandwidth;
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

    // Each task's cluster: its own, or that of its first core; a
    // GPU-using reservation (on every CPU) uses the GPUs of the first
    // cluster that has any (the analysis' and the simulator's rule).
    let cluster_of = |task: &rtgpu_model::Task, pt: &rtgpu_analysis::workload::PlanTask| {
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
    };
    let clusters_of: Vec<Option<usize>> = workload
        .tasks
        .iter()
        .zip(&plan.tasks)
        .map(|(t, pt)| cluster_of(t, pt))
        .collect();
    // Each task's GPU pool (`Workload::gpu_pools`: its cluster's, or the
    // one over every GPU under a global scheduler), an index of `clusters`.
    let pools_of: Vec<Option<usize>> = clusters_of
        .iter()
        .map(|c| c.map(|c| workload.gpu_pool_of(c)))
        .collect();
    // Static assignment: the k-th GPU-using task of a pool outside any
    // vGPU, in file order, gets the pool's GPU k mod g (the analysis' and
    // the simulator's rule).
    let static_slot = |index: usize| {
        (0..index)
            .filter(|&j| {
                pools_of[j] == pools_of[index]
                    && workload.tasks[j]
                        .gpu
                        .as_ref()
                        .is_some_and(|g| g.vgpu.is_none())
            })
            .count()
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
                    }
                } else {
                    SchedPolicy::Other { nice: 0 }
                };
                vec![(caps.cpus.clone(), policy, task.wcet, 0, 0)]
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
                            let n = cg.global.len().max(1);
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
                                    static_gpu: static_slot(index) % n,
                                    vgpu,
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

    // All threads start their first job at the same instant, after set-up.
    let barrier = Arc::new(Barrier::new(specs.len() + 1));
    let start_at = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut handles = Vec::new();
    for spec in specs {
        let barrier = Arc::clone(&barrier);
        let start_at = Arc::clone(&start_at);
        let duration = config.duration;
        let name = format!("rtgpu-task{}", spec.index);
        let h = std::thread::Builder::new()
            .name(name)
            .spawn(move || task_thread(spec, duration, &barrier, &start_at))
            .map_err(RunError::Spawn)?;
        handles.push(h);
    }
    // 20 ms for every thread to reach its first sleep.
    let t0 = monotonic_now() + 20_000_000;
    start_at.store(t0, std::sync::atomic::Ordering::SeqCst);
    for gate in clusters
        .iter()
        .flatten()
        .flat_map(|c| c.vgpus.iter().flatten())
    {
        gate.set_window(t0, t0 + config.duration);
    }
    barrier.wait();

    let mut jobs = Vec::new();
    let mut thread_warnings = Vec::new();
    // Threads were spawned in task order.
    let mut ran_under = Vec::with_capacity(handles.len());
    for h in handles {
        match h.join() {
            Ok((mut j, w, policy)) => {
                jobs.append(&mut j);
                thread_warnings.extend(w);
                ran_under.push(policy);
            }
            Err(_) => {
                thread_warnings.push("a task thread panicked; its jobs are lost".to_string());
                ran_under.push(None);
            }
        }
    }
    thread_warnings.sort();
    thread_warnings.dedup();
    warnings.extend(thread_warnings);
    jobs.sort_by_key(|j| (j.release, j.task));
    let mut handoffs = Vec::new();
    for c in clusters.iter().flatten() {
        handoffs.extend(c.arbiter.take_events());
        for e in c.arbiter.apply_errors() {
            warnings.push(format!("priority inheritance not applied: {e}"));
        }
    }
    handoffs.sort_by_key(|e| e.at);
    let klmirqd = klmirqd_report(&clusters);
    if let Some(k) = &klmirqd {
        let n: u64 = k.threads.iter().map(|t| t.stats.completions).sum();
        let cpu: u64 = k.threads.iter().map(|t| t.stats.total_cpu).sum();
        let max = k.threads.iter().map(|t| t.stats.max_cpu).max().unwrap_or(0);
        let lat = k
            .threads
            .iter()
            .map(|t| t.stats.max_latency)
            .max()
            .unwrap_or(0);
        notes.push(format!(
            "klmirqd: {n} GPU completion(s) ran on the completion threads, bottom half mean \
             {:.1} us and max {:.1} us of CPU time, at most {:.1} us from the device's signal \
             to waking the owner",
            cpu as f64 / n.max(1) as f64 / 1e3,
            max as f64 / 1e3,
            lat as f64 / 1e3
        ));
    }

    let vgpus = vgpu_shares(workload, &clusters, config.duration);
    for v in &vgpus {
        notes.push(format!(
            "vGPU {}: reserved {:.1}% of its GPU, its kernels used {:.1}% of it while jobs \
             were released (seed 001)",
            v.name,
            100.0 * v.reserved,
            100.0 * v.used,
        ));
    }
    let tasks = workload
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mine: Vec<&JobRun> = jobs.iter().filter(|j| j.task == i).collect();
            let n = mine.len();
            let sum: u128 = mine.iter().map(|j| u128::from(j.response_time)).sum();
            let off = mine
                .iter()
                .flat_map(|j| &j.pieces)
                .filter(|p| {
                    let cpu = core_map[p.planned_core as usize];
                    !runs_on_cluster(plan, i)
                        && (p.cpu_at_start != Some(cpu) || p.cpu_at_end != Some(cpu))
                })
                .count();
            TaskSummary {
                name: t.name.clone(),
                period: t.period,
                deadline: t.deadline,
                jobs: n,
                deadline_misses: mine.iter().filter(|j| j.deadline_miss).count(),
                max_response_time: mine.iter().map(|j| j.response_time).max().unwrap_or(0),
                mean_response_time: if n == 0 {
                    0
                } else {
                    (sum / n as u128) as Nanos
                },
                analysed_bound: report.tasks.get(i).and_then(|r| r.response_time),
                pieces_off_core: off,
                // vGPU members take no token (seed 001's vGPU scheduler
                // orders their kernels instead).
                max_token_wait: t.gpu.as_ref().is_some_and(|g| g.vgpu.is_none()).then(|| {
                    mine.iter()
                        .filter_map(|j| j.gpu.map(|g| g.token_wait))
                        .max()
                        .unwrap_or(0)
                }),
                migrations: mine
                    .iter()
                    .filter(|j| j.gpu.is_some_and(|g| g.migrated))
                    .count(),
                ran_under: ran_under.get(i).cloned().flatten(),
            }
        })
        .collect();

    Ok(RunOutcome {
        warnings,
        policy: policy_words,
        core_map,
        tasks,
        jobs,
        backend: backend.map(|b| b.name().to_string()),
        handoffs,
        notes,
        klmirqd,
        vgpus,
    })
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
            gpu_reservations.join(", ")
        )
    } else {
        String::new()
    };
    Some(format!(
        "klmirqd: GPU completions run on per-GPU completion threads {}, {how}; the owner \
         sleeps while its completion work runs (seed 000 §III-IV){own}",
        names.join(", ")
    ))
}

fn klmirqd_report(clusters: &[Option<Arc<ClusterGpus>>]) -> Option<KlmirqdReport> {
    let threads: Vec<KlmirqdThreadReport> = clusters
        .iter()
        .flatten()
        .flat_map(|c| &c.completion)
        .map(|t| KlmirqdThreadReport {
            gpu: t.gpu(),
            name: format!("klmirqd/gpu{}", t.gpu()),
            started: t.mode_report().clone(),
            stats: t.stats(),
        })
        .collect();
    let first = threads.first()?;
    Some(KlmirqdReport {
        mode: first.started.mode,
        threads,
    })
}

/// One vGPU's reservation and the share of its GPU it used in a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VgpuShare {
    pub name: String,
    /// Budget over period (seed 001's share).
    pub reserved: f64,
    /// Its kernels' execution-engine time over the release window.
    pub used: f64,
}

/// Per vGPU, the share of its GPU's time its kernels used in the release
/// window (the `duration` from the first release, set on the gates before
/// it) beside its reservation (seed 001 Fig. 10's check; after the window
/// members run out of work one by one).
fn vgpu_shares(
    w: &Workload,
    clusters: &[Option<Arc<ClusterGpus>>],
    duration: Nanos,
) -> Vec<VgpuShare> {
    let mut shares = Vec::new();
    for (v, vg) in w.vgpus.iter().enumerate() {
        let Some((gpu, k)) = gpu_section::vgpu_slot(w, v) else {
            continue;
        };
        let gate = clusters.iter().flatten().find_map(|c| {
            let local = c.global.iter().position(|&g| g == gpu)?;
            c.vgpus.get(local).cloned().flatten()
        });
        if let Some(gate) = gate {
            let (budget, period) = vg.budget_and_period();
            shares.push(VgpuShare {
                name: vg.name.clone(),
                reserved: budget as f64 / period.max(1) as f64,
                used: gate.used_in_window(k) as f64 / duration.max(1) as f64,
            });
        }
    }
    shares
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

/// Tasks without pieces (C-FP / G-FP) may run on any CPU of their cluster.
fn runs_on_cluster(plan: &Plan, task: usize) -> bool {
    plan.tasks.get(task).is_none_or(|t| t.pieces.is_empty())
}

/// Moves the calling thread (task `index`'s) to `cpus` under `policy`;
/// what the OS refuses becomes a warning.
fn place(index: usize, cpus: &[usize], policy: SchedPolicy, warnings: &mut Vec<String>) {
    if let Err(e) = os::set_affinity(0, cpus) {
        warnings.push(format!("task {index}: {e}"));
    }
    if let Err(e) = os::set_sched_policy(0, policy) {
        warnings.push(format!("task {index}: {e}"));
    }
}

/// Where a job is in its pieces (P-FP split tasks: one piece each
/// otherwise): the piece it runs in, whether it has entered it (waited for
/// its offset and moved to its CPUs) and the piece's budget left.
struct PieceCursor<'a> {
    spec: &'a TaskSpec,
    release: Nanos,
    t0: Nanos,
    k: usize,
    left: Nanos,
    entered: bool,
    runs: Vec<PieceRun>,
}

impl PieceCursor<'_> {
    /// Runs `amount` of the job's CPU time from where it is, into later
    /// pieces as budgets run out; CPU time past the last piece's budget is
    /// not run (the plan's budgets add up to the wcet).
    fn run(&mut self, mut amount: Nanos, current: &mut usize, warnings: &mut Vec<String>) {
        while amount > 0 && self.k < self.spec.pieces.len() {
            let (cpus, policy, budget, offset, planned) = &self.spec.pieces[self.k];
            if !self.entered {
                // Fixed offsets: never earlier than planned (seed 003 §III.B).
                os::sleep_until(self.release + offset);
                if self.k != *current {
                    place(self.spec.index, cpus, *policy, warnings);
                    *current = self.k;
                }
                self.left = *budget;
                self.entered = true;
            }
            let p_start = monotonic_now();
            let cpu_start = os::current_cpu();
            let cpu0 = os::thread_cpu_time();
            let work = amount.min(self.left);
            os::spin_cpu_time(work);
            amount -= work;
            self.left -= work;
            self.runs.push(PieceRun {
                planned_core: *planned,
                cpu_at_start: cpu_start,
                cpu_at_end: os::current_cpu(),
                start: p_start - self.t0,
                end: monotonic_now() - self.t0,
                cpu_time: os::thread_cpu_time() - cpu0,
            });
            if self.left == 0 {
                self.k += 1;
                self.entered = false;
            }
        }
    }
}

fn task_thread(
    spec: TaskSpec,
    duration: Nanos,
    barrier: &Barrier,
    start_at: &std::sync::atomic::AtomicU64,
) -> (Vec<JobRun>, Vec<String>, Option<String>) {
    let mut warnings = Vec::new();
    let index = spec.index;
    if let Some((cpus, policy, ..)) = spec.pieces.first() {
        place(index, cpus, *policy, &mut warnings);
    }
    let ran_under = os::sched_policy(0).ok().map(SchedPolicy::describe);
    let client = match &spec.gpu {
        Some((cg, ..)) => match cg.arbiter.register(spec.base_fifo) {
            Ok(c) => Some(c),
            Err(e) => {
                warnings.push(format!("task {}: {e}", spec.index));
                None
            }
        },
        None => None,
    };
    let mut last_gpu = None;
    let edf_slot = spec.edf.as_ref().map(|d| d.register(client.clone()));
    let jobs_expected = (duration / spec.period.max(1)) as usize + 1;
    let mut jobs = Vec::with_capacity(jobs_expected);
    barrier.wait();
    let t0 = start_at.load(std::sync::atomic::Ordering::SeqCst);
    let end = t0 + duration;
    let mut current = 0usize;
    for job in 0u64.. {
        let release = t0 + job * spec.period;
        if release >= end {
            break;
        }
        os::sleep_until(release);
        if let (Some(d), Some(slot)) = (&spec.edf, edf_slot) {
            warnings.extend(d.release(slot, release + spec.deadline));
        }
        let start = monotonic_now();
        // CPU time inside the GPU section runs there (`run_section`); of
        // the rest, a GPU-using job runs half before its section and half
        // after (docs/simulator.md, "A GPU-using job").
        let in_section = spec.gpu.as_ref().map_or(0, |(_, _, w)| w.part.cpu);
        let outside = spec.wcet.saturating_sub(in_section);
        let before = if spec.gpu.is_some() {
            outside / 2
        } else {
            outside
        };
        let mut cpu = PieceCursor {
            spec: &spec,
            release,
            t0,
            k: 0,
            left: 0,
            entered: false,
            runs: Vec::with_capacity(spec.pieces.len()),
        };
        cpu.run(before, &mut current, &mut warnings);
        // The GPU section, on the core of the piece the job is in.
        let mut gpu_start = None;
        let gpu = match (&spec.gpu, &client) {
            (Some((cg, backend, work)), Some(c)) => {
                gpu_start = Some(monotonic_now() - t0);
                match gpu_section::run_section(c, cg, backend.as_ref(), work, &mut last_gpu) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        warnings.push(format!("task {}: GPU section failed: {e}", spec.index));
                        None
                    }
                }
            }
            _ => None,
        };
        cpu.run(outside - before, &mut current, &mut warnings);
        let pieces = cpu.runs;
        // Back to the first piece's core for the next job.
        if current != 0 {
            if let Some((cpus, policy, ..)) = spec.pieces.first() {
                place(index, cpus, *policy, &mut warnings);
            }
            current = 0;
        }
        let finish = monotonic_now();
        if let (Some(d), Some(slot)) = (&spec.edf, edf_slot) {
            warnings.extend(d.complete(slot));
        }
        let response_time = finish - release;
        jobs.push(JobRun {
            task: spec.index,
            job,
            release: release - t0,
            start: start - t0,
            finish: finish - t0,
            response_time,
            deadline_miss: response_time > spec.deadline,
            pieces,
            gpu,
            gpu_start,
        });
    }
    let _ = os::set_sched_policy(0, SchedPolicy::Other { nice: 0 });
    (jobs, warnings, ran_under)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(text: &str) -> Workload {
        rtgpu_model::parse_workload(text, "t.toml").expect("valid workload")
    }

    #[test]
    fn a_workload_without_a_plan_is_refused_with_the_analysis_reason() {
        let w = workload(
            "[platform]\ncores = 1\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n",
        );
        let (report, mut plan) = rtgpu_analysis::workload::analyze(&w);
        plan.tasks.clear();
        let err = run(&w, &report, &plan, &RunConfig::new(10_000_000, false)).unwrap_err();
        assert!(
            err.to_string().contains("the analysis made no plan"),
            "{err}"
        );
    }

    #[test]
    fn periodic_jobs_are_released_on_time_and_do_their_work() {
        let w = workload(
            "[platform]\ncores = 1\n[policy]\ncpu_scheduler = \"P-FP\"\n\
             [[task]]\nname = \"a\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n",
        );
        let (report, plan) = rtgpu_analysis::workload::analyze(&w);
        let out = run(&w, &report, &plan, &RunConfig::new(100_000_000, false)).expect("runs");
        // Releases at 0, 10, ..., 90 ms.
        assert_eq!(out.jobs.len(), 10);
        for (k, j) in out.jobs.iter().enumerate() {
            assert_eq!(j.release, k as u64 * 10_000_000);
            assert!(j.start >= j.release);
            assert!(j.response_time >= 1_000_000, "{j:?}");
            assert!(j.pieces[0].cpu_time >= 1_000_000, "{j:?}");
        }
        assert_eq!(out.tasks[0].jobs, 10);
        // The analysed bound is shown beside the measurements: C plus the
        // overheads the analysis charges (seed 000 Table III defaults).
        assert_eq!(out.tasks[0].analysed_bound, report.tasks[0].response_time);
        assert!(out.tasks[0].analysed_bound >= Some(1_000_000));
    }
}
