//! Damaged table files: every flipped byte, every truncation and forged footers must be
//! reported as corruption of the table (or an unsupported version), never return different
//! data, never panic.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};

use super::*;

/// Runs everything a reader can do on the table at `path`, reading blocks as `access`
/// says, comparing data with `model`.
fn exercise(fs: &MemFs, path: &Path, model: &[Entry], access: Access) -> Result<()> {
    let reader = open_with(fs, path, 1 << 20, access)?;
    assert_eq!(
        scan(&reader, true)?,
        model,
        "damaged table returned different data"
    );
    for (k, _) in model {
        let (u, t) = split_encoded(k).unwrap();
        assert_eq!(reader.get(u, SeqNo(t >> 8))?, model_get(model, u, t >> 8));
    }
    reader.verify().map(drop)
}

fn assert_table_corruption(err: &Error, file_len: u64, what: &str) {
    let c = err
        .as_corruption()
        .unwrap_or_else(|| panic!("{what}: expected corruption, got {err}"));
    assert_eq!(c.file, FileKind::Table, "{what}");
    assert!(
        c.offset < file_len.max(1),
        "{what}: offset {} beyond the file",
        c.offset
    );
}

#[test]
fn every_flipped_byte_is_reported_as_corruption() {
    let model = sample(60);
    for compression in [Compression::None, Compression::Snappy] {
        let fs = MemFs::new();
        let options = TableOptions {
            block_size: 128,
            restart_interval: 3,
            compression,
            ..TableOptions::default()
        };
        let meta = write(&fs, &table_path(), &options, &model);
        exercise(&fs, &table_path(), &model, Access::Pread).unwrap();
        let step = if meta.file_size > 4000 { 7 } else { 1 };
        for i in (0..meta.file_size as usize).step_by(step) {
            // Mapped reads take turns with positioned ones, byte by byte.
            let access = if i % 2 == 0 {
                Access::Pread
            } else {
                Access::Map
            };
            for mask in [0x01, 0x80] {
                fs.corrupt(&table_path(), i, mask).unwrap();
                match exercise(&fs, &table_path(), &model, access) {
                    Ok(()) => {
                        panic!("flip of byte {i} ({compression:?}, {access:?}) went unnoticed")
                    }
                    Err(e) => assert_table_corruption(&e, meta.file_size, &format!("byte {i}")),
                }
                fs.corrupt(&table_path(), i, mask).unwrap();
            }
        }
    }
}

#[test]
fn every_truncation_fails_to_open() {
    let fs = MemFs::new();
    let meta = write(&fs, &table_path(), &TableOptions::default(), &sample(40));
    let bytes = read_all(&fs, &table_path()).unwrap();
    for len in 0..meta.file_size as usize {
        let path = PathBuf::from(format!("/cut-{len}.sst"));
        fs.create(&path).unwrap().append(&bytes[..len]).unwrap();
        for access in [Access::Pread, Access::Map] {
            let err = open_with(&fs, &path, 0, access).unwrap_err();
            assert_table_corruption(&err, meta.file_size, &format!("length {len} {access:?}"));
            if len < FOOTER_LEN {
                let reason = &err.as_corruption().unwrap().reason;
                assert!(matches!(reason, Reason::FileTooSmall { .. }), "{reason:?}");
            }
        }
    }
}

/// Replaces the footer of the table at `table_path()` with `edit(footer bytes)`, re-sealing
/// its checksum.
fn rewrite_footer(fs: &MemFs, edit: impl Fn(&mut [u8])) -> PathBuf {
    let mut bytes = read_all(fs, &table_path()).unwrap();
    let start = bytes.len() - FOOTER_LEN;
    edit(&mut bytes[start..]);
    let crc = Checksum::of(&bytes[start..start + 52]).masked();
    bytes[start + 52..start + 56].copy_from_slice(&crc.to_le_bytes());
    let path = PathBuf::from("/forged.sst");
    let _ = fs.remove(&path);
    fs.create(&path).unwrap().append(&bytes).unwrap();
    path
}

#[test]
fn footer_checks_magic_version_and_handles() {
    let fs = MemFs::new();
    let meta = write(&fs, &table_path(), &TableOptions::default(), &sample(40));
    let len = meta.file_size;

    let path = rewrite_footer(&fs, |f| f[63] = b'X');
    let err = open(&fs, &path, 0).unwrap_err();
    let c = err.as_corruption().unwrap();
    assert_eq!(c.offset, len - FOOTER_LEN as u64);
    assert_eq!(
        c.reason,
        Reason::BadMagic {
            found: u32::from_le_bytes(*b"NSSX")
        }
    );

    let path = rewrite_footer(&fs, |f| f[48..52].copy_from_slice(&9u32.to_le_bytes()));
    match open(&fs, &path, 0) {
        Err(Error::UnsupportedVersion {
            file: FileKind::Table,
            major: 9,
            ..
        }) => {}
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }

    // Each handle pointing past the file, and one leaving a gap: refused before reading.
    for field in [0usize, 16, 32] {
        for offset in [len, u64::MAX - 3, 1] {
            let path = rewrite_footer(&fs, |f| {
                f[field..field + 8].copy_from_slice(&offset.to_le_bytes())
            });
            let err = open(&fs, &path, 0).unwrap_err();
            let c = err.as_corruption().unwrap();
            assert!(
                matches!(c.reason, Reason::HeaderField { .. }),
                "{:?}",
                c.reason
            );
            assert_eq!(c.offset, len - FOOTER_LEN as u64);
        }
    }
}
