//! `rtgpu experiment STUDY [--scheduler ADDR] [--workers N]`: runs a
//! schedulability study on Dask by delegating to the Python package
//! (`python -m rtgpu.experiment`), where the study runner, Dask client,
//! results files and plots live (python/rtgpu/experiment/).
//!
//! The interpreter is, in order: `$RTGPU_PYTHON`; the `.venv` of the
//! repository this binary was built in or of the current directory; then
//! `python3` on `PATH`. Before running, it checks that `rtgpu.experiment` and
//! `dask.distributed` import, and says how to install them if not.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

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
    match cmd.status() {
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
