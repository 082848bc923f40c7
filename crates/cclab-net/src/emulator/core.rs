//! The link emulator's state machine, free of I/O: packets go in with their arrival time
//! ([`Emulator::on_packet`]), come out when due ([`Emulator::poll_output`]), and
//! [`Emulator::next_deadline`] says when to look again. The I/O shell ([`super::drive`]) feeds it from
//! TUN devices with the OS clock; tests feed it directly with a virtual clock.
//!
//! Topology: any number of directional links ([`super::link::Link`]: loss, queue discipline, rate,
//! propagation) and a table of routes. A packet's route is found by its flow's port
//! ([`crate::plan`]): a flow's data by destination port, its ACKs by source port. A route is the links
//! of the flow's path in order, as the spec lists them (`path`, `ack_path`): a dumbbell, a parking
//! lot's chain, a graph's shortest path are all just lists of links here; and the flow's access delay
//! (per flow, so flows get their configured RTT), before the links for data and after them for ACKs,
//! where the simulator puts it (`crates/cclab-sim/src/sim/build.rs`). At the route's end the packet is
//! written to the host on the other side.
//!
//! DECISION (where an ACK's access delay sits): after its links, as in the simulator, not before. A
//! lone flow cannot tell, but two-way traffic can: an ACK meets the other direction's data in the
//! reverse link's queue, and which data it meets depends on whether it waited out its access delay
//! first. With the ACK's delay before the link, a forward and a reverse NewReno flow on a 20 Mbit/s,
//! 40 ms dumbbell carried 25.3 Mbit/s in all (mean of 10 seeds, ideal hosts on a virtual clock:
//! `crates/cclab-net/tests/ideal_hosts.rs`) against 33.3 with it after, and the simulator's 33.6. Cross traffic ([`Emulator::add_cross`]) is generated inside: packets made
//! at the times of the simulator's law (`cclab_cc::cross`), sent down their route and consumed at its
//! end, never written to a host.
//!
//! DECISION (exact virtual clock): departure times are computed, never slept for. A packet starts
//! transmission at `max(arrival, previous departure end)` and ends `tx_time(bytes)` later, exactly as in
//! the simulator; the queue is advanced lazily to each event's *virtual* time before the next event is
//! applied, so the queue length a discipline sees on an arrival is exact even when the process wakes
//! late. Only the moment a packet is written to the TUN device depends on wake-up latency, and that
//! error does not accumulate. A packet moves from one link to the next at its virtual propagation
//! end, so a chain of links costs no lateness either.

use std::collections::VecDeque;

use cclab_cc::cross::CrossLaw;
use cclab_cc::params::ParamError;
use cclab_cc::time::Nanos;
use serde::Serialize;

pub use super::link::Dir;
use super::link::{Link, Pkt, Pool};
pub use super::link::{LinkConfig, LinkCounters, LinkSnapshot};
use crate::ip::{self, Info, IpError};

/// Largest packet the emulator carries (TUN MTU is 1500; room for anything a host might send).
pub const MAX_PACKET: usize = 65535;

/// Counters of frames refused before any link (per emulator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IngressCounters {
    /// IPv4 packets with a bad header, or our datagrams failing the codec check: dropped.
    pub malformed: u64,
    /// Non-IPv4 frames (the hosts' IPv6 chatter): dropped.
    pub non_ipv4: u64,
}

/// A cross-traffic source's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CrossCounters {
    /// Packets generated (offered to the route's first link) and bytes.
    pub sent: u64,
    pub sent_bytes: u64,
    /// Packets that reached the route's end (consumed there).
    pub delivered: u64,
}

/// A per-flow access delay line: all packets in it have the same extra delay, so it is FIFO.
struct DelayLine {
    delay: Nanos,
    q: VecDeque<(Nanos, Pkt)>,
}

/// Where a packet goes: an access delay line (or none), then links in order; at the end, the far host
/// or, for cross traffic, the source's sink.
struct Route {
    line: Option<usize>,
    hops: Vec<usize>,
    /// A delay line after the last link (an ACK's access delay), crossed as hop `hops.len()`.
    after: Option<usize>,
    sink: Option<usize>,
}

/// Which of a packet's ports identifies its flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Dst,
    Src,
}

/// Packets from one side whose port (`field`) is in `lo..=hi` take `route`.
struct PortRule {
    lo: u16,
    hi: u16,
    field: Field,
    route: usize,
}

