//! What the three trace-parser targets check: parsing and everything
//! downstream (occurrences, thread variables, the six bounds, text/SVG
//! rendering) must never panic, and the results must be consistent.

use rtgpu_latency::parse::Format;

pub fn check(text: &str, format: Format) {
    let whole = rtgpu_latency::trace::parse_trace_as(text, format);
    // Reading line by line (what `latency report` does) gives the same
    // trace or the same error, unless a line is over the reader's cap.
    if text
        .lines()
        .all(|l| l.len() <= rtgpu_latency::trace::MAX_LINE_BYTES)
    {
        let streamed = rtgpu_latency::trace::read_trace(text.as_bytes(), Some(format))
            .map_err(|e| e.error);
        assert_eq!(streamed, whole);
    }
    let Ok(trace) = whole else {
        return;
    };
    for c in &trace.cpus {
        assert!(c.first_ts <= c.last_ts);
        for s in &c.sources {
            assert!(!s.occurrences.is_empty(), "empty source {}", s.name);
            assert!(s.occurrences.windows(2).all(|w| w[0].start <= w[1].start));
        }
    }
    let r = rtgpu_latency::report::analyse(&trace, Default::default());
    for c in &r.cpus {
        // No interrupts <= worst single <= single worst of each.
        let l: Vec<_> = c.bounds.iter().map(|(_, b)| b.latency()).collect();
        if let (Some(a), Some(b), Some(d)) = (l[0], l[1], l[2]) {
            assert!(a <= b && b <= d, "{l:?}");
        }
        // Each arrival costs at most its source's oWCET.
        if let (Some(w), Some(o)) = (l[4], l[5]) {
            assert!(w <= o, "{l:?}");
        }
    }
    let _ = rtgpu_latency::report::render_text(&r);
    let _ = rtgpu_latency::report::render_svg(&r);
}
