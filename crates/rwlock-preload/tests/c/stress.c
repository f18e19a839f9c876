/*
 * Drives the whole pthread_rwlock_* API from many threads and checks the
 * reader-writer invariant; run under LD_PRELOAD=librwlock_preload.so with
 * each RWLOCK_IMPL by tests/preload.rs (and against plain glibc).
 *
 *   stress THREADS MILLISECONDS
 *
 * 1. errors(): the POSIX error codes, single-threaded where possible
 *    (EDEADLK, EBUSY, ETIMEDOUT, EINVAL; EPERM and the NULL checks only
 *    when the shim is in use: glibc does not detect those).
 * 2. stress(): NLOCKS locks, statically and dynamically initialised, of
 *    every kind; each guards {readers, writers, a, b}. A reader checks that
 *    no writer is inside and a == b; a writer checks that nobody else is
 *    inside and moves a and b by one. Acquisitions use every form
 *    (blocking, try, timed on CLOCK_REALTIME, clock on CLOCK_MONOTONIC);
 *    readers nest (recursive read locks), hold several locks at once (some
 *    hold all NLOCKS, more than the shim's 16 inline holds), and migrate
 *    to another CPU between lock and unlock.
 * 3. The end: a and b equal the writes counted, every lock is free
 *    (trywrlock succeeds), dynamic locks destroy with 0.
 *
 * Built with -DOLD_SYMVER, the calls bind to the @GLIBC_2.2.5 versions
 * (programs linked before glibc 2.34) instead of @GLIBC_2.34.
 *
 * Prints "stress: ok ..." and exits 0, or prints the violation and exits 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef OLD_SYMVER
__asm__(".symver pthread_rwlock_init,pthread_rwlock_init@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_destroy,pthread_rwlock_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_rdlock,pthread_rwlock_rdlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_tryrdlock,pthread_rwlock_tryrdlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_timedrdlock,pthread_rwlock_timedrdlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_wrlock,pthread_rwlock_wrlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_trywrlock,pthread_rwlock_trywrlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_timedwrlock,pthread_rwlock_timedwrlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_unlock,pthread_rwlock_unlock@GLIBC_2.2.5");
#endif

#define NLOCKS 20

#define FAIL(...)                                                              \
    do {                                                                       \
        fprintf(stderr, "stress: FAIL %s:%d: ", __FILE__, __LINE__);           \
        fprintf(stderr, __VA_ARGS__);                                          \
        fprintf(stderr, "\n");                                                 \
        exit(1);                                                               \
    } while (0)

#define EXPECT(call, want)                                                     \
    do {                                                                       \
        int got_ = (call);                                                     \
        if (got_ != (want))                                                    \
            FAIL("%s returned %d (%s), expected %d", #call, got_,              \
                 strerror(got_), (want));                                      \
    } while (0)

struct guarded {
    pthread_rwlock_t lock;
    atomic_int readers;
    atomic_int writers;
    long a, b;
    atomic_long writes;
};

static struct guarded g[NLOCKS];
/* Two of them statically initialised, as programs do. */
static pthread_rwlock_t static_plain = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t static_writer = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

static int shim;

/* The library's family, through its rwlock_preload_family(); NULL when the
 * library is not loaded. */
static const char *preload_family(void) {
    const char *(*f)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "rwlock_preload_family");
    return f ? f() : NULL;
}       /* the preload library is in use (not passthrough) */
static int ncpu_mask;  /* CPUs this process may run on */
static int cpus[1024];
static atomic_int stop;

static pthread_rwlock_t *lock_of(int i) {
    if (i == 0) return &static_plain;
    if (i == 1) return &static_writer;
    return &g[i].lock;
}

/* A lock of the writer-preferring kind: glibc deadlocks a recursive read
 * there when a writer waits; the shim counts nested reads instead. */
