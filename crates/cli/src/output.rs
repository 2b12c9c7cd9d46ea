//! Every file the CLI writes (`--plan`, `--csv`, `--trace`, `--svg`,
//! `--plot`, `--occurrences`, `--export-overheads`) goes through here:
//! checked before the work that produces it (so a long run does not end in
//! "cannot write"), never one of the command's inputs, and written whole or
//! not at all (a uniquely named temporary file in the same directory,
//! synced, then renamed over the target).

use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether `out` can take the command's `what` (e.g. "jobs (CSV)"): its
/// directory exists, and it is none of `inputs` (the same file under any
/// name). `Err` says what is wrong, naming the path.
pub fn check(out: &Path, what: &str, inputs: &[&Path]) -> Result<(), String> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "cannot write the {what} to {}: the directory {} does not exist",
            out.display(),
            dir.display()
        ));
    }
    if out.is_dir() {
        return Err(format!(
            "cannot write the {what} to {}: it is a directory",
            out.display()
        ));
    }
    for input in inputs {
        if same_file(out, input) {
            return Err(format!(
                "the {what} would overwrite the input {}: choose another path",
                input.display()
            ));
        }
    }
    Ok(())
}

/// Whether `a` and `b` name one existing file (same device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Writes `body` to `out` atomically: a temporary file named after the
/// target, this process and a counter (so concurrent writers never share
/// one), synced, then renamed over `out`. On error the temporary file is
/// removed and `out` is as it was.
pub fn write(out: &Path, body: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = out
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = out.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(body)?;
        f.sync_all()?;
        std::fs::rename(&tmp, out)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Trace files above this size get a warning ([`trace_size_warning`]).
pub const LARGE_TRACE: usize = 100 << 20;

/// The warning for a Perfetto trace of `bytes` written to `out`, if it is
/// large enough to be slow or refused by the trace viewers (ui.perfetto.dev
/// loads traces into the browser's memory).
pub fn trace_size_warning(out: &Path, bytes: usize) -> Option<String> {
    (bytes > LARGE_TRACE).then(|| {
        format!(
            "warning: the trace {} is {} MB; ui.perfetto.dev holds a trace in the browser's \
             memory and may be slow or refuse it: trace a shorter --duration",
            out.display(),
            bytes >> 20
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_is_never_an_input_and_needs_its_directory() {
        let dir = tempfile::tempdir().expect("tmp");
        let input = dir.path().join("w.toml");
        std::fs::write(&input, "x").expect("write");
        let e = check(&input, "plan", &[&input]).expect_err("same file");
        assert!(e.contains("would overwrite the input"), "{e}");
        // The same file under another name.
        let alias = dir.path().join("sub/../w.toml");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        assert!(check(&alias, "plan", &[&input]).is_err());
        let e = check(Path::new("/nonexistent/x.csv"), "jobs (CSV)", &[]).expect_err("no dir");
        assert!(
            e.contains("the directory /nonexistent does not exist"),
            "{e}"
        );
        assert!(check(dir.path(), "plan", &[]).is_err(), "a directory");
        assert!(check(&dir.path().join("new.json"), "plan", &[&input]).is_ok());
    }

    #[test]
    fn a_write_replaces_the_file_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().expect("tmp");
        let out = dir.path().join("o.csv");
        std::fs::write(&out, "old").expect("write");
        write(&out, b"new contents").expect("written");
        assert_eq!(std::fs::read_to_string(&out).expect("read"), "new contents");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("ls")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
        // A failed write leaves the target as it was.
        let missing = dir.path().join("no/such/dir/o.csv");
        assert!(write(&missing, b"x").is_err());
        assert_eq!(std::fs::read_to_string(&out).expect("read"), "new contents");
    }

    #[test]
    fn a_large_trace_is_warned_about() {
        let p = Path::new("t.json");
        assert_eq!(trace_size_warning(p, LARGE_TRACE), None);
        let w = trace_size_warning(p, 350 << 20).expect("warned");
        assert!(
            w.contains("t.json is 350 MB") && w.contains("--duration"),
            "{w}"
        );
    }
}
