//! The Markdown page of a run's [`Report`]: one table per part with Cairn's ratio to each
//! peer, and the targets with whether they were met. The transaction tables come from
//! `txn_report.rs`; this module assembles the page, so the report's data (`report.rs`)
//! knows nothing of how it is shown.

use std::fmt::Write as _;

use cairn_harness::report::thousands;

use crate::data::KEY_LEN;
use crate::report::{find, human_size, large_by_size, select, stores, workloads, Report, Target};
use crate::row::Row;

/// Cairn's figure over the best peer's, for a metric where more is better.
fn best_peer<'a>(
    rows: &[&'a Row],
    workload: &str,
    metric: fn(&Row) -> f64,
) -> Option<(&'a Row, &'a Row)> {
    let cairn = find(rows, "cairn", workload)?;
    let best = rows
        .iter()
        .copied()
        .filter(|r| r.workload == workload && r.store != "cairn")
        .max_by(|a, b| metric(a).total_cmp(&metric(b)))?;
    Some((cairn, best))
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}×", a / b)
    } else {
        "–".to_owned()
    }
}

/// The Markdown page of `report`.
pub fn markdown(report: &Report) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Cairn and its peers\n");
    let _ = writeln!(md, "- Command: `{}`", report.command);
    let _ = writeln!(md, "- Machine: {}", report.machine);
    if let Some(noise) = &report.noise {
        let _ = writeln!(
            md,
            "- Latency floor, measured before the stores ran: {}. Every store's tail latencies include such gaps (see `noise.rs`).",
            noise.describe()
        );
    }
    let _ = writeln!(
        md,
        "- Every store gets a cache of {} MiB where it has one, 16-byte keys, values that compress to half, and commits that reach the OS without an fsync (see the durability column).",
        report.cache_mb
    );
    let _ = writeln!(md, "- {}", report.go_note);
    for failure in &report.failures {
        let _ = writeln!(md, "- **Failed, no rows:** {}", failure.replace('\n', " "));
    }
    for note in &report.notes {
        let _ = writeln!(md, "- {}", note.replace('\n', " "));
    }
    let _ = writeln!(md);
    targets(&mut md, report);
    stores_table(&mut md, report);
    ordered_tables(&mut md, report);
    open_tables(&mut md, report);
    reader_tables(&mut md, report);
    large_tables(&mut md, report);
    constant_table(&mut md, report);
    crate::txn_report::tables(&mut md, report);
    md
}

fn stores_table(md: &mut String, report: &Report) {
    let all: Vec<&Row> = report.rows.iter().collect();
    if all.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Stores\n");
    let _ = writeln!(md, "| store | configuration | durability of a commit |");
    let _ = writeln!(md, "|---|---|---|");
    for name in stores(&all) {
        if let Some(r) = all.iter().find(|r| r.store == name) {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                r.store,
                r.config.replace('|', "\\|"),
                r.durability.replace('|', "\\|")
            );
        }
    }
    let _ = writeln!(md);
}

