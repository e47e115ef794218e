//! `--metrics-addr`: the server's and the store's counters in Prometheus's text format
//! (version 0.0.4), over a minimal HTTP/1.0 responder: every request, whatever its path,
//! gets the metrics, and the connection closes.
//!
//! One thread serves the endpoint, one scrape at a time, with 2 s timeouts on the
//! request and the reply, so a stuck scraper delays the next scrape and nothing else. It
//! reads only counters (atomics, `Db::stats`) and the disk size measured at most every
//! 10 s (`Shared::disk_bytes`), never a keyspace.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use crate::command::COMMANDS;
use crate::shared::Shared;
use crate::stats::{Stats, LATENCY_BOUNDS_US};

/// Serves scrapes until the server stops.
pub(crate) fn serve(shared: &Shared, listener: &TcpListener) {
    for conn in listener.incoming() {
        if shared.stopping() {
            return;
        }
        let Ok(mut sock) = conn else { continue };
        let _ = sock.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = sock.set_write_timeout(Some(Duration::from_secs(2)));
        // The request line and headers: read what comes in one go (at most 8 KiB).
        let mut request = [0u8; 8192];
        let _ = sock.read(&mut request);
        let body = render(shared);
        let head = format!(
            "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = sock
            .write_all(head.as_bytes())
            .and_then(|()| sock.write_all(body.as_bytes()));
    }
}

/// The metrics page.
pub(crate) fn render(shared: &Shared) -> String {
    let mut out = String::new();
    let st = &shared.stats;
    let get = Stats::get;
    let mut counter = |name: &str, help: &str, value: u64| {
        let _ = write!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"
        );
    };
    counter(
        "cairn_connections_received_total",
        "Connections accepted.",
        get(&st.connections_received),
    );
    counter(
        "cairn_connections_rejected_total",
        "Connections refused (maxclients).",
        get(&st.rejected_connections),
    );
    counter(
        "cairn_protocol_errors_total",
        "Connections closed for a malformed request.",
        get(&st.protocol_errors),
    );
    counter(
        "cairn_net_input_bytes_total",
        "Bytes read from clients.",
        get(&st.net_input_bytes),
    );
    counter(
        "cairn_net_output_bytes_total",
        "Bytes written to clients.",
        get(&st.net_output_bytes),
    );
    counter(
        "cairn_keyspace_hits_total",
        "Reads that found their key.",
        get(&st.keyspace_hits),
    );
    counter(
        "cairn_keyspace_misses_total",
        "Reads that did not find their key.",
        get(&st.keyspace_misses),
    );
    let e = shared.db.stats();
    counter("cairn_engine_flushes_total", "Memtable flushes.", e.flushes);
    counter(
        "cairn_engine_compactions_total",
        "Compactions.",
        e.compactions,
    );
    counter(
        "cairn_engine_write_stalls_total",
        "Writes that waited for background work.",
        e.write_stalls,
    );
    counter(
        "cairn_engine_cache_hits_total",
        "Block cache hits.",
        e.cache_hits,
    );
    counter(
        "cairn_engine_cache_misses_total",
        "Block cache misses.",
        e.cache_misses,
    );
    counter(
        "cairn_engine_row_cache_hits_total",
        "Point reads of tables answered by the row cache.",
        e.row_cache_hits,
    );
    counter(
        "cairn_engine_row_cache_misses_total",
        "Point reads of tables that found no row in the row cache.",
        e.row_cache_misses,
    );
    counter(
        "cairn_engine_wal_bytes_written_total",
        "Bytes written to the log.",
        e.wal_bytes_written,
    );
    counter(
        "cairn_engine_wal_syncs_total",
        "Fsyncs of the log that made writes durable.",
        e.wal_syncs,
    );
    counter(
        "cairn_engine_flush_bytes_written_total",
        "Bytes written by flushes.",
        e.flush_bytes_written,
    );
    counter(
        "cairn_engine_compaction_bytes_written_total",
        "Bytes written by compactions.",
        e.compaction_bytes_written,
    );
    counter(
        "cairn_engine_user_bytes_written_total",
        "Key and value bytes written by clients.",
        e.user_bytes_written,
    );
    let mut gauge = |name: &str, help: &str, value: u64| {
        let _ = write!(
            out,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
        );
    };
    gauge(
        "cairn_connected_clients",
        "Clients connected now.",
        shared.client_count() as u64,
    );
    gauge(
        "cairn_engine_last_seqno",
        "Seqno of the last acknowledged write.",
        e.last_seqno,
    );
    gauge(
        "cairn_engine_durable_seqno",
        "Seqno up to which writes are fsynced.",
        e.durable_seqno,
    );
    gauge(
        "cairn_engine_table_bytes",
        "Bytes in table files.",
        e.table_bytes,
    );
    gauge(
        "cairn_engine_blob_bytes",
        "Bytes in blob files.",
        e.blob_bytes,
    );
    gauge(
        "cairn_engine_memtable_bytes",
        "Bytes in memtables.",
        e.memtable_bytes,
    );
    gauge(
        "cairn_engine_block_cache_bytes",
        "Bytes the block cache holds.",
        e.block_cache_bytes,
    );
    gauge(
        "cairn_engine_block_cache_capacity_bytes",
        "The block cache's capacity (the memory budget's cache share under a budget).",
        e.block_cache_capacity,
    );
    gauge(
        "cairn_engine_row_cache_bytes",
        "Bytes the row cache holds.",
        e.row_cache_bytes,
    );
    gauge(
        "cairn_engine_row_cache_capacity_bytes",
        "The row cache's capacity (0: none).",
        e.row_cache_capacity,
    );
    gauge(
        "cairn_engine_index_filter_bytes",
        "Bytes of decoded index and filter blocks held by open tables.",
        e.index_filter_bytes,
    );
    if let Some(budget) = e.memory_budget {
        gauge(
            "cairn_engine_memory_budget_bytes",
            "The store's memory budget (Options::memory_budget).",
            budget,
        );
    }
    if let Some(bytes) = shared.disk_bytes() {
        gauge(
            "cairn_engine_disk_bytes",
            "Bytes of every file in the store's directory (measured at most every 10 s).",
            bytes,
        );
    }
    out.push_str(
        "# HELP cairn_engine_tables Tables per level.\n# TYPE cairn_engine_tables gauge\n",
    );
    for (level, n) in e.tables_per_level.iter().enumerate() {
        let _ = writeln!(out, "cairn_engine_tables{{level=\"{level}\"}} {n}");
    }
    out.push_str("# HELP cairn_commands_total Commands run, by command.\n# TYPE cairn_commands_total counter\n");
    for (spec, c) in COMMANDS.iter().zip(&st.commands) {
        let _ = writeln!(
            out,
            "cairn_commands_total{{cmd=\"{}\"}} {}",
            spec.name,
            get(&c.calls)
        );
    }
    out.push_str("# HELP cairn_command_errors_total Commands that replied with an error.\n# TYPE cairn_command_errors_total counter\n");
    for (spec, c) in COMMANDS.iter().zip(&st.commands) {
        let _ = writeln!(
            out,
            "cairn_command_errors_total{{cmd=\"{}\"}} {}",
            spec.name,
            get(&c.failed)
        );
    }
    out.push_str(
        "# HELP cairn_command_duration_seconds Time to run a command (durability wait included).\n\
         # TYPE cairn_command_duration_seconds histogram\n",
    );
    for (spec, c) in COMMANDS.iter().zip(&st.commands) {
        let calls = get(&c.calls);
        if calls == 0 {
            continue;
        }
        let mut cumulative = 0u64;
        for (bound, n) in LATENCY_BOUNDS_US.iter().zip(&c.latency) {
            cumulative += get(n);
            let _ = writeln!(
                out,
                "cairn_command_duration_seconds_bucket{{cmd=\"{}\",le=\"{}\"}} {cumulative}",
                spec.name,
                *bound as f64 / 1e6
            );
        }
        let _ = writeln!(
            out,
            "cairn_command_duration_seconds_bucket{{cmd=\"{}\",le=\"+Inf\"}} {calls}",
            spec.name
        );
        let _ = writeln!(
            out,
            "cairn_command_duration_seconds_sum{{cmd=\"{}\"}} {}",
            spec.name,
            get(&c.usec) as f64 / 1e6
        );
        let _ = writeln!(
            out,
            "cairn_command_duration_seconds_count{{cmd=\"{}\"}} {calls}",
            spec.name
        );
    }
    out
}
