//! Priority inheritance: a job's effective priority (its own, or the most
//! urgent it inherits through its token queue and the engine locks it
//! holds; seed 000 R2 / seed 004 §4.2), the policy core's
//! `effective_priority` without its scans, cached per job and per GPU's
//! holders, and invalidated up the chain of lock holders when something it
//! depends on changes.

use rtgpu_policy::inherit::effective_priority;
use rtgpu_policy::token::TokenAllocator;
use rtgpu_policy::{JobId, LOWEST};

use super::{Engine, Phase};

/// Recursion depth of effective priorities (that of
/// `rtgpu_policy::inherit::effective_priority`).
pub(super) const INHERIT_DEPTH: u8 = 4;

impl Engine {
    /// The owner's effective priority: its own, or the most urgent it
    /// inherits through its token queue and the engine locks it holds (the
    /// policy core's rule, seed 000 R2 / seed 004 §4.2, the same the
    /// runtime's arbiter applies).
    #[inline(always)]
    pub(super) fn owner_key(&mut self, i: u32) -> u64 {
        let (key, fresh) = self.peek_owner_key(i);
        if fresh {
            self.jobs[i as usize].key_cache = Some(key);
        }
        key
    }

    /// [`Self::owner_key`] without storing into the cache: the key, and
    /// whether it was computed here (the cache was stale).
    #[inline(always)]
    pub(super) fn peek_owner_key(&self, i: u32) -> (u64, bool) {
        let iu = i as usize;
        let cached = self.jobs[iu].key_cache;
        if let Some(k) = cached {
            if !cfg!(debug_assertions) {
                return (k, false);
            }
        }
        let Some(group) = self.s.tasks[iu].gpu.as_ref().map(|gt| gt.group) else {
            return (self.threads[iu].key, false);
        };
        let key = self.effective_key(i, &self.allocators[group], INHERIT_DEPTH);
        debug_assert_eq!(
            key,
            effective_priority(
                i as JobId,
                &|j: JobId| self.threads[j as usize].key,
                &self.allocators[group],
                &self.locks,
            ),
            "effective_key agrees with the policy core"
        );
        debug_assert!(cached.is_none_or(|k| k == key), "stale key cache");
        (key, true)
    }

    /// Job `i`'s effective priority may have moved (its key, its token, its
    /// engine-lock requests, its token queue or the locks it holds
    /// changed): drops its cached key and, when it is in a GPU section, its
    /// GPU's holder key, and marks that GPU's interrupt thread for
    /// re-keying; then the same, `depth` levels up, for the holders of the
    /// locks it waits on, which inherit its effective priority
    /// ([`Self::effective_key`]: a job's priority reaches
    /// [`INHERIT_DEPTH`] holders up the chain). Only those can move: a
    /// job's effective priority depends on its own state, the base
    /// priorities in its token queue and the effective priorities of the
    /// waiters of the locks it holds. Debug builds recompute every key
    /// asked for and check any cached one.
    #[inline]
    pub(super) fn invalidate(&mut self, i: usize, depth: u8) {
        self.jobs[i].key_cache = None;
        let j = &self.jobs[i];
        if j.phase == Phase::Gpu {
            let g = j.section_gpu;
            self.holder_key[g] = None;
            self.irq_dirty[g / 64] |= 1 << (g % 64);
        }
        // (A job that starts, depth 0, reads none of its section's state.)
        let waiting = || {
            (j.reqs[0].is_some() && !j.held[0])
                || (j.reqs[1].is_some() && !j.held[1])
                || (j.gpu_lock.is_some() && !j.held[2])
        };
        if depth > 0 && waiting() {
            self.invalidate_up(i, depth);
        }
    }

    /// Job `i` and the holders up the chain from it (`hops` more) now also
    /// inherit `c`: a job that holds no lock joined the queue of a lock `i`
    /// holds. Such a job's effective priority is `c` at every recursion
    /// depth, and [`Self::effective_key`] of a job `k` hops up (`k` <=
    /// [`INHERIT_DEPTH`]) reaches it at depth `INHERIT_DEPTH - k`: the new
    /// priorities are the old ones' minimum with `c`, so cached ones are
    /// lowered instead of dropped (debug builds recompute and check them).
    pub(super) fn inherit_more(&mut self, i: usize, c: u64, hops: u8) {
        if let Some(k) = self.jobs[i].key_cache {
            if c < k {
                self.jobs[i].key_cache = Some(c);
            }
        }
        let j = &self.jobs[i];
        if j.phase == Phase::Gpu {
            let g = j.section_gpu;
            // A token holder's GPU's holder key is the minimum over them.
            if j.has_token {
                if let Some(Some(v)) = self.holder_key[g] {
                    if c < v {
                        self.holder_key[g] = Some(Some(c));
                    }
                }
            }
            self.irq_dirty[g / 64] |= 1 << (g % 64);
        }
        if hops == 0 {
            return;
        }
        self.for_waited_holders(i, |e, h| e.inherit_more(h, c, hops - 1));
    }

