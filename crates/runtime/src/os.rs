//! The real OS mechanisms `rtgpu run` uses, as thin checked wrappers over
//! Linux system calls: scheduling policies (`sched_setattr`: SCHED_OTHER,
//! SCHED_FIFO, SCHED_DEADLINE), CPU affinity, absolute-time sleeps on
//! CLOCK_MONOTONIC, per-thread CPU time, and a probe of what this process is
//! allowed to do (real-time priorities need CAP_SYS_NICE or an RLIMIT_RTPRIO).
//!
//! Every call returns an [`OsError`] naming the call and the errno; nothing
//! here panics on an OS refusal.

use std::io;

/// Integer nanoseconds (DESIGN.md §3.3).
pub type Nanos = u64;

/// A failed system call: which one, on what, and the OS error.
#[derive(Debug, thiserror::Error)]
#[error("{call} failed ({what}): {source}")]
pub struct OsError {
    pub call: &'static str,
    pub what: String,
    #[source]
    pub source: io::Error,
}

impl OsError {
    fn last(call: &'static str, what: impl Into<String>) -> OsError {
        OsError {
            call,
            what: what.into(),
            source: io::Error::last_os_error(),
        }
    }

    /// True when the OS refused for lack of privilege (EPERM / EACCES).
    pub fn is_permission(&self) -> bool {
        matches!(self.source.raw_os_error(), Some(libc::EPERM | libc::EACCES))
    }
}

/// A Linux scheduling policy with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedPolicy {
    /// SCHED_OTHER (CFS / EEVDF) with a nice value.
    Other { nice: i32 },
    /// SCHED_FIFO with a priority 1..=99 (higher runs first).
    Fifo { priority: u8 },
    /// SCHED_IDLE: runs only when nothing else wants the CPU.
    Idle,
    /// SCHED_DEADLINE reservation: `runtime` every `period` within `deadline`;
    /// `reclaim`: SCHED_FLAG_RECLAIM, the kernel's GRUB reclaiming (the
    /// reservation may also run on bandwidth no reservation uses).
    Deadline {
        runtime: Nanos,
        deadline: Nanos,
        period: Nanos,
        reclaim: bool,
    },
}

impl SchedPolicy {
    /// Words for a policy, as the run report prints it.
    pub fn describe(self) -> String {
        let us = |ns: Nanos| {
            if ns.is_multiple_of(1_000_000) {
                format!("{} ms", ns / 1_000_000)
            } else {
                format!("{} us", ns as f64 / 1e3)
            }
        };
        match self {
            SchedPolicy::Other { nice } => format!("SCHED_OTHER (nice {nice})"),
            SchedPolicy::Fifo { priority } => format!("SCHED_FIFO {priority}"),
            SchedPolicy::Idle => "SCHED_IDLE".to_string(),
            SchedPolicy::Deadline {
                runtime,
                deadline,
                period,
                reclaim,
            } => {
                let reclaiming = if reclaim { ", reclaiming" } else { "" };
                let within = if deadline == period {
                    String::new()
                } else {
                    format!(" within {}", us(deadline))
                };
                format!(
                    "SCHED_DEADLINE runtime {} every {}{within}{reclaiming}",
                    us(runtime),
                    us(period)
                )
            }
        }
    }
}

// struct sched_attr of include/uapi/linux/sched/types.h (SCHED_ATTR_SIZE_VER0).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

const SCHED_OTHER: u32 = 0;
const SCHED_FIFO: u32 = 1;
const SCHED_IDLE: u32 = 5;
const SCHED_DEADLINE: u32 = 6;
// include/uapi/linux/sched.h
const SCHED_FLAG_RECLAIM: u64 = 0x02;

/// The calling thread's kernel thread id.
pub fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
}

