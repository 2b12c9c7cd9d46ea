//! The latency report: per CPU, the interference-free latency L_IF, the
//! bound under each of the six characterisations, the interrupt sources,
//! the observed maxima beside them and the dominant term; as text (in the
//! spirit of seed 002 Figure 24), JSON, and an SVG chart per CPU.

use std::fmt::Write as _;

use serde::Serialize;

use crate::bound::{fixed_point, omiat, owcet, Bound, Characterisation, Limits};
use crate::trace::{MeasuredOverheads, Observed, Source, SourceKind, ThreadVars, Trace};

/// Where L_IF came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LifOrigin {
    /// max(D_ST, D_POID) + D_PAIE + D_PSD from preemptirq events.
    Traced,
    /// Given with `--ifl`.
    User,
    /// Not traced and not given: taken as 0, so the "bounds" are the
    /// interrupt interference only and are NOT latency bounds.
    Unknown,
}

/// One interrupt source, summarised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceSummary {
    pub kind: SourceKind,
    pub name: String,
    pub count: usize,
    pub owcet: u64,
    pub omiat: Option<u64>,
    /// The task the worst occurrence interrupted.
    pub worst_task: String,
}

/// The analysis of one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuReport {
    pub cpu: u32,
    pub l_if: u64,
    pub l_if_origin: LifOrigin,
    pub thread_vars: Option<ThreadVars>,
    pub bounds: Vec<(Characterisation, Bound)>,
    pub sources: Vec<SourceSummary>,
    pub threaded_softirqs: Vec<SourceSummary>,
    pub osnoise: Vec<SourceSummary>,
    pub observed: Observed,
    /// Observed interval on this CPU (ns).
    pub observed_interval: u64,
    /// One sentence naming the dominant term and where it came from.
    pub dominant: String,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LatencyReport {
    pub format: crate::parse::Format,
    pub events: u64,
    pub lost_events: u64,
    pub cpus: Vec<CpuReport>,
    pub overheads: MeasuredOverheads,
    /// cyclictest's maximum (ns), when its output was given.
    pub cyclictest_max: Option<u64>,
    pub notes: Vec<String>,
}

/// Report options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// User-given interference-free latency (ns), used where the trace has
    /// no preemptirq events (and overriding them where it has).
    pub ifl: Option<u64>,
    pub cyclictest_max: Option<u64>,
}

fn summarise(s: &Source, trace: &Trace) -> SourceSummary {
    let worst = s.occurrences.iter().max_by_key(|o| o.duration);
    SourceSummary {
        kind: s.kind,
        name: s.name.clone(),
        count: s.occurrences.len(),
        owcet: owcet(&s.occurrences),
        omiat: omiat(&s.occurrences),
        worst_task: worst.map_or(String::new(), |o| trace.task_name(o.task).to_string()),
    }
}

/// L_IF = max(D_ST, D_POID) + D_PAIE + D_PSD (seed 002 Lemma 7).
pub fn l_if(v: &ThreadVars) -> u64 {
    let g = |w: &Option<crate::trace::Worst>| w.as_ref().map_or(0, |w| w.value);
    g(&v.st)
        .max(g(&v.poid))
        .saturating_add(g(&v.paie))
        .saturating_add(g(&v.psd))
}

