//! The sender congestion-control interface.
//!
//! Shape follows Linux's `tcp_congestion_ops` and quinn's `Controller`: a set of event hooks with no-op
//! defaults, inputs as small named sample structs, and the algorithm's output read back through
//! [`CongestionControl::cwnd`] and [`CongestionControl::pacing_rate_bps`].
//!
//! # Who does what
//!
//! The transport (`cclab-transport`) owns reliability: sequence numbers, the SACK scoreboard, loss
//! detection, which packet to retransmit, RTT estimation (RFC 6298 SRTT/RTTVAR/RTO), delayed ACKs and
//! pacing. The algorithm owns the *amount*: the congestion window in packets (a float) including slow
//! start and ssthresh, and optionally a pacing rate. During fast recovery the transport keeps the number
//! of packets in the network at `cwnd()` using its pipe estimate (RFC 6675 for SACK; for NewReno, flight
//! size minus duplicate ACKs, which is RFC 6582's window inflation), so algorithms only set the reduced
//! window in [`CongestionControl::on_loss`].
//!
//! # Call order (per received ACK)
//! 1. the transport updates its scoreboard and RTT estimator;
//! 2. if the ACK reveals a new loss event: `on_loss` (once per event: at most once per window of data);
//! 3. `on_ack` with the sample (also during recovery; `in_recovery` tells; most window algorithms must not
//!    grow the window then, and [`reno_on_ack`] already takes care of it);
//! 4. if recovery ended with this ACK: `on_recovery_end`.
//!
//! Before each data packet leaves, `on_send` may mark it (probe, packet pair) and set the forward router
//! field. `next_timer`/`on_timer` give an algorithm its own timer (Madison's late-probe detection).

use crate::time::Nanos;

/// Per-packet flags carried in the data header and echoed on the ACK.
pub mod flags {
    /// The receiver must ACK this packet immediately (no delayed ACK). Madison's probes, packet pairs.
    pub const ACK_NOW: u8 = 1 << 0;
    /// A probe packet (Madison): its ACK carries an RTT sample used by the algorithm's own estimators.
    pub const PROBE: u8 = 1 << 1;
    /// First packet of a back-to-back pair: the transport sends the next packet immediately after it,
    /// ignoring pacing, and marks that one `PAIR_SECOND`.
    pub const PAIR_FIRST: u8 = 1 << 2;
    pub const PAIR_SECOND: u8 = 1 << 3;
    /// The connection's first data packet (MaxNet QuickStart request is honoured only on it).
    pub const FIRST: u8 = 1 << 4;
    /// This packet is a retransmission.
    pub const RETX: u8 = 1 << 5;
}

/// What an ACK tells the algorithm.
#[derive(Clone, Debug, Default)]
pub struct AckSample {
    pub now: Nanos,
    /// Packets newly delivered by this ACK (cumulatively acked plus newly SACKed), ≥ 0.
    pub newly_acked: u32,
    /// True when the cumulative ACK point advanced.
    pub cum_advanced: bool,
    /// RTT sample from the timestamp echo of the data packet that triggered this ACK, if it is valid
    /// (not for an ACK of old data already covered). Timestamps make samples from retransmissions valid.
    pub rtt: Option<Nanos>,
    /// Smoothed RTT (RFC 6298), minimum RTT seen so far, after this sample.
    pub srtt: Nanos,
    pub min_rtt: Nanos,
    /// Packets in flight (sent, not acked, not SACKed, not deemed lost) after this ACK.
    pub in_flight: u32,
    /// Total packets delivered so far on this connection (for rate estimates).
    pub delivered: u64,
    /// The transport is in fast recovery. Not set in the loss recovery that follows an RTO: the window
    /// then slow-starts from the loss window while lost packets are resent (RFC 5681 §3.1).
    pub in_recovery: bool,
    /// The sender had no data to send when it last could (window not the limit).
    pub app_limited: bool,
    /// ECN-Echo: the receiver saw a CE mark.
    pub ecn_echo: bool,
    /// The router field echoed by the receiver (MaxNet price / QuickStart rate code, 24 bits).
    pub echo_field: u32,
    /// Sequence number (in packets) of the data packet that triggered this ACK, its flags, its size,
    /// and the receiver's clock when it arrived: packet-pair dispersion = rx_time(second) − rx_time(first).
    pub acked_seq: u64,
    pub acked_flags: u8,
    pub acked_bytes: u32,
    pub rx_time: Nanos,
    /// Packets the transport has marked lost so far on this connection (Linux `tp->lost`), and how many
    /// of them this ACK marked (Linux's `rs->losses`).
    pub lost: u64,
    pub newly_lost: u32,
    /// The delivery-rate sample this ACK gives, if it delivered data and the sample is valid
    /// ([`RateSample`]).
    pub rate: Option<RateSample>,
}

