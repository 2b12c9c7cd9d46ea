//! Boots Debian's PREEMPT_RT kernel under qemu (TCG) with
//! scripts/qemu-rt-trace.sh, traces it under load and checks that the
//! report reads the result. About 1-3 minutes with the kernel cached
//! (target/qemu-rt), more on the first run (package download), so it is
//! out of the default suite:
//!
//!     cargo test -p rtgpu-latency --test qemu_rt -- --ignored --nocapture
//!
//! It skips, saying why, where qemu or the kernel package cannot be had.

use std::path::PathBuf;
use std::process::Command;

use rtgpu_latency::report::{analyse, Options};
use rtgpu_latency::trace::parse_trace;

#[test]
#[ignore = "boots a VM (1-3 min): cargo test -p rtgpu-latency --test qemu_rt -- --ignored"]
fn preempt_rt_kernel_under_qemu() {
    let root: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", ".."].iter().collect();
    let dir = std::env::temp_dir().join(format!("rtgpu-qemu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("rt.trace");
    let status = Command::new("bash")
        .arg(root.join("scripts/qemu-rt-trace.sh"))
        .arg(&out)
        .arg("2")
        .status()
        .expect("bash runs");
    if status.code() == Some(77) {
        eprintln!("SKIP preempt_rt_kernel_under_qemu: qemu or the PREEMPT_RT kernel package is not available here (see the message above)");
        return;
    }
    assert!(status.success(), "qemu-rt-trace.sh failed: {status}");
    let text = std::fs::read_to_string(&out).expect("trace extracted");
    assert!(
        text.starts_with("# tracer: timerlat"),
        "the RT kernel has the timerlat tracer"
    );
    let t = parse_trace(&text).expect("the trace parses");
    assert_eq!(t.cpus.len(), 2, "-smp 2");
    assert_eq!(t.lost_events, 0);
    let stats = std::fs::read_to_string(dir.join("rt.trace.stats")).expect("stats");
    assert!(stats.contains("overrun: 0"), "{stats}");
    for c in &t.cpus {
        assert!(
            c.observed.timerlat_thread_samples > 100,
            "timerlat ran on CPU {}",
            c.cpu
        );
        assert!(c.sources.iter().any(|s| s.name == "vector local_timer"));
        assert!(!c.osnoise.is_empty(), "osnoise events on CPU {}", c.cpu);
    }
    let r = analyse(
        &t,
        Options {
            ifl: Some(20_000),
            cyclictest_max: None,
        },
    );
    for c in &r.cpus {
        println!("{}", c.dominant);
        assert!(c.bounds.iter().any(|(_, b)| b.latency().is_some()));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
