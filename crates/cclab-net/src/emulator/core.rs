//! The link emulator's state machine, free of I/O: packets go in with their arrival time
//! ([`Emulator::on_packet`]), come out when due ([`Emulator::poll_output`]), and
//! [`Emulator::next_deadline`] says when to look again. The I/O shell ([`super::drive`]) feeds it from
//! TUN devices with the OS clock; tests feed it directly with a virtual clock.
//!
//! Per direction: an access stage (per-flow extra one-way delay, so flows get their configured RTT), then
//! the link: random loss on arrival, the queue discipline (built by `cclab_cc::registry::build_queue`,
//! the simulator's code), a FIFO buffer (one per flow bucket for FQ-CoDel and FQ), transmission at the link rate on a virtual clock, propagation
//! delay.
//!
//! DECISION (exact virtual clock): departure times are computed, never slept for. A packet starts
//! transmission at `max(arrival, previous departure end)` and ends `tx_time(bytes)` later, exactly as in
//! the simulator; the queue is advanced lazily to each event's *virtual* time before the next event is
//! applied, so the queue length a discipline sees on an arrival is exact even when the process wakes
//! late. Only the moment a packet is written to the TUN device depends on wake-up latency, and that
//! error does not accumulate.

use std::collections::VecDeque;

use cclab_cc::aqm::{
    BufferLimit, Departure, Leaving, QueueDiscipline, QueueLen, RouterPacket, Verdict,
};
use cclab_cc::impair::Impairments;
use cclab_cc::params::{ParamError, Params};
use cclab_cc::registry::{build_queue, LinkEnv};
use cclab_cc::rng::{self, SimRng, Stream};
use cclab_cc::time::{from_secs, tx_time, Nanos};
use cclab_cc::trace_link::{TraceService, OPPORTUNITY_BYTES};
use serde::Serialize;

use crate::ip::{self, Info, IpError};

/// Largest packet the emulator carries (TUN MTU is 1500; room for anything a host might send).
pub const MAX_PACKET: usize = 65535;

/// Direction of travel: `Fwd` = host A (senders) → host B (receivers) over link 0, `Rev` = B → A over
/// link 1 (the dumbbell convention of `RunSpec`).
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

/// Counters of frames refused before any link (per emulator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IngressCounters {
    /// IPv4 packets with a bad header, or our datagrams failing the codec check: dropped.
    pub malformed: u64,
    /// Non-IPv4 frames (the hosts' IPv6 chatter): dropped.
    pub non_ipv4: u64,
}

/// A snapshot of one link for the time series.
#[derive(Clone, Debug, Serialize)]
pub struct LinkSnapshot {
    pub queue_pkts: u32,
    pub queue_bytes: u64,
    pub counters: LinkCounters,
    pub state: Vec<(&'static str, f64)>,
}

struct Pkt {
    buf: Vec<u8>,
    info: Info,
}

struct Queued {
    pkt: Pkt,
    arrival: Nanos,
}

struct Link {
    cfg: LinkConfig,
    qdisc: Box<dyn QueueDiscipline>,
    rng: SimRng,
    /// The discipline's sub-queues: one FIFO, or one per flow bucket (FQ-CoDel, FQ).
    queues: Vec<VecDeque<Queued>>,
    /// More than one sub-queue: the discipline picks which to serve and may drop heads.
    fq: bool,
    pkts: u32,
    qbytes: u64,
    /// Arrival time of the packet that last found the queue empty. With several sub-queues the oldest
    /// queued packet is not at one front: every packet queued since arrived later than this one, and
    /// the link is busy until they start, so max(this, free_at) is when the next one starts.
    idle_arrival: Nanos,
    /// End of the current (or last) transmission on the virtual clock.
    free_at: Nanos,
    /// Trace-driven capacity (the simulator's code), in place of the rate.
    trace: Option<TraceService>,
    /// In propagation: (delivery time, packet), in order.
    prop: VecDeque<(Nanos, Pkt)>,
    next_tick: Option<Nanos>,
    counters: LinkCounters,
}

impl Link {
    fn qlen(&self) -> QueueLen {
        QueueLen {
            pkts: self.pkts,
            bytes: self.qbytes,
        }
    }

