//! The parent's check after a kill: parse the expected-state log, reopen the store, find
//! the prefix of the cycle's ops it holds, and hold that prefix to the contract.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use cairn::Db;

use crate::workload::{
    key_bytes, options, parse_key, parse_value, value, Crash, Entry, Mode, Rng, KEYS, KEYSPACES,
    QUEUE_DEPTH,
};

/// (keyspace index, key) -> id of the op whose put is the current value.
pub(crate) type State = HashMap<(u8, u32), u64>;

/// What every cycle so far left in the store.
pub(crate) struct Model {
    pub(crate) base: State,
    /// The store's last seqno with `base` in it.
    pub(crate) seqno: u64,
    pub(crate) next_id: u64,
}

struct Ack {
    pub(crate) last: u64,
    pub(crate) durable: u64,
    pub(crate) t_micros: u64,
}

struct LoggedOp {
    pub(crate) id: u64,
    /// The durability the op was written with.
    pub(crate) mode: Mode,
    pub(crate) entries: Vec<Entry>,
    pub(crate) ack: Option<Ack>,
}

#[derive(Default)]
struct Log {
    /// `(last_seqno, durable_seqno)` the child recovered, if it got that far.
    pub(crate) opened: Option<(u64, u64)>,
    pub(crate) ops: Vec<LoggedOp>,
    pub(crate) flushes: u64,
    pub(crate) compactions: u64,
}

fn field(word: Option<&str>, name: &str) -> Option<u64> {
    word?.strip_prefix(name)?.strip_prefix('=')?.parse().ok()
}

fn parse_log(text: &str, first_id: u64) -> Result<Log, String> {
    let mut log = Log::default();
    // A kill may tear the last line; whole lines end with '\n'.
    let whole = match text.rfind('\n') {
        Some(end) => &text[..=end],
        None => "",
    };
    for line in whole.lines() {
        let bad = || format!("malformed expected-state line {line:?}");
        let mut words = line.split(' ');
        match words.next() {
            Some("opened") => {
                let last = field(words.next(), "last").ok_or_else(bad)?;
                let durable = field(words.next(), "durable").ok_or_else(bad)?;
                log.opened = Some((last, durable));
            }
            Some("pending") => {
                let id: u64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
                let expected = log.ops.last().map_or(first_id, |op| op.id + 1);
                if id != expected || log.ops.last().is_some_and(|op| op.ack.is_none()) {
                    return Err(format!(
                        "op {id} out of order in the log (expected {expected})"
                    ));
                }
                let mode = words.next().and_then(Mode::parse).ok_or_else(bad)?;
                let entries = words.map(Entry::parse).collect::<Option<Vec<_>>>();
                let entries = entries.filter(|e| !e.is_empty()).ok_or_else(bad)?;
                log.ops.push(LoggedOp {
                    id,
                    mode,
                    entries,
                    ack: None,
                });
            }
            Some("acked") => {
                let id: u64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
                let last = field(words.next(), "last").ok_or_else(bad)?;
                let durable = field(words.next(), "durable").ok_or_else(bad)?;
                let t_micros = field(words.next(), "t").ok_or_else(bad)?;
                match log.ops.last_mut() {
                    Some(op) if op.id == id && op.ack.is_none() => {
                        op.ack = Some(Ack {
                            last,
                            durable,
                            t_micros,
                        });
                    }
                    _ => return Err(format!("ack of op {id} without its pending line")),
                }
            }
            Some("stats") => {
                log.flushes = field(words.next(), "flushes").ok_or_else(bad)?;
                log.compactions = field(words.next(), "compactions").ok_or_else(bad)?;
            }
            _ => return Err(bad()),
        }
    }
    Ok(log)
}

/// Every pair of both keyspaces, checked to be a value some op wrote to that key.
fn scan(db: &Db) -> Result<State, String> {
    let mut state = State::new();
    for (i, name) in KEYSPACES.iter().enumerate() {
        let Some(ks) = db.get_keyspace(name) else {
            continue;
        };
        for item in ks.iter() {
            let (k, v) = item.map_err(|e| format!("scan of keyspace {name} failed: {e}"))?;
            let key = parse_key(&k)
                .ok_or_else(|| format!("keyspace {name} holds a key no op wrote: {k:?}"))?;
            let id = parse_value(i as u8, key, &v).ok_or_else(|| {
                let head = &v[..v.len().min(40)];
                format!(
                    "wrong data: {name}/{} holds a value no op wrote ({} bytes, starting {:?})",
                    String::from_utf8_lossy(&k),
                    v.len(),
                    String::from_utf8_lossy(head)
                )
            })?;
            state.insert((i as u8, key), id);
        }
    }
    Ok(state)
}

