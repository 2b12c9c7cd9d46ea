//! The Linux policy every task thread runs under (`--sched` on `rtgpu
//! analyze`, `simulate` and `run`): the workload file's own
//! (SCHED_FIFO priorities, or user-space EDF on SCHED_FIFO), or every
//! task a SCHED_DEADLINE reservation ([`Workload::under_deadline`]), for
//! machines that refuse SCHED_FIFO and permit SCHED_DEADLINE (containers,
//! GPU servers without real-time runtime in their cgroup).

use std::fmt;

use crate::types::Workload;

/// Which policy the task threads run under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sched {
    /// The workload's policy: SCHED_FIFO priorities (fixed priority, or
    /// EDF re-ranked in user space); `reservation = true` tasks under
    /// SCHED_DEADLINE.
    #[default]
    Fifo,
    /// Every task thread a SCHED_DEADLINE reservation, global EDF over all
    /// CPUs ([`Workload::under_deadline`]).
    Deadline,
}

impl Sched {
    /// The name `--sched` takes.
    pub fn name(self) -> &'static str {
        match self {
            Sched::Fifo => "fifo",
            Sched::Deadline => "deadline",
        }
    }

    /// From `--sched`'s word (`auto` is resolved by the caller, which knows
    /// what the machine permits).
    pub fn parse(word: &str) -> Result<Sched, String> {
        match word {
            "fifo" => Ok(Sched::Fifo),
            "deadline" => Ok(Sched::Deadline),
            other => Err(format!(
                "unknown scheduling policy {other:?}: expected \"fifo\" or \"deadline\""
            )),
        }
    }
}

impl fmt::Display for Sched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Workload {
    /// The workload under `sched`: itself for [`Sched::Fifo`], else
    /// [`Workload::under_deadline`].
    pub fn with_sched(&self, sched: Sched) -> Result<Workload, String> {
        match sched {
            Sched::Fifo => Ok(self.clone()),
            Sched::Deadline => self.under_deadline(),
        }
    }

    /// Every task a CPU reservation (`reservation = true`): its thread a
    /// SCHED_DEADLINE reservation whose runtime, deadline and period the
    /// analysis plans, on every CPU (the kernel keeps a deadline thread's
    /// affinity to its whole root domain, so cluster bindings go), a
    /// batched GPU section ([`Workload::batched_section`]) with η = 1. The
    /// scheduler named in `[policy]` then schedules nothing; GPU-using
    /// tasks keep their GPUs, which must then all be in one cluster
    /// (a reservation uses the first cluster's GPUs,
    /// [`crate::Platform::first_gpu_cluster`]).
    ///
    /// Refused, naming the task: a vGPU member (its budget enforcement has
    /// no term for the CBS wake-up rule), a deadline beyond the period
    /// (SCHED_DEADLINE needs runtime <= deadline <= period), CPU work
    /// inside a GPU section (a reservation's section is analysed as
    /// operations and wake-ups only), fixed GPUs (`gpu.device`), GPUs in
    /// more than one cluster.
    pub fn under_deadline(&self) -> Result<Workload, String> {
        let gpu_clusters = self
            .platform
            .clusters
            .iter()
            .filter(|c| !c.gpus.is_empty())
            .count();
        let mut problems = Vec::new();
        if gpu_clusters > 1 && self.tasks.iter().any(|t| t.uses_gpu()) {
            problems.push(format!(
                "the GPUs are in {gpu_clusters} clusters, and a SCHED_DEADLINE thread runs on \
                 every CPU with the first cluster's GPUs"
            ));
        }
        for t in &self.tasks {
            if t.deadline > t.period {
                problems.push(format!(
                    "task {}: deadline {} > period {} (SCHED_DEADLINE needs deadline <= period)",
                    t.name,
                    crate::units::format_duration(t.deadline),
                    crate::units::format_duration(t.period)
                ));
            }
            if let Some(g) = &t.gpu {
                if g.vgpu.is_some() {
                    problems.push(format!(
                        "task {}: a vGPU member cannot be a reservation (the vGPU bound has no \
                         term for the CBS wake-up rule between its kernels)",
                        t.name
                    ));
                }
                if g.cpu > 0 {
                    problems.push(format!(
                        "task {}: CPU work inside its GPU section (`gpu.cpu`) is not supported \
                         in a reservation",
                        t.name
                    ));
                }
                if g.device.is_some() {
                    problems.push(format!(
                        "task {}: a fixed GPU (`gpu.device`) is not supported in a reservation",
                        t.name
                    ));
                }
            }
        }
        if !problems.is_empty() {
            return Err(format!(
                "{}: cannot run every task under SCHED_DEADLINE: {}",
                self.name,
                problems.join("; ")
            ));
        }
        let mut w = self.clone();
        for t in &mut w.tasks {
            t.reservation = true;
            t.cluster = None;
        }
        // A batched section raises one completion interrupt per job, its
        // last operation's (η = 1, seed 000 App. B's count).
        let batched: Vec<bool> = (0..w.tasks.len()).map(|i| w.batched_section(i)).collect();
        for (t, _) in w.tasks.iter_mut().zip(batched).filter(|(_, b)| *b) {
            if let Some(g) = t.gpu.as_mut() {
                g.interrupts = 1;
            }
        }
        Ok(w)
    }
}

