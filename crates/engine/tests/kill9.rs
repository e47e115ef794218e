//! Real `kill -9` crash cycles against the ordered store (reliability plan, layer T3).
//!
//! The test binary is both the parent and the writer: [`kill9_all_modes`] re-executes
//! the binary to run [`kill9_child`] with `CAIRN_KILL9_CHILD` set, which opens the store
//! and writes until it is killed.
//!
//! The child (one writer thread) writes single puts, single deletes and batches spanning
//! both keyspaces `a` and `b` (every third of them committed as a transaction). Each write is an *op* with a global id; every value is
//! derived from `(op id, keyspace, key)`, so a value read back names the op that wrote it;
//! one value in ten is long enough to be separated into the value log (blob files).
//! Before each op the child appends `pending <id> <mode> <entries>` to the expected-state
//! log and after it returns `acked <id> last=<last_seqno> durable=<durable_seqno> t=<µs>`.
//! Plain appends to the OS are enough: the parent, not the disk, must survive.
//!
//! The parent runs cycles in one directory per (durability mode, crash type), so each
//! child recovers what the previous cycles left: spawn the child; SIGKILL it after a
//! uniform random delay of 0–250 ms from the moment the child reports the store open, or,
//! in a fifth of the cycles, of 0–1.25 times the measured `Db::open` time from the moment
//! the child starts opening, so that kills land in recovery; reopen the store with
//! [`Db::open`]; check it against the log; fold the surviving ops into the model's base and
//! truncate the log; close; next cycle. Small memtables, tables and levels make every
//! cycle flush and compact many times, so kills land there too (the report counts kills
//! that left an incomplete table behind).
//!
//! The check: with `seq(k)` the seqno after the first `k` logged ops of the cycle, the
//! recovered `last_seqno` must be some `seq(k)`, the recovered contents must equal the
//! model after exactly those `k` ops (a prefix: no holes, batches whole, no resurrected
//! deletes, keyspaces consistent), and `k` must be at least what the contract promises:
//!
//! | mode | process crash | power loss (`LossyFs`) |
//! |---|---|---|
//! | `Sync` | every acked op | every acked op |
//! | `Periodic`, `Buffered` | every acked op | ops with seqno ≤ the last recorded `durable` |
//! | `Async { queue_depth }` | all but the last `queue_depth` acked ops | as above |
//! | `None` | ops with seqno ≤ the last recorded `durable` | as above |
//!
//! The `durable` bound applies in every row (invariant 7: `durable_seqno` never
//! overstates). The opt-in mode `mixed` (`CAIRN_KILL9_MODES=mixed`) gives each op a random
//! durability; then every op up to the last acked op whose own mode survives the crash
//! must be kept, which checks that records reach the log in seqno order whatever their
//! durability. A child that opens the store must also recover exactly what the parent
//! saw after its clean close (invariant 6: a crash during recovery changes nothing).
//!
//! Power loss is simulated by [`cairn::testing::open_simulating_power_loss`] in the child:
//! unsynced appends live in the child's memory and die with it. Lost directory entries are
//! not simulated here (the `MemFs` crash tests cover them).
//!
//! Environment: `CAIRN_KILL9_CYCLES` (per mode and crash type, default 200),
//! `CAIRN_KILL9_SEED` (workload seed; printed at the start), `CAIRN_KILL9_JOBS`
//! (combinations run at once, default 2), `CAIRN_KILL9_MAX_DELAY_MS` (default 250),
//! `CAIRN_KILL9_MODES` / `CAIRN_KILL9_CRASHES` (comma-separated subsets, e.g. `sync,none`
//! and `power-loss`), `CAIRN_KILL9_REPORT` (write the summary as JSON there). On a
//! violation the combination's directory is kept and its path printed: `db/` as the parent
//! left it, `crash-image/` as the kill left it, `expected.log` (the failing cycle's ops)
//! and `expected.base` (the model before it). The seed fixes each child's sequence of ops
//! and the delay draws; where a kill lands, and so what survives, is not reproducible,
//! which is why the failing store is kept.
//!
//! Cost: the default 200 cycles × 10 combinations takes about 3.5 minutes on 2 cores in a
//! debug build, mostly waiting (the kill delays, fsyncs, process start and `Db::open`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "kill9/child.rs"]
mod child;
#[path = "kill9/report.rs"]
mod report;
#[path = "kill9/verify.rs"]
mod verify;
#[path = "kill9/workload.rs"]
mod workload;

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, RwLock};
use std::time::{Duration, Instant};

