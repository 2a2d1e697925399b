#![no_main]
//! cargo-fuzz target `json_body`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("json_body").expect("a known target").run)(data);
});
