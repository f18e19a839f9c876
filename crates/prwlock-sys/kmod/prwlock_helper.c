// SPDX-License-Identifier: GPL-2.0
/*
 * prwlock_helper: kernel support for prwlock, the passive reader-writer lock
 * (Liu, Zhang & Chen, ATC'14, Section 3.5; FCP Sections 4.2 and 5.2).
 *
 * The ABI is include/prwlock_helper.h. Two services:
 *
 * 1. Where each registered reader runs. A thread registers its status
 *    record of a domain; the module pins the record's page and registers a
 *    preempt notifier on the thread. At every sched-in the notifier writes
 *    PRWLOCK_ON_CPU | cpu into each of the thread's records, at every
 *    sched-out PRWLOCK_OFF_CPU. A writer counts a reader that is off CPU as
 *    reported: it cannot be inside the store-load window the consensus
 *    closes (the argument below). (The paper converts a preempted reader's
 *    hold to an active one at sched-out, Fig. 7 ScheduleOut; doing that
 *    here would mean writing the lock's active counter, anywhere in user
 *    memory, from scheduler context, so the module publishes the fact and
 *    the writer decides.)
 *
 * 2. Writer consensus (Fig. 4 lines 7-11, AskForReport). The request names
 *    a domain and the writer's version; the module interrupts (IPI, a full
 *    barrier there) only the CPUs currently running a registered thread of
 *    that domain whose record has not reported the version, where
 *    membarrier(PRIVATE_EXPEDITED) interrupts every CPU running a thread of
 *    the process.
 *
 * Why skipping the others is sound: the writer stored its writer bit and
 * ran a full barrier before the request, and the request runs smp_mb()
 * before it reads where threads run. A thread read as off CPU ran the
 * scheduler's full barrier after its last user-space store and, at its
 * next sched-in, stores its on_cpu word and runs smp_mb() (below) before
 * it returns to user space: of that store and the writer's read, one sees
 * the other (the Dekker pair), so either it is interrupted or it sees the
 * writer bit. A thread whose record reports the version read the domain
 * version after the writer bumped it, so its later loads see the writer
 * bit (the same argument as prwlock's all_reported()).
 *
 * Lifetimes. A notifier is linked into its task's list and only that task
 * may unlink it, so:
 *  - UNREGISTER of a thread's last record unlinks the notifier (the caller
 *    is the task) and frees the registration at once;
 *  - a thread that exits while registered marks its registration dead in
 *    its last sched-out (task state TASK_DEAD); the registration is freed
 *    after an RCU grace period (the scheduler walks the notifier list with
 *    preemption disabled), by the reaper work;
 *  - when the device file is released (the process exits, or closes it)
 *    while threads are still registered, their records are let go at once
 *    (the notifiers stop marking them off CPU, and a sched-in clears its
 *    thread's marks; an RCU grace period lets a running notifier finish;
 *    the records read 0 again; a second grace period lets a clearing
 *    sched-in finish; their pages are unpinned), and the emptied
 *    registrations move to the orphan list,
 *    still linked to their live tasks. A thread that registers again,
 *    through any descriptor, adopts its orphan instead of linking another
 *    notifier; the reaper frees an orphan once its task is dead. Each
 *    registration holds a module reference, so the module cannot be
 *    unloaded while a notifier of it is linked.
 * Pinned pages are unpinned (and dirtied) when a record is let go.
 *
 * Bounds (the device is open to every user, so they are what an
 * unprivileged caller can make the kernel hold): a thread holds at most
 * PRW_RECORDS_PER_THREAD records through all its descriptors together,
 * so at most that many pinned pages and, with its orphans, that many
 * notifiers (an orphan is adopted before a new one is made: an attached
 * registration holds at least one record), plus, for a moment, one per
 * descriptor of the process whose release is under way (its emptied
 * registrations become orphans when it ends). Records must lie in anonymous
 * memory: a long-term writable pin of a file's page would write it behind
 * the filesystem's back. Pages are pinned before the descriptor's mutex is
 * taken, and the mutex is taken killably, so a fault that blocks (a FUSE
 * or userfaultfd range) holds up only its own caller.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "../include/prwlock_helper.h"

#ifdef CONFIG_HIGHMEM
#error "prwlock_helper reads pinned pages through page_address(): no HIGHMEM"
#endif
#ifndef CONFIG_PREEMPT_NOTIFIERS
#error "prwlock_helper needs CONFIG_PREEMPT_NOTIFIERS"
#endif

/* Records one thread may register, through all its descriptors together:
 * one per prwlock domain it reads. */
