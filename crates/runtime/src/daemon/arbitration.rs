//! The daemon's arbitration: its policy core (token allocator, engine
//! locks, the registered jobs) and how requests are applied to it:
//! registration, token and engine-lock requests and releases, grants and
//! refusals delivered through the clients' slots, the hand-off records it
//! arms and the successors it publishes in them, releases clients made
//! through shared memory, departed clients' holdings released, and
//! priority inheritance applied to the clients' threads.

use std::collections::HashMap;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use rtgpu_policy::engine_lock::{EngineLocks, LockGrant, ReqId};
use rtgpu_policy::inherit::effective_priority;
use rtgpu_policy::predictor::CostPredictor;
use rtgpu_policy::token::{self, Decision, TokenAllocator};
use rtgpu_policy::{JobId, Prio};

use super::connection::Conn;
use super::protocol::{
    engine_of, token_payload, Msg, ALREADY_TOKEN, BAD_THREAD, LOCK, LOCK_RELEASE, MALFORMED,
    NO_ENGINE, NO_TOKEN, PROTOCOL, REGISTER, REGISTERED, TOKEN, TOKEN_RELEASE, VERSION,
};
use super::shared::{self, Region, Successor, CLOSED, EMPTY, LOCK_RECORDS, REFUSAL, TOKEN_RECORD};
use super::DaemonStats;
use crate::arbiter::{inherited_policy, prio_of_fifo, ArbiterConfig};
use crate::os::{self, monotonic_now, SchedPolicy};

pub(super) struct Job {
    /// Slot (and connection) index.
    slot: usize,
    tid: libc::pid_t,
    /// The client's process (`SO_PEERCRED`), whose task `tid` is.
    pid: libc::pid_t,
    base: Prio,
    applied: Prio,
    own_policy: Option<SchedPolicy>,
    /// Engine-lock requests (held or waiting).
    reqs: Vec<ReqId>,
    /// Sequence number of the client's latest request: what its grant
    /// must carry.
    want: u32,
}

/// What an armed hand-off record stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Holding {
    Token(usize),
    Lock(ReqId),
}

/// A hand-off record the daemon has armed (see [`shared`]).
pub(super) struct Armed {
    job: JobId,
    slot: usize,
    record: usize,
    what: Holding,
    /// The state word the daemon last wrote (what a closing client swaps
    /// out, unless the daemon's later compare-and-swap failed).
    published: u64,
}

pub(super) struct Core {
    tokens: TokenAllocator,
    locks: EngineLocks,
    gpus: usize,
    jobs: HashMap<JobId, Job>,
    next_job: JobId,
    apply_priorities: bool,
    /// Priority changes the OS refused.
    apply_errors: u64,
    region: Region,
    armed: Vec<Armed>,
    /// Per slot, the newest sequence number used in it (a new client of
    /// the slot starts beyond it, so stale grants can never match).
    high: Vec<u32>,
    pub(super) stats: DaemonStats,
    scratch: Vec<LockGrant>,
}

impl Core {
    /// The policy core for `config`, with a fresh shared region.
    pub(super) fn new(config: &ArbiterConfig) -> io::Result<Core> {
        let gpus = config.copy_engines.len();
        let mut tcfg = config.tokens;
        tcfg.gpus = gpus;
        Ok(Core {
            tokens: TokenAllocator::new(
                tcfg,
                config.distance.clone(),
                CostPredictor::new(&config.priors),
            ),
            locks: EngineLocks::new(&config.copy_engines),
            gpus,
            jobs: HashMap::new(),
            next_job: 0,
            apply_priorities: config.apply_priorities,
            apply_errors: 0,
            region: Region::create()
                .map_err(|e| io::Error::other(format!("creating the shared region: {e}")))?,
            armed: Vec::new(),
            high: Vec::new(),
            stats: DaemonStats::default(),
            scratch: Vec::new(),
        })
    }
}