use report::{json, summary, Report};
use verify::{verify, Model, State};
use workload::{
    mix, now_micros, ChildSpec, Crash, Mode, Rng, CHILD_ENV, CHILD_TEST, CRASHES, KEYSPACES, MODES,
    MSG_OPENED, MSG_OPENING,
};

/// Longest wait for the child to report an open store.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);
/// Percentage of cycles whose kill timer starts when the child starts `Db::open`.
const EARLY_PERCENT: u64 = 20;
const SIGKILL: i32 = 9;

/// Spawning a child (write) excludes closing a store in this process (read).
///
/// A spawned child holds copies of all of this process's file descriptors until its exec
/// closes them, including the `LOCK` descriptor of a store that another combination's
/// thread is verifying. `flock` locks belong to the open file description, so if that
/// store is closed meanwhile, its lock lives on in the half-spawned child, and the next
/// writer for that store fails to open it with "already locked". `Command::spawn` may
/// return before the exec has closed the descriptors (Linux wakes a vfork parent before
/// it runs close-on-exec), so the spawning thread holds this lock until the child has
/// printed its first line.
pub(crate) static FORK_GUARD: RwLock<()> = RwLock::new(());

/// The writer process. Does nothing unless started by [`kill9_all_modes`].
#[test]
fn kill9_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let spec = ChildSpec::decode(&spec).expect("malformed CAIRN_KILL9_CHILD");
    child::main(&spec);
}

/// Copies the store as the kill left it, for a post-mortem if the check fails.
fn copy_image(dir: &Path, image: &Path) -> std::io::Result<()> {
    if image.exists() {
        fs::remove_dir_all(image)?;
    }
    fs::create_dir_all(image)?;
    if dir.exists() {
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            fs::copy(entry.path(), image.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// True if the crash image holds an incomplete table: the kill hit a flush or compaction
/// while it wrote (or, under power loss, before it synced) a table.
fn has_torn_table(image: &Path, known_good: &mut HashSet<(String, u64)>) -> bool {
    let Ok(entries) = fs::read_dir(image) else {
        return false;
    };
    let mut torn = false;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".sst") {
            continue;
        }
        let len = entry.metadata().map_or(0, |m| m.len());
        if known_good.contains(&(name.clone(), len)) {
            continue;
        }
        let good = fs::read(entry.path())
            .ok()
            .is_some_and(|bytes| cairn::inspect::decode_table(&bytes, &entry.path()).is_ok());
        if good {
            known_good.insert((name, len));
        } else {
            torn = true;
        }
    }
    torn
}

/// Reads the child's stdout lines on a thread, stamped with their arrival.
fn read_lines(stdout: std::process::ChildStdout) -> mpsc::Receiver<(Instant, String)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    rx
}

