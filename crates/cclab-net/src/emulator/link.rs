//! One emulated link, free of I/O: random loss on arrival, the queue discipline (built by
//! `cclab_cc::registry::build_queue`, the simulator's code), a FIFO buffer (one per flow bucket for
//! FQ-CoDel and FQ), transmission at the link rate on a virtual clock, propagation delay. The emulator
//! ([`super::core::Emulator`]) holds several and moves each packet through its route's links in order.

use std::collections::VecDeque;

use cclab_cc::aqm::{
    BufferLimit, Departure, Leaving, QueueDiscipline, QueueLen, RouterPacket, Verdict,
};
use cclab_cc::impair::Impairments;
use cclab_cc::params::{ParamError, Params};
use cclab_cc::registry::{build_queue, LinkEnv};
use cclab_cc::rng::{self, SimRng, Stream};
use cclab_cc::schedule::StepCursor;
use cclab_cc::time::{from_secs, tx_time, Nanos};
use cclab_cc::trace_link::{TraceService, OPPORTUNITY_BYTES};
use serde::Serialize;

use crate::ip::{self, Info};

/// The side a packet came from: `Fwd` = read from host A (senders), written to host B at its route's
/// end; `Rev` = from host B, written to host A. On a dumbbell `Fwd` crosses link 0 and `Rev` link 1
/// (the convention of `RunSpec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Fwd = 0,
    Rev = 1,
}

/// One direction's link settings (SI units resolved to integers).
#[derive(Clone, Debug)]
pub struct LinkConfig {
    pub rate_bps: f64,
    pub delay: Nanos,
    pub limit: BufferLimit,
    pub queue: String,
    pub queue_params: Params,
    /// Bernoulli loss probability on arrival; `loss_schedule` overrides it from each time on.
    pub loss: f64,
    pub loss_schedule: Vec<(Nanos, f64)>,
    pub loss_data_only: bool,
    /// The propagation delay from each time on (`delay` before the first), as in the simulator: a
    /// packet takes the delay in force when it finishes serialisation, and never overtakes the one
    /// ahead of it.
    pub delay_schedule: Vec<(Nanos, Nanos)>,
    /// Wire size of a full data packet (RED's typical packet).
    pub packet_size: u32,
    /// Trace-driven capacity (delivery opportunities, ms) in place of `rate_bps`; empty = constant rate.
    pub trace_ms: Vec<f64>,
    /// Jitter, reordering, duplication (the simulator's model).
    pub impair: Option<Impairments>,
}

impl LinkConfig {
    /// A drop-tail link with a packet buffer and no loss.
    pub fn droptail(rate_bps: f64, delay: Nanos, buffer_pkts: u32) -> Self {
        LinkConfig {
            rate_bps,
            delay,
            limit: BufferLimit {
                pkts: Some(buffer_pkts),
                bytes: None,
            },
            queue: "droptail".into(),
            queue_params: Params::new(),
            loss: 0.0,
            loss_schedule: Vec::new(),
            loss_data_only: true,
            delay_schedule: Vec::new(),
            packet_size: 1500,
            trace_ms: Vec::new(),
            impair: None,
        }
    }

    pub fn from_spec(l: &crate::spec::LinkSpec, packet_size: u32) -> Self {
        LinkConfig {
            rate_bps: l.rate_bps,
            delay: from_secs(l.delay),
            limit: BufferLimit {
                pkts: l.buffer_pkts,
                bytes: l.buffer_bytes,
            },
            queue: l.queue.clone(),
            queue_params: l.queue_params.clone(),
            loss: l.loss,
            loss_schedule: l
                .loss_schedule
                .iter()
                .map(|&(t, p)| (from_secs(t), p))
                .collect(),
            loss_data_only: l.loss_data_only,
            delay_schedule: l
                .delay_schedule
                .iter()
                .map(|&(t, d)| (from_secs(t), from_secs(d)))
                .collect(),
            packet_size,
            trace_ms: l.trace_ms.clone(),
            impair: l.impairments(),
        }
    }

    fn loss_at(&self, t: Nanos) -> f64 {
        self.loss_schedule
            .iter()
            .rev()
            .find(|(s, _)| *s <= t)
            .map_or(self.loss, |&(_, p)| p)
    }
}