/// A delivery-rate sample, as draft-cheng-iccrg-delivery-rate-estimation defines it and Linux
/// `tcp_rate.c` computes it: the data delivered between the moment the packet this ACK acknowledges was
/// sent and now, over the longer of its send interval and its ACK interval (so that neither a burst of
/// sends nor a burst of ACKs inflates the rate). The transport takes one for every ACK that delivers data
/// and hands out only valid ones (interval at least the minimum RTT, as Linux requires).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateSample {
    /// Packets delivered over the interval.
    pub delivered: u64,
    /// The interval, ns (> 0).
    pub interval: Nanos,
    /// The connection's delivered count when the sampled packet was sent (BBR counts round trips with
    /// it: a round ends when a packet sent after the previous round's end is acknowledged).
    pub prior_delivered: u64,
    /// The sampled packet left while the sender was application-limited: the rate is a lower bound on
    /// what the path can carry, so a max filter may take it only if it is higher than what it holds.
    pub app_limited: bool,
    /// Packets marked lost between the sampled packet's departure and this ACK.
    pub lost: u64,
    /// Packets in flight when the sampled packet left, itself included (BBRv3's `tx_in_flight`).
    pub tx_in_flight: u32,
}

impl RateSample {
    /// The delivery rate in packets per second.
    pub fn packets_per_sec(&self) -> f64 {
        self.delivered as f64 * 1e9 / self.interval as f64
    }
}

/// A loss event: one per window of data (the transport's fast-retransmit trigger, or a CE mark).
#[derive(Clone, Debug, Default)]
pub struct LossEvent {
    pub now: Nanos,
    /// FlightSize when the loss was detected (RFC 5681 eq. 4 uses it for ssthresh).
    pub in_flight: u32,
    /// Packets found lost at this moment.
    pub lost: u32,
    pub srtt: Nanos,
    pub min_rtt: Nanos,
    /// True when the event is an ECN mark rather than a drop.
    pub ecn: bool,
}

/// A retransmission timeout.
#[derive(Clone, Debug, Default)]
pub struct TimeoutEvent {
    pub now: Nanos,
    pub in_flight: u32,
    /// How many consecutive RTOs (1 on the first).
    pub backoffs: u32,
}

/// The packet about to be sent; the algorithm may set `flags` and the forward router field.
#[derive(Clone, Debug, Default)]
pub struct SendCtx {
    pub now: Nanos,
    pub seq: u64,
    pub bytes: u32,
    pub retransmit: bool,
    pub in_flight: u32,
    /// Flags to send (the transport already set FIRST/RETX/PAIR_SECOND where they apply).
    pub flags: u8,
    /// The forward router field (MaxNet): 0 unless the algorithm sets it.
    pub fwd_field: u32,
}

/// Which loss recovery the transport runs for a sender. The window rules of Reno, NewReno and SACK are
/// one algorithm; they differ only in how the transport recovers lost packets, so the registry pairs
/// an algorithm with the recovery it names and the transport runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// Classic Reno: leave fast recovery on the first ACK that advances the cumulative point.
    Reno,
    /// NewReno partial-ACK handling (RFC 6582).
    NewReno,
    /// SACK-based recovery (RFC 6675).
    Sack,
}

/// A sender congestion-control algorithm. One implementation serves the simulator and the real
/// datapath; it sees only what a real sender sees.
pub trait CongestionControl: Send {
    /// The algorithm's name as used in scenarios (`"newreno"`, `"cubic"`, …).
    fn name(&self) -> &'static str;

    /// Congestion window in packets (≥ 1 unless the algorithm is quiescent on purpose).
    fn cwnd(&self) -> f64;

    /// Slow-start threshold in packets (informational; `f64::INFINITY` when unset).
    fn ssthresh(&self) -> f64 {
        f64::INFINITY
    }

    /// Pacing rate in bits per second on the wire, or `None` to send as the window allows.
    fn pacing_rate_bps(&self) -> Option<f64> {
        None
    }

    /// The algorithm reads [`AckSample::rate`]: the transport then keeps each transmission's delivery
    /// state to compute it (otherwise `rate` is always `None` and nothing is kept). Read once, when the
    /// sender is created.
    fn wants_rate_samples(&self) -> bool {
        false
    }

    /// While true, the transport sends nothing new (Madison quiesces on a late probe ACK).
    fn quiesced(&self) -> bool {
        false
    }

    fn on_ack(&mut self, ack: &AckSample);

    fn on_loss(&mut self, ev: &LossEvent);

    fn on_timeout(&mut self, ev: &TimeoutEvent);

    fn on_recovery_end(&mut self, _now: Nanos) {}

