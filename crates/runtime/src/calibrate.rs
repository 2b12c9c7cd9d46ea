//! The overheads of this machine, as far as user space can measure them: a
//! short self-measurement (about 1.5 s) with real threads and real
//! scheduling system calls, so that `rtgpu run` can compare its measured
//! response times with bounds that charge this machine's costs rather than
//! those of seed 000's 2012 testbed (Table III, [`Overheads::default`]).
//!
//! # What is measured, and how (seed 000 App. B, Table III)
//!
//! Seed 000 App. B charges a CPU-only job 2(Δsch + Δcxs) + Δrel + Δipi plus
//! ⌈w/Q⌉·Δtck (Eqs. 6, 9, 24). The probes, each on real threads at the
//! highest real-time policy the machine permits ([`ProbePolicy`]):
//!
//! | symbol | seed 000's meaning | probe | value used |
//! |---|---|---|---|
//! | Δrel | timer interrupt to the job in its ready queue (Fig. 9, [t2, t3]) | a thread per allowed CPU sleeps with an absolute `clock_nanosleep` (2,000 times at a 500 us period); sample = actual wake-up − target | the longest wake-up latency, whole |
//! | Δsch, Δcxs | a scheduling decision; a context switch (Eq. 6) | two threads pinned to one CPU hand a futex word back and forth (paced, one round trip per 100 us); sample = the receiver's clock when it returns from `futex_wait` − the sender's clock just before `futex_wake` | the longest one-way hand-off h: Δsch = ⌈h/2⌉, Δcxs = ⌊h/2⌋ |
//! | Δipi | the IPI that makes another CPU schedule the job (Fig. 9, [t3, t4]) | the same hand-off between threads pinned to two CPUs (pairs across the halves of the CPU list), needs ≥ 2 allowed CPUs | longest cross-CPU hand-off − longest same-CPU one, 0 if negative |
//! | Δtck | the tick handler (Eq. 24) | a thread per allowed CPU reads CLOCK_MONOTONIC back to back for 200 ms (windows of 20 ms); a gap between two reads is time the CPU was taken away (osnoise-style) | the longest gap |
//!
//! Not measurable from user space without a GPU and a kernel trace, so
//! Table III's values stay, and every output names them as not measured:
//! Δth and Δbh (GPU interrupt top and bottom halves), Δkrel (klmirqd thread
//! release), Δpaisch and Δpairel (PAI). The tick quantum Q stays 1 ms, as
//! conservative as Table III for any kernel with HZ ≤ 1000.
//!
//! How the figures map, and what they over-count:
//! - **Δrel** is the whole wake-up latency: hardware delivery of the timer
//!   interrupt (seed 000's Δhw, which the seed ignores as equal for the
//!   methods it compares, but which is what a virtual machine adds), the
//!   timer ISR, the scheduling decision and context switch to the woken
//!   thread, and the return to user space. It is not reduced by the Δsch +
//!   Δcxs measured separately: those come from other samples, and the
//!   maximum of a difference is not the difference of the maxima. A
//!   release is thus charged its scheduling decision and switch twice,
//!   a few microseconds.
//! - **Δsch + Δcxs** = one hand-off on one CPU, the wake-up of a sleeping
//!   thread, its sender blocking, the scheduler's pick and the switch. Eq.
//!   6 charges two of them per job (release and completion), so one
//!   hand-off is split evenly between the two symbols; only their sum
//!   enters any charge of this crate's analysis.
//! - **Δipi** is what a hand-off to another CPU costs beyond one on the
//!   same CPU: the IPI, and waking that CPU from idle. The charge Δipi +
//!   Δsch + Δcxs then equals the longest cross-CPU hand-off seen.
//! - **Δtck** is an upper bound on a tick's cost: the longest gap includes
//!   any interrupt, softirq or (on a virtual machine) the host taking the
//!   virtual CPU away, charged once per quantum by Eq. 24, which is
//!   pessimistic where such interruptions are rarer than ticks.
//!
//! # Why the maximum
//! Seed 000 averages inter-quartile values because its analysis is soft
//! real-time (bounded tardiness). Here the figures feed the hard bounds
//! printed beside measured response times; a bound must not be undercut
//! by the run it is used for, so each value is the largest sample seen,
//! with no margin added and none removed (the p99 and median are kept in
//! [`Measured::summary`] for the reader). A longer run may still see a
//! larger value than these short probes: the bound is as good as the
//! calibration's coverage of the machine's bad moments.
//!
//! # Policy
//! SCHED_FIFO 98 where permitted (above every task thread `rtgpu run`
//! starts, below the kernel's priority-99 threads), else SCHED_DEADLINE
//! (unpinned, as the kernel requires, with small reservations; same- and
//! cross-CPU hand-offs are then told apart by the CPU each party ran on;
//! with no same-CPU sample, the longest cross-CPU hand-off counts whole as
//! Δsch + Δcxs and Δipi is 0),
//! else SCHED_OTHER, recorded in [`Measured::policy`]: SCHED_OTHER figures
//! are not real-time figures, and the outputs say so.
//!
//! The cache of a machine's measurement is [`cache`].

pub mod cache;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use rtgpu_model::Overheads;

