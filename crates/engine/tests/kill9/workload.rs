//! The workload both processes agree on: durability modes and crash types, store options,
//! keys, values derived from the op that wrote them, the encoding of an op in the
//! expected-state log, and the child's instructions.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cairn::{Durability, Options};

/// Set in the child's environment: the encoded [`ChildSpec`].
pub(crate) const CHILD_ENV: &str = "CAIRN_KILL9_CHILD";
/// The test the child runs.
pub(crate) const CHILD_TEST: &str = "kill9_child";
pub(crate) const KEYSPACES: [&str; 2] = ["a", "b"];
/// Keys per keyspace: few, so that overwrites and deletes of live keys are common.
pub(crate) const KEYS: u64 = 1000;
pub(crate) const PERIODIC: Duration = Duration::from_millis(10);
pub(crate) const QUEUE_DEPTH: usize = 8;
/// A child still alive after this exits by itself (and the cycle fails).
pub(crate) const CHILD_LIFETIME: Duration = Duration::from_secs(60);

pub(crate) const MSG_OPENING: &str = "kill9-child: opening";
pub(crate) const MSG_OPENED: &str = "kill9-child: opened";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Sync,
    Periodic,
    Buffered,
    Async,
    None,
    /// Each op picks one of the five above at random (not in the default run).
    Mixed,
}

/// The modes of the default run.
pub(crate) const MODES: [Mode; 5] = [
    Mode::Sync,
    Mode::Periodic,
    Mode::Buffered,
    Mode::Async,
    Mode::None,
];

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Sync => "sync",
            Mode::Periodic => "periodic",
            Mode::Buffered => "buffered",
            Mode::Async => "async",
            Mode::None => "none",
            Mode::Mixed => "mixed",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Mode> {
        MODES
            .into_iter()
            .chain([Mode::Mixed])
            .find(|m| m.name() == s)
    }

    /// The durability of one op: the mode's own, or for `Mixed` a random one.
    pub(crate) fn pick(self, rng: &mut Rng) -> Mode {
        if self != Mode::Mixed {
            return self;
        }
        match rng.below(100) {
            0..5 => Mode::Sync,
            5..25 => Mode::Periodic,
            25..50 => Mode::Buffered,
            50..75 => Mode::Async,
            _ => Mode::None,
        }
    }

    pub(crate) fn durability(self) -> Durability {
        match self {
            Mode::Sync => Durability::Sync,
            Mode::Periodic => Durability::Periodic(PERIODIC),
            Mode::Buffered => Durability::Buffered,
            Mode::Async => Durability::Async {
                queue_depth: QUEUE_DEPTH,
            },
            Mode::None | Mode::Mixed => Durability::None,
        }
    }

    /// The durability as configured, for the report.
    pub(crate) fn label(self) -> String {
        match self {
            Mode::Periodic => format!("Periodic({}ms)", PERIODIC.as_millis()),
            Mode::Async => format!("Async{{queue_depth:{QUEUE_DEPTH}}}"),
            Mode::Mixed => "Mixed (per op)".to_string(),
            other => format!("{:?}", other.durability()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Crash {
    Process,
    PowerLoss,
}

pub(crate) const CRASHES: [Crash; 2] = [Crash::Process, Crash::PowerLoss];

impl Crash {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Crash::Process => "process",
            Crash::PowerLoss => "power-loss",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Crash> {
        CRASHES.into_iter().find(|c| c.name() == s)
    }
}

/// Small sizes so that every cycle flushes and compacts; the long values (one in ten, see
/// [`value`]) are separated into the value log, so kills also land between a blob append
/// and its log record, in blob syncs and rotations, and in value-log GC.
pub(crate) fn options(mode: Mode) -> Options {
    Options::default()
        .blob_threshold(Some(512))
        .blob_file_size(64 << 10)
        .durability(mode.durability())
        .memtable_size(32 << 10)
        .max_immutable_memtables(2)
        .block_cache_size(1 << 20)
        .block_size(1024)
        .l0_compaction_trigger(2)
        .l0_slowdown_trigger(6)
        .l0_stop_trigger(10)
        .level1_size(64 << 10)
        .level_size_multiplier(4)
        .table_size(32 << 10)
        .background_threads(2)
}

/// splitmix64.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub(crate) fn mix(x: u64) -> u64 {
    Rng(x).next()
}

pub(crate) fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

pub(crate) fn key_bytes(key: u32) -> Vec<u8> {
    format!("k{key:05}").into_bytes()
}

pub(crate) fn parse_key(bytes: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(bytes).ok()?.strip_prefix('k')?;
    (s.len() == 5).then(|| s.parse().ok()).flatten()
}

/// The value op `id` writes to `key` of keyspace `ks`: `"<id>:<ks>:<key>:"` and filler,
/// usually short, one time in ten 1–4 KiB.
pub(crate) fn value(id: u64, ks: u8, key: u32) -> Vec<u8> {
    let h = mix(id.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ (u64::from(ks) << 56) ^ u64::from(key));
    let filler = if h.is_multiple_of(10) {
        1000 + (h >> 8) % 3000
    } else {
        8 + (h >> 8) % 120
    } as usize;
    let mut v = format!("{id}:{ks}:{key}:").into_bytes();
    let len = v.len() + filler;
    let mut r = Rng(h);
    while v.len() < len {
        v.extend_from_slice(&r.next().to_le_bytes());
    }
    v.truncate(len);
    v
}

/// The op id a stored value names, if the value is exactly what that op wrote.
pub(crate) fn parse_value(ks: u8, key: u32, bytes: &[u8]) -> Option<u64> {
    let end = bytes.iter().position(|&b| b == b':')?;
    let id: u64 = std::str::from_utf8(&bytes[..end]).ok()?.parse().ok()?;
    (value(id, ks, key) == bytes).then_some(id)
}

/// One write of an op: put (`a+17`) or delete (`b-3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) ks: u8,
    pub(crate) key: u32,
    pub(crate) put: bool,
}

impl Entry {
    pub(crate) fn encode(self) -> String {
        format!(
            "{}{}{}",
            KEYSPACES[usize::from(self.ks)],
            if self.put { '+' } else { '-' },
            self.key
        )
    }

    pub(crate) fn parse(s: &str) -> Option<Entry> {
        let pos = s.find(['+', '-'])?;
        let ks = KEYSPACES.iter().position(|k| *k == &s[..pos])? as u8;
        let put = s[pos..].starts_with('+');
        let key = s[pos + 1..].parse().ok()?;
        Some(Entry { ks, key, put })
    }
}

/// The child's instructions, passed in [`CHILD_ENV`].
pub(crate) struct ChildSpec {
    pub(crate) mode: Mode,
    pub(crate) crash: Crash,
    pub(crate) seed: u64,
    pub(crate) first_id: u64,
    pub(crate) dir: PathBuf,
    pub(crate) log: PathBuf,
}

impl ChildSpec {
    pub(crate) fn encode(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}",
            self.mode.name(),
            self.crash.name(),
            self.seed,
            self.first_id,
            self.dir.display(),
            self.log.display()
        )
    }

    pub(crate) fn decode(s: &str) -> Option<ChildSpec> {
        let f: Vec<&str> = s.split('\t').collect();
        if f.len() != 6 {
            return None;
        }
        Some(ChildSpec {
            mode: Mode::parse(f[0])?,
            crash: Crash::parse(f[1])?,
            seed: f[2].parse().ok()?,
            first_id: f[3].parse().ok()?,
            dir: PathBuf::from(f[4]),
            log: PathBuf::from(f[5]),
        })
    }
}
