//! Statistics: per-task counters of responses, misses, tardiness, blocking
//! and migrations, busy time of cores, engines and vGPUs in utilization
//! buckets, and the [`SimResult`] assembled from them at the end of a run
//! ([`Engine::finish`]).

use rtgpu_policy::Time;

use crate::{JobRecord, SimResult, TaskStats, UtilizationSeries};

use super::Engine;

/// A task's counters that each completion updates (its migrations and
/// unfinished jobs are counted in its [`super::Job`]'s colder lines).
#[repr(C)]
pub(super) struct Stats {
    pub(super) jobs: u64,
    pub(super) misses: u64,
    pub(super) max_response: Time,
    pub(super) max_tardiness: Time,
    pub(super) max_blocking: Time,
    pub(super) sum_pct: f64,
    pub(super) max_pct: f64,
    /// The sum of the responses, a u128 as two words: 8-byte aligned,
    /// so that the counters fit beside the job's line-0 fields.
    pub(super) sum_response: [u64; 2],
}

impl Stats {
    #[inline(always)]
    fn add_response(&mut self, r: Time) {
        let (lo, carry) = self.sum_response[0].overflowing_add(r);
        self.sum_response = [lo, self.sum_response[1] + carry as u64];
    }

    fn sum_response(&self) -> u128 {
        (self.sum_response[1] as u128) << 64 | self.sum_response[0] as u128
    }
}

/// Utilization buckets of `size` ns, remembering the last bucket looked up
/// (most busy intervals start in the bucket of the one before).
pub(super) struct Buckets {
    pub(super) size: Time,
    pub(super) lo: Time,
    pub(super) idx: usize,
}

impl Buckets {
    #[inline]
    fn of(&mut self, t: Time) -> usize {
        if t < self.lo || t - self.lo >= self.size {
            self.idx = (t / self.size) as usize;
            self.lo = self.idx as Time * self.size;
        }
        self.idx
    }
}

#[inline(always)]
pub(super) fn add_busy(series: &mut [Time], buckets: &mut Buckets, start: Time, end: Time) {
    let bucket = buckets.size;
    if bucket == 0 || series.is_empty() {
        return;
    }
    // Most intervals lie within the bucket looked up last: the loop's one
    // round without the lookup.
    if start >= buckets.lo && end <= buckets.lo.saturating_add(bucket) && start < end {
        if let Some(v) = series.get_mut(buckets.idx) {
            *v += end - start;
        }
        return;
    }
    let mut t = start;
    while t < end {
        let b = buckets.of(t);
        if b >= series.len() {
            break;
        }
        let edge = (b as Time + 1) * bucket;
        let e = end.min(edge);
        series[b] += e - t;
        t = e;
    }
}

impl Engine {
    /// Task `iu`'s current job completed now: its response, miss,
    /// tardiness and blocking in its task's counters, and its record when
    /// jobs are recorded.
    pub(super) fn count_completion(&mut self, iu: usize) {
        let now = self.now;
        let j = &mut self.jobs[iu];
        let response = now - j.arrival;
        let deadline = j.arrival + j.deadline;
        let miss = now > deadline;
        let tardiness = now.saturating_sub(deadline);
        // (A CPU-only job is never blocked; its `blocked` is not reset.)
        let (period, blocked) = (j.period, if j.has_gpu { j.blocked } else { 0 });
        let st = &mut j.stats;
        st.jobs += 1;
        st.misses += miss as u64;
        st.max_response = st.max_response.max(response);
        st.add_response(response);
        let pct = response as f64 * 100.0 / period as f64;
        st.sum_pct += pct;
        if pct > st.max_pct {
            st.max_pct = pct;
        }
        st.max_tardiness = st.max_tardiness.max(tardiness);
        st.max_blocking = st.max_blocking.max(blocked);
        let j = &self.jobs[iu];
        if self.cfg.record_jobs {
            self.records.push(JobRecord {
                task: iu as u32,
                job: j.seq - 1,
                release: j.arrival,
                ready: j.ready,
                start: j.start,
                finish: Some(now),
                response: Some(response),
                deadline_miss: miss,
                tardiness,
                blocking: j.blocked,
                gpu: j.gpu,
            });
        }
    }