use crate::futex::{self, Scope};
use crate::os::{self, monotonic_now, Nanos, SchedPolicy};

/// What to measure, and how much.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalibrationConfig {
    /// Timer wake-ups per allowed CPU.
    pub wake_samples: usize,
    /// Period of the timer wake-ups.
    pub wake_period: Nanos,
    /// One-way futex hand-offs per CPU (same-CPU) and per pair of CPUs
    /// (cross-CPU); half as many round trips.
    pub handoff_samples: usize,
    /// Time between round trips of the hand-off probes (each starts from
    /// sleeping threads, as a job's wake-up does).
    pub handoff_pace: Nanos,
    /// Spinning time per allowed CPU for the tick probe.
    pub spin_total: Nanos,
    /// Longest uninterrupted spin window (a 1 ms pause between windows
    /// lets the kernel's own threads run).
    pub spin_window: Nanos,
    /// Gaps between clock reads above this count as interruptions.
    pub gap_threshold: Nanos,
}

impl Default for CalibrationConfig {
    /// About 1.5 s: 2,000 wake-ups at 500 us, 2,000 hand-offs each way,
    /// 200 ms of spinning per CPU.
    fn default() -> Self {
        CalibrationConfig {
            wake_samples: 2_000,
            wake_period: 500_000,
            handoff_samples: 2_000,
            handoff_pace: 100_000,
            spin_total: 200_000_000,
            spin_window: 20_000_000,
            gap_threshold: 1_000,
        }
    }
}

impl CalibrationConfig {
    /// A tenth of the default (tests of the plumbing).
    pub fn quick() -> Self {
        CalibrationConfig {
            wake_samples: 200,
            handoff_samples: 200,
            spin_total: 20_000_000,
            spin_window: 5_000_000,
            ..CalibrationConfig::default()
        }
    }
}

/// The policy the probe threads ran at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbePolicy {
    /// SCHED_FIFO at this priority (98 where the kernel allows it).
    Fifo { priority: u8 },
    /// SCHED_DEADLINE reservations (unpinned).
    Deadline,
    /// SCHED_OTHER: not real-time figures.
    Other,
}

impl ProbePolicy {
    /// The highest policy `caps` permits: SCHED_FIFO 98 (or the highest
    /// priority allowed below it), else SCHED_DEADLINE, else SCHED_OTHER.
    pub fn best(caps: &os::Capabilities) -> ProbePolicy {
        if caps.fifo && caps.max_fifo_priority > 0 {
            ProbePolicy::Fifo {
                priority: caps.max_fifo_priority.min(98),
            }
        } else if caps.deadline {
            ProbePolicy::Deadline
        } else {
            ProbePolicy::Other
        }
    }

    /// The highest policy this process gets: [`ProbePolicy::best`] of
    /// [`os::probe_capabilities`], with SCHED_FIFO's priority tried on a
    /// short-lived thread first (an RLIMIT_RTPRIO below 98 allows SCHED_FIFO
    /// but not at 98: then the limit's priority, so the probes are not
    /// refused and the cache key stays stable).
    pub fn this_machine() -> ProbePolicy {
        let best = ProbePolicy::best(&os::probe_capabilities());
        let ProbePolicy::Fifo { priority } = best else {
            return best;
        };
        let try_fifo = |p: u8| {
            thread::spawn(move || {
                os::set_sched_policy(0, SchedPolicy::Fifo { priority: p }).is_ok()
            })
            .join()
            .unwrap_or(false)
        };
        if try_fifo(priority) {
            return best;
        }
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: lim is a valid rlimit for getrlimit to fill.
        let limit = if unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut lim) } == 0 {
            u8::try_from(lim.rlim_cur.min(99)).unwrap_or(0)
        } else {
            0
        };
        if limit >= 1 && limit < priority && try_fifo(limit) {
            ProbePolicy::Fifo { priority: limit }
        } else {
            ProbePolicy::best(&os::Capabilities {
                fifo: false,
                ..os::probe_capabilities()
            })
        }
    }

    /// Words for the outputs: "SCHED_FIFO 98", "SCHED_DEADLINE",
    /// "SCHED_OTHER".
    pub fn describe(self) -> String {
        match self {
            ProbePolicy::Fifo { priority } => format!("SCHED_FIFO {priority}"),
            ProbePolicy::Deadline => "SCHED_DEADLINE".to_string(),
            ProbePolicy::Other => "SCHED_OTHER".to_string(),
        }
    }

    /// A token for the cache file and key: `fifo-98`, `deadline`, `other`.
    pub fn token(self) -> String {
        match self {
            ProbePolicy::Fifo { priority } => format!("fifo-{priority}"),
            ProbePolicy::Deadline => "deadline".to_string(),
            ProbePolicy::Other => "other".to_string(),
        }
    }

    /// Reads a [`ProbePolicy::token`] back.
    pub fn from_token(s: &str) -> Option<ProbePolicy> {
        match s {
            "deadline" => Some(ProbePolicy::Deadline),
            "other" => Some(ProbePolicy::Other),
            _ => s
                .strip_prefix("fifo-")
                .and_then(|p| p.parse().ok())
                .filter(|&p| (1..=99).contains(&p))
                .map(|priority| ProbePolicy::Fifo { priority }),
        }
    }

    /// SCHED_FIFO or SCHED_DEADLINE.
    pub fn is_realtime(self) -> bool {
        !matches!(self, ProbePolicy::Other)
    }
}

