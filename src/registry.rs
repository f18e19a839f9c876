//! Every lock the comparison harness knows. Adding a lock is one line in
//! [`LOCKS`].

use crate::bench_lock::{Raw, Sharded, Std};
use crate::workloads::{HarnessError, RunConfig, Sample, Workload};

/// One lock of the comparison.
#[derive(Debug, Clone, Copy)]
pub struct LockEntry {
    /// Name on the command line and in tables.
    pub name: &'static str,
    /// Family (a crate of this workspace, or `peer`).
    pub family: &'static str,
    /// Runs one workload once on a fresh lock.
    pub run: fn(&Workload, &RunConfig) -> Result<Sample, HarnessError>,
    /// Times `iters` uncontended pairs of the given kind.
    pub pairs: fn(u64, crate::workloads::PairMode) -> std::time::Duration,
}

macro_rules! lock {
    ($name:expr, $family:expr, $ty:ty) => {
        LockEntry {
            name: $name,
            family: $family,
            run: crate::workloads::run::<$ty>,
            pairs: crate::workloads::pairs::<$ty>,
        }
    };
}

/// The workspace's locks, then the peers.
pub const LOCKS: &[LockEntry] = &[
    lock!("pf_t", "rwlock-core", Raw<rwlock_core::PfTicket>),
    lock!("pf_q", "rwlock-core", Raw<rwlock_core::PfQueue>),
    lock!("brlock", "rwlock-core", Raw<rwlock_core::BrLock>),
    lock!("parking_lot", "peer", Raw<parking_lot::RawRwLock>),
    lock!("std", "peer", Std),
    lock!("crossbeam_sharded", "peer", Sharded),
    lock!("bravo_parking_lot", "bravo", Raw<bravo::RawRwLock>),
    lock!("bravo_pf_q", "bravo", Raw<bravo::RawPfQueue>),
    lock!("bravo_pf_t", "bravo", Raw<bravo::RawPfTicket>),
    lock!("bravo_pthread", "bravo", Raw<bravo::RawPthread>),
    lock!("c_rw_wp", "cohort", Raw<cohort::CRwWp>),
    lock!("c_rw_rp_opt", "cohort", Raw<cohort::CRwRpOpt>),
    lock!("c_rw_rp", "cohort", Raw<cohort::CRwRp>),
    lock!("c_rw_np", "cohort", Raw<cohort::CRwNp>),
    lock!("dr_ticket", "cohort", Raw<cohort::DrTicket>),
    lock!(
        "cohort_mutex",
        "cohort",
        crate::bench_lock::Mutex<cohort::RestrictedCPtlTkt>
    ),
    lock!("prwlock", "prwlock", Raw<prwlock::PrwLock>),
    lock!("pthread", "peer", Raw<rwlock_core::PthreadRwLock>),
    #[cfg(has_ck)]
    lock!("ck_brlock", "peer", crate::ck::CkBrlock),
    #[cfg(has_ck)]
    lock!("ck_rwcohort", "peer", crate::ck::CkRwCohort),
];

/// Selectable by name only, never part of `all` or a family: a lock that
/// does not lock, to watch the zero-sum check fail a run
/// (`--locks no_lock --workloads rwbench --write 50`).
pub const BROKEN: LockEntry = lock!("no_lock", "broken", crate::bench_lock::NoLock);

/// Selectable by name or as the family `bravo-ablation` only: BRAVO over
/// parking_lot with Listing 1 exactly, and with each Section 7 refinement
/// alone, to measure what each one buys (`docs/results.md`).
pub const ABLATIONS: &[LockEntry] = &[
    lock!(
        "bravo_pl_listing1",
        "bravo-ablation",
        Raw<bravo::Bravo<parking_lot::RawRwLock, bravo::Listing1>>
    ),
    lock!(
        "bravo_pl_revoke_early",
        "bravo-ablation",
        Raw<bravo::Bravo<parking_lot::RawRwLock, bravo::policy::RevokeBeforeLock>>
    ),
    lock!(
        "bravo_pl_second_probe",
        "bravo-ablation",
        Raw<bravo::Bravo<parking_lot::RawRwLock, bravo::policy::SecondProbe>>
    ),
    lock!(
        "bravo_pl_block_scan",
        "bravo-ablation",
        Raw<bravo::Bravo<parking_lot::RawRwLock, bravo::policy::BlockScan>>
    ),
    lock!(
        "bravo_pl_adaptive",
        "bravo-ablation",
        Raw<bravo::Bravo<parking_lot::RawRwLock, bravo::policy::Adaptive>>
    ),
    lock!(
        "bravo_pl_unbiased_hint",
        "bravo-ablation",
        Raw<bravo::Bravo<parking_lot::RawRwLock, bravo::policy::UnbiasedHint>>
    ),
    lock!(
        "bravo_pfq_listing1",
        "bravo-ablation",
        Raw<bravo::Bravo<rwlock_core::PfQueue, bravo::Listing1>>
    ),
];

