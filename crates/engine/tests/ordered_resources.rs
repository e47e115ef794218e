//! Resource exhaustion and file loss for the ordered store (reliability plan, layer T6).
//!
//! Every fault is real: ENOSPC comes from a small tmpfs mounted in a private user and mount
//! namespace (`unshare -Urm`), EFBIG from `RLIMIT_FSIZE`, EMFILE from `RLIMIT_NOFILE`, and
//! a crash at an exact byte offset of the log from `RLIMIT_FSIZE` with `SIGXFSZ` left at
//! its default action (the kernel kills the writer when the file reaches the limit).
//! The writer always runs in a child process (this test binary re-executed with
//! `--exact child_process_entry` and `CAIRN_T6_ROLE` naming the role), so limits and
//! namespaces never touch the test runner.
//!
//! Expected behaviour, checked in every scenario:
//! * the failing operation returns an error naming the cause (the OS error number);
//! * later writes fail too (the store is poisoned or stopped by a background error);
//! * every acknowledged write still reads back in the same process;
//! * once the fault is gone the store reopens, every acknowledged write is there (0 lost),
//!   what was recovered is a prefix of the attempted writes, new writes succeed and a
//!   second reopen sees them; no leftover partial file stops an open, and after a clean
//!   close the table files in the directory are exactly those the manifest lists.
//!
//! Lost or damaged files: a deleted or truncated table, a deleted `CURRENT` and a deleted
//! newest log file must give a typed error (`Io` NotFound or `Corruption` naming the
//! file) or, for the log tail, a clean prefix; never a silently wrong answer.
//!
//! Each test prints a summary line with `eprintln!`; the last one to finish prints the
//! totals (scenarios passed, acknowledged writes checked, acknowledged writes lost).

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::expect_used,
    unsafe_code
)]
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use cairn::{Compression, Db, Durability, Error, FileKind, Keyspace, Options};

// ---------------------------------------------------------------------------------------
// Workload
// ---------------------------------------------------------------------------------------

/// Bytes of every value written.
const VLEN: usize = 128;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// A deterministic, incompressible value for key `i`.
fn value(i: u64) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..VLEN)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn key_index(k: &[u8]) -> Option<u64> {
    std::str::from_utf8(k.strip_prefix(b"key")?)
        .ok()?
        .parse()
        .ok()
}

/// Writes keys `start..start + n`; every one must be acknowledged.
fn write_n(ks: &Keyspace, start: u64, n: u64) -> u64 {
    for i in start..start + n {
        ks.insert(key(i), value(i))
            .unwrap_or_else(|e| panic!("write {i} failed before the fault: {e}"));
    }
    start + n
}

/// Writes keys from `start` until a write fails; returns the number of keys acknowledged
/// (the next index) and the error. With `announce`, each acknowledged key is printed.
fn write_until_error(ks: &Keyspace, start: u64, cap: u64, announce: bool) -> (u64, Error) {
    for i in start..start + cap {
        match ks.insert(key(i), value(i)) {
            Ok(()) => {
                if announce {
                    println!("@@ACK:{i}");
                }
            }
            Err(e) => return (i, e),
        }
    }
    panic!("no write failed after {cap} writes: the fault was not reached");
}

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

/// True if `e` is caused by OS error `errno`: an `Io` error carrying it, or a stopped
/// store whose background failure was one.
fn caused_by(e: &Error, errno: i32) -> bool {
    match e {
        Error::Io { source, .. } => source.raw_os_error() == Some(errno),
        Error::Stopped { cause, .. } => caused_by(cause, errno),
        _ => false,
    }
}

fn variant(e: &Error) -> &'static str {
    match e {
        Error::Io { .. } => "Io",
        Error::Corruption(_) => "Corruption",
        Error::Poisoned => "Poisoned",
        Error::InvalidArgument(_) => "InvalidArgument",
        Error::Stopped { .. } => "Stopped",
        _ => "other",
    }
}

/// Where a failure happened, from the error alone.
fn failed_in(e: &Error) -> &'static str {
    match e {
        Error::Stopped {
            during: "compaction",
            ..
        } => "compaction",
        Error::Stopped {
            during: "flush", ..
        } => "flush",
        Error::Stopped { .. } => "manifest",
        Error::Io { path, .. } if path.to_string_lossy().contains("MANIFEST") => "manifest",
        Error::Io { path, .. } if path.extension().is_some_and(|x| x == "wal") => "wal",
        Error::Io { path, .. } if path.extension().is_some_and(|x| x == "sst") => "table",
        Error::Poisoned => "wal",
        _ => "other",
    }
}

// ---------------------------------------------------------------------------------------
// Resource limits (child processes only)
// ---------------------------------------------------------------------------------------

fn get_limit(resource: libc::__rlimit_resource_t) -> libc::rlimit {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into the struct it is given.
    let rc = unsafe { libc::getrlimit(resource, &mut lim) };
    assert_eq!(rc, 0, "getrlimit: {}", std::io::Error::last_os_error());
    lim
}

/// Sets the soft limit of `resource` (capped at the hard limit, which is left alone so
/// the limit can be raised again).
fn set_soft_limit(resource: libc::__rlimit_resource_t, soft: u64) {
    let mut lim = get_limit(resource);
    lim.rlim_cur = soft.min(lim.rlim_max);
    // SAFETY: setrlimit reads only the struct it is given.
    let rc = unsafe { libc::setrlimit(resource, &lim) };
    assert_eq!(rc, 0, "setrlimit: {}", std::io::Error::last_os_error());
}

fn raise_soft_limit(resource: libc::__rlimit_resource_t) {
    set_soft_limit(resource, libc::RLIM_INFINITY);
}

fn set_sigxfsz(handler: libc::sighandler_t) {
    // SAFETY: installing SIG_IGN or SIG_DFL runs no code in the handler.
    let previous = unsafe { libc::signal(libc::SIGXFSZ, handler) };
    assert_ne!(previous, libc::SIG_ERR, "signal(SIGXFSZ) failed");
}

fn open_fds() -> u64 {
    // The listing holds one descriptor of its own while it runs.
    (fs::read_dir("/proc/self/fd").unwrap().count() as u64).saturating_sub(1)
}

