//! Workload file -> validated [`Workload`].
//!
//! The TOML text is parsed into a spanned value tree (`toml::de::DeTable`),
//! then walked by hand. Walking by hand rather than deriving `Deserialize`
//! lets validation go on after the first problem, so that one run reports
//! every error with its line, column and field, and lets every message say
//! what was expected in the file's own words.
//!
//! Nothing here may panic on any input: values are looked up, never indexed.

mod platform;
mod policy;
mod tasks;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::error::{Diagnostic, LineIndex};
use crate::schema::{self, KeySpec};
use crate::types::*;
use crate::units::{self, Quantity};

use platform::{parse_platform, ParsedPlatform};
use policy::{parse_overheads, parse_policy};
use tasks::{parse_tasks, parse_vgpus};

type Val<'i> = Spanned<DeValue<'i>>;

/// Generated GPUs per cluster (`gpus = N`) are capped so that a tiny file
/// cannot ask for gigabytes.
const MAX_GENERATED_GPUS: i64 = 1024;
/// Tasks after `count` expansion, for the same reason.
const MAX_TASKS: usize = 100_000;
/// The most cores a platform may have in all, as Python's
/// `partition(cores=)` allows: every analysis and the simulator keep
/// per-core state.
pub(crate) const MAX_CORES: u32 = 1 << 20;

pub(crate) const DEFAULT_SINGLE_CLUSTER: &str = "node0";

pub(crate) fn parse(text: &str, file: &str) -> Result<Workload, Vec<Diagnostic>> {
    parse_with(text, file, |cx, root| parse_root(cx, root, file))
}

/// An overheads file: only an `[overheads]` table (what `rtgpu latency
/// report --export-overheads` writes), checked like a workload's.
pub(crate) fn parse_overheads_file(text: &str, file: &str) -> Result<Overheads, Vec<Diagnostic>> {
    parse_with(text, file, |cx, root| {
        let only = schema::ROOT
            .iter()
            .filter(|k| k.name == "overheads")
            .cloned()
            .collect::<Vec<_>>();
        root.check_keys(cx, &only);
        let v = root.required(cx, "overheads", ": add an [overheads] table")?;
        read_table(cx, v, "overheads".into(), schema::OVERHEADS).map(|t| parse_overheads(cx, &t))
    })
}

/// Parses `text` as TOML (every syntax error reported, with its position)
/// and reads its root table with `read`; the result stands only if no
/// error was reported.
fn parse_with<T>(
    text: &str,
    file: &str,
    read: impl FnOnce(&mut Cx, &Tbl) -> Option<T>,
) -> Result<T, Vec<Diagnostic>> {
    let mut cx = Cx {
        file,
        lines: LineIndex::new(text),
        errors: Vec::new(),
    };
    let (root, syntax_errors) = DeTable::parse_recoverable(text);
    if !syntax_errors.is_empty() {
        for e in &syntax_errors {
            let start = e.span().map_or(0, |s| s.start);
            cx.error(start, "", format!("invalid TOML: {}", e.message()));
        }
        return Err(cx.finish());
    }
    let root = Tbl {
        table: root.get_ref(),
        start: 0,
        path: String::new(),
    };
    match read(&mut cx, &root) {
        Some(v) if cx.errors.is_empty() => Ok(v),
        _ => Err(cx.finish()),
    }
}

// ---------------------------------------------------------------------------
// Context, tables and scalar readers
// ---------------------------------------------------------------------------

struct Cx<'a> {
    file: &'a str,
    lines: LineIndex<'a>,
    errors: Vec<(usize, Diagnostic)>,
}

impl Cx<'_> {
    fn error(&mut self, offset: usize, field: &str, message: impl Into<String>) {
        let (line, column) = self.lines.line_column(offset);
        self.errors.push((
            offset,
            Diagnostic {
                file: self.file.to_string(),
                line,
                column,
                field: field.to_string(),
                message: message.into(),
            },
        ));
    }

    fn location(&self, offset: usize) -> Location {
        let (line, column) = self.lines.line_column(offset);
        Location { line, column }
    }

    fn finish(mut self) -> Vec<Diagnostic> {
        self.errors.sort_by_key(|(offset, _)| *offset);
        let mut out: Vec<Diagnostic> = Vec::with_capacity(self.errors.len());
        for (_, d) in self.errors {
            if !out.contains(&d) {
                out.push(d);
            }
        }
        out
    }
}

/// A TOML table with where it starts and its field path.
struct Tbl<'t, 'i> {
    table: &'t DeTable<'i>,
    start: usize,
    path: String,
}

