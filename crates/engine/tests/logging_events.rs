//! The engine's `tracing` events: a flush, a compaction (with its inputs, outputs, bytes
//! and duration) and a recovery that left out a torn log tail each emit one, seen by a
//! subscriber installed the way an embedder (or `cairn serve`) installs one.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use cairn::{Db, Options};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Every event as one line: `LEVEL message field=value ...`.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<String>>>);

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

impl Subscriber for Collect {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = Line(event.metadata().level().to_string());
        event.record(&mut line);
        self.0.lock().unwrap().push(line.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Collect {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

#[test]
fn flush_compaction_and_recovery_losses_are_logged() {
    let events = Collect::default();
    tracing::subscriber::set_global_default(events.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("k").unwrap();
    for round in 0..3 {
        for i in 0..100 {
            ks.insert(format!("key{i:04}"), format!("value{round}"))
                .unwrap();
        }
        db.flush().unwrap();
    }
    db.compact().unwrap();
    let lines = events.lines();
    let flush = lines
        .iter()
        .find(|l| l.starts_with(&format!("{} flush ", Level::INFO)))
        .unwrap_or_else(|| panic!("no flush event in {lines:?}"));
    assert!(
        flush.contains("tables=1") && flush.contains("bytes="),
        "{flush}"
    );
    let compaction = lines
        .iter()
        .find(|l| l.starts_with(&format!("{} compaction ", Level::INFO)))
        .unwrap_or_else(|| panic!("no compaction event in {lines:?}"));
    for field in [
        "inputs=",
        "input_bytes=",
        "outputs=",
        "output_bytes=",
        "duration_ms=",
    ] {
        assert!(compaction.contains(field), "{compaction}");
    }
    // A torn tail: bytes after the last record of the newest log file.
    ks.insert("after", "flush").unwrap();
    db.flush_wal(true).unwrap();
    drop(ks);
    db.close().unwrap();
    let mut logs: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wal"))
        .collect();
    logs.sort();
    let newest = logs.last().unwrap_or_else(|| panic!("no log file"));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(newest)
        .unwrap();
    f.write_all(&[0xA5; 50]).unwrap();
    drop(f);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert!(!db.recovery_report().is_clean());
    let lines = events.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("INFO") && l.contains("never durable") && l.contains("loss=")),
        "{lines:?}"
    );
    db.close().unwrap();
}
