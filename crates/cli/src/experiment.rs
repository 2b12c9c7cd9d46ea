//! `rtgpu experiment STUDY [--scheduler ADDR] [--workers N]`: runs a
//! schedulability study on Dask by delegating to the Python package
//! (`python -m rtgpu.experiment`), where the study runner, Dask client,
//! results files and plots live (python/rtgpu/experiment/).
//!
//! The interpreter is, in order: `$RTGPU_PYTHON`; the `.venv` of the
//! repository this binary was built in or of the current directory; then
//! `python3` on `PATH`. Before running, it checks that `rtgpu.experiment` and
//! `dask.distributed` import, and says how to install them if not.
//!
//! The runner never outlives `rtgpu experiment` (issue 22: a killed
//! `rtgpu experiment` left it running, and a resume beside it duplicated
//! rows): the kernel sends it SIGTERM when this process dies, even by
//! SIGKILL (`PR_SET_PDEATHSIG`, set between fork and exec); SIGINT,
//! SIGTERM, SIGHUP and SIGQUIT sent to `rtgpu experiment` are forwarded to
//! it. It runs in a process group of its own, so a Ctrl-C at the terminal
//! reaches it once, through this process; Ctrl-Z (SIGTSTP) stops its
//! group and then this process, SIGCONT continues both. On SIGINT/SIGTERM/SIGHUP it
//! stops as on Ctrl-C (finished points kept, Dask cluster closed); the
//! output directory's lock (python/rtgpu/experiment/lock.py) refuses a
//! second run beside it.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};

/// Exit status for a missing interpreter or package (same as invalid input).
const EXIT_SETUP: u8 = 2;

pub struct Options<'a> {
    pub study: &'a Path,
    pub scheduler: Option<&'a str>,
    pub workers: Option<u32>,
    pub output: Option<&'a Path>,
    pub fresh: bool,
    pub no_plots: bool,
    pub quiet: bool,
}

/// Where to look for a Python, most specific first, with the reason each
/// candidate is tried (for the error message).
fn candidates() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os("RTGPU_PYTHON").filter(|p| !p.is_empty()) {
        out.push((PathBuf::from(p), "$RTGPU_PYTHON".to_string()));
        return out;
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    // The repository the binary was built from (target/<profile>/rtgpu).
    if let Ok(exe) = std::env::current_exe() {
        if let Some(root) = exe.ancestors().nth(3) {
            roots.push(root.to_path_buf());
        }
    }
    if let Ok(cwd) = std::env::current_dir() {
        roots.push(cwd);
    }
    for r in roots {
        let py = r.join(".venv/bin/python");
        if py.is_file() && !out.iter().any(|(p, _)| *p == py) {
            out.push((py, format!("the virtual environment in {}", r.display())));
        }
    }
    out.push((PathBuf::from("python3"), "python3 on PATH".to_string()));
    out
}

/// The first candidate where `rtgpu.experiment` and `dask.distributed`
/// import, or an error listing what each candidate lacked.
fn find_python() -> Result<PathBuf, String> {
    let mut tried = Vec::new();
    for (py, why) in candidates() {
        let probe = Command::new(&py)
            .args([
                "-c",
                "import rtgpu.experiment, dask.distributed, matplotlib",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        match probe {
            Ok(o) if o.status.success() => return Ok(py),
            Ok(o) => {
                let err = String::from_utf8_lossy(&o.stderr);
                let last = err.lines().last().unwrap_or("failed").trim().to_string();
                tried.push(format!("  {} ({why}): {last}", py.display()));
            }
            Err(e) => tried.push(format!("  {} ({why}): cannot run: {e}", py.display())),
        }
    }
    Err(format!(
        "rtgpu experiment needs a Python with the rtgpu package, Dask and matplotlib; tried:\n{}\n\
         Install them (scripts/test.sh does: .venv with the rtgpu wheel, then\n  \
         .venv/bin/pip install 'dask[distributed]>=2023.1' 'matplotlib>=3.5' tqdm)\n\
         or point RTGPU_PYTHON at such an interpreter.",
        tried.join("\n")
    ))
}

/// The runner's pid while it runs (0: none yet), for the signal handler.
static RUNNER: AtomicI32 = AtomicI32::new(0);
/// A forwarded signal that came before the runner's pid was known.
static PENDING: AtomicI32 = AtomicI32::new(0);

/// The signals forwarded to the runner.
const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

extern "C" fn forward(sig: libc::c_int) {
    // Async-signal-safe: atomics and kill(2) only.
    let pid = RUNNER.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill has no memory effects; pid is our own child's.
        unsafe { libc::kill(pid, sig) };
    } else {
        PENDING.store(sig, Ordering::SeqCst);
    }
}

/// Ctrl-Z (SIGTSTP): stop the runner's process group (it and its Dask
/// workers), then ourselves, as the shell expects of a foreground job.
extern "C" fn suspend(_sig: libc::c_int) {
    let pid = RUNNER.load(Ordering::SeqCst);
    // SAFETY: kill and getpid are async-signal-safe; -pid is the runner's
    // process group (it leads one of its own).
    unsafe {
        if pid > 0 {
            libc::kill(-pid, libc::SIGSTOP);
        }
        libc::kill(libc::getpid(), libc::SIGSTOP);
    }
}

/// SIGCONT (`fg`, `bg`): the kernel continued us; continue the runner's
/// process group too.
extern "C" fn resume(_sig: libc::c_int) {
    let pid = RUNNER.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: as in `suspend`.
        unsafe { libc::kill(-pid, libc::SIGCONT) };
    }
}

