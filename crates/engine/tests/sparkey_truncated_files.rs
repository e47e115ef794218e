//! Truncated log and index files are refused with the exact typed error, never a panic.
//!
//! Every small vector's `.spl` and `.spi` is cut at every length (and every vector at a
//! sample of lengths). A cut inside a header gives `Reason::Truncated`; a cut after the
//! header but before the log's `data_end` or before the end of the slot table gives
//! `Reason::FileTooSmall` with the sizes; the error names the file kind and its path. A torn
//! log whose header was rewritten to the cut (`data_end` = the cut, as a crash between the
//! writes of a flush could leave it) iterates a prefix of the original entries and then
//! fails with a typed corruption error exactly when the cut is not on an entry (or block)
//! boundary.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod damage;

use cairn::hash::raw::build_index;
use cairn::hash::{EntryKind, IndexOptions, LogReader, Reader};
use cairn::{Error, FileKind, Reason};
use damage::*;

/// Header fields of each file in the order Cairn reads them (spec order: magic, versions,
/// then the rest), as (offset, width).
const LOG_FIELDS: [(u64, u64); 14] = [
    (0, 4),
    (4, 4),
    (8, 4),
    (64, 4),
    (12, 4),
    (16, 8),
    (24, 8),
    (32, 8),
    (40, 8),
    (48, 8),
    (56, 8),
    (68, 4),
    (72, 8),
    (80, 4),
];

fn index_fields() -> Vec<(u64, u64)> {
    vec![
        (0, 4),
        (4, 4),
        (8, 4),
        (12, 4),
        (16, 4),
        (20, 8),
        (28, 8),
        (36, 8),
        (44, 8),
        (52, 8),
        (60, 8),
        (68, 4),
        (72, 4),
        (76, 8),
        (84, 8),
        (92, 4),
        (96, 8),
        (104, 8),
    ]
}

/// The field a decoder reading fields in `order` cannot read from a file of `len` bytes.
fn first_missing(order: &[(u64, u64)], len: u64) -> u64 {
    order
        .iter()
        .find(|(off, w)| off + w > len)
        .map(|(off, _)| *off)
        .expect("some field is missing")
}

fn expect_corruption(
    r: Result<impl std::fmt::Debug, Error>,
    file: FileKind,
    path: &std::path::Path,
    ctx: &str,
) -> (u64, Reason) {
    let e = r.expect_err(ctx);
    let text = e.to_string();
    let Error::Corruption(c) = e else {
        panic!("{ctx}: expected corruption, got {e:?}")
    };
    assert_eq!(c.file, file, "{ctx}");
    assert_eq!(c.path, path, "{ctx}");
    assert!(
        text.contains(&path.display().to_string()),
        "{ctx}: {text} names the file"
    );
    (c.offset, c.reason)
}

/// Checks the log of `case` cut to `len` bytes (header untouched), alone and in its pair.
fn check_log_cut(s: &Scratch, case: &str, log: &[u8], index: &[u8], len: usize) {
    let ctx = format!("{case}.spl cut to {len}");
    s.write(&log[..len], index);
    let data_end = u64_at(log, 32);
    let len64 = len as u64;
    let want = if len64 < 84 {
        Some(Reason::Truncated)
    } else if len64 < data_end {
        Some(Reason::FileTooSmall {
            expected: data_end,
            actual: len64,
        })
    } else {
        None
    };
    match want {
        None => {
            let log_reader = LogReader::open(&s.log).unwrap();
            assert!(log_reader.iter().all(|e| e.is_ok()), "{ctx}");
            Reader::open(&s.index, &s.log).unwrap();
            cairn::hash::verify(&s.index, &s.log).unwrap();
        }
        Some(reason) => {
            // The log alone, the pair (the index header is fine, so the log is blamed) and
            // verify all report the same damage.
            let paths = [
                expect_corruption(LogReader::open(&s.log), FileKind::SparkeyLog, &s.log, &ctx),
                expect_corruption(
                    Reader::open(&s.index, &s.log),
                    FileKind::SparkeyLog,
                    &s.log,
                    &ctx,
                ),
                expect_corruption(
                    cairn::hash::verify(&s.index, &s.log),
                    FileKind::SparkeyLog,
                    &s.log,
                    &ctx,
                ),
            ];
            for (offset, got) in paths {
                assert_eq!(got, reason, "{ctx}");
                if reason == Reason::Truncated {
                    assert_eq!(
                        offset,
                        first_missing(&LOG_FIELDS, len64),
                        "{ctx}: offset of the missing field"
                    );
                } else {
                    assert_eq!(offset, len64, "{ctx}: offset of the end of file");
                }
            }
        }
    }
}

