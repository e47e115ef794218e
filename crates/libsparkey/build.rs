//! Gives the shared library the reference's SONAME, so programs linked against
//! `libsparkey.so.0` load Cairn's library unchanged.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libsparkey.so.0");
    println!("cargo:rerun-if-changed=build.rs");
}
