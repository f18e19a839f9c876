/* liburcu's membarrier flavour (urcu-memb, Debian liburcu-dev) for
 * benches/rcu.rs, the peer of prwlock::rcu. _LGPL_SOURCE inlines
 * rcu_read_lock/unlock as liburcu's users get them; the loops live here so
 * that the read side is measured without a call per section. Built by
 * build.rs only when the headers are installed (cfg(has_urcu)). */
#define _LGPL_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <urcu/urcu-memb.h>

void urcu_shim_register(void) { urcu_memb_register_thread(); }

void urcu_shim_unregister(void) { urcu_memb_unregister_thread(); }

void urcu_shim_synchronize(void) { urcu_memb_synchronize_rcu(); }

/* `iters` read sections, each loading *slot and reading the value it points
 * to; returns the sum (so the loads are not elided). */
uint64_t urcu_shim_read_loop(uint64_t *const *slot, uint64_t iters)
{
	uint64_t sum = 0;
	for (uint64_t i = 0; i < iters; i++) {
		urcu_memb_read_lock();
		sum += *rcu_dereference(*(uint64_t **)slot);
		urcu_memb_read_unlock();
	}
	return sum;
}

/* One read section: *slot's value. */
uint64_t urcu_shim_read_once(uint64_t *const *slot)
{
	urcu_memb_read_lock();
	uint64_t v = *rcu_dereference(*(uint64_t **)slot);
	urcu_memb_read_unlock();
	return v;
}

/* `batch` updates of *slot with fresh heap values, then one grace period,
 * then the old values freed: deferred reclamation in batches, as
 * RcuDomain::defer_drop does with its batch size. */
void urcu_shim_update_batch(uint64_t **slot, uint64_t batch, uint64_t **scratch)
{
	for (uint64_t i = 0; i < batch; i++) {
		uint64_t *fresh = malloc(sizeof *fresh);
		*fresh = i;
		scratch[i] = rcu_xchg_pointer(slot, fresh);
	}
	urcu_memb_synchronize_rcu();
	for (uint64_t i = 0; i < batch; i++)
		free(scratch[i]);
}