    /// When the queue's head starts transmission, if there is one.
    fn head_start(&self) -> Option<Nanos> {
        if self.fq {
            (self.pkts > 0).then(|| self.idle_arrival.max(self.free_at))
        } else {
            self.queues[0].front().map(|q| q.arrival.max(self.free_at))
        }
    }
}

/// A per-flow access delay line: all packets in it have the same extra delay, so it is FIFO.
struct DelayLine {
    delay: Nanos,
    q: VecDeque<(Nanos, Pkt)>,
}

struct Access {
    lines: Vec<DelayLine>,
    /// (flow port, the packet header field it is matched against, line index). A flow's receiver
    /// owns the port, so its data is matched by destination port and its ACKs by source port.
    by_port: Vec<(u16, Field, usize)>,
}

/// Which of a packet's ports identifies its flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Dst,
    Src,
}

impl Access {
    /// The line of the flow a packet with these ports belongs to. Flow ports lie outside the hosts'
    /// ephemeral range ([`crate::hosts`]), so a sender's own port never matches another flow's.
    fn line_for(&self, dst: u16, src: u16) -> Option<usize> {
        self.by_port
            .iter()
            .find(|(p, field, _)| *p == if *field == Field::Dst { dst } else { src })
            .map(|&(_, _, i)| i)
    }
}

pub struct Emulator {
    links: [Link; 2],
    access: [Access; 2],
    pool: Vec<Vec<u8>>,
    pub ingress: IngressCounters,
}

enum Next {
    AccessExit(usize, usize),
    LinkStart(usize),
    Tick(usize),
}

