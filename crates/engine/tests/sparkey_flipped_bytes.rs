//! Flipped bytes in a log or an index never cause a panic, a hang or an untyped error, and
//! damaged header fields are reported precisely.
//!
//! For each small vector (none / snappy / zstd, 32- and 64-bit hashes), every byte of the
//! `.spl` and of the `.spi` is flipped (xor 0xFF), and every single bit of both headers.
//! For each damaged pair the test opens the log and iterates it, opens the pair, looks up
//! every key the log ever held (and some it never held), runs the live-entry iterator and
//! `hash::verify`, each case under a 5 s time bound. Every error must be typed as damage
//! (`Corruption`, `UnsupportedVersion`, `IdentifierMismatch`) and name the file.
//!
//! Sparkey has no checksums, so a flipped key or value byte in the log can legitimately
//! change what a lookup returns; for those only termination and typing are asserted. What is
//! asserted precisely:
//! * header damage: opening fails with exactly the error(s) the format's validation rules
//!   (spec §3.2, §4.3, Cairn's stricter checks) prescribe for the damaged value, and header
//!   counters that opening cannot check are caught by `verify` naming the field; statistics
//!   fields that nothing depends on are harmless (everything still reads correctly);
//! * index slot damage: a lookup never returns a value that was never stored under that key;
//!   a damaged hash of an occupied slot, or a non-zero address in an empty slot, always
//!   fails `verify`; a damaged hash of an empty slot is harmless.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod damage;

use std::fmt;
use std::sync::Arc;

use cairn::FileKind;
use damage::*;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Log,
    Index,
}

#[derive(Clone, Copy)]
struct Case {
    target: Target,
    offset: usize,
    mask: u8,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = if self.target == Target::Log {
            "spl"
        } else {
            "spi"
        };
        write!(f, "{file} byte {} ^= {:#04x}", self.offset, self.mask)
    }
}

struct Vector {
    name: &'static str,
    log: Vec<u8>,
    index: Vec<u8>,
    truth: Truth,
    scratch: Scratch,
}

/// Log header fields: (offset, width, name).
const LOG_FIELDS: [(usize, usize, &str); 14] = [
    (0, 4, "magic"),
    (4, 4, "major"),
    (8, 4, "minor"),
    (12, 4, "file_identifier"),
    (16, 8, "num_puts"),
    (24, 8, "num_deletes"),
    (32, 8, "data_end"),
    (40, 8, "max_key_len"),
    (48, 8, "max_value_len"),
    (56, 8, "delete_size"),
    (64, 4, "compression_type"),
    (68, 4, "compression_block_size"),
    (72, 8, "put_size"),
    (80, 4, "max_entries_per_block"),
];

/// Index header fields: (offset, width, name).
const INDEX_FIELDS: [(usize, usize, &str); 18] = [
    (0, 4, "magic"),
    (4, 4, "major"),
    (8, 4, "minor"),
    (12, 4, "file_identifier"),
    (16, 4, "hash_seed"),
    (20, 8, "data_end"),
    (28, 8, "max_key_len"),
    (36, 8, "max_value_len"),
    (44, 8, "num_puts"),
    (52, 8, "garbage_size"),
    (60, 8, "num_entries"),
    (68, 4, "address_size"),
    (72, 4, "hash_size"),
    (76, 8, "hash_capacity"),
    (84, 8, "max_displacement"),
    (92, 4, "entry_block_bits"),
    (96, 8, "hash_collisions"),
    (104, 8, "total_displacement"),
];

