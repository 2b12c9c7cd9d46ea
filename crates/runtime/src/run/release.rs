//! Job release and execution in `rtgpu run`: the task threads started
//! together after set-up, each releasing its jobs periodically with
//! absolute sleeps and running them: CPU work piece by piece (split tasks'
//! offsets, budgets and cores), the GPU section between its halves, EDF
//! re-ranking at releases and completions; then the threads joined.

use std::sync::{Arc, Barrier};

use super::gpu_section::{self, ClusterGpus};
use super::reporting::{JobRun, PieceRun};
use super::setup::{place, TaskSpec};
use super::RunError;
use crate::os::{self, monotonic_now, Nanos, SchedPolicy};

/// What the task threads did: their jobs in release order, their warnings
/// (sorted, once each), and per task the policy its thread ran under.
pub(super) struct Ran {
    pub(super) jobs: Vec<JobRun>,
    pub(super) warnings: Vec<String>,
    pub(super) ran_under: Vec<Option<String>>,
    /// CLOCK_MONOTONIC instant of the first release (ns).
    pub(super) t0: Nanos,
}

/// Starts a thread per task of `specs`, releases jobs for `duration` from
/// a common start (also the vGPUs' accounting window), and joins them.
pub(super) fn execute(
    specs: Vec<TaskSpec>,
    clusters: &[Option<Arc<ClusterGpus>>],
    duration: Nanos,
) -> Result<Ran, RunError> {
    // All threads start their first job at the same instant, after set-up.
    let barrier = Arc::new(Barrier::new(specs.len() + 1));
    let start_at = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut handles = Vec::new();
    for spec in specs {
        let barrier = Arc::clone(&barrier);
        let start_at = Arc::clone(&start_at);
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
        gate.set_window(t0, t0 + duration);
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
    jobs.sort_by_key(|j| (j.release, j.task));
    Ok(Ran {
        jobs,
        warnings: thread_warnings,
        ran_under,
        t0,
    })
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
                os::sleep_until(self.release.saturating_add(*offset));
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
    let end = t0.saturating_add(duration);
    let mut current = 0usize;
    for job in 0u64.. {
        // Saturating: a period near 2^64 ns ends the releases instead of
        // wrapping round to the past (which released jobs without pause).
        let release = t0.saturating_add(job.saturating_mul(spec.period));
        if release >= end || super::stop_requested() {
            break;
        }
        os::sleep_until_or(release, super::stop_requested);
        if super::stop_requested() {
            break;
        }
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
