//! A self-contained SVG of a run's main metrics, written directly (no
//! plotting dependency, testable as text): response times as % of period
//! per task (mean and max, deadline line at 100%), the priority-inversion
//! CDF (seed 000 Fig. 3, drawn as the step function it is) and, where the
//! workload uses GPUs, engine / vGPU utilization over time. Every panel has
//! labelled axes with round ticks and grid lines; tasks are named under
//! their bars.

use std::fmt::Write;

use rtgpu_model::axis::{label as num, ticks};

use crate::{inversion_cdf, SimResult, Time};

const W: f64 = 960.0;
const PANEL_H: f64 = 220.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 30.0;
/// Space above a panel (its title) and below it (tick labels, axis title).
const TITLE_H: f64 = 30.0;
const AXIS_H: f64 = 46.0;
/// The line under the first panel's title that says what its marks mean.
const KEY_H: f64 = 14.0;
/// Task labels under panel 1: at most this many are named (every k-th
/// beyond), rotated so long names fit.
const MAX_LABELS: usize = 60;
const LABEL_H: f64 = 90.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const COLORS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// Nanoseconds in the unit that suits the axis' largest value.
fn time_unit(max: Time) -> (f64, &'static str) {
    match max {
        0..=9_999 => (1.0, "ns"),
        10_000..=9_999_999 => (1e3, "us"),
        10_000_000..=9_999_999_999 => (1e6, "ms"),
        _ => (1e9, "s"),
    }
}

/// A panel's frame: y grid and tick labels at `yticks` (scaled to the
/// panel's top value, the last tick), x ticks at (position 0-1, label),
/// and the axis titles.
struct Frame<'a> {
    top: f64,
    yticks: &'a [f64],
    yfmt: &'a dyn Fn(f64) -> String,
    xticks: &'a [(f64, String)],
    xtitle: &'a str,
    ytitle: &'a str,
}

impl Frame<'_> {
    fn ymax(&self) -> f64 {
        self.yticks
            .last()
            .copied()
            .unwrap_or(1.0)
            .max(f64::MIN_POSITIVE)
    }

    fn y(&self, v: f64) -> f64 {
        self.top + PANEL_H - v / self.ymax() * PANEL_H
    }

    fn draw(&self, o: &mut String) {
        let (top, bottom, right) = (self.top, self.top + PANEL_H, W - RIGHT);
        for &t in self.yticks {
            let y = self.y(t);
            let _ = writeln!(
                o,
                r##"<line x1="{LEFT}" x2="{right}" y1="{y:.1}" y2="{y:.1}" stroke="#e4e4e4"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                LEFT - 5.0,
                y + 4.0,
                (self.yfmt)(t)
            );
        }
        let pw = W - LEFT - RIGHT;
        for (pos, label) in self.xticks {
            let x = LEFT + pos * pw;
            let _ = writeln!(
                o,
                r#"<line x1="{x:.1}" x2="{x:.1}" y1="{bottom}" y2="{}" stroke="black"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
                bottom + 4.0,
                bottom + 16.0,
                esc(label)
            );
        }
        let _ = writeln!(
            o,
            r#"<line x1="{LEFT}" x2="{LEFT}" y1="{top}" y2="{bottom}" stroke="black"/><line x1="{LEFT}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="black"/>"#
        );
        if !self.xtitle.is_empty() {
            let _ = writeln!(
                o,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                LEFT + pw / 2.0,
                bottom + 34.0,
                esc(self.xtitle)
            );
        }
        let mid = top + PANEL_H / 2.0;
        let _ = writeln!(
            o,
            r#"<text x="16" y="{mid:.1}" text-anchor="middle" transform="rotate(-90 16 {mid:.1})">{}</text>"#,
            esc(self.ytitle)
        );
    }
}

