//! Each class of error names the right file:line:column and field, and says
//! what was expected.

use rtgpu_model::{parse_workload, Diagnostic, ModelError};

fn errors(text: &str) -> Vec<Diagnostic> {
    match parse_workload(text, "w.toml") {
        Ok(w) => panic!("expected an error, parsed {w:#?}"),
        Err(e) => e.diagnostics().to_vec(),
    }
}

/// Exactly one error; returns it.
fn one(text: &str) -> Diagnostic {
    let e = errors(text);
    assert_eq!(e.len(), 1, "{e:#?}");
    e.into_iter().next().unwrap()
}

fn at(d: &Diagnostic, line: usize, column: usize, field: &str, message_part: &str) {
    assert_eq!(
        (d.line, d.column, d.field.as_str()),
        (line, column, field),
        "{d}"
    );
    assert!(d.message.contains(message_part), "{d}");
    assert_eq!(d.file, "w.toml");
}

const PLATFORM: &str = "[platform]\ncores = 2\n";

fn with_task(task_body: &str) -> String {
    format!("{PLATFORM}\n[[task]]\n{task_body}")
}

#[test]
fn compiler_style_display() {
    let e = parse_workload(
        &with_task("name = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\ndeadline = \"10\"\n"),
        "w.toml",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "w.toml:8:12: error in `task[0].deadline`: missing unit: expected a duration like \"10 ms\", found \"10\" (write \"10 ms\")"
    );
}

#[test]
fn syntax_error() {
    let d = errors("[platform]\ncores = = 2\n").remove(0);
    assert_eq!((d.line, d.column), (2, 9));
    assert_eq!(d.field, "");
    assert!(d.message.starts_with("invalid TOML"), "{d}");
}

#[test]
fn unknown_key_with_suggestion() {
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\ndeadlin = \"5 ms\"\n",
    ));
    at(
        &d,
        8,
        1,
        "task[0].deadlin",
        "unknown key `deadlin`; did you mean `deadline`?",
    );
}

#[test]
fn unknown_key_without_suggestion_lists_keys() {
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\nzzz = 1\n",
    ));
    at(
        &d,
        8,
        1,
        "task[0].zzz",
        "expected one of: name, count, wcet",
    );
}

#[test]
fn unknown_top_level_table() {
    let d = one(&format!(
        "{PLATFORM}[polcy]\ncpu_scheduler = \"G-EDF\"\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n"
    ));
    at(&d, 3, 2, "polcy", "did you mean `policy`?");
}

#[test]
fn missing_required_keys() {
    let e = errors(&with_task("name = \"t\"\n"));
    assert_eq!(e.len(), 2, "{e:#?}");
    at(&e[0], 4, 1, "task[0].wcet", "missing required key `wcet`");
    at(
        &e[1],
        4,
        1,
        "task[0].period",
        "missing required key `period`",
    );

    let d = one("[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n");
    at(&d, 1, 1, "platform", "missing required key `platform`");

    let d = one("[platform]\ncores = 1\n");
    at(&d, 1, 1, "task", "no tasks");

    let d = one("task = []\n[platform]\ncores = 1\n");
    at(&d, 1, 8, "task", "no tasks");

    let d = one("[platform]\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n");
    at(&d, 1, 1, "platform.cores", "the platform has no cores");
}

#[test]
fn missing_units_and_bad_units() {
    let d = one(&with_task("name = \"t\"\nwcet = 2\nperiod = \"10 ms\"\n"));
    at(
        &d,
        6,
        8,
        "task[0].wcet",
        "missing unit: expected a duration like \"10 ms\", found 2 (write \"2 ms\")",
    );
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"2 MS\"\nperiod = \"10 ms\"\n",
    ));
    at(
        &d,
        6,
        8,
        "task[0].wcet",
        "unknown unit `MS` for a duration; did you mean `ms`?",
    );
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"1.5 ns\"\nperiod = \"10 ms\"\n",
    ));
    at(
        &d,
        6,
        8,
        "task[0].wcet",
        "\"1.5 ns\" is not a whole number of nanoseconds",
    );
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"1 ms\"\nperiod = \"99999999999 s\"\n",
    ));
    at(&d, 7, 10, "task[0].period", "too large");
}