#define PRW_RECORDS_PER_THREAD 8

static_assert(sizeof(struct prwlock_record) == PRWLOCK_RECORD_ALIGN);

struct prw_rec {
	u64 domain;
	unsigned long uaddr;
	struct page *page;
	struct prwlock_record *k; /* the record through the kernel mapping */
};

struct prw_file;

struct prw_thread {
	struct preempt_notifier pn;
	struct task_struct *task;   /* a reference (get_task_struct) */
	struct prw_file *file;      /* NULL once orphaned (under orphans_lock) */
	struct list_head node;      /* in file->threads, or the orphan list */
	int cpu;                    /* where the task runs, -1 off CPU */
	int dead;                   /* set (release) in the task's last sched-out */
	int nrec;                   /* changed by the task itself, preemption off,
				     * or set to 0 by release (READ_ONCE in the
				     * notifiers) */
	int pinned;                 /* release: records to let go after the GP */
	int clearing;               /* release: records sched-in clears while
				     * nrec reads 0 (first GP, prw_release) */
	struct prw_rec recs[PRW_RECORDS_PER_THREAD];
};

struct prw_file {
	struct mutex lock;          /* threads, and every nrec/recs change */
	struct list_head threads;
	struct mm_struct *mm;       /* the opener's (mmgrab): callers must share it */
	cpumask_var_t mask;         /* consensus scratch, under lock */
	u64 consensus;
	u64 cpus_interrupted;
};

static DEFINE_SPINLOCK(orphans_lock);
static LIST_HEAD(orphans);
static void reap_work_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(reap_work, reap_work_fn);

/* ------------------------------------------------------------ notifiers */

static void prw_sched_in(struct preempt_notifier *pn, int cpu)
{
	struct prw_thread *t = container_of(pn, struct prw_thread, pn);
	int i, n = READ_ONCE(t->nrec);

	WRITE_ONCE(t->cpu, cpu);
	if (n != 0) {
		for (i = 0; i < n; i++)
			WRITE_ONCE(t->recs[i].k->on_cpu, PRWLOCK_ON_CPU | (u32)cpu);
	} else {
		/*
		 * The file is being released (or this is an orphan, clearing
		 * 0): clear the off-CPU marks this thread's sched-out left, so
		 * that no record says off CPU while its owner runs (a writer
		 * would count it as reported and skip the barrier). Pairs with
		 * the smp_wmb() in prw_release(): nrec read 0 there, so
		 * clearing reads the count it had before.
		 */
		smp_rmb();
		n = READ_ONCE(t->clearing);
		for (i = 0; i < n; i++)
			WRITE_ONCE(t->recs[i].k->on_cpu, 0);
	}
	/*
	 * Pairs with smp_mb() in prw_consensus() before it reads t->cpu: either
	 * the writer sees this CPU, or this thread's next user-space load sees
	 * the writer's stores.
	 */
	smp_mb();
}

static void prw_sched_out(struct preempt_notifier *pn, struct task_struct *next)
{
	struct prw_thread *t = container_of(pn, struct prw_thread, pn);
	int i, n = READ_ONCE(t->nrec);

	/*
	 * The scheduler ran a full barrier (rq lock, smp_mb__after_spinlock)
	 * after this thread's last user-space store: a writer that reads "off
	 * CPU" below sees those stores.
	 */
	for (i = 0; i < n; i++)
		WRITE_ONCE(t->recs[i].k->on_cpu, PRWLOCK_OFF_CPU);
	WRITE_ONCE(t->cpu, -1);
	if (READ_ONCE(current->__state) == TASK_DEAD) {
		/* The task's last switch: it never runs again. Pairs with the
		 * reaper's smp_load_acquire(). */
		smp_store_release(&t->dead, 1);
	}
}

static struct preempt_ops prw_preempt_ops = {
	.sched_in = prw_sched_in,
	.sched_out = prw_sched_out,
};

/* ------------------------------------------------------------ lifetimes */

