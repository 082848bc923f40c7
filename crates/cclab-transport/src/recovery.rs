//! Loss recovery: the recovery phase, duplicate ACKs, and finding lost retransmissions.
//!
//! * Recovery kinds ([`Recovery`]): SACK (RFC 6675), NewReno partial ACKs (RFC 6582; pipe =
//!   outstanding − duplicate ACKs, which is RFC 6582's window inflation expressed as a pipe), or classic
//!   Reno (recovery ends on the first new ACK). The algorithm is told once per loss event (`on_loss`);
//!   ECN echoes count as loss events at most once per window (RFC 3168 CWR).
//! * Lost retransmissions (SACK recovery): a retransmission still un-SACKed is deemed lost, and resent
//!   within the same recovery, when packets that left after it are seen delivered. Two rules, either
//!   suffices: (sequence) it remembers `snd_nxt` when it left, and DupThresh packets sent after it could
//!   have been SACKed above it (highest SACKed ≥ that mark + DupThresh − 1), as Linux's
//!   tcp_mark_lost_retrans did; (time, RACK, RFC 8985 §6.2) an ACK echoes the send time of a delivered
//!   transmission later than it, and it has been out longer than that transmission's RTT plus a
//!   reordering window: min_rtt/4, or RACK's adaptive one with `loss_detection = "rack"`
//!   (`crates/cclab-transport/src/rack.rs`, whose reordering degree is then the DupThresh here). The time rule is needed when no new data follows a
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

use crate::scoreboard::Scoreboard;
use cclab_cc::cc::Recovery;
use cclab_cc::time::Nanos;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Open,
    /// Fast recovery until `recover` is cumulatively acked.
    Fast,
    /// After an RTO, until `recover` is cumulatively acked.
    Loss,
}

/// A retransmission awaiting proof of delivery or loss (see the module doc).
#[derive(Clone, Copy, Debug)]
struct RetxFence {
    seq: u64,
    /// `snd_nxt` when it left.
    fence: u64,
    sent_at: Nanos,
    episode: u64,
}

/// RACK's reordering window (RFC 8985 §6.2, min_RTT/4): how much longer than the delivered later
/// transmission's RTT a retransmission may be out before it counts as lost rather than reordered.
pub(crate) fn reo_wnd(min_rtt: Nanos) -> Nanos {
    min_rtt / 4
}

#[derive(Clone, Debug)]
pub(crate) struct LossRecovery {
    kind: Recovery,
    /// RFC 6675 rules apply: the receiver sends SACK blocks and the kind is SACK. Only then are losses
    /// inferred from SACKs and retransmissions fenced.
    sack_rules: bool,
    phase: Phase,
    recover: u64,
    dupacks: u32,
    /// NewReno: duplicate ACKs counted as packets that left the network (window inflation).
    inflation: u64,
    ecn_recover: u64,
    /// Recovery episode counter: incremented by every window reduction for loss and every RTO.
    episode: u64,
    /// Retransmissions in the order they left, each with `snd_nxt` at that moment (non-decreasing),
    /// its send time and the recovery episode it left in.
    retx_fences: VecDeque<RetxFence>,
    /// RACK (RFC 8985): the latest send time echoed by any ACK (a delivered transmission) and the RTT
    /// that transmission saw.
    rack_ts: Nanos,
    rack_rtt: Nanos,
}

impl LossRecovery {
    pub(crate) fn new(kind: Recovery, sack: bool) -> LossRecovery {
        LossRecovery {
            kind,
            sack_rules: sack && kind == Recovery::Sack,
            phase: Phase::Open,
            recover: 0,
            dupacks: 0,
            inflation: 0,
            ecn_recover: 0,
            episode: 0,
            retx_fences: VecDeque::new(),
            rack_ts: 0,
            rack_rtt: 0,
        }
    }

    /// Bytes the retransmission fences hold (one per retransmission of a packet still outstanding).
    pub(crate) fn bytes(&self) -> usize {
        self.retx_fences.capacity() * std::mem::size_of::<RetxFence>()
    }