    /// A window reduction was spurious: the transport found that the data it declared lost had
    /// arrived (a retransmission timeout found spurious by Eifel/F-RTO when `[transport] rto_undo` is
    /// on, or a fast recovery found spurious by D-SACK or timestamps). `prior_cwnd` and
    /// `prior_ssthresh` are the window and threshold just before that reduction. Linux's `undo_cwnd`
    /// (`tcp_undo_cwnd_reduction`); the default keeps the reduction (algorithms without an undo rule).
    fn undo_cwnd(&mut self, _prior_cwnd: f64, _prior_ssthresh: f64) {}

    fn on_send(&mut self, _ctx: &mut SendCtx) {}

    /// An algorithm-owned timer: the transport calls `on_timer` at or after this time.
    fn next_timer(&self) -> Option<Nanos> {
        None
    }

    fn on_timer(&mut self, _now: Nanos) {}

    /// Algorithm-specific state for the time series (e.g. `("q", 0.004)`, `("price", 0.7)`), sampled
    /// once per sample interval, never per packet. Keys must be stable for the life of the flow.
    fn state(&self, _out: &mut Vec<(&'static str, f64)>) {}

    /// Warnings about the configuration (e.g. Libra's stability bound), reported once at start.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Linux's undo for Reno-like windows (`tcp_reno_undo_cwnd` and `tcp_undo_cwnd_reduction`): the window
/// and threshold go back to at least what they were before the reduction.
#[inline]
pub fn reno_undo(cwnd: &mut f64, ssthresh: &mut f64, prior_cwnd: f64, prior_ssthresh: f64) {
    *cwnd = cwnd.max(prior_cwnd);
    *ssthresh = ssthresh.max(prior_ssthresh);
}

/// Standard slow start (RFC 5681): grow by one packet per acked packet up to ssthresh. Returns the acked
/// packets left over once ssthresh is reached, for the caller's congestion-avoidance rule.
#[inline]
pub fn slow_start(cwnd: &mut f64, ssthresh: f64, acked: f64) -> f64 {
    let room = (ssthresh - *cwnd).max(0.0);
    let used = acked.min(room);
    *cwnd += used;
    acked - used
}

/// Reno congestion avoidance: cwnd += 1/cwnd per acked packet (one packet per RTT).
#[inline]
pub fn reno_increase(cwnd: &mut f64, acked: f64) {
    *cwnd += acked / *cwnd;
}

/// The whole Reno `on_ack`: nothing in recovery, slow start below ssthresh, then additive increase.
#[inline]
pub fn reno_on_ack(cwnd: &mut f64, ssthresh: f64, ack: &AckSample) {
    if ack.in_recovery || ack.app_limited {
        return;
    }
    let left = slow_start(cwnd, ssthresh, ack.newly_acked as f64);
    if left > 0.0 {
        reno_increase(cwnd, left);
    }
}

/// Reno's ssthresh: max(min(FlightSize, cwnd) / 2, 2).
///
/// DECISION (docs/algorithms/newreno.md): RFC 5681 eq. 4 halves FlightSize (sent, not cumulatively
/// acknowledged), which counts SACKed and lost packets. While a hole stays unrepaired FlightSize grows
/// far beyond cwnd (no receive window bounds it here), and FlightSize/2 would *raise* the window on a
/// loss (measured: 647 → 3325 packets). Taking the smaller of the two keeps RFC 5681's reduction below
/// what was really sent when the sender is application-limited (FlightSize < cwnd; eq. 4 is an upper
/// bound, "no more than") and never lets a loss raise the window above max(cwnd, 2). Linux halves cwnd
/// (`tcp_reno_ssthresh`), which is the same whenever the sender is window-limited.
#[inline]
pub fn reno_ssthresh(in_flight: u32, cwnd: f64) -> f64 {
    ((in_flight as f64).min(cwnd) / 2.0).max(2.0)
}

/// RFC 5681 loss response: ssthresh = cwnd = max(min(FlightSize, cwnd)/2, 2) (see [`reno_ssthresh`]).
#[inline]
pub fn reno_on_loss(cwnd: &mut f64, ssthresh: &mut f64, ev: &LossEvent) {
    *ssthresh = reno_ssthresh(ev.in_flight, *cwnd);
    *cwnd = *ssthresh;
}

/// RFC 5681 §3.1 timeout response: ssthresh from the data in flight (bounded by cwnd, see
/// [`reno_ssthresh`]) on the first RTO of a series only (it is ~0 on later ones), cwnd = 1 (the loss
/// window), then slow start.
#[inline]
pub fn reno_on_timeout(cwnd: &mut f64, ssthresh: &mut f64, ev: &TimeoutEvent) {
    if ev.backoffs <= 1 {
        *ssthresh = reno_ssthresh(ev.in_flight, *cwnd);
    }
    *cwnd = 1.0;
}
