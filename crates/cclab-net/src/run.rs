//! A whole real run from a [`RunSpec`]: two hosts, the emulator between them, the flows (Linux kernel
//! TCP for `cc = "kernel:<name>"`, our transport otherwise), sampling, and a JSON result shaped like the
//! simulator's summary (docs/scenario.md) plus the time series.
//!
//! Topology: the dumbbell convention of `RunSpec` — link 0 forward (host A → B), link 1 reverse; every
//! flow's path must be `[0]` and its ACK path `[1]`; per-flow `extra_delay_fwd/rev` become per-flow access
//! delays in the emulator, keyed by the flow's port. Flow `i` listens on port `BASE_PORT + i` at host B.

use std::collections::BTreeMap;
use std::io;
use std::net::{SocketAddr, SocketAddrV4, TcpListener};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use cclab_cc::rng;
use cclab_cc::time::{from_secs, to_secs, Nanos};
use cclab_transport::stats::{FlowWindow, WindowSummary};
use serde::Serialize;

use crate::disturbance::{self, Stalls};
use crate::emulator::{self, Dir, Emulator, LinkConfig, LoopStats};
use crate::hosts::Dumbbell;
use crate::spec::{RunSpec, StartSpec};
use crate::sys::{self, Clock};
use crate::tcp;

pub const BASE_PORT: u16 = 40000;
/// Highest link rate a run accepts: the measured limit of a 2-core machine (docs/real-datapath.md).
pub const MAX_RATE_BPS: f64 = 200e6;

