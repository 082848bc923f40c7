//! A Sender/Receiver pair on a virtual clock carrying one honest finite transfer, into which hostile
//! segments are injected at given times: the harness of `tests/hostile.rs` and of the cargo-fuzz target
//! in `fuzz/` (which includes this file by path), so both check the same invariants.
//!
//! The path: one serialising link of fixed rate and a fixed one-way delay in each direction, FIFO both
//! ways (as the simulator's and the emulator's paths are), with an optional honest loss rule (the first
//! transmission of every `loss_every`-th packet is dropped) so that hostile input meets recovery too.
//!
//! Two kinds of attacker: a *blind* one (every field of its segments is arbitrary: the local user of
//! loopback mode, who cannot read the flow's packets) and an *on-path* one, which has seen the flow's
//! data packets and echoes one of their timestamps. Against a blind attacker the honest transfer must
//! complete; against an on-path one only safety is asserted (docs/real-datapath.md, "What a hostile
//! packet can and cannot do").

#![allow(dead_code)]

use cclab_cc::cc::{CongestionControl, Recovery};
use cclab_cc::time::{tx_time, Nanos, NS_PER_MS, NS_PER_SEC};
use cclab_transport::{AckSegment, Config, DataSegment, Receiver, Sender, MAX_SACK_BLOCKS};
use std::collections::{HashMap, VecDeque};

/// A segment the attacker injects.
#[derive(Clone, Copy, Debug)]
pub enum Hostile {
    /// To the receiver.
    Data(DataSegment),
    /// To the sender, every field as given (blind).
    Ack(AckSegment),
    /// To the sender, with `ts_echo`, `acked_seq`, `acked_flags` and `acked_bytes` copied from the
    /// `k`-th data packet the sender has put on the wire so far (modulo their number): an on-path
    /// attacker that has read that packet. Every other field as given.
    EchoAck(AckSegment, usize),
    /// A spurious timer event: `handle_timeout` on both ends (the driver contract allows it any time).
    Tick,
}

#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub sack: bool,
    pub recovery: Recovery,
    pub max_window: u32,
    pub delayed_ack: u32,
    pub pkts: u64,
    /// Drop the first transmission of every packet whose seq is a multiple of this (0: no loss).
    pub loss_every: u64,
    /// Both ends hold a data key (`Config::data_key`, as on the real datapath): the sender tags its
    /// data and the receiver refuses data whose tag does not verify.
    pub keyed: bool,
    /// The receiver runs Linux's ACK rules and reports duplicates as D-SACK blocks (`delayed_ack` is
    /// then Linux's own 2, as the spec resolves it).
    pub linux_receiver: bool,
    /// The sender runs Linux's loss detection and undo (`loss_detection = "rack"`, `undo`).
    pub linux_sender: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            sack: true,
            recovery: Recovery::Sack,
            max_window: 64,
            delayed_ack: 1,
            pkts: 120,
            loss_every: 0,
            keyed: false,
            linux_receiver: false,
            linux_sender: false,
        }
    }
}

/// The data key of a keyed world (any fixed value: the attacker's segments never see it).
pub const KEY: [u64; 2] = [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210];

pub const MSS: u32 = 1448;
/// When the transfer starts: honest timestamps are never tiny.
pub const T0: Nanos = 1_000_000_007;

/// What happened in a run.
#[derive(Debug, Default)]
pub struct Outcome {
    pub finished: bool,
    pub at: Nanos,
    pub hostile_data: u64,
    /// Hostile data segments that arrived at or beyond `rcv_nxt + window` or with a payload over the
    /// MSS: the receiver must reject exactly these.
    pub hostile_data_outside: u64,
    /// Hostile data segments inside the window that a keyed receiver must refuse (their tag does not
    /// verify).
    pub hostile_data_unverified: u64,
    /// Hostile data segments inside the window taken as data (unkeyed: data is not authenticated).
    pub hostile_data_inside: u64,
    pub hostile_acks: u64,
    /// Hostile ACKs whose `ts_echo` equals the timestamp of a packet the sender did send (on-path).
    pub informed_acks: u64,
}

pub struct World {
    pub s: Sender,
    pub r: Receiver,
    pub p: Params,
    pub now: Nanos,
    delay: Nanos,
    rate_bps: f64,
    link_free: Nanos,
    data: VecDeque<(Nanos, DataSegment)>,
    acks: VecDeque<(Nanos, AckSegment)>,
    /// Every data packet the sender put on the wire, in order, and their timestamps.
    pub sent: Vec<DataSegment>,
    sent_ts: HashMap<Nanos, usize>,
    tx_count: HashMap<u64, u32>,
    last_rcv_nxt: u64,
    pub out: Outcome,
}

