//! Builds the cgo example (`examples/go`, standard library only, no module downloads)
//! against the library and runs it: it opens a store, writes a batch, reads and scans.
//! Skipped, saying why, when no Go toolchain is installed (`go` on the PATH or
//! `/usr/local/go/bin/go`; `scripts/setup.sh` installs one).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;
use std::process::Command;

fn go() -> Option<PathBuf> {
    let candidates = [PathBuf::from("go"), PathBuf::from("/usr/local/go/bin/go")];
    candidates.into_iter().find(|g| {
        Command::new(g)
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn go_example_opens_writes_reads_and_scans() {
    let Some(go) = go() else {
        eprintln!("skipped: no Go toolchain (go not on the PATH nor in /usr/local/go/bin)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let lib = common::stage_shared_library(tmp.path());
    let exe = tmp.path().join("cairn-example");
    let mut build = Command::new(&go);
    build
        .args(["build", "-o"])
        .arg(&exe)
        .arg(".")
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/go"))
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-buildvcs=false -mod=mod")
        .env("GOPROXY", "off")
        .env("CGO_ENABLED", "1")
        .env(
            "CGO_LDFLAGS",
            format!("-L{0} -Wl,-rpath,{0}", lib.display()),
        );
    if std::env::var_os("HOME").is_none() {
        build.env("GOCACHE", tmp.path().join("gocache"));
    }
    common::run(&mut build);
    let out = Command::new(&exe)
        .arg(tmp.path().join("store"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = "get banana: yellow (found=true)\n\
                get durian: found=false\n\
                scan all:\n  apple=red\n  banana=yellow\n  blueberry=blue\n  cherry=dark red\n\
                scan prefix b, reverse:\n  blueberry=blue\n  banana=yellow\n";
    assert_eq!(stdout, want);
}
