//! GPUSync engine locks (seed 004 §4.2-4.4).
//!
//! One FIFO mutex per engine: the execution engine, the inbound (copy-in)
//! and the outbound (copy-out) copy engine. "For a machine ... which has
//! *one* copy engine per GPU ... the inbound and outbound locks are one in
//! the same": [`EngineLocks::lock_id`] maps both directions to one lock
//! then.
//!
//! A request names one lock, or two for a GPU-to-GPU migration (outbound of
//! the source, inbound of the destination). Two locks in one request are a
//! *dynamic group lock* (DGL): the request is enqueued atomically in both
//! FIFO queues and is satisfied when it is at the head of both (seed 004
//! §4.3). Nested requests are two single requests issued in
//! [`nested_order`] (a fixed partial order, to avoid deadlock), the second
//! while holding the first.
//!
//! Chunked copies ([`chunks`]) release and re-acquire the copy lock per
//! chunk (seed 004 §4.4); the host issues one request per chunk.
//!
//! The head of a lock's queue *holds* it only when its request is
//! satisfied; an unsatisfied DGL head reserves the lock (that is the
//! transitive blocking of seed 004 App., Lemma 3).

use std::collections::VecDeque;

use crate::{JobId, Prio};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    Exec,
    CopyIn,
    CopyOut,
}

pub type LockId = usize;
pub type ReqId = usize;

/// A request that became satisfied on a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockGrant {
    pub req: ReqId,
    pub job: JobId,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    job: JobId,
    prio: Prio,
    locks: [LockId; 2],
    n: u8,
    live: bool,
}

impl Slot {
    fn locks(&self) -> &[LockId] {
        &self.locks[..self.n as usize]
    }
}

/// All engine locks of a set of GPUs.
#[derive(Debug, Clone)]
pub struct EngineLocks {
    copy_engines: Vec<u8>,
    queues: Vec<VecDeque<ReqId>>,
    slots: Vec<Slot>,
    free: Vec<ReqId>,
}

impl EngineLocks {
    /// `copy_engines[g]` is 1 or 2 for GPU g.
    pub fn new(copy_engines: &[u8]) -> EngineLocks {
        EngineLocks {
            copy_engines: copy_engines.to_vec(),
            queues: vec![VecDeque::new(); copy_engines.len() * 3],
            slots: Vec::new(),
            free: Vec::new(),
        }
    }

    pub fn lock_count(&self) -> usize {
        self.queues.len()
    }

    /// The lock guarding `engine` of `gpu`.
    pub fn lock_id(&self, gpu: usize, engine: Engine) -> LockId {
        let two = self.copy_engines.get(gpu).copied().unwrap_or(1) >= 2;
        gpu * 3
            + match engine {
                Engine::Exec => 0,
                Engine::CopyIn => 1,
                Engine::CopyOut if two => 2,
                Engine::CopyOut => 1,
            }
    }

    #[inline]
    fn satisfied(&self, req: ReqId) -> bool {
        let s = &self.slots[req];
        // At the front of its one or two queues.
        s.live
            && self.queues[s.locks[0]].front() == Some(&req)
            && (s.n == 1 || self.queues[s.locks[1]].front() == Some(&req))
    }

