//! The result of a real run, shaped like the simulator's summary (docs/scenario.md) plus the time series:
//! the result types, the sampler's per-flow step and the summary over the measure window.

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::disturbance::{self, Stalls};
use crate::emulator::{self, Dir, Finished, LoopStats};
use crate::probe::FlowProbe;
use crate::spec::RunSpec;
use crate::tcp;
use cclab_cc::time::{from_secs, to_secs, Nanos};
use cclab_cc::trace_link::{TraceService, OPPORTUNITY_BYTES};
use cclab_transport::stats::{FlowWindow, WindowSummary};

/// What the sampler collected during a run: each flow's series and the machine's CPU ticks at each
/// sample (for the hypervisor steal over the measure window).
pub(crate) struct Sampled {
    pub flows: Vec<FlowSeries>,
    pub cpu: Vec<(f64, (u64, u64))>,
}

impl Sampled {
    pub fn new(flows: usize) -> Sampled {
        Sampled {
            flows: vec![FlowSeries::default(); flows],
            cpu: Vec::new(),
        }
    }
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
    pub foreign: u64,
    pub rejected_data: u64,
    pub rejected_acks: u64,
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
    /// Cumulative departures from the queue and the sum of their sojourn times (s).
    pub departures: Vec<u64>,
    pub sojourn_sum_s: Vec<f64>,
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
    /// The kernel datapath's controller (`bpf:*` flows): what it handled, dropped, left to the Reno
    /// fallback, its ACK-to-decision delay and CPU (`cclab_bpf::controller::stats_json`); None when
    /// no flow used it.
    pub kernel_datapath: Option<serde_json::Value>,
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

pub(crate) fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let q: f64 = x.iter().map(|v| v * v).sum();
    if q == 0.0 {
        return 1.0;
    }
    s * s / (x.len() as f64 * q)
}

/// The index of the sample nearest to time `t` (seconds).
pub(crate) fn nearest(ts: &[f64], t: f64) -> usize {
    let mut best = 0;
    for (i, x) in ts.iter().enumerate() {
        if (x - t).abs() < (ts[best] - t).abs() {
            best = i;
        }
    }
    best
}

/// Appends one sample of flow `p` at run time `t` (seconds) to its series.
pub(crate) fn sample_flow(ser: &mut FlowSeries, t: f64, p: &FlowProbe) {
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
        // Linux BBR's own model, beside ours under the same keys (`bbr.rtprop_s` for cclab's bbr,
        // `kernel:bbr.rtprop_s` here): where the two disagree, the model says why.
        if let Some(b) = tcp::bbr_info(s.as_raw_fd()) {
            let n = ser.t.len();
            for (k, v) in [
                ("btlbw_bps", b.btlbw_bps),
                ("rtprop_s", b.rtprop_s),
                ("pacing_gain", b.pacing_gain),
                ("cwnd_gain", b.cwnd_gain),
            ] {
                let col = ser.state.entry(k.to_string()).or_default();
                col.resize(n - 1, f64::NAN);
                col.push(v);
            }
        }
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

/// The run's result: per-flow and per-link summaries over the measure window (from the samples nearest
/// to its edges), the disturbance the machine caused, and every series.
#[allow(clippy::too_many_arguments)]
pub(crate) fn summarise(
    spec: &RunSpec,
    mode: &'static str,
    starts: &[Nanos],
    probes: &[std::sync::Arc<FlowProbe>],
    sampled: Sampled,
    fin: Finished,
    mut warnings: Vec<String>,
    wall_s: f64,
    interrupted: bool,
    kernel_datapath: Option<&cclab_bpf::Stats>,
) -> RunResult {
    let [m0, m1] = spec.measure;
    let mut stats_by_cc: BTreeMap<String, FlowWindow> = BTreeMap::new();
    let mut stats_total = FlowWindow::default();
    let mut flows: Vec<FlowResult> = Vec::new();
    for (i, (f, ser)) in spec.flows.iter().zip(sampled.flows).enumerate() {
        let window = std::mem::take(&mut *probes[i].window.lock().unwrap());
        stats_by_cc.entry(f.cc.clone()).or_default().merge(&window);
        stats_total.merge(&window);
        let mut r = flow_result(i, f, ser, to_secs(starts[i]), &probes[i], [m0, m1]);
        r.stats = window.summary();
        flows.push(r);
    }
    let links: Vec<LinkResult> = [Dir::Fwd, Dir::Rev]
        .into_iter()
        .enumerate()
        .map(|(d, dir)| {
            // Utilisation is against the capacity the link had in the window: a trace's, or the rate.
            let l = &spec.links[d];
            let cap = if l.trace_ms.is_empty() {
                l.rate_bps
            } else {
                TraceService::new(&l.trace_ms, OPPORTUNITY_BYTES)
                    .capacity_bps(from_secs(m0), from_secs(m1))
            };
            link_result(d, dir, &fin, cap, [m0, m1])
        })
        .collect();
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
    let cpu = &sampled.cpu;
    let steal_fraction = if cpu.len() >= 2 {
        let ts: Vec<f64> = cpu.iter().map(|c| c.0).collect();
        disturbance::steal_between(cpu[nearest(&ts, m0)].1, cpu[nearest(&ts, m1)].1)
    } else {
        None
    };
    let disturbed = disturbance::judge(steal_fraction, &stalls);
    warnings.extend(disturbed.clone());
    for (host, c) in ["A", "B"].iter().zip(&fin.stats.hosts) {
        let n = |k: &str| c.get(k).copied().unwrap_or(0);
        let lost =
            n("udp.RcvbufErrors") + n("udp.InErrors") + n("tun.tx_dropped") + n("tun.rx_dropped");
        if lost > 0 {
            warnings.push(format!(
                "host {host} dropped {lost} packets in its own stack (UDP receive buffer {}, UDP errors \
                 {}, TUN queue to the emulator {}, TUN from the emulator {}): losses no link counter \
                 shows",
                n("udp.RcvbufErrors"),
                n("udp.InErrors"),
                n("tun.tx_dropped"),
                n("tun.rx_dropped")
            ));
        }
    }
    let goodputs: Vec<f64> = flows.iter().map(|f| f.goodput_bps).collect();
    let mut by_cc: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for f in &flows {
        by_cc.entry(f.cc.clone()).or_default().push(f.goodput_bps);
    }
    RunResult {
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
            mode,
            wall_s,
            emulator: fin.stats,
            steal_fraction,
            stalls,
            disturbed: disturbed.is_some(),
            ingress: fin.emulator.ingress,
            interrupted,
            kernel_datapath: kernel_datapath.map(cclab_bpf::controller::stats_json),
        },
        warnings,
    }
}

