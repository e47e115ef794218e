//! Builds `tests/c/api_test.c` with the system C compiler against the library this crate
//! just built and runs it: once linked to `libcairn.so` through its SONAME
//! (`libcairn.so.0`), and once linked statically to `libcairn.a` under AddressSanitizer
//! (`-fsanitize=address`, leak detection on), which must report no leak and no invalid
//! access. If the compiler cannot build with AddressSanitizer, the second run uses
//! `valgrind --error-exitcode=1 --leak-check=full` when installed, and says so otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::process::Command;

use common::{c_compiler, library_dir, run, stage_shared_library};

#[test]
fn c_api_test_passes_against_the_shared_library() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = stage_shared_library(tmp.path());
    let exe = tmp.path().join("api_test");
    let crate_dir = env!("CARGO_MANIFEST_DIR");
    run(Command::new(c_compiler())
        .args([
            "-std=c11",
            "-D_DEFAULT_SOURCE",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
            "-g",
        ])
        .arg(format!("-I{crate_dir}/include"))
        .arg(format!("{crate_dir}/tests/c/api_test.c"))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lcairn", "-lpthread"]));
    // The binary records the SONAME, not the file name it was linked with.
    let needed = Command::new("readelf").arg("-d").arg(&exe).output();
    if let Ok(out) = needed {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("libcairn.so.0"), "NEEDED entries: {text}");
    }
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    run(Command::new(&exe).arg(&data));
}

/// The complete C example of README.md (its first C block) compiles without warnings and
/// runs, so the documentation cannot drift from the API.
#[test]
fn readme_example_builds_and_runs() {
    let crate_dir = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{crate_dir}/README.md")).unwrap();
    let start = readme
        .find("```c\n#include")
        .expect("a C block in README.md")
        + "```c\n".len();
    let len = readme[start..].find("```").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("example.c");
    let store = tmp.path().join("example-store");
    let code = readme[start..start + len].replace("/tmp/example-store", store.to_str().unwrap());
    std::fs::write(&source, code).unwrap();
    let lib = stage_shared_library(tmp.path());
    let exe = tmp.path().join("example");
    run(Command::new(c_compiler())
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-I{crate_dir}/include"))
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lcairn"));
    let out = Command::new(&exe).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "u:43 = Grace\nu:43 -> Grace\n"
    );
}

#[test]
fn c_api_test_is_clean_under_a_memory_checker() {
    let tmp = tempfile::tempdir().unwrap();
    let crate_dir = env!("CARGO_MANIFEST_DIR");
    let lib = library_dir();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let exe = tmp.path().join("api_test_asan");
    let built = Command::new(c_compiler())
        .args([
            "-std=c11",
            "-D_DEFAULT_SOURCE",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
            "-g",
        ])
        .args(["-fsanitize=address", "-fno-omit-frame-pointer"])
        .arg(format!("-I{crate_dir}/include"))
        .arg(format!("{crate_dir}/tests/c/api_test.c"))
        .arg("-o")
        .arg(&exe)
        .arg(lib.join("libcairn.a"))
        .args(["-lpthread", "-ldl", "-lm"])
        .status();
    if matches!(built, Ok(s) if s.success()) {
        run(Command::new(&exe)
            .arg(&data)
            .env(
                "ASAN_OPTIONS",
                "detect_leaks=1:abort_on_error=0:exitcode=23",
            )
            .env(
                "LSAN_OPTIONS",
                format!("suppressions={crate_dir}/tests/c/lsan.supp"),
            ));
        return;
    }
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!(
            "skipped: the C compiler cannot build with -fsanitize=address and valgrind is absent"
        );
        return;
    }
    let shared = stage_shared_library(tmp.path());
    let plain = tmp.path().join("api_test");
    run(Command::new(c_compiler())
        .args(["-std=c11", "-D_DEFAULT_SOURCE", "-O1", "-g"])
        .arg(format!("-I{crate_dir}/include"))
        .arg(format!("{crate_dir}/tests/c/api_test.c"))
        .arg("-o")
        .arg(&plain)
        .arg(format!("-L{}", shared.display()))
        .arg(format!("-Wl,-rpath,{}", shared.display()))
        .args(["-lcairn", "-lpthread"]));
    run(Command::new("valgrind")
        .args([
            "--error-exitcode=1",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect",
        ])
        .arg(&plain)
        .arg(&data));
}

/// Every function the header declares is called by the C test: a function added to the
/// library without a test fails here.
#[test]
fn the_c_test_calls_every_function_of_the_header() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = std::fs::read_to_string(root.join("include/cairn.h")).unwrap();
    let test = std::fs::read_to_string(root.join("tests/c/api_test.c")).unwrap();
    // A declaration is a line with `cairn_<name>(` outside a comment, after its type.
    let mut declared = Vec::new();
    for line in header.lines() {
        let line = line.trim_start();
        if line.starts_with("typedef") || line.starts_with("//") || line.starts_with('*') {
            continue;
        }
        let Some(open) = line.find('(') else { continue };
        let before = &line[..open];
        let Some(start) = before.rfind("cairn_") else {
            continue;
        };
        let name = &before[start..];
        let identifier = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !identifier || before[..start].trim().is_empty() || name.ends_with("_t") {
            continue; // prose or a call inside a comment, or a type
        }
        declared.push(name.to_string());
    }
    declared.sort();
    declared.dedup();
    assert!(declared.len() > 100, "parsed only {declared:?}");
    let untested: Vec<_> = declared
        .iter()
        .filter(|f| !test.contains(&format!("{f}(")))
        .collect();
    assert!(
        untested.is_empty(),
        "not called by tests/c/api_test.c: {untested:?}"
    );
}