#[test]
fn wrong_types() {
    let d = one(&with_task(
        "name = \"t\"\nwcet = true\nperiod = \"10 ms\"\n",
    ));
    at(
        &d,
        6,
        8,
        "task[0].wcet",
        "expected a duration like \"10 ms\", found boolean true",
    );
    let d = one(&with_task(
        "name = 5\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n",
    ));
    at(
        &d,
        5,
        8,
        "task[0].name",
        "expected a name (a string), found 5",
    );
    let d = one(
        "[platform]\ncores = \"4\"\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n",
    );
    at(
        &d,
        2,
        9,
        "platform.cores",
        "expected an integer, found \"4\" (remove the quotes)",
    );
    let d = one(&format!(
        "{PLATFORM}[policy]\nengine_locks = \"yes\"\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n"
    ));
    at(&d, 4, 16, "policy.engine_locks", "expected true or false");
    let d = one(&format!("{PLATFORM}[task]\nname = \"t\"\n"));
    at(&d, 3, 1, "task", "write [[task]] (double brackets)");
}

#[test]
fn wcet_above_deadline() {
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"9 ms\"\nperiod = \"10 ms\"\ndeadline = \"8 ms\"\n",
    ));
    at(
        &d,
        6,
        8,
        "task[0].wcet",
        "the wcet (9 ms) exceeds the deadline (8 ms)",
    );
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"11 ms\"\nperiod = \"10 ms\"\n",
    ));
    at(
        &d,
        6,
        8,
        "task[0].wcet",
        "exceeds the implicit deadline (the period, 10 ms)",
    );
}

#[test]
fn arbitrary_deadlines_are_allowed() {
    let w = parse_workload(
        &with_task("name = \"t\"\nwcet = \"12 ms\"\nperiod = \"10 ms\"\ndeadline = \"30 ms\"\n"),
        "w.toml",
    )
    .unwrap();
    assert_eq!(w.tasks[0].deadline, 30_000_000);
}

#[test]
fn zero_and_negative_periods() {
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"1 ms\"\nperiod = \"0 ms\"\n",
    ));
    at(&d, 7, 10, "task[0].period", "the period must be positive");
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"1 ms\"\nperiod = \"-10 ms\"\n",
    ));
    at(&d, 7, 10, "task[0].period", "must not be negative");
    let d = one(&with_task("name = \"t\"\nwcet = \"1 ms\"\nperiod = -10\n"));
    at(&d, 7, 10, "task[0].period", "missing unit");
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"0 ms\"\nperiod = \"10 ms\"\n",
    ));
    at(&d, 6, 8, "task[0].wcet", "the wcet must be positive");
}

#[test]
fn jitter_must_be_below_period() {
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\njitter = \"10 ms\"\n",
    ));
    at(
        &d,
        8,
        10,
        "task[0].jitter",
        "must be smaller than the period (10 ms)",
    );
}

#[test]
fn gpu_task_without_gpus() {
    let d = one(&with_task(
        "name = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\ngpu = { kernels = [\"1 ms\"] }\n",
    ));
    at(&d, 8, 7, "task[0].gpu", "the platform has no GPUs");

    let text = "[[platform.cluster]]\nname = \"a\"\ncores = 2\ngpus = 1\n\
                [[platform.cluster]]\nname = \"b\"\ncores = 2\n\
                [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\ncluster = \"b\"\n\
                [task.gpu]\nkernels = [\"1 ms\"]\n";
    let d = one(text);
    at(
        &d,
        13,
        1,
        "task[0].gpu",
        "bound to cluster \"b\", which has no GPUs",
    );
}

