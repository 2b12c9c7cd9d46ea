//! The one place that computes charges: the context every driver gets
//! ([`Cx`]: the GPU bounds, interrupt method, servers), the overhead
//! charges of seed 000 App. B (Eqs. 6-24) with GPU waits and GPU time
//! counted as CPU demand, and the note that says which overheads were used.

use rtgpu_model::Workload;

use crate::gpu::Method;
use crate::overheads::{self, Charges, InterruptMethod, OverheadTask};
use crate::server::Server;
use crate::task::{Task, Time};
use crate::workload_gpu::GpuTaskReport;

#[cfg(doc)]
use super::Extra;

/// What every scheduler-specific analysis needs besides the workload.
pub(super) struct Cx<'a> {
    pub(super) w: &'a Workload,
    /// Per workload task: its GPU analysis (None for CPU-only tasks).
    pub(super) gpu: &'a [Option<GpuTaskReport>],
    pub(super) method: InterruptMethod,
    /// Whether the suspension-aware test decides for the GPU-using tasks
    /// ([`aware_test_applies`]).
    pub(super) aware: bool,
    /// Bandwidth servers charged above every task on every core.
    pub(super) servers: &'a [Server],
    /// The server that runs every GPU's bottom halves (klmirqd's
    /// independent mode, [`Extra::bottom_halves`]).
    pub(super) bottom_halves: Option<Server>,
    /// GPU-using reservations (workload indices): in no CPU analysis, but
    /// their interrupts count in every other task's H.
    pub(super) owners: &'a [usize],
}

impl Cx<'_> {
    /// Inflated charges of `members` (workload indices) with response-time
    /// windows `windows[k]` for member k; H_i (seed 000 Eq. 11) counts the
    /// other members' interrupts.
    pub(super) fn charges(&self, members: &[usize], windows: &[Time]) -> Vec<Charges> {
        let w = self.w;
        // The GPU-using reservations' interrupts too (windows: their
        // deadlines, seed 000's argument up to the first miss).
        let owners = self.owners.iter().filter(|i| !members.contains(i));
        let all: Vec<usize> = members.iter().chain(owners).copied().collect();
        let mut windows = windows.to_vec();
        windows.extend(all[members.len()..].iter().map(|&i| w.tasks[i].deadline));
        let windows = &windows[..];
        let periods: Vec<Time> = all.iter().map(|&i| w.tasks[i].period).collect();
        let etas: Vec<u32> = all
            .iter()
            .map(|&i| w.tasks[i].gpu.as_ref().map_or(0, |g| g.interrupts))
            .collect();
        let interrupting = etas.iter().any(|&e| e > 0);
        members
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let t = &w.tasks[i];
                let input = match &self.gpu[i] {
                    Some(g) => g.overhead_input(t.wcet),
                    None => OverheadTask {
                        cpu: t.wcet,
                        gpu: None,
                    },
                };
                // Eq. (11) sums over the interrupting tasks only: with none
                // (CPU-only sets) it is 0 without visiting every pair
                // (O(n²) for n tasks, issue 24).
                let h = if interrupting {
                    overheads::interrupt_count(k, windows, &periods, &etas)
                } else {
                    0
                };
                overheads::inflate(&input, h, windows[k], &w.overheads, self.method)
            })
            .collect()
    }

    /// 1 + the number of times a job of task `i` suspends and becomes ready
    /// again (seed 000 Eq. 7: 1 + 1 + η_i), 1 for CPU-only tasks.
    pub(super) fn ready_intervals(&self, i: usize) -> u64 {
        match &self.w.tasks[i].gpu {
            Some(g) => 2 + g.interrupts as u64,
            None => 1,
        }
    }
}

