//! The receiving endpoint: reassembly, cumulative ACK + SACK blocks (RFC 2018), delayed ACKs
//! (RFC 1122 / RFC 5681 §4.2), timestamp echo and the per-packet echo fields the sender's algorithms use
//! (receiver timestamp for packet-pair dispersion, the MaxNet forward field copied back, ECN-Echo).
//!
//! Trusts no sequence number: a data segment at or beyond `rcv_nxt + max_window` (the window the
//! sender honours, so an honest sender never goes there; the top of the sequence space included) or
//! with a payload over the MSS is counted in [`Receiver::rejected`] and dropped without touching any
//! state, so buffered ranges and the SACK blocks built from them always lie inside
//! `(rcv_nxt, rcv_nxt + max_window]` and no `seq + 1` can overflow. With a data key
//! ([`Config::data_key`], the real datapath) a segment whose tag does not verify ([`crate::auth`]) is
//! refused the same way, so forged data inside the window moves nothing either: no delivered byte, no
//! buffered range, no ACK, no one-way-delay sample, no CE. Without one (the simulator) in-window data is
//! taken as it comes. docs/real-datapath.md, "What a hostile packet can and cannot do".

use std::collections::{BTreeMap, VecDeque};

use crate::config::Config;
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
    delayed_ack: u32,
    delack_timeout: Nanos,
    sack: bool,
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
    /// In-order packets received since the last ACK.
    unacked: u32,
    delack_deadline: Option<Nanos>,
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
            delayed_ack: cfg.delayed_ack.max(1),
            delack_timeout: cfg.delack_timeout,
            sack: cfg.sack,
            rcv_nxt: 0,
            delivered_bytes: 0,
            received_pkts: 0,
            ooo: VecDeque::new(),
            by_stamp: BTreeMap::new(),
            arrivals: 0,
            arrivals_at_ack: 0,
            unacked: 0,
            delack_deadline: None,
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
        self.ce_pending |= seg.ce;
        self.last = Some((*seg, now));
        let seq = seg.seq;
        let mut immediate =
            seg.flags & (flags::ACK_NOW | flags::PAIR_FIRST | flags::PAIR_SECOND) != 0;
        if seq < self.rcv_nxt {
            // Duplicate (spurious retransmission): ACK at once so the sender learns (RFC 5681 §4.2).
            immediate = true;
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
            immediate |= had_holes;
            self.unacked += 1;
        } else {
            self.insert_ooo(seq, seg.payload as u64);
            immediate = true; // out-of-order arrival: immediate duplicate ACK
        }
        if immediate || self.unacked >= self.delayed_ack {
            self.ack_ready = true;
            self.delack_deadline = None;
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + self.delack_timeout);
        }
    }

    fn insert_ooo(&mut self, seq: u64, bytes: u64) {
        let stamp = self.arrivals;
        // Find the first range ending at or after seq.
        let i = self.ooo.partition_point(|r| r.end < seq);
        if i < self.ooo.len() && self.ooo[i].start <= seq && seq < self.ooo[i].end {
            // duplicate of a buffered packet
            Self::restamp(&mut self.by_stamp, &mut self.ooo[i], stamp);
            return;
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
    pub fn must_ack_before_more(&self) -> bool {
        self.ack_ready
            && self.sack
            && self
                .by_stamp
                .range(self.arrivals_at_ack + 1..)
                .take(MAX_SACK_BLOCKS)
                .count()
                >= MAX_SACK_BLOCKS
    }

    /// The ACK to send now, if any.
    pub fn poll_ack(&mut self, _now: Nanos) -> Option<AckSegment> {
        if !self.ack_ready {
            return None;
        }
        self.ack_ready = false;
        self.unacked = 0;
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
        if self.sack && !self.ooo.is_empty() {
            // RFC 2018: the block holding the most recent arrival first, then the most recently
            // updated others, so that repeated blocks survive ACK loss: the newest stamps, each range
            // found by its start (a scan of every range on every ACK dominated runs with thousands of
            // holes).
            for (_, &start) in self.by_stamp.iter().rev().take(MAX_SACK_BLOCKS) {
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
        self.delack_deadline
    }

    pub fn handle_timeout(&mut self, now: Nanos) {
        if let Some(d) = self.delack_deadline {
            if now >= d {
                self.delack_deadline = None;
                if self.unacked > 0 {
                    self.ack_ready = true;
                }
            }
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
