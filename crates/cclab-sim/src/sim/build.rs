//! Building a simulation from a validated spec: links (with their queue disciplines), delay lines,
//! the route arena (every flow's data and ACK route, every cross-traffic source's route), endpoints
//! and cross-traffic sources, and the first events.

use super::link::Link;
use super::measure::{FlowSnap, LinkSnap, FLOW_COLUMNS, LINK_COLUMNS};
use super::packet::{Hop, Pipe};
use super::{Flow, Simulation};
use crate::events::{Event, EventQueue};
use crate::result::{Conservation, RunResult, SeriesBuilder, Trace};
use crate::spec::{FlowSpec, LinkSpec, RunSpec, SpecError, StartSpec};
use crate::traffic::{CrossSource, TransferSource};
use cclab_cc::aqm::BufferLimit;
use cclab_cc::registry::{build_queue, build_sender, flow_seed, LinkEnv, SenderEnv};
use cclab_cc::rng::{self, Stream};
use cclab_cc::time::{from_secs, Nanos};
use cclab_cc::trace_link::{TraceService, OPPORTUNITY_BYTES};
use cclab_transport::{Config, Receiver, Sender};

/// The transport settings the simulator gives flow `f` (sender and receiver): the spec's one
/// resolution ([`FlowSpec::transport_config`]) with the simulator's packets, `mss` payload and
/// `packet_size − mss` header.
pub fn transport_config(f: &FlowSpec) -> Config {
    let t = &f.transport;
    f.transport_config(t.packet_size - t.mss, t.mss)
}

/// The delay line for a given delay, shared by every route that uses that delay: a pure delay is FIFO
/// whoever enters it, so one pipe (and one pending event) serves all flows with the same access delay,
/// which keeps the event heap small with many flows (100 flows at 3 RTTs: 6 lines instead of 200).
fn line_for(lines: &mut Vec<(Nanos, Pipe)>, delay: Nanos) -> u32 {
    if let Some(k) = lines.iter().position(|(d, _)| *d == delay) {
        return k as u32;
    }
    lines.push((delay, Pipe::default()));
    lines.len() as u32 - 1
}

/// Link `i` of the spec, with its queue discipline built by the registry.
fn build_link(spec: &RunSpec, i: usize, l: &LinkSpec) -> Result<Link, SpecError> {
    let limit = BufferLimit {
        pkts: l.buffer_pkts,
        bytes: l.buffer_bytes,
    };
    let packet_size = spec.flows.first().map_or(1500, |f| f.transport.packet_size);
    let env = LinkEnv {
        rate_bps: l.rate_bps,
        limit,
        packet_size,
    };
    let qdisc = build_queue(&l.queue, &l.queue_params, &env)
        .map_err(|e| SpecError::new(format!("links[{i}].{}", e.field), e.message))?;
    let schedule = l
        .loss_schedule
        .iter()
        .map(|&(t, p)| (from_secs(t), p))
        .collect();
    let mut link = Link::new(
        l.rate_bps,
        from_secs(l.delay),
        qdisc,
        Stream::Link.rng(spec.seed, i as u64),
        l.loss,
        l.loss_data_only,
        schedule,
    );
    link.trace =
        (!l.trace_ms.is_empty()).then(|| TraceService::new(&l.trace_ms, OPPORTUNITY_BYTES));
    link.impair = l.impairments();
    link.delay_schedule = l
        .delay_schedule
        .iter()
        .map(|&(t, d)| (from_secs(t), from_secs(d)))
        .collect();
    Ok(link)
}

/// The route arena and the delay lines it refers to.
#[derive(Default)]
struct Routes {
    hops: Vec<Hop>,
    lines: Vec<(Nanos, Pipe)>,
}

impl Routes {
    /// Appends a route: an optional access delay line, the links of `path`, another optional access
    /// delay line, then the host. Returns where it starts.
    fn push(&mut self, before: f64, path: &[usize], after: f64) -> u32 {
        let at = self.hops.len() as u32;
        if before > 0.0 {
            let line = line_for(&mut self.lines, from_secs(before));
            self.hops.push(Hop::Line(line));
        }
        self.hops.extend(path.iter().map(|&l| Hop::Link(l as u32)));
        if after > 0.0 {
            let line = line_for(&mut self.lines, from_secs(after));
            self.hops.push(Hop::Line(line));
        }
        self.hops.push(Hop::Host);
        at
    }
}