    /// Enqueue `job` for `locks` (one lock, or two as a DGL; a repeated id
    /// counts once). Returns the request handle and whether it is satisfied
    /// at once.
    ///
    /// # Panics
    /// If `locks` is empty, longer than 2 or names a lock out of range
    /// (host bugs, not input errors).
    pub fn request(&mut self, job: JobId, prio: Prio, locks: &[LockId]) -> (ReqId, bool) {
        assert!(
            (1..=2).contains(&locks.len()),
            "an engine request names one lock or a DGL of two"
        );
        let mut ids = [locks[0], locks[0]];
        let mut n = 1u8;
        if locks.len() == 2 && locks[1] != locks[0] {
            ids[1] = locks[1];
            n = 2;
        }
        let slot = Slot {
            job,
            prio,
            locks: ids,
            n,
            live: true,
        };
        let req = match self.free.pop() {
            Some(r) => {
                self.slots[r] = slot;
                r
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        // Satisfied at once when it heads every queue it joins: when they
        // were empty (a freed handle is in no queue). Cheaper than
        // [`Self::satisfied`] after the pushes.
        let ok = if n == 1 {
            // (One lock, most requests: without the loop.)
            let q = &mut self.queues[ids[0]];
            let empty = q.is_empty();
            q.push_back(req);
            empty
        } else {
            let mut ok = true;
            for &l in &ids {
                ok &= self.queues[l].is_empty();
                self.queues[l].push_back(req);
            }
            ok
        };
        debug_assert_eq!(ok, self.satisfied(req));
        (req, ok)
    }

    /// Release (or abandon) request `req`; requests that became satisfied
    /// are appended to `granted` in lock order.
    pub fn release(&mut self, req: ReqId, granted: &mut Vec<LockGrant>) {
        // Its locks only (a copy of the whole slot cost more), and it
        // leaves at once, in the same look-up: below, only other
        // requests' slots are read (`satisfied` of the heads it leaves).
        let (ids, n) = match self.slots.get_mut(req) {
            Some(s) if s.live => {
                s.live = false;
                (s.locks, s.n as usize)
            }
            _ => return,
        };
        if n == 1 && self.queues[ids[0]].front() == Some(&req) {
            // The commonest case of the one below, one lock (most
            // requests), without the loops over the request's locks.
            let l = ids[0];
            self.queues[l].pop_front();
            self.free.push(req);
            self.grant_head(l, &[], granted);
            return;
        }
        let locks = &ids[..n];
        if locks.iter().all(|&l| self.queues[l].front() == Some(&req)) {
            // The common case, a satisfied request leaving: it heads every
            // queue it is in, so no other head was satisfied before (the
            // general path below, with nothing in `before`).
            for &l in locks {
                self.queues[l].pop_front();
            }
            self.free.push(req);
            for &l in locks {
                self.grant_head(l, &[], granted);
            }
            return;
        }
        // Heads already satisfied before this release are not new grants.
        let before: [Option<ReqId>; 2] = [0, 1].map(|i| {
            locks
                .get(i)
                .and_then(|&l| self.queues[l].front().copied())
                .filter(|&h| h != req && self.satisfied(h))
        });
        for &l in locks {
            let q = &mut self.queues[l];
            if q.front() == Some(&req) {
                q.pop_front();
            } else if let Some(i) = q.iter().position(|&r| r == req) {
                q.remove(i);
            }
        }
        self.free.push(req);
        for &l in locks {
            self.grant_head(l, &before, granted);
        }
    }

    /// Appends lock `l`'s head to `granted` when a release left it
    /// satisfied, unless it was satisfied `before` the release or is
    /// granted already (through its other lock).
    #[inline(always)]
    fn grant_head(&self, l: LockId, before: &[Option<ReqId>], granted: &mut Vec<LockGrant>) {
        if let Some(&head) = self.queues[l].front() {
            if self.satisfied(head)
                && !before.contains(&Some(head))
                && !granted.iter().any(|g| g.req == head)
            {
                granted.push(LockGrant {
                    req: head,
                    job: self.slots[head].job,
                });
            }
        }
    }

    /// What [`Self::release`] of `req` would grant now, without changing
    /// anything (appended to `out`). The cross-process daemon publishes it
    /// so that a releasing client can hand a lock to its successor without
    /// a round trip (docs/design/arbiter.md). Only the heads that `req`
    /// leaves can change, and such a head is satisfied afterwards when it
    /// heads all its queues once `req` is gone; new requests join at the
    /// back and never change the answer, other releases can only satisfy
    /// more, so the preview stays right until `req` or its successor
    /// leaves.
    pub fn grants_on_release(&self, req: ReqId, out: &mut Vec<LockGrant>) {
        let Some(s) = self.slots.get(req).filter(|s| s.live) else {
            return;
        };
        let heads_after = |n: ReqId, l: LockId| {
            let q = &self.queues[l];
            q.front() == Some(&n) || (q.front() == Some(&req) && q.get(1) == Some(&n))
        };
        for &l in s.locks() {
            let q = &self.queues[l];
            if q.front() != Some(&req) {
                continue;
            }
            let Some(&next) = q.get(1) else {
                continue;
            };
            if self.slots[next]
                .locks()
                .iter()
                .all(|&m| heads_after(next, m))
                && !out.iter().any(|g| g.req == next)
            {
                out.push(LockGrant {
                    req: next,
                    job: self.slots[next].job,
                });
            }
        }
    }

    /// Whether any request waits behind `req` in one of its queues.
    pub fn waiters_behind(&self, req: ReqId) -> bool {
        let Some(s) = self.slots.get(req).filter(|s| s.live) else {
            return false;
        };
        s.locks().iter().any(|&l| {
            let q = &self.queues[l];
            q.iter().skip_while(|&&r| r != req).nth(1).is_some()
        })
    }

    /// The job holding `lock` (its request satisfied), if any.
    pub fn holder(&self, lock: LockId) -> Option<JobId> {
        let &head = self.queues.get(lock)?.front()?;
        self.satisfied(head).then(|| self.slots[head].job)
    }

    /// Requests queued on `lock` that do not hold it: (job, priority).
    pub fn waiters(&self, lock: LockId) -> impl Iterator<Item = (JobId, Prio)> + '_ {
        self.queues
            .get(lock)
            .into_iter()
            .flat_map(|q| q.iter())
            .filter(move |&&r| !self.satisfied(r))
            .map(move |&r| (self.slots[r].job, self.slots[r].prio))
    }

    /// Every request queued on `lock`, head first: (job, priority). Only
    /// the head can be satisfied (a satisfied request heads all its
    /// queues), so behind a head that holds the lock these are
    /// [`Self::waiters`].
    pub fn queued(&self, lock: LockId) -> impl Iterator<Item = (JobId, Prio)> + '_ {
        self.queues
            .get(lock)
            .into_iter()
            .flat_map(|q| q.iter())
            .map(move |&r| (self.slots[r].job, self.slots[r].prio))
    }

