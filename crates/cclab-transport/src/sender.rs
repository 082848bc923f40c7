//! The sending endpoint: which packet leaves next, the retransmission timer, pacing, and the calls
//! into the congestion-control algorithm.
//!
//! `Sender` composes its state from small modules, as quinn-proto's connection composes its RTT
//! estimator and congestion controller, so that each RFC's rules can be read (and tested) alone:
//! * `scoreboard`: per-packet SACKed / lost / retransmitted state of `[snd_una, snd_nxt)`, SACK loss
//!   marking (RFC 6675) and the pipe estimate;
//! * `rtt`: the RFC 6298 estimator (SRTT, RTTVAR, min RTT, RTO and its backoff);
//! * `recovery`: the recovery phase, duplicate ACKs, NewReno inflation, lost retransmissions (RACK);
//! * `app`: the application's data (endless, finite, stopped);
//! * `txlog`: the transmissions an ACK may echo, against which every ACK is checked;
//! * `rate`: delivery-rate samples for the algorithm (draft-cheng-iccrg-delivery-rate-estimation);
//! * `prr`: Proportional Rate Reduction (RFC 6937), the window during fast recovery when switched on;
//! * `rack`: RACK's adaptive reordering window and the reordering degree (`loss_detection = "rack"`);
//! * `undo`: what a window reduction needs to be undone when it proves spurious (`undo`).
//!
//! Loss detection, recovery episodes, D-SACK and the undo of spurious reductions (F-RTO included) are
//! `Sender` methods kept in `crates/cclab-transport/src/sender_recovery.rs`.
//!
//! What ties them together stays here:
//! * RTO timer (RFC 6298 §5): armed when data leaves, restarted when new data is acknowledged, re-armed
//!   when the head of the window is retransmitted. On expiry every un-SACKed outstanding packet is deemed
//!   lost and resent, and the estimator backs off.
//! * Pacing: if the algorithm sets a rate, consecutive packets leave at least `wire bits / rate` apart.
//!
//! Why this file is ~900 lines and not split further: what remains is one state machine's order of
//! steps (an ACK's checks, then the scoreboard, RTT, recovery, algorithm and timer in that order; the
//! transmit path's choice between retransmission and new data under pacing), each step reading the
//! fields the previous one set. The separable rules are in the modules above, and recovery's methods in
//! `sender_recovery.rs`; cutting the order itself in two would hide it.
//!
//! # Hostile ACKs
//! `handle_ack` trusts no field. Before an ACK touches anything it must name a transmission this
//! sender made (`txlog`: `ts_echo` with that transmission's `acked_seq`, `acked_flags`,
//! `acked_bytes`), carry at most [`MAX_SACK_BLOCKS`] blocks, and not claim a receive time (`rx_time`)
//! in the sender's future (both drivers give the two ends one clock); otherwise it is dropped whole.
//! In an ACK that passes, a cumulative ACK beyond `snd_nxt` (data never sent) is taken as `snd_nxt`,
//! and a SACK block that no honest receiver sends is ignored: empty or inverted, ending beyond
//! `snd_nxt`, starting at or below the ACK's own cumulative point, or covering `snd_una`. Each case is
//! counted in [`Sender::rejected`]; none happens with an honest receiver, so honest runs are unchanged.
//! What a hostile ACK can still do (an on-path attacker who reads the data packets can forge a valid
//! echo): docs/real-datapath.md, "What a hostile packet can and cannot do".

use crate::app::AppData;
use crate::config::{Config, LossDetection};
use crate::prr::Prr;
use crate::rack::Rack;
use crate::rate::{DeliveryRate, TxSnapshot};
use crate::recovery::{reo_wnd, LossRecovery};
use crate::rtt::RttEstimator;
use crate::scoreboard::Scoreboard;
use crate::segment::{AckSegment, DataSegment, SackBlock, MAX_SACK_BLOCKS};
use crate::stats::{SenderWindowStats, Window};
use crate::txlog::TxLog;
use crate::undo::{RtoUndo, Undo};
use cclab_cc::cc::{flags, AckSample, CongestionControl, RateSample, SendCtx, TimeoutEvent};
use cclab_cc::time::{tx_time, Nanos};

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
    /// RTOs found spurious and undone (`[transport] rto_undo` or `undo`: Eifel, D-SACK or F-RTO).
    pub spurious_timeouts: u64,
    /// Fast recoveries found spurious and undone (`[transport] undo`: all their retransmissions
    /// D-SACKed, or their hole filled by the original transmission).
    pub spurious_recoveries: u64,
    /// D-SACK blocks received (RFC 2883): segments the receiver got more than once.
    pub dsacks: u64,
    /// Tail loss probes sent (`[transport] tlp`).
    pub tail_loss_probes: u64,
}

