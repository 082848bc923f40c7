//! FAST TCP: C. Jin, D. X. Wei and S. H. Low, "FAST TCP: motivation, architecture, algorithms,
//! performance", IEEE INFOCOM 2004 (docs/algorithms/papers.md; the text available to the project has
//! every equation stripped, so the equations below are the published paper's, and values marked
//! [unverified] could not be checked). Section numbers follow the paper's outline (§IV architecture and
//! algorithms, §V equilibrium and stability). Notes and every DECISION also in `docs/algorithms/fast.md`.
//!
//! # Equations
//!
//! * Estimation (§IV): baseRTT = the minimum RTT observed; on every RTT sample
//!   avgRTT ← (1 − η)·avgRTT + η·RTT with η = min(3/w, 1/4); queueing delay q = avgRTT − baseRTT.
//! * Window control (§IV):
//!   **w ← min{ 2w, (1 − γ)·w + γ·( (baseRTT/avgRTT)·w + α(w, q) ) }**, γ ∈ (0, 1].
//! * α(w, q) (§IV): a constant α, or α = a·w while q is zero and the constant once it is not.
//! * Equilibrium (§V, Theorem 1): every flow keeps α packets queued, x_i = α_i / q; on one link the
//!   total queue is Σα_i, and flows with equal α get equal rates whatever their propagation delays. The
//!   fixed point of the update at constant avgRTT is w* = α·avgRTT / (avgRTT − baseRTT).
//! * Burstiness control (§IV): *window pacing* spreads a window increase over the following RTT;
//!   *burstiness reduction* limits the release rate to the target throughput w/RTT.
//! * Loss (§IV): halve the window and run NewReno/SACK recovery, imposing a minimum window during
//!   recovery for large windows; resume delay-based control when recovery ends.
//!
//! # DECISIONs
//!
//! 1. **η scaled by the ACK ratio**: with delayed ACKs each ACK covers m packets and fewer
//!    samples arrive; the weight per ACK is 1 − (1 − η)^m, i.e. exactly m updates with the same sample
//!    (≈ m·η for small η, never above 1). `eta_ack_scaling = false` uses η per ACK. `eta_max` = ¼ (paper;
//!    the ns-2 module uses 1/256).
//! 2. **Update period** (the paper describes both a fixed interval checked on ACK arrival and "update in
//!    one RTT, hold the next"): default `update = "every_other_rtt"` as the ns-2 and Linux prototypes —
//!    one RTT in which the window moves to the target, one RTT in which it is frozen so that avgRTT
//!    measures that window; the next target is computed at the end of the frozen RTT. An RTT is delimited
//!    by sequence numbers (as Linux Vegas' `beg_snd_nxt`): it ends when a packet sent after it began is
//!    acknowledged. `update = "interval"` recomputes every `update_interval` seconds (default 20 ms
//!    [unverified]) on the first ACK after it elapses.
//! 3. **Window pacing**: an increase to the target is applied per acknowledged packet as
//!    (target − w₀)/w₀ over the next RTT (w₀ = window when the target was set), so it is complete after
//!    one window of ACKs; whatever is left when that RTT ends is applied then. A decrease is applied at
//!    once (it releases no burst).
//! 4. **Burstiness reduction** is the optional pacing rate `pacing_gain`·w/avgRTT (`pacing = true`;
//!    default off, gain 1.25). Our transport paces by rate, not by counting packets per ACK, so the
//!    paper's per-ACK release limit is expressed as a rate slightly above w/RTT (a gain of exactly 1
//!    would also throttle window growth).
//! 5. **Start-up**: the ns-2 module's multiplicative-increase phase, using the shared slow start
//!    (cwnd += 1 per acknowledged packet) while q < `mi_threshold` (0.75 ms) and cwnd < ssthresh; the
//!    first time q reaches the threshold ssthresh := cwnd and delay-based control starts (after one
//!    frozen RTT of measurement). It is not re-entered when the queue later empties: an equilibrium
//!    queue below the threshold would otherwise oscillate between the two regimes. After an RTO it runs
//!    again up to the new ssthresh. Measured consequence: slow start's bursts (two packets per ACK)
//!    queue themselves, so avgRTT passes 0.75 ms at a few tens of packets even on an empty path and the
//!    rest of the climb is the law's γα per update (14 s to fill 100 Mbit/s × 100 ms with α 25). The
//!    alternative tried — test the *minimum* RTT of each RTT epoch, blind to self-inflicted burst queues
//!    — starts in about a second but overshoots by up to one BDP (and a flow joining a standing queue
//!    takes that queue into its baseRTT and never sees it): 881 drops in the 3-flow acceptance scenario
//!    against 0, so the conservative test is kept.
//!    (`pacing = true` also removes the bursts: 0.8 s instead of 13.6 s to fill F2's first path, but
//!    263 drops in the overshoot.)
//! 6. **Loss**: w ← max(w/2, min(w, `min_recovery_window`)), ssthresh := w; no delay-based updates while
//!    the transport is in recovery (estimation continues: timestamp RTT samples stay valid). "Impose a
//!    minimum window" is read as: the halving never takes a large window below 16 packets [unverified].
//!    After recovery one frozen RTT is measured before the next update.
//! 7. **RTO**: cwnd = 1, ssthresh = max(min(FlightSize, cwnd)/2, 2) (RFC 5681, shared helper), start-up
//!    again.
//! 8. **Adaptive α** (`adaptive_alpha = true`): α = `alpha_ratio`·w while q < `alpha_zero_q`
//!    (the "zero" threshold, default 0.75 ms, like `mi_threshold`), α = the constant otherwise;
//!    `alpha_ratio` default 1 [no published value].
//! 9. **Madison's α rule** (`alpha_rule = "madison"`, for D3/D4 in docs/experiments.md; Kola & Vernon
//!    2007, §5.1): α = max(8, 2 × the maximum throughput observed so far in packets/ms), the throughput
//!    measured over each RTT epoch of (2).
//! 10. Defaults: α 200 packets [unverified; sized for 800 Mbit/s and 2000-packet buffers], γ ½; the
//!     window is a float with a floor of 2 packets (ns-2). No update while the application, not the
//!     window, limits the sender (the rule would otherwise grow w without bound at q = 0).

