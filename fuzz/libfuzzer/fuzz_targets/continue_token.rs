#![no_main]
//! cargo-fuzz target `continue_token`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("continue_token").expect("a known target").run)(data);
});
