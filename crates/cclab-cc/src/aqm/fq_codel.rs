//! FQ-CoDel (RFC 8290, "The Flow Queue CoDel Packet Scheduler and Active Queue Management
//! Algorithm"): packets are hashed by flow into `flows` sub-queues (1024), served by deficit round
//! robin with a new-flows list ([`super::drr`]: a sparse flow's packets skip the bulk flows' queues),
//! and each sub-queue runs its own CoDel control law ([`super::codel`]) on its packets' sojourn times.
//!
//! * **Hashing.** The bucket is a hash of the driver's flow key and a perturbation drawn once from the
//!   link's random stream, so two flows share a bucket (and a CoDel state) with the probability
//!   Linux's random perturbation gives them, differently for each seed.
//! * **Overflow.** Arrivals are always accepted; when the total buffer (`buffer`, the scenario's limit)
//!   overflows, FQ-CoDel drops from the *head* of the sub-queue holding the most bytes, up to 64
//!   packets or until that sub-queue has lost half its bytes (RFC 8290 §4.1; Linux's and ns-3's drop
//!   batch): the flow that built the queue pays, not the one that arrived.
//! * **CoDel per sub-queue.** RFC 8289's law with the same `target` and `interval`; its "at most one
//!   packet queued" test uses the whole discipline's backlog, as Linux `fq_codel` does (ns-3 uses the
//!   sub-queue's own bytes), so a flow with a single packet queued can still be signalled while others
//!   build a queue.
//! * **ECN.** On by default (RFC 8290 §5.2, Linux's default): ECN-capable packets are CE-marked instead
//!   of dropped by the control law. Overflow drops are always drops.
//!
//! Parameters: `target` (s, 0.005), `interval` (s, 0.1), `quantum` (bytes, one full packet), `flows`
//! (1024), `ecn` (true).

use super::codel::CoDel;
use super::drr::{mix, Drr};
use super::{BufferLimit, Departure, Leaving, QueueDiscipline, QueueLen, RouterPacket, Verdict};
use crate::params::{ParamError, ParamReader, ParamValue, Params};
use crate::rng::SimRng;
use crate::time::Nanos;
use rand::RngCore;

/// Largest number of packets one overflow drops (Linux `drop_batch_size`, ns-3 `DropBatchSize`).
const DROP_BATCH: u32 = 64;

pub struct FqCoDel {
    limit: BufferLimit,
    drr: Drr,
    codel: Vec<CoDel>,
    /// Drawn at the first arrival from the link's stream (0 until then).
    perturbation: Option<u64>,
    /// An overflow in progress: (sub-queue, bytes to get down to, drops left).
    batch: Option<(usize, u64, u32)>,
    /// Packets dropped from the heads of fat flows on overflow.
    pub overflow_drops: u64,
}

impl FqCoDel {
    pub fn new(
        params: &Params,
        limit: BufferLimit,
        packet_size: u32,
    ) -> Result<FqCoDel, ParamError> {
        let mut r = ParamReader::new("fq_codel", params);
        let quantum = r.f64_in("quantum", packet_size as f64, 64.0, 1e6)?;
        let flows = r.f64_in("flows", 1024.0, 1.0, 65536.0)?;
        let ecn = r.bool("ecn", true)?;
        // The CoDel parameters are read (and checked) by CoDel itself.
        let mut law = Params::new();
        for key in ["target", "interval"] {
            if let Some(v) = params.get(key) {
                law.insert(key.into(), v.clone());
            }
            r.f64(key, 0.0)?;
        }
        law.insert("ecn".into(), ParamValue::Bool(ecn));
        r.finish()?;
        if flows.fract() != 0.0 {
            return Err(ParamError {
                field: "flows".into(),
                message: format!("must be a whole number, got {flows}"),
            });
        }
        let codel = CoDel::new(&law, limit, packet_size)?;
        let n = flows as usize;
        let quantum = quantum.round() as u32;
        Ok(FqCoDel {
            limit,
            drr: Drr::new(n, quantum, quantum),
            codel: vec![codel; n],
            perturbation: None,
            batch: None,
            overflow_drops: 0,
        })
    }

    fn over(&self, q: QueueLen) -> bool {
        self.limit.pkts.is_some_and(|p| q.pkts > p) || self.limit.bytes.is_some_and(|b| q.bytes > b)
    }
}