static int nonrecursive(int i) { return i == 1 || i % 4 == 3; }

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static struct timespec after_ms(clockid_t c, long ms) {
    struct timespec t;
    clock_gettime(c, &t);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void enter_read(int i) {
    atomic_fetch_add(&g[i].readers, 1);
    if (atomic_load(&g[i].writers) != 0)
        FAIL("lock %d: a reader inside with a writer", i);
    long a = *(volatile long *)&g[i].a, b = *(volatile long *)&g[i].b;
    if (a != b) FAIL("lock %d: a reader saw a=%ld b=%ld", i, a, b);
}

static void leave_read(int i) { atomic_fetch_sub(&g[i].readers, 1); }

static void write_section(int i) {
    if (atomic_exchange(&g[i].writers, 1) != 0)
        FAIL("lock %d: two writers inside", i);
    if (atomic_load(&g[i].readers) != 0)
        FAIL("lock %d: a writer inside with %d readers", i, atomic_load(&g[i].readers));
    g[i].a++;
    for (volatile int k = 0; k < 8; k++) {
    }
    g[i].b++;
    atomic_fetch_add(&g[i].writes, 1);
    atomic_store(&g[i].writers, 0);
}

/* Moves the calling thread to another allowed CPU (1 in 8 calls), or
 * back to all of them. */
static int maybe_migrate(uint64_t *s) {
    if (ncpu_mask < 2 || next(s) % 8 != 0) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[next(s) % ncpu_mask], &set);
    return sched_setaffinity(0, sizeof set, &set) == 0;
}

static void unpin(void) {
    if (ncpu_mask < 2) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int k = 0; k < ncpu_mask; k++) CPU_SET(cpus[k], &set);
    sched_setaffinity(0, sizeof set, &set);
}

struct counts {
    long reads, writes, busy, timeouts, nested, multi, migrations;
};

/* Acquires lock i for reading with form `how`; 0 or EBUSY/ETIMEDOUT. */
static int rd(int i, int how, struct counts *c) {
    pthread_rwlock_t *l = lock_of(i);
    int r;
    struct timespec t;
    switch (how) {
    case 0: r = pthread_rwlock_rdlock(l); break;
    case 1: r = pthread_rwlock_tryrdlock(l); break;
    case 2: t = after_ms(CLOCK_REALTIME, 2); r = pthread_rwlock_timedrdlock(l, &t); break;
    default:
#ifdef OLD_SYMVER
        r = pthread_rwlock_rdlock(l);
#else
        t = after_ms(CLOCK_MONOTONIC, 2);
        r = pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &t);
#endif
        break;
    }
    if (r == EBUSY) c->busy++;
    else if (r == ETIMEDOUT) c->timeouts++;
    else if (r != 0) FAIL("read lock %d (form %d): %s", i, how, strerror(r));
    return r;
}

static int wr(int i, int how, struct counts *c) {
    pthread_rwlock_t *l = lock_of(i);
    int r;
    struct timespec t;
    switch (how) {
    case 0: r = pthread_rwlock_wrlock(l); break;
    case 1: r = pthread_rwlock_trywrlock(l); break;
    case 2: t = after_ms(CLOCK_REALTIME, 2); r = pthread_rwlock_timedwrlock(l, &t); break;
    default:
#ifdef OLD_SYMVER
        r = pthread_rwlock_wrlock(l);
#else
        t = after_ms(CLOCK_MONOTONIC, 2);
        r = pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &t);
#endif
        break;
    }
    if (r == EBUSY) c->busy++;
    else if (r == ETIMEDOUT) c->timeouts++;
    else if (r != 0) FAIL("write lock %d (form %d): %s", i, how, strerror(r));
    return r;
}

static void unlock(int i) { EXPECT(pthread_rwlock_unlock(lock_of(i)), 0); }

