//! The C API from C: compiles `tests/c/sparkey_test.c` with the system C compiler against
//! the built `libsparkey.so.0`, runs it on the reference test vectors (plainly and under
//! AddressSanitizer with leak detection), then reads the files it wrote with Cairn's Rust
//! API.
//!
//! The library is built from the current sources by `cargo build -p cairn-libsparkey` in
//! the test's profile (beside the test binary). It is copied into a temporary
//! directory as `libsparkey.so.0` (its SONAME, which the program records and the loader
//! looks for) with a `libsparkey.so` link for the linker.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cairn::hash::{LogReader, Reader};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared/vectors/sparkey` from the repository root.
fn vectors_dir() -> PathBuf {
    manifest_dir().join("../../../shared/vectors/sparkey")
}

/// The directory cargo put this test's profile outputs in (`target/<profile>`).
fn profile_dir() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let deps = exe.parent().ok_or("test binary has no directory")?;
    Ok(deps.parent().ok_or("deps has no parent")?.to_path_buf())
}

/// The cdylib of the current sources: `cargo build -p cairn-libsparkey` in this test's
/// profile, every time. `cargo test` builds the crate's rlib for the tests, but does not
/// bring a `libsparkey.so` left by an earlier build up to date, so one found on disk may be
/// stale (a no-op build costs a second).
fn cdylib() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let dir = profile_dir()?;
    let release = dir.file_name().is_some_and(|n| n == "release");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--locked", "-p", "cairn-libsparkey"]);
    if release {
        cmd.arg("--release");
    }
    let status = cmd.current_dir(manifest_dir()).status()?;
    if !status.success() {
        return Err("cargo build -p cairn-libsparkey failed".into());
    }
    Ok(dir.join("libsparkey.so"))
}

/// Copies the library into `dir` under its SONAME, with the linker's name beside it.
fn install(lib: &Path, dir: &Path) -> TestResult {
    std::fs::create_dir_all(dir)?;
    std::fs::copy(lib, dir.join("libsparkey.so.0"))?;
    std::os::unix::fs::symlink("libsparkey.so.0", dir.join("libsparkey.so"))?;
    Ok(())
}

/// Compiles the C test program with `extra` flags.
fn compile(libdir: &Path, out: &Path, extra: &[&str]) -> TestResult {
    let src = manifest_dir().join("tests/c/sparkey_test.c");
    let include = manifest_dir().join("include");
    let status = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-g", "-pthread"])
        .args(extra)
        .arg("-I")
        .arg(&include)
        .arg(&src)
        .arg("-o")
        .arg(out)
        .arg(format!("-L{}", libdir.display()))
        .arg("-lsparkey")
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .status()?;
    if !status.success() {
        return Err(format!("cc failed to compile {}", src.display()).into());
    }
    Ok(())
}

fn run(program: &Path, out: &Path, env: &[(&str, &str)]) -> TestResult {
    std::fs::create_dir_all(out)?;
    let output = Command::new(program)
        .arg(vectors_dir())
        .arg(out)
        .envs(env.iter().copied())
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!(
            "{} failed ({}):\n{stderr}",
            program.display(),
            output.status
        )
        .into());
    }
    if stderr.contains("ERROR: AddressSanitizer") || stderr.contains("ERROR: LeakSanitizer") {
        return Err(format!("sanitizer report:\n{stderr}").into());
    }
    Ok(())
}

/// What the C program's `write_store` leaves live.
fn expected_store() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for i in 0..1000 {
        let value = format!("value-{i}-{:0w$}", 0, w = i % 100);
        m.insert(format!("key-{i}").into_bytes(), value.into_bytes());
        if i % 10 == 9 {
            m.remove(format!("key-{}", i - 5).as_bytes());
        }
    }
    m.insert(Vec::new(), Vec::new());
    m.insert(b"extra".to_vec(), b"yes".to_vec());
    m.insert(b"key-0".to_vec(), b"zero".to_vec());
    m.remove(&b"key-1"[..]);
    m
}

/// The stores the C program wrote read back through Cairn's Rust API.
fn check_written(out: &Path) -> TestResult {
    let want = expected_store();
    for name in ["none", "snappy", "zstd"] {
        let (log, index) = (
            out.join(format!("{name}.spl")),
            out.join(format!("{name}.spi")),
        );
        let reader = Reader::open(&index, &log)?;
        assert_eq!(reader.len(), want.len() as u64, "{name}: live entries");
        for (k, v) in &want {
            assert_eq!(reader.get(k)?.as_ref(), Some(v), "{name}: key {k:?}");
        }
        assert_eq!(reader.get(b"key-4")?, None, "{name}: deleted key");
        let live: BTreeMap<Vec<u8>, Vec<u8>> = reader.iter().collect::<cairn::Result<_>>()?;
        assert_eq!(live, want, "{name}: hash iteration");
        let entries = LogReader::open(&log)?.iter().count();
        assert_eq!(entries, 1000 + 100 + 1 + 3, "{name}: log entries");
        cairn::hash::verify(&index, &log)?;
    }
    Ok(())
}

#[test]
fn c_program_runs_against_the_library() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let libdir = tmp.path().join("lib");
    install(&cdylib()?, &libdir)?;
    let program = tmp.path().join("sparkey_test");
    compile(&libdir, &program, &[])?;
    let out = tmp.path().join("out");
    run(&program, &out, &[])?;
    check_written(&out)
}

#[test]
fn c_program_is_clean_under_address_sanitizer() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let libdir = tmp.path().join("lib");
    install(&cdylib()?, &libdir)?;
    let program = tmp.path().join("sparkey_test_asan");
    compile(
        &libdir,
        &program,
        &["-fsanitize=address", "-fno-omit-frame-pointer"],
    )?;
    let out = tmp.path().join("out");
    run(
        &program,
        &out,
        &[("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1:exitcode=86")],
    )?;
    check_written(&out)
}
