//! HighSpeed TCP (Floyd, RFC 3649).
//!
//! Above Low_Window the response function is w = 0.12/p^0.835 (RFC 3649 §5), realised per RTT as
//! w ← w + a(w) and on loss w ← (1 − b(w))·w, with (§5, "Specifying the increase and decrease"):
//! * p(w) = exp( (ln w − ln W_low)/(ln W_high − ln W_low) · (ln P_high − ln P_low) + ln P_low ),
//!   P_low = 1.5/W_low² (Reno's response at W_low);
//! * b(w) = (High_Decrease − 0.5)·(ln w − ln W_low)/(ln W_high − ln W_low) + 0.5;
//! * a(w) = w²·p(w)·2·b(w)/(2 − b(w)).
//!
//! At or below Low_Window the rules are Reno's. Defaults (RFC): Low_Window 38, High_Window 83000,
//! High_P 1e-7, High_Decrease 0.1. The functions are evaluated exactly (Linux uses a 73-row table of
//! the same values). `a_b` is public so TCP-Africa's fast mode can reuse it.

use crate::cc::{
    reno_on_ack, reno_on_timeout, slow_start, AckSample, CongestionControl, LossEvent, TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};

/// The RFC 3649 response-function parameters.
#[derive(Clone, Copy, Debug)]
pub struct HsParams {
    pub low_window: f64,
    pub high_window: f64,
    pub high_p: f64,
    pub high_decrease: f64,
}

impl Default for HsParams {
    fn default() -> Self {
        HsParams {
            low_window: 38.0,
            high_window: 83_000.0,
            high_p: 1e-7,
            high_decrease: 0.1,
        }
    }
}

impl HsParams {
    pub fn read(r: &mut ParamReader<'_>) -> Result<HsParams, ParamError> {
        let d = HsParams::default();
        Ok(HsParams {
            low_window: r.positive("low_window", d.low_window)?,
            high_window: r.positive("high_window", d.high_window)?,
            high_p: r.f64_in("high_p", d.high_p, 1e-15, 1.0)?,
            high_decrease: r.f64_in("high_decrease", d.high_decrease, 0.0, 0.5)?,
        })
    }

    /// (a(w), b(w)) for w > low_window; Reno's (1, 0.5) at or below it.
    pub fn a_b(&self, w: f64) -> (f64, f64) {
        if w <= self.low_window {
            return (1.0, 0.5);
        }
        let w = w.min(self.high_window);
        let x = (w.ln() - self.low_window.ln()) / (self.high_window.ln() - self.low_window.ln());
        let p_low = 1.5 / (self.low_window * self.low_window);
        let p = (x * (self.high_p.ln() - p_low.ln()) + p_low.ln()).exp();
        let b = (self.high_decrease - 0.5) * x + 0.5;
        let a = w * w * p * 2.0 * b / (2.0 - b);
        (a.max(1.0), b)
    }
}

pub struct HighSpeed {
    hs: HsParams,
    cwnd: f64,
    ssthresh: f64,
}

impl HighSpeed {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<HighSpeed, ParamError> {
        let mut r = ParamReader::new("highspeed", params);
        let hs = HsParams::read(&mut r)?;
        r.finish()?;
        Ok(HighSpeed {
            hs,
            cwnd: initial_cwnd,
            ssthresh: f64::INFINITY,
        })
    }
}

impl CongestionControl for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if self.cwnd <= self.hs.low_window {
            return reno_on_ack(&mut self.cwnd, self.ssthresh, ack);
        }
        if ack.in_recovery || ack.app_limited {
            return;
        }
        let left = slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
        if left > 0.0 {
            // a(w) packets per RTT = a(w)/w per acked packet.
            self.cwnd += self.hs.a_b(self.cwnd).0 * left / self.cwnd;
        }
    }
    fn on_loss(&mut self, _ev: &LossEvent) {
        let b = self.hs.a_b(self.cwnd).1;
        self.cwnd = ((1.0 - b) * self.cwnd).max(2.0);
        self.ssthresh = self.cwnd;
    }
    fn on_timeout(&mut self, ev: &TimeoutEvent) {
        reno_on_timeout(&mut self.cwnd, &mut self.ssthresh, ev);
    }
    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let (a, b) = self.hs.a_b(self.cwnd);
        out.push(("hs_a", a));
        out.push(("hs_b", b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_b_endpoints_and_shape() {
        // The RFC's anchors: Reno's (1, 0.5) at Low_Window and b = High_Decrease at High_Window, where
        // a = 83000²·1e-7·2·0.1/1.9 = 72.5 (the RFC's table ends at a = 72); both monotone between.
        let hs = HsParams::default();
        let (a, b) = hs.a_b(38.0 + 1e-9);
        assert!((a - 1.0).abs() < 0.01 && (b - 0.5).abs() < 1e-6, "{a} {b}");
        let (a, b) = hs.a_b(83_000.0);
        assert!((a - 72.5).abs() < 0.1 && (b - 0.1).abs() < 1e-9, "{a} {b}");
        let mut last = hs.a_b(39.0);
        for w in [100.0, 1_000.0, 10_000.0, 50_000.0] {
            let ab = hs.a_b(w);
            assert!(ab.0 > last.0 && ab.1 < last.1, "w={w}");
            last = ab;
        }
        // Reno below Low_Window.
        assert_eq!(hs.a_b(20.0), (1.0, 0.5));
    }

    #[test]
    fn equilibrium_window_follows_the_response_function() {
        // Deterministic loss every 1/p packets: the window settles where growth per cycle equals the
        // decrease; compare the cycle-average window with 0.12/p^0.835 (RFC 3649 §5).
        for p in [1e-5f64, 1e-4] {
            let mut h = HighSpeed::new(10.0, &Params::new()).unwrap();
            h.ssthresh = 1.0;
            h.cwnd = 0.12 / p.powf(0.835);
            let per_loss = (1.0 / p) as u64;
            let (mut sum, mut n) = (0.0, 0u64);
            for cycle in 0..200 {
                for _ in 0..per_loss {
                    h.on_ack(&AckSample {
                        newly_acked: 1,
                        ..Default::default()
                    });
                    if cycle >= 100 {
                        sum += h.cwnd();
                        n += 1;
                    }
                }
                h.on_loss(&LossEvent::default());
            }
            let mean = sum / n as f64;
            let want = 0.12 / p.powf(0.835);
            assert!(
                (mean / want - 1.0).abs() < 0.25,
                "p={p}: mean window {mean:.0} vs {want:.0}"
            );
        }
    }
}
