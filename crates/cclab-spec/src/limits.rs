//! The run spec's bounds, defined once. [`RunSpec::validate`](crate::RunSpec::validate) enforces the
//! ones a resolved spec can show; the Python front door reads all of them (`cclab._native.limits()`)
//! and checks them on the scenario file, where its messages can quote what the user wrote.
//!
//! Two kinds (docs/scenario.md "Limits"):
//! * **hard bounds** on single values, so that every time fits the engine's `u64` nanosecond clock with
//!   margin and no count overflows its integer type: they are never raised;
//! * **the budget**: the run's estimated memory and events ([`estimate`]), refused above
//!   [`DEFAULT_MAX_MEMORY`] / [`DEFAULT_MAX_EVENTS`] unless the scenario raises them (`[limits]`,
//!   carried in the spec as [`Budget`]).

use crate::spec::RunSpec;
use serde::{Deserialize, Serialize};

/// Most time-series rows a run may record, samples × (flows + links) with
/// samples = ⌊duration / sample_interval⌋ + 1: beyond this a run needs gigabytes of memory.
pub const MAX_SERIES_ROWS: u64 = 10_000_000;

/// Most flows one `[[flows]]` table may expand to (its `count`). Front door only: a resolved spec
/// has flows, not counts.
pub const MAX_FLOW_COUNT: u64 = 100_000;

/// Largest `delayed_ack` (an ACK every N in-order data packets); the smallest is 1.
pub const MAX_DELAYED_ACK: u32 = 64;

/// Seeds are below 2^63 (they fit a signed 64-bit integer, as JSON readers and Parquet store them).
pub const SEED_LIMIT: u64 = 1 << 63;

/// Longest time anywhere in a spec (duration, delays, RTTs, starts, stops, timers, on/off means),
/// nanoseconds: 10^6 s ≈ 11.6 days. The clock (`u64` ns) reaches 1.8·10^10 s, so sums of a run's
/// times (now + a path's delays + a timer) stay four orders of magnitude inside it.
pub const MAX_TIME_NS: u64 = 1_000_000 * 1_000_000_000;

/// Slowest link or traffic rate, bit/s: one full-size packet (64 KiB) serialises in < 10 min.
pub const MIN_RATE_BPS: u64 = 1_000;
/// Fastest link or traffic rate, bit/s (10 Tbit/s): a 64-byte packet still takes ≥ 1 ns.
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;

/// Smallest packet on the wire, bytes (the scenario's `packet_size`, a traffic source's): an
/// Ethernet frame's minimum. Smaller ones only multiply events per bit.
pub const MIN_PACKET_SIZE: u64 = 64;
/// Largest packet on the wire, bytes (the largest IPv4 datagram).
pub const MAX_PACKET_SIZE: u64 = 65_535;

/// Largest initial congestion window, packets (10^4 × RFC 6928's 10). Every flow sends it as its
/// first burst, so it also counts in the memory estimate.
pub const MAX_INITIAL_CWND: u64 = 100_000;

/// Largest receive window, packets: the transport's own cap (`cclab_transport::Config::max_window`,
/// what "unlimited" means).
pub const MAX_WINDOW_PKTS: u64 = 1 << 20;

/// Largest `min_rto`, nanoseconds: the transport's maximum RTO (RFC 6298 §2.5's 60 s), which the
/// minimum may not exceed.
pub const MAX_RTO_NS: u64 = 60 * 1_000_000_000;

/// Largest buffer, packets (also bounds a "BDP" buffer once resolved).
pub const MAX_BUFFER_PKTS: u64 = 1_000_000_000;
/// Largest buffer, bytes.
pub const MAX_BUFFER_BYTES: u64 = 1_000_000_000_000;

/// Most delivery opportunities in one trace-driven link's trace (lines of a mahimahi file): 10 M is
/// ~2 hours of a 20 Mbit/s cellular trace, 80 MB of spec.
pub const MAX_TRACE_LINES: u64 = 10_000_000;
/// Longest trace period (its last time), ms: the simulator's time bound.
pub const MAX_TRACE_MS: u64 = MAX_TIME_NS / 1_000_000;

/// Most flows in one run (all `[[flows]]` tables' counts together); the budget usually binds first.
pub const MAX_FLOWS: u64 = 1_000_000;

/// Largest finite flow size, bytes (10^18: fits `u64` with margin).
pub const MAX_FLOW_SIZE: u64 = 1_000_000_000_000_000_000;

