//! What a run is estimated to need (memory, events), from its spec: the budget
//! ([`crate::limits::Budget`]) refuses runs above it before they start. Kept apart from the bounds in
//! [`crate::limits`] because it reads the spec, and the spec reads the bounds.

use crate::limits::{show_bytes, MAX_WINDOW_PKTS};
use crate::spec::{RunSpec, TransportSpec};
use serde::Serialize;

// ---- the estimate ----
//
// Calibrated on this machine (2026-11-24, peak RSS of `cclab.run` with and without writing results,
// minus the interpreter's): ~4.4 KB per flow, ~520 B per time-series row with NewReno and ~1 KB with
// Madison (one f64 per column, copied about four times between Rust, NumPy, pandas and Parquet), ~126 B
// per packet in flight (slab entry, scoreboard, receiver), ~0.9 KB per trace record when it crossed into
// Python as JSON (now columns: 24-27 B, re-measured 2026-11-27, see TRACE_BYTES); 2 events per packet per link, 3 with propagation delay, 4 per bottleneck data packet
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
/// Bytes per packet-trace record: 26 in the simulator's columns, which cross into Python without a
/// copy; measured 24-27 B per record at the peak of `cclab run` writing Parquet (MaxNet flooding a
/// 10 Mbit/s link, 2.8-11.2 M records, 2026-11-27), counted at more than twice that.
pub const TRACE_BYTES: f64 = 64.0;
/// Bytes per running short transfer (a flow's endpoints and algorithm: as [`FLOW_BYTES`]; measured
/// 2.3-2.5 kB per unfinished transfer at 12-200 k of them, 2026-11-27).
pub const TRANSFER_BYTES: f64 = FLOW_BYTES;
/// Bytes a sender's logs keep per retransmission while its oldest outstanding packet is not
/// acknowledged: a 24 B echo record, doubled by the log's growth by doubling; measured 57 B per
/// retransmission at its peak (MaxNet flooding 10 Mbit/s, `senders_logs_count_toward_the_budget`).
pub const SEND_LOG_BYTES: f64 = 64.0;
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
    /// Short transfers running at once at the end (transfers offered beyond what their path carries
    /// pile up: linear in time), and their memory.
    pub transfers_running: f64,
    pub memory_transfers: f64,
    /// Senders that do not slow down for loss ([`floods`]): the logs their retransmissions fill.
    pub memory_logs: f64,
}

/// Whether flow `f` sends at its window's rate whatever it loses: MaxNet's source without a MaxNet
/// router on its path gets no price, asks for its largest window (`max_wnd`, 65,535 packets by
/// default) and paces it out every RTT; loss does not reduce its window (docs/algorithms/maxnet.md).
/// Returns that window, packets.
pub fn floods(spec: &RunSpec, f: &crate::spec::FlowSpec) -> Option<f64> {
    if f.cc != "maxnet" {
        return None;
    }
    let priced = f
        .path
        .iter()
        .any(|&l| spec.links.get(l).is_some_and(|k| k.queue == "maxnet"));
    if priced {
        return None;
    }
    let max_wnd = match f.params.get("max_wnd") {
        Some(cclab_cc::params::ParamValue::Num(w)) => *w,
        _ => 65_535.0,
    };
    Some(max_wnd.min(window_of(&f.transport)))
}

