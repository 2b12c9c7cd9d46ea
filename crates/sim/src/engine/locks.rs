//! Engine locks: a job's requests for its operations' locks (one, a DGL of
//! two, or two nested), their grants when a holder releases (at the
//! operation's end, or at its device completion under device-side
//! hand-off), and what they change in effective priorities.

use rtgpu_model::PeerLocking;
use rtgpu_policy::engine_lock::{LockGrant, ReqId};
use rtgpu_policy::JobId;

use super::inherit::INHERIT_DEPTH;
use super::ops::OpKind;
use super::Engine;

impl Engine {
    pub(super) fn prio_of(&self, i: usize) -> u64 {
        self.threads[i].key
    }

    /// Request `locks` (one, or a DGL of two) for job `i` and note the
    /// request in the job's slot `slot` (0, 1: `reqs`; 2: `gpu_lock`)
    /// before the interrupt threads are re-keyed, so that
    /// [`Self::effective_key`] sees every lock the job may hold.
    pub(super) fn lock_request(&mut self, i: u32, locks: &[usize], slot: usize) -> bool {
        let prio = self.prio_of(i as usize);
        let (r, ok) = self.locks.request(i as JobId, prio, locks);
        if !ok {
            // A new waiter: the holders of its locks may inherit its
            // priority (a request satisfied at once found its locks' queues
            // empty: it has no waiters, and waits on nothing). One that
            // holds no lock passes on the same priority at every depth
            // (its own, or what it inherits in its token queue): the
            // holders up the chain take the minimum.
            let j = &self.jobs[i as usize];
            let holds = j.held[0] || j.held[1] || j.held[2];
            let c = if holds {
                None
            } else {
                let group = self.s.tasks[i as usize]
                    .gpu
                    .as_ref()
                    .map_or(0, |gt| gt.group);
                Some(self.effective_key(i, &self.allocators[group], 0))
            };
            for &l in locks {
                if let Some(h) = self.locks.holder(l) {
                    match c {
                        Some(c) => self.inherit_more(h as usize, c, INHERIT_DEPTH - 1),
                        None => self.invalidate(h as usize, INHERIT_DEPTH),
                    }
                }
            }
        }
        if self.req_owner.len() <= r {
            self.req_owner.resize(r + 1, 0);
        }
        self.req_owner[r] = i;
        let j = &mut self.jobs[i as usize];
        j.held[slot] = ok;
        if slot == 2 {
            j.gpu_lock = Some(r);
            j.gpu_lock_id = locks[0];
        } else {
            j.reqs[slot] = Some(r);
            j.req_locks[slot] = [locks[0], *locks.last().unwrap_or(&locks[0])];
        }
        if !ok {
            // A new waiter: the holders may inherit its priority.
            self.refresh_irq_keys();
        }
        ok
    }

    /// A lock request of some job was granted on a release.
    /// Sets the held flag of granted request `g` (idempotent). Callers with
    /// several grants mark them all before acting on the first: acting can
    /// re-key interrupt threads (`gpu_irq_key`), which reads every holder's
    /// flags.
    #[inline(always)]
    pub(super) fn mark_held(&mut self, g: &LockGrant) {
        let j = &mut self.jobs[self.req_owner[g.req] as usize];
        if j.gpu_lock == Some(g.req) {
            j.held[2] = true;
        } else if j.reqs[1] == Some(g.req) {
            j.held[1] = true;
        } else {
            j.held[0] = true;
        }
    }

    /// The locks of granted request `g` (its lock twice for one lock).
    pub(super) fn granted_locks(&self, g: &LockGrant) -> [usize; 2] {
        let j = &self.jobs[self.req_owner[g.req] as usize];
        if j.gpu_lock == Some(g.req) {
            [j.gpu_lock_id; 2]
        } else if j.reqs[1] == Some(g.req) {
            j.req_locks[1]
        } else {
            j.req_locks[0]
        }
    }

