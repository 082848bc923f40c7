//! Links: random loss and the queue discipline on arrival, the queue (one FIFO, or one per flow for
//! the flow-queueing disciplines), serialisation at the link rate, then the propagation pipe. A link has at most one pending `TxDone` (the packet in service)
//! and one pending `LinkArrive` (the earliest packet on the wire).

use super::measure::{hist_bin, HIST_BINS};
use super::packet::{prefetch_packet, Body, Pipe};
use super::Simulation;
use crate::events::Event;
use crate::result::{PacketKind, TraceKind};
use cclab_cc::aqm::{
    BufferLimit, Departure, Leaving, QueueDiscipline, QueueLen, RouterPacket, Verdict,
};
use cclab_cc::impair::Impairments;
use cclab_cc::rng::{self, SimRng};
use cclab_cc::schedule::StepCursor;
use cclab_cc::time::{to_secs, tx_time, Nanos};
use cclab_cc::trace_link::TraceService;
use std::collections::VecDeque;

pub(super) struct Link {
    pub(super) rate_bps: f64,
    pub(super) delay: Nanos,
    pub(super) qdisc: Box<dyn QueueDiscipline>,
    /// The FIFO, or sub-queue 0 of a flow-queueing discipline (kept inline: the FIFO path is the hot
    /// one, and a vector of queues costs it a pointer chase per packet, 5 % on bench b).
    pub(super) queue: VecDeque<u32>,
    /// Sub-queues 1.. of a flow-queueing discipline (FQ-CoDel, FQ); empty for a FIFO.
    pub(super) more: Vec<VecDeque<u32>>,
    /// More than one sub-queue: ask the discipline which to serve and whether to drop heads.
    pub(super) fq: bool,
    /// The discipline's `judges_departures` and `watches_dequeues`, read once.
    pub(super) departs: bool,
    pub(super) dequeues: bool,
    /// The discipline's `plain_fifo_limit`, read once: drop-tail's verdict applied here.
    fifo_limit: Option<BufferLimit>,
    pub(super) qlen: QueueLen,
    pub(super) busy: bool,
    /// The packet being serialised.
    pub(super) in_service: u32,
    pub(super) pipe: Pipe,
    pub(super) rng: SimRng,
    pub(super) loss: f64,
    pub(super) loss_data_only: bool,
    pub(super) schedule: Vec<(Nanos, f64)>,
    /// The delay schedule: (time, delay) from each time on (`delay` before the first), read at each
    /// departure through a cursor (departures come in time order) rather than changed by an event: no
    /// event is added, so a spec without a schedule runs the same event sequence as before.
    pub(super) delay_schedule: Vec<(Nanos, Nanos)>,
    delay_at: StepCursor,
    /// The last packet size serialised and its time at `rate_bps`: a link carries one or two sizes
    /// (data, ACKs), and the division behind `tx_time` was a third of `start_tx`'s time.
    tx_memo: (u32, Nanos),
    /// Trace-driven capacity in place of `rate_bps` (which is then the trace's mean, for statistics).
    pub(super) trace: Option<TraceService>,
    /// Jitter, reordering, duplication (None: none, and no random draws for them).
    pub(super) impair: Option<Impairments>,
    /// With impairments that reorder, the pipe is kept sorted by arrival time and this is the time of
    /// the one `LinkArrive` event that is live (an earlier arrival schedules a new one; the old one
    /// then fires with nothing to do).
    pub(super) next_arrive: Nanos,
    // counters (whole run)
    pub(super) arrivals: u64,
    pub(super) drops: u64,
    pub(super) marks: u64,
    pub(super) random_losses: u64,
    pub(super) tx_bytes: u64,
    pub(super) tx_pkts: u64,
    /// Packets that left the queue for the link, and the sum of their sojourn times (ns): the time
    /// series' per-interval mean sojourn.
    pub(super) departures: u64,
    pub(super) sojourn_ns: u64,
    pub(super) data_pkts_tx: u64,
    /// ∫ queue length (packets) dt, in packet·ns, up to `q_last`.
    pub(super) q_integral: u128,
    pub(super) q_last: Nanos,
    pub(super) max_q: u64,
    /// Queueing-delay histogram over the window (bins: `measure::hist_bin`).
    pub(super) qdelay_hist: Vec<u64>,
    pub(super) qdelay_sum: f64,
    pub(super) qdelay_n: u64,
}

