//! Reno / NewReno congestion control (RFC 5681; recovery per RFC 6582 / RFC 6675 lives in the transport).
//!
//! The window rules are the same for Reno, NewReno and SACK: they differ only in how the transport
//! recovers lost packets, so one algorithm serves all three names and the registry tells the transport
//! which [`Recovery`](crate::cc::Recovery) to run.
//!
//! * slow start: cwnd += 1 per acked packet while cwnd < ssthresh;
//! * congestion avoidance: cwnd += 1/cwnd per acked packet;
//! * loss event (3 dup-ACKs / SACK): ssthresh = max(FlightSize/2, 2) (RFC 5681 eq. 4), cwnd = ssthresh;
//! * RTO: ssthresh = max(FlightSize/2, 2), cwnd = 1 (loss window), slow start;
//! * with `[transport] hystart`, slow start ends by HyStart++ (RFC 9406) when the RTT rises;
//! * `abe = true` (ABE, RFC 8511): an ECN-Echo reduces to β_ecn = 0.8 of the window instead of
//!   loss's 0.5 (a CE mark comes from an AQM that keeps the queue short, so the deep cut sized for a
//!   full drop-tail buffer would leave the link idle); losses keep 0.5. Off by default;
//! * a reduction found spurious is undone as Linux does (`tcp_reno_undo_cwnd`): cwnd and ssthresh go
//!   back to at least their values before it.

use crate::cc::{
    reno_increase, reno_on_loss, reno_on_timeout, reno_undo, AckSample, CongestionControl,
    LossEvent, TimeoutEvent,
};
use crate::hystart::{slow_start_hystart, HyStartPlusPlus};
use crate::params::{ParamError, ParamReader, Params};

/// RFC 8511 §3's β_ecn for Reno-like windows.
pub const ABE_BETA_RENO: f64 = 0.8;

pub struct Reno {
    name: &'static str,
    /// ABE (RFC 8511): an ECN-Echo reduces to [`ABE_BETA_RENO`] of the window.
    abe: bool,
    cwnd: f64,
    ssthresh: f64,
    hystart: Option<HyStartPlusPlus>,
}

impl Reno {
    pub fn new(name: &'static str, initial_cwnd: f64, params: &Params) -> Result<Self, ParamError> {
        let mut r = ParamReader::new(name, params);
        let ssthresh = r.positive("initial_ssthresh", f64::INFINITY.min(1e12))?;
        let abe = r.bool("abe", false)?;
        r.finish()?;
        Ok(Reno {
            name,
            abe,
            cwnd: initial_cwnd,
            ssthresh,
            hystart: None,
        })
    }

