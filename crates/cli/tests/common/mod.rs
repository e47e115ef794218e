//! Helpers shared by the integration tests: running the `cairn` binary, finding the
//! Sparkey test vectors, hex, and reading JSON output.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The vectors made by the reference Sparkey library (see their README.md).
pub fn vectors() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/vectors/sparkey"
    ))
}

/// The names of every vector case (the files `<case>.info`), sorted.
pub fn cases() -> Vec<String> {
    let mut cases: Vec<String> = std::fs::read_dir(vectors())
        .expect("vectors directory")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".info").map(str::to_string)
        })
        .collect();
    cases.sort();
    assert_eq!(
        cases.len(),
        13,
        "expected the 13 vector cases, found {cases:?}"
    );
    cases
}

/// `cairn` with `args`, in `dir` (if given), with `stdin` bytes as standard input.
pub fn run_in(dir: Option<&Path>, args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cairn"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let mut child = cmd.spawn().expect("spawn cairn");
    let mut input = child.stdin.take().expect("stdin");
    // A command that rejects its arguments exits without reading its input; the pipe is
    // then closed, which is not a test failure.
    if let Err(e) = input.write_all(stdin) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
    }
    drop(input);
    child.wait_with_output().expect("wait for cairn")
}

/// `cairn` with `args` and empty standard input.
pub fn run(args: &[&str]) -> Output {
    run_in(None, args, b"")
}

/// The exit code (panics if the process was killed by a signal).
pub fn code(out: &Output) -> i32 {
    out.status
        .code()
        .unwrap_or_else(|| panic!("killed by a signal: {out:?}"))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts success and returns stdout.
pub fn ok(out: &Output) -> Vec<u8> {
    assert_eq!(code(out), 0, "cairn failed: {}", stderr(out));
    out.stdout.clone()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(text: &str) -> Vec<u8> {
    assert!(text.len().is_multiple_of(2), "odd hex {text:?}");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// The `hex(key)<TAB>hex(value)` lines of a `.expected` file (or of `dump` output).
pub fn parse_pairs(text: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    std::str::from_utf8(text)
        .unwrap()
        .lines()
        .map(|line| {
            let (k, v) = line
                .split_once('\t')
                .unwrap_or_else(|| panic!("bad line {line:?}"));
            (unhex(k), unhex(v))
        })
        .collect()
}

/// Copies `<case>.spl` and `<case>.spi` into `dir` (writable copies).
pub fn copy_case(case: &str, dir: &Path) {
    for ext in ["spl", "spi"] {
        let name = format!("{case}.{ext}");
        let bytes = std::fs::read(vectors().join(&name)).unwrap();
        std::fs::write(dir.join(&name), bytes).unwrap();
    }
}

/// Path as &str (test paths are UTF-8).
pub fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The JSON objects of JSON-lines output.
pub fn json_lines(out: &[u8]) -> Vec<serde_json::Value> {
    std::str::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect()
}

/// The one JSON object of `--json` output: exactly one line, holding an object.
pub fn json_object(out: &[u8]) -> serde_json::Value {
    let text = std::str::from_utf8(out).unwrap();
    assert!(
        text.ends_with('\n') && text.lines().count() == 1,
        "not one line: {text:?}"
    );
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    assert!(v.is_object(), "not an object: {v}");
    v
}
