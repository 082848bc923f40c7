//! The simulation: links, delay lines, endpoints and cross traffic wired by per-flow routes, driven by
//! one event loop.
//!
//! Cost model (htsim-style): a link keeps one pending event for the packet in service and one for the
//! earliest packet in its propagation pipe (propagation is FIFO, so the pipe is a queue); access delays
//! are FIFO delay lines with one pending event each; endpoint timers are lazily rescheduled (a pending
//! timer event that fires early just re-arms), so ACK processing never touches the heap for timers.
//! Packets live in a slab with a free list: no allocation per packet in steady state.

use crate::events::{Event, EventQueue};
use crate::result::*;
use crate::spec::{RunSpec, StartSpec};
use crate::traffic::CrossSource;
use cclab_cc::aqm::{BufferLimit, QueueDiscipline, QueueLen, RouterPacket, Verdict};
use cclab_cc::registry::{build_queue, build_sender, flow_seed, LinkEnv, SenderEnv};
use cclab_cc::rng::{self, SimRng};
use cclab_cc::time::{from_secs, to_secs, tx_time, Nanos};
use cclab_transport::{AckSegment, Config, DataSegment, Receiver, Sender};
use std::collections::VecDeque;
use std::time::Instant;

/// A spec the simulator cannot run (should have been caught by Python's validation).
#[derive(Clone, Debug, PartialEq)]
pub struct SimError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}
impl std::error::Error for SimError {}

fn err(field: impl Into<String>, message: impl Into<String>) -> SimError {
    SimError {
        field: field.into(),
        message: message.into(),
    }
}

#[derive(Clone, Copy, Debug)]
enum Body {
    Data(DataSegment),
    Ack(AckSegment),
    Cross,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Data,
    Ack,
    Cross,
}

