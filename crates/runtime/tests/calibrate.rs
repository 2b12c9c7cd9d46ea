//! The self-measurement of this machine's overheads
//! (`rtgpu_runtime::calibrate`) on real threads, and its cache. Only
//! sanity ranges are asserted: the figures depend on the machine and its
//! load (a noisy 2-vCPU VM included).

use rtgpu_runtime::calibrate::cache::{self, Cached, Lookup};
use rtgpu_runtime::calibrate::{
    measure, CalibrationConfig, Machine, Measured, ProbePolicy, Samples, MEASURED_KEYS,
};

const TEN_MS: u64 = 10_000_000;

/// The measuring tests take turns: their probe threads would otherwise
/// share the CPUs and see each other as noise.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn the_calibration_returns_plausible_values_and_the_samples_asked_for() {
    let _turn = turn();
    let c = CalibrationConfig::default();
    let t = std::time::Instant::now();
    let m = measure(&c);
    let took = t.elapsed();
    let n = m.machine.cpus.len();
    assert!(n >= 1, "{m:?}");
    assert!(
        took < std::time::Duration::from_secs(10),
        "about 1.5 s expected, took {took:?}"
    );
    for k in ["rel", "sch", "cxs", "tck"] {
        let v = m.get(k).unwrap_or_else(|| panic!("{k} measured: {m:?}"));
        assert!(v > 0 && v < TEN_MS, "{k} = {v} ns: {m:?}");
    }
    // Δipi may be 0 (a cross-CPU hand-off no slower than a same-CPU one).
    if n >= 2 {
        assert!(m.ipi.is_some_and(|v| v < TEN_MS), "{m:?}");
    } else {
        assert_eq!(m.ipi, None);
    }
    // Δsch + Δcxs is one same-CPU hand-off, split evenly.
    let (sch, cxs) = (m.sch.unwrap_or(0), m.cxs.unwrap_or(0));
    assert!(sch == cxs || sch == cxs + 1, "{m:?}");
    assert_eq!(m.samples.wake, c.wake_samples * n, "{m:?}");
    assert!(m.samples.spin >= c.spin_total * n as u64, "{m:?}");
    if m.policy != ProbePolicy::Deadline {
        // Pinned threads: every CPU's same-CPU pair, and a pair across
        // the halves of the CPU list for every two CPUs.
        assert_eq!(m.samples.same_cpu, c.handoff_samples * n, "{m:?}");
        assert_eq!(m.samples.cross_cpu, c.handoff_samples * (n / 2), "{m:?}");
    }
    // The overheads a bound uses: Table III with the measured values.
    let o = m.overheads();
    let t3 = rtgpu_model::Overheads::default();
    assert_eq!(
        (o.rel, o.sch, o.tck),
        (m.rel.unwrap_or(0), sch, m.tck.unwrap_or(0))
    );
    assert_eq!(
        (o.th, o.bh, o.krel, o.paisch, o.pairel, o.quantum),
        (t3.th, t3.bh, t3.krel, t3.paisch, t3.pairel, t3.quantum)
    );
    // Root (this project's dev VM) measures at SCHED_FIFO 98.
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 && m.notes.is_empty() {
        assert!(m.policy.is_realtime(), "{m:?}");
    }
}

fn sample() -> Measured {
    Measured {
        rel: Some(41_234),
        sch: Some(1_101),
        cxs: Some(1_100),
        ipi: Some(0),
        tck: None,
        policy: ProbePolicy::Fifo { priority: 98 },
        machine: Machine {
            host: "box\nwith a newline".into(),
            kernel: "6.1.0-rt".into(),
            cpu_model: "Some CPU @ 3 GHz".into(),
            cpus: vec![0, 1, 2, 3, 8],
        },
        samples: Samples {
            wake: 10_000,
            same_cpu: 10_000,
            cross_cpu: 4_000,
            spin: 1_000_000_000,
            interruptions: 17,
        },
        measured_at: 1_800_000_000,
        summary: vec!["timer wake-up latency: max 41.234 us".into()],
        notes: vec!["a note".into()],
    }
}