/// Largest Pareto shape of an on/off source (larger is indistinguishable from constant periods).
pub const MAX_SHAPE: u64 = 100;

/// Default memory budget, bytes (4 GiB): a quarter of a 16 GB laptop, so that a sweep running one
/// simulation per core on a small machine does not swap.
pub const DEFAULT_MAX_MEMORY: u64 = 4 << 30;

/// Default event budget (2·10^9): about five minutes of simulation loop at the engine's 6–9 M
/// events/s (docs/performance.md); 8× the largest shipped experiment (L4: 206 M events measured,
/// 259 M estimated).
pub const DEFAULT_MAX_EVENTS: u64 = 2_000_000_000;

/// Every limit by the name Python uses.
pub const ALL: &[(&str, u64)] = &[
    ("max_series_rows", MAX_SERIES_ROWS),
    ("max_flow_count", MAX_FLOW_COUNT),
    ("max_delayed_ack", MAX_DELAYED_ACK as u64),
    ("seed_limit", SEED_LIMIT),
    ("max_time_ns", MAX_TIME_NS),
    ("min_rate_bps", MIN_RATE_BPS),
    ("max_rate_bps", MAX_RATE_BPS),
    ("min_packet_size", MIN_PACKET_SIZE),
    ("max_packet_size", MAX_PACKET_SIZE),
    ("max_initial_cwnd", MAX_INITIAL_CWND),
    ("max_window_pkts", MAX_WINDOW_PKTS),
    ("max_rto_ns", MAX_RTO_NS),
    ("max_buffer_pkts", MAX_BUFFER_PKTS),
    ("max_buffer_bytes", MAX_BUFFER_BYTES),
    ("max_shape", MAX_SHAPE),
    ("max_trace_lines", MAX_TRACE_LINES),
    ("max_trace_ms", MAX_TRACE_MS),
    ("max_flows", MAX_FLOWS),
    ("max_flow_size", MAX_FLOW_SIZE),
    ("default_max_memory", DEFAULT_MAX_MEMORY),
    ("default_max_events", DEFAULT_MAX_EVENTS),
];

/// The time-series rows a run records (see [`MAX_SERIES_ROWS`]), as the front door counts them.
pub fn series_rows(duration: f64, sample_interval: f64, flows: usize, links: usize) -> f64 {
    ((duration / sample_interval).floor() + 1.0) * (flows + links) as f64
}

/// A run's budget: the estimated memory and events above which it is refused. A spec without one
/// gets the defaults; the scenario's `[limits]` table sets it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Bytes.
    #[serde(default = "default_memory")]
    pub max_memory: u64,
    #[serde(default = "default_events")]
    pub max_events: u64,
}

fn default_memory() -> u64 {
    DEFAULT_MAX_MEMORY
}

fn default_events() -> u64 {
    DEFAULT_MAX_EVENTS
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_memory: DEFAULT_MAX_MEMORY,
            max_events: DEFAULT_MAX_EVENTS,
        }
    }
}

// ---- the estimate ----
//
// Calibrated on this machine (2026-11-24, peak RSS of `cclab.run` with and without writing results,
// minus the interpreter's): ~4.4 KB per flow, ~520 B per time-series row with NewReno and ~1 KB with
// Madison (one f64 per column, copied about four times between Rust, NumPy, pandas and Parquet), ~126 B
// per packet in flight (slab entry, scoreboard, receiver), ~0.9 KB per trace record (it crosses into
// Python as JSON); 2 events per packet per link, 3 with propagation delay, 4 per bottleneck data packet
// in a dumbbell (docs/performance.md), counted as 2.5 and 3.5 for retransmissions and timers. Each term is taken on the generous side: the estimate is a bound
// to refuse runs by, not a prediction.

/// Bytes per flow (endpoints, algorithm, snapshots).
pub const FLOW_BYTES: f64 = 6_000.0;
/// Bytes per link (queue, counters, histogram).
pub const LINK_BYTES: f64 = 4_000.0;
/// Bytes per flow time-series row (algorithms with many state columns, e.g. Madison, ~1 KB).
pub const FLOW_ROW_BYTES: f64 = 1_100.0;
/// Bytes per link time-series row.
pub const LINK_ROW_BYTES: f64 = 600.0;
/// Bytes per packet in the network at once.
pub const PACKET_BYTES: f64 = 160.0;
/// Bytes per packet-trace record.
pub const TRACE_BYTES: f64 = 1_100.0;
/// Fixed cost of a run (the engine's tables, the result's framing).
pub const BASE_BYTES: f64 = 16.0 * 1024.0 * 1024.0;