/// Starts `cmd` as the runner: in its own process group, SIGTERM'd by the
/// kernel when this process dies, and sent the signals this process gets.
fn spawn_runner(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    cmd.stdin(Stdio::null()).process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe functions (prctl, getppid).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGTERM as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before the prctl: nobody would stop us.
            // (No allocation between fork and exec: a raw OS error.)
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    for sig in FORWARDED {
        // SAFETY: installing a handler that uses only atomics and kill.
        unsafe { libc::signal(sig, forward as *const () as libc::sighandler_t) };
    }
    let child = cmd.spawn()?;
    let pid = i32::try_from(child.id()).unwrap_or(0);
    RUNNER.store(pid, Ordering::SeqCst);
    // SAFETY: handlers that use only atomics, kill and getpid.
    unsafe {
        libc::signal(libc::SIGTSTP, suspend as *const () as libc::sighandler_t);
        libc::signal(libc::SIGCONT, resume as *const () as libc::sighandler_t);
    }
    let early = PENDING.swap(0, Ordering::SeqCst);
    if early != 0 && pid > 0 {
        // SAFETY: as in `forward`.
        unsafe { libc::kill(pid, early) };
    }
    Ok(child)
}

pub fn run(o: &Options<'_>) -> ExitCode {
    if !o.study.is_file() {
        eprintln!(
            "rtgpu experiment: {}: no such study file",
            o.study.display()
        );
        return ExitCode::from(EXIT_SETUP);
    }
    let python = match find_python() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rtgpu experiment: {e}");
            return ExitCode::from(EXIT_SETUP);
        }
    };
    let mut cmd = Command::new(&python);
    cmd.args(["-m", "rtgpu.experiment"]).arg(o.study);
    if let Some(s) = o.scheduler {
        cmd.args(["--scheduler", s]);
    }
    if let Some(n) = o.workers {
        cmd.args(["--workers", &n.to_string()]);
    }
    if let Some(out) = o.output {
        cmd.arg("--output").arg(out);
    }
    for (flag, on) in [
        ("--fresh", o.fresh),
        ("--no-plots", o.no_plots),
        ("--quiet", o.quiet),
    ] {
        if on {
            cmd.arg(flag);
        }
    }
    let status = spawn_runner(&mut cmd).and_then(|mut child| child.wait());
    match status {
        Ok(s) => match s.code() {
            Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
            // Killed by a signal (e.g. Ctrl-C): 128 + signal, as shells do.
            None => {
                use std::os::unix::process::ExitStatusExt;
                ExitCode::from(128u8.wrapping_add(s.signal().unwrap_or(0) as u8))
            }
        },
        Err(e) => {
            eprintln!("rtgpu experiment: cannot run {}: {e}", python.display());
            ExitCode::from(EXIT_SETUP)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python3_is_the_last_resort() {
        // RTGPU_PYTHON is unset in the test environment unless a developer
        // set it; either way the list is non-empty and ends sensibly.
        let c = candidates();
        assert!(!c.is_empty());
        if std::env::var_os("RTGPU_PYTHON").is_none() {
            assert_eq!(
                c.last().map(|(p, _)| p.clone()),
                Some(PathBuf::from("python3"))
            );
        }
    }
}