impl Link {
    /// An idle, empty link.
    pub(super) fn new(
        rate_bps: f64,
        delay: Nanos,
        qdisc: Box<dyn QueueDiscipline>,
        rng: SimRng,
        loss: f64,
        loss_data_only: bool,
        schedule: Vec<(Nanos, f64)>,
    ) -> Link {
        let n = qdisc.queues().max(1);
        let (departs, dequeues) = (qdisc.judges_departures(), qdisc.watches_dequeues());
        let fifo_limit = qdisc.plain_fifo_limit();
        Link {
            rate_bps,
            delay,
            qdisc,
            queue: VecDeque::new(),
            more: (1..n).map(|_| VecDeque::new()).collect(),
            fq: n > 1,
            departs,
            dequeues,
            fifo_limit,
            qlen: QueueLen::default(),
            busy: false,
            in_service: 0,
            pipe: Pipe::default(),
            tx_memo: (0, 0),
            rng,
            loss,
            loss_data_only,
            schedule,
            delay_schedule: Vec::new(),
            delay_at: StepCursor::default(),
            trace: None,
            impair: None,
            next_arrive: 0,
            arrivals: 0,
            drops: 0,
            marks: 0,
            random_losses: 0,
            tx_bytes: 0,
            tx_pkts: 0,
            departures: 0,
            sojourn_ns: 0,
            data_pkts_tx: 0,
            q_integral: 0,
            q_last: 0,
            max_q: 0,
            qdelay_hist: vec![0; HIST_BINS],
            qdelay_sum: 0.0,
            qdelay_n: 0,
        }
    }

    /// Sub-queue `s` (0 is the FIFO).
    #[inline]
    fn sub(&mut self, s: usize) -> &mut VecDeque<u32> {
        if s == 0 {
            &mut self.queue
        } else {
            &mut self.more[s - 1]
        }
    }

    /// Time to serialise `bytes` at the link's rate (`tx_time`, the same value, memoised per size).
    #[inline]
    fn serialise(&mut self, bytes: u32) -> Nanos {
        if bytes != self.tx_memo.0 {
            self.tx_memo = (bytes, tx_time(bytes as u64, self.rate_bps));
        }
        self.tx_memo.1
    }

    /// The propagation delay of a packet that finishes serialisation at `now` (calls come in time order).
    #[inline]
    pub(super) fn delay_now(&mut self, now: Nanos) -> Nanos {
        if self.delay_schedule.is_empty() {
            return self.delay;
        }
        self.delay_at.at(&self.delay_schedule, self.delay, now)
    }

    /// Brings the queue-length integral up to `now`.
    pub(super) fn account_queue(&mut self, now: Nanos) {
        self.q_integral += self.qlen.pkts as u128 * (now - self.q_last) as u128;
        self.q_last = now;
    }
}

impl Simulation {
    /// Packet `i` arrives at link `l`: duplication (if the link has it), then each copy in turn.
    pub(super) fn enqueue(&mut self, l: usize, i: u32) {
        let link = &mut self.links[l];
        if let Some(im) = &mut link.impair {
            if im.duplicate(&mut link.rng) {
                let copy = self.slab[i as usize];
                let j = self.alloc(copy);
                self.enqueue_one(l, i);
                self.enqueue_one(l, j);
                return;
            }
        }
        self.enqueue_one(l, i);
    }

