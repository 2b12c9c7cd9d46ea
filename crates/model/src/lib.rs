//! # rtgpu-model
//!
//! The workload file of rtgpu and the validated model it describes
//! (DESIGN.md §3.2): one TOML file with human units (`"50 ms"`, `"2 MiB"`,
//! `"6 GB/s"`) gives the platform (clusters, GPUs, PCIe topology), the
//! system overheads, the policy choices and the tasks, and drives
//! `analyze`, `simulate`, `run` and `experiment` alike.
//!
//! - [`parse_workload`] / [`load_workload`]: text or file -> [`Workload`],
//!   or every problem found as a [`Diagnostic`] with file, line, column,
//!   field path and what was expected.
//! - [`types`]: the validated model. Times are integer nanoseconds, sizes
//!   integer bytes, bandwidths integer bytes per second (DESIGN.md §3.3).
//! - [`units`]: exact parsing and formatting of the human units.
//! - [`to_toml`]: the inverse of [`parse_workload`].
//! - [`json_schema`]: a JSON Schema of the file format for editors.
//!
//! The file format is documented key by key in this crate's README.md.
//!
//! ```
//! let w = rtgpu_model::parse_workload(
//!     r#"
//!     [platform]
//!     cores = 2
//!
//!     [[task]]
//!     name = "control"
//!     wcet = "2 ms"
//!     period = "10 ms"
//!     "#,
//!     "control.toml",
//! )
//! .unwrap();
//! assert_eq!(w.name, "control");
//! assert_eq!(w.tasks[0].deadline, 10_000_000);
//!
//! let err = rtgpu_model::parse_workload(
//!     "[platform]\ncores = 2\n[[task]]\nname = \"t\"\nwcet = \"2 ms\"\nperiod = 10\n",
//!     "bad.toml",
//! )
//! .unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "bad.toml:6:10: error in `task[0].period`: missing unit: expected a duration \
//!      like \"10 ms\", found 10 (write \"10 ms\")"
//! );
//! ```

// parse_workload must never panic on any input (fuzzed, see README.md):
// no unwrap, expect, indexing or explicit panics outside tests.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

pub mod axis;
mod error;
pub mod listing;
mod parse;
mod sched;
mod schema;
mod topology;
pub mod types;
pub mod units;
mod write;

use std::path::Path;

pub use error::{Diagnostic, ModelError};
pub use sched::Sched;
pub use schema::json_schema;
pub use types::*;
pub use write::to_toml;

/// Parses and validates a workload file's text. `file_name` is used in
/// messages and, without a `name` key, gives the workload's name (its stem).
///
/// On error, every problem found is returned (in file order), not just the
/// first. Never panics, whatever the input.
pub fn parse_workload(text: &str, file_name: &str) -> Result<Workload, ModelError> {
    parse::parse(text, file_name).map_err(ModelError::Invalid)
}

/// Parses an overheads file: a TOML file with one `[overheads]` table
/// (the keys and units of a workload's `[overheads]`, e.g. as exported by
/// `rtgpu latency report --export-overheads`). Errors carry file, line,
/// column and field like [`parse_workload`]'s.
pub fn parse_overheads(text: &str, file_name: &str) -> Result<Overheads, ModelError> {
    parse::parse_overheads_file(text, file_name).map_err(ModelError::Invalid)
}

/// The largest workload or overheads file read (`/dev/zero` or a stray
/// multi-gigabyte file gets an error, not the machine's memory): 64 MiB,
/// far above any real workload (100,000 tasks take about 8 MB).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Reads at most [`MAX_INPUT_BYTES`] of `path` (standard input for `-`);
/// more is an error naming it.
fn read_bounded(path: &Path) -> Result<Vec<u8>, ModelError> {
    use std::io::Read as _;
    let io = |source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    let reader: Box<dyn std::io::Read> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(path).map_err(io)?)
    };
    reader
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(io(std::io::Error::other(format!(
            "larger than {} MiB, the most a workload or overheads file may be",
            MAX_INPUT_BYTES >> 20
        ))));
    }
    Ok(bytes)
}

/// Reads and parses an overheads file (see [`parse_overheads`]).
pub fn load_overheads(path: &Path) -> Result<Overheads, ModelError> {
    let bytes = read_bounded(path)?;
    let text = String::from_utf8(bytes).map_err(|e| ModelError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
    })?;
    parse_overheads(&text, &path.display().to_string())
}

/// Reads and parses a workload file (`-`: standard input). A file that
/// cannot be read is a [`ModelError::Io`] naming the path; one that is not
/// UTF-8 is a diagnostic at the first invalid byte.
pub fn load_workload(path: &Path) -> Result<Workload, ModelError> {
    let bytes = read_bounded(path)?;
    let file = if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    match String::from_utf8(bytes) {
        Ok(text) => parse_workload(&text, &file),
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let bytes = e.as_bytes();
            let prefix =
                std::str::from_utf8(bytes.get(..valid).unwrap_or_default()).unwrap_or_default();
            let line = prefix.matches('\n').count() + 1;
            let column = prefix.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            Err(ModelError::Invalid(vec![Diagnostic {
                file,
                line,
                column,
                field: String::new(),
                message: "the file is not valid UTF-8".to_string(),
            }]))
        }
    }
}
