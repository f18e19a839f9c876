//! The cohort user story: a read-mostly table behind `parking_lot::RwLock`
//! moves to the writer-preference cohort lock C-RW-WP with a one-line type
//! alias; nothing else in the program changes.
//!
//! ```text
//! cargo run --release --example cohort_swap
//! RWLOCK_TOPOLOGY=each-cpu cargo run --release --example cohort_swap   # a node per CPU
//! ```

use std::collections::HashMap;
use std::sync::Arc;

// Was: type RwLock<T> = parking_lot::RwLock<T>;
type RwLock<T> = cohort::RwLock<T>; // lock_api::RwLock<cohort::CRwWp, T>

fn main() {
    let routes: Arc<RwLock<HashMap<u32, String>>> = Arc::new(RwLock::new(HashMap::new()));
    routes.write().insert(0, "origin".into());

    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let routes = Arc::clone(&routes);
            std::thread::spawn(move || {
                let mut hits = 0u64;
                for i in 0..200_000u32 {
                    if i % 1000 == 0 {
                        // One write in a thousand: a route appears.
                        routes
                            .write()
                            .insert(1 + t * 1_000_000 + i, format!("route {i}"));
                    } else if routes.read().contains_key(&0) {
                        hits += 1;
                    }
                }
                hits
            })
        })
        .collect();
    let hits: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let routes = routes.read();
    println!(
        "{hits} reads found the origin; {} routes; lock: {}",
        routes.len(),
        std::any::type_name::<cohort::CRwWp>()
    );
    assert_eq!(routes.len(), 1 + 4 * 200);
    assert_eq!(hits, 4 * (200_000 - 200));
}