use crate::cc::{slow_start, AckSample, CongestionControl, LossEvent, SendCtx, TimeoutEvent};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::{self, Nanos};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Period {
    EveryOtherRtt,
    Interval(Nanos),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Moving toward `target` (window pacing).
    Ramp,
    /// Holding the window for one RTT so avgRTT measures it.
    Freeze,
}

pub struct Fast {
    // ---- parameters
    alpha_const: f64,
    gamma: f64,
    eta_max: f64,
    eta_ack_scaling: bool,
    period: Period,
    mi_threshold: f64,
    min_recovery_window: f64,
    min_cwnd: f64,
    pacing: bool,
    pacing_gain: f64,
    packet_bits: f64,
    adaptive_alpha: bool,
    alpha_ratio: f64,
    alpha_zero_q: f64,
    madison_alpha: bool,
    // ---- window
    cwnd: f64,
    ssthresh: f64,
    /// True while in the start-up multiplicative-increase phase (DECISION 5).
    mi: bool,
    /// `mi` before the last loss or RTO ended it, for an undo.
    undo_mi: bool,
    target: f64,
    ramp_from: f64,
    phase: Phase,
    // ---- estimation (seconds; avg_rtt 0 until the first sample)
    base_rtt: f64,
    avg_rtt: f64,
    alpha: f64,
    // ---- RTT epochs (DECISION 2)
    snd_nxt: u64,
    epoch_mark: u64,
    epoch_start: Nanos,
    epoch_delivered: u64,
    last_update: Nanos,
    /// Madison rule: the largest per-epoch throughput seen, packets per millisecond.
    max_rate_pkts_ms: f64,
}

