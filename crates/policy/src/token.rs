//! GPU allocation as one k-exclusion lock over GPU tokens.
//!
//! Every allocator here is the same machine with a different queue rule:
//! `g` GPUs, ρ tokens per GPU (k = ρ·g), one FIFO queue per token whose head
//! holds the token (seed 004 §4.2, Fig. 3; seed 000 App. A with ρ = 1).
//!
//! - [`QueueRule::Static`]: the request names its GPU; among that GPU's
//!   tokens the queue with the fewest requests.
//! - [`QueueRule::LAware`] / [`QueueRule::LOblivious`]: k-FMLP rule R1 (seed
//!   000 App. A): the queue with the minimum worst-case wait
//!   `wait_x(t) = Σ_{R_j ∈ FIFO_x} l_j` (l-aware) or `max{l}·|FIFO_x|`
//!   (l-oblivious).
//! - [`QueueRule::EarliestCompletion`]: GPUSync's modified R²DGLP (seed 004
//!   §4.2, Fig. 4): the queue that gives the earliest estimated completion,
//!   queue length measured in time (each request weighted by its predicted
//!   cost on that GPU) plus the request's own predicted cost there,
//!   including the migration from the task's previous GPU.
//! - [`QueueRule::ShortestQueue`]: the standard R²DGLP choice, fewest
//!   requests, for comparison.
//!
//! Holders inherit the highest priority waiting in their queue (R2, see
//! [`TokenAllocator::inherited`]). On release the next request in the same
//! queue is granted (R3); if that queue is empty and stealing is on, the
//! highest-priority waiting request of any queue is stolen (R3, footnote 18:
//! stealing does not affect worst-case blocking but keeps the allocator
//! work-conserving).

use std::collections::VecDeque;

use crate::predictor::CostPredictor;
use crate::{JobId, Prio, Time};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueRule {
    Static,
    /// [`QueueRule::Static`] with each queue ordered by priority (FIFO
    /// among equal priorities) instead of arrival.
    StaticPriority,
    LAware,
    LOblivious {
        max_hold: Time,
    },
    EarliestCompletion,
    ShortestQueue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub gpus: usize,
    /// ρ (>= 1).
    pub tokens_per_gpu: usize,
    pub rule: QueueRule,
    /// R3 request stealing when a token's queue is empty.
    pub stealing: bool,
    /// [`QueueRule::EarliestCompletion`]: a request joins only a queue that
    /// holds fewer requests than this (holder included), the R²DGLP's
    /// bound on its FIFO queues ([`r2dglp_queue_cap`]); when no queue has
    /// room, the one with the fewest requests. `usize::MAX`: no cap.
    pub queue_cap: usize,
}

/// ⌈m/k⌉: the length of the R²DGLP's FIFO token queues with m CPUs and k
/// tokens (seed 004 §4.2 builds on the R²DGLP, whose blocking bound,
/// Theorem 2's (2⌈m/k⌉ − 1)·THT, needs no queue longer). GPUSync's
/// earliest-completion choice may pick a queue with more requests than
/// the shortest (Fig. 3), but only one under this length, or its requests
/// could wait behind any number of others.
pub fn r2dglp_queue_cap(cpus: usize, tokens: usize) -> usize {
    cpus.div_ceil(tokens.max(1)).max(1)
}

impl From<rtgpu_model::GpuAllocator> for QueueRule {
    /// The queue rule of a workload file's `gpu_allocator`: `static`,
    /// `static-priority`, `k-fmlp` (l-aware), `gpusync-affinity` (earliest
    /// estimated completion, seed 004 §4.1) and `gpusync` (shortest queue).
    fn from(a: rtgpu_model::GpuAllocator) -> QueueRule {
        use rtgpu_model::GpuAllocator as A;
        match a {
            A::Static => QueueRule::Static,
            A::StaticPriority => QueueRule::StaticPriority,
            A::KFmlp => QueueRule::LAware,
            A::GpuSync { affinity: true } => QueueRule::EarliestCompletion,
            A::GpuSync { affinity: false } => QueueRule::ShortestQueue,
        }
    }
}

