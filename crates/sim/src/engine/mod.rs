//! The event loop.
//!
//! An event queue ordered by `(time, packed event)`; events of one instant
//! run segment ends first, then device completions, then releases. Segment
//! ends, bus completions and releases live in per-core, per-bus and
//! per-task slots of a tournament tree, the rest in a binary heap
//! ([`crate::queue`]). Stale events (a segment end after a preemption, a bus
//! completion after the bus's load changed) carry a stamp and are dropped;
//! most never reach the loop, as a new event of the same core or bus
//! replaces them in its slot.
//!
//! Threads: one per task (jobs of a task run in sequence, a late job delays
//! the next) and one interrupt thread per GPU. Each scheduling domain (a
//! core under P-FP, a cluster under C-FP/C-EDF, all cores under G-FP/G-EDF)
//! has a ready heap keyed by priority (FP key or absolute deadline, then
//! thread id); a ready thread preempts the domain's least urgent running
//! thread if it is more urgent.
//!
//! Overheads (seed 000 App. B), when the workload has any and the run
//! injects them: each job's first CPU segment is charged
//! `Δrel + Δipi + 2(Δsch + Δcxs)` (Eqs. 6, 9); each return from a GPU
//! suspension `2(Δsch + Δcxs)` per interrupt (Eq. 7); a preempted thread
//! `Δsch + Δcxs`; an interrupt's top half runs non-preemptively on the
//! GPU's interrupt core (the first core of its cluster) and freezes
//! whatever runs there (Eqs. 12-18); bottom halves per the interrupt
//! policy ([`rtgpu_policy::interrupt::plan`]). Timer ticks are not
//! simulated.
//!
//! SCHED_DEADLINE threads (CPU reservations, klmirqd's independent
//! servers) are in no domain: they run above every domain's threads under
//! global EDF on all cores, each a constant bandwidth server
//! ([`rtgpu_policy::cbs`]: wake-up rule, throttling, replenishment). A
//! ready one takes an idle core first (its last core if idle), else its
//! last core or the first core without a deadline thread, preempting what
//! runs there, else the core of the deadline thread with the latest
//! deadline if its own is earlier. A core it holds is out of its domain
//! (neither idle nor preemptible there) until it leaves. A GPU-using
//! reservation sleeps through each GPU operation and wakes at its
//! completion (after the top half, and after the bottom half where that
//! runs elsewhere) through the CBS wake-up rule, for a resume segment of
//! `2(Δsch + Δcxs)` plus, under klmirqd dependent and PAI, the bottom
//! half, which runs in its own thread and budget; the operation is done
//! when that segment ends ([`Engine::dl_owner_wake`]).

mod cpu;
mod deadline;
mod device;
mod inherit;
mod interrupts;
mod jobs;
mod locks;
mod stats;

use std::collections::VecDeque;

use rtgpu_analysis::generate::Rng;
use rtgpu_model::{GpuAllocator, InterruptHandling, PeerLocking};
use rtgpu_policy::cbs::Cbs;
use rtgpu_policy::engine_lock::{chunks, copy_time, Engine as Eng, EngineLocks, LockGrant, ReqId};
use rtgpu_policy::interrupt::{self, Handling};
use rtgpu_policy::predictor::CostPredictor;
use rtgpu_policy::token::{self, Decision, QueueRule, TokenAllocator};
use rtgpu_policy::vgpu::{VgpuConfig, VgpuPolicy, VgpuScheduler};
use rtgpu_policy::{JobId, Time};

use crate::queue::{self, EventQueue, MinTree, Slot};
use crate::setup::{fixed_irq_key, Setup};
use crate::trace::{Span, SpanKind};
use crate::{JobRecord, SimConfig, SimResult};

