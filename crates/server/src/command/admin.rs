//! Server commands: INFO, CONFIG GET (what clients and tools probe), COMMAND (COUNT,
//! INFO, DOCS, LIST), TIME, SHUTDOWN.
//!
//! The server reports itself as Redis 7.2 in HELLO and INFO (`redis_version`), since
//! clients pick features by that number, and as Cairn in `cairn_version`.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use super::args::{self, is};
use super::store::arg;
use super::{errors, Ctx, Outcome, Spec, COMMANDS};
use crate::glob;
use crate::resp::Reply;
use crate::stats::Stats;

/// The Redis version the server speaks for.
pub(crate) const REDIS_VERSION: &str = "7.2.0";

/// Sections INFO prints without an argument (and with `default`).
const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "stats",
    "persistence",
    "keyspace",
];

pub(crate) fn info(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let asked: Vec<String> = a.iter().skip(1).map(|s| args::lower(s)).collect();
    let all = asked.iter().any(|s| s == "all" || s == "everything");
    let wants = |section: &str| {
        all || (asked.is_empty() || asked.iter().any(|s| s == "default"))
            && DEFAULT_SECTIONS.contains(&section)
            || asked.iter().any(|s| s == section)
    };
    let mut out = String::new();
    let sh = ctx.shared;
    let st = &sh.stats;
    let get = Stats::get;
    if wants("server") {
        let uptime = sh.started.elapsed().as_secs();
        let _ = write!(
            out,
            "# Server\r\nredis_version:{REDIS_VERSION}\r\ncairn_version:{}\r\nredis_mode:standalone\r\n\
             os:{} {}\r\narch_bits:64\r\nmultiplexing_api:threads\r\nprocess_id:{}\r\ntcp_port:{}\r\n\
             uptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nstore_dir:{}\r\n\r\n",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::env::consts::ARCH,
            std::process::id(),
            sh.tcp_port,
            uptime / 86_400,
            sh.db.path().display(),
        );
    }
    if wants("clients") {
        let _ = write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:0\r\n\r\n",
            sh.client_count(),
            sh.config.max_clients
        );
    }
    if wants("memory") {
        let rss = rss_bytes();
        let stats = sh.db.stats();
        let _ = write!(
            out,
            "# Memory\r\nused_memory:{rss}\r\nused_memory_rss:{rss}\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n\
             cairn_memtable_bytes:{}\r\ncairn_memory_budget:{}\r\n\r\n",
            stats.memtable_bytes,
            stats.memory_budget.unwrap_or(0)
        );
    }
    if wants("stats") {
        let _ = write!(
            out,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:0\r\n\
             total_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\n\
             keyspace_hits:{}\r\nkeyspace_misses:{}\r\nexpired_keys:0\r\nevicted_keys:0\r\n\
             total_error_replies:{}\r\nprotocol_errors:{}\r\n\r\n",
            get(&st.connections_received),
            get(&st.commands_processed),
            get(&st.net_input_bytes),
            get(&st.net_output_bytes),
            get(&st.rejected_connections),
            get(&st.keyspace_hits),
            get(&st.keyspace_misses),
            st.commands.iter().map(|c| get(&c.failed)).sum::<u64>(),
            get(&st.protocol_errors),
        );
    }
    if wants("persistence") {
        let s = sh.db.stats();
        let _ = write!(
            out,
            "# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:0\r\naof_enabled:{}\r\n\
             cairn_durability:{}\r\ncairn_last_seqno:{}\r\ncairn_durable_seqno:{}\r\ncairn_flushes:{}\r\n\
             cairn_compactions:{}\r\ncairn_write_stalls:{}\r\ncairn_table_bytes:{}\r\ncairn_wal_bytes_written:{}\r\n\
             cairn_wal_syncs:{}\r\ncairn_cache_hits:{}\r\ncairn_cache_misses:{}\r\ncairn_row_cache_hits:{}\r\n\
             cairn_row_cache_misses:{}\r\ncairn_disk_bytes:{}\r\n\r\n",
            u8::from(sh.config.durability != cairn::Durability::None),
            crate::shared::durability_name(sh.config.durability),
            s.last_seqno,
            s.durable_seqno,
            s.flushes,
            s.compactions,
            s.write_stalls,
            s.table_bytes,
            s.wal_bytes_written,
            s.wal_syncs,
            s.cache_hits,
            s.cache_misses,
            s.row_cache_hits,
            s.row_cache_misses,
            sh.disk_bytes().unwrap_or(0),
        );
    }
    if wants("commandstats") {
        out.push_str("# Commandstats\r\n");
        for (spec, c) in COMMANDS.iter().zip(&st.commands) {
            let calls = get(&c.calls);
            if calls > 0 {
                let usec = get(&c.usec);
                let _ = write!(
                    out,
                    "cmdstat_{}:calls={calls},usec={usec},usec_per_call={:.2},rejected_calls=0,failed_calls={}\r\n",
                    spec.name,
                    usec as f64 / calls as f64,
                    get(&c.failed)
                );
            }
        }
        out.push_str("\r\n");
    }
    if wants("keyspace") {
        out.push_str("# Keyspace\r\n");
        for (i, ks) in sh.keyspaces.iter().enumerate() {
            let (mut keys, mut expires) = (0u64, 0u64);
            for head in ks.range_heads::<&[u8], _>(..) {
                let (_, h) = head?;
                keys += 1;
                expires += u64::from(h.expires_at.is_some());
            }
            if keys > 0 {
                let _ = write!(out, "db{i}:keys={keys},expires={expires},avg_ttl=0\r\n");
            }
        }
    }
    Ok(Reply::Bulk(out.into_bytes()))
}