static void *worker(void *arg) {
    uint64_t s = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
    struct counts *c = calloc(1, sizeof *c);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        uint64_t x = next(&s);
        int i = (int)(x % NLOCKS), how = (int)((x >> 8) % 4), op = (int)((x >> 16) % 100);
        if (op < 45) {
            /* One read, sometimes nested, sometimes across a migration. */
            if (rd(i, how, c) != 0) continue;
            enter_read(i);
            if ((x >> 24) % 4 == 0 && (shim || !nonrecursive(i))) {
                EXPECT(pthread_rwlock_rdlock(lock_of(i)), 0);
                c->nested++;
                enter_read(i);
                leave_read(i);
                unlock(i);
            }
            if ((x >> 28) % 4 == 0) c->migrations += maybe_migrate(&s);
            leave_read(i);
            unlock(i);
            c->reads++;
        } else if (op < 55) {
            /* Several locks at once, in index order (no deadlock); 1 in 8
             * takes all of them. */
            int all = (x >> 24) % 8 == 0;
            int held[NLOCKS], n = 0;
            for (int j = 0; j < NLOCKS; j++) {
                if (!all && next(&s) % 3 != 0) continue;
                if (rd(j, 0, c) != 0) continue;
                enter_read(j);
                held[n++] = j;
            }
            c->migrations += maybe_migrate(&s);
            for (int k = n - 1; k >= 0; k--) {
                leave_read(held[k]);
                unlock(held[k]);
            }
            c->multi++;
        } else {
            if (wr(i, how, c) != 0) continue;
            write_section(i);
            if ((x >> 28) % 8 == 0) c->migrations += maybe_migrate(&s);
            unlock(i);
            c->writes++;
        }
        if ((x >> 40) % 64 == 0) unpin();
    }
    unpin();
    return c;
}

static pthread_t holder;
static atomic_int holder_state; /* 1: holds, 2: release */

static void *hold_write(void *arg) {
    pthread_rwlock_t *l = arg;
    EXPECT(pthread_rwlock_wrlock(l), 0);
    atomic_store(&holder_state, 1);
    while (atomic_load(&holder_state) != 2) usleep(100);
    EXPECT(pthread_rwlock_unlock(l), 0);
    return NULL;
}

static void hold_in_other_thread(pthread_rwlock_t *l) {
    atomic_store(&holder_state, 0);
    pthread_create(&holder, NULL, hold_write, l);
    while (atomic_load(&holder_state) != 1) usleep(100);
}

static void release_other_thread(void) {
    atomic_store(&holder_state, 2);
    pthread_join(holder, NULL);
}

/* A lock that is never released again (a release of the wrong mode
 * corrupts most locks' state that way) fails the run instead of hanging
 * it. */
static void watchdog(int sig) {
    (void)sig;
    static const char msg[] = "stress: FAIL: no progress for the watchdog's time (a lock never released?)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

static void errors(void) {
    pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
    struct timespec t;

    /* A writer that locks again, or reads, would wait for itself. */
    EXPECT(pthread_rwlock_wrlock(&l), 0);
    EXPECT(pthread_rwlock_wrlock(&l), EDEADLK);
    EXPECT(pthread_rwlock_rdlock(&l), EDEADLK);
    EXPECT(pthread_rwlock_tryrdlock(&l), EBUSY);
    EXPECT(pthread_rwlock_trywrlock(&l), EBUSY);
    EXPECT(pthread_rwlock_unlock(&l), 0);

    /* Recursive reads. */
    for (int k = 0; k < 3; k++) EXPECT(pthread_rwlock_rdlock(&l), 0);
    EXPECT(pthread_rwlock_tryrdlock(&l), 0);
    for (int k = 0; k < 4; k++) EXPECT(pthread_rwlock_unlock(&l), 0);

    /* Timeouts, with another thread holding the lock. */
    hold_in_other_thread(&l);
    EXPECT(pthread_rwlock_tryrdlock(&l), EBUSY);
    EXPECT(pthread_rwlock_trywrlock(&l), EBUSY);
    double t0 = now_ms();
    t = after_ms(CLOCK_REALTIME, 30);
    EXPECT(pthread_rwlock_timedrdlock(&l, &t), ETIMEDOUT);
    t = after_ms(CLOCK_REALTIME, 30);
    EXPECT(pthread_rwlock_timedwrlock(&l, &t), ETIMEDOUT);
#ifndef OLD_SYMVER
    t = after_ms(CLOCK_MONOTONIC, 30);
    EXPECT(pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &t), ETIMEDOUT);
    t = after_ms(CLOCK_MONOTONIC, 30);
    EXPECT(pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &t), ETIMEDOUT);