    /// Slow start ends by HyStart++ (RFC 9406) when `on`.
    pub fn with_hystart(mut self, on: bool) -> Self {
        self.hystart = on.then(HyStartPlusPlus::default);
        self
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        self.name
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    /// `reno_on_ack`, with slow start through HyStart++ when the flow runs it.
    fn on_ack(&mut self, ack: &AckSample) {
        if ack.in_recovery || ack.app_limited {
            return;
        }
        let mut left = ack.newly_acked as f64;
        if self.cwnd < self.ssthresh {
            left = slow_start_hystart(
                &mut self.cwnd,
                &mut self.ssthresh,
                self.hystart.as_mut(),
                ack,
            );
        }
        if left > 0.0 {
            reno_increase(&mut self.cwnd, left);
        }
    }
    fn on_loss(&mut self, ev: &LossEvent) {
        if ev.ecn && self.abe {
            // RFC 8511 §3: ssthresh = max(FlightSize·β_ecn, 2), FlightSize bounded by cwnd as for
            // loss (reno_ssthresh's DECISION).
            self.ssthresh = ((ev.in_flight as f64).min(self.cwnd) * ABE_BETA_RENO).max(2.0);
            self.cwnd = self.ssthresh;
        } else {
            reno_on_loss(&mut self.cwnd, &mut self.ssthresh, ev);
        }
    }
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

    fn ack(n: u32) -> AckSample {
        AckSample {
            newly_acked: n,
            cum_advanced: true,
            ..Default::default()
        }
    }

    #[test]
    fn slow_start_then_linear() {
        let mut r = Reno::new("newreno", 10.0, &Params::new()).unwrap();
        r.ssthresh = 20.0;
        for _ in 0..10 {
            r.on_ack(&ack(1));
        }
        assert_eq!(r.cwnd(), 20.0);
        // one window of ACKs in congestion avoidance adds ~1 packet
        for _ in 0..20 {
            r.on_ack(&ack(1));
        }
        assert!((r.cwnd() - 21.0).abs() < 0.05, "{}", r.cwnd());
    }

    #[test]
    fn halves_on_loss_and_resets_on_timeout() {
        let mut r = Reno::new("newreno", 40.0, &Params::new()).unwrap();
        r.on_loss(&LossEvent {
            in_flight: 43,
            ..Default::default()
        });
        assert_eq!((r.cwnd(), r.ssthresh()), (20.0, 20.0));
        r.on_timeout(&TimeoutEvent {
            in_flight: 10,
            backoffs: 1,
            ..Default::default()
        });
        assert_eq!((r.cwnd(), r.ssthresh()), (1.0, 5.0));
        r.on_loss(&LossEvent {
            in_flight: 2,
            ..Default::default()
        });
        assert_eq!(r.ssthresh(), 2.0);
    }

    #[test]
    fn ssthresh_is_half_the_smaller_of_flightsize_and_cwnd() {
        // FlightSize far above cwnd (a long-unrepaired hole): halve cwnd, never raise it (RFC 5681's
        // FlightSize/2 would give 3325 here).
        let mut r = Reno::new("newreno", 647.0, &Params::new()).unwrap();
        r.on_loss(&LossEvent {
            in_flight: 6651,
            ..Default::default()
        });
        assert_eq!((r.cwnd(), r.ssthresh()), (323.5, 323.5));
        // Application-limited (FlightSize below cwnd): RFC 5681's FlightSize/2.
        let mut r = Reno::new("newreno", 100.0, &Params::new()).unwrap();
        r.on_loss(&LossEvent {
            in_flight: 30,
            ..Default::default()
        });
        assert_eq!(r.cwnd(), 15.0);
    }

    #[test]
    fn abe_backs_off_to_0_8_on_ecn_and_0_5_on_loss() {
        let mut p = Params::new();
        p.insert("abe".into(), crate::params::ParamValue::Bool(true));
        let ecn = LossEvent {
            in_flight: 100,
            ecn: true,
            ..Default::default()
        };
        let mut r = Reno::new("newreno", 100.0, &p).unwrap();
        r.on_loss(&ecn);
        assert_eq!((r.cwnd(), r.ssthresh()), (80.0, 80.0));
        r.on_loss(&LossEvent {
            in_flight: 80,
            ..Default::default()
        });
        assert_eq!(r.cwnd(), 40.0);
        // Off (the default): an ECN-Echo halves like a loss.
        let mut r = Reno::new("newreno", 100.0, &Params::new()).unwrap();
        r.on_loss(&ecn);
        assert_eq!(r.cwnd(), 50.0);
    }

    #[test]
    fn undo_restores_the_window_and_threshold_before_the_reduction() {
        let mut r = Reno::new("newreno", 100.0, &Params::new()).unwrap();
        r.ssthresh = 120.0;
        r.on_loss(&LossEvent {
            in_flight: 100,
            ..Default::default()
        });
        assert_eq!(r.cwnd(), 50.0);
        r.undo_cwnd(100.0, 120.0);
        assert_eq!((r.cwnd(), r.ssthresh()), (100.0, 120.0));
        // Never lowers: a window that grew past the prior one since stays.
        r.cwnd = 130.0;
        r.undo_cwnd(100.0, 120.0);
        assert_eq!(r.cwnd(), 130.0);
    }

    #[test]
    fn no_growth_in_recovery() {
        let mut r = Reno::new("newreno", 10.0, &Params::new()).unwrap();
        r.on_ack(&AckSample {
            newly_acked: 5,
            in_recovery: true,
            ..Default::default()
        });
        assert_eq!(r.cwnd(), 10.0);
    }
}