impl<'t, 'i> Tbl<'t, 'i> {
    fn get(&self, key: &str) -> Option<&'t Val<'i>> {
        self.table
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == key)
            .map(|(_, v)| v)
    }

    fn field(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// Reports keys not in `specs`, with a suggestion.
    fn check_keys(&self, cx: &mut Cx, specs: &[KeySpec]) {
        for (k, _) in self.table.iter() {
            let name: &str = k.get_ref().as_ref();
            if specs.iter().any(|s| s.name == name) {
                continue;
            }
            let message = match suggest(name, specs.iter().map(|s| s.name)) {
                Some(s) => format!("unknown key `{}`; did you mean `{s}`?", name.escape_debug()),
                None => format!(
                    "unknown key `{}` (expected one of: {})",
                    name.escape_debug(),
                    specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                ),
            };
            cx.error(k.span().start, &self.field(name), message);
        }
    }

    /// The value of a required key, or an error at the table.
    fn required(&self, cx: &mut Cx, key: &str, hint: &str) -> Option<&'t Val<'i>> {
        let v = self.get(key);
        if v.is_none() {
            cx.error(
                self.start,
                &self.field(key),
                format!("missing required key `{key}`{hint}"),
            );
        }
        v
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The closest candidate, if it is close enough to be a likely typo: the
/// same up to case, one edit or swap away (for words of 3+ characters), or
/// Jaro-Winkler similarity above 0.8.
pub(crate) fn suggest<'c>(
    word: &str,
    candidates: impl Iterator<Item = &'c str>,
) -> Option<&'c str> {
    let lower = word.to_lowercase();
    // Rank by (edit distance, -similarity).
    let mut best: Option<(usize, f64, &str)> = None;
    for c in candidates {
        let c_lower = c.to_lowercase();
        let distance = strsim::osa_distance(&lower, &c_lower);
        let similarity = strsim::jaro_winkler(&lower, &c_lower);
        let close =
            distance == 0 || (distance == 1 && lower.chars().count() >= 3) || similarity > 0.8;
        if !close {
            continue;
        }
        let better = match best {
            None => true,
            Some((d, s, _)) => distance < d || (distance == d && similarity > s),
        };
        if better {
            best = Some((distance, similarity, c));
        }
    }
    best.map(|(_, _, c)| c)
}

/// How a value is shown after "found".
fn found(v: &DeValue) -> String {
    match v {
        DeValue::String(s) => format!("\"{}\"", s.escape_debug()),
        DeValue::Integer(i) => integer_text(i.as_str(), i.radix()),
        DeValue::Float(f) => f.as_str().to_string(),
        DeValue::Boolean(b) => format!("boolean {b}"),
        DeValue::Datetime(d) => format!("datetime {d}"),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
    }
}

fn integer_text(digits: &str, radix: u32) -> String {
    match radix {
        2 => format!("0b{digits}"),
        8 => format!("0o{digits}"),
        16 => format!("0x{digits}"),
        _ => digits.to_string(),
    }
}

fn integer_value(v: &DeValue) -> Option<Result<i128, ()>> {
    match v {
        DeValue::Integer(i) => Some(i128::from_str_radix(i.as_str(), i.radix()).map_err(|_| ())),
        _ => None,
    }
}

fn read_table<'t, 'i>(
    cx: &mut Cx,
    v: &'t Val<'i>,
    path: String,
    specs: &[KeySpec],
) -> Option<Tbl<'t, 'i>> {
    match v.get_ref() {
        DeValue::Table(table) => {
            let t = Tbl {
                table,
                start: v.span().start,
                path,
            };
            t.check_keys(cx, specs);
            Some(t)
        }
        other => {
            cx.error(
                v.span().start,
                &path,
                format!("expected a table, found {}", found(other)),
            );
            None
        }
    }
}

/// An array of tables (`[[x]]` or `x = [{..}, {..}]`).
fn read_tables<'t, 'i>(
    cx: &mut Cx,
    v: &'t Val<'i>,
    path: &str,
    specs: &[KeySpec],
) -> Vec<Tbl<'t, 'i>> {
    let mut out = Vec::new();
    match v.get_ref() {
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if let Some(t) = read_table(cx, item, format!("{path}[{i}]"), specs) {
                    out.push(t);
                }
            }
        }
        DeValue::Table(_) => cx.error(
            v.span().start,
            path,
            format!("expected an array of tables: write [[{path}]] (double brackets)"),
        ),
        other => cx.error(
            v.span().start,
            path,
            format!(
                "expected an array of tables ([[{path}]]), found {}",
                found(other)
            ),
        ),
    }
    out
}