/// Checks the index of `case` cut to `len` bytes, with its intact log.
fn check_index_cut(s: &Scratch, case: &str, log: &[u8], index: &[u8], len: usize) {
    let ctx = format!("{case}.spi cut to {len}");
    s.write(log, &index[..len]);
    let len64 = len as u64;
    let need =
        112 + u64_at(index, 76) * (u64::from(u32_at(index, 68)) + u64::from(u32_at(index, 72)));
    assert_eq!(
        need,
        index.len() as u64,
        "{case}: vector index is exactly header + slots"
    );
    let want = if len64 < 112 {
        Some(Reason::Truncated)
    } else if len64 < need {
        Some(Reason::FileTooSmall {
            expected: need,
            actual: len64,
        })
    } else {
        None
    };
    match want {
        None => {
            Reader::open(&s.index, &s.log).unwrap();
            cairn::hash::verify(&s.index, &s.log).unwrap();
        }
        Some(reason) => {
            for (offset, got) in [
                expect_corruption(
                    Reader::open(&s.index, &s.log),
                    FileKind::SparkeyIndex,
                    &s.index,
                    &ctx,
                ),
                expect_corruption(
                    cairn::hash::verify(&s.index, &s.log),
                    FileKind::SparkeyIndex,
                    &s.index,
                    &ctx,
                ),
            ] {
                assert_eq!(got, reason, "{ctx}");
                if reason == Reason::Truncated {
                    assert_eq!(
                        offset,
                        first_missing(&index_fields(), len64),
                        "{ctx}: offset of the missing field"
                    );
                } else {
                    assert_eq!(offset, len64, "{ctx}");
                }
            }
            // The log itself is untouched and still reads.
            assert!(
                LogReader::open(&s.log).unwrap().iter().all(|e| e.is_ok()),
                "{ctx}"
            );
        }
    }
}

/// File offsets where a torn log may end cleanly: entry starts (uncompressed) or block
/// starts (compressed), including `data_end`.
fn clean_boundaries(case: &str, log: &[u8], truth: &Truth) -> Vec<u64> {
    let data_end = u64_at(log, 32);
    let mut out = vec![84];
    if u32_at(log, 64) == 0 {
        let mut at = 84;
        for size in truth.entry_sizes() {
            at += size;
            out.push(at);
        }
        assert_eq!(at, data_end, "{case}: entry sizes add up to data_end");
    } else {
        let mut at = 84u64;
        while at < data_end {
            let (mut len, mut shift, mut n) = (0u64, 0, 0usize);
            loop {
                let b = log[at as usize + n];
                len |= u64::from(b & 0x7f) << shift;
                shift += 7;
                n += 1;
                if b < 0x80 {
                    break;
                }
            }
            at += n as u64 + len;
            out.push(at);
        }
        assert_eq!(at, data_end, "{case}: blocks add up to data_end");
    }
    out
}

