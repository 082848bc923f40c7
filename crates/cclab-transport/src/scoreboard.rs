//! The SACK scoreboard: what the sender knows of each packet in `[snd_una, snd_nxt)`.
//!
//! * One byte of flags per outstanding packet in a ring indexed by `seq − snd_una`, plus counters so that
//!   the pipe estimate (RFC 6675 §4) is O(1): `pipe = outstanding − sacked − lost + retransmitted_lost`.
//! * SACK loss marking (RFC 6675 IsLost with DupThresh): every un-SACKed packet below the DupThresh-th
//!   highest SACKed packet is lost. The boundary only moves up, so marking is amortised O(1) per packet.
//! * SACK blocks are merged into a small list of known ranges, so a block repeated on every ACK costs
//!   nothing after its first appearance.
//! * Reordering evidence for RACK (`crates/cclab-transport/src/rack.rs`): a packet never retransmitted
//!   that is delivered (SACKed or cumulatively acknowledged) below the highest packet SACKed before the
//!   ACK was reordered, not lost (Linux's `tcp_check_sack_reordering`); so was a retransmitted packet
//!   already SACKed whose retransmission comes back D-SACKed. Each ACK's lowest such packet is kept for
//!   [`Scoreboard::take_reordering`].

use crate::segment::SackBlock;
use std::collections::VecDeque;

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// Retransmitted after being marked lost, and not yet SACKed (its retransmission is in the pipe).
const RETX: u8 = 4;
/// Retransmitted at least once (Linux's `TCPCB_EVER_RETRANS`): its delivery may be the retransmission's,
/// so it is no evidence of reordering. Kept through SACK and loss marks.
const EVER: u8 = 8;
/// Packets of a D-SACK block examined for reordering evidence ([`Scoreboard::on_dsack`]).
const DSACK_SCAN: u64 = 64;

#[derive(Clone, Debug)]
pub(crate) struct Scoreboard {
    snd_una: u64,
    snd_nxt: u64,
    /// Per-packet flags for [snd_una, snd_nxt).
    flags: VecDeque<u8>,
    n_sacked: u64,
    n_lost: u64,
    n_retx: u64,
    /// Packets marked lost since the start, each time one is (a lost retransmission counts again):
    /// Linux's `tp->lost`, for the delivery-rate samples.
    marked_lost: u64,
    /// All un-SACKed packets below this are marked lost.
    loss_boundary: u64,
    /// Lowest packet that may still need a retransmission.
    retx_cursor: u64,
    highest_sacked: u64,
    /// Known SACKed ranges above snd_una (merged, sorted).
    known: Vec<SackBlock>,
    /// First-transmission times of [snd_una, snd_nxt), kept only for RACK on original transmissions
    /// (`[transport] tlp`; empty otherwise), and the packet below which RACK has decided.
    sent_at: Option<VecDeque<u64>>,
    rack_cursor: u64,
    /// One above the highest packet ever SACKed (Linux's forward-most SACKed sequence), and its value
    /// when the ACK being processed arrived.
    fack: u64,
    prior_fack: u64,
    /// The lowest packet this ACK showed reordered (`u64::MAX`: none); whether it cumulatively
    /// acknowledged a packet never retransmitted, and the lowest such packet it SACKed (F-RTO's test).
    reord_low: u64,
    orig_cum: bool,
    orig_sacked_low: u64,
}

impl Scoreboard {
    pub(crate) fn new() -> Scoreboard {
        Scoreboard {
            snd_una: 0,
            snd_nxt: 0,
            flags: VecDeque::with_capacity(64),
            n_sacked: 0,
            n_lost: 0,
            n_retx: 0,
            marked_lost: 0,
            loss_boundary: 0,
            retx_cursor: 0,
            highest_sacked: 0,
            known: Vec::new(),
            sent_at: None,
            rack_cursor: 0,
            fack: 0,
            prior_fack: 0,
            reord_low: u64::MAX,
            orig_cum: false,
            orig_sacked_low: u64::MAX,
        }
    }

    /// Keep each packet's first-transmission time, for [`Scoreboard::rack_mark_lost`].
    pub(crate) fn with_send_times(mut self) -> Scoreboard {
        self.sent_at = Some(VecDeque::with_capacity(64));
        self
    }

