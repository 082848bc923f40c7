//! The sender's loss detection and recovery episodes (`Sender` methods; `crates/cclab-transport/src/
//! sender.rs` calls them from `handle_ack` and `handle_timeout`):
//! * loss detection: RFC 6675's DupThresh rule (`loss_detection = "dupack"`), or RACK (RFC 8985 §6,
//!   `"rack"`): an original transmission is lost once a transmission sent after it has been delivered
//!   and it has been out longer than that one's RTT plus the reordering window
//!   (`crates/cclab-transport/src/rack.rs`); the reordering timer decides the packets an ACK left in
//!   doubt. Lost retransmissions: `crates/cclab-transport/src/recovery.rs`;
//! * D-SACK (RFC 2883): the block `sack[0]` of an ACK marked `dsack` reports a duplicate. It never
//!   counts as newly SACKed data; it feeds RACK's window, the reordering degree, and the undo test;
//! * undo (`[transport] undo`, Linux's tcp_try_undo_*): a fast recovery or an RTO shown spurious
//!   (`crates/cclab-transport/src/undo.rs`) gives the algorithm back its window through
//!   `CongestionControl::undo_cwnd`, unmarks the packets marked lost and not yet resent, and ends;
//! * F-RTO (RFC 5682 as Linux runs it, with `undo` and SACK): after an RTO that did not interrupt a
//!   fast recovery, the first ACK that advances `snd_una` without showing the RTO spurious lets new
//!   data go before the packets the RTO marked lost (step 2b); an ACK then acknowledging data never
//!   retransmitted shows the RTO spurious (step 3b: undo), a SACK or duplicate ACK shows the loss real
//!   (step 3a: the marked packets are resent). Timestamps make Eifel's test (an echo older than the
//!   first retransmission) the usual detector; F-RTO adds the case where the only ACKs to come back
//!   are triggered by retransmissions or by new data.

use super::Sender;
use crate::config::LossDetection;
use crate::segment::{AckSegment, SackBlock};
use crate::undo::{Undo, UndoKind};
use cclab_cc::cc::LossEvent;
use cclab_cc::time::Nanos;

/// What showed a reduction spurious.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UndoCause {
    /// Every retransmission came back D-SACKed.
    Dsack,
    /// The ACK advancing `snd_una` echoes a transmission older than the first retransmission.
    Timestamp,
    /// F-RTO step 3b.
    Frto,
}

impl Sender {
    /// RACK-TLP runs: `loss_detection = "rack"` with SACK recovery (RACK needs SACK information).
    pub(super) fn rack_on(&self) -> bool {
        self.cfg.loss_detection == LossDetection::Rack && self.recovery.sack_rules()
    }

    /// Tail loss probes: `tlp`, or part of RACK-TLP.
    pub(super) fn tlp_on(&self) -> bool {
        self.cfg.tlp || self.cfg.loss_detection == LossDetection::Rack
    }

    /// DupThresh for the rules that count packets: the reordering degree with RACK.
    fn dupthresh(&self) -> u32 {
        if self.rack_on() {
            self.rack.reordering()
        } else {
            self.cfg.dupthresh
        }
    }

    /// The reordering window now: RACK's adaptive one, else min_RTT/4.
    pub(super) fn reo_wnd_now(&self) -> Nanos {
        if self.rack_on() {
            self.rack.reo_wnd(
                self.rtt.min_rtt(),
                self.rtt.srtt(),
                !self.recovery.is_open(),
                self.board.sacked(),
            )
        } else {
            crate::recovery::reo_wnd(self.rtt.min_rtt())
        }
    }

    /// RACK's rule for original transmissions at `now`; returns packets newly marked lost.
    fn rack_mark_originals(&mut self, now: Nanos) -> u64 {
        let rack_ts = self.recovery.rack_ts();
        if rack_ts == 0 {
            return 0;
        }
        let wait = self.recovery.rack_rtt() + self.reo_wnd_now();
        match now.checked_sub(wait) {
            Some(bound) => self.board.rack_mark_lost_at(rack_ts, bound),
            None => 0,
        }
    }

    /// RACK's reordering timer for original transmissions (RFC 8985 §6.3): when the first packet left in
    /// doubt by the ACKs so far will count as lost.
    pub(super) fn rack_timer(&self) -> Option<Nanos> {
        if !self.rack_on() {
            return None;
        }
        let sent = self.board.rack_pending(self.recovery.rack_ts())?;
        Some(sent + self.recovery.rack_rtt() + self.reo_wnd_now())
    }

    /// The reordering timer fired: RACK decides again, and losses start a recovery as on an ACK.
    pub(super) fn rack_timeout(&mut self, now: Nanos) {
        let lost_retx = self.detect_lost_retransmissions(now);
        let newly = self.rack_mark_originals(now);
        self.respond_to_lost_retransmissions(now, lost_retx, newly);
        if self.recovery.is_open() && newly > 0 {
            self.enter_recovery(now, newly, false);
        }
    }