/* Unpins and frees a registration whose notifier is no longer walked. */
static void prw_thread_free(struct prw_thread *t)
{
	int i;

	for (i = 0; i < t->nrec; i++)
		unpin_user_pages_dirty_lock(&t->recs[i].page, 1, true);
	put_task_struct(t->task);
	kfree(t);
	module_put(THIS_MODULE);
}

/* Frees the orphans whose tasks are dead; requeues itself while live
 * orphans remain. */
static void reap_work_fn(struct work_struct *work)
{
	struct prw_thread *t, *tmp;
	LIST_HEAD(dead);
	bool live = false;

	spin_lock(&orphans_lock);
	list_for_each_entry_safe(t, tmp, &orphans, node) {
		if (smp_load_acquire(&t->dead))
			list_move(&t->node, &dead);
		else
			live = true;
	}
	spin_unlock(&orphans_lock);
	if (!list_empty(&dead)) {
		/* The dead tasks' last sched-out walked their notifier lists
		 * with preemption disabled: wait for that walk to end. */
		synchronize_rcu();
		list_for_each_entry_safe(t, tmp, &dead, node) {
			list_del(&t->node);
			prw_thread_free(t);
		}
	}
	if (live)
		schedule_delayed_work(&reap_work, HZ / 10);
}

static void prw_orphan(struct prw_thread *t)
{
	spin_lock(&orphans_lock);
	t->file = NULL;
	list_add_tail(&t->node, &orphans);
	spin_unlock(&orphans_lock);
	/* Now, even if the 100 ms poll is pending. */
	mod_delayed_work(system_wq, &reap_work, 0);
}

/* Takes the calling thread's orphan `t` (found by prw_adopt_mine) back for
 * file `f`; false if its release has not finished with it yet. */
static bool prw_adopt(struct prw_thread *t, struct prw_file *f)
{
	bool orphaned;

	spin_lock(&orphans_lock);
	orphaned = !t->file;
	if (orphaned) {
		list_del(&t->node);
		t->file = f;
	}
	spin_unlock(&orphans_lock);
	return orphaned;
}

/* Moves the file's dead threads to the reaper (file lock held). */
static void prw_orphan_dead(struct prw_file *f)
{
	struct prw_thread *t, *tmp;

	list_for_each_entry_safe(t, tmp, &f->threads, node) {
		if (smp_load_acquire(&t->dead)) {
			list_del(&t->node);
			prw_orphan(t);
		}
	}
}

/* ------------------------------------------------------------- requests */

/* What the calling thread holds through all its descriptors. */
struct prw_mine {
	unsigned int records;
	bool has_record;            /* the address asked about */
};

/*
 * Walks the calling thread's own preempt notifiers. Only a task links or
 * unlinks its notifiers (the scheduler only walks them), so the task may
 * read its list at any time; and no registration linked there is freed
 * while the task runs (UNREGISTER is the task's own request, the reaper
 * frees dead tasks' only). A concurrent release may drop a count to 0.
 */
static void prw_mine(unsigned long uaddr, struct prw_mine *m)
{
	struct preempt_notifier *pn;
	struct prw_thread *t;
	int i, n;

	m->records = 0;
	m->has_record = false;
	hlist_for_each_entry(pn, &current->preempt_notifiers, link) {
		if (pn->ops != &prw_preempt_ops)
			continue;
		t = container_of(pn, struct prw_thread, pn);
		n = READ_ONCE(t->nrec);
		m->records += n;
		for (i = 0; i < n; i++)
			if (t->recs[i].uaddr == uaddr)
				m->has_record = true;
	}
}

/*
 * Adopts one of the calling thread's orphans for file `f`, or returns NULL
 * if it has none. Every emptied registration is tried, not only the first:
 * one whose file is still being released is emptied too but cannot be
 * adopted yet, and stopping at it linked a fresh notifier each time while
 * a real orphan further down stayed unused (found in review, 2026-11-29:
 * closing one descriptor while registering through another, repeatedly,
 * grew the thread's notifier list without bound). The walk is safe for
 * the reason prw_mine gives.
 */
static struct prw_thread *prw_adopt_mine(struct prw_file *f)
{
	struct preempt_notifier *pn;
	struct prw_thread *t;

	hlist_for_each_entry(pn, &current->preempt_notifiers, link) {
		if (pn->ops != &prw_preempt_ops)
			continue;
		t = container_of(pn, struct prw_thread, pn);
		if (!READ_ONCE(t->nrec) && prw_adopt(t, f))
			return t;
	}
	return NULL;
}