fn ordered_tables(md: &mut String, report: &Report) {
    let mut threads: Vec<usize> = report
        .rows
        .iter()
        .filter(|r| r.suite == "ordered")
        .map(|r| r.threads)
        .collect();
    threads.sort_unstable();
    threads.dedup();
    for t in threads {
        let rows = select(report, "ordered", Some(t), None);
        let names = stores(&rows);
        let Some(first) = rows.first() else { continue };
        let _ = writeln!(
            md,
            "## Ordered workloads, {} thread{} ({} keys, {}-byte values, batches of {})\n",
            t,
            if t == 1 { "" } else { "s" },
            thousands(first.num as f64),
            first.value_size,
            first.batch
        );
        let _ = writeln!(md, "Operations per second (scans: entries per second).\n");
        table_header(md, &["workload"], &names, &[("Cairn ÷ best peer", "---")]);
        for w in workloads(&rows).into_iter().filter(|w| !is_one_off(w)) {
            let _ = write!(md, "| {w} |");
            for n in &names {
                let cell =
                    find(&rows, n, &w).map_or("–".to_owned(), |r| thousands(r.ops_per_sec));
                let _ = write!(md, " {cell} |");
            }
            let cell = best_peer(&rows, &w, |r| r.ops_per_sec)
                .map_or("–".to_owned(), |(c, b)| {
                    format!("{} ({})", ratio(c.ops_per_sec, b.ops_per_sec), b.store)
                });
            let _ = writeln!(md, " {cell} |");
        }
        let _ = writeln!(md);
        let _ = writeln!(
            md,
            "Latency in µs, p50 / p99 / p99.9 (a batch of writes is one operation; scans: time per entry).\n"
        );
        table_header(md, &["workload"], &names, &[]);
        for w in workloads(&rows).into_iter().filter(|w| !is_one_off(w)) {
            let _ = write!(md, "| {w} |");
            for n in &names {
                let cell = find(&rows, n, &w).map_or("–".to_owned(), |r| {
                    format!("{:.1} / {:.1} / {:.1}", r.p50_us, r.p99_us, r.p999_us)
                });
                let _ = write!(md, " {cell} |");
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md);
        space_table(
            md,
            &rows,
            &names,
            "Space after each workload, MB (10^6 bytes).",
            |r| r.disk_bytes,
        );
        if rows.iter().any(|r| r.settled_disk_bytes.is_some()) {
            space_table(
                md,
                &rows,
                &names,
                "Space after each workload and `--settle-seconds` of idle time (the same \
                 for every store, with the store open, so its background flushes and \
                 compactions may run), MB.",
                |r| r.settled_disk_bytes,
            );
        }
        resources_table(md, &rows, &names);
    }
}

/// Rows of one timed step before a store's reads (`--reopen`, `--compact-before-reads`),
/// not throughput: the workload name and the label of its row in the resources table.
const ONE_OFF_STEPS: [(&str, &str); 2] =
    [("reopen", "reopen"), ("compact", "compact before reads")];

/// True for a row of [`ONE_OFF_STEPS`].
fn is_one_off(workload: &str) -> bool {
    ONE_OFF_STEPS.iter().any(|(step, _)| *step == workload)
}

/// Open time, peak memory and write amplification, where the rows have them (the Rust
/// stores' workers measure them; see `resources.rs`).
fn resources_table(md: &mut String, rows: &[&Row], names: &[String]) {
    let measured = rows
        .iter()
        .any(|r| r.peak_rss_bytes.is_some() || r.disk_write_bytes.is_some());
    if !measured {
        return;
    }
    let _ = writeln!(
        md,
        "Reopen and resources: the time to close-and-open the store before its reads \
         (`--reopen`), the time to compact it before its reads (`--compact-before-reads`), \
         the worker process's peak resident memory (`VmHWM`; mapped file pages \
         count once touched), and per write workload the bytes the process wrote to files \
         during it and its idle time (`/proc/self/io` `write_bytes`: a page counts each time \
         it is dirtied anew, so rewrites of a page not yet written back count once), MB, \
         with the write amplification (those bytes over the keys and values written).\n"
    );
    table_header(md, &["what"], names, &[]);
    for (step, label) in ONE_OFF_STEPS {
        if rows.iter().any(|r| r.workload == step) {
            let _ = write!(md, "| {label}, ms |");
            for n in names {
                let cell = find(rows, n, step)
                    .map_or("–".to_owned(), |r| format!("{:.1}", r.seconds * 1e3));
                let _ = write!(md, " {cell} |");
            }
            let _ = writeln!(md);
        }
    }
    let _ = write!(md, "| peak RSS, MB |");
    for n in names {
        let peak = rows
            .iter()
            .filter(|r| &r.store == n)
            .filter_map(|r| r.peak_rss_bytes)
            .max();
        let cell = peak.map_or("–".to_owned(), |b| format!("{:.0}", b as f64 / 1e6));
        let _ = write!(md, " {cell} |");
    }
    let _ = writeln!(md);
    for w in WRITE_WORKLOADS {
        if !rows
            .iter()
            .any(|r| r.workload == w && r.disk_write_bytes.is_some())
        {
            continue;
        }
        let _ = write!(md, "| written during {w}, MB (amplification) |");
        for n in names {
            let cell = find(rows, n, w)
                .and_then(|r| Some((r.disk_write_bytes?, user_bytes(r))))
                .map_or("–".to_owned(), |(disk, user)| {
                    let amp = if user > 0 {
                        disk as f64 / user as f64
                    } else {
                        0.0
                    };
                    format!("{:.0} ({amp:.2}×)", disk as f64 / 1e6)
                });
            let _ = write!(md, " {cell} |");
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md);
}

/// The write workloads, in the order they run.
const WRITE_WORKLOADS: [&str; 5] = [
    "fillseq",
    "fillrandom",
    "overwrite",
    "putrandom",
    "deleterandom",
];

/// Bytes of keys and values a write workload's row wrote: keys alone for deletes.
fn user_bytes(r: &Row) -> u64 {
    let per_op = if r.workload == "deleterandom" {
        KEY_LEN
    } else {
        KEY_LEN + r.value_size
    };
    r.ops * per_op as u64
}

/// One row per write workload of `rows`, one column per store of `names`: `bytes` of each
/// row in MB.
fn space_table(
    md: &mut String,
    rows: &[&Row],
    names: &[String],
    title: &str,
    bytes: fn(&Row) -> Option<u64>,
) {
    let _ = writeln!(md, "{title}\n");
    table_header(md, &["after"], names, &[]);
    for w in WRITE_WORKLOADS {
        if !rows.iter().any(|r| r.workload == w) {
            continue;
        }
        let _ = write!(md, "| {w} |");
        for n in names {
            let cell = find(rows, n, w)
                .and_then(bytes)
                .map_or("–".to_owned(), |b| format!("{:.1}", b as f64 / 1e6));
            let _ = write!(md, " {cell} |");
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md);
}

/// Milliseconds, with a precision that suits them.
fn ms(us: f64) -> String {
    let ms = us / 1e3;
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

/// Cairn's speed over a store's, from two times (or any figure where less is better):
/// the store's time over Cairn's, to two significant digits when it is below 0.1 (an
/// open can be hundreds of times faster than another).
fn speed_ratio(cairn: f64, other: f64) -> String {
    if cairn <= 0.0 {
        return "–".to_owned();
    }
    let r = other / cairn;
    if r > 0.0 && r < 0.1 {
        let digits = (1.0 - r.log10().floor()).clamp(2.0, 8.0) as usize;
        format!("{r:.digits$}×")
    } else {
        ratio(other, cairn)
    }
}

/// The `open-ro` rows: one table per key count, a line per store and read mode.
fn open_tables(md: &mut String, report: &Report) {
    let rows = select(report, "open", None, None);
    let mut nums: Vec<u64> = rows.iter().map(|r| r.num).collect();
    nums.sort_unstable();
    nums.dedup();
    for num in nums {
        let at: Vec<&Row> = rows.iter().copied().filter(|r| r.num == num).collect();
        let Some(first) = at.first() else { continue };
        let _ = writeln!(
            md,
            "## Read-only opens ({} keys, {}-byte values, flushed and compacted)\n",
            thousands(num as f64),
            first.value_size
        );
        let _ = writeln!(
            md,
            "A fresh process opens the closed store, then looks one random key up; medians of {} opens. Warm: the files in the page cache; cold: dropped from it first (`posix_fadvise(DONTNEED)`). Cairn ÷ store: the store's time over Cairn's read-only open's (above 1×: Cairn opens faster).\n",
            first.ops
        );
        let _ = writeln!(
            md,
            "| store | opened with | open, ms | first get, µs | cold open, ms | cold first get, µs | files opened | RSS added, MB | Cairn ÷ store, warm | Cairn ÷ store, cold |"
        );
        let _ = writeln!(md, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|");
        let cairn_warm = find(&at, "cairn", "open-ro");
        let cairn_cold = find(&at, "cairn", "open-ro-cold");
        for name in stores(&at) {
            let warm = find(&at, &name, "open-ro");
            let cold = find(&at, &name, "open-ro-cold");
            let Some(any) = warm.or(cold) else { continue };
            let fig = |r: Option<&Row>, f: fn(&Row) -> String| r.map_or("–".to_owned(), f);
            let vs = |c: Option<&Row>, r: Option<&Row>| match (c, r) {
                (Some(c), Some(r)) if name != "cairn" => speed_ratio(c.p50_us, r.p50_us),
                _ => "–".to_owned(),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                name,
                any.config,
                fig(warm, |r| ms(r.p50_us)),
                fig(warm, |r| format!("{:.0}", r.first_get_us.unwrap_or(0.0))),
                fig(cold, |r| ms(r.p50_us)),
                fig(cold, |r| format!("{:.0}", r.first_get_us.unwrap_or(0.0))),
                fig(warm.or(cold), |r| format!(
                    "{:.0}",
                    r.files_opened.unwrap_or(0.0)
                )),
                fig(warm.or(cold), |r| format!("{:.1}", r.rss_mb.unwrap_or(0.0))),
                vs(cairn_warm, warm),
                vs(cairn_cold, cold),
            );
        }
        let _ = writeln!(md);
    }
}

/// Whether the readers `cairn` and `peer` are compared: a follower (`-follower`,
/// `-secondary`) with a follower, a fixed view with a fixed view, and LMDB's readers, which
/// see every commit as it lands, with both.
fn comparable(cairn: &str, peer: &str) -> bool {
    let follows = |s: &str| s.ends_with("-follower") || s.ends_with("-secondary");
    peer == "lmdb" || follows(cairn) == follows(peer)
}

/// The `mp-readers` rows: one table of throughput and one of latency per key count.
fn reader_tables(md: &mut String, report: &Report) {
    let rows = select(report, "readers", None, None);
    let mut nums: Vec<u64> = rows.iter().map(|r| r.num).collect();
    nums.sort_unstable();
    nums.dedup();
    for num in nums {
        let at: Vec<&Row> = rows.iter().copied().filter(|r| r.num == num).collect();
        let names = stores(&at);
        let cairns: Vec<&String> = names.iter().filter(|n| n.starts_with("cairn")).collect();
        let peers: Vec<&String> = names.iter().filter(|n| !n.starts_with("cairn")).collect();
        let mut counts: Vec<usize> = at.iter().map(|r| r.threads).collect();
        counts.sort_unstable();
        counts.dedup();
        let _ = writeln!(
            md,
            "## Reader processes beside one writer process ({} keys)\n",
            thousands(num as f64)
        );
        let _ = writeln!(
            md,
            "Reads per second of all reader processes together / the writer process's puts per second in the same window{}. Each reader: one thread of random point lookups; the writer: single puts of random keys at a steady rate. Cairn ÷ peer: reads per second.\n",
            match at.iter().filter_map(|r| r.rounds).max() {
                Some(k) if k > 1 => format!(", the round with the median reads per second of {k}"),
                _ => String::new(),
            }
        );
        // Like with like: Cairn's read-only readers against the peers' read-only readers
        // (and LMDB's, which read every commit), Cairn's followers against the peers'
        // followers and LMDB's readers.
        let pairs: Vec<(&String, &String)> = cairns
            .iter()
            .flat_map(|&c| peers.iter().map(move |&p| (c, p)))
            .filter(|(c, p)| comparable(c, p))
            .collect();
        let tail: Vec<(String, &str)> = pairs
            .iter()
            .map(|(c, p)| (format!("{c} ÷ {p}"), "--:"))
            .collect();
        let tail_refs: Vec<(&str, &str)> = tail.iter().map(|(n, a)| (n.as_str(), *a)).collect();
        table_header(md, &["readers"], &names, &tail_refs);
        for &n in &counts {
            let _ = write!(md, "| {n} |");
            for name in &names {
                let cell = at
                    .iter()
                    .find(|r| &r.store == name && r.threads == n)
                    .map_or("–".to_owned(), |r| {
                        format!(
                            "{} / {}",
                            thousands(r.ops_per_sec),
                            thousands(r.writer_ops_per_sec.unwrap_or(0.0))
                        )
                    });
                let _ = write!(md, " {cell} |");
            }
            for (c, p) in &pairs {
                let get = |s: &String| at.iter().find(|r| &r.store == s && r.threads == n);
                let cell = match (get(c), get(p)) {
                    (Some(c), Some(p)) => ratio(c.ops_per_sec, p.ops_per_sec),
                    _ => "–".to_owned(),
                };
                let _ = write!(md, " {cell} |");
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md);
        let _ = writeln!(
            md,
            "Reads per second, slowest and fastest round; read latency, µs, p50 / p99 / p99.9 (a follower's refreshes fall into the lookups after them); the writer's put p99.9, µs; a reader's open beside the writer, ms; refreshes that moved the view, their mean and the longest call, ms.\n"
        );
        let _ = writeln!(
            md,
            "| store | readers | reads/s, range | read p50 / p99 / p99.9 | put p99.9 | open, ms | refreshes | refresh mean / max, ms |"
        );
        let _ = writeln!(md, "|---|--:|--:|--:|--:|--:|--:|--:|");
        for name in &names {
            for &n in &counts {
                let Some(r) = at.iter().find(|r| &r.store == name && r.threads == n) else {
                    continue;
                };
                let refresh = match (r.refreshes, r.refresh_mean_us, r.refresh_max_us) {
                    (Some(k), Some(mean), Some(max)) => {
                        (k.to_string(), format!("{} / {}", ms(mean), ms(max)))
                    }
                    _ => ("–".to_owned(), "–".to_owned()),
                };
                let range = match (r.ops_per_sec_min, r.ops_per_sec_max) {
                    (Some(lo), Some(hi)) => format!("{}–{}", thousands(lo), thousands(hi)),
                    _ => "–".to_owned(),
                };
                let _ = writeln!(
                    md,
                    "| {name} | {n} | {range} | {:.1} / {:.1} / {:.1} | {} | {} | {} | {} |",
                    r.p50_us,
                    r.p99_us,
                    r.p999_us,
                    r.write_p999_us
                        .map_or("–".to_owned(), |v| format!("{v:.1}")),
                    r.open_us.map_or("–".to_owned(), ms),
                    refresh.0,
                    refresh.1
                );
            }
        }
        let _ = writeln!(md);
    }
}

fn large_tables(md: &mut String, report: &Report) {
    let rows = select(report, "large", None, None);
    if rows.is_empty() {
        return;
    }
    let names = stores(&rows);
    let _ = writeln!(md, "## Large values\n");
    let _ = writeln!(
        md,
        "A fresh store per size; `fillrandom` writes the keys once in random order, `readrandom` reads as many random keys. MB/s of keys and values.\n"
    );
    table_header(
        md,
        &["value size", "workload"],
        &names,
        &[("Cairn ÷ best peer", "---"), ("Cairn ÷ rocksdb", "--:")],
    );
    for (size, at) in large_by_size(report) {
        for w in workloads(&at) {
            let _ = write!(md, "| {} | {w} |", human_size(size));
            for n in &names {
                let cell =
                    find(&at, n, &w).map_or("–".to_owned(), |r| format!("{:.1}", r.mb_per_sec));
                let _ = write!(md, " {cell} |");
            }
            let best = best_peer(&at, &w, |r| r.mb_per_sec).map_or("–".to_owned(), |(c, b)| {
                format!("{} ({})", ratio(c.mb_per_sec, b.mb_per_sec), b.store)
            });
            let rocks = match (find(&at, "cairn", &w), find(&at, "rocksdb", &w)) {
                (Some(c), Some(r)) => ratio(c.mb_per_sec, r.mb_per_sec),
                _ => "–".to_owned(),
            };
            let _ = writeln!(md, " {best} | {rocks} |");
        }
    }
    let _ = writeln!(md);
}

/// Writes a table's header row and its alignment row: the `lead` columns left-aligned,
/// one right-aligned column per store, then the `tail` columns (name, alignment cell).
fn table_header(md: &mut String, lead: &[&str], names: &[String], tail: &[(&str, &str)]) {
    let cells = lead
        .iter()
        .copied()
        .chain(names.iter().map(String::as_str))
        .chain(tail.iter().map(|(name, _)| *name));
    let _ = writeln!(md, "| {} |", cells.collect::<Vec<_>>().join(" | "));
    let align = lead
        .iter()
        .map(|_| "---")
        .chain(names.iter().map(|_| "--:"))
        .chain(tail.iter().map(|(_, align)| *align));
    let _ = writeln!(md, "|{}|", align.collect::<Vec<_>>().join("|"));
}

fn constant_table(md: &mut String, report: &Report) {
    if report.constant.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Constant stores\n");
    let _ = writeln!(
        md,
        "`n` entries `key_<i> -> value_<i>` written in order, then 1M random lookups with every value checked (the time includes opening the store), as Sparkey's `bench.c`. Per CPU-second of this process.\n"
    );
    let _ = writeln!(
        md,
        "| store | variant | n | puts/cpu-s | lookups/cpu-s | file MB |"
    );
    let _ = writeln!(md, "|---|---|--:|--:|--:|--:|");
    for r in &report.constant {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {:.1} |",
            r.store,
            r.variant,
            thousands(r.n as f64),
            thousands(r.puts_per_cpu_s),
            thousands(r.lookups_per_cpu_s),
            r.file_bytes as f64 / 1e6
        );
    }
    let _ = writeln!(md);
}

/// The targets the rows allow checking.
pub fn compute_targets(report: &Report) -> Vec<Target> {
    let mut out = Vec::new();
    let mut threads: Vec<usize> = report.rows.iter().map(|r| r.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    for t in threads {
        let rows = select(report, "ordered", Some(t), None);
        for (w, what) in [("fillrandom", "load"), ("fillseq", "sequential load")] {
            if let Some((c, b)) = best_peer(&rows, w, |r| r.ops_per_sec) {
                out.push(Target {
                    what: format!("{what} ({w}, {t} thr) vs fastest peer ({})", b.store),
                    ratio: c.ops_per_sec / b.ops_per_sec.max(f64::MIN_POSITIVE),
                    goal: 1.2,
                    lower_is_better: false,
                    figures: format!(
                        "{} vs {} ops/s",
                        thousands(c.ops_per_sec),
                        thousands(b.ops_per_sec)
                    ),
                });
            }
        }
        for (w, what) in [("readrandom", "random reads"), ("readseq", "scan")] {
            if let (Some(c), Some(l)) = (find(&rows, "cairn", w), find(&rows, "lmdb", w)) {
                out.push(Target {
                    what: format!("{what} ({w}, {t} thr) vs lmdb"),
                    ratio: c.ops_per_sec / l.ops_per_sec.max(f64::MIN_POSITIVE),
                    goal: 1.0,
                    lower_is_better: false,
                    figures: format!(
                        "{} vs {} ops/s",
                        thousands(c.ops_per_sec),
                        thousands(l.ops_per_sec)
                    ),
                });
            }
        }
        let rocks = ["rocksdb", "rocksdb-tuned"]
            .into_iter()
            .filter_map(|s| find(&rows, s, "readmissing"))
            .max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
        if let (Some(c), Some(r)) = (find(&rows, "cairn", "readmissing"), rocks) {
            out.push(Target {
                what: format!("absent-key reads (readmissing, {t} thr) vs {}", r.store),
                ratio: c.ops_per_sec / r.ops_per_sec.max(f64::MIN_POSITIVE),
                goal: 2.0,
                lower_is_better: false,
                figures: format!(
                    "{} vs {} ops/s",
                    thousands(c.ops_per_sec),
                    thousands(r.ops_per_sec)
                ),
            });
        }
        if let (Some(c), Some(r)) = (
            find(&rows, "cairn", "putrandom"),
            find(&rows, "rocksdb", "putrandom"),
        ) {
            out.push(Target {
                what: format!("p99.9 of sustained single puts (putrandom, {t} thr) vs rocksdb"),
                ratio: c.p999_us / r.p999_us.max(f64::MIN_POSITIVE),
                goal: 0.5,
                lower_is_better: true,
                figures: format!("{:.1} vs {:.1} µs", c.p999_us, r.p999_us),
            });
        }
    }
    for (size, at) in large_by_size(report) {
        if let (Some(c), Some(r)) = (
            find(&at, "cairn", "fillrandom"),
            find(&at, "rocksdb", "fillrandom"),
        ) {
            out.push(Target {
                what: format!("{} value writes vs rocksdb", human_size(size)),
                ratio: c.mb_per_sec / r.mb_per_sec.max(f64::MIN_POSITIVE),
                goal: 2.0,
                lower_is_better: false,
                figures: format!("{:.1} vs {:.1} MB/s", c.mb_per_sec, r.mb_per_sec),
            });
        }
    }
    let largest = report.constant.iter().map(|r| r.n).max();
    let at_n = |store: &str, variant: &str| {
        report
            .constant
            .iter()
            .find(|r| Some(r.n) == largest && r.store == store && r.variant == variant)
    };
    for (peer, goal) in [("tinycdb", 1.5), ("sparkey-c", 2.0)] {
        let peer_variant = if peer == "tinycdb" { "-" } else { "none" };
        for (variant, how) in [
            ("none", "one at a time"),
            ("none get_many(1024)", "get_many(1024)"),
        ] {
            if let (Some(c), Some(p)) = (at_n("cairn", variant), at_n(peer, peer_variant)) {
                out.push(Target {
                    what: format!(
                        "constant-store lookups, {how} (n = {}) vs {peer}",
                        thousands(c.n as f64)
                    ),
                    ratio: c.lookups_per_cpu_s / p.lookups_per_cpu_s.max(f64::MIN_POSITIVE),
                    goal,
                    lower_is_better: false,
                    figures: format!(
                        "{} vs {} lookups/cpu-s",
                        thousands(c.lookups_per_cpu_s),
                        thousands(p.lookups_per_cpu_s)
                    ),
                });
            }
        }
    }
    out.extend(crate::txn_report::targets(report));
    out
}

fn targets(md: &mut String, report: &Report) {
    let targets = compute_targets(report);
    if targets.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Targets\n");
    let _ = writeln!(md, "| target | Cairn vs peer | ratio | goal | met |");
    let _ = writeln!(md, "|---|---|--:|--:|---|");
    for t in &targets {
        let goal = if t.lower_is_better {
            format!("≤ {:.2}×", t.goal)
        } else {
            format!("≥ {:.2}×", t.goal)
        };
        let _ = writeln!(
            md,
            "| {} | {} | {:.2}× | {} | {} |",
            t.what,
            t.figures,
            t.ratio,
            goal,
            if t.met() { "yes" } else { "**no**" }
        );
    }
    let _ = writeln!(md);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::Duration;

    use super::*;
    use crate::row::Labels;
    use crate::workload::Outcome;

    /// A row of `ops` operations in one second, each taking `us` µs.
    fn row(suite: &str, store: &str, workload: &str, threads: usize, ops: u64, us: u64) -> Row {
        let mut latency = cairn_harness::histogram().unwrap();
        latency.saturating_record_n(us * 1000, ops);
        let outcome = Outcome {
            ops,
            elapsed: Duration::from_secs(1),
            found: None,
            latency,
            write_latency: None,
        };
        let labels = Labels {
            suite,
            store,
            config: "c",
            durability: "d",
            workload: workload.to_owned(),
            threads,
            num: 1000,
            value_size: 100,
            batch: 10,
        };
        Row::new(labels, &outcome, None)
    }

    #[test]
    fn opens_and_reader_processes_get_tables_with_ratios() {
        let mut report = Report::new("cmd".into(), 1000, 64, "go".into());
        report
            .rows
            .push(row("open", "cairn", "open-ro", 1, 5, 2000));
        report
            .rows
            .push(row("open", "rocksdb", "open-ro", 1, 5, 4000));
        report
            .rows
            .push(row("open", "lmdb", "open-ro-cold", 1, 5, 100));
        for (store, ops) in [
            ("cairn", 400_000),
            ("cairn-follower", 300_000),
            ("rocksdb-secondary", 150_000),
            ("lmdb", 800_000),
        ] {
            let mut r = row("readers", store, "mp-readers", 2, ops, 1);
            r.writer_ops_per_sec = Some(10_000.0);
            report.rows.push(r);
        }
        report.notes.push("loaded".into());
        let md = markdown(&report);
        assert!(md.contains("## Read-only opens (1,000 keys"));
        // rocksdb's open took twice Cairn's: Cairn opens 2× as fast.
        assert!(md.contains("| rocksdb | c | 4.00 |"), "{md}");
        assert!(md.contains("| 2.00× | – |"), "{md}");
        assert!(md.contains("## Reader processes beside one writer process"));
        assert!(
            md.contains("| 2 | 400,000 / 10,000 | 300,000 / 10,000 |"),
            "{md}"
        );
        assert!(md.contains(
            "cairn ÷ lmdb | cairn-follower ÷ rocksdb-secondary | cairn-follower ÷ lmdb |"
        ));
        assert!(!md.contains("cairn ÷ rocksdb-secondary"));
        assert!(md.contains("| 0.50× | 2.00× | 0.38× |"), "{md}");
        assert!(md.contains("- loaded"));

        let json = serde_json::to_string(&report).unwrap();
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(markdown(&back), md);
    }

    #[test]
    fn reopen_memory_and_write_amplification_get_a_table() {
        let mut report = Report::new("cmd".into(), 1000, 64, "go".into());
        for (store, open_us, peak, written) in [
            ("cairn", 20_000, 300_000_000u64, 348_000u64),
            ("lmdb", 50, 900_000_000, 116_000),
        ] {
            let mut fill = row("ordered", store, "fillrandom", 1, 1000, 1);
            fill.disk_write_bytes = Some(written);
            fill.peak_rss_bytes = Some(peak / 2);
            report.rows.push(fill);
            let mut reopen = row("ordered", store, "reopen", 1, 1, open_us);
            reopen.seconds = open_us as f64 / 1e6;
            report.rows.push(reopen);
            let mut compact = row("ordered", store, "compact", 1, 1, open_us * 2);
            compact.seconds = open_us as f64 * 2.0 / 1e6;
            report.rows.push(compact);
            let mut read = row("ordered", store, "readrandom", 1, 1000, 1);
            read.peak_rss_bytes = Some(peak);
            report.rows.push(read);
        }
        let md = markdown(&report);
        assert!(md.contains("| reopen, ms | 20.0 | 0.1 |"), "{md}");
        assert!(md.contains("| peak RSS, MB | 300 | 900 |"), "{md}");
        // 1,000 keys of 16 + 100 bytes: 116,000 bytes written by the user.
        assert!(
            md.contains(
                "| written during fillrandom, MB (amplification) | 0 (3.00×) | 0 (1.00×) |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| compact before reads, ms | 40.0 | 0.1 |"),
            "{md}"
        );
        // Neither the reopen nor the compaction is a throughput row.
        assert!(!md.contains("| reopen | "), "{md}");
        assert!(!md.contains("| compact | "), "{md}");
    }

    #[test]
    fn small_speed_ratios_keep_two_digits() {
        assert_eq!(speed_ratio(2.0, 4.0), "2.00×");
        assert_eq!(speed_ratio(32.4, 0.07), "0.0022×");
        assert_eq!(speed_ratio(3.0, 0.15), "0.050×");
        assert_eq!(speed_ratio(0.0, 1.0), "–");
    }

    #[test]
    fn followers_are_compared_with_followers() {
        assert!(comparable("cairn", "rocksdb"));
        assert!(comparable("cairn", "lmdb"));
        assert!(!comparable("cairn", "rocksdb-secondary"));
        assert!(comparable("cairn-follower", "rocksdb-secondary"));
        assert!(comparable("cairn-follower", "lmdb"));
        assert!(!comparable("cairn-follower", "rocksdb"));
    }
}
