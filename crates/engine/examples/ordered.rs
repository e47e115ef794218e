//! A tour of the ordered store (`cairn::Db`), printing each step: options built with
//! setters, keyspaces, single writes with a per-write durability, an atomic batch across
//! keyspaces, a snapshot, range, prefix and reverse scans, counters, metadata and expiry
//! (TTL) through `EntryOptions`, a value kept in the value log, transactions, a backup, and read-only
//! opens of the live store and of the backup. It ends by checking what it printed.
//!
//! ```sh
//! cargo run -p cairn --example ordered
//! ```
//!
//! Everything happens in a temporary directory, removed at the end. Expiry is judged by a
//! manual clock, so the example does not wait for a TTL to pass.

use std::time::Duration;

use cairn::Readable;
use cairn::{
    Clock, Db, Durability, EntryOptions, Error, Isolation, Iter, KeyspaceOptions, Meta, Options,
    Result, TransactionOptions,
};

/// The keys an iterator yields, as text.
fn keys(iter: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>) -> Result<Vec<String>> {
    iter.map(|item| item.map(|(k, _)| String::from_utf8_lossy(&k).into_owned()))
        .collect()
}

/// Every `(key, value)` of a scan.
fn pairs(iter: Iter) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    iter.collect()
}

fn main() -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::InvalidArgument(e.to_string()))?;
    let store = tmp.path().join("store");
    let backup = tmp.path().join("backup");

    // Options: defaults plus one setter per change. The manual clock drives expiry.
    let clock = Clock::manual(1_700_000_000_000);
    let options = Options::default()
        .durability(Durability::Sync)
        .memtable_size(1 << 20)
        .clock(clock.clone());
    let db = Db::open(&store, options)?;
    println!("opened a store in {}", db.path().display());

    // Keyspaces: independent key spaces sharing one log. `media` keeps values of 4 KiB
    // and more in the value log, out of the tree.
    let users = db.keyspace("users")?;
    let emails = db.keyspace("emails")?;
    let sessions = db.keyspace("sessions")?;
    let hits = db.keyspace("hits")?;
    let media = db.keyspace_with(
        "media",
        KeyspaceOptions::separated(KeyspaceOptions::RECOMMENDED_BLOB_THRESHOLD),
    )?;
    println!("keyspaces: {:?}", db.keyspace_names());

    // Single writes: fsynced before they return (the store's Sync default), or not, per
    // write.
    for (key, name) in [
        ("user:001", "Ada"),
        ("user:002", "Grace"),
        ("user:003", "Alan"),
        ("user:004", "Barbara"),
    ] {
        users.insert(key, name)?;
    }
    users.insert_with("user:005", "Edsger", Some(Durability::Buffered))?;
    println!("inserted {} users", users.len()?);

    // A batch: atomic across keyspaces, recovered whole or not at all.
    let mut batch = db.batch();
    batch.insert(&users, "user:006", "Donald");
    batch.insert(&emails, "donald@example.com", "user:006");
    batch.insert(&emails, "ada@example.com", "user:001");
    batch.remove(&users, "user:004");
    println!(
        "committing a batch of {} operations on two keyspaces",
        batch.len()
    );
    batch.commit()?;

    // A snapshot: an O(1), consistent view that later writes do not change.
    let snapshot = db.snapshot();
    users.insert("user:001", "Ada Lovelace")?;
    users.remove("user:002")?;
    let then = snapshot.get(&users, "user:001")?;
    let now = users.get("user:001")?;
    println!(
        "user:001 was {:?} at the snapshot and is {:?} now",
        then.as_deref().map(String::from_utf8_lossy),
        now.as_deref().map(String::from_utf8_lossy)
    );

    // Scans: by range, by prefix, backwards; each item is a Result.
    let middle = keys(users.range("user:002".."user:006"))?;
    println!("users in [user:002, user:006): {middle:?}");
    let newest_two = keys(users.prefix("user:").rev().take(2))?;
    println!("the two last users, scanning backwards: {newest_two:?}");
    let at_snapshot = keys(snapshot.prefix(&users, "user:"))?;
    println!("users at the snapshot: {at_snapshot:?}");

    // Counters: the decimal text of an i64, updated atomically with every other write.
    hits.incr("/home", 1)?;
    let home = hits.incr("/home", 41)?;
    let about = hits.decr("/about", 2)?;
    hits.insert("/broken", "n/a")?;
    let refused = matches!(hits.incr("/broken", 1), Err(Error::NotACounter { .. }));
    println!("counters: /home = {home}, /about = {about}; /broken refused: {refused}");

    // Metadata and expiry: a type tag and bytes read back without the value, and a TTL.
    let entry = EntryOptions::new()
        .meta(Meta::new(7, "ip=10.0.0.1"))
        .ttl(Duration::from_secs(60));
    sessions.insert_entry("session:abc", "user:001", &entry)?;
    sessions.insert("session:keep", "user:003")?;
    let head = sessions
        .head("session:abc")?
        .ok_or_else(|| Error::InvalidArgument("the session was just written".into()))?;
    println!(
        "session:abc: {} value bytes, tag {}, meta {:?}, expires at {:?} ms",
        head.value_len,
        head.tag,
        String::from_utf8_lossy(&head.meta),
        head.expires_at
    );
    clock.advance(Duration::from_secs(61));
    let expired = sessions.get("session:abc")?;
    println!("61 s later session:abc reads as {expired:?}");

    // A large value goes to the value log; reads and scans return it as any other.
    let clip = vec![0x42u8; 64 << 10];
    media.insert("clip.mp4", &clip)?;
    let clip_head = media
        .head("clip.mp4")?
        .ok_or_else(|| Error::InvalidArgument("the clip was just written".into()))?;
    println!(
        "clip.mp4: {} bytes, in the value log: {}",
        clip_head.value_len, clip_head.separated
    );

    // Transactions: read, decide and write atomically. `update` reruns the closure if
    // another write changed a key it writes after its snapshot; serializable isolation
    // checks what it read too. Here: claim an email address only if nobody has it.
    let claim = |user: &str, email: &str| -> Result<bool> {
        let serializable = TransactionOptions::new().isolation(Isolation::Serializable);
        db.update_with(&serializable, |tx| {
            if tx.contains_key(&emails, email)? {
                return Ok(false);
            }
            tx.insert(&emails, email, user);
            tx.incr(&hits, "claims", 1)?;
            Ok(true)
        })
    };
    let first_claim = claim("user:003", "barbara@example.com")?;
    let second_claim = claim("user:005", "barbara@example.com")?;
    // A conflict: a write after the transaction's snapshot to a key it writes.
    let mut tx = db.transaction();
    tx.insert(&users, "user:005", "Edsger W. Dijkstra");
    users.insert("user:005", "Edsger Dijkstra")?;
    let conflicted = tx.commit().is_err_and(|e| e.is_conflict());
    println!(
        "transactions: first claim {first_claim}, second claim {second_claim}, \
         conflicting commit refused: {conflicted}"
    );

    // A backup while the store is open: a consistent copy, itself a store.
    db.flush()?;
    let info = db.backup(&backup)?;
    println!(
        "backup at seqno {}: {} files linked, {} copied",
        info.seqno, info.files_linked, info.files_copied
    );
    users.insert("user:007", "Frances")?; // after the backup: not in it

    // Read-only opens: beside the writer (no lock, nothing written), and of the backup.
    let live = Db::open_read_only(&store, Options::default())?;
    let live_users = live
        .get_keyspace("users")
        .ok_or_else(|| Error::InvalidArgument("users exists".into()))?;
    let refused_write = matches!(live_users.insert("user:008", "x"), Err(Error::ReadOnly));
    println!(
        "read-only view of the live store: {} users, writes refused: {refused_write}",
        live_users.len()?
    );
    let copy = Db::open_read_only(&backup, Options::default())?;
    let copy_users = copy
        .get_keyspace("users")
        .ok_or_else(|| Error::InvalidArgument("users is in the backup".into()))?;
    println!(
        "the backup holds {} users and {} keyspaces",
        copy_users.len()?,
        copy.keyspace_names().len()
    );

    // What the tour printed, checked.
    assert_eq!(then, Some(b"Ada".to_vec()));
    assert_eq!(now, Some(b"Ada Lovelace".to_vec()));
    assert_eq!(middle, ["user:003", "user:005"]);
    assert_eq!(newest_two, ["user:006", "user:005"]);
    assert_eq!(
        at_snapshot,
        ["user:001", "user:002", "user:003", "user:005", "user:006"]
    );
    assert_eq!((home, about, refused), (42, -2, true));
    assert_eq!(hits.get("/home")?, Some(b"42".to_vec()));
    assert_eq!(
        (head.value_len, head.tag, head.meta.as_slice()),
        (8, 7, &b"ip=10.0.0.1"[..])
    );
    assert_eq!(expired, None);
    assert_eq!((first_claim, second_claim, conflicted), (true, false, true));
    assert_eq!(hits.get("claims")?, Some(b"1".to_vec()));
    assert_eq!(users.get("user:005")?, Some(b"Edsger Dijkstra".to_vec()));
    assert_eq!(sessions.get("session:keep")?, Some(b"user:003".to_vec()));
    assert!(clip_head.separated);
    assert_eq!(media.get("clip.mp4")?, Some(clip));
    assert_eq!(
        emails.get("donald@example.com")?,
        Some(b"user:006".to_vec())
    );
    assert!(refused_write);
    assert_eq!(live_users.len()?, 5);
    assert_eq!(copy_users.len()?, 4);
    assert_eq!(copy_users.get("user:007")?, None);
    assert_eq!(pairs(copy_users.iter())?, {
        let mut before_backup = pairs(users.iter())?;
        before_backup.retain(|(k, _)| k.as_slice() != b"user:007");
        before_backup
    });
    assert_eq!(copy.keyspace_names(), db.keyspace_names());

    db.close()?;
    println!("closed; every check passed");
    Ok(())
}