static struct prw_thread *prw_find_thread(struct prw_file *f, struct task_struct *task)
{
	struct prw_thread *t;

	list_for_each_entry(t, &f->threads, node)
		if (t->task == task && !READ_ONCE(t->dead))
			return t;
	return NULL;
}

static long prw_register(struct prw_file *f, struct prwlock_register __user *uarg)
{
	struct prwlock_register arg;
	struct prw_thread *t, *other;
	struct prw_mine mine;
	struct page *page;
	bool fresh = false, adopted = false;
	long ret;
	int i;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.size != sizeof(arg) || arg.flags != 0)
		return -EINVAL;
	if (!arg.record || arg.record % PRWLOCK_RECORD_ALIGN ||
	    arg.record > TASK_SIZE_MAX - PRWLOCK_RECORD_ALIGN)
		return -EINVAL;

	/* Before the mutex: a fault here may block (module docs, Bounds). */
	ret = pin_user_pages_fast(arg.record & PAGE_MASK, 1, FOLL_WRITE | FOLL_LONGTERM, &page);
	if (ret != 1)
		return ret < 0 ? ret : -EFAULT;
	if (!PageAnon(page)) {
		/* A file's page (shared mapping): refused (module docs). */
		ret = -EINVAL;
		goto unpin;
	}
	if (mutex_lock_killable(&f->lock)) {
		ret = -EINTR;
		goto unpin;
	}
	prw_orphan_dead(f);
	t = prw_find_thread(f, current);
	/* One record per (thread, domain); one owner per record. */
	list_for_each_entry(other, &f->threads, node) {
		for (i = 0; i < other->nrec; i++) {
			if (other->recs[i].uaddr == arg.record) {
				ret = other == t ? -EEXIST : -EBUSY;
				goto out;
			}
			if (other == t && other->recs[i].domain == arg.domain) {
				ret = -EEXIST;
				goto out;
			}
		}
	}
	/* The same through the thread's other descriptors, and the bound. */
	prw_mine(arg.record, &mine);
	if (mine.has_record) {
		ret = -EEXIST;
		goto out;
	}
	if (mine.records >= PRW_RECORDS_PER_THREAD ||
	    (t && t->nrec >= PRW_RECORDS_PER_THREAD)) {
		ret = -ENOSPC;
		goto out;
	}
	if (!t) {
		t = prw_adopt_mine(f);
		adopted = t != NULL;
	}
	if (!t) {
		if (!try_module_get(THIS_MODULE)) {
			ret = -ENODEV;
			goto out;
		}
		t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
		if (!t) {
			module_put(THIS_MODULE);
			ret = -ENOMEM;
			goto out;
		}
		get_task_struct(current);
		t->task = current;
		t->file = f;
		t->cpu = -1;
		preempt_notifier_init(&t->pn, &prw_preempt_ops);
		fresh = true;
	}
	/* The notifiers run on this CPU for this task only: with preemption
	 * off, they see the array before or after the change, whole. */
	preempt_disable();
	i = t->nrec;
	t->recs[i].domain = arg.domain;
	t->recs[i].uaddr = arg.record;
	t->recs[i].page = page;
	t->recs[i].k = page_address(page) + offset_in_page(arg.record);
	WRITE_ONCE(t->recs[i].k->on_cpu, PRWLOCK_ON_CPU | (u32)smp_processor_id());
	WRITE_ONCE(t->cpu, smp_processor_id());
	WRITE_ONCE(t->nrec, i + 1);
	if (fresh || adopted)
		list_add_tail(&t->node, &f->threads);
	if (fresh)
		preempt_notifier_register(&t->pn);
	preempt_enable();
	mutex_unlock(&f->lock);
	return 0;

out:
	mutex_unlock(&f->lock);
unpin:
	unpin_user_page(page);
	return ret;
}