impl Config {
    /// The token allocator a workload's `policy` asks for on a GPU pool of
    /// `gpus` GPUs and `cores` CPUs used by `users` tasks: its queue rule,
    /// ρ (1 under the k-FMLP), the k-FMLP's request stealing and the queue
    /// cap ([`pool_queue_cap`]). The simulator and `rtgpu run` alike.
    pub fn of_policy(
        policy: &rtgpu_model::Policy,
        gpus: usize,
        cores: usize,
        users: usize,
    ) -> Config {
        let tokens_per_gpu = policy.tokens() as usize;
        Config {
            gpus,
            tokens_per_gpu,
            rule: policy.gpu_allocator.into(),
            stealing: policy.request_stealing(),
            queue_cap: pool_queue_cap(cores, users, gpus * tokens_per_gpu),
        }
    }
}

/// The queue length of a pool of `cores` CPUs whose `users` tasks request
/// its `tokens` tokens: the R²DGLP's ⌈m/k⌉ ([`r2dglp_queue_cap`]) with m
/// the most requests that can be pending at once, one per core and one per
/// task (a task has at most one request queued): min(cores, users). The
/// analysis counts the requests ahead of a job from the same length
/// (`rtgpu_analysis::gpu::wait`).
pub fn pool_queue_cap(cores: usize, users: usize, tokens: usize) -> usize {
    r2dglp_queue_cap(cores.min(users.max(1)), tokens)
}

/// A request for a GPU token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub job: JobId,
    /// Task index, for the cost predictor.
    pub task: usize,
    pub prio: Prio,
    /// Worst-case hold length l (k-FMLP l-aware rule: the request's whole
    /// critical section, migration included); also the fallback cost
    /// estimate.
    pub hold: Time,
    /// GPU this task used last (migration distance origin).
    pub last_gpu: Option<usize>,
    /// GPU for [`QueueRule::Static`].
    pub static_gpu: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The token is held now; go on to the engines of `gpu`.
    Granted { gpu: usize, token: usize },
    /// Enqueued; suspend until a [`Grant`] names this job.
    Queued { gpu: usize, token: usize },
}

/// A token handed to a waiting job on a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub job: JobId,
    pub gpu: usize,
    pub token: usize,
    /// Whether it was stolen from another token's queue (R3).
    pub stolen: bool,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    job: JobId,
    task: usize,
    prio: Prio,
    hold: Time,
    last_gpu: Option<usize>,
    /// Predicted cost on this queue's GPU.
    cost: Time,
    /// When it was granted (holder) or enqueued.
    since: Time,
}

#[derive(Debug, Clone)]
struct Queue {
    gpu: usize,
    holder: Option<Entry>,
    waiting: VecDeque<Entry>,
}

impl Queue {
    /// Requests in the queue, its holder included.
    fn len(&self) -> usize {
        self.holder.is_some() as usize + self.waiting.len()
    }
}

/// The token allocator (one per cluster / NUMA node, seed 004 §4.2).
#[derive(Debug, Clone)]
pub struct TokenAllocator {
    cfg: Config,
    queues: Vec<Queue>,
    /// Row-major `gpus × gpus` migration distances.
    distance: Vec<u32>,
    predictor: CostPredictor,
}

