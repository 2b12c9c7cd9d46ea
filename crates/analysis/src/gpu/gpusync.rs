//! GPUSync blocking bounds (seed 004, Appendix A), suspension-oblivious.
//!
//! A cluster of `m` CPUs and `g` GPUs has ρ tokens per GPU (an R²DGLP
//! instance); a token holder then locks the engines it needs (FIFO engine
//! locks, DGLs or nested requests for GPU-to-GPU copies).
//!
//! - Lemma 1: execution-engine blockers per request N^E = ρ − 1
//!   ([`n_exec`]).
//! - Lemma 2: copy-engine blockers per request, one copy engine at a time
//!   (migrations through system memory), N^C_sys = ρ − 1.
//! - Lemma 3: with DGLs for peer copies, N^C_dgl = ρg − 1.
//! - Lemma 4: with nested requests, N^C_nest — see [`n_copy`] for the
//!   re-derived closed form.
//! - Theorem 1 ([`engine_blocking`]): ⌈d_i/c⌉·N^C·L^C_max + N^E·e_i·L^E_max.
//! - Lemma 5 ([`token_hold_time`]): THT_i = ⌈d_i/c⌉(N^C+1)L^C_max +
//!   e_i(N^E+1)L^E_max + L^P_max.
//! - Theorem 2 ([`token_blocking`]): (2⌈m/(ρg)⌉ − 1)·THT_max.
//! - Theorem 3 ([`total_blocking`]): Theorem 2 + Theorem 1.
//! - Discussion ([`best_rho`]): choose ρ to minimise ⌈m/(ρg)⌉·N^C.
//!
//! # Where the seed text is re-derived
//! - **Lemma 4.** The seed's proof sums Σ_{i=1}^{ρg}(i − 1) = ρg(ρg − 1)/2
//!   but states (ρg − 1)(ρg − 2)/2, which is smaller than Lemma 3's ρg − 1
//!   for ρg ∈ {2, 3} although footnote 13 and the text say nested requests
//!   are never better than DGLs. We use the sum as written, ρg(ρg − 1)/2,
//!   which is ≥ ρg − 1 for every ρg ≥ 1 (so DGL ≤ nested always holds).
//! - **e_i in Lemma 5 and Theorem 3.** Theorem 1 charges N^E blockers per
//!   execution-engine request (N^E·e_i·L^E_max); Lemma 5 and Theorem 3 drop
//!   the factor e_i. A job with e_i requests holds its token through all of
//!   them, so we keep e_i everywhere: Lemma 5 becomes e_i(N^E+1)L^E_max and
//!   Theorem 3 adds Theorem 1 unchanged. For e_i = 1 both equal the seed.
//! - **⌈d_i/c⌉.** The seed treats a job's data as one transfer of d_i
//!   bytes. Input, output and state are separate copies, each chunked on
//!   its own, so callers pass the number of copy-engine requests
//!   ([`copy_requests`]: Σ ⌈size/c⌉ over the non-empty transfers), which is
//!   ≥ ⌈d_i/c⌉ and equals it for a single transfer.
//!
//! Everything is integer nanoseconds with saturating arithmetic (a bound
//! that overflows is `Time::MAX`, i.e. "no useful bound").

use serde::Serialize;

use crate::task::Time;

/// How GPU-to-GPU (peer) copies lock copy engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CopyLocking {
    /// At most one copy engine at a time: migrations go through system
    /// memory (Lemma 2).
    SystemMemory,
    /// Peer copies lock both copy engines atomically with a DGL (Lemma 3).
    Dgl,
    /// Peer copies nest the second copy-engine lock (Lemma 4).
    Nested,
}

/// One cluster's GPUSync configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GpuSyncConfig {
    /// CPUs m in the cluster.
    pub cpus: u32,
    /// GPUs g in the cluster.
    pub gpus: u32,
    /// Tokens per GPU ρ (≥ 1).
    pub rho: u32,
    pub copy_locking: CopyLocking,
}