fn field_at(fields: &[(usize, usize, &'static str)], offset: usize) -> &'static str {
    fields
        .iter()
        .find(|(o, w, _)| (*o..o + w).contains(&offset))
        .map(|f| f.2)
        .unwrap()
}

fn assert_harmless(v: &Vector, out: &Outcome, ctx: &str) {
    assert!(
        out.is_intact(&v.truth),
        "{ctx}: harmless damage must not change anything; errors {:?}",
        out.errors()
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
}

/// Expectations for a damaged log header byte.
fn check_log_header(v: &Vector, bad: &[u8], c: &Case, out: &Outcome) {
    let ctx = format!("{}: {c:?} ({})", v.name, field_at(&LOG_FIELDS, c.offset));
    let field = field_at(&LOG_FIELDS, c.offset);
    let faults = log_header_faults(bad, bad.len() as u64);
    assert_fault(&out.log_open, &faults, &ctx);
    let pair = open_faults(&v.index, v.index.len() as u64, bad, bad.len() as u64);
    assert_fault(&out.pair_open, &pair, &ctx);
    if !pair.is_empty() {
        assert_fault(&out.verify, &pair, &format!("{ctx} (verify)"));
        return;
    }
    // The header opened: fields the reader does not use are caught by verify, by name.
    let compressed = u32_at(&v.log, 64) != 0;
    let log = FileKind::SparkeyLog;
    match field {
        "num_puts" | "num_deletes" | "put_size" | "delete_size" | "max_key_len"
        | "max_value_len" => {
            assert_fault(&out.verify, &[Kind::Field(log, field)], &ctx);
            assert!(
                out.gets
                    .iter()
                    .all(|(k, r)| matches!(r, Ok(x) if x.as_ref() == v.truth.live.get(k))),
                "{ctx}: lookups unaffected"
            );
        }
        "max_entries_per_block" if compressed => {
            // Lowering it below what a block holds is caught; raising it is harmless.
            if u32_at(bad, 80) < u32_at(&v.log, 80) {
                assert_fault(&out.verify, &[Kind::Field(log, field)], &ctx);
            } else {
                assert_harmless(v, out, &ctx);
            }
        }
        "max_entries_per_block" | "compression_block_size" if !compressed => {
            assert_harmless(v, out, &ctx)
        }
        // data_end lowered, another compression type, another block size: the entry stream
        // is read differently; only termination and typed errors are required.
        _ => {}
    }
}

/// Expectations for a damaged index header byte.
fn check_index_header(v: &Vector, bad: &[u8], c: &Case, out: &Outcome) {
    let field = field_at(&INDEX_FIELDS, c.offset);
    let ctx = format!("{}: {c:?} ({field})", v.name);
    let pair = open_faults(bad, bad.len() as u64, &v.log, v.log.len() as u64);
    assert_fault(&out.pair_open, &pair, &ctx);
    assert!(
        out.log_open.is_ok() && out.log_iter.as_ref().is_some_and(|(_, e)| e.is_none()),
        "{ctx}: log unaffected"
    );
    if !pair.is_empty() {
        assert_fault(&out.verify, &pair, &format!("{ctx} (verify)"));
        return;
    }
    let compressed = u32_at(&v.log, 64) != 0;
    match field {
        // Statistics, bounds that only need to be no larger than the truth, and the minor
        // version (0 and 1 share a layout): nothing reads them.
        "minor" | "max_key_len" | "max_value_len" | "num_puts" | "garbage_size"
        | "max_displacement" | "hash_collisions" | "total_displacement" => {
            assert_harmless(v, out, &ctx)
        }
        "entry_block_bits" if !compressed => assert_harmless(v, out, &ctx),
        "hash_seed" => {
            let e = out.verify.as_ref().expect_err(&ctx);
            let c = e.as_corruption().unwrap_or_else(|| panic!("{ctx}: {e}"));
            assert_eq!(c.file, FileKind::SparkeyIndex, "{ctx}: {e}");
        }
        "num_entries" => assert_fault(
            &out.verify,
            &[Kind::Field(FileKind::SparkeyIndex, "num_entries")],
            &ctx,
        ),
        // A smaller data_end or capacity, other entry bits: lookups go elsewhere.
        _ => {}
    }
}

/// Expectations for a damaged slot-table byte.
fn check_slot(v: &Vector, c: &Case, out: &Outcome) {
    let ctx = format!("{}: {c:?}", v.name);
    let hash_size = u32_at(&v.index, 72) as usize;
    let width = hash_size + u32_at(&v.index, 68) as usize;
    let slot = (c.offset - 112) / width;
    let in_slot = (c.offset - 112) % width;
    let start = 112 + slot * width;
    let occupied = v.index[start + hash_size..start + width]
        .iter()
        .any(|b| *b != 0);
    let in_hash = in_slot < hash_size;
    match (occupied, in_hash) {
        (false, true) => assert_harmless(v, out, &format!("{ctx} (hash of an empty slot)")),
        (false, false) | (true, true) => {
            let e = out.verify.as_ref().expect_err(&ctx);
            let cor = e.as_corruption().unwrap_or_else(|| panic!("{ctx}: {e}"));
            assert_eq!(cor.file, FileKind::SparkeyIndex, "{ctx}: {e}");
        }
        // An address can land on an older PUT of the same key (a stale but stored value);
        // Sparkey cannot tell. Covered by the history check below.
        (true, false) => {}
    }
}

fn check_case(v: &Vector, c: &Case) {
    let (mut log, mut index) = (v.log.clone(), v.index.clone());
    let bad = if c.target == Target::Log {
        &mut log
    } else {
        &mut index
    };
    bad[c.offset] ^= c.mask;
    v.scratch.write(&log, &index);
    let out = exercise(&v.scratch, &v.truth);
    let ctx = format!("{}: {c:?}", v.name);
    for e in out.errors() {
        assert_typed(e, &v.scratch, &ctx);
    }
    // A lookup either finds a value stored under that key at some point, finds nothing,
    // or fails; with an intact log it never invents a value.
    if c.target == Target::Index {
        for (k, r) in &out.gets {
            if let Ok(Some(val)) = r {
                assert!(
                    v.truth.history.get(k).is_some_and(|h| h.contains(val)),
                    "{ctx}: invented value for {k:?}"
                );
            }
        }
    }
    match (c.target, c.offset) {
        (Target::Log, o) if o < 84 => check_log_header(v, &log, c, &out),
        (Target::Index, o) if o < 112 => check_index_header(v, &index, c, &out),
        (Target::Index, _) => check_slot(v, c, &out),
        (Target::Log, _) => {
            // Entry data: the index header still matches the log header.
            assert!(
                out.log_open.is_ok() && out.pair_open.is_ok(),
                "{ctx}: headers are intact"
            );
        }
    }
}

fn load(name: &'static str) -> Vector {
    let v = Vector {
        name,
        log: vector(name, "spl"),
        index: vector(name, "spi"),
        truth: Truth::load(name),
        scratch: Scratch::new(name),
    };
    // The undamaged pair is intact, so every difference below comes from the damage.
    v.scratch.write(&v.log, &v.index);
    assert!(
        exercise(&v.scratch, &v.truth).is_intact(&v.truth),
        "{name}: vector reads back"
    );
    v
}

fn run(name: &'static str, target: Target) {
    let v = Arc::new(load(name));
    let len = if target == Target::Log {
        v.log.len()
    } else {
        v.index.len()
    };
    let header = if target == Target::Log { 84 } else { 112 };
    let mut cases: Vec<Case> = (0..len)
        .map(|offset| Case {
            target,
            offset,
            mask: 0xFF,
        })
        .collect();
    cases.extend((0..header).flat_map(|offset| {
        (0..8).map(move |bit| Case {
            target,
            offset,
            mask: 1 << bit,
        })
    }));
    let label = format!(
        "{name} {}",
        if target == Target::Log {
            "log"
        } else {
            "index"
        }
    );
    run_bounded(&label, cases, move |c| check_case(&v, c));
}

macro_rules! flip_tests {
    ($($(#[$attr:meta])* $name:ident => $case:literal,)*) => {
        mod log {
            use super::*;
            $($(#[$attr])* #[test] fn $name() { run($case, Target::Log); })*
        }
        mod index {
            use super::*;
            $($(#[$attr])* #[test] fn $name() { run($case, Target::Index); })*
        }
    };
}

flip_tests! {
    basic => "basic",
    deletes => "deletes",
    binary_edge => "binary_edge",
    snappy_bs16 => "snappy_bs16",
    #[cfg(feature = "zstd")]
    zstd_bs512 => "zstd_bs512",
    hash64_small => "hash64_small",
}
