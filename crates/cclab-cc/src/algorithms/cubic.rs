//! CUBIC (Ha, Rhee, Xu 2008; RFC 9438).
//!
//! * Window growth in congestion avoidance (RFC 9438 §4.2, eq. 1–2):
//!   `W_cubic(t) = C·(t − K)³ + W_max`, `K = ∛(W_max·(1 − β)/C)`, t = time since the epoch began.
//!   Each ACK moves cwnd toward `target = W_cubic(t + RTT)` clamped to [cwnd, 1.5·cwnd]
//!   (§4.4: `cwnd += (target − cwnd)/cwnd` per acked packet).
//! * Reno-friendly region (§4.3, eq. 4): `W_est += α_cubic·acked/cwnd`, `α_cubic = 3(1 − β)/(1 + β)`;
//!   when `W_cubic(t) < W_est`, cwnd follows W_est.
//! * Congestion event (§4.6): `W_max = cwnd` (fast convergence, §4.7: `W_max = cwnd·(1 + β)/2` if the
//!   window had not regained the previous W_max), `ssthresh = cwnd = max(β·cwnd, 2)`, a new epoch.
//! * Timeout (§4.8): ssthresh as for a congestion event, cwnd = 1, slow start; the epoch restarts.
//! * Slow start below ssthresh as Reno (HyStart is optional in the RFC and off here).
//!
//! * ABE (RFC 8511, `abe = true`, off by default): an ECN-Echo reduces to β_ecn = 0.85 of the window
//!   instead of β (a CE mark comes from an AQM keeping the queue short); W_max and fast convergence as
//!   for loss, and K from the β used, so the cubic still starts at the reduced window.
//! * Undo (a reduction found spurious): Reno's, cwnd and ssthresh back to at least their prior values.
//!   Linux's current `tcp_cubic.c` uses `tcp_reno_undo_cwnd` too (its old `bictcp_undo_cwnd`,
//!   max(cwnd, last_max_cwnd), is gone); W_max keeps the reduction's value and the next epoch starts at
//!   the restored window (a plateau there when it is at or above W_max), as in Linux.
//!
//! Defaults: C = 0.4, β = 0.7 (RFC and Linux). Windows in packets, time in seconds.
//! Deviations from Linux: HyStart++ (RFC 9406, `[transport] hystart`) in place of Linux's HyStart, and off
//! unless asked for; no per-jiffy cubic table, the exact formula is evaluated.

use crate::cc::{reno_undo, AckSample, CongestionControl, LossEvent, TimeoutEvent};
use crate::hystart::{slow_start_hystart, HyStartPlusPlus};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::{to_secs, Nanos};

/// RFC 8511 §3's β_ecn for CUBIC.
pub const ABE_BETA_CUBIC: f64 = 0.85;

pub struct Cubic {
    c: f64,
    beta: f64,
    abe: bool,
    /// The multiplicative factor of the last reduction (β, or β_ecn with ABE): K = ∛(W_max(1 − it)/C).
    epoch_beta: f64,
    fast_convergence: bool,
    tcp_friendly: bool,
    cwnd: f64,
    ssthresh: f64,
    w_max: f64,
    /// W_max before the latest reduction (fast convergence compares against it).
    w_last_max: f64,
    k: f64,
    /// Start of the current congestion-avoidance epoch (None until the first CA ACK).
    epoch: Option<Nanos>,
    w_est: f64,
    hystart: Option<HyStartPlusPlus>,
}

impl Cubic {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Cubic, ParamError> {
        let mut r = ParamReader::new("cubic", params);
        let c = r.positive("c", 0.4)?;
        let beta = r.f64_in("beta", 0.7, 0.01, 0.99)?;
        let fast_convergence = r.bool("fast_convergence", true)?;
        let tcp_friendly = r.bool("tcp_friendly", true)?;
        let abe = r.bool("abe", false)?;
        r.finish()?;
        Ok(Cubic {
            c,
            beta,
            abe,
            epoch_beta: beta,
            fast_convergence,
            tcp_friendly,
            cwnd: initial_cwnd,
            ssthresh: f64::INFINITY,
            w_max: 0.0,
            w_last_max: 0.0,
            k: 0.0,
            epoch: None,
            w_est: 0.0,
            hystart: None,
        })
    }

