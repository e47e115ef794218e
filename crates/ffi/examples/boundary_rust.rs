//! The Rust half of the C-boundary benchmark (`bench/boundary.sh`): the same loops as
//! `bench/boundary.c` through the Rust API, so the difference is the cost of the C API.
//!
//! Usage: boundary_rust DIR [COUNT]. Prints one line per phase: name, operations, CPU
//! seconds of the loop's thread, nanoseconds per operation.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use engine::{Db, Durability, Options};

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key-000000000000";
    let mut n = i;
    for b in k.iter_mut().rev().take(12) {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
    k
}

/// The permutation of `0..count` both programs read in: `i * 7919 mod count` (count not a
/// multiple of 7919).
fn order(i: u64, count: u64) -> u64 {
    (i * 7919) % count
}

/// CPU time of the calling thread, in seconds (as `bench/boundary.c` measures).
fn now() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` through a pointer to a valid local.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn report(name: &str, count: u64, start: f64) {
    let secs = now() - start;
    println!(
        "{name:<10} {count} ops {secs:.3} s cpu {:.0} ns/op",
        secs * 1e9 / count as f64
    );
}

fn main() -> engine::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).expect("usage: boundary_rust DIR [COUNT]");
    let count: u64 = args.get(2).map_or(1_000_000, |c| c.parse().unwrap());
    let options = Options::default()
        .durability(Durability::None)
        .memtable_size(256 << 20)
        .max_wal_size(1 << 30);
    let db = Db::open(dir, options)?;
    let ks = db.keyspace("bench")?;
    let value = [b'v'; 100];

    let start = now();
    for i in 0..count {
        ks.insert(key(i), value)?;
    }
    report("put", count, start);

    let mut found = 0u64;
    let start = now();
    for i in 0..count {
        if let Some(v) = ks.get(key(order(i, count)))? {
            found += v.len() as u64;
        }
    }
    report("get", count, start);
    assert_eq!(found, count * 100);

    // The Rust counterpart of `cairn_get_into`: one reused buffer.
    let mut found = 0u64;
    let mut buf = Vec::with_capacity(128);
    let start = now();
    for i in 0..count {
        if ks.get_into(key(order(i, count)), &mut buf)? {
            found += buf.len() as u64;
        }
    }
    report("get_into", count, start);
    assert_eq!(found, count * 100);

    let empty = db.keyspace("empty")?;
    let start = now();
    for i in 0..count {
        assert!(empty.get(key(i))?.is_none());
    }
    report("get_miss", count, start);

    let start = now();
    for i in 0..count {
        assert!(!empty.get_into(key(i), &mut buf)?);
    }
    report("get_into_miss", count, start);
    db.close()
}
