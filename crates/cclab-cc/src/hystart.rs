//! HyStart++ (RFC 9406): leaving slow start before its overshoot, for the Reno family and CUBIC when
//! `[transport] hystart = true` (`SenderEnv::hystart`).
//!
//! Slow start doubles the window each round until a loss, which on a deep buffer comes only after the
//! window has overshot the path by up to a factor of two: a burst of losses, often an RTO for the flows
//! that share the queue. HyStart++ watches the smallest RTT of each round (at least 8 samples): once it
//! has grown by RttThresh = clamp(last round's minimum / 8, 4 ms, 16 ms), a queue is building, and the
//! sender enters Conservative Slow Start (CSS: growth divided by 4) for up to 5 rounds, then congestion
//! avoidance (ssthresh = cwnd). If the RTT falls back below the baseline during CSS, the increase was a
//! false alarm and slow start resumes. Growth is at most L = 8 packets per ACK (RFC 9406 §4.3, for a
//! sender that does not pace).

use crate::cc::{slow_start, AckSample};
use crate::time::{Nanos, NS_PER_MS};

const MIN_RTT_THRESH: Nanos = 4 * NS_PER_MS;
const MAX_RTT_THRESH: Nanos = 16 * NS_PER_MS;
const MIN_RTT_DIVISOR: Nanos = 8;
const N_RTT_SAMPLE: u32 = 8;
const CSS_GROWTH_DIVISOR: f64 = 4.0;
const CSS_ROUNDS: u32 = 5;
const L: f64 = 8.0;

/// What slow start may do on this ACK.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SlowStartStep {
    /// Grow by this many packets (the caller's slow start caps it at ssthresh).
    Grow(f64),
    /// Slow start is over: set ssthresh to the current window (congestion avoidance from now on).
    Exit,
}

#[derive(Clone, Debug, Default)]
pub struct HyStartPlusPlus {
    /// A round ends when the packet sent at its start is acknowledged (delivered count then).
    round_end: u64,
    last_round_min_rtt: Option<Nanos>,
    current_round_min_rtt: Option<Nanos>,
    samples: u32,
    /// In CSS: the minimum RTT that sent it there, and the rounds spent in it.
    css_baseline: Option<Nanos>,
    css_rounds: u32,
}

impl HyStartPlusPlus {
    /// In Conservative Slow Start.
    pub fn in_css(&self) -> bool {
        self.css_baseline.is_some()
    }

    /// An ACK while in slow start (cwnd < ssthresh, not in recovery).
    pub fn on_ack(&mut self, ack: &AckSample) -> SlowStartStep {
        if ack.delivered >= self.round_end {
            // A new round: what was sent up to now must come back before the next one.
            self.round_end = ack.delivered + ack.in_flight.max(1) as u64;
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = None;
            self.samples = 0;
            if self.in_css() {
                self.css_rounds += 1;
                if self.css_rounds >= CSS_ROUNDS {
                    return SlowStartStep::Exit;
                }
            }
        }
        if let Some(rtt) = ack.rtt {
            self.current_round_min_rtt =
                Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.samples += 1;
        }
        let acked = (ack.newly_acked as f64).min(L);
        if let Some(baseline) = self.css_baseline {
            if self.samples >= N_RTT_SAMPLE
                && self.current_round_min_rtt.is_some_and(|m| m < baseline)
            {
                // The delay increase was spurious: back to slow start.
                self.css_baseline = None;
                self.css_rounds = 0;
                return SlowStartStep::Grow(acked);
            }
            return SlowStartStep::Grow(acked / CSS_GROWTH_DIVISOR);
        }
        if self.samples >= N_RTT_SAMPLE {
            if let (Some(cur), Some(last)) = (self.current_round_min_rtt, self.last_round_min_rtt) {
                let thresh = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                if cur >= last + thresh {
                    self.css_baseline = Some(cur);
                    self.css_rounds = 0;
                    return SlowStartStep::Grow(acked / CSS_GROWTH_DIVISOR);
                }
            }
        }
        SlowStartStep::Grow(acked)
    }
}

/// Slow start for an ACK, through HyStart++ when the flow runs it: returns the acked packets left for
/// congestion avoidance (none while HyStart++ holds the growth back; all once it ends slow start, which
/// sets ssthresh to the window).
#[inline]
pub fn slow_start_hystart(
    cwnd: &mut f64,
    ssthresh: &mut f64,
    hystart: Option<&mut HyStartPlusPlus>,
    ack: &AckSample,
) -> f64 {
    let acked = ack.newly_acked as f64;
    match hystart {
        None => slow_start(cwnd, *ssthresh, acked),
        Some(h) => match h.on_ack(ack) {
            SlowStartStep::Grow(g) => {
                slow_start(cwnd, *ssthresh, g);
                0.0
            }
            SlowStartStep::Exit => {
                *ssthresh = *cwnd;
                acked
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(delivered: u64, in_flight: u32, rtt: Nanos) -> AckSample {
        AckSample {
            newly_acked: 1,
            delivered,
            in_flight,
            rtt: Some(rtt),
            ..Default::default()
        }
    }

    /// Rounds of 10, 20, 40 … packets; the RTT is 50 ms until round 4, then 60 ms (a queue of 10 ms,
    /// above RttThresh = 50/8 = 6.25 ms): CSS starts in round 4, growth is a quarter, and after 5 CSS
    /// rounds slow start ends.
    #[test]
    fn a_delay_increase_leads_to_css_then_congestion_avoidance() {
        let mut h = HyStartPlusPlus::default();
        let mut delivered = 0;
        let mut steps = Vec::new();
        for round in 0..12u64 {
            let n = 10u64 << round.min(4);
            let rtt = if round >= 4 { 60 } else { 50 } * NS_PER_MS;
            for _ in 0..n {
                delivered += 1;
                let s = h.on_ack(&ack(delivered, n as u32, rtt));
                steps.push((round, s));
                if s == SlowStartStep::Exit {
                    break;
                }
            }
            if steps.last().is_some_and(|s| s.1 == SlowStartStep::Exit) {
                break;
            }
        }
        let first_css = steps
            .iter()
            .find(|s| s.1 == SlowStartStep::Grow(0.25))
            .unwrap()
            .0;
        assert_eq!(first_css, 4);
        let exit = steps.last().unwrap();
        assert_eq!(exit.1, SlowStartStep::Exit);
        assert_eq!(exit.0, 9, "5 CSS rounds after round 4");
    }

    #[test]
    fn a_delay_that_falls_back_resumes_slow_start() {
        let mut h = HyStartPlusPlus::default();
        let mut d = 0;
        let mut feed = |h: &mut HyStartPlusPlus, n: u64, rtt_ms: u64| {
            let mut last = SlowStartStep::Grow(0.0);
            for _ in 0..n {
                d += 1;
                last = h.on_ack(&ack(d, n as u32, rtt_ms * NS_PER_MS));
            }
            last
        };
        feed(&mut h, 10, 50);
        feed(&mut h, 10, 50);
        assert_eq!(feed(&mut h, 10, 60), SlowStartStep::Grow(0.25));
        assert!(h.in_css());
        assert_eq!(
            feed(&mut h, 10, 55),
            SlowStartStep::Grow(1.0),
            "below the 60 ms baseline"
        );
        assert!(!h.in_css());
    }
}
