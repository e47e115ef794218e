//! Damage to the store's own files (plan layer T7): a finished store on [`MemFs`] with data
//! in the WAL, in level-0 and level-1 tables and in a manifest of several edits; then,
//! for each of its files, flipped bytes (every byte of small files, a sample of larger
//! ones) and truncations. Opening, full scans both ways and point reads of every key must
//! give the right data or a typed corruption error, never other data, another error or a
//! panic.
//!
//! Allowed losses, by the WAL's torn-tail rule: damage inside the last record of the last
//! WAL file, or a truncation of that file, looks exactly like a write torn by a crash, so
//! recovery may drop the records from there on (and only those). Damage followed by valid
//! records must be refused.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::*;
use crate::error::FileKind;
use crate::files::FileType;
use crate::fs::{read_all, CrashOptions};
use crate::wal;

/// Files up to this size get every byte flipped; larger ones a sample of about as many
/// offsets, plus every byte of their last 80 (footers and last records).
const FLIP_ALL_UP_TO: usize = 600;

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Writes `keys` (numbers) to `ks` with values tagged `round`, as one batch.
fn batch(ks: &'static str, keys: impl Iterator<Item = u32>, round: u32) -> Step {
    Step::Batch(
        keys.map(|k| {
            let key = leak(format!("key{k:03}"));
            let value = leak(format!("value-{round}-{k}-{}", "v".repeat(20)));
            (ks, key, Some(value))
        })
        .collect(),
    )
}

/// How the store's last moments go, so the last manifest edit and the WAL differ.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// Writes after the last flush: the WAL holds records.
    WalRecords,
    /// A flush last: the WAL is empty, the last manifest edit adds a level-0 table.
    Flushed,
    /// A compaction last: the last manifest edit swaps level-0 tables for level-1 ones.
    Compacted,
}

fn golden_steps(ending: Ending) -> Vec<Step> {
    use Step::*;
    let mut steps = vec![
        CreateKs("other"),
        batch("default", 0..24, 0),
        batch("other", 0..12, 0),
        Flush,
        batch("default", 12..30, 1),
        Del("default", "key003"),
        Batch(vec![("default", "key004", None), ("other", "key005", None)]),
        Flush,
        Compact,
        batch("default", 20..34, 2),
        Del("default", "key013"),
        batch("other", 6..16, 2),
        Flush,
    ];
    match ending {
        Ending::WalRecords => steps.extend([
            batch("default", 30..36, 3),
            Del("default", "key021"),
            Batch(vec![
                ("default", "key001", Some("cross")),
                ("other", "key001", Some("cross")),
            ]),
            Put("other", "key100", "last"),
        ]),
        Ending::Flushed => {}
        Ending::Compacted => steps.extend([batch("default", 28..40, 4), Flush, Compact]),
    }
    steps
}

/// A finished store (closed, so nothing is left unsynced) and its model.
fn golden(ending: Ending) -> (MemFs, Model) {
    let fs = new_fs();
    let mut d = Driver::new(Arc::new(fs.clone()), options(Durability::Sync), None);
    d.open().unwrap();
    for step in golden_steps(ending) {
        d.step(&step).unwrap();
    }
    let stats = d.db().unwrap().stats();
    let compactions = if matches!(ending, Ending::Compacted) {
        3
    } else {
        2
    };
    assert_eq!(stats.compactions, compactions, "{stats:?}");
    assert!(
        stats.tables_per_level[0] > 0 && stats.tables_per_level[1] > 0,
        "{stats:?}"
    );
    d.close().unwrap();
    (fs.crash_with(CrashOptions::KeepAll), d.model)
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    Flip { offset: usize, mask: u8 },
    Truncate { len: usize },
}

/// What one damaged store did.
#[derive(Debug)]
enum Verdict {
    /// Right data everywhere (the damage was harmless).
    Correct,
    /// A typed corruption error; `named`: it names the damaged file and its kind.
    Detected {
        named: bool,
    },
    /// The WAL's torn-tail rule dropped the damaged record and those after it.
    TornTail,
    Wrong(String),
}

