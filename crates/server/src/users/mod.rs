//! Users: who may connect (`AUTH user password`) and what they may run.
//!
//! Cairn's user model is the part of Redis's ACL users that maps onto a store without
//! per-key or per-command rules:
//! * on or off (an `off` user cannot AUTH; connections already authenticated as it go on);
//! * any number of passwords, kept only as SHA-256 hashes, or `nopass` (any password);
//! * command permissions ([`Commands`]): none (`-@all`), or all (`+@all`) less the `write`
//!   and/or the `admin` commands (`-@write`, `-@admin`), judged by the flags in the
//!   command table;
//! * all keys (`~*`) or none (a command naming a key is refused), and all channels or
//!   none (Cairn serves no channel command: shown, never checked).
//!
//! `rules.rs` reads and writes Redis's rule language over this model (ACL SETUSER, ACL
//! LIST, the users file), `file.rs` the users file, `registry.rs` the server's mutable
//! set of users that ACL SETUSER, DELUSER and LOAD change at runtime, `log.rs` the record
//! of refusals ACL LOG shows.
//!
//! Invariants: passwords are kept only as SHA-256 hashes, and neither `Debug` nor any
//! reply or error shows a password (a rule `>password` is echoed as `>...`). A check
//! hashes the password given and compares all 32 bytes of each of the user's hashes
//! whatever they hold, and hashes it even for an unknown or `off` user, so the time of a
//! refusal tells nothing about a password (only the number of the user's passwords).

mod file;
mod log;
mod registry;
mod rules;

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

pub(crate) use log::{AclLog, Reason};
pub(crate) use registry::{Registry, SetError};
pub(crate) use rules::{command_rules, describe, flags};

/// A SHA-256 digest.
type Hash = [u8; 32];

/// The commands a user may run: none, or all less the `write` and/or `admin` ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Commands {
    /// Any command at all (`+@all`); false: none (`-@all`), and then so are the others.
    pub(crate) any: bool,
    /// Commands flagged `write`.
    pub(crate) write: bool,
    /// Commands flagged `admin`.
    pub(crate) admin: bool,
}

impl Commands {
    pub(crate) const ALL: Commands = Commands {
        any: true,
        write: true,
        admin: true,
    };
    pub(crate) const NONE: Commands = Commands {
        any: false,
        write: false,
        admin: false,
    };
    pub(crate) const READ_ONLY: Commands = Commands {
        any: true,
        write: false,
        admin: false,
    };
}

/// One user.
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    /// The registry's identity of the user (0 until registered): a user deleted and
    /// made again under its name is another user (`registry.rs`).
    pub(crate) id: u64,
    pub(crate) name: String,
    /// `on`: the user may AUTH.
    pub(crate) enabled: bool,
    /// Any password is the user's (`nopass`).
    pub(crate) nopass: bool,
    /// The hashes of the user's passwords, in the order they were added, without repeats.
    hashes: Vec<Hash>,
    pub(crate) commands: Commands,
    /// `~*`: every key (else none).
    pub(crate) all_keys: bool,
    /// `&*`: every channel (else none).
    pub(crate) all_channels: bool,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("name", &self.name)
            .field("enabled", &self.enabled)
            .field("passwords", &self.hashes.len())
            .field("commands", &self.commands)
            .finish_non_exhaustive()
    }
}

impl User {
    /// An enabled user whose one password is `password`, with every key and either every
    /// command or the read-only ones (no `write` or `admin` command).
    pub fn new(name: impl Into<String>, password: &str, readonly: bool) -> User {
        User {
            hashes: vec![hash(password.as_bytes())],
            enabled: true,
            commands: if readonly {
                Commands::READ_ONLY
            } else {
                Commands::ALL
            },
            all_keys: true,
            all_channels: true,
            ..User::blank(name.into())
        }
    }

    /// A user as ACL SETUSER makes a new one, and as the rule `reset` leaves one: off, no
    /// password, no command, no key, no channel.
    pub(crate) fn blank(name: String) -> User {
        User {
            id: 0,
            name,
            enabled: false,
            nopass: false,
            hashes: Vec::new(),
            commands: Commands::NONE,
            all_keys: false,
            all_channels: false,
        }
    }

    /// The `default` user with no password: `open` (a server without passwords, every
    /// connection authenticated) or off (a server whose users file names no `default`).
    pub(crate) fn passwordless_default(open: bool) -> User {
        User {
            enabled: open,
            nopass: true,
            commands: Commands::ALL,
            all_keys: true,
            all_channels: true,
            ..User::blank("default".into())
        }
    }

    /// True if a connection authenticates as this user without AUTH (Redis: the
    /// `default` user is `on` and `nopass`).
    pub(crate) fn open(&self) -> bool {
        self.enabled && self.nopass
    }

    /// True if the user may run a command with these flags (see [`Commands`]).
    pub(crate) fn may_run(&self, write: bool, admin: bool) -> bool {
        let c = self.commands;
        c.any && (c.write || !write) && (c.admin || !admin)
    }

    /// True if the user may run a plain write of keys (a batched SET or INCR).
    pub(crate) fn may_write_keys(&self) -> bool {
        self.may_run(true, false) && self.all_keys
    }