/// Selectable by name or as the family `cohort-ablation` only: C-RW-WP with
/// the other read indicators (the paper's Figure 7: one central counter,
/// one counter per node) and with a ticket-lock global instead of the
/// partitioned ticket lock.
pub const COHORT_ABLATIONS: &[LockEntry] = &[
    lock!(
        "c_rw_wp_central",
        "cohort-ablation",
        Raw<cohort::WriterPref<cohort::RestrictedCPtlTkt, cohort::Central>>
    ),
    lock!(
        "c_rw_wp_per_node",
        "cohort-ablation",
        Raw<cohort::WriterPref<cohort::RestrictedCPtlTkt, cohort::PerNode>>
    ),
    lock!(
        "c_rw_wp_tkt_tkt",
        "cohort-ablation",
        Raw<
            cohort::WriterPref<
                cohort::Restricted<cohort::Cohort<cohort::TicketLock, cohort::TicketLock>>,
            >,
        >
    ),
];

/// Selectable by name or as the family `unrestricted` only: the locks
/// whose default form is restricted ([`rwlock_core::Restricted`]), as the
/// papers' algorithms alone, to measure what restriction costs and buys;
/// and prwlock without its write-heavy mode (`prwlock::policy`).
pub const UNRESTRICTED: &[LockEntry] = &[
    lock!(
        "pf_t_unrestricted",
        "unrestricted",
        Raw<rwlock_core::pf_ticket::PfTicket>
    ),
    lock!(
        "pf_q_unrestricted",
        "unrestricted",
        Raw<rwlock_core::pf_queue::PfQueue>
    ),
    lock!(
        "brlock_unrestricted",
        "unrestricted",
        Raw<rwlock_core::brlock::BrLock>
    ),
    lock!(
        "bravo_pf_q_unrestricted",
        "unrestricted",
        Raw<bravo::Bravo<rwlock_core::pf_queue::PfQueue>>
    ),
    lock!(
        "c_rw_wp_unrestricted",
        "unrestricted",
        Raw<cohort::unrestricted::CRwWp>
    ),
    lock!(
        "c_rw_rp_opt_unrestricted",
        "unrestricted",
        Raw<cohort::unrestricted::CRwRpOpt>
    ),
    lock!(
        "c_rw_rp_unrestricted",
        "unrestricted",
        Raw<cohort::unrestricted::CRwRp>
    ),
    lock!(
        "c_rw_np_unrestricted",
        "unrestricted",
        Raw<cohort::unrestricted::CRwNp>
    ),
    lock!(
        "prwlock_passive_only",
        "unrestricted",
        crate::bench_lock::PrwPassiveOnly
    ),
    lock!(
        "dr_ticket_unrestricted",
        "unrestricted",
        Raw<cohort::unrestricted::DrTicket>
    ),
    lock!(
        "cohort_mutex_unrestricted",
        "unrestricted",
        crate::bench_lock::Mutex<cohort::CPtlTkt>
    ),
];

/// Whether the Concurrency Kit peers were built (libck-dev was found).
pub const HAS_CK: bool = cfg!(has_ck);