/// Flow `i` of the spec: its algorithm (built by the registry), endpoints and routes (data: access
/// delay first; ACKs: access delay last). The algorithm's warnings go to `warnings`.
fn build_flow(
    spec: &RunSpec,
    i: usize,
    f: &FlowSpec,
    routes: &mut Routes,
    warnings: &mut Vec<String>,
) -> Result<Flow, SpecError> {
    let t = &f.transport;
    let env = SenderEnv {
        mss: t.mss,
        packet_size: t.packet_size,
        initial_cwnd: t.initial_cwnd,
        seed: flow_seed(spec.seed, i as u64),
        hystart: t.hystart,
    };
    let built = build_sender(&f.cc, &f.params, &env).map_err(|e| {
        let field = if e.field == "cc" {
            format!("flows[{i}].cc")
        } else {
            format!("flows[{i}].params.{}", e.field)
        };
        SpecError::new(field, e.message)
    })?;
    for w in built.cc.warnings() {
        warnings.push(format!("flows[{i}] ({}): {w}", f.cc));
    }
    let cfg = transport_config(f);
    let mut frng = Stream::FlowStart.rng(spec.seed, i as u64);
    let start = match f.start {
        StartSpec::At(s) => s,
        StartSpec::Uniform([lo, hi]) => lo + (hi - lo) * rng::uniform(&mut frng),
    };
    // Window statistics: the endpoints record delays in the measurement window (as snapshot() bounds it).
    let (w0, w1) = (
        from_secs(spec.measure[0]),
        from_secs(spec.measure[1]).min(from_secs(spec.duration)),
    );
    let mut receiver = Receiver::new(&cfg);
    receiver.collect_window_stats(w0, w1);
    let mut sender = Sender::new(cfg, built.cc, f.size, 0);
    sender.collect_window_stats(w0, w1);
    let fwd = routes.push(f.extra_delay_fwd, &f.path, 0.0);
    let rev = routes.push(0.0, &f.ack_path, f.extra_delay_rev);
    Ok(Flow {
        group: f.group,
        cc_name: f.cc.clone(),
        rtt: f.rtt,
        start: from_secs(start),
        stop: f.stop.map(from_secs),
        receiver,
        sender,
        fwd,
        rev,
        ect: t.ecn,
        started: false,
        stimer: None,
        sgen: 0,
        rtimer: None,
        rgen: 0,
        finish: None,
        dropped: 0,
        dropped_window: 0,
        header: t.packet_size - t.mss,
    })
}

/// A short transfer of `size` bytes from source `s`'s template, arriving (and starting) at `now`: its
/// algorithm seeded apart from every configured flow's and every other transfer's.
#[allow(clippy::too_many_arguments)]
pub(super) fn transfer(
    tpl: &FlowSpec,
    s: usize,
    n: u64,
    size: u64,
    now: Nanos,
    fwd: u32,
    rev: u32,
    seed: u64,
) -> Flow {
    let t = &tpl.transport;
    let env = SenderEnv {
        mss: t.mss,
        packet_size: t.packet_size,
        initial_cwnd: t.initial_cwnd,
        seed: flow_seed(seed, (1 << 40) | (((s as u64) << 32) ^ n)),
        hystart: t.hystart,
    };
    let built = build_sender(&tpl.cc, &tpl.params, &env).expect("validated with the spec");
    let cfg = transport_config(tpl);
    Flow {
        group: s as u32,
        cc_name: String::new(),
        rtt: tpl.rtt,
        start: now,
        stop: None,
        receiver: Receiver::new(&cfg),
        sender: Sender::new(cfg, built.cc, Some(size), 0),
        fwd,
        rev,
        ect: t.ecn,
        started: true,
        stimer: None,
        sgen: 0,
        rtimer: None,
        rgen: 0,
        finish: None,
        dropped: 0,
        dropped_window: 0,
        header: t.packet_size - t.mss,
    }
}

impl Simulation {
    /// The algorithms' warnings found while building (before running).
    pub fn warnings(&self) -> Vec<String> {
        self.result.warnings.clone()
    }

