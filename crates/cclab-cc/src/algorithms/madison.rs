//! TCP-Madison: G. Kola and M. K. Vernon, "Target bandwidth sharing using endhost measures", Performance
//! Evaluation 64 (2007) (`seeds/000_…`). Digest: `ALGORITHMS.md` §6; user notes and measured results:
//! `docs/algorithms/madison.md`.
//!
//! A rate-based sender: packets are paced at S_target with a window too large to bind. S_target is the
//! rate at which this flow's average backlog at the bottleneck is expected to equal b_target(p), from
//! Little's law and an M/D/1 model of the bottleneck.
//!
//! # Units
//! As in the paper: time in ms, C in Mbit/s = kbit/ms, rates S and X in packets/ms, backlogs in packets.
//! `a` = 12/C is the bottleneck service time of one packet (ms), generalised to the configured wire
//! packet size (a = packet kbit / C; 12 kbit for the default 1500-byte packet).
//!
//! # Equations (numbers as in the paper)
//! * (3)  b_target = (2/7)·ratio·(9 + √(25 + 56/p)), ratio = d̄/RTT_norm = 0.0235; p is clamped to
//!   p_min (Table 2) inside the formula only.
//! * (4)  b̄ = S·d̄, d̄ = RTT_avg − RTT_min.     (5) a = 12/C.     (6) B̄ = d̄/a (total backlog).
//! * (7), (8) M/D/1: d̄ ≈ U·a/(2(1 − U))  ⇒  U = 2B̄/(2B̄ + 1).
//! * (9)  U_flow = S·a.     (10) X_xt = (U − U_flow)/a (clamped at 0).
//! * (11) n = C·U/(12·S) = U/U_flow (DECISION 3).
//! * (12) S·a/(2(1 − U_new)) = b_target (no U_new factor in the numerator, as the paper writes it).
//! * (13) start-up: U_new = max(0, U − S_old·a) + S·a ⇒ S = 2b(1 − U0)/(a(1 + 2b)).
//! * (14) afterwards: U_new = [max(0, X_xt − (n_D − 1)·S_old) + n_D·S]·a ⇒
//!   S = 2b(1 − a·X')/(a(1 + 2b·n_D)); n_D back-solved from the achieved backlog (§3.4).
//! * §4.3 (2b) loss event: p = (lost + 1)/(sent since last loss + 1/p); (2c) q > 10/p ⇒ p = 1/q.
//!
//! # Protocol (§4.2, §4.3)
//! 1. **Handshake**: the first data packet plays the SYN (ACK_NOW); nothing else leaves until its ACK.
//! 2. **Start-up**: at a fixed 15 ms spacing a packet pair, 4 probes, a pair, 4 probes (probes carry
//!    PROBE | ACK_NOW: our header's ACK-request bit, DECISION 1). First estimates (DECISION 2), p = p_init,
//!    b_target, S_target (eq. 13 with S_old = 0), desired probe spacing clamp(tProbe*·a, 15, 100) ms.
//! 3. **Congestion avoidance**: pace at S_target; the first packet at or after each point of an
//!    exponential (Poisson) schedule with mean max(1/S_target, desired spacing) is a probe; a pair per
//!    RTT_avg until 20 pairs. On each probe ACK the rules (a)–(d) of §4.3 run ([`Madison::on_probe_ack`]).
//! 4. A probe ACK later than send time + RTT_avg + desired spacing quiesces the sender until the next ACK
//!    or the RTO (DECISION 8).
//!
//! # DECISIONs (ALGORITHMS.md §6 and ours; each also in docs/algorithms/madison.md)
//! 1. **ACK request** = the PROBE and ACK_NOW flags of our header; the receiver still ACKs every packet
//!    (it may, §4.1), and only ACKs whose echoed flags carry PROBE feed RTT_avg. RTT_min takes every RTT
//!    sample the flow gets (probes, pairs, ordinary ACKs): it is a minimum, more samples only sharpen it.
//! 2. **First estimates** from the first pair and the first 4 probe ACKs; if 15 ms < 20·a (C < 16 Mbit/s
//!    at 1500 B), from all 8 probes, using every other one, and both pairs. If the sequence's ACKs are
//!    not all back by the last slot + 2·(handshake RTT) + 200 ms, start-up ends with what has arrived
//!    (at least one probe and one pair); with no pair sample it is sent again.
//! 3. **n = U/U_flow = C·U/(12·S)** (eq. 11's second form); eq. 11's first form B̄/b̄ equals C/(12·S) by
//!    (4) and (6), which ignores U. n is never below 1 (this flow itself).
//! 4. **C** = the median of the pair dispersions so far (up to `pairs` = 20): robust to both widening
//!    (another packet queued between the pair) and compression. Sample = wire bits of the second packet /
//!    (receiver arrival time of the second − of the first).
//! 5. **Leaving the start-up form (13)** for (14): when a b̄ is within 20% of b_target (the paper), or when
//!    two consecutive b̄ lie on opposite sides of the ±20% band (the backlog passed through the target
//!    between two samples: it was "achieved"). Without the second rule a flow alone on a link, whose
//!    paced packets never queue, would stay in the start-up form forever.
//! 6. **Fresh samples**: b̄ values count for rule (d) only when every RTT in the RTT_avg window comes
//!    from a probe sent after the last rate change (`fresh_samples`, default on): otherwise a flow whose
//!    RTT exceeds T = 200 ms would judge each new rate by measurements of the old one.
//! 7. **Rate changes at least T = 200 ms apart**; a recompute that is blocked is deferred to the end of
//!    the 200 ms (with the measurements of that moment), not dropped.
//! 8. **Late probe**: an ACK not back by send time + RTT_avg + desired probe spacing. The sender stops
//!    until the next ACK *of a probe or a pair* (an ACK the paper's probe-only receiver would also have
//!    sent) or the RTO. Our receiver ACKs every packet; resuming on any ACK would end quiescence within
//!    one packet time and remove the paper's "coarse-grained ACK clocking". As a safety net (the
//!    transport arms no RTO when nothing is outstanding) quiescence also ends after 1 s.
//! 9. **RTO** (not in the paper): the transport retransmits; S_target is kept; probing restarts (the
//!    probe schedule and the RTT_avg window start afresh; RTT_min is kept). The RTO is a loss event for
//!    p (DECISION 11): a real sender knows a packet was lost.
//! 10. **Back-solving n_D** (§3.4): when rule (d) is about to recompute S_target after a change made with
//!     eq. (14), the achieved backlog b̂ (mean of the two b̄ that triggered it) is put into eq. (12) with
//!     that change's S_old, S, X_xt and n_D. Case X_xt − (n_D − 1)·S_old > 0:
//!     n_D = (1 − a·X_xt − a·S_old − a·S/(2b̂))/(a·(S − S_old)), skipped when |S − S_old| < 5%·S_old
//!     (the guard); otherwise n_D = 1/(a·S) − 1/(2b̂). A result is used only if 1 ≤ n_D ≤ 1/(a·S)
//!     (n_D flows at rate S cannot carry more than the link). In overload the back-solve is usually
//!     refused (U saturates at ≈ 1, so U_new − U ≈ 0); `nd_fallback = true` (off by default, not in the
//!     paper) then sets n_D to the current eq. (11) n instead of keeping the old n_D.
//! 11. **Lost packets and loss events** (§4.3 (2b) counts *packets*: p = (# lost + 1)/(# sent since
//!     last loss + 1/p)). A packet counts as lost when the transport retransmits it (`SendCtx::retransmit`:
//!     RFC 6675 SACK loss marks, retransmissions found lost again, NewReno partial ACKs, the RTO's
//!     go-back), and is un-counted when the ACK of its *original* transmission arrives after the
//!     retransmission left (the echoed flags lack RETX: a spurious retransmission, RFC 3522 Eifel
//!     detection). RTO go-back retransmissions count: the go-back is paced at S_target, so a packet is
//!     resent about one RTO after its original, which, if merely delayed, has by then been SACKed (and is
//!     skipped) or is detected as spurious. A loss *event* is the transport's signal (at most one per
//!     window of data) or an RTO; several before the next probe ACK are one. It is applied at the next
//!     probe ACK (rule (b)) with the packets counted since it was signalled (≥ 1); packets of the same
//!     episode found later (later SACKs, lost retransmissions, the RTO) — or proven spurious — *re-apply
//!     that event* at the next probe ACK, p = (L + 1)/(q + 1/p_before) with its own q and p_before, so
//!     the episode is charged once, in full, and p reacts within a probe spacing. Losses found with no
//!     event applied (before the first, or after rule (c)) go to the next event. Before this the count
//!     was the transport's `LossEvent::lost`, the packets found lost at the trigger only: p was 10-80×
//!     below the link's drop fraction. "Packets sent" counts every transmission, retransmissions included.
//! 12. **Rate floor** 1 packet per `probe_spacing_max` (100 ms): the closed forms never reach 0 (U < 1)
//!     but may get tiny, and a flow must keep probing to notice that the path has cleared.
//! 13. **b_target in rule (d)** is the current one (p may have changed since start-up).

