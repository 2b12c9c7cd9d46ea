//! GPU sections: a job's token request and grant ([`rtgpu_policy::token`]),
//! its operations ([`super::ops`]: state migration, copy-in, CPU work in
//! its section thread, kernels, copy-out), stepping through them as each
//! completes, and the section's end (token release, cost predictor, back
//! to the CPU).

use rtgpu_model::PeerLocking;
use rtgpu_policy::token::{self, Decision};
use rtgpu_policy::{JobId, Time};

use crate::trace::{Span, SpanKind};

use super::deadline::DL;
use super::inherit::INHERIT_DEPTH;
use super::ops::{section_ops, OpKind};
use super::{Engine, Phase, TState};

impl Engine {
    pub(super) fn start_gpu_section(&mut self, i: u32) {
        let iu = i as usize;
        let now = self.now;
        self.jobs[iu].phase = Phase::Gpu;
        self.threads[iu].state = TState::Suspended;
        let Some(gt) = self.s.tasks[iu].gpu.as_ref() else {
            return;
        };
        if gt.vgpu.is_some() {
            let g = gt.static_gpu;
            self.on_token(i, g, None);
            return;
        }
        let group = gt.group;
        let local = |g: usize| self.s.local_gpu(group, g);
        let req = token::Request {
            job: i as JobId,
            task: iu,
            prio: self.threads[iu].key,
            // The worst-case critical section l (k-FMLP): with a migration.
            hold: gt.prior.iter().copied().max().unwrap_or(0),
            last_gpu: self.jobs[iu].last_gpu.and_then(local),
            static_gpu: local(gt.static_gpu).unwrap_or(0),
        };
        match self.allocators[group].request(&req, now) {
            Decision::Granted { gpu, token } => {
                // Granted at once: its queue was empty, so no priority is
                // inherited through it, by it or anyone else; but the
                // GPU's interrupt thread now also runs for this holder
                // (`gpu_irq_key`).
                let g = self.s.groups[group].gpus[gpu];
                // First, before anything the job does next can re-key.
                if self.rekeys_bottom_halves() {
                    self.holder_key[g] = None;
                    self.rekey_irq(g);
                }
                self.on_token(i, g, Some(token));
            }
            Decision::Queued { token, .. } => {
                // A new waiter: its token holder may inherit its priority.
                if let Some(h) = self.allocators[group].holder(token) {
                    self.invalidate(h as usize, INHERIT_DEPTH);
                }
                self.jobs[iu].blocked_since = Some(now);
                self.refresh_irq_keys();
            }
        }
    }

    pub(super) fn end_block(&mut self, i: usize) {
        if let Some(since) = self.jobs[i].blocked_since.take() {
            let b = self.now - since;
            self.jobs[i].blocked += b;
            self.jobs[i].section_blocked += b;
        }
    }

    /// `i` holds token `token` (an index of its group's allocator) for
    /// global GPU `g`, or no token but its vGPU's GPU `g`.
    pub(super) fn on_token(&mut self, i: u32, g: usize, token: Option<usize>) {
        let iu = i as usize;
        self.end_block(iu);
        // Without engine locks a token is the whole GPU (one lock over its
        // engines), unless several holders share it: then the driver
        // arbitrates each engine ([`Self::driven`]).
        let driver = self.driven(i);
        let now = self.now;
        let s = &self.s;
        let Some(gt) = s.tasks[iu].gpu.as_ref() else {
            return;
        };
        let locks = &self.locks;
        let j = &mut self.jobs[iu];
        j.has_token = token.is_some();
        j.token = token.unwrap_or(0);
        j.token_time = now;
        j.section_blocked = 0;
        j.section_gpu = g;
        j.gpu = Some(g as u32);
        j.pc = 0;
        // The operations depend only on the GPU and the migration source
        // (the task and the policy being fixed): on the GPU of its last
        // section, from the same place, a job repeats its predecessor's.
        let from = j.last_gpu.filter(|&p| p != g);
        if from.is_some() {
            j.migrations += 1;
        }
        j.distance = from.map_or(0, |p| s.gpu_distance(gt.group, p, g));
        if j.ops_for != Some((g, from)) {
            j.ops_for = Some((g, from));
            j.ops.clear();
            section_ops(
                &mut j.ops,
                s,
                locks,
                gt,
                g,
                from,
                driver,
                self.cfg.peer_migration,
            );
        }
        // Its token (or none) is part of its effective priority.
        self.fresh_section_key(iu);
        self.advance(i);
    }

    /// Continue job `i`'s GPU section from its current op: acquire the
    /// op's locks (suspending while blocked), then start it.
    pub(super) fn advance(&mut self, i: u32) {
        let iu = i as usize;
        loop {
            let j = &self.jobs[iu];
            if j.pc >= j.ops.len() {
                self.finish_section(i);
                return;
            }
            let op = j.ops[j.pc];
            let nested = self.s.policy.peer_locking == PeerLocking::Nested;
            let want = op.nlocks as usize;
            // Per-op locks are released when an op ends, so none is held
            // here (kernels after the first keep the execution lock and
            // name no lock).
            if want > 0 {
                let ok = if want == 2 && nested {
                    // Nested: the lower lock first, the other once held.
                    let order = rtgpu_policy::engine_lock::nested_order(op.locks[0], op.locks[1]);
                    self.lock_request(i, &order[..1], 0) && self.lock_request(i, &order[1..], 1)
                } else {
                    let slot = if matches!(op.kind, OpKind::GpuLock) {
                        2
                    } else {
                        0
                    };
                    self.lock_request(i, &op.locks[..want], slot)
                };
                if !ok {
                    self.jobs[iu].blocked_since = Some(self.now);
                    return;
                }
            }
            if matches!(op.kind, OpKind::GpuLock) {
                self.jobs[iu].pc += 1;
                continue;
            }
            if let OpKind::Cpu { work } = op.kind {
                self.start_section_cpu(i, work);
                return;
            }
            if want == 0 && self.driven(i) {
                self.driver_submit(i, op);
                return;
            }
            self.start_op(i, op);
            return;
        }
    }

