//! `cairn put`, `get`, `head`, `delete`: one key at a time.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use cairn::{EntryOptions, Meta, Readable};
use serde_json::Value;

use crate::errors::{CliError, CliResult, EXIT_NOT_FOUND, EXIT_OK};

use super::fields::{self, written};
use super::{arg_bytes, close, existing_keyspace, open, open_read, print_json, KeyspaceArg};
use crate::hexfmt;

/// Set a key to a value (creates the store and the keyspace if missing)
///
/// The write is durable (fsynced) when the command returns. With --hex, KEY and VALUE
/// are hex digits. A value starting with `-` needs no `--`; a VALUE of exactly `-` is
/// read from standard input (its bytes as they are, or hex text with --hex; store the
/// one-byte value `-` with `--hex 2d`). A store is created only in a
/// new or empty directory: one holding other files and no store is refused (exit 1).
/// Prints nothing, or with --json one object: keyspace, key (or key_b64), value_len and
/// the write's seqno.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct PutArgs {
    /// The store directory.
    store: PathBuf,
    /// The key.
    #[arg(allow_hyphen_values = true)]
    key: OsString,
    /// The value, or `-` to read it from standard input.
    #[arg(allow_hyphen_values = true)]
    value: OsString,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// KEY and VALUE are hex (two digits per byte).
    #[arg(long)]
    hex: bool,
    /// Expire the entry after SECS seconds.
    #[arg(long, value_name = "SECS")]
    ttl: Option<u64>,
    /// Application tag (a u32; 0 is none).
    #[arg(long, value_name = "N")]
    tag: Option<u32>,
    /// Application metadata, hex (at most 4 KiB).
    #[arg(long, value_name = "HEX")]
    meta: Option<String>,
    /// Print what was written as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn put(args: &PutArgs, out: &mut dyn Write) -> CliResult<u8> {
    let key = arg_bytes("key", &args.key, args.hex)?;
    let value = if args.value == "-" {
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut raw)
            .map_err(|e| CliError::msg(format!("reading the value from standard input: {e}")))?;
        if args.hex {
            let text = String::from_utf8_lossy(&raw);
            hexfmt::decode(text.trim().as_bytes())
                .map_err(|e| CliError::msg(format!("--hex: the value {e}")))?
        } else {
            raw
        }
    } else {
        arg_bytes("value", &args.value, args.hex)?
    };
    let mut options = EntryOptions::new();
    if args.tag.is_some() || args.meta.is_some() {
        let meta = match &args.meta {
            Some(text) => hexfmt::decode(text.as_bytes())
                .map_err(|e| CliError::msg(format!("--meta: the metadata {e}")))?,
            None => Vec::new(),
        };
        options = options.meta(Meta::new(args.tag.unwrap_or(0), meta));
    }
    if let Some(secs) = args.ttl {
        options = options.ttl(Duration::from_secs(secs));
    }
    let db = open(&args.store, true)?;
    db.keyspace(&args.ks.keyspace)?
        .insert_entry(&key, &value, &options)?;
    // This process holds the store's lock: the last seqno is this write's.
    let seqno = db.last_seqno();
    close(db)?;
    if args.json {
        let mut obj = written(&args.ks.keyspace, seqno);
        fields::insert_bytes(&mut obj, "key", &key);
        obj.insert("value_len".to_string(), Value::from(value.len()));
        print_json(out, obj)?;
    }
    Ok(EXIT_OK)
}

/// Print the value of a key: raw bytes on standard output, no newline
///
/// With --json, one JSON object instead: what `head` prints (key, value_len, tag,
/// meta_b64, seqno, expires_at, separated) and the value, as "value" if it is UTF-8,
/// else "value_b64" (standard base64), the encoding of `scan` and `dump`.
/// Exit status: 0 found, 2 not found, 1 error, 3 corruption. With --hex, KEY is hex.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct GetArgs {
    /// The store directory.
    store: PathBuf,
    /// The key.
    #[arg(allow_hyphen_values = true)]
    key: OsString,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// KEY is hex.
    #[arg(long)]
    hex: bool,
    /// Print the entry (value and attributes) as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn get(args: &GetArgs, out: &mut dyn Write) -> CliResult<u8> {
    let key = arg_bytes("key", &args.key, args.hex)?;
    let db = open_read(&args.store)?;
    let ks = existing_keyspace(&db, &args.ks.keyspace)?;
    if args.json {
        // One snapshot, so the attributes are those of the value read.
        let snapshot = db.snapshot();
        let (Some(head), Some(value)) = (snapshot.head(&ks, &key)?, snapshot.get(&ks, &key)?)
        else {
            return Ok(EXIT_NOT_FOUND);
        };
        let mut obj = fields::head(&key, &head);
        fields::insert_bytes(&mut obj, "value", &value);
        print_json(out, obj)?;
        return Ok(EXIT_OK);
    }
    match ks.get(&key)? {
        Some(value) => {
            out.write_all(&value).map_err(CliError::Output)?;
            Ok(EXIT_OK)
        }
        None => Ok(EXIT_NOT_FOUND),
    }
}

