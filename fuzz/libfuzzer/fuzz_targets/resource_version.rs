#![no_main]
//! cargo-fuzz target `resource_version`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("resource_version").expect("a known target").run)(data);
});
