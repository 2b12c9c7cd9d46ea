//! SCHED_DEADLINE threads (CPU reservations, klmirqd's independent
//! servers): in no domain, they run above every domain's threads under
//! global EDF on all cores, each a constant bandwidth server
//! ([`rtgpu_policy::cbs`]: wake-up rule, throttling, replenishment). A
//! ready one takes an idle core first (its last core if idle), else its
//! last core or the first core without a deadline thread, preempting what
//! runs there, else the core of the deadline thread with the latest
//! deadline if its own is earlier. A core it holds is out of its domain
//! (neither idle nor preemptible there) until it leaves. A GPU-using
//! reservation sleeps through each GPU operation and wakes at its
//! completion (after the top half, and after the bottom half where that
//! runs elsewhere) through the CBS wake-up rule, for a resume segment of
//! `2(Δsch + Δcxs)` plus, under klmirqd dependent and PAI, the bottom
//! half, which runs in its own thread and budget; the operation is done
//! when that segment ends ([`Engine::dl_owner_wake`]).

use rtgpu_policy::cbs::Cbs;
use rtgpu_policy::Time;

use crate::setup::DL_DOMAIN;

use super::{Engine, Ev, Phase, TState};

/// The domain of SCHED_DEADLINE threads ([`DL_DOMAIN`]).
pub(super) const DL: u32 = DL_DOMAIN as u32;

/// A SCHED_DEADLINE thread: a CPU reservation's task thread or a GPU's
/// klmirqd server.
pub(super) struct DlEntity {
    pub(super) cbs: Cbs,
    pub(super) thread: u32,
    /// The core it last ran on (or is running on).
    pub(super) core: u32,
    /// When it last stopped running, `None` before its first run: a thread
    /// woken later than that slept, and the CBS wake-up rule applies.
    pub(super) stopped: Option<Time>,
    /// Its budget is spent; its timer is pending.
    pub(super) throttled: bool,
}

impl Engine {
    /// Deadline thread `i` has work: it wakes (the CBS wake-up rule, when it
    /// slept) and runs unless throttled.
    #[cold]
    #[inline(never)]
    pub(super) fn dl_ready(&mut self, i: u32) {
        let iu = i as usize;
        let e = self.dl_of[iu] as usize;
        let now = self.now;
        let slept =
            self.threads[iu].state == TState::Idle && self.dl[e].stopped.is_none_or(|t| t < now);
        let ent = &mut self.dl[e];
        if ent.throttled {
            // Not enqueued until its timer replenishes it (no wake-up rule).
            self.threads[iu].state = TState::Suspended;
            return;
        }
        if slept {
            ent.cbs.wake(now);
        }
        self.threads[iu].state = TState::Ready;
        self.dl_schedule();
    }

    /// Whether the thread on core `c`, if any, is a deadline thread.
    #[inline]
    pub(super) fn dl_on(&self, c: usize) -> Option<usize> {
        let tid = self.cores[c].running? as usize;
        (self.threads[tid].domain == DL).then(|| self.dl_of[tid] as usize)
    }

    /// Runs ready deadline threads, earliest deadline first, while a core
    /// can take them (module docs for the choice of core).
    pub(super) fn dl_schedule(&mut self) {
        loop {
            let next = (0..self.dl.len())
                .filter(|&e| {
                    let t = self.dl[e].thread as usize;
                    self.threads[t].state == TState::Ready
                })
                .min_by_key(|&e| (self.dl[e].cbs.deadline(), e));
            let Some(e) = next else {
                return;
            };
            let Some(c) = self.dl_core(e) else {
                return;
            };
            self.dl_dispatch(e, c);
        }
    }

    /// The core for deadline entity `e`, if one can take it.
    pub(super) fn dl_core(&self, e: usize) -> Option<usize> {
        let last = self.dl[e].core as usize;
        let cores = 0..self.cores.len();
        if self.cores[last].running.is_none() {
            return Some(last);
        }
        if let Some(c) = cores.clone().find(|&c| self.cores[c].running.is_none()) {
            return Some(c);
        }
        if self.dl_on(last).is_none() {
            return Some(last);
        }
        if let Some(c) = cores.clone().find(|&c| self.dl_on(c).is_none()) {
            return Some(c);
        }
        let mine = self.dl[e].cbs.deadline();
        cores
            .filter_map(|c| Some((self.dl[self.dl_on(c)?].cbs.deadline(), c)))
            .max()
            .filter(|&(d, _)| d > mine)
            .map(|(_, c)| c)
    }

