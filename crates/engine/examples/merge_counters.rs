//! Counters three ways on the same keys: `merge` with the `AddI64` operator (writes an
//! operand, reads nothing), `incr` (the write leader reads the current value, then writes
//! the sum) and `fetch_update` (a transaction: read, then a checked write). Prints the
//! throughput of each, side by side, and checks that all three agree on the totals.
//!
//! ```sh
//! cargo run --release -p cairn --example merge_counters [DIR]
//! ```
//!
//! Each variant gets its own keyspace of `KEYS` counters, loaded first and compacted into
//! tables, so a read of a counter goes to the tables as in a store larger than its
//! memtable; then `OPS` updates of random counters (`+1`), in three rounds interleaved
//! across the variants to spread machine noise. Durability `None` for all three: the
//! comparison is of the work per update, not of fsync. The store goes in DIR if given
//! (emptied first), else in a temporary directory.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn::{AddI64, Db, Durability, Keyspace, KeyspaceOptions, Options};

const KEYS: u64 = 200_000;
const OPS: u64 = 200_000;
const ROUNDS: usize = 3;

/// A xorshift generator: the same sequence on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"counter-00000000";
    k[8..].copy_from_slice(format!("{i:08}").as_bytes());
    k
}

#[derive(Clone, Copy, Debug)]
enum Variant {
    Merge,
    Incr,
    FetchUpdate,
}

fn run(ks: &Keyspace, variant: Variant, seed: u64) -> cairn::Result<Duration> {
    let mut rng = Rng(seed);
    let start = Instant::now();
    for _ in 0..OPS {
        let k = key(rng.next() % KEYS);
        match variant {
            Variant::Merge => ks.merge(k, "1")?,
            Variant::Incr => {
                ks.incr(k, 1)?;
            }
            Variant::FetchUpdate => {
                ks.fetch_update(k, |v| {
                    let n: i64 = v
                        .and_then(|v| std::str::from_utf8(v).ok())
                        .and_then(|t| t.parse().ok())
                        .unwrap_or(0);
                    Some((n + 1).to_string().into_bytes())
                })?;
            }
        }
    }
    Ok(start.elapsed())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let temp;
    let dir = match std::env::args().nth(1) {
        Some(d) => {
            let _ = std::fs::remove_dir_all(&d);
            std::path::PathBuf::from(d)
        }
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_path_buf()
        }
    };
    let db = Db::open(
        &dir,
        Options::default()
            .durability(Durability::None)
            .memtable_size(4 << 20),
    )?;
    let variants = [Variant::Merge, Variant::Incr, Variant::FetchUpdate];
    let mut spaces = Vec::new();
    for v in variants {
        let opts = KeyspaceOptions::default().merge_operator(Arc::new(AddI64));
        let ks = db.keyspace_with(&format!("{v:?}"), opts)?;
        let mut batch = db.batch();
        for i in 0..KEYS {
            batch.insert(&ks, key(i), "0");
            if batch.len() == 1000 {
                batch.commit()?;
                batch = db.batch();
            }
        }
        batch.commit()?;
        spaces.push((v, ks, Duration::ZERO));
    }
    db.flush()?;
    db.compact()?;

    for round in 0..ROUNDS {
        for (v, ks, total) in spaces.iter_mut() {
            let took = run(ks, *v, 7 + round as u64)?;
            *total += took;
            println!(
                "round {round} {:<12} {:>10.0} updates/s",
                format!("{v:?}"),
                OPS as f64 / took.as_secs_f64()
            );
        }
    }
    println!("\n{KEYS} counters, {OPS} random +1 updates x {ROUNDS} rounds, durability None");
    println!("{:<12} {:>12} {:>10}", "variant", "updates/s", "vs incr");
    let updates = (OPS * ROUNDS as u64) as f64;
    let incr_total = spaces
        .iter()
        .find(|(v, _, _)| matches!(v, Variant::Incr))
        .map_or(Duration::ZERO, |(_, _, t)| *t);
    let incr_rate = updates / incr_total.as_secs_f64();
    for (v, _, total) in &spaces {
        let rate = updates / total.as_secs_f64();
        println!(
            "{:<12} {:>12.0} {:>9.2}x",
            format!("{v:?}"),
            rate,
            rate / incr_rate
        );
    }
    // The three agree: every counter holds the same value in each keyspace.
    let sums: Vec<i64> = spaces
        .iter()
        .map(|(_, ks, _)| {
            ks.iter()
                .map(|r| {
                    r.map(|(_, v)| {
                        std::str::from_utf8(&v)
                            .ok()
                            .and_then(|t| t.parse::<i64>().ok())
                            .unwrap_or(i64::MIN)
                    })
                })
                .sum::<cairn::Result<i64>>()
        })
        .collect::<cairn::Result<_>>()?;
    println!("sum of counters per variant: {sums:?}");
    if sums.iter().any(|s| *s != (OPS * ROUNDS as u64) as i64) {
        return Err("the variants disagree".into());
    }
    db.close()?;
    Ok(())
}
