#![no_main]
//! cargo-fuzz target `server_side_apply`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("server_side_apply").expect("a known target").run)(data);
});