pub(super) fn handle(core: &mut Core, conns: &mut [Option<Conn>], i: usize, m: Msg) {
    let now = monotonic_now();
    let job = conns[i].as_ref().and_then(|c| c.job);
    if let Some(x) = job.and_then(|j| core.jobs.get_mut(&j)) {
        // Every blocking request carries its sequence number in d's high
        // half; the slot's newest number is kept for its next client.
        if matches!(m.op, TOKEN | LOCK) {
            x.want = (m.d >> 32) as u32;
            if let Some(h) = core.high.get_mut(x.slot) {
                *h = x.want;
            }
        }
    }
    match (m.op, job) {
        (REGISTER, None) if m.c != PROTOCOL => {
            if let Some(c) = conns[i].as_mut() {
                c.refuse_and_close(VERSION);
            }
        }
        (REGISTER, None) => {
            let tid = libc::pid_t::try_from(m.b).unwrap_or(0);
            let pid = conns[i].as_ref().map_or(0, |c| c.pid);
            // The daemon changes this thread's scheduling (as root): it
            // must be a thread of the process at the other end.
            if !thread_of(pid, tid) {
                if let Some(c) = conns[i].as_mut() {
                    c.refuse_and_close(BAD_THREAD);
                }
                return;
            }
            let j = core.next_job;
            core.next_job = core.next_job.wrapping_add(1);
            let fifo = u8::try_from(m.a).unwrap_or(1).clamp(1, 99);
            if core.high.len() <= i {
                core.high.resize(i + 1, 0);
            }
            // Far beyond every number the slot's previous clients used.
            let base = core.high[i].wrapping_add(1 << 16);
            core.high[i] = base;
            if let Some(slot) = core.region.slot(i) {
                slot.reset(base);
            }
            core.jobs.insert(
                j,
                Job {
                    slot: i,
                    tid,
                    pid,
                    base: prio_of_fifo(fifo),
                    applied: prio_of_fifo(fifo),
                    own_policy: os::sched_policy(tid).ok(),
                    reqs: Vec::new(),
                    want: base,
                },
            );
            if let Some(c) = conns[i].as_mut() {
                c.job = Some(j);
                let reply = Msg::new(
                    REGISTERED,
                    0,
                    u64::from(j),
                    core.gpus as u64,
                    (i as u64) << 32 | u64::from(base),
                );
                // The first reply on a fresh socket (a refused client is
                // closed): it fits the socket's buffer. A client that
                // cannot take it is disconnected.
                if shared::send_with_fd(c.stream.as_raw_fd(), &reply.encode(), core.region.raw_fd())
                    .is_err()
                {
                    c.dead = true;
                }
            }
        }
        (TOKEN, Some(j)) => {
            let base = core.jobs.get(&j).map_or(rtgpu_policy::LOWEST, |x| x.base);
            let last = (m.d & 0xffff_ffff)
                .checked_sub(1)
                .map(|g| g as usize)
                .filter(|&g| g < core.gpus);
            if core.tokens.held_by(j).is_some() || core.tokens.is_waiting(j) {
                refuse(core, j, ALREADY_TOKEN);
                return;
            }
            let req = token::Request {
                job: j,
                task: usize::try_from(m.c).unwrap_or(0),
                prio: base,
                hold: m.b,
                last_gpu: last,
                static_gpu: (m.a as usize).min(core.gpus.saturating_sub(1)),
            };
            if let Decision::Granted { gpu, token } = core.tokens.request(&req, now) {
                grant_token(
                    core,
                    token::Grant {
                        job: j,
                        gpu,
                        token,
                        stolen: false,
                    },
                    None,
                );
            }
        }
        (TOKEN_RELEASE, Some(j)) => {
            // a = 1: released through shared memory, drained already.
            if m.a == 0 {
                disarm_where(core, |a| a.job == j && matches!(a.what, Holding::Token(_)));
                if let Some(g) = core.tokens.release(j, now) {
                    grant_token(core, g, None);
                }
            }
        }
        (LOCK, Some(j)) => {
            let Some(gpu) = core.tokens.held_by(j).map(|t| core.tokens.gpu_of_token(t)) else {
                refuse(core, j, NO_TOKEN);
                return;
            };
            let mut ids = Vec::new();
            // Each lock is (gpu + 1) << 8 | engine; gpu + 1 = 0 means the
            // token's GPU.
            for code in [m.b, m.c].iter().take(m.a.clamp(1, 2) as usize) {
                let g = match code >> 8 {
                    0 => gpu,
                    n => usize::try_from(n - 1).unwrap_or(usize::MAX),
                };
                match engine_of(code & 0xff) {
                    Some(e) if g < core.gpus => ids.push(core.locks.lock_id(g, e)),
                    _ => {
                        refuse(core, j, NO_ENGINE);
                        return;
                    }
                }
            }
            let base = core.jobs.get(&j).map_or(rtgpu_policy::LOWEST, |x| x.base);
            let (req, granted) = core.locks.request(j, base, &ids);
            if let Some(x) = core.jobs.get_mut(&j) {
                x.reqs.push(req);
            }
            if granted {
                grant_lock(core, LockGrant { req, job: j }, None);
            }
        }
        (LOCK_RELEASE, Some(j)) => {
            let req = m.b as ReqId;
            if m.a == 0 {
                let owned = core.jobs.get_mut(&j).is_some_and(|x| {
                    let had = x.reqs.contains(&req);
                    x.reqs.retain(|&r| r != req);
                    had
                });
                if owned {
                    disarm_where(core, |a| a.job == j && a.what == Holding::Lock(req));
                    release_lock(core, req, None);
                }
            }
        }
        (_, Some(j)) => refuse(core, j, MALFORMED),
        (_, None) => {
            if let Some(c) = conns[i].as_mut() {
                c.refuse_and_close(MALFORMED);
            }
        }
    }
}

