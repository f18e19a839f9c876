/* glibc's own names for the rwlock functions (__pthread_rwlock_*, exported
 * at GLIBC_2.2.5; binaries linked against old libpthreads call them) must
 * reach the same lock as the public names. Prints "aliases: ok". */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

__asm__(".symver __pthread_rwlock_init,__pthread_rwlock_init@GLIBC_2.2.5");
__asm__(".symver __pthread_rwlock_destroy,__pthread_rwlock_destroy@GLIBC_2.2.5");
__asm__(".symver __pthread_rwlock_rdlock,__pthread_rwlock_rdlock@GLIBC_2.2.5");
__asm__(".symver __pthread_rwlock_tryrdlock,__pthread_rwlock_tryrdlock@GLIBC_2.2.5");
__asm__(".symver __pthread_rwlock_wrlock,__pthread_rwlock_wrlock@GLIBC_2.2.5");
__asm__(".symver __pthread_rwlock_trywrlock,__pthread_rwlock_trywrlock@GLIBC_2.2.5");
__asm__(".symver __pthread_rwlock_unlock,__pthread_rwlock_unlock@GLIBC_2.2.5");
extern int __pthread_rwlock_init(pthread_rwlock_t *, const pthread_rwlockattr_t *);
extern int __pthread_rwlock_destroy(pthread_rwlock_t *);
extern int __pthread_rwlock_rdlock(pthread_rwlock_t *);
extern int __pthread_rwlock_tryrdlock(pthread_rwlock_t *);
extern int __pthread_rwlock_wrlock(pthread_rwlock_t *);
extern int __pthread_rwlock_trywrlock(pthread_rwlock_t *);
extern int __pthread_rwlock_unlock(pthread_rwlock_t *);

static pthread_rwlock_t l;
static int expect(const char *what, int got, int want) {
    if (got != want) { printf("%s: %d, expected %d\n", what, got, want); return 1; }
    return 0;
}
static void *other(void *arg) {
    (void)arg;
    /* From another thread: the holds taken through either name are seen. */
    long bad = expect("trywrlock beside the holder", pthread_rwlock_trywrlock(&l), EBUSY)
             + expect("__trywrlock beside the holder", __pthread_rwlock_trywrlock(&l), EBUSY);
    return (void *)bad;
}
static int from_other_thread(void) {
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, other, NULL);
    pthread_join(t, &r);
    return (int)(long)r;
}
int main(void) {
    int bad = 0;
    bad += expect("__init", __pthread_rwlock_init(&l, NULL), 0);
    bad += expect("__wrlock", __pthread_rwlock_wrlock(&l), 0);
    bad += from_other_thread();
    bad += expect("unlock of the __wrlock", pthread_rwlock_unlock(&l), 0);
    bad += expect("wrlock", pthread_rwlock_wrlock(&l), 0);
    bad += from_other_thread();
    bad += expect("__unlock of the wrlock", __pthread_rwlock_unlock(&l), 0);
    bad += expect("__rdlock", __pthread_rwlock_rdlock(&l), 0);
    bad += expect("__tryrdlock (nested)", __pthread_rwlock_tryrdlock(&l), 0);
    bad += from_other_thread();
    bad += expect("__unlock", __pthread_rwlock_unlock(&l), 0);
    bad += expect("unlock", pthread_rwlock_unlock(&l), 0);
    bad += expect("__trywrlock", __pthread_rwlock_trywrlock(&l), 0);
    bad += expect("__unlock", __pthread_rwlock_unlock(&l), 0);
    bad += expect("__destroy", __pthread_rwlock_destroy(&l), 0);
    if (bad == 0) printf("aliases: ok\n");
    return bad != 0;
}