static long prw_unregister(struct prw_file *f, struct prwlock_register __user *uarg)
{
	struct prwlock_register arg;
	struct prw_thread *t;
	struct page *page;
	int i, last;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.size != sizeof(arg) || arg.flags != 0)
		return -EINVAL;

	if (mutex_lock_killable(&f->lock))
		return -EINTR;
	t = prw_find_thread(f, current);
	for (i = 0; t && i < t->nrec; i++)
		if (t->recs[i].uaddr == arg.record && t->recs[i].domain == arg.domain)
			break;
	if (!t || i == t->nrec) {
		mutex_unlock(&f->lock);
		return -ENOENT;
	}
	page = t->recs[i].page;
	preempt_disable();
	/* The record is the owner's again: no longer tracked. */
	WRITE_ONCE(t->recs[i].k->on_cpu, 0);
	last = t->nrec - 1;
	t->recs[i] = t->recs[last];
	WRITE_ONCE(t->nrec, last);
	if (last == 0) {
		/* The caller is the task: it may unlink its own notifier, and
		 * no scheduler walk of its list is under way. */
		preempt_notifier_unregister(&t->pn);
		list_del(&t->node);
	}
	preempt_enable();
	mutex_unlock(&f->lock);
	unpin_user_pages_dirty_lock(&page, 1, true);
	if (last == 0)
		prw_thread_free(t); /* nrec is 0: only the task and module refs */
	return 0;
}

static bool prw_reported(const struct prwlock_record *k, u64 version)
{
	int i;

	for (i = 0; i < PRWLOCK_SLOTS; i++) {
		u64 w = READ_ONCE(k->slots[i]);

		if ((w & PRWLOCK_SLOT_FREE) && (w & ~PRWLOCK_SLOT_FREE) >= version)
			return true;
	}
	return false;
}

static void prw_barrier_ipi(void *info)
{
	/* The interrupt itself serializes this CPU; the barrier says so. */
	smp_mb();
}

static long prw_consensus(struct prw_file *f, struct prwlock_consensus __user *uarg)
{
	struct prwlock_consensus arg;
	struct prw_thread *t, *tmp;
	unsigned int n;
	int i, cpu;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.size != sizeof(arg) || arg.flags & ~PRWLOCK_CONSENSUS_ALL || arg.reserved)
		return -EINVAL;

	/* Pairs with smp_mb() in prw_sched_in(): the caller's stores (its
	 * writer bit) before our reads of where threads run. */
	smp_mb();
	if (mutex_lock_killable(&f->lock))
		return -EINTR;
	cpumask_clear(f->mask);
	/* One walk: it also hands the file's dead threads to the reaper (as
	 * prw_orphan_dead() does for the other requests). */
	list_for_each_entry_safe(t, tmp, &f->threads, node) {
		if (smp_load_acquire(&t->dead)) {
			list_del(&t->node);
			prw_orphan(t);
			continue;
		}
		if (t->task == current)
			continue;
		for (i = 0; i < t->nrec; i++) {
			if (t->recs[i].domain != arg.domain)
				continue;
			cpu = READ_ONCE(t->cpu);
			if (cpu < 0)
				break;
			if (!(arg.flags & PRWLOCK_CONSENSUS_ALL) &&
			    prw_reported(t->recs[i].k, arg.version))
				break;
			cpumask_set_cpu(cpu, f->mask);
			break;
		}
	}
	preempt_disable();
	/* Whoever ran on this CPU is off it now: the caller runs here. */
	cpumask_clear_cpu(smp_processor_id(), f->mask);
	n = cpumask_weight(f->mask);
	if (n)
		smp_call_function_many(f->mask, prw_barrier_ipi, NULL, true);
	preempt_enable();
	f->consensus++;
	f->cpus_interrupted += n;
	mutex_unlock(&f->lock);
	/* The interrupted CPUs' barriers before the caller's next loads. */
	smp_mb();
	if (put_user(n, &uarg->cpus_interrupted))
		return -EFAULT;
	return 0;
}

static long prw_stats(struct prw_file *f, struct prwlock_stats __user *uarg)
{
	struct prwlock_stats st = { .size = sizeof(st) };
	struct prw_thread *t;
	__u32 size;

	if (get_user(size, &uarg->size))
		return -EFAULT;
	if (size != sizeof(st))
		return -EINVAL;
	if (mutex_lock_killable(&f->lock))
		return -EINTR;
	prw_orphan_dead(f);
	list_for_each_entry(t, &f->threads, node) {
		if (READ_ONCE(t->dead))
			continue;
		st.threads++;
		st.records += t->nrec;
	}
	st.consensus = f->consensus;
	st.cpus_interrupted = f->cpus_interrupted;
	mutex_unlock(&f->lock);
	return copy_to_user(uarg, &st, sizeof(st)) ? -EFAULT : 0;
}