impl World {
    pub fn new(p: Params, cc: Box<dyn CongestionControl>) -> World {
        let cfg = Config {
            mss: MSS,
            sack: p.sack,
            recovery: p.recovery,
            max_window: p.max_window.max(1),
            delayed_ack: if p.linux_receiver {
                cclab_transport::delack::LINUX_DELACK_SEGMENTS
            } else {
                p.delayed_ack.max(1)
            },
            delack_timeout: if p.linux_receiver {
                cclab_transport::delack::LINUX_ATO
            } else {
                Config::default().delack_timeout
            },
            receiver: if p.linux_receiver {
                cclab_transport::ReceiverProfile::Linux
            } else {
                cclab_transport::ReceiverProfile::PerPacket
            },
            dsack: p.linux_receiver,
            loss_detection: if p.linux_sender {
                cclab_transport::LossDetection::Rack
            } else {
                cclab_transport::LossDetection::DupAck
            },
            undo: p.linux_sender,
            initial_cwnd: 10.0,
            data_key: p.keyed.then_some(KEY),
            ..Config::default()
        };
        World {
            r: Receiver::new(&cfg),
            s: Sender::new(cfg, cc, Some(p.pkts * MSS as u64), T0),
            p,
            now: T0,
            delay: 10 * NS_PER_MS,
            rate_bps: 20e6,
            link_free: T0,
            data: VecDeque::new(),
            acks: VecDeque::new(),
            sent: Vec::new(),
            sent_ts: HashMap::new(),
            tx_count: HashMap::new(),
            last_rcv_nxt: 0,
            out: Outcome::default(),
        }
    }

    /// NewReno's window rules under the given recovery.
    pub fn reno(p: Params) -> World {
        let cc = cclab_cc::algorithms::reno::Reno::new(
            "newreno",
            10.0,
            &cclab_cc::params::Params::new(),
        )
        .unwrap();
        World::new(p, Box::new(cc))
    }

    fn pump(&mut self) {
        while let Some(seg) = self.s.poll_transmit(self.now) {
            self.sent_ts.insert(seg.ts, self.sent.len());
            self.sent.push(seg);
            let n = self.tx_count.entry(seg.seq).or_insert(0);
            *n += 1;
            let start = self.link_free.max(self.now);
            self.link_free = start + tx_time((seg.payload + 52) as u64, self.rate_bps);
            let lost = self.p.loss_every > 0 && seg.seq % self.p.loss_every == 0 && *n == 1;
            if !lost {
                self.data.push_back((self.link_free + self.delay, seg));
            }
        }
        while let Some(a) = self.r.poll_ack(self.now) {
            self.check_receiver_ack(&a);
            self.acks.push_back((self.now + self.delay, a));
        }
    }

    /// An ACK our receiver emits is well formed and lies inside its window, whatever it was fed.
    fn check_receiver_ack(&self, a: &AckSegment) {
        assert!(a.n_sack as usize <= MAX_SACK_BLOCKS, "receiver ACK {a:?}");
        assert_eq!(a.cum_ack, self.r.rcv_nxt(), "receiver ACK {a:?}");
        let limit = a.cum_ack.saturating_add(self.p.max_window as u64);
        let mut blocks = a.sack_blocks();
        if a.dsack {
            // A D-SACK block reports a duplicate: below the cumulative ACK or inside the window.
            let d = blocks[0];
            assert!(
                d.start < d.end && (d.end <= a.cum_ack || (a.cum_ack < d.start && d.end <= limit)),
                "receiver D-SACK block {d:?}: {a:?}"
            );
            blocks = &blocks[1..];
        }
        for b in blocks {
            assert!(
                a.cum_ack < b.start && b.start < b.end && b.end <= limit,
                "receiver SACK block {b:?} outside ({}, {limit}]: {a:?}",
                a.cum_ack
            );
        }
    }

    /// Invariants that hold after every event, honest or hostile.
    pub fn check(&mut self) {
        let (una, nxt) = (self.s.snd_una(), self.s.snd_nxt());
        assert!(una <= nxt, "snd_una {una} > snd_nxt {nxt}");
        assert!(
            self.s.in_flight() as u64 <= nxt - una,
            "pipe {} > outstanding {}",
            self.s.in_flight(),
            nxt - una
        );
        assert!(
            nxt - una <= self.p.max_window as u64,
            "outstanding {} over the receive window {}",
            nxt - una,
            self.p.max_window
        );
        assert!(
            nxt <= self.p.pkts,
            "snd_nxt {nxt} beyond the flow's {} packets",
            self.p.pkts
        );
        let rcv = self.r.rcv_nxt();
        assert!(
            rcv >= self.last_rcv_nxt,
            "rcv_nxt went back: {} -> {rcv}",
            self.last_rcv_nxt
        );
        self.last_rcv_nxt = rcv;
    }

