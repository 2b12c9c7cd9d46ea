//! A self-contained SVG of a run's main metrics, written directly (no
//! plotting dependency, testable as text): response times as % of period
//! per task (mean and max, deadline line at 100%), the priority-inversion
//! CDF (seed 000 Fig. 3) and engine / vGPU utilization over time.

use std::fmt::Write;

use crate::{inversion_cdf, SimResult};

const W: f64 = 900.0;
const PANEL_H: f64 = 220.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const COLORS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// The SVG document.
pub fn svg(r: &SimResult) -> String {
    let mut o = String::new();
    let panels = 3.0;
    let h = panels * (PANEL_H + 40.0) + 20.0;
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let pw = W - LEFT - RIGHT;

    // Panel 1: response time % of period per task.
    let top = 30.0;
    let _ = writeln!(
        o,
        r#"<text x="{LEFT}" y="{}" font-size="13">{}: response time as % of period (bar: mean, tick: max; line: deadline)</text>"#,
        top - 10.0,
        esc(&r.workload)
    );
    let maxp = r
        .tasks
        .iter()
        .map(|t| t.max_response_pct)
        .fold(100.0f64, f64::max)
        * 1.1;
    let n = r.tasks.len().max(1) as f64;
    let bw = pw / n;
    let y = |v: f64| top + PANEL_H - v / maxp * PANEL_H;
    for (i, t) in r.tasks.iter().enumerate() {
        let x = LEFT + i as f64 * bw;
        let c = if t.misses > 0 { "#d62728" } else { "#1f77b4" };
        let _ = writeln!(
            o,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{c}"><title>{}: mean {:.1}%, max {:.1}%</title></rect>"#,
            x + bw * 0.15,
            y(t.mean_response_pct),
            bw * 0.7,
            top + PANEL_H - y(t.mean_response_pct),
            esc(&t.name),
            t.mean_response_pct,
            t.max_response_pct
        );
        let _ = writeln!(
            o,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="black" stroke-width="2"/>"#,
            x + bw * 0.1,
            x + bw * 0.9,
            y(t.max_response_pct),
            y(t.max_response_pct)
        );
    }
    let _ = writeln!(
        o,
        r##"<line x1="{LEFT}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#d62728" stroke-dasharray="4 3"/>"##,
        LEFT + pw,
        y(100.0),
        y(100.0)
    );
    axes(&mut o, top, &format!("{maxp:.0}%"), "0%");

    // Panel 2: inversion CDF.
    let top = top + PANEL_H + 40.0;
    let _ = writeln!(
        o,
        r#"<text x="{LEFT}" y="{}" font-size="13">priority inversions: CDF of duration ({} inversions)</text>"#,
        top - 10.0,
        r.inversions.len()
    );
    let cdf = inversion_cdf(&r.inversions);
    if let Some(&(maxd, _)) = cdf.last() {
        let maxd = maxd.max(1) as f64;
        let mut pts = format!("{LEFT},{:.1}", top + PANEL_H);
        for (d, f) in &cdf {
            let _ = write!(
                pts,
                " {:.1},{:.1}",
                LEFT + *d as f64 / maxd * pw,
                top + PANEL_H - f * PANEL_H
            );
        }
        let _ = writeln!(
            o,
            r##"<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>"##
        );
        axes(&mut o, top, "1", "0");
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" text-anchor="end">{:.1} us</text>"#,
            LEFT + pw,
            top + PANEL_H + 14.0,
            maxd / 1000.0
        );
    } else {
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}">none observed</text>"#,
            LEFT + 10.0,
            top + PANEL_H / 2.0
        );
    }

    // Panel 3: utilization over time.
    let top = top + PANEL_H + 40.0;
    let series: Vec<_> = r
        .vgpus
        .iter()
        .chain(r.engines.iter().filter(|e| e.mean > 0.0))
        .take(COLORS.len())
        .collect();
    let _ = writeln!(
        o,
        r#"<text x="{LEFT}" y="{}" font-size="13">utilization over time ({})</text>"#,
        top - 10.0,
        if r.vgpus.is_empty() {
            "busiest GPU engines"
        } else {
            "vGPUs, then engines"
        }
    );
    for (k, s) in series.iter().enumerate() {
        let m = s.values.len().max(1) as f64;
        let pts: Vec<String> = s
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                format!(
                    "{:.1},{:.1}",
                    LEFT + (i as f64 + 0.5) / m * pw,
                    top + PANEL_H - v.min(1.0) * PANEL_H
                )
            })
            .collect();
        let c = COLORS[k % COLORS.len()];
        let _ = writeln!(
            o,
            r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="1.2"/>"#,
            pts.join(" ")
        );
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" fill="{c}">{} (mean {:.1}%)</text>"#,
            LEFT + 8.0 + (k % 4) as f64 * 200.0,
            top + 12.0 + (k / 4) as f64 * 13.0,
            esc(&s.name),
            s.mean * 100.0
        );
    }
    axes(&mut o, top, "100%", "0%");
    o.push_str("</svg>\n");
    o
}

fn axes(o: &mut String, top: f64, hi: &str, lo: &str) {
    let _ = writeln!(
        o,
        r#"<line x1="{LEFT}" x2="{LEFT}" y1="{top}" y2="{}" stroke="black"/><line x1="{LEFT}" x2="{}" y1="{}" y2="{}" stroke="black"/><text x="{}" y="{}" text-anchor="end">{hi}</text><text x="{}" y="{}" text-anchor="end">{lo}</text>"#,
        top + PANEL_H,
        W - RIGHT,
        top + PANEL_H,
        top + PANEL_H,
        LEFT - 4.0,
        top + 10.0,
        LEFT - 4.0,
        top + PANEL_H
    );
}
