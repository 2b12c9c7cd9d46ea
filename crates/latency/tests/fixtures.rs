//! The parsers and the bound on real traces recorded on real kernels (see
//! tests/fixtures/README.md for how each was made).

use rtgpu_latency::bound::{Bound, Characterisation};
use rtgpu_latency::parse::Format;
use rtgpu_latency::report::{analyse, render_svg, render_text, LifOrigin, Options};
use rtgpu_latency::trace::{parse_trace, SourceKind};

fn fixture(name: &str) -> String {
    let p = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn print_reports() {
    for f in [
        "rt-qemu-timerlat.trace.txt",
        "host-perf-script.txt",
        "host-trace-cmd-report.txt",
    ] {
        let t = parse_trace(&fixture(f)).unwrap();
        let r = analyse(&t, Options::default());
        println!("##### {f}\n{}", render_text(&r));
    }
}