/// The log cut to `len` with its header's `data_end` rewritten to `len` (a torn tail the
/// header admits): iteration yields a prefix of the entries, and fails exactly when the cut
/// is not at a clean boundary; indexing it fails the same way; the old index no longer fits.
fn check_torn_tail(
    s: &Scratch,
    case: &str,
    log: &[u8],
    index: &[u8],
    truth: &Truth,
    bounds: &[u64],
    len: usize,
) {
    let ctx = format!("{case}.spl torn at {len}");
    let mut torn = log[..len].to_vec();
    set_u64(&mut torn, 32, len as u64);
    // Keep the counters within the new data_end (spec §3.2), as a flush would have.
    for off in [16, 24] {
        let n = u64_at(&torn, off).min(len as u64);
        set_u64(&mut torn, off, n);
    }
    s.write(&torn, index);
    let reader = LogReader::open(&s.log).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let mut got = Vec::new();
    let mut failure = None;
    for item in reader.iter() {
        match item {
            Ok(e) => got.push((e.kind == EntryKind::Put, e.key, e.value)),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    assert!(
        got.len() <= truth.log.len() && got[..] == truth.log[..got.len()],
        "{ctx}: entries are a prefix of the log"
    );
    let clean = bounds.contains(&(len as u64));
    let compressed = u32_at(log, 64) != 0;
    match &failure {
        None => assert!(
            clean,
            "{ctx}: a cut inside an entry or block must be reported"
        ),
        Some(e) => {
            let c = e.as_corruption().unwrap_or_else(|| panic!("{ctx}: {e:?}"));
            assert_eq!(c.file, FileKind::SparkeyLog, "{ctx}");
            assert!(
                e.to_string().contains(&s.log.display().to_string()),
                "{ctx}"
            );
            // Uncompressed: a clean cut never fails and a dirty one fails with Truncated.
            // Compressed: a cut inside a block is always caught; at a block boundary an
            // entry may still span the cut.
            if !compressed {
                assert!(!clean, "{ctx}: clean cut reported {e}");
                assert_eq!(c.reason, Reason::Truncated, "{ctx}");
            } else if clean {
                assert_eq!(c.reason, Reason::Truncated, "{ctx}");
            } else {
                assert!(
                    matches!(c.reason, Reason::Truncated | Reason::LengthOutOfRange),
                    "{ctx}: {e}"
                );
            }
        }
    }
    if !compressed && clean {
        assert_eq!(
            got.len(),
            bounds.iter().position(|b| *b == len as u64).unwrap(),
            "{ctx}: all whole entries"
        );
    }
    // Indexing the torn log succeeds exactly when iterating it does.
    let built = build_index(&reader, &s.index, &IndexOptions::default().seed(7), None);
    assert_eq!(
        built.is_ok(),
        failure.is_none(),
        "{ctx}: build_index {:?}",
        built.err()
    );
    // The old index covers more than the torn log holds.
    if (len as u64) < u64_at(log, 32) {
        let e = Reader::open(&s.index, &s.log).unwrap_err();
        assert!(
            matches!(
                e.as_corruption().map(|c| (&c.file, &c.reason)),
                Some((
                    FileKind::SparkeyIndex,
                    Reason::HeaderField {
                        field: "data_end",
                        ..
                    }
                ))
            ),
            "{ctx}: {e}"
        );
    }
}

fn all_lengths(case: &str) {
    let (log, index) = (vector(case, "spl"), vector(case, "spi"));
    let truth = Truth::load(case);
    let bounds = clean_boundaries(case, &log, &truth);
    let s = Scratch::new(case);
    for len in 0..=log.len() {
        check_log_cut(&s, case, &log, &index, len);
    }
    for len in 0..=index.len() {
        check_index_cut(&s, case, &log, &index, len);
    }
    for len in 84..=log.len() {
        check_torn_tail(&s, case, &log, &index, &truth, &bounds, len);
    }
}

#[test]
fn basic_cut_at_every_length() {
    all_lengths("basic");
}

#[test]
fn deletes_cut_at_every_length() {
    all_lengths("deletes");
}

#[test]
fn snappy_bs16_cut_at_every_length() {
    all_lengths("snappy_bs16");
}

#[cfg(feature = "zstd")]
#[test]
fn zstd_bs512_cut_at_every_length() {
    all_lengths("zstd_bs512");
}

#[test]
fn hash64_small_cut_at_every_length() {
    all_lengths("hash64_small");
}

#[test]
fn tiny_vectors_cut_at_every_length() {
    for case in ["empty", "single_put", "overwrite", "multi_session"] {
        all_lengths(case);
    }
}

#[test]
fn binary_edge_cut_at_every_length() {
    all_lengths("binary_edge");
}

/// Every vector, including the large ones, at the header lengths, around every boundary
/// that matters and at pseudo-random lengths.
#[test]
fn every_vector_cut_at_sampled_lengths() {
    for case in ALL.into_iter().filter(|c| readable(c)) {
        let (log, index) = (vector(case, "spl"), vector(case, "spi"));
        let truth = Truth::load(case);
        let bounds = clean_boundaries(case, &log, &truth);
        let s = Scratch::new(case);
        let mut rng = Lcg(0xC0FFEE ^ log.len() as u64);
        let sample = |len: usize, rng: &mut Lcg| -> Vec<usize> {
            let mut v: Vec<usize> = (0..=120.min(len)).collect();
            v.extend([len.saturating_sub(1), len]);
            v.extend((0..60).map(|_| rng.below(len as u64 + 1) as usize));
            v
        };
        for len in sample(log.len(), &mut rng) {
            check_log_cut(&s, case, &log, &index, len);
        }
        for len in sample(index.len(), &mut rng) {
            check_index_cut(&s, case, &log, &index, len);
        }
        let mut torn: Vec<usize> = bounds
            .iter()
            .take(20)
            .flat_map(|b| [*b as usize, *b as usize + 1])
            .collect();
        torn.extend((0..40).map(|_| 84 + rng.below(log.len() as u64 - 83) as usize));
        for len in torn.into_iter().filter(|l| (84..=log.len()).contains(l)) {
            check_torn_tail(&s, case, &log, &index, &truth, &bounds, len);
        }
    }
}
