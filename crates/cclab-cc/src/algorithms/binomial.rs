//! Binomial congestion control: D. Bansal and H. Balakrishnan, "Binomial Congestion Control
//! Algorithms", IEEE INFOCOM 2001 (docs/algorithms/papers.md); equations, notes and every DECISION
//! also in `docs/algorithms/binomial.md`.
//!
//! # Equations (numbers as in the paper)
//!
//! * (2) increase, per RTT of ACKs: w ← w + α / w^k, α > 0. Spread over the window's ACKs this is
//!   **α / w^(k+1) per acknowledged packet** (the paper's §II.C note: "an increase by 1/w on the receipt of
//!   each acknowledgement" for TCP, k = 0, α = 1).
//! * (2) decrease, once per loss event: w ← w − β·w^l.
//! * (7) throughput λ = (α/β)^{1/(k+l+1)} / (R · p^{1/(k+l+1)}); (8) TCP-compatible iff k + l = 1 (l ≤ 1).
//! * Named members: AIMD (k 0, l 1), IIAD (k 1, l 0), SQRT (k ½, l ½); MIMD (−1, 1), AIAD (0, 0),
//!   MIAD (−1, 0) are reachable through the general `binomial` name.
//!
//! # DECISIONs
//!
//! 1. **Transport**: the paper modified TCP/Reno; here the binomial window rules run on our NewReno/SACK
//!    transport (recovery is the transport's; slow start, fast retransmit and RTO are unchanged, as §III
//!    says: "other mechanisms like slow-start and timeout remain unchanged").
//! 2. **ssthresh after a loss event = the new window** (as ns-2's binomial code), so the sender stays in
//!    the binomial increase after recovery instead of slow-starting back.
//! 3. **Window floor 1 packet**: w − β·w^l can fall below 1 for l < 1 and small w (IIAD at w < 2).
//! 4. **Timeout** (§V "reduce their transmission window to one upon persistent congestion"): cwnd = 1,
//!    slow start; ssthresh = max(min(FlightSize, cwnd)/2, 2) on the first RTO of a series (RFC 5681 eq. 4
//!    bounded by cwnd, the shared [`reno_ssthresh`]: "ssthresh = w/2" with w the data in flight, as
//!    TCP/Reno does).
//! 5. **A loss event while still in slow start (cwnd < ssthresh) halves** like Reno
//!    (`slow_start_decrease = "halve"`, default) instead of applying β·w^l. Slow start overshoots the pipe
//!    by up to a factor of two, an error only a multiplicative cut repairs quickly: IIAD's "−1 per loss
//!    event" would take hundreds of RTTs to drain a 2× overshoot at large windows. ns-2's binomial code,
//!    which produced the paper's figures, also halves on the first decrease and in slow start.
//!    `slow_start_decrease = "binomial"` applies the paper's rule literally everywhere.
//! 6. **SQRT defaults α 1, β ⅔** (α/β = 1.5; the paper gives none). α/β = 2 is eq. 7's leading-order
//!    TCP match, but the paper's timeout-corrected analysis lowers IIAD's ratio to 1.5 and the argument
//!    holds for every k + l = 1 member; measured on B1 over 10 seeds, TCP/SQRT 0.84 at α/β = 2, ≈ 1 at 1.5.
//!    IIAD: α 1.5, β 1 (the paper's ns-2 choice from its timeout-corrected analysis). β < 1 (eq. 2) is
//!    not enforced, since IIAD itself uses β = 1. The general `binomial` defaults to AIMD (k 0, l 1,
//!    α 1, β 0.5), so an unparameterised `binomial` behaves as TCP.
//! 7. Delayed ACKs: the increase counts acknowledged packets (`newly_acked`), not ACKs, so an ACK for two
//!    packets adds 2·α/w^(k+1) (byte counting, RFC 3465 style), keeping eq. 2's per-RTT increase.
//! 8. No growth while the transport is in (fast) recovery or the sender is application-limited, as Reno.

use crate::cc::reno_undo;
use crate::cc::{reno_ssthresh, slow_start, AckSample, CongestionControl, LossEvent, TimeoutEvent};
use crate::params::{ParamError, ParamReader, Params};

/// The binomial parameters (k, l, α, β).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BinomialParams {
    pub k: f64,
    pub l: f64,
    pub alpha: f64,
    pub beta: f64,
}