/// The most packets a flow may have in flight: its receive window, at most the transport's cap.
fn window_of(t: &TransportSpec) -> f64 {
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
    // Packets per second offered to each link by senders that do not back off for loss (flooding
    // flows, cross traffic other than transfers): what exceeds the link's capacity is dropped.
    // (Congestion-controlled flows sharing a link offer more than it carries on paper, but back off.)
    let mut hard = vec![0.0f64; nl];
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
        let mut pps = if rate.is_finite() {
            rate / 8.0 / ps
        } else {
            0.0
        };
        // A flooding source offers its window every RTT, beyond its path's rate: the excess is
        // dropped, and each drop costs events, a trace record and a retransmission in its logs.
        // It paces at its window over its smoothed RTT, which includes the full buffers of its path.
        let queueing: f64 = f
            .path
            .iter()
            .filter(|&&l| link_ok(l))
            .map(|&l| {
                let k = &spec.links[l];
                let bytes = match (k.buffer_pkts, k.buffer_bytes) {
                    (Some(p), Some(b)) => (p as f64 * ps).min(b as f64),
                    (Some(p), None) => p as f64 * ps,
                    (None, Some(b)) => b as f64,
                    (None, None) => 0.0,
                };
                if k.rate_bps > 0.0 {
                    bytes * 8.0 / k.rate_bps
                } else {
                    0.0
                }
            })
            .sum();
        let flood = floods(spec, f)
            .filter(|_| f.rtt > 0.0)
            .map(|w| w / (f.rtt + queueing));
        if let Some(p) = flood {
            pps = pps.max(p);
        }
        data_pps.push(pps);
        for &l in f.path.iter().filter(|&&l| link_ok(l)) {
            min_size[l] = min_size[l].min(ps);
            offered[l] += pps;
            fill[l] += window;
            if flood.is_some() {
                hard[l] += pps;
            }
        }
        // The first burst (what the access lines hold follows in pass 2, at the flow's share).
        in_flight += t.initial_cwnd.max(0.0).min(window);
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
        // What the access lines hold: the flow's share of its path's rate over their delay. Flows
        // that share a link share what it delivers, so together they hold about one rate × delay,
        // not one each (1 000 flows at 10 Gbit/s and 100 ms were estimated at 12.4 GiB of packets
        // for a run that peaks at 120 MB).
        let access = (f.extra_delay_fwd.max(0.0) + f.extra_delay_rev.max(0.0)) * pps * got;
        in_flight += access.min(window);
        for &l in f.ack_path.iter().filter(|&&l| link_ok(l)) {
            min_size[l] = min_size[l].min(header);
            offered[l] += pps * got / delack;
            fill[l] += window / delack;
        }
    }
    let mut cross_events = 0.0;
    // Packets per second each link is offered by traffic sources (cross traffic and transfers), which
    // do not yield to anything: transfers offered beyond a link's capacity never all finish.
    let mut inelastic = vec![0.0f64; nl];
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
            inelastic[l] += pps;
            if t.flow.is_none() {
                hard[l] += pps;
            }
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
    let mut dropped = 0.0;
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
        // What is offered beyond capacity is dropped: it was sent (a pacing or source event),
        // crossed an access line and reached the link (measured: 3.1 events per drop for MaxNet's
        // flood, counted as 3.5), and leaves a drop record.
        let excess = (hard[l] - capacity).max(0.0) * duration;
        dropped += excess;
        hop_events += 3.5 * excess;
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
        2.0 * packets + dropped + cross_events
    } else {
        0.0
    };
    // Short transfers running at the end: those in progress (Little's law, each taking at most 20
    // RTTs: a 1 MB transfer's slow start and a loss or two) and, where transfers and cross traffic
    // are offered beyond a link's capacity, the excess arrivals, which pile up for the whole run.
    let mut transfers_running = 0.0;
    for t in spec.traffic.iter().filter(|t| t.kind == "transfers") {
        let (Some(f), Some(mean_size)) = (t.flow.as_deref(), t.mean_size) else {
            continue;
        };
        let arrivals = t.rate_bps.max(0.0) / 8.0 / mean_size.max(1.0);
        let active = (t.stop.unwrap_or(duration).min(duration) - t.start).max(0.0);
        let carried = t
            .path
            .iter()
            .filter(|&&l| link_ok(l))
            .map(|&l| {
                let capacity = spec.links[l].rate_bps.max(0.0) / 8.0 / min_size[l].min(1500.0);
                if inelastic[l] > capacity {
                    capacity / inelastic[l]
                } else {
                    1.0
                }
            })
            .fold(1.0, f64::min);
        transfers_running +=
            arrivals * (active * (1.0 - carried) + (20.0 * f.rtt.max(0.0)).min(active));
    }
    // Flooding senders retransmit what they lose while the oldest loss stays unacknowledged: their
    // logs keep a record per drop.
    let memory_logs = if spec.flows.iter().any(|f| floods(spec, f).is_some()) {
        dropped * SEND_LOG_BYTES
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
    let memory_transfers = transfers_running * TRANSFER_BYTES;
    Estimate {
        memory: memory_state
            + memory_series
            + memory_packets
            + memory_trace
            + memory_transfers
            + memory_logs,
        events,
        packets,
        in_flight,
        series_rows: flow_rows + link_rows,
        trace_records,
        memory_state,
        memory_series,
        memory_packets,
        memory_trace,
        transfers_running,
        memory_transfers,
        memory_logs,
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
            ("running transfers", self.memory_transfers),
            ("senders' retransmission logs", self.memory_logs),
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
