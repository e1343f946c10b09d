//! The addon's build script: napi's linker setup, identical code folding where the linker is
//! LLD, and the TypeScript unions of goal-core's closed lists.

use std::path::Path;
use std::process::Command;

fn main() {
    napi_build::setup();
    fold_identical_code();
    write_closed_list_unions();
}

/// goal-core's file that declares the closed lists a host sees as TypeScript unions.
const CAUSE_FILE: &str = "crates/goal-core/src/record/cause.rs";

/// Writes, for each closed list of `CAUSE_FILE`, a file of `OUT_DIR` that calls the binding's
/// declaring macro with the list's TypeScript union as a literal: napi takes a field's type only
/// as a literal, and this way a new cause code or fix action is one line of goal-core and
/// index.d.ts follows. `src/types/goal_parts.rs` and `src/types/explanation.rs` include them.
fn write_closed_list_unions() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={CAUSE_FILE}");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let source = std::fs::read_to_string(Path::new(&manifest).join(CAUSE_FILE))
        .unwrap_or_else(|error| panic!("cannot read {CAUSE_FILE}: {error}"));
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let lists = [("cause_codes", "declare_goal_cause", ""), ("fix_actions", "declare_goal_explanation", " | null")];
    for (list, declare, tail) in lists {
        let names = wire_names(&source, list);
        assert!(names.len() >= 2, "{CAUSE_FILE}: no `{list}! {{ Variant = \"wire\" … }}` lines found");
        let union: Vec<String> = names.iter().map(|name| format!("'{name}'")).collect();
        let call = format!("{declare}!(\"{}{tail}\");\n", union.join(" | "));
        std::fs::write(Path::new(&out).join(format!("{list}_union.rs")), call).expect("OUT_DIR is writable");
    }
}

/// The wire names of the invocation `<list>! { … }` (the lines `Variant = "wire"`), in order.
fn wire_names(source: &str, list: &str) -> Vec<String> {
    let opening = format!("{list}! {{");
    let body = source.lines().skip_while(|line| *line != opening).skip(1).take_while(|line| *line != "}");
    body.filter_map(|line| {
        let (variant, rest) = line.trim().split_once(" = \"")?;
        let variant_shaped =
            variant.starts_with(|c: char| c.is_ascii_uppercase()) && variant.chars().all(|c| c.is_ascii_alphanumeric());
        let wire = rest.split('"').next()?;
        variant_shaped.then(|| wire.to_string())
    })
    .collect()
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
