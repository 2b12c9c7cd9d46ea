//! Interrupts and bottom halves: a GPU operation's completion raises an
//! interrupt whose top half runs non-preemptively on the GPU's interrupt
//! core (the first core of its cluster) and freezes whatever runs there
//! (seed 000 Eqs. 12-18); its bottom half runs per the interrupt policy
//! ([`rtgpu_policy::interrupt::plan`]): inline, in the GPU's interrupt
//! thread (klmirqd at the GPU holders' current effective priority,
//! fixed-priority threads, PAI at the owner's), or in a klmirqd server.
//! Owns the interrupt items and per-GPU queues, the interrupt and section
//! threads' keys, and the priority inversions they cause.

use rtgpu_model::EngineHandoff;
use rtgpu_policy::inherit::gpu_owner_priority;
use rtgpu_policy::interrupt::{self, BottomHalf, Handling};
use rtgpu_policy::{Time, LOWEST};

use crate::queue;
use crate::trace::{Span, SpanKind};

use super::deadline::DL;
use super::{Engine, Ev, TState};

pub(super) struct IrqItem {
    pub(super) owner: u32,
    pub(super) gpu: u32,
    pub(super) deferred: Option<(u64, Time)>,
    pub(super) owner_key: u64,
    pub(super) start: Time,
}

impl Engine {
    /// klmirqd: GPU `g`'s interrupt thread runs at the most urgent effective
    /// priority among the GPU's token holders, as the runtime's per-GPU
    /// completion thread follows the GPU's owners (`arbiter.rs`, the
    /// followers of docs/design/arbiter.md; seed 000 §IV: a priority
    /// inherited by a GPU holder is propagated to any klmirqd thread
    /// executing on its behalf). With ρ > 1 one owner's bottom half can
    /// queue behind another's; running them all at the owners' highest
    /// priority keeps a middle-priority task from delaying the more urgent
    /// owner through the other's bottom half (the analysis assumes this).
    #[inline(always)]
    pub(super) fn gpu_irq_key(&mut self, g: usize, owner: u32) -> u64 {
        // An owner holding one of the GPU's tokens is among the holders,
        // whose cached key covers it (the common case, decided inline).
        let j = &self.jobs[owner as usize];
        if let Some(Some(v)) = self.holder_key[g] {
            if j.has_token && j.section_gpu == g && !cfg!(debug_assertions) {
                return v;
            }
        }
        self.gpu_irq_key_now(g, owner)
    }

    /// [`Self::gpu_irq_key`] when the cached holder key does not answer.
    #[inline(never)]
    fn gpu_irq_key_now(&mut self, g: usize, owner: u32) -> u64 {
        let j = &self.jobs[owner as usize];
        let own = if j.has_token && j.section_gpu == g && self.holder_key[g].is_some() {
            debug_assert!({
                let (group, local) = (self.s.gpus[g].group, self.s.gpus[g].local);
                let a = &self.allocators[group];
                a.tokens_of(local).any(|t| a.holder(t) == Some(owner))
            });
            LOWEST
        } else {
            self.owner_key(owner)
        };
        let cached = self.holder_key[g];
        let holders = match cached {
            Some(h) if !cfg!(debug_assertions) => h,
            _ => {
                // `gpu_owner_priority`, caching the holders' keys on the way.
                let (group, local) = (self.s.gpus[g].group, self.s.gpus[g].local);
                let mut h: Option<u64> = None;
                for t in self.allocators[group].tokens_of(local) {
                    if let Some(j) = self.allocators[group].holder(t) {
                        let k = self.owner_key(j);
                        h = Some(h.map_or(k, |h| h.min(k)));
                    }
                }
                debug_assert_eq!(
                    h,
                    gpu_owner_priority(&self.allocators[group], local, |h| {
                        self.peek_owner_key(h).0
                    }),
                    "holder key as the policy core's"
                );
                debug_assert!(cached.is_none_or(|c| c == h), "stale holder key");
                self.holder_key[g] = Some(h);
                h
            }
        };
        holders.map_or(own, |p| p.min(own))
    }

