//! The users file (`cairn serve --users FILE`): reading it, and writing it back (ACL SAVE).
//!
//! One user per line, in either of two forms; blank lines and lines starting with `#`
//! are skipped, fields are separated by blanks:
//!
//! ```text
//! # name     password                                   access (optional)
//! alice      correct-horse                              readwrite
//! reporting  #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8  readonly
//! user carol on #5e88...42d8 #a665...27ae3 ~* &* +@all -@write
//! user dave off resetchannels -@all
//! ```
//!
//! * `name password [readonly|readwrite]`: an enabled user with one password, every key
//!   and every command (`readwrite`, the default) or no `write` and no `admin` command
//!   (`readonly`). A password starting with `#` followed by 64 hex digits is the SHA-256
//!   of the password (Redis's ACL files spell hashed passwords the same way).
//! * `user NAME RULE...` (at least one rule, the third field being neither `readonly`
//!   nor `readwrite`): Redis's ACL file syntax, the rules applied in order to a blank
//!   user (off, no password, no command, no key) as ACL SETUSER applies them
//!   (`rules.rs`). ACL SAVE writes every user this way, with hashed passwords only, so
//!   it can hold several passwords, `off` users and users without passwords.
//!
//! The first form stays readable as it always was; a line of it could only be taken for
//! the second if it named a user `user` and gave it a third field other than an access,
//! which the first form refuses.
//!
//! Saving is atomic: the text goes to a temporary file beside the users file, which is
//! fsynced, renamed over it, and the directory fsynced, so a crash leaves the old file
//! or the new one, whole.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;

use super::{hash, parse_hex, rules, Commands, User, Users};
use crate::error::{Error, Result};

/// Parses the text of a users file (module docs).
///
/// # Errors
/// `Config` naming the line of a malformed entry or a repeated name.
pub(super) fn parse(text: &str) -> Result<Users> {
    let mut users = Users::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| Error::Config(format!("line {}: {why}", i + 1));
        let fields: Vec<&str> = line.split_whitespace().collect();
        let user = match fields.as_slice() {
            ["user", name, first, rules @ ..] if !["readonly", "readwrite"].contains(first) => {
                if let Some(why) = rules::name_error(name.as_bytes()) {
                    return Err(bad(why.trim_start_matches("ERR ")));
                }
                let mut user = User::blank((*name).into());
                for rule in std::iter::once(first).chain(rules) {
                    rules::apply(&mut user, rule.as_bytes()).map_err(|e| bad(&e.to_string()))?;
                }
                user
            }
            [name, password] => simple(name, password, "readwrite").map_err(bad)?,
            [name, password, access] => simple(name, password, access).map_err(bad)?,
            _ => {
                return Err(bad(
                    "expected `name password [readonly|readwrite]` or `user NAME RULE...`",
                ))
            }
        };
        if users.find(&user.name).is_some() {
            return Err(bad("the user is listed twice"));
        }
        users.list.push(Arc::new(user));
    }
    Ok(users)
}

/// A user of the first form (module docs).
fn simple(name: &str, password: &str, access: &str) -> std::result::Result<User, &'static str> {
    let commands = match access {
        "readonly" => Commands::READ_ONLY,
        "readwrite" => Commands::ALL,
        _ => return Err("access must be readonly or readwrite"),
    };
    let h = match password.strip_prefix('#') {
        Some(hex) => parse_hex(hex).ok_or("a password starting with # must be 64 hex digits")?,
        None => hash(password.as_bytes()),
    };
    Ok(User {
        hashes: vec![h],
        enabled: true,
        commands,
        all_keys: true,
        all_channels: true,
        ..User::blank(name.into())
    })
}

/// The text ACL SAVE writes: a header, then every user's ACL LIST line, by name.
pub(crate) fn text(users: &Users) -> String {
    let mut out = String::from(
        "# Cairn users, written by ACL SAVE: one `user NAME RULE...` line per user in\n\
         # Redis's ACL rule syntax; passwords appear only as #<SHA-256 in hex>.\n",
    );
    for user in users.sorted() {
        out.push_str(&rules::describe(user));
        out.push('\n');
    }
    out
}