    /// RACK (RFC 8985 §6.2) for original transmissions: a packet neither SACKed nor already lost, sent at
    /// least `reo_wnd` before a transmission that has been delivered (sent at `delivered_ts`), is lost.
    /// New packets leave in sequence order, so the packets decided form a prefix and the scan resumes
    /// where it stopped (amortised O(1)). Resent packets are RACK's retransmission rule's business
    /// (`recovery`). Returns packets newly marked lost.
    pub(crate) fn rack_mark_lost(&mut self, delivered_ts: u64, reo_wnd: u64) -> u64 {
        // Every packet sent early enough ends the scan's doubt, decided or not: stop at the first one
        // sent too late.
        self.rack_scan(|sent, _| sent.saturating_add(reo_wnd) > delivered_ts)
    }

    /// The scan both RACK rules share: from where the last scan stopped, marks lost every packet neither
    /// SACKed nor lost, until `stop(send time, decided)` holds; records where it stopped and counts.
    #[inline]
    fn rack_scan(&mut self, stop: impl Fn(u64, bool) -> bool) -> u64 {
        let Some(sent) = &self.sent_at else {
            return 0;
        };
        let mut seq = self.rack_cursor.max(self.snd_una);
        let mut newly = 0;
        while seq < self.snd_nxt {
            let i = (seq - self.snd_una) as usize;
            let f = &mut self.flags[i];
            let decided = *f & (SACKED | LOST) != 0;
            if stop(sent[i], decided) {
                break;
            }
            if !decided {
                *f |= LOST;
                newly += 1;
                self.retx_cursor = self.retx_cursor.min(seq);
            }
            seq += 1;
        }
        self.rack_cursor = seq;
        self.n_lost += newly;
        self.marked_lost += newly;
        newly
    }

    /// RACK (RFC 8985 §6.2) for original transmissions, with its reordering timer: a packet neither
    /// SACKed nor already lost that left before the most recently sent delivered transmission
    /// (`rack_ts`) and at or before `bound` (now − RACK.rtt − reo_wnd) is lost. Packets decided (SACKed
    /// or lost) are stepped over, so the scan stops at the first packet still in doubt, whose send time
    /// [`Scoreboard::rack_pending`] gives for the timer. Returns packets newly marked lost.
    pub(crate) fn rack_mark_lost_at(&mut self, rack_ts: u64, bound: u64) -> u64 {
        // Decided packets are stepped over whatever their send time.
        self.rack_scan(|sent, decided| !decided && (sent >= rack_ts || sent > bound))
    }

    /// The send time of the first packet RACK has not decided, if it left before `rack_ts` (so that the
    /// reordering timer must decide it).
    pub(crate) fn rack_pending(&self, rack_ts: u64) -> Option<u64> {
        let sent = self.sent_at.as_ref()?;
        let seq = self.rack_cursor.max(self.snd_una);
        if seq >= self.snd_nxt {
            return None;
        }
        let t = sent[(seq - self.snd_una) as usize];
        (t < rack_ts).then_some(t)
    }

    /// Starts an ACK's reordering bookkeeping (module doc).
    pub(crate) fn begin_ack(&mut self) {
        self.prior_fack = self.fack.max(self.snd_una);
        self.reord_low = u64::MAX;
        self.orig_cum = false;
        self.orig_sacked_low = u64::MAX;
    }

    /// A packet is delivered by this ACK (newly SACKed, or cumulatively acknowledged and not SACKed).
    #[inline]
    fn note_delivered(&mut self, seq: u64, f: u8, sacked: bool) {
        if f & EVER == 0 {
            if sacked {
                self.orig_sacked_low = self.orig_sacked_low.min(seq);
            } else {
                self.orig_cum = true;
            }
            if seq < self.prior_fack {
                self.reord_low = self.reord_low.min(seq);
            }
        }
    }

    /// How far this ACK showed the path reordering a packet (the highest SACKed before it − the lowest
    /// packet found reordered), if it did.
    pub(crate) fn take_reordering(&mut self) -> Option<u64> {
        let low = std::mem::replace(&mut self.reord_low, u64::MAX);
        (low < self.prior_fack).then(|| self.prior_fack - low)
    }