    pub(crate) fn sack_rules(&self) -> bool {
        self.sack_rules
    }
    pub(crate) fn is_open(&self) -> bool {
        self.phase == Phase::Open
    }
    /// In fast recovery (not the loss recovery after an RTO).
    pub(crate) fn in_fast_recovery(&self) -> bool {
        self.phase == Phase::Fast
    }
    pub(crate) fn dupacks(&self) -> u32 {
        self.dupacks
    }
    /// In the loss recovery after an RTO.
    pub(crate) fn in_loss_recovery(&self) -> bool {
        self.phase == Phase::Loss
    }
    /// The end of the current recovery (`snd_nxt` when it started).
    pub(crate) fn recover(&self) -> u64 {
        self.recover
    }
    /// RACK's most recently sent delivered transmission and the RTT it saw (0, 0 before any).
    pub(crate) fn rack_ts(&self) -> Nanos {
        self.rack_ts
    }
    pub(crate) fn rack_rtt(&self) -> Nanos {
        self.rack_rtt
    }

    /// Packets to take off the scoreboard's pipe: NewReno's and Reno's window inflation.
    pub(crate) fn inflation(&self) -> u64 {
        if self.phase == Phase::Fast && self.kind != Recovery::Sack {
            self.inflation
        } else {
            0
        }
    }

    /// A retransmission of `seq` left at `sent_at` while `snd_nxt` was the next new packet.
    pub(crate) fn on_retransmit(&mut self, seq: u64, snd_nxt: u64, sent_at: Nanos) {
        if self.sack_rules {
            self.retx_fences.push_back(RetxFence {
                seq,
                fence: snd_nxt,
                sent_at,
                episode: self.episode,
            });
        }
    }

    pub(crate) fn count_dupack(&mut self, is_dup: bool, cum_advanced: bool) {
        if is_dup {
            self.dupacks += 1;
        } else if cum_advanced {
            self.dupacks = 0;
        }
    }

    /// Any ACK names a delivered transmission by its timestamp echo (RACK's most recently sent
    /// delivery).
    pub(crate) fn on_echo(&mut self, now: Nanos, ts_echo: Nanos) {
        if ts_echo <= now && ts_echo > self.rack_ts {
            self.rack_ts = ts_echo;
            self.rack_rtt = now - ts_echo;
        }
    }

    /// An ACK arrived (after the scoreboard took it in): recovery ends once `recover` is cumulatively
    /// acknowledged, otherwise the kind's rule for fast recovery applies. Returns whether recovery ended.
    pub(crate) fn on_ack(
        &mut self,
        board: &mut Scoreboard,
        cum_advanced: bool,
        is_dup: bool,
        newly: u64,
    ) -> bool {
        if self.phase == Phase::Open {
            return false;
        }
        if board.snd_una() >= self.recover {
            self.phase = Phase::Open;
            self.inflation = 0;
            // Retransmissions below `recover` are acknowledged now; those above it stay watched. New
            // data sent during the recovery lies above `recover`, and when it was lost it was resent
            // in the same episode: clearing every fence here left those retransmissions, when lost
            // again, to the RTO (CUBIC's slow-start overshoot at 50 Mbit/s, 40 ms, BDP buffer: 47 of
            // them, 1 RTO and 43.8 instead of 48.0 Mbit/s).
            let una = board.snd_una();
            self.retx_fences.retain(|f| f.seq >= una);
            return true;
        }
        if cum_advanced && self.phase == Phase::Fast {
            match self.kind {
                // Classic Reno leaves recovery on the first new ACK.
                Recovery::Reno => {
                    self.phase = Phase::Open;
                    self.inflation = 0;
                    return true;
                }
                // RFC 6582 partial ACK: retransmit the next hole, deflate by the acked amount.
                Recovery::NewReno => {
                    board.mark_lost(board.snd_una());
                    self.inflation = self.inflation.saturating_sub(newly.saturating_sub(1));
                }
                Recovery::Sack => {}
            }
        } else if is_dup && self.kind != Recovery::Sack && self.phase == Phase::Fast {
            self.inflation += 1;
        }
        false
    }

