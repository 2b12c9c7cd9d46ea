//! The accepted spellings of the file format and what they become.

use rtgpu_model::*;

fn parse(text: &str) -> Workload {
    parse_workload(text, "f.toml").unwrap_or_else(|e| panic!("{e}"))
}

const TASK: &str = "[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n";

#[test]
fn shorthand_platform_with_gpus() {
    let w = parse(&format!("[platform]\ncores = 4\ngpus = 2\n{TASK}"));
    let p = &w.platform;
    assert_eq!(p.total_cores(), 4);
    assert_eq!(p.clusters[0].gpus, vec![0, 1]);
    assert_eq!(p.gpus[1].name, "gpu1");
    assert_eq!(p.gpus[1].copy_engines, 2);
    assert_eq!(p.migration_distance(0, 1), 1);
}

#[test]
fn clusters_inline_and_gpu_counts() {
    let w = parse(&format!(
        "[platform]\ncluster = [ {{ name = \"a\", cores = 6, gpus = 2 }}, {{ name = \"b\", cores = 4, gpus = 1 }} ]\n{TASK}"
    ));
    let p = &w.platform;
    assert_eq!(p.clusters[1].first_core, 6);
    assert_eq!(p.clusters[1].gpus, vec![2]);
    assert_eq!(p.gpus[2].name, "gpu2");
    assert_eq!(p.gpus[2].cluster, 1);
    assert_eq!(p.migration_distance(0, 2), 2);
}

#[test]
fn gpu_cluster_key() {
    let w = parse(&format!(
        "[[platform.cluster]]\nname = \"a\"\ncores = 1\n[[platform.cluster]]\nname = \"b\"\ncores = 1\n\
         [[platform.gpu]]\nname = \"g\"\ncluster = \"b\"\ncopy_engines = 1\n{TASK}"
    ));
    assert_eq!(w.platform.gpus[0].cluster, 1);
    assert_eq!(w.platform.clusters[1].gpus, vec![0]);
    assert!(w.platform.clusters[0].gpus.is_empty());
}

#[test]
fn policy_spellings() {
    let w = parse(&format!(
        "[platform]\ncores = 1\n[policy]\ncpu_scheduler = \"clustered-edf\"\npartitioning = \"Best_Fit\"\n\
         partition_order = \"decreasing-size\"\npriority = \"audsley\"\ngpu_allocator = \"K-FMLP\"\n\
         tokens_per_gpu = 1\nengine_locks = false\npeer_copies = \"nested\"\nchunk_size = \"4 MB\"\n\
         engine_handoff = \"Device\"\ninterrupts = {{ threads = 50 }}\ngpu_speedup = 4.5\n{TASK}"
    ));
    let p = w.policy;
    assert_eq!(p.cpu_scheduler, CpuScheduler::ClusteredEdf);
    assert_eq!(
        p.partitioning,
        Partitioning::Fit {
            rule: FitRule::Best,
            order: SortOrder::DecreasingSize
        }
    );
    assert_eq!(p.priority, PriorityAssignment::Audsley);
    assert_eq!(p.gpu_allocator, GpuAllocator::KFmlp);
    assert_eq!(p.tokens_per_gpu, 1);
    assert!(!p.engine_locks);
    assert_eq!(p.peer_locking, PeerLocking::Nested);
    assert_eq!(p.engine_handoff, EngineHandoff::Device);
    assert_eq!(p.chunk_size, Some(4_000_000));
    assert_eq!(
        p.interrupts,
        InterruptHandling::FixedPriorityThreads { priority: 50 }
    );
    assert_eq!(p.gpu_speedup, 4.5);

    let w = parse(&format!(
        "[platform]\ncores = 1\n[policy]\npartitioning = \"pdms-hpts\"\ninterrupts = \"PAI\"\n\
         gpu_allocator = \"gpusync\"\ngpu_speedup = 8\n{TASK}"
    ));
    assert_eq!(
        w.policy.partitioning,
        Partitioning::PdmsHpts {
            order: SortOrder::DecreasingUtilization
        }
    );
    assert_eq!(w.policy.interrupts, InterruptHandling::Pai);
    assert_eq!(
        w.policy.gpu_allocator,
        GpuAllocator::GpuSync { affinity: false }
    );
    assert_eq!(w.policy.gpu_speedup, 8.0);
}