#[test]
fn duplicate_names() {
    let d = one(&format!(
        "{}\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n",
        with_task("name = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n")
    ));
    at(&d, 10, 8, "task[1].name", "duplicate task name \"t\"");

    let d = one("[[platform.cluster]]\nname = \"a\"\ncores = 1\n[[platform.cluster]]\nname = \"a\"\ncores = 1\n\
                 [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n");
    at(
        &d,
        5,
        8,
        "platform.cluster[1].name",
        "duplicate cluster name \"a\"",
    );

    // `count` names collide with an explicit name.
    let d = one(&format!(
        "{}\n[[task]]\nname = \"t-1\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n",
        with_task("name = \"t\"\ncount = 2\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n")
    ));
    at(&d, 11, 8, "task[1].name", "duplicate task name \"t-1\"");
}

#[test]
fn unknown_references_with_suggestions() {
    let text = "[[platform.cluster]]\nname = \"node0\"\ncores = 2\n\
                [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\ncluster = \"nod0\"\n";
    let d = one(text);
    at(
        &d,
        8,
        11,
        "task[0].cluster",
        "unknown cluster \"nod0\"; did you mean \"node0\"?",
    );

    let text = "[platform]\ncores = 2\ngpus = 2\n\
                [[vgpu]]\nname = \"v\"\ngpu = \"gpu7\"\nshare = \"50%\"\n\
                [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n\
                gpu = { kernels = [\"1 ms\"], vgpu = \"w\" }\n";
    let e = errors(text);
    assert_eq!(e.len(), 1, "{e:#?}"); // the bad vGPU is not reported twice
    at(&e[0], 6, 7, "vgpu[0].gpu", "unknown GPU \"gpu7\"");

    let text = "[platform]\ncores = 2\ngpus = 1\n\
                [[vgpu]]\nname = \"hog\"\nshare = \"50%\"\n\
                [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n\
                gpu = { kernels = [\"1 ms\"], vgpu = \"hgo\" }\n";
    let d = one(text);
    assert_eq!((d.line, d.field.as_str()), (11, "task[0].gpu.vgpu"));
    assert!(d.message.contains("did you mean \"hog\"?"), "{d}");

    let text = "[platform]\ncores = 2\n[[platform.gpu]]\nname = \"g\"\nattach = \"sw\"\n\
                [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n";
    let d = one(text);
    at(
        &d,
        5,
        10,
        "platform.gpu[0].attach",
        "the file defines no PCIe switch or hubs",
    );
}

#[test]
fn copy_engines_and_tokens() {
    let text = "[platform]\ncores = 2\n[[platform.gpu]]\nname = \"g\"\ncopy_engines = 3\n\
                [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n";
    at(
        &one(text),
        5,
        16,
        "platform.gpu[0].copy_engines",
        "must be between 1 and 2, found 3",
    );
    let text = format!(
        "{PLATFORM}[policy]\ntokens_per_gpu = 0\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n"
    );
    at(
        &one(&text),
        4,
        18,
        "policy.tokens_per_gpu",
        "must be at least 1, found 0",
    );
}

