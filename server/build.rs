//! Rebuilds `tower` when the SPA it embeds changes (feature `embed-spa`).
//!
//! rust-embed names every embedded file to the compiler, so a changed or deleted file of `dist/` is noticed
//! anyway; a new file, or a `dist/` that did not exist at the last build, is not. Watching the folder covers
//! both. Without the feature nothing is embedded and nothing is watched.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_EMBED_SPA").is_some() {
        println!("cargo::rerun-if-changed=../dist");
    }
}