    pub(super) fn finish(mut self, end: Time, events: u64) -> SimResult {
        // Unfinished jobs.
        for i in 0..self.jobs.len() {
            let t = &self.s.tasks[i];
            let mut unfinished: Vec<(Time, Time)> = Vec::new();
            if self.jobs[i].active {
                unfinished.push((self.jobs[i].arrival, self.jobs[i].ready));
            }
            let released = self.jobs[i].released as usize;
            let j = &self.jobs[i];
            unfinished.extend(j.pending.iter(&j.pending_more).take(released));
            for (arrival, ready) in unfinished {
                self.jobs[i].unfinished += 1;
                let st = &mut self.jobs[i].stats;
                let deadline = arrival + t.deadline;
                let late = deadline < end;
                st.misses += late as u64;
                if late {
                    st.max_tardiness = st.max_tardiness.max(end - deadline);
                }
                if self.cfg.record_jobs {
                    self.records.push(JobRecord {
                        task: i as u32,
                        job: 0,
                        release: arrival,
                        ready,
                        start: None,
                        finish: None,
                        response: None,
                        deadline_miss: late,
                        tardiness: end.saturating_sub(deadline),
                        blocking: 0,
                        gpu: None,
                    });
                }
            }
        }
        let tasks: Vec<TaskStats> = self
            .s
            .tasks
            .iter()
            .zip(self.jobs.iter())
            .map(|(t, j)| (t, &j.stats, j.unfinished, j.migrations))
            .map(|(t, st, unfinished, migrations)| TaskStats {
                name: t.name.clone(),
                period: t.period,
                deadline: t.deadline,
                uses_gpu: t.gpu.is_some(),
                jobs: st.jobs,
                unfinished,
                misses: st.misses,
                max_response: st.max_response,
                mean_response: if st.jobs > 0 {
                    st.sum_response() as f64 / st.jobs as f64
                } else {
                    0.0
                },
                mean_response_pct: if st.jobs > 0 {
                    st.sum_pct / st.jobs as f64
                } else {
                    0.0
                },
                max_response_pct: st.max_pct,
                max_tardiness: st.max_tardiness,
                max_blocking: st.max_blocking,
                migrations,
            })
            .collect();
        let bucket = self.bucket;
        let series = |name: String, v: &[Time], cap: Time| {
            let values: Vec<f64> = v
                .iter()
                .map(|&b| b as f64 / (bucket * cap.max(1)) as f64)
                .collect();
            let mean = if values.is_empty() {
                0.0
            } else {
                values.iter().sum::<f64>() / values.len() as f64
            };
            UtilizationSeries {
                name,
                bucket,
                values,
                mean,
            }
        };
        let mut engines = Vec::new();
        for (g, gpu) in self.s.gpus.iter().enumerate() {
            engines.push(series(
                format!("{} exec", gpu.name),
                &self.engine_busy[g * 3],
                1,
            ));
            if gpu.copy_engines >= 2 {
                engines.push(series(
                    format!("{} copy-in", gpu.name),
                    &self.engine_busy[g * 3 + 1],
                    1,
                ));
                engines.push(series(
                    format!("{} copy-out", gpu.name),
                    &self.engine_busy[g * 3 + 2],
                    1,
                ));
            } else {
                engines.push(series(
                    format!("{} copy", gpu.name),
                    &self.engine_busy[g * 3 + 1],
                    1,
                ));
            }
        }
        let vgpus = self
            .s
            .vgpus
            .iter()
            .enumerate()
            .map(|(v, (name, ..))| series(name.clone(), &self.vgpu_busy[v], 1))
            .collect();
        let cores = (0..self.s.cores)
            .map(|c| series(format!("core {c}"), &self.core_busy[c], 1))
            .collect();
        let mut track_names: Vec<String> = (0..self.s.cores).map(|c| format!("core {c}")).collect();
        for gpu in &self.s.gpus {
            track_names.push(format!("{} exec", gpu.name));
            track_names.push(format!("{} copy-in", gpu.name));
            track_names.push(format!("{} copy-out", gpu.name));
        }
        for gpu in &self.s.gpus {
            track_names.push(format!("{} tokens", gpu.name));
        }
        self.inversions.sort_unstable();
        self.records.sort_by_key(|r| (r.release, r.task));
        let jobs = tasks.iter().map(|t| t.jobs).sum();
        let misses = tasks.iter().map(|t| t.misses).sum();
        SimResult {
            workload: self.s.name.clone(),
            scheduler: rtgpu_analysis::workload::scheduler_name(self.s.scheduler).to_string(),
            duration: self.cfg.duration,
            end,
            seed: self.cfg.seed,
            jobs,
            misses,
            tasks,
            inversions: self.inversions,
            engines,
            vgpus,
            cores,
            records: self.records,
            trace: self.spans,
            track_names,
            notes: self.s.notes,
            events,
        }
    }
}
