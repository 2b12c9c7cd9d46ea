//! The event loop, and the state it drives.
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
//! the next), one interrupt thread per GPU, and, when some task has CPU
//! work inside its GPU section, one section thread per task. Each event
//! goes to the module that owns its concern; each adds an `impl Engine`
//! block over the state defined here:
//!
//! - [`cpu`]: the scheduling domains, fixed priority per core, per
//!   cluster or global and EDF per cluster or global, one mechanism (only
//!   the key differs): ready queues, dispatch, preemption, segment ends
//!   (`Segment`, `PieceStart`).
//! - [`deadline`]: SCHED_DEADLINE threads (CPU reservations, klmirqd
//!   servers), constant bandwidth servers under global EDF above every
//!   domain (`DlTimer`). The two CPU classes meet in
//!   [`Engine::make_ready`] and [`Engine::on_segment`], which hand a
//!   thread of [`deadline::DL`] to this one.
//! - [`jobs`]: releases, a job's start and completion (`Release`).
//! - [`gpu`]: GPU sections: token requests and grants, stepping through
//!   the section's operations, the section's end.
//! - [`ops`]: a section's operation list: copies in chunks, state
//!   migrations, kernels, CPU work, the locks of each.
//! - [`locks`]: engine-lock requests, grants and releases.
//! - [`device`]: the GPUs' engines and buses: kernels, vGPU schedulers,
//!   shared-bus copies, driver arbitration (`KernelDone`, `Bus`,
//!   `VgpuTimer`).
//! - [`interrupts`]: top halves and bottom halves, interrupt threads'
//!   keys, priority inversions (`TopHalfDone`).
//! - [`inherit`]: effective priorities (inheritance through token queues
//!   and engine locks) and their caches.
//! - [`overheads`]: what each injected overhead charges, and where.
//! - [`stats`]: per-task statistics, utilization series, the result.
//! - [`init`]: construction from a [`Setup`].

mod cpu;
mod deadline;
mod device;
mod gpu;
mod inherit;
mod init;
mod interrupts;
mod jobs;
mod locks;
mod ops;
mod overheads;
mod stats;

use std::collections::VecDeque;

use rtgpu_analysis::generate::Rng;
use rtgpu_policy::engine_lock::{EngineLocks, LockGrant, ReqId};
use rtgpu_policy::interrupt::{self, Handling};
use rtgpu_policy::token::TokenAllocator;
use rtgpu_policy::vgpu::VgpuScheduler;
use rtgpu_policy::Time;

use crate::queue::{self, EventQueue, ReadyHeap, Slot};
use crate::setup::Setup;
use crate::trace::Span;
use crate::{JobRecord, SimConfig, SimResult};

use deadline::DlEntity;
use device::Bus;
use interrupts::IrqItem;
use ops::Op;
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

/// One line per thread (aligned): a dispatch, a preemption or a segment's
/// end touches one line of the thread table.
#[repr(align(64))]
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

