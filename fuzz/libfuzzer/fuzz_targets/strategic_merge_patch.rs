#![no_main]
//! cargo-fuzz target `strategic_merge_patch`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("strategic_merge_patch").expect("a known target").run)(data);
});