// ---------------------------------------------------------------------------------------
// Files of a store
// ---------------------------------------------------------------------------------------

fn files_with_ext(dir: &Path, ext: &str) -> Vec<(u64, PathBuf)> {
    let mut out: Vec<(u64, PathBuf)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .filter_map(|p| {
            let id = p.file_stem()?.to_str()?.parse().ok()?;
            Some((id, p))
        })
        .collect();
    out.sort();
    out
}

fn newest_wal(dir: &Path) -> PathBuf {
    files_with_ext(dir, "wal").pop().unwrap().1
}

fn file_len(path: &Path) -> u64 {
    fs::metadata(path).unwrap().len()
}

/// Tables the live manifest lists (read through `CURRENT`, as recovery does).
fn manifest_table_count(dir: &Path) -> usize {
    let current = dir.join("CURRENT");
    let id = cairn::inspect::decode_current(&fs::read(&current).unwrap(), &current).unwrap();
    let path = dir.join(format!("MANIFEST-{id:020}"));
    let image = cairn::inspect::decode_manifest(&fs::read(&path).unwrap(), &path).unwrap();
    image
        .keyspaces
        .iter()
        .map(|k| k.tables.iter().sum::<usize>())
        .sum()
}

fn copy_store(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A scratch directory on a memory file system when there is one (fsync is free there;
/// these tests are about process-level faults, not power loss).
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::Builder::new().prefix("cairn-t6-").tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::Builder::new()
        .prefix("cairn-t6-")
        .tempdir()
        .unwrap()
}

// ---------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------

/// Checks what a reopened store holds against keys `0..acked` (acknowledged) of the
/// sequential workload: the keys present must be exactly `0..m` with their values (a
/// prefix: no hole, nothing never written), where `m` may exceed `acked` by the one write
/// in flight at the fault. Returns (acknowledged keys lost, m).
fn check_prefix(ks: &Keyspace, acked: u64, when: &str) -> (u64, u64) {
    let mut m = 0u64;
    for item in ks.iter() {
        let (k, v) = item.unwrap_or_else(|e| panic!("{when}: scan failed: {e}"));
        let i = key_index(&k)
            .unwrap_or_else(|| panic!("{when}: unexpected key {:?}", String::from_utf8_lossy(&k)));
        assert_eq!(
            i, m,
            "{when}: hole: key {m} is missing but key {i} is present (acked {acked})"
        );
        assert!(v == value(i), "{when}: key {i} has a wrong value");
        m += 1;
    }
    assert!(
        m <= acked + 1,
        "{when}: {m} keys recovered but only {acked} were acknowledged (+1 in flight)"
    );
    let mut lost = 0u64;
    for i in 0..acked {
        match ks.get(key(i)) {
            Ok(Some(v)) if v == value(i) => {}
            Ok(Some(_)) => panic!("{when}: key {i} reads back a wrong value"),
            Ok(None) => {
                lost += 1;
            }
            Err(e) => panic!("{when}: get of acknowledged key {i} failed: {e}"),
        }
    }
    (lost, m)
}

/// After a fault in a live store: later writes fail, every acknowledged key reads back and
/// a scan shows exactly the acknowledged keys. Returns the variant of the later error.
fn check_after_fault(db: &Db, ks: &Keyspace, acked: u64) -> &'static str {
    let later = ks
        .insert(key(u64::from(u32::MAX)), value(0))
        .expect_err("a write after the fault must fail");
    let mut batch = db.batch();
    batch.insert(ks, key(u64::from(u32::MAX) + 1), value(1));
    assert!(batch.commit().is_err(), "a batch after the fault must fail");
    for i in 0..acked {
        match ks.get(key(i)) {
            Ok(Some(v)) if v == value(i) => {}
            other => panic!(
                "acknowledged key {i} does not read back after the fault: {:?}",
                other.map(|o| o.map(|v| v.len()))
            ),
        }
    }
    let scanned: Vec<u64> = ks
        .iter()
        .map(|r| key_index(&r.unwrap().0).unwrap())
        .collect();
    assert_eq!(
        scanned,
        (0..acked).collect::<Vec<_>>(),
        "after the fault a scan must show exactly the acknowledged keys"
    );
    variant(&later)
}

/// Once the fault is gone: reopen, check every acknowledged write (returns how many are
/// lost), write `more` keys, close, reopen, check everything, close, and check that the
/// directory holds exactly the tables the manifest lists.
fn recover_and_continue(store: &Path, opts: &Options, acked: u64, more: u64, when: &str) -> u64 {
    let db = open_db(store, opts.clone())
        .unwrap_or_else(|e| panic!("{when}: the store does not reopen: {e}"));
    let ks = db.keyspace("default").unwrap();
    let (lost, m) = check_prefix(&ks, acked, when);
    let end = write_n(&ks, m, more);
    db.flush()
        .unwrap_or_else(|e| panic!("{when}: flush after recovery failed: {e}"));
    db.wait_for_compactions()
        .unwrap_or_else(|e| panic!("{when}: compaction after recovery failed: {e}"));
    drop(ks);
    db.close()
        .unwrap_or_else(|e| panic!("{when}: close after recovery failed: {e}"));

    let db = open_db(store, opts.clone())
        .unwrap_or_else(|e| panic!("{when}: the second reopen failed: {e}"));
    let ks = db.keyspace("default").unwrap();
    let again = format!("{when}, second reopen");
    let (lost2, m2) = check_prefix(&ks, end, &again);
    assert_eq!((lost2, m2), (0, end), "{again}: writes after recovery lost");
    db.wait_for_compactions().unwrap();
    drop(ks);
    db.close().unwrap();
    let on_disk = files_with_ext(store, "sst").len();
    let listed = manifest_table_count(store);
    assert_eq!(
        on_disk, listed,
        "{when}: {on_disk} table files on disk but the manifest lists {listed} (leftovers)"
    );
    lost
}

// ---------------------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------------------

const ROLE_ENV: &str = "CAIRN_T6_ROLE";
const DIR_ENV: &str = "CAIRN_T6_DIR";
const ARG_ENV: &str = "CAIRN_T6_ARG";
const CHILD_TEST: &str = "child_process_entry";