#[test]
fn the_cache_round_trips_through_the_overheads_parser() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = sample();
    let path = cache::write(dir.path(), &m).expect("written");
    let key = m.machine.key(m.policy);
    assert_eq!(path, cache::path_for(dir.path(), &key));
    let text = std::fs::read_to_string(&path).expect("read");
    // The model's own parser reads it: measured keys in place, the others
    // Table III (`base = "table-iii"`).
    let o = rtgpu_model::parse_overheads(&text, "cache").expect("an [overheads] file");
    assert_eq!(o, m.overheads());
    assert_eq!(o.rel, 41_234);
    assert_eq!(o.tck, rtgpu_model::Overheads::default().tck, "not measured");
    // Read back whole, within a week.
    match cache::read(&path, &key, m.measured_at + 3_600) {
        Lookup::Fresh(back) => {
            let mut want = m.clone();
            want.machine.host = "box with a newline".into();
            assert_eq!(*back, want);
        }
        other => panic!("{other:?}"),
    }
    // Too old, another key, dated in the future, absent, not ours.
    for (key_used, now, why) in [
        (
            key.as_str(),
            m.measured_at + cache::MAX_AGE + 1,
            "older than 7 days",
        ),
        ("0123456789abcdef", m.measured_at, "not this machine's"),
        (key.as_str(), m.measured_at - 3 * 86_400, "in the future"),
    ] {
        match cache::read(&path, key_used, now) {
            Lookup::Stale(s) => assert!(s.contains(why), "{s}"),
            other => panic!("{other:?}"),
        }
    }
    assert!(matches!(
        cache::read(&dir.path().join("none.toml"), &key, 0),
        Lookup::Missing
    ));
    std::fs::write(&path, "[overheads]\nrel = \"1 us\"\n").expect("write");
    assert!(matches!(cache::read(&path, &key, 0), Lookup::Stale(_)));
    // No temporary file left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn the_key_changes_with_the_cpus_this_process_may_use() {
    let all = Machine::this();
    let p = ProbePolicy::Fifo { priority: 98 };
    assert_eq!(all.key(p), Machine::this().key(p), "stable");
    if all.cpus.len() < 2 {
        return;
    }
    // A thread restricted to one CPU (as under `taskset -c 0`) is another
    // set-up.
    let first = all.cpus[0];
    let one = std::thread::spawn(move || {
        rtgpu_runtime::os::set_affinity(0, &[first]).expect("affinity");
        Machine::this()
    })
    .join()
    .expect("thread");
    assert_eq!(one.cpus, vec![first]);
    assert_ne!(one.key(p), all.key(p));
}

#[test]
fn the_machine_measurement_is_cached_and_reused() {
    let _turn = turn();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = CalibrationConfig::quick();
    let mut measured = 0;
    let (m1, c1, stale) =
        cache::machine_overheads_in(Some(dir.path().to_path_buf()), false, &config, &mut || {
            measured += 1
        });
    assert_eq!(measured, 1);
    assert_eq!(stale, None);
    let Cached::Written(path) = c1 else {
        panic!("{c1:?}")
    };
    assert!(path.starts_with(dir.path()));
    for k in MEASURED_KEYS {
        if k != "ipi" {
            assert!(m1.get(k).is_some(), "{k}: {m1:?}");
        }
    }
    // The second time: read, not measured.
    let (m2, c2, _) =
        cache::machine_overheads_in(Some(dir.path().to_path_buf()), false, &config, &mut || {
            measured += 1
        });
    assert_eq!(measured, 1);
    assert_eq!(c2, Cached::Read(path.clone()));
    assert_eq!(m2.overheads(), m1.overheads());
    // `measure`: measured again, and the cache refreshed.
    let (_, c3, _) =
        cache::machine_overheads_in(Some(dir.path().to_path_buf()), true, &config, &mut || {
            measured += 1
        });
    assert_eq!(measured, 2);
    assert_eq!(c3, Cached::Written(path));
    // Nowhere writable: used, not cached, with the reason.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").expect("write");
    let (_, c4, _) =
        cache::machine_overheads_in(Some(file.join("rtgpu")), false, &config, &mut || {});
    assert!(
        matches!(c4, Cached::NotWritten(ref why) if why.contains("cannot write")),
        "{c4:?}"
    );
}

#[test]
fn the_cache_directory_follows_xdg() {
    use std::path::PathBuf;
    let d = |x: Option<&str>, h: Option<&str>| {
        cache::cache_dir_from(x.map(Into::into), h.map(Into::into))
    };
    assert_eq!(d(Some("/c"), Some("/h")), Some(PathBuf::from("/c/rtgpu")));
    assert_eq!(d(None, Some("/h")), Some(PathBuf::from("/h/.cache/rtgpu")));
    // A relative XDG_CACHE_HOME is ignored (XDG base directory rules).
    assert_eq!(
        d(Some("rel"), Some("/h")),
        Some(PathBuf::from("/h/.cache/rtgpu"))
    );
    assert_eq!(d(Some(""), None), None);
    assert_eq!(d(None, None), None);
}