/// Whether `tid` is a thread (task) of process `pid`.
pub(super) fn thread_of(pid: libc::pid_t, tid: libc::pid_t) -> bool {
    pid > 0 && tid > 0 && std::path::Path::new(&format!("/proc/{pid}/task/{tid}")).exists()
}

/// Whether `job` holds and waits for nothing (an idle client).
pub(super) fn holds_nothing(core: &Core, job: JobId) -> bool {
    core.jobs.get(&job).is_none_or(|x| x.reqs.is_empty())
        && core.tokens.held_by(job).is_none()
        && !core.tokens.is_waiting(job)
}

/// Refuses `job`'s latest request (through its slot, where it waits).
fn refuse(core: &Core, job: JobId, code: u32) {
    if let Some(x) = core.jobs.get(&job) {
        if let Some(slot) = core.region.slot(x.slot) {
            slot.grant(x.want, REFUSAL | code);
        }
    }
}

/// Delivers a grant to `job` (a no-op if its releaser did already), after
/// arming the hand-off record of what it now holds.
fn deliver(core: &mut Core, job: JobId, what: Holding, payload: u32) {
    let Some(x) = core.jobs.get(&job) else {
        return;
    };
    let (slot, want) = (x.slot, x.want);
    arm(core, job, slot, what);
    if let Some(s) = core.region.slot(slot) {
        s.grant(want, payload);
    }
}

/// The token grant `g`; `published` is the successor word a releasing
/// client swapped out, if the grant was a one-hop hand-off.
fn grant_token(core: &mut Core, g: token::Grant, published: Option<u64>) {
    check_handoff(core, g.job, published);
    core.stats.token_grants += 1;
    deliver(
        core,
        g.job,
        Holding::Token(g.token),
        token_payload(g.gpu, g.token),
    );
}

fn grant_lock(core: &mut Core, g: LockGrant, published: Option<u64>) {
    check_handoff(core, g.job, published);
    core.stats.lock_grants += 1;
    deliver(core, g.job, Holding::Lock(g.req), g.req as u32 & !REFUSAL);
}

/// Counts a one-hop hand-off, and a mismatch with the policy core's choice.
fn check_handoff(core: &mut Core, job: JobId, published: Option<u64>) {
    let Some(next) = published.and_then(Successor::of) else {
        return;
    };
    core.stats.direct_handoffs += 1;
    if core.jobs.get(&job).map(|x| x.slot) != Some(next.slot) {
        core.stats.handoff_mismatches += 1;
    }
}

/// Releases engine-lock request `req` in the core and grants whom that
/// satisfies (with `published` as in [`grant_token`]).
fn release_lock(core: &mut Core, req: ReqId, published: Option<u64>) {
    let mut grants = std::mem::take(&mut core.scratch);
    grants.clear();
    core.locks.release(req, &mut grants);
    for g in &grants {
        // Only a release satisfying exactly one request is published.
        grant_lock(core, *g, published.filter(|_| grants.len() == 1));
    }
    core.scratch = grants;
}

