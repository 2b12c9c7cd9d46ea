//! Equivalence check for speed work on the partitioners: a digest (FNV-1a)
//! of the full plans (every core's pieces with their split budgets and
//! response times, every placement, the unplaced task) and of the
//! decisions of PDMS_HPTS_DS on random sets, printed for one build and
//! compared by hand with another's (`pdms_digest [sets]`, default 6,000).
//! Sets: m = 2-8 cores, n = 2m-6m tasks, U = 55-100 % of m; periods
//! log-uniform 1 ms .. 1 s or uniform 100 .. 5000 µs (seed 003 §V.B); one
//! set in three with constrained deadlines C ≤ D < T. One set in eight is
//! also partitioned below a server, and one in four by PDMS_HPTS in
//! decreasing utilization and by first fit, for coverage of the shared
//! per-core code.
use rtgpu_analysis::generate::{uunifast_tasks, Rng};
use rtgpu_analysis::partition::{
    is_partitionable, partition, partition_with, FitRule, Heuristic, Order, PriorityRule,
};
use rtgpu_analysis::server::Server;
use rtgpu_analysis::Task;

struct Fnv(u64);

impl Fnv {
    fn add(&mut self, text: &str) {
        for b in text.bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }
}

fn main() {
    let sets: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(6000);
    let mut rng = Rng::new(20_261_128);
    let mut digest = Fnv(0xcbf2_9ce4_8422_2325);
    let (mut ok, mut split, mut constrained) = (0usize, 0usize, 0usize);
    for k in 0..sets {
        let m = rng.range(2, 8) as usize;
        let n = rng.range(2 * m as u64, 6 * m as u64) as usize;
        let u = m as f64 * rng.range(55, 100) as f64 / 100.0;
        let seed003 = k % 2 == 1;
        let dlt = k % 3 == 0;
        let mut set = uunifast_tasks(&mut rng, n, u, 1_000_000, 1_000_000_000);
        if seed003 {
            for t in set.iter_mut() {
                let period = rng.range(100, 5000) * 1000;
                let wcet = ((t.utilization() * period as f64).round() as u64).clamp(1, period);
                *t = Task::implicit(t.id, wcet, period);
            }
        }
        if dlt {
            constrained += 1;
            for t in set.iter_mut() {
                let slack = t.period - t.wcet;
                let deadline = t.wcet + slack * rng.range(30, 100) / 100;
                *t = Task::new(t.id, t.wcet, t.period, deadline.max(1));
            }
        }
        let plan = partition(&set, m, Heuristic::PdmsHptsDs);
        let decision = is_partitionable(&set, m, Heuristic::PdmsHptsDs);
        assert_eq!(decision, plan.is_ok(), "set {k}: decision and plan differ");
        ok += usize::from(plan.is_ok());
        split += plan.split_tasks();
        digest.add(&format!("{k} {decision} {plan:?}\n"));
        if k % 8 == 0 {
            let servers = [Server::new(
                rng.range(1, 50) * 1000,
                rng.range(500, 5000) * 1000,
            )];
            let plan = partition_with(&set, m, Heuristic::PdmsHptsDs, &servers);
            digest.add(&format!("{k} servers {plan:?}\n"));
        }
        if k % 4 == 0 {
            let hpts = Heuristic::PdmsHpts {
                order: Order::DecreasingUtilization,
            };
            let fit = Heuristic::Fit {
                rule: FitRule::FirstFit,
                order: Order::DecreasingSize,
                priority: PriorityRule::DeadlineMonotonic,
            };
            for h in [hpts, fit] {
                digest.add(&format!("{k} {h:?} {:?}\n", partition(&set, m, h)));
            }
        }
    }
    println!(
        "{sets} sets ({constrained} with D < T): {ok} partitioned, {split} split tasks, digest {:016x}",
        digest.0
    );
}
