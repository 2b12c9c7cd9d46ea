//! Errors in compiler style: `FILE:LINE:COL: error in `field`: message`.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One problem in a workload file.
///
/// `line` and `column` are 1-based; the column counts characters (Unicode
/// scalar values), as compilers do. `field` is the path of the offending key
/// in the file's own spelling (`task[2].deadline`, `platform.gpu[0].attach`;
/// array indices are 0-based); it is empty for TOML syntax errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub field: String,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: error", self.file, self.line, self.column)?;
        if !self.field.is_empty() {
            write!(f, " in `{}`", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Why a workload could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file could not be read.
    #[error("{}: error: cannot read the workload file: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file was read but is not a valid workload: every problem found,
    /// in file order (at least one). Display prints one per line.
    #[error("{}", join_lines(.0))]
    Invalid(Vec<Diagnostic>),
}

impl ModelError {
    /// The problems in the file, in file order (empty for I/O errors).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            ModelError::Io { .. } => &[],
            ModelError::Invalid(d) => d,
        }
    }

    /// The first problem, for callers that show only one.
    pub fn first(&self) -> Option<&Diagnostic> {
        self.diagnostics().first()
    }
}

fn join_lines(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(Diagnostic::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Byte offset -> 1-based (line, column).
pub(crate) struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset at which each line starts.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    /// Never panics: offsets past the end or inside a character are clamped.
    pub(crate) fn line_column(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts.get(line - 1).copied().unwrap_or(0);
        let column = match self.text.get(start..offset) {
            Some(s) => s.chars().count(),
            None => offset.saturating_sub(start),
        };
        (line, column + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_columns() {
        let idx = LineIndex::new("ab\nµx\n\nz");
        assert_eq!(idx.line_column(0), (1, 1));
        assert_eq!(idx.line_column(1), (1, 2));
        assert_eq!(idx.line_column(2), (1, 3));
        assert_eq!(idx.line_column(3), (2, 1));
        assert_eq!(idx.line_column(5), (2, 2)); // after the two-byte µ
        assert_eq!(idx.line_column(4), (2, 2)); // inside µ: clamped, no panic
        assert_eq!(idx.line_column(7), (3, 1));
        assert_eq!(idx.line_column(8), (4, 1));
        assert_eq!(idx.line_column(1000), (4, 2));
        assert_eq!(LineIndex::new("").line_column(5), (1, 1));
    }

    #[test]
    fn display() {
        let d = Diagnostic {
            file: "w.toml".into(),
            line: 3,
            column: 12,
            field: "task[2].deadline".into(),
            message: "expected a duration like \"10 ms\", found 10".into(),
        };
        assert_eq!(
            d.to_string(),
            "w.toml:3:12: error in `task[2].deadline`: expected a duration like \"10 ms\", found 10"
        );
        let e = ModelError::Invalid(vec![d.clone(), d]);
        assert_eq!(e.to_string().lines().count(), 2);
    }
}
