//! [`Writer`]: appends records to a new WAL file.
//!
//! Grammar of what it writes (FORMAT.md §3):
//!
//! ```text
//! file    := header record*
//! header  := magic:u32 version:u32 file_id:u64 header_crc:u32
//! record  := header_crc:u32 record_crc:u32 payload_len:u32 kind:u8 flags:u8
//!            reserved:u16 seqno:u64 payload[payload_len]
//! ```
//!
//! Buffering: [`Writer::append`] encodes into an in-memory buffer and returns; the buffer
//! reaches the OS on [`Writer::flush`], on [`Writer::sync`], or by itself once it holds
//! [`BUFFER_LEN`] bytes. Bytes still buffered when the writer is dropped are lost (drop
//! cannot report an error); the `Db` flushes before it acknowledges a write.
//!
//! Sync marks: after every successful fsync the writer appends a `Synced` record naming
//! the end of the synced bytes and hands it to the OS (FORMAT.md §7). It costs one small
//! write per fsync and is what lets recovery tell a write that was durable from one in the
//! unsynced tail. [`Writer::note_synced`] appends one for an fsync made through another
//! handle.
//!
//! Poisoning: after any failed append to the file or failed sync, the file's tail is
//! unknown (part of the buffer may be on disk; after a failed fsync the kernel may have
//! dropped dirty pages, so retrying and succeeding would lie). The writer then answers
//! every later call with `Error::Poisoned`; the `Db` must reopen, recover from what is on
//! disk and continue in a new file. Refused arguments (a payload too large, a seqno that
//! does not increase) change nothing and do not poison.
//!
//! Thread-safety: `Send`, one owner; callers serialize appends.

use std::fmt;
use std::path::{Path, PathBuf};

use super::{encode_file_header, encode_record, encode_synced, FILE_HEADER_LEN, MAX_PAYLOAD_LEN};
use crate::error::{Error, Result};
use crate::files::FileType;
use crate::fs::{FileSystem, WritableFile};

/// Buffered bytes that trigger a write to the OS from `append` (64 KiB).
pub(crate) const BUFFER_LEN: usize = 64 << 10;

/// Appends records to one WAL file; see the module documentation.
pub(crate) struct Writer {
    file: Box<dyn WritableFile>,
    id: u64,
    buf: Vec<u8>,
    /// Logical length: bytes on the OS plus bytes buffered.
    len: u64,
    synced_len: u64,
    /// `len` just past the last sync mark that vouches for every byte before it: nothing
    /// unsynced was appended since it when equal. A mark for an fsync through another
    /// handle that covers less (records appended while that fsync ran) does not move it.
    marked_len: u64,
    /// The synced end the last sync mark vouches for.
    marked_end: u64,
    last_seqno: Option<u64>,
    poisoned: bool,
}

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("path", &self.file.path())
            .field("len", &self.len)
            .field("buffered", &self.buf.len())
            .field("synced_len", &self.synced_len)
            .field("last_seqno", &self.last_seqno)
            .field("poisoned", &self.poisoned)
            .finish()
    }
}

impl Writer {
    /// Creates WAL file `id` in `dir`, writes and syncs its header, and syncs `dir` so the
    /// file's name is durable before any record is acknowledged.
    ///
    /// # Errors
    /// `Error::Io` if the file exists or any step fails (no writer is returned then).
    pub(crate) fn create(fs: &dyn FileSystem, dir: &Path, id: u64) -> Result<Writer> {
        let path = dir.join(FileType::Wal.name(id));
        let mut file = fs.create(&path)?;
        file.append(&encode_file_header(id))?;
        file.sync_data()?;
        fs.sync_dir(dir)?;
        Ok(Writer {
            file,
            id,
            buf: Vec::with_capacity(BUFFER_LEN),
            len: FILE_HEADER_LEN as u64,
            synced_len: FILE_HEADER_LEN as u64,
            marked_len: FILE_HEADER_LEN as u64,
            marked_end: FILE_HEADER_LEN as u64,
            last_seqno: None,
            poisoned: false,
        })
    }