/// Per-link counters (cumulative).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LinkCounters {
    pub arrivals: u64,
    pub arrival_bytes: u64,
    pub random_drops: u64,
    pub queue_drops: u64,
    pub marks: u64,
    /// Router-field rewrites (the discipline changed a MaxNet forward field).
    pub field_writes: u64,
    pub departures: u64,
    pub departure_bytes: u64,
    /// Sum of the sojourn times (ns) of the packets that left the queue for the link.
    pub sojourn_ns: u64,
    /// Handed to the far host after the propagation delay.
    pub delivered: u64,
}

/// Recycled packet buffers (reads, duplicates, generated cross traffic).
#[derive(Default)]
pub(super) struct Pool(Vec<Vec<u8>>);

impl Pool {
    pub(super) fn take(&mut self) -> Vec<u8> {
        let mut b = self.0.pop().unwrap_or_else(|| Vec::with_capacity(2048));
        b.clear();
        b
    }

    pub(super) fn recycle(&mut self, b: Vec<u8>) {
        if self.0.len() < 4096 {
            self.0.push(b);
        }
    }
}

/// A packet in the emulator, with where it is on its route.
pub(super) struct Pkt {
    pub(super) buf: Vec<u8>,
    pub(super) info: Info,
    /// Its route ([`super::core`]'s table) and the index of the link it is on (or enters next).
    pub(super) route: u32,
    pub(super) hop: u16,
    /// The side it came from: it is written to the other side's host at the route's end.
    pub(super) dir: Dir,
}

struct Queued {
    pkt: Pkt,
    arrival: Nanos,
}

/// A snapshot of one link for the time series.
#[derive(Clone, Debug, Serialize)]
pub struct LinkSnapshot {
    pub queue_pkts: u32,
    pub queue_bytes: u64,
    pub counters: LinkCounters,
    pub state: Vec<(&'static str, f64)>,
}

pub(super) struct Link {
    pub(super) cfg: LinkConfig,
    pub(super) qdisc: Box<dyn QueueDiscipline>,
    rng: SimRng,
    /// The discipline's sub-queues: one FIFO, or one per flow bucket (FQ-CoDel, FQ).
    queues: Vec<VecDeque<Queued>>,
    /// More than one sub-queue: the discipline picks which to serve and may drop heads.
    fq: bool,
    pub(super) pkts: u32,
    pub(super) qbytes: u64,
    /// Arrival time of the packet that last found the queue empty. With several sub-queues the oldest
    /// queued packet is not at one front: every packet queued since arrived later than this one, and
    /// the link is busy until they start, so max(this, free_at) is when the next one starts.
    idle_arrival: Nanos,
    /// End of the current (or last) transmission on the virtual clock.
    free_at: Nanos,
    /// Trace-driven capacity (the simulator's code), in place of the rate.
    trace: Option<TraceService>,
    /// In propagation: (delivery time, packet), in order.
    pub(super) prop: VecDeque<(Nanos, Pkt)>,
    pub(super) next_tick: Option<Nanos>,
    pub(super) counters: LinkCounters,
    /// Where in `cfg.delay_schedule` the last departure was (the simulator's cursor).
    delay_at: StepCursor,
}

impl Link {
    fn qlen(&self) -> QueueLen {
        QueueLen {
            pkts: self.pkts,
            bytes: self.qbytes,
        }
    }

    /// When the queue's head starts transmission, if there is one.
    pub(super) fn head_start(&self) -> Option<Nanos> {
        if self.fq {
            (self.pkts > 0).then(|| self.idle_arrival.max(self.free_at))
        } else {
            self.queues[0].front().map(|q| q.arrival.max(self.free_at))
        }
    }

