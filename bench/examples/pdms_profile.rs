//! Profiling driver: PDMS_HPTS_DS on the benchmark's task sets, for
//! `valgrind --tool=callgrind` (instruction counts are repeatable).
use rtgpu_analysis::generate::{uunifast_tasks, Rng};
use rtgpu_analysis::partition::{partition, Heuristic};

fn main() {
    let mut rng = Rng::new(7);
    let sets: Vec<_> = (0..300)
        .map(|_| uunifast_tasks(&mut rng, 40, 6.0, 1_000_000, 1_000_000_000))
        .collect();
    let ok = sets
        .iter()
        .filter(|s| partition(s, 8, Heuristic::PdmsHptsDs).is_ok())
        .count();
    println!("{ok}/{}", sets.len());
}