/// An unresponsive cross-traffic source inside the emulator.
struct Gen {
    law: CrossLaw,
    next: Option<Nanos>,
    route: usize,
    /// The packet it sends (IPv4/UDP, parsed once).
    template: Vec<u8>,
    info: Info,
    counters: CrossCounters,
}

/// What a flow's packets cross: its data enters from `data_side` and crosses `data_hops` after
/// `data_delay`; its ACKs enter from the other side, cross `ack_hops` and then wait `ack_delay` (the
/// simulator's order; see the module's DECISION).
#[derive(Clone, Debug)]
pub struct FlowRoute {
    pub data_side: Dir,
    pub data_hops: Vec<usize>,
    pub data_delay: Nanos,
    pub ack_hops: Vec<usize>,
    pub ack_delay: Nanos,
}

pub struct Emulator {
    links: Vec<Link>,
    lines: Vec<DelayLine>,
    routes: Vec<Route>,
    /// Per side: the port rules, first match wins; and the route of packets no rule matches.
    rules: [Vec<PortRule>; 2],
    default_route: [usize; 2],
    gens: Vec<Gen>,
    /// Packets at their route's end, due at the time given, in virtual-time order.
    out: VecDeque<(Nanos, Pkt)>,
    pool: Pool,
    pub ingress: IngressCounters,
}

enum Next {
    AccessExit(usize),
    LinkStart(usize),
    Tick(usize),
    PropEnd(usize),
    Gen(usize),
}

impl Emulator {
    /// A dumbbell: link 0 (`fwd`) carries what host A sends, link 1 (`rev`) what host B sends, unless a
    /// flow's route says otherwise. `seed` seeds the per-link RNG streams.
    pub fn new(fwd: LinkConfig, rev: LinkConfig, seed: u64) -> Result<Self, ParamError> {
        Self::with_links(vec![fwd, rev], [vec![0], vec![1]], seed)
    }

    /// Any number of directional links (link `i` draws from stream `i` of `seed`); packets that match
    /// no flow's port cross `defaults[side]`.
    pub fn with_links(
        links: Vec<LinkConfig>,
        defaults: [Vec<usize>; 2],
        seed: u64,
    ) -> Result<Self, ParamError> {
        let links = links
            .into_iter()
            .enumerate()
            .map(|(i, cfg)| Link::new(cfg, seed, i as u64))
            .collect::<Result<Vec<_>, _>>()?;
        let mut e = Emulator {
            links,
            lines: Vec::new(),
            routes: Vec::new(),
            rules: [Vec::new(), Vec::new()],
            default_route: [0, 0],
            gens: Vec::new(),
            out: VecDeque::new(),
            pool: Pool::default(),
            ingress: Default::default(),
        };
        let [a, b] = defaults;
        e.default_route = [e.route(0, a, 0, None), e.route(0, b, 0, None)];
        Ok(e)
    }

    /// How many directional links.
    pub fn n_links(&self) -> usize {
        self.links.len()
    }

    /// A new route: `before` of delay, the links `hops`, `after` of delay. Panics on a link index out
    /// of range (callers check the spec first).
    fn route(
        &mut self,
        before: Nanos,
        hops: Vec<usize>,
        after: Nanos,
        sink: Option<usize>,
    ) -> usize {
        assert!(
            hops.iter().all(|&h| h < self.links.len()),
            "route {hops:?} names a link beyond {}",
            self.links.len()
        );
        let line = (before > 0).then(|| self.line_for(before));
        let after = (after > 0).then(|| self.line_for(after));
        self.routes.push(Route {
            line,
            hops,
            after,
            sink,
        });
        self.routes.len() - 1
    }

    /// The delay line of `delay`, shared by every route with that delay: packets enter it in time
    /// order and all stay `delay`, so it stays FIFO whoever is in it.
    fn line_for(&mut self, delay: Nanos) -> usize {
        match self.lines.iter().position(|l| l.delay == delay) {
            Some(i) => i,
            None => {
                self.lines.push(DelayLine {
                    delay,
                    q: VecDeque::new(),
                });
                self.lines.len() - 1
            }
        }
    }

    fn add_rule(&mut self, side: Dir, lo: u16, hi: u16, field: Field, route: usize) {
        let rules = &mut self.rules[side as usize];
        rules.retain(|r| (r.lo, r.hi, r.field) != (lo, hi, field));
        rules.push(PortRule {
            lo,
            hi,
            field,
            route,
        });
    }

