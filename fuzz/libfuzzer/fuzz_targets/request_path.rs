#![no_main]
//! cargo-fuzz target `request_path`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("request_path").expect("a known target").run)(data);
});
