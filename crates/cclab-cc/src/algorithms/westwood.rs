//! TCP Westwood+ (S. Mascolo, L. A. Grieco, R. Ferorelli, P. Camarda, G. Piscitelli, "Performance
//! evaluation of Westwood+ TCP congestion control", Performance Evaluation 55, 2004; Linux
//! `tcp_westwood.c`; docs/algorithms/papers.md). Notes and DECISIONs: `docs/algorithms/westwood.md`.
//!
//! Reno's increase, but after a loss the window is set from what the path was seen to deliver rather
//! than halved: ssthresh = BWE·RTT_min (packets), cwnd = ssthresh after three duplicate ACKs, cwnd = 1
//! after an RTO. A random (non-congestion) loss therefore barely reduces the window.
//!
//! Bandwidth estimate (Westwood+, the "+" being the once-per-RTT sampling that fixed the original
//! per-ACK estimator's ACK-compression bias):
//! * acknowledged bytes are accumulated; once at least max(RTT, 50 ms) has passed since the last sample,
//!   b = bytes / elapsed is a sample;
//! * two cascaded 7/8 EWMAs, as Linux: bw_ns ← (7·bw_ns + b)/8, BWE ← (7·BWE + bw_ns)/8; the first
//!   sample initialises both.
//!
//! DECISIONs:
//! 1. Acknowledged bytes = newly delivered packets × MSS, SACKed ones included (what Linux's
//!    `westwood_acked_count` approximates from duplicate ACKs). Retransmissions are not counted twice.
//! 2. RTT for the sampling period = the transport's smoothed RTT (Linux: `tp->srtt`); RTT_min = the
//!    minimum RTT sample seen (Linux keeps its own minimum of the same samples).
//! 3. The window is set at the loss event rather than when recovery completes (Linux's
//!    CA_EVENT_COMPLETE_CWR): our transport holds the window during fast recovery, so the effect is the
//!    same. ssthresh is at least 2 packets (Linux).
//! 4. Before the first bandwidth sample (the first ~RTT), a loss falls back to Reno's halving.
//! 5. A loss never raises the window: cwnd = min(cwnd, ssthresh), as the Westwood papers' pseudocode
//!    ("if (cwnd > ssthresh) cwnd = ssthresh"). Linux sets cwnd = ssthresh when recovery completes,
//!    which can raise it when BWE·RTT_min exceeds cwnd (e.g. a long-stalled hole filling credits a
//!    whole flight's bytes to one sampling period); ssthresh itself is still BWE·RTT_min.