    /// Link `i` of a run seeded with `seed`: its discipline built, its own random stream.
    pub(super) fn new(cfg: LinkConfig, seed: u64, i: u64) -> Result<Link, ParamError> {
        let env = LinkEnv {
            rate_bps: cfg.rate_bps,
            limit: cfg.limit,
            packet_size: cfg.packet_size,
        };
        let qdisc = build_queue(&cfg.queue, &cfg.queue_params, &env)?;
        let next_tick = qdisc.tick_interval();
        let n = qdisc.queues().max(1);
        Ok(Link {
            qdisc,
            // the emulator's own streams, apart from the simulator's: its draws are its own
            rng: Stream::EmulatorLink.rng(seed, i),
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            fq: n > 1,
            pkts: 0,
            qbytes: 0,
            idle_arrival: 0,
            free_at: 0,
            trace: (!cfg.trace_ms.is_empty())
                .then(|| TraceService::new(&cfg.trace_ms, OPPORTUNITY_BYTES)),
            prop: VecDeque::new(),
            next_tick,
            counters: LinkCounters::default(),
            delay_at: StepCursor::default(),
            cfg,
        })
    }

    /// A packet reaching the link at `t`: duplicated first when the impairments say so.
    pub(super) fn arrival(&mut self, t: Nanos, pkt: Pkt, pool: &mut Pool) {
        if let Some(im) = &mut self.cfg.impair {
            if im.duplicate(&mut self.rng) {
                let mut buf = pool.take();
                buf.extend_from_slice(&pkt.buf);
                let copy = Pkt {
                    buf,
                    info: pkt.info,
                    route: pkt.route,
                    hop: pkt.hop,
                    dir: pkt.dir,
                };
                self.arrival_one(t, pkt, pool);
                self.arrival_one(t, copy, pool);
                return;
            }
        }
        self.arrival_one(t, pkt, pool);
    }

    fn arrival_one(&mut self, t: Nanos, mut pkt: Pkt, pool: &mut Pool) {
        let bytes = pkt.info.len as u32;
        self.counters.arrivals += 1;
        self.counters.arrival_bytes += bytes as u64;
        let p = self.cfg.loss_at(t);
        if p > 0.0
            && (!self.cfg.loss_data_only || pkt.info.is_data)
            && rng::uniform(&mut self.rng) < p
        {
            self.counters.random_drops += 1;
            pool.recycle(pkt.buf);
            return;
        }
        let ours = pkt.info.ours;
        let mut field = ours.map_or(0, |h| h.router_field);
        let mut rp = RouterPacket {
            bytes,
            ect: pkt.info.ecn != 0,
            is_data: pkt.info.is_data,
            flags: ours.map_or(0, |h| h.flags),
            fwd_field: &mut field,
            // The two hosts are fixed, so protocol and ports tell the flows (and their ACKs) apart.
            flow: (pkt.info.proto as u64) << 32
                | (pkt.info.src_port as u64) << 16
                | pkt.info.dst_port as u64,
            queue: 0,
        };
        let q = self.qlen();
        let verdict = self.qdisc.enqueue(t, &mut rp, q, &mut self.rng);
        let sub = rp.queue;
        match verdict {
            Verdict::Drop => {
                self.counters.queue_drops += 1;
                pool.recycle(pkt.buf);
                return;
            }
            Verdict::Mark => {
                if pkt.info.ecn != 0 {
                    ip::set_ce(&mut pkt.buf);
                    pkt.info.ecn = ip::ECN_CE;
                    self.counters.marks += 1;
                }
            }
            Verdict::Enqueue => {}
        }
        if let Some(h) = ours {
            // Only data packets carry a forward field; an ACK's field is the receiver's echo.
            if h.is_data && field != h.router_field {
                ip::set_router_field(&mut pkt.buf, &h, field);
                // The next link on the route reads the field this one wrote (MaxNet: the path's
                // largest price), so the packet's parsed copy follows the bytes.
                if let Some(o) = &mut pkt.info.ours {
                    o.router_field = field;
                }
                self.counters.field_writes += 1;
            }
        }
        if self.pkts == 0 {
            self.idle_arrival = t;
        }
        self.pkts += 1;
        self.qbytes += bytes as u64;
        self.queues[sub].push_back(Queued { pkt, arrival: t });
        if self.fq {
            self.drop_heads(pool);
        }
    }

