//! The perf script parser: see latency_common.rs for what is checked.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "latency_common.rs"]
mod latency_common;

fuzz_target!(|text: &str| {
    latency_common::check(text, rtgpu_latency::parse::Format::PerfScript);
});
