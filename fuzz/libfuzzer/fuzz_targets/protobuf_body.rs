#![no_main]
//! cargo-fuzz target `protobuf_body`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("protobuf_body").expect("a known target").run)(data);
});
