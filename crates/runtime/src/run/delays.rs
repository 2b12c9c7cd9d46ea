//! The delays of a run's jobs that no more urgent job explains: the run's
//! measured counterpart of `rtgpu simulate`'s priority inversions (seed 000
//! §VI measures inversions in a real system; without a kernel trace, user
//! space sees only its own jobs, so the measure is what is left of each
//! job's delay after the work of more urgent jobs).
//!
//! For a job J with response R, its own CPU time c (the thread CPU time of
//! its pieces) and GPU section s (token wait and hold, a suspension), the
//! delay is R − c − s: the time it was ready and not running. More urgent
//! jobs K (a higher SCHED_FIFO priority, an earlier absolute deadline under
//! EDF or SCHED_DEADLINE, a reservation above every SCHED_FIFO thread) on
//! the CPUs J may use ran W CPU time inside J's window (each piece's CPU
//! time prorated by how much of its span lies in the window); on n CPUs
//! they can keep J from every CPU for at most W/n. The rest, R − c − s −
//! W/n (saturating at 0), is what something else took: its release
//! latency, lower-priority work that ran first (priority inversions),
//! interrupts and bottom halves, kernel threads. On one core this is exact
//! up to the proration; on n cores it is a lower bound of that time.

use rtgpu_analysis::workload::{fifo_priority, Plan};
use rtgpu_model::{CpuScheduler, Workload};

use super::reporting::JobRun;
use crate::os::Nanos;

/// How urgent a job is: smaller is more urgent.
type Urgency = (u8, u64);

/// Per job with a nonzero unexplained delay, that delay; sorted ascending.
pub fn unexplained_delays(
    w: &Workload,
    plan: &Plan,
    core_map: &[usize],
    jobs: &[JobRun],
) -> Vec<Nanos> {
    let edf = matches!(
        w.policy.cpu_scheduler,
        CpuScheduler::ClusteredEdf | CpuScheduler::GlobalEdf
    );
    let n_cpus = core_map.iter().max().map_or(1, |&c| c + 1);
    // The CPUs each task may use, as a bit set over this machine's CPUs
    // (every CPU for a reservation).
    let cpus: Vec<Vec<bool>> = plan
        .tasks
        .iter()
        .map(|t| {
            let mut set = vec![t.reservation.is_some(); n_cpus];
            let cores = t.cores.iter().chain(t.pieces.iter().map(|p| &p.core));
            for &c in cores {
                if let Some(&cpu) = core_map.get(c as usize) {
                    set[cpu] = true;
                }
            }
            set
        })
        .collect();
    let urgency = |j: &JobRun| -> Urgency {
        let Some(t) = plan.tasks.get(j.task) else {
            return (u8::MAX, u64::MAX);
        };
        let deadline = j.release.saturating_add(t.deadline);
        if t.reservation.is_some() {
            (0, deadline)
        } else if edf {
            (1, deadline)
        } else {
            // Split (P-FP) tasks: their most urgent piece's priority.
            let fifo = t.sched_fifo_priority.unwrap_or_else(|| {
                t.pieces
                    .iter()
                    .map(|p| fifo_priority(p.priority))
                    .max()
                    .unwrap_or(0)
            });
            (1, u64::from(u8::MAX - fifo))
        }
    };
    // Every piece, by start, with its task and urgency.
    let mut pieces: Vec<(Nanos, Nanos, Nanos, usize, Urgency)> = jobs
        .iter()
        .flat_map(|j| {
            let u = urgency(j);
            j.pieces
                .iter()
                .map(move |p| (p.start, p.end, p.cpu_time, j.task, u))
        })
        .collect();
    pieces.sort_unstable_by_key(|p| p.0);
    let longest = pieces
        .iter()
        .map(|p| p.1.saturating_sub(p.0))
        .max()
        .unwrap_or(0);
    let mut out = Vec::new();
    for j in jobs {
        let own: Nanos = j.pieces.iter().map(|p| p.cpu_time).sum();
        let section = j.gpu.map_or(0, |g| g.token_wait + g.token_hold);
        let delay = j.response_time.saturating_sub(own).saturating_sub(section);
        if delay == 0 {
            continue;
        }
        let (from, to) = (j.release, j.finish);
        let mine = urgency(j);
        let Some(my_cpus) = cpus.get(j.task) else {
            continue;
        };
        let first = pieces.partition_point(|p| p.0 < from.saturating_sub(longest));
        let mut work: u128 = 0;
        for &(start, end, cpu, task, u) in &pieces[first..] {
            if start >= to {
                break;
            }
            let overlap = end.min(to).saturating_sub(start.max(from));
            if overlap == 0 || u >= mine || task == j.task {
                continue;
            }
            let shares_cpu = cpus
                .get(task)
                .is_some_and(|c| c.iter().zip(my_cpus).any(|(a, b)| *a && *b));
            if shares_cpu {
                let span = end.saturating_sub(start).max(1);
                work += u128::from(cpu) * u128::from(overlap) / u128::from(span);
            }
        }
        let n = my_cpus.iter().filter(|&&c| c).count().max(1) as u128;
        let explained = (work / n).min(u128::from(Nanos::MAX)) as Nanos;
        let left = delay.saturating_sub(explained);
        if left > 0 {
            out.push(left);
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::reporting::PieceRun;

    fn piece(start: Nanos, end: Nanos, cpu_time: Nanos) -> PieceRun {
        PieceRun {
            planned_core: 0,
            cpu_at_start: Some(0),
            cpu_at_end: Some(0),
            start,
            end,
            cpu_time,
        }
    }

    fn job(task: usize, release: Nanos, pieces: Vec<PieceRun>) -> JobRun {
        let finish = pieces.last().map_or(release, |p| p.end);
        JobRun {
            task,
            job: 0,
            release,
            start: pieces.first().map_or(release, |p| p.start),
            finish,
            response_time: finish - release,
            deadline_miss: false,
            pieces,
            gpu: None,
            gpu_start: None,
        }
    }

    /// Two tasks on one core: the low-priority job is delayed by the high
    /// one's 2 ms (explained) and by 1 ms more (unexplained); the high one
    /// waits 0.5 ms at its release (unexplained: nothing more urgent ran).
    #[test]
    fn only_what_more_urgent_jobs_ran_is_explained() {
        let w = rtgpu_model::parse_workload(
            "[platform]\ncores = 1\n[policy]\ncpu_scheduler = \"P-FP\"\n\
             [[task]]\nname = \"hi\"\nwcet = \"2 ms\"\nperiod = \"10 ms\"\n\
             [[task]]\nname = \"lo\"\nwcet = \"1 ms\"\nperiod = \"20 ms\"\n",
            "t.toml",
        )
        .expect("valid");
        let (_, plan) = rtgpu_analysis::workload::analyze(&w);
        let ms = 1_000_000;
        let jobs = vec![
            job(0, 0, vec![piece(ms / 2, ms / 2 + 2 * ms, 2 * ms)]),
            job(1, 0, vec![piece(0, 4 * ms, ms)]),
        ];
        let d = unexplained_delays(&w, &plan, &[0], &jobs);
        assert_eq!(d, vec![ms / 2, ms]);
    }
}
