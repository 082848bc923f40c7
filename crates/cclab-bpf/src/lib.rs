//! The kernel datapath: Linux TCP sockets steered by cclab's algorithms.
//!
//! A fixed BPF `tcp_congestion_ops` program (src/bpf/cclab_cc.bpf.c) reports every ACK, state
//! change and undo of the sockets that select it, and applies the window and pacing rate that a
//! user-space [`Controller`] computes by running the same [`cclab_cc`] algorithm code the simulator
//! and our UDP transport run. See docs/kernel-datapath.md.

pub mod controller;
pub mod events;
pub mod flow;
pub mod inventory;

pub use controller::{Chooser, Controller, Options, Stats};

mod skel {
    #![allow(
        clippy::all,
        unused_imports,
        non_camel_case_types,
        non_snake_case,
        dead_code
    )]
    include!(concat!(env!("OUT_DIR"), "/cclab_cc.skel.rs"));
}
