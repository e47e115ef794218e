//! Redis's ACL rule language over Cairn's user model (`mod.rs`): [`apply`] reads one rule
//! (ACL SETUSER, a `user` line of the users file) and [`describe`] writes a user back as
//! rules (ACL LIST, ACL SAVE), so a described user read again is the same user.
//!
//! Rules served, as Redis defines them (keywords in any case):
//! * `on`, `off`; `>password`, `<password`, `#<64 hex>`, `!<64 hex>`, `nopass`,
//!   `resetpass`;
//! * `+@all`/`allcommands`, `-@all`/`nocommands`, `-@write`, `-@admin`, `+@write` and
//!   `+@admin` (given `+@all`), `+@read` (given `+@all`: it adds nothing), `-@read`
//!   (given `-@all`: it removes nothing);
//! * `~*`/`allkeys`, `resetkeys`, `&*`/`allchannels`, `resetchannels`;
//! * `reset` (off, no password, `resetkeys resetchannels -@all`), `clearselectors`
//!   (Cairn's users have no selectors).
//!
//! Every other rule is refused, never approximated: a rule Redis knows that Cairn's model
//! cannot honour exactly (a key or channel pattern other than `*`, a single command, any
//! other category, a selector) with an error saying it is unsupported, anything else
//! with Redis's `Syntax error`.

use super::{hash, hex, parse_hex, Commands, User};

/// A rule refused, and why; shown as Redis shows it (`Error in ACL SETUSER modifier ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RuleError {
    /// The rule as it may be shown: a password rule only as `>...` or `<...`.
    rule: String,
    why: &'static str,
}

impl std::fmt::Display for RuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Error in ACL SETUSER modifier '{}': {}",
            self.rule, self.why
        )
    }
}

const SYNTAX: &str = "Syntax error";
const UNSUPPORTED: &str = "Cairn cannot honour this rule: it has no per-command, per-key or per-channel rules (served: on, off, >, <, #, !, nopass, resetpass, reset, +@all, -@all, -@write, -@admin, ~*, resetkeys, &*, resetchannels)";
const BAD_HASH: &str = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters";
const NO_SUCH_PASSWORD: &str = "The password you are trying to remove from the user does not exist";

/// Applies one rule to `user`; on error `user` may be half changed, so callers apply a
/// whole list to a copy (ACL SETUSER is atomic).
///
/// # Errors
/// The rule refused (module docs).
pub(crate) fn apply(user: &mut User, rule: &[u8]) -> Result<(), RuleError> {
    let fail = |why| {
        Err(RuleError {
            rule: shown(rule),
            why,
        })
    };
    let Ok(text) = std::str::from_utf8(rule) else {
        return match rule.first() {
            Some(b'>') | Some(b'<') => apply_password(user, rule),
            _ => fail(SYNTAX),
        };
    };
    let lower = text.to_ascii_lowercase();
    let c = &mut user.commands;
    match lower.as_str() {
        "on" => user.enabled = true,
        "off" => user.enabled = false,
        "nopass" => {
            user.hashes.clear();
            user.nopass = true;
        }
        "resetpass" => {
            user.hashes.clear();
            user.nopass = false;
        }
        "reset" => {
            let id = user.id;
            *user = User::blank(std::mem::take(&mut user.name));
            user.id = id;
        }
        "clearselectors" => {}
        "~*" | "allkeys" => user.all_keys = true,
        "resetkeys" => user.all_keys = false,
        "&*" | "allchannels" => user.all_channels = true,
        "resetchannels" => user.all_channels = false,
        "+@all" | "allcommands" => *c = Commands::ALL,
        "-@all" | "nocommands" => *c = Commands::NONE,
        "-@write" => c.write = false,
        "-@admin" => c.admin = false,
        "+@write" if c.any => c.write = true,
        "+@admin" if c.any => c.admin = true,
        "+@read" if c.any => {}
        "-@read" if !c.any => {}
        _ => match rule.first() {
            Some(b'>' | b'<') => return apply_password(user, rule),
            Some(b'#' | b'!') => return apply_hash(user, rule),
            Some(b'~' | b'%' | b'&' | b'(') => return fail(UNSUPPORTED),
            Some(b'+' | b'-') if rule.len() > 1 => return fail(UNSUPPORTED),
            _ => return fail(SYNTAX),
        },
    }
    Ok(())
}