#[test]
fn vgpu_reservations() {
    let base = "[platform]\ncores = 2\ngpus = 1\n";
    let task = "[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n";
    let d = one(&format!(
        "{base}[[vgpu]]\nname = \"a\"\nshare = \"60%\"\n[[vgpu]]\nname = \"b\"\nshare = \"50%\"\n{task}"
    ));
    at(
        &d,
        9,
        9,
        "vgpu[1]",
        "the vGPUs of GPU \"gpu0\" reserve more than 100% of it",
    );
    let d = one(&format!(
        "{base}[[vgpu]]\nname = \"a\"\nshare = \"60%\"\n[[vgpu]]\nname = \"b\"\nbudget = \"5 ms\"\nperiod = \"10 ms\"\n{task}"
    ));
    at(&d, 9, 10, "vgpu[1]", "more than 100%");
    // Exactly 100% is fine.
    parse_workload(
        &format!("{base}[[vgpu]]\nname = \"a\"\nshare = \"60%\"\n[[vgpu]]\nname = \"b\"\nbudget = \"4 ms\"\nperiod = \"10 ms\"\n{task}"),
        "w.toml",
    )
    .unwrap();
    let d = one(&format!(
        "{base}[[vgpu]]\nname = \"a\"\nbudget = \"11 ms\"\nperiod = \"10 ms\"\n{task}"
    ));
    at(
        &d,
        6,
        10,
        "vgpu[0].budget",
        "the budget (11 ms) exceeds the period (10 ms)",
    );
    let d = one(&format!(
        "{base}[[vgpu]]\nname = \"a\"\nshare = \"120%\"\n{task}"
    ));
    at(&d, 6, 9, "vgpu[0].share", "at most 100%");
    let d = one(&format!("{base}[[vgpu]]\nname = \"a\"\n{task}"));
    at(&d, 4, 1, "vgpu[0].share", "missing required key `share`");
}

#[test]
fn pcie_cycles() {
    let text = "[platform]\ncores = 2\n\
                [[platform.pcie]]\nname = \"a\"\nparent = \"b\"\n\
                [[platform.pcie]]\nname = \"b\"\nparent = \"a\"\n\
                [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n";
    let d = one(text);
    at(
        &d,
        5,
        10,
        "platform.pcie[0].parent",
        "the PCIe topology has a cycle: \"a\" -> \"b\" -> \"a\"",
    );
    let text = "[platform]\ncores = 2\n[[platform.pcie]]\nname = \"a\"\nparent = \"a\"\n\
                [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n";
    at(
        &one(text),
        5,
        10,
        "platform.pcie[0].parent",
        "cycle: \"a\" -> \"a\"",
    );
}

#[test]
fn gpus_must_attach_when_topology_given() {
    let text = "[platform]\ncores = 2\n[[platform.pcie]]\nname = \"hub\"\n\
                [[platform.gpu]]\nname = \"g0\"\nattach = \"hub\"\n[[platform.gpu]]\nname = \"g1\"\n\
                [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n";
    at(
        &one(text),
        8,
        1,
        "platform.gpu[1].attach",
        "is not attached",
    );
}

#[test]
fn gpu_cluster_membership() {
    let task = "[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n";
    let text = format!(
        "[[platform.cluster]]\nname = \"a\"\ncores = 1\n[[platform.cluster]]\nname = \"b\"\ncores = 1\n\
         [[platform.gpu]]\nname = \"g\"\n{task}"
    );
    at(
        &one(&text),
        7,
        1,
        "platform.gpu[0].cluster",
        "belongs to no cluster",
    );
    let text = format!(
        "[[platform.cluster]]\nname = \"a\"\ncores = 1\ngpus = [\"g\"]\n[[platform.cluster]]\nname = \"b\"\ncores = 1\n\
         [[platform.gpu]]\nname = \"g\"\ncluster = \"b\"\n{task}"
    );
    at(
        &one(&text),
        10,
        11,
        "platform.gpu[0].cluster",
        "says cluster \"b\" but cluster \"a\" lists it",
    );
    let text =
        format!("[platform]\ncores = 2\n[[platform.cluster]]\nname = \"a\"\ncores = 1\n{task}");
    at(
        &one(&text),
        2,
        9,
        "platform.cores",
        "single-cluster shorthand",
    );
}