impl BinomialParams {
    /// TCP AIMD: k 0, l 1, α 1, β ½.
    pub const AIMD: BinomialParams = BinomialParams {
        k: 0.0,
        l: 1.0,
        alpha: 1.0,
        beta: 0.5,
    };
    /// IIAD: k 1, l 0, α 1.5, β 1 (paper §III.B).
    pub const IIAD: BinomialParams = BinomialParams {
        k: 1.0,
        l: 0.0,
        alpha: 1.5,
        beta: 1.0,
    };
    /// SQRT: k ½, l ½, α 1, β ⅔ (DECISION 6): α/β = 1.5, the ratio the paper's timeout-corrected
    /// analysis gives IIAD, which applies to every k + l = 1 member (α/β = 2 left TCP at 0.84 of SQRT).
    pub const SQRT: BinomialParams = BinomialParams {
        k: 0.5,
        l: 0.5,
        alpha: 1.0,
        beta: 2.0 / 3.0,
    };

    /// Eq. 7's exponent: λ ∝ p^(−1/(k+l+1)).
    pub fn loss_exponent(&self) -> f64 {
        1.0 / (self.k + self.l + 1.0)
    }
}

pub struct Binomial {
    name: &'static str,
    p: BinomialParams,
    cwnd: f64,
    ssthresh: f64,
    /// DECISION 5: halve (true) or apply the binomial rule (false) on a loss in slow start.
    halve_in_slow_start: bool,
}

impl Binomial {
    /// `name` is "binomial", "iiad" or "sqrt"; it picks the defaults, and every one of k, l, alpha, beta
    /// can still be overridden from `params`.
    pub fn new(name: &'static str, initial_cwnd: f64, params: &Params) -> Result<Self, ParamError> {
        let d = match name {
            "iiad" => BinomialParams::IIAD,
            "sqrt" => BinomialParams::SQRT,
            _ => BinomialParams::AIMD,
        };
        let mut r = ParamReader::new(name, params);
        // k + l ≤ −1 gives a scheme whose throughput does not fall with loss (paper §II.A: unstable);
        // it is still expressible (the paper's MIAD is k −1, l 0) but k, l are bounded to keep w^k finite.
        let k = r.f64_in("k", d.k, -1.0, 10.0)?;
        let l = r.f64_in("l", d.l, 0.0, 1.0)?;
        let alpha = r.positive("alpha", d.alpha)?;
        let beta = r.positive("beta", d.beta)?;
        let ss = r.choice("slow_start_decrease", "halve", &["halve", "binomial"])?;
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        r.finish()?;
        Ok(Binomial {
            name,
            p: BinomialParams { k, l, alpha, beta },
            cwnd: initial_cwnd.max(1.0),
            ssthresh,
            halve_in_slow_start: ss == "halve",
        })
    }

    pub fn params(&self) -> BinomialParams {
        self.p
    }

    /// Eq. 2's increase per acknowledged packet at window `w`: α / w^(k+1).
    #[inline]
    pub fn increment_per_packet(&self, w: f64) -> f64 {
        self.p.alpha / w.powf(self.p.k + 1.0)
    }

    /// Eq. 2's decrease from window `w`, with the floor of 1 packet (DECISION 3).
    #[inline]
    pub fn decreased(&self, w: f64) -> f64 {
        (w - self.p.beta * w.powf(self.p.l)).max(1.0)
    }
}

