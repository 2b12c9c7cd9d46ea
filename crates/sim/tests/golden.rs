//! The simulator's results are pinned: a digest of the whole `SimResult`
//! (per-task metrics, per-job records, inversions, utilization series)
//! and of the trace, for several examples under several settings, must
//! match `golden.txt`. A speed-up of the engine must not change a result.
//!
//! The digests were written by the engine of commit 1b5e6ea, before the
//! event-queue and scheduling speed-ups (its `engine.rs` put back for the
//! run), and re-blessed since for changes of behaviour: GPUSync's token
//! queues no longer steal requests (as `rtgpu run`'s never did; the
//! GPUSync examples' eight digests), then seed 000's switch accounting (a
//! preempted thread pays no switch of its own, a bottom-half thread pays
//! its own 2(Δsch + Δcxs); every example with overheads and
//! preemptions), then GPUSync's earliest-completion rule joining only
//! token queues under the R²DGLP's length ⌈m/k⌉ (the eight digests of the
//! examples with affinity); `scripts/sim-compare.sh` checks the same for the CLI's outputs
//! (JSON, per-job CSV, traces) of every example between two builds. After
//! an intended change of behaviour, rewrite them with
//!
//! ```text
//! RTGPU_BLESS=1 cargo test -p rtgpu-sim --test golden
//! ```

use std::fmt::Write as _;
use std::path::PathBuf;

use rtgpu_model::load_workload;
use rtgpu_sim::{simulate, Releases, SimConfig};

mod digest;
use digest::run_digest;

const EXAMPLES: [&str; 12] = [
    "feature-tracking",
    "gpusync-host-work",
    "quickstart",
    "pdms-split",
    "global-fp",
    "soft-cedf",
    "hog-vgpu",
    "gpusync-copy-heavy",
    "klmirqd-table2",
    "klmirqd-table2-stress",
    "interrupts-cedf-pai",
    "interrupts-crm-threads",
];

fn settings() -> Vec<(&'static str, SimConfig)> {
    let base = SimConfig {
        duration: 10_000_000_000,
        ..SimConfig::default()
    };
    vec![
        ("default", base.clone()),
        (
            "sporadic",
            SimConfig {
                seed: 7,
                releases: Releases::Sporadic {
                    max_extra_ppm: 200_000,
                },
                bcet_ppm: 500_000,
                record_jobs: true,
                ..base.clone()
            },
        ),
        (
            "shift-drain",
            SimConfig {
                seed: 3,
                shift_tardy: true,
                drain: true,
                trace: true,
                record_jobs: true,
                ..base.clone()
            },
        ),
        (
            "no-overheads",
            SimConfig {
                overheads: false,
                peer_migration: false,
                bcet_ppm: 300_000,
                buckets: 7,
                ..base
            },
        ),
    ]
}

#[test]
fn results_match_the_golden_digests() {
    let root: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", ".."].iter().collect();
    let mut out = String::new();
    for ex in EXAMPLES {
        let path = root.join("examples").join(format!("{ex}.toml"));
        let w = load_workload(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (name, cfg) in settings() {
            let line = format!("{ex} {name} {}", run_digest(&simulate(&w, &cfg), true));
            writeln!(out, "{line}").expect("writing to a String");
        }
    }
    let golden = root.join("crates/sim/tests/golden.txt");
    if std::env::var_os("RTGPU_BLESS").is_some() {
        std::fs::write(&golden, &out).expect("golden.txt is writable");
        return;
    }
    let want = std::fs::read_to_string(&golden)
        .unwrap_or_else(|e| panic!("{}: {e} (RTGPU_BLESS=1 writes it)", golden.display()));
    let mut bad = Vec::new();
    for (got, exp) in out.lines().zip(want.lines()) {
        if got != exp {
            bad.push(format!("  want {exp}\n  got  {got}"));
        }
    }
    assert_eq!(
        out.lines().count(),
        want.lines().count(),
        "golden.txt has a different number of cases"
    );
    assert!(
        bad.is_empty(),
        "simulated results changed:\n{}",
        bad.join("\n")
    );
}