/// The process's resident set size in bytes (0 where /proc is missing).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

pub(crate) fn config(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let sub = arg(a, 1)?;
    // Every CONFIG subcommand is `@admin` in Redis.
    let lower = args::lower(sub);
    if errors::admin_subcommand("config", &lower) {
        errors::require_admin(ctx, &format!("config|{lower}"))?;
    }
    if is(sub, "get") {
        if a.len() < 3 {
            return Err(Reply::error(
                "ERR wrong number of arguments for 'config|get' command",
            ));
        }
        let table = config_table(ctx);
        let mut out = Vec::new();
        for (name, value) in &table {
            if a.iter()
                .skip(2)
                .any(|p| glob::matches(args::lower(p).as_bytes(), name.as_bytes()))
            {
                out.push((Reply::text(name), Reply::text(value)));
            }
        }
        Ok(Reply::Map(out))
    } else if is(sub, "set") {
        Err(Reply::error(format!(
            "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
            String::from_utf8_lossy(a.get(2).map(Vec::as_slice).unwrap_or_default())
        )))
    } else if is(sub, "resetstat") {
        Ok(Reply::Ok)
    } else {
        Err(errors::unknown_subcommand(sub, "config"))
    }
}

/// The parameters CONFIG GET answers: what clients and tools probe.
fn config_table(ctx: &Ctx<'_>) -> Vec<(&'static str, String)> {
    let c = &ctx.shared.config;
    let fsync = match c.durability {
        cairn::Durability::Sync => "always",
        cairn::Durability::Periodic(_) => "everysec",
        _ => "no",
    };
    vec![
        ("save", String::new()),
        (
            "appendonly",
            if c.durability == cairn::Durability::None {
                "no"
            } else {
                "yes"
            }
            .into(),
        ),
        ("appendfsync", fsync.into()),
        ("databases", c.databases.to_string()),
        ("maxmemory", "0".into()),
        ("maxmemory-policy", "noeviction".into()),
        ("maxclients", c.max_clients.to_string()),
        (
            "timeout",
            c.idle_timeout.map_or(0, |t| t.as_secs()).to_string(),
        ),
        ("bind", c.bind.to_string()),
        ("port", ctx.shared.tcp_port.to_string()),
        ("proto-max-bulk-len", c.limits.max_bulk_len.to_string()),
        (
            "client-query-buffer-limit",
            c.limits.max_request_len.to_string(),
        ),
        ("dir", ctx.shared.db.path().display().to_string()),
        ("cluster-enabled", "no".into()),
    ]
}

pub(crate) fn command(_: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    let Some(sub) = a.get(1) else {
        return Ok(Reply::Array(COMMANDS.iter().map(info_of).collect()));
    };
    let named = |i: usize| -> Vec<Option<&'static Spec>> {
        a.iter()
            .skip(i)
            .map(|n| {
                let n = args::lower(n);
                COMMANDS.iter().find(|c| c.name == n)
            })
            .collect()
    };
    match args::lower(sub).as_str() {
        "count" => Ok(Reply::Int(
            i64::try_from(COMMANDS.len()).unwrap_or(i64::MAX),
        )),
        "list" => Ok(Reply::Array(
            COMMANDS.iter().map(|c| Reply::text(c.name)).collect(),
        )),
        "info" if a.len() == 2 => Ok(Reply::Array(COMMANDS.iter().map(info_of).collect())),
        "info" => Ok(Reply::Array(
            named(2)
                .into_iter()
                .map(|c| c.map_or(Reply::NilArray, info_of))
                .collect(),
        )),
        "docs" => {
            let specs: Vec<&Spec> = if a.len() == 2 {
                COMMANDS.iter().collect()
            } else {
                named(2).into_iter().flatten().collect()
            };
            Ok(Reply::Map(
                specs
                    .into_iter()
                    .map(|c| (Reply::text(c.name), docs_of(c)))
                    .collect(),
            ))
        }
        _ => Err(errors::unknown_subcommand(sub, "command")),
    }
}

/// A command's COMMAND INFO entry: name, arity, flags, first key, last key, step, ACL
/// categories, tips, key specifications, subcommands.
fn info_of(c: &Spec) -> Reply {
    Reply::Array(vec![
        Reply::text(c.name),
        Reply::Int(c.arity),
        Reply::Set(c.flags.split_whitespace().map(Reply::simple).collect()),
        Reply::Int(c.first_key),
        Reply::Int(c.last_key),
        Reply::Int(c.step),
        Reply::Set(vec![Reply::simple(format!("@{}", c.group))]),
        Reply::Set(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
    ])
}

fn docs_of(c: &Spec) -> Reply {
    Reply::Map(vec![
        (Reply::text("summary"), Reply::text(c.summary)),
        (Reply::text("since"), Reply::text("1.0.0")),
        (Reply::text("group"), Reply::text(c.group)),
    ])
}

pub(crate) fn time(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> Outcome {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Ok(Reply::Array(vec![
        Reply::text(now.as_secs().to_string()),
        Reply::text(now.subsec_micros().to_string()),
    ]))
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]: stops the server gracefully (the options change
/// nothing: every acknowledged write is already as durable as promised, and shutdown
/// syncs the log). Like Redis, it sends no reply: the connection closes.
pub(crate) fn shutdown(ctx: &mut Ctx<'_>, a: &[Vec<u8>]) -> Outcome {
    for opt in a.iter().skip(1) {
        if !["nosave", "save", "now", "force"]
            .iter()
            .any(|w| is(opt, w))
        {
            return Err(errors::syntax());
        }
    }
    ctx.session.close = true;
    ctx.session.silent = true;
    ctx.shared.shutdown();
    Ok(Reply::Ok)
}
