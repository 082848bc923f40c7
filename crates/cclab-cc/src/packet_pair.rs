//! Packet-pair capacity samples (Keshav): two packets sent back to back leave the bottleneck spaced by
//! its service time, and the receiver's arrival timestamps (echoed on the ACKs) show that spacing. Libra
//! and Madison estimate C this way; each keeps its own policy for combining samples (Libra: the largest
//! of a window, Madison: the median).

use crate::cc::{flags, AckSample};
use crate::time::{self, Nanos};

/// Matches the ACK of a pair's first packet with the ACK of its second and turns their receive-time
/// gap into a capacity sample.
#[derive(Clone, Debug, Default)]
pub struct PairMatcher {
    /// Sequence number and receiver arrival time of the last `PAIR_FIRST` packet acked.
    first: Option<(u64, Nanos)>,
}

impl PairMatcher {
    /// Feeds one ACK; returns a capacity sample in bit/s when it completes a pair. `header_bytes` are the
    /// wire bytes beyond the payload (the bottleneck serialises whole packets). Pairs whose packets were
    /// not consecutive (one was lost or retransmitted) or whose arrivals are not ordered give nothing.
    pub fn on_ack(&mut self, ack: &AckSample, header_bytes: u32) -> Option<f64> {
        if ack.acked_flags & flags::PAIR_FIRST != 0 {
            self.first = Some((ack.acked_seq, ack.rx_time));
        }
        if ack.acked_flags & flags::PAIR_SECOND == 0 {
            return None;
        }
        let (seq, rx) = self.first.take()?;
        if seq + 1 != ack.acked_seq || ack.rx_time <= rx {
            return None;
        }
        let bits = (ack.acked_bytes + header_bytes) as f64 * 8.0;
        Some(bits / time::to_secs(ack.rx_time - rx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    fn ack(seq: u64, fl: u8, rx: Nanos) -> AckSample {
        AckSample {
            acked_seq: seq,
            acked_flags: fl,
            acked_bytes: 1448,
            rx_time: rx,
            ..Default::default()
        }
    }

    #[test]
    fn a_pair_gives_wire_bits_over_the_gap() {
        let mut m = PairMatcher::default();
        assert_eq!(
            m.on_ack(&ack(7, flags::PAIR_FIRST, 10 * NS_PER_MS), 52),
            None
        );
        // 1500 B at 100 Mbit/s leave 120 µs apart.
        let c = m
            .on_ack(&ack(8, flags::PAIR_SECOND, 10 * NS_PER_MS + 120_000), 52)
            .unwrap();
        assert!((c - 100e6).abs() < 1.0, "{c}");
        // The first packet was consumed: a second PAIR_SECOND alone gives nothing.
        assert_eq!(
            m.on_ack(&ack(9, flags::PAIR_SECOND, 11 * NS_PER_MS), 52),
            None
        );
    }

    #[test]
    fn broken_pairs_give_nothing() {
        let mut m = PairMatcher::default();
        m.on_ack(&ack(7, flags::PAIR_FIRST, 10 * NS_PER_MS), 52);
        assert_eq!(
            m.on_ack(&ack(9, flags::PAIR_SECOND, 11 * NS_PER_MS), 52),
            None,
            "not consecutive"
        );
        m.on_ack(&ack(20, flags::PAIR_FIRST, 12 * NS_PER_MS), 52);
        assert_eq!(
            m.on_ack(&ack(21, flags::PAIR_SECOND, 12 * NS_PER_MS), 52),
            None,
            "no gap"
        );
    }
}
