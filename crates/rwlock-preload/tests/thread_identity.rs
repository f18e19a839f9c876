//! A thread that exits holding a write lock leaves it held, and no later
//! thread is taken for it: glibc gives an exited thread's stack and
//! thread-local block to the next thread it starts, so a thread identity
//! that is an address there (as this library's was until review found it,
//! 2026-11-27) made a new thread's `unlock` release the exited thread's
//! write lock.
#![cfg(all(
    target_os = "linux",
    target_env = "gnu",
    target_arch = "x86_64",
    target_pointer_width = "64"
))]

use rwlock_preload::families::Pft;
use rwlock_preload::shim::{Wait, read, unlock, write};

#[test]
fn a_new_thread_is_not_taken_for_an_exited_writer() {
    let rw: &'static mut libc::pthread_rwlock_t =
        Box::leak(Box::new(libc::PTHREAD_RWLOCK_INITIALIZER));
    let p = rw as *mut libc::pthread_rwlock_t as usize;
    std::thread::spawn(move || {
        // SAFETY: a valid, statically initialised lock, never freed.
        assert_eq!(unsafe { write::<Pft>(p as *mut _, Wait::Block) }, 0);
    })
    .join()
    .unwrap();
    // Threads started one after the other get the exited one's stack and
    // thread-local block (before the fix, the first of them already did).
    for i in 0..32 {
        let (rd, un) = std::thread::spawn(move || {
            // SAFETY: as above.
            unsafe {
                (
                    read::<Pft>(p as *mut _, Wait::Try),
                    unlock::<Pft>(p as *mut _),
                )
            }
        })
        .join()
        .unwrap();
        assert_eq!(
            (rd, un),
            (libc::EBUSY, libc::EPERM),
            "thread {i}: a read of a write-held lock must be busy, and an unlock by a \
             thread that holds nothing refused"
        );
    }
    // SAFETY: as above.
    let again = unsafe { write::<Pft>(p as *mut _, Wait::Try) };
    assert_eq!(again, libc::EBUSY, "still held by the exited thread");
}
