//! The transaction workloads (`txn-transfer`, `txn-rmw`, `txn-cas`): Cairn's
//! transactions and compare-and-swap beside each store's own transactions
//! ([`TxStore`], implemented in each store's module), run only when `--workloads` names
//! them.
//!
//! Each store runs in a fresh process of this program per account count
//! (`--txn-worker`), on a fresh directory: `N` accounts (`--txn-accounts`, keys
//! `%016d` of `0..N`, values 8-byte little-endian counters of [`BALANCE`] each) are
//! loaded untimed in batches of 1,000, then for every thread count (`--txn-threads`) the
//! named workloads run in the order `txn-transfer`, `txn-rmw`, `txn-cas`, each with an
//! untimed [`TxStore::settle`] after it.
//!
//! What is measured, per workload and thread count:
//! - `txn-transfer`: `--txn-ops` transfers. Each reads two distinct random accounts and,
//!   if the payer's balance allows, moves 1 to 100 from one to the other (both written);
//!   otherwise it commits without writing.
//! - `txn-rmw`: `--txn-ops` transactions, each reading 4 distinct random accounts and
//!   adding 1 to the first two drawn.
//! - `txn-cas`: `--txn-ops` increments of one of `--txn-hot-keys` hot accounts (the
//!   first ones), each a loop of a plain read and a [`TxStore::compare_and_swap`] from
//!   the value read to that value plus 1, until one succeeds.
//!
//! Every transaction reads its keys in key order (so that the lock-based store cannot
//! deadlock). A refused attempt (a conflict, a lock timeout, a compare-and-swap that
//! found another value) is retried at once after `thread::yield_now`, up to
//! [`MAX_ATTEMPTS`] times, and counted as an abort. Throughput is committed operations
//! over the wall time from the first thread's start to the last one's end; latency is one
//! sample per committed operation, its retries included (the time since the same
//! thread's previous operation ended, as in [`crate::workload`]).
//!
//! Invariants, checked after the last workload on each store (the run fails loudly
//! otherwise): no account is absent; transfers move money and never make a balance
//! negative (checked in every transfer); and the sum of all accounts equals
//! `N × BALANCE + 2 × (committed txn-rmw) + (committed txn-cas)`.

use std::path::Path;
use std::thread;
use std::time::Instant;

use anyhow::{bail, Context as _};
use cairn_harness::latency::wall_time;
use cairn_harness::split::share;
use cairn_harness::{KeyFormat, Lap, Rng};
use hdrhistogram::Histogram;

use crate::data::{thread_rng, KEY_LEN};
use crate::report::Report;
use crate::row::{Labels, Row};
use crate::stores::{Attempt, Config, TxKind, TxStore};
use crate::workload::Outcome;

/// The bank-transfer workload's name.
pub const TRANSFER: &str = "txn-transfer";
/// The read-modify-write mix's name.
pub const RMW: &str = "txn-rmw";
/// The compare-and-swap loops' name.
pub const CAS: &str = "txn-cas";
/// The transaction workloads, in the order they run on one store.
pub const NAMES: [&str; 3] = [TRANSFER, RMW, CAS];

/// Every account's balance after the load.
pub const BALANCE: u64 = 1000;
/// Attempts of one operation before the run fails (a livelock, not a measurement).
pub const MAX_ATTEMPTS: u64 = 100_000;
/// Accounts per batch of the load.
const LOAD_BATCH: u64 = 1000;

/// The settings of the transaction workloads.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The named workloads, in their fixed order.
    pub workloads: Vec<&'static str>,
    /// Account counts; a fresh store (and process) per count.
    pub accounts: Vec<u64>,
    /// Thread counts, each running every workload.
    pub threads: Vec<usize>,
    /// Committed operations per workload and thread count.
    pub ops: u64,
    /// Hot accounts of `txn-cas`.
    pub hot_keys: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Cache of every store that has one, MiB.
    pub cache_mb: usize,
}

impl Settings {
    /// The workloads among `named` (any order; other names ignored), in their fixed order.
    pub fn pick(named: &[String]) -> Vec<&'static str> {
        NAMES
            .into_iter()
            .filter(|n| named.iter().any(|s| s == n))
            .collect()
    }
}

