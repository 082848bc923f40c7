//! The run's topology on the real datapath: what paths and cross traffic a spec may ask for, and the
//! emulator that carries them.
//!
//! A `RunSpec` has already reduced every topology to directional links and per-flow link paths
//! (`path`, `ack_path`; docs/scenario.md): a dumbbell is links 0 and 1, a parking lot of n links is
//! links 0..n forward and n..2n their reverses, a graph has two per cable. The emulator needs nothing
//! more: it holds every link and sends each flow's packets through its own path's links in order,
//! finding the flow by port ([`crate::plan`]). So every kind runs, on two hosts: every sender on host A
//! and every receiver on host B, except a dumbbell-style reverse flow (`path = [1]`,
//! `ack_path = [0]`), whose sender runs on host B as before.
//!
//! Cross traffic: `cbr`, `poisson` and `onoff` sources are generated inside the emulator with the
//! simulator's law and stream (`cclab_cc::cross`, `Stream::Traffic`); `transfers` are real short flows
//! of our transport ([`crate::transfers`]), each on a port of its source's range.

use cclab_cc::cross::{CrossKind, CrossLaw};
use cclab_cc::rng::Stream;
use cclab_cc::time::from_secs;

use crate::emulator::{Dir, Emulator, FlowRoute, LinkConfig};
use crate::plan::flow_port;
use crate::spec::{FlowSpec, RunSpec};

/// A spec the real datapath cannot run: the message starts with the field at fault (`run` turns it
/// into its `RunError::Spec`).
#[derive(Debug)]
pub struct SpecError(pub String);

/// At most this many `transfers` sources (each takes [`TRANSFER_PORTS`] ports below the hosts'
/// ephemeral range).
pub const MAX_TRANSFER_SOURCES: usize = 8;

/// Ports per `transfers` source: transfer `n` of source `s` listens on
/// `TRANSFER_BASE + s·TRANSFER_PORTS + n mod TRANSFER_PORTS` (the next free one if that is in use).
pub const TRANSFER_PORTS: u16 = 1000;
pub const TRANSFER_BASE: u16 = 30000;

/// The first port of `transfers` source `s`'s range.
pub fn transfer_base(s: usize) -> u16 {
    TRANSFER_BASE + s as u16 * TRANSFER_PORTS
}

/// Whether flow `f` runs with its sender on host B: a dumbbell's reverse flow (data over link 1, ACKs
/// over link 0). Every other flow sends from host A, whatever links its path names.
pub fn reverse(f: &FlowSpec) -> bool {
    f.path == [1] && f.ack_path == [0]
}

/// The emulator route of `f`'s packets.
pub fn flow_route(f: &FlowSpec) -> FlowRoute {
    FlowRoute {
        data_side: if reverse(f) { Dir::Rev } else { Dir::Fwd },
        data_hops: f.path.clone(),
        data_delay: from_secs(f.extra_delay_fwd),
        ack_hops: f.ack_path.clone(),
        ack_delay: from_secs(f.extra_delay_rev),
    }
}

/// Checks a link path: non-empty, every link exists, none twice. The error names `field`.
fn check_path(field: &str, path: &[usize], n: usize) -> Result<(), SpecError> {
    let bad = |why: String| Err(SpecError(format!("{field}: {why}")));
    if path.is_empty() {
        return bad("must name at least one link".into());
    }
    if let Some(l) = path.iter().find(|&&l| l >= n) {
        return bad(format!("link {l} does not exist (the spec has {n} links)"));
    }
    let mut seen = path.to_vec();
    seen.sort_unstable();
    if seen.windows(2).any(|w| w[0] == w[1]) {
        return bad(format!("{path:?} crosses a link twice"));
    }
    Ok(())
}