    /// Appends one record carrying `payload` (an encoded batch whose first seqno is
    /// `seqno`); returns the file offset just past the record.
    ///
    /// # Errors
    /// `Error::Poisoned` after an earlier failure; `Error::InvalidArgument` if the payload
    /// exceeds [`MAX_PAYLOAD_LEN`] or `seqno` is not greater than the previous record's;
    /// `Error::Io` (and the writer is poisoned) if writing a full buffer fails.
    pub(crate) fn append(&mut self, seqno: u64, payload: &[u8]) -> Result<u64> {
        self.check_poisoned()?;
        if payload.len() > MAX_PAYLOAD_LEN {
            return Err(Error::invalid(format!(
                "write batch of {} bytes exceeds the WAL record limit of {MAX_PAYLOAD_LEN} bytes",
                payload.len()
            )));
        }
        if let Some(last) = self.last_seqno {
            if seqno <= last {
                return Err(Error::invalid(format!(
                    "WAL seqno {seqno} does not follow the previous record's seqno {last}"
                )));
            }
        }
        let before = self.buf.len();
        encode_record(&mut self.buf, seqno, payload);
        self.len += (self.buf.len() - before) as u64;
        self.last_seqno = Some(seqno);
        if self.buf.len() >= BUFFER_LEN {
            self.flush()?;
        }
        Ok(self.len)
    }