    fn inject(&mut self, h: Hostile) {
        match h {
            Hostile::Data(d) => {
                self.out.hostile_data += 1;
                let rcv = self.r.rcv_nxt();
                if d.payload > MSS || d.seq >= rcv.saturating_add(self.p.max_window as u64) {
                    self.out.hostile_data_outside += 1;
                } else if self.p.keyed && !cclab_transport::auth::verify(&KEY, &d) {
                    self.out.hostile_data_unverified += 1;
                } else if d.seq >= rcv {
                    self.out.hostile_data_inside += 1;
                }
                self.r.handle_data(self.now, &d);
            }
            Hostile::Ack(a) => {
                self.out.hostile_acks += 1;
                if self.sent_ts.contains_key(&a.ts_echo) {
                    self.out.informed_acks += 1;
                }
                self.s.handle_ack(self.now, &a);
            }
            Hostile::EchoAck(mut a, k) => {
                if !self.sent.is_empty() {
                    let d = self.sent[k % self.sent.len()];
                    a.ts_echo = d.ts;
                    a.acked_seq = d.seq;
                    a.acked_flags = d.flags;
                    a.acked_bytes = d.payload;
                }
                self.inject(Hostile::Ack(a));
            }
            Hostile::Tick => {
                self.s.handle_timeout(self.now);
                self.r.handle_timeout(self.now);
            }
        }
    }

    /// Runs the transfer with `hostile` injected (times relative to the start, any order) until both
    /// ends are done or `deadline` (relative). Panics on a broken invariant.
    pub fn run(&mut self, hostile: &[(Nanos, Hostile)], deadline: Nanos) -> &Outcome {
        let mut hostile: Vec<(Nanos, Hostile)> = hostile
            .iter()
            .map(|&(t, h)| (T0.saturating_add(t), h))
            .collect();
        hostile.sort_by_key(|h| h.0);
        let mut hostile: VecDeque<_> = hostile.into();
        let deadline = T0 + deadline;
        self.pump();
        self.check();
        loop {
            if self.s.is_finished() && self.r.rcv_nxt() >= self.p.pkts && hostile.is_empty() {
                self.out.finished = true;
                break;
            }
            let t = [
                self.data.front().map(|d| d.0),
                self.acks.front().map(|a| a.0),
                self.s.poll_timeout(),
                self.r.poll_timeout(),
                hostile.front().map(|h| h.0),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(t) = t else {
                break; // nothing left to happen
            };
            if t > deadline {
                break;
            }
            self.now = t.max(self.now);
            if self.data.front().is_some_and(|d| d.0 <= self.now) {
                let (_, d) = self.data.pop_front().unwrap();
                self.r.handle_data(self.now, &d);
            } else if self.acks.front().is_some_and(|a| a.0 <= self.now) {
                let (_, a) = self.acks.pop_front().unwrap();
                self.s.handle_ack(self.now, &a);
            } else if hostile.front().is_some_and(|h| h.0 <= self.now) {
                let (_, h) = hostile.pop_front().unwrap();
                self.inject(h);
            } else {
                self.s.handle_timeout(self.now);
                self.r.handle_timeout(self.now);
            }
            self.pump();
            self.check();
        }
        self.out.at = self.now - T0;
        &self.out
    }

    /// The counters saw the hostile input: the receiver refused exactly the data outside its window
    /// (and oversized; at least those against an on-path attacker), and the sender dropped at least every blind ACK — exactly those when nothing
    /// else was hostile (an ACK of our receiver echoing a hostile data segment is dropped too).
    pub fn assert_counted(&self) {
        let o = &self.out;
        let refused = self.r.rejected_pkts();
        let forged = o.hostile_data_outside + o.hostile_data_unverified;
        assert_eq!(
            self.r.rejected().unverified,
            o.hostile_data_unverified,
            "{:?}",
            self.r.rejected()
        );
        if o.informed_acks == 0 {
            assert_eq!(refused, forged, "{:?}", self.r.rejected());
        } else {
            // A forged cumulative ACK lets the sender's window run ahead of the receiver's: honest
            // packets beyond the receiver's window are refused too.
            assert!(refused >= forged, "{:?}", self.r.rejected());
        }
        let blind = o.hostile_acks - o.informed_acks;
        let rej = self.s.rejected();
        assert!(rej.dropped() >= blind, "{rej:?} for {blind} blind ACKs");
        if o.hostile_data == 0 && o.informed_acks == 0 {
            assert_eq!((rej.dropped(), rej.total()), (blind, blind), "{rej:?}");
        }
    }

    /// The honest transfer completed: every packet delivered in order at the receiver, all of it
    /// acknowledged at the sender; with no hostile data accepted as data, exactly the flow's bytes.
    pub fn assert_completed(&self) {
        assert!(
            self.out.finished,
            "transfer not complete at {:.3} s: snd_una {} snd_nxt {} rcv_nxt {} of {} ({:?})",
            self.now.saturating_sub(T0) as f64 / NS_PER_SEC as f64,
            self.s.snd_una(),
            self.s.snd_nxt(),
            self.r.rcv_nxt(),
            self.p.pkts,
            self.out
        );
        if self.out.hostile_data_inside == 0 {
            assert_eq!(self.r.delivered_bytes(), self.p.pkts * MSS as u64);
        }
    }
}
