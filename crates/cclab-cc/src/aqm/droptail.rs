//! Drop-tail FIFO: accept while the buffer has room (packets or bytes), drop otherwise.

use super::{BufferLimit, QueueDiscipline, QueueLen, RouterPacket, Verdict};
use crate::rng::SimRng;
use crate::time::Nanos;

pub struct DropTail {
    limit: BufferLimit,
}

impl DropTail {
    pub fn new(limit: BufferLimit) -> Self {
        DropTail { limit }
    }
}

impl QueueDiscipline for DropTail {
    fn name(&self) -> &'static str {
        "droptail"
    }

    #[inline]
    fn enqueue(
        &mut self,
        _now: Nanos,
        pkt: &mut RouterPacket<'_>,
        q: QueueLen,
        _rng: &mut SimRng,
    ) -> Verdict {
        if self.limit.overflows(q, pkt.bytes) {
            Verdict::Drop
        } else {
            Verdict::Enqueue
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn drops_when_full_in_packets_and_bytes() {
        let mut rng = crate::rng::stream(0, 0);
        let mut f = 0u32;
        let mut d = DropTail::new(BufferLimit {
            pkts: Some(2),
            bytes: None,
        });
        let mut p = RouterPacket {
            bytes: 1500,
            ect: false,
            is_data: true,
            flags: 0,
            fwd_field: &mut f,
            flow: 0,
            queue: 0,
        };
        assert_eq!(
            d.enqueue(
                0,
                &mut p,
                QueueLen {
                    pkts: 1,
                    bytes: 1500
                },
                &mut rng
            ),
            Verdict::Enqueue
        );
        assert_eq!(
            d.enqueue(
                0,
                &mut p,
                QueueLen {
                    pkts: 2,
                    bytes: 3000
                },
                &mut rng
            ),
            Verdict::Drop
        );
        let mut d = DropTail::new(BufferLimit {
            pkts: None,
            bytes: Some(4000),
        });
        assert_eq!(
            d.enqueue(
                0,
                &mut p,
                QueueLen {
                    pkts: 2,
                    bytes: 2500
                },
                &mut rng
            ),
            Verdict::Enqueue
        );
        assert_eq!(
            d.enqueue(
                0,
                &mut p,
                QueueLen {
                    pkts: 2,
                    bytes: 2501
                },
                &mut rng
            ),
            Verdict::Drop
        );
    }
}