impl CongestionControl for Binomial {
    fn name(&self) -> &'static str {
        self.name
    }

    fn cwnd(&self) -> f64 {
        self.cwnd
    }

    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckSample) {
        // Like Reno: no growth during recovery (the transport holds the pipe at cwnd) or when the
        // application, not the window, limits the sender.
        if ack.in_recovery || ack.app_limited {
            return;
        }
        let left = slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
        // Apply the per-packet increase once per acknowledged packet so that an ACK covering m packets
        // is exactly m successive eq.-2 steps (the window changes between them unless k = −1); a
        // fractional remainder (slow start ended part-way through this ACK) gets its share of a step.
        let whole = left.floor();
        for _ in 0..(whole as u64) {
            self.cwnd += self.increment_per_packet(self.cwnd);
        }
        self.cwnd += (left - whole) * self.increment_per_packet(self.cwnd);
    }

    fn on_loss(&mut self, ev: &LossEvent) {
        let w = if self.cwnd < self.ssthresh && self.halve_in_slow_start {
            // DECISION 5: leave slow start the way Reno does.
            reno_ssthresh(ev.in_flight, self.cwnd)
        } else {
            self.decreased(self.cwnd)
        };
        self.cwnd = w;
        // DECISION 2.
        self.ssthresh = w;
    }

    /// A reduction found spurious: Not in Linux. The decrease w − βw^l is the only thing a loss changes (no other state), so undoing it is
    /// restoring the window and threshold from before it, as Reno's undo does (Bansal & Balakrishnan's
    /// rules are Reno's with other exponents).
    fn undo_cwnd(&mut self, prior_cwnd: f64, prior_ssthresh: f64) {
        reno_undo(
            &mut self.cwnd,
            &mut self.ssthresh,
            prior_cwnd,
            prior_ssthresh,
        );
    }
    fn on_timeout(&mut self, ev: &TimeoutEvent) {
        // DECISION 4: only the first RTO of a series sets ssthresh (FlightSize is ~0 afterwards).
        crate::cc::reno_on_timeout(&mut self.cwnd, &mut self.ssthresh, ev);
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("w", self.cwnd));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;

    fn ack(n: u32) -> AckSample {
        AckSample {
            newly_acked: n,
            cum_advanced: true,
            ..Default::default()
        }
    }

    fn params(kv: &[(&str, f64)]) -> Params {
        kv.iter()
            .map(|(k, v)| (k.to_string(), ParamValue::Num(*v)))
            .collect()
    }

    /// A sender already in congestion avoidance at window `w`.
    fn in_ca(name: &'static str, p: &Params, w: f64) -> Binomial {
        let mut b = Binomial::new(name, w, p).unwrap();
        b.ssthresh = 1.0;
        b
    }

    #[test]
    fn per_ack_increment_is_alpha_over_w_to_k_plus_1() {
        // Exact arithmetic (one float operation each), so the tolerance is a few ulps.
        for (name, k, alpha) in [
            ("iiad", 1.0, 1.5),
            ("sqrt", 0.5, 1.0),
            ("binomial", 0.0, 1.0),
        ] {
            let mut b = in_ca(name, &Params::new(), 16.0);
            b.on_ack(&ack(1));
            let expect = 16.0 + alpha / 16f64.powf(k + 1.0);
            assert!(
                (b.cwnd() - expect).abs() < 1e-12,
                "{name}: {} vs {expect}",
                b.cwnd()
            );
        }
        // IIAD at w = 16: 1.5/256 exactly; SQRT: 1/64; AIMD: 1/16.
        let mut b = in_ca("iiad", &Params::new(), 16.0);
        b.on_ack(&ack(1));
        assert_eq!(b.cwnd() - 16.0, 1.5 / 256.0);
        // General (k, α): k = 0.25, α = 2 at w = 81 → 2 / 81^1.25 = 2 / 243.
        let mut b = in_ca(
            "binomial",
            &params(&[("k", 0.25), ("l", 0.75), ("alpha", 2.0)]),
            81.0,
        );
        b.on_ack(&ack(1));
        assert!((b.cwnd() - 81.0 - 2.0 / 243.0).abs() < 1e-12);
    }

    #[test]
    fn an_ack_for_m_packets_is_m_steps() {
        let mut one = in_ca("sqrt", &Params::new(), 9.0);
        let mut two = in_ca("sqrt", &Params::new(), 9.0);
        one.on_ack(&ack(1));
        one.on_ack(&ack(1));
        two.on_ack(&ack(2));
        assert_eq!(one.cwnd(), two.cwnd());
    }

    #[test]
    fn one_window_of_acks_adds_about_alpha_over_w_to_k() {
        // Eq. 2 per RTT: w + α/w^k. Per-ACK application over w ACKs is within O(α²/w^(2k+1)) of it:
        // for SQRT at w = 100, 100 steps of ~1/1000 change w by ~0.1, so the relative error is ~1e-3.
        let mut b = in_ca("sqrt", &Params::new(), 100.0);
        for _ in 0..100 {
            b.on_ack(&ack(1));
        }
        let per_rtt = b.cwnd() - 100.0;
        assert!((per_rtt - 0.1).abs() < 0.1 * 2e-3, "{per_rtt}");
    }

    #[test]
    fn decrease_rule_and_floor() {
        let ev = LossEvent {
            in_flight: 100,
            ..Default::default()
        };
        // IIAD: w − 1.
        let mut b = in_ca("iiad", &Params::new(), 100.0);
        b.on_loss(&ev);
        assert_eq!((b.cwnd(), b.ssthresh()), (99.0, 99.0));
        // SQRT: w − ⅔·√w = 100 − 20/3.
        let mut b = in_ca("sqrt", &Params::new(), 100.0);
        b.on_loss(&ev);
        assert!((b.cwnd() - (100.0 - 20.0 / 3.0)).abs() < 1e-9 && b.ssthresh() == b.cwnd());
        // AIMD: w/2.
        let mut b = in_ca("binomial", &Params::new(), 100.0);
        b.on_loss(&ev);
        assert_eq!(b.cwnd(), 50.0);
        // General: k 0.5, l 0.25, β 0.3 at w 16 → 16 − 0.3·2 = 15.4.
        let mut b = in_ca(
            "binomial",
            &params(&[("k", 0.5), ("l", 0.25), ("beta", 0.3)]),
            16.0,
        );
        b.on_loss(&ev);
        assert!((b.cwnd() - 15.4).abs() < 1e-12);
        // Floor: IIAD at w = 1.5 would go to 0.5; stays at 1. Repeated losses stay at 1.
        let mut b = in_ca("iiad", &Params::new(), 1.5);
        b.on_loss(&ev);
        assert_eq!(b.cwnd(), 1.0);
        b.on_loss(&ev);
        assert_eq!((b.cwnd(), b.ssthresh()), (1.0, 1.0));
    }

    #[test]
    fn slow_start_then_binomial_and_loss_in_slow_start_halves() {
        let mut b = Binomial::new("iiad", 10.0, &Params::new()).unwrap();
        for _ in 0..10 {
            b.on_ack(&ack(1));
        }
        assert_eq!(b.cwnd(), 20.0); // slow start: +1 per packet
        b.on_loss(&LossEvent {
            in_flight: 20,
            ..Default::default()
        });
        assert_eq!((b.cwnd(), b.ssthresh()), (10.0, 10.0)); // DECISION 5: halved
        b.on_loss(&LossEvent {
            in_flight: 10,
            ..Default::default()
        });
        assert_eq!(b.cwnd(), 9.0); // now in CA: IIAD −1
                                   // The literal rule on request.
        let mut p = Params::new();
        p.insert(
            "slow_start_decrease".into(),
            ParamValue::Str("binomial".into()),
        );
        let mut b = Binomial::new("iiad", 10.0, &p).unwrap();
        b.on_loss(&LossEvent {
            in_flight: 10,
            ..Default::default()
        });
        assert_eq!(b.cwnd(), 9.0);
    }

    #[test]
    fn timeout_goes_to_one_and_slow_starts() {
        let mut b = in_ca("sqrt", &Params::new(), 40.0);
        b.on_timeout(&TimeoutEvent {
            in_flight: 40,
            backoffs: 1,
            ..Default::default()
        });
        assert_eq!((b.cwnd(), b.ssthresh()), (1.0, 20.0));
        b.on_timeout(&TimeoutEvent {
            in_flight: 1,
            backoffs: 2,
            ..Default::default()
        });
        assert_eq!(b.ssthresh(), 20.0); // a back-off keeps ssthresh
        b.on_ack(&ack(1));
        assert_eq!(b.cwnd(), 2.0);
    }

    #[test]
    fn no_growth_in_recovery_or_app_limited() {
        let mut b = in_ca("iiad", &Params::new(), 10.0);
        b.on_ack(&AckSample {
            newly_acked: 3,
            in_recovery: true,
            ..Default::default()
        });
        b.on_ack(&AckSample {
            newly_acked: 3,
            app_limited: true,
            ..Default::default()
        });
        assert_eq!(b.cwnd(), 10.0);
    }

    #[test]
    fn params_are_checked() {
        assert!(Binomial::new("binomial", 10.0, &params(&[("kk", 1.0)])).is_err());
        assert!(Binomial::new("sqrt", 10.0, &params(&[("alpha", 0.0)])).is_err());
        assert!(Binomial::new("iiad", 10.0, &params(&[("l", 1.5)])).is_err());
        let b = Binomial::new("sqrt", 10.0, &params(&[("beta", 1.0)])).unwrap();
        assert_eq!(
            b.params(),
            BinomialParams {
                beta: 1.0,
                ..BinomialParams::SQRT
            }
        );
        assert!((BinomialParams::IIAD.loss_exponent() - 0.5).abs() < 1e-15);
        let mut out = Vec::new();
        b.state(&mut out);
        assert_eq!(out, vec![("w", 10.0)]);
    }
}
