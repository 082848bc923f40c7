//! The sender's state machine (§4.2, §4.3): handshake and start-up sequence, congestion avoidance with
//! rules (a)–(d) at each probe ACK and rate changes at least T apart, the probe and pair schedule,
//! late-probe quiescence, and the [`CongestionControl`] hooks that drive it (the output is pacing at
//! S_target).

use super::model::{b_target, back_solve_n_d, probe_spacing_ms, s_target_shared, s_target_startup};
use super::{Madison, Phase};
use crate::cc::{flags, AckSample, CongestionControl, LossEvent, SendCtx, TimeoutEvent};
use crate::rng;
use crate::time::{from_ms, Nanos, NS_PER_MS, NS_PER_SEC};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    Pair,
    Probe,
}

/// The start-up sequence of §4.2 (one slot per 15 ms).
pub(super) const STARTUP: [Slot; 10] = [
    Slot::Pair,
    Slot::Probe,
    Slot::Probe,
    Slot::Probe,
    Slot::Probe,
    Slot::Pair,
    Slot::Probe,
    Slot::Probe,
    Slot::Probe,
    Slot::Probe,
];

/// A rate change made with eq. (14), kept for the n_D back-solve (DECISION 10).
#[derive(Clone, Copy, Debug)]
pub(super) struct Change {
    pub(super) s_old: f64,
    pub(super) s: f64,
    pub(super) x_xt: f64,
    pub(super) n_d: f64,
}

impl Madison {
    // ---- start-up ----------------------------------------------------------------------------------

    fn begin_startup(&mut self, now: Nanos) {
        self.phase = Phase::Startup;
        self.seq_start = now;
        self.next_slot = 0;
        self.ready.clear();
        self.allowance = 0;
        self.startup_rtts.clear();
        let span = from_ms(self.cfg.startup_spacing * 1e3 * (STARTUP.len() - 1) as f64);
        self.startup_deadline = now + span + 2 * self.handshake_rtt + 200 * NS_PER_MS;
        self.open_slots(now);
    }

    fn slot_time(&self, k: usize) -> Nanos {
        self.seq_start + from_ms(self.cfg.startup_spacing * 1e3 * k as f64)
    }

    fn open_slots(&mut self, now: Nanos) {
        while self.next_slot < STARTUP.len() && self.slot_time(self.next_slot) <= now {
            let slot = STARTUP[self.next_slot];
            self.ready.push_back(slot);
            self.allowance += if slot == Slot::Pair { 2 } else { 1 };
            self.next_slot += 1;
        }
    }

    /// Ends start-up when the ACKs DECISION 2 needs are in (`force`: at the deadline, with what is in).
    fn try_finish_startup(&mut self, now: Nanos, force: bool) {
        let Some(a) = self.a() else {
            if force {
                self.begin_startup(now); // no pair sample at all: send the sequence again
            }
            return;
        };
        let slow = self.cfg.startup_spacing * 1e3 < 20.0 * a;
        let need = if slow { 8 } else { 4 };
        let rtts: Vec<(Nanos, f64)> = if self.startup_rtts.len() >= need {
            if slow {
                self.startup_rtts.iter().step_by(2).copied().collect()
            } else {
                self.startup_rtts[..4].to_vec()
            }
        } else if force && !self.startup_rtts.is_empty() {
            self.startup_rtts.clone()
        } else {
            if force {
                self.begin_startup(now);
            }
            return;
        };
        self.rtts = rtts.into_iter().collect();
        self.spacing_ms = probe_spacing_ms(
            a,
            self.cfg.tprobe,
            self.cfg.probe_spacing_min * 1e3,
            self.cfg.probe_spacing_max * 1e3,
        );
        self.loss.reset_p(self.cfg.p_init);
        self.b_target = b_target(self.loss.p(), self.cfg.ratio, self.cfg.p_min);
        self.phase = Phase::First;
        self.ready.clear();
        self.allowance = 0;
        // The first S_target: eq. (13) with S_old = 0 (the flow has sent almost nothing yet).
        let m = self.current_measures().expect("C and RTT_avg are known");
        self.m = Some(m);
        self.b_size = self.b_size.max(m.big_b);
        let s = s_target_startup(self.b_target, a, m.u, 0.0).max(self.rate_floor());
        self.apply_rate(now, s, None);
        self.next_probe = now;
        self.next_pair = now + from_ms(self.rtt_avg_ms().unwrap_or(0.0));
    }