    /// [`Self::invalidate`]'s pass up the chain: the holders of the locks
    /// job `i` waits on.
    #[inline(never)]
    pub(super) fn invalidate_up(&mut self, i: usize, depth: u8) {
        self.for_waited_holders(i, |e, h| e.invalidate(h, depth - 1));
    }

    /// Calls `f` on each holder (other than `i`) of the locks job `i` waits
    /// on, in the order of its requests, each lock once per request.
    #[inline(always)]
    pub(super) fn for_waited_holders(&mut self, i: usize, mut f: impl FnMut(&mut Self, usize)) {
        let j = &self.jobs[i];
        let waits = [
            (j.reqs[0].is_some() && !j.held[0], j.req_locks[0]),
            (j.reqs[1].is_some() && !j.held[1], j.req_locks[1]),
            (j.gpu_lock.is_some() && !j.held[2], [j.gpu_lock_id; 2]),
        ];
        for (waiting, locks) in waits {
            if !waiting {
                continue;
            }
            for (n, &l) in locks.iter().enumerate() {
                if n == 1 && l == locks[0] {
                    continue;
                }
                if let Some(h) = self.locks.holder(l) {
                    if h as usize != i {
                        f(self, h as usize);
                    }
                }
            }
        }
    }

    /// Job `i` got its token (or its vGPU's GPU) for a new section: its
    /// effective priority may have moved. It holds no engine lock yet
    /// (every lock of its last section was released), so it inherits only
    /// through its token queue, from nobody when no one waits there: then
    /// its effective priority is its own, cached at once.
    pub(super) fn fresh_section_key(&mut self, i: usize) {
        self.invalidate(i, INHERIT_DEPTH);
        let j = &self.jobs[i];
        debug_assert!(!j.held.contains(&true), "no lock held at a section's start");
        let group = self.s.tasks[i].gpu.as_ref().map_or(0, |gt| gt.group);
        if !j.has_token || self.allocators[group].queue_len(j.token) <= 1 {
            self.jobs[i].key_cache = Some(self.threads[i].key);
        }
    }

    /// `rtgpu_policy::inherit::effective_priority` (same rule, same
    /// recursion depth, same allocator `tokens` throughout), without its
    /// scans: a job that holds no token inherits nothing from a token queue
    /// (`inherited` would return `None`), nor does a holder from a queue
    /// where no one waits, and the locks a job holds are those of its own
    /// satisfied requests (`Job::held`), so no lock of any GPU is scanned
    /// for its holder; a lock with no request queued behind the head has no
    /// waiters to pass a priority on.
    /// The policy core's version took more than half of the GPU
    /// workload's run time, called on every lock change for every GPU
    /// with a bottom half in progress.
    pub(super) fn effective_key(&self, job: u32, tokens: &TokenAllocator, depth: u8) -> u64 {
        let ju = job as usize;
        let j = &self.jobs[ju];
        let mut p = self.threads[ju].key;
        // Only a queue with someone waiting behind the holder passes a
        // priority on (`queue_len` counts the holder).
        if j.has_token && tokens.queue_len(j.token) > 1 {
            p = p.min(tokens.inherited(job as JobId).unwrap_or(LOWEST));
        }
        // (Most jobs asked for hold no lock.)
        if depth == 0 || !(j.held[0] || j.held[1] || j.held[2]) {
            return p;
        }
        // The locks of its satisfied requests are the locks it holds (a
        // lock seen twice only repeats a minimum).
        let held = [
            (j.held[0], j.req_locks[0][0]),
            (j.held[0], j.req_locks[0][1]),
            (j.held[1], j.req_locks[1][0]),
            (j.held[2], j.gpu_lock_id),
        ];
        for (n, &(h, l)) in held.iter().enumerate() {
            // No waiters behind a lone head; a one-lock request names its
            // lock twice.
            if !h || (n == 1 && l == held[0].1) || self.locks.queue_len(l) <= 1 {
                continue;
            }
            debug_assert_eq!(self.locks.holder(l), Some(job as JobId), "held flags");
            // It holds `l`: its waiters are the requests behind its own.
            for (w, _) in self.locks.queued(l).skip(1) {
                if w != job as JobId {
                    p = p.min(self.effective_key(w, tokens, depth - 1));
                }
            }
        }
        p
    }
}