    /// This ACK cumulatively acknowledged a packet never retransmitted, or SACKed one below `below`
    /// (Linux's `FLAG_ORIG_SACK_ACKED` with `high_seq`).
    pub(crate) fn orig_delivered(&self, below: u64) -> bool {
        self.orig_cum || self.orig_sacked_low < below
    }

    /// Retransmissions in the pipe (resent, neither SACKed nor found lost).
    pub(crate) fn retx_out(&self) -> u64 {
        self.n_retx
    }

    /// One above the highest packet SACKed (snd_una if none above it).
    pub(crate) fn fack(&self) -> u64 {
        self.fack.max(self.snd_una)
    }

    /// A D-SACK reports `[start, end)` received twice: a packet there that is SACKed and was resent
    /// had its original delivered, so it was reordered, not lost (Linux's rule in `tcp_sacktag_one`).
    /// An honest receiver's block is one duplicate, or a few adjacent ones; only the first
    /// [`DSACK_SCAN`] packets of a block are looked at, so a forged wide block costs no more.
    pub(crate) fn on_dsack(&mut self, start: u64, end: u64) {
        let s = start.max(self.snd_una);
        let e = end.min(self.snd_nxt).min(s.saturating_add(DSACK_SCAN));
        for seq in s..e {
            let f = self.flags[(seq - self.snd_una) as usize];
            if f & (SACKED | EVER) == SACKED | EVER && seq < self.prior_fack {
                self.reord_low = self.reord_low.min(seq);
            }
        }
    }