#[test]
fn policy_choices() {
    let task = "[[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n";
    let d = one(&format!(
        "{PLATFORM}[policy]\ncpu_scheduler = \"C-EFD\"\n{task}"
    ));
    at(
        &d,
        4,
        17,
        "policy.cpu_scheduler",
        "unknown CPU scheduler \"C-EFD\"; did you mean \"C-EDF\"?",
    );
    let d = one(&format!(
        "{PLATFORM}[policy]\ninterrupts = \"threads\"\n{task}"
    ));
    at(
        &d,
        4,
        14,
        "policy.interrupts",
        "interrupts = { threads = 50 }",
    );
    let d = one(&format!(
        "{PLATFORM}[policy]\ninterrupts = {{ threads = 100 }}\n{task}"
    ));
    at(&d, 4, 26, "policy.interrupts.threads", "between 1 and 99");
    let d = one(&format!(
        "{PLATFORM}[policy]\npartition_order = \"decreasing-size\"\n{task}"
    ));
    at(
        &d,
        4,
        19,
        "policy.partition_order",
        "pdms-hpts-ds always takes tasks in decreasing size",
    );
    let d = one(&format!("{PLATFORM}[policy]\ngpu_speedup = 0\n{task}"));
    at(&d, 4, 15, "policy.gpu_speedup", "positive number");
    let d = one(&format!("{PLATFORM}[policy]\nchunk_size = \"0 B\"\n{task}"));
    at(&d, 4, 14, "policy.chunk_size", "must be positive");
}

#[test]
fn many_errors_are_all_reported_in_file_order() {
    let text = "[platform]\ncores = 0\n\
                [[task]]\nname = \"a\"\nwcet = 1\nperiod = \"10 ms\"\n\
                [[task]]\nname = \"b\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\ncluster = \"x\"\ndeadlin = \"1 ms\"\n";
    let e = errors(text);
    let where_: Vec<(usize, &str)> = e.iter().map(|d| (d.line, d.field.as_str())).collect();
    assert_eq!(
        where_,
        vec![
            (2, "platform.cores"),
            (5, "task[0].wcet"),
            (11, "task[1].cluster"),
            (12, "task[1].deadlin"),
        ],
        "{e:#?}"
    );
    let shown = ModelError::Invalid(e).to_string();
    assert_eq!(shown.lines().count(), 4);
    assert!(shown.lines().all(|l| l.starts_with("w.toml:")));
}

#[test]
fn task_location_is_its_table() {
    let w = parse_workload(
        "[platform]\ncores = 1\n\n[[task]]\nname = \"a\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n\
         task2 = 0\n",
        "w.toml",
    );
    assert!(w.is_err());
    let w = parse_workload(
        "[platform]\ncores = 1\n\n  [[task]]\nname = \"a\"\nwcet = \"1 ms\"\nperiod = \"2 ms\"\n",
        "w.toml",
    )
    .unwrap();
    assert_eq!(
        (w.tasks[0].location.line, w.tasks[0].location.column),
        (4, 3)
    );
    let w = parse_workload(
        "task = [\n  { name = \"a\", wcet = \"1 ms\", period = \"2 ms\" },\n]\n[platform]\ncores = 1\n",
        "w.toml",
    )
    .unwrap();
    assert_eq!(
        (w.tasks[0].location.line, w.tasks[0].location.column),
        (2, 3)
    );
}

#[test]
fn io_errors_name_the_path() {
    let path = std::path::Path::new("/nonexistent/dir/w.toml");
    let e = rtgpu_model::load_workload(path).unwrap_err();
    assert!(matches!(e, ModelError::Io { .. }));
    assert!(
        e.to_string()
            .starts_with("/nonexistent/dir/w.toml: error: cannot read"),
        "{e}"
    );
}

