//! The run specification: the contract between the Python front door and the drivers (simulator and
//! real datapath).
//!
//! Python (`cclab.scenario`) validates a user's scenario (TOML/dict, units, topology kinds) and resolves
//! it into this flat, unit-free form: every quantity in SI base units (seconds, bit/s, bytes), every
//! buffer resolved (BDP computed), every topology reduced to *directional links* and per-flow link
//! paths. The drivers know nothing of dumbbells or graphs. JSON is the carrier (`serde_json`), so the
//! same spec can be stored beside results and re-run exactly (in either driver).

use crate::limits::Budget;
use cclab_cc::params::Params;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    pub name: String,
    pub seed: u64,
    /// Simulated time, seconds.
    pub duration: f64,
    /// Time-series sample period, seconds.
    pub sample_interval: f64,
    /// Summary window [start, end], seconds.
    pub measure: [f64; 2],
    /// Directional links. A dumbbell has link 0 = forward bottleneck, link 1 = reverse bottleneck.
    pub links: Vec<LinkSpec>,
    pub flows: Vec<FlowSpec>,
    #[serde(default)]
    pub traffic: Vec<TrafficSpec>,
    /// Keep a per-packet event log (debugging; off by default: costs memory and time).
    #[serde(default)]
    pub trace_packets: bool,
    /// The run's memory and event budget (the scenario's `[limits]`); None: the defaults
    /// ([`Budget::default`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Budget>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub rate_bps: f64,
    /// One-way propagation delay, seconds.
    pub delay: f64,
    /// Buffer limit: packets and/or bytes (at least one is set).
    pub buffer_pkts: Option<u32>,
    pub buffer_bytes: Option<u64>,
    /// Queue discipline name ("droptail", "red", "maxnet") and its parameters.
    pub queue: String,
    #[serde(default)]
    pub queue_params: Params,
    /// Bernoulli loss probability applied to packets *arriving* at this link (before the queue).
    #[serde(default)]
    pub loss: f64,
    /// Time-varying loss: [(t, p), …] sorted by t; from each t on, the loss probability is p.
    /// Empty = constant `loss`.
    #[serde(default)]
    pub loss_schedule: Vec<(f64, f64)>,
    /// Time-varying propagation delay: [(t, delay), …] in seconds, strictly increasing t; from each t
    /// on, a packet that finishes serialisation takes this delay (before the first t: `delay`).
    /// Packets never overtake each other on the link: an arrival is at least the previous one (a
    /// delay drop bunches packets up instead of reordering them). Empty = constant `delay`. Left out
    /// of the JSON when empty, so a spec without it is byte for byte what it was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delay_schedule: Vec<(f64, f64)>,
    /// Apply random loss to data packets only (not ACKs / cross traffic). Default true.
    #[serde(default = "yes")]
    pub loss_data_only: bool,
    /// Trace-driven capacity: delivery opportunities in ms (mahimahi format, one 1500-byte packet
    /// each, repeating with the period of the last time); empty = a constant `rate_bps`. With a trace,
    /// `rate_bps` is the trace's mean rate (used for BDP buffers, RED's idle time, utilisation).
    #[serde(default)]
    pub trace_ms: Vec<f64>,
    /// Delay jitter, seconds (`cclab_cc::impair`): uniform in ±jitter or normal with σ = jitter.
    #[serde(default)]
    pub jitter: f64,
    /// "uniform" (default) or "normal".
    #[serde(default)]
    pub jitter_dist: String,
    /// Let jitter reorder packets (netem's behaviour); default false: arrivals stay in order.
    #[serde(default)]
    pub jitter_reorder: bool,
    /// Probability that a packet skips the propagation delay (netem `reorder`).
    #[serde(default)]
    pub reorder: f64,
    /// Probability that an arriving packet is queued twice (netem `duplicate`).
    #[serde(default)]
    pub duplicate: f64,
}

