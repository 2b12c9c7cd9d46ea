//! `rtgpu-bench`: throughput benchmarks of rtgpu's analyses, with peers
//! measured side by side in the same run (README "Benchmarks").
//!
//! ```text
//! cargo run --release -p rtgpu-bench -- [--seconds S] [--json]
//! ```
//!
//! Every measurement runs the same pre-generated task sets through each
//! implementation, repeats for about `--seconds` per case, and reports task
//! sets per second (best of five rounds, since this machine is noisy) and the
//! ratio to the peer.

use std::hint::black_box;
use std::time::{Duration as StdDuration, Instant};

use response_time_analysis::{
    arrival::Sporadic, demand::RBF, fixed_priority, time::Duration, wcet,
};
use rtgpu_analysis::generate::{uunifast_tasks, Rng};
use rtgpu_analysis::partition::{is_partitionable, partition, with_reference_insertion, Heuristic};
use rtgpu_analysis::{fp, Task};

struct Case {
    name: &'static str,
    rate: f64,
}

/// Runs `f` over `sets` repeatedly for about `seconds`, in five rounds;
/// returns the best rate in task sets per second.
fn measure<F: FnMut(&[Task]) -> bool>(sets: &[Vec<Task>], seconds: f64, mut f: F) -> f64 {
    let round = StdDuration::from_secs_f64(seconds / 5.0);
    let mut best: f64 = 0.0;
    for _ in 0..5 {
        let start = Instant::now();
        let mut done = 0u64;
        while start.elapsed() < round {
            for s in sets {
                black_box(f(black_box(s)));
            }
            done += sets.len() as u64;
        }
        best = best.max(done as f64 / start.elapsed().as_secs_f64());
    }
    best
}

/// Like [`measure`] for two implementations on the same sets, rounds
/// alternating between them so that both see the same machine load (this
/// machine is shared); returns both best rates.
fn measure_pair<F: FnMut(&[Task]) -> bool, G: FnMut(&[Task]) -> bool>(
    sets: &[Vec<Task>],
    seconds: f64,
    mut f: F,
    mut g: G,
) -> (f64, f64) {
    let round = StdDuration::from_secs_f64(seconds / 5.0);
    let (mut best_f, mut best_g): (f64, f64) = (0.0, 0.0);
    let run = |h: &mut dyn FnMut(&[Task]) -> bool| {
        let start = Instant::now();
        let mut done = 0u64;
        while start.elapsed() < round {
            for s in sets {
                black_box(h(black_box(s)));
            }
            done += sets.len() as u64;
        }
        done as f64 / start.elapsed().as_secs_f64()
    };
    for _ in 0..5 {
        best_f = best_f.max(run(&mut f));
        best_g = best_g.max(run(&mut g));
    }
    (best_f, best_g)
}

/// rtgpu: DM order then exact RTA.
fn rtgpu_rta(set: &[Task], scratch: &mut Vec<Task>) -> bool {
    scratch.clear();
    scratch.extend_from_slice(set);
    fp::dm_order(scratch);
    fp::is_schedulable(scratch)
}

/// The `response-time-analysis` crate (Prosa's aRTA instantiation) on the
/// same set: DM order, then its fully-preemptive FP RTA per task, compared
/// with the deadline.
fn reference_rta(set: &[Task], scratch: &mut Vec<Task>) -> bool {
    scratch.clear();
    scratch.extend_from_slice(set);
    fp::dm_order(scratch);
    let arrivals: Vec<Sporadic> = scratch
        .iter()
        .map(|t| Sporadic::new_zero_jitter(Duration::from(t.period)))
        .collect();
    let costs: Vec<wcet::Scalar> = scratch
        .iter()
        .map(|t| wcet::Scalar::new(t.wcet.into()))
        .collect();
    let rbfs: Vec<_> = arrivals
        .iter()
        .zip(&costs)
        .map(|(a, c)| RBF::new(a, c))
        .collect();
    (0..rbfs.len()).all(|i| {
        fixed_priority::fully_preemptive::dedicated_uniproc_rta(
            &rbfs[i],
            &rbfs[..i],
            Duration::from(scratch[i].deadline),
        )
        .is_ok_and(|r| u64::from(r) <= scratch[i].deadline)
    })
}