    /// Charges the run that just stopped to deadline entity `e`'s budget
    /// (its thread's `piece_left` counted it down from the budget).
    pub(super) fn dl_charge(&mut self, e: usize) {
        let ent = &mut self.dl[e];
        let left = self.threads[ent.thread as usize].piece_left;
        ent.cbs.consume(ent.cbs.budget() - left);
        ent.stopped = Some(self.now);
    }

    /// Deadline entity `e` takes core `c`, preempting what runs there.
    pub(super) fn dl_dispatch(&mut self, e: usize, c: usize) {
        let mut domain_lost = false;
        if let Some(other) = self.dl_on(c) {
            let tid = self.dl[other].thread as usize;
            self.stop_running(c);
            self.dl_charge(other);
            // Nothing charged to it ([`Self::preempt`]).
            self.threads[tid].state = TState::Ready;
        } else if self.cores[c].running.is_some() {
            self.preempt(c);
            domain_lost = true;
        }
        let tid = self.dl[e].thread;
        self.threads[tid as usize].piece_left = self.dl[e].cbs.budget();
        self.dl[e].core = c as u32;
        self.dispatch(tid, c);
        // Out of its domain: neither idle (`dispatch` cleared the bit) nor
        // preemptible there.
        self.dom_run[self.cores[c].run as usize] = (0, 0);
        if domain_lost {
            // The preempted thread may run on another core of its domain.
            self.schedule(self.cores[c].domain as usize);
        }
    }

    /// Deadline thread `tid` stopped at the end of its segment: its budget
    /// is spent (throttled until its timer) or its work is done.
    #[cold]
    #[inline(never)]
    pub(super) fn dl_segment_done(&mut self, tid: u32) {
        let iu = tid as usize;
        let e = self.dl_of[iu] as usize;
        self.dl_charge(e);
        if self.dl[e].cbs.throttled() {
            self.dl[e].throttled = true;
            let at = self.dl[e].cbs.replenish_at().max(self.now);
            self.push(at, Ev::DlTimer(e as u32));
        }
        if self.threads[iu].remaining > 0 {
            // Throttled with work left: it waits for its timer, Suspended.
            return;
        }
        if iu < self.jobs.len() {
            self.task_segment_done(tid);
        } else {
            self.irq_segment_done(iu - self.jobs.len());
        }
    }

    /// Deadline entity `e`'s replenishment timer.
    #[cold]
    #[inline(never)]
    pub(super) fn on_dl_timer(&mut self, e: u32) {
        let e = e as usize;
        let now = self.now;
        let ent = &mut self.dl[e];
        ent.cbs.replenish(now);
        ent.throttled = false;
        let tid = ent.thread as usize;
        // Suspended with work: throttled mid-job, or woken while throttled.
        if self.threads[tid].state == TState::Suspended && self.threads[tid].remaining > 0 {
            self.threads[tid].state = TState::Ready;
            self.dl_schedule();
        }
    }

    /// A SCHED_DEADLINE owner (a GPU-using reservation) slept while its
    /// operation ran and wakes at its completion: its thread becomes ready
    /// through [`Self::dl_ready`], so the CBS wake-up rule applies (seed
    /// 001 §III-D: the kernel may give it a new period, its deadline
    /// postponed), for a resume segment of `2(Δsch + Δcxs)` (seed 000
    /// Eq. 7, paid here per completion instead of lumped into the second
    /// CPU half) plus, under klmirqd dependent and PAI, the bottom half,
    /// which runs in its own thread and budget. When that segment ends
    /// ([`Self::dl_resume_done`]) the operation is done. Without a cost
    /// the operation is done at once (the thread still wakes for its
    /// second CPU half, `finish_section`).
    #[cold]
    #[inline(never)]
    pub(super) fn dl_owner_wake(&mut self, i: u32) {
        let iu = i as usize;
        debug_assert!(
            self.jobs[iu].phase == Phase::Gpu && !self.jobs[iu].resuming,
            "a deadline owner wakes once per completion, in its GPU section"
        );
        // It slept since its last segment ([`Self::dl_ready`] applies the
        // wake-up rule to an idle thread that stopped before now).
        self.threads[iu].state = TState::Idle;
        let cost = self.dl_resume_cost();
        if cost == 0 {
            self.op_done(i);
            return;
        }
        self.jobs[iu].resuming = true;
        self.threads[iu].remaining = cost;
        self.make_ready(i);
    }

    /// A SCHED_DEADLINE owner's resume segment ended: its operation is
    /// done. Its thread sleeps again until the next completion unless the
    /// section ends here (`finish_section` readies it at once, no wake-up:
    /// it stopped just now).
    #[cold]
    #[inline(never)]
    pub(super) fn dl_resume_done(&mut self, i: u32) {
        let iu = i as usize;
        self.jobs[iu].resuming = false;
        self.threads[iu].state = TState::Idle;
        self.op_done(i);
    }
}
