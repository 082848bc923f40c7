//! Drop-tail FIFO: accept while the buffer has room (packets or bytes), drop otherwise.
//!
//! Optional step marking (parameter `mark_threshold`, packets): an ECN-capable arrival that finds at
//! least K packets queued is CE-marked, the instantaneous-queue marking DCTCP expects of its switches
//! (RFC 8257 §3.1; what RED with min_th = max_th = K and no averaging does in Linux and ns-3).

use super::{BufferLimit, QueueDiscipline, QueueLen, RouterPacket, Verdict};
use crate::params::{ParamError, ParamReader, Params};
use crate::rng::SimRng;
use crate::time::Nanos;

pub struct DropTail {
    limit: BufferLimit,
    mark_threshold: Option<u32>,
}

impl DropTail {
    pub fn new(limit: BufferLimit) -> Self {
        DropTail {
            limit,
            mark_threshold: None,
        }
    }

    /// Drop-tail with the scenario's parameters (`mark_threshold`).
    pub fn from_params(params: &Params, limit: BufferLimit) -> Result<Self, ParamError> {
        let mut r = ParamReader::new("droptail", params);
        let k = r.f64_in("mark_threshold", 0.0, 0.0, 1e9)?;
        r.finish()?;
        if k.fract() != 0.0 {
            return Err(ParamError {
                field: "mark_threshold".into(),
                message: format!("must be a whole number of packets, got {k}"),
            });
        }
        Ok(DropTail {
            limit,
            mark_threshold: (params.contains_key("mark_threshold")).then_some(k as u32),
        })
    }
}

impl QueueDiscipline for DropTail {
    fn name(&self) -> &'static str {
        "droptail"
    }

    fn plain_fifo_limit(&self) -> Option<BufferLimit> {
        // With an ECN step, arrivals above it are marked: not plain.
        self.mark_threshold.is_none().then_some(self.limit)
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
        } else if self.mark_threshold.is_some_and(|k| pkt.ect && q.pkts >= k) {
            Verdict::Mark
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