fn run_combo(mode: Mode, crash: Crash, cycles: usize, seed: u64, max_delay_ms: u64) -> Report {
    let started = Instant::now();
    let mut report = Report {
        mode: Some(mode),
        crash: Some(crash),
        ..Report::default()
    };
    let tmp = tempfile::Builder::new()
        .prefix(&format!("cairn-kill9-{}-{}-", mode.name(), crash.name()))
        .tempdir()
        .expect("temporary directory");
    let root = tmp.path().to_path_buf();
    let dir = root.join("db");
    let log_path = root.join("expected.log");
    let image = root.join("crash-image");
    let stderr_path = root.join("child.stderr");
    let exe = std::env::current_exe().expect("test binary path");
    let combo = mode as u64 * 2 + crash as u64;
    let mut rng = Rng(mix(seed ^ combo.wrapping_mul(0x1000_0000_01b3)));
    let mut model = Model {
        base: State::new(),
        seqno: 0,
        next_id: 1,
    };
    // How long the child's `Db::open` takes, learnt from the cycles that wait for it.
    let mut open_micros: u64 = 10_000;
    let mut known_good = HashSet::new();

    for cycle in 0..cycles {
        let fail = |report: &mut Report, msg: String| {
            report.violations.push(format!(
                "{} / {} cycle {cycle} (seed {seed}): {msg}",
                mode.label(),
                crash.name()
            ));
        };
        File::create(&log_path).expect("expected-state log");
        let spec = ChildSpec {
            mode,
            crash,
            seed: rng.next(),
            first_id: model.next_id,
            dir: dir.clone(),
            log: log_path.clone(),
        };
        let stderr = File::create(&stderr_path).expect("child stderr file");
        let spawned = Instant::now();
        let (mut child, lines, mut first) = {
            let _no_close = FORK_GUARD.write().unwrap_or_else(|e| e.into_inner());
            let mut child = Command::new(&exe)
                .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
                .env(CHILD_ENV, spec.encode())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(stderr)
                .spawn()
                .expect("spawn the child");
            let lines = read_lines(child.stdout.take().expect("child stdout"));
            // Output from the child proves its exec has closed our descriptors.
            let first = lines.recv_timeout(OPEN_TIMEOUT).ok();
            (child, lines, first)
        };
        // Early cycles start the kill timer when the child starts opening the store and
        // aim at `Db::open` (recovery); the others start it once the store is open.
        let early = rng.below(100) < EARLY_PERCENT;
        let mut said = Vec::new();
        let mut opening_at = None;
        let mut open_failed = false;
        loop {
            let left = OPEN_TIMEOUT.saturating_sub(spawned.elapsed());
            let next = match first.take() {
                Some(line) => Ok(line),
                None => lines.recv_timeout(left),
            };
            let Ok((at, line)) = next else {
                open_failed = true;
                break;
            };
            // libtest's "test kill9_child ... " may precede a message on its line.
            let (opening, opened) = (line.ends_with(MSG_OPENING), line.ends_with(MSG_OPENED));
            said.push(line);
            if opening {
                opening_at = Some(at);
                if early {
                    break;
                }
            }
            if opened {
                if let Some(from) = opening_at {
                    let took = at.duration_since(from).as_micros() as u64;
                    open_micros = (open_micros * 7 + took) / 8;
                    report.open_micros_total += took;
                    report.opens_timed += 1;
                }
                break;
            }
        }
        if !open_failed {
            let delay = if early {
                rng.below(open_micros * 5 / 4 + 1)
            } else {
                rng.below(max_delay_ms * 1000 + 1)
            };
            std::thread::sleep(Duration::from_micros(delay));
        }
        let kill_micros = now_micros();
        let _ = child.kill();
        let status = child.wait().expect("wait for the child");
        said.extend(lines.iter().map(|(_, line)| line));
        report.cycles += 1;

        if status.signal() != Some(SIGKILL) || open_failed {
            let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
            let why = if open_failed && status.signal() == Some(SIGKILL) {
                format!("the child did not open the store within {OPEN_TIMEOUT:?}")
            } else {
                format!("the child ended by itself ({status})")
            };
            fail(&mut report, format!("{why}; its stderr: {}", stderr.trim()));
            break;
        }
        if said.iter().any(|l| l.ends_with(MSG_OPENED)) {
            report.kills_while_writing += 1;
        } else if said.iter().any(|l| l.ends_with(MSG_OPENING)) {
            report.kills_in_open += 1;
        } else {
            report.kills_in_startup += 1;
        }
        if let Err(e) = copy_image(&dir, &image) {
            fail(&mut report, format!("cannot copy the crash image: {e}"));
            break;
        }
        if has_torn_table(&image, &mut known_good) {
            report.kills_in_table_writes += 1;
        }
        let text = fs::read_to_string(&log_path).unwrap_or_default();
        match verify(mode, crash, &dir, &text, &mut model, kill_micros, &mut rng) {
            Ok(out) => {
                report.ops_acked += out.acked;
                report.ops_lost += out.lost;
                report.pending_kept += u64::from(out.pending_kept);
                report.max_loss_ops = report.max_loss_ops.max(out.lost);
                report.max_loss_ms = report.max_loss_ms.max(out.loss_ms);
                report.flushes += out.flushes;
                report.compactions += out.compactions;
            }
            Err(msg) => {
                fail(&mut report, msg);
                break;
            }
        }
    }

    if !report.violations.is_empty() {
        let mut base: Vec<_> = model.base.iter().collect();
        base.sort_unstable();
        let mut text = format!("seqno {} next_id {}\n", model.seqno, model.next_id);
        for ((ks, key), id) in base {
            let _ = writeln!(text, "{}/k{key:05} op {id}", KEYSPACES[usize::from(*ks)]);
        }
        let _ = fs::write(root.join("expected.base"), text);
        report.kept_dir = Some(tmp.keep());
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn env_list<T: Copy>(name: &str, all: &[T], parse: impl Fn(&str) -> Option<T>) -> Vec<T> {
    match std::env::var(name) {
        Ok(list) => list
            .split(',')
            .map(|s| parse(s.trim()).unwrap_or_else(|| panic!("{name}: unknown value {s:?}")))
            .collect(),
        Err(_) => all.to_vec(),
    }
}

/// Every durability mode under both crash types; see the module documentation.
#[test]
fn kill9_all_modes() {
    let soak = usize::try_from(cairn::testing::soak_factor()).unwrap_or(usize::MAX);
    let cycles: usize = env_or("CAIRN_KILL9_CYCLES", 200usize.saturating_mul(soak));
    let jobs: usize = env_or("CAIRN_KILL9_JOBS", 2).max(1);
    let max_delay_ms: u64 = env_or("CAIRN_KILL9_MAX_DELAY_MS", 250);
    let seed: u64 = env_or("CAIRN_KILL9_SEED", mix(now_micros()));
    let modes = env_list("CAIRN_KILL9_MODES", &MODES, Mode::parse);
    let crashes = env_list("CAIRN_KILL9_CRASHES", &CRASHES, Crash::parse);
    let combos: Vec<(Mode, Crash)> = crashes
        .iter()
        .flat_map(|&c| modes.iter().map(move |&m| (m, c)))
        .collect();
    eprintln!(
        "kill9: seed {seed} (rerun with CAIRN_KILL9_SEED={seed}); {cycles} cycles for each of \
         {} combinations, {jobs} at a time",
        combos.len()
    );

    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Report)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(combos.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(mode, crash)) = combos.get(i) else {
                    break;
                };
                let report = run_combo(mode, crash, cycles, seed, max_delay_ms);
                eprintln!(
                    "kill9: {} / {}: {} cycles in {:.1} s (Db::open {:.1} ms on average), {} \
                     violations",
                    mode.label(),
                    crash.name(),
                    report.cycles,
                    report.seconds,
                    report.open_ms_avg(),
                    report.violations.len()
                );
                results.lock().unwrap().push((i, report));
            });
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    let reports: Vec<Report> = results.into_iter().map(|(_, r)| r).collect();

    eprintln!(
        "kill9 summary ({seconds:.1} s wall; kills s/o/w = in startup / in Db::open / while \
         writing; in-tbl = kills that left an incomplete table; +pending = cycles where the \
         unacked op survived):\n{}",
        summary(&reports)
    );
    if let Ok(path) = std::env::var("CAIRN_KILL9_REPORT") {
        fs::write(&path, json(&reports, seed, cycles, max_delay_ms, seconds))
            .unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
    }
    let violations: Vec<String> = reports
        .iter()
        .flat_map(|r| {
            r.violations.iter().map(move |v| match &r.kept_dir {
                Some(dir) => format!("{v}\n    (store and logs kept in {})", dir.display()),
                None => v.clone(),
            })
        })
        .collect();
    assert!(
        violations.is_empty(),
        "kill9: {} violations (seed {seed}):\n{}",
        violations.len(),
        violations.join("\n")
    );
}
