//! Scalable TCP (Kelly, "Scalable TCP: improving performance in highspeed wide area networks", CCR 2003).
//!
//! Above the low window: cwnd += 0.01 per acked packet (multiplicative increase of 1 % per RTT); on a
//! loss event cwnd −= 0.125·cwnd. At or below `low_window` (Kelly: 16 packets) the rules are Reno's.
//! Recovery after one loss takes ln(1/0.875)/ln(1.01) ≈ 13.4 RTTs at any window size.
//! Option `linux_ai = true`: Linux's tcp_scalable grows by one packet per min(cwnd, 50) ACKs instead
//! (identical to 0.01/ACK above 100 packets only in the limit; kept for cross-checks against Linux/ns-3).

use crate::cc::reno_undo;
use crate::cc::{
    reno_on_ack, reno_on_timeout, slow_start, AckSample, CongestionControl, LossEvent, TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};

pub struct Scalable {
    ai: f64,
    md: f64,
    low_window: f64,
    linux_ai: bool,
    cwnd: f64,
    ssthresh: f64,
}

impl Scalable {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Scalable, ParamError> {
        let mut r = ParamReader::new("scalable", params);
        let ai = r.f64_in("ai", 0.01, 0.0, 1.0)?;
        let md = r.f64_in("md", 0.125, 0.0, 1.0)?;
        let low_window = r.f64_in("low_window", 16.0, 0.0, 1e9)?;
        let linux_ai = r.bool("linux_ai", false)?;
        // As Reno's: the first slow start ends here instead of at the first loss.
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        r.finish()?;
        Ok(Scalable {
            ai,
            md,
            low_window,
            linux_ai,
            cwnd: initial_cwnd,
            ssthresh,
        })
    }
}

impl CongestionControl for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if self.cwnd <= self.low_window {
            return reno_on_ack(&mut self.cwnd, self.ssthresh, ack);
        }
        if ack.in_recovery || ack.app_limited {
            return;
        }
        let left = slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
        self.cwnd += if self.linux_ai {
            left / self.cwnd.min(50.0)
        } else {
            self.ai * left
        };
    }
    fn on_loss(&mut self, _ev: &LossEvent) {
        self.cwnd = if self.cwnd <= self.low_window {
            (self.cwnd / 2.0).max(2.0)
        } else {
            self.cwnd * (1.0 - self.md)
        };
        self.ssthresh = self.cwnd;
    }
    /// A reduction found spurious: Linux `tcp_scalable.c`: `tcp_reno_undo_cwnd`, cwnd and ssthresh back to at least their prior values.
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_ssthresh_ends_the_first_slow_start() {
        let mut p = Params::new();
        p.insert(
            "initial_ssthresh".into(),
            crate::params::ParamValue::Num(100.0),
        );
        let mut s = Scalable::new(10.0, &p).unwrap();
        for _ in 0..90 {
            s.on_ack(&AckSample {
                newly_acked: 1,
                ..Default::default()
            });
        }
        assert_eq!(s.cwnd(), 100.0);
        // Then 1 % of an acked packet each.
        s.on_ack(&AckSample {
            newly_acked: 10,
            ..Default::default()
        });
        assert!((s.cwnd() - 100.1).abs() < 1e-9, "{}", s.cwnd());
    }

    #[test]
    fn recovery_takes_13_4_rtts_at_any_window() {
        // Ideal ACK clock: one window of ACKs per RTT. Kelly: ln(1/0.875)/ln(1.01) = 13.42 RTTs.
        let want = (1.0f64 / 0.875).ln() / 1.01f64.ln();
        for w0 in [200.0, 2000.0] {
            let mut s = Scalable::new(10.0, &Params::new()).unwrap();
            s.cwnd = w0;
            s.ssthresh = 1.0;
            s.on_loss(&LossEvent::default());
            let mut rtts = 0.0;
            while s.cwnd() < w0 {
                let n = s.cwnd().floor() as u32;
                let before = s.cwnd();
                for _ in 0..n {
                    s.on_ack(&AckSample {
                        newly_acked: 1,
                        ..Default::default()
                    });
                }
                let grown = s.cwnd() - before;
                // count the fraction of the last RTT actually needed
                rtts += if s.cwnd() >= w0 {
                    (w0 - before) / grown
                } else {
                    1.0
                };
            }
            assert!(
                (rtts - want).abs() <= 0.2 * want,
                "w0={w0}: {rtts:.2} RTTs vs {want:.2}"
            );
        }
    }
}
