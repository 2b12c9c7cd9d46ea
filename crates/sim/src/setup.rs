//! From a validated workload to the simulator's static tables: scheduling
//! domains, priorities and pieces (taken from the analysis, so the
//! simulator runs what `rtgpu analyze` planned), GPU groups and priors.

use rtgpu_analysis::server::Server;
use rtgpu_analysis::workload::{
    analyze_with, klmirqd_independent, Extra, PieceReport, Report, Reservation, TaskVerdict,
};
use rtgpu_model::{CpuScheduler, InterruptHandling, Overheads, Workload};
use rtgpu_policy::engine_lock::copy_time;
use rtgpu_policy::Time;

use crate::{Klmirqd, Plan, SimConfig, SimError};

/// The scheduling domain of SCHED_DEADLINE threads: not a domain of
/// cores, but global EDF on all of them above every domain's threads.
pub(crate) const DL_DOMAIN: usize = u32::MAX as usize;

pub(crate) struct Piece {
    pub domain: usize,
    /// CPU budget of the piece (Time::MAX: unsplit).
    pub budget: Time,
    /// Release offset after the job's arrival (seed 003 fixed offsets).
    pub offset: Time,
    /// FP key on its domain (smaller = more urgent); unused under EDF.
    pub key: u64,
}

pub(crate) struct GpuTask {
    pub group: usize,
    pub copy_in: u64,
    pub copy_out: u64,
    pub state: u64,
    pub kernels: Vec<Time>,
    /// CPU time inside the section, after the copy-in (`GpuPart::cpu`).
    pub cpu: Time,
    pub vgpu: Option<usize>,
    pub static_gpu: usize,
    /// Predicted GPU section cost per migration distance 0..=3.
    pub prior: [Time; 4],
    /// The section is submitted at once (`Workload::batched_section`):
    /// only its last operation raises an interrupt and wakes the job.
    pub batched: bool,
}

pub(crate) struct TaskSetup {
    pub name: String,
    pub period: Time,
    pub deadline: Time,
    pub wcet: Time,
    pub jitter: Time,
    pub pieces: Vec<Piece>,
    pub gpu: Option<GpuTask>,
    /// A CPU reservation: the thread runs under SCHED_DEADLINE with these
    /// parameters (its one piece is in [`DL_DOMAIN`]).
    pub reservation: Option<Reservation>,
}

pub(crate) struct GpuSetup {
    pub name: String,
    pub group: usize,
    /// Its index among its group's GPUs (the allocator's GPU index).
    pub local: usize,
    pub copy_engines: u8,
    pub irq_core: usize,
    /// PCIe link id (its switch, or the GPU itself without a topology).
    pub link: usize,
    pub cluster: usize,
}

pub(crate) struct GroupSetup {
    /// Global GPU indices.
    pub gpus: Vec<usize>,
    /// Row-major migration distances between the group's GPUs.
    pub distance: Vec<u32>,
    /// Cores the group's GPU users run on (m of GPUSync's R²DGLP).
    pub cpus: usize,
    /// GPU-using tasks of the group (at most one request each).
    pub users: usize,
}

impl Setup {
    /// GPU `g`'s index in `group`'s allocator, if it belongs to that group.
    pub fn local_gpu(&self, group: usize, g: usize) -> Option<usize> {
        let gpu = self.gpus.get(g)?;
        (gpu.group == group).then_some(gpu.local)
    }

    /// Migration distance (seed 004 §4.2) from GPU `a` to GPU `b`: from
    /// `group`'s table when both are its GPUs (always, for a task's own
    /// sections), else from the topology (which walks the PCIe tree).
    pub fn gpu_distance(&self, group: usize, a: usize, b: usize) -> u32 {
        match (self.local_gpu(group, a), self.local_gpu(group, b)) {
            (Some(x), Some(y)) => {
                let grp = &self.groups[group];
                grp.distance[x * grp.gpus.len() + y]
            }
            _ => self.platform.migration_distance(a, b),
        }
    }
}

