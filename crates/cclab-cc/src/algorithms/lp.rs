//! TCP-LP, a low-priority (scavenger) TCP (Kuzmanovic & Knightly, "TCP-LP: a distributed algorithm for
//! low priority data transfer", INFOCOM 2003), with the Linux `tcp_lp.c` rules.
//!
//! TCP-LP is Reno that also reacts to an *early congestion indication*: a smoothed delay above
//! `delay_min + threshold·(delay_max − delay_min)` (threshold 15 %), i.e. a queue building up, which
//! loss-based flows would not notice before the buffer overflows. On the first indication it halves
//! cwnd and starts an *inference* time of 3 RTTs; a second indication inside it means the other flows
//! are not backing off, so cwnd drops to 1. Congestion avoidance pauses during the inference time. Each
//! indication also resets delay_min and delay_max to the smoothed delay and twice it, so the thresholds
//! follow a path whose delay changed. Losses and timeouts are Reno's.
//!
//! DECISION (ssthresh): an early cut also lowers ssthresh to the new window, so the flow regrows in
//! congestion avoidance. Linux's `tcp_lp.c` (and ns-3's port) cut only the window: a flow that has not
//! lost yet (ssthresh still infinite) slow-starts again after each inference time, overshoots the 15 %
//! threshold within a round trip, and a second indication inside the inference time drops it to one
//! packet. Measured on an otherwise idle 100 Mbit/s × 50 ms path (BDP buffer, goodput over 10-30 s,
//! 5 seeds): one LP flow gets 11.7 % of the link rate with Linux's rule, 73.7 % with this one, against
//! the paper's claim that TCP-LP uses the capacity nobody else does; `keep_ssthresh = true` restores
//! Linux's rule, `ns3_slow_start = true` ns-3's (which also keeps slow start running during the
//! inference time: 41.4 %). Linux's spike filter for the maximum delay (`owd_max_rsv`: a new
//! maximum counts once a second sample confirms it) is kept.
//!
//! Empty delay range: the indication test is Linux's, `sdelay ≥ delay_min + threshold·(delay_max −
//! delay_min)`, also while the range is empty (delay_max = delay_min, as at the first RTT sample): the
//! smoothed delay is then at the minimum, so Linux's `tcp_lp_pkts_acked` cuts at the very first sample,
//! which also sets the range to [s, 2s] and starts an inference time. Earlier cclab versions skipped
//! the test while the range was empty (no cut until the samples spread). ns-3's port tests `≤` where
//! Linux tests `<` (within the threshold when equal), so it does not cut on an empty range;
//! `ns3_slow_start = true` takes that rule too.
//!
//! DECISION (delay): the paper and Linux estimate one-way delay from TCP timestamps (with receiver clock
//! offsets cancelled by the min/max normalisation); this sender uses the RTT samples, smoothed with
//! gain 1/8 as Linux smooths its one-way delay (queueing on the ACK path therefore counts too).

