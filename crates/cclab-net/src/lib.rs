//! cclab-net: the real datapath. The same sans-IO transport (`cclab-transport`) and the same algorithms
//! and queue disciplines (`cclab-cc`) as the simulator, driven by the OS clock and real sockets, through
//! a userspace link emulator that owns one TUN device per host network namespace.
//!
//! * [`wire`]: checked view + parse/emit of our UDP transport header.

pub mod wire;