/// The cluster-wide maxima of Appendix A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct GpuSyncMaxima {
    /// L^C_max: longest single copy-engine request (one chunk).
    pub copy: Time,
    /// L^E_max: longest single execution-engine request (one kernel).
    pub exec: Time,
    /// L^P_max: longest CPU time a job runs while holding a token.
    pub cpu: Time,
}

/// One task's GPU request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct GpuSyncRequest {
    /// Copy-engine requests per job (⌈d_i/c⌉, see [`copy_requests`]).
    pub copy_requests: u64,
    /// Execution-engine requests per job e_i.
    pub exec_requests: u64,
}

/// Lemma 1: N^E = ρ − 1.
pub fn n_exec(rho: u32) -> u64 {
    rho.saturating_sub(1) as u64
}

/// Lemmas 2-4: copy-engine blockers per copy-engine request.
pub fn n_copy(cfg: &GpuSyncConfig) -> u64 {
    let rho = cfg.rho as u64;
    let rg = rho * cfg.gpus as u64;
    match cfg.copy_locking {
        CopyLocking::SystemMemory => rho.saturating_sub(1),
        CopyLocking::Dgl => rg.saturating_sub(1),
        // Re-derived (module docs): Σ_{i=1}^{ρg} (i − 1) = ρg(ρg − 1)/2.
        CopyLocking::Nested => rg * rg.saturating_sub(1) / 2,
    }
}

/// Number of copy-engine requests for the given transfers with chunk size
/// `chunk` (`None` = unchunked: one request per non-empty transfer).
pub fn copy_requests(transfers: &[u64], chunk: Option<u64>) -> u64 {
    transfers
        .iter()
        .filter(|&&b| b > 0)
        .map(|&b| match chunk {
            Some(c) if c > 0 => b.div_ceil(c),
            _ => 1,
        })
        .sum()
}

/// Time to move `bytes` at `bytes_per_sec`, rounded up to whole ns.
/// `Time::MAX` when the bandwidth is 0 and there is something to move.
pub fn transfer_time(bytes: u64, bytes_per_sec: u64) -> Time {
    if bytes == 0 {
        return 0;
    }
    if bytes_per_sec == 0 {
        return Time::MAX;
    }
    let ns = (bytes as u128 * 1_000_000_000).div_ceil(bytes_per_sec as u128);
    ns.min(Time::MAX as u128) as Time
}

fn sat(x: u128) -> Time {
    x.min(Time::MAX as u128) as Time
}

/// Theorem 1: engine blocking ⌈d_i/c⌉·N^C·L^C_max + N^E·e_i·L^E_max.
pub fn engine_blocking(cfg: &GpuSyncConfig, req: &GpuSyncRequest, max: &GpuSyncMaxima) -> Time {
    let copy = req.copy_requests as u128 * n_copy(cfg) as u128 * max.copy as u128;
    let exec = n_exec(cfg.rho) as u128 * req.exec_requests as u128 * max.exec as u128;
    sat(copy + exec)
}

/// Lemma 5 (with e_i, see module docs): the token hold time
/// ⌈d_i/c⌉(N^C+1)L^C_max + e_i(N^E+1)L^E_max + L^P_max.
pub fn token_hold_time(cfg: &GpuSyncConfig, req: &GpuSyncRequest, max: &GpuSyncMaxima) -> Time {
    let copy = req.copy_requests as u128 * (n_copy(cfg) as u128 + 1) * max.copy as u128;
    let exec = req.exec_requests as u128 * (n_exec(cfg.rho) as u128 + 1) * max.exec as u128;
    sat(copy + exec + max.cpu as u128)
}

/// The factor 2⌈m/(ρg)⌉ − 1 of Theorem 2 (R²DGLP token blocking in
/// units of THT_max). No GPU or no token: `u64::MAX` (never granted).
pub fn token_blocking_factor(cfg: &GpuSyncConfig) -> u64 {
    let rg = cfg.rho as u64 * cfg.gpus as u64;
    if rg == 0 {
        return u64::MAX;
    }
    2 * (cfg.cpus as u64).div_ceil(rg) - 1
}