    pub(crate) fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub(crate) fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }
    /// Sent and not cumulatively acknowledged (RFC 5681 FlightSize).
    pub(crate) fn outstanding(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }
    pub(crate) fn sacked(&self) -> u64 {
        self.n_sacked
    }
    #[cfg(test)]
    pub(crate) fn lost(&self) -> u64 {
        self.n_lost
    }
    pub(crate) fn marked_lost(&self) -> u64 {
        self.marked_lost
    }
    pub(crate) fn highest_sacked(&self) -> u64 {
        self.highest_sacked
    }
    /// Some packet marked lost has not been resent yet.
    pub(crate) fn retx_pending(&self) -> bool {
        self.n_lost > self.n_retx
    }

    /// RFC 6675 §4 pipe: packets still in the network.
    pub(crate) fn pipe(&self) -> u64 {
        self.outstanding() + self.n_retx - self.n_sacked - self.n_lost
    }

    /// A new packet (`snd_nxt`) left at `ts`.
    pub(crate) fn on_send_new(&mut self, ts: u64) {
        self.flags.push_back(0);
        if let Some(s) = &mut self.sent_at {
            s.push_back(ts);
        }
        self.snd_nxt += 1;
    }

    /// `seq`, returned by [`Scoreboard::next_retx`], left again.
    pub(crate) fn on_retransmit(&mut self, seq: u64) {
        self.flags[(seq - self.snd_una) as usize] |= RETX | EVER;
        self.n_retx += 1;
        self.retx_cursor = seq + 1;
    }

    /// `seq` was resent and that retransmission is neither SACKed nor found lost yet.
    pub(crate) fn retx_in_flight(&self, seq: u64) -> bool {
        seq >= self.snd_una && self.flags[(seq - self.snd_una) as usize] & (RETX | SACKED) == RETX
    }

    /// The next packet needing retransmission, if any (lost, not yet resent, not SACKed).
    pub(crate) fn next_retx(&mut self) -> Option<u64> {
        if self.n_lost == self.n_retx {
            return None;
        }
        let mut s = self.retx_cursor.max(self.snd_una);
        while s < self.snd_nxt {
            let f = self.flags[(s - self.snd_una) as usize];
            if f & LOST != 0 && f & (SACKED | RETX) == 0 {
                self.retx_cursor = s;
                return Some(s);
            }
            s += 1;
        }
        self.retx_cursor = s;
        None
    }

    /// Moves snd_una up to `cum` (snd_una < cum ≤ snd_nxt); returns the packets it delivered that
    /// were not already SACKed.
    pub(crate) fn advance(&mut self, cum: u64) -> u64 {
        let mut newly = 0;
        if let Some(s) = &mut self.sent_at {
            s.drain(..(cum - self.snd_una) as usize);
        }
        for seq in self.snd_una..cum {
            let f = self.flags.pop_front().unwrap_or(0);
            if f & SACKED != 0 {
                self.n_sacked -= 1;
            } else {
                self.note_delivered(seq, f, false);
                newly += 1;
                if f & LOST != 0 {
                    self.n_lost -= 1;
                }
                if f & RETX != 0 {
                    self.n_retx -= 1;
                }
            }
        }
        self.snd_una = cum;
        self.loss_boundary = self.loss_boundary.max(cum);
        self.retx_cursor = self.retx_cursor.max(cum);
        let k = self.known.partition_point(|b| b.end <= cum);
        self.known.drain(..k);
        if let Some(b) = self.known.first_mut() {
            b.start = b.start.max(cum);
        }
        newly
    }

    /// The packet at snd_una is marked SACKed: impossible with an honest receiver (its cumulative ACK
    /// always names a packet it lacks, and SACK blocks never cover the sender's snd_una, see
    /// `Sender::sack_block_ok`), so a forged SACK or a reneging receiver put it there. RFC 2018 §8: the
    /// left edge is resent whatever its SACKed bit says; it is unmarked and marked lost. Returns whether
    /// it was.
    pub(crate) fn unsack_head(&mut self) -> bool {
        let una = self.snd_una;
        let Some(f) = self.flags.front_mut() else {
            return false;
        };
        if *f & SACKED == 0 {
            return false;
        }
        *f = LOST | (*f & EVER);
        self.n_sacked -= 1;
        self.n_lost += 1;
        self.retx_cursor = self.retx_cursor.min(una);
        if let Some(b) = self.known.first_mut() {
            if b.start <= una {
                b.start = una + 1;
                if b.start >= b.end {
                    self.known.remove(0);
                }
            }
        }
        true
    }

    /// Marks `[start, end)` (clipped to the outstanding range) SACKed; returns packets newly SACKed.
    fn mark_sacked(&mut self, start: u64, end: u64) -> u64 {
        let (s, e) = (start.max(self.snd_una), end.min(self.snd_nxt));
        let mut n = 0;
        for seq in s..e {
            let i = (seq - self.snd_una) as usize;
            let f = self.flags[i];
            if f & SACKED == 0 {
                if f & LOST != 0 {
                    self.n_lost -= 1;
                }
                if f & RETX != 0 {
                    self.n_retx -= 1;
                }
                self.flags[i] = SACKED | (f & EVER);
                self.note_delivered(seq, f, true);
                n += 1;
            }
        }
        self.n_sacked += n;
        if e > s {
            self.highest_sacked = self.highest_sacked.max(e - 1);
            self.fack = self.fack.max(e);
        }
        n
    }

    /// Processes a SACK block against the known ranges: only never-seen parts touch the flags.
    /// Returns packets newly SACKed.
    pub(crate) fn apply_sack_block(&mut self, b: SackBlock) -> u64 {
        let (mut s, e) = (b.start.max(self.snd_una), b.end.min(self.snd_nxt));
        if s >= e {
            return 0;
        }
        let mut n = 0;
        // Walk the known ranges overlapping [s, e) and mark the gaps between them.
        let mut i = self.known.partition_point(|k| k.end < s);
        while s < e {
            if i < self.known.len() && self.known[i].start <= s {
                s = s.max(self.known[i].end);
                i += 1;
                continue;
            }
            let gap_end = if i < self.known.len() {
                self.known[i].start.min(e)
            } else {
                e
            };
            n += self.mark_sacked(s, gap_end);
            s = gap_end;
        }
        // Merge [b.start, b.end) into the known ranges.
        let (bs, be) = (b.start.max(self.snd_una), e);
        let lo = self.known.partition_point(|k| k.end < bs);
        let hi = self.known.partition_point(|k| k.start <= be);
        let mut merged = SackBlock { start: bs, end: be };
        if lo < hi {
            merged.start = merged.start.min(self.known[lo].start);
            merged.end = merged.end.max(self.known[hi - 1].end);
        }
        self.known.splice(lo..hi, std::iter::once(merged));
        n
    }

    /// RFC 6675 IsLost: every un-SACKed packet below the DupThresh-th highest SACKed packet is lost.
    /// Returns packets newly marked lost.
    pub(crate) fn update_loss_marks(&mut self, dupthresh: u32) -> u64 {
        if self.n_sacked == 0 {
            return 0;
        }
        let need = dupthresh.max(1) as u64;
        let mut count = 0;
        let mut seq = self.highest_sacked + 1;
        let mut bound = self.loss_boundary;
        while seq > self.snd_una.max(self.loss_boundary) {
            seq -= 1;
            if self.flags[(seq - self.snd_una) as usize] & SACKED != 0 {
                count += 1;
                if count >= need {
                    bound = seq;
                    break;
                }
            }
        }
        let mut newly = 0;
        if bound > self.loss_boundary {
            for s in self.loss_boundary.max(self.snd_una)..bound {
                let f = &mut self.flags[(s - self.snd_una) as usize];
                if *f & (SACKED | LOST) == 0 {
                    *f |= LOST;
                    newly += 1;
                }
            }
            self.n_lost += newly;
            self.marked_lost += newly;
            self.loss_boundary = bound;
        }
        newly
    }

    /// Marks one outstanding packet lost so that it is resent; a packet already resent is resent again
    /// (its retransmission is taken as lost).
    pub(crate) fn mark_lost(&mut self, seq: u64) {
        if seq < self.snd_una || seq >= self.snd_nxt {
            return;
        }
        let f = &mut self.flags[(seq - self.snd_una) as usize];
        if *f & (SACKED | LOST) == 0 {
            *f |= LOST;
            self.n_lost += 1;
            self.marked_lost += 1;
        } else if *f & RETX != 0 {
            // NewReno partial ACK: the retransmission itself may be lost; resend it.
            *f &= !RETX;
            self.n_retx -= 1;
            self.marked_lost += 1;
        }
        self.retx_cursor = self.retx_cursor.min(seq);
    }

    /// A spurious RTO (or fast recovery) is undone: packets marked lost and that have not been resent
    /// since are no longer lost (they arrived, or will: their ACKs were only late), and SACK and RACK
    /// loss marking start over from snd_una. Packets already resent stay resent (their retransmissions
    /// are in the pipe).
    pub(crate) fn undo_rto_marks(&mut self) {
        for f in self.flags.iter_mut() {
            if *f & !EVER == LOST {
                *f &= EVER;
                self.n_lost -= 1;
            }
        }
        self.loss_boundary = self.snd_una;
        self.retx_cursor = self.snd_una;
        self.rack_cursor = self.snd_una;
    }

    /// RTO: every un-SACKed outstanding packet is lost; earlier retransmissions are forgotten.
    pub(crate) fn mark_all_lost(&mut self) {
        // What was in the pipe is what this RTO declares lost.
        self.marked_lost += self.pipe();
        for f in self.flags.iter_mut() {
            if *f & SACKED == 0 {
                *f = LOST | (*f & EVER);
            }
        }
        self.n_lost = self.outstanding() - self.n_sacked;
        self.n_retx = 0;
        self.loss_boundary = self.snd_nxt;
        self.retx_cursor = self.snd_una;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(sent: u64) -> Scoreboard {
        let mut b = Scoreboard::new();
        for _ in 0..sent {
            b.on_send_new(0);
        }
        b
    }

    #[test]
    fn repeated_sack_block_counts_once() {
        let mut b = board(10);
        assert_eq!(b.apply_sack_block(SackBlock { start: 2, end: 5 }), 3);
        assert_eq!(b.apply_sack_block(SackBlock { start: 2, end: 5 }), 0);
        assert_eq!(b.apply_sack_block(SackBlock { start: 1, end: 7 }), 3);
        assert_eq!((b.sacked(), b.highest_sacked()), (6, 6));
        assert_eq!(b.known, vec![SackBlock { start: 1, end: 7 }]);
    }

    #[test]
    fn is_lost_below_dupthresh_sacked_then_retransmit() {
        let mut b = board(10);
        b.apply_sack_block(SackBlock { start: 2, end: 4 });
        assert_eq!(
            b.update_loss_marks(3),
            0,
            "two SACKed packets above are not enough"
        );
        b.apply_sack_block(SackBlock { start: 2, end: 5 });
        assert_eq!(b.update_loss_marks(3), 2, "packets 0 and 1");
        assert_eq!(b.pipe(), 10 - 3 - 2);
        assert_eq!(b.next_retx(), Some(0));
        b.on_retransmit(0);
        assert_eq!(b.pipe(), 10 - 3 - 2 + 1);
        assert!(b.retx_in_flight(0));
        assert_eq!(b.next_retx(), Some(1));
    }

    #[test]
    fn cumulative_ack_delivers_only_unsacked_packets() {
        let mut b = board(6);
        b.apply_sack_block(SackBlock { start: 1, end: 3 });
        assert_eq!(b.advance(4), 2, "packets 0 and 3; 1 and 2 were SACKed");
        assert_eq!((b.sacked(), b.outstanding(), b.pipe()), (0, 2, 2));
        assert!(b.known.is_empty());
    }

    /// Linux's reordering metric: a packet never resent, delivered below the highest SACKed one, was
    /// reordered by the distance between them; a resent one proves nothing (its retransmission may be
    /// what arrived), unless a D-SACK shows both copies arrived.
    #[test]
    fn reordering_is_measured_from_the_highest_sack() {
        let mut b = board(10);
        b.begin_ack();
        b.apply_sack_block(SackBlock { start: 2, end: 6 });
        assert_eq!(b.take_reordering(), None, "nothing SACKed before this ACK");
        b.begin_ack();
        b.apply_sack_block(SackBlock { start: 1, end: 6 });
        assert_eq!(b.take_reordering(), Some(6 - 1), "1 arrived after 5");
        b.mark_lost(0);
        assert_eq!(b.next_retx(), Some(0));
        b.on_retransmit(0);
        b.begin_ack();
        assert_eq!(b.advance(6), 1);
        assert_eq!(b.take_reordering(), None, "0 was resent");
        assert!(!b.orig_delivered(u64::MAX));
        let mut b = board(10);
        b.apply_sack_block(SackBlock { start: 3, end: 5 });
        b.update_loss_marks(1);
        b.next_retx();
        b.on_retransmit(2);
        b.begin_ack();
        b.apply_sack_block(SackBlock { start: 2, end: 5 });
        assert_eq!(b.take_reordering(), None);
        b.begin_ack();
        b.on_dsack(2, 3);
        assert_eq!(b.take_reordering(), Some(5 - 2), "both copies of 2 arrived");
    }

    /// RACK on original transmissions: lost once sent before the newest delivered transmission and
    /// at or before the bound (now − RACK.rtt − reo_wnd); SACKed packets are stepped over, and the first
    /// undecided packet is what the reordering timer waits for.
    #[test]
    fn rack_marks_by_send_time_and_leaves_the_rest_to_its_timer() {
        let mut b = Scoreboard::new().with_send_times();
        for t in 0..6 {
            b.on_send_new(100 + 10 * t);
        }
        b.apply_sack_block(SackBlock { start: 1, end: 2 });
        b.apply_sack_block(SackBlock { start: 4, end: 5 });
        // Delivered: the packet sent at 140; packets sent by 120 count as lost.
        assert_eq!(b.rack_mark_lost_at(140, 120), 2, "0 and 2; 1 is SACKed");
        assert_eq!(b.rack_pending(140), Some(130), "3 is in doubt");
        assert_eq!(
            b.rack_mark_lost_at(140, 1_000),
            1,
            "3; 5 left after the delivered one"
        );
        assert_eq!(b.rack_pending(140), None);
        assert_eq!(b.lost(), 3);
    }

    #[test]
    fn a_sacked_head_is_unmarked_and_resent() {
        let mut b = board(6);
        b.apply_sack_block(SackBlock { start: 2, end: 4 });
        assert_eq!(b.advance(2), 2);
        assert!(b.unsack_head());
        assert!(!b.unsack_head());
        assert_eq!((b.sacked(), b.lost(), b.pipe()), (1, 1, 2));
        assert_eq!(b.next_retx(), Some(2));
        assert_eq!(b.known, vec![SackBlock { start: 3, end: 4 }]);
    }
}