impl Emulator {
    /// Builds the two links (`fwd` = link 0, `rev` = link 1); `seed` seeds the per-link RNG streams.
    pub fn new(fwd: LinkConfig, rev: LinkConfig, seed: u64) -> Result<Self, ParamError> {
        let mk = |cfg: LinkConfig, i: u64| -> Result<Link, ParamError> {
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
                cfg,
            })
        };
        let empty = || Access {
            lines: Vec::new(),
            by_port: Vec::new(),
        };
        Ok(Emulator {
            links: [mk(fwd, 0)?, mk(rev, 1)?],
            access: [empty(), empty()],
            pool: Vec::new(),
            ingress: Default::default(),
        })
    }

    /// Adds a per-flow access delay for the flow whose receiver has `port`: its data gets `data` extra
    /// delay before its link and its ACKs `ack` before theirs. A forward flow's data crosses link 0
    /// (A → B) and its ACKs link 1; a `reverse` flow's data crosses link 1 and its ACKs link 0.
    pub fn add_flow_delay(&mut self, port: u16, data: Nanos, ack: Nanos, reverse: bool) {
        let (data_dir, ack_dir) = if reverse { (1, 0) } else { (0, 1) };
        for (d, extra, field) in [(data_dir, data, Field::Dst), (ack_dir, ack, Field::Src)] {
            if extra == 0 {
                continue;
            }
            let a = &mut self.access[d];
            let i = match a.lines.iter().position(|l| l.delay == extra) {
                Some(i) => i,
                None => {
                    a.lines.push(DelayLine {
                        delay: extra,
                        q: VecDeque::new(),
                    });
                    a.lines.len() - 1
                }
            };
            a.by_port.retain(|(p, f, _)| (*p, *f) != (port, field));
            a.by_port.push((port, field, i));
        }
    }

    /// A buffer for the next read (recycled from delivered packets).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        let mut b = self.pool.pop().unwrap_or_else(|| Vec::with_capacity(2048));
        b.clear();
        b
    }

    /// Returns a buffer to the pool.
    pub fn recycle(&mut self, b: Vec<u8>) {
        if self.pool.len() < 4096 {
            self.pool.push(b);
        }
    }

    /// A packet read from the host on the sending side of `dir` at time `now`. Malformed and non-IPv4
    /// frames are counted and dropped.
    pub fn on_packet(&mut self, dir: Dir, now: Nanos, buf: Vec<u8>) {
        self.run_until(now);
        let info = match ip::inspect(&buf) {
            Ok(i) => i,
            Err(e) => {
                match e {
                    IpError::NotIpv4 => self.ingress.non_ipv4 += 1,
                    IpError::Malformed => self.ingress.malformed += 1,
                }
                self.recycle(buf);
                return;
            }
        };
        let d = dir as usize;
        let (dst, src) = (info.dst_port, info.src_port);
        let pkt = Pkt { buf, info };
        match self.access[d].line_for(dst, src) {
            Some(i) => {
                let line = &mut self.access[d].lines[i];
                line.q.push_back((now + line.delay, pkt));
            }
            None => self.link_arrival(d, now, pkt),
        }
    }

    fn link_arrival(&mut self, d: usize, t: Nanos, pkt: Pkt) {
        let l = &mut self.links[d];
        if let Some(im) = &mut l.cfg.impair {
            if im.duplicate(&mut l.rng) {
                let mut buf = self.take_buffer();
                buf.extend_from_slice(&pkt.buf);
                let copy = Pkt {
                    buf,
                    info: pkt.info,
                };
                self.link_arrival_one(d, t, pkt);
                self.link_arrival_one(d, t, copy);
                return;
            }
        }
        self.link_arrival_one(d, t, pkt);
    }

    fn link_arrival_one(&mut self, d: usize, t: Nanos, mut pkt: Pkt) {
        let l = &mut self.links[d];
        let bytes = pkt.info.len as u32;
        l.counters.arrivals += 1;
        l.counters.arrival_bytes += bytes as u64;
        let p = l.cfg.loss_at(t);
        if p > 0.0 && (!l.cfg.loss_data_only || pkt.info.is_data) && rng::uniform(&mut l.rng) < p {
            l.counters.random_drops += 1;
            self.recycle(pkt.buf);
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
        let q = l.qlen();
        let verdict = l.qdisc.enqueue(t, &mut rp, q, &mut l.rng);
        let sub = rp.queue;
        match verdict {
            Verdict::Drop => {
                l.counters.queue_drops += 1;
                self.recycle(pkt.buf);
                return;
            }
            Verdict::Mark => {
                if pkt.info.ecn != 0 {
                    ip::set_ce(&mut pkt.buf);
                    pkt.info.ecn = ip::ECN_CE;
                    l.counters.marks += 1;
                }
            }
            Verdict::Enqueue => {}
        }
        if let Some(h) = ours {
            // Only data packets carry a forward field; an ACK's field is the receiver's echo.
            if h.is_data && field != h.router_field {
                ip::set_router_field(&mut pkt.buf, &h, field);
                l.counters.field_writes += 1;
            }
        }
        if l.pkts == 0 {
            l.idle_arrival = t;
        }
        l.pkts += 1;
        l.qbytes += bytes as u64;
        l.queues[sub].push_back(Queued { pkt, arrival: t });
        if l.fq {
            self.drop_heads(d);
        }
    }

    /// After an arrival at a flow-queueing link: the head drops the discipline asks for (FQ-CoDel's
    /// overflow drops from the fattest flow), as in the simulator.
    fn drop_heads(&mut self, d: usize) {
        loop {
            let l = &mut self.links[d];
            let Some(sub) = l.qdisc.overflow_victim(l.qlen()) else {
                return;
            };
            let Some(q) = l.queues[sub].pop_front() else {
                unreachable!("the discipline named an empty sub-queue");
            };
            let bytes = q.pkt.info.len as u32;
            l.pkts -= 1;
            l.qbytes -= bytes as u64;
            l.qdisc.on_head_drop(sub, bytes);
            l.counters.queue_drops += 1;
            self.recycle(q.pkt.buf);
        }
    }

    fn link_start(&mut self, d: usize, s: Nanos) {
        // The head leaves the queue; a discipline that drops at dequeue (CoDel) may discard it, and
        // then the next packet is offered, as in the simulator.
        let mut next = None;
        // (A packet that arrives after `s` waits for its own start: the link is idle until then.)
        loop {
            let l = &mut self.links[d];
            let sub = if l.fq {
                if l.pkts == 0 {
                    break;
                }
                // Every queued packet arrived by `s` (see `idle_arrival`).
                l.qdisc.next_queue(s)
            } else if l.queues[0].front().is_some_and(|q| q.arrival <= s) {
                0
            } else {
                break;
            };
            let Some(mut q) = l.queues[sub].pop_front() else {
                unreachable!("the discipline named an empty sub-queue");
            };
            l.pkts -= 1;
            l.qbytes -= q.pkt.info.len as u64;
            let after = l.qlen();
            let leaving = Leaving {
                queue: sub,
                sojourn: s.saturating_sub(q.arrival),
                bytes: q.pkt.info.len as u32,
                ect: q.pkt.info.ecn != 0,
            };
            match l.qdisc.on_departure(s, &leaving, after) {
                Departure::Send => {}
                Departure::Mark => {
                    if q.pkt.info.ecn != 0 {
                        ip::set_ce(&mut q.pkt.buf);
                        q.pkt.info.ecn = ip::ECN_CE;
                        l.counters.marks += 1;
                    }
                }
                Departure::Drop => {
                    l.counters.queue_drops += 1;
                    self.recycle(q.pkt.buf);
                    continue;
                }
            }
            next = Some(q);
            break;
        }
        let l = &mut self.links[d];
        if let Some(q) = next {
            let bytes = q.pkt.info.len as u64;
            l.free_at = match &mut l.trace {
                None => s + tx_time(bytes, l.cfg.rate_bps),
                Some(t) => t.finish(s, bytes as u32),
            };
            let after = l.qlen();
            l.qdisc.on_dequeue(s, bytes as u32, after);
            l.counters.departures += 1;
            l.counters.departure_bytes += bytes;
            l.counters.sojourn_ns += s.saturating_sub(q.arrival);
            match &mut l.cfg.impair {
                None => l.prop.push_back((l.free_at + l.cfg.delay, q.pkt)),
                Some(im) => {
                    let at = im.arrival(l.free_at, l.cfg.delay, &mut l.rng);
                    // kept sorted by delivery time (nearly always at the back)
                    let k = l.prop.partition_point(|&(t, _)| t <= at);
                    l.prop.insert(k, (at, q.pkt));
                }
            }
        }
    }

    /// The earliest internal event (access exit, transmission start, discipline tick), if any.
    fn next_internal(&self) -> Option<(Nanos, Next)> {
        let mut best: Option<(Nanos, Next)> = None;
        let mut consider = |t: Nanos, n: Next| {
            if best.as_ref().is_none_or(|(b, _)| t < *b) {
                best = Some((t, n));
            }
        };
        for d in 0..2 {
            for (i, line) in self.access[d].lines.iter().enumerate() {
                if let Some((t, _)) = line.q.front() {
                    consider(*t, Next::AccessExit(d, i));
                }
            }
            if let Some(t) = self.links[d].head_start() {
                consider(t, Next::LinkStart(d));
            }
            if let Some(t) = self.links[d].next_tick {
                consider(t, Next::Tick(d));
            }
        }
        best
    }

    /// Applies every internal event up to `now`, in virtual-time order.
    pub fn run_until(&mut self, now: Nanos) {
        while let Some((t, ev)) = self.next_internal() {
            if t > now {
                break;
            }
            match ev {
                Next::AccessExit(d, i) => {
                    if let Some((t, pkt)) = self.access[d].lines[i].q.pop_front() {
                        self.link_arrival(d, t, pkt);
                    }
                }
                Next::LinkStart(d) => self.link_start(d, t),
                Next::Tick(d) => {
                    let l = &mut self.links[d];
                    l.qdisc.tick(t);
                    l.next_tick = l.qdisc.tick_interval().map(|iv| t + iv.max(1));
                }
            }
        }
    }

    /// The next packet due for delivery at `now`: its direction, bytes and due time. Give the buffer
    /// back with [`Emulator::recycle`] after writing it.
    pub fn poll_output(&mut self, now: Nanos) -> Option<(Dir, Vec<u8>, Nanos)> {
        self.run_until(now);
        for (d, dir) in [(0, Dir::Fwd), (1, Dir::Rev)] {
            let l = &mut self.links[d];
            if l.prop.front().is_some_and(|(t, _)| *t <= now) {
                let (due, pkt) = l.prop.pop_front()?;
                l.counters.delivered += 1;
                return Some((dir, pkt.buf, due));
            }
        }
        None
    }

    /// When something next happens (a delivery or an internal event).
    pub fn next_deadline(&self) -> Option<Nanos> {
        let deliveries = self
            .links
            .iter()
            .filter_map(|l| l.prop.front().map(|(t, _)| *t))
            .min();
        match (deliveries, self.next_internal().map(|(t, _)| t)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn counters(&self, d: Dir) -> LinkCounters {
        self.links[d as usize].counters
    }

    pub fn snapshot(&self, d: Dir) -> LinkSnapshot {
        let l = &self.links[d as usize];
        let mut state = Vec::new();
        l.qdisc.state(&mut state);
        LinkSnapshot {
            queue_pkts: l.pkts,
            queue_bytes: l.qbytes,
            counters: l.counters,
            state,
        }
    }

    pub fn queue_name(&self, d: Dir) -> &'static str {
        self.links[d as usize].qdisc.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::build_udp;
    use cclab_cc::time::{NS_PER_MS, NS_PER_SEC, NS_PER_US};

    fn pkt(len: usize, dport: u16) -> Vec<u8> {
        build_udp(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            1,
            dport,
            0,
            &vec![0u8; len - 28],
        )
    }

    /// Back-to-back arrivals leave exactly one transmission time apart and arrive one propagation
    /// delay later: the virtual clock, not the wake-up time, sets departures.
    #[test]
    fn departures_follow_the_virtual_clock() {
        let mut e = Emulator::new(
            LinkConfig::droptail(100e6, 10 * NS_PER_MS, 100),
            LinkConfig::droptail(100e6, 10 * NS_PER_MS, 100),
            1,
        )
        .unwrap();
        for _ in 0..5 {
            e.on_packet(Dir::Fwd, 1000, pkt(1500, 9));
        }
        // the first started at once; the next event is the second's start, one 1500-byte time later
        assert_eq!(e.next_deadline(), Some(1000 + 120 * NS_PER_US));
        // polled late, at 50 ms: all five are due, and were due at 10 ms + k·120 µs
        let mut n = 0;
        while let Some((d, b, due)) = e.poll_output(50 * NS_PER_MS) {
            assert_eq!(d, Dir::Fwd);
            assert_eq!(due, 1000 + (n + 1) * 120 * NS_PER_US + 10 * NS_PER_MS);
            assert_eq!(b.len(), 1500);
            n += 1;
        }
        assert_eq!(n, 5);
        assert_eq!(e.counters(Dir::Fwd).departures, 5);
    }

    #[test]
    fn buffer_overflow_drops_and_access_delay_applies() {
        let mut e = Emulator::new(
            LinkConfig::droptail(10e6, NS_PER_MS, 2),
            LinkConfig::droptail(10e6, NS_PER_MS, 2),
            1,
        )
        .unwrap();
        e.add_flow_delay(7, 5 * NS_PER_MS, 0, false);
        for _ in 0..4 {
            e.on_packet(Dir::Fwd, 0, pkt(1250, 9)); // 1 ms each at 10 Mbit/s
        }
        // one in transmission, two queued, one dropped
        let c = e.counters(Dir::Fwd);
        assert_eq!((c.arrivals, c.queue_drops), (4, 1));
        e.on_packet(Dir::Fwd, 0, pkt(1250, 7));
        // port 7 reaches the link at 5 ms, after the queue drained at 3 ms: starts at 5 ms, out at 7 ms
        let mut times = Vec::new();
        let mut t = 0;
        while let Some(dl) = e.next_deadline() {
            t = dl.max(t);
            while let Some((_, b, _)) = e.poll_output(t) {
                times.push(t);
                e.recycle(b);
            }
        }
        assert_eq!(
            times,
            vec![2 * NS_PER_MS, 3 * NS_PER_MS, 4 * NS_PER_MS, 7 * NS_PER_MS]
        );
        e.on_packet(Dir::Fwd, 0, vec![0x60; 40]);
        e.on_packet(Dir::Fwd, 0, vec![0x45; 10]);
        assert_eq!((e.ingress.non_ipv4, e.ingress.malformed), (1, 1));
    }

    /// How long one packet (ports `dport`, `sport`) entering `dir` at `t0` takes to leave, the links
    /// idle (10 Mbit/s, 1 ms; `t0` later than every earlier packet's departure).
    fn out_time(e: &mut Emulator, t0: Nanos, dir: Dir, dport: u16, sport: u16) -> Nanos {
        let b = build_udp([10, 0, 0, 1], [10, 0, 0, 2], sport, dport, 0, &[0u8; 1222]);
        e.on_packet(dir, t0, b);
        let mut t = t0;
        while let Some(dl) = e.next_deadline() {
            t = dl.max(t);
            if let Some((d, b, _)) = e.poll_output(t) {
                assert_eq!(d, dir);
                e.recycle(b);
                return t - t0;
            }
        }
        unreachable!("the packet left")
    }

    /// A flow is keyed by its receiver's port: a forward flow's data (A → B) by destination port and its
    /// ACKs (B → A) by source port; a reverse flow's data (B → A) by destination port and its ACKs
    /// (A → B) by source port. A packet of neither gets no extra delay.
    #[test]
    fn codel_drops_at_dequeue_and_the_next_packet_takes_the_slot() {
        // 300 packets at once on 12 Mbit/s (1 ms each): the k-th waits k ms. Sojourn passes the 5 ms
        // target at 5 ms, so CoDel drops one interval later (at 105 ms), then at 205 and 270.7 ms
        // (interval/√count); the queue is empty before the next (328.4 ms). A dropped head gives its
        // slot to the next packet at once: the departures stay 1 ms apart.
        let mut cfg = LinkConfig::droptail(12e6, NS_PER_MS, 1000);
        cfg.queue = "codel".into();
        let mut e = Emulator::new(cfg.clone(), cfg, 1).unwrap();
        for _ in 0..300 {
            e.on_packet(Dir::Fwd, 0, pkt(1500, 9));
        }
        let mut due = Vec::new();
        while let Some(dl) = e.next_deadline() {
            while let Some((_, b, at)) = e.poll_output(dl) {
                due.push(at);
                e.recycle(b);
            }
        }
        let c = e.counters(Dir::Fwd);
        assert_eq!((c.queue_drops, c.departures, due.len()), (3, 297, 297));
        assert!(
            due.windows(2).all(|w| w[1] - w[0] == NS_PER_MS),
            "no idle slot after a drop"
        );
    }

    #[test]
    fn pie_holds_an_unresponsive_overload_at_its_reference_delay() {
        // A packet every 0.8 ms into 12 Mbit/s (1 ms each): 25 % too much, and the sender never slows
        // down. PIE's controller must find the drop probability 0.2 that matches the load to the link,
        // with the delay at its 15 ms reference (drop-tail would sit at the full 1000-packet buffer).
        // Measured over 20-30 s: 19.95 % dropped, mean sojourn 14.9 ms; the bounds (±2 points, ±20 %)
        // allow for the probability's oscillation around its fixed point.
        let mut cfg = LinkConfig::droptail(12e6, NS_PER_MS, 1000);
        cfg.queue = "pie".into();
        let mut e = Emulator::new(cfg.clone(), cfg, 1).unwrap();
        let gap = 800_000;
        let (mut sent, mut sojourn) = (vec![0; 65_536], Vec::new());
        let drops_at = |e: &Emulator| e.counters(Dir::Fwd).queue_drops;
        let (mut d0, mut n0) = (0, 0);
        for i in 0..37_500u64 {
            let t = i * gap;
            while let Some(dl) = e.next_deadline().filter(|&dl| dl <= t) {
                while let Some((_, b, at)) = e.poll_output(dl) {
                    let id = u16::from_be_bytes([b[20], b[21]]) as usize;
                    if at > 20 * NS_PER_SEC {
                        // out at the far end = arrival + sojourn + 1 ms transmission + 1 ms propagation
                        sojourn.push((at - sent[id] - 2 * NS_PER_MS) as f64 / 1e6);
                    }
                    e.recycle(b);
                }
            }
            if t == 20 * NS_PER_SEC {
                (d0, n0) = (drops_at(&e), i);
            }
            let id = (i % 65_536) as u16;
            sent[id as usize] = t;
            e.on_packet(
                Dir::Fwd,
                t,
                build_udp([10, 0, 0, 1], [10, 0, 0, 2], id, 9, 0, &[0u8; 1472]),
            );
        }
        let frac = (drops_at(&e) - d0) as f64 / (37_500 - n0) as f64;
        let mean = sojourn.iter().sum::<f64>() / sojourn.len() as f64;
        assert!((frac - 0.2).abs() < 0.02, "drop fraction {frac}");
        assert!((12.0..18.0).contains(&mean), "mean sojourn {mean} ms");
    }

    /// Sojourn times (ms) of a sparse flow's packets (port 10, one every 10 ms) sharing a 12 Mbit/s
    /// link (1 ms a packet) with a bulk sender (port 9, a packet every 0.5 ms: twice the link), over
    /// 1-3 s, with queue discipline `queue`.
    fn sparse_sojourns(queue: &str) -> Vec<f64> {
        let mut cfg = LinkConfig::droptail(12e6, NS_PER_MS, 200);
        cfg.queue = queue.into();
        let mut e = Emulator::new(cfg.clone(), cfg, 1).unwrap();
        let mut out = Vec::new();
        let mut sent = std::collections::HashMap::new();
        for i in 0..6000u64 {
            let t = i * NS_PER_MS / 2;
            while let Some(dl) = e.next_deadline().filter(|&dl| dl <= t) {
                while let Some((_, b, at)) = e.poll_output(dl) {
                    let (sport, dport) = (
                        u16::from_be_bytes([b[20], b[21]]),
                        u16::from_be_bytes([b[22], b[23]]),
                    );
                    if dport == 10 && at > NS_PER_SEC {
                        out.push((at - sent[&sport] - 2 * NS_PER_MS) as f64 / 1e6);
                    }
                    e.recycle(b);
                }
            }
            let b = build_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 9, 0, &[0u8; 1472]);
            e.on_packet(Dir::Fwd, t, b);
            if i % 20 == 0 {
                let id = (i / 20) as u16 + 100;
                sent.insert(id, t);
                let b = build_udp([10, 0, 0, 1], [10, 0, 0, 2], id, 10, 0, &[0u8; 1472]);
                e.on_packet(Dir::Fwd, t, b);
            }
        }
        out
    }

    #[test]
    fn fq_codel_keeps_a_sparse_flow_out_of_a_bulk_flows_queue() {
        // Drop-tail: the bulk sender keeps the 200-packet buffer full; each sparse packet arrives with
        // a bulk one that takes the one free slot, so none gets through. FQ-CoDel: each sparse packet finds its own queue empty and its
        // flow on the new-flows list, so it waits at most for the packet in transmission (≤ 1 ms).
        let ft = sparse_sojourns("droptail");
        let fq = sparse_sojourns("fq_codel");
        assert!(
            ft.is_empty(),
            "drop-tail delivered {} sparse packets",
            ft.len()
        );
        assert_eq!(fq.len(), 200, "every sparse packet delivered");
        assert!(fq.iter().all(|&d| d <= 1.0), "{fq:?}");
    }

    /// Delivery order (by source port) and times of 2000 packets sent 1 ms apart over a 100 Mbit/s,
    /// 20 ms link with the given impairments.
    fn impaired(im: Impairments) -> (Vec<u16>, Vec<Nanos>, LinkCounters) {
        let mut cfg = LinkConfig::droptail(100e6, 20 * NS_PER_MS, 1000);
        cfg.impair = Some(im);
        let mut e = Emulator::new(cfg.clone(), cfg, 1).unwrap();
        let (mut order, mut delays) = (Vec::new(), Vec::new());
        let mut sent = vec![0; 2000];
        let drain = |e: &mut Emulator,
                     until: Nanos,
                     order: &mut Vec<u16>,
                     delays: &mut Vec<Nanos>,
                     sent: &[Nanos]| {
            while let Some(dl) = e.next_deadline().filter(|&dl| dl <= until) {
                while let Some((_, b, at)) = e.poll_output(dl) {
                    let id = u16::from_be_bytes([b[20], b[21]]);
                    order.push(id);
                    delays.push(at - sent[id as usize]);
                    e.recycle(b);
                }
            }
        };
        for i in 0..2000u64 {
            let t = i * NS_PER_MS;
            drain(&mut e, t, &mut order, &mut delays, &sent);
            sent[i as usize] = t;
            e.on_packet(
                Dir::Fwd,
                t,
                build_udp([10, 0, 0, 1], [10, 0, 0, 2], i as u16, 9, 0, &[0u8; 1472]),
            );
        }
        drain(&mut e, Nanos::MAX, &mut order, &mut delays, &sent);
        (order, delays, e.counters(Dir::Fwd))
    }

    #[test]
    fn jitter_reordering_and_duplication_on_the_emulated_link() {
        use cclab_cc::impair::JitterDist;
        // ±5 ms uniform jitter kept in order: monotone delivery, delays 20.12 ms (transmission +
        // propagation) - 5 ms ... + 5 ms (and more when held behind an earlier packet).
        let (order, delays, _) = impaired(
            Impairments::new(5 * NS_PER_MS, JitterDist::Uniform, false, 0.0, 0.0).unwrap(),
        );
        assert!(order.windows(2).all(|w| w[0] < w[1]));
        let (lo, hi) = (delays.iter().min().unwrap(), delays.iter().max().unwrap());
        // (Measured 16.6-25.1 ms: a short draw mostly waits for an earlier packet's longer one.)
        assert!(*lo >= 15 * NS_PER_MS && *hi <= 26 * NS_PER_MS && hi - lo > 7 * NS_PER_MS);
        // The same jitter allowed to reorder: packets 1 ms apart with ±5 ms overtake each other.
        let (order, _, _) =
            impaired(Impairments::new(5 * NS_PER_MS, JitterDist::Uniform, true, 0.0, 0.0).unwrap());
        let inversions = order.windows(2).filter(|w| w[0] > w[1]).count();
        assert!(inversions > 200, "{inversions}");
        // 10 % skip the 20 ms delay; 5 % duplicated: 2100 ± 40 delivered (4 σ).
        let (order, delays, c) =
            impaired(Impairments::new(0, JitterDist::Uniform, false, 0.1, 0.05).unwrap());
        let skipped = delays.iter().filter(|&&d| d < NS_PER_MS).count();
        assert!(
            (140..280).contains(&skipped) && order.windows(2).any(|w| w[0] > w[1]),
            "{skipped}"
        );
        assert!(
            (2060..2140).contains(&c.delivered) && c.arrivals == c.delivered,
            "{c:?}"
        );
    }

    #[test]
    fn access_delays_follow_the_flow_in_both_directions() {
        let mut e = Emulator::new(
            LinkConfig::droptail(10e6, NS_PER_MS, 100),
            LinkConfig::droptail(10e6, NS_PER_MS, 100),
            1,
        )
        .unwrap();
        e.add_flow_delay(40000, 5 * NS_PER_MS, 3 * NS_PER_MS, false);
        e.add_flow_delay(40001, 7 * NS_PER_MS, 2 * NS_PER_MS, true);
        // 1 ms transmission + 1 ms propagation = 2 ms without an access delay.
        let base = 2 * NS_PER_MS;
        let s = 100 * NS_PER_MS;
        assert_eq!(
            out_time(&mut e, s, Dir::Fwd, 40000, 50000),
            base + 5 * NS_PER_MS
        ); // forward data
        assert_eq!(
            out_time(&mut e, 2 * s, Dir::Rev, 50000, 40000),
            base + 3 * NS_PER_MS
        ); // its ACK
        assert_eq!(
            out_time(&mut e, 3 * s, Dir::Rev, 40001, 50001),
            base + 7 * NS_PER_MS
        ); // reverse data
        assert_eq!(
            out_time(&mut e, 4 * s, Dir::Fwd, 50001, 40001),
            base + 2 * NS_PER_MS
        ); // its ACK
        assert_eq!(out_time(&mut e, 5 * s, Dir::Fwd, 50002, 50003), base); // someone else's
    }
}
