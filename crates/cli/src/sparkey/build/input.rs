//! Input formats of `cairn sparkey build`: TSV, JSON lines and CSV, decoded into PUT and
//! DELETE records. Bad input is an error naming the line; nothing is skipped silently
//! (except blank lines in JSON lines and CSV, which carry no record).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use clap::ValueEnum;
use serde_json::{Map, Value};

use crate::errors::{CliError, CliResult};

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// `key<TAB>value` per line, raw bytes, split at the first TAB.
    Tsv,
    /// One JSON object per line: {"key": .., "value": ..}, see --help.
    Jsonl,
    /// Two columns key,value, RFC 4180 quoting, no header row.
    Csv,
}

impl Format {
    /// The format implied by the input's extension (`.csv`, `.jsonl`/`.ndjson`/`.json`);
    /// TSV otherwise and for standard input.
    pub fn infer(input: &Path) -> Format {
        let ext = input
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("csv") => Format::Csv,
            Some("jsonl" | "ndjson" | "json") => Format::Jsonl,
            _ => Format::Tsv,
        }
    }
}

/// One operation of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// Set key to value.
    Put(&'a [u8], &'a [u8]),
    /// Remove key.
    Delete(&'a [u8]),
}

fn bad_line(name: &str, line: u64, what: impl std::fmt::Display) -> CliError {
    CliError::msg(format!("{name}: line {line}: {what}"))
}

fn read_failed(name: &str, e: impl std::fmt::Display) -> CliError {
    CliError::msg(format!("reading {name} failed: {e}"))
}

/// Decodes every record of `input` (called `name` in messages) and passes it to `sink`.
pub fn read_records<R: Read>(
    format: Format,
    input: R,
    name: &str,
    sink: impl FnMut(Record<'_>) -> CliResult<()>,
) -> CliResult<()> {
    match format {
        Format::Tsv => read_lines(input, name, sink, tsv_record),
        Format::Jsonl => read_lines(input, name, sink, jsonl_record),
        Format::Csv => read_csv(input, name, sink),
    }
}

/// Receives the decoded records.
type Sink<'s> = dyn FnMut(Record<'_>) -> CliResult<()> + 's;

/// Decodes one line (without its LF) and passes its record, if any, to the sink.
type LineParser = fn(&[u8], &mut Sink<'_>) -> Result<(), LineError>;

/// Line-based formats: `parse` turns one line (without its LF) into a record, `Ok(None)`
/// for a line without one.
fn read_lines<R: Read>(
    input: R,
    name: &str,
    mut sink: impl FnMut(Record<'_>) -> CliResult<()>,
    parse: LineParser,
) -> CliResult<()> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let n = input
            .read_until(b'\n', &mut line)
            .map_err(|e| read_failed(name, e))?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        match parse(body, &mut sink) {
            Ok(()) => {}
            Err(LineError::Input(what)) => return Err(bad_line(name, number, what)),
            Err(LineError::Sink(e)) => return Err(e),
        }
    }
}

/// Why a line failed: bad input (reported with its line number) or the sink's error.
enum LineError {
    Input(String),
    Sink(CliError),
}

fn tsv_record(line: &[u8], sink: &mut Sink<'_>) -> Result<(), LineError> {
    let at = line
        .iter()
        .position(|&b| b == b'\t')
        .ok_or_else(|| LineError::Input("no TAB between key and value".to_string()))?;
    let (key, rest) = line.split_at(at);
    sink(Record::Put(key, rest.get(1..).unwrap_or_default())).map_err(LineError::Sink)
}