pub(crate) struct Setup {
    pub name: String,
    pub scheduler: CpuScheduler,
    pub edf: bool,
    pub cores: usize,
    pub domains: Vec<Vec<usize>>,
    pub core_domain: Vec<usize>,
    pub tasks: Vec<TaskSetup>,
    pub gpus: Vec<GpuSetup>,
    pub groups: Vec<GroupSetup>,
    pub links: usize,
    pub policy: rtgpu_model::Policy,
    pub overheads: Overheads,
    pub bandwidth: rtgpu_model::Bandwidth,
    /// (vGPU name, its GPU, policy, budget, period).
    pub vgpus: Vec<(String, usize, rtgpu_model::VgpuPolicy, Time, Time)>,
    pub platform: rtgpu_model::Platform,
    /// klmirqd's independent mode: every GPU's interrupt thread is a
    /// SCHED_DEADLINE server of these parameters.
    pub bottom_half_server: Option<Server>,
    pub notes: Vec<String>,
}

/// FP key of a rank (1 = most urgent): even numbers, so a fixed interrupt
/// thread priority fits between two ranks (see [`fixed_irq_key`]).
pub(crate) fn rank_key(rank: u32) -> u64 {
    2 * rank as u64
}

/// A PREEMPT_RT interrupt thread at SCHED_FIFO priority `p` (1..=99)
/// against tasks whose SCHED_FIFO priorities follow the plan's mapping
/// (rank r -> 99 - r, as `rtgpu analyze --plan` writes them): above ranks
/// with a lower SCHED_FIFO priority, below those with an equal or higher one.
pub(crate) fn fixed_irq_key(p: u8, edf: bool) -> u64 {
    if edf {
        // SCHED_FIFO threads outrank every job of a C-EDF/G-EDF plugin in
        // LITMUS^RT's model of interrupt threads: run them first.
        return 0;
    }
    let p = p.clamp(1, 99) as u64;
    2 * (99 - p) + 1
}

/// What the analysis that places and bounds a simulation of `w` under
/// `cfg` charges beyond the tasks: klmirqd's independent servers as the
/// simulator runs them, and `cfg`'s method. The simulator places tasks by
/// it; front ends print its bounds beside the observations.
pub fn analysis_extra(w: &Workload, cfg: &SimConfig) -> Extra {
    let extra = match cfg.klmirqd {
        Klmirqd::Independent(server) => klmirqd_independent(w, server),
        Klmirqd::Dependent => Extra::default(),
    };
    Extra {
        method: cfg.method,
        ..extra
    }
}

/// What the simulator takes of a task's analysis (or of a plan): its CPU
/// reservation, whether it was placed, its pieces (P-FP), its cluster and
/// its FP rank.
struct Placement {
    reservation: Option<Reservation>,
    /// P-FP: no placement (the simulator runs such a CPU-only task below
    /// every placed one, and refuses a GPU-using one).
    unplaced: bool,
    pieces: Vec<PieceReport>,
    cluster: Option<usize>,
    priority: Option<u32>,
}

/// The analysis' placements of `w`'s tasks, and the name of its method.
/// Where the full (GPU-aware) analysis could not place every task, the
/// placement of the workload's CPU view (GPU sections dropped) is used (a
/// note says so).
fn analysed_placements(
    w: &Workload,
    extra: &Extra,
    notes: &mut Vec<String>,
    analysis: &mut Option<Report>,
) -> (Vec<Placement>, String) {
    let (mut report, mut plan) = analyze_with(w, extra);
    // The workload's own analysis, whose bounds front ends print.
    *analysis = Some(report.clone());
    // A task the GPU-aware analysis leaves without a placement sends the
    // simulator to the CPU view's placement, except under P-FP when only
    // CPU-only tasks are unplaced: those run below every placed task
    // (below), where they delay none of them, so the analysis' placement
    // and bounds stay what is simulated.
    let pfp = w.policy.cpu_scheduler == CpuScheduler::PartitionedFp;
    let unplaced_somewhere = report.tasks.iter().enumerate().any(|(i, t)| {
        let unplaced = t.verdict == TaskVerdict::Unplaced
            || t.verdict == TaskVerdict::NotAnalysed
            || (pfp && plan.tasks.get(i).is_none_or(|p| p.pieces.is_empty()));
        !w.tasks[i].reservation && unplaced && (!pfp || w.tasks[i].uses_gpu())
    });
    if unplaced_somewhere && w.tasks.iter().any(|t| t.uses_gpu()) {
        let mut cpu_view = w.clone();
        for t in &mut cpu_view.tasks {
            t.gpu = None;
        }
        (report, plan) = analyze_with(&cpu_view, extra);
        notes.push(
            "the GPU-aware analysis could not place every task; the simulator uses the \
             placement and priorities of the workload's CPU view (GPU sections dropped)"
                .into(),
        );
    }
    let placements = report
        .tasks
        .iter()
        .enumerate()
        .map(|(i, tr)| {
            let pt = plan.tasks.get(i);
            let pieces = pt.map_or_else(Vec::new, |p| p.pieces.clone());
            Placement {
                reservation: pt.and_then(|p| p.reservation),
                unplaced: tr.verdict == TaskVerdict::Unplaced || pieces.is_empty(),
                pieces,
                cluster: tr.cluster,
                priority: tr.priority,
            }
        })
        .collect();
    (placements, report.method.to_string())
}

