//! The committed `include/cairn.h` is exactly what cbindgen generates from the crate's
//! source with `cbindgen.toml`, so the header never drifts from the exported functions.
//! Set `CAIRN_UPDATE_HEADER=1` to rewrite it instead of comparing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

#[test]
fn committed_header_matches_cbindgen() {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).unwrap();
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let path = crate_dir.join("include/cairn.h");
    if std::env::var_os("CAIRN_UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/cairn.h differs from what cbindgen generates; run \
         CAIRN_UPDATE_HEADER=1 cargo test -p cairn-ffi --test header and commit the result"
    );
}