/// The SVG document.
pub fn svg(r: &SimResult) -> String {
    let series: Vec<_> = r
        .vgpus
        .iter()
        .chain(r.engines.iter().filter(|e| e.mean > 0.0))
        .take(COLORS.len())
        .collect();
    let gpu_panel = !series.is_empty();
    let cdf = inversion_cdf(&r.inversions);
    let panel1_h = TITLE_H + KEY_H + PANEL_H + LABEL_H;
    let panel_h = TITLE_H + PANEL_H + AXIS_H;
    // No inversion: one line of text instead of an empty panel.
    let inv_h = if cdf.is_empty() { TITLE_H } else { panel_h };
    // The GPU panel's legend: rows of 4 between its title and its plot,
    // clear of the lines.
    let legend_h = LEGEND_ROW_H * series.len().div_ceil(LEGEND_PER_ROW) as f64;
    let gpu_h = if gpu_panel { panel_h + legend_h } else { 0.0 };
    let h = panel1_h + inv_h + gpu_h + 10.0;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let pw = W - LEFT - RIGHT;

    // Panel 1: response time % of period per task.
    let top = TITLE_H + KEY_H;
    let _ = writeln!(
        o,
        r##"<text x="{LEFT}" y="{}" font-size="13">{}: response time as % of period per task</text><text x="{LEFT}" y="{}" fill="#555">bar: mean · black tick: max · red bar: missed a deadline · dashed line: the deadline (100%)</text>"##,
        TITLE_H - 10.0,
        esc(&r.workload),
        top - 8.0
    );
    let maxp = r
        .tasks
        .iter()
        .map(|t| t.max_response_pct)
        .fold(100.0f64, f64::max);
    let yt = ticks(maxp);
    let pct = |v: f64| format!("{}%", num(v));
    let f = Frame {
        top,
        yticks: &yt,
        yfmt: &pct,
        xticks: &[],
        xtitle: "",
        ytitle: "% of period",
    };
    f.draw(&mut o);
    let n = r.tasks.len().max(1);
    let bw = pw / n as f64;
    let every = n.div_ceil(MAX_LABELS).max(1);
    for (i, t) in r.tasks.iter().enumerate() {
        let x = LEFT + i as f64 * bw;
        let c = if t.misses > 0 { "#d62728" } else { "#1f77b4" };
        let _ = writeln!(
            o,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{c}"><title>{}: mean {:.1}%, max {:.1}%, {} miss(es)</title></rect>"#,
            x + bw * 0.15,
            f.y(t.mean_response_pct),
            bw * 0.7,
            top + PANEL_H - f.y(t.mean_response_pct),
            esc(&t.name),
            t.mean_response_pct,
            t.max_response_pct,
            t.misses
        );
        let _ = writeln!(
            o,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="black" stroke-width="2"/>"#,
            x + bw * 0.1,
            x + bw * 0.9,
            f.y(t.max_response_pct),
            f.y(t.max_response_pct)
        );
        if i % every == 0 {
            let (lx, ly) = (x + bw / 2.0, top + PANEL_H + 10.0);
            let _ = writeln!(
                o,
                r#"<text x="{lx:.1}" y="{ly:.1}" text-anchor="end" transform="rotate(-45 {lx:.1} {ly:.1})">{}</text>"#,
                esc(&t.name)
            );
        }
    }
    if every > 1 {
        let _ = writeln!(
            o,
            r##"<text x="{}" y="{}" text-anchor="end" fill="#555">one task in {every} named, of {n}</text>"##,
            W - RIGHT,
            top + PANEL_H + LABEL_H - 4.0
        );
    }
    let _ = writeln!(
        o,
        r##"<line x1="{LEFT}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#d62728" stroke-dasharray="4 3"/>"##,
        LEFT + pw,
        f.y(100.0),
        f.y(100.0)
    );

    // Panel 2: inversion CDF, a step function.
    let top = panel1_h + TITLE_H;
    if cdf.is_empty() {
        let _ = writeln!(
            o,
            r#"<text x="{LEFT}" y="{}" font-size="13">priority inversions: none observed</text>"#,
            top - 10.0
        );
    } else {
        inversion_panel(&mut o, top, &cdf, r.inversions.len());
    }

    // Panel 3: utilization over time, only where something ran on a GPU.
    if gpu_panel {
        let start = panel1_h + inv_h;
        let _ = writeln!(
            o,
            r#"<text x="{LEFT}" y="{}" font-size="13">utilization over time ({})</text>"#,
            start + TITLE_H - 10.0,
            if r.vgpus.is_empty() {
                "busiest GPU engines"
            } else {
                "vGPUs, then engines"
            }
        );
        for (k, s) in series.iter().enumerate() {
            let c = COLORS[k % COLORS.len()];
            let (col, row) = (k % LEGEND_PER_ROW, k / LEGEND_PER_ROW);
            let x = LEFT + col as f64 * (W - LEFT - RIGHT) / LEGEND_PER_ROW as f64;
            let y = start + TITLE_H + 6.0 + row as f64 * LEGEND_ROW_H;
            let _ = writeln!(
                o,
                r#"<line x1="{x:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="2"/><text x="{:.1}" y="{y:.1}">{} (mean {:.1}%)</text>"#,
                x + 16.0,
                y - 4.0,
                y - 4.0,
                x + 20.0,
                esc(&s.name),
                s.mean * 100.0
            );
        }
        utilization_panel(&mut o, start + TITLE_H + legend_h, &series, r.end);
    }
    o.push_str("</svg>\n");
    o
}