use std::collections::{BTreeMap, VecDeque};

use crate::cc::{flags, AckSample, CongestionControl, LossEvent, SendCtx, TimeoutEvent};
use crate::packet_pair::PairMatcher;
use crate::params::{ParamError, ParamReader, Params};
use crate::registry::SenderEnv;
use crate::rng::{self, SimRng};
use crate::time::{from_ms, Nanos, NS_PER_MS, NS_PER_SEC};

// ---------------------------------------------------------------------------------------------------
// The paper's formulas as pure functions (units: ms, Mbit/s = kbit/ms, packets, packets/ms).

/// Eq. (3): the target average backlog (packets) for loss-event rate `p`; `p` is clamped to `p_min`
/// inside the formula only. `ratio` = d̄/RTT_norm (0.0235).
pub fn b_target(p: f64, ratio: f64, p_min: f64) -> f64 {
    2.0 / 7.0 * ratio * (9.0 + (25.0 + 56.0 / p.max(p_min)).sqrt())
}

/// Eq. (8): M/D/1 utilisation from the average total backlog B̄ (packets).
pub fn utilization(big_b: f64) -> f64 {
    let b = big_b.max(0.0);
    2.0 * b / (2.0 * b + 1.0)
}

/// Eq. (12)'s left side: the flow's average backlog (packets) when it sends at `s` and the link's
/// utilisation becomes `u_new` (M/D/1 waiting time without the U_new factor, times `s`, Little's law).
pub fn md1_flow_backlog(s: f64, a: f64, u_new: f64) -> f64 {
    s * a / (2.0 * (1.0 - u_new))
}

/// Eq. (13): predicted utilisation when only this flow changes its rate from `s_old` to `s`.
pub fn u_new_startup(a: f64, u: f64, s_old: f64, s: f64) -> f64 {
    (u - s_old * a).max(0.0) + s * a
}

/// Eq. (14): predicted utilisation when `n_d` flows (this one included) move from `s_old` to `s`.
pub fn u_new_shared(a: f64, x_xt: f64, n_d: f64, s_old: f64, s: f64) -> f64 {
    ((x_xt - (n_d - 1.0) * s_old).max(0.0) + n_d * s) * a
}

/// Eqs. (12)+(13) solved for S: S = 2b(1 − U0)/(a(1 + 2b)), U0 = max(0, U − S_old·a).
pub fn s_target_startup(b: f64, a: f64, u: f64, s_old: f64) -> f64 {
    let u0 = (u - s_old * a).max(0.0);
    2.0 * b * (1.0 - u0) / (a * (1.0 + 2.0 * b))
}

/// Eqs. (12)+(14) solved for S: S = 2b(1 − a·X')/(a(1 + 2b·n_D)), X' = max(0, X_xt − (n_D − 1)·S_old).
pub fn s_target_shared(b: f64, a: f64, x_xt: f64, n_d: f64, s_old: f64) -> f64 {
    let x = (x_xt - (n_d - 1.0) * s_old).max(0.0);
    2.0 * b * (1.0 - a * x) / (a * (1.0 + 2.0 * b * n_d))
}

/// §3.4 / DECISION 10: n_D back-solved from eqs. (12)+(14) with the achieved backlog `b_hat` in place
/// of b_target, for a change from `s_old` to `s` predicted with `x_xt` and `n_d_old`. `None` when the
/// guard applies or the result is outside [1, 1/(a·S)].
pub fn back_solve_n_d(
    a: f64,
    x_xt: f64,
    n_d_old: f64,
    s_old: f64,
    s: f64,
    b_hat: f64,
) -> Option<f64> {
    if !(b_hat > 0.0 && s > 0.0 && a > 0.0) {
        return None;
    }
    let n_d = if x_xt - (n_d_old - 1.0) * s_old > 0.0 {
        if (s - s_old).abs() < 0.05 * s_old {
            return None; // S ≈ S_old: the change says nothing about how many flows followed it
        }
        (1.0 - a * x_xt - a * s_old - a * s / (2.0 * b_hat)) / (a * (s - s_old))
    } else {
        1.0 / (a * s) - 1.0 / (2.0 * b_hat)
    };
    (n_d.is_finite() && n_d >= 1.0 && n_d <= 1.0 / (a * s)).then_some(n_d)
}

/// §4.3 (2b): the loss-event rate after a loss event of `lost` packets, `sent` packets after the
/// previous one: (lost + 1)/(sent + 1/p).
pub fn loss_rate_after_event(p: f64, lost: u64, sent: u64) -> f64 {
    (lost as f64 + 1.0) / (sent as f64 + 1.0 / p)
}

/// The applied loss event of an episode: what p was before it and how many packets had been sent
/// since the event before, so it can be re-applied when more of its lost packets are found.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Applied {
    p_before: f64,
    sent: u64,
    lost: u64,
}

/// §4.3 (2b)/(2c) counting lost *packets* (DECISION 11). A packet is deemed lost when the transport
/// retransmits it (SACK loss marks, lost retransmissions, NewReno partial ACKs, the RTO's go-back) and
/// un-deemed when the ACK of its *original* transmission arrives after the retransmission was sent
/// (the echoed flags lack RETX: the retransmission was spurious, RFC 3522 Eifel detection). A loss
/// *event* (the transport's loss signal, or an RTO) opens an episode; it is applied at the next probe ACK
/// with the packets lost in its episode so far; packets of the episode found lost (or spurious) later
/// re-apply the same event, p = (L + 1)/(q + 1/p_before), at the next probe ACK.
/// Rule (2c)'s decay of p when no loss has been seen for long (`loss_decay`, DECISION 15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossDecay {
    /// The paper: q > 10/p ⇒ p = 1/q.
    Paper,
    /// Counting events of L packets (L = the last applied event's lost packets): q > 10·L/p ⇒ p = L/q.
    PerEvent,
}

