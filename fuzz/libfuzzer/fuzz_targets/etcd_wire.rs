#![no_main]
//! cargo-fuzz target `etcd_wire`: the function of the same name in apiserver-fuzz.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (apiserver_fuzz::target("etcd_wire").expect("a known target").run)(data);
});
