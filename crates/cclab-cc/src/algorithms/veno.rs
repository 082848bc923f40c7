//! TCP Veno (Fu & Liew, "TCP Veno: TCP enhancement for transmission over wireless access networks",
//! IEEE JSAC 21(2), 2003), with the Linux `tcp_veno.c` rules.
//!
//! Veno uses Vegas's estimate of the packets this flow keeps queued, N = cwnd·(RTT − baseRTT)/RTT
//! (baseRTT the minimum RTT seen, RTT the latest sample), only to *read* a loss, not to steer the
//! window as Vegas does:
//! * N < β (3 packets): the path is not congested, so a loss is taken as random (a wireless error):
//!   cwnd is cut by 1/5, not 1/2;
//! * N ≥ β: the loss is congestive: cwnd halves, and congestion avoidance grows by one packet every
//!   *other* RTT (the link is near full: stay there longer).
//!
//! Below β congestion avoidance is Reno's. Slow start and the timeout response are Reno's. Linux
//! behaves like Reno until it has 3 RTT samples; so does this (`samples`).

use crate::cc::reno_undo;
use crate::cc::{
    reno_increase, reno_on_timeout, slow_start, AckSample, CongestionControl, LossEvent,
    TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::Nanos;

pub struct Veno {
    beta: f64,
    cwnd: f64,
    ssthresh: f64,
    base_rtt: Option<Nanos>,
    /// N, the backlog estimate (packets), at the latest RTT sample.
    diff: f64,
    samples: u32,
    /// Packets acked since the last increase, and whether the next full window increases (the
    /// every-other-RTT growth of the congestive state).
    acked_cnt: f64,
    inc: bool,
}

impl Veno {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Veno, ParamError> {
        let mut r = ParamReader::new("veno", params);
        let beta = r.f64_in("beta", 3.0, 0.0, 1e6)?;
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        r.finish()?;
        Ok(Veno {
            beta,
            cwnd: initial_cwnd,
            ssthresh,
            base_rtt: None,
            diff: 0.0,
            samples: 0,
            acked_cnt: 0.0,
            inc: true,
        })
    }

    /// Whether the latest backlog estimate says the path is congested.
    fn congestive(&self) -> bool {
        self.samples > 2 && self.diff >= self.beta
    }
}

impl CongestionControl for Veno {
    fn name(&self) -> &'static str {
        "veno"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(rtt) = ack.rtt.filter(|&r| r > 0) {
            let base = self.base_rtt.map_or(rtt, |b| b.min(rtt));
            self.base_rtt = Some(base);
            self.samples = self.samples.saturating_add(1);
            self.diff = self.cwnd * (rtt - base) as f64 / rtt as f64;
        }
        if ack.in_recovery || ack.app_limited {
            return;
        }
        let left = slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
        if left <= 0.0 {
            return;
        }
        if !self.congestive() {
            reno_increase(&mut self.cwnd, left);
            return;
        }
        // Congestive: one packet every other window of ACKs.
        self.acked_cnt += left;
        if self.acked_cnt >= self.cwnd {
            if self.inc {
                self.cwnd += 1.0;
            }
            self.inc = !self.inc;
            self.acked_cnt = 0.0;
        }
    }
    fn on_loss(&mut self, _ev: &LossEvent) {
        self.ssthresh = if self.congestive() {
            self.cwnd / 2.0
        } else {
            self.cwnd * 4.0 / 5.0
        }
        .max(2.0);
        self.cwnd = self.ssthresh;
    }
    /// A reduction found spurious: Linux `tcp_veno.c`: `tcp_reno_undo_cwnd`.
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
        out.push(("veno_diff", self.diff));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn ack(rtt: Nanos, n: u32) -> AckSample {
        AckSample {
            newly_acked: n,
            rtt: Some(rtt),
            ..Default::default()
        }
    }

    fn veno_at(cwnd: f64) -> Veno {
        let mut v = Veno::new(10.0, &Params::new()).unwrap();
        v.cwnd = cwnd;
        v.ssthresh = 1.0;
        v
    }

    #[test]
    fn a_loss_without_backlog_cuts_by_a_fifth_with_backlog_by_half() {
        // cwnd 100, base 100 ms: RTT 102 ms → N = 100·2/102 = 1.96 < 3 (random loss): 80.
        let mut v = veno_at(100.0);
        for rtt in [100 * MS, 102 * MS, 102 * MS] {
            v.on_ack(&ack(rtt, 0));
        }
        v.on_loss(&LossEvent::default());
        assert_eq!(v.cwnd(), 80.0);
        // RTT 110 ms → N = 100·10/110 = 9.1 ≥ 3 (congestive): 50.
        let mut v = veno_at(100.0);
        for rtt in [100 * MS, 110 * MS, 110 * MS] {
            v.on_ack(&ack(rtt, 0));
        }
        v.on_loss(&LossEvent::default());
        assert_eq!(v.cwnd(), 50.0);
    }

    #[test]
    fn reno_until_three_samples() {
        let mut v = veno_at(100.0);
        v.on_ack(&ack(100 * MS, 0));
        v.on_ack(&ack(150 * MS, 0));
        v.on_loss(&LossEvent::default());
        assert_eq!(v.cwnd(), 80.0, "two samples: not yet judged congestive");
    }

    #[test]
    fn congestive_growth_is_one_packet_every_other_window() {
        // N ≥ 3 all along: four windows of ACKs (cwnd 100) add 2 packets, not Reno's 4.
        let mut v = veno_at(100.0);
        for rtt in [100, 120, 120] {
            v.on_ack(&ack(rtt * MS, 0)); // three samples: Veno judges from the third on
        }
        for _ in 0..400 {
            v.on_ack(&ack(120 * MS, 1));
        }
        assert!((v.cwnd() - 102.0).abs() < 1e-9, "{}", v.cwnd());
        // Uncongested (RTT = base): Reno's one per window.
        let mut v = veno_at(100.0);
        for _ in 0..100 {
            v.on_ack(&ack(100 * MS, 1));
        }
        assert!((v.cwnd() - 101.0).abs() < 0.01, "{}", v.cwnd());
    }
}