#[derive(Clone, Debug)]
pub struct LossEstimator {
    p: f64,
    decay: LossDecay,
    /// Packets lost in the last applied event (its final count; 1 before any): L of `PerEvent`.
    event_lost: u64,
    /// Packets sent since the last loss event was applied (q of rule (c)).
    pub sent_since_loss: u64,
    episode: u64,
    /// Packets deemed lost in the current episode (before the first event: carried into it).
    lost: u64,
    /// A loss event signalled, not yet applied.
    pending: bool,
    /// The current episode's applied event (None before the first, and after rule (c)).
    applied: Option<Applied>,
    /// The previous episode's applied event and its final lost count, when that differs from what was
    /// applied (late finds between its application and the next event): re-applied first.
    revise_prev: Option<(Applied, u64)>,
    /// Retransmitted sequence numbers → episode, until their ACK.
    retx: BTreeMap<u64, u64>,
}

/// Retransmitted sequence numbers remembered for spurious-retransmission detection (an ACK lost on the
/// reverse path would otherwise leave its entry for ever).
const RETX_MEMORY: usize = 1 << 16;

impl LossEstimator {
    pub fn new(p: f64) -> Self {
        Self::with_decay(p, LossDecay::Paper)
    }
    pub fn with_decay(p: f64, decay: LossDecay) -> Self {
        LossEstimator {
            p,
            decay,
            event_lost: 1,
            sent_since_loss: 0,
            episode: 0,
            lost: 0,
            pending: false,
            applied: None,
            revise_prev: None,
            retx: BTreeMap::new(),
        }
    }
    pub fn p(&self) -> f64 {
        self.p
    }
    /// Packets deemed lost in the current episode.
    pub fn episode_lost(&self) -> u64 {
        self.lost
    }
    pub fn pending(&self) -> bool {
        self.pending
    }
    /// Start-up ends: p = p_init (the episode counts are kept).
    fn reset_p(&mut self, p: f64) {
        self.p = p;
        self.applied = None;
        self.revise_prev = None;
    }
    /// Every transmission.
    pub fn on_send(&mut self, seq: u64, retransmit: bool) {
        self.sent_since_loss += 1;
        if retransmit {
            self.lost += 1;
            self.retx.insert(seq, self.episode);
            if self.retx.len() > RETX_MEMORY {
                self.retx.pop_first();
            }
        }
    }
    /// Every ACK: `seq` and `fl` are the sequence number and echoed flags of the packet that triggered it.
    pub fn on_ack(&mut self, seq: u64, fl: u8) {
        if let Some(ep) = self.retx.remove(&seq) {
            if fl & flags::RETX == 0 && ep == self.episode {
                // The original arrived: the retransmission was not needed, the packet was not lost.
                self.lost = self.lost.saturating_sub(1);
            }
        }
    }
    /// A loss event (the transport's loss signal or an RTO). Several before the next probe ACK are one.
    pub fn on_event(&mut self) {
        if self.pending {
            return;
        }
        let carried = match self.applied.take() {
            Some(a) => {
                let fin = self.lost.max(1);
                if fin != a.lost {
                    self.revise_prev = Some((a, fin));
                }
                0
            }
            None => self.lost, // losses found before any event (or after rule (c)) belong to this one
        };
        self.episode += 1;
        self.lost = carried;
        self.pending = true;
    }
    /// Rules (b) and (c) at a probe ACK; true when p changed.
    pub fn on_probe_ack(&mut self) -> bool {
        if self.pending {
            if let Some((a, fin)) = self.revise_prev.take() {
                self.p = loss_rate_after_event(a.p_before, fin, a.sent);
            }
            let a = Applied {
                p_before: self.p,
                sent: self.sent_since_loss,
                lost: self.lost.max(1),
            };
            self.p = loss_rate_after_event(a.p_before, a.lost, a.sent);
            self.applied = Some(a);
            self.event_lost = a.lost;
            self.pending = false;
            self.sent_since_loss = 0;
            return true;
        }
        if let Some(a) = self.applied.as_mut() {
            let l = self.lost.max(1);
            if l != a.lost {
                a.lost = l;
                self.event_lost = l;
                self.p = loss_rate_after_event(a.p_before, l, a.sent);
                return true;
            }
        }
        let q = self.sent_since_loss as f64;
        let l = match self.decay {
            LossDecay::Paper => 1.0,
            LossDecay::PerEvent => self.event_lost as f64,
        };
        if q > 10.0 * l / self.p {
            self.p = l / q;
            // The event is long past: later finds (rare) wait for the next event.
            self.applied = None;
            self.lost = 0;
            return true;
        }
        false
    }
}

/// §4.2: the desired average probe spacing (ms), tProbe*·a clamped to [min, max].
pub fn probe_spacing_ms(a: f64, tprobe: f64, min_ms: f64, max_ms: f64) -> f64 {
    (tprobe * a).clamp(min_ms, max_ms)
}

/// The bottleneck measures of §3.3 computed from one set of inputs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Measures {
    /// d̄ = RTT_avg − RTT_min (ms).
    pub d: f64,
    /// Eq. (4) b̄ = S·d̄, this flow's backlog (packets).
    pub b: f64,
    /// Eq. (6) B̄ = d̄/a, total backlog (packets).
    pub big_b: f64,
    /// Eq. (8).
    pub u: f64,
    /// Eq. (9).
    pub u_flow: f64,
    /// Eq. (10), packets/ms, ≥ 0.
    pub x_xt: f64,
    /// Eq. (11) with DECISION 3, ≥ 1.
    pub n: f64,
}

/// §3.3 from RTT_avg, RTT_min (ms), a = packet kbit/C (ms) and this flow's rate `s` (packets/ms).
pub fn measures(rtt_avg: f64, rtt_min: f64, a: f64, s: f64) -> Measures {
    let d = (rtt_avg - rtt_min).max(0.0);
    let big_b = d / a;
    let u = utilization(big_b);
    let u_flow = s * a;
    let x_xt = ((u - u_flow) / a).max(0.0);
    let n = if u_flow > 0.0 {
        (u / u_flow).max(1.0)
    } else {
        1.0
    };
    Measures {
        d,
        b: s * d,
        big_b,
        u,
        u_flow,
        x_xt,
        n,
    }
}

// ---------------------------------------------------------------------------------------------------

/// Parameters (all settable from a flow's `params`; Table 2 defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct MadisonConfig {
    /// d̄/RTT_norm (Table 2: 0.0235).
    pub ratio: f64,
    /// p_min (Table 2: 2.55e-5; §4.1 writes 2.555e-5).
    pub p_min: f64,
    /// p_init (Table 2: 1e-4).
    pub p_init: f64,
    /// T, minimum time between rate changes, seconds (Table 2: 0.2).
    pub t_change: f64,
    /// tProbe*, in bottleneck packet service times (Table 2: 32).
    pub tprobe: f64,
    /// Start-up spacing, seconds (§4.2: 0.015).
    pub startup_spacing: f64,
    /// Clamp of the desired probe spacing, seconds (§4.2: 0.015, 0.1).
    pub probe_spacing_min: f64,
    pub probe_spacing_max: f64,
    /// Packet pairs until C is final (§4.2: 20).
    pub pairs: u32,
    /// Probe RTTs averaged into RTT_avg (§4.3: 6).
    pub rtt_samples: usize,
    /// "within" band of rule (d) (§4.3: 0.2) and the "off" threshold (0.3).
    pub near: f64,
    pub far: f64,
    /// > 0: use this bottleneck capacity (Mbit/s) instead of the pair estimate.
    pub capacity_mbps: f64,
    /// DECISION 6.
    pub fresh_samples: bool,
    /// DECISION 10: n_D = the current n when a miss cannot be back-solved.
    pub nd_fallback: bool,
    /// Rule (2c) (DECISION 15): "paper" (q > 10/p ⇒ p = 1/q, the default) or "per_event".
    pub loss_decay: LossDecay,
}