    pub(super) fn on_lock_granted(&mut self, g: LockGrant) {
        let i = self.req_owner[g.req];
        let iu = i as usize;
        self.mark_held(&g);
        let j = &self.jobs[iu];
        if j.gpu_lock == Some(g.req) {
            self.end_block(iu);
            self.jobs[iu].pc += 1;
            self.advance(i);
            return;
        }
        let op = j.ops[j.pc];
        let nested = self.s.policy.peer_locking == PeerLocking::Nested;
        if op.nlocks == 2 && nested && j.reqs[1].is_none() {
            let order = rtgpu_policy::engine_lock::nested_order(op.locks[0], op.locks[1]);
            if !self.lock_request(i, &order[1..], 1) {
                return;
            }
        }
        self.end_block(iu);
        self.start_op(i, op);
    }

    /// Device-side hand-off (`engine_handoff = "device"`): job `i`'s
    /// operation just completed on the device; a kernel that ends its
    /// execution-lock hold or a host copy passes its lock on now, before the
    /// completion interrupt and bottom half. The runtime grants the next
    /// holder while the operation still runs and it queues its own behind
    /// it on the same FIFO engine, which starts then; as submission here
    /// takes no time, granting at the device completion is the same
    /// schedule. A peer copy (two locks, and the destination's engine is not
    /// the one the operation queues on) keeps its locks until `op_done`.
    pub(super) fn release_on_device(&mut self, i: u32) {
        let iu = i as usize;
        let j = &self.jobs[iu];
        let op = j.ops[j.pc];
        let early = match op.kind {
            OpKind::Copy { .. } => op.nlocks == 1,
            OpKind::Kernel { last, .. } => last,
            OpKind::GpuLock | OpKind::Cpu { .. } => false,
        };
        if early && j.reqs[0].is_some() {
            self.release_op_locks(iu);
        }
    }

    pub(super) fn release_op_locks(&mut self, iu: usize) {
        let mut grants = std::mem::take(&mut self.grants);
        grants.clear();
        for k in 0..2 {
            // (The job indexed once per request.)
            let j = &mut self.jobs[iu];
            if let Some(r) = j.reqs[k].take() {
                let held = std::mem::replace(&mut j.held[k], false);
                let locks = j.req_locks[k];
                self.release_lock(iu, r, locks, held, &mut grants);
            }
        }
        // (Most releases grant nothing: nobody waited.)
        if !grants.is_empty() {
            for g in &grants {
                self.mark_held(g);
            }
            for g in grants.drain(..) {
                self.on_lock_granted(g);
            }
        }
        self.grants = grants;
        self.refresh_irq_keys();
    }

    /// Release job `iu`'s lock request `r` (on `locks`, a lock named twice
    /// counting once). Effective priorities change only if someone waited
    /// on one of the locks; a request alone in its queues had no waiters.
    #[inline(always)]
    pub(super) fn release_lock(
        &mut self,
        iu: usize,
        r: ReqId,
        locks: [usize; 2],
        held: bool,
        grants: &mut Vec<LockGrant>,
    ) {
        let waited = locks.iter().any(|&l| self.locks.queue_len(l) > 1);
        if waited {
            // The holders before (this job when its request was satisfied,
            // else whoever holds the locks it waited on) and after (the
            // grants) lose or gain what they inherit.
            if !held {
                for (n, &l) in locks.iter().enumerate() {
                    if n == 1 && l == locks[0] {
                        continue;
                    }
                    if let Some(h) = self.locks.holder(l) {
                        self.invalidate(h as usize, INHERIT_DEPTH);
                    }
                }
            }
            let before = grants.len();
            self.locks.release(r, grants);
            // Its effective priority can only rise, to no more than what
            // it has without the locks' waiters (depth 0: its own and its
            // token queue's): when that is what it had, it stays.
            let group = self.s.tasks[iu].gpu.as_ref().map_or(0, |gt| gt.group);
            let base = self.effective_key(iu as u32, &self.allocators[group], 0);
            if self.jobs[iu].key_cache != Some(base) {
                self.invalidate(iu, INHERIT_DEPTH);
            }
            for g in &grants[before..] {
                // A new holder inherits from those still waiting on the
                // locks it got; with nobody behind it, nothing (waiting
                // passed nothing on to it either).
                let [a, b] = self.granted_locks(g);
                if self.locks.queue_len(a) > 1 || self.locks.queue_len(b) > 1 {
                    self.invalidate(g.job as usize, INHERIT_DEPTH);
                }
            }
        } else {
            self.locks.release(r, grants);
        }
    }
}