    /// Finds newly lost packets and lost retransmissions, and starts a recovery episode when they call
    /// for one: RACK or SACK loss marking (RFC 6675), or DupThresh duplicate ACKs without SACK
    /// information (RFC 5681 §3.2 / RFC 6582 §3.2 step 2).
    pub(super) fn detect_losses(&mut self, now: Nanos, is_dup: bool) {
        let sack_rules = self.recovery.sack_rules();
        let (mut newly_lost, lost_retx) = if sack_rules {
            let r = self.detect_lost_retransmissions(now);
            let n = if self.rack_on() {
                self.rack_mark_originals(now)
            } else {
                self.board.update_loss_marks(self.cfg.dupthresh)
            };
            (n, r)
        } else {
            (0, 0)
        };
        newly_lost += std::mem::take(&mut self.rack_lost);
        self.respond_to_lost_retransmissions(now, lost_retx, newly_lost);
        if !self.recovery.is_open() {
            return;
        }
        if sack_rules && newly_lost > 0 {
            self.enter_recovery(now, newly_lost, false);
        } else if (!sack_rules || self.board.sacked() == 0)
            && is_dup
            && self.recovery.dupacks() == self.dupthresh()
        {
            // Fast retransmit: the first unacked packet.
            self.board.mark_lost(self.board.snd_una());
            self.enter_recovery(now, 1, false);
            self.recovery.inflate_by_dupacks();
        }
    }

    /// Lost retransmissions marked for resending; returns those of the current recovery episode.
    #[inline]
    pub(super) fn detect_lost_retransmissions(&mut self, now: Nanos) -> u64 {
        // Nearly every ACK finds no retransmission in flight: then nothing can be found lost, and the
        // reordering window and DupThresh (pure reads) need not be worked out.
        if !self.recovery.has_retx_fences() {
            return 0;
        }
        let (reo_wnd, dupthresh) = (self.reo_wnd_now(), self.dupthresh());
        let (found, current) =
            self.recovery
                .detect_lost_retransmissions(now, &mut self.board, reo_wnd, dupthresh);
        self.stats.lost_retransmits += found;
        current
    }

    /// RFC 5681 §4.3: a lost retransmission of the current episode is a second indication of
    /// congestion (`recovery` module doc).
    pub(super) fn respond_to_lost_retransmissions(
        &mut self,
        now: Nanos,
        lost_retx: u64,
        newly_lost: u64,
    ) {
        if lost_retx > 0 && !self.recovery.is_open() {
            self.stats.retx_loss_events += 1;
            self.enter_recovery(now, lost_retx + newly_lost, false);
        }
    }

    /// An ECN echo: a loss event without a lost packet, at most once per window.
    pub(super) fn respond_to_ecn(&mut self, now: Nanos) {
        if self
            .recovery
            .take_ecn_event(self.board.snd_una(), self.board.snd_nxt())
        {
            self.stats.ecn_events += 1;
            self.enter_recovery(now, 0, true);
        }
    }

    /// Tells the algorithm of a loss event; a drop (not an ECN mark) also starts fast recovery. With
    /// `undo`, a fast recovery entered from the open state records what undoing it restores.
    pub(super) fn enter_recovery(&mut self, now: Nanos, lost: u64, ecn: bool) {
        if self.cfg.undo && !ecn && self.recovery.is_open() {
            self.undo = Some(Undo::new(
                UndoKind::Fast,
                self.board.snd_una(),
                self.cc.cwnd(),
                self.cc.ssthresh(),
            ));
        }
        self.cc.on_loss(&LossEvent {
            now,
            in_flight: self.board.outstanding() as u32,
            lost: lost as u32,
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min_rtt(),
            ecn,
        });
        if !ecn {
            self.force_retx = true;
            self.recovery.enter_fast(self.board.snd_nxt());
            if self.cfg.prr {
                self.prr.start(self.board.outstanding());
            }
            self.stats.fast_recoveries += 1;
        }
    }

    /// An RTO fired (before the scoreboard and the recovery phase take it in) with `undo`: a new loss
    /// episode records what undoing it restores; an RTO during a fast recovery, or a repeated one, keeps
    /// the record from before the first reduction (Linux's `tcp_enter_loss`).
    pub(super) fn prepare_rto_undo(&mut self) {
        if self.recovery.is_open() {
            self.undo = Some(Undo::new(
                UndoKind::Timeout,
                self.board.snd_una(),
                self.cc.cwnd(),
                self.cc.ssthresh(),
            ));
        } else if let Some(u) = &mut self.undo {
            u.kind = UndoKind::Timeout;
        }
    }

    /// The ACK's D-SACK block, if it carries a well-formed one (non-empty, not beyond `snd_nxt`; it may
    /// lie below the cumulative ACK, where a duplicate of acknowledged data belongs). Counted, and fed to
    /// RACK, the reordering evidence and the undo test.
    pub(super) fn take_dsack(&mut self, now: Nanos, ack: &AckSegment) -> Option<SackBlock> {
        if !ack.dsack || ack.n_sack == 0 || !self.cfg.sack {
            return None;
        }
        let b = ack.sack[0];
        if b.start >= b.end || b.end > self.board.snd_nxt() {
            self.rejected.bad_sack_blocks += 1;
            return None;
        }
        self.stats.dsacks += 1;
        if self.win_stats.window.contains(now) {
            self.win_stats.dsacks += 1;
        }
        self.board.on_dsack(b.start, b.end);
        self.rack.on_dsack();
        if let Some(u) = &mut self.undo {
            u.on_dsack(b.start, b.end);
        }
        Some(b)
    }