/// Sets the scheduling policy of thread `tid` (0 = the calling thread).
pub fn set_sched_policy(tid: libc::pid_t, policy: SchedPolicy) -> Result<(), OsError> {
    let mut attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        ..SchedAttr::default()
    };
    match policy {
        SchedPolicy::Other { nice } => {
            attr.sched_policy = SCHED_OTHER;
            attr.sched_nice = nice;
        }
        SchedPolicy::Fifo { priority } => {
            attr.sched_policy = SCHED_FIFO;
            attr.sched_priority = u32::from(priority);
        }
        SchedPolicy::Idle => attr.sched_policy = SCHED_IDLE,
        SchedPolicy::Deadline {
            runtime,
            deadline,
            period,
            reclaim,
        } => {
            attr.sched_policy = SCHED_DEADLINE;
            if reclaim {
                attr.sched_flags |= SCHED_FLAG_RECLAIM;
            }
            attr.sched_runtime = runtime;
            attr.sched_deadline = deadline;
            attr.sched_period = period;
        }
    }
    // A SCHED_DEADLINE request the admission control refuses (EBUSY) may
    // fit a moment later: the kernel frees the bandwidth of a reservation
    // that exited or changed policy at its 0-lag time, up to a deadline
    // later (Documentation/scheduler/sched-deadline.rst, 2.1). So EBUSY is
    // retried for up to 250 ms before it is reported.
    let give_up = monotonic_now() + 250_000_000;
    loop {
        // SAFETY: attr is a valid, fully initialised sched_attr of the size it declares.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_sched_setattr,
                tid,
                &attr as *const SchedAttr,
                0u32,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = OsError::last("sched_setattr", format!("thread {tid} to {policy:?}"));
        if err.source.raw_os_error() != Some(libc::EBUSY) || monotonic_now() >= give_up {
            return Err(err);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Reads the scheduling policy of thread `tid` (0 = the calling thread).
pub fn sched_policy(tid: libc::pid_t) -> Result<SchedPolicy, OsError> {
    let mut attr = SchedAttr::default();
    // SAFETY: the kernel writes at most `size` bytes into attr.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            std::mem::size_of::<SchedAttr>() as u32,
            0u32,
        )
    };
    if rc != 0 {
        return Err(OsError::last("sched_getattr", format!("thread {tid}")));
    }
    Ok(match attr.sched_policy {
        SCHED_FIFO => SchedPolicy::Fifo {
            priority: u8::try_from(attr.sched_priority).unwrap_or(u8::MAX),
        },
        SCHED_DEADLINE => SchedPolicy::Deadline {
            runtime: attr.sched_runtime,
            deadline: attr.sched_deadline,
            period: attr.sched_period,
            reclaim: attr.sched_flags & SCHED_FLAG_RECLAIM != 0,
        },
        SCHED_IDLE => SchedPolicy::Idle,
        _ => SchedPolicy::Other {
            nice: attr.sched_nice,
        },
    })
}

/// CPU time (user + system, in clock ticks) process `pid` has used, from
/// /proc/PID/stat (fields 14 and 15; the command name before them may hold
/// spaces and parentheses, so the fields are counted from its last `)`).
pub fn process_cpu_ticks(pid: u32) -> io::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("/proc/{pid}/stat"));
    let rest = stat
        .get(stat.rfind(')').ok_or_else(bad)? + 1..)
        .ok_or_else(bad)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |k: usize| -> io::Result<u64> {
        fields.get(k).and_then(|f| f.parse().ok()).ok_or_else(bad)
    };
    Ok(tick(11)? + tick(12)?)
}

/// Per CPU, the time its virtual CPU was ready but the hypervisor ran
/// something else (steal time), in ns: the eighth value of each `cpuN`
/// line of /proc/stat, in clock ticks (`sysconf(_SC_CLK_TCK)`, usually
/// 10 ms each). Empty where /proc/stat cannot be read. A vCPU that does not
/// run stalls every thread on it whatever its policy: on the H100 box such
/// stalls of 1-2 ms caused most deadline misses (docs/runtime.md).
pub fn steal_per_cpu() -> Vec<(usize, Nanos)> {
    // SAFETY: sysconf has no memory arguments.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let tick = u64::try_from(hz)
        .ok()
        .filter(|&h| h > 0)
        .map_or(10_000_000, |h| 1_000_000_000 / h);
    std::fs::read_to_string("/proc/stat")
        .map_or_else(|_| Vec::new(), |s| steal_of_proc_stat(&s, tick))
}

