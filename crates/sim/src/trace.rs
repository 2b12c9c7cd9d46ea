//! Trace spans and their export as Chrome / Perfetto trace-event JSON
//! (the "JSON Array/Object Format" that ui.perfetto.dev and
//! chrome://tracing open): one track (thread) per core, GPU engine and GPU
//! token, one complete ("X") event per span, timestamps in microseconds.

use std::fmt::Write;

use rtgpu_policy::Time;

/// One interval of activity on a track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub track: u32,
    pub start: Time,
    pub end: Time,
    /// Task index, or `u32::MAX - g` for the interrupt work of GPU g.
    pub who: u32,
    pub kind: SpanKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Run,
    TopHalf,
    BottomHalf,
    CopyIn,
    CopyOut,
    Migrate,
    Kernel,
    Token,
}

impl SpanKind {
    fn name(self) -> &'static str {
        match self {
            SpanKind::Run => "run",
            SpanKind::TopHalf => "top half",
            SpanKind::BottomHalf => "bottom half",
            SpanKind::CopyIn => "copy in",
            SpanKind::CopyOut => "copy out",
            SpanKind::Migrate => "migration",
            SpanKind::Kernel => "kernel",
            SpanKind::Token => "token held",
        }
    }
}

fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

/// ns -> µs with three decimals, exact.
fn micros(t: Time) -> String {
    format!("{}.{:03}", t / 1_000, t % 1_000)
}

/// The trace as Chrome trace-event JSON. `tracks[i]` names track i;
/// `task_names[k]` names task k.
pub fn chrome_json(spans: &[Span], tracks: &[String], task_names: &[String]) -> String {
    let mut out = String::with_capacity(64 + spans.len() * 96);
    out.push_str("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !first {
            out.push_str(",\n");
        }
        first = false;
    };
    sep(&mut out);
    out.push_str(
        "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rtgpu simulate\"}}",
    );
    for (i, t) in tracks.iter().enumerate() {
        sep(&mut out);
        let _ = write!(
            out,
            "{{\"ph\":\"M\",\"pid\":1,\"tid\":{i},\"name\":\"thread_name\",\"args\":{{\"name\":\"{}\"}}}}",
            escape(t)
        );
        sep(&mut out);
        let _ = write!(
            out,
            "{{\"ph\":\"M\",\"pid\":1,\"tid\":{i},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{i}}}}}"
        );
    }
    for s in spans {
        let who = if s.who > u32::MAX - 1024 {
            format!("irq gpu{}", u32::MAX - s.who)
        } else {
            task_names
                .get(s.who as usize)
                .cloned()
                .unwrap_or_else(|| format!("task{}", s.who))
        };
        sep(&mut out);
        let _ = write!(
            out,
            "{{\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{},\"dur\":{},\"name\":\"{}\",\"cat\":\"{}\"}}",
            s.track,
            micros(s.start),
            micros(s.end.saturating_sub(s.start)),
            escape(&who),
            s.kind.name()
        );
    }
    out.push_str("\n]}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_valid_and_names_tracks() {
        let spans = [
            Span {
                track: 0,
                start: 1_500,
                end: 3_000,
                who: 0,
                kind: SpanKind::Run,
            },
            Span {
                track: 1,
                start: 0,
                end: 10,
                who: u32::MAX - 2,
                kind: SpanKind::TopHalf,
            },
        ];
        let s = chrome_json(
            &spans,
            &["core 0".into(), "gpu \"x\"".into()],
            &["ctl".into()],
        );
        let v: serde_json::Value = serde_json::from_str(&s).expect("valid JSON");
        let ev = v["traceEvents"].as_array().expect("array");
        assert_eq!(ev.len(), 1 + 2 * 2 + 2);
        let x: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x[0]["ts"], 1.5);
        assert_eq!(x[0]["dur"], 1.5);
        assert_eq!(x[0]["name"], "ctl");
        assert_eq!(x[1]["name"], "irq gpu2");
        assert!(s.contains("gpu \\\"x\\\""));
    }
}