    /// A GPU operation of job `i` completed: an interrupt on GPU `g`.
    pub(super) fn raise_interrupt(&mut self, i: u32, g: usize) {
        if self.s.policy.engine_handoff == EngineHandoff::Device {
            self.release_on_device(i);
        }
        let owner_key = self.owner_key(i);
        let plan = interrupt::plan(self.handling, &self.costs, owner_key);
        self.jobs[i as usize].interrupts += 1;
        if plan.top_half == 0 && plan.bottom_cost == 0 {
            self.op_completed(i);
            return;
        }
        let now = self.now;
        let c = self.s.gpus[g].irq_core;
        // The core read once (as in `dispatch`).
        let core = &mut self.cores[c];
        let start = now.max(core.frozen_until);
        let end = start + plan.top_half;
        core.frozen_until = end;
        // Freeze what runs there.
        if let Some(r) = core.running {
            core.stamp = core.stamp.wrapping_add(1);
            let (stamp, at) = (core.stamp, core.run as usize);
            let rk = self.threads[r as usize].key;
            if rk < owner_key && self.is_job_thread(r) {
                self.inversions.push(plan.top_half);
            }
            let th = &mut self.threads[r as usize];
            let p = now.saturating_sub(th.seg_start).min(th.seg_len);
            th.remaining -= p;
            if th.piece_left != Time::MAX {
                th.piece_left -= p;
            }
            th.seg_len -= p;
            th.seg_start = end;
            self.dom_run[at].1 = th.seg_start.saturating_add(th.seg_len);
            let seg_end = end + th.seg_len;
            self.push(seg_end, Ev::Segment(c as u32, stamp));
        }
        if self.cfg.trace {
            self.spans.push(Span {
                track: c as u32,
                start,
                end,
                who: u32::MAX - g as u32,
                kind: SpanKind::TopHalf,
            });
        }
        let deferred = match plan.bottom_half {
            BottomHalf::Inline => None,
            // A bottom half at its owner's priority (klmirqd dependent,
            // PAI) of a SCHED_DEADLINE owner runs in the owner's own thread
            // ([`Self::dl_owner_wake`]): a deadline has no place in the
            // GPU's interrupt thread's domain.
            BottomHalf::Deferred { .. }
                if self.threads[i as usize].domain == DL
                    && matches!(self.handling, Handling::Klmirqd | Handling::Pai) =>
            {
                None
            }
            // A bottom half in a thread of its own (klmirqd, fixed-priority
            // threads) pays that thread's scheduling and switches in and
            // out, 2(Δsch + Δcxs), where it runs: on the core whose thread
            // it preempts (seed 000 Eq. 16 charges them to the owner's
            // task; charged here, the time lands where it is spent).
            BottomHalf::Deferred { prio, .. } => {
                Some((prio, plan.bottom_cost + self.bottom_half_switches()))
            }
            BottomHalf::Server => Some((0, plan.bottom_cost)),
        };
        let item = IrqItem {
            owner: i,
            gpu: g as u32,
            deferred,
            owner_key,
            start: end,
        };
        let k = match self.irq_free.pop() {
            Some(k) => {
                self.irq_items[k as usize] = item;
                k
            }
            None => {
                self.irq_items.push(item);
                (self.irq_items.len() - 1) as u32
            }
        };
        self.push(end, Ev::TopHalfDone(k));
    }

    pub(super) fn on_top_half_done(&mut self, k: u32) {
        let item = &self.irq_items[k as usize];
        let (owner, gpu, deferred) = (item.owner, item.gpu as usize, item.deferred);
        if deferred.is_none() {
            self.irq_free.push(k);
            self.op_completed(owner);
            return;
        }
        self.irq_items[k as usize].start = self.now;
        if self.irq_current[gpu].is_none() && self.irq_queue[gpu].is_empty() {
            // Straight to the idle interrupt thread (`irq_next` without the
            // round trip through its queue).
            self.irq_start(gpu, k);
            return;
        }
        self.irq_queue[gpu].push_back(k);
        if self.irq_current[gpu].is_none() {
            self.irq_next(gpu);
        }
    }

