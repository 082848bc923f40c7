//! TCP-Illinois (Liu, Başar & Srikant, "TCP-Illinois: a loss- and delay-based congestion control
//! algorithm for high-speed networks", Performance Evaluation 65(6–7), 2008), with the Linux
//! `tcp_illinois.c` rules and constants.
//!
//! A Reno-shaped AIMD whose increase α and decrease β follow the average queueing delay da = (mean
//! RTT of the last round) − baseRTT, relative to the largest seen, dm = maxRTT − baseRTT:
//! * α (packets per RTT): α_max = 10 while da ≤ dm/100 (no queue: grow fast), then falling as
//!   k1/(k2 + da) to α_min = 0.3 at da = dm; back to α_max only after θ = 5 rounds below dm/100;
//! * β (share of cwnd cut on a loss): β_min = 1/8 while da ≤ dm/10, rising linearly to β_max = 1/2
//!   at da ≥ 8·dm/10.
//!
//! α and β are recomputed once per round (one window of data acknowledged); below a window of 15
//! packets they are Reno's (1, 1/2). A loss or timeout resets them to Reno's. Slow start is Reno's.

use crate::cc::reno_undo;
use crate::cc::{
    reno_on_timeout, slow_start, AckSample, CongestionControl, LossEvent, TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::Nanos;

pub struct Illinois {
    alpha_min: f64,
    alpha_max: f64,
    beta_min: f64,
    beta_max: f64,
    win_thresh: f64,
    theta: u32,
    cwnd: f64,
    ssthresh: f64,
    alpha: f64,
    beta: f64,
    base_rtt: Option<Nanos>,
    max_rtt: Nanos,
    /// RTT samples of the current round.
    sum_rtt: f64,
    cnt_rtt: u32,
    /// Rounds in a row with da ≤ dm/100, and whether da has been above it since α was last α_max.
    rtt_low: u32,
    rtt_above: bool,
    round_end: u64,
}

impl Illinois {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Illinois, ParamError> {
        let mut r = ParamReader::new("illinois", params);
        let alpha_min = r.f64_in("alpha_min", 0.3, 0.0, 1e3)?;
        let alpha_max = r.f64_in("alpha_max", 10.0, 0.0, 1e3)?;
        let beta_min = r.f64_in("beta_min", 0.125, 0.0, 1.0)?;
        let beta_max = r.f64_in("beta_max", 0.5, 0.0, 1.0)?;
        let win_thresh = r.f64_in("win_thresh", 15.0, 0.0, 1e9)?;
        let theta = r.f64_in("theta", 5.0, 0.0, 1e6)? as u32;
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        r.finish()?;
        for (field, lo, hi) in [
            ("alpha_max", alpha_min, alpha_max),
            ("beta_max", beta_min, beta_max),
        ] {
            if hi < lo {
                return Err(ParamError {
                    field: field.into(),
                    message: format!("must be ≥ its minimum ({lo}), got {hi}"),
                });
            }
        }
        Ok(Illinois {
            alpha_min,
            alpha_max,
            beta_min,
            beta_max,
            win_thresh,
            theta,
            cwnd: initial_cwnd,
            ssthresh,
            alpha: 1.0,
            beta: 0.5,
            base_rtt: None,
            max_rtt: 0,
            sum_rtt: 0.0,
            cnt_rtt: 0,
            rtt_low: 0,
            rtt_above: false,
            round_end: 0,
        })
    }

    /// α for average delay `da` and largest delay `dm` (ns).
    fn alpha_for(&mut self, da: f64, dm: f64) -> f64 {
        let d1 = dm / 100.0;
        if da <= d1 {
            if !self.rtt_above {
                return self.alpha_max;
            }
            // Back to α_max only after θ low rounds: one good round must not jump the growth rate.
            self.rtt_low += 1;
            if self.rtt_low < self.theta {
                return self.alpha;
            }
            self.rtt_low = 0;
            self.rtt_above = false;
            return self.alpha_max;
        }
        self.rtt_above = true;
        let (dm, da) = (dm - d1, da - d1);
        // k1/(k2 + da) written as Linux does: α_max at da = 0, α_min at da = dm.
        dm * self.alpha_max / (dm + da * (self.alpha_max - self.alpha_min) / self.alpha_min)
    }

    fn beta_for(&self, da: f64, dm: f64) -> f64 {
        let (d2, d3) = (dm / 10.0, 8.0 * dm / 10.0);
        if da <= d2 {
            return self.beta_min;
        }
        if da >= d3 || d3 <= d2 {
            return self.beta_max;
        }
        (self.beta_min * d3 - self.beta_max * d2 + (self.beta_max - self.beta_min) * da) / (d3 - d2)
    }

    fn end_of_round(&mut self) {
        if self.cwnd < self.win_thresh {
            self.alpha = 1.0;
            self.beta = 0.5;
        } else if self.cnt_rtt > 0 {
            let base = self.base_rtt.unwrap_or(0) as f64;
            let dm = self.max_rtt as f64 - base;
            let da = self.sum_rtt / self.cnt_rtt as f64 - base;
            self.alpha = self.alpha_for(da, dm);
            self.beta = self.beta_for(da, dm);
        }
        self.sum_rtt = 0.0;
        self.cnt_rtt = 0;
    }

    fn reset(&mut self) {
        self.alpha = 1.0;
        self.beta = 0.5;
        self.rtt_low = 0;
        self.rtt_above = false;
        self.sum_rtt = 0.0;
        self.cnt_rtt = 0;
    }
}

impl CongestionControl for Illinois {
    fn name(&self) -> &'static str {
        "illinois"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(rtt) = ack.rtt.filter(|&r| r > 0) {
            self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
            self.max_rtt = self.max_rtt.max(rtt);
            self.sum_rtt += rtt as f64;
            self.cnt_rtt += 1;
        }
        if ack.delivered >= self.round_end {
            self.end_of_round();
            self.round_end = ack.delivered + self.cwnd.max(1.0) as u64;
        }
        if ack.in_recovery || ack.app_limited {
            return;
        }
        let left = slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
        if left > 0.0 {
            self.cwnd += self.alpha * left / self.cwnd;
        }
    }
    fn on_loss(&mut self, _ev: &LossEvent) {
        self.ssthresh = (self.cwnd * (1.0 - self.beta)).max(2.0);
        self.cwnd = self.ssthresh;
        self.reset();
    }
    /// A reduction found spurious: Linux `tcp_illinois.c`: `tcp_reno_undo_cwnd`; α and β are recomputed from the delay each round.
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
        self.reset();
    }
    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("illinois_alpha", self.alpha));
        out.push(("illinois_beta", self.beta));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn il() -> Illinois {
        Illinois::new(10.0, &Params::new()).unwrap()
    }

    #[test]
    fn alpha_and_beta_follow_the_queueing_delay() {
        let mut i = il();
        // dm = 100 (any unit): α_max at da ≤ 1, α_min at da = dm; β_min at da ≤ 10, β_max at ≥ 80.
        assert_eq!(i.alpha_for(0.5, 100.0), 10.0);
        assert!((i.alpha_for(100.0, 100.0) - 0.3).abs() < 1e-9);
        let mid = i.alpha_for(50.0, 100.0);
        assert!(mid > 0.3 && mid < 1.0, "{mid}"); // k1/(k2 + da) is convex: low already at half
        assert_eq!(i.beta_for(5.0, 100.0), 0.125);
        assert_eq!(i.beta_for(90.0, 100.0), 0.5);
        assert!((i.beta_for(45.0, 100.0) - (0.125 + 0.375 * 35.0 / 70.0)).abs() < 1e-12);
    }

    #[test]
    fn alpha_max_returns_only_after_theta_quiet_rounds() {
        let mut i = il();
        i.alpha = i.alpha_for(50.0, 100.0);
        let a = i.alpha;
        for _ in 0..4 {
            assert_eq!(i.alpha_for(0.0, 100.0), a);
        }
        assert_eq!(i.alpha_for(0.0, 100.0), 10.0);
    }

    #[test]
    fn a_loss_at_low_delay_cuts_an_eighth_and_resets_to_reno() {
        let mut i = il();
        i.cwnd = 800.0;
        i.beta = 0.125;
        i.alpha = 10.0;
        i.on_loss(&LossEvent::default());
        assert_eq!(i.cwnd(), 700.0);
        assert_eq!((i.alpha, i.beta), (1.0, 0.5));
    }
}
