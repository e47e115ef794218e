//! The writer process: opens the store (on the real file system, or on `LossyFs` to
//! simulate power loss) and writes ops until it is killed, logging each op as pending
//! before the write and as acked after it.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::time::Instant;

use cairn::{Db, Durability, Keyspace};

use crate::workload::{
    key_bytes, now_micros, options, value, ChildSpec, Crash, Entry, Mode, Rng, CHILD_LIFETIME,
    KEYS, KEYSPACES, MSG_OPENED, MSG_OPENING,
};

fn fail(msg: &str) -> ! {
    eprintln!("kill9 child: {msg}");
    std::process::exit(3);
}

fn log_line(log: &mut File, line: &str) {
    // One write per line, so a kill leaves whole lines (and at most a torn last one).
    if let Err(e) = log.write_all(line.as_bytes()) {
        fail(&format!("cannot append to the expected-state log: {e}"));
    }
}

fn say(msg: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{msg}");
    let _ = out.flush();
}

fn random_op(rng: &mut Rng) -> Vec<Entry> {
    let entry = |rng: &mut Rng, ks: Option<u8>, put_pct: u64| Entry {
        ks: ks.unwrap_or_else(|| rng.below(2) as u8),
        key: rng.below(KEYS) as u32,
        put: rng.below(100) < put_pct,
    };
    match rng.below(100) {
        0..40 => vec![entry(rng, None, 100)],
        40..55 => vec![entry(rng, None, 0)],
        _ => {
            // A batch across both keyspaces (it may touch a key twice: the later wins).
            let n = 2 + rng.below(7);
            (0..n)
                .map(|i| entry(rng, (i < 2).then_some(i as u8), 75))
                .collect()
        }
    }
}

/// Applies one op. `durability` is `None` to use the store's default (the pure modes
/// exercise the default path); `Mixed` passes each op's own.
fn write_op(
    db: &Db,
    kss: &[Keyspace; 2],
    id: u64,
    entries: &[Entry],
    durability: Option<Durability>,
) -> cairn::Result<()> {
    if let [e] = entries {
        let ks = &kss[usize::from(e.ks)];
        return if e.put {
            ks.insert_with(key_bytes(e.key), value(id, e.ks, e.key), durability)
        } else {
            ks.remove_with(key_bytes(e.key), durability)
        };
    }
    // Every third multi-key op that touches each key once commits as a transaction: the
    // same writes in one batch (one seqno each, as the parent counts) behind a conflict
    // check (one writer: none conflict), which must survive as whole as a batch does.
    let distinct = entries
        .iter()
        .enumerate()
        .all(|(i, e)| entries[..i].iter().all(|f| (f.ks, f.key) != (e.ks, e.key)));
    if id.is_multiple_of(3) && distinct {
        let mut tx = db.transaction();
        for e in entries {
            let ks = &kss[usize::from(e.ks)];
            if e.put {
                tx.insert(ks, key_bytes(e.key), value(id, e.ks, e.key));
            } else {
                tx.remove(ks, key_bytes(e.key));
            }
        }
        return tx.commit_with(durability).map(|_| ());
    }
    let mut batch = db.batch();
    for e in entries {
        let ks = &kss[usize::from(e.ks)];
        if e.put {
            batch.insert(ks, key_bytes(e.key), value(id, e.ks, e.key));
        } else {
            batch.remove(ks, key_bytes(e.key));
        }
    }
    batch.commit_with(durability)
}

pub(crate) fn main(spec: &ChildSpec) -> ! {
    let started = Instant::now();
    let mut log = OpenOptions::new()
        .append(true)
        .create(true)
        .open(&spec.log)
        .unwrap_or_else(|e| fail(&format!("cannot open the log: {e}")));
    say(MSG_OPENING);
    let opened = match spec.crash {
        Crash::Process => Db::open(&spec.dir, options(spec.mode)),
        Crash::PowerLoss => {
            cairn::testing::open_simulating_power_loss(&spec.dir, options(spec.mode))
        }
    };
    let db = opened.unwrap_or_else(|e| fail(&format!("Db::open failed: {e}")));
    let ks = |name: &str| {
        db.keyspace(name)
            .unwrap_or_else(|e| fail(&format!("keyspace {name}: {e}")))
    };
    let kss = [ks(KEYSPACES[0]), ks(KEYSPACES[1])];
    log_line(
        &mut log,
        &format!(
            "opened last={} durable={}\n",
            db.last_seqno(),
            db.durable_seqno()
        ),
    );
    say(MSG_OPENED);

    let mut rng = Rng(spec.seed);
    let mut id = spec.first_id;
    loop {
        if started.elapsed() > CHILD_LIFETIME {
            fail("never killed");
        }
        let entries = random_op(&mut rng);
        let mode = spec.mode.pick(&mut rng);
        let durability = (spec.mode == Mode::Mixed).then(|| mode.durability());
        let mut line = format!("pending {id} {}", mode.name());
        for e in &entries {
            line.push(' ');
            line.push_str(&e.encode());
        }
        line.push('\n');
        log_line(&mut log, &line);
        if let Err(e) = write_op(&db, &kss, id, &entries, durability) {
            fail(&format!("op {id} failed: {e}"));
        }
        log_line(
            &mut log,
            &format!(
                "acked {id} last={} durable={} t={}\n",
                db.last_seqno(),
                db.durable_seqno(),
                now_micros()
            ),
        );
        if id.is_multiple_of(32) {
            let s = db.stats();
            log_line(
                &mut log,
                &format!(
                    "stats flushes={} compactions={}\n",
                    s.flushes, s.compactions
                ),
            );
        }
        id += 1;
    }
}
