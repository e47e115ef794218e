//! The table of every command: name, arity, flags, key positions, documentation group
//! and summary (what COMMAND INFO and COMMAND DOCS report), and the handler.

use super::{acl, admin, connection, keys, multi, strings, Spec};

macro_rules! spec {
    ($name:literal, $arity:expr, $flags:literal, $keys:expr, $group:literal, $summary:literal, $handler:path) => {
        Spec {
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $keys.0,
            last_key: $keys.1,
            step: $keys.2,
            group: $group,
            summary: $summary,
            handler: $handler,
        }
    };
}

const NONE: (i64, i64, i64) = (0, 0, 0);
const ONE: (i64, i64, i64) = (1, 1, 1);
const ALL: (i64, i64, i64) = (1, -1, 1);

/// Every command the server knows.
pub(crate) static COMMANDS: &[Spec] = &[
    spec!(
        "ping",
        -1,
        "fast",
        NONE,
        "connection",
        "Returns the server's liveliness response.",
        connection::ping
    ),
    spec!(
        "echo",
        2,
        "fast",
        NONE,
        "connection",
        "Returns the given string.",
        connection::echo
    ),
    spec!(
        "hello",
        -1,
        "noauth fast",
        NONE,
        "connection",
        "Handshakes with the server.",
        connection::hello
    ),
    spec!(
        "auth",
        -2,
        "noauth fast",
        NONE,
        "connection",
        "Authenticates the connection.",
        connection::auth
    ),
    spec!(
        "select",
        2,
        "fast",
        NONE,
        "connection",
        "Changes the selected database.",
        connection::select
    ),
    spec!(
        "client",
        -2,
        "",
        NONE,
        "connection",
        "A container for client connection commands.",
        connection::client
    ),
    spec!(
        "quit",
        -1,
        "noauth fast",
        NONE,
        "connection",
        "Closes the connection.",
        connection::quit
    ),
    spec!(
        "reset",
        1,
        "noauth fast",
        NONE,
        "connection",
        "Resets the connection.",
        connection::reset
    ),
    spec!(
        "get",
        2,
        "readonly fast",
        ONE,
        "string",
        "Returns the string value of a key.",
        strings::get
    ),
    spec!(
        "set",
        -3,
        "write denyoom",
        ONE,
        "string",
        "Sets the string value of a key, ignoring its type.",
        strings::set
    ),
    spec!(
        "setnx",
        3,
        "write denyoom fast",
        ONE,
        "string",
        "Set the string value of a key only when the key doesn't exist.",
        strings::setnx
    ),
    spec!(
        "setex",
        4,
        "write denyoom",
        ONE,
        "string",
        "Sets the string value and expiration time of a key.",
        strings::setex
    ),
    spec!(
        "psetex",
        4,
        "write denyoom",
        ONE,
        "string",
        "Sets both string value and expiration time in milliseconds of a key.",
        strings::psetex
    ),
    spec!(
        "getset",
        3,
        "write denyoom fast",
        ONE,
        "string",
        "Returns the previous string value of a key after setting it to a new value.",
        strings::getset
    ),
    spec!(
        "getdel",
        2,
        "write fast",
        ONE,
        "string",
        "Returns the string value of a key after deleting the key.",
        strings::getdel
    ),
    spec!(
        "mget",
        -2,
        "readonly fast",
        ALL,
        "string",
        "Atomically returns the string values of one or more keys.",
        strings::mget
    ),
    spec!(
        "mset",
        -3,
        "write denyoom",
        (1, -1, 2),
        "string",
        "Atomically creates or modifies the string values of one or more keys.",
        strings::mset
    ),
    spec!(
        "append",
        3,
        "write denyoom fast",
        ONE,
        "string",
        "Appends a string to the value of a key.",
        strings::append
    ),
    spec!(
        "strlen",
        2,
        "readonly fast",
        ONE,
        "string",
        "Returns the length of a string value.",
        strings::strlen
    ),
    spec!(
        "incr",
        2,
        "write denyoom fast",
        ONE,
        "string",
        "Increments the integer value of a key by one.",
        strings::incr
    ),
    spec!(
        "decr",
        2,
        "write denyoom fast",
        ONE,
        "string",
        "Decrements the integer value of a key by one.",
        strings::decr
    ),
    spec!(
        "incrby",
        3,
        "write denyoom fast",
        ONE,
        "string",
        "Increments the integer value of a key by a number.",
        strings::incrby
    ),
    spec!(
        "decrby",
        3,
        "write denyoom fast",
        ONE,
        "string",
        "Decrements a number from the integer value of a key.",
        strings::decrby
    ),
    spec!(
        "del",
        -2,
        "write",
        ALL,
        "generic",
        "Deletes one or more keys.",
        keys::del
    ),
    spec!(
        "unlink",
        -2,
        "write fast",
        ALL,
        "generic",
        "Deletes one or more keys.",
        keys::del
    ),
    spec!(
        "exists",
        -2,
        "readonly fast",
        ALL,
        "generic",
        "Determines whether one or more keys exist.",
        keys::exists
    ),
    spec!(
        "expire",
        -3,
        "write fast",
        ONE,
        "generic",
        "Sets the expiration time of a key in seconds.",
        keys::expire
    ),
    spec!(
        "pexpire",
        -3,
        "write fast",
        ONE,
        "generic",
        "Sets the expiration time of a key in milliseconds.",
        keys::pexpire
    ),
    spec!(
        "expireat",
        -3,
        "write fast",
        ONE,
        "generic",
        "Sets the expiration time of a key to a Unix timestamp.",
        keys::expireat
    ),
    spec!(
        "pexpireat",
        -3,
        "write fast",
        ONE,
        "generic",
        "Sets the expiration time of a key to a Unix milliseconds timestamp.",
        keys::pexpireat
    ),
    spec!(
        "ttl",
        2,
        "readonly fast",
        ONE,
        "generic",
        "Returns the expiration time in seconds of a key.",
        keys::ttl
    ),
    spec!(
        "pttl",
        2,
        "readonly fast",
        ONE,
        "generic",
        "Returns the expiration time in milliseconds of a key.",
        keys::pttl
    ),
    spec!(
        "persist",
        2,
        "write fast",
        ONE,
        "generic",
        "Removes the expiration time of a key.",
        keys::persist
    ),
    spec!(
        "type",
        2,
        "readonly fast",
        ONE,
        "generic",
        "Determines the type of value stored at a key.",
        keys::kind
    ),
    spec!(
        "scan",
        -2,
        "readonly",
        NONE,
        "generic",
        "Iterates over the key names in the database, in key order.",
        keys::scan
    ),
    spec!(
        "dbsize",
        1,
        "readonly",
        NONE,
        "server",
        "Returns the number of keys in the database.",
        keys::dbsize
    ),
    spec!(
        "flushdb",
        -1,
        "write",
        NONE,
        "server",
        "Removes all keys from the current database.",
        keys::flushdb
    ),
    spec!(
        "flushall",
        -1,
        "write",
        NONE,
        "server",
        "Removes all keys from all databases.",
        keys::flushall
    ),
    spec!(
        "info",
        -1,
        "",
        NONE,
        "server",
        "Returns information and statistics about the server.",
        admin::info
    ),
    spec!(
        "config",
        -2,
        "",
        NONE,
        "server",
        "A container for server configuration commands.",
        admin::config
    ),
    spec!(
        "command",
        -1,
        "",
        NONE,
        "server",
        "Returns detailed information about all commands.",
        admin::command
    ),
    spec!(
        "time",
        1,
        "fast",
        NONE,
        "server",
        "Returns the server time.",
        admin::time
    ),
    spec!(
        "multi",
        1,
        "fast",
        NONE,
        "transactions",
        "Starts a transaction.",
        multi::multi
    ),
    spec!(
        "exec",
        1,
        "",
        NONE,
        "transactions",
        "Executes all commands in a transaction.",
        multi::exec
    ),
    spec!(
        "discard",
        1,
        "fast",
        NONE,
        "transactions",
        "Discards a transaction.",
        multi::discard
    ),
    spec!(
        "watch",
        -2,
        "fast",
        ALL,
        "transactions",
        "Monitors changes to keys to determine the execution of a transaction.",
        multi::watch
    ),
    spec!(
        "unwatch",
        1,
        "fast",
        NONE,
        "transactions",
        "Forgets about watched keys of a transaction.",
        multi::unwatch
    ),
    spec!(
        "acl",
        -2,
        "no_multi",
        NONE,
        "server",
        "A container for Access List Control commands (WHOAMI, LIST, USERS, GETUSER, SETUSER, DELUSER, SAVE, LOAD).",
        acl::acl
    ),
    spec!(
        "shutdown",
        -1,
        "admin no_multi",
        NONE,
        "server",
        "Stops accepting clients, finishes running commands, syncs the store and exits.",
        admin::shutdown
    ),
];
