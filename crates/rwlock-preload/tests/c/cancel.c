/*
 * A lock call is not a cancellation point, as glibc's pthread_rwlock_*
 * functions are not: a thread cancelled while it waits in one gets its
 * answer, and is cancelled at its next cancellation point. (Found in
 * review, 2026-11-29: a timed wait under every family, and a plain wrlock
 * that revokes BRAVO's bias, slept in nanosleep, a cancellation point, and
 * the thread ended inside the lock call.)
 *
 * Three waits, each cancelled 0.2 s in and granted 0.1 s later: a timed
 * write and a timed read behind a writer, and a write behind a read that
 * comes after 100,000 reads (BRAVO's bias on, so the writer revokes it and
 * waits for the reader). Prints "cancel: ok".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static volatile int answer, current;

static void cleanup(void *arg)
{
	(void)arg;
	if (answer == -1) {
		fprintf(stderr, "cancel: wait %d: the thread was cancelled inside the lock call\n", current);
		_exit(1);
	}
}

static void *waiter(void *arg)
{
	int mode = (int)(long)arg, r;
	struct timespec deadline;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 2;
	pthread_cleanup_push(cleanup, NULL);
	answer = -1;
	if (mode == 0)
		r = pthread_rwlock_timedwrlock(&lock, &deadline);
	else if (mode == 1)
		r = pthread_rwlock_timedrdlock(&lock, &deadline);
	else
		r = pthread_rwlock_wrlock(&lock);
	answer = r;
	if (r == 0)
		pthread_rwlock_unlock(&lock);
	pthread_testcancel();
	pthread_cleanup_pop(0);
	return NULL;
}

int main(void)
{
	for (int mode = 0; mode < 3; mode++) {
		pthread_t t;
		void *res;

		if (mode < 2) {
			pthread_rwlock_wrlock(&lock);
		} else {
			for (int i = 0; i < 100000; i++) {
				pthread_rwlock_rdlock(&lock);
				pthread_rwlock_unlock(&lock);
			}
			pthread_rwlock_rdlock(&lock);
		}
		current = mode;
		if (pthread_create(&t, NULL, waiter, (void *)(long)mode) != 0)
			return 2;
		usleep(200000);
		pthread_cancel(t);
		usleep(100000);
		pthread_rwlock_unlock(&lock);
		pthread_join(t, &res);
		if (res != PTHREAD_CANCELED || answer != 0) {
			fprintf(stderr, "cancel: wait %d: answer %d, %s\n", mode, answer,
				res == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
			return 1;
		}
	}
	printf("cancel: ok\n");
	return 0;
}
