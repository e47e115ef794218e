//! Gives the shared library its SONAME, `libcairn.so.0`, so programs linked against it
//! record the ABI version (bumped on an incompatible change of `include/cairn.h`).

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "freebsd" || os == "android" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcairn.so.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
