//! Every workload file under examples/ parses, and writing it back with
//! `to_toml` and parsing again gives the same workload.

use std::path::PathBuf;

use rtgpu_model::{load_workload, parse_workload, to_toml, Workload};

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn example_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples_dir())
        .expect("examples/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

fn without_locations(mut w: Workload) -> Workload {
    for t in &mut w.tasks {
        t.location = Default::default();
    }
    w
}

#[test]
fn every_example_round_trips() {
    let files = example_files();
    assert!(files.len() >= 2, "expected examples, found {files:?}");
    for path in files {
        let w = load_workload(&path).unwrap_or_else(|e| panic!("{e}"));
        let text = to_toml(&w);
        let again = parse_workload(&text, &path.display().to_string())
            .unwrap_or_else(|e| panic!("re-parsing {}:\n{e}\n---\n{text}", path.display()));
        assert_eq!(
            without_locations(w.clone()),
            without_locations(again.clone()),
            "{}",
            path.display()
        );
        // Writing is deterministic.
        assert_eq!(text, to_toml(&again));
    }
}

#[test]
fn pdms_split_example() {
    let w = load_workload(&examples_dir().join("pdms-split.toml")).unwrap();
    assert_eq!(w.platform.total_cores(), 2);
    assert!(w.platform.gpus.is_empty());
    let utilizations: Vec<f64> = w
        .tasks
        .iter()
        .map(|t| t.wcet as f64 / t.period as f64)
        .collect();
    assert_eq!(utilizations, vec![0.6, 0.6, 0.6]);
    assert!(w.tasks.iter().all(|t| t.deadline == t.period));
    assert_eq!(w.overheads, rtgpu_model::Overheads::zero());
}

#[test]
fn feature_tracking_example() {
    use rtgpu_model::*;
    let w = load_workload(&examples_dir().join("feature-tracking.toml")).unwrap();
    let p = &w.platform;
    assert_eq!(p.clusters.len(), 2);
    assert!(p.clusters.iter().all(|c| c.cores == 6 && c.gpus.len() == 4));
    assert_eq!(p.clusters[1].first_core, 6);
    assert_eq!(p.gpus.len(), 8);
    assert!(p.gpus.iter().all(|g| g.copy_engines == 1));
    // seed 004 Fig. 1 distances.
    assert_eq!(p.migration_distance(0, 1), 1);
    assert_eq!(p.migration_distance(0, 2), 2);
    assert_eq!(p.migration_distance(0, 4), 3);
    assert_eq!(p.gpus[5].cluster, 1);

    assert_eq!(w.tasks.len(), 20);
    let fps20 = w.tasks.iter().filter(|t| t.period == 50_000_000).count();
    let fps10 = w.tasks.iter().filter(|t| t.period == 100_000_000).count();
    assert_eq!((fps20, fps10), (8, 12));
    for node in 0..2 {
        assert_eq!(
            w.tasks.iter().filter(|t| t.cluster == Some(node)).count(),
            10
        );
    }
    assert_eq!(w.tasks[0].name, "track20-node0-0");
    assert!(w.tasks.iter().all(|t| t.deadline == t.period));
    let g = w.tasks[0].gpu.as_ref().unwrap();
    assert_eq!(g.copy_in + g.copy_out, 1 << 20);
    assert_eq!(g.state, 6_500_000);
    assert_eq!(w.policy.cpu_scheduler, CpuScheduler::ClusteredEdf);
    assert_eq!(
        w.policy.gpu_allocator,
        GpuAllocator::GpuSync { affinity: true }
    );
    assert_eq!(w.policy.chunk_size, Some(2 << 20));
    assert_eq!(w.overheads, Overheads::default());
}

#[test]
fn readme_example_parses() {
    let readme = include_str!("../README.md");
    let start = readme
        .find("### A complete example\n\n```toml\n")
        .expect("README has the example")
        + "### A complete example\n\n```toml\n".len();
    let len = readme[start..].find("```").unwrap();
    let w =
        parse_workload(&readme[start..start + len], "README.md").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.tasks.len(), 2);
    assert_eq!(w.platform.migration_distance(0, 1), 1);
    assert_eq!(w.overheads.th, 20_000);
    assert_eq!(w.overheads.bh, 29_900);
    let g = w.tasks[1].gpu.as_ref().unwrap();
    assert_eq!(g.interrupts, 4); // 2 kernels + copy in + copy out
    assert_eq!(g.vgpu, Some(0));
}

#[test]
fn defaults_match_seed000_table_iii() {
    let w = parse_workload(
        "[platform]\ncores = 1\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n",
        "defaults.toml",
    )
    .unwrap();
    let o = w.overheads;
    // seed 000 Table III, in microseconds.
    let table_iii_us = [
        (o.sch, "0.63"),
        (o.cxs, "0.36"),
        (o.ipi, "0.60"),
        (o.rel, "0.67"),
        (o.th, "16.44"),
        (o.bh, "29.90"),
        (o.krel, "1.39"),
        (o.paisch, "0.13"),
        (o.pairel, "0.56"),
        (o.tck, "0.86"),
    ];
    for (value, us) in table_iii_us {
        assert_eq!(
            value,
            rtgpu_model::units::parse_duration(&format!("{us} us")).unwrap()
        );
    }
    assert_eq!(o.quantum, 1_000_000);
    assert_eq!(w.name, "defaults");
    assert_eq!(w.policy, rtgpu_model::Policy::default());
    let p = &w.platform;
    assert_eq!(p.clusters.len(), 1);
    assert_eq!(p.clusters[0].name, "node0");
    assert_eq!(p.bandwidth, rtgpu_model::Bandwidth::default());
    assert_eq!(w.tasks[0].deadline, w.tasks[0].period);
    assert_eq!((w.tasks[0].jitter, w.tasks[0].blocking), (0, 0));
}