    /// Hands every buffered byte to the OS (survives a process crash, not a power loss).
    ///
    /// # Errors
    /// `Error::Poisoned`, or `Error::Io` (and the writer is poisoned).
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.check_poisoned()?;
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.file.append(&self.buf) {
            self.poisoned = true;
            return Err(e);
        }
        self.buf.clear();
        Ok(())
    }

    /// Flushes, then makes every appended record durable (`fdatasync`), then appends a
    /// sync mark saying so and hands it to the OS. `Ok(false)` if nothing unsynced had
    /// been appended (no fsync was needed, none was made).
    ///
    /// # Errors
    /// `Error::Poisoned`, or `Error::Io` (and the writer is poisoned).
    pub(crate) fn sync(&mut self) -> Result<bool> {
        self.flush()?;
        if self.synced_len == self.len || self.marked_len == self.len {
            return Ok(false);
        }
        if let Err(e) = self.file.sync_data() {
            self.poisoned = true;
            return Err(e);
        }
        self.synced_len = self.len;
        self.note_synced(self.synced_len);
        self.flush().map(|()| true)
    }

    /// Records that the file's bytes up to `synced_end` (a length this writer reported
    /// earlier) were fsynced, through this writer or another handle: appends a sync mark
    /// to the buffer, which reaches the OS with the next flush. Does nothing when poisoned
    /// or when the last mark already says as much.
    pub(crate) fn note_synced(&mut self, synced_end: u64) {
        if self.poisoned || synced_end > self.len || synced_end <= self.marked_end {
            return;
        }
        let covers_all = synced_end == self.len;
        self.marked_end = synced_end;
        self.synced_len = self.synced_len.max(synced_end);
        let before = self.buf.len();
        encode_synced(&mut self.buf, synced_end);
        self.len += (self.buf.len() - before) as u64;
        if covers_all {
            self.marked_len = self.len;
        }
    }

    /// The file's length once everything appended so far is flushed (the rotation measure).
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Bytes known durable: everything up to the last successful [`Writer::sync`].
    #[cfg(test)]
    pub(crate) fn synced_len(&self) -> u64 {
        self.synced_len
    }

    /// The seqno of the last appended record.
    #[cfg(test)]
    pub(crate) fn last_seqno(&self) -> Option<u64> {
        self.last_seqno
    }

    /// True after a failed write or sync.
    #[cfg(test)]
    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// The file's id.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The file's path.
    pub(crate) fn path(&self) -> PathBuf {
        self.file.path().to_path_buf()
    }

    fn check_poisoned(&self) -> Result<()> {
        if self.poisoned {
            Err(Error::Poisoned)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::super::reader::{decode_all, ReadOptions, Reader};
    use super::*;
    use crate::fs::{read_all, CrashOptions, Fault, FaultKind, MemFs, Op};

    fn dir() -> PathBuf {
        PathBuf::from("/db")
    }

    fn new_fs() -> MemFs {
        let fs = MemFs::new();
        fs.create_dir(&dir()).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        fs
    }

    fn payload(seqno: u64) -> Vec<u8> {
        format!("batch {seqno} ")
            .repeat(seqno as usize % 7 + 1)
            .into_bytes()
    }

    fn recover(fs: &MemFs, id: u64) -> Vec<u64> {
        Reader::open(fs, &dir().join(FileType::Wal.name(id)), false)
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                assert_eq!(r.payload, payload(r.seqno));
                r.seqno
            })
            .collect()
    }

    #[test]
    fn round_trip_through_a_file_with_end_offsets() {
        let fs = new_fs();
        let mut w = Writer::create(&fs, &dir(), 3).unwrap();
        assert_eq!(w.len(), FILE_HEADER_LEN as u64);
        let mut ends = Vec::new();
        for seqno in 1..=50 {
            ends.push(w.append(seqno, &payload(seqno)).unwrap());
        }
        assert_eq!(w.len(), *ends.last().unwrap());
        w.sync().unwrap();
        // The sync mark follows what was synced.
        let mark = (super::super::RECORD_HEADER_LEN + super::super::SYNCED_PAYLOAD_LEN) as u64;
        assert_eq!(w.synced_len(), *ends.last().unwrap());
        assert_eq!(w.len(), w.synced_len() + mark);
        assert_eq!(w.last_seqno(), Some(50));
        assert_eq!(w.id(), 3);
        assert_eq!(fs.file_len(&w.path()).unwrap(), w.len());
        let data = read_all(&fs, &w.path()).unwrap();
        let r = decode_all(&data, &w.path(), ReadOptions::default()).unwrap();
        assert_eq!(r.records.len(), 50);
        for (i, rec) in r.records.iter().enumerate() {
            let start = if i == 0 {
                FILE_HEADER_LEN as u64
            } else {
                ends[i - 1]
            };
            assert_eq!(rec.offset, start);
        }
        assert_eq!(r.valid_end, w.len());
        assert_eq!(recover(&fs, 3), (1..=50).collect::<Vec<_>>());
    }

    /// A background fsync through another handle covers the bytes up to where the log was
    /// flushed when it started; records appended while it ran are not covered, and the
    /// next `sync` must fsync them although a sync mark now ends the file.
    #[test]
    fn a_sync_after_a_partial_background_sync_still_fsyncs_the_tail() {
        let fs = new_fs();
        let mut w = Writer::create(&fs, &dir(), 1).unwrap();
        w.append(1, &payload(1)).unwrap();
        w.flush().unwrap();
        let covered = w.len();
        fs.open_append(&w.path()).unwrap().sync_data().unwrap();
        // Appended while the background fsync ran, then its mark.
        w.append(2, &payload(2)).unwrap();
        w.note_synced(covered);
        w.sync().unwrap();
        assert_eq!(recover(&fs.crash(), 1), [1, 2]);
        // A mark that covers everything before it still spares the next sync an fsync
        // (and nothing is lost by that).
        w.append(3, &payload(3)).unwrap();
        w.flush().unwrap();
        let all = w.len();
        fs.open_append(&w.path()).unwrap().sync_data().unwrap();
        w.note_synced(all);
        w.sync().unwrap();
        assert_eq!(recover(&fs.crash(), 1), [1, 2, 3]);
    }

    #[test]
    fn create_refuses_an_existing_file_and_makes_the_name_durable() {
        let fs = new_fs();
        let w = Writer::create(&fs, &dir(), 1).unwrap();
        assert!(Writer::create(&fs, &dir(), 1).is_err());
        drop(w);
        // The header and the name survive a crash right after create.
        assert!(recover(&fs.crash(), 1).is_empty());
    }

    #[test]
    fn refused_arguments_do_not_poison() {
        let fs = new_fs();
        let mut w = Writer::create(&fs, &dir(), 1).unwrap();
        w.append(5, b"x").unwrap();
        for seqno in [5, 4] {
            assert!(matches!(
                w.append(seqno, b"y"),
                Err(Error::InvalidArgument(_))
            ));
        }
        let huge = vec![0u8; MAX_PAYLOAD_LEN + 1];
        assert!(matches!(w.append(6, &huge), Err(Error::InvalidArgument(_))));
        assert!(!w.is_poisoned());
        w.append(6, b"z").unwrap();
        w.sync().unwrap();
    }

    #[test]
    fn buffer_reaches_the_os_only_on_flush_or_when_full() {
        let fs = new_fs();
        let mut w = Writer::create(&fs, &dir(), 1).unwrap();
        let path = w.path();
        w.append(1, b"small").unwrap();
        assert_eq!(fs.file_len(&path).unwrap(), FILE_HEADER_LEN as u64);
        w.flush().unwrap();
        assert_eq!(fs.file_len(&path).unwrap(), w.len());
        w.append(2, &vec![7u8; BUFFER_LEN]).unwrap();
        assert_eq!(
            fs.file_len(&path).unwrap(),
            w.len(),
            "a full buffer is written"
        );
    }

    fn poisoned_after(op: Op, kind: FaultKind) {
        let fs = new_fs();
        let mut w = Writer::create(&fs, &dir(), 1).unwrap();
        w.append(1, &payload(1)).unwrap();
        w.sync().unwrap();
        fs.inject(Fault {
            op,
            nth: fs.op_count(op) + 1,
            kind,
            forever: false,
        });
        w.append(2, &payload(2)).unwrap();
        assert!(matches!(w.sync(), Err(Error::Io { .. })), "{op:?} {kind:?}");
        assert!(w.is_poisoned());
        // The fault was one-shot, yet every later call refuses.
        assert!(matches!(w.append(3, b"x"), Err(Error::Poisoned)));
        assert!(matches!(w.flush(), Err(Error::Poisoned)));
        assert!(matches!(w.sync(), Err(Error::Poisoned)));
        // What was synced before the failure survives a crash.
        let got = recover(&fs.crash(), 1);
        assert_eq!(got[0], 1);
        assert!(got.len() <= 2);
    }

    #[test]
    fn failed_write_poisons() {
        poisoned_after(Op::Write, FaultKind::Eio);
        poisoned_after(Op::Write, FaultKind::Enospc);
    }

    #[test]
    fn failed_fsync_poisons() {
        poisoned_after(Op::Sync, FaultKind::Eio);
        poisoned_after(Op::Sync, FaultKind::FsyncLost);
    }

    #[test]
    fn failed_auto_flush_in_append_poisons() {
        let fs = new_fs();
        let mut w = Writer::create(&fs, &dir(), 1).unwrap();
        fs.inject(Fault {
            op: Op::Write,
            nth: fs.op_count(Op::Write) + 1,
            kind: FaultKind::Enospc,
            forever: true,
        });
        assert!(matches!(
            w.append(1, &vec![0u8; BUFFER_LEN]),
            Err(Error::Io { .. })
        ));
        assert!(matches!(w.append(2, b"x"), Err(Error::Poisoned)));
    }

    #[test]
    fn crash_loses_exactly_the_unsynced_records() {
        let fs = new_fs();
        let mut w = Writer::create(&fs, &dir(), 9).unwrap();
        for seqno in 1..=10 {
            w.append(seqno, &payload(seqno)).unwrap();
        }
        w.sync().unwrap();
        for seqno in 11..=15 {
            w.append(seqno, &payload(seqno)).unwrap();
            w.flush().unwrap(); // handed to the OS, never synced
        }
        assert_eq!(recover(&fs, 9).len(), 15, "all visible before the crash");
        assert_eq!(recover(&fs.crash(), 9), (1..=10).collect::<Vec<_>>());
    }

    #[test]
    fn random_crashes_recover_a_prefix_no_shorter_than_the_synced_records() {
        let fs = new_fs();
        let mut w = Writer::create(&fs, &dir(), 2).unwrap();
        let mut synced = 0;
        for seqno in 1..=40u64 {
            w.append(seqno, &payload(seqno)).unwrap();
            // One write per record, so crashes tear records at every kind of boundary.
            w.flush().unwrap();
            if seqno % 8 == 0 {
                w.sync().unwrap();
                synced = seqno;
            }
        }
        for seed in 0..300 {
            let crashed = fs.crash_with(CrashOptions::Random { seed });
            let got = recover(&crashed, 2);
            assert!(
                got.len() as u64 >= synced,
                "seed {seed}: lost synced records"
            );
            assert_eq!(
                got,
                (1..=got.len() as u64).collect::<Vec<_>>(),
                "seed {seed}"
            );
        }
    }

    #[test]
    fn every_sync_leaves_a_mark_on_the_os_that_vouches_for_what_it_synced() {
        let fs = new_fs();
        let mut w = Writer::create(&fs, &dir(), 3).unwrap();
        let mut synced = Vec::new();
        for seqno in 1..=20 {
            let end = w.append(seqno, &payload(seqno)).unwrap();
            if seqno % 5 == 0 {
                w.sync().unwrap();
                synced.push(end);
                // A second sync with nothing new neither fsyncs nor marks again.
                let len = w.len();
                w.sync().unwrap();
                assert_eq!(w.len(), len);
            }
        }
        // A process crash keeps what reached the OS: the marks are there unsynced.
        let image = fs.crash_with(CrashOptions::KeepAll);
        let data = read_all(&image, &dir().join(FileType::Wal.name(3))).unwrap();
        let r = decode_all(&data, Path::new("/db/x.wal"), ReadOptions::default()).unwrap();
        assert_eq!(r.records.len(), 20);
        assert_eq!(r.synced_end, *synced.last().unwrap());
        // A power loss keeps every mark but possibly the last: each is synced by the next.
        let image = fs.crash();
        let data = read_all(&image, &dir().join(FileType::Wal.name(3))).unwrap();
        let r = decode_all(&data, Path::new("/db/x.wal"), ReadOptions::default()).unwrap();
        assert!(r.synced_end >= synced[synced.len() - 2], "{}", r.synced_end);
        assert!(r.records.len() >= 20);
    }

    #[test]
    fn a_sync_through_another_handle_is_noted_with_the_length_it_covered() {
        let fs = new_fs();
        let mut w = Writer::create(&fs, &dir(), 3).unwrap();
        let covered = w.append(1, &payload(1)).unwrap();
        w.flush().unwrap();
        // Synced elsewhere; meanwhile another record was appended.
        fs.open_append(&dir().join(FileType::Wal.name(3)))
            .unwrap()
            .sync_data()
            .unwrap();
        w.append(2, &payload(2)).unwrap();
        w.note_synced(covered);
        w.note_synced(covered); // said once
        w.flush().unwrap();
        let data = read_all(&fs, &dir().join(FileType::Wal.name(3))).unwrap();
        let r = decode_all(&data, Path::new("/db/x.wal"), ReadOptions::default()).unwrap();
        assert_eq!(
            r.synced_end, covered,
            "the mark names the covered length, not its place"
        );
        let marks = data.len() as u64 - w.synced_len();
        assert!(marks > 0);
        assert_eq!(
            r.records.iter().map(|r| r.seqno).collect::<Vec<_>>(),
            vec![1, 2]
        );
    }
}
