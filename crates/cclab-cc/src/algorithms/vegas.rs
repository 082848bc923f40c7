//! TCP Vegas (Brakmo & Peterson, "TCP Vegas: end to end congestion avoidance on a global Internet",
//! IEEE JSAC 1995), following Linux `tcp_vegas.c` (constants and rules; compared line by line, the
//! remaining differences are listed below).
//!
//! Once per round (a "round": the data outstanding when the round began has been acknowledged; Linux's
//! `beg_snd_nxt`, here the delivered count plus the packets in flight at the round's start):
//! * if the round had at most 2 RTT samples, the ACK is handled as Reno's (Linux: two samples mean one
//!   delayed ACK per round, too few to trust);
//! * otherwise `diff = cwnd·(RTT − baseRTT)/baseRTT` (Linux's; the paper's Diff divides by RTT, `diff =
//!   "paper"`), baseRTT the minimum RTT ever seen, RTT the minimum sample of the round (Linux: the
//!   minimum filters out delayed-ACK noise);
//! * slow start: left when `diff > γ`: cwnd = min(cwnd, cwnd·baseRTT/RTT + 1), ssthresh = min(ssthresh,
//!   cwnd); otherwise slow start continues;
//! * congestion avoidance: `diff > β` → cwnd − 1 and ssthresh = min(ssthresh, cwnd); `diff < α` →
//!   cwnd + 1; otherwise hold;
//! * then cwnd ≥ 2 and ssthresh = max(ssthresh, ¾·cwnd) (Linux's `tcp_current_ssthresh`: the threshold
//!   follows the window up, so a later RTO's slow start aims at the window Vegas had found).
//!
//! Between round ends slow start grows by one packet per packet acknowledged and congestion avoidance
//! holds. During fast recovery nothing grows (the transport's recovery sets the pace); when recovery
//! ends, and after an RTO once the data outstanding at it is delivered, Vegas restarts with a fresh
//! round (Linux's `vegas_enable` on returning to the open state); until then, after an RTO, the window
//! is Reno's (slow start to ssthresh), as Linux's `tcp_reno_cong_avoid` while Vegas is disabled.
//! Loss and timeout: Reno (RFC 5681 ssthresh; Linux `tcp_reno_ssthresh`). Undo: Reno's (Linux
//! `tcp_reno_undo_cwnd`).
//!
//! Defaults α = 2, β = 4, γ = 1 packets (Linux).
//!
//! Deliberate differences from Linux (docs/algorithms/vegas.md):
//! * windows and diff are real numbers; Linux truncates diff and the target window to integers, so
//!   its thresholds act at diff ≥ α (−1 for the comparison `<`) and diff ≥ γ + 1, about one packet
//!   later than here;
//! * the round ends when the delivered count passes the packets sent by its start (Linux: the first
//!   ACK above `snd_nxt` at its start), the same when nothing is lost;
//! * DECISION: in slow start the round's *latest* RTT sample is compared (`slow_start_rtt = "latest"`,
//!   the default), not the round's minimum as Linux does (`slow_start_rtt = "round_min"`): the window
//!   doubles within a round, so the minimum (taken from the round's first ACKs) misses the queue the
//!   doubling built. Measured (`crates/cclab-sim/tests/algo_vegas.rs`: 20 Mbit/s, 50 ms, 1000-packet
//!   buffer, 15-40 s): Linux's rule overshoots to a 159-packet queue that Vegas drains at one packet
//!   per round, mean 58.1 packets; the latest sample gives a mean of 2.63 (max 3), between α and β.

