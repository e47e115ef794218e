//! The transaction rows (`suite = "txn"`, [`crate::txn`]) in the report: one table per
//! workload and account count, and the two targets.
//!
//! - Throughput target: Cairn (snapshot isolation, the `cairn` row) at least 1.5× the
//!   fastest peer on uncontended transfers (`txn-transfer` at the largest account count),
//!   at every thread count.
//! - Abort target: under contention (the smallest account count, 2 threads or more),
//!   Cairn's abort rate is at most that of the optimistic peer with the lowest one
//!   (`fjall-optimistic`, `rocksdb-optimistic`; stores that run one writer at a time or
//!   lock never abort a transfer and are not compared).
//!
//! Stores whose name starts with `cairn` are Cairn; every other store is a peer.

use std::fmt::Write as _;

use cairn_harness::report::thousands;

use crate::report::{find, stores, Report, Target};
use crate::row::Row;
use crate::stores::TxKind;
use crate::txn::{NAMES, TRANSFER};

/// The fraction of attempts refused, in percent.
fn abort_percent(r: &Row) -> f64 {
    let aborts = r.aborts.unwrap_or(0) as f64;
    let attempts = r.ops as f64 + aborts;
    if attempts > 0.0 {
        100.0 * aborts / attempts
    } else {
        0.0
    }
}

fn is_cairn(store: &str) -> bool {
    store.starts_with("cairn")
}

fn optimistic_peer(store: &str) -> bool {
    !is_cairn(store) && TxKind::parse(store).is_some_and(TxKind::optimistic)
}

/// The transaction rows.
fn rows(report: &Report) -> Vec<&Row> {
    report.rows.iter().filter(|r| r.suite == "txn").collect()
}

/// Sorted, deduplicated values of `f` over `rows`.
fn distinct<T: Ord + Copy>(rows: &[&Row], f: impl Fn(&Row) -> T) -> Vec<T> {
    let mut v: Vec<T> = rows.iter().map(|r| f(r)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The row of `store`, `workload` at `threads` among `rows`.
fn at<'a>(rows: &[&'a Row], store: &str, workload: &str, threads: usize) -> Option<&'a Row> {
    let same: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| r.threads == threads)
        .collect();
    find(&same, store, workload)
}

/// One table per workload and account count.
pub fn tables(md: &mut String, report: &Report) {
    let all = rows(report);
    if all.is_empty() {
        return;
    }
    let threads = distinct(&all, |r| r.threads);
    let _ = writeln!(md, "## Transactions\n");
    let _ = writeln!(
        md,
        "Committed operations per second; Cairn ÷ store: the `cairn` row's (snapshot isolation) over the store's, per thread count; aborts: refused attempts (conflicts, lock timeouts, compare-and-swap mismatches) over all attempts; latency of a committed operation including its retries. Every account total was checked after the run (see `src/txn.rs`).\n"
    );
    for num in distinct(&all, |r| r.num) {
        let at_num: Vec<&Row> = all.iter().copied().filter(|r| r.num == num).collect();
        let names = stores(&at_num);
        for w in NAMES {
            if !at_num.iter().any(|r| r.workload == w) {
                continue;
            }
            let _ = writeln!(md, "### {w}, {} accounts\n", thousands(num as f64));
            let _ = write!(md, "| store |");
            for t in &threads {
                let _ = write!(md, " tx/s, {t} thr |");
            }
            let _ = write!(md, " Cairn ÷ store |");
            let _ = write!(md, " aborts % |");
            for t in &threads {
                let _ = write!(md, " p50 / p99 µs, {t} thr |");
            }
            let _ = writeln!(md);
            let _ = write!(md, "|---|");
            for _ in 0..(2 * threads.len() + 2) {
                let _ = write!(md, "--:|");
            }
            let _ = writeln!(md);
            for name in &names {
                let _ = write!(md, "| {name} |");
                for &t in &threads {
                    let cell = at(&at_num, name, w, t)
                        .map_or("–".to_owned(), |r| thousands(r.ops_per_sec));
                    let _ = write!(md, " {cell} |");
                }
                let ratios: Vec<String> = threads
                    .iter()
                    .map(
                        |&t| match (at(&at_num, "cairn", w, t), at(&at_num, name, w, t)) {
                            (Some(c), Some(r)) if r.ops_per_sec > 0.0 => {
                                format!("{:.2}×", c.ops_per_sec / r.ops_per_sec)
                            }
                            _ => "–".to_owned(),
                        },
                    )
                    .collect();
                let _ = write!(md, " {} |", ratios.join(" / "));
                let aborts: Vec<String> = threads
                    .iter()
                    .map(|&t| {
                        at(&at_num, name, w, t)
                            .map_or("–".to_owned(), |r| format!("{:.2}", abort_percent(r)))
                    })
                    .collect();
                let _ = write!(md, " {} |", aborts.join(" / "));
                for &t in &threads {
                    let cell = at(&at_num, name, w, t).map_or("–".to_owned(), |r| {
                        format!("{:.0} / {:.0}", r.p50_us, r.p99_us)
                    });
                    let _ = write!(md, " {cell} |");
                }
                let _ = writeln!(md);
            }
            let _ = writeln!(
                md,
                "\nCairn ÷ store and aborts %: {} threads.\n",
                threads
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" / ")
            );
        }
    }
}