impl Workload {
    /// Whether task `i`'s GPU section is submitted as one batch: a CPU
    /// reservation (SCHED_DEADLINE) with its GPU to itself while it holds
    /// its token (one token per GPU, no state migration that would copy on
    /// another GPU's engines, no vGPU, no CPU work inside the section).
    /// Its engine locks could only ever be granted at once, so its thread
    /// queues every operation of the section in order and sleeps once, for
    /// the last one's completion: two wake-ups (its token's grant and the
    /// section's end) instead of one per operation, each of which the CBS
    /// wake-up rule may delay (seed 001 §III-D). The simulator, `rtgpu run`
    /// and the analysis (`GpuWakes`) all take it so: one completion
    /// interrupt per job, at the end.
    pub fn batched_section(&self, i: usize) -> bool {
        let Some(t) = self.tasks.get(i) else {
            return false;
        };
        let Some(g) = &t.gpu else { return false };
        let gpus: usize = self.platform.clusters.iter().map(|c| c.gpus.len()).sum();
        let migrates = gpus > 1
            && self
                .tasks
                .iter()
                .any(|u| u.gpu.as_ref().is_some_and(|g| g.state > 0));
        t.reservation && g.vgpu.is_none() && g.cpu == 0 && self.policy.tokens() == 1 && !migrates
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Workload {
        crate::parse_workload(text, "t.toml").expect("valid workload")
    }

    const BASE: &str = "[platform]\ncores = 2\n[[platform.gpu]]\nname = \"g\"\n\
        [[task]]\nname = \"loop\"\nwcet = \"100 us\"\nperiod = \"1 ms\"\n\
        [[task]]\nname = \"cam\"\nwcet = \"1 ms\"\nperiod = \"50 ms\"\n\
        gpu = { copy_in = \"1 MiB\", kernels = [\"2 ms\"] }\n";

    #[test]
    fn deadline_makes_every_task_a_reservation_and_fifo_changes_nothing() {
        let w = load(BASE);
        assert_eq!(w.with_sched(Sched::Fifo).expect("fifo"), w);
        let d = w.with_sched(Sched::Deadline).expect("deadline");
        assert!(d.tasks.iter().all(|t| t.reservation && t.cluster.is_none()));
        assert_eq!(d.tasks[1].gpu, w.tasks[1].gpu);
        assert!(!w.tasks.iter().any(|t| t.reservation));
    }

    #[test]
    fn what_sched_deadline_cannot_run_is_named() {
        let w = load(&format!(
            "{BASE}[[task]]\nname = \"late\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n\
             deadline = \"20 ms\"\n"
        ));
        let e = w.under_deadline().expect_err("D > T");
        assert!(
            e.contains("task late: deadline 20 ms > period 10 ms"),
            "{e}"
        );
        let w = load(&BASE.replace(
            "kernels = [\"2 ms\"]",
            "kernels = [\"2 ms\"], cpu = \"100 us\"",
        ));
        let e = w.under_deadline().expect_err("section CPU");
        assert!(
            e.contains("task cam: CPU work inside its GPU section"),
            "{e}"
        );
    }

    #[test]
    fn a_reservation_alone_on_its_gpu_submits_its_section_at_once() {
        let one = |extra: &str| {
            load(&BASE.replace(
                "[[platform.gpu]]",
                &format!("[policy]\n{extra}\n[[platform.gpu]]"),
            ))
            .under_deadline()
            .expect("deadline")
        };
        let w = one("tokens_per_gpu = 1");
        assert!(w.batched_section(1));
        assert_eq!(w.tasks[1].gpu.as_ref().map(|g| g.interrupts), Some(1));
        assert!(!w.batched_section(0), "CPU-only");
        assert!(
            !one("tokens_per_gpu = 2").batched_section(1),
            "another holder's engines"
        );
        assert!(!load(BASE).batched_section(1), "not a reservation");
    }

    #[test]
    fn the_words_parse_back() {
        for s in [Sched::Fifo, Sched::Deadline] {
            assert_eq!(Sched::parse(s.name()), Ok(s));
        }
        assert!(Sched::parse("rr").is_err());
    }
}