use crate::cc::reno_undo;
use crate::cc::{
    reno_increase, reno_on_loss, reno_on_timeout, slow_start, AckSample, CongestionControl,
    LossEvent, TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::Nanos;

pub struct Vegas {
    alpha: f64,
    beta: f64,
    gamma: f64,
    /// `diff = "paper"`: Diff = cwnd·(RTT − baseRTT)/RTT, (Expected − Actual)·baseRTT.
    paper_diff: bool,
    /// `slow_start_rtt = "latest"`: slow start judged on the round's latest sample.
    latest_in_slow_start: bool,
    cwnd: f64,
    ssthresh: f64,
    base_rtt: Option<Nanos>,
    round_min: Option<Nanos>,
    /// RTT samples in this round (Linux `cntRTT`).
    round_samples: u32,
    last_rtt: Option<Nanos>,
    /// The round ends when `delivered` passes this.
    round_end: u64,
    /// Start a fresh round at the next ACK (recovery ended, or the RTO's data is delivered).
    restart: bool,
    /// After an RTO: packets in flight at it (taken at the next ACK into `reno_until`); Vegas is off
    /// (Reno's window) until `delivered` passes `reno_until`.
    rto_flight: Option<u32>,
    reno_until: Option<u64>,
    diff: f64,
}

impl Vegas {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Vegas, ParamError> {
        let mut r = ParamReader::new("vegas", params);
        let alpha = r.f64_in("alpha", 2.0, 0.0, 1e6)?;
        let beta = r.f64_in("beta", 4.0, 0.0, 1e6)?;
        let gamma = r.f64_in("gamma", 1.0, 0.0, 1e6)?;
        let paper_diff = r.choice("diff", "linux", &["linux", "paper"])? == "paper";
        let latest_in_slow_start =
            r.choice("slow_start_rtt", "latest", &["round_min", "latest"])? == "latest";
        r.finish()?;
        if beta < alpha {
            return Err(ParamError {
                field: "beta".into(),
                message: format!("must be >= alpha ({alpha}), got {beta}"),
            });
        }
        Ok(Vegas {
            alpha,
            beta,
            gamma,
            paper_diff,
            latest_in_slow_start,
            cwnd: initial_cwnd,
            ssthresh: f64::INFINITY,
            base_rtt: None,
            round_min: None,
            round_samples: 0,
            last_rtt: None,
            round_end: 0,
            restart: false,
            rto_flight: None,
            reno_until: None,
            diff: 0.0,
        })
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Linux's `tcp_reno_cong_avoid` for one ACK: slow start, then 1/cwnd per packet.
    fn reno(&mut self, acked: f64) {
        let left = slow_start(&mut self.cwnd, self.ssthresh, acked);
        if left > 0.0 {
            reno_increase(&mut self.cwnd, left);
        }
    }

    /// A new round from this ACK (Linux `vegas_enable` / the round-end bookkeeping).
    fn new_round(&mut self, ack: &AckSample) {
        self.round_end = ack.delivered + (ack.in_flight as u64).max(1);
        self.round_min = None;
        self.round_samples = 0;
    }

    /// The once-per-round adjustment with the round's RTT and the base RTT; `acked` is the ACK's
    /// packets (slow start goes on with them when it is not left).
    fn end_of_round(&mut self, rtt: Nanos, base: Nanos, acked: f64) {
        let (rtt_f, base_f) = (rtt as f64, base as f64);
        let over = if self.paper_diff { rtt_f } else { base_f };
        self.diff = self.cwnd * (rtt_f - base_f) / over;
        if self.in_slow_start() {
            if self.diff > self.gamma {
                // Going too fast: the window that matches the measured rate, plus one.
                let target = self.cwnd * base_f / rtt_f;
                self.cwnd = self.cwnd.min(target + 1.0);
                self.ssthresh = self.ssthresh.min(self.cwnd);
            } else {
                slow_start(&mut self.cwnd, self.ssthresh, acked);
            }
        } else if self.diff > self.beta {
            self.cwnd -= 1.0;
            self.ssthresh = self.ssthresh.min(self.cwnd);
        } else if self.diff < self.alpha {
            self.cwnd += 1.0;
        }
        self.cwnd = self.cwnd.max(2.0);
        // Linux `tcp_current_ssthresh` (not in a window reduction here).
        self.ssthresh = self.ssthresh.max(0.75 * self.cwnd);
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(r) = ack.rtt {
            self.base_rtt = Some(self.base_rtt.map_or(r, |b| b.min(r)));
            self.round_min = Some(self.round_min.map_or(r, |m| m.min(r)));
            self.round_samples += 1;
            self.last_rtt = Some(r);
        }
        if ack.in_recovery {
            // Vegas is off in recovery; it starts over when recovery ends.
            self.restart = true;
            return;
        }
        if let Some(f) = self.rto_flight.take() {
            self.reno_until = Some(ack.delivered + f as u64);
        }
        if let Some(until) = self.reno_until {
            if ack.delivered < until {
                if !ack.app_limited {
                    self.reno(ack.newly_acked as f64);
                }
                return;
            }
            self.reno_until = None;
            self.restart = true;
        }
        if self.restart {
            self.restart = false;
            self.new_round(ack);
        }
        if ack.app_limited {
            return;
        }
        let acked = ack.newly_acked as f64;
        if ack.delivered >= self.round_end {
            let rtt = if self.in_slow_start() && self.latest_in_slow_start {
                self.last_rtt
            } else {
                self.round_min
            };
            match (rtt, self.base_rtt) {
                (Some(rtt), Some(base)) if self.round_samples > 2 => {
                    self.end_of_round(rtt, base, acked)
                }
                _ => self.reno(acked),
            }
            self.new_round(ack);
        } else if self.in_slow_start() {
            slow_start(&mut self.cwnd, self.ssthresh, acked);
        }
    }

    fn on_loss(&mut self, ev: &LossEvent) {
        reno_on_loss(&mut self.cwnd, &mut self.ssthresh, ev);
    }

    fn on_recovery_end(&mut self, _now: Nanos) {
        self.restart = true;
    }

    /// A reduction found spurious: Linux `tcp_vegas.c` uses `tcp_reno_undo_cwnd`; the RTT samples are
    /// kept, and a fresh round starts (the transport is back in the open state).
    fn undo_cwnd(&mut self, prior_cwnd: f64, prior_ssthresh: f64) {
        reno_undo(
            &mut self.cwnd,
            &mut self.ssthresh,
            prior_cwnd,
            prior_ssthresh,
        );
        self.rto_flight = None;
        self.reno_until = None;
        self.restart = true;
    }

    fn on_timeout(&mut self, ev: &TimeoutEvent) {
        reno_on_timeout(&mut self.cwnd, &mut self.ssthresh, ev);
        self.rto_flight = Some(ev.in_flight);
        self.reno_until = None;
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("diff", self.diff));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vegas(params: &[(&str, &str)]) -> Vegas {
        let mut p = Params::new();
        for (k, v) in params {
            p.insert((*k).into(), crate::params::ParamValue::Str((*v).into()));
        }
        Vegas::new(10.0, &p).unwrap()
    }

    #[test]
    fn one_packet_per_round_toward_the_alpha_beta_band() {
        let mut v = vegas(&[]);
        v.ssthresh = 5.0; // congestion avoidance
                          // Linux's diff = cwnd·(RTT − base)/base: 10·(110 − 100)/100 = 1 < α → +1
        v.end_of_round(110, 100, 1.0);
        assert_eq!(v.cwnd(), 11.0);
        // ssthresh follows the window up to ¾ of it (tcp_current_ssthresh).
        assert_eq!(v.ssthresh(), 0.75 * 11.0);
        // 11·(150 − 100)/100 = 5.5 > β → −1, ssthresh = min(ssthresh, cwnd) then ≥ ¾ cwnd
        v.end_of_round(150, 100, 1.0);
        assert_eq!(v.cwnd(), 10.0);
        assert_eq!(v.ssthresh(), 8.25);
        // 10·(130 − 100)/100 = 3 in [α, β] → hold
        v.end_of_round(130, 100, 1.0);
        assert_eq!(v.cwnd(), 10.0);
        assert!((v.diff - 3.0).abs() < 1e-12);
        // The paper's Diff divides by RTT: 10·30/130 = 2.31.
        let mut v = vegas(&[("diff", "paper")]);
        v.ssthresh = 5.0;
        v.end_of_round(130, 100, 1.0);
        assert!((v.diff - 300.0 / 130.0).abs() < 1e-12);
    }

    #[test]
    fn leaves_slow_start_when_diff_exceeds_gamma() {
        let mut v = vegas(&[]);
        v.cwnd = 40.0;
        v.end_of_round(150, 100, 1.0); // diff 20 > γ: cwnd = 40·100/150 + 1, ssthresh = cwnd
        let w = 40.0 * 100.0 / 150.0 + 1.0;
        assert!((v.cwnd() - w).abs() < 1e-9);
        assert_eq!(v.ssthresh(), v.cwnd());
        assert!(!v.in_slow_start());
        // diff ≤ γ: slow start goes on with the ACK's packets.
        let mut v = vegas(&[]);
        v.end_of_round(101, 100, 1.0); // diff 0.1
        assert_eq!(v.cwnd(), 11.0);
    }

    fn ack(delivered: u64, rtt: Option<Nanos>, in_flight: u32) -> AckSample {
        AckSample {
            newly_acked: 1,
            cum_advanced: true,
            rtt,
            delivered,
            in_flight,
            ..Default::default()
        }
    }

    #[test]
    fn a_round_with_two_samples_or_fewer_is_reno() {
        // Congestion avoidance, a queue that would make Vegas back off (diff 10 > β), but each round
        // has only two RTT samples: Linux treats that as delayed-ACK noise and does Reno's increase.
        let mut v = vegas(&[]);
        v.ssthresh = 5.0;
        v.base_rtt = Some(100);
        let mut d = 0;
        for round in 0..5 {
            for k in 0..10 {
                d += 1;
                let rtt = (k < 2).then_some(200);
                v.on_ack(&ack(d, rtt, 10));
            }
            assert!(v.cwnd() >= 10.0, "round {round}: {}", v.cwnd());
        }
        // Three samples a round: Vegas decides, and backs off.
        let w = v.cwnd();
        for _ in 0..3 {
            for k in 0..12 {
                d += 1;
                v.on_ack(&ack(d, (k < 3).then_some(200), 12));
            }
        }
        assert!(v.cwnd() < w, "{} vs {w}", v.cwnd());
    }

    #[test]
    fn after_an_rto_the_window_is_renos_until_the_outstanding_data_is_delivered() {
        let mut v = vegas(&[]);
        v.cwnd = 40.0;
        v.ssthresh = 40.0;
        v.base_rtt = Some(100);
        v.on_timeout(&TimeoutEvent {
            in_flight: 40,
            backoffs: 1,
            ..Default::default()
        });
        assert_eq!((v.cwnd(), v.ssthresh()), (1.0, 20.0));
        // A large queue delay would stop Vegas's slow start at once; Reno's slow start ignores it
        // until the 40 packets outstanding at the RTO are delivered.
        for d in 1..=19 {
            v.on_ack(&ack(d, Some(300), 1));
        }
        assert_eq!(v.cwnd(), 20.0);
        assert!(v.reno_until.is_some());
    }
}