fn read_quantity(cx: &mut Cx, v: &Val, field: &str, q: Quantity) -> Option<u64> {
    match v.get_ref() {
        DeValue::String(s) => match units::parse_quantity(s, q) {
            Ok(n) => Some(n),
            Err(e) => {
                cx.error(v.span().start, field, e.to_string());
                None
            }
        },
        DeValue::Integer(_) | DeValue::Float(_) => {
            let number = found(v.get_ref());
            cx.error(
                v.span().start,
                field,
                format!(
                    "missing unit: expected {} like \"{}\", found {number} (write \"{number}{}\")",
                    q.describe(),
                    q.example(),
                    match q {
                        Quantity::Duration => " ms",
                        Quantity::Size => " MiB",
                        Quantity::Bandwidth => " GB/s",
                        Quantity::Percent => "%",
                    }
                ),
            );
            None
        }
        other => {
            cx.error(
                v.span().start,
                field,
                format!(
                    "expected {} like \"{}\", found {}",
                    q.describe(),
                    q.example(),
                    found(other)
                ),
            );
            None
        }
    }
}

fn read_duration(cx: &mut Cx, v: &Val, field: &str) -> Option<Nanos> {
    read_quantity(cx, v, field, Quantity::Duration)
}

fn read_size(cx: &mut Cx, v: &Val, field: &str) -> Option<Bytes> {
    read_quantity(cx, v, field, Quantity::Size)
}

fn read_int(cx: &mut Cx, v: &Val, field: &str, min: i64, max: i64) -> Option<i64> {
    match integer_value(v.get_ref()) {
        Some(Ok(n)) if n >= i128::from(min) && n <= i128::from(max) => i64::try_from(n).ok(),
        Some(_) => {
            let message = if min == max {
                format!("must be {min}, found {}", found(v.get_ref()))
            } else if max == i64::from(u32::MAX) {
                format!("must be at least {min}, found {}", found(v.get_ref()))
            } else {
                format!(
                    "must be between {min} and {max}, found {}",
                    found(v.get_ref())
                )
            };
            cx.error(v.span().start, field, message);
            None
        }
        None => {
            let hint = match v.get_ref() {
                DeValue::String(s) if s.trim().parse::<i64>().is_ok() => " (remove the quotes)",
                _ => "",
            };
            cx.error(
                v.span().start,
                field,
                format!("expected an integer, found {}{hint}", found(v.get_ref())),
            );
            None
        }
    }
}

fn read_u32(cx: &mut Cx, v: &Val, field: &str, min: u32) -> Option<u32> {
    read_int(cx, v, field, i64::from(min), i64::from(u32::MAX)).and_then(|n| u32::try_from(n).ok())
}

fn read_bool(cx: &mut Cx, v: &Val, field: &str) -> Option<bool> {
    match v.get_ref() {
        DeValue::Boolean(b) => Some(*b),
        other => {
            cx.error(
                v.span().start,
                field,
                format!("expected true or false, found {}", found(other)),
            );
            None
        }
    }
}

fn read_str<'t>(cx: &mut Cx, v: &'t Val, field: &str, what: &str) -> Option<&'t str> {
    match v.get_ref() {
        DeValue::String(s) => Some(s.as_ref()),
        other => {
            cx.error(
                v.span().start,
                field,
                format!("expected {what} (a string), found {}", found(other)),
            );
            None
        }
    }
}

/// A name: non-empty, no control characters, no surrounding whitespace.
fn read_name(cx: &mut Cx, v: &Val, field: &str) -> Option<String> {
    let s = read_str(cx, v, field, "a name")?;
    let problem = if s.is_empty() {
        Some("a name must not be empty")
    } else if s.trim() != s {
        Some("a name must not start or end with whitespace")
    } else if s.chars().any(char::is_control) {
        Some("a name must not contain control characters")
    } else if s.chars().count() > 128 {
        Some("a name must be at most 128 characters long")
    } else {
        None
    };
    match problem {
        Some(p) => {
            cx.error(v.span().start, field, p);
            None
        }
        None => Some(s.to_string()),
    }
}

/// Lowercase without `-`, `_` and spaces: `C-EDF`, `c_edf` and `cedf` match.
fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// One of several spellings. `options` pairs accepted spellings with values;
/// `canonical` is what messages list.
fn read_choice<T: Copy>(
    cx: &mut Cx,
    v: &Val,
    field: &str,
    what: &str,
    options: &[(&str, T)],
    canonical: &[&str],
) -> Option<T> {
    let s = read_str(cx, v, field, what)?;
    let n = normalize(s);
    if let Some((_, value)) = options.iter().find(|(o, _)| normalize(o) == n) {
        return Some(*value);
    }
    let message = match suggest(s, canonical.iter().copied()) {
        Some(c) => format!(
            "unknown {what} \"{}\"; did you mean \"{c}\"? (expected one of: {})",
            s.escape_debug(),
            canonical.join(", ")
        ),
        None => format!(
            "unknown {what} \"{}\" (expected one of: {})",
            s.escape_debug(),
            canonical.join(", ")
        ),
    };
    cx.error(v.span().start, field, message);
    None
}