/// [`steal_per_cpu`] of a /proc/stat text, `tick` ns per clock tick. CPUs
/// whose line has no steal value (kernels before 2.6.11) are left out.
pub fn steal_of_proc_stat(text: &str, tick: Nanos) -> Vec<(usize, Nanos)> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let cpu = f.next()?.strip_prefix("cpu")?.parse::<usize>().ok()?;
            let steal: u64 = f.nth(7)?.parse().ok()?;
            Some((cpu, steal.saturating_mul(tick)))
        })
        .collect()
}

/// Whether this kernel runs under a hypervisor (the `hypervisor` CPU flag
/// in /proc/cpuinfo): a halted virtual CPU may take a millisecond or more
/// to wake for a timer (`rtgpu run --keep-awake`).
pub fn in_virtual_machine() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|s| {
        s.lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
    })
}

/// The kernel's preemption model and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preemption {
    /// `none`, `voluntary`, `full`, `lazy`, `rt` (or `none or voluntary`,
    /// all a version string tells apart); `None` where the
    /// kernel can switch models at run time (PREEMPT_DYNAMIC) and the
    /// current one could not be read.
    pub model: Option<String>,
    /// Where it was read, or why it could not be, in words.
    pub source: String,
}

impl Preemption {
    /// True when a thread inside the kernel keeps its CPU until it returns
    /// or yields (`none`, `voluntary`): a woken real-time thread waits.
    pub fn kernel_code_blocks(&self) -> bool {
        matches!(
            self.model.as_deref(),
            Some("none" | "voluntary" | "none or voluntary")
        )
    }
}

/// The current model of `/sys/kernel/debug/sched/preempt` ("none
/// (voluntary) full lazy": the one in parentheses).
pub fn preempt_model_of_debugfs(text: &str) -> Option<String> {
    let open = text.find('(')?;
    let close = text[open..].find(')')? + open;
    Some(text[open + 1..close].trim().to_string()).filter(|m| !m.is_empty())
}

/// `preempt=MODEL` on a kernel command line.
pub fn preempt_model_of_cmdline(cmdline: &str) -> Option<String> {
    cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("preempt="))
        .map(str::to_string)
}

/// What the kernel's version string (`uname -v`) says of its preemption
/// model; `None` for PREEMPT_DYNAMIC, whose current model it does not say.
pub fn preempt_model_of_version(version: &str) -> Option<String> {
    let words: Vec<&str> = version.split_whitespace().collect();
    let model = if words.contains(&"PREEMPT_RT") {
        "rt"
    } else if words.contains(&"PREEMPT_DYNAMIC") {
        return None;
    } else if words.contains(&"PREEMPT") {
        "full"
    } else if words.contains(&"PREEMPT_LAZY") {
        "lazy"
    } else {
        "none or voluntary"
    };
    Some(model.to_string())
}

/// Reads this kernel's preemption model: debugfs (the current model of a
/// PREEMPT_DYNAMIC kernel; root), else `preempt=` on the command line,
/// else the version string.
pub fn preemption() -> Preemption {
    const DEBUGFS: &str = "/sys/kernel/debug/sched/preempt";
    let debugfs = std::fs::read_to_string(DEBUGFS);
    if let Some(model) = debugfs.as_deref().ok().and_then(preempt_model_of_debugfs) {
        return Preemption {
            model: Some(model),
            source: DEBUGFS.to_string(),
        };
    }
    if let Some(model) = std::fs::read_to_string("/proc/cmdline")
        .ok()
        .as_deref()
        .and_then(preempt_model_of_cmdline)
    {
        return Preemption {
            model: Some(model),
            source: "preempt= on the kernel command line".to_string(),
        };
    }
    let version = std::fs::read_to_string("/proc/sys/kernel/version").unwrap_or_default();
    match preempt_model_of_version(&version) {
        Some(model) => Preemption {
            source: format!("the kernel version `{}`", version.trim()),
            model: Some(model),
        },
        None => Preemption {
            model: None,
            source: format!(
                "PREEMPT_DYNAMIC, and {DEBUGFS} {}",
                match debugfs {
                    Err(e) => format!("is not readable ({e})"),
                    Ok(_) => "names no model".to_string(),
                }
            ),
        },
    }
}