    /// klmirqd: a GPU's interrupt thread runs at the *current* effective
    /// priority of the GPU's owners ([`Self::gpu_irq_key`]; seed 000 §IV:
    /// its priority follows theirs as inheritance changes), not the one the
    /// owner had when its interrupt arrived.
    /// Whether bottom halves run at their owner's *current* effective
    /// priority, re-keyed as inheritance changes it: klmirqd's threads
    /// (seed 000 §IV: inherited priority is "propagated immediately" to
    /// bottom-half work) and PAI's tasklets, whose priority PAI compares at
    /// every scheduling decision (seed 000 §III), an inherited one
    /// included. PAI's items once kept the priority their owner had when
    /// the interrupt arrived, so a holder's pending bottom half starved
    /// below medium-priority tasks while a high-priority job waited for its
    /// token (examples/interrupts-crm-pai.toml: 16.389 ms against a
    /// 4.496 ms bound).
    #[inline(always)]
    pub(super) fn rekeys_bottom_halves(&self) -> bool {
        matches!(self.handling, Handling::Klmirqd | Handling::Pai)
    }

    /// Re-keys the section threads and the interrupt threads marked by
    /// [`Self::invalidate`]. Inlined for its common case, called after
    /// every lock and token change: nothing to re-key (no section thread
    /// runs, no interrupt thread is marked), decided without the call.
    #[inline(always)]
    pub(super) fn refresh_irq_keys(&mut self) {
        if !cfg!(debug_assertions)
            && self.in_section_cpu.is_empty()
            && (!self.rekeys_bottom_halves() || self.irq_dirty.iter().all(|&w| w == 0))
        {
            return;
        }
        self.refresh_irq_keys_now();
    }

    #[inline(never)]
    fn refresh_irq_keys_now(&mut self) {
        for k in 0..self.in_section_cpu.len() {
            let i = self.in_section_cpu[k];
            let key = self.owner_key(i);
            self.set_key(self.section0 + i as usize, key);
        }
        if !self.rekeys_bottom_halves() {
            return;
        }
        // Only the GPUs marked by `invalidate` since their last pass: on
        // the others nothing that can move the key changed, so the keys
        // set then, and those set by `irq_next` since, are current. In
        // GPU order, as a pass over all would re-key them. Debug builds
        // visit every GPU and check it.
        if cfg!(debug_assertions) {
            for g in 0..self.irq_current.len() {
                let dirty = self.irq_dirty[g / 64] & (1 << (g % 64)) != 0;
                let moved = self.rekey_irq(g);
                debug_assert!(
                    dirty || !moved,
                    "an interrupt thread's key moved without a change"
                );
            }
            self.irq_dirty.iter_mut().for_each(|w| *w = 0);
            return;
        }
        for w in 0..self.irq_dirty.len() {
            while self.irq_dirty[w] != 0 {
                let bit = self.irq_dirty[w].trailing_zeros() as usize;
                self.irq_dirty[w] &= !(1 << bit);
                self.rekey_irq(w * 64 + bit);
            }
        }
    }

    /// Gives GPU `g`'s interrupt thread, if busy, its current key
    /// ([`Self::gpu_irq_key`]); returns whether the key moved. Called
    /// directly when only the set of the GPU's holders changed: that moves
    /// no job's effective priority (no epoch bump, no cache invalidated).
    pub(super) fn rekey_irq(&mut self, g: usize) -> bool {
        let Some(k) = self.irq_current[g] else {
            return false;
        };
        let key = self.gpu_irq_key(g, self.irq_items[k as usize].owner);
        self.set_key(self.jobs.len() + g, key)
    }