/// ACKs, or parts of ACKs, the sender refused, by reason (module doc, "Hostile ACKs").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RejectedAcks {
    /// Dropped whole: the echo names no transmission in the log (a timestamp never sent, or not with
    /// that transmission's seq, flags and size).
    pub unknown_echo: u64,
    /// Dropped whole: `n_sack` above [`MAX_SACK_BLOCKS`].
    pub too_many_blocks: u64,
    /// Dropped whole: `rx_time` later than the sender's `now`.
    pub rx_time_future: u64,
    /// Cumulative ACK beyond `snd_nxt` (data never sent), taken as `snd_nxt`.
    pub beyond_snd_nxt: u64,
    /// SACK blocks ignored: empty or inverted, ending beyond `snd_nxt`, starting at or below the ACK's
    /// cumulative point, or covering `snd_una`.
    pub bad_sack_blocks: u64,
    /// The cumulative ACK reached a packet marked SACKed (only a forged SACK or a reneging receiver
    /// can do that): it was unmarked and resent (RFC 2018 §8).
    pub sacked_head: u64,
}

impl RejectedAcks {
    /// ACKs dropped whole.
    pub fn dropped(&self) -> u64 {
        self.unknown_echo + self.too_many_blocks + self.rx_time_future
    }
    /// Every refusal: ACKs dropped whole and the parts of ACKs ignored or corrected.
    pub fn total(&self) -> u64 {
        self.dropped() + self.beyond_snd_nxt + self.bad_sack_blocks + self.sacked_head
    }
}

/// Packets marked lost: on the connection so far, and by the ACK being processed.
#[derive(Clone, Copy)]
struct Losses {
    total: u64,
    newly: u64,
}

pub struct Sender {
    cfg: Config,
    cc: Box<dyn CongestionControl>,
    app: AppData,

    board: Scoreboard,
    recovery: LossRecovery,
    rtt: RttEstimator,
    rto_deadline: Option<Nanos>,

    /// Send timestamp of the last packet: timestamps are made strictly increasing (a packet of a burst
    /// is stamped 1 ns after the previous one), so an echoed timestamp names one transmission and
    /// orders it against every other, which RACK's time rule needs when a burst leaves at one instant.
    last_ts: Nanos,
    next_send: Nanos,
    /// The last `poll_transmit` that sent nothing was held back by pacing alone: the next packet leaves
    /// on the pacing schedule, and a late wake-up (the real datapath's timers fire tens of µs late) must
    /// not stretch the schedule.
    pacing_held: bool,
    /// The last packet left with the next one already due by the pacing schedule (a late sender
    /// catching up): that one continues the schedule too.
    behind_schedule: bool,
    pair_pending: bool,
    /// Fast retransmit: the first retransmission of a recovery leaves regardless of the window
    /// (RFC 6675 §5 step 4.3, RFC 5681 §3.2 step 2).
    force_retx: bool,
    app_limited: bool,
    rate: DeliveryRate,
    /// The algorithm reads delivery-rate samples: only then are the per-transmission snapshots kept.
    rate_samples: bool,
    prr: Prr,
    /// What an RTO changed, kept until the first ACK after it tells whether it was spurious
    /// (`[transport] rto_undo` without `undo`).
    rto_undo: Option<RtoUndo>,
    /// The last window reduction that may still prove spurious (`[transport] undo`).
    undo: Option<Undo>,
    /// F-RTO (RFC 5682, `undo`): after an RTO, `snd_nxt` when it fired (then when new data was sent in
    /// place of retransmissions), until the ACKs tell whether the RTO was spurious.
    frto: Option<u64>,
    /// F-RTO step 2b: new data goes before the packets the RTO marked lost.
    frto_new: bool,
    rack: Rack,
    /// Tail loss probe (`[transport] tlp`): when the probe timeout fires, and the sequence the probe
    /// that is out must reach before another may be sent.
    pto_deadline: Option<Nanos>,
    tlp_end: Option<u64>,
    probe_pending: bool,
    /// Packets RACK marked lost on this ACK (`tlp`), for `detect_losses`.
    rack_lost: u64,
    stats: SenderStats,
    txlog: TxLog,
    rejected: RejectedAcks,
    /// Window statistics ([`Sender::collect_window_stats`]; an empty window until the driver asks).
    win_stats: SenderWindowStats,
}

