//! FQ: per-flow fair queueing like Linux `fq` without its pacing: one sub-queue per flow, exactly (a
//! flow key gets its own sub-queue up to `flows`; beyond that keys share sub-queues by hash), served by
//! deficit round robin ([`super::drr`]) with `quantum` bytes a round (two packets), `initial_quantum`
//! (ten packets) for a flow that becomes active, and a new-flows list that serves newly active flows
//! first. An arrival is dropped when its flow already holds `flow_limit` packets (100) or the whole
//! buffer (`buffer`) is full: a flow that builds a queue loses its own packets, and other flows keep
//! their share of the link and their low delay.
//!
//! Simplification against Linux: a flow gets `initial_quantum` each time it becomes active (Linux only
//! after it was idle for `flow_refill_delay`, 40 ms); Linux's pacing (`maxrate`, socket pacing rates)
//! and its garbage collection of idle flows have no counterpart here.
//!
//! Parameters: `quantum` (bytes, 2 packets), `initial_quantum` (bytes, 10 packets), `flow_limit`
//! (packets, 100), `flows` (1024).

use super::drr::{mix, Drr};
use super::{BufferLimit, Departure, Leaving, QueueDiscipline, QueueLen, RouterPacket, Verdict};
use crate::params::{ParamError, ParamReader, Params};
use crate::rng::SimRng;
use crate::time::Nanos;
use std::collections::HashMap;

pub struct Fq {
    limit: BufferLimit,
    flow_limit: u32,
    drr: Drr,
    n: usize,
    /// Flow key → sub-queue, for the first `n` keys seen.
    slots: HashMap<u64, usize>,
    /// Arrivals dropped because their flow was at `flow_limit`.
    pub flow_limit_drops: u64,
}

impl Fq {
    pub fn new(params: &Params, limit: BufferLimit, packet_size: u32) -> Result<Fq, ParamError> {
        let mut r = ParamReader::new("fq", params);
        let mtu = packet_size as f64;
        let quantum = r.f64_in("quantum", 2.0 * mtu, 64.0, 1e6)?;
        let initial = r.f64_in("initial_quantum", 10.0 * mtu, 0.0, 1e7)?;
        let flow_limit = r.f64_in("flow_limit", 100.0, 1.0, 1e6)?;
        let flows = r.f64_in("flows", 1024.0, 1.0, 65536.0)?;
        r.finish()?;
        for (field, v) in [("flow_limit", flow_limit), ("flows", flows)] {
            if v.fract() != 0.0 {
                return Err(ParamError {
                    field: field.into(),
                    message: format!("must be a whole number, got {v}"),
                });
            }
        }
        let n = flows as usize;
        Ok(Fq {
            limit,
            flow_limit: flow_limit as u32,
            drr: Drr::new(n, quantum.round() as u32, initial.round() as u32),
            n,
            slots: HashMap::new(),
            flow_limit_drops: 0,
        })
    }

    fn slot(&mut self, flow: u64) -> usize {
        if let Some(&q) = self.slots.get(&flow) {
            return q;
        }
        if self.slots.len() < self.n {
            let q = self.slots.len();
            self.slots.insert(flow, q);
            return q;
        }
        (mix(flow) % self.n as u64) as usize
    }
}

impl QueueDiscipline for Fq {
    fn name(&self) -> &'static str {
        "fq"
    }

    fn queues(&self) -> usize {
        self.n
    }

    fn enqueue(
        &mut self,
        _now: Nanos,
        pkt: &mut RouterPacket<'_>,
        q: QueueLen,
        _rng: &mut SimRng,
    ) -> Verdict {
        let s = self.slot(pkt.flow);
        if self.drr.pkts(s) >= self.flow_limit {
            self.flow_limit_drops += 1;
            return Verdict::Drop;
        }
        if self.limit.overflows(q, pkt.bytes) {
            return Verdict::Drop;
        }
        pkt.queue = s;
        self.drr.push(s, pkt.bytes);
        Verdict::Enqueue
    }

    fn next_queue(&mut self, _now: Nanos) -> usize {
        self.drr.next_queue().unwrap_or(0)
    }

    fn judges_departures(&self) -> bool {
        true
    }

    fn on_departure(&mut self, _now: Nanos, pkt: &Leaving, _q: QueueLen) -> Departure {
        self.drr.remove(pkt.queue, pkt.bytes);
        self.drr.charge(pkt.queue, pkt.bytes);
        Departure::Send
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("fq_flows", self.drr.backlogged() as f64));
        out.push(("fq_max_flow_pkts", self.drr.max_pkts() as f64));
        // by cause: drops at the per-flow limit (the rest of the link's `drops`: the buffer full)
        out.push(("fq_flow_limit_drops", self.flow_limit_drops as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;
    use crate::rng::stream;

    fn fq(flows: f64) -> Fq {
        let mut p = Params::new();
        p.insert("flows".into(), ParamValue::Num(flows));
        Fq::new(
            &p,
            BufferLimit {
                pkts: Some(10_000),
                bytes: None,
            },
            1500,
        )
        .unwrap()
    }

    fn arrive(f: &mut Fq, flow: u64, rng: &mut SimRng) -> (Verdict, usize) {
        let mut field = 0;
        let mut p = RouterPacket {
            bytes: 1500,
            ect: false,
            is_data: true,
            flags: 0,
            fwd_field: &mut field,
            flow,
            queue: 0,
        };
        let v = f.enqueue(0, &mut p, QueueLen::default(), rng);
        (v, p.queue)
    }

    #[test]
    fn each_flow_gets_its_own_queue_and_its_own_limit() {
        let mut f = fq(1024.0);
        let mut rng = stream(1, 0);
        let v: Vec<(Verdict, usize)> = (0..101).map(|_| arrive(&mut f, 1, &mut rng)).collect();
        assert!(v[..100]
            .iter()
            .all(|&(x, q)| x == Verdict::Enqueue && q == 0));
        assert_eq!(v[100].0, Verdict::Drop);
        assert_eq!(arrive(&mut f, 2, &mut rng), (Verdict::Enqueue, 1));
    }

    #[test]
    fn backlogged_flows_alternate_two_packets_at_a_time() {
        // quantum = 2 packets; both flows become active with 10 packets of credit (served first in
        // full from the new list), then two packets each per round.
        let mut f = fq(16.0);
        let mut rng = stream(1, 0);
        for _ in 0..50 {
            arrive(&mut f, 1, &mut rng);
            arrive(&mut f, 2, &mut rng);
        }
        let order: Vec<usize> = (0..28)
            .map(|_| {
                let q = f.next_queue(0);
                f.on_departure(
                    0,
                    &Leaving {
                        queue: q,
                        sojourn: 0,
                        bytes: 1500,
                        ect: false,
                    },
                    QueueLen::default(),
                );
                q
            })
            .collect();
        assert_eq!(&order[..20], &[[0; 10], [1; 10]].concat()[..]);
        assert_eq!(&order[20..], &[0, 0, 1, 1, 0, 0, 1, 1]);
    }

    #[test]
    fn more_flows_than_queues_share_by_hash() {
        let mut f = fq(4.0);
        let mut rng = stream(1, 0);
        let qs: Vec<usize> = (0..20).map(|k| arrive(&mut f, k, &mut rng).1).collect();
        assert_eq!(&qs[..4], &[0, 1, 2, 3]);
        assert!(qs.iter().all(|&q| q < 4));
    }
}
