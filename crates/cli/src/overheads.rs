//! `--overheads SOURCE` of `rtgpu run` and `rtgpu analyze`: which overheads
//! the analysis charges (seed 000 App. B), and the words that say so.
//!
//! SOURCE is one of the keywords `machine` (this machine's measurement,
//! cached; `crates/runtime/src/calibrate.rs`), `measure` (measure now and
//! refresh the cache), `workload` (the file's own `[overheads]`, Table III
//! where absent), or else the path of a file with an `[overheads]` table.
//! Keywords win over files of the same name: `./machine` names a file
//! called `machine`.

use std::path::{Path, PathBuf};

use rtgpu_model::Overheads;
use rtgpu_runtime::calibrate::{self, cache::Cached, CalibrationConfig, Measured};

/// Where the overheads come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The workload's own `[overheads]`.
    Workload,
    /// This machine's cached measurement, measured first if absent.
    Machine,
    /// Measure this machine now and refresh the cache.
    Measure,
    /// An `[overheads]` file.
    File(PathBuf),
}

impl Source {
    /// The file it reads, if any (an input no output may overwrite).
    pub fn file(&self) -> Option<&std::path::Path> {
        match self {
            Source::File(p) => Some(p),
            _ => None,
        }
    }

    /// Parses `--overheads`: the keywords, else a path (clap value parser).
    pub fn parse(s: &str) -> Result<Source, String> {
        Ok(match s {
            "" => return Err("expected machine, measure, workload or a file".to_string()),
            "workload" => Source::Workload,
            "machine" => Source::Machine,
            "measure" => Source::Measure,
            path => Source::File(PathBuf::from(path)),
        })
    }
}

/// The overheads chosen, and where they came from.
#[derive(Debug, Clone)]
pub enum Chosen {
    /// The workload's own.
    Workload,
    /// Read from a file.
    File(PathBuf, Overheads),
    /// This machine's measurement.
    Machine {
        measured: Box<Measured>,
        cached: Cached,
        /// Why an existing cache file was not used.
        stale: Option<String>,
    },
}

/// Resolves `source`: reads the file, or this machine's measurement
/// (printing one progress line to stderr before measuring). Errors are
/// the messages to print.
pub fn resolve(source: &Source) -> Result<Chosen, String> {
    let keyword = |k: &str| {
        if Path::new(k).exists() {
            eprintln!(
                "rtgpu: --overheads {k}: the keyword wins over the file ./{k} here; pass ./{k} \
                 to use the file"
            );
        }
    };
    match source {
        Source::Workload => Ok(Chosen::Workload),
        Source::File(p) => rtgpu_model::load_overheads(p)
            .map(|o| Chosen::File(p.clone(), o))
            .map_err(|e| e.to_string()),
        Source::Machine | Source::Measure => {
            let refresh = *source == Source::Measure;
            keyword(if refresh { "measure" } else { "machine" });
            let (measured, cached, stale) = calibrate::cache::machine_overheads(
                refresh,
                &CalibrationConfig::default(),
                &mut || {
                    eprintln!(
                        "rtgpu: measuring this machine's overheads (about 2 s; cached for later \
                         runs)..."
                    )
                },
            );
            if let Cached::NotWritten(why) = &cached {
                eprintln!("rtgpu: note: the measurement is not cached: {why}");
            }
            Ok(Chosen::Machine {
                measured: Box::new(measured),
                cached,
                stale,
            })
        }
    }
}

impl Chosen {
    /// Puts the chosen overheads into `w` (nothing for [`Chosen::Workload`]).
    pub fn apply(&self, w: &mut rtgpu_model::Workload) {
        match self {
            Chosen::Workload => {}
            Chosen::File(_, o) => w.overheads = *o,
            Chosen::Machine { measured, .. } => w.overheads = measured.overheads(),
        }
    }

    /// Where the overheads come from, in words (no values); `used` tells
    /// the workload's own apart (Table III, zero, or its own values).
    pub fn origin(&self, used: &Overheads) -> String {
        match self {
            Chosen::Workload if *used == Overheads::default() => {
                "the workload's: seed 000 Table III (not measured here)".to_string()
            }
            Chosen::Workload if *used == Overheads::zero() => {
                "the workload's: zero (its [overheads] has base = \"zero\")".to_string()
            }
            Chosen::Workload => {
                "the workload's [overheads] (seed 000 Table III for keys it does not set)"
                    .to_string()
            }
            Chosen::File(p, _) => format!("the [overheads] of {}", p.display()),
            Chosen::Machine {
                measured, cached, ..
            } => {
                let when = calibrate::utc_date(measured.measured_at);
                let policy = format!(
                    "{} probes{}",
                    measured.policy.describe(),
                    if measured.policy.is_realtime() {
                        ""
                    } else {
                        ", not real-time figures"
                    }
                );
                match cached {
                    Cached::Read(p) => format!(
                        "measured on this machine (cached {}, {when}, {policy})",
                        p.display()
                    ),
                    Cached::Written(p) => format!(
                        "measured on this machine now (cached to {}, {when}, {policy})",
                        p.display()
                    ),
                    Cached::NotWritten(_) => {
                        format!("measured on this machine now (not cached, {when}, {policy})")
                    }
                }
            }
        }
    }

