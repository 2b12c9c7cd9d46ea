//! How much longer a GPU holder may keep its GPU because its bottom
//! halves (or CPU work inside its section) wait for a CPU: under P-FP in
//! the owner's domain ([`section_stretch`]), in klmirqd's independent mode
//! for the bottom-half server's budget ([`server_stretch`]).

use rtgpu_model::{CpuScheduler, Workload};

use crate::overheads::{self, InterruptMethod};
use crate::server::Server;
use crate::task::Time;
use crate::{global_fp, workload_gpu};

use super::bottom_half_backlog;
use super::charges::Cx;
use super::report::TaskReport;
#[cfg(doc)]
use super::{analyze, analyze_with, Extra};

/// How much longer than its unstretched hold (critical section l_j, or
/// GPUSync's Lemma 5 hold time) each GPU-using task may keep its GPU
/// because its klmirqd (or PAI) bottom halves wait for a CPU; 0 where no
/// charge is needed. Our own derivation: seed 000 App. A/B and seed 004
/// App. A treat a holder's bottom halves as part of its GPU time s_i and
/// never delayed, which their clustered and global schedulers justify and
/// P-FP and ρ > 1 do not:
///
/// - **Why a stretch.** A holder is suspended while the GPU works; each
///   completion interrupt's bottom half runs in the owner's scheduling
///   domain at the owner's effective priority (seed 000 §III "dependent
///   mode"; what `rtgpu simulate` and `rtgpu run` do), and the holder goes
///   on only after it. Under C-FP / G-FP with ρ = 1 a waiter's own
///   analysis covers the holder's delays: the holder inherits the waiter's
///   priority (k-FMLP R2, R²DGLP), so whenever the waiter is not
///   interfered by m higher-priority jobs (the only time BC's recurrence
///   counts as its "execution" of b_i) the holder's bottom half runs; with
///   ρ > 1 the GPU's thread runs at the highest effective priority among
///   the GPU's token holders (`rtgpu run`, docs/seeds/000-klmirqd.md), so a
///   co-holder's bottom half ahead of the holder's runs at least as urgently
///   and the argument holds too. Under **P-FP** priorities are per core:
///   the holder's core may run its own higher-priority tasks while the
///   waiter's core is idle (workload 2585 of the GPU soundness run with
///   overheads: 4.4 ms of blocking against a 3.66 ms hold). The stretch is
///   charged to the hold of the task whose bottom half is preempted, so
///   every blocking bound that sums holds (static queue, k-FMLP, GPUSync's
///   THT_max) covers it, including a co-holder's bottom half queued ahead
///   of another holder's.
/// - **Bound.** A hold of unstretched length l is not progressing only
///   while one of its bottom halves is pending and every processor of its
///   owner's domain runs more urgent work: tasks of higher base priority
///   (CPU demand X_h per job: its inflated cost without GPU wait and GPU
///   time, plus its own η_h·Δbh, which run on CPUs) and lower-priority
///   GPU users whose bottom halves run with an inherited priority (per
///   job η_l(Δbh + 2(Δsch + Δcxs) + Δipi), seed 000 Eq. 16's charge). The
///   hold's length L is then the least fixed point of Bertogna & Cirinei's
///   recurrence (RTSS 2007) with the hold as the analysed work:
///   L = l + ⌊(1/m) Σ_h min(W_h(L), L − l + 1)⌋, W_h with C_h = X_h and
///   R_h = the interferer's (piece's) response-time bound of this round
///   (its deadline where it has none). A job's CPU demand in a window
///   bounded through its response window, not its period, is the usual
///   treatment of a self-suspending interferer (jitter R − C; Bletsas et
///   al., "Errata for three papers (2004-05) on fixed-priority scheduling
///   with self-suspensions", LITES 2018). Holds and response times depend
///   on each other; [`analyze`] iterates until the stretches its last round
///   used are no smaller than the ones that round's response times give,
///   i.e. a mutually consistent set of bounds, sound by the usual
///   first-violation induction of holistic analysis (Tindell & Clark,
///   1994: no bound can be the first one exceeded). Under P-FP m = 1 and the
///   interferers are those of every core the holder has a piece on (its
///   bottom half runs on one of them at a time). No fixed point within the
///   holder's deadline: `Time::MAX` (its waiters are unbounded).
/// - Bandwidth servers ([`analyze_with`]) may run on any core: each is one
///   more interferer (C = Q, T, R = T; [`crate::server`]), counted once.
/// - Top halves of other interrupts that land on the holder's core are not
///   added: each is charged whole (Δth + Δkrel) in every waiter's H_i
///   (seed 000 Eq. 11 counts every interrupt of the window on every CPU).
/// - Not charged: C-FP, G-FP, C-EDF and G-EDF (the waiter argument above;
///   under EDF with the waiter's deadline inherited), SLIH (bottom halves
///   run inline, not preemptible), fixed-priority interrupt threads (their
///   accounting assumes the threads run above every GPU-using task) and
///   vGPU members (no token holds).
pub(super) fn section_stretch(cx: &Cx, tasks: &[TaskReport]) -> Vec<Time> {
    let w = cx.w;
    let pfp = w.policy.cpu_scheduler == CpuScheduler::PartitionedFp;
    // CPU work inside GPU sections (`GpuPart::cpu`) waits for the holder's
    // core as its bottom halves do, whatever the interrupt handling.
    let section_cpu = |i: usize| w.tasks[i].gpu.as_ref().map_or(0, |g| g.cpu);
    let any_cpu = pfp && (0..w.tasks.len()).any(|i| section_cpu(i) > 0);
    let mut out = vec![0; tasks.len()];
    if let Some(server) = cx.bottom_halves {
        out = server_stretch(w, server, tasks);
        if !any_cpu {
            return out;
        }
    }
    let o = &w.overheads;
    // Without any interrupt processing cost the simulator and the runtime
    // complete operations at once: no bottom half ever waits. In a server
    // (independent mode) they wait for its budget, not for the holder's
    // core (`server_stretch`).
    let irq_cost = match cx.method {
        InterruptMethod::Pai => [o.th, o.pairel, o.bh, o.paisch],
        _ => [o.th, o.krel, o.bh, 0],
    };
    let deferred = matches!(cx.method, InterruptMethod::Klmirqd | InterruptMethod::Pai)
        && irq_cost.iter().any(|&c| c > 0)
        && cx.bottom_halves.is_none();
    if !pfp || !(deferred || any_cpu) {
        return out;
    }
    let eta = |i: usize| w.tasks[i].gpu.as_ref().map_or(0, |g| g.interrupts) as u64;
    let mul = overheads::mul;
    // X_h: CPU demand of one job (inflated cost without GPU wait and GPU
    // time, plus its own bottom halves).
    let demand = |i: usize| -> Option<Time> {
        let c = tasks[i].charges?;
        let parts = [
            c.cpu,
            c.scheduling,
            c.release,
            c.interrupts,
            c.bottom_half_scheduling,
            c.ticks,
            mul(eta(i), o.bh),
        ];
        Some(parts.into_iter().fold(0, Time::saturating_add))
    };
    // Per job of a lower-priority GPU user: what runs at an inherited
    // priority, its bottom halves with their scheduling (seed 000 Eq. 16)
    // where they run in its domain, and its CPU work inside its section.
    let bottom_halves = |i: usize| -> Time {
        let per =
            o.bh.saturating_add(o.sch.saturating_add(o.cxs).saturating_mul(2))
                .saturating_add(o.ipi);
        let halves = if deferred { mul(eta(i), per) } else { 0 };
        halves.saturating_add(section_cpu(i))
    };
    for (j, tr) in tasks.iter().enumerate() {
        let Some(g) = tr.gpu.as_ref() else { continue };
        if g.vgpu_share.is_some() || g.unbounded_because.is_some() {
            continue;
        }
        let hold = g.token_hold_time.unwrap_or_else(|| {
            workload_gpu::critical_section(w, j, g.copy_time.saturating_add(g.kernel_time))
        });
        let t = &w.tasks[j];
        if tr.pieces.is_empty() {
            continue;
        }
        // (C, T, R) of every interferer on the holder's cores (m = 1).
        let mut interferers: Vec<(Time, Time, Time)> = Vec::new();
        for pj in &tr.pieces {
            for (h, other) in tasks.iter().enumerate() {
                if h == j {
                    continue;
                }
                for ph in other.pieces.iter().filter(|p| p.core == pj.core) {
                    let c = if ph.priority < pj.priority {
                        demand(h).map_or(ph.budget, |x| x.min(ph.budget))
                    } else if other.uses_gpu {
                        bottom_halves(h).min(ph.budget)
                    } else {
                        continue;
                    };
                    // The piece's RTA includes its jitter.
                    let r = ph.response_time.unwrap_or(ph.deadline);
                    interferers.push((c, w.tasks[h].period, r));
                }
            }
        }
        // Bandwidth servers may run on any core, each once in the window.
        interferers.extend(cx.servers.iter().map(Server::interferer));
        let cap = t.deadline.max(hold);
        // The whole hold as the interfered work: BC's recurrence over it.
        let whole = global_fp::interfered_completion(&interferers, hold, 1, cap).map(|l| l - hold);
        // Or piece by piece: only a pending bottom half or the section's
        // CPU work can be kept from the core, so the hold grows by at most
        // each one's own delay, the same recurrence with that piece as the
        // work (it starts when the piece becomes ready), summed over the
        // holder's operations (one bottom half each, with its thread's
        // switches) and its section CPU work.
        let delay = |work: Time| -> Option<Time> {
            if work == 0 {
                return Some(0);
            }
            global_fp::interfered_completion(&interferers, work, 1, cap).map(|l| l - work)
        };
        let staged = w.policy.gpu_allocator == rtgpu_model::GpuAllocator::KFmlp;
        let ops = u64::from(workload_gpu::operations(w, j, staged));
        let per_half =
            o.bh.saturating_add(o.sch.saturating_add(o.cxs).saturating_mul(2))
                .saturating_add(o.ipi);
        let halves = if deferred {
            delay(per_half).map(|d| mul(ops, d))
        } else {
            Some(0)
        };
        let pieces = halves
            .zip(delay(section_cpu(j)))
            .map(|(a, b)| a.saturating_add(b));
        let grow = match (whole, pieces) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        out[j] = match grow {
            Some(g) => out[j].saturating_add(g),
            None => Time::MAX,
        };
    }
    out
}