/// Analyses every CPU of a trace.
pub fn analyse(trace: &Trace, opts: Options) -> LatencyReport {
    let mut notes = Vec::new();
    if !trace.has_preemptirq {
        notes.push(match opts.ifl {
            Some(v) => format!(
                "this trace has no preemptirq events, so the thread variables (D_POID, D_PAIE, D_PSD, D_ST) \
                 were not measured: L_IF = {} was given with --ifl",
                ns(v)
            ),
            None => "this trace has no preemptirq events, so the thread variables (D_POID, D_PAIE, D_PSD, D_ST) \
                     were not measured and L_IF is unknown: the figures below are interrupt interference \
                     only (L_IF = 0) and are NOT latency bounds; give L_IF with --ifl, or trace a kernel \
                     with CONFIG_PREEMPT_TRACER / CONFIG_IRQSOFF_TRACER"
                .to_string(),
        });
    }
    if trace.lost_events > 0 {
        notes.push(format!(
            "the kernel dropped {} events: occurrences may be missing, so the bounds may be too low",
            trace.lost_events
        ));
    }
    let cpus = trace
        .cpus
        .iter()
        .map(|c| {
            let (l_if_v, origin) = match (opts.ifl, &c.thread_vars) {
                (Some(v), _) => (v, LifOrigin::User),
                (None, Some(tv)) => (l_if(tv), LifOrigin::Traced),
                (None, None) => (0, LifOrigin::Unknown),
            };
            let interval = c.last_ts.saturating_sub(c.first_ts);
            let limits = Limits {
                observed: interval,
                ..Limits::default()
            };
            let bounds: Vec<_> = Characterisation::ALL
                .iter()
                .map(|&ch| (ch, fixed_point(ch, l_if_v, &c.sources, limits)))
                .collect();
            let dominant = dominant(
                c.cpu,
                l_if_v,
                origin,
                c.thread_vars.as_ref(),
                &bounds,
                &c.sources,
                trace,
            );
            CpuReport {
                cpu: c.cpu,
                l_if: l_if_v,
                l_if_origin: origin,
                thread_vars: c.thread_vars.clone(),
                bounds,
                sources: c.sources.iter().map(|s| summarise(s, trace)).collect(),
                threaded_softirqs: c
                    .threaded_softirqs
                    .iter()
                    .map(|s| summarise(s, trace))
                    .collect(),
                osnoise: c.osnoise.iter().map(|s| summarise(s, trace)).collect(),
                observed: c.observed,
                observed_interval: interval,
                dominant,
            }
        })
        .collect();
    LatencyReport {
        format: trace.format,
        events: trace.events,
        lost_events: trace.lost_events,
        cpus,
        overheads: trace.overheads,
        cyclictest_max: opts.cyclictest_max,
        notes,
    }
}

/// The dominant term of the sliding-window bound (the paper's preferred
/// characterisation), or of "single (worst) of each" where the window did
/// not converge.
fn dominant(
    cpu: u32,
    l_if: u64,
    origin: LifOrigin,
    tv: Option<&ThreadVars>,
    bounds: &[(Characterisation, Bound)],
    sources: &[Source],
    trace: &Trace,
) -> String {
    let pick = bounds
        .iter()
        .find(|(c, b)| *c == Characterisation::SlidingWindow && b.latency().is_some())
        .or_else(|| {
            bounds
                .iter()
                .find(|(c, _)| *c == Characterisation::SingleWorstOfEach)
        });
    let Some((
        ch,
        Bound::Converged {
            latency,
            interference,
            ..
        },
    )) = pick
    else {
        return format!("CPU {cpu}: no bound converged");
    };
    // The largest single term: the thread part of L_IF, or one source.
    let mut best: (u64, String) = (0, String::new());
    if origin == LifOrigin::Traced {
        if let Some(tv) = tv {
            for (name, w) in [
                ("D_POID", &tv.poid),
                ("D_ST", &tv.st),
                ("D_PSD", &tv.psd),
                ("D_PAIE", &tv.paie),
            ] {
                if let Some(w) = w {
                    if w.value > best.0 {
                        best = (
                            w.value,
                            format!(
                                "{name} = {} (task `{}`, opened by `{}` at {})",
                                ns(w.value),
                                w.task,
                                w.caller,
                                ts(w.at)
                            ),
                        );
                    }
                }
            }
        }
    } else if l_if > 0 {
        best = (l_if, format!("the user-given L_IF = {}", ns(l_if)));
    }
    for (s, &i) in sources.iter().zip(interference) {
        if i > best.0 {
            let worst = s.occurrences.iter().max_by_key(|o| o.duration);
            let kind = if s.kind == SourceKind::Nmi {
                "NMI"
            } else {
                "IRQ"
            };
            best = (
                i,
                format!(
                    "{kind} interference {} from {} (oWCET {}, worst occurrence at {} interrupting task `{}`)",
                    ns(i),
                    s.name,
                    ns(owcet(&s.occurrences)),
                    worst.map_or("?".into(), |o| ts(o.start)),
                    worst.map_or("?", |o| trace.task_name(o.task)),
                ),
            );
        }
    }
    if best.0 == 0 {
        return format!(
            "CPU {cpu}: {} gives {}; every term is zero",
            ch.label(),
            ns(*latency)
        );
    }
    format!(
        "CPU {cpu}: under {} (L = {}) the dominant term is {}.",
        ch.label(),
        ns(*latency),
        best.1
    )
}