impl QueueDiscipline for FqCoDel {
    fn name(&self) -> &'static str {
        "fq_codel"
    }

    fn queues(&self) -> usize {
        self.codel.len()
    }

    fn enqueue(
        &mut self,
        _now: Nanos,
        pkt: &mut RouterPacket<'_>,
        _q: QueueLen,
        rng: &mut SimRng,
    ) -> Verdict {
        let salt = *self.perturbation.get_or_insert_with(|| rng.next_u64());
        let q = (mix(pkt.flow ^ salt) % self.codel.len() as u64) as usize;
        pkt.queue = q;
        self.drr.push(q, pkt.bytes);
        Verdict::Enqueue
    }

    fn overflow_victim(&mut self, q: QueueLen) -> Option<usize> {
        if self.batch.is_none() {
            if !self.over(q) {
                return None;
            }
            let fat = self.drr.fattest()?;
            self.batch = Some((fat, self.drr.bytes(fat) / 2, DROP_BATCH));
        }
        let (fat, floor, left) = self.batch?;
        if left == 0 || self.drr.bytes(fat) <= floor || self.drr.pkts(fat) == 0 {
            self.batch = None;
            return None;
        }
        self.batch = Some((fat, floor, left - 1));
        Some(fat)
    }

    fn on_head_drop(&mut self, queue: usize, bytes: u32) {
        self.drr.remove(queue, bytes);
        self.overflow_drops += 1;
    }

    fn next_queue(&mut self, _now: Nanos) -> usize {
        // The driver only asks while a packet is queued, so some sub-queue is listed and non-empty.
        self.drr.next_queue().unwrap_or(0)
    }

    fn judges_departures(&self) -> bool {
        true
    }

    fn on_departure(&mut self, now: Nanos, pkt: &Leaving, q: QueueLen) -> Departure {
        self.drr.remove(pkt.queue, pkt.bytes);
        let d = self.codel[pkt.queue].judge(now, pkt.sojourn, pkt.ect, q.bytes);
        if d != Departure::Drop {
            self.drr.charge(pkt.queue, pkt.bytes);
        }
        d
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("fq_codel_flows", self.drr.backlogged() as f64));
        out.push(("fq_codel_max_flow_pkts", self.drr.max_pkts() as f64));
        out.push(("fq_codel_new_flows", self.drr.new_flows() as f64));
        let dropping = self.codel.iter().filter(|c| c.dropping()).count();
        out.push(("fq_codel_dropping", dropping as f64));
        // by cause: overflow (fattest-flow head drops); the rest of the link's `drops` are the laws'
        out.push(("fq_codel_overflow_drops", self.overflow_drops as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    const MS: Nanos = 1_000_000;

    fn fq(limit: u32) -> FqCoDel {
        FqCoDel::new(
            &Params::new(),
            BufferLimit {
                pkts: Some(limit),
                bytes: None,
            },
            1500,
        )
        .unwrap()
    }

    /// Enqueues a 1500 B packet of `flow`; returns its sub-queue.
    fn arrive(f: &mut FqCoDel, flow: u64, rng: &mut SimRng) -> usize {
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
        assert_eq!(
            f.enqueue(0, &mut p, QueueLen::default(), rng),
            Verdict::Enqueue
        );
        p.queue
    }

    #[test]
    fn a_sparse_flow_is_served_ahead_of_a_bulk_backlog() {
        let mut f = fq(1000);
        let mut rng = stream(1, 0);
        let bulk: Vec<usize> = (0..100).map(|_| arrive(&mut f, 7, &mut rng)).collect();
        assert!(bulk.iter().all(|&q| q == bulk[0]));
        // Two bulk packets leave, then one packet of another flow arrives: it goes next.
        for _ in 0..2 {
            let q = f.next_queue(0);
            f.on_departure(
                0,
                &Leaving {
                    queue: q,
                    sojourn: MS,
                    bytes: 1500,
                    ect: false,
                },
                QueueLen::default(),
            );
        }
        let sparse = arrive(&mut f, 8, &mut rng);
        assert_ne!(sparse, bulk[0]);
        assert_eq!(f.next_queue(0), sparse);
    }

    #[test]
    fn overflow_drops_from_the_fattest_flow_head() {
        // Limit 100: flow 1 holds 90 packets, flow 2 holds 10; the 101st packet (flow 2) overflows.
        // The batch drops from flow 1's head until it has lost half its bytes (45 packets).
        let mut f = fq(100);
        let mut rng = stream(1, 0);
        let a = (0..90).map(|_| arrive(&mut f, 1, &mut rng)).last().unwrap();
        let b = (0..11).map(|_| arrive(&mut f, 2, &mut rng)).last().unwrap();
        assert_ne!(a, b);
        let total = QueueLen {
            pkts: 101,
            bytes: 101 * 1500,
        };
        assert_eq!(
            f.overflow_victim(QueueLen {
                pkts: 100,
                bytes: 150_000
            }),
            None
        );
        let mut victims = Vec::new();
        while let Some(v) = f.overflow_victim(total) {
            f.on_head_drop(v, 1500);
            victims.push(v);
        }
        assert_eq!(victims.len(), 45);
        assert!(victims.iter().all(|&v| v == a));
        assert_eq!((f.drr.pkts(a), f.drr.pkts(b)), (45, 11));
    }

    #[test]
    fn each_flow_has_its_own_control_law() {
        // Flow 1's packets wait 20 ms, flow 2's 1 ms: only flow 1's CoDel drops (first at 100 ms).
        let mut f = fq(10_000);
        let mut rng = stream(1, 0);
        let (a, b) = (arrive(&mut f, 1, &mut rng), arrive(&mut f, 2, &mut rng));
        let q = QueueLen {
            pkts: 50,
            bytes: 75_000,
        };
        let mut drops = [0, 0];
        for i in 0..300 {
            for (k, (queue, soj)) in [(a, 20 * MS), (b, MS)].into_iter().enumerate() {
                arrive(&mut f, k as u64 + 1, &mut rng);
                let d = f.on_departure(
                    i * MS,
                    &Leaving {
                        queue,
                        sojourn: soj,
                        bytes: 1500,
                        ect: false,
                    },
                    q,
                );
                drops[k] += (d == Departure::Drop) as u32;
            }
        }
        assert!(drops[0] >= 2 && drops[1] == 0, "{drops:?}");
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let lim = BufferLimit {
            pkts: Some(10),
            bytes: None,
        };
        for (k, v) in [
            ("flows", 0.5),
            ("flows", 2.5),
            ("quantum", 1.0),
            ("interval", 0.001),
            ("tagret", 1.0),
        ] {
            let mut p = Params::new();
            p.insert(k.into(), ParamValue::Num(v));
            assert_eq!(
                FqCoDel::new(&p, lim, 1500).err().unwrap().field,
                k,
                "{k}={v}"
            );
        }
    }
}