    /// Linux's undo tests for this ACK (`undo` module doc), run before the recovery phase takes the ACK
    /// in; then F-RTO's steps. Returns whether a reduction was undone.
    pub(super) fn check_spurious_reduction(
        &mut self,
        now: Nanos,
        ack: &AckSegment,
        cum_advanced: bool,
        new_sack_or_dup: bool,
    ) -> bool {
        let Some(u) = &self.undo else {
            return false;
        };
        let in_loss = self.recovery.in_loss_recovery();
        let in_fast = self.recovery.in_fast_recovery();
        let una = self.board.snd_una();
        let ends = !self.recovery.is_open() && una >= self.recovery.recover();
        let cause = if u.all_dsacked() {
            Some(UndoCause::Dsack)
        } else if cum_advanced
            && u.echo_predates_retransmission(ack.ts_echo)
            && (in_loss || ends || (in_fast && self.board.retx_out() == 0))
        {
            // During a fast recovery only once no retransmission is in flight (Linux's partial undo):
            // one still out may be repairing a real loss.
            Some(UndoCause::Timestamp)
        } else if in_loss
            && self
                .frto
                .is_some_and(|high| self.board.orig_delivered(high))
        {
            Some(UndoCause::Frto)
        } else {
            None
        };
        if let Some(c) = cause {
            self.undo_reduction(now, c);
            return true;
        }
        if in_loss {
            self.frto_step(cum_advanced, new_sack_or_dup, ends);
        }
        false
    }

    /// F-RTO steps 2b and 3a (module doc); step 3b is an undo cause.
    fn frto_step(&mut self, cum_advanced: bool, new_sack_or_dup: bool, recovered: bool) {
        self.frto_new = false;
        let Some(high) = self.frto else {
            return;
        };
        if self.board.snd_nxt() > high {
            if new_sack_or_dup {
                // Step 3a: the new data was not acknowledged in order: the loss was real.
                self.frto = None;
            }
        } else if cum_advanced && !recovered {
            // Step 2b: the retransmission arrived; new data shows whether the rest did too.
            if self.may_send_new() {
                self.frto = Some(self.board.snd_nxt());
                self.frto_new = true;
            } else {
                self.frto = None;
            }
        }
    }

    /// The recorded reduction was spurious: the algorithm gets its window back (`undo_cwnd`), packets
    /// marked lost and not yet resent are unmarked, and the recovery ends.
    fn undo_reduction(&mut self, now: Nanos, cause: UndoCause) {
        let Some(u) = self.undo.take() else {
            return;
        };
        self.cc.undo_cwnd(u.prior_cwnd, u.prior_ssthresh);
        self.board.undo_rto_marks();
        if self.recovery.in_loss_recovery() {
            self.recovery.undo_rto();
        } else {
            self.recovery.undo_fast();
        }
        self.prr.stop();
        self.force_retx = false;
        self.frto = None;
        self.frto_new = false;
        let counted_in_window = self.win_stats.window.contains(now);
        match u.kind {
            UndoKind::Fast => {
                self.stats.spurious_recoveries += 1;
                if counted_in_window {
                    self.win_stats.recoveries_undone += 1;
                }
                // The hole was filled by the original: the path reorders. By timestamps the distance
                // is known now (Linux's partial undo); a D-SACK comes a round trip later, when the
                // highest SACK says nothing of it, so it only counts as seen.
                match cause {
                    UndoCause::Timestamp => self
                        .rack
                        .on_reordering(self.board.fack().saturating_sub(u.marker())),
                    _ => self.rack.on_reordering(0),
                }
            }
            UndoKind::Timeout => {
                self.stats.spurious_timeouts += 1;
                if counted_in_window {
                    self.win_stats.timeouts_undone += 1;
                }
            }
        }
        if cause == UndoCause::Dsack {
            self.rack.on_dsack_undo();
        }
    }

    /// Eifel detection (RFC 3522) of a spurious RTO under `rto_undo` alone: the first ACK to advance
    /// snd_una after it echoes a transmission from before the RTO, so the data the RTO declared lost
    /// had arrived; every retransmission since carries a later timestamp. Response (Linux's undo): the
    /// algorithm restores its window, the packets marked lost and not yet resent are unmarked (they
    /// are not resent), and the recovery episode ends.
    pub(super) fn check_spurious_rto(&mut self, now: Nanos, ts_echo: Nanos) {
        let Some(u) = self.rto_undo.take() else {
            return;
        };
        if ts_echo >= u.at {
            return;
        }
        self.stats.spurious_timeouts += 1;
        if self.win_stats.window.contains(now) {
            self.win_stats.timeouts_undone += 1;
        }
        self.board.undo_rto_marks();
        self.recovery.undo_rto();
        self.cc.undo_cwnd(u.cwnd, u.ssthresh);
    }
}
