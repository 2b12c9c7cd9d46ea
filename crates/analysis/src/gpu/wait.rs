//! Request-counted GPU waits: how many token holds can really be ahead of a
//! job, and the longest wait they make (the suspension-aware method of
//! `rtgpu analyze`, [`crate::workload`]).
//!
//! The seeds bound a GPU wait by a count of *maximal* holds: the k-FMLP by
//! the longest critical sections (seed 000 App. A), GPUSync by
//! (2⌈m/k⌉ − 1)·THT_max (seed 004 App. A, Theorem 2, from the R²DGLP).
//! Both count requests that cannot all be ahead of one job at once. Our
//! allocators ([`rtgpu_policy::token`]) have only FIFO token queues, and
//! their stealing (R3) only moves a waiter *out* of a queue, so:
//!
//! - **One request per task.** A task's jobs run one after another (its
//!   thread takes the next job when the previous one completes), and a job
//!   makes one token request. So at most one request of each other task is
//!   queued at any time, and nothing joins a FIFO queue ahead of a waiter:
//!   the requests a job can wait behind are those present in its queue when
//!   it joined, at most one per other task of its GPU pool.
//! - **Queue length.** Which queue it joins bounds how many there are
//!   ([`requests_ahead`]): the fewest-requests rules give ⌊(N − 1)/k⌋ for
//!   N users of k tokens (every queue holds at least as many as the chosen
//!   one, and all of them are other tasks' requests); GPUSync's
//!   earliest-completion rule joins a queue under the R²DGLP length, in
//!   our allocator ⌈min(m, N)/k⌉ (`rtgpu_policy::token::pool_queue_cap`:
//!   at most one pending request per core and per task), so at most that
//!   minus one ahead, or, with every queue full, the shortest.
//!   Never more than N − 1.
//! - **Which holds.** The wait is at most the sum of the `n` longest holds
//!   of the *other* tasks, each counted once ([`longest_sum`]): the
//!   request-driven count of Patel et al. (RTAS 2018) specialised to one
//!   request per job, where it coincides with the job-driven one. The
//!   R²DGLP's O(m/k) term enters through the queue length ⌈m/k⌉; it is no
//!   ceiling of its own here, since without priority donation more than m
//!   requests can be queued (`gpusync::token_blocking_without_donation`).
//!
//! A hold is the holder's own GPU work plus what it waits for inside its
//! section (engine blocking, seed 004 Theorem 1), its completion
//! interrupts, its CPU work inside the section, and the stretch of
//! `crate::workload` where its bottom halves may wait for a CPU.
//! What the hold's *CPU* part means for the waiter's analysis (it runs at
//! the waiter's priority, inherited) is the driver's business; this
//! module only counts.

use crate::task::Time;

/// How a GPU pool's token allocator picks a queue, as far as counting
/// requests ahead is concerned (`rtgpu_policy::token::QueueRule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueChoice {
    /// The queue with the fewest requests among `tokens` queues (static
    /// assignment among its GPU's ρ tokens, GPUSync without affinity).
    Shortest { tokens: u64 },
    /// GPUSync's earliest estimated completion among the `tokens` queues
    /// holding fewer than `cap` requests (the R²DGLP length ⌈m/k⌉), the
    /// shortest when all are full.
    EarliestUnderCap { tokens: u64, cap: u64 },
}

/// How many requests (holder included) can be ahead of a job's request in
/// its queue when `users` tasks (the job's own included) share the queues.
pub fn requests_ahead(choice: QueueChoice, users: u64) -> u64 {
    let others = users.saturating_sub(1);
    match choice {
        QueueChoice::Shortest { tokens } => others / tokens.max(1),
        QueueChoice::EarliestUnderCap { tokens, cap } => {
            let full = others / tokens.max(1);
            others.min(full.max(cap.saturating_sub(1)))
        }
    }
}

/// The sum of the `n` largest values (all of them when there are fewer),
/// saturating.
pub fn longest_sum(values: &[Time], n: u64) -> Time {
    if n as usize >= values.len() {
        return values.iter().fold(0, |a, &v| a.saturating_add(v));
    }
    let mut v = values.to_vec();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v[..n as usize]
        .iter()
        .fold(0, |a: Time, &x| a.saturating_add(x))
}

/// A request-counted wait and the CPU time inside it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CountedWait {
    /// How many holds can be ahead.
    pub ahead: u64,
    /// The wait: the `ahead` longest holds of the other tasks.
    pub wait: Time,
    /// The most CPU time those holds can contain (the `ahead` largest CPU
    /// parts; it runs while the waiter waits, at its priority or above).
    pub cpu: Time,
    /// Which of the `others` the wait counts (indices, longest first).
    pub from: Vec<usize>,
}

/// The wait of a request that finds at most `ahead` of the other tasks'
/// holds before it; `others` are (hold, CPU part of the hold) of every
/// other task that shares the queues, each counted at most once.
pub fn wait_bound(others: &[(Time, Time)], ahead: u64) -> CountedWait {
    let holds: Vec<Time> = others.iter().map(|o| o.0).collect();
    let cpus: Vec<Time> = others.iter().map(|o| o.1).collect();
    let mut order: Vec<usize> = (0..others.len()).collect();
    order.sort_by(|&a, &b| others[b].0.cmp(&others[a].0).then(a.cmp(&b)));
    order.truncate(ahead.min(others.len() as u64) as usize);
    CountedWait {
        ahead: ahead.min(others.len() as u64),
        wait: longest_sum(&holds, ahead),
        cpu: longest_sum(&cpus, ahead),
        from: order,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_queue_counts_floor_of_others_over_tokens() {
        let c = QueueChoice::Shortest { tokens: 2 };
        assert_eq!(requests_ahead(c, 1), 0);
        assert_eq!(requests_ahead(c, 2), 0);
        assert_eq!(requests_ahead(c, 3), 1);
        assert_eq!(requests_ahead(c, 6), 2);
        // One token: every other task.
        assert_eq!(requests_ahead(QueueChoice::Shortest { tokens: 1 }, 5), 4);
    }

    #[test]
    fn earliest_completion_is_capped_by_users_and_queue_length() {
        // The demo: 3 users, 1 token, m = 4 (cap 4): 2 ahead, not 3.
        let c = QueueChoice::EarliestUnderCap { tokens: 1, cap: 4 };
        assert_eq!(requests_ahead(c, 3), 2);
        // Many users, cap 2 on 4 tokens: a queue under the cap has at most
        // one ahead; with all full the shortest holds ⌊(N − 1)/k⌋.
        let c = QueueChoice::EarliestUnderCap { tokens: 4, cap: 2 };
        assert_eq!(requests_ahead(c, 3), 1);
        assert_eq!(requests_ahead(c, 13), 3);
    }

    #[test]
    fn longest_sum_takes_the_largest_each_once() {
        assert_eq!(longest_sum(&[3, 9, 1, 7], 2), 16);
        assert_eq!(longest_sum(&[3, 9], 5), 12);
        assert_eq!(longest_sum(&[], 3), 0);
        assert_eq!(longest_sum(&[Time::MAX, 1], 2), Time::MAX);
    }

    #[test]
    fn wait_bound_counts_holds_and_cpu_separately() {
        // The longest holds need not have the largest CPU parts.
        let w = wait_bound(&[(10, 1), (8, 5), (2, 2)], 2);
        assert_eq!(w.wait, 18);
        assert_eq!(w.cpu, 7);
        assert_eq!(w.ahead, 2);
        assert_eq!(w.from, vec![0, 1]);
        // Nobody else: no wait.
        assert_eq!(wait_bound(&[], 3), CountedWait::default());
    }
}