impl Fast {
    pub fn new(initial_cwnd: f64, packet_size: u32, params: &Params) -> Result<Self, ParamError> {
        let mut r = ParamReader::new("fast", params);
        let alpha_const = r.positive("alpha", 200.0)?;
        let gamma = r.f64_in("gamma", 0.5, 1e-6, 1.0)?;
        let eta_max = r.f64_in("eta_max", 0.25, 1e-9, 1.0)?;
        let eta_ack_scaling = r.bool("eta_ack_scaling", true)?;
        let update = r.choice(
            "update",
            "every_other_rtt",
            &["every_other_rtt", "interval"],
        )?;
        let interval = r.positive("update_interval", 0.02)?;
        let mi_threshold = r.f64_in("mi_threshold", 0.00075, 0.0, 10.0)?;
        let min_recovery_window = r.f64_in("min_recovery_window", 16.0, 1.0, 1e9)?;
        let min_cwnd = r.f64_in("min_cwnd", 2.0, 1.0, 1e9)?;
        let pacing = r.bool("pacing", false)?;
        let pacing_gain = r.f64_in("pacing_gain", 1.25, 1.0, 100.0)?;
        let adaptive_alpha = r.bool("adaptive_alpha", false)?;
        let alpha_ratio = r.positive("alpha_ratio", 1.0)?;
        let alpha_zero_q = r.f64_in("alpha_zero_q", 0.00075, 0.0, 10.0)?;
        let rule = r.choice("alpha_rule", "fixed", &["fixed", "madison"])?;
        r.finish()?;
        let madison_alpha = rule == "madison";
        let cwnd = initial_cwnd.max(min_cwnd);
        Ok(Fast {
            alpha_const,
            gamma,
            eta_max,
            eta_ack_scaling,
            period: if update == "interval" {
                Period::Interval(time::from_secs(interval))
            } else {
                Period::EveryOtherRtt
            },
            mi_threshold,
            min_recovery_window,
            min_cwnd,
            pacing,
            pacing_gain,
            packet_bits: packet_size as f64 * 8.0,
            adaptive_alpha,
            alpha_ratio,
            alpha_zero_q,
            madison_alpha,
            cwnd,
            ssthresh: f64::INFINITY,
            mi: true,
            undo_mi: false,
            target: cwnd,
            ramp_from: cwnd,
            phase: Phase::Freeze,
            base_rtt: f64::INFINITY,
            avg_rtt: 0.0,
            // Madison's rule starts from its floor of 8 until a throughput has been measured.
            alpha: if madison_alpha { 8.0 } else { alpha_const },
            snd_nxt: 0,
            epoch_mark: 0,
            epoch_start: 0,
            epoch_delivered: 0,
            last_update: 0,
            max_rate_pkts_ms: 0.0,
        })
    }

    /// Queueing delay estimate q = avgRTT − baseRTT, seconds (0 before the first sample).
    pub fn queueing_delay(&self) -> f64 {
        if self.avg_rtt > 0.0 {
            (self.avg_rtt - self.base_rtt).max(0.0)
        } else {
            0.0
        }
    }

    /// The window control law: min{2w, (1−γ)w + γ(baseRTT/avgRTT·w + α)}.
    pub fn window_update(w: f64, base_rtt: f64, avg_rtt: f64, alpha: f64, gamma: f64) -> f64 {
        (2.0 * w).min((1.0 - gamma) * w + gamma * (base_rtt / avg_rtt * w + alpha))
    }

    fn current_alpha(&self) -> f64 {
        let base = if self.madison_alpha {
            (2.0 * self.max_rate_pkts_ms).max(8.0)
        } else {
            self.alpha_const
        };
        if self.adaptive_alpha && self.queueing_delay() < self.alpha_zero_q {
            self.alpha_ratio * self.cwnd
        } else {
            base
        }
    }

    fn on_rtt_sample(&mut self, rtt: f64, acked: u32) {
        self.base_rtt = self.base_rtt.min(rtt);
        if self.avg_rtt <= 0.0 {
            self.avg_rtt = rtt;
            return;
        }
        let eta = (3.0 / self.cwnd).min(self.eta_max);
        let weight = if self.eta_ack_scaling {
            1.0 - (1.0 - eta).powi(acked.max(1) as i32)
        } else {
            eta
        };
        self.avg_rtt += weight * (rtt - self.avg_rtt);
    }

    /// Start a new RTT epoch now.
    fn new_epoch(&mut self, now: Nanos, delivered: u64, phase: Phase) {
        self.phase = phase;
        self.epoch_mark = self.snd_nxt;
        self.epoch_start = now;
        self.epoch_delivered = delivered;
    }

    /// Compute a new target and start moving to it.
    fn update(&mut self, now: Nanos) {
        self.last_update = now;
        if self.avg_rtt <= 0.0 {
            return;
        }
        self.alpha = self.current_alpha();
        let t = Self::window_update(
            self.cwnd,
            self.base_rtt,
            self.avg_rtt,
            self.alpha,
            self.gamma,
        )
        .max(self.min_cwnd);
        self.target = t;
        self.ramp_from = self.cwnd;
        if t <= self.cwnd {
            // DECISION 3: decreases at once.
            self.cwnd = t;
        }
    }

