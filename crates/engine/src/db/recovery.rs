//! [`RecoveryReport`]: what opening a store left out of the recovered history, and why.
//!
//! Every byte range of a log or blob file that recovery did not turn into recovered
//! writes is reported as one [`Loss`], with its cause. Two causes are the normal residue
//! of a crash and lose nothing that was acknowledged as durable: a torn log tail
//! ([`LossCause::TornTail`]) and a log cut at a write whose separated value never became
//! durable ([`LossCause::UnsyncedValue`]). The other two happen only with
//! `Options::salvage_wal`, after damage to bytes that were durable, and may lose
//! acknowledged writes: [`LossCause::Salvaged`] and [`LossCause::DamagedValue`]. Without
//! salvage, such damage refuses the open with `Error::Corruption` instead.
//!
//! The report is kept by the [`crate::Db`] for its lifetime ([`crate::Db::recovery_report`]).

use std::fmt;
use std::path::PathBuf;

use crate::error::{FileKind, Reason};

/// Why recovery did not use a range of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossCause {
    /// The log file ends in a record that was being written when the store stopped: those
    /// writes were never durable. Normal after a crash.
    TornTail,
    /// The log ends at a write whose separated value (in a blob file) was lost by the
    /// crash: that write and every later one were in the log's unsynced tail, never
    /// acknowledged as durable. Normal after a power loss.
    UnsyncedValue,
    /// Damage followed by valid records, skipped under `Options::salvage_wal`: the
    /// writes in the range (their seqnos are given where known) are lost.
    Salvaged,
    /// A write that was durable, skipped under `Options::salvage_wal` because its
    /// separated value is damaged or missing: the write (all of its batch) is lost.
    DamagedValue,
}

impl LossCause {
    /// True if writes acknowledged as durable may be among those lost (only under
    /// salvage).
    pub fn loses_durable_writes(self) -> bool {
        matches!(self, LossCause::Salvaged | LossCause::DamagedValue)
    }
}

impl fmt::Display for LossCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LossCause::TornTail => "torn tail (writes never durable)",
            LossCause::UnsyncedValue => {
                "log cut at a write whose value never became durable (writes never durable)"
            }
            LossCause::Salvaged => "damaged range skipped by salvage",
            LossCause::DamagedValue => "durable write with a damaged value, skipped by salvage",
        })
    }
}

/// One range recovery left out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Loss {
    /// Why.
    pub cause: LossCause,
    /// The kind of file the range is in (a log file, or for
    /// [`LossCause::DamagedValue`] and [`LossCause::UnsyncedValue`] the log record whose
    /// value was lost).
    pub file: FileKind,
    /// The file.
    pub path: PathBuf,
    /// First byte of the range.
    pub offset: u64,
    /// Bytes in the range (to the end of the file for a tail).
    pub len: u64,
    /// What was wrong at `offset` (for a lost value: at the value's place in its blob
    /// file, named in `detail`).
    pub reason: Reason,
    /// The seqnos of the writes lost, first and last inclusive, where known.
    pub seqnos: Option<(u64, u64)>,
    /// More about the loss, for people.
    pub detail: String,
}

impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} bytes of {} {} at byte {} ({})",
            self.cause,
            self.len,
            self.file,
            self.path.display(),
            self.offset,
            self.reason
        )?;
        if let Some((first, last)) = self.seqnos {
            write!(f, "; seqnos {first}..={last} lost")?;
        }
        if !self.detail.is_empty() {
            write!(f, "; {}", self.detail)?;
        }
        Ok(())
    }
}

/// What the open of a store recovered from its log, and what it left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveryReport {
    /// Log files read.
    pub log_files: u64,
    /// Log records (write batches) replayed into memtables.
    pub replayed_records: u64,
    /// The seqno of the last recovered write (the flushed seqno if nothing was replayed).
    pub last_seqno: u64,
    /// Every range left out, in the order found.
    pub losses: Vec<Loss>,
}

impl RecoveryReport {
    /// True if nothing was left out.
    pub fn is_clean(&self) -> bool {
        self.losses.is_empty()
    }

    /// True if writes acknowledged as durable may have been lost (only under salvage).
    pub fn lost_durable_writes(&self) -> bool {
        self.losses.iter().any(|l| l.cause.loses_durable_writes())
    }
}
