//! The result of a real run, shaped like the simulator's summary (docs/scenario.md) plus the time series:
//! the result types, the sampler's per-flow step and the summary over the measure window.

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::disturbance::{self, Stalls};
use crate::emulator::{self, Finished, LoopStats};
use crate::probe::FlowProbe;
use crate::spec::RunSpec;
use crate::tcp;
use cclab_cc::time::{from_secs, to_secs, Nanos};
use cclab_cc::trace_link::{TraceService, OPPORTUNITY_BYTES};
use cclab_transport::stats::{FlowWindow, WindowSummary};

/// What the sampler collected during a run: each flow's series and the machine's state at each sample.
pub(crate) struct Sampled {
    pub flows: Vec<FlowSeries>,
    pub machine: Vec<MachineSample>,
}

/// The machine at one sample: run time (s), CPU ticks (all, steal; [`disturbance::cpu_ticks`]) and the
/// CPU pressure total (µs; [`disturbance::cpu_pressure_us`]), each None where /proc lacks it.
pub(crate) struct MachineSample {
    pub t: f64,
    pub ticks: Option<(u64, u64)>,
    pub pressure_us: Option<u64>,
}

impl Sampled {
    pub fn new(flows: usize) -> Sampled {
        Sampled {
            flows: vec![FlowSeries::default(); flows],
            machine: Vec::new(),
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
    /// ICMP error reports our sender's socket returned (`FlowProbe::icmp_errors`).
    pub icmp_errors: u64,
    /// Our sender's GSO sends, the data packets they carried, and GSO sends the kernel refused
    /// (`crate::batch::GsoStats`; then the packets went one per call).
    pub gso_sends: u64,
    pub gso_segments: u64,
    pub gso_refused: u64,
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
    /// The measure window was disturbed by the machine (`disturbance.reasons` says why; a warning too).
    pub disturbed: bool,
    /// What the machine did over the measure window, measured: CPU pressure, steal, the emulator's and
    /// our endpoints' lateness, host latency, and the rules that fired ([`disturbance::Figures`]).
    pub disturbance: disturbance::Figures,
    pub ingress: emulator::IngressCounters,
    pub interrupted: bool,
    /// The kernel datapath's controller (`bpf:*` flows): what it handled, dropped, left to the Reno
    /// fallback, its ACK-to-decision delay and CPU (`cclab_bpf::controller::stats_json`); None when
    /// no flow used it.
    pub kernel_datapath: Option<serde_json::Value>,
    /// Unresponsive cross-traffic sources generated inside the emulator, in the spec's `traffic`
    /// order (`transfers` sources excluded): packets offered and packets that reached the path's end.
    pub cross: Vec<CrossResult>,
}

/// One unresponsive cross-traffic source's counters over the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct CrossResult {
    /// Index of the source in the spec's `traffic`.
    pub traffic: usize,
    pub kind: String,
    #[serde(flatten)]
    pub counters: emulator::CrossCounters,
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
    /// `transfers` sources, as the simulator's `summary.json` has them (docs/scenario.md).
    pub transfers: Vec<crate::transfers::TransferResult>,
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
    transfers: Vec<crate::transfers::TransferResult>,
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
    // The capacity each link had in the window: a trace's, or the rate.
    let capacity: Vec<f64> = spec
        .links
        .iter()
        .map(|l| {
            if l.trace_ms.is_empty() {
                l.rate_bps
            } else {
                TraceService::new(&l.trace_ms, OPPORTUNITY_BYTES)
                    .capacity_bps(from_secs(m0), from_secs(m1))
            }
        })
        .collect();
    // Utilisation is against that capacity.
    let links: Vec<LinkResult> = (0..fin.emulator.n_links())
        .map(|d| link_result(d, &fin, capacity[d], [m0, m1]))
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
    let mut timers = disturbance::Lateness::default();
    for logs in &flow_stalls {
        for (_, l) in logs {
            timers.merge(&l.timer);
        }
    }
    let mut figures = machine_figures(&sampled.machine, [m0, m1]);
    let emu = &fin.stats;
    // A p99 of 0 means no write fell in the window (the histogram's buckets are upper bounds ≥ 1 µs).
    if emu.window_late_p99_ns > 0 {
        figures.emulator_late_p50_us = Some(emu.window_late_p50_ns as f64 / 1e3);
        figures.emulator_late_p99_us = Some(emu.window_late_p99_ns as f64 / 1e3);
    }
    figures.timer_late_p50_us = timers.quantile_us(0.5);
    figures.timer_late_p99_us = timers.quantile_us(0.99);
    figures.timer_wakeups = timers.count();
    figures.host_latency_ms = flows
        .iter()
        .zip(&spec.flows)
        .map(|(r, f)| host_latency_ms(spec, f, &r.series, &links, &capacity, [m0, m1]))
        .collect();
    figures.host_latency_p50_ms = figures
        .host_latency_ms
        .iter()
        .flatten()
        .map(|h| h[0])
        .reduce(f64::max);
    figures.controller_late_p99_us = kernel_datapath
        .map(cclab_bpf::controller::stats_json)
        .and_then(|j| j.get("ack_to_decision_p99_s").and_then(|v| v.as_f64()))
        .map(|s| s * 1e6);
    figures.longest_stall_ms = stalls.longest_in_measure_ms;
    figures.reasons = disturbance::judge(&figures, &stalls);
    let steal_fraction = figures.steal_fraction;
    let disturbed = disturbance::warning(&figures);
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
    let cross: Vec<CrossResult> = spec
        .traffic
        .iter()
        .enumerate()
        .filter(|(_, t)| t.kind != "transfers")
        .zip(fin.emulator.cross_counters())
        .map(|((i, t), c)| CrossResult {
            traffic: i,
            kind: t.kind.clone(),
            counters: c,
        })
        .collect();
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
            disturbance: figures,
            ingress: fin.emulator.ingress,
            interrupted,
            kernel_datapath: kernel_datapath.map(cclab_bpf::controller::stats_json),
            cross,
        },
        transfers,
        warnings,
    }
}