impl TokenAllocator {
    /// `distance[a * gpus + b]` is the migration distance from GPU a to b
    /// (`rtgpu_model::Platform::migration_distance`); an empty vector means
    /// 0 on the diagonal and 1 elsewhere.
    pub fn new(cfg: Config, distance: Vec<u32>, predictor: CostPredictor) -> TokenAllocator {
        let rho = cfg.tokens_per_gpu.max(1);
        let queues = (0..cfg.gpus * rho)
            .map(|k| Queue {
                gpu: k / rho,
                holder: None,
                waiting: VecDeque::new(),
            })
            .collect();
        TokenAllocator {
            cfg: Config {
                tokens_per_gpu: rho,
                ..cfg
            },
            queues,
            distance,
            predictor,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    pub fn tokens(&self) -> usize {
        self.queues.len()
    }

    pub fn gpu_of_token(&self, token: usize) -> usize {
        self.queues.get(token).map_or(0, |q| q.gpu)
    }

    pub fn predictor(&self) -> &CostPredictor {
        &self.predictor
    }

    pub fn predictor_mut(&mut self) -> &mut CostPredictor {
        &mut self.predictor
    }

    /// Migration distance from `from` (None: first allocation, class 0).
    pub fn distance(&self, from: Option<usize>, to: usize) -> u32 {
        match from {
            None => 0,
            Some(a) if a == to => 0,
            Some(a) => self
                .distance
                .get(a * self.cfg.gpus + to)
                .copied()
                .unwrap_or(1),
        }
    }

    fn cost_on(&self, task: usize, hold: Time, last_gpu: Option<usize>, gpu: usize) -> Time {
        let d = self.distance(last_gpu, gpu);
        match self.predictor.estimate(task, d) {
            0 => hold,
            e => e,
        }
    }

    /// Estimated time until queue `q` drains (holder's remaining cost plus
    /// every waiting request's cost), in the rule's unit.
    fn wait(&self, q: &Queue, now: Time) -> Time {
        let count = q.len() as u64;
        match self.cfg.rule {
            QueueRule::Static | QueueRule::StaticPriority | QueueRule::ShortestQueue => count,
            QueueRule::LOblivious { max_hold } => max_hold.saturating_mul(count),
            // seed 000 App. A: wait_x(t) = Σ_{R_j ∈ FIFO_x} l_j, the holder's
            // whole l included (a worst case, not an estimate of what is
            // left: a holder past its expected length may still run l).
            QueueRule::LAware => {
                let h = q.holder.map_or(0, |e| e.hold);
                q.waiting.iter().fold(h, |s, e| s.saturating_add(e.hold))
            }
            QueueRule::EarliestCompletion => {
                let h = q
                    .holder
                    .map_or(0, |e| e.cost.saturating_sub(now.saturating_sub(e.since)));
                q.waiting.iter().fold(h, |s, e| s.saturating_add(e.cost))
            }
        }
    }

    /// Which token queue `r` joins (R1 / seed 004 Fig. 4).
    pub fn choose(&self, r: &Request, now: Time) -> usize {
        if self.cfg.rule == QueueRule::EarliestCompletion {
            return self.choose_earliest(r, now);
        }
        let fixed = matches!(self.cfg.rule, QueueRule::Static | QueueRule::StaticPriority);
        self.least(r, |q| {
            (!fixed || q.gpu == r.static_gpu).then(|| self.wait(q, now))
        })
    }

    /// [`Self::choose`] under [`QueueRule::EarliestCompletion`], the rule
    /// decided once instead of per queue (GPUSync's allocator asks on every
    /// GPU section).
    fn choose_earliest(&self, r: &Request, now: Time) -> usize {
        let cap = self.cfg.queue_cap;
        if self.queues.iter().all(|q| q.len() >= cap) {
            // Every queue full: the fewest requests, as the standard R²DGLP.
            return self.least(r, |q| Some(q.len() as u64));
        }
        // The request's own cost on a GPU, computed once for the GPU's
        // tokens (consecutive queues).
        let mut cost_for = (usize::MAX, 0);
        self.least(r, |q| {
            if q.len() >= cap {
                return None;
            }
            if cost_for.0 != q.gpu {
                cost_for = (q.gpu, self.cost_on(r.task, r.hold, r.last_gpu, q.gpu));
            }
            Some(self.wait(q, now).saturating_add(cost_for.1))
        })
    }

    /// The queue of least `key` (`None`: `r` may not join it). Ties go to
    /// the GPU with the fewest requests over all its tokens (with ρ > 1 an
    /// empty queue on a GPU whose other token is held shares its engines;
    /// one on an idle GPU does not), then stay on `r`'s previous GPU, then
    /// take the lowest index; with no queue to join (a static GPU out of
    /// range) the first.
    #[inline(always)]
    fn least(&self, r: &Request, mut key: impl FnMut(&Queue) -> Option<u64>) -> usize {
        let rho = self.cfg.tokens_per_gpu;
        let mut best = (u64::MAX, usize::MAX, true, usize::MAX);
        for (k, q) in self.queues.iter().enumerate() {
            let Some(key) = key(q) else {
                continue;
            };
            if key > best.0 {
                continue;
            }
            let on_gpu = if rho > 1 {
                let first = k - k % rho;
                self.queues[first..first + rho].iter().map(Queue::len).sum()
            } else {
                0
            };
            let away = r.last_gpu != Some(q.gpu);
            if (key, on_gpu, away, k) < best {
                best = (key, on_gpu, away, k);
            }
        }
        if best.3 == usize::MAX {
            0
        } else {
            best.3
        }
    }

    /// R1: enqueue on the chosen queue; granted at once when it is empty.
    pub fn request(&mut self, r: &Request, now: Time) -> Decision {
        let token = self.choose(r, now);
        let gpu = self.gpu_of_token(token);
        let cost = self.cost_on(r.task, r.hold, r.last_gpu, gpu);
        let entry = Entry {
            job: r.job,
            task: r.task,
            prio: r.prio,
            hold: r.hold,
            last_gpu: r.last_gpu,
            cost,
            since: now,
        };
        let Some(q) = self.queues.get_mut(token) else {
            // No GPUs at all: nothing to grant. The host must not request.
            return Decision::Queued { gpu, token };
        };
        if q.holder.is_none() {
            q.holder = Some(entry);
            Decision::Granted { gpu, token }
        } else {
            if self.cfg.rule == QueueRule::StaticPriority {
                // Behind every waiter at least as urgent (smaller key).
                let at = q.waiting.partition_point(|e| e.prio <= entry.prio);
                q.waiting.insert(at, entry);
            } else {
                q.waiting.push_back(entry);
            }
            Decision::Queued { gpu, token }
        }
    }

    /// R3: `job` frees its token; the next request of that queue, or a
    /// stolen one, is granted. `None` if `job` held no token or nobody waits.
    pub fn release(&mut self, job: JobId, now: Time) -> Option<Grant> {
        let token = self.held_by(job)?;
        let gpu = self.queues[token].gpu;
        self.queues[token].holder = None;
        if let Some(mut next) = self.queues[token].waiting.pop_front() {
            next.since = now;
            self.queues[token].holder = Some(next);
            return Some(Grant {
                job: next.job,
                gpu,
                token,
                stolen: false,
            });
        }
        if !self.cfg.stealing {
            return None;
        }
        // Highest priority waiting anywhere (earliest enqueued on ties).
        let mut best: Option<(Prio, Time, usize, usize)> = None;
        for (k, q) in self.queues.iter().enumerate() {
            for (i, e) in q.waiting.iter().enumerate() {
                let key = (e.prio, e.since, k, i);
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            }
        }
        let (_, _, k, i) = best?;
        let mut e = self.queues[k].waiting.remove(i)?;
        e.cost = self.cost_on(e.task, e.hold, e.last_gpu, gpu);
        e.since = now;
        self.queues[token].holder = Some(e);
        Some(Grant {
            job: e.job,
            gpu,
            token,
            stolen: true,
        })
    }

    /// The job [`Self::release`] by `job` would grant from its own queue
    /// (R3's first case, FIFO), without changing anything; `None` when
    /// `job` holds no token or its queue is empty (a steal then depends on
    /// every queue and is decided at the release). New requests join at
    /// the back, so the answer holds until `job` or its successor leaves;
    /// the cross-process daemon publishes it for one-hop hand-offs.
    pub fn successor(&self, job: JobId) -> Option<JobId> {
        let q = &self.queues[self.held_by(job)?];
        q.waiting.front().map(|e| e.job)
    }

    /// `job` leaves the allocator, whatever its state (a client that died or
    /// gave up): a held token is released as by [`Self::release`] (its grant
    /// returned); a waiting request is removed from its queue.
    pub fn cancel(&mut self, job: JobId, now: Time) -> Option<Grant> {
        if self.held_by(job).is_some() {
            return self.release(job, now);
        }
        for q in &mut self.queues {
            q.waiting.retain(|e| e.job != job);
        }
        None
    }

    /// The tokens of GPU `gpu` (a GPU's ρ tokens are consecutive).
    #[inline]
    pub fn tokens_of(&self, gpu: usize) -> std::ops::Range<usize> {
        let rho = self.cfg.tokens_per_gpu;
        (gpu * rho).min(self.queues.len())..((gpu + 1) * rho).min(self.queues.len())
    }

    /// The token `job` holds, if any.
    pub fn held_by(&self, job: JobId) -> Option<usize> {
        self.queues
            .iter()
            .position(|q| q.holder.is_some_and(|e| e.job == job))
    }

    #[inline]
    pub fn holder(&self, token: usize) -> Option<JobId> {
        self.queues.get(token)?.holder.map(|e| e.job)
    }

    /// Requests in token `token`'s queue, holder included.
    #[inline]
    pub fn queue_len(&self, token: usize) -> usize {
        self.queues
            .get(token)
            .map_or(0, |q| q.holder.is_some() as usize + q.waiting.len())
    }

    /// R2: the highest priority (smallest key) waiting in the queue of the
    /// token `job` holds, if any job waits there.
    pub fn inherited(&self, job: JobId) -> Option<Prio> {
        let q = &self.queues[self.held_by(job)?];
        q.waiting.iter().map(|e| e.prio).min()
    }

    /// Whether `job` waits in some token queue.
    pub fn is_waiting(&self, job: JobId) -> bool {
        self.queues
            .iter()
            .any(|q| q.waiting.iter().any(|e| e.job == job))
    }

    /// Update the priority a queued or holding request carries (EDF jobs
    /// keep theirs; FP hosts call this when inheritance changes a base).
    pub fn set_priority(&mut self, job: JobId, prio: Prio) {
        let ordered = self.cfg.rule == QueueRule::StaticPriority;
        for q in &mut self.queues {
            if let Some(h) = q.holder.as_mut().filter(|e| e.job == job) {
                h.prio = prio;
            }
            let mut changed = false;
            for e in q.waiting.iter_mut().filter(|e| e.job == job) {
                e.prio = prio;
                changed = true;
            }
            if ordered && changed {
                // Stable: FIFO among equal priorities stays.
                q.waiting.make_contiguous().sort_by_key(|e| e.prio);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(job: JobId, prio: Prio, hold: Time) -> Request {
        Request {
            job,
            task: job as usize,
            prio,
            hold,
            last_gpu: None,
            static_gpu: 0,
        }
    }

    fn kfmlp(k: usize, rule: QueueRule) -> TokenAllocator {
        TokenAllocator::new(
            Config {
                gpus: k,
                tokens_per_gpu: 1,
                rule,
                stealing: true,
                queue_cap: usize::MAX,
            },
            Vec::new(),
            CostPredictor::default(),
        )
    }

    #[test]
    fn r1_grants_free_resources_then_queues_on_min_wait() {
        let mut a = kfmlp(2, QueueRule::LAware);
        assert_eq!(
            a.request(&req(1, 5, 100), 0),
            Decision::Granted { gpu: 0, token: 0 }
        );
        assert_eq!(
            a.request(&req(2, 5, 10), 0),
            Decision::Granted { gpu: 1, token: 1 }
        );
        // wait_0 = 100, wait_1 = 10: the l-aware rule picks queue 1.
        assert_eq!(
            a.request(&req(3, 5, 50), 0),
            Decision::Queued { gpu: 1, token: 1 }
        );
        // Now wait_1 = 10 + 50 = 60 < 100, at any time: the holder's whole
        // l counts (seed 000 App. A), not what is left of it.
        assert_eq!(
            a.request(&req(4, 5, 50), 90),
            Decision::Queued { gpu: 1, token: 1 }
        );
    }

    #[test]
    fn l_oblivious_counts_requests() {
        let mut a = kfmlp(2, QueueRule::LOblivious { max_hold: 100 });
        a.request(&req(1, 5, 100), 0);
        a.request(&req(2, 5, 10), 0);
        a.request(&req(3, 5, 50), 0); // tie 100/100: lowest index
        assert_eq!(a.queue_len(0), 2);
        assert_eq!(
            a.request(&req(4, 5, 50), 0),
            Decision::Queued { gpu: 1, token: 1 }
        );
    }

    #[test]
    fn r2_holder_inherits_highest_waiting_priority() {
        let mut a = kfmlp(1, QueueRule::LAware);
        a.request(&req(1, 50, 10), 0);
        assert_eq!(a.inherited(1), None);
        a.request(&req(2, 30, 10), 0);
        a.request(&req(3, 10, 10), 0);
        assert_eq!(a.inherited(1), Some(10));
        assert!(a.is_waiting(3));
        assert_eq!(a.inherited(2), None); // not a holder
    }

    #[test]
    fn r3_fifo_handoff_then_stealing() {
        let mut a = kfmlp(2, QueueRule::LAware);
        a.request(&req(1, 5, 100), 0); // q0
        a.request(&req(2, 5, 100), 0); // q1
        a.request(&req(3, 9, 10), 0); // q0 (tie, lowest)
        a.request(&req(4, 1, 10), 0); // q1
        a.request(&req(5, 0, 10), 0); // q0 behind 3
                                      // FIFO in q0, not priority order: 3 before 5.
        assert_eq!(a.successor(1), Some(3));
        let g = a.release(1, 100);
        assert_eq!(
            g,
            Some(Grant {
                job: 3,
                gpu: 0,
                token: 0,
                stolen: false
            })
        );
        // q1 empties after 2 -> 4; when 4 releases, q1 is empty and the
        // highest-priority waiter (5, in q0) is stolen.
        assert_eq!(a.successor(2), Some(4));
        assert_eq!(a.release(2, 100).map(|g| g.job), Some(4));
        // A steal is decided at the release, never previewed.
        assert_eq!(a.successor(4), None);
        let g = a.release(4, 110).expect("steal");
        assert_eq!((g.job, g.gpu, g.stolen), (5, 1, true));
        assert!(!a.is_waiting(5));
        assert_eq!(a.holder(1), Some(5));
        assert_eq!(a.release(42, 0), None);
        assert_eq!(a.successor(42), None);
    }

    #[test]
    fn no_stealing_leaves_queue_idle() {
        let mut a = TokenAllocator::new(
            Config {
                gpus: 2,
                tokens_per_gpu: 1,
                rule: QueueRule::ShortestQueue,
                stealing: false,
                queue_cap: usize::MAX,
            },
            Vec::new(),
            CostPredictor::default(),
        );
        a.request(&req(1, 5, 1), 0);
        a.request(&req(2, 5, 1), 0);
        a.request(&req(3, 5, 1), 0); // q0
        assert_eq!(a.release(2, 1), None);
        assert_eq!(a.holder(1), None);
        assert!(a.is_waiting(3));
    }

    /// seed 004 Fig. 4: a shorter queue on another GPU loses to a longer
    /// one on the GPU the task has affinity with, because migrating costs
    /// more than the queue difference.
    #[test]
    fn gpusync_earliest_estimated_completion_keeps_affinity() {
        // Task 0 costs 10 at distance 0 and 50 at distance 1+.
        let predictor = CostPredictor::new(&[[10, 50, 50, 50], [20, 20, 20, 20]]);
        let mut a = TokenAllocator::new(
            Config {
                gpus: 2,
                tokens_per_gpu: 1,
                rule: QueueRule::EarliestCompletion,
                stealing: true,
                queue_cap: usize::MAX,
            },
            vec![0, 1, 1, 0],
            predictor.clone(),
        );
        // Occupy GPU0 with task 1 for 20, GPU1 with task 1 too but only 5 left.
        let mut other = req(9, 5, 20);
        other.task = 1;
        a.request(&other, 0); // q0, cost 20
        let mut other2 = req(8, 5, 20);
        other2.task = 1;
        a.request(&other2, 0); // q1
                               // At t = 15: q0 has 5 left, q1 has 5 left. Task 0 last ran on GPU0:
                               // completion on GPU0 = 5 + 10, on GPU1 = 5 + 50.
        let mut r = req(1, 5, 10);
        r.task = 0;
        r.last_gpu = Some(1);
        assert_eq!(
            a.request(&r, 15),
            Decision::Queued { gpu: 1, token: 1 },
            "affinity with GPU1"
        );
        // The same with shortest-queue ignores affinity: lowest index.
        let mut b = TokenAllocator::new(
            Config {
                gpus: 2,
                tokens_per_gpu: 1,
                rule: QueueRule::ShortestQueue,
                stealing: true,
                queue_cap: usize::MAX,
            },
            vec![0, 1, 1, 0],
            predictor,
        );
        b.request(&other, 0);
        b.request(&other2, 0);
        r.last_gpu = None;
        assert_eq!(b.request(&r, 15), Decision::Queued { gpu: 0, token: 0 });
    }

    /// The earliest-completion rule joins only queues under the R²DGLP's
    /// length ⌈m/k⌉; with every queue at it, the one with the fewest
    /// requests, whatever affinity says.
    #[test]
    fn gpusync_affinity_stays_under_the_r2dglp_queue_length() {
        assert_eq!(r2dglp_queue_cap(6, 8), 1);
        assert_eq!(r2dglp_queue_cap(12, 4), 3);
        assert_eq!(r2dglp_queue_cap(0, 0), 1);
        // Task 0 costs 10 on its own GPU and 1,000 after a migration.
        let predictor = CostPredictor::new(&[[10, 1_000, 1_000, 1_000]; 8]);
        let mut a = TokenAllocator::new(
            Config {
                gpus: 2,
                tokens_per_gpu: 1,
                rule: QueueRule::EarliestCompletion,
                stealing: false,
                queue_cap: r2dglp_queue_cap(2, 2),
            },
            vec![0, 1, 1, 0],
            predictor,
        );
        let mut r = req(1, 5, 10);
        r.last_gpu = Some(0);
        assert_eq!(a.request(&r, 0), Decision::Granted { gpu: 0, token: 0 });
        // GPU0's queue is full (cap 1): affinity would wait there (10 + 10
        // against 1,000), as it does without the cap; the cap sends it to
        // the idle GPU1.
        let mut r2 = req(2, 5, 10);
        r2.last_gpu = Some(0);
        let mut uncapped = a.clone();
        uncapped.cfg.queue_cap = usize::MAX;
        assert_eq!(
            uncapped.request(&r2, 0),
            Decision::Queued { gpu: 0, token: 0 }
        );
        assert_eq!(a.request(&r2, 0), Decision::Granted { gpu: 1, token: 1 });
        // Both full: the fewest requests (a tie: its previous GPU).
        let mut r3 = req(3, 5, 10);
        r3.last_gpu = Some(1);
        assert_eq!(a.request(&r3, 0), Decision::Queued { gpu: 1, token: 1 });
        let mut r4 = req(4, 5, 10);
        r4.last_gpu = Some(1);
        assert_eq!(a.request(&r4, 0), Decision::Queued { gpu: 0, token: 0 });
    }

    #[test]
    fn gpusync_rho_tokens_per_gpu() {
        let mut a = TokenAllocator::new(
            Config {
                gpus: 2,
                tokens_per_gpu: 2,
                rule: QueueRule::EarliestCompletion,
                stealing: true,
                queue_cap: usize::MAX,
            },
            Vec::new(),
            CostPredictor::default(),
        );
        assert_eq!(a.tokens(), 4);
        let gpus: Vec<usize> = (0..4)
            .map(|j| match a.request(&req(j, 1, 10), 0) {
                Decision::Granted { gpu, .. } => gpu,
                Decision::Queued { .. } => 99,
            })
            .collect();
        // Ties spread over the GPUs before sharing one.
        assert_eq!(gpus, vec![0, 1, 0, 1]);
        assert!(matches!(
            a.request(&req(5, 1, 10), 0),
            Decision::Queued { .. }
        ));
    }

    #[test]
    fn static_rule_stays_on_its_gpu() {
        let mut a = TokenAllocator::new(
            Config {
                gpus: 3,
                tokens_per_gpu: 1,
                rule: QueueRule::Static,
                stealing: false,
                queue_cap: usize::MAX,
            },
            Vec::new(),
            CostPredictor::default(),
        );
        let mut r = req(1, 1, 10);
        r.static_gpu = 2;
        assert_eq!(a.request(&r, 0), Decision::Granted { gpu: 2, token: 2 });
        r.job = 2;
        assert_eq!(a.request(&r, 0), Decision::Queued { gpu: 2, token: 2 });
    }

    #[test]
    fn static_priority_queue_serves_the_most_urgent_waiter_first() {
        let mut a = TokenAllocator::new(
            Config {
                gpus: 1,
                tokens_per_gpu: 1,
                rule: QueueRule::StaticPriority,
                stealing: false,
                queue_cap: usize::MAX,
            },
            Vec::new(),
            CostPredictor::default(),
        );
        // Holder 1; then waiters 2 (prio 5), 3 (prio 9), 4 (prio 2), 5 (prio 5).
        assert!(matches!(
            a.request(&req(1, 7, 10), 0),
            Decision::Granted { .. }
        ));
        for (job, prio) in [(2, 5), (3, 9), (4, 2), (5, 5)] {
            assert!(matches!(
                a.request(&req(job, prio, 10), 0),
                Decision::Queued { .. }
            ));
        }
        // The holder inherits the most urgent waiter's priority.
        assert_eq!(a.inherited(1), Some(2));
        // Released in priority order, FIFO among equals: 4, 2, 5, 3.
        let mut order = Vec::new();
        let mut holder = 1;
        while let Some(g) = a.release(holder, 1) {
            order.push(g.job);
            holder = g.job;
        }
        assert_eq!(order, vec![4, 2, 5, 3]);
        // A waiter whose priority rises moves ahead (FIFO among equals).
        let mut a = TokenAllocator::new(*a.config(), Vec::new(), CostPredictor::default());
        a.request(&req(1, 7, 10), 0);
        a.request(&req(2, 5, 10), 0);
        a.request(&req(3, 9, 10), 0);
        a.set_priority(3, 5);
        assert_eq!(a.successor(1), Some(2));
        a.set_priority(3, 1);
        assert_eq!(a.successor(1), Some(3));
    }

    #[test]
    fn set_priority_changes_inheritance() {
        let mut a = kfmlp(1, QueueRule::LAware);
        a.request(&req(1, 50, 10), 0);
        a.request(&req(2, 30, 10), 0);
        a.set_priority(2, 3);
        assert_eq!(a.inherited(1), Some(3));
    }

    #[test]
    fn cancel_removes_a_waiter_or_releases_a_holder() {
        let cfg = Config {
            gpus: 1,
            tokens_per_gpu: 1,
            rule: QueueRule::ShortestQueue,
            stealing: false,
            queue_cap: usize::MAX,
        };
        let mut a = TokenAllocator::new(cfg, Vec::new(), CostPredictor::default());
        let req = |job| Request {
            job,
            task: 0,
            prio: 1,
            hold: 1,
            last_gpu: None,
            static_gpu: 0,
        };
        assert!(matches!(a.request(&req(1), 0), Decision::Granted { .. }));
        assert!(matches!(a.request(&req(2), 0), Decision::Queued { .. }));
        assert!(matches!(a.request(&req(3), 0), Decision::Queued { .. }));
        // Job 2 dies while waiting: it leaves the queue, nobody is granted.
        assert_eq!(a.cancel(2, 1), None);
        assert!(!a.is_waiting(2));
        // The holder dies: job 3 is next, not the departed job 2.
        assert_eq!(a.cancel(1, 2).map(|g| g.job), Some(3));
        assert_eq!(a.holder(0), Some(3));
    }
}
