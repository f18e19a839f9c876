/* Lock calls that re-enter the library on one thread, each correct under
 * glibc, whose rwlock keeps no per-thread state and never allocates:
 *
 *   malloc N   the program's malloc/free take a statically initialised
 *              pthread_rwlock_t; with N read locks held while it allocates
 *              (N > 16 moves the library's hold table to the heap, which
 *              calls malloc from inside a lock call). The first locked
 *              allocation comes before any other lock call, so that the
 *              library resolves its family and installs the allocator's
 *              lock from inside malloc.
 *   signal N   a signal handler locks and unlocks lock B while the main
 *              thread locks and unlocks lock A in a loop (N read locks held
 *              by the main thread, as above).
 *
 * Prints "reentry: ok" when every call returned 0 and both locks end free. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static pthread_rwlock_t heap_lock = PTHREAD_RWLOCK_INITIALIZER;
static int interpose; /* set by main before the first allocation */
static atomic_int heap_errors;

static void heap_enter(void) {
    if (interpose && pthread_rwlock_rdlock(&heap_lock) != 0)
        atomic_fetch_add(&heap_errors, 1);
}
static void heap_leave(void) {
    if (interpose && pthread_rwlock_unlock(&heap_lock) != 0)
        atomic_fetch_add(&heap_errors, 1);
}
void *malloc(size_t n) { heap_enter(); void *p = __libc_malloc(n); heap_leave(); return p; }
void *calloc(size_t a, size_t b) { heap_enter(); void *p = __libc_calloc(a, b); heap_leave(); return p; }
void *realloc(void *q, size_t n) { heap_enter(); void *p = __libc_realloc(q, n); heap_leave(); return p; }
void free(void *p) { heap_enter(); __libc_free(p); heap_leave(); }

static pthread_rwlock_t held[40];

static void hold(int n) {
    for (int i = 0; i < n; i++) {
        pthread_rwlock_init(&held[i], NULL);
        if (pthread_rwlock_rdlock(&held[i]) != 0) { printf("rdlock held[%d] failed\n", i); exit(1); }
    }
}
static void release(int n) {
    for (int i = 0; i < n; i++) {
        if (pthread_rwlock_unlock(&held[i]) != 0) { printf("unlock held[%d] failed\n", i); exit(1); }
        pthread_rwlock_destroy(&held[i]);
    }
}

static int run_malloc(int n) {
    interpose = 1;
    char *s = malloc(64); /* the first lock call of the program */
    strcpy(s, "first");
    hold(n);
    for (int i = 0; i < 1000; i++) {
        char *t = malloc(32 + i);
        t[0] = 1;
        t = realloc(t, 4096);
        free(t);
    }
    release(n);
    free(s);
    interpose = 0;
    if (atomic_load(&heap_errors) != 0) { printf("allocator lock calls failed: %d\n", atomic_load(&heap_errors)); return 1; }
    if (pthread_rwlock_trywrlock(&heap_lock) != 0) { printf("the allocator's lock is left held\n"); return 1; }
    pthread_rwlock_unlock(&heap_lock);
    return 0;
}

static pthread_rwlock_t A = PTHREAD_RWLOCK_INITIALIZER, B = PTHREAD_RWLOCK_INITIALIZER;
static volatile sig_atomic_t handler_error, handled;
static pthread_t main_thread;
static atomic_int stop;

static void on_signal(int s) {
    (void)s;
    int r = pthread_rwlock_rdlock(&B);
    int u = pthread_rwlock_unlock(&B);
    if (r != 0 || u != 0) handler_error = r != 0 ? r : u;
    handled++;
}
static void *signaller(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        pthread_kill(main_thread, SIGUSR1);
        for (volatile int i = 0; i < 200; i++) {}
    }
    return NULL;
}

static int run_signal(int n) {
    hold(n);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    main_thread = pthread_self();
    pthread_t k;
    pthread_create(&k, NULL, signaller, NULL);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long it = 0, failed = 0;
    for (;; it++) {
        int r = pthread_rwlock_rdlock(&A);
        int u = pthread_rwlock_unlock(&A);
        if (r != 0 || u != 0) { printf("main: iteration %ld: rdlock %d, unlock %d\n", it, r, u); failed = 1; break; }
        if (handler_error) break;
        if ((it & 1023) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
            /* A second with a thousand signals, or ten on a busy machine. */
            if ((ms > 1000 && handled > 1000) || ms > 10000) break;
        }
    }
    atomic_store(&stop, 1);
    pthread_join(k, NULL);
    release(n);
    printf("iterations %ld, signals handled %d, handler error %d\n", it, (int)handled, (int)handler_error);
    if (failed || handler_error || handled == 0) return 1;
    if (pthread_rwlock_trywrlock(&A) != 0 || pthread_rwlock_trywrlock(&B) != 0) { printf("a lock is left held\n"); return 1; }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: reentry malloc|signal N\n"); return 2; }
    int n = atoi(argv[2]);
    if (n < 0 || n > 40) return 2;
    int rc = strcmp(argv[1], "malloc") == 0 ? run_malloc(n) : run_signal(n);
    if (rc == 0) printf("reentry: ok\n");
    return rc;
}