fn classify(e: &Error, file: &Path, kind: FileKind) -> Verdict {
    match e {
        Error::Corruption(c) => Verdict::Detected {
            named: c.path == file && c.file == kind,
        },
        Error::UnsupportedVersion {
            file: k, path: p, ..
        } => Verdict::Detected {
            named: p == file && *k == kind,
        },
        other => Verdict::Wrong(format!("not a corruption error: {other}")),
    }
}

/// Opens `fs` and reads everything; the contents must be `full`, or `torn` if given.
fn probe(
    fs: MemFs,
    model: &Model,
    full: &Contents,
    torn: Option<usize>,
    file: &Path,
    kind: FileKind,
) -> Verdict {
    let db = match Db::open_with_fs(Arc::new(fs), &dir(), options(Durability::Sync)) {
        Ok(db) => db,
        Err(e) => return classify(&e, file, kind),
    };
    let got = match read_contents(&db) {
        Ok(c) => c,
        Err(e) => return classify(&e, file, kind),
    };
    let all = model.writes.len();
    let last = db.last_seqno();
    let verdict = if got == *full && last == model.seqno_after(all) {
        Verdict::Correct
    } else if torn
        .is_some_and(|j| got == model.state(j, model.ks_ops.len()) && last == model.seqno_after(j))
    {
        Verdict::TornTail
    } else {
        return Verdict::Wrong(format!("read [{}] at seqno {last}", show(&got)));
    };
    match check_gets(&db, model, &got) {
        Ok(Ok(())) => verdict,
        Ok(Err(msg)) => Verdict::Wrong(msg),
        Err(e) => classify(&e, file, kind),
    }
}

/// The file kind of a store file name (`None`: not the store's, e.g. `LOCK`).
fn kind_of(name: &str) -> Option<FileKind> {
    if FileType::Wal.parse(name).is_some() {
        Some(FileKind::Wal)
    } else if crate::files::FileType::Table.parse(name).is_some() {
        Some(FileKind::Table)
    } else if name == "CURRENT" || crate::files::FileType::Manifest.parse(name).is_some() {
        Some(FileKind::Manifest)
    } else {
        None
    }
}

/// A WAL record's start and end offsets and its write's index in the model.
type RecordSpan = (u64, u64, usize);

/// For the last WAL file: its name and its records (recovery may lose the writes from a
/// damaged last record, or a cut, on).
fn wal_records(fs: &MemFs, names: &[String], model: &Model) -> Option<(String, Vec<RecordSpan>)> {
    let last = names
        .iter()
        .filter(|n| FileType::Wal.parse(n).is_some())
        .max()?;
    let path = dir().join(last);
    let data = read_all(fs, &path).unwrap();
    let decoded = wal::decode_all(&data, &path, wal::ReadOptions::default()).unwrap();
    let records = decoded
        .records
        .iter()
        .map(|r| {
            let write = (0..model.writes.len())
                .find(|i| model.seqno_after(*i) + 1 == r.seqno)
                .unwrap();
            let end = r.offset + (wal::RECORD_HEADER_LEN + r.payload.len()) as u64;
            (r.offset, end, write)
        })
        .collect();
    Some((last.clone(), records))
}

fn damages(len: usize) -> Vec<Damage> {
    let mut offsets: Vec<usize> = if len <= FLIP_ALL_UP_TO {
        (0..len).collect()
    } else {
        let stride = len.div_ceil(FLIP_ALL_UP_TO);
        (0..len)
            .step_by(stride)
            .chain(len.saturating_sub(80)..len)
            .collect()
    };
    offsets.sort_unstable();
    offsets.dedup();
    let masks = [0x01u8, 0x80, 0x10, 0xff];
    let mut out: Vec<Damage> = offsets
        .into_iter()
        .map(|offset| Damage::Flip {
            offset,
            mask: masks[offset % masks.len()],
        })
        .collect();
    let mut lengths: Vec<usize> = (0..len.min(48)).collect();
    lengths.extend((0..len).step_by(len.div_ceil(48).max(1)));
    lengths.extend(len.saturating_sub(24)..len);
    lengths.sort_unstable();
    lengths.dedup();
    out.extend(lengths.into_iter().map(|len| Damage::Truncate { len }));
    out
}

