//! YeAH-TCP, Yet Another Highspeed TCP (Baiocchi, Castellani & Vacirca, "YeAH-TCP: yet another highspeed
//! TCP", PFLDnet 2007), with the Linux `tcp_yeah.c` rules and constants.
//!
//! Two modes, chosen once per round from Vegas's estimate of the packets this flow keeps queued,
//! Q = cwnd·(RTT − baseRTT)/RTT (RTT the round's minimum sample):
//! * **fast** while Q ≤ α (80 packets) and the queueing delay RTT − baseRTT ≤ baseRTT/φ (φ = 8): Scalable's
//!   increase (+1 per min(cwnd, 100) acknowledged packets: 1 % per RTT above 100 packets);
//! * **slow** otherwise: Reno's increase, and while Q > α, *precautionary decongestion*: cwnd drops by
//!   min(Q/γ, cwnd/2^ε) (γ = 1, ε = 1) but not below `reno_count`, an estimate of the window a Reno flow
//!   would have here (halved at each loss, grown by one per slow round, reset to 2 after ζ = 50 fast
//!   rounds), so YeAH empties what it queued without losing ground to Reno.
//!
//! On a loss: after fewer than ρ (16) slow rounds in a row (no competing Reno flows), cwnd drops by the
//! queue it had (lastQ, between cwnd/2^δ = cwnd/8 and cwnd/2); otherwise by half, as Reno. Slow start and
//! the timeout response are Reno's.