    // ---- congestion avoidance ----------------------------------------------------------------------

    fn apply_rate(&mut self, now: Nanos, s: f64, change: Option<Change>) {
        self.s = s;
        self.last_change = now;
        self.changed_once = true;
        self.recompute_pending = false;
        self.change = change;
        self.b_hist.clear();
    }

    /// A recompute of S_target, deferred to the end of the T window if a change was made less than T
    /// ago (DECISION 7).
    fn request_recompute(&mut self, now: Nanos) {
        if self.changed_once && now < self.last_change + self.t_change() {
            self.recompute_pending = true;
        } else {
            self.recompute(now);
        }
    }

    fn recompute(&mut self, now: Nanos) {
        let (Some(a), Some(m)) = (self.a(), self.current_measures()) else {
            self.recompute_pending = true; // no RTT_avg (right after an RTO): at the next probe ACK
            return;
        };
        let b = self.b_target;
        let s_old = self.s;
        let (s, change) = match self.phase {
            Phase::Shared => (
                s_target_shared(b, a, m.x_xt, self.n_d, s_old),
                Some(Change {
                    s_old,
                    s: 0.0,
                    x_xt: m.x_xt,
                    n_d: self.n_d,
                }),
            ),
            _ => (s_target_startup(b, a, m.u, s_old), None),
        };
        let s = s.max(self.rate_floor());
        self.apply_rate(now, s, change.map(|c| Change { s, ..c }));
    }

    /// §4.3 step (2): one probe ACK with RTT `rtt_ms` of a probe sent at `sent`.
    pub fn on_probe_ack(&mut self, now: Nanos, sent: Nanos, rtt_ms: f64) {
        // (a) RTT_min (also updated from every ACK in on_ack) and RTT_avg over the latest probes.
        self.rtt_min = self.rtt_min.min(rtt_ms);
        self.rtts.push_back((sent, rtt_ms));
        while self.rtts.len() > self.cfg.rtt_samples {
            self.rtts.pop_front();
        }
        let Some(m) = self.current_measures() else {
            return;
        };
        self.m = Some(m);
        self.b_size = self.b_size.max(m.big_b);
        if self.recompute_pending && now >= self.last_change + self.t_change() {
            self.recompute(now);
        }
        // (b) a loss event (or more lost packets of the current one, DECISION 11), else (c).
        if self.loss.on_probe_ack() {
            self.b_target = b_target(self.loss.p(), self.cfg.ratio, self.cfg.p_min);
            self.request_recompute(now);
            return;
        }
        // (d) the backlog rule, on fresh samples only (DECISION 6).
        let fresh =
            !self.cfg.fresh_samples || self.rtts.iter().all(|&(t, _)| t >= self.last_change);
        if !fresh {
            return;
        }
        let b = self.b_target; // DECISION 13: the current b_target
        let bb = m.b;
        let prev = self.prev_b.replace(bb);
        self.b_hist.push_back(bb);
        while self.b_hist.len() > 2 {
            self.b_hist.pop_front();
        }
        let within = (bb - b).abs() <= self.cfg.near * b;
        // DECISION 5: two consecutive samples on opposite sides of the band also "achieved" the target.
        let crossed = prev.is_some_and(|pb| {
            (pb < b * (1.0 - self.cfg.near) && bb > b * (1.0 + self.cfg.near))
                || (pb > b * (1.0 + self.cfg.near) && bb < b * (1.0 - self.cfg.near))
        });
        if within || (self.phase == Phase::First && crossed) {
            self.n_d = m.n;
            self.phase = Phase::Shared;
            return;
        }
        let lo = b * (1.0 - self.cfg.far);
        let hi = b * (1.0 + self.cfg.far);
        let off_same_side = self.b_hist.len() == 2
            && (self.b_hist.iter().all(|&x| x > hi) || self.b_hist.iter().all(|&x| x < lo));
        if !off_same_side {
            return;
        }
        if self.phase == Phase::Shared {
            let a = self.a().expect("C is known after start-up");
            let b_hat = self.b_hist.iter().sum::<f64>() / 2.0;
            let solved = self
                .change
                .take()
                .and_then(|ch| back_solve_n_d(a, ch.x_xt, ch.n_d, ch.s_old, ch.s, b_hat));
            self.n_d = match solved {
                Some(n_d) => n_d,
                None if self.cfg.nd_fallback => m.n,
                None => self.n_d,
            };
        }
        self.b_hist.clear();
        self.request_recompute(now);
    }