/// Theorem 2: token blocking (2⌈m/(ρg)⌉ − 1)·THT_max. With m ≤ ρg the
/// factor is 1: a request waits at most one hold time (R²DGLP).
pub fn token_blocking(cfg: &GpuSyncConfig, tht_max: Time) -> Time {
    let f = token_blocking_factor(cfg);
    if f == u64::MAX {
        return Time::MAX;
    }
    sat(f as u128 * tht_max as u128)
}

/// Theorem 2 for allocators without the R²DGLP's priority donation, as
/// `rtgpu simulate` and `rtgpu run` implement it: `users` GPU-using tasks
/// share the k = ρg tokens. Without donation nothing keeps more than m
/// requests from being queued at once (seed 004 §4.2 inherits that limit
/// from the R²DGLP), so Theorem 2 alone does not hold: three jobs on one
/// CPU that each run briefly and then request the one token queue up
/// behind each other, and the third waits two hold times against
/// Theorem 2's one (`crates/sim/tests/gpu_soundness.rs`). A task has at
/// most one request queued (its jobs run in order), so a new request finds
/// at most `users − 1` others in the FIFO queues, and no request joins a
/// queue ahead of it. It joins either the queue with the fewest requests
/// (shortest-queue rule, or the earliest-completion rule with every queue
/// full), which holds at most ⌊(users − 1)/k⌋, or, under the
/// earliest-completion rule, a queue holding fewer than ⌈m/k⌉
/// (`rtgpu_policy::token::r2dglp_queue_cap`), at most 2⌈m/k⌉ − 1 in
/// Theorem 2's terms. Each request ahead holds its token at most THT_max:
/// max(2⌈m/k⌉ − 1, ⌊(users − 1)/k⌋)·THT_max, Theorem 2 whenever
/// users ≤ m (then ⌊(users − 1)/k⌋ ≤ ⌈m/k⌉ − 1).
pub fn token_blocking_without_donation(cfg: &GpuSyncConfig, users: u32, tht_max: Time) -> Time {
    let k = cfg.rho as u64 * cfg.gpus as u64;
    if k == 0 {
        return Time::MAX;
    }
    let crowd = sat((users.saturating_sub(1) as u64 / k) as u128 * tht_max as u128);
    token_blocking(cfg, tht_max).max(crowd)
}

/// Per-task GPUSync bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct GpuSyncBlocking {
    /// Theorem 2.
    pub token_blocking: Time,
    /// Theorem 1.
    pub engine_blocking: Time,
    /// Lemma 5 for this task.
    pub token_hold_time: Time,
    /// Theorem 3 = token + engine blocking.
    pub total: Time,
}

/// Theorem 3 for every request of a cluster: THT_max is the largest
/// [`token_hold_time`] over `requests`.
pub fn total_blocking(
    cfg: &GpuSyncConfig,
    requests: &[GpuSyncRequest],
    max: &GpuSyncMaxima,
) -> Vec<GpuSyncBlocking> {
    let thts: Vec<Time> = requests
        .iter()
        .map(|r| token_hold_time(cfg, r, max))
        .collect();
    let tht_max = thts.iter().copied().max().unwrap_or(0);
    let tb = token_blocking(cfg, tht_max);
    requests
        .iter()
        .zip(thts)
        .map(|(r, tht)| {
            let eb = engine_blocking(cfg, r, max);
            GpuSyncBlocking {
                token_blocking: tb,
                engine_blocking: eb,
                token_hold_time: tht,
                total: tb.saturating_add(eb),
            }
        })
        .collect()
}

