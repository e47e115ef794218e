//! cdb2 0.8: a pure-Rust reader and writer of D. J. Bernstein's cdb format (the reader
//! maps the file). Built with `CDBWriter` (a temporary file renamed into place), looked up
//! with `CDB::get`, which returns an owned copy of the value.

use std::path::Path;

use anyhow::Context as _;

use super::{bench_key, bench_value, ConstantStore, StackBuf};

const CDB_FILE: &str = "bench.cdb";

/// The cdb2 crate.
#[derive(Default)]
pub struct Cdb2 {
    reader: Option<cdb2::CDB>,
}

impl Cdb2 {
    /// A store with nothing built yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl ConstantStore for Cdb2 {
    fn name(&self) -> String {
        "cdb2".to_owned()
    }

    fn build(&mut self, dir: &Path, n: u64) -> anyhow::Result<()> {
        let mut writer = cdb2::CDBWriter::create(dir.join(CDB_FILE)).context("cdb2: create")?;
        let (mut kb, mut vb) = (StackBuf::new(), StackBuf::new());
        for i in 0..n {
            writer
                .add(bench_key(&mut kb, i), bench_value(&mut vb, i))
                .context("cdb2: add")?;
        }
        writer.finish().context("cdb2: finish")?;
        Ok(())
    }

    fn open(&mut self, dir: &Path) -> anyhow::Result<()> {
        self.reader = Some(cdb2::CDB::open(dir.join(CDB_FILE)).context("cdb2: open")?);
        Ok(())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool> {
        let reader = self.reader.as_ref().context("cdb2: not open")?;
        match reader.get(key) {
            Some(value) => {
                *out = value.context("cdb2: get")?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
