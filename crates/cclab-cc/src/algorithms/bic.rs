//! BIC-TCP (L. Xu, K. Harfoush, I. Rhee, "Binary increase congestion control (BIC) for fast long-distance
//! networks", IEEE INFOCOM 2004), with the constants and the formulation of Linux `tcp_bic.c` (which
//! ns-3's `TcpBic` follows); docs/algorithms/papers.md. Notes and DECISIONs: `docs/algorithms/bic.md`.
//!
//! After a loss at window W_max the window drops to β·W_max and then searches for the old maximum:
//! * **binary search increase** below W_max: each RTT the window moves a fixed fraction 1/B of the
//!   remaining distance (W_max − w)/B, at most S_max packets (additive increase when far away) and at
//!   least S_min (the search stops creeping once it is within B packets: "smooth" increase of
//!   B/smooth_part packets per RTT);
//! * **max probing** above W_max: slowly at first (B/smooth_part per RTT while within B packets), then
//!   (w − W_max)/(B − 1) per RTT, growing with the distance, up to S_max per RTT: the mirror image of the
//!   search, looking for a new maximum;
//! * **multiplicative decrease**: w ← β·w, β = 819/1024 ≈ 0.8 (Linux; the paper's β is 0.8 too);
//! * **fast convergence**: a loss below the previous maximum means another flow needs room, so the
//!   maximum remembered is lowered to w·(1 + β)/2;
//! * at or below `low_window` (14 packets) the rules are Reno's (halving, +1 per RTT).
//!
//! Per-ACK form (Linux): the window grows by 1/cnt per acknowledged packet, cnt = w / (increase per
//! RTT), so one window of ACKs applies the per-RTT increase above.
//!
//! DECISIONs:
//! 1. B = 4 (Linux `BICTCP_B`; the paper's pure binary search is B = 2): settable as `b`.
//! 2. S_max = 16 (Linux `max_increment`; the paper and the Madison paper use 32: set `s_max = 32` for
//!    Madison's comparison), S_min = 0.01 (paper) — Linux's "smooth" increase B/smooth_part = 0.2 per RTT
//!    with smooth_part 20 plays S_min's role near W_max; both are parameters.
//! 3. Before the first loss (W_max unknown) Linux caps cnt at 20 in congestion avoidance (at least
//!    w/20 packets per RTT); kept (`initial_cnt`).
//! 4. Slow start and RTO as Reno (Linux: `tcp_slow_start`, `tcp_reno_undo_cwnd`-free RTO).

use crate::cc::reno_undo;
use crate::cc::{
    reno_on_timeout, slow_start, AckSample, CongestionControl, LossEvent, TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};

pub struct Bic {
    beta: f64,
    b: f64,
    s_max: f64,
    s_min: f64,
    smooth_part: f64,
    low_window: f64,
    initial_cnt: f64,
    fast_convergence: bool,
    cwnd: f64,
    ssthresh: f64,
    /// W_max: the window at the last loss (lowered by fast convergence); 0 before the first loss.
    last_max: f64,
}

impl Bic {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Bic, ParamError> {
        let mut r = ParamReader::new("bic", params);
        let beta = r.f64_in("beta", 819.0 / 1024.0, 0.0, 1.0)?;
        let b = r.f64_in("b", 4.0, 1.01, 100.0)?;
        let s_max = r.positive("s_max", 16.0)?;
        let s_min = r.positive("s_min", 0.01)?;
        let smooth_part = r.positive("smooth_part", 20.0)?;
        let low_window = r.f64_in("low_window", 14.0, 0.0, 1e9)?;
        let initial_cnt = r.positive("initial_cnt", 20.0)?;
        let fast_convergence = r.bool("fast_convergence", true)?;
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        r.finish()?;
        Ok(Bic {
            beta,
            b,
            s_max,
            s_min,
            smooth_part,
            low_window,
            initial_cnt,
            fast_convergence,
            cwnd: initial_cwnd,
            ssthresh,
            last_max: 0.0,
        })
    }

    pub fn w_max(&self) -> f64 {
        self.last_max
    }

    /// Packets the window grows by per RTT at window `w` (congestion avoidance).
    pub fn increase_per_rtt(&self, w: f64) -> f64 {
        if w <= self.low_window {
            return 1.0;
        }
        let (b, smax) = (self.b, self.s_max);
        let smooth = (b / self.smooth_part).max(self.s_min);
        let inc = if w < self.last_max {
            // binary search toward W_max
            let dist = (self.last_max - w) / b;
            if dist > smax {
                smax
            } else if dist <= 1.0 {
                smooth
            } else {
                dist
            }
        } else if w < self.last_max + b {
            smooth
        } else if w < self.last_max + smax * (b - 1.0) {
            // max probing: slow near the old maximum, faster as the window leaves it
            (w - self.last_max) / (b - 1.0)
        } else {
            smax
        };
        if self.last_max == 0.0 {
            inc.max(w / self.initial_cnt)
        } else {
            inc
        }
    }
}

