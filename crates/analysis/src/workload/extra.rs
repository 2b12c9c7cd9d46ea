//! CPU interference beyond the workload's own tasks ([`Extra`], for
//! [`analyze_with`]): bandwidth servers above every task, and klmirqd's
//! independent mode, whose bottom-half server this module sizes.

use rtgpu_model::Workload;

use crate::gpu::Method;
use crate::overheads;
use crate::server::Server;
use crate::task::Time;

#[cfg(doc)]
use super::analyze_with;
#[cfg(doc)]
use super::stretch::section_stretch;

/// CPU interference beyond the workload's own tasks, for [`analyze_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extra {
    /// Bandwidth servers (runtime Q, period T) above every task, each of
    /// which may run on any core: klmirqd's independent mode, one
    /// SCHED_DEADLINE server per GPU that gets a completion thread.
    pub servers: Vec<Server>,
    /// klmirqd's independent mode: every GPU's bottom halves run in a
    /// server of these parameters (its own, one of `servers`) instead of
    /// in the owner's scheduling domain. Each GPU hold is then stretched
    /// by the server's latency per interrupt ([`Server::latency`]) in
    /// place of the dependent mode's stretch ([`section_stretch`]).
    /// Ignored unless the workload's interrupts are `klmirqd`.
    pub bottom_halves: Option<Server>,
    /// How GPU-using tasks are analysed (`rtgpu analyze --method`).
    pub method: Method,
}

impl Extra {
    /// The servers that run (a positive runtime and period).
    pub fn active_servers(&self) -> Vec<Server> {
        self.servers
            .iter()
            .copied()
            .filter(Server::is_active)
            .collect()
    }
}

/// The most bottom-half work pending at once in a GPU's klmirqd server
/// (independent mode): one Δbh per concurrent owner of the GPU, ρ token
/// holders (every GPU-using task when vGPUs let tasks share a GPU without
/// a token), never more than the GPU-using tasks; each owner waits for an
/// operation's completion before its next operation. A server whose
/// runtime covers it serves any backlog within two periods
/// ([`Server::latency`]).
pub fn bottom_half_backlog(w: &Workload) -> Time {
    let users = w.tasks.iter().filter(|t| t.uses_gpu()).count() as u64;
    let owners = if w.vgpus.is_empty() {
        users.min(u64::from(w.policy.tokens()))
    } else {
        users
    };
    overheads::mul(owners, w.overheads.bh)
}

/// klmirqd's independent mode's default server for `w`'s bottom halves
/// (what `rtgpu run` and `rtgpu simulate` start unless told otherwise).
///
/// Demand: a job of task i raises `n_i` completions, the larger of its
/// declared η_i (seed 000 App. B) and the operations the runtime really
/// issues (one per copy chunk, per kernel, and per chunk of its state
/// when it migrates), each costing `Δbh` (the workload's
/// `[overheads] bh`, Table III's 29.9 us by default). Over the shortest
/// period P of those tasks they raise `Σ ⌈P/T_i⌉·n_i·Δbh`.
///
/// The server's period is P/10 (at least 1 ms, at most P), since a
/// completion that finds the budget spent waits for the next period: a
/// server period as long as the tasks' own adds up to a whole period to
/// their response times (measured: docs/seeds/000-klmirqd.md). Its runtime
/// is the demand scaled to that period, doubled for bursts, and at least
/// the largest backlog of bottom halves pending at once
/// ([`bottom_half_backlog`]), so that each completion is charged at most
/// two server periods ([`Server::latency`]); kept within 10 us .. half
/// the period. `None` when no task uses a GPU.
pub fn bottom_half_server(w: &Workload) -> Option<Server> {
    let chunk = w.policy.chunk_size;
    let gpu_tasks: Vec<(Time, Time)> = w
        .tasks
        .iter()
        .filter_map(|t| {
            let g = t.gpu.as_ref()?;
            let ops = Time::from(g.operations(chunk));
            Some((t.period.max(1), ops.max(Time::from(g.interrupts))))
        })
        .collect();
    let p = gpu_tasks.iter().map(|t| t.0).min()?;
    let demand: Time = gpu_tasks
        .iter()
        .map(|&(t, n)| p.div_ceil(t) * n * w.overheads.bh)
        .sum();
    let period = (p / 10).max(1_000_000).min(p);
    let runtime = ((2 * u128::from(demand) * u128::from(period) / u128::from(p)) as Time)
        .max(bottom_half_backlog(w));
    Some(Server::new(
        runtime.clamp(10_000, (period / 2).max(10_000)),
        period,
    ))
}

/// What klmirqd's independent mode adds to the analysis ([`analyze_with`]):
/// one server per GPU (each GPU's completion thread is one), of `server`'s
/// parameters or [`bottom_half_server`]'s, charged above every task, and
/// its latency on every GPU hold ([`Extra::bottom_halves`]). Nothing when
/// the workload's interrupts are not `klmirqd` or no task uses a GPU.
pub fn klmirqd_independent(w: &Workload, server: Option<Server>) -> Extra {
    if w.policy.interrupts != rtgpu_model::InterruptHandling::Klmirqd
        || !w.tasks.iter().any(|t| t.uses_gpu())
    {
        return Extra::default();
    }
    let Some(s) = server.or_else(|| bottom_half_server(w)) else {
        return Extra::default();
    };
    let gpus: usize = w.platform.clusters.iter().map(|c| c.gpus.len()).sum();
    Extra {
        servers: vec![s; gpus],
        bottom_halves: Some(s),
        ..Extra::default()
    }
}
