//! TCP-Africa (R. King, R. Baraniuk, R. Riedi, "TCP-Africa: an adaptive and fair rapid increase rule for
//! scalable TCP", IEEE INFOCOM 2005; docs/algorithms/papers.md). Notes and DECISIONs:
//! `docs/algorithms/africa.md`.
//!
//! A two-mode sender: while the path shows little queueing it increases like HighSpeed TCP ("fast
//! mode"), once its own backlog estimate reaches a threshold it increases like Reno ("slow mode"), so it
//! is scalable on an empty high-BDP path and as gentle as Reno near congestion.
//! * Backlog estimate (Vegas): diff = w·(RTT − baseRTT)/RTT packets queued, baseRTT the minimum RTT
//!   seen, RTT the minimum sample of the last round trip.
//! * diff < Δ (fast mode): w += a(w)/w per acknowledged packet (RFC 3649's a(w), as `highspeed.rs`);
//!   diff ≥ Δ (slow mode): w += 1/w.
//! * Loss: fast mode w ← (1 − b(w))·w (RFC 3649's b(w)); slow mode w ← w/2 (Reno's).
//! * Below HighSpeed's Low_Window (38) a(w) = 1 and b(w) = ½: plain Reno.
//!
//! DECISIONs:
//! 1. Δ = `delta` = 1.5 packets by default [unverified: none of the five papers of
//!    docs/algorithms/papers.md gives Africa's setting; Vegas's α-β band is 1–3, and 1.5 keeps fast mode
//!    only while the flow's own queue is under two packets]. Settable.
//! 2. The mode is decided once per round trip (on the first ACK after a window's worth of data), from
//!    the smallest RTT sample of that round trip, as Vegas does: per-ACK samples would flap the mode on
//!    ACK-clock jitter. The mode in force at a loss chooses the decrease.
//! 3. Slow start and RTO as Reno; the HighSpeed parameters (`low_window`, `high_window`, `high_p`,
//!    `high_decrease`) are settable as for `highspeed`.

