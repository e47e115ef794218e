//! [`restore`]: a dump into a store, all or nothing with respect to the input: the whole
//! input is read and checked into a [`Spool`] before the first write, and replayed only
//! if it was accepted to its end. Also what restores and imports share: [`RestoreOptions`],
//! the [`Batcher`] that commits bounded batches, and [`stage`], the one place an entry
//! becomes a write.
//!
//! The steps of a restore, and what is written when one fails:
//! 1. check and spool the input (`Spool::fill`): nothing is written;
//! 2. plan the keyspaces (`plan`): an existing keyspace that keeps values inline while the
//!    dump holds a value over the inline limit for it is refused; nothing is written;
//! 3. create the missing keyspaces (with the dump's blob threshold) and replay the spool
//!    in bounded batches, a value over the inline limit streamed on its own
//!    (`Keyspace::insert_from`). Only an error of the store itself (I/O, a stopped store)
//!    stops this step, and the batches committed before it stay; restoring the same dump
//!    again converges.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::PathBuf;

use super::entry::{check_keyspace_name, entry_options, Entry};
use super::spool::{Needs, Spool};
use super::{Format, Progress, PROGRESS_EVERY};
use crate::db::{Batch, Db, Keyspace, DEFAULT_KEYSPACE};
use crate::error::{Error, Result};
use crate::options::{Durability, KeyspaceOptions};
use crate::table::MAX_INLINE_VALUE_LEN;

/// Options of [`restore`] and [`super::import`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RestoreOptions {
    /// Where entries without a `keyspace` field go (created if missing). Default
    /// `default`.
    pub keyspace: String,
    /// Entries per committed batch. Default 4096.
    pub batch_entries: usize,
    /// Key and value bytes per committed batch (a batch is committed once it reaches
    /// this). Default 4 MiB.
    pub batch_bytes: usize,
    /// Where a restore spools its checked input (two unnamed temporary files, as large as
    /// the input together). Default `None`: the system's temporary directory
    /// ([`std::env::temp_dir`], `TMPDIR` on Unix).
    pub spool_dir: Option<PathBuf>,
}

impl Default for RestoreOptions {
    fn default() -> RestoreOptions {
        RestoreOptions {
            keyspace: DEFAULT_KEYSPACE.to_string(),
            batch_entries: 4096,
            batch_bytes: 4 << 20,
            spool_dir: None,
        }
    }
}

impl RestoreOptions {
    /// Sets the target keyspace.
    pub fn keyspace(mut self, name: impl Into<String>) -> Self {
        self.keyspace = name.into();
        self
    }

    /// Sets the batch bounds.
    pub fn batch(mut self, entries: usize, bytes: usize) -> Self {
        self.batch_entries = entries.max(1);
        self.batch_bytes = bytes.max(1);
        self
    }

    /// Sets the directory a restore spools its input in.
    pub fn spool_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.spool_dir = Some(dir.into());
        self
    }
}

/// Writes bounded batches: commits each once it reaches the options' bounds, with
/// `Buffered` durability, and fsyncs the log at the end.
pub(crate) struct Batcher<'a> {
    db: &'a Db,
    batch: Batch,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

