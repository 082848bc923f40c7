//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation; Linux `tcp_rate.c`), a service
//! the transport gives every algorithm: BBR's bandwidth filter and any rate-based controller read it from
//! [`AckSample::rate`](cclab_cc::cc::AckSample::rate).
//!
//! Each transmission carries a snapshot of the connection's delivery state taken when it left
//! ([`TxSnapshot`], kept in the transmission log beside the echo it will be checked against). When an ACK
//! delivers data, the transmission it echoes is the sampled packet: the rate is the data delivered since
//! that packet left over max(send interval, ACK interval).
//!
//! DECISION: the draft and Linux sample the most recently *sent* of all packets an ACK newly delivers;
//! here it is the transmission the ACK echoes (the packet whose arrival triggered it). On a FIFO path
//! the two are the same packet (the one that arrived last is the one sent last), and the echo is known
//! without walking the newly delivered range. On a reordering path an ACK triggered by an early-sent
//! packet that arrives late gives a sample over a longer interval, i.e. a lower rate; a max filter
//! ignores it.

use cclab_cc::cc::RateSample;
use cclab_cc::time::Nanos;

/// The connection's delivery state when a transmission left.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TxSnapshot {
    /// Packets delivered (cumulatively ACKed or SACKed) so far.
    pub delivered: u64,
    /// When `delivered` last grew.
    pub delivered_time: Nanos,
    /// Send time of the first packet of the current send interval.
    pub first_sent_time: Nanos,
    /// Packets marked lost so far.
    pub lost: u64,
    /// Packets in flight when it left, itself included.
    pub in_flight: u32,
    /// The sender was application-limited.
    pub app_limited: bool,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct DeliveryRate {
    delivered: u64,
    delivered_time: Nanos,
    first_sent_time: Nanos,
    /// Non-zero while the sender is application-limited: the delivered count at which the last packet
    /// sent in that state will have been delivered (then samples are full-rate again).
    app_limited_until: u64,
}

impl DeliveryRate {
    pub(crate) fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Counts delivered packets only, for a sender whose algorithm takes no rate samples.
    pub(crate) fn count_delivered(&mut self, newly: u64) {
        self.delivered += newly;
    }

    /// A packet leaves now with `pipe` packets (itself excluded) in flight; returns its snapshot.
    pub(crate) fn on_send(&mut self, now: Nanos, pipe: u64, lost: u64) -> TxSnapshot {
        if pipe == 0 {
            // Nothing in flight: a new send interval starts (the idle time before it is not the
            // path's fault).
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        TxSnapshot {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            lost,
            in_flight: (pipe + 1).min(u32::MAX as u64) as u32,
            app_limited: self.app_limited_until != 0,
        }
    }

    /// The sender had window room and nothing to send: samples taken until what is in flight now is
    /// delivered are application-limited.
    pub(crate) fn on_app_limited(&mut self, pipe: u64) {
        self.app_limited_until = (self.delivered + pipe).max(1);
    }

    /// An ACK delivered `newly` packets (> 0) and echoes the transmission sent at `sent` with snapshot
    /// `p`. Returns the rate sample if it is valid: its interval is at least `min_rtt` (a shorter one
    /// would come from ACK compression, Linux `tcp_rate_gen`).
    pub(crate) fn on_delivered(
        &mut self,
        now: Nanos,
        newly: u64,
        sent: Nanos,
        p: &TxSnapshot,
        lost: u64,
        min_rtt: Nanos,
    ) -> Option<RateSample> {
        self.delivered += newly;
        self.delivered_time = now;
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        // The next send interval starts from this packet's departure.
        self.first_sent_time = self.first_sent_time.max(sent);
        let send_elapsed = sent.saturating_sub(p.first_sent_time);
        let ack_elapsed = now.saturating_sub(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        let delivered = self.delivered.saturating_sub(p.delivered);
        if interval == 0 || interval < min_rtt || delivered == 0 {
            return None;
        }
        Some(RateSample {
            delivered,
            interval,
            prior_delivered: p.delivered,
            app_limited: p.app_limited,
            lost: lost.saturating_sub(p.lost),
            tx_in_flight: p.in_flight,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sender pacing one packet every `gap` over a path with RTT `rtt`, ACKed per packet: every sample
    /// of a packet sent after the first ACK came back gives the sending rate; earlier ones (the first
    /// round trip, nothing delivered yet when they left) are lower bounds.
    #[test]
    fn a_paced_flow_measures_its_own_rate() {
        let (gap, rtt) = (1_000u64, 50_000u64);
        let mut r = DeliveryRate::default();
        let mut sent: Vec<(Nanos, TxSnapshot)> = Vec::new();
        let mut samples = Vec::new();
        let mut next_ack = 0;
        for k in 0..1000u64 {
            let now = k * gap;
            // ACKs due before this send.
            while next_ack < sent.len() && sent[next_ack].0 + rtt <= now {
                let (t, p) = sent[next_ack];
                if let Some(s) = r.on_delivered(t + rtt, 1, t, &p, 0, rtt) {
                    samples.push(s);
                }
                next_ack += 1;
            }
            let pipe = (sent.len() - next_ack) as u64;
            sent.push((now, r.on_send(now, pipe, 0)));
        }
        assert!(samples.len() > 400, "{}", samples.len());
        for s in &samples {
            let rate = s.packets_per_sec();
            if s.prior_delivered > 0 {
                assert!((rate - 1e6).abs() / 1e6 < 0.03, "{s:?} {rate}");
            } else {
                assert!(rate <= 1e6 * 1.001, "{s:?} {rate}");
            }
            assert!(!s.app_limited);
        }
        assert!(samples.iter().filter(|s| s.prior_delivered > 0).count() > 800);
    }

    /// ACK compression: ten ACKs arrive at once after the packets left 1 µs apart. The ACK interval is 0,
    /// the send interval rules, and the rate is the sending rate, not infinite.
    #[test]
    fn a_burst_of_acks_does_not_inflate_the_rate() {
        let mut r = DeliveryRate::default();
        let snaps: Vec<_> = (0..10u64)
            .map(|k| (k * 1_000, r.on_send(k * 1_000, k, 0)))
            .collect();
        let mut last = None;
        for (t, p) in &snaps {
            last = r.on_delivered(100_000, 1, *t, p, 0, 0).or(last);
        }
        let s = last.unwrap();
        assert_eq!(s.delivered, 10);
        assert_eq!(s.interval, 100_000, "ack interval from the first send");
        let mut r2 = DeliveryRate::default();
        let p0 = r2.on_send(0, 0, 0);
        assert_eq!(
            r2.on_delivered(10, 1, 0, &p0, 0, 50),
            None,
            "shorter than min RTT"
        );
    }

    #[test]
    fn app_limited_marks_samples_until_the_flight_is_delivered() {
        let mut r = DeliveryRate::default();
        let p0 = r.on_send(0, 0, 0);
        r.on_app_limited(1);
        let p1 = r.on_send(10, 1, 0);
        assert!(!p0.app_limited && p1.app_limited);
        let s0 = r.on_delivered(100, 1, 0, &p0, 0, 0).unwrap();
        assert!(!s0.app_limited);
        let s1 = r.on_delivered(110, 1, 10, &p1, 3, 0).unwrap();
        assert!(s1.app_limited);
        assert_eq!(s1.lost, 3);
        let p2 = r.on_send(120, 0, 3);
        assert!(
            !p2.app_limited,
            "delivered passed the mark: full-rate again"
        );
    }
}