/// Runs every store (a fresh process each per account count) and adds their rows to
/// `report`; a store whose worker fails is recorded as failed and the run goes on.
pub fn run(settings: &Settings, kinds: &[TxKind], scratch: &Path, report: &mut Report) {
    for &accounts in &settings.accounts {
        for &kind in kinds {
            match spawn(settings, kind, accounts, scratch) {
                Ok(rows) => report.rows.extend(rows),
                Err(e) => report.failed(format!(
                    "{} transactions over {accounts} accounts: {e:#}",
                    kind.name()
                )),
            }
        }
    }
}

/// Runs one store's transaction workloads over `accounts` accounts in a fresh process of
/// this program and returns its rows.
fn spawn(
    settings: &Settings,
    kind: TxKind,
    accounts: u64,
    scratch: &Path,
) -> anyhow::Result<Vec<Row>> {
    let exe = std::env::current_exe().context("finding this program")?;
    let dir = scratch.join(format!("txn-{}-{accounts}", kind.name()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    crate::flush_os();
    let threads: Vec<String> = settings.threads.iter().map(|t| t.to_string()).collect();
    let output = std::process::Command::new(exe)
        .arg(format!("--txn-worker={}", kind.name()))
        .arg(format!("--txn-worker-accounts={accounts}"))
        .arg(format!("--txn-threads={}", threads.join(",")))
        .arg(format!("--txn-ops={}", settings.ops))
        .arg(format!("--txn-hot-keys={}", settings.hot_keys))
        .arg(format!("--workloads={}", settings.workloads.join(",")))
        .arg(format!("--cache-mb={}", settings.cache_mb))
        .arg(format!("--seed={}", settings.seed))
        .arg(format!("--dir={}", dir.display()))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running a transaction worker")?;
    let _ = std::fs::remove_dir_all(&dir);
    if !output.status.success() {
        bail!("the worker failed: {}", output.status);
    }
    let text = String::from_utf8(output.stdout).context("a worker's output")?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).with_context(|| format!("a worker's row: {l}")))
        .collect()
}

/// The key of account `i`.
fn key(i: u64) -> [u8; KEY_LEN] {
    let mut buf = [0u8; KEY_LEN];
    KeyFormat::Decimal.fill(i, &mut buf);
    buf
}

/// In the worker process: opens `kind` in the empty directory `dir`, loads `accounts`
/// accounts, runs the workloads for every thread count, checks the invariants and returns
/// the rows.
pub fn worker(
    settings: &Settings,
    kind: TxKind,
    accounts: u64,
    dir: &Path,
) -> anyhow::Result<Vec<Row>> {
    if accounts < 4 {
        bail!("the transaction workloads need at least 4 accounts");
    }
    let config = Config {
        cache_bytes: settings.cache_mb << 20,
        cairn_memtable_bytes: None,
        cairn_mmap_reads: false,
        cairn_compression: None,
    };
    let store = kind.open(dir, config)?;
    let mut i = 0;
    while i < accounts {
        let end = (i + LOAD_BATCH).min(accounts);
        let keys: Vec<[u8; KEY_LEN]> = (i..end).map(key).collect();
        let entries: Vec<(&[u8], u64)> = keys.iter().map(|k| (&k[..], BALANCE)).collect();
        store.load(&entries)?;
        i = end;
    }
    store.settle()?;
    let mut expected = u128::from(accounts) * u128::from(BALANCE);
    let mut rows = Vec::new();
    for (round, &threads) in settings.threads.iter().enumerate() {
        for (index, &w) in settings.workloads.iter().enumerate() {
            let run = Run {
                store: &*store,
                workload: w,
                accounts,
                threads,
                ops: settings.ops,
                hot_keys: settings.hot_keys.clamp(1, accounts),
                seed: settings.seed,
                index: (round * NAMES.len() + index) as u64,
            };
            let (outcome, aborts) = run
                .go()
                .with_context(|| format!("{} {w} with {threads} thread(s)", kind.name()))?;
            store.settle()?;
            expected += match w {
                RMW => 2 * u128::from(outcome.ops),
                CAS => u128::from(outcome.ops),
                _ => 0,
            };
            let attempts = outcome.ops + aborts;
            eprintln!(
                "  {:<20} {:<12} n={:<8} t={} {:>10.0} tx/s  aborts {:>6.2} %  p99 {:>9.1} us",
                kind.name(),
                w,
                accounts,
                threads,
                outcome.ops as f64 / outcome.elapsed.as_secs_f64().max(1e-9),
                100.0 * aborts as f64 / attempts.max(1) as f64,
                outcome.latency.value_at_quantile(0.99) as f64 / 1000.0
            );
            let labels = Labels {
                suite: "txn",
                store: kind.name(),
                config: kind.config(),
                durability: kind.durability(),
                workload: w.to_owned(),
                threads,
                num: accounts,
                value_size: 8,
                batch: match w {
                    TRANSFER => 2,
                    RMW => 4,
                    _ => 1,
                },
            };
            let mut row = Row::new(labels, &outcome, None);
            row.aborts = Some(aborts);
            rows.push(row);
        }
    }
    let total = total(&*store, accounts)?;
    if total != expected {
        bail!(
            "CORRECTNESS: {}: the accounts sum to {total}, expected {expected} \
             ({accounts} × {BALANCE}, plus the committed increments of txn-rmw and txn-cas)",
            kind.name()
        );
    }
    eprintln!(
        "  {}: {accounts} accounts sum to {total}, as expected",
        kind.name()
    );
    Ok(rows)
}