    /// Job `i` runs `work` of its CPU time inside its GPU section, in its
    /// section thread, in its own domain, at its effective priority (it
    /// holds its token, so waiters pass theirs on; seed 000 §IV, and what
    /// the analysis' waiter argument assumes of every holder).
    pub(super) fn start_section_cpu(&mut self, i: u32, work: Time) {
        let iu = i as usize;
        let key = self.owner_key(i);
        let domain = self.threads[iu].domain;
        let tid = self.section0 + iu;
        let th = &mut self.threads[tid];
        th.domain = domain;
        th.key = key;
        th.remaining = work;
        th.piece_left = Time::MAX;
        self.in_section_cpu.push(i);
        self.make_ready(tid as u32);
    }

    /// Job `i`'s section thread finished its work: the section goes on.
    pub(super) fn section_cpu_done(&mut self, i: u32) {
        self.threads[self.section0 + i as usize].state = TState::Idle;
        if let Some(k) = self.in_section_cpu.iter().position(|&j| j == i) {
            self.in_section_cpu.swap_remove(k);
        }
        self.op_done(i);
    }

    /// Job `i` learned that its current op completed (after the top half
    /// and any bottom half that runs elsewhere): it goes on at once, or, a
    /// SCHED_DEADLINE owner, once its thread has woken and run
    /// ([`Self::dl_owner_wake`]).
    #[inline(always)]
    pub(super) fn op_completed(&mut self, i: u32) {
        if self.threads[i as usize].domain == DL {
            self.dl_owner_wake(i);
        } else {
            self.op_done(i);
        }
    }

    /// The job learned that its current op completed: release per-op locks
    /// and go on.
    #[inline]
    pub(super) fn op_done(&mut self, i: u32) {
        let iu = i as usize;
        let j = &self.jobs[iu];
        let op = j.ops[j.pc];
        let release = match op.kind {
            OpKind::Copy { .. } => true,
            OpKind::Kernel { last, .. } => last,
            OpKind::GpuLock | OpKind::Cpu { .. } => false,
        };
        // (A no-op for locks passed on at the device completion.)
        if release {
            self.release_op_locks(iu);
        }
        self.jobs[iu].pc += 1;
        self.advance(i);
    }

    pub(super) fn finish_section(&mut self, i: u32) {
        let iu = i as usize;
        let now = self.now;
        if let Some(r) = self.jobs[iu].gpu_lock.take() {
            let held = std::mem::replace(&mut self.jobs[iu].held[2], false);
            let mut grants = std::mem::take(&mut self.grants);
            grants.clear();
            let l = self.jobs[iu].gpu_lock_id;
            self.release_lock(iu, r, [l, l], held, &mut grants);
            for g in &grants {
                self.mark_held(g);
            }
            for g in grants.drain(..) {
                self.on_lock_granted(g);
            }
            self.grants = grants;
        }
        let g = self.jobs[iu].section_gpu;
        self.jobs[iu].last_gpu = Some(g);
        if self.jobs[iu].has_token {
            self.jobs[iu].has_token = false;
            let group = self.s.tasks[iu].gpu.as_ref().map_or(0, |t| t.group);
            let cost =
                (now - self.jobs[iu].token_time).saturating_sub(self.jobs[iu].section_blocked);
            let distance = self.jobs[iu].distance;
            if self.cfg.trace {
                self.spans.push(Span {
                    track: (self.s.cores + self.s.gpus.len() * 3 + g) as u32,
                    start: self.jobs[iu].token_time,
                    end: now,
                    who: i,
                    kind: SpanKind::Token,
                });
            }
            let alloc = &mut self.allocators[group];
            alloc.predictor_mut().observe(iu, distance, cost);
            let grant = alloc.release(i as JobId, now);
            // It holds no token now; a waiter that became the holder is
            // re-keyed by `on_token`; a stolen one left another token's
            // queue, whose holder inherited from it.
            self.invalidate(iu, INHERIT_DEPTH);
            if grant.is_some_and(|g| g.stolen) {
                for t in 0..self.allocators[group].tokens() {
                    if let Some(h) = self.allocators[group].holder(t) {
                        self.invalidate(h as usize, INHERIT_DEPTH);
                    }
                }
            }
            if let Some(grant) = grant {
                let gg = self.s.groups[group].gpus[grant.gpu];
                self.on_token(grant.job, gg, Some(grant.token));
            }
            // The GPU's interrupt thread lost a holder it ran for; and the
            // queues changed: so may the holders' inherited priorities.
            if self.rekeys_bottom_halves() {
                self.rekey_irq(g);
            }
            self.refresh_irq_keys();
        }
        // Back to the CPU: the second half of C, plus the context switches
        // of each resumption (seed 000 Eq. 7; a SCHED_DEADLINE owner paid
        // them at each completion, `dl_owner_wake`).
        let resume = self.resume_charge(iu);
        let j = &mut self.jobs[iu];
        j.phase = Phase::Post;
        self.threads[iu].remaining = j.post_work + resume;
        if self.threads[iu].remaining == 0 {
            self.complete_job(i);
        } else {
            self.make_ready(i);
        }
    }
}
