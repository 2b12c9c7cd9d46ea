//! Construction of an [`Engine`] from a [`Setup`]: threads, jobs, token
//! allocators, vGPU schedulers, interrupt handling, the scheduling
//! domains' flat tables, SCHED_DEADLINE servers and the event queue's slot
//! groups.

use std::collections::VecDeque;

use rtgpu_analysis::generate::Rng;
use rtgpu_model::InterruptHandling;
use rtgpu_policy::cbs::Cbs;
use rtgpu_policy::engine_lock::EngineLocks;
use rtgpu_policy::interrupt::Handling;
use rtgpu_policy::predictor::CostPredictor;
use rtgpu_policy::token::{self, TokenAllocator};
use rtgpu_policy::vgpu::{VgpuConfig, VgpuPolicy, VgpuScheduler};
use rtgpu_policy::Time;

use crate::queue::{self, EventQueue, ReadyHeap};
use crate::setup::{fixed_irq_key, Setup};
use crate::SimConfig;

use super::deadline::{DlEntity, DL};
use super::device::Bus;
use super::overheads::interrupt_costs;
use super::stats::{Buckets, Stats};
use super::{Core, Engine, Job, Pending, Phase, TState, Thread};

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
        let jobs = s
            .tasks
            .iter()
            .map(|t| Job {
                active: false,
                seq: 0,
                arrival: 0,
                ready: 0,
                start: None,
                phase: Phase::Only,
                post_work: 0,
                piece: 0,
                dom0: t.pieces[0].domain as u32,
                npieces: t.pieces.len() as u32,
                blocked: 0,
                blocked_since: None,
                key_cache: None,
                gpu: None,
                pending: Pending::default(),
                pending_more: std::collections::VecDeque::new(),
                released: 0,
                next_arrival: 0,
                wcet: t.wcet,
                deadline: t.deadline,
                period: t.period,
                jitter: t.jitter,
                key0: t.pieces[0].key,
                budget0: t.pieces[0].budget,
                gpu_cpu: t.gpu.as_ref().map(|g| g.cpu),
                has_gpu: t.gpu.is_some(),
                migrations: 0,
                unfinished: 0,
                stats: Stats {
                    jobs: 0,
                    misses: 0,
                    max_response: 0,
                    sum_response: [0, 0],
                    sum_pct: 0.0,
                    max_pct: 0.0,
                    max_tardiness: 0,
                    max_blocking: 0,
                },
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
                    token::Config::of_policy(&s.policy, grp.gpus.len(), grp.cpus, grp.users),
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
        let costs = interrupt_costs(&s.overheads);
        let nb = cfg.buckets.max(1);
        let bucket = cfg.duration.div_ceil(nb as Time).max(1);
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
            // The tasks' slots hold only releases, whose code is the
            // release code with the task's index.
            events: EventQueue::with_last_code(
                [
                    (ncores, 32, (1 << 27) - 1),
                    (s.links * 2, 32, (1 << 27) - 1),
                    (g, 0, u32::MAX as u64),
                    (n, 0, u32::MAX as u64),
                ],
                Some(super::encode(super::Ev::Release(0))),
            ),
            rng: Rng::new(cfg.seed),
            threads,
            jobs,
            ready: (0..ndomains).map(|_| ReadyHeap::default()).collect(),
            run_max: vec![0; ndomains],
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
            holder_key: vec![None; g],
            irq_dirty: vec![0; g.div_ceil(64)],
            dl,
            dl_of,
            section0,
            in_section_cpu: Vec::new(),
            s,
        }
    }
}