    /// Gives thread `tid` (an interrupt or section thread) key `key`,
    /// wherever it is; returns whether the key moved.
    pub(super) fn set_key(&mut self, tid: usize, key: u64) -> bool {
        if self.threads[tid].key == key {
            return false;
        }
        self.threads[tid].key = key;
        match self.threads[tid].state {
            TState::Ready => self.make_ready(tid as u32),
            TState::Running(c) => {
                // Its entry among the domain's running keys, which
                // preemption decisions read; a less urgent key may let a
                // ready thread preempt it.
                let c = c as usize;
                let d = self.cores[c].domain as usize;
                let end = self.dom_run[self.cores[c].run as usize].1;
                self.set_run(c, queue::key(key, tid as u64 + 1), end);
                self.schedule(d);
            }
            _ => {}
        }
        true
    }

    #[inline(always)]
    pub(super) fn irq_next(&mut self, g: usize) {
        let Some(k) = self.irq_queue[g].pop_front() else {
            self.irq_current[g] = None;
            return;
        };
        self.irq_start(g, k);
    }

    /// GPU `g`'s interrupt thread takes item `k`'s bottom half.
    #[inline(always)]
    pub(super) fn irq_start(&mut self, g: usize, k: u32) {
        self.irq_current[g] = Some(k);
        let (mut key, cost) = self.irq_items[k as usize].deferred.unwrap_or((0, 0));
        let owner = self.irq_items[k as usize].owner as usize;
        if self.rekeys_bottom_halves() {
            key = self.gpu_irq_key(g, owner as u32);
        }
        let tid = self.jobs.len() + g;
        // A bottom half at its owner's priority (klmirqd, PAI) competes
        // where that priority means something: in the owner's scheduling
        // domain (under P-FP, priorities are per core; the suspended owner
        // leaves its core to its bottom half, which the analysis charges
        // to the owner, seed 000 App. B). Other methods stay on the GPU's
        // interrupt core.
        let domain = match self.handling {
            Handling::Klmirqd | Handling::Pai => {
                debug_assert_ne!(
                    self.threads[owner].domain, DL,
                    "a deadline owner's bottom halves run in its own thread"
                );
                self.threads[owner].domain
            }
            Handling::KlmirqdServer => DL,
            _ => self.s.core_domain[self.s.gpus[g].irq_core] as u32,
        };
        let th = &mut self.threads[tid];
        th.domain = domain;
        th.key = key;
        th.remaining = cost;
        th.piece_left = Time::MAX;
        self.make_ready(tid as u32);
    }

    #[inline(always)]
    pub(super) fn irq_dispatched(&mut self, g: usize) {
        let Some(k) = self.irq_current[g] else {
            return;
        };
        let item = &self.irq_items[k as usize];
        let tid = self.jobs.len() + g;
        let key = self.threads[tid].key;
        let waited = self.now.saturating_sub(item.start);
        // The bottom half waited for a CPU at a priority below its owner's:
        // the owner (more urgent) was delayed by less urgent work.
        if key > item.owner_key && waited > 0 {
            self.inversions.push(waited);
            self.irq_items[k as usize].start = self.now;
        }
    }

    pub(super) fn irq_segment_done(&mut self, g: usize) {
        let Some(k) = self.irq_current[g] else {
            return;
        };
        let item = &self.irq_items[k as usize];
        let (owner, owner_key, deferred) = (item.owner, item.owner_key, item.deferred);
        let tid = self.jobs.len() + g;
        let th = &mut self.threads[tid];
        let (key, domain) = (th.key, th.domain);
        th.state = TState::Idle;
        // A bottom half that ran above a ready job more urgent than its
        // owner delayed that job (seed 000 Observation 1).
        let d = match domain {
            DL => {
                let c = self.dl[self.dl_of[tid] as usize].core as usize;
                self.cores[c].domain as usize
            }
            d => d as usize,
        };
        if key < owner_key {
            if let Some((top, _)) = self.valid_top(d) {
                if top < owner_key {
                    let (_, cost) = deferred.unwrap_or((0, 0));
                    self.inversions.push(cost);
                }
            }
        }
        self.irq_free.push(k);
        self.irq_next(g);
        self.op_completed(owner);
    }
}