/// What identifies a machine and its set-up for the cache ([`cache`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// `uname -n`.
    pub host: String,
    /// `uname -r`.
    pub kernel: String,
    /// The first `model name` of /proc/cpuinfo (or "unknown").
    pub cpu_model: String,
    /// CPUs this process may run on.
    pub cpus: Vec<usize>,
}

impl Machine {
    /// This machine, as this process sees it.
    pub fn this() -> Machine {
        let (host, kernel) = uname();
        Machine {
            host,
            kernel,
            cpu_model: cpu_model(),
            cpus: os::affinity(0).unwrap_or_default(),
        }
    }

    /// A short hex key of the machine and the probes' policy: FNV-1a (64
    /// bits, stable across Rust releases, unlike std's hasher) over host
    /// name, kernel release, CPU model, allowed CPUs and policy.
    pub fn key(&self, policy: ProbePolicy) -> String {
        let text = format!(
            "{}\0{}\0{}\0{}\0{}",
            self.host,
            self.kernel,
            self.cpu_model,
            cpu_list(&self.cpus),
            policy.token()
        );
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{h:016x}")
    }
}

/// Sample counts of a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Samples {
    /// Timer wake-ups (all CPUs together).
    pub wake: usize,
    /// One-way hand-offs between threads on one CPU.
    pub same_cpu: usize,
    /// One-way hand-offs between threads on two CPUs.
    pub cross_cpu: usize,
    /// Time spent spinning for the tick probe (all CPUs together).
    pub spin: Nanos,
    /// Gaps above the threshold seen while spinning.
    pub interruptions: usize,
}

/// The overheads of this machine that user space can measure (module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    /// Δrel: longest timer wake-up latency.
    pub rel: Option<Nanos>,
    /// Δsch: half (rounded up) of the longest same-CPU hand-off.
    pub sch: Option<Nanos>,
    /// Δcxs: half (rounded down) of the longest same-CPU hand-off.
    pub cxs: Option<Nanos>,
    /// Δipi: longest cross-CPU hand-off less the longest same-CPU one.
    pub ipi: Option<Nanos>,
    /// Δtck: longest interruption of a spinning thread.
    pub tck: Option<Nanos>,
    /// The policy the probes ran at.
    pub policy: ProbePolicy,
    /// The machine measured.
    pub machine: Machine,
    pub samples: Samples,
    /// When, in seconds since the Unix epoch.
    pub measured_at: u64,
    /// One line per probe: median, p99 and maximum.
    pub summary: Vec<String>,
    /// What went differently from the plan (a probe thread refused its
    /// policy, one CPU so no IPI, ...).
    pub notes: Vec<String>,
}

/// The keys measured here, in the order the outputs list them.
pub const MEASURED_KEYS: [&str; 5] = ["rel", "sch", "cxs", "ipi", "tck"];

/// Table III's keys that user space cannot measure (GPU interrupts).
pub const NOT_MEASURED_KEYS: [&str; 5] = ["th", "bh", "krel", "paisch", "pairel"];

impl Measured {
    /// The measured value of `key` (one of [`MEASURED_KEYS`]).
    pub fn get(&self, key: &str) -> Option<Nanos> {
        match key {
            "rel" => self.rel,
            "sch" => self.sch,
            "cxs" => self.cxs,
            "ipi" => self.ipi,
            "tck" => self.tck,
            _ => None,
        }
    }

    fn slot(&mut self, key: &str) -> Option<&mut Option<Nanos>> {
        match key {
            "rel" => Some(&mut self.rel),
            "sch" => Some(&mut self.sch),
            "cxs" => Some(&mut self.cxs),
            "ipi" => Some(&mut self.ipi),
            "tck" => Some(&mut self.tck),
            _ => None,
        }
    }

    /// The overheads a bound uses: seed 000 Table III with every measured
    /// value put in its place.
    pub fn overheads(&self) -> Overheads {
        let mut o = Overheads::default();
        for (slot, v) in [
            (&mut o.rel, self.rel),
            (&mut o.sch, self.sch),
            (&mut o.cxs, self.cxs),
            (&mut o.ipi, self.ipi),
            (&mut o.tck, self.tck),
        ] {
            if let Some(v) = v {
                *slot = v;
            }
        }
        o
    }

    /// The keys with a measured value, and those left at Table III's.
    pub fn keys(&self) -> (Vec<&'static str>, Vec<&'static str>) {
        let (mut yes, mut no) = (Vec::new(), Vec::new());
        for k in MEASURED_KEYS {
            if self.get(k).is_some() {
                yes.push(k);
            } else {
                no.push(k);
            }
        }
        no.extend(NOT_MEASURED_KEYS);
        (yes, no)
    }

