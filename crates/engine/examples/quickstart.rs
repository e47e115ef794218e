//! The README's quick example: write a log, index it, read it back.
//! Run with `cargo run -p cairn --example quickstart` (works in a temporary directory).

use cairn::hash::{write_index, IndexOptions, LogOptions, LogWriter, ReadOptions, Reader};

fn main() -> cairn::Result<()> {
    let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    std::env::set_current_dir(dir.path())
        .map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;

    let mut log = LogWriter::create("fruit.spl", &LogOptions::default())?;
    log.put(b"apple", b"red")?;
    log.put(b"banana", b"yellow")?;
    log.delete(b"apple")?;
    log.close()?; // flush + fsync
    write_index("fruit.spi", "fruit.spl", &IndexOptions::default())?;

    let reader = Reader::open_with("fruit.spi", "fruit.spl", &ReadOptions::default())?;
    assert_eq!(reader.get(b"banana")?, Some(b"yellow".to_vec()));
    assert_eq!(reader.get(b"apple")?, None); // not found is Ok(None), never an error
    reader.get_many(&[b"banana".as_slice(), b"kiwi"], |i, value| {
        println!("{i}: {value:?}")
    })?;
    Ok(())
}
