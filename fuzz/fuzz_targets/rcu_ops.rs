//! libFuzzer entry point of `numa_rwlocks_fuzz::rcu_ops` (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| numa_rwlocks_fuzz::rcu_ops::run(data));