fn jsonl_record(line: &[u8], sink: &mut Sink<'_>) -> Result<(), LineError> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let input = |what: String| LineError::Input(what);
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        // serde's text ends with "at line 1 column N"; the line is ours, keep the column.
        let text = e.to_string();
        let at = format!(" at line {} column {}", e.line(), e.column());
        let what = text.strip_suffix(&at).unwrap_or(&text);
        input(format!("invalid JSON at column {}: {what}", e.column()))
    })?;
    let Value::Object(map) = value else {
        return Err(input("expected a JSON object".to_string()));
    };
    if let Some(field) = map.keys().find(|k| {
        !matches!(
            k.as_str(),
            "key" | "key_b64" | "value" | "value_b64" | "delete"
        )
    }) {
        return Err(input(format!(
            "unknown field \"{field}\" (expected key or key_b64, value or value_b64, delete)"
        )));
    }
    let key = bytes_field(&map, "key", "key_b64")
        .map_err(input)?
        .ok_or_else(|| input("missing \"key\" (or \"key_b64\")".to_string()))?;
    let delete = match map.get("delete") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(input("\"delete\" must be true or false".to_string())),
    };
    let value = bytes_field(&map, "value", "value_b64").map_err(input)?;
    let record = match (delete, &value) {
        (true, None) => Record::Delete(&key),
        (true, Some(_)) => return Err(input("a delete must not have a value".to_string())),
        (false, Some(v)) => Record::Put(&key, v),
        (false, None) => {
            return Err(input(
                "missing \"value\" (or \"value_b64\", or \"delete\": true)".to_string(),
            ))
        }
    };
    sink(record).map_err(LineError::Sink)
}

/// The bytes of a field given as a JSON string (`plain`) or as standard base64 (`b64`).
fn bytes_field(
    map: &Map<String, Value>,
    plain: &str,
    b64: &str,
) -> Result<Option<Vec<u8>>, String> {
    match (map.get(plain), map.get(b64)) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(format!("both \"{plain}\" and \"{b64}\" given")),
        (Some(Value::String(s)), None) => Ok(Some(s.clone().into_bytes())),
        (Some(_), None) => Err(format!("\"{plain}\" must be a string")),
        (None, Some(Value::String(s))) => BASE64
            .decode(s)
            .map(Some)
            .map_err(|e| format!("\"{b64}\" is not standard base64: {e}")),
        (None, Some(_)) => Err(format!("\"{b64}\" must be a string")),
    }
}

/// Counts the double quotes passing through: in RFC 4180 input they come in pairs (open
/// and close, `""` inside), so an odd count at the end means a quoted field that was never
/// closed, which the `csv` crate accepts silently by running it to the end of the input.
struct QuoteCounter<R> {
    inner: R,
    quotes: u64,
}

impl<R: Read> Read for QuoteCounter<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let seen = buf.get(..n).unwrap_or_default();
        self.quotes += seen.iter().filter(|&&b| b == b'"').count() as u64;
        Ok(n)
    }
}

fn read_csv<R: Read>(
    input: R,
    name: &str,
    mut sink: impl FnMut(Record<'_>) -> CliResult<()>,
) -> CliResult<()> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .buffer_capacity(1 << 16)
        .from_reader(QuoteCounter {
            inner: input,
            quotes: 0,
        });
    let mut record = csv::ByteRecord::new();
    let mut last_line = 0u64;
    loop {
        let more = reader.read_byte_record(&mut record).map_err(|e| {
            match e.position().map(csv::Position::line) {
                Some(line) => bad_line(name, line, &e),
                None => read_failed(name, &e),
            }
        })?;
        if !more {
            if !reader.get_ref().quotes.is_multiple_of(2) {
                return Err(bad_line(
                    name,
                    last_line,
                    "a quoted field is not closed before the end of the input \
                     (or a '\"' appears outside quotes)",
                ));
            }
            return Ok(());
        }
        let line = record.position().map_or(0, csv::Position::line);
        last_line = line;
        match (record.get(0), record.get(1), record.len()) {
            (Some(key), Some(value), 2) => sink(Record::Put(key, value))?,
            (_, _, n) => {
                return Err(bad_line(
                    name,
                    line,
                    format!("expected 2 fields (key,value), found {n}"),
                ))
            }
        }
    }
}