    /// The window-pacing step for `acked` packets (DECISION 3).
    fn pace_toward_target(&mut self, acked: f64) {
        if self.cwnd < self.target {
            let step = (self.target - self.ramp_from) * acked / self.ramp_from;
            self.cwnd = (self.cwnd + step).min(self.target);
        }
    }

    /// The current target window (what the window pacing is moving toward).
    pub fn target_window(&self) -> f64 {
        self.target
    }
}

impl CongestionControl for Fast {
    fn name(&self) -> &'static str {
        "fast"
    }

    fn cwnd(&self) -> f64 {
        self.cwnd
    }

    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    fn pacing_rate_bps(&self) -> Option<f64> {
        // DECISION 4.
        (self.pacing && self.avg_rtt > 0.0)
            .then(|| self.pacing_gain * self.cwnd * self.packet_bits / self.avg_rtt)
    }

    fn on_send(&mut self, ctx: &mut SendCtx) {
        if !ctx.retransmit {
            self.snd_nxt = self.snd_nxt.max(ctx.seq + 1);
        }
    }

    fn on_ack(&mut self, ack: &AckSample) {
        let m = ack.newly_acked;
        if let Some(rtt) = ack.rtt {
            self.on_rtt_sample(time::to_secs(rtt), m);
        }
        if ack.in_recovery {
            // DECISION 6: estimation only.
            return;
        }
        let epoch_over = ack.acked_seq >= self.epoch_mark;
        if epoch_over && self.madison_alpha && ack.now > self.epoch_start {
            let ms = (ack.now - self.epoch_start) as f64 / 1e6;
            let rate = (ack.delivered - self.epoch_delivered) as f64 / ms;
            self.max_rate_pkts_ms = self.max_rate_pkts_ms.max(rate);
        }

        if self.mi {
            // DECISION 5: start-up multiplicative increase while the queue is (nearly) empty.
            let q_seen = self.avg_rtt > 0.0 && self.queueing_delay() >= self.mi_threshold;
            if q_seen || self.cwnd >= self.ssthresh {
                self.mi = false;
                self.ssthresh = self.cwnd;
                self.target = self.cwnd;
                self.ramp_from = self.cwnd;
                self.new_epoch(ack.now, ack.delivered, Phase::Freeze);
                self.last_update = ack.now;
                return;
            } else {
                if !ack.app_limited {
                    slow_start(&mut self.cwnd, self.ssthresh, m as f64);
                }
                self.target = self.cwnd;
                if epoch_over {
                    self.new_epoch(ack.now, ack.delivered, Phase::Freeze);
                }
                return;
            }
        }

        self.pace_toward_target(m as f64);
        match self.period {
            Period::EveryOtherRtt => {
                if epoch_over {
                    match self.phase {
                        Phase::Ramp => {
                            // Whatever pacing did not apply in this RTT is applied now (DECISION 3).
                            self.cwnd = self.cwnd.max(self.target);
                            self.new_epoch(ack.now, ack.delivered, Phase::Freeze);
                        }
                        Phase::Freeze => {
                            if !ack.app_limited {
                                self.update(ack.now);
                            }
                            self.new_epoch(ack.now, ack.delivered, Phase::Ramp);
                        }
                    }
                }
            }
            Period::Interval(dt) => {
                if epoch_over {
                    // Epochs still delimit RTTs for the Madison throughput measurement.
                    self.new_epoch(ack.now, ack.delivered, Phase::Ramp);
                }
                if ack.now >= self.last_update + dt && !ack.app_limited {
                    self.update(ack.now);
                }
            }
        }
    }

    fn on_loss(&mut self, _ev: &LossEvent) {
        // DECISION 6.
        self.undo_mi = self.mi;
        let w = self.cwnd;
        self.cwnd = (w / 2.0)
            .max(w.min(self.min_recovery_window))
            .max(self.min_cwnd.min(w));
        self.ssthresh = self.cwnd;
        self.mi = false;
        self.target = self.cwnd;
        self.ramp_from = self.cwnd;
    }

    fn on_recovery_end(&mut self, now: Nanos) {
        // Measure one clean RTT before the next delay-based update (DECISION 6).
        self.target = self.cwnd;
        self.ramp_from = self.cwnd;
        self.phase = Phase::Freeze;
        self.epoch_mark = self.snd_nxt;
        self.epoch_start = now;
        self.last_update = now;
    }

    /// A reduction found spurious. Not in Linux; FAST's paper recomputes the window from RTT samples
    /// (w ← (1 − γ)w + γ(baseRTT/RTT·w + α)), and the loss response (DECISION 6/7) is a fallback that
    /// does not reflect the queue FAST measures, so undo restores the window and threshold from before
    /// it (Reno's rule), the law's target with them, and the start-up multiplicative increase if the
    /// reduction ended it. The frozen RTT after recovery stays: it only measures before the next update.
    fn undo_cwnd(&mut self, prior_cwnd: f64, prior_ssthresh: f64) {
        crate::cc::reno_undo(
            &mut self.cwnd,
            &mut self.ssthresh,
            prior_cwnd,
            prior_ssthresh,
        );
        self.target = self.cwnd;
        self.ramp_from = self.cwnd;
        self.mi = self.mi || self.undo_mi;
    }

    fn on_timeout(&mut self, ev: &TimeoutEvent) {
        // DECISION 7.
        self.undo_mi = self.mi;
        crate::cc::reno_on_timeout(&mut self.cwnd, &mut self.ssthresh, ev);
        self.target = 1.0;
        self.ramp_from = 1.0;
        self.mi = true;
        self.phase = Phase::Freeze;
        self.epoch_mark = self.snd_nxt;
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("q", self.queueing_delay()));
        out.push(("target_w", self.target));
        out.push(("avg_rtt", self.avg_rtt));
        out.push((
            "base_rtt",
            if self.base_rtt.is_finite() {
                self.base_rtt
            } else {
                0.0
            },
        ));
        out.push(("alpha", self.alpha));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;
    use crate::time::NS_PER_MS;

    fn params(kv: &[(&str, f64)]) -> Params {
        kv.iter()
            .map(|(k, v)| (k.to_string(), ParamValue::Num(*v)))
            .collect()
    }

    /// A synthetic path: every packet sent is acknowledged `rtt` later, one ACK per packet, in order.
    /// Feeds the algorithm round by round: one window per RTT, so the epoch logic sees real sequence
    /// numbers. Returns the window after `rounds` RTTs.
    struct Feed {
        now: Nanos,
        seq: u64,
        delivered: u64,
    }

    impl Feed {
        fn new() -> Self {
            Feed {
                now: 0,
                seq: 0,
                delivered: 0,
            }
        }
        /// One RTT: send a window, then receive its ACKs, each carrying `rtt`.
        fn round(&mut self, f: &mut Fast, rtt: Nanos) {
            let n = f.cwnd().floor().max(1.0) as u64;
            let first = self.seq;
            for _ in 0..n {
                f.on_send(&mut SendCtx {
                    now: self.now,
                    seq: self.seq,
                    ..Default::default()
                });
                self.seq += 1;
            }
            self.now += rtt;
            for s in first..first + n {
                self.delivered += 1;
                f.on_ack(&AckSample {
                    now: self.now,
                    newly_acked: 1,
                    cum_advanced: true,
                    rtt: Some(rtt),
                    delivered: self.delivered,
                    acked_seq: s,
                    ..Default::default()
                });
            }
        }
    }

    #[test]
    fn window_update_arithmetic() {
        // w 100, base 50 ms, avg 100 ms, α 20, γ ½: ½·100 + ½·(50 + 20) = 85.
        assert_eq!(Fast::window_update(100.0, 0.05, 0.1, 20.0, 0.5), 85.0);
        // No queue: w + γα; capped at 2w when α is large relative to w.
        assert_eq!(Fast::window_update(100.0, 0.05, 0.05, 20.0, 0.5), 110.0);
        assert_eq!(Fast::window_update(10.0, 0.05, 0.05, 200.0, 0.5), 20.0);
        // γ = 1 jumps straight to baseRTT/avgRTT·w + α.
        assert_eq!(Fast::window_update(100.0, 0.05, 0.1, 20.0, 1.0), 70.0);
    }

    #[test]
    fn converges_to_alpha_avg_over_q_at_fixed_rtt() {
        // Seed baseRTT with a 50 ms sample, then hold the RTT at 100 ms: the fixed point of the update is
        // w* = α·avgRTT/(avgRTT − baseRTT) = 20·100/50 = 40. Each update contracts the error by
        // (1 − γ(1 − base/avg)) = 0.75, 60 updates (120 RTTs) leave 0.75^60 ≈ 3e-8 of the initial error.
        let mut f = Fast::new(10.0, 1500, &params(&[("alpha", 20.0)])).unwrap();
        let mut feed = Feed::new();
        feed.round(&mut f, 50 * NS_PER_MS);
        for _ in 0..120 {
            feed.round(&mut f, 100 * NS_PER_MS);
        }
        assert!((f.base_rtt - 0.05).abs() < 1e-12);
        assert!((f.avg_rtt - 0.1).abs() < 1e-12);
        // The feed sends whole packets (floor), which does not change the law; tolerance 1e-6 covers
        // the 3e-8 relative residual times w ≈ 40 with margin.
        assert!((f.cwnd() - 40.0).abs() < 1e-6, "cwnd {}", f.cwnd());
        assert!((f.target_window() - 40.0).abs() < 1e-6);
        // The flow then keeps α packets in the queue: w − x·baseRTT = w(1 − base/avg) = α.
        assert!((f.cwnd() * (1.0 - f.base_rtt / f.avg_rtt) - 20.0).abs() < 1e-6);
    }

    #[test]
    fn updates_every_other_rtt_with_increase_spread_over_the_rtt() {
        // Start-up off (threshold 0), so the first ACK starts delay-based control.
        let mut f = Fast::new(
            100.0,
            1500,
            &params(&[("alpha", 20.0), ("mi_threshold", 0.0)]),
        )
        .unwrap();
        let mut feed = Feed::new();
        let rtt = 50 * NS_PER_MS;
        // Round 1: start-up exits on the first ACK (q = 0 ≥ 0) and begins a frozen epoch marked at the
        // next unsent sequence number, so the window stays at 100 for the rest of this round.
        feed.round(&mut f, rtt);
        assert_eq!(f.cwnd(), 100.0);
        assert!(!f.mi);
        // The freeze ends when a packet sent after it began (seq ≥ mark = 100) is acknowledged: the
        // first ACK of round 2, which computes the target 100 + γα = 110 (q = 0) and starts ramping.
        feed.round(&mut f, rtt);
        assert_eq!(f.target_window(), 110.0);
        // Ramp: +10/100 per acked packet; 99 ACKs of this round after the update added 9.9.
        assert!((f.cwnd() - 109.9).abs() < 1e-9, "{}", f.cwnd());
        // Round 3: the ramp epoch ends on its first ACK → window snapped to 110, then frozen.
        feed.round(&mut f, rtt);
        assert_eq!(f.cwnd(), 110.0);
        // Round 4: the freeze ends → new target 110 + 10 = 120.
        feed.round(&mut f, rtt);
        assert_eq!(f.target_window(), 120.0);
    }

    #[test]
    fn fixed_interval_mode_updates_by_time() {
        let p: Params = [
            ("alpha".to_string(), ParamValue::Num(20.0)),
            ("mi_threshold".to_string(), ParamValue::Num(0.0)),
            ("update".to_string(), ParamValue::Str("interval".into())),
            ("update_interval".to_string(), ParamValue::Num(0.01)),
        ]
        .into_iter()
        .collect();
        let mut f = Fast::new(50.0, 1500, &p).unwrap();
        // All 50 ACKs of a round arrive at the same instant, so exactly one update per round (the
        // 10 ms interval is shorter than the 50 ms round): +γα = +10 per round, spread per ACK.
        let mut feed = Feed::new();
        feed.round(&mut f, 50 * NS_PER_MS); // start-up exit
        feed.round(&mut f, 50 * NS_PER_MS); // update: target 60
        assert_eq!(f.target_window(), 60.0);
    }

    #[test]
    fn ewma_weight_and_ack_ratio_scaling() {
        let mut f = Fast::new(10.0, 1500, &params(&[("alpha", 20.0)])).unwrap();
        f.on_rtt_sample(0.1, 1);
        assert_eq!(f.avg_rtt, 0.1);
        // w = 10 → η = min(3/10, 1/4) = 0.25; an ACK for 2 packets weighs 1 − 0.75² = 0.4375.
        f.on_rtt_sample(0.2, 2);
        assert!((f.avg_rtt - (0.1 + 0.4375 * 0.1)).abs() < 1e-15);
        let p: Params = [("eta_ack_scaling".to_string(), ParamValue::Bool(false))]
            .into_iter()
            .collect();
        let mut g = Fast::new(100.0, 1500, &p).unwrap();
        g.on_rtt_sample(0.1, 1);
        g.on_rtt_sample(0.2, 2);
        // w = 100 → η = 0.03, unscaled.
        assert!((g.avg_rtt - 0.103).abs() < 1e-15);
        assert_eq!(g.base_rtt, 0.1);
    }

    #[test]
    fn startup_doubles_until_queue_then_loss_halves_with_floor() {
        let mut f = Fast::new(10.0, 1500, &params(&[("alpha", 20.0)])).unwrap();
        let mut feed = Feed::new();
        for _ in 0..3 {
            feed.round(&mut f, 50 * NS_PER_MS);
        }
        assert_eq!(f.cwnd(), 80.0); // slow start: 10 → 20 → 40 → 80 while q = 0
        assert!(f.mi);
        // A queue of 1 ms (≥ 0.75 ms) ends start-up within one RTT of samples (η = min(3/w, ¼)).
        feed.round(&mut f, 51 * NS_PER_MS);
        assert!(!f.mi);
        assert_eq!(f.ssthresh(), f.cwnd());
        // Loss: halve, but not below 16 packets.
        f.cwnd = 100.0;
        f.on_loss(&LossEvent::default());
        assert_eq!(f.cwnd(), 50.0);
        f.cwnd = 20.0;
        f.on_loss(&LossEvent::default());
        assert_eq!(f.cwnd(), 16.0);
        f.cwnd = 6.0;
        f.on_loss(&LossEvent::default());
        assert_eq!(f.cwnd(), 6.0); // small windows keep their size during recovery (w < 16)
        f.cwnd = 30.0;
        f.on_timeout(&TimeoutEvent {
            in_flight: 30,
            backoffs: 1,
            ..Default::default()
        });
        assert_eq!((f.cwnd(), f.ssthresh()), (1.0, 15.0));
    }

    #[test]
    fn madison_and_adaptive_alpha() {
        let p: Params = [("alpha_rule".to_string(), ParamValue::Str("madison".into()))]
            .into_iter()
            .collect();
        let mut f = Fast::new(10.0, 1500, &p).unwrap();
        assert_eq!(f.current_alpha(), 8.0);
        f.max_rate_pkts_ms = 12.5; // e.g. 150 Mbit/s of 1500-byte packets
        assert_eq!(f.current_alpha(), 25.0);
        let p: Params = [
            ("adaptive_alpha".to_string(), ParamValue::Bool(true)),
            ("alpha_ratio".to_string(), ParamValue::Num(0.5)),
        ]
        .into_iter()
        .collect();
        let mut f = Fast::new(40.0, 1500, &p).unwrap();
        f.on_rtt_sample(0.05, 1);
        assert_eq!(f.current_alpha(), 20.0); // q = 0 → a·w
        f.on_rtt_sample(0.5, 1);
        assert_eq!(f.current_alpha(), 200.0); // q > 0 → the constant
    }

    #[test]
    fn pacing_rate_and_state_keys() {
        let p: Params = [("pacing".to_string(), ParamValue::Bool(true))]
            .into_iter()
            .collect();
        let mut f = Fast::new(100.0, 1500, &p).unwrap();
        assert_eq!(f.pacing_rate_bps(), None);
        f.on_rtt_sample(0.1, 1);
        // 1.25 · 100 packets · 12000 bit / 0.1 s = 15 Mbit/s.
        assert!((f.pacing_rate_bps().unwrap() - 15e6).abs() < 1e-6);
        let mut out = Vec::new();
        f.state(&mut out);
        let keys: Vec<_> = out.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["q", "target_w", "avg_rtt", "base_rtt", "alpha"]);
        assert!(Fast::new(10.0, 1500, &params(&[("gama", 0.5)])).is_err());
    }
}