    /// Packet `i` arrives at link `l`: random loss, then the queue discipline's verdict, then the queue.
    #[inline(always)]
    fn enqueue_one(&mut self, l: usize, i: u32) {
        let now = self.now;
        let link = &mut self.links[l];
        link.arrivals += 1;
        let p = &mut self.slab[i as usize];
        let is_data = p.kind == PacketKind::Data;
        let verdict = if link.loss > 0.0
            && (is_data || !link.loss_data_only)
            && rng::uniform(&mut link.rng) < link.loss
        {
            None
        } else if let Some(limit) = link.fifo_limit {
            // Drop-tail without an ECN step: `DropTail::enqueue`'s verdict, without its call.
            let v = if limit.overflows(link.qlen, p.bytes) {
                Verdict::Drop
            } else {
                Verdict::Enqueue
            };
            Some((v, 0))
        } else {
            let mut dummy = 0u32;
            let (bytes, ect, flags) = (p.bytes, p.ect, p.flags);
            let fwd = match &mut p.body {
                Body::Data(d) => &mut d.fwd_field,
                _ => &mut dummy,
            };
            let mut rp = RouterPacket {
                bytes,
                ect,
                is_data,
                flags,
                fwd_field: fwd,
                // one key per flow and direction: data and ACKs of a flow, and cross traffic, apart
                flow: (p.kind as u64) << 32 | p.owner as u64,
                queue: 0,
            };
            let v = link.qdisc.enqueue(now, &mut rp, link.qlen, &mut link.rng);
            Some((v, rp.queue))
        };
        let sub = match verdict {
            None => {
                link.random_losses += 1;
                self.drop_packet(i, l as i32, TraceKind::Loss);
                return;
            }
            Some((Verdict::Drop, _)) => {
                link.drops += 1;
                self.drop_packet(i, l as i32, TraceKind::Drop);
                return;
            }
            Some((Verdict::Mark, q)) if p.ect => {
                p.ce = true;
                link.marks += 1;
                q
            }
            Some((_, q)) => q,
        };
        p.enq_time = now;
        let bytes = p.bytes;
        link.account_queue(now);
        link.sub(sub).push_back(i);
        link.qlen.pkts += 1;
        link.qlen.bytes += bytes as u64;
        link.max_q = link.max_q.max(link.qlen.pkts as u64);
        let busy = link.busy;
        self.trace(TraceKind::Enqueue, l as i32, i);
        if self.links[l].fq {
            self.drop_heads(l);
        }
        if !busy {
            self.start_tx(l);
        }
    }

    /// Starts serialising the head of link `l`'s queue, or marks the link idle.
    pub(super) fn start_tx(&mut self, l: usize) {
        let now = self.now;
        let in_window = self.in_window;
        // The head leaves the queue; a discipline that drops at dequeue (CoDel) may discard it, and
        // then the next packet is offered.
        let i = loop {
            let link = &mut self.links[l];
            let sub = if link.fq && link.qlen.pkts > 0 {
                link.qdisc.next_queue(now)
            } else {
                0
            };
            let q = link.sub(sub);
            let Some(i) = q.pop_front() else {
                link.busy = false;
                return;
            };
            if let Some(&n) = q.front() {
                prefetch_packet(&self.slab[n as usize]);
            }
            let p = &mut self.slab[i as usize];
            link.account_queue(now);
            link.qlen.pkts -= 1;
            link.qlen.bytes -= p.bytes as u64;
            if !link.departs {
                break i;
            }
            let leaving = Leaving {
                queue: sub,
                sojourn: now - p.enq_time,
                bytes: p.bytes,
                ect: p.ect,
            };
            match link.qdisc.on_departure(now, &leaving, link.qlen) {
                Departure::Send => break i,
                Departure::Mark => {
                    if p.ect {
                        p.ce = true;
                        link.marks += 1;
                    }
                    break i;
                }
                Departure::Drop => {
                    link.drops += 1;
                    self.drop_packet(i, l as i32, TraceKind::Drop);
                }
            }
        };
        let link = &mut self.links[l];
        let p = &self.slab[i as usize];
        if link.dequeues {
            link.qdisc.on_dequeue(now, p.bytes, link.qlen);
        }
        let d = now - p.enq_time;
        link.departures += 1;
        link.sojourn_ns += d;
        if in_window {
            link.qdelay_hist[hist_bin(d)] += 1;
            link.qdelay_sum += to_secs(d);
            link.qdelay_n += 1;
        }
        link.busy = true;
        link.in_service = i;
        let done = match &mut link.trace {
            None => now.saturating_add(link.serialise(p.bytes)),
            Some(t) => t.finish(now, p.bytes),
        };
        self.ev.push(done, Event::TxDone(l as u32));
    }