#[test]
fn non_utf8_file() {
    let dir = std::env::temp_dir().join(format!("rtgpu-model-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, b"[platform]\ncores = \xff\n").unwrap();
    let e = rtgpu_model::load_workload(&path).unwrap_err();
    let d = e.first().unwrap();
    assert_eq!((d.line, d.column), (2, 9));
    assert!(d.message.contains("UTF-8"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reservations_are_for_unbound_tasks_outside_vgpus_with_constrained_deadlines() {
    let ok = parse_workload(
        &with_task("name = \"r\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\nreservation = true\n"),
        "w.toml",
    )
    .expect("valid");
    assert!(ok.tasks[0].reservation);
    let gpu = parse_workload(
        "[platform]\ncores = 2\ngpus = 1\n\n[[task]]\nname = \"r\"\nwcet = \"1 ms\"\n\
         period = \"10 ms\"\nreservation = true\ngpu = { kernels = [\"1 ms\"] }\n",
        "w.toml",
    )
    .expect("a GPU-using reservation is valid");
    assert!(gpu.tasks[0].reservation && gpu.tasks[0].uses_gpu());
    let vgpu = one(
        "[platform]\ncores = 2\ngpus = 1\n\n[[vgpu]]\nname = \"v\"\ngpu = \"gpu0\"\nshare = \"40%\"\n\n\
         [[task]]\nname = \"r\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\nreservation = true\n\
         gpu = { vgpu = \"v\", kernels = [\"1 ms\"] }\n",
    );
    at(&vgpu, 14, 15, "task[0].reservation", "CBS wake-up rule");
    let late = one(&with_task(
        "name = \"r\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\ndeadline = \"12 ms\"\nreservation = true\n",
    ));
    at(&late, 9, 15, "task[0].reservation", "deadline <= period");
    let bound = one(
        "[[platform.cluster]]\nname = \"a\"\ncores = 2\n\n[[task]]\nname = \"r\"\nwcet = \"1 ms\"\n\
         period = \"10 ms\"\ncluster = \"a\"\nreservation = true\n",
    );
    assert!(
        bound.message.contains("drop the task's `cluster`"),
        "{bound}"
    );
}

#[test]
fn cpu_inside_a_gpu_section_is_part_of_the_wcet() {
    let text = "[platform]\ncores = 2\ngpus = 1\n\
                [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n\
                gpu = { kernels = [\"1 ms\"], cpu = \"2 ms\" }\n";
    let d = one(text);
    assert_eq!((d.line, d.field.as_str()), (8, "task[0].gpu.cpu"));
    assert!(d.message.contains("cannot exceed it (1 ms)"), "{d}");

    let text = "[platform]\ncores = 2\ngpus = 1\n\
                [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\nreservation = true\n\
                gpu = { kernels = [\"1 ms\"], cpu = \"0.5 ms\" }\n";
    let d = one(text);
    assert_eq!(d.field.as_str(), "task[0].gpu.cpu");
    assert!(
        d.message.contains("not supported for a CPU reservation"),
        "{d}"
    );

    let text = "[platform]\ncores = 2\ngpus = 1\n\
                [[task]]\nname = \"t\"\nwcet = \"3 ms\"\nperiod = \"10 ms\"\n\
                gpu = { kernels = [\"1 ms\"], cpu = \"2 ms\" }\n";
    let w = parse_workload(text, "w.toml").expect("valid");
    let g = w.tasks[0].gpu.as_ref().expect("GPU part");
    assert_eq!(g.cpu, 2_000_000);
    // What the writer prints reads back the same.
    let again = parse_workload(&rtgpu_model::to_toml(&w), "again.toml").expect("valid");
    assert_eq!(again.tasks[0].gpu.as_ref().map(|g| g.cpu), Some(2_000_000));
}

/// Two clusters with a GPU each (a, b); `policy` and a task body follow.
fn two_gpu_clusters(policy: &str, task: &str) -> String {
    format!(
        "[[platform.cluster]]\nname = \"a\"\ncores = 2\n[[platform.cluster]]\nname = \"b\"\n\
         cores = 2\n[[platform.gpu]]\nname = \"ga\"\ncluster = \"a\"\n[[platform.gpu]]\n\
         name = \"gb\"\ncluster = \"b\"\n[policy]\n{policy}\n[[task]]\nname = \"t\"\n\
         wcet = \"1 ms\"\nperiod = \"10 ms\"\n{task}"
    )
}

#[test]
fn a_device_fixes_the_gpu_of_static_assignment_and_binds_its_cluster() {
    let stat = "gpu_allocator = \"static\"";
    let w = parse_workload(
        &two_gpu_clusters(stat, "gpu = { device = \"gb\", kernels = [\"1 ms\"] }\n"),
        "w.toml",
    )
    .expect("valid");
    assert_eq!(w.tasks[0].gpu.as_ref().and_then(|g| g.device), Some(1));
    assert_eq!(w.tasks[0].cluster, Some(1), "bound to gb's cluster");
    // The writer keeps it.
    let again = parse_workload(&rtgpu_model::to_toml(&w), "w.toml").expect("round trip");
    assert_eq!(again.tasks[0].gpu, w.tasks[0].gpu);
    assert_eq!(again.tasks[0].cluster, w.tasks[0].cluster);

    let unknown = one(&two_gpu_clusters(
        stat,
        "gpu = { device = \"gc\", kernels = [\"1 ms\"] }\n",
    ));
    at(&unknown, 19, 18, "task[0].gpu.device", "unknown GPU \"gc\"");
    let elsewhere = one(&two_gpu_clusters(
        stat,
        "cluster = \"a\"\ngpu = { device = \"gb\", kernels = [\"1 ms\"] }\n",
    ));
    at(
        &elsewhere,
        20,
        18,
        "task[0].gpu.device",
        "not in the task's cluster \"a\"",
    );
    let gpusync = one(&two_gpu_clusters(
        "gpu_allocator = \"gpusync\"",
        "gpu = { device = \"gb\", kernels = [\"1 ms\"] }\n",
    ));
    at(
        &gpusync,
        19,
        18,
        "task[0].gpu.device",
        "only the static allocators",
    );
    let default_policy = one(&two_gpu_clusters(
        "",
        "gpu = { device = \"gb\", kernels = [\"1 ms\"] }\n",
    ));
    assert!(
        default_policy.message.contains("\"gpusync-affinity\""),
        "{default_policy}"
    );
    let reservation = one(&two_gpu_clusters(
        stat,
        "reservation = true\ngpu = { device = \"ga\", kernels = [\"1 ms\"] }\n",
    ));
    assert!(
        reservation
            .message
            .contains("not supported with `reservation`"),
        "{reservation}"
    );
}

/// `Workload::static_gpus`: slots dealt in file order per pool among the
/// unpinned GPU users; a pinned task takes its `device` and no slot; a
/// CPU-only task and a task without a pool get none.
#[test]
fn static_gpus_deal_slots_per_pool_in_file_order() {
    let text = "[platform]\ncores = 4\ngpus = 3\n[policy]\ngpu_allocator = \"static\"\n\
                [[task]]\nname = \"a\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n\
                gpu = { kernels = [\"1 ms\"] }\n\
                [[task]]\nname = \"pinned\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n\
                gpu = { device = \"gpu2\", kernels = [\"1 ms\"] }\n\
                [[task]]\nname = \"cpu\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n\
                [[task]]\nname = \"b\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n\
                gpu = { kernels = [\"1 ms\"] }\n\
                [[task]]\nname = \"c\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n\
                gpu = { kernels = [\"1 ms\"] }\n";
    let w = parse_workload(text, "w.toml").expect("valid");
    let all = [0usize, 1, 2];
    // One pool: a, b, c get slots 0, 1, 2; the pinned task its device.
    let one_pool = w.static_gpus(|_| Some((0, &all[..])));
    assert_eq!(one_pool, vec![Some(0), Some(2), None, Some(1), Some(2)]);
    // Two pools (a and c in pool 0 of GPUs 0-1, b alone in pool 1 of GPU
    // 2): each pool deals from its own slot 0.
    let (p0, p1) = ([0usize, 1], [2usize]);
    let two = w.static_gpus(|i| match i {
        0 | 4 => Some((0, &p0[..])),
        3 => Some((1, &p1[..])),
        _ => None,
    });
    assert_eq!(two, vec![Some(0), None, None, Some(2), Some(1)]);
}
