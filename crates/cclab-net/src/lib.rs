//! cclab-net: the real datapath. The same sans-IO transport (`cclab-transport`) and the same algorithms
//! and queue disciplines (`cclab-cc`) as the simulator, driven by the OS clock and real sockets, through
//! a userspace link emulator that owns one TUN device per host network namespace.
//!
//! * [`wire`]: checked view + parse/emit of our UDP transport header.
//! * [`ip`]: IPv4/UDP/TCP inspection and in-place rewrites with incremental checksums (RFC 1624).
//! * [`emulator`]: the link emulator (sans-IO core + TUN event loop).
//! * [`hosts`]: the two hosts (anonymous namespaces + TUN).
//! * [`topology`]: paths and cross traffic a spec may ask for; the emulator that carries them.
//! * [`transfers`]: short transfers (`kind = "transfers"`) as real flows of our transport.
//! * [`run`]: a whole run from a `RunSpec` in named steps (hosts, emulator, flows, sampling).
//! * [`report`]: the run's result (types, sampling step, summary over the measure window).
//! * [`plan`]: the port plan (flow i ↔ port); [`probe`]: what flow threads report to the sampler.
//! * [`tcp`]: Linux kernel TCP peers (TCP_CONGESTION per socket, TCP_INFO).
//! * [`endpoint`]: our transport over UDP.
//! * [`disturbance`]: what the machine did to a run (thread stalls, hypervisor steal).
//! * [`cleanup`]: removal of named leftovers.
//! * [`sys`]: clock, timer slack, ppoll, anonymous network namespaces, TUN, interface ioctls.

pub mod batch;
pub mod cleanup;
pub mod disturbance;
pub mod emulator;
pub mod endpoint;
pub mod hosts;
pub mod ip;
pub mod plan;
pub mod probe;
pub mod report;
pub mod run;
pub mod sys;
pub mod tcp;
pub mod topology;
pub mod transfers;
pub mod wire;

/// The run specification (`cclab-spec`, shared with the simulator): a sim run and a real run of one
/// scenario start from the same resolved JSON spec (`cc` ← `transport` ← `spec` ← {`sim`, `net`}).
pub use cclab_spec as spec;
