//! [`Registry`]: the users of a running server, which ACL SETUSER, ACL DELUSER and ACL
//! LOAD change while connections use them.
//!
//! Each user is an immutable `Arc<User>`; a change builds the new user aside and swaps it
//! in under the write lock, so AUTH and ACL LIST read whole users, and a SETUSER whose
//! rules fail changes nothing. Every change bumps a version counter (under the lock).
//!
//! A connection holds the `Arc<User>` it authenticated as, and the version it saw. Before
//! each command it compares that version with the registry's (one atomic load when
//! nothing changed) and, if it moved, takes its user again by identity
//! ([`Registry::current`]): so a change of a user's permissions applies to its
//! connections from their next command on, as in Redis. A user deleted (ACL DELUSER, or
//! missing from the file ACL LOAD read) is found no more: its connections are closed,
//! at their next command or within their loop's tick (`conn.rs`), as Redis disconnects
//! them. A user deleted and made again under its name is another user (a new identity),
//! so connections of the old one are closed too. ACL LOAD keeps the identity of a user
//! whose name is in both the old and the new set: its connections stay, under its new
//! rules. Turning a user `off` or changing its passwords leaves its connections as they
//! are (Redis: `off` only stops new AUTHs).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock, RwLockReadGuard};

use super::{file, rules, User, Users};

/// The users, their versions, and the next identity to give.
pub(crate) struct Registry {
    users: RwLock<Users>,
    /// Bumped under the write lock at every change.
    version: AtomicU64,
    /// The last identity given (changed under the write lock).
    last_id: AtomicU64,
    /// Held while the users file is written or read (ACL SAVE, ACL LOAD), so two never
    /// interleave.
    file: Mutex<()>,
}

/// Why ACL SETUSER refused.
pub(crate) enum SetError {
    Name(&'static str),
    Rule(rules::RuleError),
}

impl Registry {
    /// A registry of `users`, each given an identity.
    pub(crate) fn new(users: Users) -> Registry {
        let r = Registry {
            users: RwLock::new(Users::default()),
            version: AtomicU64::new(0),
            last_id: AtomicU64::new(0),
            file: Mutex::new(()),
        };
        r.replace(users);
        r
    }

    /// The users as they are now (hold the guard briefly: changes wait for it).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Users> {
        self.users.read()
    }

    /// The version of the users: it moves at every change.
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// The user of identity `id` as it is now (`None`: deleted), and the version read.
    pub(crate) fn current(&self, id: u64) -> (Option<Arc<User>>, u64) {
        let users = self.users.read();
        let user = users.iter().find(|u| u.id == id).cloned();
        (user, self.version())
    }

    /// The `default` user and the version read.
    pub(crate) fn default_user(&self) -> (Arc<User>, u64) {
        let users = self.users.read();
        let user = users
            .find("default")
            .cloned()
            .unwrap_or_else(|| Arc::new(User::passwordless_default(false)));
        (user, self.version())
    }

