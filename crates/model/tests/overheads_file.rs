//! `parse_overheads` / `load_overheads`: the `[overheads]`-only file that
//! `rtgpu latency report --export-overheads` writes and `rtgpu analyze
//! --overheads` reads.

use rtgpu_model::{load_overheads, parse_overheads, ModelError, Overheads};

#[test]
fn reads_measured_keys_and_keeps_table_iii_for_the_rest() {
    let o = parse_overheads(
        "# measured\n[overheads]\nbase = \"table-iii\"\nth = \"28000 ns\"\ntck = \"33 us\"\n",
        "m.toml",
    )
    .unwrap();
    let d = Overheads::default();
    assert_eq!(o.th, 28_000);
    assert_eq!(o.tck, 33_000);
    assert_eq!((o.sch, o.cxs, o.quantum), (d.sch, d.cxs, d.quantum));
    let z = parse_overheads("[overheads]\nbase = \"zero\"\nipi = \"1 us\"\n", "z.toml").unwrap();
    assert_eq!((z.ipi, z.th), (1_000, 0));
}

#[test]
fn errors_name_file_line_column_and_field() {
    let e = parse_overheads("[overheads]\nth = 12\n", "m.toml").unwrap_err();
    let s = e.to_string();
    assert!(
        s.starts_with("m.toml:2:6: error in `overheads.th`: missing unit"),
        "{s}"
    );
    let e = parse_overheads("[overheads]\ntk = \"1 us\"\n", "m.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("m.toml:2:1: error in `overheads.tk`: unknown key `tk`"),
        "{e}"
    );
    let e = parse_overheads("[platform]\ncores = 1\n", "m.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown key `platform`"), "{e}");
    assert!(e.contains("add an [overheads] table"), "{e}");
    let e = parse_overheads("[overheads\n", "m.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid TOML"), "{e}");
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    match load_overheads(std::path::Path::new("/nonexistent/o.toml")) {
        Err(ModelError::Io { path, .. }) => {
            assert_eq!(path, std::path::Path::new("/nonexistent/o.toml"))
        }
        other => panic!("{other:?}"),
    }
}