/// A task's current job and what its CPU path reads of the task. Laid out
/// by hand (`repr(C)`, cache-line aligned): the fields every job touches
/// (release, start, CPU segments, completion) and the task's constants
/// they need come first, in the first lines of the struct, so that a job
/// of a CPU-only task touches a few lines of one struct instead of lines
/// scattered over this, the task's setup, its pieces, its release queue
/// and the priority cache (at n = 10,000 tasks these were cache misses,
/// most of a job's cost). The GPU section's state comes last.
///
/// Lines (64 bytes; `job_layout` checks the offsets): 0 and 1 hold what
/// a completion reads and writes (flags, release count, arrival,
/// deadline, period and the task's counters), 0 and 2 what a release and
/// a job's start need (the release queue, the next arrival, the task's
/// constants): a CPU-only job touches three lines of its `Job`. The rest
/// is read and written only where needed: the FP key (`key0`, line 1) under
/// fixed priorities, a split task's budget, the fields of GPU-using tasks
/// (`gpu_cpu`, `post_work`, `gpu`, `interrupts`, `blocked`,
/// `blocked_since`, the priority cache: no CPU-only job's effective
/// priority is ever asked for), and what only per-job records show
/// (`seq`, `ready`, `start`, written only with `record_jobs`).
#[repr(C, align(64))]
struct Job {
    // Line 0.
    active: bool,
    phase: Phase,
    /// The task has a GPU section (`gpu_cpu` is `Some`).
    has_gpu: bool,
    /// Entries of `pending` whose release event has happened.
    released: u32,
    /// The task's number of pieces, and the job's current one.
    npieces: u32,
    piece: u32,
    /// The task's first piece's domain.
    dom0: u32,
    arrival: Time,
    deadline: Time,
    period: Time,
    /// The task's counters, beside the job that updates them (to line 1).
    stats: Stats,
    /// The first piece's FP key (read under fixed priorities only).
    key0: u64,
    // Line 2.
    pending: Pending,
    next_arrival: Time,
    jitter: Time,
    wcet: Time,
    // Line 3 on: not read or written by a CPU-only job without records.
    /// The first piece's budget (read only for a split task).
    budget0: Time,
    /// Its effective priority as last computed, `None` once something it
    /// depends on may have changed ([`Engine::invalidate`]). An
    /// interrupt's owner key is asked for at the interrupt, at its bottom
    /// half's start and on every lock or queue change; most of these asks
    /// find nothing changed since the last.
    key_cache: Option<u64>,
    /// CPU time inside its GPU section, `None` for a CPU-only task.
    gpu_cpu: Option<Time>,
    post_work: Time,
    blocked: Time,
    blocked_since: Option<Time>,
    gpu: Option<u32>,
    interrupts: u32,
    /// Per-job records only (`record_jobs`).
    seq: u64,
    ready: Time,
    start: Option<Time>,
    /// The task's migrations and unfinished jobs (counters the CPU path
    /// never touches).
    migrations: u64,
    unfinished: u64,
    /// `pending`'s entries after its first two.
    pending_more: VecDeque<(Time, Time)>,
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
    last_gpu: Option<usize>,
    distance: u32,
    /// A SCHED_DEADLINE owner's resume segment after an operation's
    /// completion is running or waiting for its server (phase `Gpu`):
    /// when it ends, the operation is done ([`Engine::dl_resume_done`]).
    resuming: bool,
}

/// A task's scheduled releases not yet started, `(arrival, ready)` in
/// order: the first two inline (a task rarely has more: its next release
/// and, when late, one more), the rest in a queue kept elsewhere (the
/// job's `pending_more`, outside its hot lines), passed to the methods
/// that may reach it.
#[derive(Default)]
#[repr(C)]
struct Pending {
    first: [(Time, Time); 2],
    len: u32,
}

impl Pending {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len as usize
    }

    #[inline(always)]
    fn front(&self) -> Option<&(Time, Time)> {
        (self.len > 0).then_some(&self.first[0])
    }

    #[inline(always)]
    fn back<'a>(&'a self, more: &'a VecDeque<(Time, Time)>) -> Option<&'a (Time, Time)> {
        match self.len {
            0 => None,
            1 | 2 => Some(&self.first[self.len as usize - 1]),
            _ => more.back(),
        }
    }

    #[inline(always)]
    fn push_back(&mut self, v: (Time, Time), more: &mut VecDeque<(Time, Time)>) {
        if self.len < 2 {
            self.first[self.len as usize] = v;
        } else {
            more.push_back(v);
        }
        self.len += 1;
    }

    #[inline(always)]
    fn pop_front(&mut self, more: &mut VecDeque<(Time, Time)>) -> Option<(Time, Time)> {
        if self.len == 0 {
            return None;
        }
        let v = self.first[0];
        self.first[0] = self.first[1];
        if self.len > 2 {
            if let Some(next) = more.pop_front() {
                self.first[1] = next;
            }
        }
        self.len -= 1;
        Some(v)
    }

    fn iter<'a>(
        &'a self,
        more: &'a VecDeque<(Time, Time)>,
    ) -> impl Iterator<Item = &'a (Time, Time)> {
        self.first[..self.len().min(2)].iter().chain(more.iter())
    }
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
    /// Per domain: the keys `(key, thread)` of the threads ready there
    /// (only those: its size follows the ready threads, not all).
    ready: Vec<ReadyHeap>,

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
    /// Per domain: at least the largest key of `dom_run`'s entries (raised
    /// with each entry, lowered to it by each scan of
    /// [`Engine::preemptible`]), which rules preemption out without a scan
    /// for a thread no more urgent than that.
    run_max: Vec<u128>,
    run_at: Vec<usize>,
    /// The cores of `dom_run`'s entries.
    dom_cores: Vec<usize>,
    /// Scratch list of the jobs whose copies a bus event completed.
    bus_done: Vec<u32>,
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

