//! The `memory` backend: a hash map split into shards, each behind a `parking_lot`
//! reader-writer lock, so threads touching different shards never wait for each other.
//!
//! It measures what the load itself costs (key choice, value copy, locking) with no
//! storage engine at all: the other backends' throughput is reported relative to it.
//! Nothing survives the process.

use std::collections::HashMap;

use parking_lot::RwLock;

use super::Backend;
use crate::errors::CliResult;

/// Shards (a power of two); with a few dozen threads, collisions stay rare.
const SHARDS: usize = 64;

/// A concurrent map of keys to values.
pub struct Memory {
    shards: Box<[Shard; SHARDS]>,
}

type Shard = RwLock<HashMap<Vec<u8>, Vec<u8>>>;

impl Memory {
    /// An empty map.
    pub fn new() -> Memory {
        Memory {
            shards: Box::new(std::array::from_fn(|_| RwLock::new(HashMap::new()))),
        }
    }

    /// The shard of `key` (FNV-1a of its bytes).
    #[expect(
        clippy::indexing_slicing,
        reason = "masked below SHARDS, a power of two"
    )]
    fn shard(&self, key: &[u8]) -> &Shard {
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for &b in key {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3);
        }
        &self.shards[(h >> 32) as usize & (SHARDS - 1)]
    }
}

impl Backend for Memory {
    fn load(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> CliResult<()> {
        for (k, v) in entries {
            self.shard(k).write().insert(k.clone(), v.clone());
        }
        Ok(())
    }

    fn end_preload(&self) -> CliResult<()> {
        Ok(())
    }

    fn get(&self, key: &[u8], buf: &mut Vec<u8>) -> CliResult<bool> {
        let shard = self.shard(key).read();
        Ok(match shard.get(key) {
            Some(v) => {
                buf.clear();
                buf.extend_from_slice(v);
                true
            }
            None => false,
        })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> CliResult<()> {
        let mut shard = self.shard(key).write();
        match shard.get_mut(key) {
            Some(v) => {
                v.clear();
                v.extend_from_slice(value);
            }
            None => {
                shard.insert(key.to_vec(), value.to_vec());
            }
        }
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> CliResult<()> {
        self.shard(key).write().remove(key);
        Ok(())
    }

    fn close(self: Box<Self>) -> CliResult<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn behaves_like_a_map() {
        let m = Memory::new();
        let mut buf = Vec::new();
        m.load(&[(b"a".to_vec(), b"1".to_vec())]).unwrap();
        assert!(m.get(b"a", &mut buf).unwrap());
        assert_eq!(buf, b"1");
        m.put(b"a", b"22").unwrap();
        m.put(b"b", b"3").unwrap();
        assert!(m.get(b"a", &mut buf).unwrap());
        assert_eq!(buf, b"22");
        m.delete(b"a").unwrap();
        assert!(!m.get(b"a", &mut buf).unwrap());
        assert!(m.get(b"b", &mut buf).unwrap());
        assert_eq!(m.seqnos(), None);
    }
}