/// One flow's summary over the measure window `[m0, m1]`.
fn flow_result(
    i: usize,
    f: &crate::spec::FlowSpec,
    ser: FlowSeries,
    start: f64,
    p: &FlowProbe,
    [m0, m1]: [f64; 2],
) -> FlowResult {
    let (goodput, throughput, mean_cwnd, mean_rtt) = if ser.t.len() >= 2 {
        let (a, b) = (nearest(&ser.t, m0), nearest(&ser.t, m1));
        let span = (ser.t[b] - ser.t[a]).max(1e-9);
        let mean = |v: &[f64]| {
            let xs: Vec<f64> = v[a..=b]
                .iter()
                .copied()
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
    FlowResult {
        id: i,
        group: f.group,
        cc: f.cc.clone(),
        rtt: f.rtt,
        start,
        goodput_bps: goodput,
        throughput_bps: throughput,
        mean_cwnd_pkts: mean_cwnd,
        mean_rtt,
        retransmits: ser.retransmits.last().copied().unwrap_or(0),
        timeouts: p.timeouts.load(Ordering::Relaxed),
        fast_recoveries: p.fast_recoveries.load(Ordering::Relaxed),
        sent_pkts: p.sent_pkts.load(Ordering::Relaxed),
        malformed: p.malformed.load(Ordering::Relaxed),
        foreign: p.foreign.load(Ordering::Relaxed),
        rejected_data: p.rejected_data.load(Ordering::Relaxed),
        rejected_acks: p.rejected_acks.load(Ordering::Relaxed),
        stats: WindowSummary::default(),
        series: ser,
    }
}

/// Link `d`'s (direction `dir`) series from the emulator's samples and its summary over the window.
fn link_result(
    d: usize,
    dir: Dir,
    fin: &Finished,
    rate_bps: f64,
    [m0, m1]: [f64; 2],
) -> LinkResult {
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
        ls.departures.push(sn.counters.departures);
        ls.sojourn_sum_s.push(sn.counters.sojourn_ns as f64 / 1e9);
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
            bits / span / rate_bps,
            q.iter().map(|&x| x as f64).sum::<f64>() / q.len() as f64,
            q.iter().copied().max().unwrap_or(0),
            ls.drops[b] - ls.drops[a],
            ls.marks[b] - ls.marks[a],
        )
    } else {
        (0.0, 0.0, 0, 0, 0)
    };
    LinkResult {
        id: d,
        queue: fin.emulator.queue_name(dir).to_string(),
        utilization: util,
        drops,
        marks,
        mean_queue_pkts: mean_q,
        max_queue_pkts: max_q,
        counters: fin.emulator.counters(dir),
        series: ls,
    }
}