    /// Validates `spec` ([`RunSpec::validate`]) and builds the simulation; an algorithm or queue
    /// discipline that rejects its parameters is an error naming the field too.
    pub fn new(spec: &RunSpec) -> Result<Simulation, SpecError> {
        spec.validate()?;
        let links = spec
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| build_link(spec, i, l))
            .collect::<Result<Vec<_>, _>>()?;
        let nl = links.len();
        let mut routes = Routes::default();
        let mut warnings = Vec::new();
        let flows = spec
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| build_flow(spec, i, f, &mut routes, &mut warnings))
            .collect::<Result<Vec<_>, _>>()?;
        let mut cross = Vec::new();
        let mut xsrc = Vec::new();
        for (i, t) in spec.traffic.iter().enumerate() {
            let rng = Stream::Traffic.rng(spec.seed, i as u64);
            match t.flow.as_deref().filter(|_| t.kind == "transfers") {
                Some(f) => {
                    // Every transfer builds its algorithm when it arrives: a bad one is refused now.
                    let env = SenderEnv {
                        mss: f.transport.mss,
                        packet_size: f.transport.packet_size,
                        initial_cwnd: f.transport.initial_cwnd,
                        seed: 0,
                        hystart: f.transport.hystart,
                    };
                    build_sender(&f.cc, &f.params, &env).map_err(|e| {
                        let field = if e.field == "cc" {
                            format!("traffic[{i}].cc")
                        } else {
                            format!("traffic[{i}].params.{}", e.field)
                        };
                        SpecError::new(field, e.message)
                    })?;
                    let fwd = routes.push(f.extra_delay_fwd, &f.path, 0.0);
                    let rev = routes.push(0.0, &f.ack_path, f.extra_delay_rev);
                    xsrc.push(TransferSource::new(t, fwd, rev, rng));
                }
                None => {
                    let at = routes.push(0.0, &t.path, 0.0);
                    cross.push(CrossSource::new(t, at, rng));
                }
            }
        }
        let result = RunResult {
            name: spec.name.clone(),
            seed: spec.seed,
            measure: spec.measure,
            warnings,
            ..Default::default()
        };
        let [m0, m1] = spec.measure;
        let mut sim = Simulation {
            now: 0,
            end: from_secs(spec.duration),
            sample_every: from_secs(spec.sample_interval).max(1),
            measure: [from_secs(m0), from_secs(m1).min(from_secs(spec.duration))],
            ev: EventQueue::default(),
            slab: Vec::with_capacity(1024),
            routes: routes.hops,
            free: Vec::new(),
            links,
            lines: routes.lines,
            fsnap: [
                vec![FlowSnap::default(); flows.len()],
                vec![FlowSnap::default(); flows.len()],
            ],
            flows,
            lsnap: [vec![LinkSnap::default(); nl], vec![LinkSnap::default(); nl]],
            cross,
            xsrc,
            xfers: Vec::new(),
            seed: spec.seed,
            in_window: false,
            cons: Conservation::default(),
            events: 0,
            trace: if spec.trace_packets {
                Some(Trace::default())
            } else {
                None
            },
            result,
            fseries: SeriesBuilder::with_columns(FLOW_COLUMNS),
            lseries: SeriesBuilder::with_columns(LINK_COLUMNS),
            state_buf: Vec::with_capacity(16),
            budget: spec.limits.unwrap_or_default(),
            mem_state: cclab_spec::estimate::estimate(spec).memory_state,
            log_scan: Default::default(),
            stopped: None,
        };
        for i in 0..sim.flows.len() {
            let f = &sim.flows[i];
            sim.ev.push(f.start, Event::FlowStart(i as u32));
            if let Some(s) = f.stop {
                sim.ev.push(s, Event::FlowStop(i as u32));
            }
        }
        for i in 0..sim.cross.len() {
            sim.ev.push(sim.cross[i].start, Event::Traffic(i as u32));
        }
        for i in 0..sim.xsrc.len() {
            sim.ev
                .push(sim.xsrc[i].start, Event::TransferArrival(i as u32));
        }
        for (i, l) in sim.links.iter().enumerate() {
            for (k, &(t, _)) in l.schedule.iter().enumerate() {
                sim.ev.push(t, Event::LossChange(i as u32, k as u32));
            }
        }
        sim.ev.push(sim.measure[0], Event::Measure(0));
        sim.ev.push(sim.measure[1], Event::Measure(1));
        sim.ev.push(0, Event::Sample);
        Ok(sim)
    }
}
