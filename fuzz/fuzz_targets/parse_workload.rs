//! `parse_workload` must never panic, whatever the text. When it accepts a
//! file, writing the workload back with `to_toml` must give text that parses
//! to the same workload (locations aside).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(mut w) = rtgpu_model::parse_workload(text, "fuzz.toml") {
        let written = rtgpu_model::to_toml(&w);
        let mut again = match rtgpu_model::parse_workload(&written, "fuzz.toml") {
            Ok(again) => again,
            Err(e) => panic!("to_toml wrote a file that does not parse:\n{e}\n---\n{written}"),
        };
        for t in w.tasks.iter_mut().chain(again.tasks.iter_mut()) {
            t.location = Default::default();
        }
        assert_eq!(w, again, "round trip changed the workload:\n{written}");
    }
});