/// Replaces the file at `path` with `text`, atomically (module docs). The new file keeps
/// the old one's owner and group permissions, never any for others (without an old one:
/// readable by its owner only). The temporary file is made anew (a stale one, or a link
/// planted in its place, is removed first, and creation refuses to follow one), so its
/// permissions are the ones set here.
///
/// # Errors
/// `Io` naming the step that failed. A failure before the rename leaves the file at
/// `path` unchanged; a failed fsync of the directory after it leaves the new file in
/// place, perhaps not yet durable.
pub(crate) fn save(path: &Path, text: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{}.tmp", name.unwrap_or_else(|| "users".into())));
    let io = |op: &str| {
        let op = format!("{op} {}", tmp.display());
        move |e| Error::io(op, e)
    };
    let written = (|| {
        match std::fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io("remove the stale")(e)),
        }
        // Owner and group bits of the file it replaces, none for others; without one,
        // readable by its owner only. O_EXCL: never opened through a link.
        let mode = std::fs::metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o660);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io("create"))?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(io("set the permissions of"))?;
        f.write_all(text.as_bytes()).map_err(io("write"))?;
        f.sync_all().map_err(io("fsync"))?;
        std::fs::rename(&tmp, path).map_err(io("rename"))
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(format!("fsync {}", dir.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_hashed_passwords_and_access() -> Result<()> {
        let users = parse(
            "# comment\n\nalice s3cret\nbob #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 readonly\n",
        )?;
        assert_eq!(users.len(), 2);
        let alice = users.check(b"alice", b"s3cret").map(|u| u.commands);
        assert_eq!(alice, Some(Commands::ALL));
        // The hash above is SHA-256("password").
        assert_eq!(
            users.check(b"bob", b"password").map(|u| u.commands),
            Some(Commands::READ_ONLY)
        );
        assert!(users.check(b"alice", b"wrong").is_none());
        assert!(users.check(b"carol", b"s3cret").is_none());
        assert!(!users.iter().any(|u| rules::describe(u).contains("s3cret")));
        Ok(())
    }

    #[test]
    fn rule_lines_and_old_lines_named_user() -> Result<()> {
        let users = parse(
            "user carol on >one >two ~* &* +@all -@write\nuser dave off\nuser pw readonly\n",
        )?;
        assert!(users.check(b"carol", b"one").is_some());
        assert!(users.check(b"carol", b"two").is_some());
        let carol = users.find("carol").map(|u| (u.commands, u.all_keys));
        let expected = Commands {
            write: false,
            ..Commands::ALL
        };
        assert_eq!(carol, Some((expected, true)));
        assert_eq!(users.find("dave").map(|u| u.enabled), Some(false));
        // `user pw readonly` is the first form: a user named `user`.
        assert!(users.check(b"user", b"pw").is_some());
        Ok(())
    }

    #[test]
    fn saved_text_reads_back_the_same_users() -> Result<()> {
        let users = parse("alice s3cret\nuser carol on >a >b ~* &* +@all -@admin\nuser d off\n")?;
        let again = parse(&text(&users))?;
        let mut a: Vec<User> = users.sorted().into_iter().map(|u| (**u).clone()).collect();
        let b: Vec<User> = again.sorted().into_iter().map(|u| (**u).clone()).collect();
        a.sort_by(|x, y| x.name.cmp(&y.name));
        assert_eq!(a, b);
        assert!(!text(&users).contains("s3cret"));
        Ok(())
    }

    #[test]
    fn save_replaces_the_file() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = dir.path().join("users.acl");
        std::fs::write(&path, "old\n").map_err(|e| Error::io("write", e))?;
        save(&path, "user a off resetchannels -@all\n")?;
        let now = std::fs::read_to_string(&path).map_err(|e| Error::io("read", e))?;
        assert_eq!(now, "user a off resetchannels -@all\n");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .map_err(|e| Error::io("list", e))?
            .collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
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
            ("a b\nuser x on ~foo*\n", "line 2"),
            ("user x on\nuser x off\n", "line 2"),
            ("user x bogus\n", "line 1"),
        ] {
            match parse(text) {
                Err(Error::Config(msg)) => assert!(msg.starts_with(line), "{text:?}: {msg}"),
                other => unreachable!("{text:?} gave {other:?}"),
            }
        }
    }
}
