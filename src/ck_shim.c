/*
 * A small C shim over Concurrency Kit's reader-writer cohort lock
 * (ck_rwcohort, neutral preference, ticket locks as global and local locks:
 * the same type on purpose, see the ck_cohort `locked` pitfall in
 * ../shared/papers.md) and its brlock (ck_brlock), so the comparison harness
 * can run them. Built by build.rs only when libck-dev's headers are present.
 *
 * Both CK locks spin without yielding: under oversubscription the harness
 * shows them as what they are.
 */
#include <stdbool.h>
#include <stdlib.h>

#include <ck_brlock.h>
#include <ck_cohort.h>
#include <ck_rwcohort.h>
#include <ck_spinlock.h>

static void shim_ticket_lock(ck_spinlock_ticket_t *lock, void *context)
{
	(void)context;
	ck_spinlock_ticket_lock(lock);
}

static void shim_ticket_unlock(ck_spinlock_ticket_t *lock, void *context)
{
	(void)context;
	ck_spinlock_ticket_unlock(lock);
}

static bool shim_ticket_locked(ck_spinlock_ticket_t *lock, void *context)
{
	(void)context;
	return ck_spinlock_ticket_locked(lock);
}

CK_COHORT_PROTOTYPE(shim_tt, shim_ticket_lock, shim_ticket_unlock, shim_ticket_locked,
		    shim_ticket_lock, shim_ticket_unlock, shim_ticket_locked)
CK_RWCOHORT_NEUTRAL_PROTOTYPE(shim_tt)

struct ck_shim_rwcohort {
	ck_spinlock_ticket_t global;
	unsigned int nodes;
	ck_spinlock_ticket_t *locals;
	CK_COHORT_INSTANCE(shim_tt) *cohorts;
	CK_RWCOHORT_NEUTRAL_INSTANCE(shim_tt) rw;
};

/* One cohort (local lock) per NUMA node, all sharing the global lock and the
 * (central) reader counter. Returns NULL on allocation failure or nodes == 0. */
struct ck_shim_rwcohort *ck_shim_rwcohort_new(unsigned int nodes)
{
	struct ck_shim_rwcohort *p;
	unsigned int i;

	if (nodes == 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->locals = calloc(nodes, sizeof(*p->locals));
	p->cohorts = calloc(nodes, sizeof(*p->cohorts));
	if (p->locals == NULL || p->cohorts == NULL) {
		free(p->locals);
		free(p->cohorts);
		free(p);
		return NULL;
	}
	p->nodes = nodes;
	ck_spinlock_ticket_init(&p->global);
	for (i = 0; i < nodes; i++) {
		ck_spinlock_ticket_init(&p->locals[i]);
		CK_COHORT_INIT(shim_tt, &p->cohorts[i], &p->global, &p->locals[i],
			       CK_COHORT_DEFAULT_LOCAL_PASS_LIMIT);
	}
	CK_RWCOHORT_NEUTRAL_INIT(shim_tt, &p->rw);
	return p;
}

void ck_shim_rwcohort_free(struct ck_shim_rwcohort *p)
{
	if (p == NULL)
		return;
	free(p->locals);
	free(p->cohorts);
	free(p);
}

void ck_shim_rwcohort_read_lock(struct ck_shim_rwcohort *p, unsigned int node)
{
	CK_RWCOHORT_NEUTRAL_READ_LOCK(shim_tt, &p->rw, &p->cohorts[node % p->nodes], NULL, NULL);
}

void ck_shim_rwcohort_read_unlock(struct ck_shim_rwcohort *p, unsigned int node)
{
	/* The neutral read unlock only decrements the central counter. */
	(void)node;
	CK_RWCOHORT_NEUTRAL_READ_UNLOCK(shim_tt, &p->rw, &p->cohorts[node % p->nodes], NULL, NULL);
}

void ck_shim_rwcohort_write_lock(struct ck_shim_rwcohort *p, unsigned int node)
{
	CK_RWCOHORT_NEUTRAL_WRITE_LOCK(shim_tt, &p->rw, &p->cohorts[node % p->nodes], NULL, NULL);
}

void ck_shim_rwcohort_write_unlock(struct ck_shim_rwcohort *p, unsigned int node)
{
	CK_RWCOHORT_NEUTRAL_WRITE_UNLOCK(shim_tt, &p->rw, &p->cohorts[node % p->nodes], NULL, NULL);
}

struct ck_brlock *ck_shim_brlock_new(void)
{
	struct ck_brlock *br = malloc(sizeof(*br));

	if (br != NULL)
		ck_brlock_init(br);
	return br;
}

void ck_shim_brlock_free(struct ck_brlock *br)
{
	free(br);
}

/* Each reading thread needs its own registered reader record. */
struct ck_brlock_reader *ck_shim_brlock_register(struct ck_brlock *br)
{
	struct ck_brlock_reader *reader = calloc(1, sizeof(*reader));

	if (reader != NULL)
		ck_brlock_read_register(br, reader);
	return reader;
}

void ck_shim_brlock_unregister(struct ck_brlock *br, struct ck_brlock_reader *reader)
{
	ck_brlock_read_unregister(br, reader);
	free(reader);
}

void ck_shim_brlock_read_lock(struct ck_brlock *br, struct ck_brlock_reader *reader)
{
	ck_brlock_read_lock(br, reader);
}

void ck_shim_brlock_read_unlock(struct ck_brlock_reader *reader)
{
	ck_brlock_read_unlock(reader);
}

void ck_shim_brlock_write_lock(struct ck_brlock *br)
{
	ck_brlock_write_lock(br);
}

void ck_shim_brlock_write_unlock(struct ck_brlock *br)
{
	ck_brlock_write_unlock(br);
}
