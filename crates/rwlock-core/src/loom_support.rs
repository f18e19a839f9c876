//! What the loom models of the locks share: a lock guarding an
//! `UnsafeCell` (loom reports any access not ordered by the lock as a
//! causality violation) and the scenarios every reader-writer lock runs.
//! Other crates' models use it through the `testing` feature (a loom build
//! only).

use lock_api::RawRwLock;

use crate::sync::{Arc, UnsafeCell, thread};

/// A lock and the data it guards.
#[derive(Debug)]
pub struct Shared<R> {
    /// The lock.
    pub lock: R,
    /// What it guards: loom reports any access it does not order.
    pub data: UnsafeCell<u32>,
}

// SAFETY: `data` is only accessed under `lock`, which is what the models check.
unsafe impl<R: Sync> Sync for Shared<R> {}

impl<R: RawRwLock> Shared<R> {
    /// `lock` guarding a zero.
    pub fn new(lock: R) -> Arc<Self> {
        Arc::new(Shared {
            lock,
            data: UnsafeCell::new(0),
        })
    }

    /// Adds `n` under the exclusive acquisition `g`, which it releases.
    pub fn add_and_unlock(&self, g: R::ExclusiveGuard, n: u32) {
        // SAFETY: exclusive access under the lock (loom reports it otherwise).
        self.data.with_mut(|p| unsafe { *p += n });
        // SAFETY: `g` is the caller's exclusive acquisition of `lock`.
        unsafe { self.lock.unlock_exclusive(g) };
    }

    /// Reads under the shared acquisition `g`, which it releases.
    pub fn read_and_unlock(&self, g: R::SharedGuard) -> u32 {
        // SAFETY: shared access under the lock.
        let v = self.data.with(|p| unsafe { *p });
        // SAFETY: `g` is the caller's shared acquisition of `lock`.
        unsafe { self.lock.unlock_shared(g) };
        v
    }

    /// One write critical section: adds 1.
    pub fn write(&self) {
        self.add_and_unlock(self.lock.lock_exclusive(), 1);
    }

    /// One read critical section.
    pub fn read(&self) -> u32 {
        self.read_and_unlock(self.lock.lock_shared())
    }
}

/// Two writers and a reader: writers exclude each other and the reader.
pub fn two_writers_one_reader<R>(make: fn() -> R)
where
    R: RawRwLock + Send + Sync + 'static,
{
    loom::model(move || {
        let s = Shared::new(make());
        let ws: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || s.write())
            })
            .collect();
        assert!(s.read() <= 2);
        for w in ws {
            w.join().unwrap();
        }
        assert_eq!(s.read(), 2);
    });
}

/// A reader blocked by W1 while W2 and W3 follow (W3 has W1's phase): the
/// reader must be admitted after W1, never strand behind W3 (which counts it
/// and waits for it).
pub fn reader_across_three_writer_phases<R>(make: fn() -> R)
where
    R: RawRwLock + Send + Sync + 'static,
{
    loom::model(move || {
        let s = Shared::new(make());
        let g = s.lock.lock_exclusive();
        let r = {
            let s = s.clone();
            thread::spawn(move || s.read())
        };
        let w = {
            let s = s.clone();
            thread::spawn(move || {
                s.write();
                s.write()
            })
        };
        s.add_and_unlock(g, 1);
        assert!(r.join().unwrap() >= 1);
        w.join().unwrap();
        assert_eq!(s.read(), 3);
    });
}