    /// The measurement as an `[overheads]` table that
    /// `rtgpu_model::parse_overheads` reads (`base = "table-iii"`, so the
    /// keys not measured keep Table III), with the machine, the policy,
    /// the sample counts and the distributions in comments that
    /// [`Measured::from_toml`] reads back.
    pub fn to_toml(&self) -> String {
        let mut o = String::new();
        let line = |o: &mut String, k: &str, v: &str| {
            let _ = writeln!(o, "# {k}: {}", one_line(v));
        };
        let _ = writeln!(
            o,
            "# Overheads of this machine, measured by rtgpu (crates/runtime/src/calibrate.rs)"
        );
        let _ = writeln!(
            o,
            "# with probe threads at {}{}.",
            self.policy.describe(),
            if self.policy.is_realtime() {
                ""
            } else {
                " (not real-time figures)"
            }
        );
        let _ = writeln!(
            o,
            "# Keys not listed were not measured and keep seed 000 Table III's values."
        );
        let _ = writeln!(o, "#");
        line(&mut o, "machine-key", &self.machine.key(self.policy));
        line(
            &mut o,
            "measured-at",
            &format!("{} ({})", self.measured_at, utc_date(self.measured_at)),
        );
        line(&mut o, "host", &self.machine.host);
        line(&mut o, "kernel", &self.machine.kernel);
        line(&mut o, "cpu-model", &self.machine.cpu_model);
        line(&mut o, "cpus", &cpu_list(&self.machine.cpus));
        line(&mut o, "policy", &self.policy.token());
        let s = &self.samples;
        line(
            &mut o,
            "samples",
            &format!(
                "wake={} same-cpu={} cross-cpu={} spin-ns={} interruptions={}",
                s.wake, s.same_cpu, s.cross_cpu, s.spin, s.interruptions
            ),
        );
        let (yes, _) = self.keys();
        line(&mut o, "measured", &yes.join(" "));
        for p in &self.summary {
            line(&mut o, "probe", p);
        }
        for n in &self.notes {
            line(&mut o, "note", n);
        }
        let _ = writeln!(o, "[overheads]");
        let _ = writeln!(o, "base = \"table-iii\"");
        for (key, what) in [
            (
                "rel",
                "longest timer wake-up latency (clock_nanosleep, absolute)",
            ),
            (
                "sch",
                "half of the longest same-CPU futex hand-off, rounded up",
            ),
            (
                "cxs",
                "half of the longest same-CPU futex hand-off, rounded down",
            ),
            (
                "ipi",
                "longest cross-CPU hand-off less the longest same-CPU one",
            ),
            (
                "tck",
                "longest interruption of a thread spinning on the clock",
            ),
        ] {
            match self.get(key) {
                Some(v) => {
                    let _ = writeln!(o, "{key} = \"{v} ns\"  # {what}");
                }
                None => {
                    let _ = writeln!(o, "# {key}: not measured here ({what})");
                }
            }
        }
        for (key, what) in [
            ("th", "GPU interrupt top half"),
            ("bh", "GPU interrupt bottom half"),
            ("krel", "klmirqd thread release"),
            ("paisch", "PAI scheduling"),
            ("pairel", "PAI release"),
        ] {
            let _ = writeln!(
                o,
                "# {key}: not measurable from user space ({what}); Table III"
            );
        }
        o
    }

    /// Reads [`Measured::to_toml`]'s text back; `file` names it in errors.
    /// Returns the measurement and the machine key the file states.
    pub fn from_toml(text: &str, file: &str) -> Result<(Measured, String), String> {
        let overheads = rtgpu_model::parse_overheads(text, file).map_err(|e| e.to_string())?;
        let mut key = None;
        let mut m = Measured {
            rel: None,
            sch: None,
            cxs: None,
            ipi: None,
            tck: None,
            policy: ProbePolicy::Other,
            machine: Machine {
                host: String::new(),
                kernel: String::new(),
                cpu_model: String::new(),
                cpus: Vec::new(),
            },
            samples: Samples::default(),
            measured_at: 0,
            summary: Vec::new(),
            notes: Vec::new(),
        };
        let mut policy = None;
        let mut measured_at = None;
        let mut measured_keys = None;
        for l in text.lines() {
            if l.trim_start().starts_with('[') {
                break;
            }
            let Some((k, v)) = l.strip_prefix("# ").and_then(|r| r.split_once(": ")) else {
                continue;
            };
            let v = v.trim();
            match k {
                "machine-key" => key = Some(v.to_string()),
                "measured-at" => {
                    measured_at = v.split_whitespace().next().and_then(|s| s.parse().ok())
                }
                "host" => m.machine.host = v.to_string(),
                "kernel" => m.machine.kernel = v.to_string(),
                "cpu-model" => m.machine.cpu_model = v.to_string(),
                "cpus" => m.machine.cpus = parse_cpu_list(v).unwrap_or_default(),
                "policy" => policy = ProbePolicy::from_token(v),
                "samples" => m.samples = parse_samples(v),
                "measured" => {
                    measured_keys = Some(v.split_whitespace().map(str::to_string).collect())
                }
                "probe" => m.summary.push(v.to_string()),
                "note" => m.notes.push(v.to_string()),
                _ => {}
            }
        }
        let missing = |what: &str| format!("{file}: not an rtgpu machine measurement (no {what})");
        m.policy = policy.ok_or_else(|| missing("`# policy:` line"))?;
        m.measured_at = measured_at.ok_or_else(|| missing("`# measured-at:` line"))?;
        let measured_keys: Vec<String> =
            measured_keys.ok_or_else(|| missing("`# measured:` line"))?;
        for k in &measured_keys {
            let v = match k.as_str() {
                "rel" => overheads.rel,
                "sch" => overheads.sch,
                "cxs" => overheads.cxs,
                "ipi" => overheads.ipi,
                "tck" => overheads.tck,
                other => return Err(format!("{file}: unknown measured key {other:?}")),
            };
            if let Some(slot) = m.slot(k) {
                *slot = Some(v);
            }
        }
        let key = key.ok_or_else(|| missing("`# machine-key:` line"))?;
        Ok((m, key))
    }

