//! Jobs of a task: releases (periodic or sporadic, with release jitter),
//! a job's start and first CPU segment, the end of each of its CPU
//! segments, and its completion (with `--shift-tardy`, the next release).
//! One thread per task: jobs of a task run in sequence, a late job delays
//! the next.

use rtgpu_policy::Time;

use crate::queue::prefetch;
use crate::Releases;

use super::{Engine, Ev, Phase, TState};

impl Engine {
    pub(super) fn schedule_release(&mut self, i: u32, arrival: Time) {
        if arrival >= self.cfg.duration {
            return;
        }
        let jitter = self.jobs[i as usize].jitter;
        let jitter = if jitter > 0 {
            self.rng.range(0, jitter)
        } else {
            0
        };
        let j = &mut self.jobs[i as usize];
        j.next_arrival = arrival;
        // Never release out of order.
        let last_ready = j.pending.back(&j.pending_more).map_or(0, |p| p.1);
        let ready = (arrival + jitter).max(last_ready);
        j.pending.push_back((arrival, ready), &mut j.pending_more);
        self.push(ready, Ev::Release(i));
    }

    pub(super) fn gap(&mut self, i: u32) -> Time {
        let period = self.jobs[i as usize].period;
        match self.cfg.releases {
            Releases::Periodic => period,
            Releases::Sporadic { max_extra_ppm } => {
                let extra = (period as u128 * max_extra_ppm as u128 / 1_000_000) as Time;
                period + self.rng.range(0, extra)
            }
        }
    }

    pub(super) fn on_release(&mut self, i: u32) {
        let arrival = self.jobs[i as usize].next_arrival;
        // Mark this release as due; the pending entry was pushed when it
        // was scheduled. Start it if the thread is free.
        self.active_jobs += 1;
        self.jobs[i as usize].released += 1;
        if !self.cfg.shift_tardy {
            let gap = self.gap(i);
            self.schedule_release(i, arrival + gap);
        }
        if !self.jobs[i as usize].active {
            self.start_job(i);
        }
        self.prefetch_next_release();
    }

    /// Asks the CPU to load the lines of the task whose release comes next
    /// (its `Job`'s lines 0 to 2: line 1 holds the counters its completion
    /// updates and the FP key its start reads; its thread; its release
    /// slot's lines in the event queue's lowest levels, which its next
    /// release rewrites): at n = 10,000 tasks and more they are rarely in
    /// the cache, and a release is usually a few events away, time for the
    /// load. A hint only: nothing else changes.
    #[inline(always)]
    fn prefetch_next_release(&self) {
        if let Some(i) = self.events.group_min(3) {
            self.events.prefetch_slot(3, i);
            if let (Some(j), Some(th)) = (self.jobs.get(i), self.threads.get(i)) {
                let j = (j as *const super::Job).cast::<u8>();
                prefetch(j);
                prefetch(j.wrapping_add(64));
                prefetch(j.wrapping_add(128));
                prefetch((th as *const super::Thread).cast());
            }
        }
    }

    pub(super) fn start_job(&mut self, i: u32) {
        let now = self.now;
        let iu = i as usize;
        // No released job waiting (the usual case at a completion): line 0
        // tells, without the release queue's line. A released entry is the
        // queue's front and due (releases happen in the order of their
        // ready times), so this returns exactly where the checks below would.
        if self.jobs[iu].released == 0 {
            return;
        }
        let Some(&(arrival, ready)) = self.jobs[iu].pending.front() else {
            return;
        };
        if ready > now {
            return; // not released yet (its Release event will start it)
        }
        self.jobs[iu].released -= 1;
        let j = &mut self.jobs[iu];
        j.pending.pop_front(&mut j.pending_more);
        let wcet = self.jobs[iu].wcet;
        let mut work = wcet;
        if self.cfg.bcet_ppm < 1_000_000 {
            let lo = (wcet as u128 * self.cfg.bcet_ppm as u128 / 1_000_000) as Time;
            work = self.rng.range(lo.max(1).min(wcet), wcet);
        }
        let charge = self.release_charge();
        let edf = self.s.edf;
        let records = self.cfg.record_jobs;
        let j = &mut self.jobs[iu];
        let dom0 = j.dom0;
        let single = j.npieces == 1;
        let first_piece_budget = if single { Time::MAX } else { j.budget0 };
        let deadline = arrival + j.deadline;
        j.active = true;
        j.arrival = arrival;
        if records {
            j.seq += 1;
            j.ready = ready;
            j.start = None;
        }
        j.piece = 0;
        let (phase, first) = if j.has_gpu {
            // A CPU-only task's GPU fields never leave their initial
            // values (no GPU section sets them): reset for GPU users only.
            j.blocked = 0;
            j.blocked_since = None;
            j.gpu = None;
            j.interrupts = 0;
            // The section's CPU work runs in its section thread.
            let section_cpu = j.gpu_cpu.unwrap_or(0);
            let outside = work.saturating_sub(section_cpu);
            j.post_work = outside - outside / 2;
            (Phase::Pre, outside / 2 + charge)
        } else {
            (Phase::Only, work + charge)
        };
        j.phase = phase;
        let th = &mut self.threads[iu];
        th.remaining = first;
        th.piece_left = first_piece_budget;
        th.domain = dom0;
        th.key = if edf { deadline } else { self.jobs[iu].key0 };
        // A job that starts is in no token or lock queue: only its own
        // effective priority changes. (Only a GPU-using job's is ever asked
        // for: it owns interrupts, holds or waits for tokens and locks;
        // a CPU-only job's cache stays untouched.)
        if self.jobs[iu].has_gpu {
            self.invalidate(iu, 0);
        }
        self.make_ready(i);
    }

    pub(super) fn task_segment_done(&mut self, i: u32) {
        let iu = i as usize;
        if self.threads[iu].remaining > 0 {
            // Piece budget spent: migrate to the next piece (seed 003).
            self.make_ready(i);
            return;
        }
        match self.jobs[iu].phase {
            Phase::Pre => self.start_gpu_section(i),
            Phase::Only | Phase::Post => self.complete_job(i),
            // Only a SCHED_DEADLINE owner's resume segment runs in a GPU
            // section.
            Phase::Gpu => {
                if self.jobs[iu].resuming {
                    self.dl_resume_done(i);
                }
            }
        }
    }

    pub(super) fn complete_job(&mut self, i: u32) {
        let iu = i as usize;
        let now = self.now;
        self.jobs[iu].active = false;
        self.active_jobs -= 1;
        self.count_completion(iu);
        self.threads[iu].state = TState::Idle;
        if self.cfg.shift_tardy {
            // One job at a time; the next arrives a gap after this one, or
            // now if this one was late.
            let arrival = self.jobs[iu].arrival;
            let gap = self.gap(i);
            self.schedule_release(i, (arrival + gap).max(now));
        }
        self.start_job(i);
    }
}
