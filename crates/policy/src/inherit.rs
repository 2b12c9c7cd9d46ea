//! Effective priorities under GPUSync's inheritance rules.
//!
//! - A token holder inherits the highest priority waiting in its token
//!   queue (seed 000 App. A, R2; the R²DGLP's inheritance, seed 004 §4.2).
//! - "A job that holds an engine lock may inherit the priority of any job it
//!   blocks. Priority inheritance relations from the R²DGLP may propagate to
//!   an engine holder" (seed 004 §4.2): an engine holder inherits the
//!   *effective* priority of every job waiting on a lock it holds, and that
//!   waiter's effective priority includes what it inherits from its own
//!   token queue.
//!
//! Waiters of engine locks hold tokens and wait on at most one lock (or one
//! DGL), so chains are short; the recursion is bounded by `depth` anyway.

use crate::engine_lock::EngineLocks;
use crate::token::TokenAllocator;
use crate::Prio;
use crate::{JobId, LOWEST};

/// `base` gives each job's own priority (e.g. its deadline or FP rank).
pub fn effective_priority(
    job: JobId,
    base: &impl Fn(JobId) -> Prio,
    tokens: &TokenAllocator,
    locks: &EngineLocks,
) -> Prio {
    effective(job, base, tokens, locks, 4)
}

/// klmirqd: the priority of GPU `gpu`'s interrupt and completion threads,
/// the most urgent effective priority (`effective`, e.g.
/// [`effective_priority`]) among the GPU's token holders; `None` when nobody
/// holds the GPU. Seed 000 §IV: "a priority inherited by a GPU holder must
/// be propagated immediately to any klmirqd thread executing on its
/// behalf"; with ρ > 1 one thread serves every holder, so it takes the
/// most urgent of them (otherwise an urgent holder's bottom half can wait
/// behind a co-holder's at the co-holder's priority). The runtime's arbiter
/// and the simulator both use this rule.
pub fn gpu_owner_priority(
    tokens: &TokenAllocator,
    gpu: usize,
    mut effective: impl FnMut(JobId) -> Prio,
) -> Option<Prio> {
    tokens
        .tokens_of(gpu)
        .filter_map(|t| tokens.holder(t))
        .map(&mut effective)
        .min()
}

fn effective(
    job: JobId,
    base: &impl Fn(JobId) -> Prio,
    tokens: &TokenAllocator,
    locks: &EngineLocks,
    depth: u8,
) -> Prio {
    let mut p = base(job).min(tokens.inherited(job).unwrap_or(LOWEST));
    if depth == 0 {
        return p;
    }
    for l in locks.held_by(job) {
        for (w, _) in locks.waiters(l) {
            if w != job {
                p = p.min(effective(w, base, tokens, locks, depth - 1));
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine_lock::Engine;
    use crate::predictor::CostPredictor;
    use crate::token::{Config, QueueRule, Request};

    /// One GPU with two tokens (rho = 2) under `rule`.
    fn two_tokens(rule: QueueRule) -> TokenAllocator {
        TokenAllocator::new(
            Config {
                gpus: 1,
                tokens_per_gpu: 2,
                rule,
                stealing: true,
                queue_cap: usize::MAX,
            },
            Vec::new(),
            CostPredictor::default(),
        )
    }

    /// Base priorities of the scenarios: 3 is the most urgent.
    fn base(j: JobId) -> Prio {
        match j {
            1 => 90,
            2 => 80,
            3 => 5,
            _ => 99,
        }
    }

    fn r(job: JobId) -> Request {
        Request {
            job,
            task: 0,
            prio: base(job),
            hold: 10,
            last_gpu: None,
            static_gpu: 0,
        }
    }

    #[test]
    fn token_inheritance_propagates_to_engine_holder() {
        // One GPU, rho = 2: jobs 1 and 2 hold tokens, job 3 waits for a
        // token behind job 2; job 1 holds the execution engine, job 2 waits
        // for it. Job 1 must run at job 3's priority.
        let mut t = two_tokens(QueueRule::ShortestQueue);
        t.request(&r(1), 0);
        t.request(&r(2), 0);
        t.request(&r(3), 0); // queue of token 0 (job 1) on the tie
        let mut l = EngineLocks::new(&[1]);
        let e = l.lock_id(0, Engine::Exec);
        l.request(1, 90, &[e]);
        l.request(2, 80, &[e]);
        // Job 3 waits in job 1's token queue: job 1 inherits 5 directly.
        assert_eq!(effective_priority(1, &base, &t, &l), 5);
        assert_eq!(effective_priority(2, &base, &t, &l), 80);
        assert_eq!(effective_priority(3, &base, &t, &l), 5);
        // The GPU's klmirqd thread: the most urgent of holders 1 (5,
        // inherited) and 2 (80); nobody holds a GPU that does not exist.
        let eff = |j| effective_priority(j, &base, &t, &l);
        assert_eq!(gpu_owner_priority(&t, 0, eff), Some(5));
        assert_eq!(t.tokens_of(0), 0..2);
        assert_eq!(gpu_owner_priority(&t, 1, eff), None);
    }

    #[test]
    fn engine_holder_inherits_waiters_token_inheritance() {
        let mut t = two_tokens(QueueRule::LOblivious { max_hold: 1 });
        t.request(&r(1), 0); // token 0
        t.request(&r(2), 0); // token 1
                             // Put job 3 behind job 2 explicitly: make token 0's queue longer.
        t.request(&r(9), 0); // token 0 queue
        t.request(&r(3), 0); // token 1 queue (shorter)
        let mut l = EngineLocks::new(&[1]);
        let e = l.lock_id(0, Engine::Exec);
        l.request(1, 90, &[e]);
        l.request(2, 80, &[e]);
        assert_eq!(t.inherited(2), Some(5));
        // Job 1 blocks job 2, which inherits 5 from its token queue.
        assert_eq!(effective_priority(1, &base, &t, &l), 5);
    }
}
