//! TCP Vegas (Brakmo & Peterson, "TCP Vegas: end to end congestion avoidance on a global Internet",
//! IEEE JSAC 1995), with the Linux `tcp_vegas.c` constants.
//!
//! Once per RTT (a "round": the data in flight when the round began has been acknowledged):
//! * `diff = cwnd·(RTT − baseRTT)/RTT` — the packets this flow keeps queued (Expected − Actual rate
//!   times baseRTT), with baseRTT the minimum RTT ever seen and RTT the minimum sample of the round
//!   (Linux: the minimum filters out delayed-ACK noise).
//! * congestion avoidance: `diff < α` → cwnd += 1; `diff > β` → cwnd −= 1; otherwise hold.
//! * slow start: standard growth, left when `diff > γ` (cwnd set to the rate-matching window + 1,
//!   ssthresh below it), as Linux does. DECISION: in slow start diff uses the round's latest RTT
//!   sample (Linux instead grows only every other round so that the minimum sees the queue).
//! * loss and timeout: Reno (RFC 5681 ssthresh; Linux Vegas falls back to Reno on loss).
//!
//! Defaults α = 2, β = 4, γ = 1 packets (Linux).

use crate::cc::reno_undo;
use crate::cc::{
    reno_on_loss, reno_on_timeout, slow_start, AckSample, CongestionControl, LossEvent,
    TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::Nanos;

pub struct Vegas {
    alpha: f64,
    beta: f64,
    gamma: f64,
    cwnd: f64,
    ssthresh: f64,
    base_rtt: Option<Nanos>,
    round_min: Option<Nanos>,
    /// Latest RTT sample: in slow start the window doubles within a round, so the round's minimum
    /// misses the queue the doubling built; the latest sample sees it.
    last_rtt: Option<Nanos>,
    /// The round ends when `delivered` reaches this.
    round_end: u64,
    diff: f64,
}

impl Vegas {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Vegas, ParamError> {
        let mut r = ParamReader::new("vegas", params);
        let alpha = r.f64_in("alpha", 2.0, 0.0, 1e6)?;
        let beta = r.f64_in("beta", 4.0, 0.0, 1e6)?;
        let gamma = r.f64_in("gamma", 1.0, 0.0, 1e6)?;
        r.finish()?;
        if beta < alpha {
            return Err(ParamError {
                field: "beta".into(),
                message: format!("must be >= alpha ({alpha}), got {beta}"),
            });
        }
        Ok(Vegas {
            alpha,
            beta,
            gamma,
            cwnd: initial_cwnd,
            ssthresh: f64::INFINITY,
            base_rtt: None,
            round_min: None,
            last_rtt: None,
            round_end: 0,
            diff: 0.0,
        })
    }

    fn end_of_round(&mut self, rtt: Nanos, base: Nanos) {
        let rtt_f = rtt as f64;
        self.diff = self.cwnd * (rtt_f - base as f64) / rtt_f;
        if self.cwnd < self.ssthresh {
            if self.diff > self.gamma {
                // Leave slow start at the window that matches the measured rate, plus one.
                let target = self.cwnd * base as f64 / rtt_f;
                self.cwnd = self.cwnd.min(target + 1.0).max(2.0);
                self.ssthresh = (self.cwnd - 1.0).max(2.0);
            }
        } else if self.diff > self.beta {
            // Linux: cwnd − 1 and ssthresh = min(ssthresh, cwnd − 1), so slow start cannot undo it.
            self.cwnd = (self.cwnd - 1.0).max(2.0);
            self.ssthresh = self.ssthresh.min((self.cwnd - 1.0).max(2.0));
        } else if self.diff < self.alpha {
            self.cwnd += 1.0;
        }
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(r) = ack.rtt {
            self.base_rtt = Some(self.base_rtt.map_or(r, |b| b.min(r)));
            self.round_min = Some(self.round_min.map_or(r, |m| m.min(r)));
            self.last_rtt = Some(r);
        }
        if ack.in_recovery || ack.app_limited {
            return;
        }
        if self.cwnd < self.ssthresh {
            slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
        }
        if ack.delivered >= self.round_end {
            let rtt = if self.cwnd < self.ssthresh {
                self.last_rtt
            } else {
                self.round_min
            };
            self.round_min = None;
            if let (Some(rtt), Some(base)) = (rtt, self.base_rtt) {
                self.end_of_round(rtt, base);
            }
            self.round_end = ack.delivered + self.cwnd.ceil() as u64;
        }
    }

    fn on_loss(&mut self, ev: &LossEvent) {
        reno_on_loss(&mut self.cwnd, &mut self.ssthresh, ev);
    }

    /// A reduction found spurious: Linux `tcp_vegas.c`: `tcp_reno_undo_cwnd`; the round's RTT samples are kept.
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
        out.push(("diff", self.diff));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_packet_per_round_toward_the_alpha_beta_band() {
        let mut v = Vegas::new(10.0, &Params::new()).unwrap();
        v.ssthresh = 5.0; // congestion avoidance
        v.base_rtt = Some(100);
        // diff = 10·(110 − 100)/110 = 0.91 < α → +1
        v.end_of_round(110, 100);
        assert_eq!(v.cwnd(), 11.0);
        // diff = 11·(200 − 100)/200 = 5.5 > β → −1
        v.end_of_round(200, 100);
        assert_eq!(v.cwnd(), 10.0);
        // diff = 10·(140 − 100)/140 = 2.86 in [α, β] → hold
        v.end_of_round(140, 100);
        assert_eq!(v.cwnd(), 10.0);
        assert!((v.diff - 2.857).abs() < 1e-3);
    }

    #[test]
    fn leaves_slow_start_when_diff_exceeds_gamma() {
        let mut v = Vegas::new(40.0, &Params::new()).unwrap();
        v.end_of_round(150, 100); // diff 13.3 > γ: cwnd = 40·100/150 + 1
        assert!((v.cwnd() - (40.0 * 100.0 / 150.0 + 1.0)).abs() < 1e-9);
        assert!(v.ssthresh() < v.cwnd());
    }
}
