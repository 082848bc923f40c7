//! TCP Hybla (C. Caini, R. Firrincieli, "TCP Hybla: a TCP enhancement for heterogeneous networks",
//! Int. J. Satellite Communications and Networking 22(5), 2004; docs/algorithms/papers.md). Notes and
//! DECISIONs: `docs/algorithms/hybla.md`.
//!
//! Hybla makes a long-RTT flow grow, per unit of *time*, as fast as a Reno flow with the reference RTT
//! RTT0 does: with ρ = RTT/RTT0 (at least 1),
//! * slow start: cwnd += 2^ρ − 1 per acknowledged packet (the paper's eq. (5)),
//! * congestion avoidance: cwnd += ρ²/cwnd per acknowledged packet (eq. (6)),
//! * loss and timeout: Reno's (halving; cwnd 1 and slow start after an RTO).
//!
//! DECISIONs:
//! 1. RTT0 = 25 ms (Linux `rtt0`, the paper's and the Libra paper's setting; ns-3 defaults to 50 ms —
//!    set `rtt0 = 0.05` to compare with it).
//! 2. ρ is computed from the **smallest smoothed RTT seen** (Linux `hybla_recalc_param` runs when SRTT
//!    falls below its stored minimum): a queue that inflates the RTT must not make Hybla more aggressive,
//!    or two Hybla flows would race each other's queueing delay.
//! 3. Before the first RTT sample ρ = 1 (Reno). ρ is a real number here; Linux keeps it in 1/8 units
//!    and approximates 2^ρ by a table: the difference is below 1/8 of an increment.
//! 4. A per-ACK increment is capped at one window (`max_increment_ratio`·cwnd, default 1) so a very
//!    large ρ (a satellite RTT over a 25 ms reference: ρ = 24, 2^ρ ≈ 1.7·10⁷) cannot blow the window up
//!    in one ACK; the paper relies on the receiver window for this, Linux on `snd_cwnd_clamp`.

use crate::cc::reno_undo;
use crate::cc::{
    reno_on_loss, reno_on_timeout, AckSample, CongestionControl, LossEvent, TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::{to_secs, Nanos};

pub struct Hybla {
    rtt0: f64,
    max_increment_ratio: f64,
    cwnd: f64,
    ssthresh: f64,
    min_srtt: Nanos,
    rho: f64,
}

impl Hybla {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Hybla, ParamError> {
        let mut r = ParamReader::new("hybla", params);
        let rtt0 = r.f64_in("rtt0", 0.025, 1e-4, 10.0)?;
        let max_increment_ratio = r.f64_in("max_increment_ratio", 1.0, 1e-3, 100.0)?;
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        r.finish()?;
        Ok(Hybla {
            rtt0,
            max_increment_ratio,
            cwnd: initial_cwnd,
            ssthresh,
            min_srtt: 0,
            rho: 1.0,
        })
    }

    pub fn rho(&self) -> f64 {
        self.rho
    }
}

impl CongestionControl for Hybla {
    fn name(&self) -> &'static str {
        "hybla"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if ack.srtt > 0 && (self.min_srtt == 0 || ack.srtt < self.min_srtt) {
            self.min_srtt = ack.srtt;
            self.rho = (to_secs(self.min_srtt) / self.rtt0).max(1.0);
        }
        if ack.in_recovery || ack.app_limited || ack.newly_acked == 0 {
            return;
        }
        let cap = self.max_increment_ratio * self.cwnd;
        let mut acked = ack.newly_acked as f64;
        // Slow start, packet by packet so the switch to congestion avoidance happens at ssthresh.
        while acked > 0.0 && self.cwnd < self.ssthresh {
            let inc = (self.rho.exp2() - 1.0).min(cap);
            self.cwnd = (self.cwnd + inc).min(self.ssthresh);
            acked -= 1.0;
        }
        if acked > 0.0 {
            self.cwnd += (acked * self.rho * self.rho / self.cwnd).min(cap);
        }
    }
    fn on_loss(&mut self, ev: &LossEvent) {
        reno_on_loss(&mut self.cwnd, &mut self.ssthresh, ev);
    }
    /// A reduction found spurious: Linux `tcp_hybla.c`: `tcp_reno_undo_cwnd`; ρ is recomputed from the RTT, so only the window and
    /// threshold are restored.
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
        out.push(("rho", self.rho));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    fn ack(srtt_ms: u64) -> AckSample {
        AckSample {
            newly_acked: 1,
            srtt: srtt_ms * NS_PER_MS,
            ..Default::default()
        }
    }

    #[test]
    fn rho_from_the_smallest_srtt_and_never_below_one() {
        let mut h = Hybla::new(10.0, &Params::new()).unwrap();
        h.on_ack(&ack(200));
        assert!((h.rho() - 8.0).abs() < 1e-12);
        h.on_ack(&ack(400)); // queueing must not raise ρ
        assert!((h.rho() - 8.0).abs() < 1e-12);
        h.on_ack(&ack(100));
        assert!((h.rho() - 4.0).abs() < 1e-12);
        let mut short = Hybla::new(10.0, &Params::new()).unwrap();
        short.on_ack(&ack(10));
        assert_eq!(short.rho(), 1.0);
    }

    #[test]
    fn increments_are_2_pow_rho_minus_1_and_rho_squared_over_w() {
        // ρ = 2 (50 ms over 25 ms): slow start +3 per ACK, congestion avoidance +4/w per ACK.
        let mut h = Hybla::new(10.0, &Params::new()).unwrap();
        h.on_ack(&ack(50));
        assert!((h.cwnd() - 13.0).abs() < 1e-12, "{}", h.cwnd());
        h.ssthresh = 13.0;
        h.on_ack(&ack(50));
        assert!(
            (h.cwnd() - (13.0 + 4.0 / 13.0)).abs() < 1e-12,
            "{}",
            h.cwnd()
        );
        // A window's worth of ACKs in congestion avoidance adds ≈ ρ² packets per RTT (at w = 200 the
        // window's own growth during the round changes this by 2 %).
        h.cwnd = 200.0;
        let w0 = h.cwnd();
        for _ in 0..(w0.round() as usize) {
            h.on_ack(&ack(50));
        }
        assert!((h.cwnd() - w0 - 4.0).abs() < 0.2, "{} → {}", w0, h.cwnd());
    }

    #[test]
    fn huge_rho_is_capped_at_one_window_per_ack() {
        let mut h = Hybla::new(10.0, &Params::new()).unwrap();
        h.on_ack(&ack(600)); // ρ = 24
        assert!((h.cwnd() - 20.0).abs() < 1e-9, "{}", h.cwnd());
    }

    #[test]
    fn loss_halves_like_reno() {
        let mut h = Hybla::new(100.0, &Params::new()).unwrap();
        h.on_loss(&LossEvent {
            in_flight: 103,
            ..Default::default()
        });
        assert_eq!((h.cwnd(), h.ssthresh()), (50.0, 50.0));
    }
}