use crate::cc::reno_undo;
use crate::cc::{
    reno_on_ack, reno_on_loss, reno_on_timeout, slow_start, AckSample, CongestionControl,
    LossEvent, TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::Nanos;

pub struct Lp {
    threshold: f64,
    /// ns-3's `TcpLp` pauses only congestion avoidance during the inference time, not slow start, and
    /// counts a smoothed delay equal to the threshold as within it (no cut on an empty range).
    ns3_slow_start: bool,
    /// Linux's and ns-3's rule: an early cut leaves ssthresh alone (module doc, DECISION).
    keep_ssthresh: bool,
    cwnd: f64,
    ssthresh: f64,
    /// Smoothed delay and its extremes (ns).
    sdelay: Option<f64>,
    dmin: f64,
    dmax: f64,
    /// Linux's `owd_max_rsv`: a new maximum is taken only when a second sample confirms it (the first
    /// is held in reserve), so one delayed packet does not widen the range.
    dmax_rsv: f64,
    /// The last early-congestion cut, and the inference time after it (3 RTT samples long).
    last_drop: Option<Nanos>,
    inference: Nanos,
    within_inference: bool,
    /// Early-congestion cuts so far (for the time series and tests).
    pub early_cuts: u64,
}

impl Lp {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Lp, ParamError> {
        let mut r = ParamReader::new("lp", params);
        let threshold = r.f64_in("threshold", 0.15, 0.0, 1.0)?;
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        let ns3_slow_start = r.bool("ns3_slow_start", false)?;
        let keep_ssthresh = r.bool("keep_ssthresh", false)? || ns3_slow_start;
        r.finish()?;
        Ok(Lp {
            threshold,
            ns3_slow_start,
            keep_ssthresh,
            cwnd: initial_cwnd,
            ssthresh,
            sdelay: None,
            dmin: f64::INFINITY,
            dmax: 0.0,
            dmax_rsv: 0.0,
            last_drop: None,
            inference: 0,
            within_inference: false,
            early_cuts: 0,
        })
    }
}

impl CongestionControl for Lp {
    fn name(&self) -> &'static str {
        "lp"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(rtt) = ack.rtt.filter(|&r| r > 0) {
            let d = rtt as f64;
            let s = self.sdelay.map_or(d, |s| s + (d - s) / 8.0);
            self.sdelay = Some(s);
            self.dmin = self.dmin.min(d);
            if d > self.dmax {
                if d > self.dmax_rsv {
                    self.dmax = if self.dmax_rsv == 0.0 {
                        d
                    } else {
                        self.dmax_rsv
                    };
                    self.dmax_rsv = d;
                } else {
                    self.dmax = d;
                }
            }
            self.inference = 3 * rtt;
            self.within_inference = self
                .last_drop
                .is_some_and(|t| ack.now.saturating_sub(t) < self.inference);
            let th = self.dmin + self.threshold * (self.dmax - self.dmin);
            // Linux: within the threshold iff s < th; ns-3: iff s ≤ th (module doc, empty range).
            let indication = if self.ns3_slow_start { s > th } else { s >= th };
            if indication {
                // Early congestion indication.
                self.dmin = s;
                self.dmax = 2.0 * s;
                self.dmax_rsv = 2.0 * s;
                self.cwnd = if self.within_inference {
                    1.0
                } else {
                    (self.cwnd / 2.0).max(1.0)
                };
                if !self.keep_ssthresh {
                    self.ssthresh = self.ssthresh.min(self.cwnd.max(2.0));
                }
                self.last_drop = Some(ack.now);
                self.within_inference = true;
                self.early_cuts += 1;
                return;
            }
        }
        if !self.within_inference {
            reno_on_ack(&mut self.cwnd, self.ssthresh, ack);
        } else if self.ns3_slow_start && self.cwnd < self.ssthresh && !ack.in_recovery {
            slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
        }
    }
    fn on_loss(&mut self, ev: &LossEvent) {
        reno_on_loss(&mut self.cwnd, &mut self.ssthresh, ev);
    }
    /// A reduction found spurious: Linux `tcp_lp.c`: `tcp_reno_undo_cwnd`. The delay range and the inference time stay (they follow
    /// delay, not loss).
    fn undo_cwnd(&mut self, prior_cwnd: f64, prior_ssthresh: f64) {
        reno_undo(
            &mut self.cwnd,
            &mut self.ssthresh,
            prior_cwnd,
            prior_ssthresh,
        );
    }
    fn on_timeout(&mut self, ev: &TimeoutEvent) {
        reno_on_timeout(&mut self.cwnd, &mut self.ssthresh, ev);
    }
    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("lp_inference", self.within_inference as u8 as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn ack(now: Nanos, rtt: Nanos) -> AckSample {
        AckSample {
            now,
            newly_acked: 1,
            rtt: Some(rtt),
            ..Default::default()
        }
    }

    #[test]
    fn a_rising_delay_halves_then_a_second_indication_within_inference_resets_to_one() {
        let mut lp = Lp::new(10.0, &Params::new()).unwrap();
        lp.cwnd = 100.0;
        lp.ssthresh = 1.0;
        // The first sample: the delay range is empty, so Linux's test cuts (halves) and sets the range
        // to [s, 2s] = [100, 200] ms; the threshold is then at 115 ms.
        lp.on_ack(&ack(0, 100 * MS));
        assert_eq!((lp.early_cuts, lp.cwnd()), (1, 50.0));
        assert_eq!((lp.dmin, lp.dmax), (100e6, 200e6));
        // Past that inference time (3 RTTs), the smoothed delay (gain 1/8) of 200 ms samples crosses
        // 115 ms: halve.
        lp.cwnd = 100.0;
        let mut t = 1_000 * MS;
        while lp.early_cuts == 1 {
            lp.on_ack(&ack(t, 200 * MS));
            t += MS;
        }
        assert!((lp.cwnd() - 50.0).abs() < 0.5, "{}", lp.cwnd());
        // Inside the 3-RTT inference time nothing grows; a rise above the new thresholds (the smoothed
        // delay s → min s, max 2s) within it drops cwnd to 1.
        let w = lp.cwnd();
        lp.on_ack(&ack(t, 120 * MS));
        assert_eq!(lp.cwnd(), w);
        let mut k = 0;
        while lp.early_cuts == 2 && k < 200 {
            lp.on_ack(&ack(t + k * MS, 400 * MS));
            k += 1;
        }
        assert_eq!(lp.cwnd(), 1.0);
    }

    #[test]
    fn a_steady_delay_is_reno_after_the_first_samples_cut() {
        let mut lp = Lp::new(10.0, &Params::new()).unwrap();
        lp.ssthresh = 1.0;
        // ACKs 10 ms apart for 1 s: the empty-range cut at the first (10 → 5), no growth in its
        // 300 ms inference time, then Reno's +1/cwnd per ACK and no further indication.
        for k in 0..100 {
            lp.on_ack(&ack(k * 10 * MS, 100 * MS));
            if k == 20 {
                assert_eq!(lp.cwnd(), 5.0);
            }
        }
        assert_eq!(lp.early_cuts, 1);
        assert!(lp.cwnd() > 10.0, "{}", lp.cwnd());
    }

    #[test]
    fn an_empty_delay_range_cuts_with_linuxs_test_not_with_ns3s() {
        // Linux: within the threshold iff s < th, so s = th (empty range, first sample) is an
        // indication; ns-3: iff s ≤ th, no indication.
        let mut p = Params::new();
        p.insert(
            "ns3_slow_start".into(),
            crate::params::ParamValue::Bool(true),
        );
        for (params, cuts, w) in [(Params::new(), 1, 5.0), (p, 0, 11.0)] {
            let mut lp = Lp::new(10.0, &params).unwrap();
            lp.on_ack(&ack(0, 100 * MS));
            assert_eq!((lp.early_cuts, lp.cwnd()), (cuts, w));
        }
    }

    #[test]
    fn an_early_cut_lowers_ssthresh_unless_linux_rules_are_asked_for() {
        // The first sample's cut (empty delay range, Linux's test) is an early cut like any other.
        let cut = |params: &Params| {
            let mut lp = Lp::new(10.0, params).unwrap();
            lp.cwnd = 100.0;
            lp.on_ack(&ack(0, 100 * MS));
            assert_eq!(lp.early_cuts, 1);
            (lp.cwnd(), lp.ssthresh())
        };
        let (w, ss) = cut(&Params::new());
        assert_eq!((w, ss), (50.0, 50.0));
        let mut p = Params::new();
        p.insert(
            "keep_ssthresh".into(),
            crate::params::ParamValue::Bool(true),
        );
        let (w, ss) = cut(&p);
        assert_eq!((w, ss), (50.0, 1e12));
    }
}
