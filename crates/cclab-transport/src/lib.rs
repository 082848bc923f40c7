//! cclab-transport: a sans-IO reliable transport driving a `cclab-cc` congestion controller.
//!
//! No sockets, no clock, no simulator: every entry point takes `now` (integer nanoseconds), inputs are
//! `handle_*`, outputs are `poll_*` (the style of quinn-proto). Two drivers use it unchanged: the
//! simulator (`cclab-sim`, virtual time) and the UDP datapath (`cclab-net`, OS clock).
//!
//! # Call order (driver contract)
//! Sender:
//! 1. `Sender::new(cfg, cc, size, now)`.
//! 2. After *any* `handle_*` call, and at start: loop `poll_transmit(now)` until it returns `None`,
//!    putting each segment on the wire; then `poll_timeout()` gives the next time `handle_timeout` must
//!    be called (RTO, pacing release, delayed work, the algorithm's own timer). Calling `handle_timeout`
//!    early or spuriously is harmless.
//! 3. `handle_ack(now, &ack)` for each ACK segment that arrives.
//!
//! Receiver:
//! 1. `handle_data(now, &seg)` for each data segment; then loop `poll_ack(now)` until `None`;
//!    `poll_timeout()` for the delayed-ACK timer and `handle_timeout(now)`.
//! 2. A driver that handles several segments before it polls (one ACK for a batch read from a socket)
//!    must poll whenever `must_ack_before_more()` is true: otherwise SACK ranges can go unreported and
//!    the sender retransmits data that arrived.

mod app;
pub mod auth;
pub mod config;
pub mod delack;
pub mod segment;

pub use auth::DataKey;
pub use config::LossDetection;
pub use config::{CatchUp, Config, ReceiverProfile};
pub use segment::{AckSegment, DataSegment, SackBlock, MAX_SACK_BLOCKS};
mod prr;
mod rack;
mod rate;
pub mod receiver;
mod recovery;
mod rtt;
mod scoreboard;
pub mod sender;
pub mod stats;
mod txlog;
mod undo;

pub use receiver::{Receiver, RejectedData};
pub use sender::{RejectedAcks, Sender, SenderStats};