/// `golden` with `damage` applied to `path`.
fn damaged(golden: &MemFs, path: &Path, damage: Damage) -> MemFs {
    let fs = golden.crash_with(CrashOptions::KeepAll);
    match damage {
        Damage::Flip { offset, mask } => fs.corrupt(path, offset, mask).unwrap(),
        Damage::Truncate { len } => {
            let data = read_all(&fs, path).unwrap();
            fs.remove(path).unwrap();
            let mut file = fs.create(path).unwrap();
            file.append(&data[..len]).unwrap();
            file.sync_data().unwrap();
            fs.sync_dir(&dir()).unwrap();
        }
    }
    fs
}

#[derive(Debug, Default)]
struct Tally {
    tried: usize,
    detected: usize,
    detected_elsewhere: usize,
    harmless: usize,
    torn_tail: usize,
    wrong: Vec<String>,
}

fn damage_every_file(ending: Ending) -> BTreeMap<String, Tally> {
    let (golden, model) = golden(ending);
    let full = model.state(model.writes.len(), model.ks_ops.len());
    let names = golden.list_dir(&dir()).unwrap();
    let wal = wal_records(&golden, &names, &model);
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for name in &names {
        let Some(kind) = kind_of(name) else { continue };
        let path: PathBuf = dir().join(name);
        let len = golden.file_len(&path).unwrap() as usize;
        let records = wal
            .as_ref()
            .filter(|(last, _)| last == name)
            .map(|(_, r)| r.as_slice())
            .unwrap_or_default();
        let t = tallies.entry(format!("{kind:?}")).or_default();
        for damage in damages(len) {
            // The write lost if the torn-tail rule applies: the damaged record's.
            let torn = match damage {
                Damage::Flip { offset, .. } => records
                    .last()
                    .filter(|(start, _, _)| offset as u64 >= *start)
                    .map(|(_, _, w)| *w),
                Damage::Truncate { len } => records
                    .iter()
                    .find(|(_, end, _)| *end > len as u64)
                    .map(|(_, _, w)| *w),
            };
            let fs = damaged(&golden, &path, damage);
            let verdict = catch_unwind(AssertUnwindSafe(|| {
                probe(fs, &model, &full, torn, &path, kind)
            }))
            .unwrap_or_else(|_| Verdict::Wrong("panicked".into()));
            t.tried += 1;
            match verdict {
                Verdict::Correct => t.harmless += 1,
                Verdict::Detected { named: true } => t.detected += 1,
                Verdict::Detected { named: false } => t.detected_elsewhere += 1,
                Verdict::TornTail => t.torn_tail += 1,
                Verdict::Wrong(msg) => t
                    .wrong
                    .push(format!("{ending:?}: {name} {damage:?}: {msg}")),
            }
        }
    }
    tallies
}

#[test]
fn damaged_files_give_right_data_or_a_corruption_error() {
    watch_engine_threads();
    let start = Instant::now();
    let mut wrong = Vec::new();
    let mut total = Tally::default();
    for ending in [Ending::WalRecords, Ending::Flushed, Ending::Compacted] {
        for (kind, t) in damage_every_file(ending) {
            eprintln!(
                "corruption {ending:?} {kind}: {} damages tried, {} detected naming the file, \
                 {} detected elsewhere, {} harmless, {} torn tail, {} undetected wrong data",
                t.tried,
                t.detected,
                t.detected_elsewhere,
                t.harmless,
                t.torn_tail,
                t.wrong.len()
            );
            total.tried += t.tried;
            total.detected += t.detected;
            total.detected_elsewhere += t.detected_elsewhere;
            total.harmless += t.harmless;
            total.torn_tail += t.torn_tail;
            for w in t.wrong.iter().take(3) {
                eprintln!("  {}", w.chars().take(400).collect::<String>());
            }
            wrong.extend(t.wrong);
        }
    }
    eprintln!(
        "corruption total: {} tried, {} detected ({} naming another file), {} harmless, {} \
         torn tail, {} undetected wrong data, {:.1}s",
        total.tried,
        total.detected + total.detected_elsewhere,
        total.detected_elsewhere,
        total.harmless,
        total.torn_tail,
        wrong.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        wrong.is_empty(),
        "{} damaged stores gave wrong data",
        wrong.len()
    );
    assert_eq!(engine_panics(), 0, "a store thread panicked");
}