    /// The `overheads` line of `rtgpu run`'s header (without the label):
    /// origin, values used, and which are not measured. `used` is the
    /// workload's overheads after [`Chosen::apply`].
    pub fn line(&self, used: &Overheads) -> String {
        match self {
            Chosen::Machine { measured, .. } => {
                let (_, not) = measured.keys();
                format!(
                    "{}: {}; Table III (not measured here): {}",
                    self.origin(used),
                    measured.values_text(),
                    not.join(", ")
                )
            }
            _ => format!(
                "{}{}: {}",
                self.origin(used),
                if matches!(self, Chosen::Workload) {
                    " (`--overheads machine` charges this machine's, measured in about 2 s)"
                } else {
                    ""
                },
                [
                    ("rel", used.rel),
                    ("sch", used.sch),
                    ("cxs", used.cxs),
                    ("ipi", used.ipi),
                    ("tck", used.tck),
                    ("th", used.th),
                    ("bh", used.bh),
                    ("krel", used.krel),
                    ("paisch", used.paisch),
                    ("pairel", used.pairel),
                ]
                .iter()
                .map(|(k, v)| format!("{k} {}", crate::render::duration(*v)))
                .collect::<Vec<_>>()
                .join(", ")
            ),
        }
    }

    /// The `overheads` object of the JSON outputs.
    pub fn json(&self, used: &Overheads) -> serde_json::Value {
        let mut v = serde_json::json!({
            "source": match self {
                Chosen::Workload => "workload",
                Chosen::File(..) => "file",
                Chosen::Machine { .. } => "machine",
            },
            "description": self.origin(used),
            "values": used,
        });
        match self {
            Chosen::Workload => {}
            Chosen::File(p, _) => v["file"] = serde_json::json!(p.display().to_string()),
            Chosen::Machine {
                measured,
                cached,
                stale,
            } => {
                let (yes, no) = measured.keys();
                let s = &measured.samples;
                v["measured"] = serde_json::json!(yes);
                v["not_measured"] = serde_json::json!(no);
                v["policy"] = serde_json::json!(measured.policy.describe());
                v["realtime"] = serde_json::json!(measured.policy.is_realtime());
                v["measured_at"] = serde_json::json!(measured.measured_at);
                v["measured_at_utc"] = serde_json::json!(calibrate::utc_date(measured.measured_at));
                v["machine"] = serde_json::json!({
                    "host": measured.machine.host,
                    "kernel": measured.machine.kernel,
                    "cpu_model": measured.machine.cpu_model,
                    "cpus": measured.machine.cpus,
                    "key": measured.machine.key(measured.policy),
                });
                v["samples"] = serde_json::json!({
                    "wake": s.wake,
                    "same_cpu": s.same_cpu,
                    "cross_cpu": s.cross_cpu,
                    "spin_ns": s.spin,
                    "interruptions": s.interruptions,
                });
                v["probes"] = serde_json::json!(measured.summary);
                v["notes"] = serde_json::json!(measured.notes);
                v["cache"] = match cached {
                    Cached::Read(p) => serde_json::json!({"read": p.display().to_string()}),
                    Cached::Written(p) => serde_json::json!({"written": p.display().to_string()}),
                    Cached::NotWritten(why) => serde_json::json!({"not_written": why}),
                };
                if let Some(s) = stale {
                    v["cache_refused"] = serde_json::json!(s);
                }
            }
        }
        v
    }

    /// The note `rtgpu analyze` adds to its report (none for the
    /// workload's own overheads, today's default).
    pub fn note(&self, used: &Overheads) -> Option<String> {
        match self {
            Chosen::Workload => None,
            _ => Some(format!("overheads: {}", self.line(used))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_win_and_anything_else_is_a_file() {
        assert_eq!(Source::parse("machine"), Ok(Source::Machine));
        assert_eq!(Source::parse("measure"), Ok(Source::Measure));
        assert_eq!(Source::parse("workload"), Ok(Source::Workload));
        assert_eq!(
            Source::parse("./machine"),
            Ok(Source::File(PathBuf::from("./machine")))
        );
        assert_eq!(
            Source::parse("oh.toml"),
            Ok(Source::File(PathBuf::from("oh.toml")))
        );
        assert!(Source::parse("").is_err());
    }
}