/// `>password` adds a password, `<password` removes one.
fn apply_password(user: &mut User, rule: &[u8]) -> Result<(), RuleError> {
    let (op, password) = rule.split_first().unwrap_or((&b'>', &[]));
    let h = hash(password);
    if *op == b'>' {
        add(user, h);
        return Ok(());
    }
    remove(user, &h, rule)
}

/// `#<hash>` adds a hashed password, `!<hash>` removes one.
fn apply_hash(user: &mut User, rule: &[u8]) -> Result<(), RuleError> {
    let (op, digits) = rule.split_first().unwrap_or((&b'#', &[]));
    let lower_hex = digits
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    let parsed = std::str::from_utf8(digits).ok().and_then(parse_hex);
    let Some(h) = parsed.filter(|_| lower_hex) else {
        return Err(RuleError {
            rule: shown(rule),
            why: BAD_HASH,
        });
    };
    if *op == b'#' {
        add(user, h);
        return Ok(());
    }
    remove(user, &h, rule)
}

/// Adds a password's hash (once); the user is no longer `nopass`.
fn add(user: &mut User, h: [u8; 32]) {
    if !user.hashes.contains(&h) {
        user.hashes.push(h);
    }
    user.nopass = false;
}

fn remove(user: &mut User, h: &[u8; 32], rule: &[u8]) -> Result<(), RuleError> {
    let before = user.hashes.len();
    user.hashes.retain(|stored| stored != h);
    if user.hashes.len() == before {
        return Err(RuleError {
            rule: shown(rule),
            why: NO_SUCH_PASSWORD,
        });
    }
    Ok(())
}

/// How a rule may appear in an error: never a password.
fn shown(rule: &[u8]) -> String {
    match rule.first() {
        Some(b'>') => ">...".into(),
        Some(b'<') => "<...".into(),
        _ => String::from_utf8_lossy(rule).into_owned(),
    }
}

/// The user's flags as ACL GETUSER lists them.
pub(crate) fn flags(user: &User) -> Vec<&'static str> {
    let mut flags = vec![if user.enabled { "on" } else { "off" }];
    if user.nopass {
        flags.push("nopass");
    }
    flags
}

/// The user's command rules (ACL GETUSER's `commands`).
pub(crate) fn command_rules(user: &User) -> &'static str {
    match user.commands {
        Commands { any: false, .. } => "-@all",
        Commands {
            write: true,
            admin: true,
            ..
        } => "+@all",
        Commands {
            write: false,
            admin: true,
            ..
        } => "+@all -@write",
        Commands {
            write: true,
            admin: false,
            ..
        } => "+@all -@admin",
        Commands {
            write: false,
            admin: false,
            ..
        } => "+@all -@write -@admin",
    }
}

/// The user as one line of rules, as ACL LIST shows it and ACL SAVE writes it:
/// `user NAME on|off [nopass] [#<hash> ...] [~*] &*|resetchannels COMMANDS`.
pub(crate) fn describe(user: &User) -> String {
    let mut line = format!("user {}", user.name);
    for flag in flags(user) {
        line.push(' ');
        line.push_str(flag);
    }
    for h in &user.hashes {
        line.push_str(" #");
        line.push_str(&hex(h));
    }
    if user.all_keys {
        line.push_str(" ~*");
    }
    line.push_str(if user.all_channels {
        " &*"
    } else {
        " resetchannels"
    });
    line.push(' ');
    line.push_str(command_rules(user));
    line
}

