//! `cairn scan`: the entries of a key range as JSON lines (the dump's object shape).

use std::ffi::OsString;
use std::io::Write;
use std::ops::Bound;
use std::path::PathBuf;

use cairn::transfer::{DumpWriter, EntryRef, Format};
use cairn::{Head, Readable};

use crate::errors::{CliResult, EXIT_OK};

use super::{existing_keyspace, open_read, opt_bytes, output_error, KeyspaceArg};

/// List entries as JSON lines: {"key": ..., "value": ...} per line, with "tag",
/// "meta_b64" and "expires_at" for entries that have them
///
/// Every entry of the keyspace, or those whose key starts with --prefix, or those with
/// --from <= key < --to (either bound may be left out), in key order (--reverse:
/// descending). Keys and values that are not UTF-8 are given as "key_b64"/"value_b64"
/// (standard base64). The shape is the one `cairn dump --format jsonl` writes, without
/// the keyspace field. With --hex, the bounds are hex.
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The store directory.
    store: PathBuf,
    #[command(flatten)]
    ks: KeyspaceArg,
    /// Only keys starting with P.
    #[arg(long, value_name = "P", allow_hyphen_values = true, conflicts_with_all = ["from", "to"])]
    prefix: Option<OsString>,
    /// Only keys >= A.
    #[arg(long, value_name = "A", allow_hyphen_values = true)]
    from: Option<OsString>,
    /// Only keys < B.
    #[arg(long, value_name = "B", allow_hyphen_values = true)]
    to: Option<OsString>,
    /// Descending key order.
    #[arg(long)]
    reverse: bool,
    /// Print only the keys and their attributes, not the values (a head scan: values are
    /// not read).
    #[arg(long)]
    keys_only: bool,
    /// Stop after N entries.
    #[arg(long, value_name = "N")]
    limit: Option<u64>,
    /// --prefix, --from and --to are hex.
    #[arg(long)]
    hex: bool,
}

/// One scanned entry: key, value (empty for --keys-only) and head.
type Item = cairn::Result<(Vec<u8>, Vec<u8>, Head)>;

pub fn run(args: &Args, out: &mut dyn Write) -> CliResult<u8> {
    let prefix = opt_bytes("prefix", args.prefix.as_ref(), args.hex)?;
    let from = opt_bytes("--from bound", args.from.as_ref(), args.hex)?;
    let to = opt_bytes("--to bound", args.to.as_ref(), args.hex)?;
    let db = open_read(&args.store)?;
    let ks = existing_keyspace(&db, &args.ks.keyspace)?;
    let snapshot = db.snapshot();
    let iter: Box<dyn DoubleEndedIterator<Item = Item>> = if args.keys_only {
        // Heads only: values are neither copied nor, when kept apart, read.
        let heads = match &prefix {
            Some(p) => snapshot.prefix_heads(&ks, p),
            None => snapshot.range_heads(&ks, bounds(from, to)),
        };
        Box::new(heads.map(|r| r.map(|(k, h)| (k, Vec::new(), h))))
    } else {
        match &prefix {
            Some(p) => Box::new(snapshot.prefix_entries(&ks, p)),
            None => Box::new(snapshot.range_entries(&ks, bounds(from, to))),
        }
    };
    let iter: Box<dyn Iterator<Item = Item>> = if args.reverse {
        Box::new(iter.rev())
    } else {
        iter
    };
    let mut writer = DumpWriter::new(out, Format::Jsonl).map_err(output_error)?;
    for item in iter.take(args.limit.map_or(usize::MAX, |n| n as usize)) {
        let (key, value, head) = item?;
        let entry = EntryRef {
            value: (!args.keys_only).then_some(value.as_slice()),
            tag: head.tag,
            meta: &head.meta,
            expires_at: head.expires_at,
            ..EntryRef::pair(&key, &[])
        };
        writer.write(&entry).map_err(output_error)?;
    }
    writer.finish().map_err(output_error)?;
    Ok(EXIT_OK)
}

/// `--from A` (included) and `--to B` (excluded) as a range.
fn bounds(from: Option<Vec<u8>>, to: Option<Vec<u8>>) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    (
        from.map_or(Bound::Unbounded, Bound::Included),
        to.map_or(Bound::Unbounded, Bound::Excluded),
    )
}