static long prw_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct prw_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;

	/* The file is one process's context: a descriptor inherited across
	 * fork or passed to another process serves only its opener. */
	if (current->mm != f->mm)
		return -EPERM;
	switch (cmd) {
	case PRWLOCK_IOC_VERSION: {
		struct prwlock_version v = {
			.abi = PRWLOCK_ABI_VERSION,
			.records_per_thread = PRW_RECORDS_PER_THREAD,
		};
		return copy_to_user(uarg, &v, sizeof(v)) ? -EFAULT : 0;
	}
	case PRWLOCK_IOC_REGISTER:
		return prw_register(f, uarg);
	case PRWLOCK_IOC_UNREGISTER:
		return prw_unregister(f, uarg);
	case PRWLOCK_IOC_CONSENSUS:
		return prw_consensus(f, uarg);
	case PRWLOCK_IOC_STATS:
		return prw_stats(f, uarg);
	default:
		return -ENOTTY;
	}
}

static int prw_open(struct inode *inode, struct file *file)
{
	struct prw_file *f;

	if (!current->mm)
		return -EPERM;
	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	if (!zalloc_cpumask_var(&f->mask, GFP_KERNEL_ACCOUNT)) {
		kfree(f);
		return -ENOMEM;
	}
	mutex_init(&f->lock);
	INIT_LIST_HEAD(&f->threads);
	mmgrab(current->mm);
	f->mm = current->mm;
	file->private_data = f;
	return 0;
}

static int prw_release(struct inode *inode, struct file *file)
{
	struct prw_file *f = file->private_data;
	struct prw_thread *t, *tmp;
	LIST_HEAD(gone);
	int i;

	/* The last reference is gone: no request runs on this file. */
	mutex_lock(&f->lock);
	list_splice_init(&f->threads, &gone);
	mutex_unlock(&f->lock);
	/* Let every record go (module docs, Lifetimes): first the notifiers
	 * stop marking them (a sched-in only clears them from now on)... */
	list_for_each_entry(t, &gone, node) {
		t->pinned = t->nrec;
		WRITE_ONCE(t->clearing, t->nrec);
		/* Pairs with smp_rmb() in prw_sched_in(). */
		smp_wmb();
		WRITE_ONCE(t->nrec, 0);
	}
	if (!list_empty(&gone)) {
		/* ...then a notifier that read the old count (it runs with
		 * preemption off) has returned, so nothing marks a record off
		 * CPU again; clear the marks left... */
		synchronize_rcu();
		list_for_each_entry(t, &gone, node) {
			for (i = 0; i < t->pinned; i++)
				WRITE_ONCE(t->recs[i].k->on_cpu, 0);
			WRITE_ONCE(t->clearing, 0);
		}
		/* ...then a sched-in that read the old clearing count has
		 * returned too... */
		synchronize_rcu();
		list_for_each_entry_safe(t, tmp, &gone, node) {
			/* ...so the records are the owners' again. */
			for (i = 0; i < t->pinned; i++)
				unpin_user_pages_dirty_lock(&t->recs[i].page, 1, true);
			t->pinned = 0;
			list_del(&t->node);
			prw_orphan(t);
		}
	}
	mmdrop(f->mm);
	free_cpumask_var(f->mask);
	mutex_destroy(&f->lock);
	kfree(f);
	return 0;
}

static const struct file_operations prw_fops = {
	.owner = THIS_MODULE,
	.open = prw_open,
	.release = prw_release,
	.unlocked_ioctl = prw_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice prw_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "prwlock",
	.fops = &prw_fops,
	.mode = 0666,
};

static int __init prw_init(void)
{
	int ret;

	preempt_notifier_inc();
	ret = misc_register(&prw_misc);
	if (ret)
		preempt_notifier_dec();
	return ret;
}

static void __exit prw_exit(void)
{
	misc_deregister(&prw_misc);
	/* No registration is left (each holds a module reference): the reaper
	 * may still be finishing its last run. */
	cancel_delayed_work_sync(&reap_work);
	preempt_notifier_dec();
}

module_init(prw_init);
module_exit(prw_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("prwlock kernel helper: reader CPU tracking and targeted writer consensus");
