//! What a flow's threads report while running: written by the endpoint (or kernel-TCP) threads, read by
//! the run's sampler. Its own module so that the endpoints below `run` never import `run`.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use cclab_cc::time::Nanos;
use cclab_transport::stats::FlowWindow;

/// What flows report while running (written by flow threads, read by the sampler).
#[derive(Default)]
pub struct FlowProbe {
    /// Application bytes delivered in order at the receiver.
    pub delivered: AtomicU64,
    /// Sender state (our transport): cwnd (f64 bits), smoothed and minimum RTT (ns), data packets and
    /// bytes sent incl. retransmissions, retransmitted packets, RTO expiries.
    pub cwnd_bits: AtomicU64,
    pub srtt_ns: AtomicU64,
    pub min_rtt_ns: AtomicU64,
    pub sent_bytes: AtomicU64,
    pub retransmits: AtomicU64,
    pub timeouts: AtomicU64,
    /// Our transport: slow-start threshold (f64 bits, packets), packets in flight, pacing rate (f64 bits,
    /// bit/s; NaN when not paced), fast recoveries, data packets sent.
    pub ssthresh_bits: AtomicU64,
    pub in_flight: AtomicU64,
    pub pacing_bits: AtomicU64,
    pub fast_recoveries: AtomicU64,
    pub sent_pkts: AtomicU64,
    /// Datagrams the endpoints refused (malformed headers), both ends.
    pub malformed: AtomicU64,
    /// Datagrams from an address other than the flow's peer, both ends.
    pub foreign: AtomicU64,
    /// ICMP error reports (port unreachable, host unreachable, …: `endpoint::icmp_reported`) our
    /// sender's socket returned, on a send or a receive: each stands for a lost packet, which the
    /// transport recovers; none ends a flow.
    pub icmp_errors: AtomicU64,
    /// Our sender's GSO sends, the datagrams they carried, and the sends the kernel refused
    /// (`crate::batch::GsoStats`), written when the sender ends.
    pub gso_sends: AtomicU64,
    pub gso_segments: AtomicU64,
    pub gso_refused: AtomicU64,
    /// Our transport: data segments the receiver refused, ACKs (or parts) the sender refused
    /// (`cclab_transport::{RejectedData, RejectedAcks}` totals).
    pub rejected_data: AtomicU64,
    pub rejected_acks: AtomicU64,
    /// Kernel TCP: the connected sender socket, for TCP_INFO.
    pub tcp: OnceLock<Arc<std::net::TcpStream>>,
    /// Algorithm state (key, value) pairs from `CongestionControl::state`, refreshed by the sender.
    pub state: std::sync::Mutex<Vec<(&'static str, f64)>>,
    /// Our sender's and receiver's stalls, each handed over when its thread ends ([`crate::disturbance`]).
    pub stalls: std::sync::Mutex<Vec<(&'static str, crate::disturbance::StallLog)>>,
    /// The measure window (run time, ns) in which our endpoints record RTT and one-way-delay statistics,
    /// and what they recorded, handed over when their threads end (`cclab_transport::stats`).
    pub measure: [Nanos; 2],
    pub window: std::sync::Mutex<FlowWindow>,
}
