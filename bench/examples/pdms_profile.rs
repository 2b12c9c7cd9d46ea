//! Profiling driver: PDMS_HPTS_DS on the benchmark's task sets, for
//! `valgrind --tool=callgrind` (instruction counts are repeatable).
//! `pdms_profile seed003` uses rtgpu-bench's seed 003 periods (T uniform in
//! 100 .. 5000 µs) instead of log-uniform 1 ms .. 1 s; a further
//! `reference` runs the partitioner as it was before issue 24, and
//! `decision` the decision alone (`is_partitionable`) instead of the full
//! plan.
use rtgpu_analysis::generate::{uunifast_tasks, Rng};
use rtgpu_analysis::partition::{is_partitionable, partition, with_reference_insertion, Heuristic};
use rtgpu_analysis::Task;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seed003 = args.iter().any(|a| a == "seed003");
    let reference = args.iter().any(|a| a == "reference");
    let decision = args.iter().any(|a| a == "decision");
    let mut rng = Rng::new(7);
    let sets: Vec<_> = (0..300)
        .map(|_| {
            let set = uunifast_tasks(&mut rng, 40, 6.0, 1_000_000, 1_000_000_000);
            if !seed003 {
                return set;
            }
            set.into_iter()
                .map(|t| {
                    let period = rng.range(100, 5000) * 1000;
                    let wcet = ((t.utilization() * period as f64).round() as u64).clamp(1, period);
                    Task::implicit(t.id, wcet, period)
                })
                .collect()
        })
        .collect();
    let run = || {
        sets.iter()
            .filter(|s| {
                if decision {
                    is_partitionable(s, 8, Heuristic::PdmsHptsDs)
                } else {
                    partition(s, 8, Heuristic::PdmsHptsDs).is_ok()
                }
            })
            .count()
    };
    let ok = if reference {
        with_reference_insertion(run)
    } else {
        run()
    };
    println!("{ok}/{}", sets.len());
}