/// The placements a plan gives `w`'s tasks (checked against `w`). A P-FP
/// task is placed when its pieces' budgets cover its WCET; a task's
/// cluster is the one of its first core; a G-FP or C-FP rank is read back
/// from its SCHED_FIFO priority (rank r at 99 - r, [`Plan::check`]
/// refuses clamped ones).
fn plan_placements(w: &Workload, p: &Plan) -> Vec<Placement> {
    let cluster_of_core = |core: u32| {
        w.platform
            .clusters
            .iter()
            .position(|c| core >= c.first_core && core < c.first_core + c.cores)
    };
    let fp = !matches!(
        w.policy.cpu_scheduler,
        CpuScheduler::ClusteredEdf | CpuScheduler::GlobalEdf
    );
    p.tasks
        .iter()
        .zip(&w.tasks)
        .map(|(pt, t)| {
            let pieces = pt.pieces.clone();
            let placed: Time = pieces.iter().map(|x| x.budget).sum();
            Placement {
                reservation: pt.reservation,
                unplaced: pieces.is_empty() || placed < t.wcet,
                cluster: pt.cores.first().and_then(|&c| cluster_of_core(c)),
                priority: match w.policy.cpu_scheduler {
                    CpuScheduler::PartitionedFp => pieces.first().map(|x| x.priority),
                    _ if fp => pt
                        .sched_fifo_priority
                        .map(|prio| 99u32.saturating_sub(prio as u32)),
                    _ => None,
                },
                pieces,
            }
        })
        .collect()
}

