#![no_main]
//! cargo-fuzz target `field_manager`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("field_manager").expect("a known target").run)(data);
});