/// [`section_stretch`] in klmirqd's independent mode: every GPU's bottom
/// halves run in a bandwidth server above every task ([`Extra::bottom_halves`],
/// what `rtgpu run --klmirqd independent` starts), so a bottom half waits
/// for no task of the owner's domain, only for the server's budget. Per
/// interrupt of a holder its hold grows by the server's latency
/// ([`Server::latency`]) less the Δbh the hold already counts, per
/// operation where it has more than its declared η (each completes through
/// the server in `rtgpu run`). The backlog ahead of a bottom half
/// ([`bottom_half_backlog`]) is at most one completion per concurrent owner
/// of the GPU: an owner waits for each operation's completion before its
/// next one (its lock is passed on at completion, or at submission with the
/// device-side hand-off, but its next operation depends on this one), and
/// the server takes completions in the order the device signalled them.
/// Under every scheduler (the server is not in the owner's domain);
/// vGPU members and unbounded holds as in [`section_stretch`]. Our
/// derivation; the seeds do not treat the independent mode's latency.
fn server_stretch(w: &Workload, server: Server, tasks: &[TaskReport]) -> Vec<Time> {
    let per_interrupt = server_wait_per_interrupt(w, server);
    // The k-FMLP stages a migration through system memory (two transfers).
    let staged = w.policy.gpu_allocator == rtgpu_model::GpuAllocator::KFmlp;
    tasks
        .iter()
        .enumerate()
        .map(|(j, tr)| match tr.gpu.as_ref() {
            Some(g) if g.vgpu_share.is_none() && g.unbounded_because.is_none() => {
                // Every operation completes through the server (the
                // runtime's completion threads), even beyond a declared η.
                let n = w.tasks[j].gpu.as_ref().map_or(0, |g| {
                    g.interrupts
                        .max(g.operations_for(w.policy.chunk_size, staged))
                });
                overheads::mul(u64::from(n), per_interrupt)
            }
            _ => 0,
        })
        .collect()
}

/// [`server_stretch`]'s charge per interrupt: the server's latency for
/// [`bottom_half_backlog`], less the Δbh a hold already counts.
pub(super) fn server_wait_per_interrupt(w: &Workload, server: Server) -> Time {
    server
        .latency(bottom_half_backlog(w))
        .saturating_sub(w.overheads.bh)
}