/// The simulator's tables for `w` under `cfg`, placed by `given` or by
/// the analysis; `analysis` receives the workload's analysis when one ran
/// (what [`crate::simulate_analysed`] returns beside the result).
pub(crate) fn build(
    w: &Workload,
    cfg: &SimConfig,
    given: Option<&Plan>,
    analysis: &mut Option<Report>,
) -> Result<Setup, SimError> {
    if w.tasks.is_empty() {
        return Err(SimError(format!("{}: no tasks to simulate", w.name)));
    }
    let mut notes = Vec::new();
    let sched = w.policy.cpu_scheduler;
    let edf = matches!(sched, CpuScheduler::ClusteredEdf | CpuScheduler::GlobalEdf);
    // The analysis decides placement and priorities; the simulator runs that
    // placement, so what it observes is comparable with the analysed bounds.
    // Where the full (GPU-aware) analysis could not place every task, the
    // placement of the workload's CPU view (GPU sections dropped) is used.
    // klmirqd's independent servers are charged as `rtgpu run` charges them
    // (the placement may depend on them).
    let extra = analysis_extra(w, cfg);
    if matches!(cfg.klmirqd, Klmirqd::Independent(_)) && extra.bottom_halves.is_none() {
        notes.push(
            "klmirqd's independent mode asked for, but the workload's interrupts are not \
             `klmirqd` or no task uses a GPU: no server runs"
                .into(),
        );
    }
    let (placements, method) = match given {
        Some(p) => {
            p.check(w).map_err(SimError)?;
            (plan_placements(w, p), "plan's".to_string())
        }
        None => analysed_placements(w, &extra, &mut notes, analysis),
    };
    let cores = w.platform.total_cores() as usize;
    let cluster_of_core = |core: usize| {
        w.platform
            .clusters
            .iter()
            .position(|c| core >= c.first_core as usize && core < (c.first_core + c.cores) as usize)
            .unwrap_or(0)
    };
    let (domains, core_domain): (Vec<Vec<usize>>, Vec<usize>) = match sched {
        CpuScheduler::PartitionedFp => {
            ((0..cores).map(|c| vec![c]).collect(), (0..cores).collect())
        }
        CpuScheduler::GlobalFp | CpuScheduler::GlobalEdf => {
            (vec![(0..cores).collect()], vec![0; cores])
        }
        CpuScheduler::ClusteredFp | CpuScheduler::ClusteredEdf => (
            w.platform
                .clusters
                .iter()
                .map(|c| (c.first_core as usize..(c.first_core + c.cores) as usize).collect())
                .collect(),
            (0..cores).map(cluster_of_core).collect(),
        ),
    };

    let mut tasks = Vec::with_capacity(w.tasks.len());
    let mut unplaced = Vec::new();
    let mut not_placed: Vec<String> = Vec::new();
    for (i, t) in w.tasks.iter().enumerate() {
        let pl = &placements[i];
        let reservation = pl.reservation;
        if t.reservation && t.gpu.as_ref().is_some_and(|g| g.cpu > 0) {
            return Err(SimError(format!(
                "{}: task {} is a CPU reservation with CPU time inside its GPU section,                  which is not supported (the workload file rejects it)",
                w.name, t.name
            )));
        }
        if t.reservation && reservation.is_none() {
            unplaced.push(t.name.clone());
            continue;
        }
        let pieces = match sched {
            _ if reservation.is_some() => vec![Piece {
                domain: DL_DOMAIN,
                budget: Time::MAX,
                offset: 0,
                key: 0,
            }],
            CpuScheduler::PartitionedFp => {
                if pl.unplaced && t.uses_gpu() {
                    unplaced.push(t.name.clone());
                    continue;
                } else if pl.unplaced {
                    // A CPU-only task the partitioning could not place: on
                    // a core in turn, below every placed task there.
                    let core = not_placed.len() % cores.max(1);
                    not_placed.push(t.name.clone());
                    vec![Piece {
                        domain: core,
                        budget: Time::MAX,
                        offset: 0,
                        key: rank_key((1 << 30) + i as u32),
                    }]
                } else {
                    let single = pl.pieces.len() == 1;
                    pl.pieces
                        .iter()
                        .map(|p| Piece {
                            domain: p.core as usize,
                            budget: if single { Time::MAX } else { p.budget },
                            offset: p.release_offset,
                            key: rank_key(p.priority),
                        })
                        .collect()
                }
            }
            _ => {
                let domain = match sched {
                    CpuScheduler::GlobalFp | CpuScheduler::GlobalEdf => 0,
                    _ => pl.cluster.unwrap_or(0),
                };
                vec![Piece {
                    domain,
                    budget: Time::MAX,
                    offset: 0,
                    key: rank_key(pl.priority.unwrap_or(i as u32 + 1)),
                }]
            }
        };
        tasks.push(TaskSetup {
            name: t.name.clone(),
            period: t.period,
            deadline: t.deadline,
            wcet: t.wcet,
            jitter: if cfg.jitter { t.jitter } else { 0 },
            pieces,
            gpu: None,
            reservation,
        });
    }
    if !not_placed.is_empty() {
        notes.push(format!(
            "{} CPU-only task(s) the partitioning could not place run below every placed task \
             of a core ({}): the placed tasks keep the analysis' placement and bounds",
            not_placed.len(),
            if not_placed.len() > 10 {
                format!(
                    "{} and {} more",
                    not_placed[..10].join(", "),
                    not_placed.len() - 10
                )
            } else {
                not_placed.join(", ")
            }
        ));
    }
    if !unplaced.is_empty() {
        return Err(SimError(format!(
            "{}: the {} partitioning could not place {} task(s) ({}); the simulator runs \
             only what the analysis placed (see `rtgpu analyze`)",
            w.name,
            method,
            unplaced.len(),
            unplaced.join(", ")
        )));
    }

    // GPU groups: one allocator per pool (`Workload::gpu_pools`: per
    // cluster, or one over every GPU under a global scheduler).
    let pools = w.gpu_pools();
    let mut groups: Vec<GroupSetup> = pools
        .iter()
        .map(|pool| GroupSetup {
            gpus: pool.gpus.clone(),
            distance: Vec::new(),
            cpus: pool.cores as usize,
            users: 0,
        })
        .collect();
    let mut gpus = Vec::new();
    for (g, gpu) in w.platform.gpus.iter().enumerate() {
        let group = w.gpu_pool_of(gpu.cluster);
        let local = groups[group].gpus.iter().position(|&x| x == g).unwrap_or(0);
        let first = w
            .platform
            .clusters
            .get(gpu.cluster)
            .map_or(0, |c| c.first_core as usize);
        gpus.push(GpuSetup {
            name: gpu.name.clone(),
            group,
            local,
            copy_engines: gpu.copy_engines,
            irq_core: first,
            link: gpu.attach.unwrap_or(w.platform.pcie.len() + g),
            cluster: gpu.cluster,
        });
    }
    for grp in &mut groups {
        let n = grp.gpus.len();
        grp.distance = (0..n * n)
            .map(|k| {
                w.platform
                    .migration_distance(grp.gpus[k / n], grp.gpus[k % n])
            })
            .collect();
    }
    let bw = w.platform.bandwidth;
    let global = sched.is_global();
    // Each task's GPU group (its pool), for static assignment's deal below.
    let mut group_of: Vec<Option<usize>> = vec![None; w.tasks.len()];
    for (i, t) in w.tasks.iter().enumerate() {
        let Some(g) = &t.gpu else { continue };
        let ts = &mut tasks[i];
        let first_core = ts.pieces[0].domain;
        let cluster = match sched {
            // A GPU-using reservation runs on every core (its piece is in
            // DL_DOMAIN, no core): it uses the GPU group of the first
            // cluster that has GPUs, group 0 under a global scheduler (the
            // analysis's rule too). A vGPU member cannot be a reservation.
            _ if ts.reservation.is_some() => w.platform.first_gpu_cluster().unwrap_or(0),
            CpuScheduler::PartitionedFp => cluster_of_core(first_core),
            _ if global => t.cluster.unwrap_or(0),
            _ => placements[i].cluster.unwrap_or(0),
        };
        let group = match g.vgpu {
            Some(v) => gpus[w.vgpus[v].gpu].group,
            None => w.gpu_pool_of(cluster),
        };
        if let Some(grp) = groups.get_mut(group) {
            grp.users += 1;
        }
        if groups[group].gpus.is_empty() {
            return Err(SimError(format!(
                "{}: task {} uses a GPU but its cluster {} has none",
                w.name,
                t.name,
                w.platform
                    .clusters
                    .get(cluster)
                    .map_or("?", |c| c.name.as_str())
            )));
        }
        // A vGPU member's GPU is its vGPU's; the others' is dealt below.
        let static_gpu = match g.vgpu {
            Some(v) => w.vgpus[v].gpu,
            None => {
                group_of[i] = Some(group);
                0
            }
        };
        let base = copy_time(g.copy_in, bw.host_to_device)
            + g.cpu
            + g.kernels.iter().sum::<Time>()
            + copy_time(g.copy_out, bw.device_to_host);
        let sysmem = copy_time(g.state, bw.device_to_host) + copy_time(g.state, bw.host_to_device);
        let peer = if cfg.peer_migration {
            copy_time(g.state, bw.peer)
        } else {
            sysmem
        };
        ts.gpu = Some(GpuTask {
            group,
            copy_in: g.copy_in,
            copy_out: g.copy_out,
            state: g.state,
            kernels: g.kernels.clone(),
            cpu: g.cpu,
            vgpu: g.vgpu,
            static_gpu,
            prior: [base, base + peer, base + peer, base + sysmem],
            batched: w.batched_section(i),
        });
    }
    // Static assignment (`Workload::static_gpus`: a task's `device`, else
    // dealt in file order among its pool's unpinned GPU users).
    let static_of = w.static_gpus(|i| {
        let g = group_of[i]?;
        Some((g, groups[g].gpus.as_slice()))
    });
    for (i, t) in w.tasks.iter().enumerate() {
        let (Some(g), Some(sg)) = (group_of[i], static_of[i]) else {
            continue;
        };
        if !groups[g].gpus.contains(&sg) {
            return Err(SimError(format!(
                "{}: task {} is fixed on GPU {} (`device`), which is not in its GPU pool",
                w.name,
                t.name,
                w.platform.gpus.get(sg).map_or("?", |x| x.name.as_str())
            )));
        }
        if let Some(gt) = tasks[i].gpu.as_mut() {
            gt.static_gpu = sg;
        }
    }
    // vGPUs: a GPU that has vGPUs runs only vGPU work on its execution
    // engine (the vGPU scheduler owns it).
    for (i, t) in w.tasks.iter().enumerate() {
        if let Some(g) = &t.gpu {
            if g.vgpu.is_none() && w.policy.gpu_allocator.is_static() {
                let sg = tasks[i].gpu.as_ref().map_or(0, |x| x.static_gpu);
                if w.vgpus.iter().any(|v| v.gpu == sg) {
                    return Err(SimError(format!(
                        "{}: task {} runs on GPU {} without a vGPU, but that GPU's execution \
                         engine belongs to its vGPU scheduler; give the task a `vgpu`",
                        w.name, t.name, w.platform.gpus[sg].name
                    )));
                }
            }
        }
    }
    if !w.vgpus.is_empty()
        && w.tasks
            .iter()
            .any(|t| t.gpu.as_ref().is_some_and(|g| g.vgpu.is_none()))
        && !w.policy.gpu_allocator.is_static()
    {
        return Err(SimError(format!(
            "{}: some GPU tasks use vGPUs and others a GPU allocator; the simulator needs \
             either every GPU task in a vGPU or `gpu_allocator = \"static\"` with vGPU-free \
             GPUs for the others",
            w.name
        )));
    }
    let vgpus = w
        .vgpus
        .iter()
        .map(|v| {
            let (budget, period) = v.budget_and_period();
            (v.name.clone(), v.gpu, v.policy, budget, period)
        })
        .collect();

    let overheads = if cfg.overheads {
        w.overheads
    } else {
        Overheads::zero()
    };
    if overheads != Overheads::zero() {
        notes.push(
            "overheads injected (seed 000 App. B): release, scheduling and context switches \
             charged to jobs and bottom-half threads (a preemption's to the preempting side), \
             interrupt top halves non-preemptively on the GPU's interrupt core; timer ticks \
             are not simulated"
                .into(),
        );
    }
    if matches!(
        w.policy.interrupts,
        InterruptHandling::FixedPriorityThreads { .. }
    ) && edf
    {
        notes.push(
            "fixed-priority interrupt threads under EDF run above every job (SCHED_FIFO \
             threads have no deadline to compare)"
                .into(),
        );
    }
    let reserved: Vec<&str> = w
        .tasks
        .iter()
        .filter(|t| t.reservation)
        .map(|t| t.name.as_str())
        .collect();
    if !reserved.is_empty() || extra.bottom_halves.is_some() {
        let mut who = Vec::new();
        if !reserved.is_empty() {
            who.push(format!("CPU reservations ({})", reserved.join(", ")));
        }
        if extra.bottom_halves.is_some() {
            who.push(format!(
                "klmirqd's independent servers ({})",
                rtgpu_analysis::server::describe(&extra.servers)
            ));
        }
        notes.push(format!(
            "SCHED_DEADLINE threads: {} run as constant bandwidth servers (runtime enforced \
             exactly, CBS wake-up rule, throttled until replenished) under global EDF on all \
             cores, above every other thread; each takes an idle core first",
            who.join(" and ")
        ));
    }
    let policy = w.policy;
    Ok(Setup {
        name: w.name.clone(),
        scheduler: sched,
        edf,
        cores,
        domains,
        core_domain,
        tasks,
        gpus,
        groups,
        links: w.platform.pcie.len() + w.platform.gpus.len(),
        policy,
        overheads,
        bandwidth: bw,
        vgpus,
        platform: w.platform.clone(),
        bottom_half_server: extra.bottom_halves,
        notes,
    })
}
