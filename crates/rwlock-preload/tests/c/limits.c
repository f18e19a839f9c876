/*
 * The shim's documented limits, one check each; run under LD_PRELOAD with
 * each RWLOCK_IMPL by tests/preload.rs.
 *
 * 1. A lock used by a constructor that runs before main (and before any
 *    constructor of the preload library would: priority 101).
 * 2. PTHREAD_PROCESS_SHARED: glibc's lock (its __shared field set), which
 *    excludes a writer in a child process from one in the parent.
 * 3. fork while locked: the child releases what the forking thread held,
 *    finds held what another thread held, and uses new locks.
 * 4. destroy while held by another thread: EBUSY, the lock unchanged.
 *
 * Prints "limits: ok" and exits 0, or the failed check and exits 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXPECT(call, want)                                                     \
    do {                                                                       \
        int got_ = (call);                                                     \
        if (got_ != (want)) {                                                  \
            fprintf(stderr, "limits: FAIL %s:%d: %s returned %d (%s), expected %d\n", \
                    __FILE__, __LINE__, #call, got_, strerror(got_), (want));  \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static pthread_rwlock_t early = PTHREAD_RWLOCK_INITIALIZER;
static int early_result = -1;

__attribute__((constructor(101))) static void before_everything(void) {
    int r = pthread_rwlock_rdlock(&early);
    r |= pthread_rwlock_unlock(&early);
    r |= pthread_rwlock_wrlock(&early);
    r |= pthread_rwlock_unlock(&early);
    early_result = r;
}

static void process_shared(void) {
    struct shared {
        pthread_rwlock_t lock;
        long counter;
    } *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) { perror("mmap"); exit(1); }
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    EXPECT(pthread_rwlock_init(&s->lock, &a), 0);
    pthread_rwlockattr_destroy(&a);
    unsigned shared_field;
    memcpy(&shared_field, (char *)&s->lock + 28, 4);
    if (shared_field == 0) {
        fprintf(stderr, "limits: FAIL a process-shared lock is not glibc's\n");
        exit(1);
    }
    pid_t child = fork();
    for (int k = 0; k < 20000; k++) {
        EXPECT(pthread_rwlock_wrlock(&s->lock), 0);
        long c = *(volatile long *)&s->counter;
        if (k % 256 == 0) sched_yield();
        *(volatile long *)&s->counter = c + 1;
        EXPECT(pthread_rwlock_unlock(&s->lock), 0);
        EXPECT(pthread_rwlock_rdlock(&s->lock), 0);
        EXPECT(pthread_rwlock_unlock(&s->lock), 0);
    }
    if (child == 0) _exit(0);
    int st;
    waitpid(child, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || s->counter != 40000) {
        fprintf(stderr, "limits: FAIL process-shared: counter %ld of 40000, child status %d\n", s->counter, st);
        exit(1);
    }
    EXPECT(pthread_rwlock_destroy(&s->lock), 0);
    munmap(s, sizeof *s);
}

static pthread_rwlock_t held_by_other = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t read_by_me = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t written_by_me;
static atomic_int other_state;

static void *hold(void *arg) {
    int write = (int)(long)arg;
    EXPECT(write ? pthread_rwlock_wrlock(&held_by_other) : pthread_rwlock_rdlock(&held_by_other), 0);
    atomic_store(&other_state, 1);
    while (atomic_load(&other_state) != 2) usleep(200);
    EXPECT(pthread_rwlock_unlock(&held_by_other), 0);
    return NULL;
}

static pthread_t start_holder(int write) {
    pthread_t t;
    atomic_store(&other_state, 0);
    pthread_create(&t, NULL, hold, (void *)(long)write);
    while (atomic_load(&other_state) != 1) usleep(200);
    return t;
}

static void *lock_twice(void *arg) {
    pthread_rwlock_t *l = arg;
    EXPECT(pthread_rwlock_rdlock(l), 0);
    EXPECT(pthread_rwlock_unlock(l), 0);
    EXPECT(pthread_rwlock_wrlock(l), 0);
    EXPECT(pthread_rwlock_unlock(l), 0);
    return NULL;
}

/* The shim is in use (not glibc's own lock). */
static int shim;

