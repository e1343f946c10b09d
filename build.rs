//! The addon's build script: napi's linker setup, and identical code folding where the linker
//! is LLD.

use std::process::Command;

fn main() {
    napi_build::setup();
    fold_identical_code();
}

/// Asks the linker to fold functions whose machine code is the same (`--icf=all`). Generic code
/// and async state machines leave many such copies; folding them keeps the release addon under
/// its 4 MiB budget (docs/release.md has the figures). Only LLD has the option, and rustc links
/// x86_64-unknown-linux-gnu with its own LLD from 1.90 on; with an older rustc, another target,
/// or a linker chosen in RUSTFLAGS, nothing is added. The vitest suite runs the debug build,
/// which is linked the same way, so the tests exercise folded code too.
fn fold_identical_code() {
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let target = std::env::var("TARGET").unwrap_or_default();
    let rustflags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let linker_chosen = rustflags.contains("linker") || rustflags.contains("fuse-ld");
    if target == "x86_64-unknown-linux-gnu" && !linker_chosen && rustc_links_with_lld() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,--icf=all");
    }
}

/// Whether the compiler building this crate links with its own LLD: rustc 1.90 or later (LLD
/// by default on x86_64 Linux) with `rust-lld` in its sysroot (a distribution's rustc may have
/// neither, and then links with the system's `cc`).
fn rustc_links_with_lld() -> bool {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let ask = |arg: &str| {
        let output = Command::new(&rustc).arg(arg).output().ok()?;
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    let (Some(version), Some(sysroot)) = (ask("--version"), ask("--print=sysroot")) else { return false };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let mut numbers = version.split_whitespace().nth(1).unwrap_or("").split('.');
    let major: u32 = numbers.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let minor: u32 = numbers.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let own_lld = std::path::Path::new(&sysroot).join("lib/rustlib/x86_64-unknown-linux-gnu/bin/rust-lld");
    (major > 1 || (major == 1 && minor >= 90)) && own_lld.exists()
}