    /// Locks `job` holds.
    pub fn held_by(&self, job: JobId) -> impl Iterator<Item = LockId> + '_ {
        (0..self.queues.len()).filter(move |&l| self.holder(l) == Some(job))
    }

    #[inline]
    pub fn queue_len(&self, lock: LockId) -> usize {
        self.queues.get(lock).map_or(0, |q| q.len())
    }
}

/// The fixed order of nested requests for a peer copy (seed 004 §4.3:
/// "requests must also be issued according to a specified partial order to
/// avoid deadlock"): ascending lock id.
pub fn nested_order(a: LockId, b: LockId) -> [LockId; 2] {
    [a.min(b), a.max(b)]
}

/// Chunk sizes of a copy of `bytes` with chunk size `chunk` (None or 0:
/// one chunk). An empty copy has no chunks.
pub fn chunks(bytes: u64, chunk: Option<u64>) -> impl Iterator<Item = u64> {
    let c = chunk.filter(|&c| c > 0).unwrap_or(bytes.max(1));
    let n = bytes.div_ceil(c);
    (0..n).map(move |i| c.min(bytes - i * c))
}

/// Transfer time of `bytes` at `bandwidth` bytes/s, rounded up to whole
/// nanoseconds (never optimistic).
pub fn copy_time(bytes: u64, bandwidth: u64) -> crate::Time {
    if bytes == 0 {
        return 0;
    }
    let bw = bandwidth.max(1) as u128;
    ((bytes as u128 * 1_000_000_000).div_ceil(bw)).min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_copy_engine_shares_the_copy_lock() {
        let l = EngineLocks::new(&[1, 2]);
        assert_eq!(l.lock_id(0, Engine::CopyIn), l.lock_id(0, Engine::CopyOut));
        assert_ne!(l.lock_id(1, Engine::CopyIn), l.lock_id(1, Engine::CopyOut));
        assert_ne!(l.lock_id(0, Engine::Exec), l.lock_id(0, Engine::CopyIn));
        assert_eq!(l.lock_count(), 6);
    }

    #[test]
    fn fifo_order_not_priority() {
        let mut l = EngineLocks::new(&[1]);
        let e = l.lock_id(0, Engine::Exec);
        let (r1, g1) = l.request(1, 50, &[e]);
        let (_r2, g2) = l.request(2, 40, &[e]);
        assert!(l.waiters_behind(r1) && !l.waiters_behind(_r2));
        let (_r3, g3) = l.request(3, 1, &[e]);
        assert!(g1 && !g2 && !g3);
        assert!(l.waiters_behind(_r2) && !l.waiters_behind(_r3));
        assert_eq!(l.holder(e), Some(1));
        let w: Vec<_> = l.waiters(e).collect();
        assert_eq!(w, vec![(2, 40), (3, 1)]);
        let q: Vec<_> = l.queued(e).collect();
        assert_eq!(q, vec![(1, 50), (2, 40), (3, 1)]);
        let mut out = Vec::new();
        l.release(r1, &mut out);
        assert_eq!(out, vec![LockGrant { req: _r2, job: 2 }]);
        assert_eq!(l.holder(e), Some(2));
    }

    #[test]
    fn dgl_is_atomic_and_blocks_transitively() {
        let mut l = EngineLocks::new(&[1, 1, 1]);
        let (a, b, cc) = (
            l.lock_id(0, Engine::CopyIn),
            l.lock_id(1, Engine::CopyIn),
            l.lock_id(2, Engine::CopyIn),
        );
        // Job 1 holds copy lock of GPU 2.
        let (r1, _) = l.request(1, 5, &[cc]);
        // Job 2 wants GPUs 1 and 2 atomically: waits, but reserves GPU 1.
        let (r2, g2) = l.request(2, 5, &[b, cc]);
        assert!(!g2);
        assert_eq!(
            l.holder(b),
            None,
            "a DGL head does not hold before satisfied"
        );
        // Job 3 wants GPUs 0 and 1: GPU 0 free, but blocked transitively
        // behind job 2 on GPU 1.
        let (r3, g3) = l.request(3, 5, &[a, b]);
        assert!(!g3);
        let mut out = Vec::new();
        l.release(r1, &mut out);
        assert_eq!(out, vec![LockGrant { req: r2, job: 2 }]);
        assert_eq!(l.holder(b), Some(2));
        assert_eq!(l.holder(cc), Some(2));
        assert_eq!(l.held_by(2).collect::<Vec<_>>(), vec![b, cc]);
        out.clear();
        l.release(r2, &mut out);
        assert_eq!(out, vec![LockGrant { req: r3, job: 3 }]);
    }

    #[test]
    fn nested_requests_can_wait_twice() {
        let mut l = EngineLocks::new(&[1, 1]);
        let (a, b) = (l.lock_id(0, Engine::CopyOut), l.lock_id(1, Engine::CopyIn));
        let [first, second] = nested_order(b, a);
        assert_eq!((first, second), (a, b));
        let (x, _) = l.request(9, 1, &[second]); // someone holds the second
        let (r1, g1) = l.request(1, 1, &[first]);
        assert!(g1);
        let (_r2, g2) = l.request(1, 1, &[second]);
        assert!(!g2);
        assert_eq!(l.holder(first), Some(1));
        let mut out = Vec::new();
        l.release(x, &mut out);
        assert_eq!(out.len(), 1);
        out.clear();
        l.release(r1, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn abandoning_a_waiting_request_removes_it() {
        let mut l = EngineLocks::new(&[1]);
        let e = l.lock_id(0, Engine::Exec);
        let (r1, _) = l.request(1, 1, &[e]);
        let (r2, _) = l.request(2, 1, &[e]);
        let (r3, _) = l.request(3, 1, &[e]);
        let mut out = Vec::new();
        l.release(r2, &mut out);
        assert!(out.is_empty());
        l.release(r1, &mut out);
        assert_eq!(out, vec![LockGrant { req: r3, job: 3 }]);
        // Slot reuse.
        let (r4, _) = l.request(4, 1, &[e]);
        assert!(r4 == r1 || r4 == r2);
        l.release(999, &mut out); // unknown: ignored
    }

    #[test]
    fn the_release_preview_is_what_release_grants() {
        // Random single and DGL requests and releases over 2 GPUs with one
        // copy engine: before every release, the preview must equal the
        // grants the release then makes.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut l = EngineLocks::new(&[1, 2]);
        let ids: Vec<LockId> = (0..l.lock_count()).filter(|&i| i != 2).collect();
        let mut live: Vec<ReqId> = Vec::new();
        let (mut previews, mut nonempty) = (0, 0);
        for step in 0..20_000u64 {
            if live.len() < 3 || rnd(2) == 0 {
                let a = ids[rnd(ids.len() as u64) as usize];
                let b = ids[rnd(ids.len() as u64) as usize];
                let locks: &[LockId] = if rnd(3) == 0 { &[a, b] } else { &[a] };
                live.push(l.request(step as JobId, 1, locks).0);
            } else {
                let r = live.swap_remove(rnd(live.len() as u64) as usize);
                let mut preview = Vec::new();
                l.grants_on_release(r, &mut preview);
                let mut granted = Vec::new();
                l.release(r, &mut granted);
                preview.sort_by_key(|g| g.req);
                granted.sort_by_key(|g| g.req);
                assert_eq!(preview, granted, "step {step}");
                previews += 1;
                nonempty += usize::from(!granted.is_empty());
            }
        }
        assert!(previews > 5_000 && nonempty > 500, "{previews} {nonempty}");
    }

    #[test]
    fn chunking_and_copy_time() {
        let mib = 1 << 20;
        assert_eq!(
            chunks(5 * mib, Some(2 * mib)).collect::<Vec<_>>(),
            vec![2 * mib, 2 * mib, mib]
        );
        assert_eq!(chunks(5, None).collect::<Vec<_>>(), vec![5]);
        assert_eq!(chunks(0, Some(2)).count(), 0);
        assert_eq!(chunks(4, Some(2)).collect::<Vec<_>>(), vec![2, 2]);
        assert_eq!(copy_time(6_000_000_000, 6_000_000_000), 1_000_000_000);
        assert_eq!(copy_time(1, 3_000_000_000), 1); // rounded up
        assert_eq!(copy_time(0, 1), 0);
    }
}
