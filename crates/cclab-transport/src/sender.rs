//! The sending endpoint: sequence space, SACK scoreboard, loss detection and recovery, RTO, pacing.
//!
//! * Scoreboard: one byte of state per outstanding packet in a ring indexed by `seq − snd_una`, plus
//!   counters so that the pipe estimate (RFC 6675 §4) is O(1):
//!   `pipe = outstanding − sacked − lost + retransmitted_lost`.
//! * SACK loss marking (RFC 6675 IsLost with DupThresh): every un-SACKed packet below the
//!   DupThresh-th highest SACKed packet is lost. The boundary only moves up, so marking is amortised
//!   O(1) per packet. SACK blocks are merged into a small list of known ranges so a block repeated on
//!   every ACK costs nothing after its first appearance.
//! * Recovery: SACK (RFC 6675), NewReno partial ACKs (RFC 6582; pipe = outstanding − duplicate ACKs,
//!   which is RFC 6582's window inflation expressed as a pipe), or classic Reno (recovery ends on the
//!   first new ACK). The algorithm is told once per loss event (`on_loss`); ECN echoes count as loss
//!   events at most once per window (RFC 3168 CWR).
//! * RTO (RFC 6298): SRTT/RTTVAR from timestamp-echo samples (so retransmissions give valid samples:
//!   the echo names the transmission that was received, which is what Karn's rule protects), RTO =
//!   SRTT + 4·RTTVAR clamped to [min_rto, max_rto], doubled per consecutive timeout, timer restarted when
//!   new data is acknowledged. On RTO every un-SACKed outstanding packet is deemed lost and resent.
//! * Lost retransmissions (SACK recovery): a retransmission still un-SACKed is deemed lost, and resent
//!   within the same recovery, when packets that left after it are seen delivered. Two rules, either
//!   suffices: (sequence) it remembers `snd_nxt` when it left, and DupThresh packets sent after it could
//!   have been SACKed above it (highest SACKed ≥ that mark + DupThresh − 1), as Linux's
//!   tcp_mark_lost_retrans did; (time, RACK, RFC 8985 §6.2) an ACK echoes the send time of a delivered
//!   transmission later than it, and it has been out longer than that transmission's RTT plus a
//!   reordering window of min_rtt/4. The time rule is needed when no new data follows a
//!   retransmission: after a slow-start overshoot the recovery sends only retransmissions, so the fast
//!   retransmission, dropped at the still-full queue, had no later sequence to be overtaken by and
//!   waited for the RTO (measured on the real datapath, 20 Mbit/s, 40 ms, 2·BDP: 1 RTO and ~200 more
//!   retransmissions in half the runs). Without either rule a retransmission dropped at a full queue
//!   costs an RTO and a collapse to one packet; RFC 6675 leaves this case to the timer.
//! * A lost retransmission is a second congestion signal (RFC 5681 §4.3, restated by RFC 8985 §3.4: the
//!   loss of a retransmission must be taken as a separate indication of congestion). When one that
//!   left during the current recovery episode (after its window reduction, or after its RTO) is found
//!   lost, the algorithm is told of a new loss event and a new fast-recovery episode starts (recover =
//!   snd_nxt). Retransmissions of earlier episodes found lost later cause no further reduction, so it
//!   is at most one reduction per episode, as for original losses. Without this response the RTO the
//!   detection replaced was the only reaction, and a sender whose window exceeds its share could stay
//!   in one recovery for seconds: its lost retransmissions, detected together by one ACK, leave as one
//!   burst into a drop-tail queue its own ACK-clocked new data keeps full, all but the first are
//!   dropped, and the same happens one RTT later (docs/validation.md, Hybla 2 × 40 ms).
//! * Pacing: if the algorithm sets a rate, consecutive packets leave at least `wire bits / rate` apart.