/// Why `name` cannot be a user's name, as a reply's text: Redis refuses spaces and null
/// characters; Cairn also refuses other control characters, and (as its users file
/// could not hold them) empty names and names starting with `#`.
pub(crate) fn name_error(name: &[u8]) -> Option<&'static str> {
    let Ok(text) = std::str::from_utf8(name) else {
        return Some("ERR Usernames can't contain spaces or null characters");
    };
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("ERR Usernames can't contain spaces or null characters");
    }
    if text.is_empty() || text.starts_with('#') {
        return Some(
            "ERR Cairn's users file cannot hold a user name that is empty or starts with '#'",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(user: &mut User, rules: &[&str]) -> Result<(), RuleError> {
        rules.iter().try_for_each(|r| apply(user, r.as_bytes()))
    }

    #[test]
    fn a_described_user_reads_back_the_same() -> Result<(), RuleError> {
        let cases: &[&[&str]] = &[
            &[],
            &["on", ">a", ">b", "~*", "&*", "+@all"],
            &["on", "nopass", "allkeys", "allcommands", "-@write"],
            &[
                "off",
                "#5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
            ],
            &["+@all", "-@admin", "allchannels"],
            &["+@all", "-@write", "-@admin", "~*", "resetchannels"],
        ];
        for rules in cases {
            let mut user = User::blank("u".into());
            set(&mut user, rules)?;
            let line = describe(&user);
            let mut again = User::blank("u".into());
            for rule in line.split(' ').skip(2) {
                apply(&mut again, rule.as_bytes())?;
            }
            assert_eq!(user, again, "{rules:?} -> {line}");
        }
        Ok(())
    }

    #[test]
    fn passwords_add_remove_and_reset() -> Result<(), RuleError> {
        let mut u = User::blank("u".into());
        set(&mut u, &[">a", ">b", ">a"])?;
        assert_eq!(u.hashes.len(), 2);
        set(&mut u, &["<a"])?;
        assert_eq!(u.hashes, vec![hash(b"b")]);
        let removed = apply(&mut u, b"<a");
        assert_eq!(
            removed.map_err(|e| e.to_string()),
            Err("Error in ACL SETUSER modifier '<...': The password you are trying to remove from the user does not exist".into())
        );
        let h = hex(&hash(b"b"));
        set(&mut u, &[&format!("!{h}"), "nopass"])?;
        assert!(u.hashes.is_empty() && u.nopass);
        set(&mut u, &[&format!("#{h}")])?;
        assert!(!u.nopass && u.hashes.len() == 1);
        set(&mut u, &["resetpass"])?;
        assert!(!u.nopass && u.hashes.is_empty());
        assert!(apply(&mut u, format!("#{}", h.to_uppercase()).as_bytes()).is_err());
        assert!(apply(&mut u, b"#abc").is_err());
        Ok(())
    }

    #[test]
    fn unsupported_and_unknown_rules_are_refused() {
        for (rule, why) in [
            ("~foo*", UNSUPPORTED),
            ("%R~*", UNSUPPORTED),
            ("&chan", UNSUPPORTED),
            ("+get", UNSUPPORTED),
            ("-@dangerous", UNSUPPORTED),
            ("(~* +@all)", UNSUPPORTED),
            ("+@write", UNSUPPORTED), // without +@all it would grant writes only
            ("+@read", UNSUPPORTED),
            ("bogus", SYNTAX),
            ("+", SYNTAX),
            ("", SYNTAX),
        ] {
            let mut u = User::blank("u".into());
            assert_eq!(
                apply(&mut u, rule.as_bytes()).map_err(|e| e.why),
                Err(why),
                "{rule}"
            );
        }
    }

    #[test]
    fn errors_never_show_a_password() {
        let mut u = User::blank("u".into());
        let e = apply(&mut u, b"<hunter2").err().map(|e| e.to_string());
        let e = e.unwrap_or_default();
        assert!(e.contains("'<...'") && !e.contains("hunter2"), "{e}");
    }

    #[test]
    fn reset_and_names() -> Result<(), RuleError> {
        let mut u = User::new("u", "p", false);
        set(&mut u, &["reset"])?;
        assert_eq!(u, User::blank("u".into()));
        assert_eq!(describe(&u), "user u off resetchannels -@all");
        assert!(name_error(b"a b").is_some() && name_error(b"a\0").is_some());
        assert!(name_error(b"").is_some() && name_error(b"#x").is_some());
        assert!(name_error(b"alice").is_none());
        Ok(())
    }
}
