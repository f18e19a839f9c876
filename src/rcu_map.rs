//! A read-mostly concurrent hash map with resize, the workload of FCP's
//! RCU evaluation (FCP Section 8.2.3, Figures 16-18: a hash table whose
//! readers take no lock, resized under them): a table of buckets, each an
//! immutable vector behind a pointer cell; updates copy one bucket (or the
//! whole table, to resize) and publish it with one pointer store; readers
//! see the old or the new bucket, never a torn one.
//!
//! The cell is a parameter ([`Family`]) so that one map runs over
//! `prwlock::rcu::RcuCell` ([`Rcu`]: one read section per lookup, no
//! reference count touched) and over `arc_swap::ArcSwap` ([`ArcSwapCells`]:
//! two guarded loads per lookup); `benches/rcu.rs` compares both with
//! `parking_lot::RwLock<HashMap>`. Updates are serialized by a mutex (a
//! read-mostly map; the FCP table does the same with its writer lock).
//!
//! ```
//! use numa_rwlocks::rcu_map::{Rcu, ReadMostlyMap};
//!
//! let map: ReadMostlyMap<u64, String, Rcu> = ReadMostlyMap::new();
//! for k in 0..100 {
//!     map.insert(k, format!("v{k}"));
//! }
//! assert_eq!(map.get(&42).as_deref(), Some("v42"));
//! assert!(map.buckets() >= 64, "grew from 8 buckets");
//! assert_eq!(map.remove(&42).as_deref(), Some("v42"));
//! assert_eq!(map.get(&42), None);
//! assert_eq!(map.len(), 99);
//! ```

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Mutex, PoisonError};

use prwlock::rcu::{RcuCell, RcuDomain};

/// A pointer cell the map can be built on.
pub trait Family: 'static {
    /// The cell holding a `T`.
    type Cell<T: Send + Sync + 'static>: Send + Sync;
    /// What an update replaced, to drop after the writer lock is released
    /// (retiring it may run a grace period).
    type Retired<T: Send + Sync + 'static>;
    /// A cell holding `value`.
    fn cell<T: Send + Sync + 'static>(value: Arc<T>) -> Self::Cell<T>;
    /// Replaces the cell's value.
    fn replace<T: Send + Sync + 'static>(cell: &Self::Cell<T>, value: Arc<T>) -> Self::Retired<T>;
    /// A strong reference to the current value (updaters only).
    fn load_full<T: Send + Sync + 'static>(cell: &Self::Cell<T>) -> Arc<T>;
    /// Runs `f` on the bucket `hash` picks in the current table: the read
    /// path, written the way each cell is meant to be read.
    fn with_bucket<K, V, R>(
        table: &Self::Cell<Table<K, V, Self>>,
        hash: u64,
        f: impl FnOnce(&[(K, V)]) -> R,
    ) -> R
    where
        K: Send + Sync + 'static,
        V: Send + Sync + 'static,
        Self: Sized;
}

/// One bucket: its entries, replaced as a whole by an update.
pub type Bucket<K, V> = Vec<(K, V)>;

/// One version of the bucket array.
pub struct Table<K, V, F: Family>
where
    K: Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    buckets: Box<[F::Cell<Bucket<K, V>>]>,
}

impl<K, V, F: Family> std::fmt::Debug for Table<K, V, F>
where
    K: Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("buckets", &self.buckets.len())
            .finish()
    }
}

impl<K, V, F: Family> Table<K, V, F>
where
    K: Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    fn bucket(&self, hash: u64) -> &F::Cell<Bucket<K, V>> {
        // The length is a power of two.
        &self.buckets[hash as usize & (self.buckets.len() - 1)]
    }
}

/// `prwlock::rcu::RcuCell` in the global domain: a lookup is one read
/// section around two plain loads.
#[derive(Debug)]
pub enum Rcu {}

impl Family for Rcu {
    type Cell<T: Send + Sync + 'static> = RcuCell<T>;
    type Retired<T: Send + Sync + 'static> = prwlock::rcu::Retired<T>;

    fn cell<T: Send + Sync + 'static>(value: Arc<T>) -> RcuCell<T> {
        RcuCell::new(value)
    }

    fn replace<T: Send + Sync + 'static>(
        cell: &RcuCell<T>,
        value: Arc<T>,
    ) -> prwlock::rcu::Retired<T> {
        cell.replace(value)
    }

    fn load_full<T: Send + Sync + 'static>(cell: &RcuCell<T>) -> Arc<T> {
        cell.load_full()
    }

    #[inline]
    fn with_bucket<K, V, R>(
        table: &RcuCell<Table<K, V, Self>>,
        hash: u64,
        f: impl FnOnce(&[(K, V)]) -> R,
    ) -> R
    where
        K: Send + Sync + 'static,
        V: Send + Sync + 'static,
    {
        let section = RcuDomain::global().read();
        f(table.get(&section).bucket(hash).get(&section))
    }
}

/// `arc_swap::ArcSwap`: a lookup is two guarded loads (arc-swap's debt
/// slots, an atomic swap each on its fast path).
#[derive(Debug)]
pub enum ArcSwapCells {}

impl Family for ArcSwapCells {
    type Cell<T: Send + Sync + 'static> = arc_swap::ArcSwap<T>;
    type Retired<T: Send + Sync + 'static> = Arc<T>;

