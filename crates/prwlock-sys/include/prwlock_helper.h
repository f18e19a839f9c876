/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * prwlock_helper.h: the ioctl ABI between prwlock (user level) and the
 * prwlock_helper kernel module (crates/prwlock-sys/kmod).
 *
 * One source of truth: the Rust crate prwlock-sys declares the same types
 * and numbers, and its test tests/abi.rs compiles this header and compares
 * every size, offset and request number.
 *
 * The module is a misc device, /dev/prwlock. A process opens it once; the
 * open file is the process's context (registrations, statistics). A thread
 * registers its status record of one prwlock domain (the record lives in
 * the thread's own memory; the module pins its page); from then on the
 * module's preempt notifiers write the record's on_cpu word at every
 * context switch of that thread, and a writer's consensus request
 * interrupts only the CPUs that run registered threads of the domain which
 * have not reported the writer's version (ATC'14 Fig. 4 AskForReport).
 */
#ifndef PRWLOCK_HELPER_H
#define PRWLOCK_HELPER_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* The ABI version this header describes; PRWLOCK_IOC_VERSION reports the
 * module's. A module with an older version does not know every request. */
#define PRWLOCK_ABI_VERSION 1

#define PRWLOCK_DEVICE "/dev/prwlock"

/* A thread's status record in one domain (prwlock's `Record`). */
#define PRWLOCK_SLOTS 4
#define PRWLOCK_RECORD_ALIGN 128
/* A slot word with this bit is free; its other bits are the version its
 * owner reported (ATC'14 Fig. 3/7 `st.version`). Any other value is a
 * hold. */
#define PRWLOCK_SLOT_FREE (1ULL << 62)
/* on_cpu: 0 until registered; PRWLOCK_ON_CPU | cpu while the owner runs on
 * that CPU; PRWLOCK_OFF_CPU while it is off CPU (preempted, blocked or
 * exited). Written by the module only. */
#define PRWLOCK_ON_CPU (1U << 31)
#define PRWLOCK_OFF_CPU (1U << 30)
#define PRWLOCK_CPU_MASK 0x3fffffffU

struct prwlock_record {
	__u64 slots[PRWLOCK_SLOTS]; /* owner writes; the module reads */
	__u64 owner[4];             /* owner-only fields; the module never touches them */
	__u32 on_cpu;               /* the module writes (see above) */
	__u32 reserved[15];
} __attribute__((aligned(PRWLOCK_RECORD_ALIGN)));

/* PRWLOCK_IOC_VERSION */
struct prwlock_version {
	__u32 abi;                 /* PRWLOCK_ABI_VERSION of the module */
	__u32 records_per_thread;  /* records one thread may hold, through all
				    * its descriptors together */
};

/* PRWLOCK_IOC_REGISTER, PRWLOCK_IOC_UNREGISTER: the calling thread's
 * record of domain `domain` (an opaque cookie, the domain's address). */
struct prwlock_register {
	__u64 record;  /* user address, PRWLOCK_RECORD_ALIGN-aligned */
	__u64 domain;
	__u32 size;    /* sizeof(struct prwlock_register) */
	__u32 flags;   /* 0 */
};

/* PRWLOCK_IOC_CONSENSUS: a full barrier on every CPU that runs a
 * registered thread of `domain` (other than the caller) whose record has
 * not reported `version` or later; with PRWLOCK_CONSENSUS_ALL, on every CPU
 * that runs a registered thread of the domain, reported or not. Returns
 * once every interrupted CPU ran the barrier. */
#define PRWLOCK_CONSENSUS_ALL (1U << 0)
struct prwlock_consensus {
	__u64 domain;
	__u64 version;
	__u32 size;             /* sizeof(struct prwlock_consensus) */
	__u32 flags;
	__u32 cpus_interrupted; /* out: CPUs the request interrupted */
	__u32 reserved;         /* 0 */
};

/* PRWLOCK_IOC_STATS: counters of the calling process's open device. */
struct prwlock_stats {
	__u32 size;             /* in: sizeof(struct prwlock_stats) */
	__u32 threads;          /* registered threads now */
	__u64 records;          /* registered records now */
	__u64 consensus;        /* consensus requests served */
	__u64 cpus_interrupted; /* CPUs they interrupted, in all */
};

#define PRWLOCK_IOC_MAGIC 0xB7
#define PRWLOCK_IOC_VERSION _IOR(PRWLOCK_IOC_MAGIC, 0, struct prwlock_version)
#define PRWLOCK_IOC_REGISTER _IOW(PRWLOCK_IOC_MAGIC, 1, struct prwlock_register)
#define PRWLOCK_IOC_UNREGISTER _IOW(PRWLOCK_IOC_MAGIC, 2, struct prwlock_register)
#define PRWLOCK_IOC_CONSENSUS _IOWR(PRWLOCK_IOC_MAGIC, 3, struct prwlock_consensus)
#define PRWLOCK_IOC_STATS _IOWR(PRWLOCK_IOC_MAGIC, 4, struct prwlock_stats)

#endif /* PRWLOCK_HELPER_H */
