//! Redis's ACL categories (`ACL CAT`) over Cairn's command table.
//!
//! `ACL CAT` lists every category Redis has, so clients that enumerate them find the
//! names they expect; `ACL CAT name` lists Cairn's commands in it, which for categories of
//! data types Cairn does not serve (lists, hashes, streams, ...) is none. A command's
//! categories come from its table entry, as Redis assigns them: `read`, `write`, `admin`
//! and `fast` from its flags (`slow` when not `fast`), `string`, `connection` and
//! `transaction` from its documentation group, `keyspace` for the generic key commands and
//! those that count or drop a database's keys, `dangerous` for what Redis marks so among
//! the commands served. A command with subcommands (ACL, CLIENT, CONFIG, COMMAND) appears
//! by its name only.
//!
//! Categories decide nothing here: permissions come from the user's rules
//! (`users/rules.rs`), which understand `@all`, `@read`, `@write` and `@admin`.

use super::{has_flag, Spec, COMMANDS};

/// Every category Redis 7 lists, in its order.
pub(crate) const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// True if `spec` is in `category` (one of [`CATEGORIES`]).
fn is_in(spec: &Spec, category: &str) -> bool {
    let name = spec.name;
    match category {
        "keyspace" => spec.group == "generic" || matches!(name, "dbsize" | "flushdb" | "flushall"),
        "read" => has_flag(spec, "readonly"),
        "write" => has_flag(spec, "write"),
        "admin" => has_flag(spec, "admin"),
        "fast" => has_flag(spec, "fast"),
        "slow" => !has_flag(spec, "fast"),
        "dangerous" => has_flag(spec, "admin") || matches!(name, "flushdb" | "flushall" | "info"),
        "string" => spec.group == "string",
        "connection" => spec.group == "connection" || name == "command",
        "transaction" => spec.group == "transactions",
        _ => false,
    }
}

/// The commands in `category` (any case), in table order; `None` for a name Redis does
/// not know.
pub(crate) fn commands_in(category: &str) -> Option<Vec<&'static str>> {
    let category = category.to_ascii_lowercase();
    let category = CATEGORIES.iter().find(|c| **c == category)?;
    Some(
        COMMANDS
            .iter()
            .filter(|spec| is_in(spec, category))
            .map(|spec| spec.name)
            .collect(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_fast_or_slow_and_reads_are_not_writes() {
        let fast = commands_in("fast").unwrap();
        let slow = commands_in("slow").unwrap();
        assert_eq!(fast.len() + slow.len(), COMMANDS.len());
        let reads = commands_in("READ").unwrap();
        let writes = commands_in("write").unwrap();
        assert!(reads.contains(&"get") && reads.contains(&"mget") && reads.contains(&"scan"));
        assert!(writes.contains(&"set") && writes.contains(&"incr") && writes.contains(&"del"));
        assert!(reads.iter().all(|r| !writes.contains(r)));
    }

    #[test]
    fn categories_follow_redis() {
        assert_eq!(commands_in("admin").unwrap(), ["shutdown"]);
        assert_eq!(
            commands_in("transaction").unwrap(),
            ["multi", "exec", "discard", "watch", "unwatch"]
        );
        let keyspace = commands_in("keyspace").unwrap();
        for name in [
            "del", "exists", "expire", "ttl", "type", "scan", "dbsize", "flushdb",
        ] {
            assert!(keyspace.contains(&name), "{name}");
        }
        assert!(!keyspace.contains(&"get"));
        let dangerous = commands_in("dangerous").unwrap();
        assert!(dangerous.contains(&"flushall") && dangerous.contains(&"shutdown"));
        assert_eq!(commands_in("stream").unwrap(), Vec::<&str>::new());
        assert_eq!(commands_in("nope"), None);
        assert_eq!(CATEGORIES.len(), 21);
    }
}