/// A spec the real datapath cannot run, with the field at fault.
#[derive(Debug)]
pub enum RunError {
    Spec(String),
    Unavailable(String),
    Io(io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spec(m) => write!(f, "{m}"),
            RunError::Unavailable(m) => write!(f, "real datapath unavailable: {m}"),
            RunError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<io::Error> for RunError {
    fn from(e: io::Error) -> Self {
        RunError::Io(e)
    }
}

/// What flows report while running (written by flow threads, read by the sampler).
#[derive(Default)]
pub struct FlowProbe {
    /// Application bytes delivered in order at the receiver.
    pub delivered: AtomicU64,
    /// Sender state (our transport): cwnd (f64 bits), smoothed and minimum RTT (ns), data packets and
    /// bytes sent incl. retransmissions, retransmitted packets, RTO expiries.
    pub cwnd_bits: AtomicU64,
    pub srtt_ns: AtomicU64,
    pub min_rtt_ns: AtomicU64,
    pub sent_bytes: AtomicU64,
    pub retransmits: AtomicU64,
    pub timeouts: AtomicU64,
    /// Our transport: slow-start threshold (f64 bits, packets), packets in flight, pacing rate (f64 bits,
    /// bit/s; NaN when not paced), fast recoveries, data packets sent.
    pub ssthresh_bits: AtomicU64,
    pub in_flight: AtomicU64,
    pub pacing_bits: AtomicU64,
    pub fast_recoveries: AtomicU64,
    pub sent_pkts: AtomicU64,
    /// Datagrams the endpoints refused (malformed headers), both ends.
    pub malformed: AtomicU64,
    /// Kernel TCP: the connected sender socket, for TCP_INFO.
    pub tcp: OnceLock<Arc<std::net::TcpStream>>,
    /// Algorithm state (key, value) pairs from `CongestionControl::state`, refreshed by the sender.
    pub state: std::sync::Mutex<Vec<(&'static str, f64)>>,
    /// Our sender's and receiver's stalls, each handed over when its thread ends ([`crate::disturbance`]).
    pub stalls: std::sync::Mutex<Vec<(&'static str, crate::disturbance::StallLog)>>,
    /// The measure window (run time, ns) in which our endpoints record RTT and one-way-delay statistics,
    /// and what they recorded, handed over when their threads end (`cclab_transport::stats`).
    pub measure: [Nanos; 2],
    pub window: std::sync::Mutex<FlowWindow>,
}

/// Per-flow time series (parallel arrays, one entry per sample).
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowSeries {
    pub t: Vec<f64>,
    pub delivered_bytes: Vec<u64>,
    pub goodput_bps: Vec<f64>,
    pub cwnd_pkts: Vec<f64>,
    pub srtt: Vec<f64>,
    pub min_rtt: Vec<f64>,
    pub sent_bytes: Vec<u64>,
    pub retransmits: Vec<u64>,
    pub timeouts: Vec<u64>,
    /// Slow-start threshold (packets), packets in flight, pacing rate (bit/s): NaN where the sender does
    /// not expose it (kernel TCP: `ssthresh` and `in_flight` from TCP_INFO, pacing from `tcpi_pacing_rate`).
    pub ssthresh: Vec<f64>,
    pub in_flight: Vec<f64>,
    pub pacing_bps: Vec<f64>,
    pub state: BTreeMap<String, Vec<f64>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct FlowResult {
    pub id: usize,
    pub group: u32,
    pub cc: String,
    pub rtt: f64,
    /// The start time drawn for this flow (seconds of run time).
    pub start: f64,
    pub goodput_bps: f64,
    pub throughput_bps: f64,
    pub mean_cwnd_pkts: f64,
    pub mean_rtt: f64,
    pub retransmits: u64,
    pub timeouts: u64,
    /// Our transport only (0 for kernel TCP, which does not export them): whole run.
    pub fast_recoveries: u64,
    pub sent_pkts: u64,
    pub malformed: u64,
    /// RTT and one-way-delay percentiles, jitter, retransmission rate over the measure window (our
    /// transport; null for kernel TCP and for what the emulator cannot attribute to a flow: drops).
    #[serde(flatten)]
    pub stats: WindowSummary,
    pub series: FlowSeries,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct LinkSeries {
    pub t: Vec<f64>,
    pub queue_pkts: Vec<u32>,
    pub queue_bytes: Vec<u64>,
    pub departure_bytes: Vec<u64>,
    pub drops: Vec<u64>,
    pub marks: Vec<u64>,
    /// Cumulative random (Bernoulli / scheduled) losses and arrivals at the link.
    pub random_losses: Vec<u64>,
    pub arrivals: Vec<u64>,
    pub state: BTreeMap<String, Vec<f64>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LinkResult {
    pub id: usize,
    pub queue: String,
    pub utilization: f64,
    pub drops: u64,
    pub marks: u64,
    pub mean_queue_pkts: f64,
    pub max_queue_pkts: u32,
    pub counters: emulator::LinkCounters,
    pub series: LinkSeries,
}

#[derive(Clone, Debug, Serialize)]
pub struct NetInfo {
    /// "tun" (namespaces) or "loopback" (UDP relay on 127.0.0.1).
    pub mode: &'static str,
    pub wall_s: f64,
    pub emulator: LoopStats,
    /// Fraction of the machine's CPU time the hypervisor stole during the measure window (None where
    /// /proc/stat has no steal column); above 3 % the run warns ([`crate::disturbance`]).
    pub steal_fraction: Option<f64>,
    /// Spans in which the emulator or an endpoint thread was not scheduled ([`crate::disturbance`]).
    pub stalls: Stalls,
    /// The measure window was disturbed by the machine (the reason is among `warnings`).
    pub disturbed: bool,
    pub ingress: emulator::IngressCounters,
    pub interrupted: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub scenario: String,
    pub seed: u64,
    pub measure: [f64; 2],
    pub flows: Vec<FlowResult>,
    pub links: Vec<LinkResult>,
    pub jain: f64,
    pub jain_by_cc: BTreeMap<String, f64>,
    /// Window statistics pooled per algorithm and over all flows.
    pub stats_by_cc: BTreeMap<String, WindowSummary>,
    pub stats_total: WindowSummary,
    pub net: NetInfo,
    pub warnings: Vec<String>,
}

/// How a flow is carried.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowKind {
    Kernel(String),
    Ours(String),
}

pub fn flow_kind(cc: &str) -> FlowKind {
    match cc.strip_prefix("kernel:") {
        Some(k) => FlowKind::Kernel(k.to_string()),
        None => FlowKind::Ours(cc.to_string()),
    }
}

/// Checks what the real datapath supports; the error names the field.
pub fn validate(spec: &RunSpec) -> Result<(), RunError> {
    if spec.links.len() != 2 {
        return Err(RunError::Spec(format!(
            "links: the real datapath runs a dumbbell (link 0 forward, link 1 reverse), got {} links",
            spec.links.len()
        )));
    }
    for (i, l) in spec.links.iter().enumerate() {
        if !(l.rate_bps > 0.0 && l.rate_bps <= MAX_RATE_BPS) {
            return Err(RunError::Spec(format!(
                "links[{i}].rate_bps: must be in (0, {MAX_RATE_BPS}] on the real datapath (2-core limit), got {}",
                l.rate_bps
            )));
        }
    }
    if !spec.traffic.is_empty() {
        return Err(RunError::Spec(
            "traffic: cross traffic is not supported on the real datapath yet".into(),
        ));
    }
    if spec.flows.len() > 64 {
        return Err(RunError::Spec(
            "flows: at most 64 flows on the real datapath".into(),
        ));
    }
    for (i, f) in spec.flows.iter().enumerate() {
        if f.path != [0] || f.ack_path != [1] {
            return Err(RunError::Spec(format!(
                "flows[{i}].path: must be [0] with ack_path [1] (dumbbell)"
            )));
        }
        match flow_kind(&f.cc) {
            FlowKind::Kernel(k) if !tcp::KERNEL_CCS.contains(&k.as_str()) => {
                return Err(RunError::Spec(format!(
                    "flows[{i}].cc: unknown kernel algorithm {k:?}; allowed: {}",
                    tcp::KERNEL_CCS
                        .iter()
                        .map(|k| format!("kernel:{k}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
            FlowKind::Kernel(_) => {}
            FlowKind::Ours(name) => crate::endpoint::check_sender(&name, f)
                .map_err(|e| RunError::Spec(format!("flows[{i}].{e}")))?,
        }
    }
    Ok(())
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let q: f64 = x.iter().map(|v| v * v).sum();
    if q == 0.0 {
        return 1.0;
    }
    s * s / (x.len() as f64 * q)
}

/// The index of the sample nearest to time `t` (seconds).
fn nearest(ts: &[f64], t: f64) -> usize {
    let mut best = 0;
    for (i, x) in ts.iter().enumerate() {
        if (x - t).abs() < (ts[best] - t).abs() {
            best = i;
        }
    }
    best
}

/// How the hosts are connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Two network namespaces with TUN devices (root).
    Tun,
    /// Loopback: every endpoint on 127.0.0.1, the emulator as a UDP relay between them
    /// ([`crate::emulator::relay`]); no root needed, our transport only.
    Loopback,
}

/// What loopback mode cannot run (besides [`validate`]): kernel TCP, which would need the TUN mode's
/// IP-level forwarding. The error names the field.
pub fn validate_loopback(spec: &RunSpec) -> Result<(), RunError> {
    for (i, f) in spec.flows.iter().enumerate() {
        if let FlowKind::Kernel(_) = flow_kind(&f.cc) {
            return Err(RunError::Spec(format!(
                "flows[{i}].cc: {:?} (Linux TCP) needs the namespace mode; loopback mode relays UDP \
                 datagrams and runs our transport only (any algorithm of `cclab-net algorithms` \
                 \"ours\")",
                f.cc
            )));
        }
    }
    Ok(())
}

/// Runs `spec` in real time in the namespace (TUN) mode: see [`run_with`].
pub fn run(
    spec: &RunSpec,
    interrupt: &AtomicBool,
    on_ready: impl FnOnce([u64; 2]),
) -> Result<RunResult, RunError> {
    run_with(spec, Mode::Tun, interrupt, on_ready)
}

/// Runs `spec` in real time. `interrupt` (set by a signal handler) ends the run early; the result then
/// says `interrupted`. Everything created is gone when this returns, whatever happened (the namespaces
/// are anonymous, see [`crate::hosts`]). `on_ready` is called once the hosts exist (with the namespace
/// inode numbers), before any flow starts; in loopback mode there are no hosts and it is not called.
pub fn run_with(
    spec: &RunSpec,
    mode: Mode,
    interrupt: &AtomicBool,
    on_ready: impl FnOnce([u64; 2]),
) -> Result<RunResult, RunError> {
    validate(spec)?;
    if mode == Mode::Loopback {
        validate_loopback(spec)?;
    } else if let Some(why) = sys::unavailable_reason() {
        return Err(RunError::Unavailable(format!(
            "{why}; `--loopback` runs our transport without root (docs/real-datapath.md, Loopback mode)"
        )));
    }
    let wall = Instant::now();
    let hosts = match mode {
        Mode::Tun => {
            let h = Dumbbell::create()?;
            on_ready([h.a.ns.inode(), h.b.ns.inode()]);
            Some(h)
        }
        Mode::Loopback => None,
    };
    let packet_size = spec.flows.first().map_or(1500, |f| f.transport.packet_size);
    let mut emu = Emulator::new(
        LinkConfig::from_spec(&spec.links[0], packet_size),
        LinkConfig::from_spec(&spec.links[1], packet_size),
        spec.seed,
    )
    .map_err(|e| RunError::Spec(format!("links.queue_params: {e}")))?;
    for (i, f) in spec.flows.iter().enumerate() {
        emu.add_flow_delay(
            BASE_PORT + i as u16,
            from_secs(f.extra_delay_fwd),
            from_secs(f.extra_delay_rev),
        );
    }
    let sample_every = from_secs(spec.sample_interval).max(1_000_000);
    // Loopback: every endpoint is bound here, before the relay starts, so the relay knows each flow's
    // real addresses (flow i: sender → relay side A, relay side B → receiver).
    let mut prebound: Vec<Option<(crate::endpoint::ReceiverSetup, crate::endpoint::SenderSetup)>> =
        Vec::new();
    let relay = if mode == Mode::Loopback {
        let mut relay = emulator::relay::Relay::bind()?;
        let to_relay = SocketAddr::V4(relay.sender_side()?);
        for (i, f) in spec.flows.iter().enumerate() {
            let FlowKind::Ours(name) = flow_kind(&f.cc) else {
                unreachable!("validate_loopback refuses kernel flows")
            };
            let rs = std::net::UdpSocket::bind("127.0.0.1:0")?;
            let r_addr = v4_of(&rs)?;
            let rx = crate::endpoint::ReceiverSetup::from_socket(rs, f, i as u32)?;
            let ss = std::net::UdpSocket::bind("127.0.0.1:0")?;
            let s_addr = v4_of(&ss)?;
            let tx = crate::endpoint::SenderSetup::from_socket(
                ss, f, &name, to_relay, i as u32, spec.seed,
            )?;
            relay.add_flow(s_addr, r_addr);
            prebound.push(Some((rx, tx)));
        }
        Some(relay)
    } else {
        None
    };
    let clock = Clock::start();
    let emu_run = match (relay, &hosts) {
        (Some(relay), _) => emulator::relay::spawn(emu, relay, clock, Some(sample_every)),
        (None, Some(h)) => emulator::spawn(emu, h.tuns(), clock, Some(sample_every)),
        (None, None) => unreachable!("TUN mode has hosts"),
    };

    let mut start_rng = rng::stream(spec.seed, 0x5354_4152);
    let starts: Vec<Nanos> = spec
        .flows
        .iter()
        .map(|f| match f.start {
            StartSpec::At(t) => from_secs(t),
            StartSpec::Uniform([lo, hi]) => {
                from_secs(lo + (hi - lo) * rng::uniform(&mut start_rng))
            }
        })
        .collect();
    let end = from_secs(spec.duration);
    let probes: Vec<Arc<FlowProbe>> = spec
        .flows
        .iter()
        .map(|_| {
            Arc::new(FlowProbe {
                measure: [from_secs(spec.measure[0]), from_secs(spec.measure[1])],
                ..Default::default()
            })
        })
        .collect();
    let stop = AtomicBool::new(false);
    let mut warnings = Vec::new();
    let mut flow_series: Vec<FlowSeries> = vec![FlowSeries::default(); spec.flows.len()];
    // Machine CPU ticks at each sample, for the steal over the measure window.
    let mut cpu: Vec<(f64, (u64, u64))> = Vec::new();

    let scoped = std::thread::scope(|s| -> Result<Vec<String>, RunError> {
        let mut handles = Vec::new();
        // Set-up errors (a port in use, a socket option refused) must still stop the threads already
        // started, or the scope would wait for them forever.
        let mut setup = || -> Result<(), RunError> {
            for (i, f) in spec.flows.iter().enumerate() {
                let port = BASE_PORT + i as u16;
                let probe = probes[i].clone();
                let (stop, clock, start) = (&stop, clock, starts[i]);
                let stop_at = f.stop.map(from_secs).unwrap_or(end).min(end);
                if let Some((rx, tx)) = prebound.get_mut(i).and_then(Option::take) {
                    let p2 = probe.clone();
                    handles.push(s.spawn(move || rx.run(&clock, stop, &p2)));
                    handles.push(s.spawn(move || tx.run(&clock, start, stop_at, stop, &probe)));
                    continue;
                }
                let hosts = hosts.as_ref().expect("TUN mode has hosts");
                let dst = SocketAddr::V4(SocketAddrV4::new(hosts.b.addr, port));
                match flow_kind(&f.cc) {
                    FlowKind::Kernel(cc) => {
                        let listener = hosts.b.ns.run_in(|| TcpListener::bind(dst))??;
                        let p2 = probe.clone();
                        handles.push(s.spawn(move || tcp::sink(listener, stop, &p2.delivered)));
                        let size = f.size;
                        handles.push(s.spawn(move || -> io::Result<()> {
                            hosts.a.ns.enter()?;
                            sleep_until(&clock, start, stop);
                            if stop.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                            let stream = Arc::new(tcp::connect(dst, &cc)?);
                            let _ = probe.tcp.set(stream.clone());
                            let written = AtomicU64::new(0);
                            let stop_flow = AtomicBool::new(false);
                            std::thread::scope(|s2| {
                                let w = s2.spawn(|| {
                                    tcp::bulk_send(
                                        (*stream).try_clone()?,
                                        size,
                                        &stop_flow,
                                        &written,
                                    )
                                });
                                while !stop.load(Ordering::Relaxed)
                                    && clock.now() < stop_at
                                    && !w.is_finished()
                                {
                                    std::thread::sleep(std::time::Duration::from_millis(5));
                                }
                                stop_flow.store(true, Ordering::Relaxed);
                                w.join()
                                    .map_err(|_| io::Error::other("TCP sender panicked"))?
                            })
                        }));
                    }
                    FlowKind::Ours(name) => {
                        let rx = crate::endpoint::ReceiverSetup::bind(hosts, f, port, i as u32)?;
                        let p2 = probe.clone();
                        handles.push(s.spawn(move || rx.run(&clock, stop, &p2)));
                        let tx = crate::endpoint::SenderSetup::bind(
                            hosts, f, &name, dst, i as u32, spec.seed,
                        )?;
                        handles.push(s.spawn(move || tx.run(&clock, start, stop_at, stop, &probe)));
                    }
                }
            }
            Ok(())
        };
        let setup = setup();
        // The sampler: this thread, every sample interval, until the end or an interrupt.
        let mut k: u64 = 0;
        while setup.is_ok() {
            let due = k * sample_every;
            if due > end {
                break;
            }
            sleep_until(&clock, due, interrupt);
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
            let t = to_secs(clock.now());
            if let Some(c) = disturbance::cpu_ticks() {
                cpu.push((t, c));
            }
            for (i, p) in probes.iter().enumerate() {
                sample_flow(&mut flow_series[i], t, p);
            }
            k += 1;
        }
        stop.store(true, Ordering::Relaxed);
        let mut errs = Vec::new();
        for (i, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errs.push(format!("flow thread {i}: {e}")),
                Err(_) => errs.push(format!("flow thread {i} panicked")),
            }
        }
        setup.map(|_| errs)
    });
    let fin = emu_run.stop();
    let thread_errors = scoped?;
    let fin = fin?;
    drop(hosts);
    warnings.extend(thread_errors);

    // Summary over the measure window, from the samples nearest to its edges.
    let [m0, m1] = spec.measure;
    let mut flows = Vec::new();
    let mut stats_by_cc: BTreeMap<String, FlowWindow> = BTreeMap::new();
    let mut stats_total = FlowWindow::default();
    for (i, (f, ser)) in spec.flows.iter().zip(flow_series).enumerate() {
        let p = &probes[i];
        let window = std::mem::take(&mut *p.window.lock().unwrap());
        stats_by_cc.entry(f.cc.clone()).or_default().merge(&window);
        stats_total.merge(&window);
        let (goodput, throughput, mean_cwnd, mean_rtt) = if ser.t.len() >= 2 {
            let (a, b) = (nearest(&ser.t, m0), nearest(&ser.t, m1));
            let span = (ser.t[b] - ser.t[a]).max(1e-9);
            let inwin: Vec<usize> = (a..=b).collect();
            let mean = |v: &[f64]| {
                let xs: Vec<f64> = inwin
                    .iter()
                    .map(|&j| v[j])
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .collect();
                if xs.is_empty() {
                    0.0
                } else {
                    xs.iter().sum::<f64>() / xs.len() as f64
                }
            };
            (
                (ser.delivered_bytes[b] - ser.delivered_bytes[a]) as f64 * 8.0 / span,
                (ser.sent_bytes[b].saturating_sub(ser.sent_bytes[a])) as f64 * 8.0 / span,
                mean(&ser.cwnd_pkts),
                mean(&ser.srtt),
            )
        } else {
            (0.0, 0.0, 0.0, 0.0)
        };
        flows.push(FlowResult {
            id: i,
            group: f.group,
            cc: f.cc.clone(),
            rtt: f.rtt,
            start: to_secs(starts[i]),
            goodput_bps: goodput,
            throughput_bps: throughput,
            mean_cwnd_pkts: mean_cwnd,
            mean_rtt,
            retransmits: ser.retransmits.last().copied().unwrap_or(0),
            timeouts: p.timeouts.load(Ordering::Relaxed),
            fast_recoveries: p.fast_recoveries.load(Ordering::Relaxed),
            sent_pkts: p.sent_pkts.load(Ordering::Relaxed),
            malformed: p.malformed.load(Ordering::Relaxed),
            stats: window.summary(),
            series: ser,
        });
    }
    let mut links = Vec::new();
    for (d, dir) in [Dir::Fwd, Dir::Rev].into_iter().enumerate() {
        let mut ls = LinkSeries::default();
        for smp in &fin.samples {
            let sn = &smp.links[d];
            ls.t.push(to_secs(smp.t));
            ls.queue_pkts.push(sn.queue_pkts);
            ls.queue_bytes.push(sn.queue_bytes);
            ls.departure_bytes.push(sn.counters.departure_bytes);
            ls.drops
                .push(sn.counters.queue_drops + sn.counters.random_drops);
            ls.marks.push(sn.counters.marks);
            ls.random_losses.push(sn.counters.random_drops);
            ls.arrivals.push(sn.counters.arrivals);
            for (k, v) in &sn.state {
                ls.state.entry(k.to_string()).or_default().push(*v);
            }
        }
        let (util, mean_q, max_q, drops, marks) = if ls.t.len() >= 2 {
            let (a, b) = (nearest(&ls.t, m0), nearest(&ls.t, m1));
            let span = (ls.t[b] - ls.t[a]).max(1e-9);
            let bits = (ls.departure_bytes[b] - ls.departure_bytes[a]) as f64 * 8.0;
            let q = &ls.queue_pkts[a..=b];
            (
                bits / span / spec.links[d].rate_bps,
                q.iter().map(|&x| x as f64).sum::<f64>() / q.len() as f64,
                q.iter().copied().max().unwrap_or(0),
                ls.drops[b] - ls.drops[a],
                ls.marks[b] - ls.marks[a],
            )
        } else {
            (0.0, 0.0, 0, 0, 0)
        };
        links.push(LinkResult {
            id: d,
            queue: fin.emulator.queue_name(dir).to_string(),
            utilization: util,
            drops,
            marks,
            mean_queue_pkts: mean_q,
            max_queue_pkts: max_q,
            counters: fin.emulator.counters(dir),
            series: ls,
        });
    }
    let flow_stalls: Vec<_> = probes
        .iter()
        .map(|p| std::mem::take(&mut *p.stalls.lock().unwrap()))
        .collect();
    let stalls = Stalls::collect(
        std::iter::once(("emulator".to_string(), &fin.stats.stalls)).chain(
            flow_stalls.iter().enumerate().flat_map(|(i, logs)| {
                logs.iter()
                    .map(move |(role, l)| (format!("flow {i} {role}"), l))
            }),
        ),
        spec.measure,
    );
    let steal_fraction = if cpu.len() >= 2 {
        let ts: Vec<f64> = cpu.iter().map(|c| c.0).collect();
        disturbance::steal_between(cpu[nearest(&ts, m0)].1, cpu[nearest(&ts, m1)].1)
    } else {
        None
    };
    let disturbed = disturbance::judge(steal_fraction, &stalls);
    warnings.extend(disturbed.clone());
    let goodputs: Vec<f64> = flows.iter().map(|f| f.goodput_bps).collect();
    let mut by_cc: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for f in &flows {
        by_cc.entry(f.cc.clone()).or_default().push(f.goodput_bps);
    }
    Ok(RunResult {
        scenario: spec.name.clone(),
        seed: spec.seed,
        measure: spec.measure,
        jain: jain(&goodputs),
        jain_by_cc: by_cc.into_iter().map(|(k, v)| (k, jain(&v))).collect(),
        stats_by_cc: stats_by_cc
            .into_iter()
            .map(|(k, w)| (k, w.summary()))
            .collect(),
        stats_total: stats_total.summary(),
        flows,
        links,
        net: NetInfo {
            mode: match mode {
                Mode::Tun => "tun",
                Mode::Loopback => "loopback",
            },
            wall_s: wall.elapsed().as_secs_f64(),
            emulator: fin.stats,
            steal_fraction,
            stalls,
            disturbed: disturbed.is_some(),
            ingress: fin.emulator.ingress,
            interrupted: interrupt.load(Ordering::Relaxed),
        },
        warnings,
    })
}

fn sample_flow(ser: &mut FlowSeries, t: f64, p: &FlowProbe) {
    let delivered = p.delivered.load(Ordering::Relaxed);
    let gp = match (ser.t.last(), ser.delivered_bytes.last()) {
        (Some(&t0), Some(&d0)) if t > t0 => (delivered - d0) as f64 * 8.0 / (t - t0),
        _ => 0.0,
    };
    ser.t.push(t);
    ser.delivered_bytes.push(delivered);
    ser.goodput_bps.push(gp);
    if let Some(s) = p.tcp.get() {
        let ti = tcp::tcp_info(s.as_raw_fd()).unwrap_or_default();
        ser.cwnd_pkts.push(ti.cwnd_pkts as f64);
        ser.srtt.push(ti.srtt_ns as f64 * 1e-9);
        ser.min_rtt.push(ti.min_rtt_ns as f64 * 1e-9);
        // Kernel TCP: bytes acked stands in for bytes sent (the kernel exports no byte count of
        // retransmissions; `retransmits` counts them in packets).
        ser.sent_bytes.push(ti.bytes_acked);
        ser.retransmits.push(ti.total_retrans as u64);
        ser.timeouts.push(p.timeouts.load(Ordering::Relaxed));
        ser.ssthresh.push(ti.ssthresh_pkts);
        ser.in_flight.push(ti.in_flight_pkts);
        ser.pacing_bps.push(ti.pacing_rate_bps);
    } else {
        ser.cwnd_pkts
            .push(f64::from_bits(p.cwnd_bits.load(Ordering::Relaxed)));
        ser.srtt
            .push(p.srtt_ns.load(Ordering::Relaxed) as f64 * 1e-9);
        ser.sent_bytes.push(p.sent_bytes.load(Ordering::Relaxed));
        ser.retransmits.push(p.retransmits.load(Ordering::Relaxed));
        ser.min_rtt
            .push(p.min_rtt_ns.load(Ordering::Relaxed) as f64 * 1e-9);
        ser.timeouts.push(p.timeouts.load(Ordering::Relaxed));
        ser.ssthresh
            .push(f64::from_bits(p.ssthresh_bits.load(Ordering::Relaxed)));
        ser.in_flight
            .push(p.in_flight.load(Ordering::Relaxed) as f64);
        ser.pacing_bps
            .push(f64::from_bits(p.pacing_bits.load(Ordering::Relaxed)));
        let n = ser.t.len();
        if let Ok(st) = p.state.lock() {
            for (k, v) in st.iter() {
                let col = ser.state.entry(k.to_string()).or_default();
                col.resize(n - 1, f64::NAN);
                col.push(*v);
            }
        }
    }
}

fn v4_of(s: &std::net::UdpSocket) -> io::Result<SocketAddrV4> {
    match s.local_addr()? {
        SocketAddr::V4(a) => Ok(a),
        a => Err(io::Error::other(format!("bound to {a}"))),
    }
}

/// Sleeps until run time `t` (or until `stop`), in slices of at most 50 ms.
pub fn sleep_until(clock: &Clock, t: Nanos, stop: &AtomicBool) {
    loop {
        let now = clock.now();
        if now >= t || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_nanos((t - now).min(50_000_000)));
    }
}
