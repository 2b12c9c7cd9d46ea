//! One measurement per machine, kept between runs: the `[overheads]` table
//! of [`Measured::to_toml`] in `$XDG_CACHE_HOME/rtgpu/overheads-<key>.toml`
//! (else `$HOME/.cache/rtgpu/`), `<key>` from [`Machine::key`]: host name,
//! kernel release, CPU model, allowed CPUs and the probes' policy, so a
//! different machine, kernel, CPU set (`taskset`, a cgroup's cpuset) or
//! privilege measures anew. A file older than [`MAX_AGE`], dated in the
//! future, unreadable, or stating another key is measured anew too.
//!
//! Writes are atomic: a uniquely named temporary file in the same
//! directory, then `rename`, so concurrent runs never read half a file.
//! Where no directory is writable the measurement is used without being
//! kept, and [`Cached::NotWritten`] says why.

use std::ffi::OsString;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{measure_at, unix_now, CalibrationConfig, Machine, Measured, ProbePolicy};
use crate::os;

/// A measurement older than this is taken again (7 days).
pub const MAX_AGE: u64 = 7 * 24 * 3_600;

/// The cache directory from the environment: `$XDG_CACHE_HOME/rtgpu` if
/// that is an absolute path (the XDG rule: relative values are ignored),
/// else `$HOME/.cache/rtgpu`; `None` without either.
pub fn cache_dir() -> Option<PathBuf> {
    cache_dir_from(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
}

/// [`cache_dir`] from given values of `XDG_CACHE_HOME` and `HOME`.
pub fn cache_dir_from(xdg: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let absolute = |v: Option<OsString>| {
        v.map(PathBuf::from)
            .filter(|p| p.is_absolute() && !p.as_os_str().is_empty())
    };
    absolute(xdg)
        .map(|x| x.join("rtgpu"))
        .or_else(|| absolute(home).map(|h| h.join(".cache").join("rtgpu")))
}

/// The cache file of machine key `key` in `dir`.
pub fn path_for(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("overheads-{key}.toml"))
}

/// What a cache file holds for a key.
#[derive(Debug)]
pub enum Lookup {
    /// A measurement of this machine, recent enough.
    Fresh(Box<Measured>),
    /// Present but not usable, and why (old, another key, unreadable).
    Stale(String),
    /// No file.
    Missing,
}

/// Reads the cache file `path` and checks it against `key` at `now`
/// (seconds since the Unix epoch).
pub fn read(path: &Path, key: &str, now: u64) -> Lookup {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Lookup::Missing,
        Err(e) => return Lookup::Stale(format!("cannot read {}: {e}", path.display())),
    };
    match Measured::from_toml(&text, &path.display().to_string()) {
        Err(e) => Lookup::Stale(e),
        Ok((_, k)) if k != key => Lookup::Stale(format!(
            "{} is for machine key {k}, not this machine's {key}",
            path.display()
        )),
        Ok((m, _)) if m.measured_at > now.saturating_add(86_400) => Lookup::Stale(format!(
            "{} is dated in the future (clock changed?)",
            path.display()
        )),
        Ok((m, _)) if now.saturating_sub(m.measured_at) > MAX_AGE => Lookup::Stale(format!(
            "{} is older than {} days",
            path.display(),
            MAX_AGE / 86_400
        )),
        Ok((m, _)) => Lookup::Fresh(Box::new(m)),
    }
}

/// Writes `m` to its cache file in `dir` (created if needed), atomically;
/// returns the file's path.
pub fn write(dir: &Path, m: &Measured) -> io::Result<PathBuf> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir)?;
    let path = path_for(dir, &m.machine.key(m.policy));
    let tmp = dir.join(format!(
        ".{}.{}.{}.{}.tmp",
        path.file_name()
            .map_or_else(|| "overheads".into(), |n| n.to_string_lossy()),
        std::process::id(),
        os::monotonic_now(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(m.to_toml().as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|()| path)
}

/// Where a machine measurement came from, or why it was not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cached {
    /// Read from this cache file.
    Read(PathBuf),
    /// Measured now and written to this cache file.
    Written(PathBuf),
    /// Measured now and not kept, for this reason.
    NotWritten(String),
}

/// This machine's measurement: from the cache when a fresh one is there
/// (unless `refresh`), else measured now (calling `before_measuring`
/// first, for a progress line) and cached. Also says why an existing file
/// was not used, if one was not.
pub fn machine_overheads(
    refresh: bool,
    config: &CalibrationConfig,
    before_measuring: &mut dyn FnMut(),
) -> (Measured, Cached, Option<String>) {
    machine_overheads_in(cache_dir(), refresh, config, before_measuring)
}

/// [`machine_overheads`] with the cache in `dir` (`None`: no cache).
pub fn machine_overheads_in(
    dir: Option<PathBuf>,
    refresh: bool,
    config: &CalibrationConfig,
    before_measuring: &mut dyn FnMut(),
) -> (Measured, Cached, Option<String>) {
    let policy = ProbePolicy::this_machine();
    let key = Machine::this().key(policy);
    let mut why_not_cached = None;
    if let (Some(d), false) = (&dir, refresh) {
        let path = path_for(d, &key);
        match read(&path, &key, unix_now()) {
            Lookup::Fresh(m) => return (*m, Cached::Read(path), None),
            Lookup::Stale(why) => why_not_cached = Some(why),
            Lookup::Missing => {}
        }
    }
    before_measuring();
    let m = measure_at(config, policy);
    let cached = match &dir {
        _ if m.policy != policy => Cached::NotWritten(format!(
            "the probes were to run at {} but some ran at {}; measured again next time",
            policy.describe(),
            m.policy.describe()
        )),
        None => Cached::NotWritten(
            "neither XDG_CACHE_HOME nor HOME names a directory to cache it in".to_string(),
        ),
        Some(d) => match write(d, &m) {
            Ok(p) => Cached::Written(p),
            Err(e) => Cached::NotWritten(format!("cannot write to {}: {e}", d.display())),
        },
    };
    (m, cached, why_not_cached)
}