/// Arms record of `slot` for `what` `job` now holds (nothing is published
/// yet: [`republish`] does that).
fn arm(core: &mut Core, job: JobId, slot: usize, what: Holding) {
    let (record, key) = match what {
        Holding::Token(t) => (Some(TOKEN_RECORD), t as u64 + 1),
        Holding::Lock(r) => (
            LOCK_RECORDS
                .into_iter()
                .find(|&k| !core.armed.iter().any(|a| a.slot == slot && a.record == k)),
            r as u64 + 1,
        ),
    };
    // A third lock held at once gets no record: its release goes through
    // the daemon.
    let (Some(record), Some(s)) = (record, core.region.slot(slot)) else {
        return;
    };
    if core
        .armed
        .iter()
        .any(|a| a.slot == slot && a.record == record)
    {
        return;
    }
    let r = &s.records[record];
    r.state.store(EMPTY, Ordering::Release);
    r.key.store(key, Ordering::Release);
    core.armed.push(Armed {
        job,
        slot,
        record,
        what,
        published: EMPTY,
    });
}

/// Disarms the records matching `which` (their holdings are released by
/// the caller through the policy core).
fn disarm_where(core: &mut Core, which: impl Fn(&Armed) -> bool) {
    let region = &core.region;
    core.armed.retain(|a| {
        if !which(a) {
            return true;
        }
        if let Some(s) = region.slot(a.slot) {
            let r = &s.records[a.record];
            r.key.store(0, Ordering::Release);
            r.state.store(EMPTY, Ordering::Release);
        }
        false
    });
}

/// Finishes every release a client made through shared memory (a record
/// it closed): the policy core releases the holding and grants its
/// successor (already woken by the client when one was published; the
/// grant is repeated, harmlessly, in case the client died before it).
/// Returns whether there was any.
pub(super) fn drain(core: &mut Core) -> bool {
    let mut any = false;
    loop {
        let region = &core.region;
        let Some(k) = core.armed.iter().position(|a| {
            region
                .slot(a.slot)
                .is_some_and(|s| s.records[a.record].state.load(Ordering::Acquire) == CLOSED)
        }) else {
            return any;
        };
        any = true;
        let a = core.armed.swap_remove(k);
        if let Some(s) = core.region.slot(a.slot) {
            let r = &s.records[a.record];
            r.key.store(0, Ordering::Release);
            r.state.store(EMPTY, Ordering::Release);
        }
        let published = Some(a.published);
        match a.what {
            Holding::Token(_) => {
                if let Some(g) = core.tokens.release(a.job, monotonic_now()) {
                    grant_token(core, g, published);
                }
            }
            Holding::Lock(req) => {
                if let Some(x) = core.jobs.get_mut(&a.job) {
                    x.reqs.retain(|&r| r != req);
                }
                release_lock(core, req, published);
            }
        }
    }
}

/// Publishes, in every armed record, the successor the policy core would
/// grant on its release now (or withdraws one that no longer would be).
/// Returns whether a publication lost to a client closing the record (the
/// caller drains and publishes again at once).
pub(super) fn republish(core: &mut Core) -> bool {
    let mut grants = std::mem::take(&mut core.scratch);
    let mut raced = false;
    // With R3's stealing on, a waiter published as one token's successor
    // can also be stolen by another token's release in the daemon, and two
    // grants would race for it: token successors are not published then
    // (their releases go through the daemon; engine locks still hand off
    // in one hop).
    let steals = core.tokens.config().stealing;
    for k in 0..core.armed.len() {
        let a = &core.armed[k];
        // (successor, its handle, whether others wait behind it)
        let next = match a.what {
            Holding::Token(_) if steals => None,
            Holding::Token(t) => core
                .tokens
                .successor(a.job)
                .map(|j| (j, 0, core.tokens.queue_len(t) > 2)),
            Holding::Lock(req) => {
                grants.clear();
                core.locks.grants_on_release(req, &mut grants);
                match grants.as_slice() {
                    [g] => Some((g.job, g.req, core.locks.waiters_behind(g.req))),
                    _ => None,
                }
            }
        };
        // The releaser rings the daemon after the hand-off only if the
        // daemon then has work that cannot wait: a priority the holder
        // inherited to undo, or a successor to publish for the new holder
        // (whose inheritance from those behind it changes too). Otherwise
        // the daemon's bookkeeping waits for its next message or poll.
        let boosted = core.jobs.get(&a.job).is_some_and(|x| x.applied != x.base);
        let word = next
            .and_then(|(j, handle, behind)| {
                let x = core.jobs.get(&j)?;
                Successor {
                    slot: x.slot,
                    want: x.want,
                    handle: u32::try_from(handle).ok()?,
                    ring: behind || boosted,
                }
                .word()
            })
            .unwrap_or(EMPTY);
        if word == a.published {
            continue;
        }
        let Some(s) = core.region.slot(a.slot) else {
            continue;
        };
        // Fails only when the holder has closed the record meanwhile: the
        // next drain finishes that release.
        if s.records[a.record]
            .state
            .compare_exchange(a.published, word, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            core.armed[k].published = word;
        } else {
            raced = true;
        }
    }
    core.scratch = grants;
    raced
}

