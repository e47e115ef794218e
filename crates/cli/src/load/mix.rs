//! The operation mix of a load (`--mix read=80,write=20,delete=0`): which kind each
//! operation is, drawn independently per operation with the given percentages.

use std::fmt;

use cairn_harness::Rng;

/// What one operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// A point lookup of a key.
    Read,
    /// An insert (or overwrite) of a key with a fresh value.
    Write,
    /// A removal of a key.
    Delete,
}

impl OpKind {
    /// Every kind, in report order.
    pub const ALL: [OpKind; 3] = [OpKind::Read, OpKind::Write, OpKind::Delete];

    /// The name in flags, text and JSON.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Delete => "delete",
        }
    }

    /// Position in [`OpKind::ALL`] (and in per-kind arrays).
    pub fn index(self) -> usize {
        match self {
            OpKind::Read => 0,
            OpKind::Write => 1,
            OpKind::Delete => 2,
        }
    }
}

/// Percentages of reads, writes and deletes; they add up to 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mix {
    read: u8,
    write: u8,
    delete: u8,
}

impl Mix {
    /// Only reads (the constant store's mix).
    pub const READ_ONLY: Mix = Mix {
        read: 100,
        write: 0,
        delete: 0,
    };

    /// The default of the writable backends: 80% reads, 20% writes.
    pub const DEFAULT: Mix = Mix {
        read: 80,
        write: 20,
        delete: 0,
    };

    /// Parses `read=R,write=W,delete=D`; a kind left out is 0%, the sum must be 100.
    ///
    /// # Errors
    /// A message naming the mistake.
    pub fn parse(text: &str) -> Result<Mix, String> {
        let mut mix = Mix {
            read: 0,
            write: 0,
            delete: 0,
        };
        let mut seen = [false; 3];
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part.split_once('=').ok_or_else(|| {
                format!("--mix: expected kind=percent (e.g. read=80,write=20), got {part:?}")
            })?;
            let pct: u8 = value
                .trim()
                .parse()
                .ok()
                .filter(|p| *p <= 100)
                .ok_or_else(|| {
                    format!("--mix: {name} must be a whole percentage 0..=100, got {value:?}")
                })?;
            let kind = match name.trim() {
                "read" => OpKind::Read,
                "write" => OpKind::Write,
                "delete" => OpKind::Delete,
                other => {
                    return Err(format!(
                        "--mix: unknown kind {other:?}: expected read, write or delete"
                    ))
                }
            };
            if let Some(flag) = seen.get_mut(kind.index()) {
                if *flag {
                    return Err(format!("--mix: {} given twice", kind.name()));
                }
                *flag = true;
            }
            match kind {
                OpKind::Read => mix.read = pct,
                OpKind::Write => mix.write = pct,
                OpKind::Delete => mix.delete = pct,
            }
        }
        let sum = u32::from(mix.read) + u32::from(mix.write) + u32::from(mix.delete);
        if sum != 100 {
            return Err(format!(
                "--mix: the percentages add up to {sum}, not 100 ({text:?})"
            ));
        }
        Ok(mix)
    }

    /// The percentage of `kind`.
    pub fn percent(&self, kind: OpKind) -> u8 {
        match kind {
            OpKind::Read => self.read,
            OpKind::Write => self.write,
            OpKind::Delete => self.delete,
        }
    }

    /// True if some operations change the store.
    pub fn writes(&self) -> bool {
        self.write > 0 || self.delete > 0
    }

    /// The kind of the next operation.
    pub fn pick(&self, rng: &mut Rng) -> OpKind {
        let roll = rng.below(100);
        if roll < u64::from(self.read) {
            OpKind::Read
        } else if roll < u64::from(self.read) + u64::from(self.write) {
            OpKind::Write
        } else {
            OpKind::Delete
        }
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "read={},write={},delete={}",
            self.read, self.write, self.delete
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn spellings() {
        assert_eq!(Mix::parse("read=80,write=20").unwrap(), Mix::DEFAULT);
        assert_eq!(Mix::parse("read=100").unwrap(), Mix::READ_ONLY);
        assert_eq!(
            Mix::parse("delete=10, write=30 ,read=60")
                .unwrap()
                .to_string(),
            "read=60,write=30,delete=10"
        );
        for bad in [
            "",
            "read=50",
            "read=80,write=30",
            "read=80,read=20",
            "reads=100",
            "read=x",
            "read=101",
            "read:100",
        ] {
            assert!(Mix::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn picks_follow_the_percentages() {
        let mix = Mix::parse("read=60,write=30,delete=10").unwrap();
        let mut rng = Rng::new(9, 0);
        let mut counts = [0u64; 3];
        for _ in 0..100_000 {
            if let Some(c) = counts.get_mut(mix.pick(&mut rng).index()) {
                *c += 1;
            }
        }
        let [r, w, d] = counts;
        assert!((59_000..61_000).contains(&r), "{counts:?}");
        assert!((29_000..31_000).contains(&w), "{counts:?}");
        assert!((9_400..10_600).contains(&d), "{counts:?}");
        let mut rng = Rng::new(9, 1);
        assert!((0..1000).all(|_| Mix::READ_ONLY.pick(&mut rng) == OpKind::Read));
    }
}
