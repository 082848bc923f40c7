//! The receiving endpoint: reassembly, cumulative ACK + SACK blocks (RFC 2018) and D-SACK blocks
//! (RFC 2883), delayed ACKs (RFC 1122 / RFC 5681 §4.2, or Linux's rules: [`crate::delack`]), timestamp
//! echo and the per-packet echo fields the sender's algorithms use
//! (receiver timestamp for packet-pair dispersion, the MaxNet forward field copied back, ECN-Echo).
//!
//! Trusts no sequence number: a data segment at or beyond `rcv_nxt + max_window` (the window the
//! sender honours, so an honest sender never goes there; the top of the sequence space included) or
//! with a payload over the MSS is counted in [`Receiver::rejected`] and dropped without touching any
//! state, so buffered ranges and the SACK blocks built from them always lie inside
//! `(rcv_nxt, rcv_nxt + max_window]` (a D-SACK block inside it or below `rcv_nxt`) and no `seq + 1`
//! can overflow. With a data key
//! ([`Config::data_key`], the real datapath) a segment whose tag does not verify ([`crate::auth`]) is
//! refused the same way, so forged data inside the window moves nothing either: no delivered byte, no
//! buffered range, no ACK, no one-way-delay sample, no CE. Without one (the simulator) in-window data is
//! taken as it comes. docs/real-datapath.md, "What a hostile packet can and cannot do".

use std::collections::{BTreeMap, VecDeque};

use crate::config::Config;
use crate::delack::{AckClock, Arrival};
use crate::segment::{AckSegment, DataSegment, SackBlock, MAX_SACK_BLOCKS};
use crate::stats::{ReceiverWindowStats, Window};
use cclab_cc::cc::flags;
use cclab_cc::time::Nanos;

/// A run of received packets above the cumulative point.
#[derive(Clone, Copy, Debug)]
struct Range {
    start: u64,
    end: u64,
    /// Payload bytes held in this range (the last packet of a finite flow may be short).
    bytes: u64,
    /// Arrival counter of the newest packet in the range, for RFC 2018 block ordering.
    last_update: u64,
}

/// Data segments the receiver refused, by reason. None of them changed its state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RejectedData {
    /// `seq ≥ rcv_nxt + max_window`: outside the receive window (where an honest sender never sends).
    pub beyond_window: u64,
    /// A payload larger than the MSS (no honest packet is).
    pub oversized: u64,
    /// With a data key: a tag that does not verify (forged, or altered on the way; [`crate::auth`]).
    pub unverified: u64,
}

impl RejectedData {
    pub fn total(&self) -> u64 {
        self.beyond_window + self.oversized + self.unverified
    }
}

pub struct Receiver {
    /// When to ACK (the receiver profile) and the delayed-ACK timer.
    clock: AckClock,
    sack: bool,
    /// Report duplicates as D-SACK blocks (RFC 2883): `Config::dsack` with SACK on.
    dsack: bool,
    /// The duplicate range the next ACK reports in `sack[0]`.
    dsack_pending: Option<SackBlock>,
    rcv_nxt: u64,
    delivered_bytes: u64,
    received_pkts: u64,
    /// Out-of-order ranges, sorted by start, disjoint, all above `rcv_nxt`. A deque: filling the first
    /// hole pops the front, and new holes open at the back; with thousands of holes (a slow-start
    /// overshoot at a 16 000-packet window) shifting a Vec on every filled hole cost a quarter of the run.
    ooo: VecDeque<Range>,
    /// Every range's `last_update` → its start: the RFC 2018 block order (newest first) without
    /// scanning every range on every ACK (stamps are unique: each arrival stamps one range).
    by_stamp: BTreeMap<u64, u64>,
    arrivals: u64,
    /// `arrivals` when the last ACK was sent: ranges stamped later are news to the sender.
    arrivals_at_ack: u64,
    /// CE seen since the last ACK.
    ce_pending: bool,
    /// The packet whose fields the next ACK echoes.
    last: Option<(DataSegment, Nanos)>,
    ack_ready: bool,
    /// The receive window (packets above `rcv_nxt` it buffers) and the largest payload it accepts.
    window: u64,
    mss: u32,
    /// The flow's data key: data whose tag does not verify is refused ([`crate::auth`]).
    key: Option<crate::auth::DataKey>,
    rejected: RejectedData,
    /// Window statistics ([`Receiver::collect_window_stats`]; an empty window until the driver asks).
    win_stats: ReceiverWindowStats,
}