    /// Slow start ends by HyStart++ (RFC 9406) when `on`.
    pub fn with_hystart(mut self, on: bool) -> Self {
        self.hystart = on.then(HyStartPlusPlus::default);
        self
    }

    /// W_cubic(t), packets (RFC 9438 eq. 1).
    pub fn w_cubic(&self, t: f64) -> f64 {
        self.c * (t - self.k).powi(3) + self.w_max
    }

    /// A congestion event reducing the window to `beta` of it (β, or β_ecn for ABE).
    fn reduce(&mut self, beta: f64) {
        self.w_max = if self.fast_convergence && self.cwnd < self.w_last_max {
            self.cwnd * (1.0 + self.beta) / 2.0
        } else {
            self.cwnd
        };
        self.w_last_max = self.w_max;
        self.ssthresh = (self.cwnd * beta).max(2.0);
        self.epoch_beta = beta;
        self.epoch = None;
    }

    fn start_epoch(&mut self, now: Nanos) {
        self.epoch = Some(now);
        if self.cwnd < self.w_max {
            self.k = (self.w_max * (1.0 - self.epoch_beta) / self.c).cbrt();
        } else {
            // Epoch begins at or above W_max (e.g. slow start ended without loss): plateau here.
            self.k = 0.0;
            self.w_max = self.cwnd;
        }
        self.w_est = self.cwnd;
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckSample) {
        if ack.in_recovery || ack.app_limited || ack.newly_acked == 0 {
            return;
        }
        let mut acked = ack.newly_acked as f64;
        if self.cwnd < self.ssthresh {
            acked = slow_start_hystart(
                &mut self.cwnd,
                &mut self.ssthresh,
                self.hystart.as_mut(),
                ack,
            );
            if acked <= 0.0 {
                return;
            }
        }
        if self.epoch.is_none() {
            self.start_epoch(ack.now);
        }
        let t = to_secs(ack.now - self.epoch.unwrap_or(ack.now));
        let rtt = to_secs(if ack.srtt > 0 { ack.srtt } else { ack.min_rtt });
        let target = self.w_cubic(t + rtt).clamp(self.cwnd, 1.5 * self.cwnd);
        self.cwnd += (target - self.cwnd) / self.cwnd * acked;
        if self.tcp_friendly {
            let alpha = 3.0 * (1.0 - self.beta) / (1.0 + self.beta);
            self.w_est += alpha * acked / self.cwnd;
            if self.w_cubic(t) < self.w_est && self.cwnd < self.w_est {
                self.cwnd = self.w_est;
            }
        }
    }

    fn on_loss(&mut self, ev: &LossEvent) {
        let beta = if ev.ecn && self.abe {
            ABE_BETA_CUBIC
        } else {
            self.beta
        };
        self.reduce(beta);
        self.cwnd = self.ssthresh;
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
        if ev.backoffs <= 1 {
            self.reduce(self.beta);
        }
        self.cwnd = 1.0;
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("w_max", self.w_max));
        out.push(("k", self.k));
        out.push(("w_est", self.w_est));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::from_secs;

    /// Feeds one window of ACKs per RTT (an ideal ACK clock) and returns (t, cwnd) each RTT.
    fn grow(c: &mut Cubic, rtt: f64, t0: f64, secs: f64) -> Vec<(f64, f64)> {
        let mut out = vec![];
        let mut t = t0;
        while t < t0 + secs {
            let n = c.cwnd().floor().max(1.0) as usize;
            for i in 0..n {
                let now = from_secs(t + rtt * i as f64 / n as f64);
                c.on_ack(&AckSample {
                    now,
                    newly_acked: 1,
                    srtt: from_secs(rtt),
                    ..Default::default()
                });
            }
            t += rtt;
            out.push((t, c.cwnd()));
        }
        out
    }