    /// Link `l` finished serialising its packet: onto the wire with it, and on to the next.
    pub(super) fn tx_done(&mut self, l: usize) {
        let now = self.now;
        let link = &mut self.links[l];
        let i = link.in_service;
        let delay = link.delay_now(now);
        let scheduled = !link.delay_schedule.is_empty();
        let direct = delay == 0 && link.impair.is_none() && !scheduled;
        if let Some(im) = &mut link.impair {
            let arrive = im.arrival(now, delay, &mut link.rng);
            if im.reorders() {
                // Sorted insertion (nearly always at the back); a new earliest arrival gets an event.
                let at = link.pipe.q.partition_point(|&(t, _)| t <= arrive);
                link.pipe.q.insert(at, (arrive, i));
                if at == 0 && (link.next_arrive <= now || arrive < link.next_arrive) {
                    link.next_arrive = arrive;
                    self.ev.push(arrive, Event::LinkArrive(l as u32));
                }
            } else {
                if link.pipe.q.is_empty() {
                    self.ev.push(arrive, Event::LinkArrive(l as u32));
                }
                link.pipe.q.push_back((arrive, i));
            }
        } else if delay > 0 || scheduled {
            // FIFO: after a drop in a scheduled delay, a packet waits for the one ahead of it rather
            // than overtaking it (a constant delay gives this anyway).
            let behind = link.pipe.q.back().map_or(0, |&(t, _)| t);
            let arrive = now.saturating_add(delay).max(behind);
            // One pending LinkArrive per non-empty pipe: schedule only when the pipe was empty.
            if link.pipe.q.is_empty() {
                self.ev.push(arrive, Event::LinkArrive(l as u32));
            }
            link.pipe.q.push_back((arrive, i));
        }
        let p = &self.slab[i as usize];
        link.tx_bytes += p.bytes as u64;
        link.tx_pkts += 1;
        if p.kind == PacketKind::Data {
            link.data_pkts_tx += 1;
        }
        self.start_tx(l);
        if direct {
            // Zero propagation delay (a dumbbell whose delays are all in access lines): the packet is at
            // the far end now; handing it on directly saves an event per packet per link. Done after
            // the next transmission starts, which is the order the LinkArrive event would have run in.
            self.slab[i as usize].at += 1;
            self.forward(i);
        }
    }

    /// Packets on link `l`'s wire that have reached the far end move on.
    pub(super) fn link_arrive(&mut self, l: usize) {
        let now = self.now;
        let sorted = self.links[l]
            .impair
            .as_ref()
            .is_some_and(|im| im.reorders());
        while let Some(&(t, i)) = self.links[l].pipe.q.front() {
            if t > now {
                let link = &mut self.links[l];
                // With a sorted pipe, only if no live event is already waiting for this front.
                if !sorted || link.next_arrive <= now || t < link.next_arrive {
                    link.next_arrive = t;
                    self.ev.push(t, Event::LinkArrive(l as u32));
                }
                break;
            }
            self.links[l].pipe.q.pop_front();
            if let Some(&(_, n)) = self.links[l].pipe.q.front() {
                self.prefetch(n);
            }
            self.slab[i as usize].at += 1;
            self.forward(i);
        }
    }

    /// After an arrival at a flow-queueing link: the head drops the discipline asks for (FQ-CoDel's
    /// overflow drops from the fattest flow).
    fn drop_heads(&mut self, l: usize) {
        let now = self.now;
        loop {
            let link = &mut self.links[l];
            let Some(sub) = link.qdisc.overflow_victim(link.qlen) else {
                return;
            };
            let Some(i) = link.sub(sub).pop_front() else {
                unreachable!("the discipline named an empty sub-queue");
            };
            let bytes = self.slab[i as usize].bytes;
            link.account_queue(now);
            link.qlen.pkts -= 1;
            link.qlen.bytes -= bytes as u64;
            link.qdisc.on_head_drop(sub, bytes);
            link.drops += 1;
            self.drop_packet(i, l as i32, TraceKind::Drop);
        }
    }

    fn drop_packet(&mut self, i: u32, link: i32, kind: TraceKind) {
        self.trace(kind, link, i);
        let p = self.slab[i as usize];
        if p.kind == PacketKind::Data {
            let in_window = self.in_window as u64;
            if let Some(f) = self.flow_mut(p.owner) {
                f.dropped += 1;
                f.dropped_window += in_window;
            }
        }
        self.cons.dropped += 1;
        self.release(i);
    }
}
