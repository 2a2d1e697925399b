#![no_main]
//! cargo-fuzz target `fields_v1`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("fields_v1").expect("a known target").run)(data);
});
