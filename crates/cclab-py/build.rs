//! The engine's build id (`cclab._native.ENGINE_ID`): a digest of the sources the Python module's engine is
//! compiled from (the workspace crates it links, their manifests and Cargo.lock). Two builds of the same
//! sources, on any machine, at any path, carry the same id; a change to any of them changes it. `cclab
//! reproduce` reuses a finished run only when it was made by an engine with this id (python/cclab/provenance.py,
//! `build_id`), so workers built elsewhere from the same sources are not made to redo runs, while a run made
//! by other code is never taken for one of this code's.

use std::fs;
use std::path::{Path, PathBuf};

/// The crates the module's engine is built from (cclab-py's dependencies inside the workspace, and itself).
const CRATES: [&str; 5] = [
    "cclab-cc",
    "cclab-transport",
    "cclab-spec",
    "cclab-sim",
    "cclab-py",
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.is_file() {
            out.push(p);
        }
    }
}

/// 128-bit FNV-1a: no dependency, and the same on every host (a digest to tell sources apart, not a secret).
fn fnv(h: &mut u128, bytes: &[u8]) {
    for b in bytes {
        *h ^= u128::from(*b);
        *h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013B);
    }
}

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let crates = manifest.parent().expect("crates/cclab-py has a parent");
    let root = crates.parent().expect("crates/ has a parent");
    let mut paths = Vec::new();
    for c in CRATES {
        let dir = crates.join(c);
        paths.push(dir.join("Cargo.toml"));
        files(&dir.join("src"), &mut paths);
        println!("cargo:rerun-if-changed={}", dir.join("src").display());
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("Cargo.toml").display()
        );
    }
    paths.push(root.join("Cargo.lock"));
    paths.push(root.join("Cargo.toml"));
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.lock").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.toml").display()
    );
    // Named relative to the workspace, in one order: the id does not depend on where the checkout is.
    let mut named: Vec<(String, PathBuf)> = paths
        .into_iter()
        .filter_map(|p| {
            Some((
                p.strip_prefix(root)
                    .ok()?
                    .to_string_lossy()
                    .replace('\\', "/"),
                p,
            ))
        })
        .collect();
    named.sort();
    let mut h: u128 = 0x6C62_272E_07BB_0142_62B8_2175_6295_C58D;
    for (name, p) in &named {
        let Ok(bytes) = fs::read(p) else { continue };
        fnv(&mut h, name.as_bytes());
        fnv(&mut h, &[0]);
        fnv(&mut h, &(bytes.len() as u64).to_le_bytes());
        fnv(&mut h, &bytes);
    }
    println!("cargo:rustc-env=CCLAB_ENGINE_ID={h:032x}");
}