    /// The hashes of the user's passwords, in lower-case hex.
    pub(crate) fn password_hashes(&self) -> impl Iterator<Item = String> + '_ {
        self.hashes.iter().map(hex)
    }
}

/// The users a server knows (see `file.rs` for the users file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Users {
    list: Vec<Arc<User>>,
}

impl Users {
    /// Reads a users file.
    ///
    /// # Errors
    /// `Io` if it cannot be read; `Config` naming the line of a malformed entry.
    pub fn load(path: &std::path::Path) -> Result<Users> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        Users::parse(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))
    }

    /// Parses the text of a users file (`file.rs`).
    ///
    /// # Errors
    /// `Config` naming the line of a malformed entry or a repeated name.
    pub fn parse(text: &str) -> Result<Users> {
        file::parse(text)
    }

    /// Adds `user`, replacing one of the same name.
    pub fn insert(&mut self, user: User) {
        self.list.retain(|u| u.name != user.name);
        self.list.push(Arc::new(user));
    }

    /// Number of users.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True if there is no user.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// These users with a `default` one if they name none: `requirepass`'s if given,
    /// else a passwordless one, open if `open` (the server has no users file), off
    /// otherwise.
    pub(crate) fn with_default(mut self, requirepass: Option<&str>, open: bool) -> Users {
        if self.find("default").is_none() {
            self.insert(match requirepass {
                Some(password) => User::new("default", password, false),
                None => User::passwordless_default(open),
            });
        }
        self
    }

    pub(crate) fn find(&self, name: &str) -> Option<&Arc<User>> {
        self.list.iter().find(|u| u.name == name)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<User>> {
        self.list.iter()
    }

    /// The users sorted by name (ACL LIST, ACL USERS, the saved file).
    pub(crate) fn sorted(&self) -> Vec<&Arc<User>> {
        let mut all: Vec<&Arc<User>> = self.list.iter().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// The user `name` if it is on and `password` is one of its passwords (or it is
    /// `nopass`); see the module docs on timing.
    #[cfg(test)]
    pub(crate) fn check(&self, name: &[u8], password: &[u8]) -> Option<Arc<User>> {
        self.check_hash(name, &hash(password))
    }

    /// As [`Users::check`], given the password's hash (`hash(password)`): the caller hashes
    /// before it takes the users' lock, so a long password holds no lock while it hashes.
    pub(crate) fn check_hash(&self, name: &[u8], given: &Hash) -> Option<Arc<User>> {
        let given = *given;
        let user = std::str::from_utf8(name).ok().and_then(|n| self.find(n));
        let mut equal = false;
        match user.map(|u| u.hashes.as_slice()) {
            Some(hashes) if !hashes.is_empty() => {
                for stored in hashes {
                    equal |= same(&given, stored);
                }
            }
            _ => {
                std::hint::black_box(same(&given, &[0; 32]));
            }
        }
        user.filter(|u| u.enabled && (u.nopass || equal)).cloned()
    }
}

pub(crate) fn hash(password: &[u8]) -> Hash {
    Sha256::digest(password).into()
}

/// Equality of two hashes in time independent of where they differ.
fn same(a: &Hash, b: &Hash) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 64 hex digits (either case) as a hash.
fn parse_hex(hex: &str) -> Option<Hash> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
        let text = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(text, 16).ok()?;
    }
    Some(out)
}

fn hex(hash: &Hash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_needs_an_enabled_user_and_one_of_its_passwords() {
        let mut users = Users::default();
        let mut two = User::new("two", "first", false);
        two.hashes.push(hash(b"second"));
        users.insert(two);
        let mut off = User::new("off", "pw", false);
        off.enabled = false;
        users.insert(off);
        let mut any = User::blank("any".into());
        any.enabled = true;
        any.nopass = true;
        users.insert(any);
        assert!(users.check(b"two", b"first").is_some());
        assert!(users.check(b"two", b"second").is_some());
        assert!(users.check(b"two", b"third").is_none());
        assert!(users.check(b"off", b"pw").is_none());
        assert!(users.check(b"any", b"whatever").is_some());
        assert!(users.check(b"nobody", b"").is_none());
        assert!(users.check(b"\xff", b"pw").is_none());
    }

    #[test]
    fn debug_shows_no_hash() {
        let user = User::new("alice", "s3cret", false);
        let shown = format!("{user:?}");
        let digest = hex(&hash(b"s3cret"));
        assert!(
            shown.contains("alice") && !shown.contains("s3cret"),
            "{shown}"
        );
        assert!(!shown.contains(&digest), "{shown}");
    }

    #[test]
    fn permissions_follow_the_commands() {
        let reader = User::new("r", "p", true);
        assert!(reader.may_run(false, false));
        assert!(!reader.may_run(true, false) && !reader.may_run(false, true));
        let blank = User::blank("b".into());
        assert!(!blank.may_run(false, false));
        let mut writer = User::new("w", "p", false);
        assert!(writer.may_write_keys());
        writer.all_keys = false;
        assert!(!writer.may_write_keys());
    }
}