/// Steal and CPU pressure between the machine samples nearest to the window's edges.
fn machine_figures(m: &[MachineSample], [m0, m1]: [f64; 2]) -> disturbance::Figures {
    let mut f = disturbance::Figures::default();
    if m.len() >= 2 {
        let ts: Vec<f64> = m.iter().map(|x| x.t).collect();
        let (a, b) = (&m[nearest(&ts, m0)], &m[nearest(&ts, m1)]);
        if let (Some(x), Some(y)) = (a.ticks, b.ticks) {
            f.steal_fraction = disturbance::steal_between(x, y);
        }
        if let (Some(x), Some(y)) = (a.pressure_us, b.pressure_us) {
            f.cpu_pressure = disturbance::pressure_between(x, y, b.t - a.t);
        }
    }
    f
}

/// Mean sojourn (s) of the packets that left link `l`'s queue between run times `a` and `b`, from its
/// cumulative counters interpolated linearly between samples; 0 when none left.
fn mean_sojourn(l: &LinkSeries, a: f64, b: f64) -> f64 {
    let at = |v: &dyn Fn(usize) -> f64, t: f64| -> f64 {
        let i = l.t.partition_point(|&x| x <= t);
        match i {
            0 => v(0),
            i if i >= l.t.len() => v(l.t.len() - 1),
            i => {
                let (t0, t1) = (l.t[i - 1], l.t[i]);
                let w = if t1 > t0 { (t - t0) / (t1 - t0) } else { 1.0 };
                v(i - 1) + w * (v(i) - v(i - 1))
            }
        }
    };
    if l.t.is_empty() {
        return 0.0;
    }
    let dep = |i: usize| l.departures[i] as f64;
    let soj = |i: usize| l.sojourn_sum_s[i];
    let n = at(&dep, b) - at(&dep, a);
    if n < 0.5 {
        return 0.0;
    }
    (at(&soj, b) - at(&soj, a)) / n
}

