//! The run spec's bounds, defined once. [`RunSpec::validate`](crate::RunSpec::validate) enforces the
//! ones a resolved spec can show; the Python front door reads all of them (`cclab._native.limits()`)
//! and checks them on the scenario file, where its messages can quote what the user wrote.
//!
//! Two kinds (docs/scenario.md "Limits"):
//! * **hard bounds** on single values, so that every time fits the engine's `u64` nanosecond clock with
//!   margin and no count overflows its integer type: they are never raised;
//! * **the budget**: the run's estimated memory and events ([`crate::estimate`]), refused above
//!   [`DEFAULT_MAX_MEMORY`] / [`DEFAULT_MAX_EVENTS`] unless the scenario raises them (`[limits]`,
//!   carried in the spec as [`Budget`]).

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

/// Largest delay a link's `delay_schedule` may set, nanoseconds (60 s, the transport's maximum RTO):
/// a spike is a path event of milliseconds to seconds; a minute-long one is an outage, which a
/// capacity trace or `loss_schedule` writes better.
pub const MAX_SCHEDULED_DELAY_NS: u64 = 60 * 1_000_000_000;

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
    ("max_scheduled_delay_ns", MAX_SCHEDULED_DELAY_NS),
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