/// Checks every flow's paths and every cross-traffic source. `loopback`: transfers are refused (the
/// relay learns each flow's addresses before the run, and a transfer's exist only once it arrives).
pub fn validate(spec: &RunSpec, loopback: bool) -> Result<(), SpecError> {
    let n = spec.links.len();
    if n == 0 {
        return Err(SpecError("links: the spec has no links".into()));
    }
    for (i, f) in spec.flows.iter().enumerate() {
        check_path(&format!("flows[{i}].path"), &f.path, n)?;
        check_path(&format!("flows[{i}].ack_path"), &f.ack_path, n)?;
    }
    let mut sources = 0;
    for (i, t) in spec.traffic.iter().enumerate() {
        let field = |k: &str| format!("traffic[{i}].{k}");
        if !(t.rate_bps > 0.0 && t.rate_bps.is_finite()) {
            return Err(SpecError(format!(
                "{}: must be a positive rate, got {}",
                field("rate_bps"),
                t.rate_bps
            )));
        }
        if t.kind == "transfers" {
            if loopback {
                return Err(SpecError(format!(
                    "{}: \"transfers\" needs the namespace mode (each transfer's endpoints are bound when \
                     it arrives; the loopback relay knows its flows before the run); allowed in loopback \
                     mode: \"cbr\", \"poisson\", \"onoff\"",
                    field("kind")
                )));
            }
            sources += 1;
            if sources > MAX_TRANSFER_SOURCES {
                return Err(SpecError(format!(
                    "{}: at most {MAX_TRANSFER_SOURCES} \"transfers\" sources on the real datapath",
                    field("kind")
                )));
            }
            let (Some(f), Some(m)) = (t.flow.as_deref(), t.mean_size) else {
                return Err(SpecError(format!(
                    "{}: \"transfers\" needs a flow template and a mean size",
                    field("kind")
                )));
            };
            if !(m >= 1.0 && m.is_finite()) {
                return Err(SpecError(format!(
                    "{}: must be at least 1 byte, got {m}",
                    field("mean_size")
                )));
            }
            if f.cc.starts_with("kernel:") || f.cc.starts_with("bpf:") {
                return Err(SpecError(format!(
                    "{}: transfers run our transport on the real datapath, got {:?} (Linux TCP); \
                     allowed: any algorithm of `cclab-net algorithms` \"ours\"",
                    field("cc"),
                    f.cc
                )));
            }
            crate::endpoint::check_sender(&f.cc, f)
                .map_err(|e| SpecError(format!("traffic[{i}].{e}")))?;
            check_path(&field("path"), &f.path, n)?;
            check_path(&field("ack_path"), &f.ack_path, n)?;
        } else {
            if CrossKind::parse(&t.kind, t.mean_on, t.mean_off, t.shape).is_none() {
                return Err(SpecError(format!(
                    "{}: unknown kind {:?}; allowed: \"cbr\", \"poisson\", \"onoff\", \"transfers\"",
                    field("kind"),
                    t.kind
                )));
            }
            if !(28..=crate::hosts::MTU as u32).contains(&t.packet_size) {
                return Err(SpecError(format!(
                    "{}: must be in [28, {}] B on the real datapath (an IPv4/UDP packet within the \
                     hosts' MTU), got {}",
                    field("packet_size"),
                    crate::hosts::MTU,
                    t.packet_size
                )));
            }
            check_path(&field("path"), &t.path, n)?;
        }
    }
    Ok(())
}