/// A flow's host latency over the window (ms, `[p50, p99]` over its samples there; None without any,
/// or with link jitter or a delay schedule): at each sample, its smoothed RTT minus what the emulated path accounts for —
/// the configured round-trip propagation, one data packet's transmission at the bottleneck's capacity
/// in the window (a trace's mean, or the rate), and the mean sojourn in
/// the data path's queues (over the sample interval shifted back by half the RTT, when the packets now
/// acknowledged were queued) and in the ACK path's. What remains is what the hosts added: their
/// stacks, our threads' wake-ups, the emulator's lateness. It is an estimate: the smoothed RTT and the
/// interval's mean sojourn describe slightly different packets, so a fast-changing queue adds a
/// ± error of a fraction of its change per interval, which the median mostly cancels.
fn host_latency_ms(
    spec: &RunSpec,
    f: &crate::spec::FlowSpec,
    ser: &FlowSeries,
    links: &[LinkResult],
    capacity_bps: &[f64],
    [m0, m1]: [f64; 2],
) -> Option<[f64; 2]> {
    // Jitter is delay variation the emulator adds on purpose, which this estimate cannot tell from the
    // hosts' (with order kept it skews delays up: 1.5 ms of "host latency" on a 20 ms ± 5 ms link).
    // A delay schedule likewise (a 300 ms spike would read as 280 ms of host latency).
    if spec
        .links
        .iter()
        .any(|l| l.jitter > 0.0 || !l.delay_schedule.is_empty())
    {
        return None;
    }
    // One data packet's transmission at the path's slowest link (the bottleneck).
    let slowest = f
        .path
        .iter()
        .map(|&d| capacity_bps[d])
        .filter(|&c| c > 0.0)
        .fold(f64::INFINITY, f64::min);
    let tx = if slowest.is_finite() {
        f.transport.packet_size as f64 * 8.0 / slowest
    } else {
        0.0
    };
    let base = f.rtt + tx;
    let shift = f.rtt / 2.0;
    let mut h: Vec<f64> = (1..ser.t.len())
        .filter(|&k| ser.t[k] >= m0 && ser.t[k] <= m1 && ser.srtt[k] > 0.0)
        .map(|k| {
            let (t0, t1) = (ser.t[k - 1], ser.t[k]);
            let q = f
                .path
                .iter()
                .map(|&d| mean_sojourn(&links[d].series, t0 - shift, t1 - shift))
                .sum::<f64>()
                + f.ack_path
                    .iter()
                    .map(|&a| mean_sojourn(&links[a].series, t0, t1))
                    .sum::<f64>();
            (ser.srtt[k] - base - q) * 1e3
        })
        .collect();
    if h.is_empty() {
        return None;
    }
    h.sort_by(f64::total_cmp);
    let q = |p: f64| h[(((h.len() as f64) * p).ceil() as usize).clamp(1, h.len()) - 1];
    Some([q(0.5), q(0.99)])
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
        icmp_errors: p.icmp_errors.load(Ordering::Relaxed),
        gso_sends: p.gso_sends.load(Ordering::Relaxed),
        gso_segments: p.gso_segments.load(Ordering::Relaxed),
        gso_refused: p.gso_refused.load(Ordering::Relaxed),
        stats: WindowSummary::default(),
        series: ser,
    }
}

/// Link `d`'s series from the emulator's samples and its summary over the window.
fn link_result(d: usize, fin: &Finished, rate_bps: f64, [m0, m1]: [f64; 2]) -> LinkResult {
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
        queue: fin.emulator.queue_name(d).to_string(),
        utilization: util,
        drops,
        marks,
        mean_queue_pkts: mean_q,
        max_queue_pkts: max_q,
        counters: fin.emulator.link_counters(d),
        series: ls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_sojourn_interpolates_the_cumulative_counters() {
        // 100 departures per 0.1 s; each packet of the first interval waited 1 ms, of the second 3 ms.
        let l = LinkSeries {
            t: vec![0.0, 0.1, 0.2],
            departures: vec![0, 100, 200],
            sojourn_sum_s: vec![0.0, 0.1, 0.4],
            ..LinkSeries::default()
        };
        assert!((mean_sojourn(&l, 0.0, 0.1) - 0.001).abs() < 1e-12);
        assert!((mean_sojourn(&l, 0.1, 0.2) - 0.003).abs() < 1e-12);
        // Half of each interval: the mean of the two.
        assert!((mean_sojourn(&l, 0.05, 0.15) - 0.002).abs() < 1e-12);
        // Outside the samples: the edge values, so no departures and 0.
        assert_eq!(mean_sojourn(&l, -1.0, -0.5), 0.0);
        assert_eq!(mean_sojourn(&l, 0.3, 0.4), 0.0);
        assert_eq!(mean_sojourn(&LinkSeries::default(), 0.0, 1.0), 0.0);
    }
}
