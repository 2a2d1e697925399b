#![no_main]
//! cargo-fuzz target `field_selector`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("field_selector").expect("a known target").run)(data);
});