#endif
    double waited = now_ms() - t0;
    if (waited < 55) FAIL("timed locks returned after %.1f ms, not 60+", waited);
    /* A deadline in the past, and malformed ones. */
    t.tv_sec = 0;
    t.tv_nsec = 0;
    EXPECT(pthread_rwlock_timedwrlock(&l, &t), ETIMEDOUT);
    t.tv_nsec = 1000000000L;
    EXPECT(pthread_rwlock_timedrdlock(&l, &t), EINVAL);
    t.tv_nsec = -1;
    EXPECT(pthread_rwlock_timedwrlock(&l, &t), EINVAL);
    /* A null deadline (glibc declares it nonnull; volatile keeps the
     * compiler from seeing it): EINVAL under every family, glibc's own
     * locks included (passed through, glibc would read through it). */
    const struct timespec *volatile no_deadline = NULL;
    EXPECT(pthread_rwlock_timedrdlock(&l, no_deadline), EINVAL);
    EXPECT(pthread_rwlock_timedwrlock(&l, no_deadline), EINVAL);
#ifndef OLD_SYMVER
    EXPECT(pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, no_deadline), EINVAL);
    t = after_ms(CLOCK_REALTIME, 1);
    EXPECT(pthread_rwlock_clockrdlock(&l, CLOCK_PROCESS_CPUTIME_ID, &t), EINVAL);
    EXPECT(pthread_rwlock_clockwrlock(&l, (clockid_t)12345, &t), EINVAL);