use crate::cc::reno_undo;
use crate::cc::{
    reno_on_ack, reno_ssthresh, AckSample, CongestionControl, LossEvent, TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::{to_secs, Nanos};

pub struct Westwood {
    mss: u32,
    min_period: Nanos,
    cwnd: f64,
    ssthresh: f64,
    /// Bytes acknowledged since the last sample.
    bk: u64,
    /// Start of the current sampling period.
    win_start: Option<Nanos>,
    bw_ns_est: f64,
    /// BWE, bytes per second.
    bw_est: f64,
    rtt_min: Nanos,
}

impl Westwood {
    pub fn new(initial_cwnd: f64, mss: u32, params: &Params) -> Result<Westwood, ParamError> {
        let mut r = ParamReader::new("westwood", params);
        let min_period = r.f64_in("min_sample_period", 0.05, 1e-4, 10.0)?;
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        r.finish()?;
        Ok(Westwood {
            mss: mss.max(1),
            min_period: (min_period * 1e9) as Nanos,
            cwnd: initial_cwnd,
            ssthresh,
            bk: 0,
            win_start: None,
            bw_ns_est: 0.0,
            bw_est: 0.0,
            rtt_min: 0,
        })
    }

    /// BWE in bit/s of payload.
    pub fn bwe_bps(&self) -> f64 {
        self.bw_est * 8.0
    }

    /// ssthresh from BWE·RTT_min (packets), or None before the first estimate.
    fn bw_rttmin(&self) -> Option<f64> {
        if self.bw_est <= 0.0 || self.rtt_min == 0 {
            return None;
        }
        Some((self.bw_est * to_secs(self.rtt_min) / self.mss as f64).max(2.0))
    }

    fn sample(&mut self, ack: &AckSample) {
        self.bk += ack.newly_acked as u64 * self.mss as u64;
        let Some(start) = self.win_start else {
            self.win_start = Some(ack.now);
            self.bk = 0;
            return;
        };
        let period = ack.srtt.max(self.min_period);
        let elapsed = ack.now.saturating_sub(start);
        if elapsed < period || elapsed == 0 {
            return;
        }
        let b = self.bk as f64 / to_secs(elapsed);
        if self.bw_est == 0.0 {
            self.bw_ns_est = b;
            self.bw_est = b;
        } else {
            self.bw_ns_est = (7.0 * self.bw_ns_est + b) / 8.0;
            self.bw_est = (7.0 * self.bw_est + self.bw_ns_est) / 8.0;
        }
        self.bk = 0;
        self.win_start = Some(ack.now);
    }
}

impl CongestionControl for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(r) = ack.rtt {
            if r > 0 && (self.rtt_min == 0 || r < self.rtt_min) {
                self.rtt_min = r;
            }
        }
        self.sample(ack);
        reno_on_ack(&mut self.cwnd, self.ssthresh, ack);
    }
    fn on_loss(&mut self, ev: &LossEvent) {
        self.ssthresh = self
            .bw_rttmin()
            .unwrap_or_else(|| reno_ssthresh(ev.in_flight, self.cwnd));
        // DECISION 5.
        self.cwnd = self.cwnd.min(self.ssthresh);
    }
    /// A reduction found spurious: Linux `tcp_westwood.c`: `tcp_reno_undo_cwnd`; the bandwidth estimate is not touched by a loss.
    fn undo_cwnd(&mut self, prior_cwnd: f64, prior_ssthresh: f64) {
        reno_undo(
            &mut self.cwnd,
            &mut self.ssthresh,
            prior_cwnd,
            prior_ssthresh,
        );
    }
    fn on_timeout(&mut self, ev: &TimeoutEvent) {
        if ev.backoffs <= 1 {
            self.ssthresh = self
                .bw_rttmin()
                .unwrap_or_else(|| reno_ssthresh(ev.in_flight, self.cwnd));
        }
        self.cwnd = 1.0;
    }
    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("bwe_bps", self.bwe_bps()));
        out.push(("rtt_min", to_secs(self.rtt_min)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    /// ACKs of `per_ms` packets every millisecond with SRTT 100 ms.
    fn feed(w: &mut Westwood, from_ms: u64, to_ms: u64, per_ms: u32) {
        for t in from_ms..to_ms {
            w.on_ack(&AckSample {
                now: t * NS_PER_MS,
                newly_acked: per_ms,
                rtt: Some(100 * NS_PER_MS),
                srtt: 100 * NS_PER_MS,
                ..Default::default()
            });
        }
    }

    #[test]
    fn estimate_converges_to_the_ack_rate_and_sets_the_window_on_loss() {
        // 8 packets of 1448 B per ms = 92.67 Mbit/s of payload.
        let mut w = Westwood::new(10.0, 1448, &Params::new()).unwrap();
        feed(&mut w, 0, 5000, 8);
        let want = 8.0 * 1448.0 * 8.0 * 1000.0;
        assert!(
            (w.bwe_bps() / want - 1.0).abs() < 0.01,
            "{} vs {want}",
            w.bwe_bps()
        );
        // BWE·RTT_min = 8 packets/ms × 100 ms = 800 packets.
        w.cwnd = 1500.0;
        w.on_loss(&LossEvent {
            in_flight: 1500,
            ..Default::default()
        });
        assert!((w.cwnd() - 800.0).abs() < 8.0, "{}", w.cwnd());
        assert_eq!(w.cwnd(), w.ssthresh());
        w.on_timeout(&TimeoutEvent {
            backoffs: 1,
            ..Default::default()
        });
        assert_eq!(w.cwnd(), 1.0);
        assert!((w.ssthresh() - 800.0).abs() < 8.0);
    }

    #[test]
    fn the_filter_follows_a_rate_change_within_a_few_dozen_rtts() {
        let mut w = Westwood::new(10.0, 1000, &Params::new()).unwrap();
        feed(&mut w, 0, 3000, 10);
        feed(&mut w, 3000, 9000, 5);
        // Two cascaded 7/8 filters: after 60 samples the old rate's weight is below 1 %.
        let want = 5.0 * 1000.0 * 8.0 * 1000.0;
        assert!((w.bwe_bps() / want - 1.0).abs() < 0.02, "{}", w.bwe_bps());
    }

    #[test]
    fn loss_before_any_estimate_halves() {
        let mut w = Westwood::new(40.0, 1448, &Params::new()).unwrap();
        w.on_loss(&LossEvent {
            in_flight: 43,
            ..Default::default()
        });
        assert_eq!(w.cwnd(), 20.0);
    }
}