/* The library's family, through its rwlock_preload_family(); NULL when the
 * library is not loaded. */
static const char *preload_family(void) {
    const char *(*f)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "rwlock_preload_family");
    return f ? f() : NULL;
}

static void fork_while_locked(void) {
    EXPECT(pthread_rwlock_init(&written_by_me, NULL), 0);
    pthread_t t = start_holder(1);
    EXPECT(pthread_rwlock_rdlock(&read_by_me), 0);
    EXPECT(pthread_rwlock_rdlock(&read_by_me), 0); /* nested */
    EXPECT(pthread_rwlock_wrlock(&written_by_me), 0);
    pid_t child = fork();
    if (child == 0) {
        /* The forking thread's holds are the child's to release. (glibc
         * tells a write hold by the thread id, which the child's thread
         * does not share: only the shim releases it there.) */
        if (shim) EXPECT(pthread_rwlock_unlock(&written_by_me), 0);
        EXPECT(pthread_rwlock_unlock(&read_by_me), 0);
        EXPECT(pthread_rwlock_trywrlock(&read_by_me), EBUSY); /* one nested hold left */
        EXPECT(pthread_rwlock_unlock(&read_by_me), 0);
        EXPECT(pthread_rwlock_wrlock(&read_by_me), 0);
        EXPECT(pthread_rwlock_unlock(&read_by_me), 0);
        if (shim) {
            EXPECT(pthread_rwlock_wrlock(&written_by_me), 0);
            EXPECT(pthread_rwlock_unlock(&written_by_me), 0);
        }
        /* Another thread's hold: that thread does not exist here. */
        EXPECT(pthread_rwlock_trywrlock(&held_by_other), EBUSY);
        EXPECT(pthread_rwlock_tryrdlock(&held_by_other), EBUSY);
        /* New locks work, from new threads too. */
        pthread_rwlock_t fresh;
        EXPECT(pthread_rwlock_init(&fresh, NULL), 0);
        EXPECT(pthread_rwlock_wrlock(&fresh), 0);
        EXPECT(pthread_rwlock_unlock(&fresh), 0);
        EXPECT(pthread_rwlock_destroy(&fresh), 0);
        pthread_t u;
        pthread_create(&u, NULL, lock_twice, &read_by_me);
        pthread_join(u, NULL);
        _exit(0);
    }
    int st;
    waitpid(child, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "limits: FAIL the forked child failed (status %d)\n", st);
        exit(1);
    }
    EXPECT(pthread_rwlock_unlock(&written_by_me), 0);
    EXPECT(pthread_rwlock_unlock(&read_by_me), 0);
    EXPECT(pthread_rwlock_unlock(&read_by_me), 0);
    atomic_store(&other_state, 2);
    pthread_join(t, NULL);
    EXPECT(pthread_rwlock_destroy(&written_by_me), 0);
}

static void destroy_while_held(void) {
    for (int write = 0; write < 2; write++) {
        pthread_t t = start_holder(write);
        EXPECT(pthread_rwlock_destroy(&held_by_other), EBUSY);
        EXPECT(pthread_rwlock_trywrlock(&held_by_other), EBUSY); /* still held, still usable */
        atomic_store(&other_state, 2);
        pthread_join(t, NULL);
        EXPECT(pthread_rwlock_wrlock(&held_by_other), 0);
        EXPECT(pthread_rwlock_unlock(&held_by_other), 0);
    }
    EXPECT(pthread_rwlock_destroy(&held_by_other), 0);
    EXPECT(pthread_rwlock_init(&held_by_other, NULL), 0);
    EXPECT(pthread_rwlock_destroy(&held_by_other), 0);
}

int main(void) {
    const char *family = preload_family();
    shim = family && strcmp(family, "passthrough") != 0;
    if (early_result != 0) {
        fprintf(stderr, "limits: FAIL the constructor's lock calls returned %d\n", early_result);
        return 1;
    }
    process_shared();
    fork_while_locked();
    /* glibc's destroy does not check; the shim's answers EBUSY. */
    if (shim) destroy_while_held();
    printf("limits: ok\n");
    return 0;
}
