//! Test support for the rate-based algorithms (BBR v1 and v3): a fluid model of one flow on a
//! bottleneck, and ACKs carrying the delivery-rate sample the transport would take. Compiled for tests
//! only.

use crate::cc::{AckSample, CongestionControl, RateSample};
use crate::time::Nanos;

/// One flow on a bottleneck of `cap` packets/s with round-trip propagation time `rtt`.
pub struct Path {
    pub cap: f64,
    pub rtt: Nanos,
}

impl Path {
    /// Packets in flight after `dt` of sending at what pacing and the window allow: the pipe at the
    /// rate the bottleneck passes plus a queue `q` that grows while the sender exceeds it.
    pub fn in_flight(&self, cc: &dyn CongestionControl, q: &mut f64, dt: Nanos) -> u32 {
        let rtt = self.rtt as f64 / 1e9;
        let pace = cc.pacing_rate_bps().unwrap() / 12_000.0;
        let send = pace.min(cc.cwnd() / (rtt + *q / self.cap));
        *q = (*q + (send - self.cap) * dt as f64 / 1e9).max(0.0);
        (send.min(self.cap) * rtt + *q).min(cc.cwnd()) as u32
    }
}

/// An ACK of one packet at `now`, `delivered` packets delivered so far, with a rate sample of `rate`
/// packets/s over one `rtt`.
pub fn ack_at(now: Nanos, delivered: u64, in_flight: u32, rtt: Nanos, rate: f64) -> AckSample {
    AckSample {
        now,
        newly_acked: 1,
        cum_advanced: true,
        rtt: Some(rtt),
        srtt: rtt,
        min_rtt: rtt,
        in_flight,
        delivered,
        rate: Some(RateSample {
            delivered: (rate * rtt as f64 / 1e9).max(1.0) as u64,
            interval: rtt,
            prior_delivered: delivered.saturating_sub((rate * rtt as f64 / 1e9) as u64 + 1),
            tx_in_flight: in_flight,
            ..Default::default()
        }),
        ..Default::default()
    }
}
