//! Digests of simulation runs, shared by the tests that pin schedules
//! (golden.rs over the examples, gpu_soundness.rs over random workloads).

use rtgpu_sim::{SimError, SimResult};

/// FNV-1a, 64 bits.
pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// One run as a line: its job and miss counts (and its end with
/// `with_end`), digests of the whole result as JSON and of its trace; or
/// a digest of its error.
pub fn run_digest(run: &Result<SimResult, SimError>, with_end: bool) -> String {
    match run {
        Ok(r) => {
            let json = serde_json::to_string(r).expect("a SimResult encodes as JSON");
            let trace = format!("{:?}", r.trace);
            let end = if with_end {
                format!(" end={}", r.end)
            } else {
                String::new()
            };
            format!(
                "jobs={} misses={}{end} result={:016x} trace={:016x}",
                r.jobs,
                r.misses,
                fnv(json.as_bytes()),
                fnv(trace.as_bytes())
            )
        }
        Err(e) => format!("error={}", fnv(e.to_string().as_bytes())),
    }
}