/// Prints a result for the parent (one line, `@@KV:name=value`).
fn emit(name: &str, value: impl std::fmt::Display) {
    let text = value.to_string().replace('\n', " ");
    println!("@@KV:{name}={text}");
    std::io::stdout().flush().unwrap();
}

fn child_args(role: &str, dir: &Path, arg: u64) -> (Vec<String>, Vec<(String, String)>) {
    let exe = std::env::current_exe().unwrap();
    let args = vec![
        exe.to_string_lossy().into_owned(),
        "--exact".into(),
        CHILD_TEST.into(),
        "--nocapture".into(),
        "--test-threads=1".into(),
    ];
    let env = vec![
        (ROLE_ENV.to_string(), role.to_string()),
        (DIR_ENV.to_string(), dir.to_string_lossy().into_owned()),
        (ARG_ENV.to_string(), arg.to_string()),
    ];
    (args, env)
}

/// Held while a child process is spawned and while a store is opened in this process.
///
/// The store's `LOCK` is an `flock`, which belongs to the open file description: a
/// process forked by another test thread shares it until it execs, and an open in that
/// window (after a close, in this process) is refused as "already locked". Opening only
/// when no spawn is under way keeps the tests independent of each other.
static SPAWN: Mutex<()> = Mutex::new(());

fn open_db(dir: impl AsRef<Path>, opts: Options) -> cairn::Result<Db> {
    let _guard = SPAWN.lock().unwrap_or_else(PoisonError::into_inner);
    Db::open(dir, opts)
}

fn spawn_and_wait(cmd: &mut Command) -> std::io::Result<Output> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = {
        let _guard = SPAWN.lock().unwrap_or_else(PoisonError::into_inner);
        cmd.spawn()?
    };
    child.wait_with_output()
}

fn run_child(role: &str, dir: &Path, arg: u64) -> Report {
    let (args, env) = child_args(role, dir, arg);
    let out = spawn_and_wait(Command::new(&args[0]).args(&args[1..]).envs(env)).unwrap();
    Report::parse(role, out)
}

/// Runs a child in a new user and mount namespace with a `size_kib` tmpfs on `mount`.
fn run_child_in_tmpfs(role: &str, mount: &Path, size_kib: u64, arg: u64) -> Report {
    let (args, env) = child_args(role, mount, arg);
    let out = spawn_and_wait(
        Command::new("unshare")
            .args(["-Urm", "sh", "-c"])
            .arg(r#"mount -t tmpfs -o "size=$1" none "$2" && shift 2 && exec "$@""#)
            .arg("sh")
            .arg(format!("{size_kib}k"))
            .arg(mount)
            .args(&args)
            .envs(env),
    )
    .unwrap();
    Report::parse(role, out)
}

/// Fails the test with a clear message unless unprivileged user and mount namespaces are
/// available (the only way to get a small file system without root).
fn require_user_namespaces() {
    match spawn_and_wait(Command::new("unshare").args(["-Urm", "true"])) {
        Err(e) => panic!(
            "the ENOSPC scenarios need the `unshare` command (util-linux) to mount a small \
             tmpfs without privileges, and it could not be run: {e}"
        ),
        Ok(out) if !out.status.success() => panic!(
            "the ENOSPC scenarios need unprivileged user and mount namespaces, but \
             `unshare -Urm true` failed ({}): {}. Allow them (e.g. sysctl \
             user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1, or the \
             container's seccomp/AppArmor profile) rather than skipping these tests.",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Ok(_) => {}
    }
}

/// What a child printed and how it ended.
struct Report {
    role: String,
    acks: Vec<u64>,
    kv: BTreeMap<String, String>,
    panics: Vec<String>,
    out: Output,
}

impl Report {
    fn parse(role: &str, out: Output) -> Report {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut acks = Vec::new();
        let mut kv = BTreeMap::new();
        let mut panics = Vec::new();
        for line in stdout.lines() {
            let Some(at) = line.find("@@") else { continue };
            let rest = &line[at + 2..];
            if let Some(n) = rest.strip_prefix("ACK:") {
                acks.push(n.trim().parse().unwrap());
            } else if let Some(pair) = rest.strip_prefix("KV:") {
                let (k, v) = pair.split_once('=').unwrap();
                kv.insert(k.to_string(), v.to_string());
            } else if let Some(p) = rest.strip_prefix("PANIC:") {
                panics.push(p.to_string());
            }
        }
        Report {
            role: role.to_string(),
            acks,
            kv,
            panics,
            out,
        }
    }

    fn dump(&self) -> String {
        let tail = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            let lines: Vec<&str> = s.lines().filter(|l| !l.contains("@@ACK:")).collect();
            lines[lines.len().saturating_sub(40)..].join("\n")
        };
        format!(
            "child {} ended with {}\n--- stdout (ACK lines omitted) ---\n{}\n--- stderr ---\n{}",
            self.role,
            self.out.status,
            tail(&self.out.stdout),
            tail(&self.out.stderr)
        )
    }

    /// The child passed: exit status 0, no panic on any thread.
    fn assert_passed(&self) {
        assert!(
            self.out.status.success() && self.panics.is_empty(),
            "panics: {:?}\n{}",
            self.panics,
            self.dump()
        );
    }

    fn get(&self, name: &str) -> &str {
        self.kv
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("child did not report {name}\n{}", self.dump()))
    }

    fn num(&self, name: &str) -> u64 {
        self.get(name).parse().unwrap()
    }
}

