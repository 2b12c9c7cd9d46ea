//! The GPUs' engines and buses: an operation starts on its engine (a
//! kernel on the execution engine or through its vGPU's scheduler, a copy
//! on a bus whose bandwidth the active copies share) and completes there;
//! without engine locks and with several token holders per GPU, the
//! driver arbitrates each engine in submission order.

use rtgpu_policy::Time;

use crate::trace::{Span, SpanKind};

use super::ops::{Op, OpKind};
use super::stats::add_busy;
use super::{Engine, Ev};

pub(super) struct Bus {
    pub(super) active: Vec<(u32, Time)>,
    pub(super) last: Time,
    pub(super) stamp: u32,
}

impl Engine {
    #[inline(always)]
    pub(super) fn start_op(&mut self, i: u32, op: Op) {
        let now = self.now;
        let iu = i as usize;
        self.jobs[iu].op_start = now;
        match op.kind {
            OpKind::GpuLock | OpKind::Cpu { .. } => {}
            OpKind::Copy { work, bus, .. } => {
                self.bus_advance(bus as usize);
                self.buses[bus as usize].active.push((i, work));
                self.bus_reschedule(bus as usize);
            }
            OpKind::Kernel { time, .. } => {
                let g = self.jobs[iu].section_gpu;
                let vg = self.s.tasks[iu].gpu.as_ref().and_then(|t| t.vgpu);
                match vg {
                    Some(v) => {
                        let local = self.vgpu_local[v];
                        let d = self.vgpu_sched[g]
                            .as_mut()
                            .and_then(|s| s.submit(local, i, now));
                        self.vgpu_dispatch(g, d);
                    }
                    None => {
                        self.kernel_owner[g] = Some(i);
                        self.push(now + time, Ev::KernelDone(g as u32));
                    }
                }
            }
        }
    }

    /// Whether job `i`'s operations go through the driver's engine queues
    /// (driver arbitration, and not a vGPU member: a vGPU's scheduler and
    /// copy locks arbitrate those).
    #[inline(always)]
    pub(super) fn driven(&self, i: u32) -> bool {
        !self.driver_busy.is_empty()
            && self.s.tasks[i as usize]
                .gpu
                .as_ref()
                .is_some_and(|t| t.vgpu.is_none())
    }

    /// The engine track an operation of job `i` runs on.
    pub(super) fn op_engine(&self, i: u32, op: Op) -> usize {
        match op.kind {
            OpKind::Copy { engine, .. } => engine as usize,
            _ => self.jobs[i as usize].section_gpu * 3,
        }
    }

    /// Driver arbitration (no engine locks, ρ > 1): job `i` submits its
    /// next operation; it starts at once on an idle engine, else waits
    /// behind the operations submitted before it, in submission order and
    /// without priorities or inheritance, like the emulated GPU's engine
    /// queues (`rtgpu run` takes no lock then). The job is blocked while
    /// it waits.
    #[cold]
    #[inline(never)]
    pub(super) fn driver_submit(&mut self, i: u32, op: Op) {
        let e = self.op_engine(i, op);
        if self.driver_busy[e] {
            self.driver_fifo[e].push_back(i);
            self.jobs[i as usize].blocked_since = Some(self.now);
            return;
        }
        self.driver_busy[e] = true;
        self.start_op(i, op);
    }

    /// Driver arbitration: job `i`'s operation completed on the device;
    /// its engine takes the next submitted operation at once (before the
    /// completion's interrupt is handled).
    #[cold]
    #[inline(never)]
    pub(super) fn driver_done(&mut self, i: u32) {
        let j = &self.jobs[i as usize];
        let e = self.op_engine(i, j.ops[j.pc]);
        match self.driver_fifo[e].pop_front() {
            Some(next) => {
                self.end_block(next as usize);
                let j = &self.jobs[next as usize];
                let op = j.ops[j.pc];
                self.start_op(next, op);
            }
            None => self.driver_busy[e] = false,
        }
    }

    pub(super) fn vgpu_dispatch(&mut self, g: usize, d: Option<rtgpu_policy::vgpu::Dispatch>) {
        let now = self.now;
        match d {
            Some(d) => {
                let i = d.job as usize;
                let j = &self.jobs[i];
                let time = match j.ops.get(j.pc).map(|o| o.kind) {
                    Some(OpKind::Kernel { time, .. }) => time,
                    _ => 0,
                };
                self.jobs[i].op_start = now;
                self.kernel_owner[g] = Some(d.job);
                self.push(now + time, Ev::KernelDone(g as u32));
            }
            None => {
                if let Some(t) = self.vgpu_sched[g]
                    .as_ref()
                    .and_then(|s| s.next_replenishment())
                {
                    self.push(t.max(now), Ev::VgpuTimer(g as u32));
                }
            }
        }
    }