impl LinkSpec {
    /// The link's impairments, if any is set.
    pub fn impairments(&self) -> Option<cclab_cc::impair::Impairments> {
        use cclab_cc::impair::{Impairments, JitterDist};
        let dist = if self.jitter_dist == "normal" {
            JitterDist::Normal
        } else {
            JitterDist::Uniform
        };
        Impairments::new(
            (self.jitter * 1e9).round() as u64,
            dist,
            self.jitter_reorder,
            self.reorder,
            self.duplicate,
        )
    }
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransportSpec {
    pub mss: u32,
    /// Wire bytes of a full data packet (mss + headers). ACKs are packet_size − mss bytes.
    pub packet_size: u32,
    pub initial_cwnd: f64,
    pub delayed_ack: u32,
    /// Delayed-ACK timer, seconds.
    pub delack_timeout: f64,
    pub min_rto: f64,
    pub sack: bool,
    /// Mark data packets ECN-capable.
    #[serde(default)]
    pub ecn: bool,
    /// The receiver's advertised window, in full packets (`[transport] receive_window` ÷ mss); the
    /// sender never has more than this in flight. None: unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_window: Option<u32>,
    /// Proportional Rate Reduction (RFC 6937) during fast recovery (default off: RFC 6675's pipe rule).
    #[serde(default, skip_serializing_if = "is_false")]
    pub prr: bool,
    /// Detect spurious RTOs by timestamps (RFC 3522) and undo them, as Linux does (default off).
    #[serde(default, skip_serializing_if = "is_false")]
    pub rto_undo: bool,
    /// The Reno family and CUBIC leave slow start by HyStart++ (RFC 9406) (default off).
    #[serde(default, skip_serializing_if = "is_false")]
    pub hystart: bool,
    /// Congestion-window validation (RFC 7661's growth rule) (default off).
    #[serde(default, skip_serializing_if = "is_false")]
    pub cwnd_validation: bool,
    /// Tail loss probes with RACK for original transmissions (RFC 8985) (default off).
    #[serde(default, skip_serializing_if = "is_false")]
    pub tlp: bool,
    /// Loss detection for original transmissions: `dupack` (default: RFC 6675's DupThresh) or `rack`
    /// (RACK-TLP, RFC 8985, with Linux's adaptive reordering window).
    #[serde(default, skip_serializing_if = "is_dupack")]
    pub loss_detection: LossDetectionKind,
    /// Undo window reductions shown spurious (D-SACK, timestamps, F-RTO) as Linux does (default off).
    #[serde(default, skip_serializing_if = "is_false")]
    pub undo: bool,
    /// The receiver's ACK policy: `per_packet` (default; `delayed_ack`, `delack_timeout`) or `linux`
    /// (quick ACKs, then every second segment, 40 ms timer; `cclab_transport::delack`).
    #[serde(default, skip_serializing_if = "is_per_packet")]
    pub receiver: ReceiverKind,
    /// The receiver reports duplicate segments as D-SACK blocks (RFC 2883) (default off).
    #[serde(default, skip_serializing_if = "is_false")]
    pub dsack: bool,
}

/// `[transport] receiver` (left out of a spec: `per_packet`; the scenario file's default is `linux`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiverKind {
    #[default]
    PerPacket,
    Linux,
}

fn is_per_packet(r: &ReceiverKind) -> bool {
    *r == ReceiverKind::PerPacket
}

/// `[transport] loss_detection` (left out of a spec: `dupack`; the scenario file's default is `rack`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossDetectionKind {
    #[default]
    Dupack,
    Rack,
}

fn is_dupack(l: &LossDetectionKind) -> bool {
    *l == LossDetectionKind::Dupack
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for TransportSpec {
    /// What a spec that leaves a key out gets: 1448-byte MSS in 1500-byte packets, initial window 10,
    /// an ACK per packet, 200 ms delayed-ACK timer and minimum RTO, SACK on, and every switch off
    /// (dupack loss detection, no undo, no D-SACK): the scenario file's `profile = "paper"`. The
    /// scenario file's default profile, "linux", is resolved by the Python front end, which writes
    /// `loss_detection`, `undo`, `dsack` and `receiver` into the spec (docs/scenario.md, "Transport
    /// profiles"); a key left out keeps its meaning, so specs stored before that default still replay.
    fn default() -> Self {
        TransportSpec {
            mss: 1448,
            packet_size: 1500,
            initial_cwnd: 10.0,
            delayed_ack: 1,
            delack_timeout: 0.2,
            min_rto: 0.2,
            sack: true,
            ecn: false,
            max_window: None,
            prr: false,
            rto_undo: false,
            hystart: false,
            cwnd_validation: false,
            tlp: false,
            loss_detection: LossDetectionKind::Dupack,
            undo: false,
            receiver: ReceiverKind::PerPacket,
            dsack: false,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Index of the `[[flows]]` table this flow came from.
    pub group: u32,
    pub cc: String,
    #[serde(default)]
    pub params: Params,
    /// Data direction: link indices in order. The ACK direction: `ack_path`.
    pub path: Vec<usize>,
    pub ack_path: Vec<usize>,
    /// Extra one-way propagation delay outside the listed links (access links), seconds, so that the
    /// flow's round-trip propagation delay equals its configured rtt.
    pub extra_delay_fwd: f64,
    pub extra_delay_rev: f64,
    /// Configured round-trip propagation delay (reported in summaries), seconds.
    pub rtt: f64,
    /// Start time, seconds: a fixed time, or a uniform draw from [lo, hi] using the run's seed.
    pub start: StartSpec,
    /// Stop time (stop sending new data), seconds; None = end of run.
    pub stop: Option<f64>,
    /// Application bytes to send; None = bulk (infinite).
    pub size: Option<u64>,
    pub transport: TransportSpec,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StartSpec {
    At(f64),
    Uniform([f64; 2]),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficSpec {
    /// "cbr" | "poisson" | "onoff" | "transfers".
    pub kind: String,
    /// Mean rate while on (cbr, poisson), peak rate during on periods (onoff), or the offered load
    /// (transfers: arrival rate × mean size), bit/s.
    pub rate_bps: f64,
    /// Packet size on the wire, bytes.
    pub packet_size: u32,
    pub start: f64,
    pub stop: Option<f64>,
    pub path: Vec<usize>,
    /// onoff: Pareto on/off mean durations (seconds) and shape.
    #[serde(default)]
    pub mean_on: Option<f64>,
    #[serde(default)]
    pub mean_off: Option<f64>,
    #[serde(default)]
    pub shape: Option<f64>,
    /// transfers: the mean transfer size, bytes (sizes are Pareto with `shape`, default 1.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_size: Option<f64>,
    /// transfers: what every transfer is made of: its algorithm and parameters, data and ACK paths,
    /// access delays, RTT and transport (its group, start, stop and size are not used: each transfer
    /// starts at its Poisson arrival and sends its own size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<Box<FlowSpec>>,
}