use crate::algorithms::highspeed::HsParams;
use crate::cc::reno_undo;
use crate::cc::{
    reno_on_timeout, slow_start, AckSample, CongestionControl, LossEvent, TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::Nanos;

pub struct Africa {
    hs: HsParams,
    delta: f64,
    cwnd: f64,
    ssthresh: f64,
    base_rtt: Nanos,
    /// Smallest RTT sample of the round trip in progress.
    round_min: Nanos,
    /// The round trip ends when this many packets have been acknowledged.
    round_end: u64,
    fast: bool,
    backlog: f64,
}

impl Africa {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Africa, ParamError> {
        let mut r = ParamReader::new("africa", params);
        let hs = HsParams::read(&mut r)?;
        let delta = r.positive("delta", 1.5)?;
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        r.finish()?;
        Ok(Africa {
            hs,
            delta,
            cwnd: initial_cwnd,
            ssthresh,
            base_rtt: 0,
            round_min: 0,
            round_end: 0,
            fast: true,
            backlog: 0.0,
        })
    }

    pub fn fast_mode(&self) -> bool {
        self.fast
    }

    pub fn backlog(&self) -> f64 {
        self.backlog
    }
}

impl CongestionControl for Africa {
    fn name(&self) -> &'static str {
        "africa"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(r) = ack.rtt.filter(|&r| r > 0) {
            if self.base_rtt == 0 || r < self.base_rtt {
                self.base_rtt = r;
            }
            if self.round_min == 0 || r < self.round_min {
                self.round_min = r;
            }
        }
        if ack.delivered >= self.round_end {
            // End of a round trip: re-estimate the backlog and choose the mode (DECISION 2).
            if self.round_min > 0 && self.base_rtt > 0 {
                let rtt = self.round_min as f64;
                self.backlog = self.cwnd * (rtt - self.base_rtt as f64) / rtt;
                self.fast = self.backlog < self.delta;
            }
            self.round_min = 0;
            self.round_end = ack.delivered + self.cwnd.max(1.0) as u64;
        }
        if ack.in_recovery || ack.app_limited {
            return;
        }
        let left = slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
        if left > 0.0 {
            let a = if self.fast {
                self.hs.a_b(self.cwnd).0
            } else {
                1.0
            };
            self.cwnd += left * a / self.cwnd;
        }
    }
    fn on_loss(&mut self, _ev: &LossEvent) {
        let b = if self.fast {
            self.hs.a_b(self.cwnd).1
        } else {
            0.5
        };
        self.cwnd = (self.cwnd * (1.0 - b)).max(2.0);
        self.ssthresh = self.cwnd;
    }
    /// A reduction found spurious: Not in Linux. Both modes are Reno-like window rules (Reno's or HighSpeed's a, b), and the mode is
    /// re-decided from the delay on every ACK, so undo is Reno's: the window the loss took away comes back.
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
        out.push(("fast_mode", if self.fast { 1.0 } else { 0.0 }));
        out.push(("backlog", self.backlog));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    /// One RTT of per-packet ACKs whose RTT sample is `rtt_ms`; returns the window growth.
    fn rtt(a: &mut Africa, delivered: &mut u64, rtt_ms: u64) -> f64 {
        rtt_ns(a, delivered, rtt_ms * NS_PER_MS)
    }

    fn rtt_ns(a: &mut Africa, delivered: &mut u64, rtt_ns: u64) -> f64 {
        let w0 = a.cwnd();
        for _ in 0..(w0.floor() as usize) {
            *delivered += 1;
            a.on_ack(&AckSample {
                newly_acked: 1,
                delivered: *delivered,
                rtt: Some(rtt_ns),
                ..Default::default()
            });
        }
        a.cwnd() - w0
    }

    fn in_ca(w: f64) -> Africa {
        let mut a = Africa::new(10.0, &Params::new()).unwrap();
        a.cwnd = w;
        a.ssthresh = 1.0;
        a
    }

    #[test]
    fn fast_mode_grows_by_a_w_per_rtt_on_an_empty_path() {
        let mut a = in_ca(1000.0);
        let mut d = 0;
        rtt(&mut a, &mut d, 100); // base RTT 100 ms
        let want = HsParams::default().a_b(a.cwnd()).0;
        let grew = rtt(&mut a, &mut d, 100);
        assert!(a.fast_mode());
        assert!(want > 5.0, "a(1000) = {want}");
        assert!(
            (grew / want - 1.0).abs() < 0.05,
            "grew {grew}, a(w) = {want}"
        );
    }

    #[test]
    fn slow_mode_grows_by_one_per_rtt_above_the_backlog_threshold() {
        let mut a = in_ca(1000.0);
        let mut d = 0;
        rtt(&mut a, &mut d, 100);
        // RTT 101 ms: backlog = w·1/101 ≈ 10 packets ≥ Δ = 1.5. A round's samples decide the mode at
        // its end (the next round's first ACK): one round to observe, then slow mode.
        rtt(&mut a, &mut d, 101);
        assert!(a.fast_mode());
        rtt(&mut a, &mut d, 101);
        assert!(!a.fast_mode(), "backlog {}", a.backlog());
        assert!((a.backlog() - a.cwnd() / 101.0).abs() < 0.5);
        let grew = rtt(&mut a, &mut d, 101);
        assert!((grew - 1.0).abs() < 0.05, "grew {grew}");
        // The queue drains (RTT back to 100 ms): fast mode again after one observed round.
        rtt(&mut a, &mut d, 100);
        rtt(&mut a, &mut d, 100);
        assert!(a.fast_mode(), "backlog {}", a.backlog());
    }

    #[test]
    fn the_mode_switches_at_the_backlog_threshold() {
        // Backlogs just either side of Δ = 1.5: 1.4 keeps fast mode, 1.6 selects slow mode, and the
        // increase of the following round is a(w) or 1 accordingly.
        for (target, fast) in [(1.4, true), (1.6, false)] {
            let mut a = in_ca(1000.0);
            let mut d = 0;
            let base_ns = 100 * NS_PER_MS;
            rtt_ns(&mut a, &mut d, base_ns);
            // The backlog is computed with the window at the round's end: this round grows it by a(w).
            let w_end = a.cwnd() + HsParams::default().a_b(a.cwnd()).0;
            // diff = w·(RTT − base)/RTT = target  ⇔  RTT = base·w/(w − target).
            let r = (base_ns as f64 * w_end / (w_end - target)).round() as u64;
            rtt_ns(&mut a, &mut d, r);
            // The next round's first ACK closes the observed round and decides the mode.
            let w0 = a.cwnd();
            let grew = rtt_ns(&mut a, &mut d, r);
            assert!(
                (a.backlog() - target).abs() < 0.02,
                "backlog {} for target {target}",
                a.backlog()
            );
            assert_eq!(a.fast_mode(), fast, "backlog {}", a.backlog());
            let want = if fast {
                HsParams::default().a_b(w0).0
            } else {
                1.0
            };
            assert!(
                (grew / want - 1.0).abs() < 0.05,
                "backlog {target}: grew {grew}, want {want}"
            );
        }
    }

    #[test]
    fn decrease_depends_on_the_mode() {
        let mut a = in_ca(1000.0);
        let b = HsParams::default().a_b(1000.0).1;
        a.on_loss(&LossEvent::default());
        assert!((a.cwnd() - 1000.0 * (1.0 - b)).abs() < 1e-9);
        let mut s = in_ca(1000.0);
        s.fast = false;
        s.on_loss(&LossEvent::default());
        assert_eq!(s.cwnd(), 500.0);
    }
}
