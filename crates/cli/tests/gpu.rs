//! `rtgpu gpu` end to end: the emulated backend's self-test on a workload
//! file's GPUs, and the CUDA backend's behaviour with or without a driver.

use std::process::{Command, Output};

fn rtgpu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtgpu"))
        .args(args)
        .output()
        .expect("the rtgpu binary runs")
}

fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn emulated_self_test_on_the_feature_tracking_platform() {
    let o = rtgpu(&[
        "gpu",
        "--backend",
        "emulated",
        "--workload",
        &example("feature-tracking.toml"),
        "--check",
        "--quick",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("real-time priorities:"), "{out}");
    // Eight GTX-470-like GPUs with one copy engine each (seed 004 §5).
    assert_eq!(out.matches("1 copy engine(s)").count(), 8, "{out}");
    assert!(out.contains("GPU 7: gpu7 (emulated)"), "{out}");
    assert!(out.contains("peer copy of 4 MiB"), "{out}");
}

#[test]
fn a_workload_without_gpus_is_refused_for_emulation() {
    let o = rtgpu(&[
        "gpu",
        "--backend",
        "emulated",
        "--workload",
        &example("quickstart.toml"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("declares no GPU to emulate"));
}

#[test]
fn the_cuda_backend_works_or_says_why_not() {
    let o = rtgpu(&["gpu", "--backend", "cuda"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    match o.status.code() {
        // A machine with an NVIDIA driver.
        Some(0) => assert!(out.contains("backend: cuda (driver"), "{out}"),
        // Without one: exit 2 and the loader's reason.
        Some(2) => assert!(
            err.contains("cannot load the NVIDIA driver library libcuda.so.1"),
            "{err}"
        ),
        other => panic!("unexpected exit {other:?}: {out}\n{err}"),
    }
    // `auto` never fails for want of a driver: it falls back and says so.
    let o = rtgpu(&["gpu"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("backend: cuda (driver")
            || out.contains("backend: emulated, because the CUDA backend is unavailable"),
        "{out}"
    );
}