    /// After an arrival at a flow-queueing link: the head drops the discipline asks for (FQ-CoDel's
    /// overflow drops from the fattest flow), as in the simulator.
    fn drop_heads(&mut self, pool: &mut Pool) {
        while let Some(sub) = self.qdisc.overflow_victim(self.qlen()) {
            let Some(q) = self.queues[sub].pop_front() else {
                unreachable!("the discipline named an empty sub-queue");
            };
            let bytes = q.pkt.info.len as u32;
            self.pkts -= 1;
            self.qbytes -= bytes as u64;
            self.qdisc.on_head_drop(sub, bytes);
            self.counters.queue_drops += 1;
            pool.recycle(q.pkt.buf);
        }
    }

    /// The head starts transmission at `s` (its start time, [`Link::head_start`]).
    pub(super) fn start(&mut self, s: Nanos, pool: &mut Pool) {
        // The head leaves the queue; a discipline that drops at dequeue (CoDel) may discard it, and
        // then the next packet is offered, as in the simulator.
        let mut next = None;
        // (A packet that arrives after `s` waits for its own start: the link is idle until then.)
        loop {
            let sub = if self.fq {
                if self.pkts == 0 {
                    break;
                }
                // Every queued packet arrived by `s` (see `idle_arrival`).
                self.qdisc.next_queue(s)
            } else if self.queues[0].front().is_some_and(|q| q.arrival <= s) {
                0
            } else {
                break;
            };
            let Some(mut q) = self.queues[sub].pop_front() else {
                unreachable!("the discipline named an empty sub-queue");
            };
            self.pkts -= 1;
            self.qbytes -= q.pkt.info.len as u64;
            let after = self.qlen();
            let leaving = Leaving {
                queue: sub,
                sojourn: s.saturating_sub(q.arrival),
                bytes: q.pkt.info.len as u32,
                ect: q.pkt.info.ecn != 0,
            };
            match self.qdisc.on_departure(s, &leaving, after) {
                Departure::Send => {}
                Departure::Mark => {
                    if q.pkt.info.ecn != 0 {
                        ip::set_ce(&mut q.pkt.buf);
                        q.pkt.info.ecn = ip::ECN_CE;
                        self.counters.marks += 1;
                    }
                }
                Departure::Drop => {
                    self.counters.queue_drops += 1;
                    pool.recycle(q.pkt.buf);
                    continue;
                }
            }
            next = Some(q);
            break;
        }
        if let Some(q) = next {
            let bytes = q.pkt.info.len as u64;
            self.free_at = match &mut self.trace {
                None => s + tx_time(bytes, self.cfg.rate_bps),
                Some(t) => t.finish(s, bytes as u32),
            };
            let after = self.qlen();
            self.qdisc.on_dequeue(s, bytes as u32, after);
            self.counters.departures += 1;
            self.counters.departure_bytes += bytes;
            self.counters.sojourn_ns += s.saturating_sub(q.arrival);
            let delay = self
                .delay_at
                .at(&self.cfg.delay_schedule, self.cfg.delay, self.free_at);
            match &mut self.cfg.impair {
                None => {
                    // FIFO: after a drop in a scheduled delay a packet waits for the one ahead of it
                    // rather than overtaking it (a constant delay keeps the order anyway).
                    let behind = self.prop.back().map_or(0, |&(t, _)| t);
                    let at = (self.free_at + delay).max(behind);
                    self.prop.push_back((at, q.pkt));
                }
                Some(im) => {
                    let at = im.arrival(self.free_at, delay, &mut self.rng);
                    // kept sorted by delivery time (nearly always at the back)
                    let k = self.prop.partition_point(|&(t, _)| t <= at);
                    self.prop.insert(k, (at, q.pkt));
                }
            }
        }
    }

    /// The discipline's periodic tick at `t`.
    pub(super) fn tick(&mut self, t: Nanos) {
        self.qdisc.tick(t);
        self.next_tick = self.qdisc.tick_interval().map(|iv| t + iv.max(1));
    }

    /// A snapshot for the time series.
    pub(super) fn snapshot(&self) -> LinkSnapshot {
        let mut state = Vec::new();
        self.qdisc.state(&mut state);
        LinkSnapshot {
            queue_pkts: self.pkts,
            queue_bytes: self.qbytes,
            counters: self.counters,
            state,
        }
    }
}