/// Rows of the GPU panel's legend: height and entries per row.
const LEGEND_ROW_H: f64 = 15.0;
const LEGEND_PER_ROW: usize = 4;

/// The inversion CDF as a step function under its title, its frame at `top`.
fn inversion_panel(o: &mut String, top: f64, cdf: &[(Time, f64)], count: usize) {
    let pw = W - LEFT - RIGHT;
    let _ = writeln!(
        o,
        r#"<text x="{LEFT}" y="{}" font-size="13">priority inversions: CDF of their durations ({count} inversions)</text>"#,
        top - 10.0
    );
    let maxd = cdf.last().map_or(1, |&(d, _)| d.max(1));
    let (scale, unit) = time_unit(maxd);
    // Ticks in the axis' unit, positions in nanoseconds.
    let xt: Vec<(f64, String)> = ticks(maxd as f64 / scale)
        .into_iter()
        .map(|v| (v * scale, num(v)))
        .collect();
    let xmax = xt.last().map_or(1.0, |t| t.0).max(1.0);
    let xticks: Vec<(f64, String)> = xt.iter().map(|(ns, l)| (ns / xmax, l.clone())).collect();
    let frac = [0.0, 0.25, 0.5, 0.75, 1.0];
    let as_frac = |v: f64| num(v);
    let xtitle = format!("inversion duration ({unit})");
    let f = Frame {
        top,
        yticks: &frac,
        yfmt: &as_frac,
        xticks: &xticks,
        xtitle: &xtitle,
        ytitle: "fraction ≤ duration",
    };
    f.draw(o);
    let x = |d: Time| LEFT + d as f64 / xmax * pw;
    let mut pts = format!("{LEFT},{:.1}", f.y(0.0));
    let mut prev = 0.0;
    for &(d, p) in cdf {
        let _ = write!(
            pts,
            " {:.1},{:.1} {:.1},{:.1}",
            x(d),
            f.y(prev),
            x(d),
            f.y(p)
        );
        prev = p;
    }
    let _ = write!(pts, " {:.1},{:.1}", LEFT + pw, f.y(1.0));
    let _ = writeln!(
        o,
        r##"<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>"##
    );
}

/// Busy fraction over time of each series (a vGPU or an engine), its
/// frame at `top`; the legend is drawn by the caller.
fn utilization_panel(o: &mut String, top: f64, series: &[&crate::UtilizationSeries], end: Time) {
    let pw = W - LEFT - RIGHT;
    let pct = |v: f64| format!("{}%", num(v));
    let span = series
        .iter()
        .map(|s| s.bucket.saturating_mul(s.values.len() as u64))
        .max()
        .unwrap_or(end)
        .max(1);
    let (scale, unit) = time_unit(span);
    let xticks: Vec<(f64, String)> = ticks(span as f64 / scale)
        .into_iter()
        .filter(|v| v * scale <= span as f64 * 1.0001)
        .map(|v| (v * scale / span as f64, num(v)))
        .collect();
    let pct100 = [0.0, 25.0, 50.0, 75.0, 100.0];
    let xtitle = format!("virtual time ({unit})");
    let f = Frame {
        top,
        yticks: &pct100,
        yfmt: &pct,
        xticks: &xticks,
        xtitle: &xtitle,
        ytitle: "busy",
    };
    f.draw(o);
    for (k, s) in series.iter().enumerate() {
        let pts: Vec<String> = s
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let t = (i as f64 + 0.5) * s.bucket as f64 / span as f64;
                format!("{:.1},{:.1}", LEFT + t * pw, f.y(v.min(1.0) * 100.0))
            })
            .collect();
        let c = COLORS[k % COLORS.len()];
        let _ = writeln!(
            o,
            r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="1.2"/>"#,
            pts.join(" ")
        );
    }
}