/// Runs the child role named by `CAIRN_T6_ROLE`; a no-op in a normal test run.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let dir = PathBuf::from(std::env::var(DIR_ENV).unwrap());
    let arg: u64 = std::env::var(ARG_ENV).unwrap().parse().unwrap();
    // A panic on any thread (a background thread's would not fail the test) is reported.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current().name().unwrap_or("?").to_string();
        println!("@@PANIC:{thread}: {}", info.to_string().replace('\n', " "));
        default_hook(info);
    }));
    match role.as_str() {
        "enospc-wal" => fault_child(&dir, Fault::Enospc, Phase::Wal, arg),
        "enospc-flush" => fault_child(&dir, Fault::Enospc, Phase::Flush, arg),
        "enospc-compaction" => fault_child(&dir, Fault::Enospc, Phase::Compaction, arg),
        "enospc-background" => fault_child(&dir, Fault::Enospc, Phase::Background, arg),
        "efbig-wal" => fault_child(&dir, Fault::Efbig, Phase::Wal, arg),
        "efbig-flush" => fault_child(&dir, Fault::Efbig, Phase::Flush, arg),
        "efbig-compaction" => fault_child(&dir, Fault::Efbig, Phase::Compaction, arg),
        "efbig-kill" => efbig_kill_child(&dir, arg),
        "emfile" => emfile_child(&dir, arg),
        "buffered-exit" => buffered_exit_child(&dir),
        other => panic!("unknown child role {other}"),
    }
}

// ---------------------------------------------------------------------------------------
// ENOSPC and EFBIG (SIGXFSZ ignored): one child per scenario
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fault {
    /// A full tmpfs (the child runs in its own mount namespace).
    Enospc,
    /// `RLIMIT_FSIZE` with `SIGXFSZ` ignored.
    Efbig,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// The log append of a `Sync` write fails.
    Wal,
    /// The table write of an explicit flush fails (the log has room).
    Flush,
    /// A level-0 compaction's output fails (the flush before it has room).
    Compaction,
    /// A steady stream of writes with a small memtable; whichever of log append, flush or
    /// compaction hits the fault first.
    Background,
}

fn fault_options(phase: Phase) -> Options {
    let base = Options::default()
        .durability(Durability::Sync)
        .compression(Compression::None);
    match phase {
        Phase::Wal => base,
        Phase::Flush => base.memtable_size(1 << 20),
        Phase::Compaction => base.memtable_size(1 << 20).l0_compaction_trigger(2),
        Phase::Background => base.memtable_size(16 << 10).l0_compaction_trigger(2),
    }
}

/// Fills the file system holding `path` with a ballast file, then shrinks it so that about
/// `leave` bytes are free.
fn fill_ballast(path: &Path, leave: u64) {
    let mut file = fs::File::create(path).unwrap();
    let chunk = vec![0x5a_u8; 64 << 10];
    loop {
        match file.write_all(&chunk) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("writing the ballast failed: {e}"),
        }
    }
    let len = file.metadata().unwrap().len();
    assert!(len > leave, "the tmpfs is too small for the ballast");
    file.set_len(len - leave).unwrap();
}

/// The child of an ENOSPC or EFBIG scenario. `dir` is the tmpfs mount (ENOSPC) or a
/// scratch directory (EFBIG); `arg` is the free space to leave (ENOSPC) or unused.
fn fault_child(dir: &Path, fault: Fault, phase: Phase, arg: u64) {
    let store = dir.join("store");
    let ballast = dir.join("ballast");
    let opts = fault_options(phase);
    let errno = match fault {
        Fault::Enospc => libc::ENOSPC,
        Fault::Efbig => libc::EFBIG,
    };
    if fault == Fault::Efbig {
        set_sigxfsz(libc::SIG_IGN);
    }
    // Arms the fault: for ENOSPC `extra` more bytes than `arg` stay free; for EFBIG no file
    // may grow past `extra` bytes.
    let arm = |extra: u64| match fault {
        Fault::Enospc => fill_ballast(&ballast, arg + extra),
        Fault::Efbig => set_soft_limit(libc::RLIMIT_FSIZE, extra),
    };

    let db = open_db(&store, opts.clone()).unwrap();
    let ks = db.keyspace("default").unwrap();
    let (acked, first) = match phase {
        Phase::Wal | Phase::Background => {
            let start = write_n(&ks, 0, 10);
            arm(match fault {
                Fault::Enospc => 0,
                Fault::Efbig => file_len(&newest_wal(&store)) + 3000,
            });
            write_until_error(&ks, start, 1_000_000, false)
        }
        Phase::Flush => {
            let acked = write_n(&ks, 0, 300);
            db.flush_wal(true).unwrap();
            // The log is written; the flush needs a new (empty) log file and a table of
            // about 45 KiB.
            arm(match fault {
                Fault::Enospc => 0,
                Fault::Efbig => 4096,
            });
            let e = db.flush().expect_err("the flush must fail");
            (acked, e)
        }
        Phase::Compaction => {
            let half = write_n(&ks, 0, 250);
            db.flush().unwrap();
            let table = db.stats().table_bytes;
            // Overlapping the first table, so the compaction must merge (disjoint tables
            // would just move down, needing no space).
            let acked = write_n(&ks, half / 2, 250);
            db.flush_wal(true).unwrap();
            emit("table_bytes", table);
            // The flush deletes the log it empties, which would free about a table's worth
            // of space for the compaction: a second name for each log file keeps its pages.
            for entry in fs::read_dir(&store).unwrap() {
                let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                if name.ends_with(".wal") {
                    fs::hard_link(store.join(&name), dir.join(format!("pinned-{name}"))).unwrap();
                }
            }
            // Room for the second flush's table, not for the merged output (about one and a
            // half times that: 375 keys against 250).
            arm(match fault {
                Fault::Enospc => table.div_ceil(4096) * 4096,
                Fault::Efbig => table + table / 4,
            });
            let e = match db.flush() {
                Err(e) => e,
                Ok(()) => db
                    .wait_for_compactions()
                    .expect_err("the compaction must fail"),
            };
            (acked, e)
        }
    };
    emit("acked", acked);
    emit("failed_in", failed_in(&first));
    emit("first_error_variant", variant(&first));
    emit("first_error", &first);
    assert!(
        caused_by(&first, errno),
        "the first error must report OS error {errno}: {first:?}"
    );
    if phase == Phase::Wal {
        assert!(
            matches!(&first, Error::Io { source, .. } if source.raw_os_error() == Some(errno)),
            "a failed log append must be an Io error with errno {errno}: {first:?}"
        );
    }
    let later = check_after_fault(&db, &ks, acked);
    emit("later_error_variant", later);
    if phase == Phase::Wal {
        assert_eq!(later, "Poisoned", "writes after a failed log write");
    }
    drop(ks);
    emit(
        "close_with_fault",
        match db.close() {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("error: {e}"),
        },
    );

    let mut lost_before_fix = 0;
    if fault == Fault::Enospc {
        // Reopening while the disk is still full: a typed error or a working store,
        // and nothing it leaves behind may stop the open after space is freed.
        match open_db(&store, opts.clone()) {
            Ok(db) => {
                let ks = db.keyspace("default").unwrap();
                lost_before_fix = check_prefix(&ks, acked, "reopened while full").0;
                drop(ks);
                let _ = db.close();
                emit("open_while_full", "ok");
            }
            Err(e) => {
                assert!(
                    caused_by(&e, errno),
                    "open on a full disk must fail with ENOSPC: {e:?}"
                );
                emit("open_while_full", format!("refused: {e}"));
            }
        }
        fs::remove_file(&ballast).unwrap();
    } else {
        raise_soft_limit(libc::RLIMIT_FSIZE);
    }
    let lost = recover_and_continue(&store, &opts, acked, 200, "after the fault is gone");
    emit("lost", lost + lost_before_fix);
}