impl Engine {
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

    pub fn run(self) -> SimResult {
        self.run_until(None)
    }

    /// [`Self::run`], stopping early (a partial result) once `cancel` is
    /// set; it is read every 65,536 events.
    pub fn run_until(mut self, cancel: Option<&std::sync::atomic::AtomicBool>) -> SimResult {
        for i in 0..self.ntasks {
            self.schedule_release(i, 0);
        }
        let mut count: u32 = 0;
        // The event popped last and left unhandled when the run stops early.
        let mut left = 0;
        while let Some((t, code)) = self.events.pop() {
            if t >= self.cfg.duration && (!self.cfg.drain || self.active_jobs == 0) {
                left = 1;
                break;
            }
            count = count.wrapping_add(1);
            if count & 0xffff == 0
                && cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            {
                left = 1;
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
                4 => self.on_vgpu_timer(b),
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
        let handled = self.events.popped() - left;
        self.finish(end, handled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CPU-only job's completion reads and writes lines 0 and 1 of its
    /// `Job` only, its release and start lines 0 and 2 (see `Job`).
    #[test]
    fn job_layout() {
        use std::mem::offset_of;
        let line = |off: usize| off / 64;
        for off in [
            offset_of!(Job, active),
            offset_of!(Job, phase),
            offset_of!(Job, has_gpu),
            offset_of!(Job, released),
            offset_of!(Job, npieces),
            offset_of!(Job, piece),
            offset_of!(Job, dom0),
            offset_of!(Job, arrival),
            offset_of!(Job, deadline),
            offset_of!(Job, period),
            offset_of!(Job, stats),
        ] {
            assert_eq!(line(off), 0);
        }
        let st = offset_of!(Job, stats);
        assert!(
            st + std::mem::size_of::<Stats>() <= 128,
            "counters end in line 1"
        );
        assert_eq!(line(offset_of!(Job, key0)), 1);
        for off in [
            offset_of!(Job, pending),
            offset_of!(Job, next_arrival),
            offset_of!(Job, jitter),
            offset_of!(Job, wcet),
        ] {
            assert_eq!(line(off), 2);
        }
        assert_eq!(offset_of!(Job, budget0), 192);
    }

    /// `Pending` is a FIFO like the `VecDeque` it replaces, two entries
    /// inline and the rest beside.
    #[test]
    fn pending_is_a_fifo() {
        let mut rng = Rng::new(3);
        let mut p = Pending::default();
        let mut more = VecDeque::new();
        let mut model: VecDeque<(Time, Time)> = VecDeque::new();
        for k in 0..5000u64 {
            if rng.range(0, 2) > 0 {
                p.push_back((k, k + 1), &mut more);
                model.push_back((k, k + 1));
            } else {
                assert_eq!(p.pop_front(&mut more), model.pop_front());
            }
            assert_eq!(p.len(), model.len());
            assert_eq!(p.front(), model.front());
            assert_eq!(p.back(&more), model.back());
            assert!(p.iter(&more).eq(model.iter()));
        }
    }
}
