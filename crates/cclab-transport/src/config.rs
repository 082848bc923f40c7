//! Endpoint settings (the scenario's `[transport]` table, resolved to integers).

use cclab_cc::cc::Recovery;
use cclab_cc::time::{Nanos, NS_PER_MS, NS_PER_SEC};

/// A paced sender's credit for lateness ([`Config::pacing_catch_up`]), in two regimes: senders whose
/// packets are more than `fast_gap` apart may fall `credit` behind, faster ones `fast_credit`. Faster
/// senders are the ones a late wake-up costs most packets, and on the real datapath the ones whose
/// packets already leave in batches (`endpoint::batch_horizon`), so the larger credit changes nothing
/// for the slow ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatchUp {
    /// The credit (ns) of a sender whose packets are more than `fast_gap` apart.
    pub credit: Nanos,
    /// The pacing gap (ns) at or below which `fast_credit` applies.
    pub fast_gap: Nanos,
    /// The credit (ns) of a sender whose packets are at most `fast_gap` apart.
    pub fast_credit: Nanos,
}

impl CatchUp {
    /// No credit beyond half a gap (the simulator: its wake-ups are exact).
    pub const NONE: CatchUp = CatchUp {
        credit: 0,
        fast_gap: 0,
        fast_credit: 0,
    };

    /// How far behind schedule a sender whose packets are `gap` apart may be: at least half a gap.
    pub fn for_gap(&self, gap: Nanos) -> Nanos {
        let c = if gap <= self.fast_gap {
            self.fast_credit
        } else {
            self.credit
        };
        (gap / 2).max(c)
    }
}

/// The receiver's ACK policy (the scenario's `[transport] receiver`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReceiverProfile {
    /// An ACK every `delayed_ack` in-order packets (1: every packet), at once for anything out of
    /// order, a duplicate or a filled hole, else when `delack_timeout` runs out.
    #[default]
    PerPacket,
    /// Linux's receiver: quick ACKs at the start and after a duplicate, then an ACK every second full
    /// segment with a 40 ms delayed-ACK timer; out-of-order data, duplicates and filled holes at once.
    Linux,
}

/// How the sender decides that an original transmission is lost (`[transport] loss_detection`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossDetection {
    /// RFC 6675: DupThresh (3) packets SACKed above a hole, or DupThresh duplicate ACKs without SACK;
    /// RACK's time rule only for retransmissions (and, with `tlp`, originals with a fixed window).
    #[default]
    DupAck,
    /// RACK-TLP (RFC 8985) as Linux runs it (`crates/cclab-transport/src/rack.rs`): time-based loss
    /// detection with a reordering window that adapts to the reordering seen and to D-SACKs, the
    /// reordering degree as DupThresh, and tail loss probes.
    Rack,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Payload bytes per full data packet.
    pub mss: u32,
    /// Header bytes added on the wire to every data packet (packet_size − mss); ACKs are this size too.
    pub header_bytes: u32,
    /// Initial congestion window, packets.
    pub initial_cwnd: f64,
    /// ACK every N in-order data packets (1 = every packet; 2 = RFC 1122 delayed ACK).
    pub delayed_ack: u32,
    /// Delayed-ACK timer.
    pub delack_timeout: Nanos,
    /// When the receiver ACKs: `PerPacket` follows `delayed_ack` and `delack_timeout`; `Linux` runs
    /// Linux's quick-ACK and delayed-ACK rules ([`crate::delack`]; the resolver sets `delayed_ack` 2 and
    /// `delack_timeout` 40 ms with it, so the sender's probe timer allows for them).
    pub receiver: ReceiverProfile,
    /// The receiver reports duplicate segments as D-SACK blocks (RFC 2883; only with `sack`).
    pub dsack: bool,
    /// RFC 6298 bounds and initial value.
    pub min_rto: Nanos,
    pub max_rto: Nanos,
    pub initial_rto: Nanos,
    /// Receiver generates SACK blocks; sender uses SACK recovery (RFC 6675) unless `recovery` overrides.
    pub sack: bool,
    /// Loss recovery the sender runs (NewReno when SACK is off, unless the algorithm asks otherwise).
    pub recovery: Recovery,
    /// Duplicate-ACK threshold for fast retransmit.
    pub dupthresh: u32,
    /// The receiver's advertised window, packets: new data is sent only while snd_nxt − snd_una is
    /// below it, and the congestion window is honoured up to it.
    pub max_window: u32,
    /// Proportional Rate Reduction (RFC 6937) sets what may be sent during fast recovery; off: the
    /// pipe is kept at the algorithm's window (RFC 6675).
    pub prr: bool,
    /// Detect spurious RTOs (Eifel, RFC 3522, by timestamps) and undo them (Linux's F-RTO undo).
    pub rto_undo: bool,
    /// Congestion-window validation (RFC 7661, its growth rule): while the receive window, not cwnd,
    /// limits the sender, ACKs are reported application-limited and the window does not grow.
    pub cwnd_validation: bool,
    /// Tail loss probes (RFC 8985 §7) with RACK loss detection for original transmissions.
    pub tlp: bool,
    /// Loss detection for original transmissions (RACK implies tail loss probes).
    pub loss_detection: LossDetection,
    /// Undo window reductions shown spurious, as Linux does (`crates/cclab-transport/src/undo.rs`): a
    /// fast recovery all of whose retransmissions come back D-SACKed, or whose hole is filled by the
    /// original transmission (timestamps); an RTO likewise, or by F-RTO (RFC 5682). Implies `rto_undo`.
    pub undo: bool,
    /// How far behind its pacing schedule a sender may be and still catch up: a packet held by
    /// pacing and sent late continues the schedule from when it was due, back to this far before now,
    /// and the packets due meanwhile go at once. Zero: half a gap (Linux fq's drift rule). The
    /// simulator wakes exactly on time and is unaffected; the real datapath sets it
    /// (`endpoint::PACING_CATCH_UP`) because a sender thread cannot pace faster than its wake-ups.
    pub pacing_catch_up: CatchUp,
    /// The flow's data key ([`crate::auth`]): the sender tags every data segment with it and the
    /// receiver refuses (and counts) data whose tag does not verify. None: data is not tagged and
    /// in-window data is taken as it comes (the simulator, which nothing but its own network reaches).
    pub data_key: Option<crate::auth::DataKey>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mss: 1448,
            header_bytes: 52,
            initial_cwnd: 10.0,
            delayed_ack: 1,
            delack_timeout: 200 * NS_PER_MS,
            receiver: ReceiverProfile::PerPacket,
            dsack: false,
            min_rto: 200 * NS_PER_MS,
            max_rto: 60 * NS_PER_SEC,
            initial_rto: NS_PER_SEC,
            sack: true,
            recovery: Recovery::Sack,
            dupthresh: 3,
            max_window: 1 << 20,
            prr: false,
            rto_undo: false,
            cwnd_validation: false,
            tlp: false,
            loss_detection: LossDetection::DupAck,
            undo: false,
            pacing_catch_up: CatchUp::NONE,
            data_key: None,
        }
    }
}