/// Nanoseconds as text with the unit.
pub fn ns(v: u64) -> String {
    format!("{v} ns")
}

fn ts(v: u64) -> String {
    format!("{}.{:09} s", v / 1_000_000_000, v % 1_000_000_000)
}

/// The text report.
pub fn render_text(r: &LatencyReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "rtgpu latency report (seed 002, Theorem 8): {} events, {}",
        r.events, r.format
    );
    let _ = writeln!(o, "events dropped by the kernel: {}", r.lost_events);
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    for c in &r.cpus {
        let _ = writeln!(
            o,
            "\n=== CPU {} (observed {:.3} s) ===",
            c.cpu,
            c.observed_interval as f64 / 1e9
        );
        let _ = writeln!(o, "Interference Free Latency:");
        match (&c.thread_vars, c.l_if_origin) {
            (Some(tv), LifOrigin::Traced) => {
                let g = |w: &Option<crate::trace::Worst>| w.as_ref().map_or(0, |w| w.value);
                let _ = writeln!(o, "  latency = max(poid, dst) + paie + psd");
                let _ = writeln!(
                    o,
                    "  {} = max({}, {}) + {} + {}",
                    c.l_if,
                    g(&tv.poid),
                    g(&tv.st),
                    g(&tv.paie),
                    g(&tv.psd)
                );
                for (name, w) in [
                    ("poid", &tv.poid),
                    ("dst", &tv.st),
                    ("paie", &tv.paie),
                    ("psd", &tv.psd),
                ] {
                    match w {
                        Some(w) => {
                            let _ = writeln!(
                                o,
                                "    {name:5} {:>10} ns  task `{}` caller `{}` at {}",
                                w.value,
                                w.task,
                                w.caller,
                                ts(w.at)
                            );
                        }
                        None => {
                            let _ = writeln!(o, "    {name:5} not observed (0 used)");
                        }
                    }
                }
            }
            (_, LifOrigin::User) => {
                let _ = writeln!(o, "  L_IF = {} ns (given with --ifl)", c.l_if);
            }
            _ => {
                let _ = writeln!(o, "  L_IF unknown (no preemptirq events): taken as 0; the figures below are NOT bounds");
            }
        }
        let _ = writeln!(o, "Interrupts (nested interference removed):");
        let _ = writeln!(
            o,
            "  {:<34} {:>8} {:>12} {:>12}  worst interrupted",
            "source", "count", "oWCET ns", "oMIAT ns"
        );
        for s in &c.sources {
            let miat = s.omiat.map_or("-".to_string(), |m| m.to_string());
            let flag = if s.omiat.is_some_and(|m| s.owcet > m) {
                "  <- oWCET > oMIAT"
            } else {
                ""
            };
            let _ = writeln!(
                o,
                "  {:<34} {:>8} {:>12} {:>12}  {}{flag}",
                s.name, s.count, s.owcet, miat, s.worst_task
            );
        }
        if c.sources.is_empty() {
            let _ = writeln!(o, "  none traced");
        }
        if !c.threaded_softirqs.is_empty() {
            let list: Vec<String> = c
                .threaded_softirqs
                .iter()
                .map(|s| format!("{} x{} (max {} ns)", s.name, s.count, s.owcet))
                .collect();
            let _ = writeln!(
                o,
                "  softirqs in thread context (not interference): {}",
                list.join(", ")
            );
        }
        if !c.osnoise.is_empty() {
            let list: Vec<String> = c
                .osnoise
                .iter()
                .map(|s| format!("{} x{} (max {} ns)", s.name, s.count, s.owcet))
                .collect();
            let _ = writeln!(o, "  osnoise: {}", list.join(", "));
        }
        let _ = writeln!(o, "Bounds (L = L_IF + I_NMI(L) + I_IRQ(L)):");
        for (ch, b) in &c.bounds {
            match b {
                Bound::Converged {
                    latency,
                    iterations,
                    ..
                } => {
                    let how = if *iterations == 1 {
                        "(one step)".to_string()
                    } else {
                        format!("(converged in {iterations} iterations)")
                    };
                    let _ = writeln!(o, "  {:<34} {:>12} ns  {how}", ch.label(), latency);
                }
                Bound::DidNotConverge { last, reason, .. } => {
                    let _ = writeln!(
                        o,
                        "  {:<34} {:>12}     did not converge: {reason} (last L {last} ns)",
                        ch.label(),
                        "-"
                    );
                }
            }
        }
        let ob = &c.observed;
        let _ = writeln!(o, "Observed (not bounds):");
        if ob.timerlat_thread_samples > 0 {
            let _ = writeln!(
                o,
                "  timerlat thread max {:>10} ns over {} samples (irq context max {} ns)",
                ob.timerlat_thread_max, ob.timerlat_thread_samples, ob.timerlat_irq_max
            );
        }
        if ob.rtgpu_samples > 0 {
            let _ = writeln!(
                o,
                "  rtgpu wake-up max   {:>10} ns over {} samples",
                ob.rtgpu_max, ob.rtgpu_samples
            );
        }
        if ob.thread_noise_count > 0 {
            let _ = writeln!(
                o,
                "  osnoise thread_noise max {} ns ({} events)",
                ob.thread_noise_max, ob.thread_noise_count
            );
        }
        if ob.timerlat_thread_samples == 0 && ob.rtgpu_samples == 0 {
            let _ = writeln!(o, "  no wake-up measurements in this trace on this CPU");
        }
        let _ = writeln!(o, "{}", c.dominant);
    }
    if let Some(m) = r.cyclictest_max {
        let _ = writeln!(o, "\ncyclictest max (all threads): {m} ns");
    }
    let oh = &r.overheads;
    let _ = writeln!(o, "\nMeasured overheads (for `rtgpu analyze --overheads`):");
    for (k, v) in [
        ("th", oh.th),
        ("bh", oh.bh),
        ("tck", oh.tck),
        ("rel", oh.rel),
        ("ipi", oh.ipi),
        ("sch", oh.sch),
        ("cxs", oh.cxs),
    ] {
        let _ = writeln!(
            o,
            "  {k:4} {}",
            v.map_or("not measurable from this trace".into(), ns)
        );
    }
    o
}