/// The emulator with the spec's links, every flow's route (keyed by its port), every transfers
/// source's port range and every unresponsive cross-traffic source.
pub fn build_emulator(spec: &RunSpec) -> Result<Emulator, SpecError> {
    let packet_size = spec.flows.first().map_or(1500, |f| f.transport.packet_size);
    let links = spec
        .links
        .iter()
        .map(|l| LinkConfig::from_spec(l, packet_size))
        .collect();
    // Packets no flow's port matches (a stray ICMP error, the hosts' own chatter) take the route the
    // first flow's packets from that side take; a dumbbell's links 0 and 1 without flows.
    let defaults = match spec.flows.first() {
        Some(f) if reverse(f) => [f.ack_path.clone(), f.path.clone()],
        Some(f) => [f.path.clone(), f.ack_path.clone()],
        None if spec.links.len() >= 2 => [vec![0], vec![1]],
        None => [Vec::new(), Vec::new()],
    };
    let mut emu = Emulator::with_links(links, defaults, spec.seed)
        .map_err(|e| SpecError(format!("links.queue_params: {e}")))?;
    for (i, f) in spec.flows.iter().enumerate() {
        let p = flow_port(i);
        emu.add_flow_ports(p, p, &flow_route(f));
    }
    let mut sources = 0;
    for (i, t) in spec.traffic.iter().enumerate() {
        match (t.kind.as_str(), t.flow.as_deref()) {
            ("transfers", Some(f)) => {
                let lo = transfer_base(sources);
                emu.add_flow_ports(lo, lo + TRANSFER_PORTS - 1, &flow_route(f));
                sources += 1;
            }
            _ => {
                let kind = CrossKind::parse(&t.kind, t.mean_on, t.mean_off, t.shape)
                    .ok_or_else(|| SpecError(format!("traffic[{i}].kind: {:?}", t.kind)))?;
                // The simulator's stream for source i: the same seed gives the same emission times.
                let rng = Stream::Traffic.rng(spec.seed, i as u64);
                let law =
                    CrossLaw::new(kind, t.rate_bps, t.packet_size, t.stop.map(from_secs), rng);
                emu.add_cross(i, law, from_secs(t.start), t.path.clone(), t.packet_size);
            }
        }
    }
    Ok(emu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{LinkSpec, StartSpec, TrafficSpec, TransportSpec};

    fn link() -> LinkSpec {
        serde_json::from_value(serde_json::json!({
            "rate_bps": 10e6, "delay": 0.005, "buffer_pkts": 100, "buffer_bytes": null, "queue": "droptail"
        }))
        .unwrap()
    }

    fn flow(path: Vec<usize>, ack: Vec<usize>) -> FlowSpec {
        FlowSpec {
            group: 0,
            cc: "newreno".into(),
            params: Default::default(),
            path,
            ack_path: ack,
            extra_delay_fwd: 0.01,
            extra_delay_rev: 0.01,
            rtt: 0.04,
            start: StartSpec::At(0.0),
            stop: None,
            size: None,
            transport: TransportSpec::default(),
        }
    }

    fn spec(flows: Vec<FlowSpec>, traffic: Vec<TrafficSpec>) -> RunSpec {
        RunSpec {
            name: "t".into(),
            seed: 1,
            duration: 1.0,
            sample_interval: 0.1,
            measure: [0.0, 1.0],
            links: vec![link(), link(), link(), link()],
            flows,
            traffic,
            trace_packets: false,
            limits: None,
        }
    }

    fn cross(kind: &str, path: Vec<usize>) -> TrafficSpec {
        TrafficSpec {
            kind: kind.into(),
            rate_bps: 1e6,
            packet_size: 1500,
            start: 0.0,
            stop: None,
            path,
            mean_on: None,
            mean_off: None,
            shape: None,
            mean_size: (kind == "transfers").then_some(1e5),
            flow: (kind == "transfers").then(|| Box::new(flow(vec![0], vec![2]))),
        }
    }

    fn err(s: &RunSpec, loopback: bool) -> String {
        validate(s, loopback).unwrap_err().0
    }

    /// A parking lot's paths and every traffic kind pass; what cannot run is refused naming the field.
    #[test]
    fn paths_and_traffic_are_checked_naming_the_field() {
        let ok = spec(
            vec![flow(vec![0, 1], vec![3, 2]), flow(vec![1], vec![3])],
            vec![cross("poisson", vec![1]), cross("transfers", vec![])],
        );
        assert!(validate(&ok, false).is_ok());
        assert!(
            err(&ok, true).starts_with("traffic[1].kind: \"transfers\" needs the namespace mode")
        );
        let far = spec(vec![flow(vec![0, 4], vec![3])], vec![]);
        assert!(err(&far, false).starts_with("flows[0].path: link 4 does not exist"));
        let twice = spec(vec![flow(vec![0], vec![2, 2])], vec![]);
        assert!(err(&twice, false).starts_with("flows[0].ack_path:"));
        let mut k = cross("transfers", vec![]);
        k.flow.as_mut().unwrap().cc = "kernel:cubic".into();
        assert!(err(&spec(vec![], vec![k]), false).starts_with("traffic[0].cc:"));
        let unknown = spec(vec![], vec![cross("bursty", vec![0])]);
        assert!(err(&unknown, false).starts_with("traffic[0].kind: unknown kind"));
        let mut big = cross("cbr", vec![0]);
        big.packet_size = 9000;
        assert!(err(&spec(vec![], vec![big]), false).starts_with("traffic[0].packet_size:"));
        let many = spec(vec![], (0..9).map(|_| cross("transfers", vec![])).collect());
        assert!(err(&many, false).starts_with("traffic[8].kind: at most 8"));
    }

    /// Only a dumbbell-style reverse flow puts its sender on host B; its route enters from that side.
    #[test]
    fn only_the_dumbbell_reverse_flow_sends_from_host_b() {
        assert!(reverse(&flow(vec![1], vec![0])));
        assert!(!reverse(&flow(vec![0, 1], vec![3, 2])));
        let r = flow_route(&flow(vec![1], vec![0]));
        assert_eq!(
            (r.data_side, r.data_hops, r.ack_hops),
            (Dir::Rev, vec![1], vec![0])
        );
        assert_eq!(r.data_delay, 10_000_000);
    }
}
