//! CPU reservations (`reservation = true`, SCHED_DEADLINE threads):
//! [`analyze_reservations`] analyses the other tasks with every reservation
//! charged as a server, and the reservations by the G-EDF density test;
//! their overheads ([`ReservationCosts`]) and the GPU wake-ups of GPU-using
//! reservations ([`GpuWakes`]).

use rtgpu_model::{CpuScheduler, Workload};

use crate::edf;
use crate::overheads::{self, Charges, InterruptMethod, OverheadTask};
use crate::server::{self, Server};
use crate::task::{Task, Time};
use crate::workload_gpu::{self, GpuTaskReport};

use super::plan::{make_plan, PlanTask, Reservation};
use super::report::{empty_report, scheduler_name, task_report, TaskReport, TaskVerdict, Verdict};
use super::{analyze_tasks, duration_words, Extra, Plan, Report};
#[cfg(doc)]
use crate::partition;

/// A workload with CPU reservations (`reservation = true`: SCHED_DEADLINE
/// threads, above every SCHED_FIFO thread and on any CPU, the kernel
/// keeping a deadline thread's affinity to its whole root domain).
///
/// - The other tasks are analysed as the workload without the reservations,
///   each reservation charged on every core (in the P-FP partitioning too,
///   [`partition::partition_with`]) as a bandwidth server of its
///   runtime ([`Reservation::of`]: C and a margin) every T
///   ([`crate::server`]'s back-to-back bound), beside
///   `extra`'s servers. The bound holds when every reservation's job ends
///   within its deadline D <= T (its response then is at most T: the
///   server argument with R = T).
/// - The reservations and the servers among themselves are global EDF on
///   all m cores (SCHED_DEADLINE), each job given at most its runtime by
///   the CBS: they meet their deadlines if the density test passes,
///   Σ δ_i + (m − 1)·δ_max <= m with δ = C / min(D, T) (Goossens, Funk &
///   Baruah 2003, in the density form; [`edf::gedf_density_test`]); their
///   bound is then D.
/// - Overheads ([`ReservationCosts`]): a job's runtime must cover its WCET
///   and the overheads charged to it (its release, scheduling and context
///   switches, ticks, one switch pair per preemption by another deadline
///   thread), else the job is throttled and finishes a period late: a
///   named miss. In the density test each reservation and server holds a
///   core for its runtime plus the GPU top halves that may freeze it in
///   its window (seed 000 Eq. 11).
/// - GPU-using reservations ([`GpuWakes`]): seed 001 §III-D's second
///   problem, the CBS wake-up rule postponing the deadline of a job woken
///   by its GPU, is charged through a short server period; each wake-up is
///   also a dispatch that may preempt, counted in the other reservations'
///   preemptions and charged to the fixed-priority tasks
///   ([`GpuWakes::charged_servers`]).
/// - **Tardiness** (past the density test, every task a reservation and no
///   klmirqd server; [`tardiness`]): Linux's hard CBS hands out budgets
///   that form a sporadic task (e = a budget's core time, p = P) under
///   global EDF, so with Σ e/P <= m each budget is delivered at most
///   τ = x + e after its deadline (Devi & Anderson, RTS 2008). Where
///   τ <= P no late replenishment restarts a backlogged server, so a
///   CPU-only job ends by D + P + τ and each wake-up of a GPU-using one
///   is at most τ later than the hard bound; where some τ > P, none
///   (derivation: docs/analyses.md, "Past the density test").
///
/// The GPU-using reservations' servers are sized by the best of
/// [`ServerSizing::candidates`]: the one that bounds the most tasks (then: passes,
/// then the smallest sum of bound/deadline over the GPU-using ones): a
/// shorter server period makes each wake-up cheaper and costs more
/// preemptions, and a larger share shortens the CPU work at the price of
/// density; which wins depends on the workload.
pub(super) fn analyze_reservations(w: &Workload, extra: &Extra) -> (Report, Plan) {
    let with_gpu = w.tasks.iter().any(|t| t.reservation && t.uses_gpu());
    let tried = if with_gpu { 8 } else { 1 };
    let score = |r: &Report| {
        let bounded = r
            .tasks
            .iter()
            .filter(|t| t.verdict == TaskVerdict::MeetsDeadline)
            .count();
        let tightness: f64 = r
            .tasks
            .iter()
            .zip(&w.tasks)
            .filter(|(_, t)| t.uses_gpu())
            .map(|(tr, t)| match tr.response_time {
                Some(b) => b as f64 / t.deadline.max(1) as f64,
                None => 2.0,
            })
            .sum();
        (bounded, r.verdict == Verdict::Schedulable, -tightness)
    };
    type Scored = ((usize, bool, f64), (Report, Plan));
    let mut best: Option<Scored> = None;
    for sizing in ServerSizing::candidates().take(tried) {
        let out = analyze_sized(w, extra, sizing);
        let sc = score(&out.0);
        if best.as_ref().is_none_or(|(b, _)| sc > *b) {
            best = Some((sc, out));
        }
    }
    match best {
        Some((_, out)) => out,
        None => analyze_sized(
            w,
            extra,
            ServerSizing {
                period_divisor: 1,
                share: 4,
            },
        ),
    }
}

