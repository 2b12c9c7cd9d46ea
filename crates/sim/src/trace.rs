//! Trace spans and their export as Chrome / Perfetto trace-event JSON
//! (the "JSON Array/Object Format" that ui.perfetto.dev and
//! chrome://tracing open): one track (thread) per core, GPU engine and GPU
//! token, one complete ("X") event per span, timestamps in microseconds.
//! Slices on a track must nest: spans that overlap without nesting (two
//! tokens of one GPU held at once) go to a second lane of their track
//! ([`lanes`]), shown as its own track next to the first.

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

/// A lane per interval (start, end) such that the intervals of one lane
/// nest or are disjoint, as trace viewers need the slices of one track:
/// the first lane where the interval starts after the lane's open
/// intervals end, or lies within the innermost one; lanes are numbered
/// from 0 in order of first use.
pub fn lanes(spans: &[(Time, Time)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| (spans[i].0, std::cmp::Reverse(spans[i].1)));
    // Per lane, the end times of its open (enclosing) intervals.
    let mut open: Vec<Vec<Time>> = Vec::new();
    let mut lane = vec![0; spans.len()];
    for i in order {
        let (start, end) = spans[i];
        let fits = |stack: &mut Vec<Time>| {
            while stack.last().is_some_and(|&e| e <= start) {
                stack.pop();
            }
            stack.last().is_none_or(|&e| end <= e)
        };
        let l = match open.iter_mut().position(fits) {
            Some(l) => l,
            None => {
                open.push(Vec::new());
                open.len() - 1
            }
        };
        open[l].push(end);
        lane[i] = l;
    }
    lane
}

/// The trace as Chrome trace-event JSON. `tracks[i]` names track i;
/// `task_names[k]` names task k.
pub fn chrome_json(spans: &[Span], tracks: &[String], task_names: &[String]) -> String {
    // Lanes per track; lane k > 0 of track i becomes thread id
    // tracks.len() + (its place among the extra lanes).
    let mut by_track: Vec<Vec<usize>> = vec![Vec::new(); tracks.len()];
    for (k, s) in spans.iter().enumerate() {
        if let Some(v) = by_track.get_mut(s.track as usize) {
            v.push(k);
        }
    }
    let mut tid: Vec<u64> = spans.iter().map(|s| u64::from(s.track)).collect();
    let mut extra: Vec<(usize, usize)> = Vec::new();
    for (t, members) in by_track.iter().enumerate() {
        let iv: Vec<(Time, Time)> = members
            .iter()
            .map(|&k| (spans[k].start, spans[k].end))
            .collect();
        for (&k, l) in members.iter().zip(lanes(&iv)) {
            if l > 0 {
                let pos = extra.iter().position(|&e| e == (t, l)).unwrap_or_else(|| {
                    extra.push((t, l));
                    extra.len() - 1
                });
                tid[k] = (tracks.len() + pos) as u64;
            }
        }
    }
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
    let names = tracks
        .iter()
        .enumerate()
        .map(|(i, t)| (i, t.clone(), i * 64))
        .chain(extra.iter().enumerate().map(|(pos, &(t, l))| {
            (
                tracks.len() + pos,
                format!("{} ({})", tracks[t], l + 1),
                t * 64 + l,
            )
        }));
    for (i, name, sort) in names {
        sep(&mut out);
        let _ = write!(
            out,
            "{{\"ph\":\"M\",\"pid\":1,\"tid\":{i},\"name\":\"thread_name\",\"args\":{{\"name\":\"{}\"}}}}",
            escape(&name)
        );
        sep(&mut out);
        let _ = write!(
            out,
            "{{\"ph\":\"M\",\"pid\":1,\"tid\":{i},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{sort}}}}}"
        );
    }
    for (s, tid) in spans.iter().zip(&tid) {
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
            tid,
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

    #[test]
    fn lanes_keep_nesting_and_split_partial_overlaps() {
        // b nests in a; c overlaps a partially; d starts after all.
        let l = lanes(&[(0, 10), (2, 5), (8, 14), (20, 21)]);
        assert_eq!(l, vec![0, 0, 1, 0]);
        // Two tokens of one GPU held at once, then a third hold after.
        assert_eq!(lanes(&[(0, 10), (5, 15), (15, 20)]), vec![0, 1, 0]);
        assert!(lanes(&[]).is_empty());
    }

    #[test]
    fn overlapping_token_holds_get_a_track_of_their_own() {
        let hold = |start, end, who| Span {
            track: 0,
            start,
            end,
            who,
            kind: SpanKind::Token,
        };
        let s = chrome_json(
            &[hold(0, 10_000, 0), hold(5_000, 15_000, 1)],
            &["gpu0 tokens".into()],
            &["a".into(), "b".into()],
        );
        let v: serde_json::Value = serde_json::from_str(&s).expect("valid JSON");
        let ev = v["traceEvents"].as_array().expect("array");
        let x: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_ne!(x[0]["tid"], x[1]["tid"]);
        assert!(ev
            .iter()
            .any(|e| e["name"] == "thread_name" && e["args"]["name"] == "gpu0 tokens (2)"));
    }
}