use crate::config::Config;
use crate::segment::{AckSegment, DataSegment, SackBlock};
use cclab_cc::cc::Recovery;
use cclab_cc::cc::{flags, AckSample, CongestionControl, LossEvent, SendCtx, TimeoutEvent};
use cclab_cc::time::{tx_time, Nanos};
use std::collections::VecDeque;

/// A retransmission awaiting proof of delivery or loss (see the module doc).
#[derive(Clone, Copy, Debug)]
struct RetxFence {
    seq: u64,
    /// `snd_nxt` when it left.
    fence: u64,
    sent_at: Nanos,
    episode: u64,
}

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// Retransmitted after being marked lost, and not yet SACKed (its retransmission is in the pipe).
const RETX: u8 = 4;

#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    pub sent_pkts: u64,
    /// Wire bytes sent, retransmissions included.
    pub sent_bytes: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// Payload bytes cumulatively acknowledged.
    pub acked_bytes: u64,
    pub rtt_sum_ns: u128,
    pub rtt_samples: u64,
    pub last_rtt: Nanos,
    pub ecn_events: u64,
    /// Retransmissions found lost by SACKs of later-sent packets (resent without waiting for an RTO).
    pub lost_retransmits: u64,
    /// Loss events (window reductions, also counted in `fast_recoveries`) started by a lost
    /// retransmission of the current recovery episode (RFC 5681 §4.3).
    pub retx_loss_events: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Open,
    /// Fast recovery until `recover` is cumulatively acked.
    Fast,
    /// After an RTO, until `recover` is cumulatively acked.
    Loss,
}

pub struct Sender {
    cfg: Config,
    cc: Box<dyn CongestionControl>,
    recovery: Recovery,
    /// Total packets of a finite flow and the payload of its last packet.
    total_pkts: Option<u64>,
    last_payload: u32,
    stopped: bool,

    snd_una: u64,
    snd_nxt: u64,
    /// Per-packet flags for [snd_una, snd_nxt).
    board: VecDeque<u8>,
    n_sacked: u64,
    n_lost: u64,
    n_retx: u64,
    /// All un-SACKed packets below this are marked lost.
    loss_boundary: u64,
    /// Lowest packet that may still need a retransmission.
    retx_cursor: u64,
    highest_sacked: u64,
    /// Retransmissions in the order they left, each with `snd_nxt` at that moment (non-decreasing),
    /// its send time and the recovery episode it left in.
    retx_fences: VecDeque<RetxFence>,
    /// RACK (RFC 8985): the latest send time echoed by any ACK (a delivered transmission) and the RTT
    /// that transmission saw.
    rack_ts: Nanos,
    rack_rtt: Nanos,
    /// Send timestamp of the last packet: timestamps are made strictly increasing (a packet of a burst
    /// is stamped 1 ns after the previous one), so an echoed timestamp names one transmission and
    /// orders it against every other, which RACK's time rule needs when a burst leaves at one instant.
    last_ts: Nanos,
    /// Recovery episode counter: incremented by every window reduction for loss and every RTO.
    episode: u64,
    /// Known SACKed ranges above snd_una (merged, sorted).
    known: Vec<SackBlock>,

    phase: Phase,
    recover: u64,
    dupacks: u32,
    /// NewReno: duplicate ACKs counted as packets that left the network (window inflation).
    inflation: u64,
    ecn_recover: u64,

    srtt: Nanos,
    rttvar: Nanos,
    min_rtt: Nanos,
    rto: Nanos,
    backoffs: u32,
    rto_deadline: Option<Nanos>,

    next_send: Nanos,
    pair_pending: bool,
    /// Fast retransmit: the first retransmission of a recovery leaves regardless of the window
    /// (RFC 6675 §5 step 4.3, RFC 5681 §3.2 step 2).
    force_retx: bool,
    app_limited: bool,
    delivered: u64,
    stats: SenderStats,
}