#endif
    release_other_thread();
    t = after_ms(CLOCK_REALTIME, 1000);
    EXPECT(pthread_rwlock_timedwrlock(&l, &t), 0);
    EXPECT(pthread_rwlock_unlock(&l), 0);

    /* Attributes: every kind, and a process-shared lock (glibc's). */
    int kinds[] = {PTHREAD_RWLOCK_PREFER_READER_NP, PTHREAD_RWLOCK_PREFER_WRITER_NP,
                   PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP};
    for (int k = 0; k < 4; k++) {
        pthread_rwlockattr_t a;
        pthread_rwlock_t d;
        pthread_rwlockattr_init(&a);
        if (k < 3) pthread_rwlockattr_setkind_np(&a, kinds[k]);
        else pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        EXPECT(pthread_rwlock_init(&d, &a), 0);
        pthread_rwlockattr_destroy(&a);
        EXPECT(pthread_rwlock_rdlock(&d), 0);
        EXPECT(pthread_rwlock_trywrlock(&d), EBUSY);
        EXPECT(pthread_rwlock_unlock(&d), 0);
        EXPECT(pthread_rwlock_wrlock(&d), 0);
        EXPECT(pthread_rwlock_unlock(&d), 0);
        EXPECT(pthread_rwlock_destroy(&d), 0);
        /* Destroyed, then initialised again. */
        EXPECT(pthread_rwlock_init(&d, NULL), 0);
        EXPECT(pthread_rwlock_wrlock(&d), 0);
        EXPECT(pthread_rwlock_unlock(&d), 0);
        EXPECT(pthread_rwlock_destroy(&d), 0);
    }

    if (!shim) return;
    /* What glibc does not detect and the shim does. (A volatile null: the
     * prototypes say nonnull, and the compiler may assume it.) */
    pthread_rwlock_t *volatile nul = NULL;
    struct timespec *volatile no_time = NULL;
    EXPECT(pthread_rwlock_unlock(&l), EPERM);
    EXPECT(pthread_rwlock_rdlock(&l), 0);
    EXPECT(pthread_rwlock_wrlock(&l), EDEADLK); /* would wait for itself */
    EXPECT(pthread_rwlock_destroy(&l), EBUSY);  /* held: stays usable */
    EXPECT(pthread_rwlock_unlock(&l), 0);
    EXPECT(pthread_rwlock_unlock(&l), EPERM);
    EXPECT(pthread_rwlock_rdlock(nul), EINVAL);
    EXPECT(pthread_rwlock_wrlock(nul), EINVAL);
    EXPECT(pthread_rwlock_unlock(nul), EINVAL);
    EXPECT(pthread_rwlock_init(nul, NULL), EINVAL);
    EXPECT(pthread_rwlock_destroy(nul), EINVAL);
    EXPECT(pthread_rwlock_timedrdlock(&l, no_time), EINVAL);
    EXPECT(pthread_rwlock_timedwrlock(&l, no_time), EINVAL);
    EXPECT(pthread_rwlock_wrlock(&l), 0);
    EXPECT(pthread_rwlock_destroy(&l), EBUSY);
    EXPECT(pthread_rwlock_unlock(&l), 0);
    EXPECT(pthread_rwlock_destroy(&l), 0);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    int ms = argc > 2 ? atoi(argv[2]) : 500;
    if (threads < 1 || ms < 1) FAIL("usage: stress THREADS MILLISECONDS");

    /* Which library the calls go to. */
    Dl_info info;
    const char *bound = "?";
    if (dladdr((void *)&pthread_rwlock_rdlock, &info) && info.dli_fname) bound = info.dli_fname;
    const char *family = preload_family();
    shim = family && strcmp(family, "passthrough") != 0;

    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int k = 0; k < CPU_SETSIZE && ncpu_mask < 1024; k++)
            if (CPU_ISSET(k, &set)) cpus[ncpu_mask++] = k;

    signal(SIGALRM, watchdog);
    alarm(ms / 1000 + 30);
    errors();

    for (int i = 2; i < NLOCKS; i++) {
        pthread_rwlockattr_t a;
        pthread_rwlockattr_init(&a);
        pthread_rwlockattr_setkind_np(&a, nonrecursive(i) ? PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP
                                                          : PTHREAD_RWLOCK_PREFER_READER_NP);
        EXPECT(pthread_rwlock_init(&g[i].lock, i % 5 == 0 ? NULL : &a), 0);
        pthread_rwlockattr_destroy(&a);
    }

    pthread_t *t = calloc(threads, sizeof *t);
    for (long k = 0; k < threads; k++)
        if (pthread_create(&t[k], NULL, worker, (void *)(k + 1)) != 0) FAIL("pthread_create");
    usleep(ms * 1000);
    atomic_store(&stop, 1);
    struct counts sum = {0};
    for (int k = 0; k < threads; k++) {
        struct counts *c;
        pthread_join(t[k], (void **)&c);
        sum.reads += c->reads;
        sum.writes += c->writes;
        sum.busy += c->busy;
        sum.timeouts += c->timeouts;
        sum.nested += c->nested;
        sum.multi += c->multi;
        sum.migrations += c->migrations;
        free(c);
    }

    long writes = 0;
    for (int i = 0; i < NLOCKS; i++) {
        if (g[i].a != g[i].b || g[i].a != atomic_load(&g[i].writes))
            FAIL("lock %d: a=%ld b=%ld after %ld writes", i, g[i].a, g[i].b, atomic_load(&g[i].writes));
        writes += g[i].a;
        EXPECT(pthread_rwlock_trywrlock(lock_of(i)), 0);
        EXPECT(pthread_rwlock_unlock(lock_of(i)), 0);
        if (i >= 2) EXPECT(pthread_rwlock_destroy(lock_of(i)), 0);
    }
    if (sum.writes != writes) FAIL("%ld writes counted, %ld applied", sum.writes, writes);
    if (sum.reads == 0 || sum.writes == 0) FAIL("no progress: %ld reads, %ld writes", sum.reads, sum.writes);
    printf("stress: ok threads=%d bound=%s family=%s shim=%d reads=%ld writes=%ld multi=%ld nested=%ld "
           "migrations=%ld busy=%ld timeouts=%ld\n",
           threads, bound, family ? family : "none", shim, sum.reads, sum.writes, sum.multi, sum.nested, sum.migrations, sum.busy,
           sum.timeouts);
    free(t);
    return 0;
}