/// The transaction targets that the rows allow checking.
pub fn targets(report: &Report) -> Vec<Target> {
    let all = rows(report);
    let mut out = Vec::new();
    let nums = distinct(&all, |r| r.num);
    let threads = distinct(&all, |r| r.threads);
    if let Some(&largest) = nums.last() {
        let at_num: Vec<&Row> = all.iter().copied().filter(|r| r.num == largest).collect();
        for &t in &threads {
            let Some(c) = at(&at_num, "cairn", TRANSFER, t) else {
                continue;
            };
            let best = at_num
                .iter()
                .copied()
                .filter(|r| r.workload == TRANSFER && r.threads == t && !is_cairn(&r.store))
                .max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
            if let Some(b) = best {
                out.push(Target {
                    what: format!(
                        "uncontended transfers ({TRANSFER}, {} accounts, {t} thr) vs fastest peer ({})",
                        thousands(largest as f64),
                        b.store
                    ),
                    ratio: c.ops_per_sec / b.ops_per_sec.max(f64::MIN_POSITIVE),
                    goal: 1.5,
                    lower_is_better: false,
                    figures: format!(
                        "{} vs {} tx/s",
                        thousands(c.ops_per_sec),
                        thousands(b.ops_per_sec)
                    ),
                });
            }
        }
    }
    if let Some(&smallest) = nums.first() {
        let at_num: Vec<&Row> = all.iter().copied().filter(|r| r.num == smallest).collect();
        for &t in threads.iter().filter(|&&t| t > 1) {
            let Some(c) = at(&at_num, "cairn", TRANSFER, t) else {
                continue;
            };
            let lowest = at_num
                .iter()
                .copied()
                .filter(|r| r.workload == TRANSFER && r.threads == t && optimistic_peer(&r.store))
                .min_by(|a, b| abort_percent(a).total_cmp(&abort_percent(b)));
            if let Some(p) = lowest {
                let (cp, pp) = (abort_percent(c), abort_percent(p));
                let ratio = if cp <= pp {
                    if pp > 0.0 {
                        cp / pp
                    } else {
                        1.0
                    }
                } else if pp > 0.0 {
                    cp / pp
                } else {
                    f64::INFINITY
                };
                out.push(Target {
                    what: format!(
                        "abort rate under contention ({TRANSFER}, {} accounts, {t} thr) vs lowest optimistic peer ({})",
                        thousands(smallest as f64),
                        p.store
                    ),
                    ratio,
                    goal: 1.0,
                    lower_is_better: true,
                    figures: format!("{cp:.2} % vs {pp:.2} %"),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use std::time::Duration;

    use super::*;
    use crate::row::Labels;
    use crate::workload::Outcome;

    /// A transfer row of `ops` commits in one second with `aborts` refusals.
    fn row(store: &str, num: u64, threads: usize, ops: u64, aborts: u64) -> Row {
        let mut latency = cairn_harness::histogram().unwrap();
        latency.saturating_record_n(10_000, ops);
        let outcome = Outcome {
            ops,
            elapsed: Duration::from_secs(1),
            found: None,
            latency,
            write_latency: None,
        };
        let labels = Labels {
            suite: "txn",
            store,
            config: "c",
            durability: "d",
            workload: TRANSFER.to_owned(),
            threads,
            num,
            value_size: 8,
            batch: 2,
        };
        let mut r = Row::new(labels, &outcome, None);
        r.aborts = Some(aborts);
        r
    }

    #[test]
    fn targets_compare_cairn_with_the_fastest_peer_and_the_optimistic_ones() {
        let mut report = Report::new("cmd".into(), 0, 64, String::new());
        report.rows = vec![
            row("cairn", 1_000_000, 2, 300, 0),
            row("cairn-serializable", 1_000_000, 2, 900, 0),
            row("lmdb", 1_000_000, 2, 100, 0),
            row("cairn", 1_000, 2, 990, 10),
            row("fjall-optimistic", 1_000, 2, 980, 20),
            row("rocksdb-optimistic", 1_000, 2, 950, 50),
            row("redb", 1_000, 2, 1000, 0),
        ];
        let targets = targets(&report);
        assert_eq!(targets.len(), 2);
        // cairn-serializable is Cairn, not a peer.
        assert!(targets[0].what.contains("(lmdb)"));
        assert!((targets[0].ratio - 3.0).abs() < 1e-9);
        assert!(targets[0].met());
        // redb never aborts but is not optimistic; fjall's 2 % is the lowest peer.
        assert!(targets[1].what.contains("fjall-optimistic"));
        assert!((targets[1].ratio - 0.5).abs() < 1e-9);
        assert!(targets[1].met());
        let md = crate::markdown::markdown(&report);
        assert!(md.contains("### txn-transfer, 1,000 accounts"));
        assert!(md.contains("| cairn | 990 | 1.00× | 1.00 |"));
    }
}