    /// A window reduction for loss: fast recovery until everything sent so far is acknowledged.
    pub(crate) fn enter_fast(&mut self, snd_nxt: u64) {
        self.phase = Phase::Fast;
        self.recover = snd_nxt;
        self.episode += 1;
    }

    /// Fast retransmit on DupThresh duplicate ACKs: NewReno's window inflation starts at them.
    pub(crate) fn inflate_by_dupacks(&mut self) {
        self.inflation = if self.sack_rules {
            0
        } else {
            self.dupacks as u64
        };
    }

    /// The RTO fired: loss recovery until everything sent so far is acknowledged; retransmissions in
    /// flight are forgotten (the scoreboard resends every un-SACKed packet).
    pub(crate) fn on_rto(&mut self, snd_nxt: u64) {
        self.retx_fences.clear();
        self.episode += 1;
        self.phase = Phase::Loss;
        self.recover = snd_nxt;
        self.dupacks = 0;
        self.inflation = 0;
    }

    /// A spurious RTO was undone: the loss recovery it started ends.
    pub(crate) fn undo_rto(&mut self) {
        if self.phase == Phase::Loss {
            self.phase = Phase::Open;
            self.retx_fences.clear();
        }
    }

    /// A spurious fast recovery was undone: it ends. Its retransmissions still in flight stay watched
    /// (one found lost is resent, without a new loss event: the episode is over).
    pub(crate) fn undo_fast(&mut self) {
        if self.phase == Phase::Fast {
            self.phase = Phase::Open;
            self.inflation = 0;
        }
    }

    /// An ECN echo is a loss event at most once per window of data (RFC 3168 §6.1.2), and none while
    /// recovering from a loss, which has already reduced the window. Returns whether this one is.
    pub(crate) fn take_ecn_event(&mut self, snd_una: u64, snd_nxt: u64) -> bool {
        if snd_una >= self.ecn_recover && self.phase == Phase::Open {
            self.ecn_recover = snd_nxt;
            true
        } else {
            false
        }
    }

    /// Some retransmission is still watched for loss (`detect_lost_retransmissions` has work).
    pub(crate) fn has_retx_fences(&self) -> bool {
        !self.retx_fences.is_empty()
    }

    /// Retransmissions overtaken by DupThresh later-sent packets, or by RACK's time rule, are marked
    /// lost again on the scoreboard (see the module doc). Returns how many were found lost and how many
    /// of them left during the current recovery episode.
    pub(crate) fn detect_lost_retransmissions(
        &mut self,
        now: Nanos,
        board: &mut Scoreboard,
        reo_wnd: Nanos,
        dupthresh: u32,
    ) -> (u64, u64) {
        let reach = dupthresh.max(1) as u64 - 1;
        let (mut found, mut current) = (0, 0);
        // The fences are in send order, so both rules hold for a prefix of them.
        while let Some(&RetxFence {
            seq,
            fence,
            sent_at,
            episode,
        }) = self.retx_fences.front()
        {
            let by_seq = board.sacked() > 0 && board.highest_sacked() >= fence + reach;
            let by_time = self.rack_ts > sent_at && now >= sent_at + self.rack_rtt + reo_wnd;
            if !by_seq && !by_time {
                break;
            }
            self.retx_fences.pop_front();
            if board.retx_in_flight(seq) {
                found += 1;
                board.mark_lost(seq);
                if episode == self.episode {
                    current += 1;
                }
            }
        }
        (found, current)
    }

    /// When the oldest retransmission in flight will count as lost by RACK's time rule, if a later
    /// transmission has been delivered (RFC 8985 §6.3's reordering timer: without it a retransmission
    /// sent in the same burst as the ones overtaking it would wait for more ACKs, or the RTO).
    pub(crate) fn rack_deadline(&self, reo_wnd: Nanos) -> Option<Nanos> {
        let f = self.retx_fences.front()?;
        (self.rack_ts > f.sent_at).then(|| f.sent_at + self.rack_rtt + reo_wnd)
    }
}