impl MadisonConfig {
    pub fn from_params(params: &Params) -> Result<Self, ParamError> {
        let mut r = ParamReader::new("madison", params);
        let cfg = MadisonConfig {
            ratio: r.f64_in("ratio", 0.0235, 1e-6, 10.0)?,
            p_min: r.f64_in("p_min", 2.55e-5, 1e-12, 1.0)?,
            p_init: r.f64_in("p_init", 1e-4, 1e-12, 1.0)?,
            t_change: r.f64_in("T", 0.2, 0.0, 60.0)?,
            tprobe: r.f64_in("tprobe", 32.0, 0.0, 1e6)?,
            startup_spacing: r.f64_in("startup_spacing", 0.015, 1e-6, 10.0)?,
            probe_spacing_min: r.f64_in("probe_spacing_min", 0.015, 1e-6, 10.0)?,
            probe_spacing_max: r.f64_in("probe_spacing_max", 0.1, 1e-6, 10.0)?,
            pairs: r.f64_in("pairs", 20.0, 2.0, 1e6)?.round() as u32,
            rtt_samples: r.f64_in("rtt_samples", 6.0, 1.0, 1e4)?.round() as usize,
            near: r.f64_in("near", 0.2, 0.0, 10.0)?,
            far: r.f64_in("far", 0.3, 0.0, 10.0)?,
            capacity_mbps: r.f64_in("capacity_mbps", 0.0, 0.0, 1e9)?,
            fresh_samples: r.bool("fresh_samples", true)?,
            nd_fallback: r.bool("nd_fallback", false)?,
            loss_decay: match r.choice("loss_decay", "paper", &["paper", "per_event"])? {
                "per_event" => LossDecay::PerEvent,
                _ => LossDecay::Paper,
            },
        };
        if cfg.probe_spacing_min > cfg.probe_spacing_max {
            return Err(ParamError {
                field: "probe_spacing_min".into(),
                message: format!(
                    "must be <= probe_spacing_max ({}), got {}",
                    cfg.probe_spacing_max, cfg.probe_spacing_min
                ),
            });
        }
        r.finish()?;
        Ok(cfg)
    }
}

/// Where the flow is (reported as `phase` 0–3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the ACK of the first packet (the SYN of §4.2).
    Handshake,
    /// The 15 ms pair/probe sequence of §4.2.
    Startup,
    /// Congestion avoidance, S_target from eq. (13) (first target not yet achieved).
    First,
    /// Congestion avoidance, S_target from eq. (14).
    Shared,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Pair,
    Probe,
}

