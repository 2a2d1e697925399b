#![no_main]
//! cargo-fuzz target `query_options`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("query_options").expect("a known target").run)(data);
});
