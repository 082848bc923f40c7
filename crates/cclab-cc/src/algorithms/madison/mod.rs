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
//! 14. **Per-flow seed**: the probe schedule draws from its own stream (`rng::stream(seed, "MADI")`) of
//!     `SenderEnv::seed`, which the drivers set to `env::flow_seed(run seed, flow index)`: the same draws
//!     in the simulator and on the real datapath, and adding a flow (or another use of the seed) never
//!     changes this flow's schedule.
//! 15. **Rule (2c)'s decay** (`loss_decay`): `"paper"`, the default, is the paper's q > 10/p ⇒ p = 1/q;
//!     `"per_event"` applies (c) to events of the size last seen, q > 10·L/p ⇒ p = L/q, L = the lost
//!     packets of the last applied event (its final count after re-applications, kept after (c) fired;
//!     1 before any event, where the two agree). Why: (2b) counts packets (DECISION 11), but (c)'s 10/p
//!     is ten mean spacings of *single-packet* events; with episodes of L ≈ 10–50 packets (c) fires
//!     between every two episodes and cuts p tenfold. Measured, `per_event` cuts loss and backlog where
//!     loss drives the control but makes sharing worse under heavy cross traffic, so the paper's rule
//!     stays the default (table in docs/algorithms/madison.md).
//!
//! # Layout
//! * `model`: the paper's equations as pure functions (eq. (3) b_target, the §3.3 measures, the S_target
//!   closed forms of (12)+(13) and (12)+(14), the §3.4 n_D back-solve, the §4.2 probe spacing).
//! * `loss`: the loss-event rate estimator p, §4.3 (2b)/(2c) (DECISIONs 11 and 15).
//! * `controller`: the state machine (handshake, start-up, congestion avoidance with rules (a)–(d),
//!   probes, pairs, late-probe quiescence, pacing at S_target) and the [`CongestionControl`] hooks.
//! * here: [`Madison`], its configuration [`MadisonConfig`] (Table 2) and [`Phase`].
//!
//! [`CongestionControl`]: crate::cc::CongestionControl

mod controller;
mod loss;
mod model;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use crate::env::SenderEnv;
use crate::packet_pair::PairMatcher;
use crate::params::{ParamError, ParamReader, Params};
use crate::rng::{self, SimRng};
use crate::time::Nanos;

use controller::{Change, Slot, STARTUP};
pub use loss::{loss_rate_after_event, LossDecay, LossEstimator};
pub use model::{
    b_target, back_solve_n_d, md1_flow_backlog, measures, probe_spacing_ms, s_target_shared,
    s_target_startup, u_new_shared, u_new_startup, utilization, Measures,
};

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
            // A stream of the flow's seed reserved for the probe schedule (DECISION 14).
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

    /// DECISION 12: at least 1 packet per `probe_spacing_max`, packets/ms.
    fn rate_floor(&self) -> f64 {
        1.0 / (self.cfg.probe_spacing_max * 1e3)
    }

    fn current_measures(&self) -> Option<Measures> {
        let a = self.a()?;
        let avg = self.rtt_avg_ms()?;
        Some(measures(avg, self.rtt_min, a, self.s))
    }
}