use deadline::{DlEntity, DL};
use device::Bus;
use inherit::INHERIT_DEPTH;
use interrupts::IrqItem;
use stats::{Buckets, Stats};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Release(u32),
    Segment(u32, u32),
    PieceStart(u32),
    TopHalfDone(u32),
    Bus(u32, u32),
    KernelDone(u32),
    VgpuTimer(u32),
    /// A throttled deadline entity's replenishment timer.
    DlTimer(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TState {
    Idle,
    Ready,
    Running(u32),
    Suspended,
}

struct Thread {
    domain: u32,
    key: u64,
    state: TState,
    remaining: Time,
    piece_left: Time,
    seg_start: Time,
    seg_len: Time,
    run_start: Time,
}

impl Thread {
    /// An idle interrupt or section thread of `domain`, keyed when it runs.
    fn idle(domain: u32) -> Thread {
        Thread {
            domain,
            key: 0,
            state: TState::Idle,
            remaining: 0,
            piece_left: Time::MAX,
            seg_start: 0,
            seg_len: 0,
            run_start: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Only,
    Pre,
    Gpu,
    Post,
}

#[derive(Debug, Clone, Copy)]
enum OpKind {
    /// Whole-GPU lock of the no-engine-locks scenarios ("e").
    GpuLock,
    Copy {
        /// Transfer time at full bandwidth of this chunk.
        work: Time,
        bus: u32,
        kind: SpanKind,
        /// Last chunk of a copy: nothing special; every chunk releases.
        engine: u32,
    },
    Kernel {
        time: Time,
        last: bool,
    },
    /// CPU work inside the section (`GpuPart::cpu`), in the job's section
    /// thread ([`Engine::section0`]).
    Cpu {
        work: Time,
    },
}

#[derive(Debug, Clone, Copy)]
struct Op {
    kind: OpKind,
    locks: [usize; 2],
    nlocks: u8,
}

struct Job {
    active: bool,
    seq: u64,
    arrival: Time,
    ready: Time,
    start: Option<Time>,
    phase: Phase,
    post_work: Time,
    piece: usize,
    blocked: Time,
    blocked_since: Option<Time>,
    gpu: Option<u32>,
    pending: VecDeque<(Time, Time)>,
    /// Entries of `pending` whose release event has happened.
    released: u32,
    next_arrival: Time,
    // GPU section
    ops: Vec<Op>,
    /// `(GPU, migration source)` that `ops` were built for.
    ops_for: Option<(usize, Option<usize>)>,
    pc: usize,
    section_gpu: usize,
    reqs: [Option<ReqId>; 2],
    /// The locks each of `reqs` names (its first lock twice when it names
    /// one): with `gpu_lock_id`, every lock the job can hold, which lets
    /// [`Engine::effective_key`] test a handful of locks instead of all.
    req_locks: [[usize; 2]; 2],
    gpu_lock: Option<ReqId>,
    gpu_lock_id: usize,
    /// Whether `reqs[0]`, `reqs[1]`, `gpu_lock` are satisfied (their locks
    /// held): set when a request is granted at once or by a release's
    /// grant, cleared when it is released.
    held: [bool; 3],
    has_token: bool,
    /// The token held while `has_token`.
    token: usize,
    token_time: Time,
    section_blocked: Time,
    op_start: Time,
    interrupts: u32,
    last_gpu: Option<usize>,
    distance: u32,
    /// A SCHED_DEADLINE owner's resume segment after an operation's
    /// completion is running or waiting for its server (phase `Gpu`):
    /// when it ends, the operation is done ([`Engine::dl_resume_done`]).
    resuming: bool,
}

struct Core {
    running: Option<u32>,
    stamp: u32,
    frozen_until: Time,
    /// Its scheduling domain.
    domain: u32,
    /// Its entry in `dom_run` and `dom_cores`.
    run: u32,
    /// Its word in `idle`.
    idle_word: u32,
    /// Its bit in that word.
    idle_bit: u64,
}

pub struct Engine {
    s: Setup,
    cfg: SimConfig,
    now: Time,
    events: EventQueue,
    rng: Rng,
    threads: Vec<Thread>,
    jobs: Vec<Job>,
    /// Per domain: one slot per thread, `(key, thread)` while it is ready
    /// there.
    ready: Vec<MinTree>,
    /// Per domain: its ready queue's minimum (`queue::EMPTY` when empty),
    /// beside the other domains' for the checks on every dispatch.
    ready_top: Vec<queue::Key>,
    cores: Vec<Core>,
    allocators: Vec<TokenAllocator>,
    locks: EngineLocks,
    grants: Vec<LockGrant>,
    req_owner: Vec<u32>,
    buses: Vec<Bus>,
    kernel_owner: Vec<Option<u32>>,
    /// Without engine locks and with ρ > 1 the driver arbitrates each
    /// engine among the token holders (as `rtgpu run` leaves it): per
    /// engine track (GPU·3 + exec, copy-in, copy-out), whether an
    /// operation runs on it and the jobs whose next operation waits for it,
    /// in submission order. Empty when not in that mode.
    driver_busy: Vec<bool>,
    driver_fifo: Vec<VecDeque<u32>>,
    vgpu_sched: Vec<Option<VgpuScheduler>>,
    vgpu_local: Vec<usize>,
    irq_items: Vec<IrqItem>,
    irq_free: Vec<u32>,
    irq_queue: Vec<VecDeque<u32>>,
    irq_current: Vec<Option<u32>>,
    handling: Handling,
    costs: interrupt::Costs,
    stats: Vec<Stats>,
    records: Vec<JobRecord>,
    inversions: Vec<Time>,
    spans: Vec<Span>,
    bucket: Time,
    buckets: Buckets,
    engine_busy: Vec<Vec<Time>>,
    core_busy: Vec<Vec<Time>>,
    vgpu_busy: Vec<Vec<Time>>,
    active_jobs: usize,
    ntasks: u32,
    /// Per domain, its words `idle_at[d]..idle_at[d + 1]`: bit k set when
    /// the domain's k-th core is idle.
    idle: Vec<u64>,
    idle_at: Vec<usize>,
    /// Per domain, its entries `run_at[d]..run_at[d + 1]`, one per core in
    /// domain order: `(key << 64 | thread + 1, end of its segment)` of the
    /// running thread (key copied at dispatch: it does not change while
    /// the thread runs), `(0, 0)` when idle.
    dom_run: Vec<(u128, Time)>,
    run_at: Vec<usize>,
    /// The cores of `dom_run`'s entries.
    dom_cores: Vec<usize>,
    /// Scratch list of the jobs whose copies a bus event completed.
    bus_done: Vec<u32>,
    /// Per job: its effective priority as last computed, `None` once
    /// something it depends on may have changed ([`Engine::invalidate`]).
    /// An interrupt's owner key is asked for at the interrupt, at its
    /// bottom half's start and on every lock or queue change; most of
    /// these asks find nothing changed since the last.
    key_cache: Vec<Option<u64>>,
    /// Per GPU: the most urgent effective priority among its token holders
    /// (`gpu_owner_priority`) as last computed, `None` when stale.
    holder_key: Vec<Option<Option<u64>>>,
    /// Bit g set when GPU g's interrupt thread key may have moved since its
    /// last re-keying: the GPUs `refresh_irq_keys` visits.
    irq_dirty: Vec<u64>,
    /// SCHED_DEADLINE threads, and per thread its entry there (`u32::MAX`
    /// for none).
    dl: Vec<DlEntity>,
    dl_of: Vec<u32>,
    /// Thread `section0 + i` runs task i's CPU work inside its GPU section
    /// (`GpuPart::cpu`) while the task's own thread is suspended, at the
    /// job's effective priority (it holds a token: waiters' priorities are
    /// inherited, as by its bottom halves), re-keyed as that moves. Such
    /// threads exist only when some task has such work.
    section0: usize,
    /// The jobs whose section thread is ready or running.
    in_section_cpu: Vec<u32>,
}

/// `class(2) | kind(3) | a(27) | b(32)`, class first so that an instant's
/// segment ends (0) come before device completions (1) and releases (2).
#[inline(always)]
fn encode(ev: Ev) -> u64 {
    let (class, kind, a, b): (u64, u64, u32, u32) = match ev {
        Ev::Segment(c, stamp) => (0, 0, c, stamp),
        Ev::Bus(bus, stamp) => (1, 1, bus, stamp),
        Ev::KernelDone(g) => (1, 2, 0, g),
        Ev::TopHalfDone(k) => (1, 3, 0, k),
        Ev::VgpuTimer(g) => (1, 4, 0, g),
        Ev::Release(i) => (2, 5, 0, i),
        Ev::PieceStart(i) => (2, 6, 0, i),
        Ev::DlTimer(e) => (1, 7, 0, e),
    };
    debug_assert!(a < 1 << 27, "core or bus index fits 27 bits");
    (class << 62) | (kind << 59) | ((a as u64 & ((1 << 27) - 1)) << 32) | b as u64
}

fn decode(code: u64) -> Ev {
    let a = ((code >> 32) & ((1 << 27) - 1)) as u32;
    let b = code as u32;
    match (code >> 59) & 7 {
        0 => Ev::Segment(a, b),
        1 => Ev::Bus(a, b),
        2 => Ev::KernelDone(b),
        3 => Ev::TopHalfDone(b),
        4 => Ev::VgpuTimer(b),
        5 => Ev::Release(b),
        6 => Ev::PieceStart(b),
        _ => Ev::DlTimer(b),
    }
}

/// Transfer time of each chunk of a `bytes` copy: the chunk's share of the
/// whole copy's time (`copy_time(end) - copy_time(start)`), so chunking
/// adds no rounding: the chunks of a copy take exactly as long as the
/// unchunked copy, as the analysis charges it.
fn chunk_times(bytes: u64, chunk: Option<u64>, bw: u64) -> impl Iterator<Item = Time> {
    let mut start = 0;
    chunks(bytes, chunk).map(move |c| {
        let t = copy_time(start + c, bw) - copy_time(start, bw);
        start += c;
        t
    })
}

/// One copy of `bytes` as a job's operations: a copy op per chunk, on
/// `bus` and `engine`, each under `locks` (lock ids, how many of them).
#[allow(clippy::too_many_arguments)]
fn push_copies(
    ops: &mut Vec<Op>,
    bytes: u64,
    chunk: Option<u64>,
    bw: u64,
    bus: u32,
    kind: SpanKind,
    engine: u32,
    (locks, nlocks): ([usize; 2], u8),
) {
    for work in chunk_times(bytes, chunk, bw) {
        ops.push(Op {
            kind: OpKind::Copy {
                work,
                bus,
                kind,
                engine,
            },
            locks,
            nlocks,
        });
    }
}

impl Engine {
    pub(crate) fn new(s: Setup, cfg: &SimConfig) -> Engine {
        let n = s.tasks.len();
        let g = s.gpus.len();
        let mut threads = Vec::with_capacity(n + g);
        for t in &s.tasks {
            threads.push(Thread {
                domain: t.pieces[0].domain as u32,
                key: t.pieces[0].key,
                state: TState::Idle,
                remaining: 0,
                piece_left: 0,
                seg_start: 0,
                seg_len: 0,
                run_start: 0,
            });
        }
        for gpu in &s.gpus {
            threads.push(Thread::idle(match s.bottom_half_server {
                Some(_) => DL,
                None => s.core_domain[gpu.irq_core] as u32,
            }));
        }
        let section0 = threads.len();
        if s.tasks
            .iter()
            .any(|t| t.gpu.as_ref().is_some_and(|g| g.cpu > 0))
        {
            for t in &s.tasks {
                threads.push(Thread::idle(t.pieces[0].domain as u32));
            }
        }
        let nthreads = threads.len();
        let jobs = (0..n)
            .map(|_| Job {
                active: false,
                seq: 0,
                arrival: 0,
                ready: 0,
                start: None,
                phase: Phase::Only,
                post_work: 0,
                piece: 0,
                blocked: 0,
                blocked_since: None,
                gpu: None,
                pending: VecDeque::new(),
                released: 0,
                next_arrival: 0,
                ops: Vec::new(),
                ops_for: None,
                pc: 0,
                section_gpu: 0,
                reqs: [None; 2],
                req_locks: [[0; 2]; 2],
                gpu_lock: None,
                gpu_lock_id: 0,
                held: [false; 3],
                has_token: false,
                token: 0,
                token_time: 0,
                section_blocked: 0,
                op_start: 0,
                interrupts: 0,
                last_gpu: None,
                distance: 0,
                resuming: false,
            })
            .collect();
        let rule = match s.policy.gpu_allocator {
            GpuAllocator::Static => QueueRule::Static,
            GpuAllocator::KFmlp => QueueRule::LAware,
            GpuAllocator::GpuSync { affinity: true } => QueueRule::EarliestCompletion,
            GpuAllocator::GpuSync { affinity: false } => QueueRule::ShortestQueue,
        };
        let allocators = s
            .groups
            .iter()
            .enumerate()
            .map(|(gi, grp)| {
                let priors: Vec<[Time; 4]> = s
                    .tasks
                    .iter()
                    .map(|t| match &t.gpu {
                        Some(gt) if gt.group == gi => gt.prior,
                        _ => [0; 4],
                    })
                    .collect();
                TokenAllocator::new(
                    token::Config {
                        gpus: grp.gpus.len(),
                        tokens_per_gpu: s.policy.tokens() as usize,
                        rule,
                        stealing: s.policy.request_stealing(),
                        queue_cap: token::r2dglp_queue_cap(
                            grp.cpus,
                            grp.gpus.len() * s.policy.tokens() as usize,
                        ),
                    },
                    grp.distance.clone(),
                    CostPredictor::new(&priors),
                )
            })
            .collect();
        let copy_engines: Vec<u8> = s.gpus.iter().map(|g| g.copy_engines).collect();
        // Several token holders per GPU and no engine locks: the driver
        // arbitrates the engines ([`Engine::driver_submit`]).
        let driver = !s.policy.engine_locks && s.policy.tokens() > 1;
        let buses = (0..s.links * 2)
            .map(|_| Bus {
                active: Vec::new(),
                last: 0,
                stamp: 0,
            })
            .collect();
        let mut vgpu_sched: Vec<Option<VgpuScheduler>> = (0..g).map(|_| None).collect();
        let mut vgpu_local = vec![0; s.vgpus.len()];
        for (gi, slot) in vgpu_sched.iter_mut().enumerate() {
            let mine: Vec<usize> = (0..s.vgpus.len()).filter(|&v| s.vgpus[v].1 == gi).collect();
            if mine.is_empty() {
                continue;
            }
            let policy = match s.vgpus[mine[0]].2 {
                rtgpu_model::VgpuPolicy::Band => VgpuPolicy::Band,
                rtgpu_model::VgpuPolicy::Fifo => VgpuPolicy::Fifo,
                rtgpu_model::VgpuPolicy::FixedPriority => VgpuPolicy::FixedPriority,
            };
            let cfgs: Vec<VgpuConfig> = mine
                .iter()
                .enumerate()
                .map(|(k, &v)| {
                    vgpu_local[v] = k;
                    VgpuConfig {
                        budget: s.vgpus[v].3,
                        period: s.vgpus[v].4,
                        priority: k as u64,
                    }
                })
                .collect();
            *slot = Some(VgpuScheduler::new(policy, &cfgs, 0));
        }
        let handling = match s.policy.interrupts {
            InterruptHandling::Slih => Handling::Slih,
            InterruptHandling::Pai => Handling::Pai,
            InterruptHandling::Klmirqd if s.bottom_half_server.is_some() => Handling::KlmirqdServer,
            InterruptHandling::Klmirqd => Handling::Klmirqd,
            InterruptHandling::FixedPriorityThreads { priority } => Handling::FixedThreads {
                priority: fixed_irq_key(priority, s.edf),
            },
        };
        let o = s.overheads;
        let costs = interrupt::Costs {
            th: o.th,
            bh: o.bh,
            krel: o.krel,
            pairel: o.pairel,
            paisch: o.paisch,
        };
        let nb = cfg.buckets.max(1);
        let bucket = cfg.duration.div_ceil(nb as Time).max(1);
        let stats = (0..n)
            .map(|_| Stats {
                jobs: 0,
                unfinished: 0,
                misses: 0,
                max_response: 0,
                sum_response: 0,
                sum_pct: 0.0,
                max_pct: 0.0,
                max_tardiness: 0,
                max_blocking: 0,
                migrations: 0,
            })
            .collect();
        let ndomains = s.domains.len();
        let ncores = s.cores;
        // Flat per-domain tables: the cores of each domain in its order,
        // and its idle bits; where each core's entries are.
        let (mut idle, mut idle_at, mut run_at, mut dom_cores) = (vec![], vec![0], vec![0], vec![]);
        let mut places = vec![(0, 0, 0, 0); ncores];
        for (d, cores) in s.domains.iter().enumerate() {
            let base = idle.len();
            idle.resize(base + cores.len().div_ceil(64), 0);
            for (k, &c) in cores.iter().enumerate() {
                idle[base + k / 64] |= 1 << (k % 64);
                places[c] = (
                    d as u32,
                    dom_cores.len() as u32,
                    (base + k / 64) as u32,
                    1 << (k % 64),
                );
                dom_cores.push(c);
            }
            idle_at.push(idle.len());
            run_at.push(dom_cores.len());
        }
        let nv = s.vgpus.len();
        let mut dl = Vec::new();
        let mut dl_of = vec![u32::MAX; nthreads];
        for (i, t) in s.tasks.iter().enumerate() {
            if let Some(r) = t.reservation {
                dl_of[i] = dl.len() as u32;
                dl.push(DlEntity {
                    cbs: Cbs::new(r.runtime, r.deadline, r.period),
                    thread: i as u32,
                    core: 0,
                    stopped: None,
                    throttled: false,
                });
            }
        }
        if let Some(srv) = s.bottom_half_server {
            for gi in 0..g {
                dl_of[n + gi] = dl.len() as u32;
                dl.push(DlEntity {
                    cbs: Cbs::new(srv.runtime, srv.period, srv.period),
                    thread: (n + gi) as u32,
                    core: s.gpus[gi].irq_core as u32,
                    stopped: None,
                    throttled: false,
                });
            }
        }
        Engine {
            cfg: cfg.clone(),
            now: 0,
            // Slot groups, in the order of their events' codes: cores and
            // buses (slot in field a of the event code), GPUs and tasks
            // (field b); see `encode` and `push`.
            events: EventQueue::new([
                (ncores, 32, (1 << 27) - 1),
                (s.links * 2, 32, (1 << 27) - 1),
                (g, 0, u32::MAX as u64),
                (n, 0, u32::MAX as u64),
            ]),
            rng: Rng::new(cfg.seed),
            threads,
            jobs,
            ready: (0..ndomains).map(|_| MinTree::new(nthreads)).collect(),
            ready_top: vec![queue::EMPTY; ndomains],
            cores: places
                .iter()
                .map(|&(domain, run, idle_word, idle_bit)| Core {
                    running: None,
                    stamp: 0,
                    frozen_until: 0,
                    domain,
                    run,
                    idle_word,
                    idle_bit,
                })
                .collect(),
            allocators,
            locks: EngineLocks::new(&copy_engines),
            grants: Vec::new(),
            req_owner: Vec::new(),
            buses,
            kernel_owner: vec![None; g],
            driver_busy: if driver {
                vec![false; g * 3]
            } else {
                Vec::new()
            },
            driver_fifo: if driver {
                (0..g * 3).map(|_| VecDeque::new()).collect()
            } else {
                Vec::new()
            },
            vgpu_sched,
            vgpu_local,
            irq_items: Vec::new(),
            irq_free: Vec::new(),
            irq_queue: (0..g).map(|_| VecDeque::new()).collect(),
            irq_current: vec![None; g],
            handling,
            costs,
            stats,
            records: Vec::new(),
            inversions: Vec::new(),
            spans: Vec::new(),
            bucket,
            buckets: Buckets {
                size: bucket,
                lo: 0,
                idx: 0,
            },
            engine_busy: vec![vec![0; nb]; g * 3],
            core_busy: vec![vec![0; nb]; ncores],
            vgpu_busy: vec![vec![0; nb]; nv],
            active_jobs: 0,
            ntasks: n as u32,
            dom_run: vec![(0, 0); dom_cores.len()],
            idle,
            idle_at,
            run_at,
            dom_cores,
            bus_done: Vec::new(),
            key_cache: vec![None; n],
            holder_key: vec![None; g],
            irq_dirty: vec![0; g.div_ceil(64)],
            dl,
            dl_of,
            section0,
            in_section_cpu: Vec::new(),
            s,
        }
    }

    /// Events of one instant: segment ends first (a job that finishes at t
    /// is not preempted at t), then device completions, then releases;
    /// within a class, in the order of their encoding (deterministic). An
    /// event is packed into one u64 beside its time (16-byte heap entries).
    // Always inlined: each call site names one kind of event, so the
    // encoding and the slot choice fold to constants there.
    #[inline(always)]
    fn push(&mut self, t: Time, ev: Ev) {
        // Slot groups: cores, buses, GPUs, tasks (see `new`). Top halves
        // go to the heap: in a slot per interrupt item they took more
        // instructions and more time (measured).
        let slot = match ev {
            Ev::Segment(c, _) => Slot::Replace(0, c as usize),
            Ev::Bus(b, _) => Slot::Replace(1, b as usize),
            Ev::KernelDone(g) => Slot::IfFree(2, g as usize),
            Ev::Release(i) => Slot::IfFree(3, i as usize),
            _ => Slot::Heap,
        };
        self.events.push(t, encode(ev), slot);
    }

    /// One scheduling decision and context switch each way, 2(Δsch +
    /// Δcxs) (seed 000 Eq. 6): what a thread pays per dispatch that
    /// preempts and switches back (0 without overheads).
    fn switch_pair(&self) -> Time {
        2 * (self.s.overheads.sch + self.s.overheads.cxs)
    }

    pub fn run(mut self) -> SimResult {
        for i in 0..self.ntasks {
            self.schedule_release(i, 0);
        }
        while let Some((t, code)) = self.events.pop() {
            if t >= self.cfg.duration && (!self.cfg.drain || self.active_jobs == 0) {
                break;
            }
            self.now = t;
            // `decode` and the dispatch on its result in one match.
            let (a, b) = (((code >> 32) & ((1 << 27) - 1)) as u32, code as u32);
            debug_assert_eq!(
                decode(code),
                [
                    Ev::Segment(a, b),
                    Ev::Bus(a, b),
                    Ev::KernelDone(b),
                    Ev::TopHalfDone(b),
                    Ev::VgpuTimer(b),
                    Ev::Release(b),
                    Ev::PieceStart(b),
                    Ev::DlTimer(b),
                ][((code >> 59) & 7) as usize]
            );
            match (code >> 59) & 7 {
                0 => self.on_segment(a, b),
                1 => self.on_bus(a, b),
                2 => self.on_kernel_done(b),
                3 => self.on_top_half_done(b),
                4 => {
                    let g = b;
                    let now = self.now;
                    let d = self.vgpu_sched[g as usize]
                        .as_mut()
                        .and_then(|s| s.timer(now));
                    self.vgpu_dispatch(g as usize, d);
                }
                5 => self.on_release(b),
                6 => self.make_ready(b),
                _ => self.on_dl_timer(b),
            }
        }
        let end = if self.cfg.drain {
            self.now.max(self.cfg.duration)
        } else {
            self.cfg.duration
        };
        self.finish(end)
    }

    fn start_gpu_section(&mut self, i: u32) {
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
                if self.handling == Handling::Klmirqd {
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

    fn end_block(&mut self, i: usize) {
        if let Some(since) = self.jobs[i].blocked_since.take() {
            let b = self.now - since;
            self.jobs[i].blocked += b;
            self.jobs[i].section_blocked += b;
        }
    }

    /// `i` holds token `token` (an index of its group's allocator) for
    /// global GPU `g`, or no token but its vGPU's GPU `g`.
    fn on_token(&mut self, i: u32, g: usize, token: Option<usize>) {
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
        let policy = s.policy;
        let chunk = policy.chunk_size;
        let bw = s.bandwidth;
        let links = s.gpus[g].link as u32;
        let down = |link: u32| link * 2;
        let up = |link: u32| link * 2 + 1;
        // Engine tracks: exec, copy-in, copy-out (the copy-in engine on a
        // GPU with one copy engine).
        let in_engine = |gpu: usize| (gpu * 3 + 1) as u32;
        let out_engine =
            |gpu: usize| (gpu * 3 + if s.gpus[gpu].copy_engines >= 2 { 2 } else { 1 }) as u32;
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
        if j.ops_for == Some((g, from)) {
            j.distance = match from {
                Some(p) => {
                    self.stats[iu].migrations += 1;
                    s.platform.migration_distance(p, g)
                }
                None => 0,
            };
            self.fresh_section_key(iu);
            self.advance(i);
            return;
        }
        j.ops_for = Some((g, from));
        j.ops.clear();
        let engine_locks = policy.engine_locks || gt.vgpu.is_some();
        let one = |l: usize| [l, l];
        let lock_or_none = |l: usize| {
            if engine_locks {
                (one(l), 1)
            } else {
                (one(0), 0)
            }
        };
        if !engine_locks && !driver {
            j.ops.push(Op {
                kind: OpKind::GpuLock,
                locks: one(locks.lock_id(g, Eng::Exec)),
                nlocks: 1,
            });
        }
        // Migration of the task's state (seed 004 §4.3).
        let mut distance = 0;
        if let Some(p) = j.last_gpu.filter(|&p| p != g) {
            distance = s.platform.migration_distance(p, g);
            self.stats[iu].migrations += 1;
            let same_node = s.gpus[p].cluster == s.gpus[g].cluster;
            if self.cfg.peer_migration && same_node && policy.gpu_allocator != GpuAllocator::KFmlp {
                let (l, n) = if engine_locks {
                    (
                        [
                            locks.lock_id(p, Eng::CopyOut),
                            locks.lock_id(g, Eng::CopyIn),
                        ],
                        2,
                    )
                } else {
                    (one(0), 0)
                };
                // Under the driver a peer copy runs on the source's
                // device-to-host copy engine (as the emulated GPU runs it).
                push_copies(
                    &mut j.ops,
                    gt.state,
                    chunk,
                    bw.peer,
                    down(links),
                    SpanKind::Migrate,
                    if driver { out_engine(p) } else { in_engine(g) },
                    (l, n),
                );
            } else {
                // Through system memory: out of the old GPU, into the new.
                // The k-FMLP (seed 000) treats a GPU as one resource held by
                // one job, so there the state is staged in system memory and
                // both transfers are part of the new GPU's critical section
                // (on its engine and link), as the analysis charges them;
                // GPUSync takes the old GPU's copy-out lock (its bounds
                // count requests from every token holder, App. Lemma 3).
                let staged = policy.gpu_allocator == GpuAllocator::KFmlp;
                let src = if staged { g } else { p };
                let plink = s.gpus[src].link as u32;
                let (l, n) = lock_or_none(locks.lock_id(src, Eng::CopyOut));
                push_copies(
                    &mut j.ops,
                    gt.state,
                    chunk,
                    bw.device_to_host,
                    up(plink),
                    SpanKind::Migrate,
                    out_engine(src),
                    (l, n),
                );
                let (l, n) = lock_or_none(locks.lock_id(g, Eng::CopyIn));
                push_copies(
                    &mut j.ops,
                    gt.state,
                    chunk,
                    bw.host_to_device,
                    down(links),
                    SpanKind::Migrate,
                    in_engine(g),
                    (l, n),
                );
            }
        }
        j.distance = distance;
        let (l, n) = lock_or_none(locks.lock_id(g, Eng::CopyIn));
        push_copies(
            &mut j.ops,
            gt.copy_in,
            chunk,
            bw.host_to_device,
            down(links),
            SpanKind::CopyIn,
            in_engine(g),
            (l, n),
        );
        if gt.cpu > 0 {
            j.ops.push(Op {
                kind: OpKind::Cpu { work: gt.cpu },
                locks: one(0),
                nlocks: 0,
            });
        }
        let nk = gt.kernels.len();
        let exec = locks.lock_id(g, Eng::Exec);
        for (k, &time) in gt.kernels.iter().enumerate() {
            let first = k == 0;
            // Kernels of a vGPU go through its scheduler, not a lock.
            let (l, n) = if engine_locks && first && gt.vgpu.is_none() {
                (one(exec), 1)
            } else {
                (one(0), 0)
            };
            j.ops.push(Op {
                kind: OpKind::Kernel {
                    time,
                    last: k + 1 == nk,
                },
                locks: l,
                nlocks: n,
            });
        }
        let (l, n) = lock_or_none(locks.lock_id(g, Eng::CopyOut));
        push_copies(
            &mut j.ops,
            gt.copy_out,
            chunk,
            bw.device_to_host,
            up(links),
            SpanKind::CopyOut,
            out_engine(g),
            (l, n),
        );
        // Its token (or none) is part of its effective priority.
        self.fresh_section_key(iu);
        self.advance(i);
    }

    /// Continue job `i`'s GPU section from its current op: acquire the
    /// op's locks (suspending while blocked), then start it.
    fn advance(&mut self, i: u32) {
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
    fn start_section_cpu(&mut self, i: u32, work: Time) {
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
    fn section_cpu_done(&mut self, i: u32) {
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
    fn op_completed(&mut self, i: u32) {
        if self.threads[i as usize].domain == DL {
            self.dl_owner_wake(i);
        } else {
            self.op_done(i);
        }
    }

    /// The job learned that its current op completed: release per-op locks
    /// and go on.
    #[inline]
    fn op_done(&mut self, i: u32) {
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

    fn finish_section(&mut self, i: u32) {
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
            if self.handling == Handling::Klmirqd {
                self.rekey_irq(g);
            }
            self.refresh_irq_keys();
        }
        // Back to the CPU: the second half of C, plus the context switches
        // of each resumption (seed 000 Eq. 7; a SCHED_DEADLINE owner paid
        // them at each completion, `dl_owner_wake`).
        let resume = if self.threads[iu].domain == DL {
            0
        } else {
            self.jobs[iu].interrupts as Time * self.switch_pair()
        };
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