impl Sender {
    pub fn new(
        cfg: Config,
        cc: Box<dyn CongestionControl>,
        size_bytes: Option<u64>,
        _now: Nanos,
    ) -> Sender {
        let mss = cfg.mss.max(1) as u64;
        let (total_pkts, last_payload) = match size_bytes {
            None => (None, cfg.mss),
            Some(0) => (Some(0), cfg.mss),
            Some(b) => {
                let n = b.div_ceil(mss);
                (Some(n), (b - (n - 1) * mss) as u32)
            }
        };
        let recovery = cfg.recovery;
        let rto = cfg.initial_rto;
        Sender {
            cfg,
            cc,
            recovery,
            total_pkts,
            last_payload,
            stopped: false,
            snd_una: 0,
            snd_nxt: 0,
            board: VecDeque::with_capacity(64),
            n_sacked: 0,
            n_lost: 0,
            n_retx: 0,
            loss_boundary: 0,
            retx_cursor: 0,
            retx_fences: VecDeque::new(),
            rack_ts: 0,
            rack_rtt: 0,
            last_ts: 0,
            episode: 0,
            highest_sacked: 0,
            known: Vec::new(),
            phase: Phase::Open,
            recover: 0,
            dupacks: 0,
            inflation: 0,
            ecn_recover: 0,
            srtt: 0,
            rttvar: 0,
            min_rtt: 0,
            rto,
            backoffs: 0,
            rto_deadline: None,
            next_send: 0,
            pair_pending: false,
            force_retx: false,
            app_limited: false,
            delivered: 0,
            stats: SenderStats::default(),
        }
    }

    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }
    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }
    /// Smoothed RTT (0 before the first sample).
    pub fn srtt(&self) -> Nanos {
        self.srtt
    }
    pub fn min_rtt(&self) -> Nanos {
        self.min_rtt
    }
    pub fn rto(&self) -> Nanos {
        self.rto
    }
    /// Packets in the network by the pipe estimate.
    pub fn in_flight(&self) -> u32 {
        self.pipe() as u32
    }
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }
    pub fn in_recovery(&self) -> bool {
        self.phase != Phase::Open
    }

    /// Stop sending new data; outstanding data is still recovered.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// All data of a finite (or stopped) flow has been acknowledged.
    pub fn is_finished(&self) -> bool {
        let end = match self.total_pkts {
            Some(n) => n,
            None if self.stopped => self.snd_nxt,
            None => return false,
        };
        self.snd_una >= end && (self.stopped || self.snd_nxt >= end)
    }

    fn outstanding(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    fn pipe(&self) -> u64 {
        let p = self.outstanding() + self.n_retx - self.n_sacked - self.n_lost;
        if self.phase == Phase::Fast && self.recovery != Recovery::Sack {
            p.saturating_sub(self.inflation)
        } else {
            p
        }
    }

    /// New data may go out: there is some, and the receive window has room. The receive window bounds
    /// the sequence space in flight (snd_nxt − snd_una, SACKed data included, as the receiver buffers
    /// it), a pair's second packet included; retransmissions lie inside it. `poll_timeout` must use the
    /// same test, or a sender blocked by the receive window would ask to be woken now, forever.
    fn may_send_new(&self) -> bool {
        self.has_new_data() && self.snd_nxt - self.snd_una < self.cfg.max_window as u64
    }

    fn window(&self) -> u64 {
        let w = self.cc.cwnd().floor();
        let w = if w.is_finite() {
            w.max(1.0) as u64
        } else {
            u64::MAX
        };
        w.min(self.cfg.max_window as u64)
    }

    fn payload_of(&self, seq: u64) -> u32 {
        match self.total_pkts {
            Some(n) if seq + 1 == n => self.last_payload,
            _ => self.cfg.mss,
        }
    }

    fn has_new_data(&self) -> bool {
        !self.stopped && self.total_pkts.is_none_or(|n| self.snd_nxt < n)
    }

    /// The next packet needing retransmission, if any (lost, not yet resent, not SACKed).
    fn next_retx(&mut self) -> Option<u64> {
        if self.n_lost == self.n_retx {
            return None;
        }
        let mut s = self.retx_cursor.max(self.snd_una);
        while s < self.snd_nxt {
            let f = self.board[(s - self.snd_una) as usize];
            if f & LOST != 0 && f & (SACKED | RETX) == 0 {
                self.retx_cursor = s;
                return Some(s);
            }
            s += 1;
        }
        self.retx_cursor = s;
        None
    }

    /// The next data packet to put on the wire now, if the window, pacing and the algorithm allow.
    pub fn poll_transmit(&mut self, now: Nanos) -> Option<DataSegment> {
        if self.cc.quiesced() {
            return None;
        }
        let pair_second = self.pair_pending;
        let forced = self.force_retx && self.n_lost > self.n_retx;
        self.force_retx = false;
        if !pair_second && !forced {
            if now < self.next_send {
                return None;
            }
            if self.pipe() >= self.window() {
                return None;
            }
        }
        let (seq, retx) = match self.next_retx() {
            Some(s) => (s, true),
            None if self.may_send_new() => (self.snd_nxt, false),
            None if self.has_new_data() => {
                self.pair_pending = false;
                return None;
            }
            None => {
                self.app_limited = true;
                self.pair_pending = false;
                return None;
            }
        };
        self.app_limited = false;
        let payload = self.payload_of(seq);
        let mut fl = 0u8;
        if seq == 0 && !retx {
            fl |= flags::FIRST;
        }
        if retx {
            fl |= flags::RETX;
        }
        if pair_second {
            fl |= flags::PAIR_SECOND | flags::ACK_NOW;
        }
        let mut ctx = SendCtx {
            now,
            seq,
            bytes: payload + self.cfg.header_bytes,
            retransmit: retx,
            in_flight: self.pipe() as u32,
            flags: fl,
            fwd_field: 0,
        };
        self.cc.on_send(&mut ctx);
        let ts = now.max(self.last_ts + 1);
        // A pair's second packet never starts another pair.
        self.pair_pending = !pair_second && ctx.flags & flags::PAIR_FIRST != 0;
        if retx {
            // Re-arm the RTO when the head of the window is retransmitted (Linux
            // tcp_xmit_retransmit_queue). Its ACK needs a full RTT, while the timer was armed at the
            // last cumulative advance: with a queue-dominated, steady RTT (RTTVAR ≈ 0) the RTO would
            // otherwise expire just before that ACK and cause a spurious timeout.
            if seq == self.snd_una {
                self.rto_deadline = Some(now + self.rto);
            }
            let i = (seq - self.snd_una) as usize;
            self.board[i] |= RETX;
            self.n_retx += 1;
            self.stats.retransmits += 1;
            if self.cfg.sack && self.recovery == Recovery::Sack {
                self.retx_fences.push_back(RetxFence {
                    seq,
                    fence: self.snd_nxt,
                    sent_at: ts,
                    episode: self.episode,
                });
            }
            self.retx_cursor = seq + 1;
        } else {
            self.board.push_back(0);
            self.snd_nxt += 1;
        }
        let wire = payload + self.cfg.header_bytes;
        self.last_ts = ts;
        self.stats.sent_pkts += 1;
        self.stats.sent_bytes += wire as u64;
        if let Some(rate) = self.cc.pacing_rate_bps() {
            if rate > 0.0 && rate.is_finite() {
                self.next_send = now + tx_time(wire as u64, rate);
            }
        }
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rto);
        }
        Some(DataSegment {
            seq,
            payload,
            flags: ctx.flags,
            ts,
            fwd_field: ctx.fwd_field,
            ect: false,
            ce: false,
        })
    }

    /// When `handle_timeout` must next be called.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        let mut t = self.rto_deadline;
        let mut take = |x: Nanos| t = Some(t.map_or(x, |y| y.min(x)));
        if self.next_send > 0
            && !self.cc.quiesced()
            && self.pipe() < self.window()
            && (self.may_send_new() || self.n_lost > self.n_retx)
        {
            take(self.next_send);
        }
        if let Some(c) = self.cc.next_timer() {
            take(c);
        }
        if let Some(r) = self.rack_deadline() {
            take(r);
        }
        t
    }

    /// When the oldest retransmission in flight will count as lost by RACK's time rule, if a later
    /// transmission has been delivered (RFC 8985 §6.3's reordering timer: without it a retransmission
    /// sent in the same burst as the ones overtaking it would wait for more ACKs, or the RTO).
    fn rack_deadline(&self) -> Option<Nanos> {
        let f = self.retx_fences.front()?;
        (self.rack_ts > f.sent_at).then(|| f.sent_at + self.rack_rtt + self.min_rtt / 4)
    }

    pub fn handle_timeout(&mut self, now: Nanos) {
        if let Some(c) = self.cc.next_timer() {
            if now >= c {
                self.cc.on_timer(now);
            }
        }
        if self.rack_deadline().is_some_and(|d| now >= d) {
            let lost_retx = self.detect_lost_retransmissions(now);
            self.respond_to_lost_retransmissions(now, lost_retx, 0);
        }
        match self.rto_deadline {
            Some(d) if now >= d => {}
            _ => return,
        }
        if self.outstanding() == 0 {
            self.rto_deadline = None;
            return;
        }
        // RFC 6298 §5.4–5.6: retransmit, back off, restart the timer.
        self.stats.timeouts += 1;
        self.backoffs += 1;
        let in_flight = self.pipe() as u32;
        self.rto = (self.rto * 2).min(self.cfg.max_rto);
        self.rto_deadline = Some(now + self.rto);
        // Every un-SACKed outstanding packet is lost; earlier retransmissions are forgotten.
        for f in self.board.iter_mut() {
            if *f & SACKED == 0 {
                *f = LOST;
            }
        }
        self.n_lost = self.outstanding() - self.n_sacked;
        self.n_retx = 0;
        self.retx_fences.clear();
        self.episode += 1;
        self.loss_boundary = self.snd_nxt;
        self.retx_cursor = self.snd_una;
        self.phase = Phase::Loss;
        self.recover = self.snd_nxt;
        self.dupacks = 0;
        self.inflation = 0;
        self.pair_pending = false;
        self.next_send = now;
        self.cc.on_timeout(&TimeoutEvent {
            now,
            in_flight,
            backoffs: self.backoffs,
        });
    }

    fn rtt_sample(&mut self, r: Nanos) {
        // RFC 6298 §2.2–2.3.
        if self.stats.rtt_samples == 0 {
            self.srtt = r;
            self.rttvar = r / 2;
            self.min_rtt = r;
        } else {
            let err = self.srtt.abs_diff(r);
            self.rttvar = (3 * self.rttvar + err) / 4;
            self.srtt = (7 * self.srtt + r) / 8;
            self.min_rtt = self.min_rtt.min(r);
        }
        self.stats.rtt_samples += 1;
        self.stats.rtt_sum_ns += r as u128;
        self.stats.last_rtt = r;
        let rto = self.srtt + (4 * self.rttvar).max(1_000);
        self.rto = rto.clamp(self.cfg.min_rto, self.cfg.max_rto);
    }

    /// Marks `[start, end)` (clipped to the outstanding range) SACKed; returns packets newly SACKed.
    fn mark_sacked(&mut self, start: u64, end: u64) -> u64 {
        let (s, e) = (start.max(self.snd_una), end.min(self.snd_nxt));
        let mut n = 0;
        for seq in s..e {
            let f = &mut self.board[(seq - self.snd_una) as usize];
            if *f & SACKED == 0 {
                if *f & LOST != 0 {
                    self.n_lost -= 1;
                }
                if *f & RETX != 0 {
                    self.n_retx -= 1;
                }
                *f = SACKED;
                n += 1;
            }
        }
        self.n_sacked += n;
        if e > s {
            self.highest_sacked = self.highest_sacked.max(e - 1);
        }
        n
    }

    /// Processes a SACK block against the known ranges: only never-seen parts touch the scoreboard.
    fn apply_sack_block(&mut self, b: SackBlock) -> u64 {
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
    fn update_loss_marks(&mut self) -> u64 {
        if self.n_sacked == 0 {
            return 0;
        }
        let need = self.cfg.dupthresh.max(1) as u64;
        let mut count = 0;
        let mut seq = self.highest_sacked + 1;
        let mut bound = self.loss_boundary;
        while seq > self.snd_una.max(self.loss_boundary) {
            seq -= 1;
            if self.board[(seq - self.snd_una) as usize] & SACKED != 0 {
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
                let f = &mut self.board[(s - self.snd_una) as usize];
                if *f & (SACKED | LOST) == 0 {
                    *f |= LOST;
                    newly += 1;
                }
            }
            self.n_lost += newly;
            self.loss_boundary = bound;
        }
        newly
    }

    /// Retransmissions overtaken by DupThresh later-sent packets are lost again (see the module doc).
    /// Returns how many of them left during the current recovery episode.
    fn detect_lost_retransmissions(&mut self, now: Nanos) -> u64 {
        let reach = self.cfg.dupthresh.max(1) as u64 - 1;
        let reo_wnd = self.min_rtt / 4;
        let mut current = 0;
        // The fences are in send order, so both rules hold for a prefix of them.
        while let Some(&RetxFence {
            seq,
            fence,
            sent_at,
            episode,
        }) = self.retx_fences.front()
        {
            let by_seq = self.n_sacked > 0 && self.highest_sacked >= fence + reach;
            let by_time = self.rack_ts > sent_at && now >= sent_at + self.rack_rtt + reo_wnd;
            if !by_seq && !by_time {
                break;
            }
            self.retx_fences.pop_front();
            if seq >= self.snd_una
                && self.board[(seq - self.snd_una) as usize] & (RETX | SACKED) == RETX
            {
                self.stats.lost_retransmits += 1;
                self.mark_lost(seq);
                if episode == self.episode {
                    current += 1;
                }
            }
        }
        current
    }

    /// RFC 5681 §4.3: a lost retransmission of the current episode is a second indication of congestion
    /// (module doc).
    fn respond_to_lost_retransmissions(&mut self, now: Nanos, lost_retx: u64, newly_lost: u64) {
        if lost_retx > 0 && self.phase != Phase::Open {
            self.stats.retx_loss_events += 1;
            self.enter_recovery(now, lost_retx + newly_lost, false);
        }
    }

    fn mark_lost(&mut self, seq: u64) {
        if seq < self.snd_una || seq >= self.snd_nxt {
            return;
        }
        let f = &mut self.board[(seq - self.snd_una) as usize];
        if *f & (SACKED | LOST) == 0 {
            *f |= LOST;
            self.n_lost += 1;
        } else if *f & RETX != 0 {
            // NewReno partial ACK: the retransmission itself may be lost; resend it.
            *f &= !RETX;
            self.n_retx -= 1;
        }
        self.retx_cursor = self.retx_cursor.min(seq);
    }

    fn enter_recovery(&mut self, now: Nanos, lost: u64, ecn: bool) {
        // RFC 5681 FlightSize: sent and not cumulatively acknowledged.
        let in_flight = self.outstanding();
        self.cc.on_loss(&LossEvent {
            now,
            in_flight: in_flight as u32,
            lost: lost as u32,
            srtt: self.srtt,
            min_rtt: self.min_rtt,
            ecn,
        });
        if !ecn {
            self.force_retx = true;
            self.phase = Phase::Fast;
            self.recover = self.snd_nxt;
            self.episode += 1;
            self.stats.fast_recoveries += 1;
        }
    }

    pub fn handle_ack(&mut self, now: Nanos, ack: &AckSegment) {
        let mut newly: u64 = 0;
        let cum = ack.cum_ack.min(self.snd_nxt);
        let cum_advanced = cum > self.snd_una;
        if cum_advanced {
            for _ in self.snd_una..cum {
                let f = self.board.pop_front().unwrap_or(0);
                if f & SACKED != 0 {
                    self.n_sacked -= 1;
                } else {
                    newly += 1;
                    if f & LOST != 0 {
                        self.n_lost -= 1;
                    }
                    if f & RETX != 0 {
                        self.n_retx -= 1;
                    }
                }
            }
            let acked_pkts = cum - self.snd_una;
            let mut bytes = acked_pkts * self.cfg.mss as u64;
            if let Some(n) = self.total_pkts {
                if cum == n && n > 0 {
                    bytes = bytes - self.cfg.mss as u64 + self.last_payload as u64;
                }
            }
            self.stats.acked_bytes += bytes;
            self.snd_una = cum;
            self.loss_boundary = self.loss_boundary.max(cum);
            self.retx_cursor = self.retx_cursor.max(cum);
            let k = self.known.partition_point(|b| b.end <= cum);
            self.known.drain(..k);
            if let Some(b) = self.known.first_mut() {
                b.start = b.start.max(cum);
            }
            self.backoffs = 0;
            self.rto_deadline = if self.outstanding() > 0 {
                Some(now + self.rto)
            } else {
                None
            };
        }
        let mut sack_new = 0;
        if self.cfg.sack {
            for b in ack.sack_blocks() {
                sack_new += self.apply_sack_block(*b);
            }
        }
        newly += sack_new;
        self.delivered += newly;
        let is_dup = !cum_advanced && self.outstanding() > 0 && ack.cum_ack == self.snd_una;
        if is_dup {
            self.dupacks += 1;
        } else if cum_advanced {
            self.dupacks = 0;
        }

        // RTT sample from the echoed timestamp of the packet that triggered this ACK.
        let mut rtt = None;
        if ack.ts_echo <= now && ack.ts_echo > self.rack_ts {
            // Any ACK names a delivered transmission by its echo (RACK's most recently sent delivery).
            self.rack_ts = ack.ts_echo;
            self.rack_rtt = now - ack.ts_echo;
        }
        if (newly > 0 || is_dup) && ack.ts_echo <= now {
            let r = now - ack.ts_echo;
            self.rtt_sample(r);
            rtt = Some(r);
        }

        // Loss detection and recovery.
        let mut recovery_ended = false;
        match self.phase {
            Phase::Fast | Phase::Loss => {
                if self.snd_una >= self.recover {
                    self.phase = Phase::Open;
                    self.inflation = 0;
                    recovery_ended = true;
                    // Every retransmission of the episode lies below `recover`, now acknowledged.
                    self.retx_fences.clear();
                } else if cum_advanced && self.phase == Phase::Fast {
                    match self.recovery {
                        // Classic Reno leaves recovery on the first new ACK.
                        Recovery::Reno => {
                            self.phase = Phase::Open;
                            self.inflation = 0;
                            recovery_ended = true;
                        }
                        // RFC 6582 partial ACK: retransmit the next hole, deflate by the acked amount.
                        Recovery::NewReno => {
                            self.mark_lost(self.snd_una);
                            self.inflation = self.inflation.saturating_sub(newly.saturating_sub(1));
                        }
                        Recovery::Sack => {}
                    }
                } else if is_dup && self.recovery != Recovery::Sack && self.phase == Phase::Fast {
                    self.inflation += 1;
                }
            }
            Phase::Open => {}
        }
        let (newly_lost, lost_retx) = if self.cfg.sack && self.recovery == Recovery::Sack {
            let r = self.detect_lost_retransmissions(now);
            (self.update_loss_marks(), r)
        } else {
            (0, 0)
        };
        self.respond_to_lost_retransmissions(now, lost_retx, newly_lost);
        if self.phase == Phase::Open {
            let sack_mode = self.cfg.sack && self.recovery == Recovery::Sack;
            if sack_mode && newly_lost > 0 {
                self.enter_recovery(now, newly_lost, false);
            } else if (!sack_mode || self.n_sacked == 0)
                && is_dup
                && self.dupacks == self.cfg.dupthresh
            {
                // Fast retransmit (RFC 5681 §3.2 / RFC 6582 §3.2 step 2): the first unacked packet.
                self.mark_lost(self.snd_una);
                self.enter_recovery(now, 1, false);
                self.inflation = self.dupacks as u64;
                if sack_mode {
                    self.inflation = 0;
                }
            }
        }
        if ack.ece && self.snd_una >= self.ecn_recover && self.phase == Phase::Open {
            self.stats.ecn_events += 1;
            self.ecn_recover = self.snd_nxt;
            self.enter_recovery(now, 0, true);
        }

        if newly > 0 || is_dup || rtt.is_some() {
            let sample = AckSample {
                now,
                newly_acked: newly as u32,
                cum_advanced,
                rtt,
                srtt: self.srtt,
                min_rtt: self.min_rtt,
                in_flight: self.pipe() as u32,
                delivered: self.delivered,
                // Only fast recovery holds the window: after an RTO the sender slow-starts while it
                // resends the lost packets (RFC 5681 §3.1), so the algorithm must see those ACKs as
                // normal ones, or cwnd stays at 1 until the whole pre-RTO flight is repaired.
                in_recovery: self.phase == Phase::Fast,
                app_limited: self.app_limited,
                ecn_echo: ack.ece,
                echo_field: ack.echo_field,
                acked_seq: ack.acked_seq,
                acked_flags: ack.acked_flags,
                acked_bytes: ack.acked_bytes,
                rx_time: ack.rx_time,
            };
            self.cc.on_ack(&sample);
        }
        if recovery_ended {
            self.cc.on_recovery_end(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_cc::algorithms::reno::Reno;
    use cclab_cc::params::Params;

    fn sender(recovery: Recovery, sack: bool) -> Sender {
        let cfg = Config {
            recovery,
            sack,
            initial_cwnd: 10.0,
            ..Config::default()
        };
        let cc = Box::new(Reno::new("newreno", 10.0, &Params::new()).unwrap());
        Sender::new(cfg, cc, None, 0)
    }

    fn drain(s: &mut Sender, now: Nanos) -> Vec<DataSegment> {
        std::iter::from_fn(|| s.poll_transmit(now)).collect()
    }

    #[test]
    fn initial_window_then_ack_clock() {
        let mut s = sender(Recovery::Sack, true);
        let w = drain(&mut s, 1);
        assert_eq!(w.len(), 10);
        assert_eq!(w[0].flags & flags::FIRST, flags::FIRST);
        s.handle_ack(
            100,
            &AckSegment {
                cum_ack: 1,
                ts_echo: 1,
                ..Default::default()
            },
        );
        // slow start: one acked packet opens two slots
        assert_eq!(drain(&mut s, 100).len(), 2);
        assert_eq!(s.srtt(), 99);
    }

    #[test]
    fn sack_scoreboard_counts() {
        let mut s = sender(Recovery::Sack, true);
        drain(&mut s, 1);
        let mut ack = AckSegment {
            cum_ack: 0,
            ts_echo: 1,
            n_sack: 1,
            ..Default::default()
        };
        for e in 2..=4u64 {
            ack.sack[0] = SackBlock { start: 1, end: e };
            s.handle_ack(10, &ack);
        }
        assert_eq!(s.n_sacked, 3);
        assert_eq!(s.n_lost, 1, "packet 0 lost after 3 SACKed above it");
        assert!(s.in_recovery());
        assert_eq!(s.cc().cwnd(), 5.0);
        let out = drain(&mut s, 10);
        assert_eq!(out[0].seq, 0);
        assert!(out[0].flags & flags::RETX != 0);
    }
}
