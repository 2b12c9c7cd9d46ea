//! Cheap stand-ins for the fuzzer that run with `cargo test`: no prefix of
//! an example file, and no single-byte damage to one, makes the parser
//! panic; and inputs that the fuzzer found are kept here as regressions.

use std::path::PathBuf;

use rtgpu_model::parse_workload;

fn examples() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

#[test]
fn every_prefix_of_every_example() {
    for text in examples() {
        for (i, _) in text.char_indices() {
            let _ = parse_workload(&text[..i], "prefix.toml");
        }
    }
}

#[test]
fn every_line_deleted_or_doubled() {
    for text in examples() {
        let lines: Vec<&str> = text.lines().collect();
        for i in 0..lines.len() {
            let mut deleted = lines.clone();
            deleted.remove(i);
            let _ = parse_workload(&deleted.join("\n"), "deleted.toml");
            let mut doubled = lines.clone();
            doubled.insert(i, lines[i]);
            let _ = parse_workload(&doubled.join("\n"), "doubled.toml");
        }
    }
}

#[test]
fn hostile_values() {
    let cases = [
        "[platform]\ncores = 4294967295\n[[platform.cluster]]\nname=\"a\"\ncores=1\n",
        "[[platform.cluster]]\nname=\"a\"\ncores=4294967295\n[[platform.cluster]]\nname=\"b\"\ncores=4294967295\n[[task]]\nname=\"t\"\nwcet=\"1 ms\"\nperiod=\"2 ms\"\n",
        "[platform]\ncores = 99999999999999999999999999\n",
        "[platform]\ncores = -1\ngpus = -5\n",
        "[platform]\ncores = 1\ngpus = 1025\n",
        "[platform]\ncores = 1\ngpus = [1, true, \"x\"]\n",
        "[platform]\ncores = 1\n[[task]]\nname=\"t\"\ncount=10000\nwcet=\"1 ns\"\nperiod=\"1 ns\"\n[[task]]\nname=\"u\"\ncount=10000\nwcet=\"1 ns\"\nperiod=\"1 ns\"\n",
        "[platform]\ncores = 1\n[[task]]\nname=\"t\"\nwcet=\"18446744073709551615 ns\"\nperiod=\"18446744073709551615 ns\"\njitter=\"18446744073709551614 ns\"\n",
        "[platform]\ncores=1\ngpus=1\n[[vgpu]]\nname=\"a\"\nbudget=\"18446744073709551615 ns\"\nperiod=\"18446744073709551615 ns\"\n[[vgpu]]\nname=\"b\"\nshare=\"100%\"\n",
        "[platform]\ncores=1\n[[platform.pcie]]\nname=\"a\"\nparent=\"b\"\n[[platform.pcie]]\nname=\"b\"\nparent=\"c\"\n[[platform.pcie]]\nname=\"c\"\nparent=\"b\"\n",
        "[policy]\ngpu_speedup = nan\n[platform]\ncores=1\n",
        "[policy]\ngpu_speedup = inf\n[platform]\ncores=1\n",
        "[policy]\ngpu_speedup = 1e400\n[platform]\ncores=1\n",
        "[policy]\ninterrupts = { threads = 0, extra = 1 }\n",
        "name = \"\\u0000\"\n",
        "[platform]\ncores=1\n[[task]]\nname=\"t\"\nwcet=\"1 ms\"\nperiod=\"2 ms\"\ngpu = { kernels = [] }\n",
        "[platform]\ncores=1\n[[task]]\nname=\"t\"\nwcet=\"1 ms\"\nperiod=\"2 ms\"\ngpu = 5\n",
        "\u{feff}[platform]\ncores=1\n",
        "a = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        "a = {b = {c = {d = {e = {f = {g = {h = {i = {j = {k = {l = {m = 1}}}}}}}}}}}}",
    ];
    for text in cases {
        let _ = parse_workload(text, "hostile.toml");
    }
}

#[test]
fn many_tasks_are_capped() {
    let mut text = String::from("[platform]\ncores = 1\n");
    for i in 0..11 {
        text.push_str(&format!(
            "[[task]]\nname = \"t{i}\"\ncount = 10000\nwcet = \"1 ns\"\nperiod = \"1 ms\"\n"
        ));
    }
    let e = parse_workload(&text, "many.toml").unwrap_err();
    assert_eq!(e.diagnostics().len(), 1, "{e}");
    assert!(e.to_string().contains("too many tasks"), "{e}");
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    for depth in [1_000, 100_000] {
        let arrays = format!("a = {}{}", "[".repeat(depth), "]".repeat(depth));
        let _ = parse_workload(&arrays, "deep.toml");
        let tables = format!("a = {}1{}", "{b = ".repeat(depth), "}".repeat(depth));
        let _ = parse_workload(&tables, "deep.toml");
        let keys = format!("{} = 1", vec!["k"; depth].join("."));
        let _ = parse_workload(&keys, "deep.toml");
    }
}

/// An endless or huge input is refused after a bounded read (issue 22: the
/// whole of `/dev/zero` used to be read, 24 GB before the OOM killer).
#[test]
fn an_endless_input_is_refused_after_a_bounded_read() {
    for load in [
        |p: &std::path::Path| rtgpu_model::load_workload(p).map(|_| ()),
        |p: &std::path::Path| rtgpu_model::load_overheads(p).map(|_| ()),
    ] {
        let e = load(std::path::Path::new("/dev/zero")).expect_err("refused");
        assert!(e.to_string().contains("larger than 64 MiB"), "{e}");
    }
}

/// A platform of 2^32 − 1 cores is refused with the cap named, not a
/// 550 GB allocation (issue 22).
#[test]
fn absurd_core_counts_are_refused_with_the_cap() {
    let w = |cores: &str| {
        rtgpu_model::parse_workload(
            &format!(
                "[platform]\ncores = {cores}\n[[task]]\nname = \"t\"\nwcet = \"1 ms\"\n\
                 period = \"10 ms\"\n"
            ),
            "c.toml",
        )
    };
    let e = w("4294967295").expect_err("refused");
    assert!(
        e.to_string().contains("more than 1048576 cores in total"),
        "{e}"
    );
    assert!(w("1048576").is_ok());
}

/// An overhead near 2^64 ns is refused (issue 22: sums saturated and the
/// interrupt cost vanished from `rtgpu simulate`).
#[test]
fn overheads_beyond_ten_seconds_are_refused() {
    let e = rtgpu_model::parse_workload(
        "[platform]\ncores = 1\n[overheads]\nth = \"18446744073709551615 ns\"\n\
         [[task]]\nname = \"t\"\nwcet = \"1 ms\"\nperiod = \"10 ms\"\n",
        "o.toml",
    )
    .expect_err("refused");
    assert!(e.to_string().contains("overheads.th"), "{e}");
    assert!(e.to_string().contains("more than any overhead"), "{e}");
}