impl<'a> Batcher<'a> {
    pub(crate) fn new(db: &'a Db, options: &RestoreOptions) -> Batcher<'a> {
        Batcher {
            db,
            batch: db.batch(),
            bytes: 0,
            max_entries: options.batch_entries.max(1),
            max_bytes: options.batch_bytes.max(1),
        }
    }

    /// Counts `bytes` into the open batch and commits it if it is full.
    pub(crate) fn added(&mut self, bytes: usize) -> Result<()> {
        self.bytes += bytes;
        if self.batch.len() >= self.max_entries || self.bytes >= self.max_bytes {
            self.commit()?;
        }
        Ok(())
    }

    pub(crate) fn batch(&mut self) -> &mut Batch {
        &mut self.batch
    }

    /// Commits the open batch (if it holds anything) now.
    pub(crate) fn commit(&mut self) -> Result<()> {
        let full = std::mem::replace(&mut self.batch, self.db.batch());
        self.bytes = 0;
        if full.is_empty() {
            return Ok(());
        }
        full.commit_with(Some(Durability::Buffered))
    }

    /// Commits the last batch and makes everything durable.
    pub(crate) fn finish(mut self) -> Result<()> {
        self.commit()?;
        self.db.flush_wal(true)
    }
}

/// Adds `entry` (line or record `record` of the input) to `batch` for `keyspace`: the one
/// place where restored and imported entries become writes (a restored value over the
/// inline limit takes `Keyspace::insert_from` with the same [`entry_options`]).
///
/// An entry's tag, metadata and expiry are written with it (an expiry already in the past
/// is kept too: the entry is invisible at once, exactly as in the dumped store).
pub(crate) fn stage(
    batch: &mut Batch,
    keyspace: &Keyspace,
    entry: &Entry,
    record: u64,
) -> Result<()> {
    match entry_options(entry, record)? {
        None => batch.insert(keyspace, &entry.key, &entry.value),
        Some(options) => batch.insert_entry(keyspace, &entry.key, &entry.value, &options),
    }
    Ok(())
}

/// Restores a dump from `input` into `db`: every entry is put into its keyspace (the
/// `keyspace` field, else `options.keyspace`), created if missing (with the blob
/// threshold the dump gives it), in bounded batches. Existing keys are overwritten; other
/// keys are kept.
///
/// All or nothing with respect to the input: the whole input is read, checked (every
/// record; for CBOR also the trailer's count and checksum) and spooled to temporary files
/// in `options.spool_dir` before anything is written, so bad input (a damaged byte, a
/// truncated dump, a bad last line) writes nothing: not an entry, not a keyspace. Values
/// too long for the tree (over 32 MiB) go to keyspaces that separate values.
///
/// Calls `progress` every few thousand entries and at the end: while the input is
/// checked, `entries` is 0 and `bytes` counts the input read; while it is written,
/// `bytes` is the whole input and `entries` counts the entries written. Returns the
/// totals.
///
/// # Errors
/// Nothing written: `BadInput` naming the line or record of malformed input;
/// `InvalidArgument` for an entry the store cannot hold (an expiry out of range, a value
/// over 32 MiB for an existing keyspace that keeps values in the tree) or a bad target
/// keyspace name; `Io` if the input cannot be read or the spool written.
/// After writes began: `Io`, `Poisoned`, `Stopped` from the store; the batches
/// committed before the error stay.
pub fn restore<R: BufRead>(
    db: &Db,
    input: R,
    format: Format,
    options: &RestoreOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Progress> {
    let dir = options.spool_dir.clone().unwrap_or_else(std::env::temp_dir);
    let spool = Spool::fill(input, format, &dir, progress)?;
    let targets = plan(db, &spool, options)?;
    let mut created: HashMap<String, Keyspace> = HashMap::new();
    for (name, target) in &targets {
        let ks = match target {
            Target::Existing => db.get_keyspace(name).ok_or_else(|| {
                Error::invalid(format!("keyspace {name:?} was dropped during the restore"))
            })?,
            Target::Create => db.keyspace(name)?,
            Target::CreateSeparated(threshold) => {
                db.keyspace_with(name, KeyspaceOptions::separated(*threshold))?
            }
        };
        created.insert(name.clone(), ks);
    }
    let mut handles: HashMap<Option<String>, Keyspace> = HashMap::new();
    for raw in spool.keyspaces.keys() {
        let name = raw.as_deref().unwrap_or(&options.keyspace);
        if let Some(ks) = created.get(name) {
            handles.insert(raw.clone(), ks.clone());
        }
    }
    replay(db, spool, &handles, options, progress)
}

/// What a restore does with a keyspace it writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Writes to it as it is.
    Existing,
    /// Creates it with the store's defaults.
    Create,
    /// Creates it separating values of at least this many bytes.
    CreateSeparated(usize),
}

/// What to do with each keyspace the restore writes to. Writes nothing.
///
/// A missing keyspace gets the dump's blob threshold; one with values over the inline
/// limit but no threshold in the dump (a dump written before keyspace records existed)
/// gets [`KeyspaceOptions::RECOMMENDED_BLOB_THRESHOLD`] unless the store's own default
/// already separates them.
///
/// # Errors
/// `InvalidArgument` for a bad target keyspace name, or an existing keyspace that would
/// keep a value over the inline limit in the tree.
fn plan(db: &Db, spool: &Spool, options: &RestoreOptions) -> Result<BTreeMap<String, Target>> {
    let mut merged: BTreeMap<String, Needs> = BTreeMap::new();
    for (raw, needs) in &spool.keyspaces {
        let name = raw.as_deref().unwrap_or(&options.keyspace);
        merged.entry(name.to_string()).or_default().merge(needs);
    }
    let store_default = db.inner.options.blob_threshold.map(|t| t as u64);
    // A threshold `t` separates a value of `len` bytes if `t <= len`.
    let separates = |t: Option<u64>, len: u64| t.is_some_and(|t| t <= len);
    let mut targets = BTreeMap::new();
    for (name, needs) in merged {
        check_keyspace_name(&name).map_err(|m| Error::invalid(format!("target keyspace: {m}")))?;
        let target = match db.get_keyspace(&name) {
            Some(ks) => {
                let threshold = ks.blob_threshold();
                if let Some(large) = needs.smallest_large {
                    if !separates(threshold, large) {
                        return Err(Error::invalid(format!(
                            "keyspace {name:?} keeps values in the tree (at most {MAX_INLINE_VALUE_LEN} \
                             bytes) but the dump holds a value of {large} bytes for it; nothing \
                             was written (restore into a new keyspace or store, which is \
                             created to separate large values, or open the keyspace with \
                             KeyspaceOptions::separated first)"
                        )));
                    }
                }
                Target::Existing
            }
            None => {
                let own = match (needs.blob_threshold, needs.smallest_large) {
                    (Some(t), Some(large)) => Some(t.min(large)),
                    (Some(t), None) => Some(t),
                    (None, Some(large)) if !separates(store_default, large) => {
                        Some(KeyspaceOptions::RECOMMENDED_BLOB_THRESHOLD as u64)
                    }
                    (None, _) => None,
                };
                match own {
                    Some(t) => Target::CreateSeparated(usize::try_from(t).unwrap_or(usize::MAX)),
                    None => Target::Create,
                }
            }
        };
        targets.insert(name, target);
    }
    Ok(targets)
}

/// Writes the spooled entries to their keyspaces (`handles`, by the dump's keyspace
/// field); see the module documentation, step 3.
fn replay(
    db: &Db,
    spool: Spool,
    handles: &HashMap<Option<String>, Keyspace>,
    options: &RestoreOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Progress> {
    let mut done = Progress {
        entries: 0,
        bytes: spool.input_len,
    };
    let mut entries = spool.replay()?;
    let mut batcher = Batcher::new(db, options);
    while let Some(mut s) = entries.next()? {
        let ks = handles.get(&s.entry.keyspace).ok_or_else(|| {
            Error::invalid(format!("record {}: no keyspace planned for it", s.record))
        })?;
        if s.value_len > MAX_INLINE_VALUE_LEN as u64 {
            // Too long for a batch: streamed from the spool into a blob file. Earlier
            // entries are committed first, so entries still apply in input order.
            batcher.commit()?;
            let write = entry_options(&s.entry, s.record)?
                .unwrap_or_default()
                .durability(Durability::Buffered);
            let mut value = entries.value(s.value_len);
            ks.insert_from(&s.entry.key, &mut value, s.value_len, &write)?;
            if value.limit() != 0 {
                return Err(Error::invalid(format!(
                    "record {}: the value was not read whole",
                    s.record
                )));
            }
        } else {
            entries.read_value(s.value_len, &mut s.entry.value)?;
            stage(batcher.batch(), ks, &s.entry, s.record)?;
            batcher.added(s.entry.key.len() + s.entry.value.len())?;
        }
        done.entries += 1;
        if done.entries.is_multiple_of(PROGRESS_EVERY) {
            progress(done);
        }
    }
    batcher.finish()?;
    progress(done);
    Ok(done)
}