/// The start-up sequence of §4.2 (one slot per 15 ms).
const STARTUP: [Slot; 10] = [
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
struct Change {
    s_old: f64,
    s: f64,
    x_xt: f64,
    n_d: f64,
}

pub struct Madison {
    cfg: MadisonConfig,
    /// Wire kbit per full packet (the paper's 12) and header bytes (wire − payload).
    pkt_kbits: f64,
    header_bytes: u32,
    rng: SimRng,
    phase: Phase,

    // ---- start-up
    /// Sends allowed now (handshake and start-up slots).
    allowance: u32,
    /// Slots opened but not sent yet.
    ready: VecDeque<Slot>,
    /// Start of the sequence and the next slot to open.
    seq_start: Nanos,
    next_slot: usize,
    /// End of start-up at the latest (DECISION 2).
    startup_deadline: Nanos,
    handshake_rtt: Nanos,
    /// Start-up probe RTTs (ms) and their send times, in arrival order.
    startup_rtts: Vec<(Nanos, f64)>,
    pair_second_due: bool,

    // ---- capacity (DECISION 4)
    pair_samples: Vec<f64>,
    pairs_sent: u32,
    pairs: PairMatcher,
    next_pair: Nanos,
    c_est: Option<f64>,

    // ---- RTT (ms)
    rtt_min: f64,
    /// Probe RTTs: (probe send time, RTT ms), newest last, at most `rtt_samples`.
    rtts: VecDeque<(Nanos, f64)>,

    // ---- loss-rate estimator
    loss: LossEstimator,

    // ---- control
    b_target: f64,
    /// S_target, packets/ms (0 before start-up ends).
    s: f64,
    n_d: f64,
    last_change: Nanos,
    changed_once: bool,
    recompute_pending: bool,
    change: Option<Change>,
    /// The two latest fresh b̄ values, and the latest one across rate changes (DECISION 5).
    b_hist: VecDeque<f64>,
    prev_b: Option<f64>,
    /// Latest measures (for the time series), B_size = max B̄ seen.
    m: Option<Measures>,
    b_size: f64,

    // ---- probes and quiescence
    spacing_ms: f64,
    next_probe: Nanos,
    expected: VecDeque<(u64, Nanos)>,
    quiesced: bool,
    quiesce_until: Nanos,
}

impl Madison {
    pub fn new(env: &SenderEnv, params: &Params) -> Result<Self, ParamError> {
        let cfg = MadisonConfig::from_params(params)?;
        Ok(Self::with_config(
            cfg,
            env.packet_size,
            env.packet_size.saturating_sub(env.mss),
            env.seed,
        ))
    }

    pub fn with_config(cfg: MadisonConfig, packet_size: u32, header_bytes: u32, seed: u64) -> Self {
        let p = cfg.p_init;
        let b = b_target(p, cfg.ratio, cfg.p_min);
        let spacing_ms = cfg.probe_spacing_min * 1e3;
        Madison {
            pkt_kbits: packet_size as f64 * 8.0 / 1e3,
            header_bytes,
            // A stream of the flow's seed reserved for the probe schedule.
            rng: rng::Stream::Madison.rng(seed, 0),
            phase: Phase::Handshake,
            allowance: 1,
            ready: VecDeque::new(),
            seq_start: 0,
            next_slot: STARTUP.len(),
            startup_deadline: 0,
            handshake_rtt: 0,
            startup_rtts: Vec::new(),
            pair_second_due: false,
            pair_samples: Vec::new(),
            pairs_sent: 0,
            pairs: PairMatcher::default(),
            next_pair: 0,
            c_est: (cfg.capacity_mbps > 0.0).then_some(cfg.capacity_mbps),
            rtt_min: f64::INFINITY,
            rtts: VecDeque::new(),
            loss: LossEstimator::with_decay(p, cfg.loss_decay),
            b_target: b,
            s: 0.0,
            n_d: 1.0,
            last_change: 0,
            changed_once: false,
            recompute_pending: false,
            change: None,
            b_hist: VecDeque::new(),
            prev_b: None,
            m: None,
            b_size: 0.0,
            spacing_ms,
            next_probe: 0,
            expected: VecDeque::new(),
            quiesced: false,
            quiesce_until: 0,
            cfg,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// S_target, packets/ms.
    pub fn s_target(&self) -> f64 {
        self.s
    }
    /// S_target as a wire rate, bit/s.
    pub fn s_target_bps(&self) -> f64 {
        self.s * self.pkt_kbits * 1e6
    }
    pub fn b_target(&self) -> f64 {
        self.b_target
    }
    pub fn p(&self) -> f64 {
        self.loss.p()
    }
    pub fn n_d(&self) -> f64 {
        self.n_d
    }
    /// Capacity estimate, Mbit/s.
    pub fn capacity_mbps(&self) -> Option<f64> {
        self.c_est
    }
    pub fn rtt_avg_ms(&self) -> Option<f64> {
        (!self.rtts.is_empty())
            .then(|| self.rtts.iter().map(|r| r.1).sum::<f64>() / self.rtts.len() as f64)
    }
    pub fn rtt_min_ms(&self) -> f64 {
        self.rtt_min
    }
    pub fn measures_now(&self) -> Option<Measures> {
        self.m
    }
    /// Desired average probe spacing, ms.
    pub fn probe_spacing(&self) -> f64 {
        self.spacing_ms
    }

    /// a = packet kbit / C, ms (eq. 5).
    fn a(&self) -> Option<f64> {
        self.c_est.map(|c| self.pkt_kbits / c)
    }

    fn t_change(&self) -> Nanos {
        crate::time::from_secs(self.cfg.t_change)
    }

    fn rate_floor(&self) -> f64 {
        1.0 / (self.cfg.probe_spacing_max * 1e3)
    }

    fn current_measures(&self) -> Option<Measures> {
        let a = self.a()?;
        let avg = self.rtt_avg_ms()?;
        Some(measures(avg, self.rtt_min, a, self.s))
    }

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
        let b = self.b_target;
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

    fn draw_probe_gap(&mut self) -> Nanos {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;

    const RATIO: f64 = 0.0235;
    const P_MIN: f64 = 2.55e-5;

    fn madison(params: &[(&str, f64)]) -> Madison {
        let p: Params = params
            .iter()
            .map(|(k, v)| (k.to_string(), ParamValue::Num(*v)))
            .collect();
        let env = SenderEnv {
            mss: 1448,
            packet_size: 1500,
            initial_cwnd: 10.0,
            seed: 7,
        };
        Madison::new(&env, &p).unwrap()
    }

    /// Mimics the transport's sender: asks to send at `now` while the algorithm is not quiesced, sends the
    /// pair's second packet right after a PAIR_FIRST. Returns (seq, flags, time) of what left.
    fn send_all(m: &mut Madison, now: Nanos, seq: &mut u64, out: &mut Vec<(u64, u8, Nanos)>) {
        let mut pair_second = false;
        while !m.quiesced() || pair_second {
            let mut ctx = SendCtx {
                now,
                seq: *seq,
                flags: if pair_second {
                    flags::PAIR_SECOND | flags::ACK_NOW
                } else {
                    0
                },
                ..Default::default()
            };
            m.on_send(&mut ctx);
            pair_second = !pair_second && ctx.flags & flags::PAIR_FIRST != 0;
            out.push((*seq, ctx.flags, now));
            *seq += 1;
        }
    }

    /// The ACK of packet (`seq`, `fl`) sent at `sent` with round-trip `rtt`; the receiver saw it at
    /// `rx` (its clock).
    fn ack_of(seq: u64, fl: u8, sent: Nanos, rtt: Nanos, rx: Nanos) -> AckSample {
        AckSample {
            now: sent + rtt,
            newly_acked: 1,
            rtt: Some(rtt),
            acked_seq: seq,
            acked_flags: fl,
            acked_bytes: 1448,
            rx_time: rx,
            in_flight: 5,
            ..Default::default()
        }
    }

    /// Runs the handshake and start-up over a path of capacity `c` Mbit/s and RTT `rtt_ms` whose queue
    /// is empty; returns the flow in congestion avoidance, the next free sequence number and the time.
    fn started(c: f64, rtt_ms: f64) -> (Madison, u64, Nanos) {
        let mut m = madison(&[]);
        let rtt = from_ms(rtt_ms);
        let svc = from_ms(12.0 / c);
        let mut seq = 0;
        let mut sent = Vec::new();
        send_all(&mut m, 0, &mut seq, &mut sent);
        m.on_ack(&ack_of(0, flags::ACK_NOW | flags::FIRST, 0, rtt, rtt / 2));
        let mut now = rtt;
        while m.phase() == Phase::Startup && now < rtt + 2 * NS_PER_SEC {
            if let Some(t) = m.next_timer() {
                if t <= now {
                    m.on_timer(now);
                }
            }
            let k = sent.len();
            send_all(&mut m, now, &mut seq, &mut sent);
            // ACKs of everything sent 1 RTT ago, in order; a pair's second arrives one service time later.
            for &(s, fl, at) in sent[..k].iter().filter(|&&(_, _, at)| at + rtt == now) {
                let extra = if fl & flags::PAIR_SECOND != 0 { svc } else { 0 };
                m.on_ack(&ack_of(s, fl, at, rtt + extra, at + rtt / 2 + extra));
            }
            now += NS_PER_MS;
        }
        (m, seq, now)
    }

    #[test]
    fn b_target_values() {
        // Table 2 / §4.1: b_target(p_min) = 10.
        assert!(
            (b_target(2.55e-5, RATIO, P_MIN) - 10.0).abs() < 0.05,
            "{}",
            b_target(2.55e-5, RATIO, P_MIN)
        );
        // §3.1: 16 at p = 1e-5 — but 1e-5 < p_min, so eq. (3) itself (p_min = 0) gives 15.949.
        assert!((b_target(1e-5, RATIO, 0.0) - 15.9).abs() < 0.1);
        // p_init: the formula gives 5.085, not the 4.33 the paper prints (documented inconsistency).
        let b = b_target(1e-4, RATIO, P_MIN);
        assert!((b - 5.08).abs() < 0.02, "{b}");
        // 4.33 is what ratio 0.0200, or p ≈ 1.385e-4, would give.
        assert!((b_target(1e-4, 0.0200, P_MIN) - 4.33).abs() < 0.005);
        assert!((b_target(1.385e-4, RATIO, P_MIN) - 4.33).abs() < 0.005);
        // p below p_min is clamped inside the formula.
        assert_eq!(b_target(1e-7, RATIO, P_MIN), b_target(P_MIN, RATIO, P_MIN));
    }

    #[test]
    fn md1_measures() {
        // C 100 Mbit/s (a = 0.12 ms), RTT_avg 101.2 ms, RTT_min 100 ms: d̄ 1.2 ms, B̄ = 10, U = 20/21.
        let s = 2.0; // packets/ms = 24 Mbit/s
        let m = measures(101.2, 100.0, 0.12, s);
        assert!((m.d - 1.2).abs() < 1e-12);
        assert!((m.big_b - 10.0).abs() < 1e-9);
        assert!((m.u - 20.0 / 21.0).abs() < 1e-12);
        assert!((m.b - 2.4).abs() < 1e-12); // eq. (4)
        assert!((m.u_flow - 0.24).abs() < 1e-12); // eq. (9)
        assert!((m.x_xt - (20.0 / 21.0 - 0.24) / 0.12).abs() < 1e-9); // eq. (10)
        assert!((m.n - (20.0 / 21.0) / 0.24).abs() < 1e-9); // eq. (11), DECISION 3
                                                            // Eq. (7) inverted: d̄ = U·a/(2(1 − U)).
        assert!((m.u * 0.12 / (2.0 * (1.0 - m.u)) - m.d).abs() < 1e-12);
        // No queue: U = 0, n floored at 1.
        let m = measures(100.0, 100.0, 0.12, s);
        assert_eq!((m.u, m.x_xt, m.n), (0.0, 0.0, 1.0));
    }

    #[test]
    fn closed_forms_satisfy_eq_12() {
        let mut checked = 0;
        for b in [0.5, 4.33, 5.085, 10.0, 16.0] {
            for c in [1.0, 10.0, 100.0, 1000.0] {
                let a = 12.0 / c;
                for u in [0.0, 0.3, 0.9, 0.99] {
                    for so in [0.0, 0.05, 0.3, 0.9] {
                        let s_old = so / a;
                        // Start-up form, eq. (13).
                        let s = s_target_startup(b, a, u, s_old);
                        let un = u_new_startup(a, u, s_old, s);
                        assert!(s > 0.0 && un < 1.0);
                        let lhs = md1_flow_backlog(s, a, un);
                        assert!(
                            (lhs - b).abs() <= 1e-9 * b,
                            "startup b {b} C {c} U {u}: {lhs}"
                        );
                        // Afterwards, eq. (14), for cross traffic a·X < 1 and several n_D.
                        for ax in [0.0, 0.2, 0.6, 0.95] {
                            for n_d in [1.0, 1.5, 3.0, 20.0] {
                                let x = ax / a;
                                let s = s_target_shared(b, a, x, n_d, s_old);
                                let un = u_new_shared(a, x, n_d, s_old, s);
                                assert!(s > 0.0 && un < 1.0);
                                let lhs = md1_flow_backlog(s, a, un);
                                assert!(
                                    (lhs - b).abs() <= 1e-9 * b,
                                    "shared b {b} C {c} X {x} nD {n_d}: {lhs}"
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 5 * 4 * 4 * 4 * 16);
    }

    #[test]
    fn back_solve_recovers_n_d() {
        let a = 0.12;
        // Case X_xt − (n_D − 1)·S_old > 0: the flow predicted with n_D = 2 a decrease from 2.5 to 2.30
        // packets/ms, but 3 flows moved (the link ends at U_new = 0.949 instead of the predicted 0.972).
        let (x, s_old, b) = (6.0, 2.5, 5.0);
        let s = s_target_shared(b, a, x, 2.0, s_old);
        let achieved = md1_flow_backlog(s, a, u_new_shared(a, x, 3.0, s_old, s));
        let n = back_solve_n_d(a, x, 2.0, s_old, s, achieved).unwrap();
        assert!((n - 3.0).abs() < 1e-9, "{n}");
        // Case ≤ 0 (no cross traffic left over): n_D = 1/(a·S) − 1/(2b̂). Predicted with n_D = 4, only
        // 3 flows moved (with X' = 0 the true n_D can exceed the predicted one by at most 1/(2b)).
        let (x, s_old) = (1.0, 1.5);
        let s = s_target_shared(b, a, x, 4.0, s_old);
        let achieved = md1_flow_backlog(s, a, u_new_shared(a, x, 3.0, s_old, s));
        let n = back_solve_n_d(a, x, 4.0, s_old, s, achieved).unwrap();
        assert!((n - 3.0).abs() < 1e-9, "{n}");
        // The guard: S ≈ S_old says nothing (case 1).
        assert_eq!(back_solve_n_d(a, 3.0, 2.0, 1.0, 1.01, 5.0), None);
        // Results outside [1, 1/(a·S)] are refused.
        // (case 2: 1/(a·S) − 1/(2b̂) = 2.08 − 5 < 1: fewer than this flow itself)
        assert_eq!(back_solve_n_d(a, 0.0, 1.0, 1.0, 4.0, 0.1), None);
        assert!(back_solve_n_d(a, 0.0, 1.0, 1.0, 4.0, 100.0).is_some_and(|n| n <= 1.0 / (a * 4.0)));
    }

    #[test]
    fn loss_rate_estimator() {
        // §4.3 (2b): one packet lost 5000 packets after the last loss, p = 1e-4 → 2/15000.
        assert!((loss_rate_after_event(1e-4, 1, 5000) - 2.0 / 15000.0).abs() < 1e-15);
        let (mut m, _, mut now) = started(100.0, 100.0);
        assert_eq!(m.p(), 1e-4);
        // A loss event of 2 packets (counted from the two retransmissions), applied at the next probe ACK.
        m.loss.sent_since_loss = 7998;
        m.on_loss(&LossEvent {
            lost: 1, // the transport's count at the trigger is not used (DECISION 11)
            ..Default::default()
        });
        for seq in [10, 11] {
            m.on_send(&mut SendCtx {
                seq,
                retransmit: true,
                ..Default::default()
            });
        }
        assert_eq!(m.p(), 1e-4, "applied at the next probe ACK, not at once");
        now += 300 * NS_PER_MS;
        m.on_probe_ack(now, now - 100 * NS_PER_MS, 100.0);
        assert!((m.p() - 3.0 / 18000.0).abs() < 1e-15, "{}", m.p());
        assert_eq!(m.loss.sent_since_loss, 0);
        assert!((m.b_target() - b_target(3.0 / 18000.0, RATIO, P_MIN)).abs() < 1e-12);
        // (2c): q > 10/p → p = 1/q (here below p_min: b_target = 10).
        m.loss.sent_since_loss = 60_001;
        now += 300 * NS_PER_MS;
        m.on_probe_ack(now, now - 100 * NS_PER_MS, 100.0);
        assert!((m.p() - 1.0 / 60_001.0).abs() < 1e-18);
        assert!((m.b_target() - 10.0105).abs() < 1e-3);
        // Not yet > 10/p: unchanged.
        let p = m.p();
        m.loss.sent_since_loss = 600_000;
        now += 300 * NS_PER_MS;
        m.on_probe_ack(now, now - 100 * NS_PER_MS, 100.0);
        assert_eq!(m.p(), p);
        let mut out = Vec::new();
        m.state(&mut out);
        assert!(out.iter().any(|&(k, v)| k == "p" && v == p));
    }

    #[test]
    fn loss_decay_per_event() {
        // DECISION 15: with `per_event`, rule (2c) waits for 10 events' worth of packets, 10·L/p, L the
        // last event's lost packets, and sets p = L/q; `paper` (the default) waits for 10/p, p = 1/q.
        let episode = |decay| {
            let mut e = LossEstimator::with_decay(1e-4, decay);
            e.sent_since_loss = 9_980;
            e.on_event();
            for seq in 0..20 {
                e.on_send(seq, true); // 20 packets of the episode retransmitted
            }
            assert!(e.on_probe_ack());
            e
        };
        let p1 = 21.0 / (10_000.0 + 1e4); // (L + 1)/(q + 1/p): 20 sent before + the 20 retransmissions
        for decay in [LossDecay::Paper, LossDecay::PerEvent] {
            assert!((episode(decay).p() - p1).abs() < 1e-15);
        }
        // Paper: fires after 10/p packets without loss.
        let mut e = episode(LossDecay::Paper);
        e.sent_since_loss = (10.0 / p1).floor() as u64 + 1;
        assert!(e.on_probe_ack());
        assert!((e.p() - 1.0 / e.sent_since_loss as f64).abs() < 1e-18);
        // Per event: not yet at 10/p, fires after 10·20/p and sets p = 20/q.
        let mut e = episode(LossDecay::PerEvent);
        e.sent_since_loss = (10.0 / p1).floor() as u64 + 1;
        assert!(!e.on_probe_ack());
        assert_eq!(e.p(), p1);
        let q = (200.0 / p1).floor() as u64 + 1;
        e.sent_since_loss = q;
        assert!(e.on_probe_ack());
        assert!((e.p() - 20.0 / q as f64).abs() < 1e-18);
        // L is remembered after (2c) fired: the next decay again waits for 10·20/p.
        let p2 = e.p();
        e.sent_since_loss = (100.0 / p2) as u64;
        assert!(!e.on_probe_ack());
        e.sent_since_loss = (200.0 / p2) as u64 + 1;
        assert!(e.on_probe_ack());
        // Before any event L = 1: both variants decay p_init alike.
        let mut e = LossEstimator::with_decay(1e-4, LossDecay::PerEvent);
        e.sent_since_loss = 100_001;
        assert!(e.on_probe_ack());
        assert!((e.p() - 1.0 / 100_001.0).abs() < 1e-18);
        // The parameter: default paper, per_event settable, anything else rejected naming the field.
        let cfg = |v: &str| {
            let p: Params = [("loss_decay".to_string(), ParamValue::Str(v.into()))]
                .into_iter()
                .collect();
            MadisonConfig::from_params(&p)
        };
        assert_eq!(
            MadisonConfig::from_params(&Params::new())
                .unwrap()
                .loss_decay,
            LossDecay::Paper
        );
        assert_eq!(cfg("per_event").unwrap().loss_decay, LossDecay::PerEvent);
        assert_eq!(cfg("paper").unwrap().loss_decay, LossDecay::Paper);
        let err = cfg("events").err().unwrap();
        assert_eq!(err.field, "loss_decay");
        assert!(err.message.contains("per_event"), "{}", err.message);
    }

    #[test]
    fn lost_packets_of_an_episode_found_at_different_times() {
        // DECISION 11: every retransmission is a lost packet; those found after the event was applied
        // re-apply the same event; a retransmission whose original is then ACKed was spurious.
        let mut e = LossEstimator::new(1e-4);
        let (mut seq, retx) = (0u64, |e: &mut LossEstimator, s: u64| e.on_send(s, true));
        let mut send = |e: &mut LossEstimator, n: u64| {
            for _ in 0..n {
                e.on_send(seq, false);
                seq += 1;
            }
        };
        send(&mut e, 9000);
        // SACK finds packet 100 lost: the loss event, then its retransmission.
        e.on_event();
        retx(&mut e, 100);
        assert!(e.on_probe_ack());
        let (q1, p1) = (9001, 2.0 / (9001.0 + 1e4));
        assert!((e.p() - p1).abs() < 1e-15, "{}", e.p());
        // Within the same recovery: 3 more holes found by later SACKs, and one retransmission lost again
        // (5 retransmissions in all), all before the next event.
        for s in [101, 105, 107, 100] {
            retx(&mut e, s);
        }
        send(&mut e, 50);
        assert!(e.on_probe_ack(), "the event is re-applied");
        let p2 = 6.0 / (q1 as f64 + 1e4);
        assert!((e.p() - p2).abs() < 1e-15, "{} vs {p2}", e.p());
        assert!(!e.on_probe_ack(), "nothing new: unchanged");
        // The original of 107 arrives after its retransmission was sent (ACK without RETX): spurious.
        e.on_ack(107, 0);
        e.on_ack(105, flags::RETX); // the retransmission of 105 arrived: it was lost
        assert!(e.on_probe_ack());
        assert!((e.p() - 5.0 / (q1 as f64 + 1e4)).abs() < 1e-15);
        // One more hole of this episode found, then (before the next probe ACK) a new event with 2
        // retransmissions: the late find re-applies the old event first, then the new one applies.
        retx(&mut e, 109);
        send(&mut e, 3000);
        let q2 = e.sent_since_loss;
        e.on_event();
        e.on_event(); // a second signal before the probe ACK is the same event
        retx(&mut e, 9500);
        retx(&mut e, 9501);
        assert!(e.on_probe_ack());
        let p_old = 6.0 / (q1 as f64 + 1e4);
        let want = 3.0 / ((q2 + 2) as f64 + 1.0 / p_old); // q counts the 2 retransmissions too
        assert!((e.p() - want).abs() < 1e-15, "{} vs {want}", e.p());
        // An RTO is an event too; its go-back retransmissions are its packets.
        send(&mut e, 400);
        e.on_event();
        for s in 9600..9610 {
            retx(&mut e, s);
        }
        let (pb, q3) = (e.p(), e.sent_since_loss);
        assert!(e.on_probe_ack());
        assert!((e.p() - 11.0 / (q3 as f64 + 1.0 / pb)).abs() < 1e-15);
    }

    #[test]
    fn startup_schedule_and_first_estimates() {
        let (m, _, _) = started(100.0, 100.0);
        assert_eq!(m.phase(), Phase::First);
        assert!((m.capacity_mbps().unwrap() - 100.0).abs() < 1e-6);
        // Empty queue: RTT_avg = RTT_min, U = 0, S = 2b/(a(1 + 2b)) with b = b_target(p_init).
        let b = b_target(1e-4, RATIO, P_MIN);
        assert!((m.s_target() - 2.0 * b / (0.12 * (1.0 + 2.0 * b))).abs() < 1e-9);
        assert!((m.s_target_bps() - m.s_target() * 12e6).abs() < 1e-3);
        // tProbe*·a = 3.84 ms → clamped to 15 ms.
        assert_eq!(m.probe_spacing(), 15.0);

        // The schedule itself: SYN, then at 15 ms spacing pair, 4 probes, pair, 4 probes.
        let mut m = madison(&[]);
        let (mut seq, mut sent) = (0, Vec::new());
        send_all(&mut m, 0, &mut seq, &mut sent);
        assert_eq!(sent.len(), 1, "only the SYN before its ACK");
        assert_eq!(sent[0].1, flags::ACK_NOW);
        m.on_ack(&ack_of(0, flags::ACK_NOW, 0, 50 * NS_PER_MS, 0));
        let t0 = 50 * NS_PER_MS;
        let mut now = t0;
        while now <= t0 + 200 * NS_PER_MS {
            if m.next_timer().is_some_and(|t| t <= now) {
                m.on_timer(now);
            }
            send_all(&mut m, now, &mut seq, &mut sent);
            now += NS_PER_MS;
        }
        let got: Vec<(u8, Nanos)> = sent[1..]
            .iter()
            .map(|&(_, f, t)| (f, (t - t0) / NS_PER_MS))
            .collect();
        let (pf, ps, pr) = (
            flags::PAIR_FIRST | flags::ACK_NOW,
            flags::PAIR_SECOND | flags::ACK_NOW,
            flags::PROBE | flags::ACK_NOW,
        );
        let want = vec![
            (pf, 0),
            (ps, 0),
            (pr, 15),
            (pr, 30),
            (pr, 45),
            (pr, 60),
            (pf, 75),
            (ps, 75),
            (pr, 90),
            (pr, 105),
            (pr, 120),
            (pr, 135),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn slow_links_wait_for_all_eight_probes() {
        // 10 Mbit/s: 20·a = 24 ms > 15 ms, so all 8 probes (every other one used) and both pairs.
        let (m, _, now) = started(10.0, 100.0);
        assert_eq!(m.phase(), Phase::First);
        // The last probe left 135 ms after the sequence began (100 ms after the SYN's ACK); its ACK
        // is back one RTT later.
        assert!(now >= from_ms(100.0 + 135.0 + 100.0), "{now}");
        assert_eq!(m.rtts.len(), 4);
        assert!((m.capacity_mbps().unwrap() - 10.0).abs() < 1e-6);
        assert_eq!(m.probe_spacing(), 38.4); // 32·1.2 ms, inside [15, 100]
    }

    #[test]
    fn rate_changes_at_least_t_apart_and_deferred() {
        let (mut m, _, t0) = started(100.0, 100.0);
        let s0 = m.s_target();
        // A loss event 50 ms after the first rate: p rises, the recompute is deferred.
        m.loss.sent_since_loss = 1000;
        m.on_loss(&LossEvent {
            lost: 5,
            ..Default::default()
        });
        let last = m.last_change;
        let t = last + 50 * NS_PER_MS;
        assert!(t >= t0 || t0 - t < 200 * NS_PER_MS);
        m.on_probe_ack(t, t - 100 * NS_PER_MS, 100.0);
        assert!(m.p() > 1e-4);
        assert_eq!(m.s_target(), s0, "blocked within T");
        assert!(m.recompute_pending);
        assert_eq!(m.next_timer(), Some(last + 200 * NS_PER_MS));
        // Deferred, not dropped: at the end of the 200 ms the rate follows the new b_target.
        m.on_timer(last + 200 * NS_PER_MS);
        assert!(!m.recompute_pending);
        assert!(m.s_target() < s0);
        let b = m.b_target();
        assert!((m.s_target() - s_target_startup(b, 0.12, 0.0, s0)).abs() < 1e-9);
        assert_eq!(m.last_change, last + 200 * NS_PER_MS);
    }

    #[test]
    fn late_probe_quiesces_until_a_probe_ack_or_rto() {
        let (mut m, mut seq, now) = started(100.0, 100.0);
        m.pairs_sent = m.cfg.pairs; // no more pairs: every packet due is a probe
        assert!(!m.quiesced());
        let mut sent = Vec::new();
        send_all_n(&mut m, now, &mut seq, &mut sent, 1);
        let (pseq, fl, at) = sent[0];
        assert_eq!(
            fl & flags::PROBE,
            flags::PROBE,
            "the first packet after start-up is a probe"
        );
        // Deadline: send time + RTT_avg (100 ms) + desired spacing (15 ms).
        assert_eq!(m.next_timer(), Some(at + 115 * NS_PER_MS));
        m.on_timer(at + 115 * NS_PER_MS);
        assert!(m.quiesced());
        // An ordinary packet's ACK does not end it (the paper's receiver would not have sent it) …
        let mut a = ack_of(pseq + 1, 0, at, 130 * NS_PER_MS, 0);
        m.on_ack(&a);
        assert!(m.quiesced());
        // … the late probe's ACK does.
        a = ack_of(pseq, fl, at, 140 * NS_PER_MS, 0);
        m.on_ack(&a);
        assert!(!m.quiesced());
        // The RTO also ends it; the 1 s safety net too.
        let t = at + 400 * NS_PER_MS;
        m.next_probe = 0;
        send_all_n(&mut m, t, &mut seq, &mut sent, 1);
        let deadline = m.next_timer().unwrap();
        m.on_timer(deadline);
        assert!(m.quiesced());
        m.on_timeout(&TimeoutEvent {
            now: deadline + NS_PER_MS,
            ..Default::default()
        });
        assert!(!m.quiesced());
        m.next_probe = 0;
        send_all_n(&mut m, deadline + 2 * NS_PER_MS, &mut seq, &mut sent, 1);
        let d2 = m.next_timer().unwrap();
        m.on_timer(d2);
        assert!(m.quiesced());
        assert_eq!(m.next_timer(), Some(d2 + NS_PER_SEC));
        m.on_timer(d2 + NS_PER_SEC);
        assert!(!m.quiesced());
    }

    fn send_all_n(
        m: &mut Madison,
        now: Nanos,
        seq: &mut u64,
        out: &mut Vec<(u64, u8, Nanos)>,
        n: usize,
    ) {
        for _ in 0..n {
            let mut ctx = SendCtx {
                now,
                seq: *seq,
                ..Default::default()
            };
            m.on_send(&mut ctx);
            out.push((*seq, ctx.flags, now));
            *seq += 1;
        }
    }

    #[test]
    fn probes_are_exponentially_spaced_with_the_desired_mean() {
        let (mut m, _, _) = started(100.0, 100.0);
        // 200 000 gaps at mean max(1/S, 15 ms) = 15 ms: mean within 1% (σ/√n = 0.22%), and the
        // exponential's P(gap > mean) = e^−1.
        let gaps: Vec<f64> = (0..200_000)
            .map(|_| m.draw_probe_gap() as f64 / 1e6)
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 15.0).abs() < 0.15, "{mean}");
        let above = gaps.iter().filter(|&&g| g > 15.0).count() as f64 / gaps.len() as f64;
        assert!((above - (-1.0f64).exp()).abs() < 0.02, "{above}");
        // Same seed → same draws.
        let (mut m2, _, _) = started(100.0, 100.0);
        let (mut m3, _, _) = started(100.0, 100.0);
        assert_eq!(m2.draw_probe_gap(), m3.draw_probe_gap());
    }

    #[test]
    fn capacity_is_the_median_of_pair_samples() {
        let mut m = madison(&[]);
        let pair = |m: &mut Madison, seq: u64, disp: Nanos| {
            m.on_ack(&AckSample {
                acked_seq: seq,
                acked_flags: flags::PAIR_FIRST,
                rx_time: 1_000,
                ..Default::default()
            });
            m.on_ack(&AckSample {
                acked_seq: seq + 1,
                acked_flags: flags::PAIR_SECOND,
                acked_bytes: 1448,
                rx_time: 1_000 + disp,
                ..Default::default()
            });
        };
        pair(&mut m, 10, 120_000); // 100 Mbit/s
        pair(&mut m, 20, 240_000); // widened by a packet in between: 50
        pair(&mut m, 30, 120_000);
        assert!((m.capacity_mbps().unwrap() - 100.0).abs() < 1e-9);
        pair(&mut m, 40, 60_000); // compressed: 200
        assert!((m.capacity_mbps().unwrap() - 100.0).abs() < 1e-9);
        // A fixed capacity overrides the estimate.
        let mut m = madison(&[("capacity_mbps", 42.0)]);
        pair(&mut m, 10, 120_000);
        assert_eq!(m.capacity_mbps(), Some(42.0));
    }

    #[test]
    fn params_and_state() {
        let p: Params = [("p_mn".to_string(), ParamValue::Num(1.0))]
            .into_iter()
            .collect();
        let env = SenderEnv {
            mss: 1448,
            packet_size: 1500,
            initial_cwnd: 10.0,
            seed: 0,
        };
        let e = Madison::new(&env, &p).err().unwrap();
        assert_eq!(e.field, "p_mn");
        assert!(e.message.contains("p_min"));
        let p: Params = [("probe_spacing_min".to_string(), ParamValue::Num(0.5))]
            .into_iter()
            .collect();
        assert_eq!(
            Madison::new(&env, &p).err().unwrap().field,
            "probe_spacing_min"
        );
        // State keys are the same before and after start-up (stable for the life of the flow).
        let keys = |m: &Madison| {
            let mut out = Vec::new();
            m.state(&mut out);
            out.into_iter().map(|(k, _)| k).collect::<Vec<_>>()
        };
        let (m, _, _) = started(100.0, 100.0);
        assert_eq!(keys(&madison(&[])), keys(&m));
        for k in [
            "S_target_bps",
            "b_target",
            "p",
            "U",
            "X_xt_bps",
            "n",
            "n_D",
            "C_est",
            "rtt_avg",
            "rtt_min",
            "b_bar",
        ] {
            assert!(keys(&m).contains(&k), "{k}");
        }
    }
}