/// The Discussion of Appendix A: the ρ in `1..=max_rho` minimising
/// ⌈m/(ρg)⌉·N^C (ties to the smaller ρ), with that value.
pub fn best_rho(cpus: u32, gpus: u32, copy_locking: CopyLocking, max_rho: u32) -> (u32, u64) {
    (1..=max_rho.max(1))
        .map(|rho| {
            let cfg = GpuSyncConfig {
                cpus,
                gpus,
                rho,
                copy_locking,
            };
            let rg = (rho as u64 * gpus as u64).max(1);
            (rho, (cpus as u64).div_ceil(rg) * n_copy(&cfg))
        })
        .min_by_key(|&(rho, v)| (v, rho))
        .unwrap_or((1, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg(cpus: u32, gpus: u32, rho: u32, copy_locking: CopyLocking) -> GpuSyncConfig {
        GpuSyncConfig {
            cpus,
            gpus,
            rho,
            copy_locking,
        }
    }

    #[test]
    fn lemmas_1_to_4_by_hand() {
        // ρ = 2, g = 4: N^E = 1, N^C_sys = 1, N^C_dgl = 7,
        // N^C_nest = 8·7/2 = 28.
        assert_eq!(n_exec(2), 1);
        assert_eq!(n_copy(&cfg(6, 4, 2, CopyLocking::SystemMemory)), 1);
        assert_eq!(n_copy(&cfg(6, 4, 2, CopyLocking::Dgl)), 7);
        assert_eq!(n_copy(&cfg(6, 4, 2, CopyLocking::Nested)), 28);
        // ρ = 1, g = 1: nobody else holds a token.
        assert_eq!(n_exec(1), 0);
        assert_eq!(n_copy(&cfg(6, 1, 1, CopyLocking::Nested)), 0);
        // ρg = 2: the seed's printed (ρg−1)(ρg−2)/2 = 0 would be below
        // DGL's 1; the re-derived sum gives 1.
        assert_eq!(n_copy(&cfg(6, 1, 2, CopyLocking::Nested)), 1);
        assert_eq!(n_copy(&cfg(6, 1, 2, CopyLocking::Dgl)), 1);
    }

    #[test]
    fn chunking_counts_requests_per_transfer() {
        // 512 KiB in, 512 KiB out, 6.5 MB state with 2 MiB chunks:
        // 1 + 1 + ⌈6_500_000/2_097_152⌉ = 1 + 1 + 4 = 6.
        assert_eq!(
            copy_requests(&[524_288, 524_288, 6_500_000], Some(2_097_152)),
            6
        );
        assert_eq!(copy_requests(&[524_288, 0, 6_500_000], None), 2);
        // 1 MB at 1 GB/s = 1 ms.
        assert_eq!(transfer_time(1_000_000, 1_000_000_000), 1_000_000);
        // 1 byte at 3 B/s = 333_333_333.3 ns → rounded up.
        assert_eq!(transfer_time(1, 3), 333_333_334);
    }

    #[test]
    fn theorems_by_hand() {
        // m = 6, g = 4, ρ = 2, DGL: N^C = 7, N^E = 1.
        // Task: 6 copy requests, 4 kernels; L^C = 400 µs, L^E = 4 ms,
        // L^P = 2 ms.
        let c = cfg(6, 4, 2, CopyLocking::Dgl);
        let r = GpuSyncRequest {
            copy_requests: 6,
            exec_requests: 4,
        };
        let mx = GpuSyncMaxima {
            copy: 400_000,
            exec: 4_000_000,
            cpu: 2_000_000,
        };
        // Thm 1: 6·7·0.4 ms + 1·4·4 ms = 16.8 + 16 = 32.8 ms.
        assert_eq!(engine_blocking(&c, &r, &mx), 32_800_000);
        // Lemma 5: 6·8·0.4 + 4·2·4 + 2 = 19.2 + 32 + 2 = 53.2 ms.
        assert_eq!(token_hold_time(&c, &r, &mx), 53_200_000);
        // Thm 2: ⌈6/8⌉ = 1 → factor 1.
        assert_eq!(token_blocking(&c, 53_200_000), 53_200_000);
        // m = 12, g = 2, ρ = 2: ⌈12/4⌉ = 3 → factor 5.
        assert_eq!(token_blocking_factor(&cfg(12, 2, 2, CopyLocking::Dgl)), 5);
        // Without donation: Theorem 2 until the users outnumber the CPUs.
        let single = cfg(1, 1, 1, CopyLocking::SystemMemory);
        assert_eq!(token_blocking_without_donation(&single, 1, 10), 10);
        assert_eq!(token_blocking_without_donation(&single, 3, 10), 20);
        let wide = cfg(12, 2, 2, CopyLocking::Dgl);
        assert_eq!(token_blocking_without_donation(&wide, 12, 10), 50);
        assert_eq!(token_blocking_without_donation(&wide, 30, 10), 70);
        let all = total_blocking(&c, &[r], &mx);
        assert_eq!(all[0].total, 53_200_000 + 32_800_000);
        // With e_i = 1 Lemma 5 is the seed's formula exactly.
        let one = GpuSyncRequest {
            copy_requests: 1,
            exec_requests: 1,
        };
        assert_eq!(
            token_hold_time(&c, &one, &mx),
            8 * 400_000 + 2 * 4_000_000 + 2_000_000
        );
        // No GPU: never granted.
        assert_eq!(
            token_blocking(&cfg(6, 0, 2, CopyLocking::Dgl), 1),
            Time::MAX
        );
    }

    #[test]
    fn best_rho_follows_the_discussion() {
        // m = 6, g = 4, DGL: ρ=1 → ⌈6/4⌉·3 = 6; ρ=2 → 1·7 = 7; ρ=3 → 1·11.
        assert_eq!(best_rho(6, 4, CopyLocking::Dgl, 3), (1, 6));
        // System memory: ρ = 1 gives N^C = 0.
        assert_eq!(best_rho(6, 4, CopyLocking::SystemMemory, 3), (1, 0));
    }

    proptest! {
        #[test]
        fn dgl_never_above_nested_and_monotone(
            cpus in 1u32..64, gpus in 1u32..9, rho in 1u32..5,
            copies in 0u64..20, execs in 0u64..10,
            lc in 0u64..1_000_000, le in 0u64..10_000_000, lp in 0u64..10_000_000,
            extra in 1u64..1_000_000,
        ) {
            let mx = GpuSyncMaxima { copy: lc, exec: le, cpu: lp };
            let r = GpuSyncRequest { copy_requests: copies, exec_requests: execs };
            let d = cfg(cpus, gpus, rho, CopyLocking::Dgl);
            let n = cfg(cpus, gpus, rho, CopyLocking::Nested);
            let s = cfg(cpus, gpus, rho, CopyLocking::SystemMemory);
            prop_assert!(n_copy(&s) <= n_copy(&d));
            prop_assert!(n_copy(&d) <= n_copy(&n));
            prop_assert!(engine_blocking(&d, &r, &mx) <= engine_blocking(&n, &r, &mx));
            prop_assert!(token_hold_time(&d, &r, &mx) <= token_hold_time(&n, &r, &mx));
            // More requests or longer sections never lower a bound.
            let r2 = GpuSyncRequest { copy_requests: copies + 1, exec_requests: execs + 1 };
            prop_assert!(engine_blocking(&d, &r2, &mx) >= engine_blocking(&d, &r, &mx));
            let mx2 = GpuSyncMaxima { copy: lc + extra, exec: le + extra, cpu: lp + extra };
            prop_assert!(token_hold_time(&d, &r, &mx2) >= token_hold_time(&d, &r, &mx));
            // More CPUs (tasks contending) never lower token blocking.
            let more = cfg(cpus + 1, gpus, rho, CopyLocking::Dgl);
            prop_assert!(token_blocking(&more, 1000) >= token_blocking(&d, 1000));
            // Adding a request to the cluster never lowers anyone's bound.
            let base = total_blocking(&d, &[r], &mx);
            let bigger = total_blocking(&d, &[r, r2], &mx);
            prop_assert!(bigger[0].total >= base[0].total);
        }
    }
}
