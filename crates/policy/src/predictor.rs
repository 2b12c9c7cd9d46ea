//! GPUSync's cost predictor (seed 004 §4.1).
//!
//! "The predictor records the distance between the newly allocated GPU and
//! the GPU that the task used previously ... This distance classifies the
//! type of migration that the job will experience. Each classification is
//! given a unique feedback controller." One [`Estimator`] per task and
//! migration distance; distances above [`MAX_DISTANCE`] share the last class.
//!
//! The feedback controller is a proportional one (the paper does not give
//! its gains): `e += (y - e) / 4` with the observation `y` clamped to
//! `[e/4, 4e]` once a class has [`WARMUP`] observations, so one outlier (a
//! job that was preempted for long, a page fault) moves the estimate by at
//! most 75% of it instead of replacing it. Before warm-up the estimate is the
//! running mean of what was seen; before any observation it is the prior
//! the host supplies (the simulator computes one from bytes, bandwidths and
//! kernel times).

use crate::Time;

/// Distance classes 0..=MAX_DISTANCE (seed 004 Fig. 1 has 0-3).
pub const MAX_DISTANCE: usize = 3;
/// Observations averaged before the clamped feedback rule takes over.
pub const WARMUP: u32 = 4;

/// One feedback controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimator {
    estimate: Time,
    observations: u32,
}

impl Estimator {
    pub fn new(prior: Time) -> Estimator {
        Estimator {
            estimate: prior,
            observations: 0,
        }
    }

    pub fn estimate(&self) -> Time {
        self.estimate
    }

    pub fn observations(&self) -> u32 {
        self.observations
    }

    pub fn observe(&mut self, y: Time) {
        let n = self.observations;
        self.estimate = if n == 0 {
            y
        } else if n < WARMUP {
            // Running mean of the first observations.
            ((self.estimate as u128 * n as u128 + y as u128) / (n as u128 + 1)) as Time
        } else {
            let e = self.estimate;
            let y = y.clamp(e / 4, e.saturating_mul(4));
            if y >= e {
                e + (y - e) / 4
            } else {
                e - (e - y) / 4
            }
        };
        self.observations = n.saturating_add(1);
    }
}

/// Per task, per migration distance estimators.
#[derive(Debug, Clone, Default)]
pub struct CostPredictor {
    classes: Vec<[Estimator; MAX_DISTANCE + 1]>,
}

impl CostPredictor {
    /// `priors[task][distance]`: the cost assumed before any observation.
    pub fn new(priors: &[[Time; MAX_DISTANCE + 1]]) -> CostPredictor {
        CostPredictor {
            classes: priors.iter().map(|p| p.map(Estimator::new)).collect(),
        }
    }

    fn class(distance: u32) -> usize {
        (distance as usize).min(MAX_DISTANCE)
    }

    /// Predicted cost of `task` when its migration distance is `distance`;
    /// 0 for an unknown task.
    pub fn estimate(&self, task: usize, distance: u32) -> Time {
        self.classes
            .get(task)
            .map_or(0, |c| c[Self::class(distance)].estimate())
    }

    /// Feed back an observed cost (CPU and GPU time of the GPU section,
    /// without preemption or engine-lock blocking, seed 004 §4.1).
    pub fn observe(&mut self, task: usize, distance: u32, cost: Time) {
        if let Some(c) = self.classes.get_mut(task) {
            c[Self::class(distance)].observe(cost);
        }
    }

    pub fn estimator(&self, task: usize, distance: u32) -> Option<&Estimator> {
        self.classes.get(task).map(|c| &c[Self::class(distance)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prior_until_observed_then_mean_then_feedback() {
        let mut e = Estimator::new(1000);
        assert_eq!(e.estimate(), 1000);
        e.observe(200);
        assert_eq!(e.estimate(), 200);
        e.observe(400);
        assert_eq!(e.estimate(), 300);
        e.observe(300);
        e.observe(300);
        assert_eq!(e.estimate(), 300);
        e.observe(500);
        assert_eq!(e.estimate(), 350); // 300 + 200/4
    }

    #[test]
    fn outlier_moves_estimate_boundedly() {
        let mut e = Estimator::new(0);
        for _ in 0..10 {
            e.observe(1_000);
        }
        e.observe(1_000_000_000);
        // Clamped to 4x, then a quarter of the gap: 1000 + 3000/4.
        assert_eq!(e.estimate(), 1_750);
        e.observe(0);
        assert!(e.estimate() >= 1_750 - 1_750 / 4 - 1);
    }

    #[test]
    fn converges_to_a_new_level() {
        let mut e = Estimator::new(0);
        for _ in 0..5 {
            e.observe(1_000);
        }
        for _ in 0..60 {
            e.observe(2_000);
        }
        assert!((1_990..=2_000).contains(&e.estimate()), "{}", e.estimate());
    }

    #[test]
    fn classes_are_separate_per_task_and_distance() {
        let mut p = CostPredictor::new(&[[10, 20, 30, 40], [1, 2, 3, 4]]);
        assert_eq!(p.estimate(0, 2), 30);
        assert_eq!(p.estimate(0, 9), 40); // beyond the last class
        p.observe(0, 1, 500);
        assert_eq!(p.estimate(0, 1), 500);
        assert_eq!(p.estimate(0, 0), 10);
        assert_eq!(p.estimate(1, 1), 2);
        assert_eq!(p.estimate(7, 1), 0);
        assert_eq!(p.estimator(0, 1).map(|e| e.observations()), Some(1));
    }
}