    /// GPU `g`'s vGPU scheduler's replenishment timer.
    #[inline(always)]
    pub(super) fn on_vgpu_timer(&mut self, g: u32) {
        let now = self.now;
        let d = self.vgpu_sched[g as usize]
            .as_mut()
            .and_then(|s| s.timer(now));
        self.vgpu_dispatch(g as usize, d);
    }

    pub(super) fn on_kernel_done(&mut self, g: u32) {
        let gu = g as usize;
        let Some(i) = self.kernel_owner[gu].take() else {
            return;
        };
        let now = self.now;
        let start = self.jobs[i as usize].op_start;
        add_busy(&mut self.engine_busy[gu * 3], &mut self.buckets, start, now);
        if let Some(v) = self.s.tasks[i as usize].gpu.as_ref().and_then(|t| t.vgpu) {
            add_busy(&mut self.vgpu_busy[v], &mut self.buckets, start, now);
        }
        if self.cfg.trace {
            self.spans.push(Span {
                track: (self.s.cores + gu * 3) as u32,
                start,
                end: now,
                who: i,
                kind: SpanKind::Kernel,
            });
        }
        if self.vgpu_sched[gu].is_some() {
            let d = self.vgpu_sched[gu].as_mut().and_then(|s| s.complete(now));
            self.vgpu_dispatch(gu, d);
        }
        if self.driven(i) {
            self.driver_done(i);
        }
        self.device_done(i, gu);
    }

    /// Job `i`'s operation completed on GPU `g`: an interrupt, except in
    /// a batched section (`Workload::batched_section`) with more operations
    /// queued behind it, which the device starts at once: nothing signals
    /// the CPU until the last one.
    fn device_done(&mut self, i: u32, g: usize) {
        let iu = i as usize;
        let batched = self.s.tasks[iu].gpu.as_ref().is_some_and(|t| t.batched);
        if batched {
            let j = &self.jobs[iu];
            let more = j.ops[j.pc + 1..]
                .iter()
                .any(|o| matches!(o.kind, OpKind::Copy { .. } | OpKind::Kernel { .. }));
            if more {
                self.op_done(i);
                return;
            }
        }
        self.raise_interrupt(i, g);
    }

    pub(super) fn bus_advance(&mut self, b: usize) {
        let now = self.now;
        let bus = &mut self.buses[b];
        let n = bus.active.len() as Time;
        if let Some(per) = (now - bus.last).checked_div(n) {
            for a in &mut bus.active {
                a.1 -= a.1.min(per);
            }
        }
        bus.last = now;
    }

    pub(super) fn bus_reschedule(&mut self, b: usize) {
        let bus = &mut self.buses[b];
        bus.stamp = bus.stamp.wrapping_add(1);
        let n = bus.active.len() as Time;
        if let Some(min) = bus.active.iter().map(|a| a.1).min() {
            let t = bus.last + min * n;
            let stamp = bus.stamp;
            self.push(t, Ev::Bus(b as u32, stamp));
        }
    }

    pub(super) fn on_bus(&mut self, b: u32, stamp: u32) {
        let bu = b as usize;
        if self.buses[bu].stamp != stamp {
            return;
        }
        self.bus_advance(bu);
        let mut done = std::mem::take(&mut self.bus_done);
        done.clear();
        self.buses[bu].active.retain(|&(i, rem)| {
            if rem == 0 {
                done.push(i);
                false
            } else {
                true
            }
        });
        self.bus_reschedule(bu);
        let now = self.now;
        for &i in &done {
            let j = &self.jobs[i as usize];
            let start = j.op_start;
            if let Some(OpKind::Copy { engine, kind, .. }) = j.ops.get(j.pc).map(|o| o.kind) {
                add_busy(
                    &mut self.engine_busy[engine as usize],
                    &mut self.buckets,
                    start,
                    now,
                );
                if self.cfg.trace {
                    self.spans.push(Span {
                        track: self.s.cores as u32 + engine,
                        start,
                        end: now,
                        who: i,
                        kind,
                    });
                }
            }
            let g = self.jobs[i as usize].section_gpu;
            if self.driven(i) {
                self.driver_done(i);
            }
            self.device_done(i, g);
        }
        self.bus_done = done;
    }
}