struct FaultCase {
    fault: Fault,
    phase: Phase,
    role: &'static str,
    tmpfs_kib: u64,
    leave: u64,
}

fn run_fault_cases(area: &str, cases: &[FaultCase]) {
    let started = Instant::now();
    let mut tally = Tally::default();
    let mut notes = Vec::new();
    for case in cases {
        let dir = match case.fault {
            Fault::Enospc => tempfile::tempdir().unwrap(),
            Fault::Efbig => scratch(),
        };
        let report = match case.fault {
            Fault::Enospc => run_child_in_tmpfs(case.role, dir.path(), case.tmpfs_kib, case.leave),
            Fault::Efbig => run_child(case.role, dir.path(), 0),
        };
        report.assert_passed();
        let lost = report.num("lost");
        assert_eq!(lost, 0, "acknowledged writes lost\n{}", report.dump());
        let place = report.get("failed_in").to_string();
        let expected = match case.phase {
            Phase::Wal => Some("wal"),
            Phase::Flush => Some("flush"),
            Phase::Compaction => Some("compaction"),
            Phase::Background => None,
        };
        if let Some(expected) = expected {
            assert_eq!(
                place,
                expected,
                "{:?} scenario failed elsewhere\n{}",
                case.phase,
                report.dump()
            );
        }
        let mut note = case.role.to_string();
        if case.fault == Fault::Enospc {
            note += &format!(
                " ({} KiB tmpfs, {} KiB left)",
                case.tmpfs_kib,
                case.leave >> 10
            );
        }
        note += &format!(
            ": acked {}, failed in {place} with {}, later writes {}",
            report.num("acked"),
            report.get("first_error_variant"),
            report.get("later_error_variant"),
        );
        if let Some(s) = report.kv.get("open_while_full") {
            note += &format!("; open while full: {s}");
        }
        notes.push(note);
        tally.pass(report.num("acked"), lost);
    }
    tally.report(area, started, &notes);
}

#[test]
fn enospc_on_a_small_tmpfs() {
    require_user_namespaces();
    let case = |phase, role, tmpfs_kib, leave| FaultCase {
        fault: Fault::Enospc,
        phase,
        role,
        tmpfs_kib,
        leave,
    };
    run_fault_cases(
        "ENOSPC",
        &[
            case(Phase::Wal, "enospc-wal", 256, 24 << 10),
            case(Phase::Flush, "enospc-flush", 1024, 8 << 10),
            case(Phase::Compaction, "enospc-compaction", 1024, 12 << 10),
            case(Phase::Background, "enospc-background", 1024, 40 << 10),
            case(Phase::Background, "enospc-background", 1024, 64 << 10),
            case(Phase::Background, "enospc-background", 1024, 96 << 10),
            case(Phase::Background, "enospc-background", 1024, 128 << 10),
            case(Phase::Background, "enospc-background", 1024, 160 << 10),
            case(Phase::Background, "enospc-background", 1024, 200 << 10),
            case(Phase::Background, "enospc-background", 1024, 256 << 10),
        ],
    );
}

#[test]
fn efbig_with_sigxfsz_ignored() {
    let case = |phase, role| FaultCase {
        fault: Fault::Efbig,
        phase,
        role,
        tmpfs_kib: 0,
        leave: 0,
    };
    run_fault_cases(
        "EFBIG",
        &[
            case(Phase::Wal, "efbig-wal"),
            case(Phase::Flush, "efbig-flush"),
            case(Phase::Compaction, "efbig-compaction"),
        ],
    );
}

// ---------------------------------------------------------------------------------------
// EFBIG with SIGXFSZ at its default action: a crash at an exact log offset
// ---------------------------------------------------------------------------------------

fn efbig_kill_child(dir: &Path, limit: u64) {
    let db = open_db(dir.join("store"), fault_options(Phase::Wal)).unwrap();
    let ks = db.keyspace("default").unwrap();
    set_soft_limit(libc::RLIMIT_CORE, 0);
    set_sigxfsz(libc::SIG_DFL);
    set_soft_limit(libc::RLIMIT_FSIZE, limit);
    for i in 0..10_000u64 {
        ks.insert(key(i), value(i))
            .unwrap_or_else(|e| panic!("write {i} returned an error instead of SIGXFSZ: {e}"));
        println!("@@ACK:{i}");
    }
    emit("survived", "yes");
}

/// Bytes of the log header and of one record of the workload.
fn log_geometry() -> (u64, u64) {
    let dir = scratch();
    let store = dir.path().join("store");
    let db = open_db(&store, fault_options(Phase::Wal)).unwrap();
    let ks = db.keyspace("default").unwrap();
    let wal = newest_wal(&store);
    let header = file_len(&wal);
    ks.insert(key(0), value(0)).unwrap();
    let one = file_len(&wal);
    ks.insert(key(1), value(1)).unwrap();
    assert_eq!(
        file_len(&wal) - one,
        one - header,
        "records of the workload differ"
    );
    (header, one - header)
}