/// What the network touches at every hop (24 bytes). The transport segment itself ([`Body`], ~100
/// bytes for an ACK with SACK blocks) lives in a parallel slab touched only when the packet is created
/// and delivered: per-hop work then walks a small, cache-resident array (measured in
/// docs/performance.md).
#[derive(Clone, Copy, Debug)]
struct Packet {
    /// Index in `Simulation::routes` of the hop the packet is at (advanced as it moves on).
    at: u32,
    /// Flow index (data/ACK) or cross-traffic source index.
    owner: u32,
    bytes: u32,
    kind: Kind,
    /// Data packets' header flags (for queue disciplines).
    flags: u8,
    ect: bool,
    ce: bool,
    enq_time: Nanos,
    body: Body,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hop {
    Link(u32),
    Line(u32),
    /// Deliver to the flow's receiver (data) / sender (ACK) / sink (cross traffic).
    Host,
}

/// Packets in flight on a wire or delay line, FIFO by arrival time.
#[derive(Default)]
struct Pipe {
    q: VecDeque<(Nanos, u32)>,
}

struct Link {
    rate_bps: f64,
    delay: Nanos,
    qdisc: Box<dyn QueueDiscipline>,
    queue: VecDeque<u32>,
    qlen: QueueLen,
    busy: bool,
    /// The packet being serialised.
    in_service: u32,
    pipe: Pipe,
    rng: SimRng,
    loss: f64,
    loss_data_only: bool,
    schedule: Vec<(Nanos, f64)>,
    // counters (whole run)
    arrivals: u64,
    drops: u64,
    marks: u64,
    random_losses: u64,
    tx_bytes: u64,
    tx_pkts: u64,
    data_pkts_tx: u64,
    /// ∫ queue length (packets) dt, in packet·ns, up to `q_last`.
    q_integral: u128,
    q_last: Nanos,
    max_q: u64,
    /// Queueing-delay histogram over the window: 10 µs bins to 100 ms, then 1 ms bins to 10 s.
    qdelay_hist: Vec<u64>,
    qdelay_sum: f64,
    qdelay_n: u64,
}

const HIST_FINE: usize = 10_000; // 10 µs × 10k = 100 ms
const HIST_COARSE: usize = 9_900; // 1 ms bins from 100 ms to 10 s

fn hist_bin(d: Nanos) -> usize {
    let us10 = d / 10_000;
    if (us10 as usize) < HIST_FINE {
        us10 as usize
    } else {
        let ms = (d / 1_000_000) as usize; // ≥ 100
        (HIST_FINE + (ms - 100)).min(HIST_FINE + HIST_COARSE - 1)
    }
}

fn hist_value(bin: usize) -> f64 {
    if bin < HIST_FINE {
        (bin as f64 + 0.5) * 10e-6
    } else {
        (100 + bin - HIST_FINE) as f64 * 1e-3 + 0.5e-3
    }
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

#[inline(always)]
fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults and has no architectural effect (and `p` is a
    // valid reference anyway). SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            p as *const T as *const i8,
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The fixed columns of the per-flow time series, in the order `sample` fills them; algorithm state
/// keys follow.
const FLOW_COLUMNS: &[&str] = &[
    "t",
    "flow",
    "cwnd",
    "ssthresh",
    "pacing_bps",
    "srtt",
    "min_rtt",
    "in_flight",
    "delivered_bytes",
    "sent_bytes",
    "retransmits",
    "timeouts",
];
const FLOW_COLUMNS_T: usize = 0;
const FLOW_COLUMNS_FLOW: usize = 1;
const FLOW_COLUMNS_CWND: usize = 2;
/// The fixed columns of the per-link time series; queue-discipline state keys follow.
const LINK_COLUMNS: &[&str] = &[
    "t",
    "link",
    "queue_pkts",
    "queue_bytes",
    "drops",
    "marks",
    "random_losses",
    "tx_bytes",
    "arrivals",
];

struct Flow {
    group: u32,
    cc_name: String,
    rtt: f64,
    start: Nanos,
    stop: Option<Nanos>,
    sender: Sender,
    receiver: Receiver,
    /// Start of the data route / ACK route in `Simulation::routes`.
    fwd: u32,
    rev: u32,
    ect: bool,
    started: bool,
    stimer: Option<Nanos>,
    sgen: u32,
    rtimer: Option<Nanos>,
    rgen: u32,
    finish: Option<Nanos>,
    dropped: u64,
    /// Header bytes on the wire (ACKs are this long; data adds the payload).
    header: u32,
}

#[derive(Clone, Copy, Default)]
struct FlowSnap {
    delivered: u64,
    sent_bytes: u64,
    rtt_sum: u128,
    rtt_n: u64,
}

#[derive(Clone, Copy, Default)]
struct LinkSnap {
    tx_bytes: u64,
    drops: u64,
    marks: u64,
    random_losses: u64,
    arrivals: u64,
    q_integral: u128,
}

pub struct Simulation {
    now: Nanos,
    end: Nanos,
    sample_every: Nanos,
    measure: [Nanos; 2],
    ev: EventQueue,
    slab: Vec<Packet>,
    /// Every route (flows' data and ACK routes, cross traffic's), each ending in `Hop::Host`.
    routes: Vec<Hop>,
    free: Vec<u32>,
    links: Vec<Link>,
    lines: Vec<(Nanos, Pipe)>,
    flows: Vec<Flow>,
    cross: Vec<CrossSource>,
    in_window: bool,
    fsnap: [Vec<FlowSnap>; 2],
    lsnap: [Vec<LinkSnap>; 2],
    cons: Conservation,
    events: u64,
    trace: Option<Vec<TraceRecord>>,
    result: RunResult,
    fseries: SeriesBuilder,
    lseries: SeriesBuilder,
    state_buf: Vec<(&'static str, f64)>,
}

impl Simulation {
    pub fn new(spec: &RunSpec) -> Result<Simulation, SimError> {
        if !(spec.duration > 0.0 && spec.duration.is_finite()) {
            return Err(err(
                "duration",
                format!("must be > 0, got {}", spec.duration),
            ));
        }
        // NaN is rejected too.
        if spec.sample_interval.is_nan() || spec.sample_interval <= 0.0 {
            return Err(err(
                "sample_interval",
                format!("must be > 0, got {}", spec.sample_interval),
            ));
        }
        let [m0, m1] = spec.measure;
        if !(0.0 <= m0 && m0 < m1 && m1 <= spec.duration + 1e-9) {
            return Err(err(
                "measure",
                format!("must satisfy 0 <= start < end <= duration, got [{m0}, {m1}]"),
            ));
        }
        let mut links = Vec::with_capacity(spec.links.len());
        for (i, l) in spec.links.iter().enumerate() {
            if !(l.rate_bps > 0.0 && l.rate_bps.is_finite()) {
                return Err(err(
                    format!("links[{i}].rate_bps"),
                    format!("must be > 0, got {}", l.rate_bps),
                ));
            }
            if l.delay.is_nan() || l.delay < 0.0 {
                return Err(err(
                    format!("links[{i}].delay"),
                    format!("must be >= 0, got {}", l.delay),
                ));
            }
            if l.buffer_pkts == Some(0) || l.buffer_bytes == Some(0) {
                return Err(err(format!("links[{i}].buffer"), "must be > 0"));
            }
            if !(0.0..=1.0).contains(&l.loss) {
                return Err(err(
                    format!("links[{i}].loss"),
                    format!("must be in [0, 1], got {}", l.loss),
                ));
            }
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
                .map_err(|e| err(format!("links[{i}].{}", e.field), e.message))?;
            let mut schedule = Vec::new();
            for (k, &(t, p)) in l.loss_schedule.iter().enumerate() {
                if !(0.0..=1.0).contains(&p) || t < 0.0 {
                    return Err(err(
                        format!("links[{i}].loss_schedule[{k}]"),
                        "needs t >= 0 and p in [0, 1]",
                    ));
                }
                schedule.push((from_secs(t), p));
            }
            links.push(Link {
                rate_bps: l.rate_bps,
                delay: from_secs(l.delay),
                qdisc,
                queue: VecDeque::new(),
                qlen: QueueLen::default(),
                busy: false,
                in_service: 0,
                pipe: Pipe::default(),
                rng: rng::stream(spec.seed, i as u64),
                loss: l.loss,
                loss_data_only: l.loss_data_only,
                schedule,
                arrivals: 0,
                drops: 0,
                marks: 0,
                random_losses: 0,
                tx_bytes: 0,
                tx_pkts: 0,
                data_pkts_tx: 0,
                q_integral: 0,
                q_last: 0,
                max_q: 0,
                qdelay_hist: vec![0; HIST_FINE + HIST_COARSE],
                qdelay_sum: 0.0,
                qdelay_n: 0,
            });
        }
        let nl = links.len();
        let check_path = |path: &[usize], field: String| -> Result<(), SimError> {
            for (k, &l) in path.iter().enumerate() {
                if l >= nl {
                    return Err(err(
                        format!("{field}[{k}]"),
                        format!("link {l} does not exist ({nl} links)"),
                    ));
                }
            }
            Ok(())
        };
        let mut lines = Vec::new();
        let mut routes = Vec::new();
        let mut flows = Vec::with_capacity(spec.flows.len());
        let mut warnings = Vec::new();
        for (i, f) in spec.flows.iter().enumerate() {
            check_path(&f.path, format!("flows[{i}].path"))?;
            check_path(&f.ack_path, format!("flows[{i}].ack_path"))?;
            let t = &f.transport;
            if t.mss == 0 || t.packet_size <= t.mss {
                return Err(err(
                    format!("flows[{i}].transport"),
                    "needs 0 < mss < packet_size",
                ));
            }
            let env = SenderEnv {
                mss: t.mss,
                packet_size: t.packet_size,
                initial_cwnd: t.initial_cwnd,
                seed: flow_seed(spec.seed, i as u64),
            };
            let built = build_sender(&f.cc, &f.params, &env).map_err(|e| {
                let field = if e.field == "cc" {
                    format!("flows[{i}].cc")
                } else {
                    format!("flows[{i}].params.{}", e.field)
                };
                err(field, e.message)
            })?;
            for w in built.cc.warnings() {
                warnings.push(format!("flows[{i}] ({}): {w}", f.cc));
            }
            let recovery = built.recovery.unwrap_or(if t.sack {
                cclab_cc::cc::Recovery::Sack
            } else {
                cclab_cc::cc::Recovery::NewReno
            });
            let cfg = Config {
                mss: t.mss,
                header_bytes: t.packet_size - t.mss,
                initial_cwnd: t.initial_cwnd,
                delayed_ack: t.delayed_ack.max(1),
                delack_timeout: from_secs(t.delack_timeout),
                min_rto: from_secs(t.min_rto),
                sack: t.sack || recovery == cclab_cc::cc::Recovery::Sack,
                recovery,
                max_window: t.max_window.unwrap_or(Config::default().max_window).max(1),
                ..Config::default()
            };
            let mut frng = rng::stream(spec.seed, 1_000_000 + i as u64);
            let start = match f.start {
                StartSpec::At(s) => s,
                StartSpec::Uniform([lo, hi]) => lo + (hi - lo) * rng::uniform(&mut frng),
            };
            let mut fwd = Vec::new();
            let fwd_at = routes.len() as u32;
            if f.extra_delay_fwd > 0.0 {
                fwd.push(Hop::Line(line_for(
                    &mut lines,
                    from_secs(f.extra_delay_fwd),
                )));
            }
            fwd.extend(f.path.iter().map(|&l| Hop::Link(l as u32)));
            fwd.push(Hop::Host);
            let mut rev: Vec<Hop> = f.ack_path.iter().map(|&l| Hop::Link(l as u32)).collect();
            if f.extra_delay_rev > 0.0 {
                rev.push(Hop::Line(line_for(
                    &mut lines,
                    from_secs(f.extra_delay_rev),
                )));
            }
            rev.push(Hop::Host);
            routes.extend_from_slice(&fwd);
            let rev_at = routes.len() as u32;
            routes.extend_from_slice(&rev);
            flows.push(Flow {
                group: f.group,
                cc_name: f.cc.clone(),
                rtt: f.rtt,
                start: from_secs(start),
                stop: f.stop.map(from_secs),
                receiver: Receiver::new(&cfg),
                sender: Sender::new(cfg, built.cc, f.size, 0),
                fwd: fwd_at,
                rev: rev_at,
                ect: t.ecn,
                started: false,
                stimer: None,
                sgen: 0,
                rtimer: None,
                rgen: 0,
                finish: None,
                dropped: 0,
                header: t.packet_size - t.mss,
            });
        }
        let mut cross = Vec::new();
        for (i, t) in spec.traffic.iter().enumerate() {
            check_path(&t.path, format!("traffic[{i}].path"))?;
            let mut route: Vec<Hop> = t.path.iter().map(|&l| Hop::Link(l as u32)).collect();
            route.push(Hop::Host);
            let at = routes.len() as u32;
            routes.extend_from_slice(&route);
            cross.push(
                CrossSource::new(t, at, rng::stream(spec.seed, 2_000_000 + i as u64))
                    .map_err(|m| err(format!("traffic[{i}]"), m))?,
            );
        }
        let result = RunResult {
            name: spec.name.clone(),
            seed: spec.seed,
            measure: spec.measure,
            warnings,
            ..Default::default()
        };
        let mut sim = Simulation {
            now: 0,
            end: from_secs(spec.duration),
            sample_every: from_secs(spec.sample_interval).max(1),
            measure: [from_secs(m0), from_secs(m1).min(from_secs(spec.duration))],
            ev: EventQueue::default(),
            slab: Vec::with_capacity(1024),
            routes,
            free: Vec::new(),
            links,
            lines,
            fsnap: [
                vec![FlowSnap::default(); flows.len()],
                vec![FlowSnap::default(); flows.len()],
            ],
            flows,
            lsnap: [vec![LinkSnap::default(); nl], vec![LinkSnap::default(); nl]],
            cross,
            in_window: false,
            cons: Conservation::default(),
            events: 0,
            trace: if spec.trace_packets {
                Some(Vec::new())
            } else {
                None
            },
            result,
            fseries: SeriesBuilder::with_columns(FLOW_COLUMNS),
            lseries: SeriesBuilder::with_columns(LINK_COLUMNS),
            state_buf: Vec::with_capacity(16),
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

    /// Runs to the end. `progress` is called with the simulated time (seconds) at most every ~0.25 s
    /// of wall time; returning false aborts the run.
    pub fn run(mut self, mut progress: Option<&mut dyn FnMut(f64) -> bool>) -> RunResult {
        let wall0 = Instant::now();
        let mut last_report = wall0;
        let mut aborted = false;
        while let Some((t, ev)) = self.ev.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
            if self.events & 0xFFFF == 0 {
                if let Some(cb) = progress.as_mut() {
                    let w = Instant::now();
                    if w.duration_since(last_report).as_secs_f64() >= 0.25 {
                        last_report = w;
                        if !cb(to_secs(self.now)) {
                            aborted = true;
                            break;
                        }
                    }
                }
            }
        }
        let wall = wall0.elapsed().as_secs_f64();
        if !aborted {
            self.now = self.end;
        }
        self.finish(wall, aborted)
    }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::TxDone(l) => self.tx_done(l as usize),
            Event::LinkArrive(l) => self.link_arrive(l as usize),
            Event::LineArrive(d) => self.line_arrive(d as usize),
            Event::SenderTimer(f, g) => {
                let fl = &mut self.flows[f as usize];
                if g == fl.sgen {
                    fl.stimer = None;
                    fl.sender.handle_timeout(self.now);
                    self.pump_sender(f as usize);
                }
            }
            Event::ReceiverTimer(f, g) => {
                let fl = &mut self.flows[f as usize];
                if g == fl.rgen {
                    fl.rtimer = None;
                    fl.receiver.handle_timeout(self.now);
                    self.pump_receiver(f as usize);
                }
            }
            Event::FlowStart(f) => {
                self.flows[f as usize].started = true;
                self.pump_sender(f as usize);
            }
            Event::FlowStop(f) => {
                self.flows[f as usize].sender.stop();
            }
            Event::Traffic(s) => self.cross_send(s as usize),
            Event::Sample => {
                self.sample();
                let next = self.now + self.sample_every;
                if next <= self.end {
                    self.ev.push(next, Event::Sample);
                }
            }
            Event::Measure(k) => self.snapshot(k as usize),
            Event::LossChange(l, k) => {
                let link = &mut self.links[l as usize];
                link.loss = link.schedule[k as usize].1;
            }
        }
    }

    // ---- packets ----

    fn alloc(&mut self, mut p: Packet, body: Body) -> u32 {
        self.cons.injected += 1;
        p.body = body;
        if let Some(i) = self.free.pop() {
            self.slab[i as usize] = p;
            i
        } else {
            self.slab.push(p);
            (self.slab.len() - 1) as u32
        }
    }

    fn release(&mut self, i: u32) {
        self.free.push(i);
    }

    fn trace(&mut self, kind: u8, link: i32, i: u32) {
        if let Some(tr) = self.trace.as_mut() {
            let p = &self.slab[i as usize];
            let (flow, seq, pkt) = match self.slab[i as usize].body {
                Body::Data(d) => (p.owner as i32, d.seq, 0),
                Body::Ack(a) => (p.owner as i32, a.cum_ack, 1),
                Body::Cross => (-1 - p.owner as i32, 0, 2),
            };
            tr.push(TraceRecord {
                t: to_secs(self.now),
                kind,
                link,
                flow,
                seq,
                pkt,
            });
        }
    }

    /// Starts loading packet `n` (the next in some FIFO) into the cache: with a large network the packet
    /// has sat in a queue or on a wire for milliseconds and is no longer cached; the miss on it was the
    /// single largest cost of the loop (docs/performance.md). The next event on that FIFO runs after
    /// other events, so the load overlaps useful work.
    #[inline(always)]
    fn prefetch(&self, n: u32) {
        prefetch(&self.slab[n as usize]);
    }

    /// Moves packet `i` to its current hop.
    fn forward(&mut self, i: u32) {
        let hop = self.routes[self.slab[i as usize].at as usize];
        match hop {
            Hop::Link(l) => self.enqueue(l as usize, i),
            Hop::Line(d) => {
                let now = self.now;
                let (delay, pipe) = &mut self.lines[d as usize];
                let was_empty = pipe.q.is_empty();
                pipe.q.push_back((now + *delay, i));
                if was_empty {
                    let t = now + *delay;
                    self.ev.push(t, Event::LineArrive(d));
                }
            }
            Hop::Host => self.deliver(i),
        }
    }

    fn line_arrive(&mut self, d: usize) {
        let now = self.now;
        while let Some(&(t, i)) = self.lines[d].1.q.front() {
            if t > now {
                self.ev.push(t, Event::LineArrive(d as u32));
                break;
            }
            self.lines[d].1.q.pop_front();
            if let Some(&(_, n)) = self.lines[d].1.q.front() {
                self.prefetch(n);
            }
            self.slab[i as usize].at += 1;
            self.forward(i);
        }
    }

    fn link_arrive(&mut self, l: usize) {
        let now = self.now;
        while let Some(&(t, i)) = self.links[l].pipe.q.front() {
            if t > now {
                self.ev.push(t, Event::LinkArrive(l as u32));
                break;
            }
            self.links[l].pipe.q.pop_front();
            if let Some(&(_, n)) = self.links[l].pipe.q.front() {
                self.prefetch(n);
            }
            self.slab[i as usize].at += 1;
            self.forward(i);
        }
    }

    fn account_queue(link: &mut Link, now: Nanos) {
        link.q_integral += link.qlen.pkts as u128 * (now - link.q_last) as u128;
        link.q_last = now;
    }

    fn drop_packet(&mut self, i: u32, link: i32, kind: u8) {
        self.trace(kind, link, i);
        let p = self.slab[i as usize];
        if p.kind == Kind::Data {
            self.flows[p.owner as usize].dropped += 1;
        }
        self.cons.dropped += 1;
        self.release(i);
    }

    fn enqueue(&mut self, l: usize, i: u32) {
        let now = self.now;
        let link = &mut self.links[l];
        link.arrivals += 1;
        let p = &mut self.slab[i as usize];
        let is_data = p.kind == Kind::Data;
        let verdict = if link.loss > 0.0
            && (is_data || !link.loss_data_only)
            && rng::uniform(&mut link.rng) < link.loss
        {
            None
        } else {
            let mut dummy = 0u32;
            let (bytes, ect, flags) = (p.bytes, p.ect, p.flags);
            let fwd = match &mut p.body {
                Body::Data(d) => &mut d.fwd_field,
                _ => &mut dummy,
            };
            let mut rp = RouterPacket {
                bytes,
                ect,
                is_data,
                flags,
                fwd_field: fwd,
            };
            Some(link.qdisc.enqueue(now, &mut rp, link.qlen, &mut link.rng))
        };
        match verdict {
            None => {
                link.random_losses += 1;
                self.drop_packet(i, l as i32, 2);
                return;
            }
            Some(Verdict::Drop) => {
                link.drops += 1;
                self.drop_packet(i, l as i32, 1);
                return;
            }
            Some(Verdict::Mark) if p.ect => {
                p.ce = true;
                link.marks += 1;
            }
            Some(_) => {}
        }
        p.enq_time = now;
        let bytes = p.bytes;
        Self::account_queue(link, now);
        link.queue.push_back(i);
        link.qlen.pkts += 1;
        link.qlen.bytes += bytes as u64;
        link.max_q = link.max_q.max(link.qlen.pkts as u64);
        let busy = link.busy;
        self.trace(0, l as i32, i);
        if !busy {
            self.start_tx(l);
        }
    }

    fn start_tx(&mut self, l: usize) {
        let now = self.now;
        let in_window = self.in_window;
        let link = &mut self.links[l];
        let Some(i) = link.queue.pop_front() else {
            link.busy = false;
            return;
        };
        if let Some(&n) = link.queue.front() {
            prefetch(&self.slab[n as usize]);
        }
        let p = &self.slab[i as usize];
        Self::account_queue(link, now);
        link.qlen.pkts -= 1;
        link.qlen.bytes -= p.bytes as u64;
        link.qdisc.on_dequeue(now, p.bytes, link.qlen);
        if in_window {
            let d = now - p.enq_time;
            link.qdelay_hist[hist_bin(d)] += 1;
            link.qdelay_sum += to_secs(d);
            link.qdelay_n += 1;
        }
        link.busy = true;
        link.in_service = i;
        let done = now + tx_time(p.bytes as u64, link.rate_bps);
        self.ev.push(done, Event::TxDone(l as u32));
    }

    fn tx_done(&mut self, l: usize) {
        let now = self.now;
        let link = &mut self.links[l];
        let i = link.in_service;
        let delay = link.delay;
        if delay > 0 {
            let arrive = now + delay;
            // One pending LinkArrive per non-empty pipe: schedule only when the pipe was empty.
            if link.pipe.q.is_empty() {
                self.ev.push(arrive, Event::LinkArrive(l as u32));
            }
            link.pipe.q.push_back((arrive, i));
        }
        let p = &self.slab[i as usize];
        link.tx_bytes += p.bytes as u64;
        link.tx_pkts += 1;
        if p.kind == Kind::Data {
            link.data_pkts_tx += 1;
        }
        self.start_tx(l);
        if delay == 0 {
            // Zero propagation delay (a dumbbell whose delays are all in access lines): the packet is at
            // the far end now; handing it on directly saves an event per packet per link. Done after
            // the next transmission starts, which is the order the LinkArrive event would have run in.
            self.slab[i as usize].at += 1;
            self.forward(i);
        }
    }

    fn deliver(&mut self, i: u32) {
        self.trace(4, -1, i);
        self.cons.delivered += 1;
        let p = self.slab[i as usize];
        let body = self.slab[i as usize].body;
        self.release(i);
        let now = self.now;
        match body {
            Body::Data(mut d) => {
                d.ce = p.ce;
                let f = p.owner as usize;
                self.flows[f].receiver.handle_data(now, &d);
                self.pump_receiver(f);
            }
            Body::Ack(a) => {
                let f = p.owner as usize;
                self.flows[f].sender.handle_ack(now, &a);
                self.pump_sender(f);
            }
            Body::Cross => {}
        }
    }

    // ---- endpoints ----

    fn pump_sender(&mut self, f: usize) {
        let now = self.now;
        if !self.flows[f].started {
            return;
        }
        while let Some(seg) = self.flows[f].sender.poll_transmit(now) {
            let fl = &self.flows[f];
            let bytes = seg.wire_bytes(fl.header);
            let ect = fl.ect;
            let hdr = Packet {
                at: fl.fwd,
                owner: f as u32,
                bytes,
                kind: Kind::Data,
                flags: seg.flags,
                ect,
                ce: false,
                enq_time: 0,
                body: Body::Cross,
            };
            let i = self.alloc(hdr, Body::Data(seg));
            self.forward(i);
        }
        let fl = &mut self.flows[f];
        if fl.finish.is_none() && fl.sender.is_finished() {
            fl.finish = Some(now);
        }
        if let Some(t) = fl.sender.poll_timeout() {
            let t = t.max(now);
            if fl.stimer.is_none_or(|s| t < s) {
                fl.sgen = fl.sgen.wrapping_add(1);
                fl.stimer = Some(t);
                self.ev.push(t, Event::SenderTimer(f as u32, fl.sgen));
            }
        }
    }

    fn pump_receiver(&mut self, f: usize) {
        let now = self.now;
        while let Some(ack) = self.flows[f].receiver.poll_ack(now) {
            let (bytes, at) = (self.flows[f].header, self.flows[f].rev);
            let hdr = Packet {
                at,
                owner: f as u32,
                bytes,
                kind: Kind::Ack,
                flags: 0,
                ect: false,
                ce: false,
                enq_time: 0,
                body: Body::Cross,
            };
            let i = self.alloc(hdr, Body::Ack(ack));
            self.forward(i);
        }
        let fl = &mut self.flows[f];
        if let Some(t) = fl.receiver.poll_timeout() {
            let t = t.max(now);
            if fl.rtimer.is_none_or(|s| t < s) {
                fl.rgen = fl.rgen.wrapping_add(1);
                fl.rtimer = Some(t);
                self.ev.push(t, Event::ReceiverTimer(f as u32, fl.rgen));
            }
        }
    }

    fn cross_send(&mut self, s: usize) {
        let now = self.now;
        let (send, next) = self.cross[s].fire(now);
        if send {
            let (bytes, at) = (self.cross[s].packet_size, self.cross[s].route);
            let hdr = Packet {
                at,
                owner: s as u32,
                bytes,
                kind: Kind::Cross,
                flags: 0,
                ect: false,
                ce: false,
                enq_time: 0,
                body: Body::Cross,
            };
            let i = self.alloc(hdr, Body::Cross);
            self.forward(i);
        }
        if let Some(t) = next {
            self.ev.push(t, Event::Traffic(s as u32));
        }
    }

    // ---- measurement ----

    fn sample(&mut self) {
        let t = to_secs(self.now);
        for (i, f) in self.flows.iter().enumerate() {
            let s = &mut self.fseries;
            s.new_row();
            let snd = &f.sender;
            let st = snd.stats();
            let cc = snd.cc();
            let fixed = [
                t,
                i as f64,
                cc.cwnd(),
                cc.ssthresh(),
                cc.pacing_rate_bps().unwrap_or(f64::NAN),
                to_secs(snd.srtt()),
                to_secs(snd.min_rtt()),
                snd.in_flight() as f64,
                f.receiver.delivered_bytes() as f64,
                st.sent_bytes as f64,
                st.retransmits as f64,
                st.timeouts as f64,
            ];
            for (c, v) in fixed.into_iter().enumerate() {
                s.set_at(c, v);
            }
            self.state_buf.clear();
            snd.cc().state(&mut self.state_buf);
            for &(k, v) in &self.state_buf {
                s.set(k, v);
            }
        }
        let now = self.now;
        for (i, l) in self.links.iter_mut().enumerate() {
            Self::account_queue(l, now);
            let s = &mut self.lseries;
            s.new_row();
            let fixed = [
                t,
                i as f64,
                l.qlen.pkts as f64,
                l.qlen.bytes as f64,
                l.drops as f64,
                l.marks as f64,
                l.random_losses as f64,
                l.tx_bytes as f64,
                l.arrivals as f64,
            ];
            for (c, v) in fixed.into_iter().enumerate() {
                s.set_at(c, v);
            }
            self.state_buf.clear();
            l.qdisc.state(&mut self.state_buf);
            for &(k, v) in &self.state_buf {
                s.set(k, v);
            }
        }
    }

    fn snapshot(&mut self, k: usize) {
        let now = self.now;
        for (i, f) in self.flows.iter().enumerate() {
            let st = f.sender.stats();
            self.fsnap[k][i] = FlowSnap {
                delivered: f.receiver.delivered_bytes(),
                sent_bytes: st.sent_bytes,
                rtt_sum: st.rtt_sum_ns,
                rtt_n: st.rtt_samples,
            };
        }
        for (i, l) in self.links.iter_mut().enumerate() {
            Self::account_queue(l, now);
            if k == 0 {
                l.max_q = l.qlen.pkts as u64;
            }
            self.lsnap[k][i] = LinkSnap {
                tx_bytes: l.tx_bytes,
                drops: l.drops,
                marks: l.marks,
                random_losses: l.random_losses,
                arrivals: l.arrivals,
                q_integral: l.q_integral,
            };
        }
        self.in_window = k == 0;
    }

    fn finish(mut self, wall: f64, aborted: bool) -> RunResult {
        if self.in_window || aborted {
            // The end-of-window event did not run (aborted, or window ends after the last event).
            self.snapshot(1);
        }
        let win = to_secs(self.measure[1] - self.measure[0]).max(1e-12);
        let (m0, m1) = (to_secs(self.measure[0]), to_secs(self.measure[1]));
        let fs = &self.fseries;
        let (ts, fid, cw) = (
            fs.column(FLOW_COLUMNS_T),
            fs.column(FLOW_COLUMNS_FLOW),
            fs.column(FLOW_COLUMNS_CWND),
        );
        let mut cw_sum = vec![0.0; self.flows.len()];
        let mut cw_n = vec![0u64; self.flows.len()];
        for r in 0..ts.len() {
            if ts[r] >= m0 - 1e-12 && ts[r] <= m1 + 1e-12 {
                let f = fid[r] as usize;
                cw_sum[f] += cw[r];
                cw_n[f] += 1;
            }
        }
        // Warnings found during the run (e.g. Libra's stability bound checked at run time).
        for (i, f) in self.flows.iter().enumerate() {
            for w in f.sender.cc().warnings() {
                let w = format!("flows[{i}] ({}): {w}", f.cc_name);
                if !self.result.warnings.contains(&w) {
                    self.result.warnings.push(w);
                }
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            let (a, b) = (self.fsnap[0][i], self.fsnap[1][i]);
            let st = f.sender.stats();
            let rn = b.rtt_n - a.rtt_n;
            self.result.flows.push(FlowResult {
                id: i as u32,
                group: f.group,
                cc: f.cc_name.clone(),
                rtt: f.rtt,
                start: to_secs(f.start),
                finish: f.finish.map(to_secs),
                goodput_bps: (b.delivered - a.delivered) as f64 * 8.0 / win,
                throughput_bps: (b.sent_bytes - a.sent_bytes) as f64 * 8.0 / win,
                mean_cwnd_pkts: if cw_n[i] > 0 {
                    cw_sum[i] / cw_n[i] as f64
                } else {
                    f64::NAN
                },
                mean_rtt: if rn > 0 {
                    (b.rtt_sum - a.rtt_sum) as f64 * 1e-9 / rn as f64
                } else {
                    f64::NAN
                },
                min_rtt: to_secs(f.sender.min_rtt()),
                retransmits: st.retransmits,
                timeouts: st.timeouts,
                fast_recoveries: st.fast_recoveries,
                delivered_bytes: f.receiver.delivered_bytes(),
                sent_pkts: st.sent_pkts,
                received_pkts: f.receiver.received_pkts(),
                dropped_pkts: f.dropped,
            });
        }
        let mut packets = 0;
        for (i, l) in self.links.iter().enumerate() {
            let (a, b) = (self.lsnap[0][i], self.lsnap[1][i]);
            let n: u64 = l.qdelay_hist.iter().sum();
            let mut p95 = f64::NAN;
            if n > 0 {
                let target = (0.95 * n as f64).ceil() as u64;
                let mut acc = 0;
                for (bin, c) in l.qdelay_hist.iter().enumerate() {
                    acc += c;
                    if acc >= target {
                        p95 = hist_value(bin);
                        break;
                    }
                }
            }
            let arrivals = b.arrivals - a.arrivals;
            let lost = (b.drops - a.drops) + (b.random_losses - a.random_losses);
            packets = packets.max(l.data_pkts_tx);
            self.result.links.push(LinkResult {
                id: i as u32,
                rate_bps: l.rate_bps,
                utilization: (b.tx_bytes - a.tx_bytes) as f64 * 8.0 / (l.rate_bps * win),
                drops: b.drops - a.drops,
                marks: b.marks - a.marks,
                random_losses: b.random_losses - a.random_losses,
                mean_queue_pkts: (b.q_integral - a.q_integral) as f64 / (win * 1e9),
                max_queue_pkts: l.max_q,
                mean_queue_delay_s: if l.qdelay_n > 0 {
                    l.qdelay_sum / l.qdelay_n as f64
                } else {
                    f64::NAN
                },
                p95_queue_delay_s: p95,
                arrivals,
                data_pkts_tx: l.data_pkts_tx,
                loss_rate: if arrivals > 0 {
                    lost as f64 / arrivals as f64
                } else {
                    0.0
                },
            });
        }
        self.cons.in_network = (self.slab.len() - self.free.len()) as u64;
        self.result.conservation = self.cons.clone();
        self.result.events = self.events;
        self.result.packets = packets;
        self.result.wall_s = wall;
        self.result.aborted = aborted;
        self.result.trace = self.trace.take().unwrap_or_default();
        self.result.flow_series = std::mem::take(&mut self.fseries).finish();
        self.result.link_series = std::mem::take(&mut self.lseries).finish();
        self.result
    }
}