/// Everything a departed client held or waited for is released, and the
/// next waiters granted.
fn abandon(core: &mut Core, job: JobId) {
    let Some(slot) = core.jobs.get(&job).map(|x| x.slot) else {
        return;
    };
    // Withdraw the job as anyone's published successor first, so no
    // releaser hands it anything from now on; a releaser that already did
    // has closed its record, and draining that makes the job a holder,
    // which the release below undoes.
    loop {
        let mut raced = false;
        for a in &mut core.armed {
            if Successor::of(a.published).is_some_and(|n| n.slot == slot) {
                let Some(s) = core.region.slot(a.slot) else {
                    continue;
                };
                match s.records[a.record].state.compare_exchange(
                    a.published,
                    EMPTY,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => a.published = EMPTY,
                    Err(_) => raced = true,
                }
            }
        }
        if !raced {
            break;
        }
        drain(core);
    }
    disarm_where(core, |a| a.job == job);
    let Some(x) = core.jobs.remove(&job) else {
        return;
    };
    // A thread that inherited a priority gets its own back: its process
    // may live on after closing the connection (a dropped client).
    if core.apply_priorities && x.applied != x.base && thread_of(x.pid, x.tid) {
        let own = x.own_policy.unwrap_or(SchedPolicy::Other { nice: 0 });
        if os::set_sched_policy(x.tid, inherited_policy(x.base, x.base, own)).is_err() {
            core.apply_errors += 1;
        }
    }
    for req in &x.reqs {
        release_lock(core, *req, None);
    }
    if let Some(g) = core.tokens.cancel(job, monotonic_now()) {
        grant_token(core, g, None);
    }
}

/// Applies effective priorities (seed 004 §4.2 inheritance) to the clients'
/// threads, restoring a thread's own policy when it inherits nothing.
pub(super) fn update_priorities(core: &mut Core) {
    let bases: HashMap<JobId, Prio> = core.jobs.iter().map(|(&j, x)| (j, x.base)).collect();
    let base = |j: JobId| bases.get(&j).copied().unwrap_or(rtgpu_policy::LOWEST);
    let ids: Vec<JobId> = core.jobs.keys().copied().collect();
    for j in ids {
        let eff = effective_priority(j, &base, &core.tokens, &core.locks);
        let Some(x) = core.jobs.get_mut(&j) else {
            continue;
        };
        if eff == x.applied {
            continue;
        }
        x.applied = eff;
        if core.apply_priorities {
            let own = x.own_policy.unwrap_or(SchedPolicy::Other { nice: 0 });
            let policy = inherited_policy(eff, x.base, own);
            if os::set_sched_policy(x.tid, policy).is_err() {
                core.apply_errors += 1;
            }
        }
    }
}

/// A client's connection has closed with `job` registered: counted as a
/// crash if it held or waited for anything, and [`abandon`]ed.
pub(super) fn depart(core: &mut Core, job: JobId) {
    if core.jobs.get(&job).is_some_and(|j| {
        !j.reqs.is_empty() || core.tokens.held_by(job).is_some() || core.tokens.is_waiting(job)
    }) {
        core.stats.crashed_clients += 1;
    }
    abandon(core, job);
}

/// The daemon stops: the last releases are finished, a hand-off mismatch
/// reported, and the statistics returned.
pub(super) fn finish(mut core: Core) -> DaemonStats {
    drain(&mut core);
    if core.stats.handoff_mismatches > 0 {
        eprintln!(
            "rtgpu daemon: {} one-hop hand-offs went to another job than the policy core chose (a bug; please report it)",
            core.stats.handoff_mismatches
        );
    }
    core.stats.apply_errors = core.apply_errors;
    core.stats
}
