//! Users: who may connect (`AUTH user password`) and whether they may write.
//!
//! A users file (`cairn serve --users FILE`) holds one user per line:
//!
//! ```text
//! # name     password                                   access (optional)
//! alice      correct-horse                              readwrite
//! reporting  #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8  readonly
//! ```
//!
//! Fields are separated by blanks; blank lines and lines starting with `#` are skipped.
//! A password starting with `#` followed by 64 hex digits is the SHA-256 of the password
//! (Redis's ACL file spells hashed passwords the same way), so the file need not hold
//! the password itself. Access is `readwrite` (the default) or `readonly`: a read-only
//! user is refused every command flagged `write` or `admin` with Redis's `NOPERM` error.
//! `--requirepass` sets the password of the `default` user unless the file names
//! `default` itself.
//!
//! Invariants: passwords are kept only as SHA-256 hashes; a check hashes the password
//! given and compares all 32 bytes whatever they hold, and hashes it even for an unknown
//! user, so neither the time of a refusal nor `ACL LIST` tells anything about a password.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// A SHA-256 digest.
type Hash = [u8; 32];

/// One user.
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    pub(crate) name: String,
    /// The password's hash (`None`: no password; only the implicit `default` user).
    hash: Option<Hash>,
    pub(crate) readonly: bool,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("name", &self.name)
            .field("readonly", &self.readonly)
            .finish_non_exhaustive()
    }
}

impl User {
    /// A user whose password is `password`.
    pub fn new(name: impl Into<String>, password: &str, readonly: bool) -> User {
        User {
            name: name.into(),
            hash: Some(hash(password.as_bytes())),
            readonly,
        }
    }

    /// The `default` user with no password (a server without passwords).
    pub(crate) fn open_default() -> User {
        User {
            name: "default".into(),
            hash: None,
            readonly: false,
        }
    }

    /// The user's line in `ACL LIST` (rules in Redis's syntax, no password or hash).
    pub(crate) fn acl_line(&self) -> String {
        let pass = if self.hash.is_some() { "" } else { " nopass" };
        let rules = if self.readonly {
            "+@all -@write -@admin"
        } else {
            "+@all"
        };
        format!("user {} on{pass} ~* &* {rules}", self.name)
    }
}

/// The users a server knows (see the module docs for the file format).
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

    /// Parses the text of a users file.
    ///
    /// # Errors
    /// `Config` naming the line of a malformed entry or a repeated name.
    pub fn parse(text: &str) -> Result<Users> {
        let mut users = Users::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| Error::Config(format!("line {}: {why}", i + 1));
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (name, password, access) = match fields.as_slice() {
                [name, password] => (*name, *password, "readwrite"),
                [name, password, access] => (*name, *password, *access),
                _ => return Err(bad("expected `name password [readonly|readwrite]`")),
            };
            let readonly = match access {
                "readonly" => true,
                "readwrite" => false,
                _ => return Err(bad("access must be readonly or readwrite")),
            };
            if users.find(name).is_some() {
                return Err(bad("the user is listed twice"));
            }
            let hash = match password.strip_prefix('#') {
                Some(hex) => parse_hex(hex)
                    .ok_or_else(|| bad("a password starting with # must be 64 hex digits"))?,
                None => hash(password.as_bytes()),
            };
            users.list.push(Arc::new(User {
                name: name.into(),
                hash: Some(hash),
                readonly,
            }));
        }
        Ok(users)
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

    pub(crate) fn find(&self, name: &str) -> Option<&Arc<User>> {
        self.list.iter().find(|u| u.name == name)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<User>> {
        self.list.iter()
    }

    /// The user `name` if `password` is theirs (see the module docs on timing).
    pub(crate) fn check(&self, name: &[u8], password: &[u8]) -> Option<Arc<User>> {
        let given = hash(password);
        let user = std::str::from_utf8(name).ok().and_then(|n| self.find(n));
        let stored = user.and_then(|u| u.hash).unwrap_or([0; 32]);
        let equal = same(&given, &stored);
        user.filter(|u| u.hash.is_some() && equal).cloned()
    }
}

fn hash(password: &[u8]) -> Hash {
    Sha256::digest(password).into()
}

/// Equality of two hashes in time independent of where they differ.
fn same(a: &Hash, b: &Hash) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_hashed_passwords_and_access() -> Result<()> {
        let users = Users::parse(
            "# comment\n\nalice s3cret\nbob #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 readonly\n",
        )?;
        assert_eq!(users.len(), 2);
        let alice = users.check(b"alice", b"s3cret").map(|u| u.readonly);
        assert_eq!(alice, Some(false));
        // The hash above is SHA-256("password").
        assert_eq!(
            users.check(b"bob", b"password").map(|u| u.readonly),
            Some(true)
        );
        assert!(users.check(b"alice", b"wrong").is_none());
        assert!(users.check(b"carol", b"s3cret").is_none());
        assert!(!users.iter().any(|u| u.acl_line().contains("s3cret")));
        Ok(())
    }

    #[test]
    fn malformed_lines_name_the_line() {
        for (text, line) in [
            ("alice\n", "line 1"),
            ("a b\nc d writeonly\n", "line 2"),
            ("a #abc\n", "line 1"),
            ("a b\na c\n", "line 2"),
            ("a b c d\n", "line 1"),
        ] {
            match Users::parse(text) {
                Err(Error::Config(msg)) => assert!(msg.starts_with(line), "{text:?}: {msg}"),
                other => unreachable!("{text:?} gave {other:?}"),
            }
        }
    }
}
