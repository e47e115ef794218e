//! Where a store's bytes are after the peer suite's write workloads, and how background
//! work reclaims deleted data: fillrandom, overwrite (batches of 1000), putrandom (single
//! puts) and deleterandom (batches of 1000) over `NUM` 16-byte keys with 100-byte values
//! that compress to about half, printing `Db::space_stats` and `Db::stats` after each, then
//! every 250 ms for 10 s with no call but reads of the statistics.
//!
//! ```sh
//! cargo run --release -p cairn --example space_after_deletes -- DIR [NUM]
//! ```

use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};

use cairn::{Db, Durability, Options};

/// xorshift64: the keys and values need no better.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn key(i: u64) -> String {
    format!("{i:016}")
}

/// Bytes of every file in `dir`.
fn dir_len(dir: &Path) -> Result<u64, Box<dyn Error>> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        total += entry?.metadata()?.len();
    }
    Ok(total)
}

fn report(db: &Db, dir: &Path, label: &str) -> Result<(), Box<dyn Error>> {
    let space = db.space_stats()?;
    let stats = db.stats();
    println!(
        "{label}: dir {:.1} MB; tables {:.1} MB, WAL {:.1} MB; tables per level {:?}; \
         flushes {}, compactions {}",
        dir_len(dir)? as f64 / 1e6,
        space.table_bytes as f64 / 1e6,
        space.wal_bytes as f64 / 1e6,
        stats.tables_per_level,
        stats.flushes,
        stats.compactions
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: space_after_deletes DIR [NUM]")?;
    let dir = Path::new(&dir);
    let num: u64 = args.next().map_or(Ok(1_000_000), |s| s.parse())?;
    if dir.exists() {
        return Err(format!("{} exists; give a new directory", dir.display()).into());
    }
    let db = Db::open(
        dir,
        Options::default()
            .durability(Durability::Buffered)
            .blob_threshold(Some(4 << 10)),
    )?;
    let ks = db.keyspace("bench")?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // 50 random printable bytes written twice, as db_bench's values.
    let mut values = Vec::new();
    while values.len() < (1 << 20) {
        let half: Vec<u8> = (0..50).map(|_| b' ' + rng.below(95) as u8).collect();
        values.extend_from_slice(&half);
        values.extend_from_slice(&half);
    }
    let mut at = 0;
    let mut next_value = move || {
        if at + 100 > values.len() {
            at = 0;
        }
        at += 100;
        values
            .get(at - 100..at)
            .map(<[u8]>::to_vec)
            .unwrap_or_default()
    };
    let mut order: Vec<u64> = (0..num).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for name in ["fillrandom", "overwrite", "putrandom", "deleterandom"] {
        let started = Instant::now();
        if name == "putrandom" {
            for _ in 0..num {
                ks.insert(key(rng.below(num)), next_value())?;
            }
        } else {
            for chunk in order.chunks(1000) {
                let mut batch = db.batch();
                for &k in chunk {
                    let k = if name == "fillrandom" {
                        k
                    } else {
                        rng.below(num)
                    };
                    if name == "deleterandom" {
                        batch.remove(&ks, key(k));
                    } else {
                        batch.insert(&ks, key(k), next_value());
                    }
                }
                batch.commit()?;
            }
        }
        let label = format!("{name} ({:.1} s)", started.elapsed().as_secs_f64());
        report(&db, dir, &label)?;
    }
    for step in 1..=40u64 {
        std::thread::sleep(Duration::from_millis(250));
        report(&db, dir, &format!("  +{} ms", step * 250))?;
    }
    db.close()?;
    println!("closed: dir {:.1} MB", dir_len(dir)? as f64 / 1e6);
    Ok(())
}