#[test]
fn efbig_kill_at_exact_log_offsets() {
    let started = Instant::now();
    let (header, record) = log_geometry();
    // Limits at, just past and inside record boundaries, in the header and in the payload
    // of the first four records: 20 crash points.
    let mut limits = Vec::new();
    for k in 0..4 {
        for d in [0, 1, 23, 24, record / 2] {
            limits.push(header + k * record + d);
        }
    }
    let mut tally = Tally::default();
    let mut notes = Vec::new();
    for &limit in &limits {
        let dir = scratch();
        let report = run_child("efbig-kill", dir.path(), limit);
        assert_eq!(
            report.out.status.signal(),
            Some(libc::SIGXFSZ),
            "the child must be killed by SIGXFSZ at {limit} bytes\n{}",
            report.dump()
        );
        assert!(report.panics.is_empty(), "{}", report.dump());
        let acked = report.acks.len() as u64;
        assert_eq!(
            report.acks,
            (0..acked).collect::<Vec<_>>(),
            "acks out of order"
        );
        let store = dir.path().join("store");
        let wal = newest_wal(&store);
        assert_eq!(
            file_len(&wal),
            limit,
            "the log must end exactly at the limit"
        );
        let offset_in_record = (limit - header) % record;
        let lost = recover_and_continue(
            &store,
            &fault_options(Phase::Wal),
            acked,
            50,
            &format!("killed at log byte {limit}"),
        );
        assert_eq!(
            lost, 0,
            "acknowledged writes lost after a kill at byte {limit}"
        );
        notes.push(format!(
            "limit {limit} (record {} + {offset_in_record}): acked {acked}",
            (limit - header) / record
        ));
        tally.pass(acked, lost);
    }
    eprintln!(
        "EFBIG kill: log header {header} B, record {record} B; {}",
        notes.join("; ")
    );
    tally.report("EFBIG kill (SIGXFSZ)", started, &[]);
}

// ---------------------------------------------------------------------------------------
// EMFILE
// ---------------------------------------------------------------------------------------

const EMFILE_EXTRAS: [u64; 6] = [1, 3, 5, 8, 12, 24];

fn emfile_options() -> Options {
    Options::default()
        .durability(Durability::Sync)
        .memtable_size(4 << 10)
        .block_size(512)
        .table_size(4 << 10)
        .l0_compaction_trigger(2)
        .level1_size(8 << 10)
        .level_size_multiplier(2)
}