impl CongestionControl for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if ack.in_recovery || ack.app_limited {
            return;
        }
        let left = slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
        if left > 0.0 {
            self.cwnd += left * self.increase_per_rtt(self.cwnd) / self.cwnd;
        }
    }
    fn on_loss(&mut self, _ev: &LossEvent) {
        let w = self.cwnd;
        self.last_max = if w < self.last_max && self.fast_convergence {
            w * (1.0 + self.beta) / 2.0
        } else {
            w
        };
        self.cwnd = if w <= self.low_window {
            (w / 2.0).max(2.0)
        } else {
            (w * self.beta).max(2.0)
        };
        self.ssthresh = self.cwnd;
    }
    /// A reduction found spurious: Linux's current `tcp_bic.c` uses `tcp_reno_undo_cwnd` (its older `bictcp_undo_cwnd`,
    /// max(cwnd, last_max_cwnd), is gone): cwnd and ssthresh back to at least their prior values; W_max keeps
    /// the reduction's value, so the search resumes from the restored window.
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
        out.push(("w_max", self.last_max));
        out.push(("increase_per_rtt", self.increase_per_rtt(self.cwnd)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One RTT of ACKs (one per packet of the window at the RTT's start).
    fn rtt(b: &mut Bic) {
        for _ in 0..(b.cwnd().floor() as usize) {
            b.on_ack(&AckSample {
                newly_acked: 1,
                ..Default::default()
            });
        }
    }

    fn after_loss_at(w: f64) -> Bic {
        let mut b = Bic::new(10.0, &Params::new()).unwrap();
        b.cwnd = w;
        b.ssthresh = 1.0;
        b.on_loss(&LossEvent::default());
        b
    }

    #[test]
    fn decrease_to_0_8_and_remember_w_max() {
        let b = after_loss_at(1000.0);
        assert_eq!(b.w_max(), 1000.0);
        assert!((b.cwnd() - 1000.0 * 819.0 / 1024.0).abs() < 1e-9);
        // Fast convergence: a loss below W_max lowers the remembered maximum to w(1 + β)/2.
        let mut b = b;
        let w = b.cwnd();
        b.on_loss(&LossEvent::default());
        assert!((b.w_max() - w * (1.0 + 819.0 / 1024.0) / 2.0).abs() < 1e-9);
        // Reno below the low window.
        let b = after_loss_at(12.0);
        assert_eq!(b.cwnd(), 6.0);
    }

    #[test]
    fn binary_search_then_max_probing() {
        // Loss at 1000: w = 799.8. Distance 200.2/4 = 50 > S_max → +16 per RTT (additive phase), then
        // about distance/4 per RTT (the remaining distance shrinks geometrically), then
        // the smooth 0.2 per RTT within 4 packets of W_max, then probing beyond.
        let mut b = after_loss_at(1000.0);
        let mut incs = vec![];
        for _ in 0..40 {
            let w0 = b.cwnd();
            rtt(&mut b);
            incs.push((w0, b.cwnd() - w0));
        }
        let (w0, inc0) = incs[0];
        assert!((inc0 - 16.0).abs() < 0.2, "additive phase: +{inc0} at {w0}");
        // Find the first RTT in the binary-search phase and check the distance shrinks by ≈ 1/4.
        let k = incs
            .iter()
            .position(|&(w, _)| (1000.0 - w) / 4.0 <= 16.0)
            .unwrap();
        for &(w, inc) in &incs[k..k + 3] {
            // Per ACK the window grows by (W_max − w)/(B·w), so over one window of ACKs the distance
            // decays continuously: growth = d·(1 − e^(−1/B)) = 0.221·d, not the discrete d/B = 0.25·d.
            let d = 1000.0 - w;
            let want = d * (1.0 - (-0.25f64).exp());
            if d > 4.0 {
                // 3 %: floor(w) ACKs per round instead of exactly w.
                assert!(
                    (inc / want - 1.0).abs() < 0.03,
                    "at {w}: +{inc}, want {want}"
                );
            }
        }
        // Near W_max the search creeps (B/smooth_part = 0.2 packets per RTT): it reaches the old
        // maximum without overshooting it.
        let mut n = 0;
        while b.cwnd() < 1000.0 && n < 200 {
            let w0 = b.cwnd();
            rtt(&mut b);
            if 1000.0 - w0 < 3.0 {
                assert!(
                    (b.cwnd() - w0) < 0.25,
                    "creep near W_max: +{} at {w0}",
                    b.cwnd() - w0
                );
            }
            n += 1;
        }
        assert!(
            b.cwnd() >= 1000.0 && b.cwnd() < 1000.3,
            "{} after {n} more RTTs",
            b.cwnd()
        );
        // Max probing: increments grow again once past W_max + B and reach S_max.
        let mut last = 0.0;
        for _ in 0..60 {
            let w0 = b.cwnd();
            rtt(&mut b);
            last = b.cwnd() - w0;
        }
        assert!(
            (last - 16.0).abs() < 0.2,
            "probing capped at S_max: +{last}"
        );
    }

    #[test]
    fn reno_increase_at_small_windows() {
        let mut b = Bic::new(10.0, &Params::new()).unwrap();
        b.ssthresh = 1.0;
        b.last_max = 100.0;
        let w0 = b.cwnd();
        rtt(&mut b);
        assert!((b.cwnd() - w0 - 1.0).abs() < 0.1);
    }
}
