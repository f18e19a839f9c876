//! libFuzzer entry point of `numa_rwlocks_fuzz::parsers` (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| numa_rwlocks_fuzz::parsers::run(data));
