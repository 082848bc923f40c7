//! RFC 6298 round-trip time estimation: SRTT, RTTVAR, the minimum RTT, and the retransmission timeout
//! with its exponential backoff.
//!
//! Samples come from timestamp echoes, so a retransmission gives a valid sample: the echo names the
//! transmission that was received, which is what Karn's rule protects. The estimator only holds the
//! RTO's value; when the timer is armed and what expiry does belong to the sender.

use cclab_cc::time::Nanos;

/// RFC 6298 §2's clock granularity G in RTO = SRTT + max(G, 4·RTTVAR): the floor of the variance
/// term, so that identical samples (a fixed-delay path drives RTTVAR to 0) never set the RTO to exactly
/// the expected ACK time. 1 µs rather than our clock's 1 ns: the same sender runs on the real datapath,
/// whose timers are late by tens of microseconds (docs/real-datapath.md), so a finer G would claim a
/// precision no driver has. It only matters when `min_rto` is below SRTT + 1 µs (the default, 200 ms,
/// clamps far above it); the golden results are recorded with this value.
pub(crate) const CLOCK_GRANULARITY: Nanos = 1_000;

#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    srtt: Nanos,
    rttvar: Nanos,
    min_rtt: Nanos,
    rto: Nanos,
    min_rto: Nanos,
    max_rto: Nanos,
    /// Consecutive timeouts since new data was last acknowledged.
    backoffs: u32,
    /// A first sample was taken (RFC 6298 §2.2 initialises from it; a 0 ns sample is valid).
    sampled: bool,
}

impl RttEstimator {
    /// Before the first sample the RTO is `initial_rto` as given (RFC 6298 §2.1), not clamped.
    pub(crate) fn new(initial_rto: Nanos, min_rto: Nanos, max_rto: Nanos) -> RttEstimator {
        RttEstimator {
            srtt: 0,
            rttvar: 0,
            min_rtt: 0,
            rto: initial_rto,
            min_rto,
            max_rto,
            backoffs: 0,
            sampled: false,
        }
    }

    /// Smoothed RTT (0 before the first sample).
    pub(crate) fn srtt(&self) -> Nanos {
        self.srtt
    }
    pub(crate) fn min_rtt(&self) -> Nanos {
        self.min_rtt
    }
    pub(crate) fn rto(&self) -> Nanos {
        self.rto
    }

    /// RFC 6298 §2.2–2.4: fold in one sample and recompute the RTO, which also undoes any backoff.
    pub(crate) fn update(&mut self, r: Nanos) {
        if !self.sampled {
            self.sampled = true;
            self.srtt = r;
            self.rttvar = r / 2;
            self.min_rtt = r;
        } else {
            let err = self.srtt.abs_diff(r);
            self.rttvar = (3 * self.rttvar + err) / 4;
            self.srtt = (7 * self.srtt + r) / 8;
            self.min_rtt = self.min_rtt.min(r);
        }
        let rto = self.srtt + (4 * self.rttvar).max(CLOCK_GRANULARITY);
        self.rto = rto.clamp(self.min_rto, self.max_rto);
    }

    /// RFC 6298 §5.5: the timer expired; double the RTO (up to `max_rto`). Returns how many consecutive
    /// timeouts this makes (1 on the first).
    pub(crate) fn back_off(&mut self) -> u32 {
        self.backoffs += 1;
        self.rto = (self.rto * 2).min(self.max_rto);
        self.backoffs
    }

    /// New data was acknowledged: the next timeout is a first one again. The RTO keeps its backed-off
    /// value until the next sample (RFC 6298 §5.7).
    pub(crate) fn reset_backoffs(&mut self) {
        self.backoffs = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_then_smoothing() {
        let mut e = RttEstimator::new(1_000_000, 0, u64::MAX);
        e.update(800);
        assert_eq!((e.srtt(), e.rttvar, e.min_rtt()), (800, 400, 800));
        assert_eq!(e.rto(), 800 + 1600);
        e.update(400);
        assert_eq!((e.srtt(), e.rttvar, e.min_rtt()), (750, 400, 400));
    }

    #[test]
    fn identical_samples_leave_the_granularity_floor() {
        let mut e = RttEstimator::new(1_000_000, 0, u64::MAX);
        for _ in 0..64 {
            e.update(10_000_000);
        }
        assert_eq!(e.rttvar, 0);
        assert_eq!(e.rto(), 10_000_000 + CLOCK_GRANULARITY);
    }

    #[test]
    fn rto_clamped_and_backed_off() {
        let mut e = RttEstimator::new(3_000, 2_000, 10_000);
        assert_eq!(e.rto(), 3_000, "initial RTO is not clamped");
        e.update(100);
        assert_eq!(e.rto(), 2_000);
        assert_eq!(e.back_off(), 1);
        assert_eq!(e.back_off(), 2);
        assert_eq!(e.rto(), 8_000);
        assert_eq!(e.back_off(), 3);
        assert_eq!(e.rto(), 10_000);
        e.reset_backoffs();
        assert_eq!(e.rto(), 10_000, "kept until the next sample");
        assert_eq!(e.back_off(), 1);
    }
}
