//! What each backend and durability mode can lose, in words: the durability contract of
//! `cairn::Durability` (crates/engine/src/options.rs and the durability table of the
//! README), stated for the two failures that matter, a process crash (the OS keeps what
//! it was handed) and a power loss (only fsynced bytes and flushed tables remain).
//!
//! The words are the documented worst case; the load also measures what was actually
//! exposed at the end of a run (acknowledged writes above `durable_seqno`).

use std::time::Duration;

use cairn::Durability;

use super::backend::Kind;
use crate::plural::count;

/// Log bytes after which the log thread fsyncs in the background (the engine's
/// `WAL_BYTES_PER_SYNC`, see the README's durability table).
const BACKGROUND_SYNC: &str = "4 MiB";
/// The in-process log buffer of `Durability::None` (the engine's `wal::BUFFER_LEN`).
const LOG_BUFFER: &str = "64 KiB";

/// The worst case of one mode, for a process crash and for a power loss.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LossWindow {
    /// Short form for the sweep table.
    pub crash_short: String,
    /// Short form for the sweep table.
    pub power_short: String,
    /// A sentence: what a process crash can take.
    pub crash: String,
    /// A sentence: what a power loss can take.
    pub power: String,
}

/// `1 ms`, `100 ms`, `250 µs`, `2 s`.
fn span(d: Duration) -> String {
    let us = d.as_micros();
    if us.is_multiple_of(1_000_000) {
        format!("{} s", us / 1_000_000)
    } else if us.is_multiple_of(1000) {
        format!("{} ms", us / 1000)
    } else {
        format!("{us} µs")
    }
}

/// The loss window of `backend` (with `durability` for the ordered store).
pub fn loss_window(backend: Kind, durability: Durability) -> LossWindow {
    let w = |crash_short: &str, power_short: &str, crash: String, power: String| LossWindow {
        crash_short: crash_short.to_string(),
        power_short: power_short.to_string(),
        crash,
        power,
    };
    match backend {
        Kind::Memory => w(
            "everything",
            "everything",
            "everything: the memory backend keeps nothing outside the process".into(),
            "everything".into(),
        ),
        Kind::Constant => w(
            "nothing",
            "nothing",
            "nothing: the constant store is read-only once built (its files are fsynced)".into(),
            "nothing".into(),
        ),
        Kind::Cairn => match durability {
            Durability::Sync => w(
                "nothing",
                "nothing",
                "nothing: every write is fsynced before it is acknowledged".into(),
                "nothing".into(),
            ),
            Durability::Periodic(every) => {
                let every = span(every);
                w(
                    "nothing",
                    &format!("last {every} + 1 fsync"),
                    "nothing: every write is handed to the OS before it is acknowledged".into(),
                    format!(
                        "the writes of the last {every} (the fsync interval) plus those during one fsync"
                    ),
                )
            }
            Durability::Buffered => w(
                "nothing",
                &format!("≤ {BACKGROUND_SYNC} of log"),
                "nothing: every write is handed to the OS before it is acknowledged".into(),
                format!(
                    "the writes since the last log fsync: at most about {BACKGROUND_SYNC} of log (the background fsync), less after a rotation or flush_wal(true)"
                ),
            ),
            Durability::Async { queue_depth } => w(
                &format!(
                    "≤ {}",
                    count(queue_depth, "queued write", "queued writes")
                ),
                &format!("queue + ≤ {BACKGROUND_SYNC} of log"),
                format!(
                    "the writes still queued for the log thread: at most {}",
                    count(queue_depth, "batch", "batches")
                ),
                format!(
                    "the queued writes plus those since the last log fsync (at most about {BACKGROUND_SYNC} of log)"
                ),
            ),
            Durability::None => w(
                &format!("≤ {LOG_BUFFER} log buffer"),
                "all since last fsync/flush",
                format!(
                    "the writes still in the process's log buffer (up to {LOG_BUFFER} of log), unless a memtable flush covered them"
                ),
                "every write since the last log fsync or memtable flush".into(),
            ),
            // `Durability` is non-exhaustive: a mode added to the engine after these words
            // were written is reported as not described rather than guessed at.
            _ => w(
                "unknown",
                "unknown",
                format!("unknown: this tool has no description of {durability:?}"),
                format!("unknown: this tool has no description of {durability:?}"),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_has_words_and_units() {
        assert_eq!(span(Duration::from_micros(1000)), "1 ms");
        assert_eq!(span(Duration::from_micros(100_000)), "100 ms");
        assert_eq!(span(Duration::from_micros(250)), "250 µs");
        assert_eq!(span(Duration::from_secs(2)), "2 s");
        let sync = loss_window(Kind::Cairn, Durability::Sync);
        assert_eq!(
            (sync.crash_short.as_str(), sync.power_short.as_str()),
            ("nothing", "nothing")
        );
        let periodic = loss_window(
            Kind::Cairn,
            Durability::Periodic(Duration::from_millis(100)),
        );
        assert!(periodic.power.contains("100 ms"), "{periodic:?}");
        let queued = loss_window(Kind::Cairn, Durability::Async { queue_depth: 1024 });
        assert!(queued.crash.contains("1024"), "{queued:?}");
        let memory = loss_window(Kind::Memory, Durability::Sync);
        assert_eq!(memory.crash_short, "everything");
    }
}
