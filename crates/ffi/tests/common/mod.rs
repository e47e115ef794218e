//! Helpers of the tests that build C and Go programs against the library: where cargo
//! put `libcairn.so` and `libcairn.a`, a directory laid out like an installed library
//! (`libcairn.so.0` plus the `libcairn.so` link), and running a command to success.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding `libcairn.so` and `libcairn.a`, built up to date. The test
/// binary is `<target>/<profile>/deps/c_api-<hash>` and the libraries go to
/// `<target>/<profile>/`. `cargo test` does not rebuild a library that is only a cdylib
/// and a staticlib (no test links it), so this runs `cargo build -p cairn-ffi` (once per
/// test process) with the profile of the running tests.
pub fn library_dir() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    BUILT.call_once(|| {
        let target = dir.parent().unwrap();
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args(["build", "-p", "cairn-ffi", "--manifest-path"])
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .env("CARGO_TARGET_DIR", target);
        if dir.file_name().is_some_and(|n| n == "release") {
            cargo.arg("--release");
        }
        run(&mut cargo);
    });
    assert!(
        dir.join("libcairn.so").exists() && dir.join("libcairn.a").exists(),
        "libcairn.so or libcairn.a missing in {}; build with cargo build -p cairn-ffi",
        dir.display()
    );
    dir
}

/// A `lib/` directory under `root` with `libcairn.so.0` (a copy of the built library)
/// and `libcairn.so -> libcairn.so.0`, as an installation lays them out.
pub fn stage_shared_library(root: &Path) -> PathBuf {
    let lib = root.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::copy(library_dir().join("libcairn.so"), lib.join("libcairn.so.0")).unwrap();
    std::os::unix::fs::symlink("libcairn.so.0", lib.join("libcairn.so")).unwrap();
    lib
}

/// The C compiler: `$CC`, else `cc`.
pub fn c_compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// Runs `cmd`, failing the test with its output if it does not exit with 0.
pub fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    print!("{stdout}");
    eprint!("{stderr}");
}
