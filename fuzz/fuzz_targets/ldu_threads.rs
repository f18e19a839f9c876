//! libFuzzer entry point of `numa_rwlocks_fuzz::ldu_threads` (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| numa_rwlocks_fuzz::ldu_threads::run(data));