fn emfile_child(dir: &Path, _arg: u64) {
    let normal = get_limit(libc::RLIMIT_NOFILE).rlim_cur;
    let mut total_acked = 0;
    let mut total_lost = 0;
    for extra in EMFILE_EXTRAS {
        let store = dir.join(format!("store-{extra}"));
        let opts = emfile_options();
        let db = open_db(&store, opts.clone()).unwrap();
        let ks = db.keyspace("default").unwrap();
        set_soft_limit(libc::RLIMIT_NOFILE, open_fds() + extra);
        let mut acked = 0u64;
        let mut failure = None;
        for i in 0..1500u64 {
            match ks.insert(key(i), value(i)) {
                Ok(()) => acked = i + 1,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if failure.is_none() {
            failure = db.flush().and_then(|()| db.wait_for_compactions()).err();
        }
        let outcome = match &failure {
            None => "all writes, flushes and compactions succeeded".to_string(),
            Some(e) => {
                assert!(
                    caused_by(e, libc::EMFILE) || matches!(e, Error::Poisoned),
                    "with {extra} spare descriptors an error must be EMFILE: {e:?}"
                );
                assert!(
                    ks.insert(key(u64::from(u32::MAX)), value(0)).is_err(),
                    "writes after an EMFILE failure must fail"
                );
                format!(
                    "{} in {} after {acked} writes ({e})",
                    variant(e),
                    failed_in(e)
                )
            }
        };
        // Reads with the limit still low: the right value or an EMFILE error, never a
        // wrong answer.
        let mut read_errors = 0;
        for i in 0..acked {
            match ks.get(key(i)) {
                Ok(Some(v)) if v == value(i) => {}
                Err(e) if caused_by(&e, libc::EMFILE) => read_errors += 1,
                other => panic!(
                    "key {i} under EMFILE: {:?}",
                    other.map(|o| o.map(|v| v.len()))
                ),
            }
        }
        set_soft_limit(libc::RLIMIT_NOFILE, normal);
        for i in 0..acked {
            assert_eq!(
                ks.get(key(i)).unwrap(),
                Some(value(i)),
                "key {i} once descriptors are available again"
            );
        }
        drop(ks);
        let _ = db.close();
        let lost = recover_and_continue(&store, &opts, acked, 100, &format!("EMFILE +{extra}"));
        emit(
            &format!("extra{extra}"),
            format!("{outcome}; {read_errors} reads failed with EMFILE"),
        );
        total_acked += acked;
        total_lost += lost;
    }
    emit("acked", total_acked);
    emit("lost", total_lost);
}

#[test]
fn emfile_with_few_descriptors() {
    let started = Instant::now();
    let dir = scratch();
    let report = run_child("emfile", dir.path(), 0);
    report.assert_passed();
    let lost = report.num("lost");
    assert_eq!(lost, 0, "acknowledged writes lost\n{}", report.dump());
    let notes: Vec<String> = EMFILE_EXTRAS
        .iter()
        .map(|x| format!("+{x} descriptors: {}", report.get(&format!("extra{x}"))))
        .collect();
    let tally = Tally {
        scenarios: EMFILE_EXTRAS.len(),
        acked: report.num("acked"),
        lost,
    };
    tally.report("EMFILE", started, &notes);
}

// ---------------------------------------------------------------------------------------
// Deleted or damaged files
// ---------------------------------------------------------------------------------------

/// The final state of every key ever written: `None` for removed keys.
type Model = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

const LOSS_KEYS: u64 = 1200;

fn loss_options() -> Options {
    Options::default()
        .durability(Durability::Buffered)
        .memtable_size(8 << 10)
        .block_size(512)
        .table_size(8 << 10)
        .l0_compaction_trigger(4)
        .level1_size(32 << 10)
}

/// A closed store whose data lies in several tables over two or more levels, with
/// overwrites and removals (so a lost newer table could expose an older value).
fn build_multi_table_store(store: &Path) -> Model {
    let mut model = Model::new();
    let db = open_db(store, loss_options()).unwrap();
    let ks = db.keyspace("default").unwrap();
    for i in 0..LOSS_KEYS {
        ks.insert(key(i), value(i)).unwrap();
        model.insert(key(i), Some(value(i)));
    }
    for i in (0..LOSS_KEYS).step_by(3) {
        ks.insert(key(i), value(i + 1_000_000)).unwrap();
        model.insert(key(i), Some(value(i + 1_000_000)));
    }
    for i in (0..LOSS_KEYS).step_by(7) {
        ks.remove(key(i)).unwrap();
        model.insert(key(i), None);
    }
    db.flush().unwrap();
    drop(ks);
    db.close().unwrap();
    let tables = files_with_ext(store, "sst").len();
    assert!(tables >= 4, "only {tables} tables");
    model
}

/// How a store with a damaged file behaved.
#[derive(Debug, Default)]
struct Damage {
    refused_at_open: Option<String>,
    get_errors: usize,
    scan_error: Option<String>,
}

/// Opens a store with a damaged file and reads every key and a full scan. Every answer
/// must be the right one or an error `acceptable` allows; any wrong answer fails.
fn probe_damage(store: &Path, model: &Model, acceptable: &dyn Fn(&Error) -> bool) -> Damage {
    let mut damage = Damage::default();
    let db = match open_db(store, loss_options()) {
        Ok(db) => db,
        Err(e) => {
            assert!(acceptable(&e), "open failed with an untyped error: {e:?}");
            damage.refused_at_open = Some(e.to_string());
            return damage;
        }
    };
    let ks = db.keyspace("default").unwrap();
    for (k, expected) in model {
        match ks.get(k) {
            Ok(got) => assert!(
                got == *expected,
                "wrong data for {}: expected {}, got {}",
                String::from_utf8_lossy(k),
                describe(expected.as_deref()),
                describe(got.as_deref())
            ),
            Err(e) => {
                assert!(acceptable(&e), "unexpected error for a get: {e:?}");
                damage.get_errors += 1;
            }
        }
    }
    let mut live = model.iter().filter_map(|(k, v)| Some((k, v.as_ref()?)));
    for item in ks.iter() {
        match item {
            Ok((k, v)) => {
                let (ek, ev) = live.next().unwrap_or_else(|| {
                    panic!("scan returned {} past the end", String::from_utf8_lossy(&k))
                });
                assert!(
                    k == *ek && v == *ev,
                    "scan returned wrong data at {} (expected {})",
                    String::from_utf8_lossy(&k),
                    String::from_utf8_lossy(ek)
                );
            }
            Err(e) => {
                assert!(acceptable(&e), "unexpected error in a scan: {e:?}");
                damage.scan_error = Some(e.to_string());
                break;
            }
        }
    }
    if damage.scan_error.is_none() {
        assert!(live.next().is_none(), "scan ended early without an error");
    }
    drop(ks);
    let _ = db.close();
    damage
}

fn describe(v: Option<&[u8]>) -> String {
    match v {
        None => "not found".to_string(),
        Some(v) => format!("a {}-byte value {:02x?}..", v.len(), &v[..v.len().min(4)]),
    }
}

/// Up to `n` table files spread over the ids (oldest to newest).
fn sample_tables(store: &Path, n: usize) -> Vec<(u64, PathBuf)> {
    let all = files_with_ext(store, "sst");
    let step = all.len().div_ceil(n).max(1);
    let mut out: Vec<_> = all.iter().step_by(step).cloned().collect();
    if let Some(last) = all.last() {
        if !out.contains(last) {
            out.push(last.clone());
        }
    }
    out
}

#[test]
fn deleted_table_file_is_an_error_never_missing_data() {
    let started = Instant::now();
    let base = scratch();
    let src = base.path().join("src");
    let model = build_multi_table_store(&src);
    let mut tally = Tally::default();
    let mut notes = Vec::new();
    for (i, (_, table)) in sample_tables(&src, 8).iter().enumerate() {
        let copy = base.path().join(format!("copy{i}"));
        copy_store(&src, &copy);
        let name = table.file_name().unwrap();
        fs::remove_file(copy.join(name)).unwrap();
        // Open checks that every table the manifest lists exists, so the usual outcome is
        // a refusal naming the manifest and the missing table.
        let damage = probe_damage(&copy, &model, &|e| match e {
            Error::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
            Error::Corruption(c) => c.file == FileKind::Table || c.file == FileKind::Manifest,
            _ => false,
        });
        assert!(
            damage.refused_at_open.is_some()
                || (damage.get_errors > 0 && damage.scan_error.is_some()),
            "deleting {name:?} went unnoticed: {damage:?}"
        );
        notes.push(format!(
            "{}: {}",
            name.to_string_lossy(),
            damage.refused_at_open.as_ref().map_or_else(
                || format!(
                    "open ok, {} gets failed (NotFound), scan failed",
                    damage.get_errors
                ),
                |e| format!("open refused: {e}")
            )
        ));
        tally.pass(0, 0);
    }
    tally.report("deleted table", started, &notes);
}

#[test]
fn truncated_table_file_is_corruption_naming_it() {
    let started = Instant::now();
    let base = scratch();
    let src = base.path().join("src");
    let model = build_multi_table_store(&src);
    let mut tally = Tally::default();
    let mut notes = Vec::new();
    for (t, (_, table)) in sample_tables(&src, 3).iter().enumerate() {
        let len = file_len(table);
        let name = table.file_name().unwrap().to_owned();
        for cut in [0, 1, len / 2, len - 1] {
            let copy = base.path().join(format!("copy{t}-{cut}"));
            copy_store(&src, &copy);
            fs::OpenOptions::new()
                .write(true)
                .open(copy.join(&name))
                .unwrap()
                .set_len(cut)
                .unwrap();
            let damage = probe_damage(&copy, &model, &|e| {
                e.as_corruption().is_some_and(|c| {
                    c.file == FileKind::Table && c.path.file_name() == Some(name.as_os_str())
                })
            });
            assert!(
                damage.refused_at_open.is_some()
                    || (damage.get_errors > 0 && damage.scan_error.is_some()),
                "truncating {name:?} to {cut} bytes went unnoticed: {damage:?}"
            );
            tally.pass(0, 0);
        }
        notes.push(format!(
            "{} ({len} B) cut to 0, 1, {}, {}: Corruption naming the file",
            name.to_string_lossy(),
            len / 2,
            len - 1
        ));
    }
    tally.report("truncated table", started, &notes);
}

#[test]
fn deleted_current_refuses_to_open() {
    let started = Instant::now();
    let base = scratch();
    let store = base.path().join("store");
    let model = build_multi_table_store(&store);
    let current = store.join("CURRENT");
    let saved = fs::read(&current).unwrap();
    fs::remove_file(&current).unwrap();
    let before = names_in(&store);
    for create_if_missing in [true, false] {
        let opts = loss_options().create_if_missing(create_if_missing);
        let err = open_db(&store, opts).expect_err("open without CURRENT must fail");
        let c = err
            .as_corruption()
            .unwrap_or_else(|| panic!("expected Corruption, got {err:?}"));
        assert_eq!(c.file, FileKind::Manifest, "{err}");
        assert_eq!(
            names_in(&store),
            before,
            "a refused open must leave the directory as it was"
        );
    }
    fs::write(&current, saved).unwrap();
    let damage = probe_damage(&store, &model, &|_| false);
    assert!(damage.refused_at_open.is_none() && damage.get_errors == 0);
    let mut tally = Tally::default();
    tally.pass(0, 0);
    tally.report(
        "deleted CURRENT",
        started,
        &[
            "open refused with Corruption (manifest); nothing created; restoring CURRENT \
           brings every key back"
                .to_string(),
        ],
    );
}

fn buffered_exit_child(dir: &Path) {
    let db = open_db(
        dir.join("store"),
        Options::default()
            .durability(Durability::Buffered)
            .memtable_size(8 << 10),
    )
    .unwrap();
    let ks = db.keyspace("default").unwrap();
    for i in 0..500u64 {
        ks.insert(key(i), value(i)).unwrap();
        println!("@@ACK:{i}");
    }
    std::io::stdout().flush().unwrap();
    // Exit without close: nothing is synced or flushed beyond what the writes did.
    std::process::exit(0);
}

#[test]
fn deleted_newest_log_loses_only_a_tail() {
    let started = Instant::now();
    let dir = scratch();
    let report = run_child("buffered-exit", dir.path(), 0);
    assert!(report.out.status.success(), "{}", report.dump());
    let acked = report.acks.len() as u64;
    assert_eq!(acked, 500);
    let store = dir.path().join("store");
    let wals = files_with_ext(&store, "wal");
    let (id, newest) = wals.last().unwrap().clone();
    let newest_len = file_len(&newest);
    fs::remove_file(&newest).unwrap();
    let opts = Options::default()
        .durability(Durability::Buffered)
        .memtable_size(8 << 10);
    let note = match open_db(&store, opts.clone()) {
        Ok(db) => {
            let ks = db.keyspace("default").unwrap();
            // A prefix with nothing after a gap: `check_prefix` fails on a hole.
            let (removed, m) = check_prefix(&ks, acked, "newest log deleted");
            assert_eq!(removed, acked - m);
            drop(ks);
            db.close().unwrap();
            let lost = recover_and_continue(&store, &opts, m, 100, "after the deleted log");
            assert_eq!(lost, 0);
            format!(
                "open succeeded: {} of {acked} acknowledged Buffered writes were in the deleted \
                 log {id} ({newest_len} B, {} logs in all) and are gone as a tail; the rest \
                 is a clean prefix and the store keeps working",
                acked - m,
                wals.len()
            )
        }
        Err(e) => {
            assert!(
                e.is_corruption() || matches!(e, Error::Io { .. }),
                "open must fail with a typed error: {e:?}"
            );
            format!("open refused: {e}")
        }
    };
    let mut tally = Tally::default();
    tally.pass(0, 0);
    tally.report("deleted newest log", started, &[note]);
}

// ---------------------------------------------------------------------------------------
// Summary
// ---------------------------------------------------------------------------------------

/// Tests that report into the totals.
const AREAS: usize = 8;

static TOTAL_SCENARIOS: AtomicUsize = AtomicUsize::new(0);
static TOTAL_ACKED: AtomicU64 = AtomicU64::new(0);
static TOTAL_LOST: AtomicU64 = AtomicU64::new(0);
static AREAS_DONE: AtomicUsize = AtomicUsize::new(0);

#[derive(Default)]
struct Tally {
    scenarios: usize,
    acked: u64,
    lost: u64,
}

impl Tally {
    fn pass(&mut self, acked: u64, lost: u64) {
        self.scenarios += 1;
        self.acked += acked;
        self.lost += lost;
    }

    fn report(&self, area: &str, started: Instant, notes: &[String]) {
        for note in notes {
            eprintln!("  {area}: {note}");
        }
        eprintln!(
            "T6 {area}: {} scenarios passed, {} acknowledged writes checked, {} lost ({:.1} s)",
            self.scenarios,
            self.acked,
            self.lost,
            started.elapsed().as_secs_f64()
        );
        TOTAL_SCENARIOS.fetch_add(self.scenarios, Ordering::SeqCst);
        TOTAL_ACKED.fetch_add(self.acked, Ordering::SeqCst);
        TOTAL_LOST.fetch_add(self.lost, Ordering::SeqCst);
        if AREAS_DONE.fetch_add(1, Ordering::SeqCst) + 1 == AREAS {
            eprintln!(
                "T6 summary: {} scenarios passed, {} acknowledged writes checked, {} lost",
                TOTAL_SCENARIOS.load(Ordering::SeqCst),
                TOTAL_ACKED.load(Ordering::SeqCst),
                TOTAL_LOST.load(Ordering::SeqCst)
            );
        }
    }
}