pub(super) fn overhead_note(w: &Workload, method: InterruptMethod, aware: bool) -> String {
    let o = &w.overheads;
    let which = if *o == rtgpu_model::Overheads::zero() {
        "zero overheads (overhead-oblivious)".to_string()
    } else if *o == rtgpu_model::Overheads::default() {
        "seed 000 Table III overheads".to_string()
    } else {
        "the workload's [overheads]".to_string()
    };
    if !w.tasks.iter().any(|t| t.uses_gpu()) {
        return format!("costs inflated with {which} (seed 000 App. B Eqs. 6, 9, 24)");
    }
    let mut n = format!(
        "costs inflated with {which} for {} interrupt handling (seed 000 App. B Eqs. 6-24), {}",
        method.name(),
        if aware {
            "suspension-aware: a GPU-using task's GPU wait and GPU time add to its own response \
             time only; the tasks below it see its CPU demand (the inflated cost without them, \
             plus the CPU work of the holds it waits for, which runs at its priority)"
        } else {
            "suspension-oblivious: GPU waits and GPU time count as CPU demand"
        }
    );
    if method == InterruptMethod::FixedPriorityThreads {
        n.push_str(
            "; fixed-priority interrupt threads are charged as klmirqd plus every bottom half \
             for every task (rtgpu's own accounting, sound only if the threads' priority is above \
             every GPU-using task's)",
        );
    }
    n
}

/// Inflated analysis tasks of one group; `windows[k]` is the response-time
/// window of `input[k]`.
pub(super) fn inflated_tasks(
    cx: &Cx,
    input: &[Task],
    windows: &[Time],
) -> (Vec<Task>, Vec<Charges>) {
    let members: Vec<usize> = input.iter().map(|t| t.id).collect();
    let charges = cx.charges(&members, windows);
    let tasks = input
        .iter()
        .zip(&charges)
        .map(|(t, c)| Task {
            wcet: c.total,
            ..*t
        })
        .collect();
    (tasks, charges)
}

/// Whether the suspension-aware test decides for `w`'s GPU-using tasks
/// under `method`: it is asked for and the scheduler is fixed priority
/// (C-FP, G-FP, P-FP; EDF's tardiness test stays suspension-oblivious, on
/// request-counted waits).
pub(super) fn aware_test_applies(w: &Workload, method: Method) -> bool {
    let edf = matches!(
        w.policy.cpu_scheduler,
        rtgpu_model::CpuScheduler::ClusteredEdf | rtgpu_model::CpuScheduler::GlobalEdf
    );
    method == Method::Aware && !edf && w.tasks.iter().any(|t| t.uses_gpu())
}

impl Cx<'_> {
    /// Workload task `i`'s analysis costs: (CPU demand, suspension) under
    /// the suspension-aware test, (inflated cost, 0) otherwise.
    ///
    /// With one bottom-half thread per GPU shared by ρ > 1 token holders
    /// (klmirqd, PAI: `shared_bottom_half_threads`) a co-holder's bottom
    /// half may run at another holder's priority, above tasks its owner's
    /// priority is below, and a holder's own waits in the thread's FIFO: so
    /// every task's CPU demand also counts one Δbh per other interrupt of
    /// its window (H, seed 000 Eq. 11; PAI's accounting, Eqs. 22-23,
    /// already does), and a GPU-using task's ρ − 1 co-holders' Δbh before
    /// each of its own operations (our derivation, docs/analyses.md).
    pub(super) fn costs(&self, i: usize, charges: &Charges) -> (Time, Time) {
        if !self.aware {
            return (charges.total, 0);
        }
        let w = self.w;
        let (mut cpu, suspension) = match &self.gpu[i] {
            Some(g) => {
                let s = g.suspension_split(charges);
                (s.cpu, s.suspension)
            }
            None => (charges.total, 0),
        };
        if crate::workload_gpu::shared_bottom_half_threads(w) && self.bottom_halves.is_none() {
            if self.method == InterruptMethod::Klmirqd {
                cpu = cpu.saturating_add(overheads::mul(charges.interrupt_count, w.overheads.bh));
            }
            let own = u64::from(crate::workload_gpu::operations(w, i, false))
                .saturating_mul(u64::from(w.policy.tokens() - 1));
            cpu = cpu.saturating_add(overheads::mul(own, w.overheads.bh));
        }
        (cpu, suspension)
    }
}