    /// `rel 3.2 us, sch 1.1 us, ...`: the measured values in words.
    pub fn values_text(&self) -> String {
        MEASURED_KEYS
            .iter()
            .filter_map(|&k| {
                self.get(k)
                    .map(|v| format!("{k} {}", rtgpu_model::units::display_duration(v)))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Measures this machine at the highest policy it permits (module docs).
pub fn measure(config: &CalibrationConfig) -> Measured {
    measure_at(config, ProbePolicy::this_machine())
}

/// Measures this machine with the probe threads at `policy`. A probe
/// thread the kernel refuses `policy` runs at SCHED_OTHER, and the result
/// then says SCHED_OTHER, with a note.
pub fn measure_at(config: &CalibrationConfig, policy: ProbePolicy) -> Measured {
    let machine = Machine::this();
    let cpus = if machine.cpus.is_empty() {
        os::current_cpu().into_iter().collect()
    } else {
        machine.cpus.clone()
    };
    let mut notes = Vec::new();
    let mut refused = Vec::new();

    let (wake, r) = wake_probe(config, policy, &cpus);
    refused.extend(r);
    let (same, cross, r) = handoff_probe(config, policy, &cpus);
    refused.extend(r);
    let (spin, r) = spin_probe(config, policy, &cpus);
    refused.extend(r);

    let mut actual = policy;
    if !refused.is_empty() && policy.is_realtime() {
        refused.sort();
        refused.dedup();
        notes.push(format!(
            "the kernel refused {} to some probe threads ({}); they ran at SCHED_OTHER, so these \
             are not real-time figures",
            policy.describe(),
            refused.join("; ")
        ));
        actual = ProbePolicy::Other;
    }
    if !actual.is_realtime() {
        notes.push(
            "probes ran at SCHED_OTHER (no real-time policy permitted): the figures include \
             time other threads took, and are not real-time figures"
                .to_string(),
        );
    }

    let wake_s = Stats::of(wake);
    let same_s = Stats::of(same);
    let cross_s = Stats::of(cross.clone());
    let mut summary = Vec::new();
    if let Some(s) = &wake_s {
        summary.push(format!("timer wake-up latency: {}", s.describe()));
    }
    if let Some(s) = &same_s {
        summary.push(format!("same-CPU futex hand-off: {}", s.describe()));
    }
    if let Some(s) = &cross_s {
        summary.push(format!("cross-CPU futex hand-off: {}", s.describe()));
    }
    summary.push(format!(
        "spinning: {} in all, {} gap(s) over {}, longest {}",
        rtgpu_model::units::display_duration(spin.spun),
        spin.interruptions,
        rtgpu_model::units::display_duration(config.gap_threshold),
        rtgpu_model::units::display_duration(spin.max_gap)
    ));

    // Δsch + Δcxs from the same-CPU hand-off, Δipi from what a cross-CPU
    // one costs beyond it. Without a same-CPU sample (SCHED_DEADLINE
    // threads cannot be pinned), the cross-CPU hand-off is charged whole
    // as Δsch + Δcxs and Δipi is 0: the same total, attributed
    // conservatively (Eq. 6 charges Δsch + Δcxs twice per job).
    let (handoff, ipi) = match (&same_s, &cross_s) {
        (Some(s), Some(c)) => (Some(s.max), Some(c.max.saturating_sub(s.max))),
        (Some(s), None) => {
            notes.push(if cpus.len() < 2 {
                "one CPU allowed: no cross-CPU hand-off, so Δipi keeps Table III".to_string()
            } else {
                "no cross-CPU hand-off was observed: Δipi keeps Table III".to_string()
            });
            (Some(s.max), None)
        }
        (None, Some(c)) => {
            notes.push(
                "no same-CPU hand-off was observed (SCHED_DEADLINE threads cannot be pinned): \
                 Δsch + Δcxs is the longest cross-CPU hand-off, and Δipi 0"
                    .to_string(),
            );
            (Some(c.max), Some(0))
        }
        (None, None) => {
            notes.push(
                "no futex hand-off was observed: Δsch, Δcxs and Δipi keep Table III".to_string(),
            );
            (None, None)
        }
    };
    Measured {
        rel: wake_s.as_ref().map(|s| s.max),
        sch: handoff.map(|h| h.div_ceil(2)),
        cxs: handoff.map(|h| h / 2),
        ipi,
        tck: (spin.spun > 0).then_some(spin.max_gap),
        policy: actual,
        machine: Machine { cpus, ..machine },
        samples: Samples {
            wake: wake_s.as_ref().map_or(0, |s| s.samples),
            same_cpu: same_s.as_ref().map_or(0, |s| s.samples),
            cross_cpu: cross_s.as_ref().map_or(0, |s| s.samples),
            spin: spin.spun,
            interruptions: spin.interruptions,
        },
        measured_at: unix_now(),
        summary,
        notes,
    }
}

// ---------------------------------------------------------------------------
// Probe threads
// ---------------------------------------------------------------------------

/// A SCHED_DEADLINE reservation for probe threads: (runtime, period).
type Reservation = (Nanos, Nanos);

/// Runs `f` on a new thread on `cpu` (pinned unless the policy is
/// SCHED_DEADLINE, whose threads the kernel keeps on every CPU) at
/// `policy`; the thread reports whether its policy was refused.
fn spawn_probe<T: Send + 'static>(
    policy: ProbePolicy,
    cpu: Option<usize>,
    dl: Reservation,
    f: impl FnOnce() -> T + Send + 'static,
) -> thread::JoinHandle<(Option<String>, T)> {
    thread::spawn(move || {
        let refused = enter(policy, cpu, dl).err();
        (refused, f())
    })
}

fn enter(policy: ProbePolicy, cpu: Option<usize>, dl: Reservation) -> Result<(), String> {
    if policy != ProbePolicy::Deadline {
        if let Some(c) = cpu {
            os::set_affinity(0, &[c]).map_err(|e| e.to_string())?;
        }
    }
    let p = match policy {
        ProbePolicy::Fifo { priority } => SchedPolicy::Fifo { priority },
        ProbePolicy::Deadline => SchedPolicy::Deadline {
            runtime: dl.0,
            deadline: dl.1,
            period: dl.1,
            reclaim: false,
        },
        ProbePolicy::Other => return Ok(()),
    };
    os::set_sched_policy(0, p).map_err(|e| e.to_string())
}

/// Joins probe threads: their results, and the refusals they met.
fn join_all<T>(handles: Vec<thread::JoinHandle<(Option<String>, T)>>) -> (Vec<T>, Vec<String>) {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    for h in handles {
        match h.join() {
            Ok((r, v)) => {
                refused.extend(r);
                out.push(v);
            }
            Err(_) => refused.push("a probe thread panicked".to_string()),
        }
    }
    (out, refused)
}

/// Δrel: a thread per CPU sleeps until absolute times `wake_period` apart
/// and records how late it woke. The first samples are dropped (warm-up).
fn wake_probe(
    c: &CalibrationConfig,
    policy: ProbePolicy,
    cpus: &[usize],
) -> (Vec<Nanos>, Vec<String>) {
    const WARM_UP: usize = 5;
    let handles = cpus
        .iter()
        .map(|&cpu| {
            let (n, period) = (c.wake_samples, c.wake_period.max(1));
            spawn_probe(policy, Some(cpu), (period / 5, period), move || {
                let mut lat = Vec::with_capacity(n);
                let mut next = monotonic_now() + period;
                for i in 0..n + WARM_UP {
                    os::sleep_until(next);
                    let now = monotonic_now();
                    if i >= WARM_UP {
                        lat.push(now.saturating_sub(next));
                    }
                    next += period;
                    if next <= now {
                        next = now + period;
                    }
                }
                lat
            })
        })
        .collect();
    let (lats, refused) = join_all(handles);
    (lats.into_iter().flatten().collect(), refused)
}

/// One futex word handed back and forth between two threads.
struct Pong {
    seq: AtomicU32,
    stamp: AtomicU64,
    stamp_cpu: AtomicU32,
    abort: AtomicBool,
}

/// A one-way hand-off: latency, and whether sender and receiver ran on
/// the same CPU.
type Handoff = (Nanos, bool);

/// Δsch + Δcxs and Δipi: one-way hand-offs on one CPU (each CPU, in
/// parallel) and between two (pairs across the halves of the CPU list).
/// Under SCHED_DEADLINE the threads cannot be pinned: one pair runs both
/// phases' worth, and each sample is classified by the CPUs seen.
fn handoff_probe(
    c: &CalibrationConfig,
    policy: ProbePolicy,
    cpus: &[usize],
) -> (Vec<Nanos>, Vec<Nanos>, Vec<String>) {
    let rounds = c.handoff_samples.div_ceil(2);
    let mut all = Vec::new();
    let mut refused = Vec::new();
    let mut run = |pairs: Vec<(Option<usize>, Option<usize>)>, rounds: usize| {
        let mut handles = Vec::new();
        for (a, b) in pairs {
            handles.extend(pingpong(policy, a, b, rounds, c.handoff_pace));
        }
        let (samples, r) = join_all(handles);
        refused.extend(r);
        all.extend(samples.into_iter().flatten());
    };
    if policy == ProbePolicy::Deadline {
        run(vec![(None, None)], rounds * 2);
    } else {
        run(cpus.iter().map(|&c| (Some(c), Some(c))).collect(), rounds);
        let half = cpus.len() / 2;
        if half > 0 {
            run(
                (0..half)
                    .map(|k| (Some(cpus[k]), Some(cpus[k + half])))
                    .collect(),
                rounds,
            );
        }
    }
    let (same, cross): (Vec<Handoff>, Vec<Handoff>) = all.into_iter().partition(|&(_, s)| s);
    (
        same.into_iter().map(|(l, _)| l).collect(),
        cross.into_iter().map(|(l, _)| l).collect(),
        refused,
    )
}

/// Two threads, `a` initiating a round trip every `pace`, `b` answering;
/// both record the hand-offs they receive. Gives up (keeping what it has)
/// if a party stops answering for a second.
fn pingpong(
    policy: ProbePolicy,
    a: Option<usize>,
    b: Option<usize>,
    rounds: usize,
    pace: Nanos,
) -> Vec<thread::JoinHandle<(Option<String>, Vec<Handoff>)>> {
    const WARM_UP: usize = 5;
    const GIVE_UP: Nanos = 1_000_000_000;
    let pong = Arc::new(Pong {
        seq: AtomicU32::new(0),
        stamp: AtomicU64::new(0),
        stamp_cpu: AtomicU32::new(u32::MAX),
        abort: AtomicBool::new(false),
    });
    let dl: Reservation = (200_000, 1_000_000);
    let send = |p: &Pong, next: u32| {
        p.stamp_cpu
            .store(cpu_id(os::current_cpu()), Ordering::Relaxed);
        p.stamp.store(monotonic_now(), Ordering::Relaxed);
        p.seq.store(next, Ordering::Release);
        futex::wake(&p.seq, 1, Scope::Private);
    };
    let receive = |p: &Pong, want: u32| -> Option<Handoff> {
        let give_up = monotonic_now() + GIVE_UP;
        loop {
            let s = p.seq.load(Ordering::Acquire);
            if s == want {
                let now = monotonic_now();
                let cpu = cpu_id(os::current_cpu());
                let sent = p.stamp.load(Ordering::Relaxed);
                let same = cpu != u32::MAX && cpu == p.stamp_cpu.load(Ordering::Relaxed);
                return Some((now.saturating_sub(sent), same));
            }
            if p.abort.load(Ordering::Relaxed) || monotonic_now() > give_up {
                p.abort.store(true, Ordering::Relaxed);
                futex::wake(&p.seq, 1, Scope::Private);
                return None;
            }
            futex::wait(&p.seq, s, Some(10_000_000), Scope::Private);
        }
    };
    let (pa, pb) = (Arc::clone(&pong), pong);
    let initiator = spawn_probe(policy, a, dl, move || {
        let mut got = Vec::with_capacity(rounds);
        let mut next = monotonic_now() + pace;
        for r in 0..(rounds + WARM_UP) as u32 {
            os::sleep_until(next);
            next = next.max(monotonic_now()) + pace;
            send(&pa, 2 * r + 1);
            match receive(&pa, 2 * r + 2) {
                Some(h) if r as usize >= WARM_UP => got.push(h),
                Some(_) => {}
                None => break,
            }
        }
        pa.abort.store(true, Ordering::Relaxed);
        futex::wake(&pa.seq, 1, Scope::Private);
        got
    });
    let responder = spawn_probe(policy, b, dl, move || {
        let mut got = Vec::with_capacity(rounds);
        for r in 0..(rounds + WARM_UP) as u32 {
            match receive(&pb, 2 * r + 1) {
                Some(h) if r as usize >= WARM_UP => got.push(h),
                Some(_) => {}
                None => break,
            }
            send(&pb, 2 * r + 2);
        }
        got
    });
    vec![initiator, responder]
}

fn cpu_id(cpu: Option<usize>) -> u32 {
    cpu.and_then(|c| u32::try_from(c).ok()).unwrap_or(u32::MAX)
}

/// What the spinning threads saw.
#[derive(Debug, Clone, Copy, Default)]
struct Spin {
    spun: Nanos,
    max_gap: Nanos,
    interruptions: usize,
}

/// Δtck: a thread per CPU reads the clock back to back in windows and
/// records the longest gap between two reads. Under SCHED_DEADLINE a
/// window fits the reservation (400 us of a 500 us runtime every 1 ms) and
/// the thread yields the rest of its budget after each.
fn spin_probe(c: &CalibrationConfig, policy: ProbePolicy, cpus: &[usize]) -> (Spin, Vec<String>) {
    let dl: Reservation = (500_000, 1_000_000);
    let window = if policy == ProbePolicy::Deadline {
        c.spin_window.min(400_000)
    } else {
        c.spin_window
    }
    .max(1);
    let (total, threshold) = (c.spin_total, c.gap_threshold);
    let handles = cpus
        .iter()
        .map(|&cpu| {
            spawn_probe(policy, Some(cpu), dl, move || {
                let mut s = Spin::default();
                while s.spun < total {
                    let start = monotonic_now();
                    let end = start + window.min(total - s.spun);
                    let mut prev = start;
                    while prev < end {
                        let now = monotonic_now();
                        let gap = now.saturating_sub(prev);
                        if gap > threshold {
                            s.interruptions += 1;
                        }
                        s.max_gap = s.max_gap.max(gap);
                        prev = now;
                    }
                    s.spun += prev - start;
                    if policy == ProbePolicy::Deadline {
                        // SAFETY: no arguments; gives up the rest of the
                        // reservation's budget for this period.
                        unsafe { libc::sched_yield() };
                    } else {
                        os::sleep_until(monotonic_now() + 1_000_000);
                    }
                }
                s
            })
        })
        .collect();
    let (spins, refused) = join_all(handles);
    let total = spins.iter().fold(Spin::default(), |a, s| Spin {
        spun: a.spun + s.spun,
        max_gap: a.max_gap.max(s.max_gap),
        interruptions: a.interruptions + s.interruptions,
    });
    (total, refused)
}

// ---------------------------------------------------------------------------
// Statistics and machine facts
// ---------------------------------------------------------------------------

/// Median, 99th percentile and maximum of a probe's samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub samples: usize,
    pub median: Nanos,
    pub p99: Nanos,
    pub max: Nanos,
}

impl Stats {
    /// `None` for no samples.
    pub fn of(mut v: Vec<Nanos>) -> Option<Stats> {
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        Some(Stats {
            samples: v.len(),
            median: at(0.5),
            p99: at(0.99),
            max: v[v.len() - 1],
        })
    }

    /// "2000 samples, median 4.1 us, p99 9.8 us, max 31.2 us".
    pub fn describe(&self) -> String {
        let d = rtgpu_model::units::display_duration;
        format!(
            "{} samples, median {}, p99 {}, max {}",
            self.samples,
            d(self.median),
            d(self.p99),
            d(self.max)
        )
    }
}

fn uname() -> (String, String) {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return ("unknown".into(), "unknown".into());
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (field(&u.nodename), field(&u.release))
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| {
                    let k = l.split(':').next().unwrap_or("").trim();
                    k == "model name" || k == "Hardware" || k == "cpu model" || k == "cpu"
                })
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// "0-3,8" for [0, 1, 2, 3, 8].
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Reads [`cpu_list`]'s format back.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > 1 << 16 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

fn parse_samples(s: &str) -> Samples {
    let mut out = Samples::default();
    for kv in s.split_whitespace() {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let Ok(v) = v.parse::<u64>() else { continue };
        let n = usize::try_from(v).unwrap_or(usize::MAX);
        match k {
            "wake" => out.wake = n,
            "same-cpu" => out.same_cpu = n,
            "cross-cpu" => out.cross_cpu = n,
            "spin-ns" => out.spin = v,
            "interruptions" => out.interruptions = n,
            _ => {}
        }
    }
    out
}

/// Control characters (a newline in a host name) would end a comment line.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// "2026-11-27 14:03 UTC" for seconds since the Unix epoch (the civil-date
/// algorithm of H. Hinnant, days from civil, inverted).
pub fn utc_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3_600,
        (rem % 3_600) / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_cpu_lists_are_written_and_read() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_date(1_767_225_600 + 3_660), "2026-01-01 01:01 UTC");
        assert_eq!(cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(cpu_list(&[]), "");
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn policies_have_tokens_that_read_back() {
        for p in [
            ProbePolicy::Fifo { priority: 98 },
            ProbePolicy::Deadline,
            ProbePolicy::Other,
        ] {
            assert_eq!(ProbePolicy::from_token(&p.token()), Some(p));
        }
        assert_eq!(ProbePolicy::from_token("fifo-0"), None);
        assert_eq!(ProbePolicy::from_token("rr"), None);
        let caps = |fifo, deadline, max| os::Capabilities {
            fifo,
            deadline,
            max_fifo_priority: max,
            cpus: vec![0],
            reason: None,
        };
        assert_eq!(
            ProbePolicy::best(&caps(true, true, 99)),
            ProbePolicy::Fifo { priority: 98 }
        );
        assert_eq!(
            ProbePolicy::best(&caps(true, true, 50)),
            ProbePolicy::Fifo { priority: 50 }
        );
        assert_eq!(
            ProbePolicy::best(&caps(false, true, 0)),
            ProbePolicy::Deadline
        );
        assert_eq!(
            ProbePolicy::best(&caps(false, false, 0)),
            ProbePolicy::Other
        );
    }

    #[test]
    fn stats_take_the_maximum_and_percentiles() {
        assert_eq!(Stats::of(vec![]), None);
        let s = Stats::of((1..=100).rev().collect()).expect("samples");
        assert_eq!((s.samples, s.median, s.p99, s.max), (100, 51, 99, 100));
    }

    #[test]
    fn the_key_depends_on_every_part_of_the_machine() {
        let m = Machine {
            host: "h".into(),
            kernel: "6.1".into(),
            cpu_model: "x".into(),
            cpus: vec![0, 1],
        };
        let k = m.key(ProbePolicy::Fifo { priority: 98 });
        assert_eq!(k.len(), 16);
        assert_eq!(k, m.key(ProbePolicy::Fifo { priority: 98 }), "stable");
        assert_ne!(k, m.key(ProbePolicy::Other));
        for other in [
            Machine {
                cpus: vec![0],
                ..m.clone()
            },
            Machine {
                host: "g".into(),
                ..m.clone()
            },
            Machine {
                kernel: "6.2".into(),
                ..m.clone()
            },
            Machine {
                cpu_model: "y".into(),
                ..m.clone()
            },
        ] {
            assert_ne!(k, other.key(ProbePolicy::Fifo { priority: 98 }));
        }
    }
}