    fn next_id(&self) -> u64 {
        self.last_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn bump(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// ACL SETUSER: applies `rules` in order to the user `name` (a new one starts
    /// blank, `rules.rs`); on any error nothing changes.
    ///
    /// # Errors
    /// The name refused, or the first rule refused.
    pub(crate) fn set_user(&self, name: &[u8], rule_list: &[Vec<u8>]) -> Result<(), SetError> {
        if let Some(why) = rules::name_error(name) {
            return Err(SetError::Name(why));
        }
        let name = String::from_utf8_lossy(name).into_owned();
        loop {
            // The rules (which hash passwords) apply to a copy, with no lock held; the
            // result goes in only if no change came in between, else it is made again.
            let (base, seen) = {
                let users = self.users.read();
                (users.find(&name).map(|u| (**u).clone()), self.version())
            };
            let mut user = base.unwrap_or_else(|| User::blank(name.clone()));
            for rule in rule_list {
                rules::apply(&mut user, rule).map_err(SetError::Rule)?;
            }
            let mut users = self.users.write();
            if self.version() != seen {
                continue;
            }
            if user.id == 0 {
                user.id = self.next_id();
            }
            users.insert(user);
            self.bump();
            return Ok(());
        }
    }

    /// ACL DELUSER: deletes the users named (never `default`); the number deleted.
    ///
    /// # Errors
    /// Redis's text if `default` is among the names; then nothing is deleted.
    pub(crate) fn delete(&self, names: &[Vec<u8>]) -> Result<usize, &'static str> {
        if names.iter().any(|n| n == b"default") {
            return Err("ERR The 'default' user cannot be removed");
        }
        let mut users = self.users.write();
        let before = users.len();
        users
            .list
            .retain(|u| !names.iter().any(|n| n == u.name.as_bytes()));
        let deleted = before - users.len();
        if deleted > 0 {
            self.bump();
        }
        Ok(deleted)
    }

    /// Replaces every user with `users` (ACL LOAD, and the start): a user named in both
    /// keeps its identity, the others get new ones.
    pub(crate) fn replace(&self, users: Users) {
        let mut current = self.users.write();
        let mut fresh = Users::default();
        for user in users.iter() {
            let mut user = (**user).clone();
            user.id = match current.find(&user.name) {
                Some(old) => old.id,
                None => self.next_id(),
            };
            fresh.insert(user);
        }
        *current = fresh;
        self.bump();
    }

    /// ACL SAVE: writes every user to `path` (`file.rs`).
    ///
    /// # Errors
    /// `Io` if the file cannot be written; it is then unchanged.
    pub(crate) fn save(&self, path: &Path) -> crate::error::Result<()> {
        let _file = self.file.lock();
        let text = file::text(&self.users.read());
        file::save(path, &text)
    }

    /// ACL LOAD: reads `path` and replaces every user with its users and a `default`
    /// (as at the start: `requirepass`'s, else off) if it names none.
    ///
    /// # Errors
    /// `Io` or `Config` (naming the line); the users are then unchanged.
    pub(crate) fn load(&self, path: &Path, requirepass: Option<&str>) -> crate::error::Result<()> {
        let _file = self.file.lock();
        let users = Users::load(path)?.with_default(requirepass, false);
        self.replace(users);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|r| r.as_bytes().to_vec()).collect()
    }

    #[test]
    fn set_user_is_atomic_and_keeps_identity() {
        let r = Registry::new(Users::default().with_default(None, true));
        assert!(r
            .set_user(b"alice", &rules(&["on", ">pw", "~*", "+@all"]))
            .is_ok());
        let id = r.read().find("alice").map(|u| u.id);
        let v = r.version();
        assert!(r.set_user(b"alice", &rules(&["off", "~foo"])).is_err());
        assert_eq!(r.version(), v, "a refused SETUSER changes nothing");
        assert_eq!(r.read().find("alice").map(|u| u.enabled), Some(true));
        assert!(r.set_user(b"alice", &rules(&["-@write"])).is_ok());
        assert_eq!(r.read().find("alice").map(|u| u.id), id);
        assert!(r.version() > v);
        assert!(r.set_user(b"a b", &[]).is_err());
    }

    #[test]
    fn delete_and_remake_is_another_user() {
        let r = Registry::new(Users::default().with_default(None, true));
        assert!(r.set_user(b"bob", &[]).is_ok());
        let old = r.read().find("bob").map(|u| u.id).unwrap_or_default();
        assert_eq!(
            r.delete(&rules(&["default", "bob"])),
            Err("ERR The 'default' user cannot be removed")
        );
        assert_eq!(r.delete(&rules(&["bob", "nobody", "bob"])), Ok(1));
        assert!(r.current(old).0.is_none());
        assert!(r.set_user(b"bob", &[]).is_ok());
        assert!(r.current(old).0.is_none());
    }
}