    pub(super) fn draw_probe_gap(&mut self) -> Nanos {
        let mean_ms = if self.s > 0.0 {
            (1.0 / self.s).max(self.spacing_ms)
        } else {
            self.spacing_ms
        };
        let u = rng::uniform(&mut self.rng);
        from_ms(-mean_ms * (1.0 - u).ln()).max(1)
    }

    fn quiesce(&mut self, now: Nanos) {
        self.quiesced = true;
        self.quiesce_until = now + NS_PER_SEC; // DECISION 8 safety net
    }

    fn late_deadline(&self, sent: Nanos) -> Nanos {
        let rtt = self.rtt_avg_ms().unwrap_or(if self.rtt_min.is_finite() {
            self.rtt_min
        } else {
            1000.0
        });
        sent + from_ms(rtt + self.spacing_ms)
    }

    fn on_pair_ack(&mut self, ack: &AckSample) {
        if let Some(bps) = self.pairs.on_ack(ack, self.header_bytes) {
            // C in Mbit/s (= kbit/ms, the paper's unit).
            self.pair_samples.push(bps / 1e6);
            if self.cfg.capacity_mbps <= 0.0 {
                self.c_est = Some(median(&self.pair_samples));
            }
        }
    }
}

fn median(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl CongestionControl for Madison {
    fn name(&self) -> &'static str {
        "madison"
    }

    /// Rate-based: the window never binds (the transport caps it at its maximum window).
    fn cwnd(&self) -> f64 {
        1e9
    }

    fn pacing_rate_bps(&self) -> Option<f64> {
        (self.s > 0.0).then(|| self.s_target_bps())
    }

    fn quiesced(&self) -> bool {
        match self.phase {
            Phase::Handshake | Phase::Startup => self.allowance == 0,
            Phase::First | Phase::Shared => self.quiesced,
        }
    }

    fn on_send(&mut self, ctx: &mut SendCtx) {
        self.loss.on_send(ctx.seq, ctx.retransmit);
        let now = ctx.now;
        if ctx.flags & flags::PAIR_SECOND != 0 {
            ctx.flags |= flags::ACK_NOW;
            if self.pair_second_due {
                self.pair_second_due = false;
                self.allowance = self.allowance.saturating_sub(1);
            }
            return;
        }
        if self.pair_second_due {
            // The transport had nothing to send as the pair's second packet: that slot is void.
            self.pair_second_due = false;
            self.allowance = self.allowance.saturating_sub(1);
        }
        match self.phase {
            Phase::Handshake => {
                self.allowance = self.allowance.saturating_sub(1);
                ctx.flags |= flags::ACK_NOW;
            }
            Phase::Startup => {
                self.allowance = self.allowance.saturating_sub(1);
                match self.ready.pop_front() {
                    Some(Slot::Pair) if !ctx.retransmit => {
                        ctx.flags |= flags::PAIR_FIRST | flags::ACK_NOW;
                        self.pair_second_due = true;
                        self.pairs_sent += 1;
                    }
                    Some(Slot::Pair) => {
                        // A retransmission took the pair's slot: send it as a probe, void the second.
                        self.allowance = self.allowance.saturating_sub(1);
                        ctx.flags |= flags::PROBE | flags::ACK_NOW;
                    }
                    _ => ctx.flags |= flags::PROBE | flags::ACK_NOW,
                }
            }
            Phase::First | Phase::Shared => {
                if self.pairs_sent < self.cfg.pairs && now >= self.next_pair && !ctx.retransmit {
                    ctx.flags |= flags::PAIR_FIRST | flags::ACK_NOW;
                    self.pairs_sent += 1;
                    let rtt = self.rtt_avg_ms().unwrap_or(self.rtt_min);
                    self.next_pair = now + from_ms(if rtt.is_finite() { rtt } else { 100.0 });
                } else if now >= self.next_probe {
                    ctx.flags |= flags::PROBE | flags::ACK_NOW;
                    self.expected.push_back((ctx.seq, now));
                    self.next_probe = now + self.draw_probe_gap();
                }
            }
        }
    }

    fn on_ack(&mut self, ack: &AckSample) {
        let now = ack.now;
        if self.quiesced && ack.acked_flags & flags::ACK_NOW != 0 {
            // DECISION 8: the next ACK the paper's probe-only receiver would also have sent (a probe's
            // or a pair's) ends quiescence; ACKs of ordinary packets do not.
            self.quiesced = false;
        }
        let rtt_ms = ack.rtt.map(|r| r as f64 / NS_PER_MS as f64);
        if let Some(r) = rtt_ms {
            self.rtt_min = self.rtt_min.min(r); // DECISION 1
        }
        self.on_pair_ack(ack);
        self.loss.on_ack(ack.acked_seq, ack.acked_flags);
        if ack.in_flight == 0 {
            self.expected.clear(); // everything is acknowledged: no probe is still expected
        }
        match self.phase {
            Phase::Handshake => {
                if let Some(r) = ack.rtt {
                    self.handshake_rtt = r;
                    self.begin_startup(now);
                }
            }
            Phase::Startup => {
                if let (Some(r), true) = (rtt_ms, ack.acked_flags & flags::PROBE != 0) {
                    self.startup_rtts.push((now - ack.rtt.unwrap_or(0), r));
                    self.try_finish_startup(now, false);
                }
            }
            Phase::First | Phase::Shared => {
                if let (Some(r), true) = (rtt_ms, ack.acked_flags & flags::PROBE != 0) {
                    if let Some(i) = self.expected.iter().position(|&(s, _)| s == ack.acked_seq) {
                        self.expected.remove(i);
                    }
                    let sent = now.saturating_sub(ack.rtt.unwrap_or(0));
                    self.on_probe_ack(now, sent, r);
                }
            }
        }
    }

    fn on_loss(&mut self, _ev: &LossEvent) {
        // DECISION 11: applied at the next probe ACK, rule (b); lost packets are counted in on_send.
        self.loss.on_event();
    }

    fn on_timeout(&mut self, ev: &TimeoutEvent) {
        let now = ev.now;
        self.quiesced = false;
        self.loss.on_event(); // DECISION 9/11: the RTO is a loss event
        match self.phase {
            // The first packet (our SYN) is resent by the transport: let it go.
            Phase::Handshake => self.allowance = self.allowance.max(1),
            // The transport resends what is outstanding; the sequence starts again after it.
            Phase::Startup => {
                self.allowance = 0;
                self.begin_startup(now);
            }
            // DECISION 9: keep S_target, restart probing.
            Phase::First | Phase::Shared => {
                self.expected.clear();
                self.rtts.clear();
                self.b_hist.clear();
                self.next_probe = now;
            }
        }
    }

    /// Nothing to undo here. Madison is rate-based (the window never binds) and its rate follows p, the
    /// loss-event rate; the estimator already takes spurious retransmissions back packet by packet (the
    /// original's ACK arriving after the retransmission was sent un-deems the packet, DECISION 11), so an
    /// event whose losses were all spurious is applied with the paper's minimum of one packet. The
    /// probing restarted by an RTO measures the same path again and changes no target (DECISION 9).
    fn undo_cwnd(&mut self, _prior_cwnd: f64, _prior_ssthresh: f64) {}

    fn next_timer(&self) -> Option<Nanos> {
        let mut t: Option<Nanos> = None;
        let mut take = |x: Nanos| t = Some(t.map_or(x, |y| y.min(x)));
        match self.phase {
            Phase::Handshake => {}
            Phase::Startup => {
                if self.next_slot < STARTUP.len() {
                    take(self.slot_time(self.next_slot));
                }
                take(self.startup_deadline);
            }
            Phase::First | Phase::Shared => {
                if self.quiesced {
                    take(self.quiesce_until);
                } else if let Some(&(_, sent)) = self.expected.front() {
                    take(self.late_deadline(sent));
                }
                if self.recompute_pending && !self.rtts.is_empty() {
                    take(self.last_change + self.t_change());
                }
            }
        }
        t
    }

    fn on_timer(&mut self, now: Nanos) {
        match self.phase {
            Phase::Handshake => {}
            Phase::Startup => {
                self.open_slots(now);
                if now >= self.startup_deadline {
                    self.try_finish_startup(now, true);
                }
            }
            Phase::First | Phase::Shared => {
                if self.quiesced && now >= self.quiesce_until {
                    self.quiesced = false;
                }
                let mut late = false;
                while let Some(&(_, sent)) = self.expected.front() {
                    if self.late_deadline(sent) > now {
                        break;
                    }
                    self.expected.pop_front();
                    late = true;
                }
                if late && !self.quiesced {
                    self.quiesce(now);
                }
                if self.recompute_pending
                    && !self.rtts.is_empty()
                    && now >= self.last_change + self.t_change()
                {
                    self.recompute(now);
                }
            }
        }
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let m = self.m;
        let nan = f64::NAN;
        let phase = match self.phase {
            Phase::Handshake => 0.0,
            Phase::Startup => 1.0,
            Phase::First => 2.0,
            Phase::Shared => 3.0,
        };
        out.push(("phase", phase));
        out.push((
            "S_target_bps",
            if self.s > 0.0 {
                self.s_target_bps()
            } else {
                nan
            },
        ));
        out.push(("S_target", if self.s > 0.0 { self.s } else { nan }));
        out.push(("b_target", self.b_target));
        out.push(("p", self.loss.p()));
        out.push(("C_est", self.c_est.unwrap_or(nan)));
        out.push(("rtt_avg", self.rtt_avg_ms().map_or(nan, |x| x / 1e3)));
        out.push((
            "rtt_min",
            if self.rtt_min.is_finite() {
                self.rtt_min / 1e3
            } else {
                nan
            },
        ));
        out.push(("b_bar", m.map_or(nan, |m| m.b)));
        out.push(("B_bar", m.map_or(nan, |m| m.big_b)));
        out.push(("B_size", m.map_or(nan, |_| self.b_size)));
        out.push(("U", m.map_or(nan, |m| m.u)));
        out.push(("X_xt_bps", m.map_or(nan, |m| m.x_xt * self.pkt_kbits * 1e6)));
        out.push(("n", m.map_or(nan, |m| m.n)));
        out.push((
            "n_D",
            if self.phase == Phase::Shared {
                self.n_d
            } else {
                nan
            },
        ));
        out.push(("quiesced", if self.quiesced { 1.0 } else { 0.0 }));
    }
}