fn main() {
    let mut seconds = 5.0;
    let mut json = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| usage("--seconds needs a number"))
            }
            "--json" => json = true,
            "-h" | "--help" => usage(""),
            other => usage(&format!("unknown argument `{other}`")),
        }
    }

    // Uniprocessor RTA: n = 10, U = 0.85, periods log-uniform 1 ms .. 1 s.
    let mut rng = Rng::new(2026);
    let rta_sets: Vec<Vec<Task>> = (0..2_000)
        .map(|_| uunifast_tasks(&mut rng, 10, 0.85, 1_000_000, 1_000_000_000))
        .collect();
    let schedulable = rta_sets
        .iter()
        .filter(|s| rtgpu_rta(s, &mut Vec::new()))
        .count();
    let mut scratch = Vec::new();
    let ours = measure(&rta_sets, seconds, |s| rtgpu_rta(s, &mut scratch));
    let theirs = measure(&rta_sets, seconds, |s| reference_rta(s, &mut scratch));

    // PDMS_HPTS_DS: m = 8, n = 40, U = 6.0 (75% per core). Two period
    // distributions: log-uniform 1 ms .. 1 s (as for the RTA case), and
    // seed 003 §V.B's T uniform in [100, 5000] (here in microseconds).
    let pdms_wide: Vec<Vec<Task>> = (0..500)
        .map(|_| uunifast_tasks(&mut rng, 40, 6.0, 1_000_000, 1_000_000_000))
        .collect();
    let pdms_seed: Vec<Vec<Task>> = (0..500)
        .map(|_| {
            uunifast_tasks(&mut rng, 40, 6.0, 100_000, 5_000_000)
                .into_iter()
                .map(|t| {
                    // Uniform (not log-uniform) periods, utilization kept.
                    let period = rng.range(100, 5000) * 1000;
                    let wcet = ((t.utilization() * period as f64).round() as u64).clamp(1, period);
                    Task::implicit(t.id, wcet, period)
                })
                .collect()
        })
        .collect();
    let ds = Heuristic::PdmsHptsDs;
    let pdms_ok = pdms_wide
        .iter()
        .filter(|s| is_partitionable(s, 8, ds))
        .count();
    let pdms_seed_ok = pdms_seed
        .iter()
        .filter(|s| is_partitionable(s, 8, ds))
        .count();
    let pdms_full = measure(&pdms_wide, seconds, |s| partition(s, 8, ds).is_ok());
    let pdms_decide = measure(&pdms_wide, seconds, |s| is_partitionable(s, 8, ds));
    // Seed 003 periods, beside the partitioner before issue 24 on the same
    // sets (rounds alternating, [`measure_pair`]).
    let (pdms_seed_full, old_seed_full) = measure_pair(
        &pdms_seed,
        seconds,
        |s| partition(s, 8, ds).is_ok(),
        |s| with_reference_insertion(|| partition(s, 8, ds).is_ok()),
    );
    let (pdms_seed_decide, old_seed_decide) = measure_pair(
        &pdms_seed,
        seconds,
        |s| is_partitionable(s, 8, ds),
        |s| with_reference_insertion(|| is_partitionable(s, 8, ds)),
    );

    let cases = [
        Case {
            name: "rta n=10 U=0.85 DM: rtgpu",
            rate: ours,
        },
        Case {
            name: "rta n=10 U=0.85 DM: response-time-analysis 0.3",
            rate: theirs,
        },
        Case {
            name: "pdms_hpts_ds m=8 n=40 U=6 T 1ms..1s: full plan",
            rate: pdms_full,
        },
        Case {
            name: "pdms_hpts_ds m=8 n=40 U=6 T 1ms..1s: decision",
            rate: pdms_decide,
        },
        Case {
            name: "pdms_hpts_ds m=8 n=40 U=6 T seed 003: full plan",
            rate: pdms_seed_full,
        },
        Case {
            name: "pdms_hpts_ds m=8 n=40 U=6 T seed 003: decision",
            rate: pdms_seed_decide,
        },
        Case {
            name: "pdms_hpts_ds T seed 003: full plan, before issue 24",
            rate: old_seed_full,
        },
        Case {
            name: "pdms_hpts_ds T seed 003: decision, before issue 24",
            rate: old_seed_decide,
        },
    ];
    if json {
        let rows: Vec<String> = cases
            .iter()
            .map(|c| format!("{{\"case\":\"{}\",\"sets_per_sec\":{:.0}}}", c.name, c.rate))
            .collect();
        println!(
            "{{\"cases\":[{}],\"rta_ratio\":{:.2},\"rta_schedulable\":{},\"pdms_schedulable\":[{},{}]}}",
            rows.join(","),
            ours / theirs,
            schedulable,
            pdms_ok,
            pdms_seed_ok
        );
        return;
    }
    println!("rtgpu-bench: task sets analysed per second on one core (best of 5 rounds, {seconds} s per case)");
    for c in &cases {
        println!("  {:<52} {:>12.0} sets/s", c.name, c.rate);
    }
    println!(
        "  rta ratio rtgpu / response-time-analysis: {:.1}x   ({schedulable}/{} RTA sets schedulable)",
        ours / theirs,
        rta_sets.len()
    );
    println!(
        "  pdms_hpts_ds: {pdms_ok}/{} (1ms..1s) and {pdms_seed_ok}/{} (seed 003) sets partitioned",
        pdms_wide.len(),
        pdms_seed.len()
    );
    println!(
        "  pdms_hpts_ds seed 003 now / before issue 24: full plan {:.2}x, decision {:.2}x",
        pdms_seed_full / old_seed_full,
        pdms_seed_decide / old_seed_decide
    );
    println!("  goals on this machine class: RTA >= 700000/s, PDMS_HPTS_DS >= 80000/s (issue 24)");
}

fn usage(err: &str) -> ! {
    if !err.is_empty() {
        eprintln!("rtgpu-bench: {err}");
    }
    eprintln!("usage: rtgpu-bench [--seconds S] [--json]");
    std::process::exit(if err.is_empty() { 0 } else { 2 })
}