#[test]
fn overheads_base_and_overrides() {
    let w = parse(&format!(
        "[platform]\ncores = 1\n[overheads]\nbase = \"zero\"\nth = \"20 us\"\n{TASK}"
    ));
    assert_eq!(w.overheads.th, 20_000);
    assert_eq!(w.overheads.bh, 0);
    assert_eq!(w.overheads.quantum, 1_000_000);
    let w = parse(&format!(
        "[platform]\ncores = 1\n[overheads]\nquantum = \"4 ms\"\nsch = \"1 µs\"\n{TASK}"
    ));
    assert_eq!(w.overheads.quantum, 4_000_000);
    assert_eq!(w.overheads.sch, 1_000);
    assert_eq!(w.overheads.cxs, 360);
}

#[test]
fn gpu_parts() {
    let w = parse(
        "[platform]\ncores = 2\ngpus = 1\n[[vgpu]]\nname = \"v\"\nbudget = \"2 ms\"\nperiod = \"10 ms\"\npolicy = \"fifo\"\n\
         [[task]]\nname = \"a\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n[task.gpu]\nkernels = \"3 ms\"\nvgpu = \"v\"\n\
         [[task]]\nname = \"b\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\ngpu = { copy_in = \"1 MiB\", kernels = [\"1 ms\", \"2 ms\"], interrupts = 7 }\n",
    );
    let a = w.tasks[0].gpu.as_ref().unwrap();
    assert_eq!(a.kernels, vec![3_000_000]);
    assert_eq!(a.interrupts, 1);
    assert_eq!(a.vgpu, Some(0));
    assert_eq!((a.copy_in, a.copy_out, a.state), (0, 0, 0));
    let b = w.tasks[1].gpu.as_ref().unwrap();
    assert_eq!(b.copy_in, 1 << 20);
    assert_eq!(b.interrupts, 7);
    assert_eq!(
        w.vgpus[0].reservation,
        VgpuReservation::Budget {
            budget: 2_000_000,
            period: 10_000_000
        }
    );
    assert_eq!(w.vgpus[0].policy, VgpuPolicy::Fifo);
    assert!(w.tasks[1].uses_gpu());
}

#[test]
fn count_names_tasks() {
    let w = parse(
        "[platform]\ncores = 2\n[[task]]\nname = \"s\"\ncount = 3\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n",
    );
    let names: Vec<&str> = w.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["s-0", "s-1", "s-2"]);
    assert!(w.tasks.iter().all(|t| t.location == w.tasks[0].location));
}

#[test]
fn vgpu_on_another_cluster_is_an_error() {
    let e = parse_workload(
        "[[platform.cluster]]\nname = \"a\"\ncores = 1\ngpus = 1\n[[platform.cluster]]\nname = \"b\"\ncores = 1\ngpus = 1\n\
         [[vgpu]]\nname = \"v\"\ngpu = \"gpu0\"\nshare = \"50%\"\n\
         [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\ncluster = \"b\"\ngpu = { kernels = [\"1 ms\"], vgpu = \"v\" }\n",
        "f.toml",
    )
    .unwrap_err();
    let d = e.first().unwrap();
    assert_eq!((d.line, d.field.as_str()), (18, "task[0].gpu.vgpu"));
    assert!(
        d.message
            .contains("vGPU \"v\" runs on GPU \"gpu0\", which is not in the task's cluster \"b\""),
        "{d}"
    );
}

#[test]
fn json_schema_describes_the_format() {
    let schema: serde_json::Value = serde_json::from_str(&json_schema()).unwrap();
    let task = &schema["properties"]["task"]["items"];
    assert_eq!(
        task["required"],
        serde_json::json!(["name", "wcet", "period"])
    );
    assert_eq!(task["additionalProperties"], false);
    assert_eq!(
        schema["properties"]["policy"]["properties"]["cpu_scheduler"]["enum"],
        serde_json::json!(["P-FP", "C-FP", "G-FP", "C-EDF", "G-EDF"])
    );
}

#[test]
fn name_defaults_to_a_valid_file_stem() {
    let text = format!("[platform]\ncores = 1\n{TASK}");
    assert_eq!(parse_workload(&text, "a/b/lab.toml").unwrap().name, "lab");
    assert_eq!(parse_workload(&text, "").unwrap().name, "workload");
    assert_eq!(
        parse_workload(&text, "x/\u{1}.toml").unwrap().name,
        "workload"
    );
    let named = format!("name = \"mine\"\n{text}");
    assert_eq!(parse_workload(&named, "lab.toml").unwrap().name, "mine");
}
