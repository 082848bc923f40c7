//! Compiles the BPF program (src/bpf/cclab_cc.bpf.c) with clang and generates its Rust skeleton.
//! Needs clang (BPF target) and, for libbpf-sys, libelf and zlib headers: `make setup` installs them.

use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

const SRC: &str = "src/bpf/cclab_cc.bpf.c";

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR set by cargo"));
    SkeletonBuilder::new()
        .source(SRC)
        // -mcpu=v3: 32-bit jumps and ALU; the kernel's verifier accepts them and clang 14's default
        // (v1) cannot express some of the program's comparisons compactly.
        .clang_args(["-mcpu=v3", "-Wall", "-Werror", "-Isrc/bpf"])
        .build_and_generate(out.join("cclab_cc.skel.rs"))
        .expect("building the BPF program (needs clang; `make setup` installs it)");
    println!("cargo:rerun-if-changed=src/bpf");
}