/// Selects locks by name or family; `all` (or an empty list) selects all.
///
/// Returns an error naming the first selector that matches nothing.
pub fn select(selectors: &[String]) -> Result<Vec<LockEntry>, String> {
    if selectors.is_empty() {
        return Ok(LOCKS.to_vec());
    }
    let mut out: Vec<LockEntry> = Vec::new();
    for sel in selectors {
        // `all` is the default set, and may be combined with others
        // (`all,no_lock`, `all,bravo-ablation`).
        let matched: Vec<&LockEntry> = if sel == "all" {
            LOCKS.iter().collect()
        } else if sel == BROKEN.name {
            vec![&BROKEN]
        } else {
            LOCKS
                .iter()
                .chain(ABLATIONS)
                .chain(COHORT_ABLATIONS)
                .chain(UNRESTRICTED)
                .filter(|e| e.name == sel || e.family == sel)
                .collect()
        };
        if matched.is_empty() {
            let names: Vec<_> = LOCKS
                .iter()
                .chain(ABLATIONS)
                .chain(COHORT_ABLATIONS)
                .chain(UNRESTRICTED)
                .map(|e| e.name)
                .collect();
            return Err(format!(
                "no lock or family named `{sel}` (locks: {}; families: rwlock-core, bravo, prwlock, \
                 cohort, peer, bravo-ablation, cohort-ablation, unrestricted)",
                names.join(", ")
            ));
        }
        for e in matched {
            if !out.iter().any(|o| o.name == e.name) {
                out.push(*e);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_selectable() {
        for (i, a) in LOCKS.iter().enumerate() {
            assert!(LOCKS[i + 1..].iter().all(|b| b.name != a.name));
        }
        assert_eq!(select(&[]).unwrap().len(), LOCKS.len());
        let peers = select(&["peer".into()]).unwrap();
        assert!(peers.iter().all(|e| e.family == "peer"));
        let two = select(&["pf_q".into(), "std".into(), "pf_q".into()]).unwrap();
        assert_eq!(
            two.iter().map(|e| e.name).collect::<Vec<_>>(),
            ["pf_q", "std"]
        );
        assert!(select(&["nope".into()]).unwrap_err().contains("nope"));
        assert!(select(&[]).unwrap().iter().all(|e| e.name != "no_lock"));
        assert_eq!(select(&["no_lock".into()]).unwrap()[0].name, "no_lock");
        // `all` combines with others (it used to drop them).
        let all_and_more =
            select(&["all".into(), "no_lock".into(), "bravo-ablation".into()]).unwrap();
        assert_eq!(all_and_more.len(), LOCKS.len() + 1 + ABLATIONS.len());
        assert_eq!(select(&["all".into()]).unwrap().len(), LOCKS.len());
        assert!(
            select(&[])
                .unwrap()
                .iter()
                .all(|e| e.family != "bravo-ablation")
        );
        assert_eq!(
            select(&["bravo-ablation".into()]).unwrap().len(),
            ABLATIONS.len()
        );
        for (i, a) in ABLATIONS.iter().enumerate() {
            assert!(
                LOCKS
                    .iter()
                    .chain(&ABLATIONS[i + 1..])
                    .chain(COHORT_ABLATIONS)
                    .all(|b| b.name != a.name)
            );
        }
        for (i, a) in COHORT_ABLATIONS.iter().enumerate() {
            assert!(
                LOCKS
                    .iter()
                    .chain(&COHORT_ABLATIONS[i + 1..])
                    .chain(UNRESTRICTED)
                    .all(|b| b.name != a.name)
            );
        }
        for (i, a) in UNRESTRICTED.iter().enumerate() {
            assert!(
                LOCKS
                    .iter()
                    .chain(ABLATIONS)
                    .chain(&UNRESTRICTED[i + 1..])
                    .all(|b| b.name != a.name)
            );
        }
        assert_eq!(
            select(&["unrestricted".into()]).unwrap().len(),
            UNRESTRICTED.len()
        );
        assert_eq!(select(&["cohort".into()]).unwrap().len(), 6);
        assert_eq!(select(&["prwlock".into()]).unwrap().len(), 1);
        assert_eq!(
            select(&["cohort-ablation".into()]).unwrap().len(),
            COHORT_ABLATIONS.len()
        );
        assert!(
            select(&[])
                .unwrap()
                .iter()
                .all(|e| e.family != "cohort-ablation")
        );
    }
}