    fn cell<T: Send + Sync + 'static>(value: Arc<T>) -> arc_swap::ArcSwap<T> {
        arc_swap::ArcSwap::new(value)
    }

    fn replace<T: Send + Sync + 'static>(cell: &arc_swap::ArcSwap<T>, value: Arc<T>) -> Arc<T> {
        cell.swap(value)
    }

    fn load_full<T: Send + Sync + 'static>(cell: &arc_swap::ArcSwap<T>) -> Arc<T> {
        cell.load_full()
    }

    #[inline]
    fn with_bucket<K, V, R>(
        table: &arc_swap::ArcSwap<Table<K, V, Self>>,
        hash: u64,
        f: impl FnOnce(&[(K, V)]) -> R,
    ) -> R
    where
        K: Send + Sync + 'static,
        V: Send + Sync + 'static,
    {
        let table = table.load();
        let bucket = table.bucket(hash).load();
        f(&bucket)
    }
}

/// What `insert_locked` did: the previous value, and what it replaced
/// (the bucket, and the table if it grew), to retire after unlocking.
type Inserted<K, V, F> = (
    Option<V>,
    <F as Family>::Retired<Bucket<K, V>>,
    Option<<F as Family>::Retired<Table<K, V, F>>>,
);

/// The map (see the module docs). Grows by doubling when it holds more
/// than two entries per bucket; never shrinks.
pub struct ReadMostlyMap<K, V, F: Family, S = RandomState>
where
    K: Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    table: F::Cell<Table<K, V, F>>,
    hasher: S,
    /// Serializes updates; holds the entry count.
    writer: Mutex<usize>,
}

const INITIAL_BUCKETS: usize = 8;

impl<K, V, F> ReadMostlyMap<K, V, F>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    F: Family,
{
    /// An empty map.
    pub fn new() -> Self {
        Self::with_hasher(RandomState::new())
    }
}

impl<K, V, F> Default for ReadMostlyMap<K, V, F>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    F: Family,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V, F, S> ReadMostlyMap<K, V, F, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    F: Family,
    S: BuildHasher,
{
    /// An empty map hashing with `hasher`.
    pub fn with_hasher(hasher: S) -> Self {
        ReadMostlyMap {
            table: F::cell(Arc::new(Self::empty_table(INITIAL_BUCKETS))),
            hasher,
            writer: Mutex::new(0),
        }
    }

    fn empty_table(buckets: usize) -> Table<K, V, F> {
        Table {
            buckets: (0..buckets)
                .map(|_| F::cell(Arc::new(Vec::new())))
                .collect(),
        }
    }

    /// The value of `key`, cloned.
    #[inline]
    pub fn get(&self, key: &K) -> Option<V> {
        self.with(key, V::clone)
    }

    /// Runs `f` on the value of `key` without cloning it.
    #[inline]
    pub fn with<R>(&self, key: &K, f: impl FnOnce(&V) -> R) -> Option<R> {
        let hash = self.hasher.hash_one(key);
        F::with_bucket(&self.table, hash, |bucket| {
            bucket.iter().find(|(k, _)| k == key).map(|(_, v)| f(v))
        })
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&self, key: K, value: V) -> Option<V> {
        let retired;
        let grown;
        let previous;
        {
            let mut len = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            (previous, retired, grown) = self.insert_locked(&mut len, key, value);
        }
        // Retired after the writer lock: retiring may run a grace period.
        drop((retired, grown));
        previous
    }

    fn insert_locked(&self, len: &mut usize, key: K, value: V) -> Inserted<K, V, F> {
        let table = F::load_full(&self.table);
        let cell = table.bucket(self.hasher.hash_one(&key));
        let old = F::load_full(cell);
        let mut bucket = Vec::with_capacity(old.len() + 1);
        let mut previous = None;
        for (k, v) in old.iter() {
            if *k == key {
                previous = Some(v.clone());
            } else {
                bucket.push((k.clone(), v.clone()));
            }
        }
        bucket.push((key, value));
        let retired = F::replace(cell, Arc::new(bucket));
        let mut grown = None;
        if previous.is_none() {
            *len += 1;
            if *len > 2 * table.buckets.len() {
                grown = Some(self.grow(&table));
            }
        }
        (previous, retired, grown)
    }

    /// Removes `key`; returns its value.
    pub fn remove(&self, key: &K) -> Option<V> {
        let retired;
        let value;
        {
            let mut len = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            let table = F::load_full(&self.table);
            let cell = table.bucket(self.hasher.hash_one(key));
            let old = F::load_full(cell);
            let at = old.iter().position(|(k, _)| k == key)?;
            let mut bucket = Vec::clone(&old);
            (_, value) = bucket.swap_remove(at);
            retired = F::replace(cell, Arc::new(bucket));
            *len -= 1;
        }
        // Retired after the writer lock, as in `insert`.
        drop(retired);
        Some(value)
    }

    /// Entries in the map.
    pub fn len(&self) -> usize {
        *self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Buckets of the current table.
    pub fn buckets(&self) -> usize {
        F::load_full(&self.table).buckets.len()
    }

    /// Doubles the table (the writer lock held): a new table with every
    /// entry rehashed, published with one store; readers of the old one
    /// finish on it.
    fn grow(&self, old: &Table<K, V, F>) -> F::Retired<Table<K, V, F>> {
        let n = old.buckets.len() * 2;
        let mut fresh: Vec<Vec<(K, V)>> = (0..n).map(|_| Vec::new()).collect();
        for cell in old.buckets.iter() {
            for (k, v) in F::load_full(cell).iter() {
                let i = self.hasher.hash_one(k) as usize & (n - 1);
                fresh[i].push((k.clone(), v.clone()));
            }
        }
        let table = Table {
            buckets: fresh.into_iter().map(|b| F::cell(Arc::new(b))).collect(),
        };
        F::replace(&self.table, Arc::new(table))
    }
}

impl<K, V, F: Family, S> std::fmt::Debug for ReadMostlyMap<K, V, F, S>
where
    K: Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadMostlyMap").finish_non_exhaustive()
    }
}