    #[test]
    fn window_follows_the_cubic_between_losses() {
        let mut p = Params::new();
        p.insert(
            "tcp_friendly".into(),
            crate::params::ParamValue::Bool(false),
        );
        let mut c = Cubic::new(10.0, &p).unwrap();
        c.cwnd = 100.0;
        c.ssthresh = 50.0;
        c.on_loss(&LossEvent::default());
        assert_eq!(c.cwnd(), 70.0);
        let k = (100.0f64 * 0.3 / 0.4).cbrt(); // 4.217 s
        let rtt = 0.1;
        for (t, w) in grow(&mut c, rtt, 0.0, 8.0) {
            // cwnd chases W(t + RTT) one RTT behind, so compare with W(t) (t = end of the round).
            let want = 0.4 * (t - k).powi(3) + 100.0;
            assert!(
                (w - want).abs() <= 0.05 * want,
                "t={t:.1}: cwnd {w:.2} vs W(t) {want:.2}"
            );
        }
        assert!((c.k - k).abs() < 1e-9);
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = Cubic::new(10.0, &Params::new()).unwrap();
        c.cwnd = 100.0;
        c.on_loss(&LossEvent::default());
        c.cwnd = 80.0; // lost again before regaining 100
        c.on_loss(&LossEvent::default());
        assert!((c.w_max - 80.0 * 1.7 / 2.0).abs() < 1e-9);
        assert!((c.cwnd() - 56.0).abs() < 1e-9);
    }

    #[test]
    fn abe_backs_off_to_0_85_on_ecn_and_the_cubic_starts_there() {
        let mut p = Params::new();
        p.insert("abe".into(), crate::params::ParamValue::Bool(true));
        p.insert(
            "tcp_friendly".into(),
            crate::params::ParamValue::Bool(false),
        );
        let mut c = Cubic::new(10.0, &p).unwrap();
        c.cwnd = 100.0;
        c.on_loss(&LossEvent {
            ecn: true,
            ..Default::default()
        });
        assert!((c.cwnd() - 85.0).abs() < 1e-9, "{}", c.cwnd());
        // K from β_ecn: W(0) = W_max − C·K³ = 85, the window the epoch starts from.
        grow(&mut c, 0.1, 0.0, 0.1);
        assert!(
            (c.k - (100.0f64 * 0.15 / 0.4).cbrt()).abs() < 1e-9,
            "{}",
            c.k
        );
        assert!((c.w_cubic(0.0) - 85.0).abs() < 1e-9);
        // A loss still uses β.
        c.cwnd = 100.0;
        c.w_last_max = 0.0;
        c.on_loss(&LossEvent::default());
        assert!((c.cwnd() - 70.0).abs() < 1e-9);
        // Off (default): ECN is a loss.
        let mut c = Cubic::new(10.0, &Params::new()).unwrap();
        c.cwnd = 100.0;
        c.on_loss(&LossEvent {
            ecn: true,
            ..Default::default()
        });
        assert!((c.cwnd() - 70.0).abs() < 1e-9);
    }

    #[test]
    fn undo_restores_the_prior_window_and_the_next_epoch_plateaus_there() {
        let mut c = Cubic::new(10.0, &Params::new()).unwrap();
        c.cwnd = 100.0;
        c.ssthresh = 150.0;
        c.on_loss(&LossEvent::default());
        assert!((c.cwnd() - 70.0).abs() < 1e-9);
        c.undo_cwnd(100.0, 150.0);
        assert_eq!((c.cwnd(), c.ssthresh()), (100.0, 150.0));
        // Restored to W_max (100): the new epoch's cubic is centred on it (K = 0), no jump above.
        c.ssthresh = 50.0;
        grow(&mut c, 0.1, 0.0, 0.1);
        assert_eq!(c.k, 0.0);
        assert!(c.cwnd() >= 100.0 && c.cwnd() < 101.0, "{}", c.cwnd());
    }

    #[test]
    fn reno_friendly_region_engages_on_small_windows() {
        // Small W_max and short RTT: the cubic grows slower than Reno's 0.53 packets/RTT (α_cubic),
        // so cwnd follows W_est.
        let mut c = Cubic::new(10.0, &Params::new()).unwrap();
        c.cwnd = 10.0;
        c.on_loss(&LossEvent::default());
        let w0 = c.cwnd();
        let rounds = grow(&mut c, 0.01, 0.0, 0.5); // 50 RTTs of 10 ms
        let t = rounds.last().unwrap().0;
        let alpha = 3.0 * 0.3 / 1.7;
        let reno_like = w0 + alpha * rounds.len() as f64;
        let cubic_only = 0.4 * (t - c.k).powi(3) + c.w_max;
        assert!(
            cubic_only < reno_like,
            "scenario must be in the friendly region"
        );
        assert!(
            (c.cwnd() - reno_like).abs() < 0.1 * reno_like,
            "cwnd {} vs Reno-like {reno_like}",
            c.cwnd()
        );
    }
}