/// Point reads of a sample of keys must agree with the scan.
fn spot_check(db: &Db, state: &State, rng: &mut Rng) -> Result<(), String> {
    for _ in 0..32 {
        let ks = rng.below(2) as u8;
        let key = rng.below(KEYS) as u32;
        let name = KEYSPACES[usize::from(ks)];
        let got = match db.get_keyspace(name) {
            Some(h) => h
                .get(key_bytes(key))
                .map_err(|e| format!("get {name}/k{key:05} failed: {e}"))?,
            None => None,
        };
        let want = state.get(&(ks, key)).map(|&id| value(id, ks, key));
        if got != want {
            return Err(format!(
                "get {name}/k{key:05} disagrees with the scan (get: {:?}, scan: op {:?})",
                got.map(|v| v.len()),
                state.get(&(ks, key))
            ));
        }
    }
    Ok(())
}

fn apply(state: &mut State, op: &LoggedOp) {
    for e in &op.entries {
        if e.put {
            state.insert((e.ks, e.key), op.id);
        } else {
            state.remove(&(e.ks, e.key));
        }
    }
}

fn describe_diff(model: &State, store: &State, k: usize) -> String {
    let mut keys: Vec<&(u8, u32)> = model
        .keys()
        .chain(store.keys())
        .filter(|key| model.get(key) != store.get(key))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut out = format!("{} keys differ from the model after {k} ops:", keys.len());
    let show = |id: Option<&u64>| id.map_or("nothing".to_string(), |id| format!("op {id}"));
    for key in keys.iter().take(8) {
        let _ = write!(
            out,
            " [{}/k{:05}: store has {}, model has {}]",
            KEYSPACES[usize::from(key.0)],
            key.1,
            show(store.get(key)),
            show(model.get(key))
        );
    }
    out
}

/// What one verified cycle found.
pub(crate) struct CycleOutcome {
    pub(crate) acked: u64,
    /// Acked ops the crash lost.
    pub(crate) lost: u64,
    /// The pending op survived.
    pub(crate) pending_kept: bool,
    /// Time from the ack of the first lost op to the kill.
    pub(crate) loss_ms: f64,
    pub(crate) flushes: u64,
    pub(crate) compactions: u64,
}