impl Receiver {
    pub fn new(cfg: &Config) -> Receiver {
        Receiver {
            clock: AckClock::new(cfg),
            sack: cfg.sack,
            dsack: cfg.dsack && cfg.sack,
            dsack_pending: None,
            rcv_nxt: 0,
            delivered_bytes: 0,
            received_pkts: 0,
            ooo: VecDeque::new(),
            by_stamp: BTreeMap::new(),
            arrivals: 0,
            arrivals_at_ack: 0,
            ce_pending: false,
            last: None,
            ack_ready: false,
            window: cfg.max_window.max(1) as u64,
            mss: cfg.mss,
            key: cfg.data_key,
            rejected: RejectedData::default(),
            win_stats: ReceiverWindowStats::default(),
        }
    }

    /// Data segments refused (outside the window, oversized), by reason.
    pub fn rejected(&self) -> RejectedData {
        self.rejected
    }

    /// Data segments refused, all reasons.
    pub fn rejected_pkts(&self) -> u64 {
        self.rejected.total()
    }

    /// In-order application bytes delivered so far (the goodput counter).
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes
    }

    /// Data packets received, duplicates included (rejected ones not).
    pub fn received_pkts(&self) -> u64 {
        self.received_pkts
    }

    /// From now on, record the one-way delay (`now` − the segment's send timestamp) of every data
    /// packet arriving at a time in `[from, to)` ([`crate::stats`]). Meaningful only where the sender's
    /// and receiver's clocks are one (the simulator; the real datapath's endpoints share one clock).
    pub fn collect_window_stats(&mut self, from: Nanos, to: Nanos) {
        self.win_stats = ReceiverWindowStats {
            window: Window::new(from, to),
            ..Default::default()
        };
    }
    /// What [`Receiver::collect_window_stats`] recorded so far (None if it was not called).
    pub fn window_stats(&self) -> Option<&ReceiverWindowStats> {
        (!self.win_stats.window.is_empty()).then_some(&self.win_stats)
    }

    /// Next in-order packet expected.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    pub fn handle_data(&mut self, now: Nanos, seg: &DataSegment) {
        if seg.payload > self.mss {
            self.rejected.oversized += 1;
            return;
        }
        // Saturating: near the top of the sequence space the window ends at u64::MAX, which is itself
        // outside, so every accepted seq has a seq + 1.
        if seg.seq >= self.rcv_nxt.saturating_add(self.window) {
            self.rejected.beyond_window += 1;
            return;
        }
        // Last: the cheap checks first, and a segment outside the window is counted as that.
        if self.key.is_some_and(|k| !crate::auth::verify(&k, seg)) {
            self.rejected.unverified += 1;
            return;
        }
        if self.win_stats.window.contains(now) && seg.ts <= now {
            self.win_stats.owd.record_transit(now - seg.ts);
        }
        self.received_pkts += 1;
        self.arrivals += 1;
        let ce_onset = seg.ce && !self.last.is_some_and(|(l, _)| l.ce);
        self.ce_pending |= seg.ce;
        self.last = Some((*seg, now));
        let seq = seg.seq;
        let urgent = seg.flags & (flags::ACK_NOW | flags::PAIR_FIRST | flags::PAIR_SECOND) != 0;
        let arrival = if seq < self.rcv_nxt {
            // Duplicate (spurious retransmission): ACK at once so the sender learns (RFC 5681 §4.2).
            self.note_duplicate(seq);
            Arrival::Duplicate { below: true }
        } else if seq == self.rcv_nxt {
            let had_holes = !self.ooo.is_empty();
            self.rcv_nxt += 1;
            self.delivered_bytes += seg.payload as u64;
            // Pull in a range that now continues the in-order data.
            if let Some(first) = self.ooo.front() {
                if first.start == self.rcv_nxt {
                    self.rcv_nxt = first.end;
                    self.delivered_bytes += first.bytes;
                    self.by_stamp.remove(&first.last_update);
                    self.ooo.pop_front();
                }
            }
            // Filling (part of) a hole must be ACKed at once (RFC 5681 §4.2).
            Arrival::InOrder { filled: had_holes }
        } else if self.insert_ooo(seq, seg.payload as u64) {
            Arrival::OutOfOrder // immediate duplicate ACK
        } else {
            self.note_duplicate(seq);
            Arrival::Duplicate { below: false }
        };
        if self.clock.on_data(now, arrival, urgent, ce_onset) {
            self.ack_ready = true;
        }
    }

    /// A packet received before: the next ACK reports it in a D-SACK block (RFC 2883). Several
    /// duplicates before one ACK (a driver that reads a batch and does not honour
    /// [`Receiver::must_ack_before_more`]) extend the block while they are adjacent; otherwise the
    /// newest is reported, as RFC 2883 §4 allows one D-SACK block per ACK.
    fn note_duplicate(&mut self, seq: u64) {
        if !self.dsack {
            return;
        }
        self.dsack_pending = Some(match self.dsack_pending {
            Some(b) if b.start <= seq && seq < b.end => b,
            Some(b) if b.end == seq => SackBlock {
                start: b.start,
                end: seq + 1,
            },
            Some(b) if b.start == seq + 1 => SackBlock {
                start: seq,
                end: b.end,
            },
            _ => SackBlock {
                start: seq,
                end: seq + 1,
            },
        });
    }

    /// Buffers out-of-order packet `seq`; false if it was buffered already (a duplicate).
    fn insert_ooo(&mut self, seq: u64, bytes: u64) -> bool {
        let stamp = self.arrivals;
        // Find the first range ending at or after seq.
        let i = self.ooo.partition_point(|r| r.end < seq);
        if i < self.ooo.len() && self.ooo[i].start <= seq && seq < self.ooo[i].end {
            // A duplicate of a buffered packet: its range becomes the newest, so that it follows the
            // D-SACK block as RFC 2883 §4 asks (the block that holds the duplicate comes next).
            Self::restamp(&mut self.by_stamp, &mut self.ooo[i], stamp);
            return false;
        }
        let joins_left = i < self.ooo.len() && self.ooo[i].end == seq;
        let right = if joins_left { i + 1 } else { i };
        let joins_right = right < self.ooo.len() && self.ooo[right].start == seq + 1;
        match (joins_left, joins_right) {
            (true, true) => {
                let r = self.ooo.remove(right).expect("index checked above");
                self.by_stamp.remove(&r.last_update);
                let l = &mut self.ooo[i];
                l.end = r.end;
                l.bytes += bytes + r.bytes;
                Self::restamp(&mut self.by_stamp, l, stamp);
            }
            (true, false) => {
                let l = &mut self.ooo[i];
                l.end = seq + 1;
                l.bytes += bytes;
                Self::restamp(&mut self.by_stamp, l, stamp);
            }
            (false, true) => {
                let r = &mut self.ooo[right];
                r.start = seq;
                r.bytes += bytes;
                Self::restamp(&mut self.by_stamp, r, stamp);
            }
            (false, false) => {
                self.ooo.insert(
                    right,
                    Range {
                        start: seq,
                        end: seq + 1,
                        bytes,
                        last_update: stamp,
                    },
                );
                self.by_stamp.insert(stamp, seq);
            }
        }
        true
    }

    /// Gives range `r` the newest stamp (its start may have changed: the index is rewritten).
    fn restamp(by_stamp: &mut BTreeMap<u64, u64>, r: &mut Range, stamp: u64) {
        by_stamp.remove(&r.last_update);
        r.last_update = stamp;
        by_stamp.insert(stamp, r.start);
    }

    /// Whether the ready ACK must go out before another arrival is folded into it: it already carries
    /// as many SACK ranges updated since the last ACK as one ACK can report. A driver that handles
    /// several arrivals before polling (the real datapath drains its socket first) would otherwise let
    /// a later out-of-order arrival push one of them out unreported; the sender, seeing packets SACKed
    /// above it, would then retransmit data that had arrived. At 1 Gbit/s that was a third of our
    /// retransmissions in slow start. A driver that polls after every arrival (the simulator) never
    /// needs this.
    /// A pending D-SACK block likewise goes out before another duplicate can take its place.
    pub fn must_ack_before_more(&self) -> bool {
        self.ack_ready
            && self.sack
            && (self.dsack_pending.is_some()
                || self
                    .by_stamp
                    .range(self.arrivals_at_ack + 1..)
                    .take(MAX_SACK_BLOCKS)
                    .count()
                    >= MAX_SACK_BLOCKS)
    }

    /// The ACK to send now, if any.
    ///
    /// The test inlined into the driver, the ACK built out of line: drivers call this until it says
    /// None, so every other call finds nothing to send, and that call should not pay for the frame of
    /// the function that builds an ACK.
    #[inline]
    pub fn poll_ack(&mut self, _now: Nanos) -> Option<AckSegment> {
        if !self.ack_ready {
            return None;
        }
        self.take_ack()
    }

    fn take_ack(&mut self) -> Option<AckSegment> {
        self.ack_ready = false;
        self.clock.on_ack_sent();
        self.arrivals_at_ack = self.arrivals;
        let (seg, rx_time) = self.last?;
        let mut ack = AckSegment {
            cum_ack: self.rcv_nxt,
            ts_echo: seg.ts,
            rx_time,
            acked_seq: seg.seq,
            acked_flags: seg.flags,
            acked_bytes: seg.payload,
            echo_field: seg.fwd_field,
            ece: self.ce_pending,
            ..Default::default()
        };
        self.ce_pending = false;
        if let Some(b) = self.dsack_pending.take() {
            ack.sack[0] = b;
            ack.n_sack = 1;
            ack.dsack = true;
        }
        if self.sack && !self.ooo.is_empty() {
            // RFC 2018: the block holding the most recent arrival first, then the most recently
            // updated others, so that repeated blocks survive ACK loss: the newest stamps, each range
            // found by its start (a scan of every range on every ACK dominated runs with thousands of
            // holes).
            let room = MAX_SACK_BLOCKS - ack.n_sack as usize;
            for (_, &start) in self.by_stamp.iter().rev().take(room) {
                let i = self.ooo.partition_point(|r| r.start < start);
                let r = &self.ooo[i];
                debug_assert_eq!(r.start, start);
                ack.sack[ack.n_sack as usize] = SackBlock {
                    start: r.start,
                    end: r.end,
                };
                ack.n_sack += 1;
            }
        }
        Some(ack)
    }

    /// The delayed-ACK deadline.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.clock.deadline()
    }

    pub fn handle_timeout(&mut self, now: Nanos) {
        if self.clock.on_timeout(now) {
            self.ack_ready = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(seq: u64) -> DataSegment {
        DataSegment {
            seq,
            payload: 1000,
            ts: seq.wrapping_mul(10),
            ..Default::default()
        }
    }

    #[test]
    fn in_order_every_packet_acked() {
        let mut r = Receiver::new(&Config {
            delayed_ack: 1,
            ..Config::default()
        });
        for s in 0..3 {
            r.handle_data(s, &seg(s));
            let a = r.poll_ack(s).unwrap();
            assert_eq!(a.cum_ack, s + 1);
            assert_eq!(a.ts_echo, s * 10);
        }
        assert_eq!(r.delivered_bytes(), 3000);
    }

    #[test]
    fn delayed_ack_every_second_packet_and_timer() {
        let mut r = Receiver::new(&Config {
            delayed_ack: 2,
            delack_timeout: 200,
            ..Config::default()
        });
        r.handle_data(0, &seg(0));
        assert!(r.poll_ack(0).is_none());
        assert_eq!(r.poll_timeout(), Some(200));
        r.handle_data(5, &seg(1));
        assert_eq!(r.poll_ack(5).unwrap().cum_ack, 2);
        assert_eq!(r.poll_timeout(), None);
        r.handle_data(10, &seg(2));
        assert!(r.poll_ack(10).is_none());
        r.handle_timeout(210);
        assert_eq!(r.poll_ack(210).unwrap().cum_ack, 3);
    }

    #[test]
    fn sack_blocks_are_the_most_recently_updated_ranges_among_many() {
        // Hundreds of holes in a random arrival order: the blocks must be exactly the MAX_SACK_BLOCKS
        // ranges with the newest arrivals, newest first (checked against a full sort).
        let mut r = Receiver::new(&Config::default());
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for k in 0..2000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let seq = 1 + x % 3000; // packet 0 never arrives: everything stays out of order
            r.handle_data(k, &seg(seq));
            let a = r.poll_ack(k).unwrap();
            let mut all: Vec<&Range> = r.ooo.iter().collect();
            all.sort_by_key(|q| std::cmp::Reverse(q.last_update));
            let want: Vec<SackBlock> = all
                .iter()
                .take(MAX_SACK_BLOCKS)
                .map(|g| SackBlock {
                    start: g.start,
                    end: g.end,
                })
                .collect();
            assert_eq!(
                &a.sack[..a.n_sack as usize],
                &want[..],
                "after {k} arrivals"
            );
            assert!(
                a.sack[0].start <= seq && seq < a.sack[0].end,
                "first block holds the newest arrival"
            );
        }
        assert!(r.ooo.len() > 100);
    }

    /// A driver that folds a batch of arrivals into one ACK (the real datapath) but sends the ready ACK
    /// whenever `must_ack_before_more` says so reports every out-of-order packet in some SACK block:
    /// here every other packet of a slow-start overshoot is lost, in batches of 8 arrivals. Without
    /// the check, 3 blocks per ACK for 8 new ranges per batch leave most packets unreported.
    #[test]
    fn batched_arrivals_report_every_range_when_must_ack_is_honoured() {
        for honour in [true, false] {
            let mut r = Receiver::new(&Config::default());
            let mut reported = std::collections::BTreeSet::new();
            let report = |a: AckSegment, reported: &mut std::collections::BTreeSet<u64>| {
                for b in &a.sack[..a.n_sack as usize] {
                    reported.extend(b.start..b.end);
                }
            };
            // Packet 0 is lost too: nothing is ever in order, every arrival is its own range.
            let arrivals: Vec<u64> = (1..400).filter(|s| s % 2 == 1).collect();
            for (k, batch) in arrivals.chunks(8).enumerate() {
                for &seq in batch {
                    r.handle_data(k as u64, &seg(seq));
                    if honour && r.must_ack_before_more() {
                        report(r.poll_ack(k as u64).unwrap(), &mut reported);
                    }
                }
                if let Some(a) = r.poll_ack(k as u64) {
                    report(a, &mut reported);
                }
            }
            let missing = arrivals.iter().filter(|s| !reported.contains(s)).count();
            if honour {
                assert_eq!(missing, 0);
            } else {
                assert!(
                    missing > arrivals.len() / 2,
                    "{missing} of {}",
                    arrivals.len()
                );
            }
        }
    }

    #[test]
    fn must_ack_before_more_counts_ranges_updated_since_the_last_ack() {
        let mut r = Receiver::new(&Config::default());
        for s in [2, 4, 5] {
            r.handle_data(s, &seg(s));
            assert!(!r.must_ack_before_more(), "2 ranges: room for one more");
        }
        r.handle_data(7, &seg(7));
        assert!(r.must_ack_before_more(), "3 new ranges: one ACK's worth");
        r.poll_ack(7).unwrap();
        assert!(!r.must_ack_before_more());
        // Extending one range already reported is news about one range only.
        r.handle_data(8, &seg(8));
        assert!(!r.must_ack_before_more());
        let mut plain = Receiver::new(&Config {
            sack: false,
            ..Config::default()
        });
        for s in [2, 4, 6, 8] {
            plain.handle_data(s, &seg(s));
        }
        assert!(!plain.must_ack_before_more(), "no SACK, nothing to lose");
    }

    fn dsack_receiver() -> Receiver {
        Receiver::new(&Config {
            dsack: true,
            ..Config::default()
        })
    }

    #[test]
    fn dsack_reports_a_duplicate_below_the_cumulative_point_once() {
        let mut r = dsack_receiver();
        for s in 0..4 {
            r.handle_data(s, &seg(s));
            r.poll_ack(s).unwrap();
        }
        r.handle_data(10, &seg(1));
        let a = r.poll_ack(10).expect("a duplicate is ACKed at once");
        assert!(a.dsack);
        assert_eq!(
            (a.cum_ack, a.sack_blocks()),
            (4, &[SackBlock { start: 1, end: 2 }][..])
        );
        r.handle_data(11, &seg(4));
        let a = r.poll_ack(11).unwrap();
        assert!(!a.dsack && a.n_sack == 0, "reported in one ACK only");
        // Off by default, and off without SACK: the duplicate's ACK is the plain one.
        for cfg in [
            Config::default(),
            Config {
                dsack: true,
                sack: false,
                ..Config::default()
            },
        ] {
            let mut r = Receiver::new(&cfg);
            r.handle_data(0, &seg(0));
            r.poll_ack(0);
            r.handle_data(1, &seg(0));
            let a = r.poll_ack(1).unwrap();
            assert!(!a.dsack && a.n_sack == 0);
        }
    }

    #[test]
    fn dsack_inside_an_out_of_order_range_is_followed_by_its_range() {
        let mut r = dsack_receiver();
        r.handle_data(0, &seg(0));
        r.poll_ack(0);
        for s in [2, 3, 4, 6, 7, 9] {
            r.handle_data(s, &seg(s));
            r.poll_ack(s).unwrap();
        }
        r.handle_data(10, &seg(3));
        let a = r.poll_ack(10).unwrap();
        assert!(a.dsack);
        assert_eq!(a.cum_ack, 1);
        // RFC 2883 §4: the D-SACK block, then the block holding it, then the most recent other one;
        // three in all, so the oldest range (6..8) is left out of this ACK.
        assert_eq!(
            a.sack_blocks(),
            &[
                SackBlock { start: 3, end: 4 },
                SackBlock { start: 2, end: 5 },
                SackBlock { start: 9, end: 10 },
            ]
        );
        assert_eq!(r.received_pkts(), 8);
        assert_eq!(r.delivered_bytes(), 1000, "a duplicate delivers nothing");
    }

    #[test]
    fn dsack_must_go_out_before_the_next_arrival_in_a_batch() {
        let mut r = dsack_receiver();
        for s in 0..3 {
            r.handle_data(s, &seg(s));
        }
        r.poll_ack(3).unwrap();
        r.handle_data(4, &seg(0));
        assert!(
            r.must_ack_before_more(),
            "a second duplicate would overwrite it"
        );
        // Adjacent duplicates folded into one ACK anyway extend one block.
        r.handle_data(4, &seg(1));
        let a = r.poll_ack(4).unwrap();
        assert_eq!(a.sack_blocks(), &[SackBlock { start: 0, end: 2 }]);
        assert!(!r.must_ack_before_more());
    }

    fn linux_receiver() -> Receiver {
        Receiver::new(&Config {
            receiver: crate::config::ReceiverProfile::Linux,
            ..Config::default()
        })
    }

    #[test]
    fn linux_receiver_quick_acks_then_acks_every_second_segment() {
        let mut r = linux_receiver();
        let mut acks = Vec::new();
        for s in 0..30 {
            r.handle_data(s, &seg(s));
            if let Some(a) = r.poll_ack(s) {
                acks.push(a.cum_ack);
            }
        }
        // 16 quick ACKs (one per segment), then one per two segments.
        let want: Vec<u64> = (1..=16).chain((18..=30).step_by(2)).collect();
        assert_eq!(acks, want);
    }

    #[test]
    fn linux_receiver_acks_out_of_order_data_and_the_filled_hole_at_once() {
        let mut r = linux_receiver();
        for s in 0..20 {
            r.handle_data(s, &seg(s));
            r.poll_ack(s);
        }
        assert_eq!(r.rcv_nxt(), 20);
        r.handle_data(20, &seg(20));
        assert!(r.poll_ack(20).is_none(), "odd in-order segment waits");
        r.handle_data(21, &seg(22));
        let a = r.poll_ack(21).expect("out of order: at once");
        assert_eq!(
            (a.cum_ack, a.sack_blocks()),
            (21, &[SackBlock { start: 22, end: 23 }][..])
        );
        r.handle_data(22, &seg(21));
        let a = r.poll_ack(22).expect("the hole filled: at once");
        assert_eq!((a.cum_ack, a.n_sack), (23, 0));
    }

    #[test]
    fn linux_receiver_delayed_ack_timer_fires_after_40ms() {
        let mut r = linux_receiver();
        let ms = 1_000_000;
        for s in 0..17 {
            r.handle_data(s * ms, &seg(s));
            r.poll_ack(s * ms);
        }
        assert!(
            r.poll_ack(16 * ms).is_none(),
            "the 17th segment waits for a second"
        );
        assert_eq!(r.poll_timeout(), Some(56 * ms));
        r.handle_timeout(56 * ms - 1);
        assert!(r.poll_ack(56 * ms - 1).is_none());
        r.handle_timeout(56 * ms);
        assert_eq!(r.poll_ack(56 * ms).unwrap().cum_ack, 17);
    }

    #[test]
    fn sack_blocks_most_recent_first_and_hole_fill() {
        let mut r = Receiver::new(&Config::default());
        r.handle_data(0, &seg(0));
        r.poll_ack(0);
        for s in [2, 3, 6, 7, 5] {
            r.handle_data(s, &seg(s));
        }
        let a = r.poll_ack(1).unwrap();
        assert_eq!(a.cum_ack, 1);
        assert_eq!(a.n_sack, 2);
        assert_eq!(a.sack[0], SackBlock { start: 5, end: 8 });
        assert_eq!(a.sack[1], SackBlock { start: 2, end: 4 });
        r.handle_data(2, &seg(1));
        let a = r.poll_ack(2).unwrap();
        assert_eq!((a.cum_ack, a.n_sack), (4, 1));
        r.handle_data(3, &seg(4));
        let a = r.poll_ack(3).unwrap();
        assert_eq!((a.cum_ack, a.n_sack), (8, 0));
        assert_eq!(r.delivered_bytes(), 8000);
    }

    #[test]
    fn data_outside_the_window_or_oversized_changes_nothing() {
        let mut r = Receiver::new(&Config {
            max_window: 8,
            mss: 1000,
            ..Config::default()
        });
        r.handle_data(0, &seg(0));
        r.poll_ack(0);
        for (s, payload) in [
            (u64::MAX, 1000),
            (u64::MAX - 1, 1000),
            (9, 1000),
            (1 << 40, 1),
            (3, 1001),
        ] {
            r.handle_data(1, &DataSegment { payload, ..seg(s) });
            assert!(r.poll_ack(1).is_none(), "seq {s} payload {payload}");
            assert_eq!(r.poll_timeout(), None);
        }
        assert_eq!(
            r.rejected(),
            RejectedData {
                beyond_window: 4,
                oversized: 1,
                unverified: 0,
            }
        );
        assert_eq!(
            (r.rejected_pkts(), r.received_pkts(), r.rcv_nxt()),
            (5, 1, 1)
        );
        assert!(r.ooo.is_empty());
        // The last packet of the window is taken: rcv_nxt + window − 1.
        r.handle_data(2, &seg(8));
        let a = r.poll_ack(2).unwrap();
        assert_eq!(a.sack_blocks(), &[SackBlock { start: 8, end: 9 }]);
        assert_eq!(r.rejected_pkts(), 5);
    }

    #[test]
    fn the_window_saturates_at_the_top_of_the_sequence_space() {
        let mut r = Receiver::new(&Config::default());
        r.rcv_nxt = u64::MAX - 3;
        r.handle_data(0, &seg(u64::MAX));
        assert_eq!(r.rejected().beyond_window, 1, "u64::MAX has no seq + 1");
        r.handle_data(0, &seg(u64::MAX - 1));
        let a = r.poll_ack(0).unwrap();
        assert_eq!(
            a.sack_blocks(),
            &[SackBlock {
                start: u64::MAX - 1,
                end: u64::MAX
            }]
        );
    }
}
