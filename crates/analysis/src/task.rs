//! The analysis task model: plain sporadic tasks in integer nanoseconds.
//!
//! Analyses never mutate a task in place (DESIGN.md §4, unlike SchedCAT):
//! inflation and splitting produce new values.

use serde::{Deserialize, Serialize};

/// Integer nanoseconds (DESIGN.md §3.3).
pub type Time = u64;

/// A sporadic task (C, T, D) with release jitter J and a local blocking term B.
///
/// `id` is the caller's handle (index in its own task list); split pieces keep
/// the id of the task they came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Task {
    pub id: usize,
    /// Worst-case execution time C.
    pub wcet: Time,
    /// Period or minimum inter-arrival time T.
    pub period: Time,
    /// Relative deadline D.
    pub deadline: Time,
    /// Release jitter J.
    pub jitter: Time,
    /// Blocking B (longest lower-priority non-preemptive section / lock).
    pub blocking: Time,
}

impl Task {
    /// An implicit-deadline task (C, T, T) without jitter or blocking.
    pub const fn implicit(id: usize, wcet: Time, period: Time) -> Task {
        Task {
            id,
            wcet,
            period,
            deadline: period,
            jitter: 0,
            blocking: 0,
        }
    }

    /// A constrained-deadline task (C, T, D) without jitter or blocking.
    pub const fn new(id: usize, wcet: Time, period: Time, deadline: Time) -> Task {
        Task {
            id,
            wcet,
            period,
            deadline,
            jitter: 0,
            blocking: 0,
        }
    }

    /// Utilization C/T (reporting only; decisions use integer arithmetic).
    pub fn utilization(&self) -> f64 {
        self.wcet as f64 / self.period as f64
    }

    /// Size (density) C/D, seed 003 §III.A.
    pub fn size(&self) -> f64 {
        self.wcet as f64 / self.deadline as f64
    }
}

/// Compare C_a/T_a with C_b/T_b exactly (cross-multiplication in u128).
pub fn cmp_ratio(num_a: Time, den_a: Time, num_b: Time, den_b: Time) -> std::cmp::Ordering {
    (num_a as u128 * den_b as u128).cmp(&(num_b as u128 * den_a as u128))
}

/// The hyperperiod (least common multiple of the periods) of a task set; 1
/// for an empty set, `None` if it does not fit in 64-bit nanoseconds or a
/// period is 0.
pub fn hyperperiod(tasks: &[Task]) -> Option<Time> {
    fn gcd(a: Time, b: Time) -> Time {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    tasks.iter().try_fold(1, |h: Time, t| {
        if t.period == 0 {
            return None;
        }
        (h / gcd(h, t.period)).checked_mul(t.period)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyperperiod_is_the_lcm() {
        // lcm(4, 6, 10) = 60.
        let ts = [
            Task::implicit(0, 1, 4),
            Task::implicit(1, 1, 6),
            Task::implicit(2, 1, 10),
        ];
        assert_eq!(hyperperiod(&ts), Some(60));
        assert_eq!(hyperperiod(&[]), Some(1));
        assert_eq!(hyperperiod(&[Task::implicit(0, 1, 0)]), None);
        // Two large coprime periods overflow.
        let big = [
            Task::implicit(0, 1, u64::MAX - 1),
            Task::implicit(1, 1, u64::MAX - 2),
        ];
        assert_eq!(hyperperiod(&big), None);
    }
}
