//! CPU scheduling in the domains: fixed priority per core (P-FP), per
//! cluster (C-FP) or over all cores (G-FP), and EDF per cluster or over all
//! cores (C-EDF, G-EDF), one mechanism for all. Each scheduling domain has a
//! ready queue keyed by priority (FP key or absolute deadline, then thread
//! id); a ready thread preempts the domain's least urgent running thread if
//! it is more urgent. Owns a thread's way onto a core ([`Engine::make_ready`],
//! with the piece migration of split tasks; `schedule`, `dispatch`,
//! `preempt`) and off it (`stop_running`, `on_segment`); SCHED_DEADLINE
//! threads go to [`super::deadline`] there.

use rtgpu_policy::Time;

use crate::queue;
use crate::trace::{Span, SpanKind};

use super::deadline::DL;
use super::inherit::INHERIT_DEPTH;
use super::stats::add_busy;
use super::{Engine, Ev, TState};

impl Engine {
    /// Put task or irq thread `i` in its domain's ready heap (moving to its
    /// next piece first when its piece budget is spent) and reschedule.
    pub(super) fn make_ready(&mut self, i: u32) {
        let iu = i as usize;
        // The thread's fields read once (as in `dispatch`).
        let th = &self.threads[iu];
        let (domain, state, piece_left) = (th.domain, th.state, th.piece_left);
        if domain == DL {
            self.dl_ready(i);
            return;
        }
        if state == TState::Ready {
            // Already queued (never seen in practice): its old entry goes,
            // as the old stamp would have made it stale.
            self.ready_clear(domain as usize, iu);
        }
        if piece_left == 0 && iu < self.s.tasks.len() {
            // Piece bookkeeping (P-FP split tasks).
            let npieces = self.jobs[iu].npieces as usize;
            let mut piece = self.jobs[iu].piece as usize;
            if piece + 1 < npieces {
                piece += 1;
                self.jobs[iu].piece = piece as u32;
                let p = &self.s.tasks[iu].pieces[piece];
                let last = piece + 1 == npieces;
                let release = self.jobs[iu].arrival + p.offset;
                let th = &mut self.threads[iu];
                th.domain = p.domain as u32;
                if !self.s.edf {
                    th.key = p.key;
                }
                th.piece_left = if last { Time::MAX } else { p.budget };
                self.invalidate(iu, INHERIT_DEPTH);
                if release > self.now {
                    self.threads[iu].state = TState::Suspended;
                    self.push(release, Ev::PieceStart(i));
                    return;
                }
            } else {
                self.threads[iu].piece_left = Time::MAX;
            }
        }
        let th = &mut self.threads[iu];
        th.state = TState::Ready;
        let (d, key) = (th.domain as usize, th.key);
        // Fast path: an idle core and nothing more urgent waiting: run it
        // there without going through the ready queue.
        if queue::key(key, i as u64) < self.ready_top[d] {
            // It would be the domain's most urgent ready thread: the first
            // round of `schedule` without the round trip through the ready
            // queue.
            match self.first_idle(d) {
                Some(c) => self.dispatch(i, c),
                None => match self.preemptible(d, queue::key(key, i as u64)) {
                    Some((worst, c)) if queue::key(key, i as u64 + 1) < worst => {
                        // No `schedule` after: no core is idle, the
                        // thread put back is the least urgent that ran
                        // (none left is less urgent) and the other ready
                        // threads could preempt none before.
                        self.preempt(c);
                        self.dispatch(i, c);
                        debug_assert!(!self.could_dispatch(d), "preemption left work");
                    }
                    _ => self.ready_set(d, iu, queue::key(key, i as u64)),
                },
            }
            return;
        }
        self.ready_set(d, iu, queue::key(key, i as u64));
        // Behind a more urgent ready thread: only an idle core (one
        // freed in this very event, its handler not done) can take
        // anything; else the ready threads, this one behind the most
        // urgent, could preempt none before and can preempt none now.
        if self.first_idle(d).is_some() {
            self.schedule(d);
        }
        debug_assert!(!self.could_dispatch(d), "ready work left behind");
    }

    /// Whether [`Self::schedule`] of domain `d` would dispatch a thread
    /// now (debug checks of the places that leave it out).
    fn could_dispatch(&self, d: usize) -> bool {
        let top = self.ready_top[d];
        if top == queue::EMPTY {
            return false;
        }
        if self.first_idle(d).is_some() {
            return true;
        }
        let now = self.now;
        self.dom_run[self.run_at[d]..self.run_at[d + 1]]
            .iter()
            .any(|&(v, end)| end > now && top + 1 < v)
    }