/// What a run is estimated to need: [`estimate`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Estimate {
    /// Total, bytes.
    pub memory: f64,
    /// Events the simulation loop executes.
    pub events: f64,
    /// Packet transmissions, summed over links.
    pub packets: f64,
    /// Packets in the network at once (queues, wires, access lines, first bursts), at most.
    pub in_flight: f64,
    pub series_rows: f64,
    /// Packet-trace records (0 without `trace_packets`).
    pub trace_records: f64,
    /// The memory terms, bytes: flows and links, time series, packets in flight, packet trace.
    pub memory_state: f64,
    pub memory_series: f64,
    pub memory_packets: f64,
    pub memory_trace: f64,
}

/// The most packets a flow may have in flight: its receive window, at most the transport's cap.
fn window_of(t: &crate::spec::TransportSpec) -> f64 {
    t.max_window
        .map_or(MAX_WINDOW_PKTS as f64, |w| w as f64)
        .min(MAX_WINDOW_PKTS as f64)
}

/// Estimates what running `spec` needs (see the calibration above). Meaningful for a spec whose
/// values are within the hard bounds; never panics on any spec (non-finite inputs give non-finite
/// estimates, which exceed every budget).
pub fn estimate(spec: &RunSpec) -> Estimate {
    let nl = spec.links.len();
    let duration = spec.duration.max(0.0);
    let link_ok = |l: usize| l < nl;
    // The smallest packet that crosses each link (bytes), to count packets by.
    let mut min_size = vec![f64::INFINITY; nl];
    // Packets per second offered to each link, and the windows (packets) that could fill it.
    let mut offered = vec![0.0f64; nl];
    let mut fill = vec![0.0f64; nl];
    let mut in_flight = 0.0;
    // Pass 1, data: each flow offers its path's slowest link's rate.
    let mut data_pps = Vec::with_capacity(spec.flows.len());
    for f in &spec.flows {
        let t = &f.transport;
        let ps = (t.packet_size as f64).max(1.0);
        let window = window_of(t);
        let rate = f
            .path
            .iter()
            .filter(|&&l| link_ok(l))
            .map(|&l| spec.links[l].rate_bps)
            .fold(f64::INFINITY, f64::min);
        let pps = if rate.is_finite() {
            rate / 8.0 / ps
        } else {
            0.0
        };
        data_pps.push(pps);
        for &l in f.path.iter().filter(|&&l| link_ok(l)) {
            min_size[l] = min_size[l].min(ps);
            offered[l] += pps;
            fill[l] += window;
        }
        // The first burst, and what the access lines hold.
        let access = (f.extra_delay_fwd.max(0.0) + f.extra_delay_rev.max(0.0)) * pps;
        in_flight += t.initial_cwnd.max(0.0).min(window) + access.min(window);
    }
    // Pass 2, ACKs: a flow's ACKs follow the data it gets through its most crowded link (flows
    // sharing a link share its capacity).
    let share: Vec<f64> = (0..nl)
        .map(|l| {
            let capacity = spec.links[l].rate_bps.max(0.0) / 8.0 / min_size[l].min(1500.0);
            if offered[l] > capacity {
                capacity / offered[l]
            } else {
                1.0
            }
        })
        .collect();
    for (f, &pps) in spec.flows.iter().zip(&data_pps) {
        let t = &f.transport;
        let header = (t.packet_size.saturating_sub(t.mss) as f64).max(1.0);
        let delack = (t.delayed_ack as f64).max(1.0);
        let got = f
            .path
            .iter()
            .filter(|&&l| link_ok(l))
            .map(|&l| share[l])
            .fold(1.0, f64::min);
        let window = window_of(t);
        for &l in f.ack_path.iter().filter(|&&l| link_ok(l)) {
            min_size[l] = min_size[l].min(header);
            offered[l] += pps * got / delack;
            fill[l] += window / delack;
        }
    }
    let mut cross_events = 0.0;
    for t in &spec.traffic {
        let ps = (t.packet_size as f64).max(1.0);
        let on_fraction = if t.kind == "onoff" {
            let (on, off) = (t.mean_on.unwrap_or(0.5), t.mean_off.unwrap_or(0.5));
            if on + off > 0.0 {
                on / (on + off)
            } else {
                1.0
            }
        } else {
            1.0
        };
        let pps = t.rate_bps.max(0.0) / 8.0 / ps * on_fraction;
        // Poisson gaps are random: allow for more than the mean.
        let pps = if t.kind == "poisson" { pps * 1.1 } else { pps };
        let active = (t.stop.unwrap_or(duration).min(duration) - t.start).max(0.0);
        cross_events += pps * active;
        for &l in t.path.iter().filter(|&&l| link_ok(l)) {
            min_size[l] = min_size[l].min(ps);
            offered[l] += pps;
            fill[l] += pps * duration;
        }
        // Short transfers: their ACKs come back, and each packet costs endpoint events at both ends.
        if let Some(f) = t.flow.as_deref() {
            let tr = &f.transport;
            let header = tr.packet_size.saturating_sub(tr.mss).max(1) as f64;
            let delack = tr.delayed_ack.max(1) as f64;
            for &l in f.ack_path.iter().filter(|&&l| link_ok(l)) {
                min_size[l] = min_size[l].min(header);
                offered[l] += pps / delack;
            }
            cross_events += 2.0 * pps * active;
        }
    }
    let mut packets = 0.0;
    let mut hop_events = 0.0;
    for (l, link) in spec.links.iter().enumerate() {
        let size = if min_size[l].is_finite() {
            min_size[l]
        } else {
            1500.0
        };
        let capacity = link.rate_bps.max(0.0) / 8.0 / size;
        let sent = offered[l].min(capacity) * duration;
        packets += sent;
        hop_events += sent * if link.delay > 0.0 { 3.5 } else { 2.5 };
        let buffer = match (link.buffer_pkts, link.buffer_bytes) {
            (Some(p), Some(b)) => (p as f64).min(b as f64 / size),
            (Some(p), None) => p as f64,
            (None, Some(b)) => b as f64 / size,
            (None, None) => 0.0,
        };
        let pipe = capacity * link.delay.max(0.0);
        in_flight += buffer.min(fill[l]) + pipe.min(fill[l]);
    }
    let flows = spec.flows.len() as f64;
    let samples = if spec.sample_interval > 0.0 {
        (duration / spec.sample_interval).floor() + 1.0
    } else {
        f64::INFINITY
    };
    let flow_rows = samples * flows;
    let link_rows = samples * nl as f64;
    // Per flow: start, stop, a few timer events; per sample: one event.
    let events = hop_events + cross_events + flows * 8.0 + samples;
    let trace_records = if spec.trace_packets {
        // Each transmission is enqueued once, and each packet is delivered or dropped once.
        2.0 * packets + cross_events
    } else {
        0.0
    };
    let memory_state = BASE_BYTES
        + flows * FLOW_BYTES
        + nl as f64 * LINK_BYTES
        + spec.traffic.len() as f64 * LINK_BYTES;
    let memory_series = flow_rows * FLOW_ROW_BYTES + link_rows * LINK_ROW_BYTES;
    let memory_packets = in_flight * PACKET_BYTES;
    let memory_trace = trace_records * TRACE_BYTES;
    Estimate {
        memory: memory_state + memory_series + memory_packets + memory_trace,
        events,
        packets,
        in_flight,
        series_rows: flow_rows + link_rows,
        trace_records,
        memory_state,
        memory_series,
        memory_packets,
        memory_trace,
    }
}

/// `x` bytes for a message: "6.7 GiB", "120 MiB".
pub fn show_bytes(x: f64) -> String {
    if !x.is_finite() {
        return "unbounded".into();
    }
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = x;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A count for a message: "2.0e9".
pub fn show_count(x: f64) -> String {
    if !x.is_finite() {
        "unbounded".into()
    } else if x < 1e6 {
        format!("{x:.0}")
    } else {
        format!("{x:.1e}")
    }
}

impl Estimate {
    /// Which memory terms make up the total, largest first, for a message.
    pub fn memory_breakdown(&self) -> String {
        let mut terms = [
            ("flows and links", self.memory_state),
            ("time series", self.memory_series),
            ("packets in flight", self.memory_packets),
            ("packet trace", self.memory_trace),
        ];
        terms.sort_by(|a, b| b.1.total_cmp(&a.1));
        terms
            .iter()
            .filter(|(_, v)| *v > 0.0)
            .map(|(k, v)| format!("{k} {}", show_bytes(*v)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