impl Sender {
    pub fn new(
        cfg: Config,
        cc: Box<dyn CongestionControl>,
        size_bytes: Option<u64>,
        _now: Nanos,
    ) -> Sender {
        let app = AppData::new(cfg.mss, size_bytes);
        let recovery = LossRecovery::new(cfg.recovery, cfg.sack);
        let rtt = RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto);
        let rate_samples = cc.wants_rate_samples();
        let board = if cfg.tlp || cfg.loss_detection == LossDetection::Rack {
            Scoreboard::new().with_send_times()
        } else {
            Scoreboard::new()
        };
        Sender {
            cfg,
            cc,
            app,
            board,
            recovery,
            rtt,
            rto_deadline: None,
            last_ts: 0,
            next_send: 0,
            pacing_held: false,
            behind_schedule: false,
            pair_pending: false,
            force_retx: false,
            app_limited: false,
            rate_samples,
            prr: Prr::default(),
            rto_undo: None,
            undo: None,
            frto: None,
            frto_new: false,
            rack: Rack::default(),
            pto_deadline: None,
            tlp_end: None,
            probe_pending: false,
            rack_lost: 0,
            rate: DeliveryRate::default(),
            stats: SenderStats::default(),
            txlog: TxLog::default(),
            rejected: RejectedAcks::default(),
            win_stats: SenderWindowStats::default(),
        }
    }

    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }
    /// ACKs and parts of ACKs refused, by reason.
    pub fn rejected(&self) -> RejectedAcks {
        self.rejected
    }
    /// From now on, record every RTT sample taken and every data packet sent (and retransmitted) at a
    /// time in `[from, to)` ([`crate::stats`]). Observation only: nothing the sender does changes.
    pub fn collect_window_stats(&mut self, from: Nanos, to: Nanos) {
        self.win_stats = SenderWindowStats {
            window: Window::new(from, to),
            ..Default::default()
        };
    }
    /// What [`Sender::collect_window_stats`] recorded so far (None if it was not called).
    pub fn window_stats(&self) -> Option<&SenderWindowStats> {
        (!self.win_stats.window.is_empty()).then_some(&self.win_stats)
    }
    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }
    /// Smoothed RTT (0 before the first sample).
    /// Bytes held by the sender's per-transmission logs (the echo log and the retransmission fences):
    /// what grows without bound while a packet stays unacknowledged and the sender keeps sending (a
    /// source that ignores loss), for a driver's memory budget. Its fixed state is not included.
    pub fn retained_bytes(&self) -> usize {
        self.txlog.bytes() + self.recovery.bytes() + self.undo.as_ref().map_or(0, Undo::bytes)
    }
    /// The reordering degree RACK believes (DupThresh with `loss_detection = "rack"`), packets.
    pub fn reordering(&self) -> u32 {
        self.rack.reordering()
    }
    /// RACK's reordering window in units of min_RTT/4 (`loss_detection = "rack"`).
    pub fn reo_wnd_steps(&self) -> u32 {
        self.rack.steps()
    }

    pub fn srtt(&self) -> Nanos {
        self.rtt.srtt()
    }
    pub fn min_rtt(&self) -> Nanos {
        self.rtt.min_rtt()
    }
    pub fn rto(&self) -> Nanos {
        self.rtt.rto()
    }
    /// Packets in the network by the pipe estimate.
    pub fn in_flight(&self) -> u32 {
        self.pipe() as u32
    }
    pub fn snd_una(&self) -> u64 {
        self.board.snd_una()
    }
    pub fn snd_nxt(&self) -> u64 {
        self.board.snd_nxt()
    }
    pub fn in_recovery(&self) -> bool {
        !self.recovery.is_open()
    }

    /// Stop sending new data; outstanding data is still recovered.
    pub fn stop(&mut self) {
        self.app.stop();
    }

    /// All data of a finite (or stopped) flow has been acknowledged.
    pub fn is_finished(&self) -> bool {
        self.app
            .is_finished(self.board.snd_una(), self.board.snd_nxt())
    }

    /// The scoreboard's pipe, less NewReno's window inflation during fast recovery.
    fn pipe(&self) -> u64 {
        self.board.pipe().saturating_sub(self.recovery.inflation())
    }

    /// New data may go out: there is some, and the receive window has room. The receive window bounds
    /// the sequence space in flight (snd_nxt − snd_una, SACKed data included, as the receiver buffers
    /// it), a pair's second packet included; retransmissions lie inside it. `poll_timeout` must use the
    /// same test, or a sender blocked by the receive window would ask to be woken now, forever.
    fn may_send_new(&self) -> bool {
        self.has_new_data() && self.board.outstanding() < self.cfg.max_window as u64
    }

    /// The window lets another packet into the network: the pipe is below the window, or, in fast
    /// recovery with PRR, the latest ACK's send quota is not used up.
    fn window_open(&self) -> bool {
        if self.prr.is_active() {
            self.prr.may_send()
        } else {
            self.pipe() < self.window()
        }
    }

    /// The window in whole packets: ⌊cwnd⌋, at least 1, unbounded for an infinite (or NaN) window.
    /// Written without `f64::floor`, which is a libm call on baseline x86-64 (no SSE4.1) and was 1.5 %
    /// of the simulation loop: for cwnd ≥ 1 the cast truncates, which is the floor, and saturates.
    fn window(&self) -> u64 {
        let c = self.cc.cwnd();
        let w = if !c.is_finite() {
            u64::MAX
        } else if c >= 1.0 {
            // Through i64: one conversion instruction on x86-64 where the u64 cast takes a branchy
            // sequence of them. The same value after the `min` below: a cwnd of 2^63 or more
            // saturates at i64::MAX, still above any `max_window` (a u32).
            c as i64 as u64
        } else {
            1
        };
        w.min(self.cfg.max_window as u64)
    }

    fn has_new_data(&self) -> bool {
        self.app.has_more(self.board.snd_nxt())
    }

    /// The next data packet to put on the wire now, if the window, pacing and the algorithm allow.
    ///
    /// Inlined into the driver up to the point where a packet will leave; the packet is made out of
    /// line (`transmit`). Drivers call this until it says None, so about every other call stops at
    /// the window test and should not pay for the frame of the function that builds a packet.
    #[inline]
    pub fn poll_transmit(&mut self, now: Nanos) -> Option<DataSegment> {
        // Whether the previous call was held back by pacing alone; only this call's pacing test below
        // sets it again.
        // ... or the previous packet left behind schedule (catching up, see Config::pacing_catch_up).
        let pacing_held =
            std::mem::take(&mut self.pacing_held) | std::mem::take(&mut self.behind_schedule);
        if self.cc.quiesced() {
            return None;
        }
        let pair_second = self.pair_pending;
        let probe = std::mem::take(&mut self.probe_pending);
        let forced = probe || (self.force_retx && self.board.retx_pending());
        self.force_retx = false;
        if !pair_second && !forced {
            if now < self.next_send {
                // Held by pacing alone only if nothing else would hold it at `next_send`: the same
                // test as `poll_timeout`'s, which then wakes the sender exactly then.
                self.pacing_held =
                    self.window_open() && (self.may_send_new() || self.board.retx_pending());
                return None;
            }
            if !self.window_open() {
                // The receive window, not cwnd, is what is full (window() is the smaller of the two):
                // with congestion-window validation the flow counts as application-limited.
                if self.cfg.cwnd_validation && self.cc.cwnd() >= self.cfg.max_window as f64 {
                    self.app_limited = true;
                }
                return None;
            }
        }
        self.transmit(now, pair_second, pacing_held)
    }

    /// The rest of `poll_transmit`, once neither pacing nor the window holds the packet back.
    fn transmit(
        &mut self,
        now: Nanos,
        pair_second: bool,
        pacing_held: bool,
    ) -> Option<DataSegment> {
        // F-RTO step 2b: new data, not the packets the RTO marked lost, while the ACKs decide.
        let retx_next = if self.frto_new && self.may_send_new() {
            None
        } else {
            self.board.next_retx()
        };
        let (seq, retx) = match retx_next {
            Some(s) => (s, true),
            None if self.may_send_new() => (self.board.snd_nxt(), false),
            None if self.has_new_data() => {
                // The receive window is the limit. With congestion-window validation (RFC 7661) this
                // counts as application-limited for the algorithm: cwnd does not grow on ACKs of a
                // flight the window did not limit.
                self.app_limited |= self.cfg.cwnd_validation;
                self.pair_pending = false;
                return None;
            }
            None => {
                self.app_limited = true;
                if self.rate_samples {
                    self.rate.on_app_limited(self.pipe());
                }
                self.pair_pending = false;
                return None;
            }
        };
        self.app_limited = false;
        let payload = self.app.payload_of(seq);
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
        let snap = self
            .rate_samples
            .then(|| self.rate.on_send(ts, self.pipe(), self.board.marked_lost()));
        // A pair's second packet never starts another pair.
        self.pair_pending = !pair_second && ctx.flags & flags::PAIR_FIRST != 0;
        if retx {
            // Re-arm the RTO when the head of the window is retransmitted (Linux
            // tcp_xmit_retransmit_queue). Its ACK needs a full RTT, while the timer was armed at the
            // last cumulative advance: with a queue-dominated, steady RTT (RTTVAR ≈ 0) the RTO would
            // otherwise expire just before that ACK and cause a spurious timeout.
            if seq == self.board.snd_una() {
                self.rto_deadline = Some(now + self.rtt.rto());
            }
            self.board.on_retransmit(seq);
            self.stats.retransmits += 1;
            self.recovery.on_retransmit(seq, self.board.snd_nxt(), ts);
            if let Some(u) = &mut self.undo {
                u.on_retransmit(seq, ts);
            }
        } else {
            self.board.on_send_new(ts);
        }
        if self.prr.is_active() {
            self.prr.on_send();
        }
        let wire = payload + self.cfg.header_bytes;
        self.last_ts = ts;
        self.stats.sent_pkts += 1;
        let w = &mut self.win_stats;
        if w.window.contains(now) {
            w.sent_pkts += 1;
            w.retransmits += retx as u64;
        }
        self.stats.sent_bytes += wire as u64;
        if let Some(rate) = self.cc.pacing_rate_bps() {
            if rate > 0.0 && rate.is_finite() {
                let gap = tx_time(wire as u64, rate);
                // Held by pacing until now: the schedule runs from when this packet was due, crediting
                // a late wake-up up to half a gap (Linux fq's drift rule), so that timer lateness does
                // not lower the rate. In the simulator the wake-up is exact (now == next_send) and this
                // is now + gap.
                let from = if pacing_held {
                    let credit = self.cfg.pacing_catch_up.for_gap(gap);
                    self.next_send.max(now.saturating_sub(credit)).min(now)
                } else {
                    now
                };
                self.next_send = from + gap;
                self.behind_schedule = self.next_send <= now;
            }
        }
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        if self.tlp_on() && !retx {
            self.arm_pto(now);
        }
        let mut seg = DataSegment {
            seq,
            payload,
            flags: ctx.flags,
            ts,
            fwd_field: ctx.fwd_field,
            ect: false,
            ce: false,
            tag: 0,
        };
        if let Some(k) = &self.cfg.data_key {
            seg.tag = crate::auth::data_tag(k, &seg);
        }
        self.txlog.on_send(&seg, snap);
        Some(seg)
    }

    /// When pacing alone next lets a packet go (the pacing term of [`Sender::poll_timeout`]), and the
    /// spacing of full-sized packets at the current pacing rate; None when nothing waits for pacing or
    /// the flow is not paced. A driver that sends several packets per system call (UDP GSO on the real
    /// datapath) uses them to wake for a small batch of departures instead of each one.
    pub fn next_departure(&self) -> Option<(Nanos, Nanos)> {
        let rate = self
            .cc
            .pacing_rate_bps()
            .filter(|r| *r > 0.0 && r.is_finite())?;
        (self.next_send > 0
            && !self.cc.quiesced()
            && self.window_open()
            && (self.may_send_new() || self.board.retx_pending()))
        .then(|| {
            let gap = tx_time((self.cfg.mss + self.cfg.header_bytes) as u64, rate);
            (self.next_send, gap)
        })
    }

    /// When `handle_timeout` must next be called.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Nanos> {
        let mut t = self.rto_deadline;
        let mut take = |x: Nanos| t = Some(t.map_or(x, |y| y.min(x)));
        if self.next_send > 0
            && !self.cc.quiesced()
            && self.window_open()
            && (self.may_send_new() || self.board.retx_pending())
        {
            take(self.next_send);
        }
        if let Some(c) = self.cc.next_timer() {
            take(c);
        }
        if let Some(r) = self.recovery.rack_deadline(self.reo_wnd_now()) {
            take(r);
        }
        if let Some(r) = self.rack_timer() {
            take(r);
        }
        if let Some(p) = self.pto_deadline {
            take(p);
        }
        t
    }

    /// RFC 8985 §7.2: (re)arms the probe timeout, PTO = 2·SRTT (+ the receiver's delayed-ACK timer when
    /// one packet is out and the receiver delays ACKs), not beyond the RTO, while data is outstanding,
    /// no recovery runs and no probe is out.
    fn arm_pto(&mut self, now: Nanos) {
        self.pto_deadline = None;
        if !self.tlp_on()
            || !self.recovery.is_open()
            || self.tlp_end.is_some()
            || self.board.outstanding() == 0
            || self.rtt.srtt() == 0
        {
            return;
        }
        let mut pto = 2 * self.rtt.srtt();
        if self.board.outstanding() == 1 && self.cfg.delayed_ack > 1 {
            pto += self.cfg.delack_timeout;
        }
        let at = now + pto;
        self.pto_deadline = Some(self.rto_deadline.map_or(at, |r| at.min(r)));
    }

    /// RFC 8985 §7.3: the probe timeout fired: one packet leaves whatever the window, new data if the
    /// receive window allows, else the highest packet sent again. Its ACK lets RACK find the lost tail
    /// (or shows nothing was lost) without waiting for the RTO.
    fn send_tail_loss_probe(&mut self, now: Nanos) {
        self.pto_deadline = None;
        if self.board.outstanding() == 0 || !self.recovery.is_open() {
            return;
        }
        // The probe is acknowledged once snd_una passes it: new data is the packet at snd_nxt, a
        // retransmission the one below.
        let end = if self.may_send_new() {
            self.board.snd_nxt() + 1
        } else {
            let last = self.board.snd_nxt() - 1;
            self.board.mark_lost(last);
            self.board.snd_nxt()
        };
        self.probe_pending = true;
        self.stats.tail_loss_probes += 1;
        self.tlp_end = Some(end);
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    pub fn handle_timeout(&mut self, now: Nanos) {
        if let Some(c) = self.cc.next_timer() {
            if now >= c {
                self.cc.on_timer(now);
            }
        }
        if self.pto_deadline.is_some_and(|d| now >= d) {
            self.send_tail_loss_probe(now);
        }
        if self
            .recovery
            .rack_deadline(self.reo_wnd_now())
            .is_some_and(|d| now >= d)
        {
            let lost_retx = self.detect_lost_retransmissions(now);
            self.respond_to_lost_retransmissions(now, lost_retx, 0);
        }
        if self.rack_timer().is_some_and(|d| now >= d) {
            self.rack_timeout(now);
        }
        match self.rto_deadline {
            Some(d) if now >= d => {}
            _ => return,
        }
        if self.board.outstanding() == 0 {
            self.rto_deadline = None;
            return;
        }
        // RFC 6298 §5.4–5.6: retransmit, back off, restart the timer.
        self.stats.timeouts += 1;
        let in_flight = self.pipe() as u32;
        let backoffs = self.rtt.back_off();
        if self.cfg.rto_undo && !self.cfg.undo && backoffs <= 1 {
            self.rto_undo = Some(RtoUndo {
                at: now,
                cwnd: self.cc.cwnd(),
                ssthresh: self.cc.ssthresh(),
            });
        }
        if self.cfg.undo {
            self.prepare_rto_undo();
        }
        // F-RTO unless the RTO interrupts a fast recovery (Linux: a new loss episode or a repeated RTO).
        let frto = self.cfg.undo && self.recovery.sack_rules() && !self.recovery.in_fast_recovery();
        self.rto_deadline = Some(now + self.rtt.rto());
        self.board.mark_all_lost();
        self.recovery.on_rto(self.board.snd_nxt());
        self.frto_new = false;
        self.frto = frto.then(|| self.board.snd_nxt());
        self.prr.stop();
        self.pto_deadline = None;
        self.tlp_end = None;
        self.probe_pending = false;
        self.pair_pending = false;
        self.next_send = now;
        self.cc.on_timeout(&TimeoutEvent {
            now,
            in_flight,
            backoffs,
        });
    }

    /// Processes one ACK in the order `cclab_cc::cc` documents: scoreboard and RTT estimator first,
    /// then loss detection (which may call the algorithm's `on_loss`), then `on_ack`, then
    /// `on_recovery_end` if this ACK ended recovery.
    ///
    /// An ACK no honest receiver could have sent changes nothing, or only in the parts an honest one
    /// could have sent (module doc, "Hostile ACKs").
    pub fn handle_ack(&mut self, now: Nanos, ack: &AckSegment) {
        let Some(echoed) = self.ack_acceptable(now, ack) else {
            return;
        };
        let lost_before = self.board.marked_lost();
        self.board.begin_ack();
        let mut cum = ack.cum_ack;
        if cum > self.board.snd_nxt() {
            // Data never sent: only a receiver fed forged data (or a forger) claims it.
            self.rejected.beyond_snd_nxt += 1;
            cum = self.board.snd_nxt();
        }
        let cum_newly = self.advance_cum_ack(now, cum);
        let cum_advanced = cum_newly.is_some();
        if self.tlp_end.is_some_and(|e| self.board.snd_una() >= e) {
            self.tlp_end = None;
        }
        if cum_advanced && !self.cfg.undo {
            self.check_spurious_rto(now, ack.ts_echo);
        }
        if cum_advanced && self.board.unsack_head() {
            self.rejected.sacked_head += 1;
        }
        let sacked_newly = self.apply_sack(ack);
        let newly = cum_newly.unwrap_or(0) + sacked_newly;
        let dsack = self.take_dsack(now, ack);
        let mut is_dup =
            !cum_advanced && self.board.outstanding() > 0 && cum == self.board.snd_una();
        if self.rack_on() && dsack.is_some() && newly == 0 {
            // Only news: a duplicate arrived. Not a sign of a hole (Linux counts no dupack for it).
            is_dup = false;
        }
        self.recovery.count_dupack(is_dup, cum_advanced);
        // RACK takes no send time from the duplicate a D-SACK reports (RFC 8985 §6.2 step 1).
        let rack_echo = !dsack.is_some_and(|b| (b.start..b.end).contains(&ack.acked_seq));
        let rtt = self.take_rtt_sample(now, ack, newly > 0 || is_dup, rack_echo);
        if let Some(d) = self.board.take_reordering() {
            self.rack.on_reordering(d);
        }
        if self.rack_on() {
            self.rack.update_reo_wnd(now, ack.ts_echo);
        }
        if self.cfg.undo {
            self.check_spurious_reduction(now, ack, cum_advanced, sacked_newly > 0 || is_dup);
        }
        let recovery_ended = self
            .recovery
            .on_ack(&mut self.board, cum_advanced, is_dup, newly);
        if recovery_ended {
            // Not undone (an undo ends the recovery itself): a widened reordering window is kept
            // one recovery less, and F-RTO has nothing left to decide.
            self.rack.on_recovery_kept();
            self.frto = None;
            self.frto_new = false;
        }
        if self.cfg.tlp && !self.rack_on() && newly > 0 && self.recovery.sack_rules() {
            // RACK for original transmissions (kept only with `tlp`): what a tail loss probe needs to
            // find the lost tail from the probe's one SACK. Counted with SACK's losses below.
            self.rack_lost = self
                .board
                .rack_mark_lost(ack.ts_echo, reo_wnd(self.rtt.min_rtt()));
        }
        self.detect_losses(now, is_dup);
        // Sampled after loss marking, so that the sample's losses include this ACK's (Linux calls
        // tcp_rate_gen at the end of tcp_ack).
        let lost = self.board.marked_lost();
        let rate = if !self.rate_samples {
            self.rate.count_delivered(newly);
            None
        } else if newly > 0 {
            self.rate
                .on_delivered(now, newly, ack.ts_echo, &echoed, lost, self.rtt.min_rtt())
        } else {
            None
        };
        if ack.ece {
            self.respond_to_ecn(now);
        }
        if newly > 0 || is_dup || rtt.is_some() {
            let losses = Losses {
                total: lost,
                newly: lost - lost_before,
            };
            self.inform_algorithm(now, ack, newly, cum_advanced, rtt, rate, losses);
        }
        if self.prr.is_active() {
            if recovery_ended || !self.recovery.in_fast_recovery() {
                self.prr.stop();
            } else {
                self.prr.on_ack(newly, self.pipe(), self.cc.cwnd());
            }
        }
        if recovery_ended {
            self.cc.on_recovery_end(now);
        }
        if cum_advanced && self.tlp_on() {
            self.arm_pto(now);
        }
        self.txlog
            .on_verified_echo(ack.ts_echo, self.board.snd_una(), self.rtt.srtt());
    }

    /// The checks that drop an ACK whole, counting why (module doc, "Hostile ACKs"). An acceptable
    /// ACK gives the delivery state of the transmission it echoes.
    fn ack_acceptable(&mut self, now: Nanos, ack: &AckSegment) -> Option<TxSnapshot> {
        let r = &mut self.rejected;
        if ack.n_sack as usize > MAX_SACK_BLOCKS {
            r.too_many_blocks += 1;
        } else if ack.rx_time > now {
            r.rx_time_future += 1;
        } else if let Some(snap) = self.txlog.echoed(ack) {
            return Some(snap);
        } else {
            r.unknown_echo += 1;
        }
        None
    }

    /// A SACK block an honest receiver can send (after this ACK's cumulative point is taken): non-empty,
    /// above the ACK's own cumulative point, not beyond snd_nxt, and not covering snd_una — the
    /// receiver's cumulative ACK always names a packet it lacks and never goes back, so no block of any
    /// ACK, however reordered, contains the packet at the sender's snd_una. Blocks wholly below snd_una
    /// are stale (a reordered ACK), not hostile: `Some(false)`. `None`: hostile.
    fn sack_block_ok(&self, ack: &AckSegment, b: &SackBlock) -> Option<bool> {
        let (una, nxt) = (self.board.snd_una(), self.board.snd_nxt());
        if b.start >= b.end || b.end > nxt || b.start <= ack.cum_ack {
            return None;
        }
        if b.end <= una {
            return Some(false);
        }
        (b.start > una).then_some(true)
    }

    /// Moves snd_una to the cumulative ACK (at most snd_nxt) and restarts the RTO timer (RFC 6298
    /// §5.3). Returns the packets this newly delivered (those not SACKed before), or `None` if snd_una
    /// did not move.
    fn advance_cum_ack(&mut self, now: Nanos, cum: u64) -> Option<u64> {
        debug_assert!(cum <= self.board.snd_nxt());
        if cum <= self.board.snd_una() {
            return None;
        }
        self.stats.acked_bytes += self.app.payload_bytes(self.board.snd_una(), cum);
        let newly = self.board.advance(cum);
        self.rtt.reset_backoffs();
        self.rto_deadline = if self.board.outstanding() > 0 {
            Some(now + self.rtt.rto())
        } else {
            None
        };
        Some(newly)
    }

    /// Takes the ACK's SACK blocks into the scoreboard; returns packets newly SACKed.
    fn apply_sack(&mut self, ack: &AckSegment) -> u64 {
        if !self.cfg.sack {
            return 0;
        }
        let mut n = 0;
        // A D-SACK block reports a duplicate, not new data (`take_dsack`).
        let skip = ack.dsack as usize;
        for b in ack.sack_blocks().iter().skip(skip) {
            match self.sack_block_ok(ack, b) {
                Some(true) => n += self.board.apply_sack_block(*b),
                Some(false) => {}
                None => self.rejected.bad_sack_blocks += 1,
            }
        }
        n
    }

    /// The RTT sample from the echoed timestamp of the packet that triggered this ACK, if the ACK
    /// delivered something or is a duplicate (not for an ACK of old data already covered).
    fn take_rtt_sample(
        &mut self,
        now: Nanos,
        ack: &AckSegment,
        informative: bool,
        rack_echo: bool,
    ) -> Option<Nanos> {
        if rack_echo {
            self.recovery.on_echo(now, ack.ts_echo);
        }
        if !informative || ack.ts_echo > now {
            return None;
        }
        let r = now - ack.ts_echo;
        self.rtt.update(r);
        self.stats.rtt_samples += 1;
        self.stats.rtt_sum_ns += r as u128;
        self.stats.last_rtt = r;
        if self.win_stats.window.contains(now) {
            self.win_stats.rtt.record(r);
        }
        Some(r)
    }

    #[allow(clippy::too_many_arguments)]
    fn inform_algorithm(
        &mut self,
        now: Nanos,
        ack: &AckSegment,
        newly: u64,
        cum_advanced: bool,
        rtt: Option<Nanos>,
        rate: Option<RateSample>,
        losses: Losses,
    ) {
        let sample = AckSample {
            now,
            newly_acked: newly as u32,
            cum_advanced,
            rtt,
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min_rtt(),
            in_flight: self.pipe() as u32,
            delivered: self.rate.delivered(),
            // Only fast recovery holds the window: after an RTO the sender slow-starts while it
            // resends the lost packets (RFC 5681 §3.1), so the algorithm must see those ACKs as
            // normal ones, or cwnd stays at 1 until the whole pre-RTO flight is repaired.
            in_recovery: self.recovery.in_fast_recovery(),
            app_limited: self.app_limited,
            ecn_echo: ack.ece,
            echo_field: ack.echo_field,
            acked_seq: ack.acked_seq,
            acked_flags: ack.acked_flags,
            acked_bytes: ack.acked_bytes,
            rx_time: ack.rx_time,
            lost: losses.total,
            newly_lost: losses.newly.min(u32::MAX as u64) as u32,
            rate,
        };
        self.cc.on_ack(&sample);
    }
}

#[path = "sender_recovery.rs"]
mod sender_recovery;

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