/// Reopens the store after a kill and checks it against the model and the log; on
/// success the surviving ops become the model's new base.
pub(crate) fn verify(
    mode: Mode,
    crash: Crash,
    dir: &Path,
    text: &str,
    model: &mut Model,
    kill_micros: u64,
    rng: &mut Rng,
) -> Result<CycleOutcome, String> {
    let log = parse_log(text, model.next_id)?;
    let ops = &log.ops;
    let acked = ops.iter().filter(|op| op.ack.is_some()).count();

    // seq(k): the store's last seqno after the first k ops of this cycle.
    let mut seqs = vec![model.seqno];
    for op in ops {
        let next = seqs[seqs.len() - 1] + op.entries.len() as u64;
        if let Some(ack) = &op.ack {
            if ack.last != next {
                return Err(format!(
                    "op {} was acked with last_seqno {} but its seqno is {next}",
                    op.id, ack.last
                ));
            }
        }
        seqs.push(next);
    }
    if let Some((last, _)) = log.opened {
        if last != model.seqno {
            return Err(format!(
                "the child recovered last_seqno {last}, but the parent had closed the store \
                 at {} (recovery is not idempotent)",
                model.seqno
            ));
        }
    }

    // The least prefix the contract guarantees.
    let durable = ops
        .iter()
        .filter_map(|op| op.ack.as_ref().map(|a| a.durable))
        .chain(log.opened.map(|(_, d)| d))
        .max()
        .unwrap_or(0);
    let by_durable = seqs[1..].iter().take_while(|&&s| s <= durable).count();
    // An acked op of a mode that survives this crash keeps every op before it (a prefix).
    let survives = |m: Mode| match crash {
        Crash::Process => matches!(m, Mode::Sync | Mode::Periodic | Mode::Buffered),
        Crash::PowerLoss => m == Mode::Sync,
    };
    let by_ack = ops
        .iter()
        .rposition(|op| op.ack.is_some() && survives(op.mode))
        .map_or(0, |i| i + 1);
    let by_queue = match (crash, mode) {
        (Crash::Process, Mode::Async) => acked.saturating_sub(QUEUE_DEPTH),
        _ => 0,
    };
    let by_mode = by_ack.max(by_queue);
    let k_min = by_mode.max(by_durable);

    let db =
        Db::open(dir, options(mode)).map_err(|e| format!("Db::open after the kill failed: {e}"))?;
    let observed = scan(&db).and_then(|store| {
        spot_check(&db, &store, rng)?;
        Ok((store, db.last_seqno()))
    });
    let closed = {
        let _no_spawn = crate::FORK_GUARD.read().unwrap_or_else(|e| e.into_inner());
        db.close()
    };
    let (store, last) = observed?;
    closed.map_err(|e| format!("close after verification failed: {e}"))?;

    // The model after each prefix, compared with the store by a running count of
    // differing keys.
    let mut m = model.base.clone();
    let differs = |m: &State, key: &(u8, u32)| m.get(key) != store.get(key);
    let mut diff = m
        .keys()
        .chain(store.keys())
        .collect::<HashSet<_>>()
        .into_iter()
        .filter(|key| differs(&m, key))
        .count() as i64;
    let mut matches = Vec::new();
    if diff == 0 {
        matches.push(0usize);
    }
    let mut at_seqno: Option<State> = (last == seqs[0]).then(|| m.clone());
    for (i, op) in ops.iter().enumerate() {
        for e in &op.entries {
            let key = (e.ks, e.key);
            let before = differs(&m, &key);
            if e.put {
                m.insert(key, op.id);
            } else {
                m.remove(&key);
            }
            diff += i64::from(differs(&m, &key)) - i64::from(before);
        }
        if diff == 0 {
            matches.push(i + 1);
        }
        if seqs[i + 1] == last {
            at_seqno = Some(m.clone());
        }
    }

    let Some(k) = seqs.iter().position(|&s| s == last) else {
        return Err(format!(
            "recovered last_seqno {last} is not at an op boundary (the cycle started at {} and \
             logged {} ops up to seqno {}): part of a batch survived",
            seqs[0],
            ops.len(),
            seqs[seqs.len() - 1]
        ));
    };
    if !matches.contains(&k) {
        let model_k = at_seqno.unwrap_or_default();
        return Err(format!(
            "recovered last_seqno {last} is that of {k} ops, but the contents are not the model \
             after those ops (contents match after {matches:?} ops; none means they match no \
             prefix): {}",
            describe_diff(&model_k, &store, k)
        ));
    }
    if k < k_min {
        let op_at = |k: usize| {
            ops.get(k.wrapping_sub(1))
                .map_or("none".to_string(), |op| op.id.to_string())
        };
        return Err(format!(
            "lost acknowledged writes: {k} of this cycle's {} logged ops ({acked} acked) \
             survived, through op {} at seqno {}; {} on a {} crash guarantees at least \
             {k_min}, through op {} at seqno {} (last recorded durable_seqno {durable})",
            ops.len(),
            op_at(k),
            seqs[k],
            mode.label(),
            crash.name(),
            op_at(k_min),
            seqs[k_min]
        ));
    }
    for op in &ops[..k] {
        apply(&mut model.base, op);
    }
    model.seqno = last;
    if let Some(op) = ops.last() {
        model.next_id = op.id + 1;
    }
    let lost = acked.saturating_sub(k) as u64;
    let loss_ms = match ops.get(k).and_then(|op| op.ack.as_ref()) {
        Some(ack) if lost > 0 => kill_micros.saturating_sub(ack.t_micros) as f64 / 1000.0,
        _ => 0.0,
    };
    Ok(CycleOutcome {
        acked: acked as u64,
        lost,
        pending_kept: k > acked,
        loss_ms,
        flushes: log.flushes,
        compactions: log.compactions,
    })
}