/// Print a key's attributes as one JSON object; the value itself is not read
///
/// Fields: key (or key_b64), value_len, tag (0: none), meta_b64 (left out when there is
/// no metadata), seqno, expires_at (Unix ms, null: never) and separated. Keys and
/// metadata are encoded as `scan` and `dump` encode them: a key that is not UTF-8 as
/// "key_b64", metadata always as "meta_b64" (standard base64).
/// Exit status: 0 found, 2 not found, 1 error, 3 corruption.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct HeadArgs {
    /// The store directory.
    store: PathBuf,
    /// The key.
    #[arg(allow_hyphen_values = true)]
    key: OsString,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// KEY is hex.
    #[arg(long)]
    hex: bool,
}

pub fn head(args: &HeadArgs, out: &mut dyn Write) -> CliResult<u8> {
    let key = arg_bytes("key", &args.key, args.hex)?;
    let db = open_read(&args.store)?;
    let ks = existing_keyspace(&db, &args.ks.keyspace)?;
    let Some(head) = ks.head(&key)? else {
        return Ok(EXIT_NOT_FOUND);
    };
    print_json(out, fields::head(&key, &head))?;
    Ok(EXIT_OK)
}

/// Remove a key, every key with a prefix, or every key in a range (no error if none)
///
/// `delete STORE KEY`, `delete STORE --prefix P`, or `delete STORE --range A B` (A
/// included, B excluded). A prefix or range is one write, a range tombstone, however many
/// keys it covers. The removal is durable (fsynced) when the command returns.
/// Prints nothing, or with --json one object: keyspace, the write's seqno, and key,
/// prefix, or from and to (each as key_b64, prefix_b64, ... when not UTF-8).
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct DeleteArgs {
    /// The store directory.
    store: PathBuf,
    /// The key.
    #[arg(
        allow_hyphen_values = true,
        required_unless_present_any = ["prefix", "range"],
        conflicts_with_all = ["prefix", "range"]
    )]
    key: Option<OsString>,
    /// Remove every key starting with P.
    #[arg(
        long,
        value_name = "P",
        conflicts_with = "range",
        allow_hyphen_values = true
    )]
    prefix: Option<OsString>,
    /// Remove every key from A (included) to B (excluded).
    #[arg(long, num_args = 2, value_names = ["A", "B"], allow_hyphen_values = true)]
    range: Option<Vec<OsString>>,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// KEY, P, A and B are hex.
    #[arg(long)]
    hex: bool,
    /// Print what was removed as one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn delete(args: &DeleteArgs, out: &mut dyn Write) -> CliResult<u8> {
    enum What {
        Key(Vec<u8>),
        Prefix(Vec<u8>),
        Range(Vec<u8>, Vec<u8>),
    }
    let what = match (&args.key, &args.prefix, &args.range) {
        (Some(k), _, _) => What::Key(arg_bytes("key", k, args.hex)?),
        (None, Some(p), _) => What::Prefix(arg_bytes("prefix", p, args.hex)?),
        (None, None, Some(r)) => match r.as_slice() {
            [a, b] => What::Range(
                arg_bytes("range start", a, args.hex)?,
                arg_bytes("range end", b, args.hex)?,
            ),
            _ => return Err(CliError::msg("--range takes two keys: A B")),
        },
        (None, None, None) => return Err(CliError::msg("give a KEY, --prefix or --range")),
    };
    let db = open(&args.store, false)?;
    let ks = existing_keyspace(&db, &args.ks.keyspace)?;
    match &what {
        What::Key(k) => ks.remove(k)?,
        What::Prefix(p) => ks.remove_prefix(p)?,
        What::Range(a, b) => ks.remove_range(a.as_slice()..b.as_slice())?,
    }
    // This process holds the store's lock: the last seqno is this removal's.
    let seqno = db.last_seqno();
    drop(ks);
    close(db)?;
    if args.json {
        let mut obj = written(&args.ks.keyspace, seqno);
        match &what {
            What::Key(k) => fields::insert_bytes(&mut obj, "key", k),
            What::Prefix(p) => fields::insert_bytes(&mut obj, "prefix", p),
            What::Range(a, b) => {
                fields::insert_bytes(&mut obj, "from", a);
                fields::insert_bytes(&mut obj, "to", b);
            }
        }
        print_json(out, obj)?;
    }
    Ok(EXIT_OK)
}
