//! Cairn's constant store, written and read through the public `cairn::hash` API.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use cairn::hash::{self, IndexOptions, LogOptions, LogWriter, ReadOptions, Reader};

use super::{bench_key, bench_value, compression_label, Compression, ConstantStore, StackBuf};

const LOG_FILE: &str = "bench.spl";
const INDEX_FILE: &str = "bench.spi";

/// Cairn's Sparkey-compatible constant store.
pub struct Cairn {
    /// Block compression of the log.
    pub compression: Compression,
    /// Uncompressed bytes per block (ignored for `None`).
    pub block_size: u32,
    /// Pin the index in memory when opening.
    pub pin_index: bool,
    /// Load the log into memory when opening.
    pub load_log: bool,
    reader: Option<Reader>,
}

impl Cairn {
    /// A store writing logs with `compression` in blocks of `block_size` bytes.
    pub fn new(compression: Compression, block_size: u32) -> Self {
        Cairn {
            compression,
            block_size,
            pin_index: false,
            load_log: false,
            reader: None,
        }
    }

    fn paths(dir: &Path) -> (PathBuf, PathBuf) {
        (dir.join(LOG_FILE), dir.join(INDEX_FILE))
    }

    fn engine_compression(&self) -> hash::Compression {
        match self.compression {
            Compression::None => hash::Compression::None,
            Compression::Snappy => hash::Compression::Snappy,
            Compression::Zstd => hash::Compression::Zstd,
        }
    }
}

impl ConstantStore for Cairn {
    fn name(&self) -> String {
        "cairn".to_owned()
    }

    fn variant(&self) -> String {
        compression_label(self.compression, self.block_size)
    }

    fn build(&mut self, dir: &Path, n: u64) -> anyhow::Result<()> {
        let (log, index) = Self::paths(dir);
        let options = LogOptions::default().compression(self.engine_compression(), self.block_size);
        let mut writer = LogWriter::create(&log, &options)?;
        let (mut kb, mut vb) = (StackBuf::new(), StackBuf::new());
        for i in 0..n {
            writer.put(bench_key(&mut kb, i), bench_value(&mut vb, i))?;
        }
        writer.close()?;
        hash::write_index(&index, &log, &IndexOptions::default())?;
        Ok(())
    }

    fn open(&mut self, dir: &Path) -> anyhow::Result<()> {
        let (log, index) = Self::paths(dir);
        let options = ReadOptions::default()
            .pin_index(self.pin_index)
            .load_log(self.load_log);
        self.reader = Some(Reader::open_with(&index, &log, &options)?);
        Ok(())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool> {
        let reader = self.reader.as_ref().context("cairn: store not open")?;
        Ok(reader.get_into(key, out)?)
    }

    fn get_many(
        &self,
        keys: &[&[u8]],
        check: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> anyhow::Result<()> {
        let reader = self.reader.as_ref().context("cairn: store not open")?;
        reader.get_many(keys, check)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_compression() -> anyhow::Result<()> {
        for c in [Compression::None, Compression::Snappy, Compression::Zstd] {
            super::super::tests::round_trip(&mut Cairn::new(c, 1024), 2_000)?;
        }
        Ok(())
    }
}