/// The sum of every account; fails if one is absent.
fn total(store: &dyn TxStore, accounts: u64) -> anyhow::Result<u128> {
    let mut sum = 0u128;
    for i in 0..accounts {
        let k = key(i);
        let v = store.read(&k)?.with_context(|| {
            format!(
                "CORRECTNESS: account {} is missing",
                String::from_utf8_lossy(&k)
            )
        })?;
        sum += u128::from(v);
    }
    Ok(sum)
}

/// One workload at one thread count on one store.
struct Run<'a> {
    store: &'a dyn TxStore,
    workload: &'static str,
    accounts: u64,
    threads: usize,
    ops: u64,
    hot_keys: u64,
    seed: u64,
    /// Numbers the workload within the worker, so repeated workloads draw other keys.
    index: u64,
}

/// One thread's counts.
struct Tally {
    commits: u64,
    aborts: u64,
    start: Instant,
    end: Instant,
    latency: Histogram<u64>,
}

impl Run<'_> {
    /// Runs the threads; returns the outcome (operations: commits) and the aborts.
    fn go(&self) -> anyhow::Result<(Outcome, u64)> {
        let tallies: Vec<anyhow::Result<Tally>> = thread::scope(|s| {
            let handles: Vec<_> = (0..self.threads)
                .map(|t| s.spawn(move || self.thread_body(t)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("a benchmark thread panicked")))
                })
                .collect()
        });
        let mut latency = cairn_harness::histogram().context("creating a histogram")?;
        let (mut commits, mut aborts) = (0, 0);
        let mut spans = Vec::with_capacity(tallies.len());
        for tally in tallies {
            let tally = tally?;
            commits += tally.commits;
            aborts += tally.aborts;
            latency.add(&tally.latency).context("merging histograms")?;
            spans.push((tally.start, tally.end));
        }
        let outcome = Outcome {
            ops: commits,
            elapsed: wall_time(spans),
            found: None,
            latency,
            write_latency: None,
        };
        Ok((outcome, aborts))
    }

    fn thread_body(&self, t: usize) -> anyhow::Result<Tally> {
        let mut rng = thread_rng(self.seed, self.index, t as u64);
        let start = Instant::now();
        let mut tally = Tally {
            commits: 0,
            aborts: 0,
            start,
            end: start,
            latency: cairn_harness::histogram().context("creating a histogram")?,
        };
        let mut clock = Lap::at(start);
        for _ in share(self.ops, t, self.threads) {
            let aborts = match self.workload {
                TRANSFER => self.transfer(&mut rng)?,
                RMW => self.rmw(&mut rng)?,
                _ => self.cas(&mut rng)?,
            };
            tally.latency.saturating_record(clock.lap());
            tally.commits += 1;
            tally.aborts += aborts;
        }
        tally.end = Instant::now();
        Ok(tally)
    }

    /// Runs `attempt` until it commits; returns the refused attempts.
    fn until_committed(
        &self,
        mut attempt: impl FnMut() -> anyhow::Result<Attempt>,
    ) -> anyhow::Result<u64> {
        let mut refused = 0;
        while attempt()? == Attempt::Conflict {
            refused += 1;
            if refused >= MAX_ATTEMPTS {
                bail!(
                    "{}: {MAX_ATTEMPTS} attempts of one operation were all refused",
                    self.workload
                );
            }
            thread::yield_now();
        }
        Ok(refused)
    }

    /// `k` distinct random accounts, in the order drawn.
    fn distinct(&self, rng: &mut Rng, k: usize) -> Vec<u64> {
        let mut drawn: Vec<u64> = Vec::with_capacity(k);
        while drawn.len() < k {
            let a = rng.below(self.accounts);
            if !drawn.contains(&a) {
                drawn.push(a);
            }
        }
        drawn
    }

    /// One bank transfer between two distinct random accounts.
    fn transfer(&self, rng: &mut Rng) -> anyhow::Result<u64> {
        let drawn = self.distinct(rng, 2);
        let (from, to) = match drawn.as_slice() {
            [a, b] => (*a, *b),
            _ => bail!("two accounts were not drawn"),
        };
        let amount = 1 + rng.below(100);
        // Read in key order; `from_index` is the payer's position.
        let (first, second, from_index) = if from < to {
            (from, to, 0)
        } else {
            (to, from, 1)
        };
        let (k1, k2) = (key(first), key(second));
        let keys: [&[u8]; 2] = [&k1, &k2];
        self.until_committed(|| {
            self.store.transact(&keys, &mut |values, writes| {
                let (Some(Some(a)), Some(Some(b))) = (values.first(), values.get(1)) else {
                    bail!("CORRECTNESS: a transfer found an account missing");
                };
                let (payer, payee) = if from_index == 0 { (*a, *b) } else { (*b, *a) };
                if payer >= amount {
                    let payee = payee
                        .checked_add(amount)
                        .context("CORRECTNESS: a balance overflowed")?;
                    writes.push((from_index, payer - amount));
                    writes.push((1 - from_index, payee));
                }
                Ok(())
            })
        })
    }

    /// Reads 4 distinct random accounts and adds 1 to the first two drawn.
    fn rmw(&self, rng: &mut Rng) -> anyhow::Result<u64> {
        let drawn = self.distinct(rng, 4);
        let mut sorted = drawn.clone();
        sorted.sort_unstable();
        let targets: Vec<usize> = drawn
            .iter()
            .take(2)
            .filter_map(|a| sorted.iter().position(|s| s == a))
            .collect();
        let keys: Vec<[u8; KEY_LEN]> = sorted.iter().map(|&a| key(a)).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        self.until_committed(|| {
            self.store.transact(&refs, &mut |values, writes| {
                for &i in &targets {
                    let Some(Some(v)) = values.get(i) else {
                        bail!("CORRECTNESS: txn-rmw found an account missing");
                    };
                    writes.push((i, v.checked_add(1).context("a counter overflowed")?));
                }
                Ok(())
            })
        })
    }

    /// Increments a random hot account with compare-and-swap, reading it again after
    /// every refusal.
    fn cas(&self, rng: &mut Rng) -> anyhow::Result<u64> {
        let k = key(rng.below(self.hot_keys));
        self.until_committed(|| {
            let v = self
                .store
                .read(&k)?
                .context("CORRECTNESS: txn-cas found a hot account missing")?;
            self.store.compare_and_swap(
                &k,
                Some(v),
                v.checked_add(1).context("a counter overflowed")?,
            )
        })
    }
}