    /// The least urgent running thread of domain `d`, `(key << 64 |
    /// thread + 1, core)`, leaving out one whose segment ends at this very
    /// instant: it is finishing, not preemptible (its Segment event, same
    /// instant, maybe not processed yet, frees the core and reschedules;
    /// found by the 1M soundness run).
    ///
    /// `None` at once, without looking at the cores, when a thread of key
    /// `ready` (`(key << 64 | thread)`) could preempt none of them
    /// (`ready + 1 >= run_max[d]`, an upper bound of the domain's running
    /// keys): the callers compare `ready + 1 < worst`, which fails then.
    #[inline]
    pub(super) fn preemptible(&mut self, d: usize, ready: u128) -> Option<(u128, usize)> {
        if ready.saturating_add(1) >= self.run_max[d] {
            return None;
        }
        let now = self.now;
        let mut worst = 0u128;
        let mut max = 0u128;
        let mut at = 0;
        let base = self.run_at[d];
        for (k, &(v, end)) in self.dom_run[base..self.run_at[d + 1]].iter().enumerate() {
            max = max.max(v);
            let v = if end > now { v } else { 0 };
            if v > worst {
                worst = v;
                at = k;
            }
        }
        self.run_max[d] = max;
        if worst == 0 {
            return None;
        }
        Some((worst, self.dom_cores[base + at]))
    }

    /// Core `c`'s entry in its domain's running keys is now `(v, end)`.
    #[inline(always)]
    pub(super) fn set_run(&mut self, c: usize, v: u128, end: Time) {
        let core = &self.cores[c];
        self.dom_run[core.run as usize] = (v, end);
        let m = &mut self.run_max[core.domain as usize];
        *m = (*m).max(v);
    }

    /// The first idle core of domain `d` in the domain's order.
    #[inline(always)]
    pub(super) fn first_idle(&self, d: usize) -> Option<usize> {
        let words = self.idle_at[d];
        if words + 1 == self.idle_at[d + 1] {
            // One word (up to 64 cores); the domain's first core read only
            // when one is idle.
            let bits = self.idle[words];
            return (bits != 0)
                .then(|| self.dom_cores[self.run_at[d] + bits.trailing_zeros() as usize]);
        }
        let run = self.run_at[d];
        for (w, &bits) in self.idle[self.idle_at[d]..self.idle_at[d + 1]]
            .iter()
            .enumerate()
        {
            if bits != 0 {
                return Some(self.dom_cores[run + w * 64 + bits.trailing_zeros() as usize]);
            }
        }
        None
    }

    /// The most urgent ready thread of domain `d`: `(key, thread)`.
    #[inline]
    pub(super) fn valid_top(&self, d: usize) -> Option<(u64, u32)> {
        let top = self.ready[d].root();
        (top != queue::EMPTY)
            .then(|| queue::split(top))
            .map(|(key, tid)| (key, tid as u32))
    }

    /// Thread `i` ready in domain `d` with `key`.
    #[inline(always)]
    pub(super) fn ready_set(&mut self, d: usize, i: usize, key: queue::Key) {
        debug_assert_eq!(key as u64 as usize, i, "a ready key names its thread");
        self.ready[d].push(key);
        self.ready_top[d] = self.ready[d].root();
    }

    #[inline(always)]
    pub(super) fn ready_clear(&mut self, d: usize, i: usize) {
        self.ready[d].remove(i);
        self.ready_top[d] = self.ready[d].root();
    }

    pub(super) fn schedule(&mut self, d: usize) {
        // Every caller comes with one change (a core freed, a running
        // thread re-keyed, a thread made ready): once a thread has been
        // dispatched for it, only further idle cores can take more, and the
        // preemption check (a scan of the domain's cores) is left out.
        let mut dispatched = false;
        loop {
            let top = self.ready_top[d];
            if top == queue::EMPTY {
                return;
            }
            let tid = top as u32;
            let core = match self.first_idle(d) {
                Some(c) => c,
                None if dispatched => {
                    debug_assert!(!self.could_dispatch(d), "a second preemption was due");
                    return;
                }
                None => match self.preemptible(d, top) {
                    Some((worst, c)) if top + 1 < worst => {
                        self.preempt(c);
                        c
                    }
                    _ => return,
                },
            };
            self.ready_clear(d, tid as usize);
            self.dispatch(tid, core);
            dispatched = true;
        }
    }