// ---------------------------------------------------------------------------
// Names and references
// ---------------------------------------------------------------------------

/// The names of one kind of item, for resolving references.
struct Names {
    kind: &'static str,
    names: Vec<String>,
    /// Every item of this kind has a valid name; if not, an unknown
    /// reference might be the broken item, so it is not reported twice.
    complete: bool,
}

impl Names {
    fn new(kind: &'static str) -> Self {
        Names {
            kind,
            names: Vec::new(),
            complete: true,
        }
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Resolves the string in `v`, reporting unknown names with a suggestion.
    fn resolve(&self, cx: &mut Cx, v: &Val, field: &str) -> Option<usize> {
        let s = read_str(cx, v, field, &format!("the name of a {}", self.kind))?;
        if let Some(i) = self.index(s) {
            return Some(i);
        }
        if !self.complete {
            return None;
        }
        let message = if self.names.is_empty() {
            format!(
                "unknown {} \"{}\": the file defines no {}s",
                self.kind,
                s.escape_debug(),
                self.kind
            )
        } else {
            match suggest(s, self.names.iter().map(String::as_str)) {
                Some(c) => format!(
                    "unknown {} \"{}\"; did you mean \"{c}\"?",
                    self.kind,
                    s.escape_debug()
                ),
                None => {
                    let mut known: Vec<&str> =
                        self.names.iter().take(10).map(String::as_str).collect();
                    if self.names.len() > 10 {
                        known.push("...");
                    }
                    format!(
                        "unknown {} \"{}\" (defined: {})",
                        self.kind,
                        s.escape_debug(),
                        known.join(", ")
                    )
                }
            }
        };
        cx.error(v.span().start, field, message);
        None
    }
}

/// Reports a duplicate name (and marks the names incomplete so that the
/// duplicate does not also produce reference errors).
fn add_name(cx: &mut Cx, names: &mut Names, name: Option<String>, v: Option<&Val>, field: &str) {
    match name {
        Some(n) => {
            if names.index(&n).is_some() {
                if let Some(v) = v {
                    cx.error(
                        v.span().start,
                        field,
                        format!("duplicate {} name \"{}\"", names.kind, n.escape_debug()),
                    );
                }
            }
            names.names.push(n);
        }
        None => {
            names.complete = false;
            names.names.push(String::new());
        }
    }
}

// ---------------------------------------------------------------------------
// The sections
// ---------------------------------------------------------------------------

fn parse_root(cx: &mut Cx, root: &Tbl, file: &str) -> Option<Workload> {
    root.check_keys(cx, schema::ROOT);
    let name = match root.get("name") {
        Some(v) => read_name(cx, v, "name"),
        None => Some(file_stem(file)),
    };

    let platform = match root.required(cx, "platform", ": add a [platform] table") {
        Some(v) => read_table(cx, v, "platform".into(), schema::PLATFORM)
            .and_then(|t| parse_platform(cx, &t)),
        None => None,
    };

    let overheads = match root.get("overheads") {
        Some(v) => read_table(cx, v, "overheads".into(), schema::OVERHEADS)
            .map(|t| parse_overheads(cx, &t)),
        None => Some(Overheads::default()),
    };
    let policy = match root.get("policy") {
        Some(v) => read_table(cx, v, "policy".into(), schema::POLICY).map(|t| parse_policy(cx, &t)),
        None => Some(Policy::default()),
    };

    let empty = ParsedPlatform::broken();
    let plat = platform.as_ref().unwrap_or(&empty);
    let (vgpus, vgpu_names) = match root.get("vgpu") {
        Some(v) => parse_vgpus(cx, v, plat),
        None => (Vec::new(), Names::new("vGPU")),
    };
    let tasks = match root.get("task") {
        Some(v) => parse_tasks(
            cx,
            v,
            plat,
            &vgpus,
            &vgpu_names,
            policy.as_ref().map(|p| p.gpu_allocator),
        ),
        None => {
            cx.error(
                0,
                "task",
                "the workload has no tasks: add at least one [[task]] table",
            );
            Vec::new()
        }
    };

    Some(Workload {
        name: name?,
        platform: platform?.platform,
        overheads: overheads?,
        policy: policy?,
        vgpus,
        tasks,
    })
}

fn file_stem(file: &str) -> String {
    std::path::Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        // Only a stem that would be a valid `name`, so that to_toml output
        // parses again.
        .filter(|s| {
            !s.is_empty()
                && s.trim() == s
                && !s.chars().any(char::is_control)
                && s.chars().count() <= 128
        })
        .unwrap_or_else(|| "workload".to_string())
}