/// How a GPU-using reservation's server is sized ([`GpuWakes::server`]):
/// its period is (D − J)/(8(w + 1)) divided by `period_divisor` (within
/// [100 us, T]); its share of a CPU makes the job's CPU work take about
/// 1/`share` of D − J.
#[derive(Debug, Clone, Copy)]
struct ServerSizing {
    period_divisor: u64,
    share: u64,
}

impl ServerSizing {
    /// The sizings tried, the first one the default: every period divisor
    /// with every share.
    fn candidates() -> impl Iterator<Item = ServerSizing> {
        [4, 8].into_iter().flat_map(|share| {
            [1, 4, 16, 64]
                .into_iter()
                .map(move |period_divisor| ServerSizing {
                    period_divisor,
                    share,
                })
        })
    }
}

fn analyze_sized(w: &Workload, extra: &Extra, sizing: ServerSizing) -> (Report, Plan) {
    let reserved: Vec<usize> = (0..w.tasks.len())
        .filter(|&i| w.tasks[i].reservation)
        .collect();
    let servers = extra.active_servers();
    let method = workload_gpu::interrupt_method(&w.policy);
    let own_bottom_halves = extra.bottom_halves.is_none()
        && matches!(method, InterruptMethod::Klmirqd | InterruptMethod::Pai);
    // GPU-using reservations get a server sized for their wake-ups first:
    // every reservation's period counts in the others' preemptions.
    let wakes: Vec<Option<GpuWakes>> = reserved
        .iter()
        .map(|&i| GpuWakes::of(w, i, own_bottom_halves))
        .collect();
    // A CPU-only reservation's deadline runs from its wake-up, which the
    // release's timer interrupt and IPI (Δrel + Δipi, seed 000 Fig. 9)
    // delay past the release: deadline and period D − J − Δrel − Δipi
    // keep the job within D (with measured overheads on a virtual machine,
    // Δrel alone may be a millisecond).
    let release_latency = w.overheads.rel.saturating_add(w.overheads.ipi);
    let mut res: Vec<Reservation> = reserved
        .iter()
        .zip(&wakes)
        .map(|(&i, wk)| match wk {
            Some(wk) => wk.server(w, &w.tasks[i], sizing),
            None => {
                let mut r = Reservation::of(&w.tasks[i]);
                r.deadline = r.deadline.saturating_sub(release_latency).max(1);
                r.period = r.deadline;
                r.runtime = r.runtime.min(r.deadline);
                r
            }
        })
        .collect();
    let dl_wakes = reserved
        .iter()
        .zip(&wakes)
        .map(|(&i, wk)| {
            let t = &w.tasks[i];
            wk.as_ref().map(|wk| (t.period, t.jitter, wk.wakes()))
        })
        .collect();
    let costs = ReservationCosts::new(w, &res, dl_wakes, &servers);
    // A CPU-only reservation's runtime covers what the analysis charges its
    // job (C and the overheads its runtime pays), where that is more than
    // C and the margin of `Reservation::of`, up to its deadline: the
    // overheads depend on the periods only, so this sizing changes none.
    for (k, (&i, r)) in reserved.iter().zip(res.iter_mut()).enumerate() {
        if !w.tasks[i].uses_gpu() {
            let need = costs.demand(k, w.tasks[i].wcet, r).runtime_need;
            r.runtime = r.runtime.max(need).min(r.deadline);
        }
    }
    let m: u32 = w.platform.clusters.iter().map(|c| c.cores).sum();
    let all_cores: Vec<u32> = (0..m).collect();
    let demands: Vec<ReservationDemand> = reserved
        .iter()
        .zip(&res)
        .zip(&wakes)
        .enumerate()
        .map(|(k, ((&i, r), wk))| {
            let t = &w.tasks[i];
            match wk {
                None => costs.demand(k, t.wcet, r),
                Some(wk) => {
                    costs.demand_over(k, wk.job_work(t), t.deadline.saturating_sub(t.jitter), r)
                }
            }
        })
        .collect();
    // SCHED_DEADLINE entities: the reservations and the servers, each with
    // the time it holds a core per job: its runtime and the top halves
    // that may freeze it.
    let mut dl: Vec<Task> = reserved
        .iter()
        .zip(&res)
        .zip(&demands)
        .map(|((&i, r), d)| Task::new(i, d.occupancy, r.period, r.deadline))
        .collect();
    dl.extend(servers.iter().map(|s| {
        let occupancy = s.runtime.saturating_add(costs.top_halves(s.period));
        Task::new(usize::MAX, occupancy, s.period, s.period)
    }));
    let dense = edf::gedf_density_test(&dl, m);
    // Past the density test, soft real time: each reservation's tardiness
    // (module docs, "Tardiness"), where the argument covers the workload.
    let tardy = if dense {
        Ok((0, vec![0; reserved.len()]))
    } else {
        tardiness(w, &reserved, &res, &dl, m, servers.is_empty())
    };
    let late: Vec<Time> = match &tardy {
        Ok((_, late)) => late.clone(),
        Err(_) => vec![0; reserved.len()],
    };
    // A GPU-using reservation's hold is stretched by its in-section
    // wake-ups, whose work includes one switch per preemption by another
    // deadline thread during the hold (`hold_latency`): counted over
    // `spans[k]`, which starts at none and grows to the hold the GPU
    // analysis reports until none grows (a hold is monotone in the
    // stretches), else the job's whole window D − J.
    let owners_over = |spans: &[Time]| -> Vec<DlGpuOwner> {
        reserved
            .iter()
            .zip(&res)
            .zip(&wakes)
            .zip(spans)
            .enumerate()
            .filter_map(|(k, (((&i, r), wk), &span))| {
                let wk = wk.as_ref()?;
                Some(DlGpuOwner {
                    task: i,
                    hold_stretch: wk.hold_latency(r, costs.preemption_switches(k, span), late[k]),
                })
            })
            .collect()
    };
    let windows: Vec<Time> = reserved
        .iter()
        .map(|&i| w.tasks[i].deadline.saturating_sub(w.tasks[i].jitter))
        .collect();
    // A task's index in `rest`: past the CPU-only reservations before it.
    let rest_index = |i: usize| {
        i - reserved
            .iter()
            .filter(|&&j| j < i && !w.tasks[j].uses_gpu())
            .count()
    };
    // The others (GPU-using reservations stay, for the GPU analysis), with
    // every reservation charged as a server.
    let mut rest = w.clone();
    rest.tasks.retain(|t| !t.reservation || t.uses_gpu());
    let mut more = extra.clone();
    for ((&i, r), wk) in reserved.iter().zip(&res).zip(&wakes) {
        match wk {
            Some(wk) => more.servers.extend(wk.charged_servers(w, &w.tasks[i], r)),
            None => more.servers.push(Server::new(r.runtime, r.period)),
        }
    }
    let (mut report, mut plan) = if rest.tasks.is_empty() {
        (
            empty_report(w),
            make_plan(
                w,
                &[],
                scheduler_name(w.policy.cpu_scheduler),
                Verdict::Schedulable,
            ),
        )
    } else {
        // Indices of `rest`: the owners' shift down past the CPU-only
        // reservations before them.
        let analyse = |spans: &[Time]| {
            let shifted: Vec<DlGpuOwner> = owners_over(spans)
                .iter()
                .map(|o| DlGpuOwner {
                    task: rest_index(o.task),
                    ..*o
                })
                .collect();
            analyze_tasks(&rest, &more, &shifted)
        };
        let mut spans: Vec<Time> = vec![0; reserved.len()];
        let mut rounds = 0;
        loop {
            let out = analyse(&spans);
            let holds: Vec<Time> = reserved
                .iter()
                .zip(&windows)
                .map(|(&i, &window)| {
                    if !w.tasks[i].uses_gpu() {
                        return 0;
                    }
                    out.0.tasks[rest_index(i)]
                        .gpu
                        .as_ref()
                        .and_then(|g| g.hold)
                        .unwrap_or(window)
                        .min(window)
                })
                .collect();
            if holds.iter().zip(&spans).all(|(h, s)| h <= s) {
                break out;
            }
            rounds += 1;
            if rounds >= MAX_HOLD_ROUNDS {
                break analyse(&windows);
            }
            for (s, h) in spans.iter_mut().zip(holds) {
                *s = (*s).max(h);
            }
        }
    };
    // Per reservation: its bound, or why it has none.
    let mut short: Vec<String> = Vec::new();
    let mut bounds: Vec<Option<Time>> = Vec::new();
    for (k, (((&i, r), d), wk)) in reserved
        .iter()
        .zip(&res)
        .zip(&demands)
        .zip(&wakes)
        .enumerate()
    {
        let t = &w.tasks[i];
        let bound = match wk {
            // A CPU-only job needs its whole WCET and the overheads charged
            // to its runtime within its first budget (the bound assumes it
            // finishes in its first server period; a throttled job waits
            // for its next period).
            None if d.runtime_need > r.runtime => {
                short.push(format!(
                    "{} (C + overheads = {} > runtime {})",
                    t.name,
                    duration_words(d.runtime_need),
                    duration_words(r.runtime)
                ));
                None
            }
            None if late[k] == 0 => Some(t.deadline),
            // Its server's busy period from a wake-up within J + Δrel +
            // Δipi of a release: at most one budget kept from before and
            // one per job, each delivered by its deadline + τ (module
            // docs, "Tardiness"): D + P + τ.
            None => Some(t.deadline.saturating_add(r.period).saturating_add(late[k])),
            Some(wk) => {
                let gpu = report
                    .tasks
                    .get(rest_index(i))
                    .and_then(|tr| tr.gpu.as_ref());
                match wk.response(w, t, r, d, gpu, &costs, late[k]) {
                    Ok(b) => Some(b),
                    Err(why) => {
                        short.push(format!("{} ({why})", t.name));
                        None
                    }
                }
            }
        };
        bounds.push(bound);
    }
    for (k, (&i, &r)) in reserved.iter().zip(&res).enumerate() {
        let t = &w.tasks[i];
        // Earlier reservations are in place: a GPU-using one (analysed
        // with the rest) is at its own index now, a CPU-only one goes in.
        let gpu = if t.uses_gpu() {
            report.tasks.remove(i).gpu
        } else {
            None
        };
        let response_time = if tardy.is_ok() { bounds[k] } else { None };
        report.tasks.insert(
            i,
            TaskReport {
                cores: all_cores.clone(),
                response_time,
                charges: Some(demands[k].charges),
                gpu,
                verdict: if response_time.is_some_and(|b| b <= t.deadline) {
                    TaskVerdict::MeetsDeadline
                } else {
                    TaskVerdict::MissesDeadline
                },
                ..task_report(t)
            },
        );
        let entry = PlanTask {
            name: t.name.clone(),
            period: t.period,
            deadline: t.deadline,
            cores: all_cores.clone(),
            sched_fifo_priority: None,
            reservation: Some(if t.uses_gpu() {
                r
            } else {
                runnable(t, r, demands[k].runtime_need)
            }),
            pieces: Vec::new(),
        };
        if t.uses_gpu() {
            plan.tasks[i] = entry;
        } else {
            plan.tasks.insert(i, entry);
        }
    }
    let names: Vec<&str> = reserved.iter().map(|&i| w.tasks[i].name.as_str()).collect();
    report.total_utilization = w
        .tasks
        .iter()
        .map(|t| t.wcet as f64 / t.period as f64)
        .sum();
    report.notes.push(format!(
        "CPU reservations ({}) run as SCHED_DEADLINE threads on all {m} core(s), above every \
         fixed-priority task: the other tasks are analysed with each charged on every core as \
         a server of its runtime every period; the reservations{} by the G-EDF density test \
         (Goossens, Funk & Baruah 2003): {}",
        rtgpu_model::listing::listing(&names),
        if extra.servers.is_empty() {
            ""
        } else {
            " and klmirqd's servers"
        },
        if dense {
            "passes"
        } else {
            "fails, so no reservation is shown to meet its deadline"
        }
    ));
    if wakes.iter().any(Option::is_some) {
        report.notes.push(
            "GPU-using reservations: an implicit-deadline server (runtime Q every P, P short) \
             whose job wakes at its release, for its token and each engine lock, and at each \
             operation's completion; each wake's work x ends within (⌈x/Q⌉ + 1)·P of the wake \
             whatever the CBS wake-up rule does to its deadline (seed 001 §III-D; the server \
             gets Q by each deadline, Baruah, Goossens & Lipari, RTAS 2002); the bound adds \
             its GPU wait and GPU time, and its holds are stretched by its wakes inside them \
             (our derivation, rtgpu_analysis::workload::GpuWakes)"
                .to_string(),
        );
    }
    if !dense {
        report.notes.push(match &tardy {
            Ok((x, late)) => format!(
                "the reservations fail the density test but fit the cores (U <= m): soft real \
                 time, every reservation's budget at most x + e late under global EDF (Devi & \
                 Anderson, RTS 2008; x = {}), so a CPU-only job ends by D + P + its tardiness \
                 and a GPU-using job's every wake-up may be that late (our derivation, \
                 docs/analyses.md); tardiness: {}",
                duration_words(*x),
                reserved
                    .iter()
                    .zip(late)
                    .map(|(&i, &l)| format!("{} {}", w.tasks[i].name, duration_words(l)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(why) => format!("no tardiness bound either: {why}"),
        });
    }
    if !short.is_empty() {
        report.verdict = Verdict::NotSchedulable;
        report.reason = format!(
            "the CPU reservation(s) {} have no bound within their deadline; {}",
            rtgpu_model::listing::listing(&short),
            report.reason
        );
    } else if !dense {
        report.verdict = Verdict::NotSchedulable;
        report.reason = format!(
            "the CPU reservations ({}) fail the G-EDF density test on {m} core(s){}; {}",
            rtgpu_model::listing::listing(&names),
            if tardy.is_ok() {
                " (soft real time: the bounds shown are tardiness bounds)"
            } else {
                ""
            },
            report.reason
        );
    }
    plan.verdict = report.verdict;
    (report, plan)
}

/// Each reservation's tardiness τ past the density test (module docs,
/// "Tardiness"): Devi & Anderson's x + e over the deadline entities `dl`
/// (the reservations first, in `reserved`'s order), where every τ is at
/// most its reservation's period, with Devi & Anderson's x; Err: why the
/// argument does not cover the workload.
fn tardiness(
    w: &Workload,
    reserved: &[usize],
    res: &[Reservation],
    dl: &[Task],
    m: u32,
    no_servers: bool,
) -> Result<(Time, Vec<Time>), String> {
    if reserved.len() != w.tasks.len() {
        return Err(
            "fixed-priority tasks run beside the reservations, and their analysis \
             charges each reservation's budget within its period"
                .into(),
        );
    }
    if !no_servers {
        return Err(
            "klmirqd's servers run beside them, and the bottom-half waits assume each \
             server's budget within its period"
                .into(),
        );
    }
    let r = edf::gedf_tardiness(dl, m);
    if let Some(why) = &r.reason {
        return Err(format!(
            "Devi & Anderson's bound does not apply: {}",
            super::edf::describe_rejection(why, w)
        ));
    }
    let Some(x) = r.x else {
        return Err("Devi & Anderson's bound does not apply".into());
    };
    let mut late = Vec::with_capacity(res.len());
    for ((&i, rv), tt) in reserved.iter().zip(res).zip(&r.tasks) {
        let Some(tau) = tt.tardiness else {
            return Err("Devi & Anderson's bound does not apply".into());
        };
        if tau > rv.period {
            return Err(format!(
                "{}'s budgets may end {} late, more than its period {}: Linux then restarts \
                 its period, which this argument does not cover",
                w.tasks[i].name,
                duration_words(tau),
                duration_words(rv.period)
            ));
        }
        late.push(tau);
    }
    Ok((x, late))
}

/// What `rtgpu run` applies for a CPU-only reservation `r` of task `t`
/// whose job needs `need` of runtime: `r`, or where the release latency
/// left it no room for the job (a deadline below its runtime need or the
/// kernel's 1,024 ns minimum; the verdict then names the task), the
/// reservation without that latency (deadline and period D − J), so the
/// thread still runs as a reservation, best effort.
fn runnable(t: &rtgpu_model::Task, r: Reservation, need: Time) -> Reservation {
    if r.deadline >= need.max(server::MIN_DEADLINE_RUNTIME) {
        return r;
    }
    let mut plain = Reservation::of(t);
    plain.runtime = plain.runtime.max(need).min(plain.deadline);
    plain
}

/// A GPU-using reservation in [`analyze_tasks`]: its workload index and how
/// much longer its wake-ups may make a GPU hold ([`GpuWakes::hold_latency`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct DlGpuOwner {
    pub(super) task: usize,
    pub(super) hold_stretch: Time,
}

/// The wake-ups of a GPU-using reservation's job and the CPU work each
/// needs. **Our derivation** (seed 001 §III-D names the problem: a job
/// woken by its GPU's completion may have its deadline postponed by the
/// CBS wake-up rule; Linux-RTXG changes the kernel, rtgpu charges it):
///
/// - **Wake-ups**: its release (the first half of its CPU work, with its
///   release and switches), the grant of its token, of each engine lock
///   (at most one per operation, and one for the GPU lock), each
///   operation's completion (at most max(η, operations) of them: the
///   owner resumes to go on, paying 2(Δsch + Δcxs), and under klmirqd's
///   dependent mode or PAI also the bottom half, which a SCHED_DEADLINE
///   owner runs in its own thread and budget: no fixed priority can stand
///   for a deadline), and the end of its GPU section (the second half).
/// - **Per wake** (implicit-deadline server, runtime Q, period P): work x
///   starting at wake t ends by t + (⌈x/Q⌉ + 1)·P. At the wake the CBS
///   either keeps the current deadline d and budget q (d ≤ t + P: every
///   deadline was set P after some earlier instant) or starts a new one at
///   t + P with Q. Either way q (or Q) is served by the deadline (the
///   server meets its deadlines if the reservations pass the density test:
///   Baruah, Goossens & Lipari, RTAS 2002, for the M-CBS on global EDF),
///   and each replenishment serves Q more one period later.
/// - **Per job**: Σ_k (⌈x_k/Q⌉ + 1)·P ≤ (⌈X/Q⌉ + 2w − 1)·P with X = Σ x_k
///   and w wakes (Σ⌈a_k⌉ ≤ ⌈Σ a_k⌉ + w − 1); when Q ≥ X no wake after the
///   first throttle of the job can find its budget short, so at most
///   (w + 1)·P. The bound is this, the release jitter, and the GPU part
///   ([`GpuWakes::response`]).
/// - **Server**: P = (D − J)/(8(w + 1)), within [100 us, T] (Linux's
///   default `sched_deadline_period_min_us`); Q = 4·X'·P/(D − J), X' the
///   job's CPU work with the margin of [`Reservation::of`], so that the
///   CPU work takes about a quarter of D − J and the wake-ups another
///   quarter, within [the largest in-section wake's work, P].
#[derive(Debug, Clone, Copy)]
struct GpuWakes {
    /// Wake-ups inside the GPU section (token, locks, completions).
    in_section: u64,
    /// The work of one of them.
    resume: Time,
}

impl GpuWakes {
    /// `None` for a CPU-only task.
    fn of(w: &Workload, i: usize, own_bottom_halves: bool) -> Option<GpuWakes> {
        let t = &w.tasks[i];
        let g = t.gpu.as_ref()?;
        let staged = w.policy.gpu_allocator == rtgpu_model::GpuAllocator::KFmlp;
        let ops = u64::from(g.operations_for(w.policy.chunk_size, staged));
        // A batched section (`Workload::batched_section`) wakes its job
        // once, at its last operation's completion.
        let batched = w.batched_section(i);
        let completions = if batched {
            1
        } else {
            ops.max(u64::from(g.interrupts))
        };
        let o = &w.overheads;
        let mut resume = o.sch.saturating_add(o.cxs).saturating_mul(2);
        if own_bottom_halves {
            let bh = match workload_gpu::interrupt_method(&w.policy) {
                // PAI's bottom half and its two scheduling decisions
                // (the simulator's cost of a PAI bottom half).
                InterruptMethod::Pai => o.bh.saturating_add(o.paisch.saturating_mul(2)),
                _ => o.bh,
            };
            resume = resume.saturating_add(bh);
        }
        // An engine lock is contended only where another job can hold an
        // engine of the same GPU: with more than one token per GPU, or a
        // migration's copy on a GPU whose token another job holds. Else
        // every lock is granted at once, without a sleep (the runtime's
        // arbiter; the simulator never sleeps for a grant).
        let staged_or_peer = w
            .platform
            .clusters
            .iter()
            .map(|c| c.gpus.len())
            .sum::<usize>()
            > 1
            && w.tasks
                .iter()
                .any(|u| u.gpu.as_ref().is_some_and(|g| g.state > 0));
        let contended =
            !batched && w.policy.engine_locks && (w.policy.tokens() > 1 || staged_or_peer);
        let lock_wakes = if contended { ops + 1 } else { 0 };
        Some(GpuWakes {
            // The token, one lock per operation and the GPU lock where
            // they can be contended, and every completion.
            in_section: 1 + lock_wakes + completions,
            resume,
        })
    }

    /// All wake-ups of a job: the two CPU halves too.
    fn wakes(&self) -> u64 {
        self.in_section + 2
    }

    /// The server (runtime Q, period P) as the fixed-priority tasks are
    /// charged it, with one scheduling decision and context switch c =
    /// Δsch + Δcxs for each dispatch of its thread that may preempt one of
    /// them (the victim's, as the simulator charges a preempted thread):
    /// - Q + 2c every P: a replenishment after a throttle (at least P
    ///   apart), 2c so that the back-to-back staircase covers the ⌈t/P⌉ + 1
    ///   of them a window t can hold;
    /// - 2wc(1 + ⌈J/T⌉) every T, w = [`Self::wakes`]: the wake-ups of the
    ///   ⌈(t + J)/T⌉ + 1 jobs that can wake in a window t (a job wakes
    ///   within its deadline D <= T of its release), likewise covered.
    ///
    /// (Found missing by a targeted search: a reservation waking at each of
    /// many short copy chunks preempted a FIFO task past its bound.)
    fn charged_servers(&self, w: &Workload, t: &rtgpu_model::Task, r: &Reservation) -> [Server; 2] {
        let o = &w.overheads;
        let c = o.sch.saturating_add(o.cxs);
        let jobs = 1 + t.jitter.div_ceil(t.period.max(1));
        let wake_switches = overheads::mul(self.wakes().saturating_mul(2).saturating_mul(jobs), c);
        [
            Server::new(r.runtime.saturating_add(overheads::mul(2, c)), r.period),
            Server::new(wake_switches, t.period),
        ]
    }

    /// The job's CPU work before the overheads that [`ReservationCosts`]
    /// adds (release, switches, ticks, preemptions): C and the in-section
    /// wake-ups' work.
    fn job_work(&self, t: &rtgpu_model::Task) -> Time {
        t.wcet
            .saturating_add(overheads::mul(self.in_section, self.resume))
    }

    /// The server (module docs of [`GpuWakes`]).
    fn server(&self, w: &Workload, t: &rtgpu_model::Task, sizing: ServerSizing) -> Reservation {
        let o = &w.overheads;
        let window = t.deadline.saturating_sub(t.jitter).max(1);
        let wakes = self.wakes();
        let period = (window / (8 * (wakes + 1)) / sizing.period_divisor.max(1))
            .max(MIN_GPU_SERVER_PERIOD)
            .min(t.period);
        let work = self
            .job_work(t)
            .saturating_add(o.rel)
            .saturating_add(o.ipi)
            .saturating_add(o.sch.saturating_add(o.cxs).saturating_mul(2));
        let work = work.saturating_add(Reservation::margin(t.wcet));
        let runtime = ((u128::from(sizing.share) * work as u128 * period as u128)
            .div_ceil(window as u128))
        .min(Time::MAX as u128) as Time;
        let floor = self.resume.max(server::MIN_DEADLINE_RUNTIME);
        Reservation {
            runtime: runtime.max(floor).min(period),
            deadline: period,
            period,
        }
    }

    /// How long `n` wake-ups with `work` in all (their own work and
    /// `switches` of preemptions) may take: (⌈X/Q⌉ + 2n − 1)·P, or
    /// (n + 1)·P when Q ≥ X (module docs).
    ///
    /// Past the density test each budget may be delivered up to `late` (τ)
    /// after its deadline: (⌈X/Q⌉ + 2n − 1)·P + n·τ (module docs,
    /// "Tardiness"; the (n + 1)·P case is not claimed there).
    fn latency(n: u64, work: Time, r: &Reservation, late: Time) -> Time {
        if n == 0 {
            return 0;
        }
        let q = r.runtime.max(1);
        let periods = if work <= q && late == 0 {
            n + 1
        } else {
            work.div_ceil(q).saturating_add(2 * n - 1)
        };
        overheads::mul(periods, r.period).saturating_add(overheads::mul(n, late))
    }

    /// How much longer its wake-ups inside its GPU section may keep its
    /// GPU (added to its hold where it blocks others).
    fn hold_latency(&self, r: &Reservation, switches: Time, late: Time) -> Time {
        let work = overheads::mul(self.in_section, self.resume).saturating_add(switches);
        GpuWakes::latency(self.in_section, work, r, late)
    }

    /// The bound on a job's response: J + its wake-ups' latency + its GPU
    /// part (its GPU wait b_i, own GPU time with engine waits and
    /// bottom-half server waits, its own η(Δth + Δbh), and the top halves
    /// of the window that may delay its completions). Err: why there is
    /// none (named in the verdict).
    // The job's own parameters (t, r, d), its GPU analysis, the overheads
    // and the tardiness: none of them belongs to another.
    #[allow(clippy::too_many_arguments)]
    fn response(
        &self,
        w: &Workload,
        t: &rtgpu_model::Task,
        r: &Reservation,
        d: &ReservationDemand,
        gpu: Option<&GpuTaskReport>,
        costs: &ReservationCosts,
        late: Time,
    ) -> Result<Time, String> {
        // Its GPU wait counts the holds of the tasks ahead of it, stretched
        // by their CPU waits inside their sections: charged for P-FP
        // holders (`section_stretch`) and for reservations (their wake-up
        // latencies, `hold_latency`), not for C-FP, G-FP or EDF holders.
        let all_reserved = w.tasks.iter().all(|u| u.reservation || !u.uses_gpu());
        if w.policy.cpu_scheduler != CpuScheduler::PartitionedFp && !all_reserved {
            return Err(format!(
                "a GPU-using reservation is bounded under P-FP, or where every GPU-using task \
                 is a reservation: under {} the hold stretch of its fixed-priority or EDF \
                 token holders is not charged",
                scheduler_name(w.policy.cpu_scheduler)
            ));
        }
        if workload_gpu::interrupt_method(&w.policy) == InterruptMethod::FixedPriorityThreads {
            return Err(
                "fixed-priority interrupt threads run below SCHED_DEADLINE, so its bottom halves \
                 have no bound; use klmirqd, PAI or SLIH"
                    .into(),
            );
        }
        let Some(g) = gpu else {
            return Err("no GPU analysis".into());
        };
        if let Some(why) = &g.unbounded_because {
            return Err(format!("GPU wait unbounded: {why}"));
        }
        if r.runtime < self.resume {
            return Err(format!(
                "runtime {} < one resumption's work {}",
                duration_words(r.runtime),
                duration_words(self.resume)
            ));
        }
        let o = &w.overheads;
        let window = t.deadline.saturating_sub(t.jitter);
        let own_irq = overheads::mul(u64::from(g.interrupts), o.th.saturating_add(o.bh));
        let gpu_part = [
            g.token_blocking.unwrap_or(Time::MAX),
            g.copy_time,
            g.kernel_time,
            g.engine_blocking.unwrap_or(0),
            g.bottom_half_wait.unwrap_or(0),
            own_irq,
            costs.top_halves(window),
        ]
        .into_iter()
        .fold(0, Time::saturating_add);
        let cpu = GpuWakes::latency(self.wakes(), d.runtime_need, r, late);
        // Its release wakes it Δrel + Δipi late (seed 000 Fig. 9).
        let bound = [t.jitter, o.rel, o.ipi, cpu, gpu_part]
            .into_iter()
            .fold(0, Time::saturating_add);
        // Past the density test a bound beyond D is the soft real-time
        // answer; within it, the job must meet D.
        if bound > t.deadline && late == 0 {
            return Err(format!(
                "bound {} > deadline {}: wake-ups {} every {} with {} of work, GPU part {}",
                duration_words(bound),
                duration_words(t.deadline),
                self.wakes(),
                duration_words(r.period),
                duration_words(d.runtime_need),
                duration_words(gpu_part)
            ));
        }
        Ok(bound)
    }
}

/// Rounds of growing the spans over which a GPU-using reservation's hold
/// counts preemptions before the whole window is taken.
const MAX_HOLD_ROUNDS: usize = 8;

/// Linux's default `kernel.sched_deadline_period_min_us` (100 us): the
/// shortest period `sched_setattr` accepts.
const MIN_GPU_SERVER_PERIOD: Time = 100_000;

/// What seed 000 App. B's overheads add to the jobs of CPU reservations
/// ([`analyze_reservations`]), as the simulator injects them and a stock
/// kernel incurs them.
///
/// A reservation's job pays from its runtime its own release and
/// scheduling (Eqs. 6, 9: rel + ipi, 2(sch + cxs)), the ticks of its window
/// (Eq. 24) and one scheduling and context switch each time another
/// deadline thread preempts it (a preempted job pays for its preemption in
/// the simulator; at most one per release or replenishment of another
/// reservation or server in its window, and one per wake-up of a klmirqd
/// server, which wakes at most once per GPU interrupt). The top halves of
/// GPU interrupts (H of Eq. 11 over the window D − J, each as long as the
/// method's non-preemptive part, Eqs. 12, 14, 17) freeze the core they land
/// on, a deadline thread's included, without consuming its runtime (the
/// simulator; a kernel built with `CONFIG_IRQ_TIME_ACCOUNTING`, which does
/// not charge hard-interrupt time to the running task): they lengthen the
/// time a job holds a core, which the density test counts.
struct ReservationCosts<'a> {
    w: &'a Workload,
    method: InterruptMethod,
    /// Per GPU-using task: (window w_j, period p_j, η_j) for Eq. 11, w_j its
    /// response bound in the analysis of the other tasks, at least its
    /// deadline (fixed priority accepts a set only if no deadline is
    /// missed).
    gpu: Vec<(Time, Time, u32)>,
    /// The periods of the reservations, then of the servers.
    dl_periods: Vec<Time>,
    /// Per reservation (same order): a GPU-using one's (T, J, wake-ups per
    /// job), each wake-up a dispatch that may preempt ([`GpuWakes`]).
    dl_wakes: Vec<Option<(Time, Time, u64)>>,
    servers: bool,
}

/// One reservation's job, overheads included.
struct ReservationDemand {
    /// Seed 000 App. B's charges (`total`: C and every overhead, the top
    /// halves included).
    charges: Charges,
    /// What its runtime pays: `total`, the top halves included (charged to
    /// the interrupted thread's runtime unless the kernel accounts
    /// interrupt time apart).
    runtime_need: Time,
    /// How long it holds a core per job: its runtime, or its whole
    /// demand with the top halves where that is more.
    occupancy: Time,
}

impl<'a> ReservationCosts<'a> {
    /// Every GPU-using task's interrupts count, each in windows of its
    /// deadline: seed 000's argument up to the first deadline miss (a
    /// workload with a miss is not schedulable anyway).
    fn new(
        w: &'a Workload,
        res: &[Reservation],
        dl_wakes: Vec<Option<(Time, Time, u64)>>,
        servers: &[Server],
    ) -> ReservationCosts<'a> {
        let gpu = w
            .tasks
            .iter()
            .filter_map(|t| Some((t.deadline, t.period, t.gpu.as_ref()?.interrupts)))
            .collect();
        ReservationCosts {
            w,
            method: workload_gpu::interrupt_method(&w.policy),
            gpu,
            dl_periods: res
                .iter()
                .map(|r| r.period)
                .chain(servers.iter().map(|s| s.period))
                .collect(),
            dl_wakes,
            servers: !servers.is_empty(),
        }
    }

    /// H (seed 000 Eq. 11): the GPU interrupts that may occur in a window.
    fn interrupts(&self, window: Time) -> u64 {
        let mut windows = vec![window];
        let mut periods = vec![1];
        let mut etas = vec![0];
        for &(w, p, eta) in &self.gpu {
            windows.push(w);
            periods.push(p);
            etas.push(eta);
        }
        overheads::interrupt_count(0, &windows, &periods, &etas)
    }

    /// The charges of a job of `cpu` ns of work with window `window`.
    fn charges(&self, cpu: Time, window: Time) -> Charges {
        let task = OverheadTask { cpu, gpu: None };
        let h = self.interrupts(window);
        overheads::inflate(&task, h, window, &self.w.overheads, self.method)
    }

    /// The top halves that may freeze a deadline thread within a window.
    fn top_halves(&self, window: Time) -> Time {
        self.charges(0, window).interrupts
    }

    /// Reservation `k` (of WCET `wcet`, reservation `r`): over its
    /// deadline.
    fn demand(&self, k: usize, wcet: Time, r: &Reservation) -> ReservationDemand {
        let mut d = self.demand_over(k, wcet, r.deadline, r);
        // One job per server period: its work and overheads with the top
        // halves that freeze it (all of `total`), or its runtime (a kernel
        // that charges interrupt time to the thread throttles it there).
        d.occupancy = r.runtime.max(d.charges.total);
        d
    }

    /// Reservation `k`'s job of `work` ns of CPU work whose events are
    /// counted over `window`.
    fn demand_over(
        &self,
        k: usize,
        work: Time,
        window: Time,
        r: &Reservation,
    ) -> ReservationDemand {
        let mut charges = self.charges(work, window);
        let switches = self.preemption_switches(k, window);
        charges.scheduling = charges.scheduling.saturating_add(switches);
        charges.total = charges.total.saturating_add(switches);
        ReservationDemand {
            // The top halves too: a kernel without
            // CONFIG_IRQ_TIME_ACCOUNTING (the H100 box's 6.18) charges
            // hard-interrupt time to the task it interrupted.
            runtime_need: charges.total,
            // A server period (a GPU-using reservation's job spans many):
            // its runtime and the top halves that may freeze it.
            occupancy: r.runtime.saturating_add(charges.interrupts),
            charges,
        }
    }

    /// One scheduling decision and context switch per possible preemption
    /// of reservation `k` by another deadline thread in `window`: a
    /// release or replenishment of another reservation or server, a
    /// wake-up of a GPU-using reservation (each of its jobs' wake-ups,
    /// [`GpuWakes::wakes`], for every job that can wake in the window: at
    /// most ⌈(window + J)/T⌉ + 1), and a wake-up of a klmirqd server (at
    /// most one per GPU interrupt).
    fn preemption_switches(&self, k: usize, window: Time) -> Time {
        let o = &self.w.overheads;
        let mut preemptions: u64 = self
            .dl_periods
            .iter()
            .enumerate()
            .filter(|&(e, _)| e != k)
            .map(|(e, &p)| {
                let wakes = match self.dl_wakes.get(e).copied().flatten() {
                    Some((t, j, n)) => {
                        (window.saturating_add(j).div_ceil(t.max(1)) + 1).saturating_mul(n)
                    }
                    None => 0,
                };
                (window.div_ceil(p.max(1)) + 1).saturating_add(wakes)
            })
            .sum();
        if self.servers {
            preemptions = preemptions.saturating_add(self.interrupts(window));
        }
        overheads::mul(preemptions, o.sch.saturating_add(o.cxs))
    }
}
