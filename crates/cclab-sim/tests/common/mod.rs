//! Helpers shared by the simulation tests: build dumbbell specs tersely and check conservation.
#![allow(dead_code)]

use cclab_cc::params::{ParamValue, Params};
use cclab_sim::result::RunResult;
use cclab_sim::spec::{FlowSpec, LinkSpec, RunSpec, StartSpec, TrafficSpec, TransportSpec};

pub fn transport() -> TransportSpec {
    TransportSpec::default()
}

pub fn link(rate_bps: f64, buffer_pkts: u32, queue: &str) -> LinkSpec {
    LinkSpec {
        rate_bps,
        delay: 0.0,
        buffer_pkts: Some(buffer_pkts),
        buffer_bytes: None,
        queue: queue.into(),
        queue_params: Params::new(),
        loss: 0.0,
        loss_schedule: vec![],
        delay_schedule: vec![],
        loss_data_only: true,
        trace_ms: vec![],
        jitter: 0.0,
        jitter_dist: String::new(),
        jitter_reorder: false,
        reorder: 0.0,
        duplicate: 0.0,
    }
}

/// A flow over the dumbbell (link 0 forward, link 1 reverse) with its whole RTT in access delays.
pub fn flow(cc: &str, rtt: f64, group: u32) -> FlowSpec {
    FlowSpec {
        group,
        cc: cc.into(),
        params: Params::new(),
        path: vec![0],
        ack_path: vec![1],
        extra_delay_fwd: rtt / 2.0,
        extra_delay_rev: rtt / 2.0,
        rtt,
        start: StartSpec::At(0.0),
        stop: None,
        size: None,
        transport: transport(),
    }
}

pub fn param(pairs: &[(&str, f64)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), ParamValue::Num(*v)))
        .collect()
}

/// Bandwidth-delay product in 1500-byte packets.
pub fn bdp_pkts(rate_bps: f64, rtt: f64) -> u32 {
    ((rate_bps * rtt / 8.0 / 1500.0).round() as u32).max(1)
}

pub fn dumbbell(
    rate_bps: f64,
    buffer_pkts: u32,
    queue: &str,
    flows: Vec<FlowSpec>,
    duration: f64,
    seed: u64,
) -> RunSpec {
    RunSpec {
        name: "test".into(),
        seed,
        duration,
        sample_interval: 0.1,
        measure: [0.0, duration],
        links: vec![
            link(rate_bps, buffer_pkts, queue),
            link(rate_bps, buffer_pkts, "droptail"),
        ],
        flows,
        traffic: vec![],
        trace_packets: false,
        limits: None,
    }
}

/// Runs and asserts packet conservation (every simulation test goes through this).
pub fn run(spec: &RunSpec) -> RunResult {
    let r = cclab_sim::run(spec, None).expect("valid spec");
    let c = &r.conservation;
    assert!(c.holds(), "packet conservation violated: {c:?}");
    for f in &r.flows {
        // Per flow: every data packet sent was received, dropped, or is still in the network.
        assert!(
            f.received_pkts + f.dropped_pkts <= f.sent_pkts,
            "flow {}: {f:?}",
            f.id
        );
        assert!(
            f.sent_pkts - f.received_pkts - f.dropped_pkts <= c.in_network,
            "flow {} conservation",
            f.id
        );
    }
    r
}

pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

/// A cross-traffic source of `kind` ("cbr", "poisson", …) at `rate_bps` over link 0 from `start`, 1500-byte
/// packets, every other field unset; tests set what they need on the result.
pub fn traffic(kind: &str, rate_bps: f64, start: f64) -> TrafficSpec {
    TrafficSpec {
        kind: kind.into(),
        rate_bps,
        packet_size: 1500,
        start,
        stop: None,
        path: vec![0],
        mean_on: None,
        mean_off: None,
        shape: None,
        mean_size: None,
        flow: None,
    }
}