/// Pins thread `tid` (0 = the calling thread) to the given CPUs.
pub fn set_affinity(tid: libc::pid_t, cpus: &[usize]) -> Result<(), OsError> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only write inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for &cpu in cpus {
        if cpu >= max {
            return Err(OsError {
                call: "sched_setaffinity",
                what: format!("thread {tid} to CPUs {cpus:?}"),
                source: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("CPU {cpu} is beyond the {max} CPUs a cpu_set_t holds"),
                ),
            });
        }
        // SAFETY: cpu < the set's capacity, checked above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: set is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(OsError::last(
            "sched_setaffinity",
            format!("thread {tid} to CPUs {cpus:?}"),
        ))
    }
}

/// The CPUs thread `tid` (0 = the calling thread) may run on.
pub fn affinity(tid: libc::pid_t) -> Result<Vec<usize>, OsError> {
    // SAFETY: as in set_affinity.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(OsError::last("sched_getaffinity", format!("thread {tid}")));
    }
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: i < the set's capacity.
    Ok((0..max)
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .collect())
}

/// The CPU the calling thread runs on right now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

fn clock_ns(clock: libc::clockid_t) -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec; the clocks used here always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC now, in nanoseconds: the runtime's real clock.
pub fn monotonic_now() -> Nanos {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time the calling thread has consumed (CLOCK_THREAD_CPUTIME_ID): what
/// split tasks (seed 003) spend of their per-core budget.
pub fn thread_cpu_time() -> Nanos {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// [`sleep_until`], returning early when a signal interrupts the sleep and
/// `stop` then says so (a run stopped by Ctrl-C).
pub fn sleep_until_or(deadline: Nanos, stop: impl Fn() -> bool) {
    let ts = libc::timespec {
        tv_sec: (deadline / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: ts is valid; a null remainder is allowed with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR || stop() {
            return;
        }
    }
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline` (absolute, so periodic
/// releases do not drift), resuming after signals.
pub fn sleep_until(deadline: Nanos) {
    sleep_until_or(deadline, || false)
}

/// Busy-waits for `ns` nanoseconds of this thread's CPU time: a job's CPU
/// work that is charged exactly like real computation (preemption stretches
/// the wall-clock time, not the CPU time consumed).
pub fn spin_cpu_time(ns: Nanos) {
    let end = thread_cpu_time().saturating_add(ns);
    while thread_cpu_time() < end {
        std::hint::spin_loop();
    }
}

/// The kernel's real-time bandwidth limit ("RT throttling",
/// `/proc/sys/kernel/sched_rt_{runtime,period}_us`): real-time threads may
/// use at most `runtime` of every `period` on each CPU. `None` when the
/// limit is off (`-1`) or unreadable.
pub fn rt_bandwidth_limit() -> Option<(u64, u64)> {
    let read = |f: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let runtime = u64::try_from(read("sched_rt_runtime_us")?).ok()?;
    let period = u64::try_from(read("sched_rt_period_us")?).ok()?;
    (period > 0).then_some((runtime, period))
}

/// What this process may do, probed once at start-up so `rtgpu run` can say
/// plainly at the top of its output what it degraded to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// SCHED_FIFO could be set (and was undone) on a probe thread.
    pub fifo: bool,
    /// SCHED_DEADLINE could be set (and was undone) on a probe thread.
    pub deadline: bool,
    /// The highest SCHED_FIFO priority allowed.
    pub max_fifo_priority: u8,
    /// CPUs this process may run on.
    pub cpus: Vec<usize>,
    /// Why real-time policies are unavailable, in words, when they are.
    pub reason: Option<String>,
}

/// Probes real-time privileges on a short-lived thread, so the caller's own
/// policy is never touched.
pub fn probe_capabilities() -> Capabilities {
    let probe = std::thread::spawn(|| {
        let fifo = set_sched_policy(0, SchedPolicy::Fifo { priority: 1 });
        let _ = set_sched_policy(0, SchedPolicy::Other { nice: 0 });
        let deadline = set_sched_policy(
            0,
            SchedPolicy::Deadline {
                runtime: 100_000,
                deadline: 10_000_000,
                period: 10_000_000,
                reclaim: false,
            },
        );
        let _ = set_sched_policy(0, SchedPolicy::Other { nice: 0 });
        (fifo, deadline)
    });
    let (fifo, deadline) = match probe.join() {
        Ok(r) => r,
        Err(_) => {
            return Capabilities {
                fifo: false,
                deadline: false,
                max_fifo_priority: 0,
                cpus: Vec::new(),
                reason: Some("the privilege probe thread panicked".to_string()),
            }
        }
    };
    // SAFETY: no arguments beyond the policy constant.
    let max = unsafe { libc::sched_get_priority_max(libc::SCHED_FIFO) };
    let reason = match &fifo {
        Ok(()) => None,
        // SAFETY: geteuid cannot fail.
        Err(e) if e.is_permission() && unsafe { libc::geteuid() } == 0 => Some(format!(
            "running as root, yet the kernel refused SCHED_FIFO: the process's cgroup likely has no real-time runtime (CONFIG_RT_GROUP_SCHED with cpu.rt_runtime_us = 0), or the container lacks CAP_SYS_NICE; SCHED_DEADLINE is {}",
            if deadline.is_ok() { "allowed" } else { "refused too" }
        )),
        Err(e) if e.is_permission() => Some(
            "no permission for real-time priorities (needs root, CAP_SYS_NICE or an \
             RLIMIT_RTPRIO; see `ulimit -r`)"
                .to_string(),
        ),
        Err(e) => Some(e.to_string()),
    };
    // FIFO permitted but DEADLINE not: say why where the kernel said more
    // than "no" (EBUSY: its admission control found no bandwidth left).
    let reason = match (&reason, &deadline) {
        (None, Err(e)) if e.source.raw_os_error() == Some(libc::EBUSY) => Some(format!(
            "SCHED_DEADLINE's admission control refused a 1 % reservation (EBUSY): the \
             CPUs' deadline bandwidth is taken ({e})"
        )),
        _ => reason,
    };
    Capabilities {
        fifo: fifo.is_ok(),
        deadline: deadline.is_ok(),
        max_fifo_priority: if fifo.is_ok() {
            u8::try_from(max).unwrap_or(0)
        } else {
            0
        },
        cpus: affinity(0).unwrap_or_default(),
        reason,
    }
}

/// Whether a kernel thread's name is a threaded interrupt handler of the
/// NVIDIA driver (`irq/N-nvidia`), whose priority klmirqd mirrors (seed 000
/// §IV; DESIGN.md §2).
pub fn is_nvidia_irq_thread(comm: &str) -> bool {
    comm.strip_prefix("irq/")
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(num, name)| {
            !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) && name.starts_with("nvidia")
        })
}

/// Threads whose name matches `pred`, from /proc/*/task/*/comm: (tid, comm).
/// Processes that vanish while being read are skipped.
pub fn find_threads(pred: impl Fn(&str) -> bool) -> io::Result<Vec<(libc::pid_t, String)>> {
    let mut found = Vec::new();
    for proc_entry in std::fs::read_dir("/proc")? {
        let Ok(proc_entry) = proc_entry else { continue };
        let name = proc_entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<libc::pid_t>().ok()) else {
            continue;
        };
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Some(tid) = task
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<libc::pid_t>().ok())
            else {
                continue;
            };
            if let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) {
                let comm = comm.trim_end().to_string();
                if pred(&comm) {
                    found.push((tid, comm));
                }
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_read_per_cpu_from_proc_stat() {
        let text = "cpu  10 0 20 300 4 0 1 9 0 0\n\
                    cpu0 5 0 10 150 2 0 1 2 0 0\n\
                    cpu1 5 0 10 150 2 0 0 7 0 0\n\
                    cpu2 5 0 10 150\n\
                    intr 12345 0 0\n\
                    ctxt 999\n";
        assert_eq!(
            steal_of_proc_stat(text, 10_000_000),
            vec![(0, 20_000_000), (1, 70_000_000)]
        );
        // This machine's file parses, one entry per CPU it lists.
        let here = steal_per_cpu();
        if let Ok(stat) = std::fs::read_to_string("/proc/stat") {
            let cpus = stat
                .lines()
                .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
                .count();
            assert_eq!(here.len(), cpus);
        }
    }

    #[test]
    fn preemption_models_are_read_from_debugfs_cmdline_and_version() {
        assert_eq!(
            preempt_model_of_debugfs("none (voluntary) full lazy\n").as_deref(),
            Some("voluntary")
        );
        assert_eq!(preempt_model_of_debugfs("none voluntary full"), None);
        assert_eq!(
            preempt_model_of_cmdline("ro quiet preempt=full isolcpus=2").as_deref(),
            Some("full")
        );
        assert_eq!(preempt_model_of_cmdline("ro quiet"), None);
        let v = |s: &str| preempt_model_of_version(s);
        assert_eq!(v("#1 SMP PREEMPT_DYNAMIC @0"), None);
        assert_eq!(v("#1 SMP PREEMPT_RT Thu Jan 1").as_deref(), Some("rt"));
        assert_eq!(v("#1 SMP PREEMPT Thu Jan 1").as_deref(), Some("full"));
        assert_eq!(v("#1 SMP Thu Jan 1").as_deref(), Some("none or voluntary"));
        let p = |m: &str| Preemption {
            model: Some(m.to_string()),
            source: String::new(),
        };
        assert!(p("none").kernel_code_blocks() && p("voluntary").kernel_code_blocks());
        assert!(!p("full").kernel_code_blocks() && !p("rt").kernel_code_blocks());
        // This machine's answer names a model or says why it cannot.
        let here = preemption();
        assert!(
            here.model.is_some() || here.source.contains("PREEMPT_DYNAMIC"),
            "{here:?}"
        );
    }

    #[test]
    fn monotonic_clock_advances_and_absolute_sleep_reaches_its_deadline() {
        let t0 = monotonic_now();
        let deadline = t0 + 2_000_000;
        sleep_until(deadline);
        assert!(monotonic_now() >= deadline);
        // A deadline in the past returns at once.
        sleep_until(t0);
    }

    #[test]
    fn spin_consumes_thread_cpu_time() {
        let before = thread_cpu_time();
        spin_cpu_time(3_000_000);
        let used = thread_cpu_time() - before;
        assert!(used >= 3_000_000, "used {used} ns");
    }

    #[test]
    fn affinity_round_trips_on_a_thread() {
        let allowed = affinity(0).expect("sched_getaffinity");
        assert!(!allowed.is_empty());
        let first = allowed[0];
        std::thread::spawn(move || {
            set_affinity(0, &[first]).expect("pin to an allowed CPU");
            assert_eq!(affinity(0).expect("read back"), vec![first]);
            assert_eq!(current_cpu(), Some(first));
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn affinity_beyond_the_set_is_a_clear_error() {
        let err = set_affinity(0, &[1 << 20]).unwrap_err();
        assert!(err.to_string().contains("beyond"), "{err}");
    }

    #[test]
    fn fifo_is_applied_or_refused_for_lack_of_privilege() {
        let caps = probe_capabilities();
        std::thread::spawn(
            move || match set_sched_policy(0, SchedPolicy::Fifo { priority: 10 }) {
                Ok(()) => {
                    assert!(caps.fifo);
                    assert_eq!(
                        sched_policy(0).expect("getattr"),
                        SchedPolicy::Fifo { priority: 10 }
                    );
                }
                Err(e) => {
                    assert!(!caps.fifo);
                    assert!(caps.reason.is_some());
                    assert!(e.to_string().contains("sched_setattr"), "{e}");
                }
            },
        )
        .join()
        .expect("thread");
    }

    #[test]
    fn nvidia_irq_threads_are_recognised_by_name() {
        assert!(is_nvidia_irq_thread("irq/137-nvidia"));
        assert!(is_nvidia_irq_thread("irq/45-nvidia-modeset"));
        assert!(!is_nvidia_irq_thread("irq/137-ahci"));
        assert!(!is_nvidia_irq_thread("irq/-nvidia"));
        assert!(!is_nvidia_irq_thread("nvidia-irq/1"));
    }

    #[test]
    fn find_threads_sees_this_thread() {
        let me = gettid();
        let found = find_threads(|_| true).expect("/proc readable");
        assert!(found.iter().any(|(tid, _)| *tid == me));
    }
}