    /// Routes the flows whose receivers own ports `lo..=hi`: their data (matched by destination port)
    /// and their ACKs (by source port) as `r` says; the data's access delay comes before its links,
    /// the ACKs' after theirs (see the module's DECISION). Flow ports lie outside the hosts' ephemeral range
    /// ([`crate::hosts`]), so a sender's own port never matches another flow's.
    pub fn add_flow_ports(&mut self, lo: u16, hi: u16, r: &FlowRoute) {
        let ack_side = match r.data_side {
            Dir::Fwd => Dir::Rev,
            Dir::Rev => Dir::Fwd,
        };
        let data = self.route(r.data_delay, r.data_hops.clone(), 0, None);
        let ack = self.route(0, r.ack_hops.clone(), r.ack_delay, None);
        self.add_rule(r.data_side, lo, hi, Field::Dst, data);
        self.add_rule(ack_side, lo, hi, Field::Src, ack);
    }

    /// A dumbbell flow whose receiver has `port`: its data gets `data` extra delay before its link and
    /// its ACKs `ack` after theirs. A forward flow's data crosses link 0 (A → B) and its ACKs link 1; a
    /// `reverse` flow's data crosses link 1 and its ACKs link 0.
    pub fn add_flow_delay(&mut self, port: u16, data: Nanos, ack: Nanos, reverse: bool) {
        let (side, d, a) = if reverse {
            (Dir::Rev, 1, 0)
        } else {
            (Dir::Fwd, 0, 1)
        };
        self.add_flow_ports(
            port,
            port,
            &FlowRoute {
                data_side: side,
                data_hops: vec![d],
                data_delay: data,
                ack_hops: vec![a],
                ack_delay: ack,
            },
        );
    }

    /// Cross-traffic source `index`: `law` says when it sends (first at `start`) a `packet_size`-byte
    /// IPv4/UDP packet down `hops`, where it is consumed after the last link. Its packets are keyed
    /// apart from every flow's for flow-queueing disciplines (source port `39000 + index`, discard port
    /// 9), and, as the simulator's, they are not data: link loss with `loss_data_only` spares them.
    pub fn add_cross(
        &mut self,
        index: usize,
        law: CrossLaw,
        start: Nanos,
        hops: Vec<usize>,
        packet_size: u32,
    ) {
        let g = self.gens.len();
        let route = self.route(0, hops, 0, Some(g));
        let payload = vec![0u8; (packet_size.max(28) - 28) as usize];
        let template = ip::build_udp(
            crate::hosts::ADDR_A,
            crate::hosts::ADDR_B,
            39000u16.wrapping_add(index as u16),
            9,
            0,
            &payload,
        );
        let info = ip::inspect(&template).expect("a well-formed UDP packet");
        self.gens.push(Gen {
            law,
            next: Some(start),
            route,
            template,
            info,
            counters: CrossCounters::default(),
        });
    }

    /// Cross-traffic source `g`'s counters (in the order they were added).
    pub fn cross_counters(&self) -> Vec<CrossCounters> {
        self.gens.iter().map(|g| g.counters).collect()
    }

