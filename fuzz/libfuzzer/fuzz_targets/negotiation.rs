#![no_main]
//! cargo-fuzz target `negotiation`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("negotiation").expect("a known target").run)(data);
});
