#![no_main]
//! cargo-fuzz target `go_duration`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("go_duration").expect("a known target").run)(data);
});