    #[inline(always)]
    pub(super) fn dispatch(&mut self, tid: u32, c: usize) {
        let now = self.now;
        // The core's fields read once (its idle bit and `set_run` inlined):
        // each store through another table makes the compiler reload and
        // bounds-check the core again.
        let core = &mut self.cores[c];
        let start = now.max(core.frozen_until);
        core.running = Some(tid);
        core.stamp = core.stamp.wrapping_add(1);
        let (stamp, at, domain) = (core.stamp, core.run as usize, core.domain as usize);
        self.idle[core.idle_word as usize] &= !core.idle_bit;
        let th = &mut self.threads[tid as usize];
        th.state = TState::Running(c as u32);
        th.seg_start = start;
        th.run_start = start;
        th.seg_len = th.remaining.min(th.piece_left);
        let end = start.saturating_add(th.seg_len);
        let run = queue::key(th.key, tid as u64 + 1);
        self.dom_run[at] = (run, end);
        let m = &mut self.run_max[domain];
        *m = (*m).max(run);
        let tu = tid as usize;
        if tu < self.jobs.len() {
            // (Only records show a job's start.)
            if self.cfg.record_jobs && self.jobs[tu].start.is_none() {
                self.jobs[tu].start = Some(start);
            }
        } else if tu < self.section0 {
            self.irq_dispatched(tu - self.jobs.len());
        } else {
            debug_assert_eq!(
                self.threads[tu].key,
                self.peek_owner_key((tu - self.section0) as u32).0,
                "a section thread runs at its job's current effective priority"
            );
        }
        self.push(end, Ev::Segment(c as u32, stamp));
    }

    /// Progress of the thread on core `c` up to now; ends its run span.
    #[inline(always)]
    pub(super) fn stop_running(&mut self, c: usize) -> Option<u32> {
        let now = self.now;
        // The core read once (its idle bit and running entry), as in
        // `dispatch`.
        let core = &mut self.cores[c];
        let tid = core.running.take()?;
        core.stamp = core.stamp.wrapping_add(1);
        self.idle[core.idle_word as usize] |= core.idle_bit;
        self.dom_run[core.run as usize] = (0, 0);
        let th = &mut self.threads[tid as usize];
        let progress = now.saturating_sub(th.seg_start).min(th.seg_len);
        th.remaining -= progress;
        if th.piece_left != Time::MAX {
            th.piece_left -= progress;
        }
        let run_start = th.run_start;
        if now > run_start {
            add_busy(&mut self.core_busy[c], &mut self.buckets, run_start, now);
            if self.cfg.trace {
                self.spans.push(Span {
                    track: c as u32,
                    start: run_start,
                    end: now,
                    who: self.who(tid),
                    kind: if self.is_job_thread(tid) {
                        SpanKind::Run
                    } else {
                        SpanKind::BottomHalf
                    },
                });
            }
        }
        Some(tid)
    }

    pub(super) fn who(&self, tid: u32) -> u32 {
        let tu = tid as usize;
        if tu < self.jobs.len() {
            tid
        } else if tu < self.section0 {
            u32::MAX - (tid - self.ntasks)
        } else {
            (tu - self.section0) as u32
        }
    }

    /// Whether thread `tid` runs a job's own work (its thread or its
    /// section thread), not an interrupt's.
    #[inline(always)]
    pub(super) fn is_job_thread(&self, tid: u32) -> bool {
        let tu = tid as usize;
        tu < self.jobs.len() || tu >= self.section0
    }

    /// The thread on core `c` goes back to its ready queue. It pays
    /// nothing for it: seed 000 App. B charges a preemption's scheduling
    /// decisions and context switches, the one to the preempting thread
    /// and the one back when it stops, to the preempting side: a job's
    /// 2(Δsch + Δcxs) (Eq. 6) and per resumption (Eq. 7), a deferred
    /// bottom half's (Eq. 16, [`Self::raise_interrupt`]).
    pub(super) fn preempt(&mut self, c: usize) {
        if let Some(tid) = self.stop_running(c) {
            let th = &mut self.threads[tid as usize];
            th.state = TState::Ready;
            let d = th.domain as usize;
            let key = queue::key(th.key, tid as u64);
            self.ready_set(d, tid as usize, key);
        }
    }

    pub(super) fn on_segment(&mut self, c: u32, stamp: u32) {
        let cu = c as usize;
        let core = &self.cores[cu];
        if core.stamp != stamp {
            return;
        }
        let d = core.domain as usize;
        let Some(tid) = self.stop_running(cu) else {
            return;
        };
        let th = &mut self.threads[tid as usize];
        th.state = TState::Suspended;
        if th.domain == DL {
            self.dl_segment_done(tid);
            self.dl_schedule();
            self.schedule(d);
            return;
        }
        let tu = tid as usize;
        if tu < self.jobs.len() {
            self.task_segment_done(tid);
        } else if tu < self.section0 {
            self.irq_segment_done(tu - self.jobs.len());
        } else {
            self.section_cpu_done((tu - self.section0) as u32);
        }
        // (Most often nothing is ready.)
        if self.ready_top[d] != queue::EMPTY {
            self.schedule(d);
        }
    }
}