/// An SVG chart: one panel per CPU, one bar per characterisation, the
/// observed maxima as dashed lines; one latency scale for every CPU (so
/// panels compare), with round ticks, grid lines and an axis title.
pub fn render_svg(r: &LatencyReport) -> String {
    use rtgpu_model::axis::{label, ticks};
    const W: f64 = 820.0;
    const LABEL: f64 = 230.0;
    const RIGHT: f64 = 70.0;
    const BAR: f64 = 18.0;
    const ROWS: f64 = 6.0;
    const PANEL: f64 = ROWS * (BAR + 6.0) + 110.0;
    let height = 20.0 + PANEL * r.cpus.len().max(1) as f64;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let observed_of = |c: &CpuReport| c.observed.timerlat_thread_max.max(c.observed.rtgpu_max);
    // One scale over every CPU, in microseconds.
    let max_ns = r
        .cpus
        .iter()
        .flat_map(|c| {
            c.bounds
                .iter()
                .filter_map(|(_, b)| b.latency())
                .chain([observed_of(c)])
        })
        .chain([r.cyclictest_max.unwrap_or(0)])
        .max()
        .unwrap_or(1)
        .max(1);
    let xt = ticks(max_ns as f64 / 1e3);
    let top_us = xt.last().copied().unwrap_or(1.0).max(f64::MIN_POSITIVE);
    let plot_w = W - LABEL - RIGHT;
    let px = |ns: u64| (ns as f64 / 1e3 / top_us) * plot_w;
    for (p, c) in r.cpus.iter().enumerate() {
        let y0 = 10.0 + PANEL * p as f64;
        let observed = observed_of(c);
        let suffix = if c.l_if_origin == LifOrigin::Unknown {
            " (L_IF unknown: interference only, not bounds)"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            r#"<text x="4" y="{}" font-weight="bold">CPU {}: scheduling latency bound per interrupt characterisation{suffix}</text>"#,
            y0 + 12.0,
            c.cpu
        );
        let (first, bottom) = (y0 + 22.0, y0 + 22.0 + ROWS * (BAR + 6.0));
        for &t in &xt {
            let x = LABEL + t / top_us * plot_w;
            let _ = writeln!(
                o,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{first}" y2="{bottom}" stroke="#e4e4e4"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                bottom + 14.0,
                label(t)
            );
        }
        let _ = writeln!(
            o,
            r#"<line x1="{LABEL}" x2="{LABEL}" y1="{first}" y2="{bottom}" stroke="black"/><line x1="{LABEL}" x2="{}" y1="{bottom}" y2="{bottom}" stroke="black"/><text x="{:.1}" y="{}" text-anchor="middle">latency (us)</text>"#,
            LABEL + plot_w,
            LABEL + plot_w / 2.0,
            bottom + 30.0
        );
        for (i, (ch, b)) in c.bounds.iter().enumerate() {
            let y = first + i as f64 * (BAR + 6.0);
            let _ = writeln!(o, r#"<text x="4" y="{}">{}</text>"#, y + 13.0, ch.label());
            match b.latency() {
                Some(l) => {
                    let _ = writeln!(
                        o,
                        r##"<rect x="{LABEL}" y="{y}" width="{:.1}" height="{BAR}" fill="#4878a8"/><text x="{:.1}" y="{}">{:.1}</text>"##,
                        px(l),
                        LABEL + px(l) + 4.0,
                        y + 13.0,
                        l as f64 / 1e3
                    );
                }
                None => {
                    let _ = writeln!(
                        o,
                        r##"<text x="{}" y="{}" fill="#b03030">did not converge</text>"##,
                        LABEL + 4.0,
                        y + 13.0
                    );
                }
            }
        }
        for (k, (v, color, name)) in [
            (observed, "#d08020", "observed"),
            (r.cyclictest_max.unwrap_or(0), "#30a030", "cyclictest"),
        ]
        .into_iter()
        .enumerate()
        {
            if v > 0 {
                let x = LABEL + px(v);
                // Labels end at the line when they would pass the right edge.
                let anchor = if x > W - RIGHT - 40.0 { "end" } else { "start" };
                let _ = writeln!(
                    o,
                    r#"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{bottom}" stroke="{color}" stroke-dasharray="4 3"/><text x="{x:.1}" y="{}" fill="{color}" text-anchor="{anchor}">{name} {:.1}</text>"#,
                    first - 4.0,
                    bottom + 44.0 + 12.0 * k as f64,
                    v as f64 / 1e3
                );
            }
        }
    }
    o.push_str("</svg>\n");
    o
}

/// Reads cyclictest's maximum (`Max:` in microseconds) from its output.
pub fn cyclictest_max(text: &str) -> Option<u64> {
    text.lines()
        .filter(|l| l.trim_start().starts_with("T:"))
        .filter_map(|l| {
            l.split("Max:")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .max()
        .map(|us| us * 1_000)
}