    /// A buffer for the next read (recycled from delivered packets).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.pool.take()
    }

    /// Returns a buffer to the pool.
    pub fn recycle(&mut self, b: Vec<u8>) {
        self.pool.recycle(b)
    }

    /// A packet read from the host on side `dir` at time `now`. Malformed and non-IPv4 frames are
    /// counted and dropped.
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
        let route = self.rules[d]
            .iter()
            .find(|r| {
                let p = if r.field == Field::Dst { dst } else { src };
                (r.lo..=r.hi).contains(&p)
            })
            .map_or(self.default_route[d], |r| r.route);
        let pkt = Pkt {
            buf,
            info,
            route: route as u32,
            hop: 0,
            dir,
        };
        self.enter(now, pkt);
    }

    /// A packet starting its route at `t`: into its access delay line, or straight on.
    fn enter(&mut self, t: Nanos, pkt: Pkt) {
        match self.routes[pkt.route as usize].line {
            Some(i) => {
                let line = &mut self.lines[i];
                line.q.push_back((t + line.delay, pkt));
            }
            None => self.next_hop(t, pkt),
        }
    }

    /// A packet at hop `pkt.hop` of its route at `t`: onto that link; past the last, into the
    /// route's delay line after the links if it has one; then to its end.
    fn next_hop(&mut self, t: Nanos, mut pkt: Pkt) {
        let r = &self.routes[pkt.route as usize];
        match (r.hops.get(pkt.hop as usize), r.after) {
            (Some(&l), _) => self.links[l].arrival(t, pkt, &mut self.pool),
            (None, Some(i)) if pkt.hop as usize == r.hops.len() => {
                let line = &mut self.lines[i];
                pkt.hop += 1;
                line.q.push_back((t + line.delay, pkt));
            }
            (None, _) => match r.sink {
                Some(g) => {
                    self.gens[g].counters.delivered += 1;
                    self.pool.recycle(pkt.buf);
                }
                None => self.out.push_back((t, pkt)),
            },
        }
    }

    /// Source `g` fires at `t`: maybe a packet, and its next time.
    fn fire(&mut self, g: usize, t: Nanos) {
        let (send, next) = self.gens[g].law.fire(t);
        self.gens[g].next = next;
        if send {
            let mut buf = self.pool.take();
            let src = &mut self.gens[g];
            buf.extend_from_slice(&src.template);
            src.counters.sent += 1;
            src.counters.sent_bytes += buf.len() as u64;
            let pkt = Pkt {
                buf,
                info: src.info,
                route: src.route as u32,
                hop: 0,
                dir: Dir::Fwd,
            };
            self.next_hop(t, pkt);
        }
    }

    /// The earliest internal event (access exit, transmission start, propagation end, discipline
    /// tick, cross-traffic emission), if any.
    fn next_internal(&self) -> Option<(Nanos, Next)> {
        let mut best: Option<(Nanos, Next)> = None;
        let mut consider = |t: Nanos, n: Next| {
            if best.as_ref().is_none_or(|(b, _)| t < *b) {
                best = Some((t, n));
            }
        };
        for (i, line) in self.lines.iter().enumerate() {
            if let Some((t, _)) = line.q.front() {
                consider(*t, Next::AccessExit(i));
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            if let Some((t, _)) = l.prop.front() {
                consider(*t, Next::PropEnd(i));
            }
            if let Some(t) = l.head_start() {
                consider(t, Next::LinkStart(i));
            }
            if let Some(t) = l.next_tick {
                consider(t, Next::Tick(i));
            }
        }
        for (i, g) in self.gens.iter().enumerate() {
            if let Some(t) = g.next {
                consider(t, Next::Gen(i));
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
                Next::AccessExit(i) => {
                    if let Some((t, pkt)) = self.lines[i].q.pop_front() {
                        self.next_hop(t, pkt);
                    }
                }
                Next::LinkStart(i) => self.links[i].start(t, &mut self.pool),
                Next::Tick(i) => self.links[i].tick(t),
                Next::PropEnd(i) => {
                    if let Some((t, mut pkt)) = self.links[i].prop.pop_front() {
                        self.links[i].counters.delivered += 1;
                        pkt.hop += 1;
                        self.next_hop(t, pkt);
                    }
                }
                Next::Gen(g) => self.fire(g, t),
            }
        }
    }

    /// The next packet due for delivery at `now`: the side it came from (it goes to the other host),
    /// its bytes and due time. Give the buffer back with [`Emulator::recycle`] after writing it.
    pub fn poll_output(&mut self, now: Nanos) -> Option<(Dir, Vec<u8>, Nanos)> {
        self.run_until(now);
        if self.out.front().is_some_and(|(t, _)| *t <= now) {
            let (due, pkt) = self.out.pop_front()?;
            return Some((pkt.dir, pkt.buf, due));
        }
        None
    }

    /// When something next happens (a delivery or an internal event).
    pub fn next_deadline(&self) -> Option<Nanos> {
        let deliveries = self.out.front().map(|(t, _)| *t);
        match (deliveries, self.next_internal().map(|(t, _)| t)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Link `d`'s counters (`Dir::Fwd` = link 0, `Dir::Rev` = link 1, the dumbbell's).
    pub fn counters(&self, d: Dir) -> LinkCounters {
        self.links[d as usize].counters
    }

    pub fn link_counters(&self, i: usize) -> LinkCounters {
        self.links[i].counters
    }

    pub fn snapshot(&self, i: usize) -> LinkSnapshot {
        self.links[i].snapshot()
    }

    /// Every link's snapshot, in link order.
    pub fn snapshots(&self) -> Vec<LinkSnapshot> {
        self.links.iter().map(Link::snapshot).collect()
    }

    pub fn queue_name(&self, i: usize) -> &'static str {
        self.links[i].qdisc.name()
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
