//! cclab-cc: congestion-control algorithms (senders) and router queue disciplines.
//!
//! Everything here is pure state + math: no sockets, no clock, no global RNG. Every entry point takes
//! the current time (`Nanos`) explicitly so the same code runs in the simulator (virtual time) and on the
//! real datapath (OS clock). See `docs/architecture.md`.
//!
//! * [`cc`]: the sender interface ([`cc::CongestionControl`]) with its sample structs, and shared helpers
//!   (slow start, Reno increase) that algorithms call instead of copying.
//! * [`env`](mod@env): what an algorithm or queue may know when it is created ([`env::SenderEnv`],
//!   [`env::LinkEnv`]) and the per-flow seed.
//! * [`algorithms`]: one file per sender algorithm; [`registry::build_sender`] maps names to them
//!   (one table row each).
//! * [`aqm`]: queue disciplines (drop-tail, RED, MaxNet price AQM) behind [`aqm::QueueDiscipline`].
//! * [`packet_pair`]: packet-pair capacity samples (Libra, Madison).
//! * [`cross`]: cross traffic's timing laws (CBR, Poisson, on/off, transfer arrivals), for both drivers.
//! * [`impair`]: netem-like jitter, reordering and duplication, for both drivers.
//! * [`trace_link`]: trace-driven link capacity (mahimahi's delivery opportunities), for both drivers.
//! * [`params`]: typed reading of a scenario's `params` table with "unknown parameter" errors.

pub mod algorithms;
pub mod aqm;
pub mod cc;
pub mod cross;
pub mod env;
pub mod hystart;
pub mod impair;
pub mod maxnet_wire;
pub mod minmax;
pub mod packet_pair;
pub mod params;
pub mod registry;
pub mod rng;
pub mod schedule;
pub mod time;
pub mod trace_link;

pub use cc::{AckSample, CongestionControl, LossEvent, SendCtx, TimeoutEvent};
pub use params::{ParamError, ParamValue, Params};
pub use time::Nanos;
