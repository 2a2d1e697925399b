#![no_main]
//! cargo-fuzz target `label_selector`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("label_selector").expect("a known target").run)(data);
});
