//! Measurement: the time series sampled every `sample_interval`, counter snapshots at the
//! measurement-window edges (so window statistics are exact differences), the queueing-delay
//! histogram, and the result assembled at the end.

use super::Simulation;
use crate::result::{FlowResult, LinkResult, RunResult};
use cclab_cc::time::{to_secs, Nanos};
use cclab_transport::stats::FlowWindow;
use std::collections::BTreeMap;

const HIST_FINE: usize = 10_000; // 10 µs × 10k = 100 ms
const HIST_COARSE: usize = 9_900; // 1 ms bins from 100 ms to 10 s
/// Queueing-delay histogram bins: 10 µs bins to 100 ms, then 1 ms bins to 10 s.
pub(super) const HIST_BINS: usize = HIST_FINE + HIST_COARSE;

pub(super) fn hist_bin(d: Nanos) -> usize {
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

/// The fixed columns of the per-flow time series, in the order `sample` fills them; algorithm state
/// keys follow.
pub(super) const FLOW_COLUMNS: &[&str] = &[
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
pub(super) const LINK_COLUMNS: &[&str] = &[
    "t",
    "link",
    "queue_pkts",
    "queue_bytes",
    "drops",
    "marks",
    "random_losses",
    "tx_bytes",
    "arrivals",
    "departures",
    "sojourn_sum_s",
];

/// A flow's counters at a window edge.
#[derive(Clone, Copy, Default)]
pub(super) struct FlowSnap {
    delivered: u64,
    sent_bytes: u64,
    rtt_sum: u128,
    rtt_n: u64,
}

/// A link's counters at a window edge.
#[derive(Clone, Copy, Default)]
pub(super) struct LinkSnap {
    tx_bytes: u64,
    drops: u64,
    marks: u64,
    random_losses: u64,
    arrivals: u64,
    q_integral: u128,
}

impl Simulation {
    /// One time-series row per flow and per link, at `now`.
    pub(super) fn sample(&mut self) {
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
            l.account_queue(now);
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
                l.departures as f64,
                l.sojourn_ns as f64 / 1e9,
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

    /// Counter snapshot at window edge `k` (0 = start, 1 = end).
    pub(super) fn snapshot(&mut self, k: usize) {
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
            l.account_queue(now);
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

    /// The run's result: window statistics from the snapshots, the series, counters and warnings.
    pub(super) fn finish(mut self, wall: f64, aborted: bool) -> RunResult {
        if self.in_window || aborted {
            // The end-of-window event did not run (aborted, or window ends after the last event).
            self.snapshot(1);
        }
        self.result.transfers = self.transfer_results();
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
        let mut by_cc: BTreeMap<String, FlowWindow> = BTreeMap::new();
        let mut total: Option<FlowWindow> = None;
        for (i, f) in self.flows.iter().enumerate() {
            let fw = FlowWindow {
                sender: f.sender.window_stats().cloned(),
                receiver: f.receiver.window_stats().cloned(),
                dropped_pkts: Some(f.dropped_window),
            };
            match by_cc.get_mut(&f.cc_name) {
                Some(agg) => agg.merge(&fw),
                None => {
                    by_cc.insert(f.cc_name.clone(), fw.clone());
                }
            }
            match total.as_mut() {
                Some(agg) => agg.merge(&fw),
                None => total = Some(fw.clone()),
            }
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
                stats: Some(fw.summary()),
            });
        }
        self.result.stats_by_cc = by_cc.into_iter().map(|(k, w)| (k, w.summary())).collect();
        self.result.stats_total = total.map(|w| w.summary());
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
                // against the capacity the link had in the window: a trace's, or the rate
                utilization: (b.tx_bytes - a.tx_bytes) as f64 * 8.0
                    / (l.trace.as_ref().map_or(l.rate_bps, |t| {
                        t.capacity_bps(self.measure[0], self.measure[1])
                    }) * win),
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