use crate::cc::reno_undo;
use crate::cc::{
    reno_increase, reno_on_timeout, slow_start, AckSample, CongestionControl, LossEvent,
    TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::Nanos;

const ALPHA: f64 = 80.0;
const GAMMA: f64 = 1.0;
const DELTA: i32 = 3;
const EPSILON: i32 = 1;
const PHY: u64 = 8;
const RHO: u32 = 16;
const ZETA: u32 = 50;

pub struct Yeah {
    cwnd: f64,
    ssthresh: f64,
    base_rtt: Option<Nanos>,
    round_min: Option<Nanos>,
    round_samples: u32,
    round_end: u64,
    /// Slow rounds in a row (Linux `doing_reno_now`; 0 = fast mode).
    doing_reno_now: u32,
    reno_count: f64,
    fast_count: u32,
    last_q: f64,
}

impl Yeah {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Yeah, ParamError> {
        let mut r = ParamReader::new("yeah", params);
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        r.finish()?;
        Ok(Yeah {
            cwnd: initial_cwnd,
            ssthresh,
            base_rtt: None,
            round_min: None,
            round_samples: 0,
            round_end: 0,
            doing_reno_now: 0,
            reno_count: 2.0,
            fast_count: 0,
            last_q: 0.0,
        })
    }

    /// Linux's once-per-RTT Vegas step: the mode, decongestion and Reno's window estimate.
    fn end_of_round(&mut self) {
        let (Some(rtt), Some(base)) = (self.round_min, self.base_rtt) else {
            return;
        };
        if self.round_samples <= 2 {
            return;
        }
        let queue = (self.cwnd * (rtt - base) as f64 / rtt as f64).floor();
        if queue > ALPHA || rtt - base > base / PHY {
            if queue > ALPHA && self.cwnd > self.reno_count {
                let reduction = (queue / GAMMA).min((self.cwnd / 2f64.powi(EPSILON)).floor());
                self.cwnd = (self.cwnd - reduction).max(self.reno_count);
                self.ssthresh = self.cwnd;
            }
            if self.reno_count <= 2.0 {
                self.reno_count = (self.cwnd / 2.0).floor().max(2.0);
            } else {
                self.reno_count += 1.0;
            }
            self.doing_reno_now = self.doing_reno_now.saturating_add(1);
        } else {
            self.fast_count += 1;
            if self.fast_count > ZETA {
                self.reno_count = 2.0;
                self.fast_count = 0;
            }
            self.doing_reno_now = 0;
        }
        self.last_q = queue;
    }
}

impl CongestionControl for Yeah {
    fn name(&self) -> &'static str {
        "yeah"
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
            self.round_min = Some(self.round_min.map_or(rtt, |m| m.min(rtt)));
            self.round_samples += 1;
        }
        if !(ack.in_recovery || ack.app_limited) {
            let left = slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
            if left > 0.0 {
                if self.doing_reno_now == 0 {
                    self.cwnd += left / self.cwnd.min(100.0);
                } else {
                    reno_increase(&mut self.cwnd, left);
                }
            }
        }
        if ack.delivered >= self.round_end {
            self.end_of_round();
            self.round_end = ack.delivered + self.cwnd.max(1.0) as u64;
            self.round_min = None;
            self.round_samples = 0;
        }
    }
    fn on_loss(&mut self, _ev: &LossEvent) {
        let half = (self.cwnd / 2.0).floor().max(2.0);
        let reduction = if self.doing_reno_now < RHO {
            self.last_q
                .min(half)
                .max((self.cwnd / 2f64.powi(DELTA)).floor())
        } else {
            half
        };
        self.fast_count = 0;
        self.reno_count = (self.reno_count / 2.0).floor().max(2.0);
        self.ssthresh = (self.cwnd - reduction).max(2.0);
        self.cwnd = self.ssthresh;
    }
    /// A reduction found spurious: Linux `tcp_yeah.c`: `tcp_reno_undo_cwnd`.
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
        out.push(("yeah_queue", self.last_q));
        out.push(("yeah_slow", (self.doing_reno_now > 0) as u8 as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn y(cwnd: f64) -> Yeah {
        let mut x = Yeah::new(10.0, &Params::new()).unwrap();
        x.cwnd = cwnd;
        x.ssthresh = 1.0;
        x
    }

    /// One round of `cwnd` ACKs at RTT `rtt` ms (base 100 ms set first).
    fn round(x: &mut Yeah, rtt: u64, delivered: &mut u64) {
        let n = x.cwnd() as u64;
        for _ in 0..n {
            *delivered += 1;
            x.on_ack(&AckSample {
                newly_acked: 1,
                rtt: Some(rtt * MS),
                delivered: *delivered,
                ..Default::default()
            });
        }
    }

    #[test]
    fn fast_mode_is_scalable_and_a_big_queue_is_drained() {
        let mut x = y(1000.0);
        let mut d = 0;
        x.on_ack(&AckSample {
            rtt: Some(100 * MS),
            delivered: 0,
            ..Default::default()
        });
        round(&mut x, 100, &mut d);
        // No queue: +1 per 100 ACKs = +10 in a round of 1000.
        assert!((x.cwnd() - 1010.0).abs() < 0.5, "{}", x.cwnd());
        // RTT 120 ms: Q = cwnd·20/120 ≈ 168 > 80: slow mode, and the next round end drains it
        // (cwnd − min(Q, cwnd/2)), not below reno_count.
        round(&mut x, 120, &mut d);
        round(&mut x, 120, &mut d);
        assert!(x.doing_reno_now > 0);
        assert!(x.cwnd() < 900.0, "{}", x.cwnd());
    }

    #[test]
    fn a_loss_without_competition_removes_only_the_queue() {
        // lastQ 30 of cwnd 400, fewer than ρ slow rounds: cut by max(30, 400/8 = 50) = 50.
        let mut x = y(400.0);
        x.last_q = 30.0;
        x.on_loss(&LossEvent::default());
        assert_eq!(x.cwnd(), 350.0);
        // After ρ slow rounds in a row (Reno flows around): Reno's halving.
        let mut x = y(400.0);
        x.doing_reno_now = RHO;
        x.on_loss(&LossEvent::default());
        assert_eq!(x.cwnd(), 200.0);
    }
}
