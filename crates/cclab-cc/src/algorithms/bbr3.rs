//! BBR v3 as the IETF draft specifies it (draft-ietf-ccwg-bbr, the CCWG working-group text of 2026,
//! which describes Linux's BBRv3). The pseudocode's function names are kept (in snake case) so that a
//! reader can follow the draft beside this file; docs/algorithms/bbr3.md has the equations, the
//! constants and the DECISIONs.
//!
//! One file of ~1 000 lines of code on purpose: it follows the draft's pseudocode function by function,
//! so that it reads beside the draft; split by state, one state machine would be scattered over files.
//!
//! What changed from v1 ([`super::bbr`]):
//! * **A loss-aware model at two time scales.** The long-term bounds (`max_bw`, the max delivery rate
//!   over the current and previous ProbeBW cycle, and `inflight_longterm`, the in-flight volume at which
//!   a probe saw more than 2 % loss) and the short-term bounds (`bw_shortterm`, `inflight_shortterm`,
//!   cut by β = 0.7 once per round trip with loss while not probing, toward what the last round
//!   delivered). BBR.bw = min(max_bw, bw_shortterm).
//! * **ProbeBW as four states**: DOWN (pacing 0.9 until the queue is gone and 15 % headroom below
//!   `inflight_longterm` is free), CRUISE (1.0), REFILL (1.0 for one round, with the short-term model
//!   reset), UP (pacing 1.25, cwnd gain 2.25; `inflight_longterm` grows by 1, 2, 4, … packets per round
//!   while it limits). The next probe comes after 2–3 s, or after min(BDP in packets, 63) rounds when that
//!   is sooner (the Reno-coexistence time scale).
//! * **Startup** (pacing gain 2.77, cwnd gain 2) also ends on loss: 6 loss events in a round of fast
//!   recovery with more than 2 % of the in-flight data lost. **Drain** paces at 0.5 and gives up after 3
//!   rounds.
//! * **ProbeRTT** every 5 s (not 10), at half the BDP (not 4 packets).

use super::bbr::ProbeRttMark;
use crate::cc::{AckSample, CongestionControl, LossEvent, RateSample, SendCtx, TimeoutEvent};
use crate::env::SenderEnv;
use crate::minmax::WindowedMax;
use crate::params::{ParamError, ParamReader, Params};
use crate::rng::{self, Rng};
use crate::time::{Nanos, NS_PER_MS, NS_PER_SEC};

/// 4 ln 2: doubles the sending rate each round while the window (gain 2) does not limit.
const STARTUP_PACING_GAIN: f64 = 2.77;
const DEFAULT_CWND_GAIN: f64 = 2.0;
const DRAIN_PACING_GAIN: f64 = 0.5;
const DOWN_PACING_GAIN: f64 = 0.9;
const UP_PACING_GAIN: f64 = 1.25;
const UP_CWND_GAIN: f64 = 2.25;
const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// BBR.LossThresh, BBR.Beta, BBR.Headroom.
const LOSS_THRESH: f64 = 0.02;
const BETA: f64 = 0.7;
const HEADROOM: f64 = 0.15;
/// BBR.MinPipeCwnd: 4 packets, so that a delayed-ACK receiver keeps the pipe going.
const MIN_PIPE_CWND: f64 = 4.0;
const FULL_BW_THRESH: f64 = 1.25;
const FULL_BW_COUNT: u32 = 3;
/// BBRStartupFullLossCnt: loss events (discontiguous lost ranges) in a round that end Startup.
const STARTUP_FULL_LOSS_COUNT: u32 = 6;
const EXTRA_ACKED_FILTER_LEN: u64 = 10;
/// Reno-coexistence probing: at most every 63 rounds.
const MAX_RENO_ROUNDS: f64 = 63.0;
/// Pacing 1 % below the estimate (BBR.PacingMarginPercent).
const PACING_MARGIN: f64 = 0.99;
/// The send quantum: 1 ms of pacing, 2 packets to 64 KB.
const SEND_QUANTUM_TIME: f64 = 1e-3;
const SEND_QUANTUM_MAX_BYTES: f64 = 65536.0;
const INF: f64 = f64::INFINITY;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Startup,
    Drain,
    ProbeBwDown,
    ProbeBwCruise,
    ProbeBwRefill,
    ProbeBwUp,
    ProbeRtt,
}

impl State {
    fn is_probe_bw(self) -> bool {
        matches!(
            self,
            State::ProbeBwDown | State::ProbeBwCruise | State::ProbeBwRefill | State::ProbeBwUp
        )
    }

    /// (pacing gain, cwnd gain): the draft's "Summary of Control Behavior" table.
    fn gains(self, startup_pacing_gain: f64) -> (f64, f64) {
        match self {
            State::Startup => (startup_pacing_gain, DEFAULT_CWND_GAIN),
            State::Drain => (DRAIN_PACING_GAIN, DEFAULT_CWND_GAIN),
            State::ProbeBwDown => (DOWN_PACING_GAIN, DEFAULT_CWND_GAIN),
            State::ProbeBwCruise | State::ProbeBwRefill => (1.0, DEFAULT_CWND_GAIN),
            State::ProbeBwUp => (UP_PACING_GAIN, UP_CWND_GAIN),
            State::ProbeRtt => (1.0, PROBE_RTT_CWND_GAIN),
        }
    }

    fn code(self) -> f64 {
        self as u8 as f64
    }
}

/// What the ACKs now arriving say about bandwidth probing (BBR.ack_phase).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// BBR.max_bw: the max delivery rate over the current and the previous ProbeBW cycle. The draft's
/// window of 2 cycles in one bit of cycle count, as Linux keeps it: two slots.
#[derive(Clone, Debug, Default)]
struct CycleMax {
    slot: [f64; 2],
    current: usize,
}

impl CycleMax {
    fn get(&self) -> f64 {
        self.slot[0].max(self.slot[1])
    }
    fn update(&mut self, v: f64) {
        self.slot[self.current] = self.slot[self.current].max(v);
    }
    /// AdvanceMaxBwFilter: a new cycle starts; the one before last is forgotten.
    fn advance(&mut self) {
        self.current ^= 1;
        self.slot[self.current] = 0.0;
    }
}

pub struct Bbr3 {
    /// Wire bytes of a full packet (pacing rates are wire bits) and payload bytes (the send quantum).
    packet_size: f64,
    mss: f64,
    initial_cwnd: f64,
    startup_pacing_gain: f64,
    probe_rtt_interval: Nanos,
    min_rtt_filter_len: Nanos,
    probe_rtt_duration: Nanos,
    rng: rng::SimRng,

    state: State,
    pacing_gain: f64,
    cwnd_gain: f64,
    cwnd: f64,
    pacing_bps: f64,
    has_seen_rtt: bool,
    /// C.delivered (packets) and whether the last ACK found the sender application-limited.
    delivered: u64,
    app_limited: bool,
    in_recovery: bool,

    // Round counting.
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    rounds_since_probe_up: u64,

    // The model, packets and packets per second.
    max_bw: CycleMax,
    bw: f64,
    bw_shortterm: f64,
    inflight_longterm: f64,
    inflight_shortterm: f64,
    min_rtt: Option<Nanos>,
    min_rtt_stamp: Nanos,
    extra_acked: WindowedMax,
    extra_acked_interval_start: Nanos,
    extra_acked_delivered: f64,

    // Congestion signals of the current round.
    bw_latest: f64,
    inflight_latest: f64,
    loss_round_delivered: u64,
    loss_round_start: bool,
    is_loss_in_round: bool,
    loss_events_in_round: u32,

    // Startup and Drain.
    full_bw: f64,
    full_bw_count: u32,
    full_bw_now: bool,
    full_bw_reached: bool,
    drain_start_round: u64,

    // ProbeBW.
    ack_phase: AckPhase,
    is_bw_probe_sample: bool,
    bw_probe_up_acked: f64,
    probe_up_acked_per_inc: f64,
    bw_probe_up_rounds: u32,
    bw_probe_wait: Nanos,
    cycle_stamp: Nanos,
    prev_probe_too_high: bool,
    prev_probe_precautionary: bool,

    // ProbeRTT.
    probe_rtt_min_delay: Option<Nanos>,
    probe_rtt_min_stamp: Nanos,
    probe_rtt_expired: bool,
    probe_rtt_done_stamp: Option<Nanos>,
    probe_rtt_round_done: bool,
    prior_cwnd: f64,
    idle_restart: bool,
    /// MarkConnectionAppLimited in ProbeRTT, as v1 keeps it.
    probe_rtt_mark: ProbeRttMark,

    // Undo.
    undo_state: Option<State>,
    undo_bw_shortterm: f64,
    undo_inflight_shortterm: f64,
    undo_inflight_longterm: f64,
}

impl Bbr3 {
    pub fn new(env: &SenderEnv, params: &Params) -> Result<Bbr3, ParamError> {
        let mut r = ParamReader::new("bbr3", params);
        let startup_pacing_gain =
            r.f64_in("startup_pacing_gain", STARTUP_PACING_GAIN, 1.0, 10.0)?;
        let probe_rtt_interval = r.f64_in("probe_rtt_interval", 5.0, 0.01, 3600.0)?;
        let min_rtt_filter_len = r.f64_in("min_rtt_filter_len", 10.0, 0.01, 3600.0)?;
        let probe_rtt_duration = r.f64_in("probe_rtt_duration", 0.2, 0.0, 10.0)?;
        r.finish()?;
        let secs = |s: f64| (s * NS_PER_SEC as f64) as Nanos;
        let mut b = Bbr3 {
            packet_size: env.packet_size as f64,
            mss: env.mss.max(1) as f64,
            initial_cwnd: env.initial_cwnd,
            startup_pacing_gain,
            probe_rtt_interval: secs(probe_rtt_interval),
            min_rtt_filter_len: secs(min_rtt_filter_len),
            probe_rtt_duration: secs(probe_rtt_duration),
            // Index 1 of BBR's stream: v1 draws its start phase from index 0.
            rng: rng::Stream::Bbr.rng(env.seed, 1),
            state: State::Startup,
            pacing_gain: startup_pacing_gain,
            cwnd_gain: DEFAULT_CWND_GAIN,
            cwnd: env.initial_cwnd,
            pacing_bps: 0.0,
            has_seen_rtt: false,
            delivered: 0,
            app_limited: false,
            in_recovery: false,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            rounds_since_probe_up: 0,
            max_bw: CycleMax::default(),
            bw: 0.0,
            bw_shortterm: INF,
            inflight_longterm: INF,
            inflight_shortterm: INF,
            min_rtt: None,
            min_rtt_stamp: 0,
            extra_acked: WindowedMax::default(),
            extra_acked_interval_start: 0,
            extra_acked_delivered: 0.0,
            bw_latest: 0.0,
            inflight_latest: 0.0,
            loss_round_delivered: 0,
            loss_round_start: false,
            is_loss_in_round: false,
            loss_events_in_round: 0,
            full_bw: 0.0,
            full_bw_count: 0,
            full_bw_now: false,
            full_bw_reached: false,
            drain_start_round: 0,
            ack_phase: AckPhase::Init,
            is_bw_probe_sample: false,
            bw_probe_up_acked: 0.0,
            probe_up_acked_per_inc: INF,
            bw_probe_up_rounds: 0,
            bw_probe_wait: 0,
            cycle_stamp: 0,
            prev_probe_too_high: false,
            prev_probe_precautionary: false,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: 0,
            probe_rtt_expired: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0.0,
            idle_restart: false,
            probe_rtt_mark: ProbeRttMark::default(),
            undo_state: None,
            undo_bw_shortterm: 0.0,
            undo_inflight_shortterm: 0.0,
            undo_inflight_longterm: 0.0,
        };
        b.init_pacing_rate(NS_PER_MS);
        Ok(b)
    }

    pub fn mode(&self) -> State {
        self.state
    }
    /// BBR.bw and BBR.max_bw, packets per second.
    pub fn bw(&self) -> f64 {
        self.bw
    }
    pub fn max_bw(&self) -> f64 {
        self.max_bw.get()
    }
    pub fn inflight_longterm(&self) -> f64 {
        self.inflight_longterm
    }
    pub fn inflight_shortterm(&self) -> f64 {
        self.inflight_shortterm
    }
    pub fn min_rtt(&self) -> Option<Nanos> {
        self.min_rtt
    }
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    fn set_state(&mut self, s: State) {
        self.state = s;
        (self.pacing_gain, self.cwnd_gain) = s.gains(self.startup_pacing_gain);
    }

    fn to_wire_bps(&self, pkts_per_sec: f64) -> f64 {
        pkts_per_sec * self.packet_size * 8.0
    }

    /// InitPacingRate: the initial window over SRTT (1 ms before any), times the Startup gain.
    fn init_pacing_rate(&mut self, srtt: Nanos) {
        let nominal = self.initial_cwnd * NS_PER_SEC as f64 / srtt.max(1) as f64;
        self.pacing_bps = self.to_wire_bps(self.startup_pacing_gain * nominal);
    }

    /// SetPacingRateWithGain: in Startup the rate only rises (a low early sample must not slow it).
    fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        let rate = self.to_wire_bps(gain * self.bw * PACING_MARGIN);
        if self.full_bw_reached || rate > self.pacing_bps {
            self.pacing_bps = rate;
        }
    }

    /// C.send_quantum in packets: 1 ms of pacing, at least 2 packets, at most 64 KB.
    fn send_quantum(&self) -> f64 {
        let bytes = (self.pacing_bps / 8.0 * SEND_QUANTUM_TIME).min(SEND_QUANTUM_MAX_BYTES);
        (bytes / self.mss).floor().max(2.0)
    }

    /// BDPMultiple: gain · BBR.bw · BBR.min_rtt (the initial window before any RTT sample).
    fn bdp_multiple(&self, bw: f64, gain: f64) -> f64 {
        match self.min_rtt {
            None => self.initial_cwnd,
            Some(rtt) => gain * bw * rtt as f64 / NS_PER_SEC as f64,
        }
    }

    /// QuantizationBudget: room for TCP's offload budget (3 send quanta), the pipelining minimum, and
    /// 2 more packets in ProbeBW_UP so that probing gets above the 1.25 · BDP it aims at.
    fn quantization_budget(&self, inflight_cap: f64) -> f64 {
        let mut cap = inflight_cap
            .max(3.0 * self.send_quantum())
            .max(MIN_PIPE_CWND);
        if self.state == State::ProbeBwUp {
            cap += 2.0;
        }
        cap
    }

    /// Inflight(bw, gain).
    fn inflight(&self, bw: f64, gain: f64) -> f64 {
        self.quantization_budget(self.bdp_multiple(bw, gain))
    }

    /// TargetInflight: the BDP, unless congestion cut the window below it.
    fn target_inflight(&self) -> f64 {
        self.bdp_multiple(self.bw, 1.0).min(self.cwnd)
    }

    fn inflight_with_headroom(&self) -> f64 {
        if self.inflight_longterm == INF {
            return INF;
        }
        let headroom = (HEADROOM * self.inflight_longterm).max(1.0);
        (self.inflight_longterm - headroom).max(MIN_PIPE_CWND)
    }

    fn probe_rtt_cwnd(&self) -> f64 {
        self.bdp_multiple(self.bw, PROBE_RTT_CWND_GAIN)
            .max(MIN_PIPE_CWND)
    }

    fn start_round(&mut self) {
        self.next_round_delivered = self.delivered;
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    fn reset_congestion_signals(&mut self) {
        self.is_loss_in_round = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0.0;
    }

    fn reset_short_term_model(&mut self) {
        self.bw_shortterm = INF;
        self.inflight_shortterm = INF;
    }

    fn save_cwnd(&mut self) {
        if !self.in_recovery && self.state != State::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    fn save_state_upon_loss(&mut self) {
        self.save_cwnd();
        self.undo_state = None;
        self.undo_bw_shortterm = self.bw_shortterm;
        self.undo_inflight_shortterm = self.inflight_shortterm;
        self.undo_inflight_longterm = self.inflight_longterm;
    }

    fn note_loss(&mut self) {
        if !self.is_loss_in_round {
            self.loss_round_delivered = self.delivered;
            self.save_state_upon_loss();
        }
        self.is_loss_in_round = true;
    }

    fn is_inflight_too_high(rs: &RateSample) -> bool {
        rs.lost as f64 > rs.tx_in_flight as f64 * LOSS_THRESH
    }

    // ---- State entry (the draft's Enter*/Start* functions) ----

    fn enter_startup(&mut self) {
        self.set_state(State::Startup);
    }

    fn enter_drain(&mut self) {
        self.set_state(State::Drain);
        self.drain_start_round = self.round_count;
    }

    fn enter_probe_bw(&mut self, now: Nanos) {
        self.start_probe_bw_down(now);
    }

    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe_up = self.rng.gen_range(0..2u64);
        let extra: f64 = self.rng.gen();
        self.bw_probe_wait = 2 * NS_PER_SEC + (extra * NS_PER_SEC as f64) as Nanos;
    }

    fn start_probe_bw_down(&mut self, now: Nanos) {
        self.reset_congestion_signals();
        self.probe_up_acked_per_inc = INF;
        self.pick_probe_wait();
        self.cycle_stamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.set_state(State::ProbeBwDown);
    }

    fn start_probe_bw_cruise(&mut self) {
        self.set_state(State::ProbeBwCruise);
    }

    fn start_probe_bw_refill(&mut self) {
        self.reset_short_term_model();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acked = 0.0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.set_state(State::ProbeBwRefill);
    }

    fn start_probe_bw_up(&mut self, rs: Option<&RateSample>) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = rs.map_or(0.0, RateSample::packets_per_sec);
        self.set_state(State::ProbeBwUp);
        self.raise_inflight_longterm_slope();
    }

    // ---- Per-ACK steps, in the draft's order ----

    /// UpdateLatestDeliverySignals: the max rate and volume delivered this round; a loss round ends
    /// when a packet sent after its start is acknowledged.
    fn update_latest_delivery_signals(&mut self, rs: Option<&RateSample>) {
        self.loss_round_start = false;
        let Some(rs) = rs else {
            return;
        };
        self.bw_latest = self.bw_latest.max(rs.packets_per_sec());
        self.inflight_latest = self.inflight_latest.max(rs.delivered as f64);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = self.delivered;
            self.loss_round_start = true;
        }
    }

    fn update_round(&mut self, rs: &RateSample) {
        if rs.prior_delivered >= self.next_round_delivered {
            self.start_round();
            self.round_count += 1;
            self.rounds_since_probe_up += 1;
            self.round_start = true;
        } else {
            self.round_start = false;
        }
    }

    /// UpdateCongestionSignals: the max-bandwidth filter, then once per loss round the short-term
    /// bounds (only while not probing: a probe's losses are the long-term model's business).
    fn update_congestion_signals(&mut self, rs: Option<&RateSample>, app_limited: bool) {
        self.round_start = false;
        if let Some(rs) = rs {
            self.update_round(rs);
            let rate = rs.packets_per_sec();
            if rate > 0.0 && (rate >= self.max_bw.get() || !app_limited) {
                self.max_bw.update(rate);
            }
        }
        if !self.loss_round_start {
            return;
        }
        let probing = matches!(
            self.state,
            State::Startup | State::ProbeBwRefill | State::ProbeBwUp
        );
        if !probing && self.is_loss_in_round {
            // InitLowerBounds, then LossLowerBounds.
            if self.bw_shortterm == INF {
                self.bw_shortterm = self.max_bw.get();
            }
            if self.inflight_shortterm == INF {
                self.inflight_shortterm = self.cwnd;
            }
            self.bw_shortterm = self.bw_latest.max(BETA * self.bw_shortterm);
            self.inflight_shortterm = self.inflight_latest.max(BETA * self.inflight_shortterm);
        }
        self.is_loss_in_round = false;
    }

    /// UpdateACKAggregation: data ACKed beyond what BBR.bw predicts since the ACK rate last fell
    /// below it; max over 10 rounds (1 in Startup).
    fn update_ack_aggregation(&mut self, ack: &AckSample) {
        if ack.newly_acked == 0 {
            return;
        }
        let interval = ack.now.saturating_sub(self.extra_acked_interval_start);
        let mut expected = self.bw * interval as f64 / NS_PER_SEC as f64;
        if self.extra_acked_delivered <= expected {
            self.extra_acked_delivered = 0.0;
            self.extra_acked_interval_start = ack.now;
            expected = 0.0;
        }
        self.extra_acked_delivered += ack.newly_acked as f64;
        let extra = (self.extra_acked_delivered - expected).min(self.cwnd);
        let len = if self.full_bw_reached {
            EXTRA_ACKED_FILTER_LEN
        } else {
            1
        };
        self.extra_acked.update(len, self.round_count, extra);
    }

    fn check_full_bw_reached(&mut self, rs: Option<&RateSample>, app_limited: bool) {
        let Some(rs) = rs else {
            return;
        };
        if self.full_bw_now || !self.round_start || app_limited {
            return;
        }
        let rate = rs.packets_per_sec();
        if rate >= self.full_bw * FULL_BW_THRESH {
            self.reset_full_bw();
            self.full_bw = rate;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= FULL_BW_COUNT;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// CheckStartupHighLoss, with Linux's counting of loss events: ACKs that marked packets lost in
    /// this round (each a discontiguous lost range or more).
    fn check_startup_high_loss(&mut self, ack: &AckSample) {
        if self.state != State::Startup || self.full_bw_reached {
            return;
        }
        if ack.newly_lost > 0 {
            self.loss_events_in_round = (self.loss_events_in_round + 1).min(15);
        }
        if self.loss_round_start
            && ack.in_recovery
            && self.loss_events_in_round >= STARTUP_FULL_LOSS_COUNT
            && ack.rate.as_ref().is_some_and(Self::is_inflight_too_high)
        {
            self.undo_state = Some(State::Startup);
            self.full_bw_reached = true;
            self.inflight_longterm = self.bdp_multiple(self.bw, 1.0).max(self.inflight_latest);
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    fn check_startup_done(&mut self, ack: &AckSample) {
        self.check_startup_high_loss(ack);
        if self.state == State::Startup && self.full_bw_reached {
            self.enter_drain();
        }
    }

    fn check_drain_done(&mut self, ack: &AckSample) {
        if self.state == State::Drain
            && (ack.in_flight as f64 <= self.inflight(self.bw, 1.0)
                || self.round_count > self.drain_start_round + 3)
        {
            self.enter_probe_bw(ack.now);
        }
    }

    fn is_time_to_probe_bw(&mut self, now: Nanos) -> bool {
        let reno_rounds = self.target_inflight().min(MAX_RENO_ROUNDS);
        if now > self.cycle_stamp + self.bw_probe_wait
            || self.rounds_since_probe_up as f64 >= reno_rounds
        {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    fn is_time_to_cruise(&self, in_flight: f64) -> bool {
        in_flight <= self.inflight_with_headroom()
            && in_flight <= self.inflight(self.max_bw.get(), 1.0)
    }

    fn is_time_to_go_down(&mut self, in_flight: f64, cwnd_limited: bool, rs: &RateSample) -> bool {
        if self.prev_probe_too_high && in_flight >= self.inflight_longterm {
            self.prev_probe_precautionary = true;
            return true;
        }
        if cwnd_limited && self.cwnd >= self.inflight_longterm {
            // The long-term bound, not the path, limits this probe: keep looking for a plateau.
            self.reset_full_bw();
            self.full_bw = rs.packets_per_sec();
            return false;
        }
        self.full_bw_now
    }

    fn raise_inflight_longterm_slope(&mut self) {
        let growth_this_round = (1u64 << self.bw_probe_up_rounds) as f64;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_acked_per_inc = (self.cwnd / growth_this_round).max(1.0);
    }

    fn probe_inflight_longterm_upward(&mut self, newly_acked: f64, cwnd_limited: bool) {
        if !cwnd_limited || self.cwnd < self.inflight_longterm {
            return;
        }
        self.bw_probe_up_acked += newly_acked;
        if self.bw_probe_up_acked >= self.probe_up_acked_per_inc {
            let delta = (self.bw_probe_up_acked / self.probe_up_acked_per_inc).floor();
            self.bw_probe_up_acked -= delta * self.probe_up_acked_per_inc;
            self.inflight_longterm += delta;
        }
        if self.round_start {
            self.raise_inflight_longterm_slope();
        }
    }

    fn handle_inflight_too_high(&mut self, rs: &RateSample, app_limited: bool, now: Nanos) {
        self.prev_probe_too_high = true;
        self.is_bw_probe_sample = false;
        if !app_limited {
            self.inflight_longterm = (rs.tx_in_flight as f64).max(self.target_inflight() * BETA);
        }
        if self.state == State::ProbeBwUp {
            self.undo_state = Some(State::ProbeBwUp);
            self.start_probe_bw_down(now);
        }
    }

    /// AdaptLongTermModel. DECISION: the loss test runs on each ACK's rate sample (RS.lost over
    /// RS.tx_in_flight, the packets lost since the echoed packet left against what was in flight then),
    /// as Linux `bbr_adapt_upper_bounds` does, not per lost packet: the transport reports losses per
    /// ACK, not the lost packet's own send-time state. Returns true when it decided a transition.
    fn adapt_long_term_model(
        &mut self,
        ack: &AckSample,
        rs: &RateSample,
        app_limited: bool,
        cwnd_limited: bool,
    ) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // The end of the samples from the last probe: the bandwidth filter's cycle ends.
            self.is_bw_probe_sample = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && !app_limited {
                self.max_bw.advance();
            }
            if self.state.is_probe_bw()
                && self.prev_probe_precautionary
                && !self.prev_probe_too_high
            {
                // Precautionary probing succeeded: probe again at once, this time fully.
                self.start_probe_bw_refill();
                return true;
            }
        }
        if Self::is_inflight_too_high(rs) {
            if self.is_bw_probe_sample {
                self.handle_inflight_too_high(rs, app_limited, ack.now);
            }
            return false;
        }
        if self.inflight_longterm == INF {
            return false;
        }
        if rs.tx_in_flight as f64 > self.inflight_longterm {
            self.inflight_longterm = rs.tx_in_flight as f64;
        }
        if self.state == State::ProbeBwUp {
            self.probe_inflight_longterm_upward(ack.newly_acked as f64, cwnd_limited);
        }
        false
    }

    fn update_probe_bw_cycle_phase(&mut self, ack: &AckSample, app_limited: bool) {
        let Some(rs) = ack.rate.as_ref() else {
            return;
        };
        if !self.full_bw_reached || ack.newly_acked == 0 {
            return;
        }
        let in_flight = ack.in_flight as f64;
        // DECISION (C.is_cwnd_limited): what was in flight before this ACK filled the window.
        let cwnd_limited = in_flight + ack.newly_acked as f64 >= self.cwnd.floor();
        if self.adapt_long_term_model(ack, rs, app_limited, cwnd_limited) {
            return;
        }
        let state = self.state;
        if state == State::ProbeBwDown {
            if !self.is_time_to_probe_bw(ack.now) && self.is_time_to_cruise(in_flight) {
                self.start_probe_bw_cruise();
            }
        } else if state == State::ProbeBwCruise {
            self.is_time_to_probe_bw(ack.now);
        } else if state == State::ProbeBwRefill && self.round_start {
            // After one round of REFILL, UP.
            self.is_bw_probe_sample = true;
            self.start_probe_bw_up(Some(rs));
        } else if state == State::ProbeBwUp && self.is_time_to_go_down(in_flight, cwnd_limited, rs)
        {
            self.prev_probe_too_high = false;
            self.start_probe_bw_down(ack.now);
        }
    }

    /// UpdateMinRTT: the ProbeRTT filter (5 s) feeds the min_rtt filter (10 s).
    fn update_min_rtt(&mut self, ack: &AckSample) {
        let now = ack.now;
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp + self.probe_rtt_interval;
        if let Some(rtt) = ack.rtt {
            if self.probe_rtt_min_delay.is_none_or(|d| rtt < d) || self.probe_rtt_expired {
                self.probe_rtt_min_delay = Some(rtt);
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp + self.min_rtt_filter_len;
        if let Some(d) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| d < m) || min_rtt_expired {
                self.min_rtt = Some(d);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    fn check_probe_rtt(&mut self, ack: &AckSample) {
        if self.state != State::ProbeRtt
            && self.probe_rtt_expired
            && !self.idle_restart
            && self.probe_rtt_duration > 0
        {
            self.set_state(State::ProbeRtt);
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
            self.probe_rtt_mark.start(self.delivered);
        }
        if self.state == State::ProbeRtt {
            self.handle_probe_rtt(ack);
        }
        if ack.rate.is_some_and(|r| r.delivered > 0) {
            self.idle_restart = false;
        }
    }

    fn handle_probe_rtt(&mut self, ack: &AckSample) {
        // MarkConnectionAppLimited: ProbeRTT's low rate must not enter the filter.
        self.probe_rtt_mark.extend(self.delivered, ack.in_flight);
        if self.probe_rtt_done_stamp.is_none() && ack.in_flight as f64 <= self.probe_rtt_cwnd() {
            self.probe_rtt_done_stamp = Some(ack.now + self.probe_rtt_duration);
            self.probe_rtt_round_done = false;
            self.start_round();
        } else if self.probe_rtt_done_stamp.is_some() {
            if self.round_start {
                self.probe_rtt_round_done = true;
            }
            if self.probe_rtt_round_done {
                self.check_probe_rtt_done(ack.now);
            }
        }
    }

    fn check_probe_rtt_done(&mut self, now: Nanos) {
        if self.probe_rtt_done_stamp.is_some_and(|d| now > d) {
            // The next ProbeRTT comes a full interval from now.
            self.probe_rtt_min_stamp = now;
            self.restore_cwnd();
            self.reset_short_term_model();
            if self.full_bw_reached {
                // ProbeRTT left the queue empty: straight on to cruising.
                self.start_probe_bw_down(now);
                self.start_probe_bw_cruise();
            } else {
                self.enter_startup();
            }
        }
    }

    fn advance_latest_delivery_signals(&mut self, rs: Option<&RateSample>) {
        if let (true, Some(rs)) = (self.loss_round_start, rs) {
            self.bw_latest = rs.packets_per_sec();
            self.inflight_latest = rs.delivered as f64;
        }
    }

    fn set_cwnd(&mut self, ack: &AckSample) {
        // UpdateMaxInflight.
        let cap = self.bdp_multiple(self.bw, self.cwnd_gain) + self.extra_acked.get();
        let max_inflight = self.quantization_budget(cap);
        let acked = ack.newly_acked as f64;
        if self.full_bw_reached {
            self.cwnd = (self.cwnd + acked).min(max_inflight);
        } else if self.cwnd < max_inflight || (self.delivered as f64) < self.initial_cwnd {
            self.cwnd += acked;
        }
        self.cwnd = self.cwnd.max(MIN_PIPE_CWND);
        if self.state == State::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        self.bound_cwnd_for_model();
    }

    /// BoundCwndForModel: the "Volume Cap" column of the draft's table.
    fn bound_cwnd_for_model(&mut self) {
        let mut cap = INF;
        if self.state.is_probe_bw() && self.state != State::ProbeBwCruise {
            cap = self.inflight_longterm;
        } else if matches!(self.state, State::ProbeRtt | State::ProbeBwCruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_shortterm).max(MIN_PIPE_CWND);
        self.cwnd = self.cwnd.min(cap);
    }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn pacing_rate_bps(&self) -> Option<f64> {
        Some(self.pacing_bps)
    }
    fn wants_rate_samples(&self) -> bool {
        true
    }

    fn on_ack(&mut self, ack: &AckSample) {
        if ack.newly_acked > 0 {
            self.delivered = ack.delivered;
        }
        self.app_limited = ack.app_limited;
        if ack.newly_lost > 0 {
            self.note_loss();
        }
        let rs = ack.rate;
        let app_limited =
            rs.is_some_and(|r| r.app_limited || self.probe_rtt_mark.covers(r.prior_delivered));
        // UpdateModelAndState.
        self.update_latest_delivery_signals(rs.as_ref());
        self.update_congestion_signals(rs.as_ref(), app_limited);
        self.update_ack_aggregation(ack);
        self.check_full_bw_reached(rs.as_ref(), app_limited);
        self.check_startup_done(ack);
        self.check_drain_done(ack);
        self.update_probe_bw_cycle_phase(ack, app_limited);
        self.update_min_rtt(ack);
        self.check_probe_rtt(ack);
        self.advance_latest_delivery_signals(rs.as_ref());
        self.bw = self.max_bw.get().min(self.bw_shortterm);
        // UpdateControlParameters.
        if !self.has_seen_rtt && ack.srtt > 0 {
            self.has_seen_rtt = true;
            self.init_pacing_rate(ack.srtt);
        }
        self.set_pacing_rate_with_gain(self.pacing_gain);
        self.set_cwnd(ack);
    }

    /// OnEnterFastRecovery, or a CE mark. The draft leaves ECN unspecified beyond "treat CE marks as
    /// congestion": DECISION, a CE mark is a loss signal for the short-term model (NoteLoss), nothing
    /// more.
    fn on_loss(&mut self, ev: &LossEvent) {
        if ev.ecn {
            self.note_loss();
            return;
        }
        self.save_state_upon_loss(); // saves the window too
        self.in_recovery = true;
    }

    /// Leaving recovery: the window before it, bounded by the model.
    fn on_recovery_end(&mut self, _now: Nanos) {
        if self.in_recovery {
            self.in_recovery = false;
            self.restore_cwnd();
            self.bound_cwnd_for_model();
        }
    }

    /// OnEnterRTO: the RTO marked everything lost, so C.inflight + 1 is one packet.
    fn on_timeout(&mut self, _ev: &TimeoutEvent) {
        self.save_state_upon_loss(); // saves the window too
        self.is_loss_in_round = true;
        self.in_recovery = true;
        self.cwnd = 1.0;
    }

    /// HandleSpuriousLossDetection (the transport's `rto_undo`).
    fn undo_cwnd(&mut self, _prior_cwnd: f64, _prior_ssthresh: f64) {
        self.in_recovery = false;
        self.restore_cwnd();
        self.is_loss_in_round = false;
        self.reset_full_bw();
        self.bw_shortterm = self.bw_shortterm.max(self.undo_bw_shortterm);
        self.inflight_shortterm = self.inflight_shortterm.max(self.undo_inflight_shortterm);
        self.inflight_longterm = self.inflight_longterm.max(self.undo_inflight_longterm);
        match self.undo_state {
            Some(State::Startup) if self.state != State::Startup => {
                self.full_bw_reached = false;
                if self.state != State::ProbeRtt {
                    self.enter_startup();
                }
            }
            // Back to probing: a refill restarts the probe the loss ended.
            Some(State::ProbeBwUp) if !matches!(self.state, State::ProbeBwUp | State::ProbeRtt) => {
                self.start_probe_bw_refill();
            }
            _ => {}
        }
        self.undo_state = None;
    }

    /// HandleRestartFromIdle.
    fn on_send(&mut self, ctx: &mut SendCtx) {
        if ctx.in_flight != 0 || !self.app_limited || self.delivered == 0 {
            return;
        }
        self.idle_restart = true;
        self.extra_acked_interval_start = ctx.now;
        if self.state.is_probe_bw() {
            // Back at BBR.bw exactly, however the cycle left the pacing gain.
            self.set_pacing_rate_with_gain(1.0);
        } else if self.state == State::ProbeRtt {
            self.check_probe_rtt_done(ctx.now);
        }
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let finite = |v: f64| if v.is_finite() { v } else { f64::NAN };
        out.push(("bbr3_state", self.state.code()));
        out.push(("bbr3_bw_bps", self.to_wire_bps(self.bw)));
        out.push(("bbr3_max_bw_bps", self.to_wire_bps(self.max_bw.get())));
        out.push(("bbr3_inflight_longterm", finite(self.inflight_longterm)));
        out.push(("bbr3_inflight_shortterm", finite(self.inflight_shortterm)));
        out.push((
            "bbr3_min_rtt_s",
            self.min_rtt
                .map_or(f64::NAN, |r| r as f64 / NS_PER_SEC as f64),
        ));
        out.push(("bbr3_pacing_gain", self.pacing_gain));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::fluid_path::{ack_at, Path};

    fn env() -> SenderEnv {
        SenderEnv {
            seed: 7,
            ..SenderEnv::default()
        }
    }

    /// Drives `b` on `p` for `secs`, one ACK per packet at the path rate; `f` sees each ACK first.
    fn drive(
        b: &mut Bbr3,
        p: &Path,
        from: Nanos,
        secs: f64,
        mut f: impl FnMut(&mut Bbr3, &mut AckSample),
    ) -> Nanos {
        let gap = (1e9 / p.cap) as Nanos;
        let (mut now, mut q) = (from, 0.0);
        let mut delivered = b.delivered;
        while now < from + (secs * 1e9) as Nanos {
            now += gap;
            delivered += 1;
            let w = p.in_flight(b, &mut q, gap);
            let mut a = ack_at(now, delivered, w, p.rtt, p.cap);
            f(b, &mut a);
            b.on_ack(&a);
        }
        now
    }

    fn path() -> Path {
        Path {
            cap: 10_000.0, // 120 Mbit/s of 1500-byte packets
            rtt: 40 * NS_PER_MS,
        }
    }

    /// Startup finds the rate, Drain empties the queue, ProbeBW cycles DOWN → CRUISE → REFILL → UP;
    /// the window is 2·BDP plus the offload budget (3 send quanta of 1 ms).
    #[test]
    fn converges_to_the_path_rate_and_cycles_through_probe_bw() {
        let p = path();
        let mut b = Bbr3::new(&env(), &Params::new()).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        drive(&mut b, &p, 0, 4.0, |b, _| {
            seen.insert(b.mode() as u8);
        });
        assert!(b.full_bw_reached());
        assert!((b.max_bw() - p.cap).abs() / p.cap < 0.01, "{}", b.max_bw());
        assert_eq!(b.bw(), b.max_bw(), "no loss: the short-term bound is off");
        for s in [
            State::Startup,
            State::Drain,
            State::ProbeBwDown,
            State::ProbeBwCruise,
        ] {
            assert!(seen.contains(&(s as u8)), "{s:?} never entered: {seen:?}");
        }
        // After up to 3 s of waiting the first probe comes: REFILL for a round, then UP.
        let mut probes = Vec::new();
        drive(&mut b, &p, 4_000_000_000, 6.0, |b, a| {
            if b.mode() == State::ProbeBwUp && probes.last() != Some(&b.mode()) {
                probes.push(b.mode());
                assert_eq!(b.pacing_gain(), 1.25);
            }
            if b.mode() != State::ProbeBwUp && probes.last() == Some(&State::ProbeBwUp) {
                probes.push(b.mode());
            }
            let _ = a;
        });
        assert!(probes.len() >= 2, "{probes:?}");
        let bdp = p.cap * p.rtt as f64 / 1e9; // 400 packets
        let quanta = 3.0 * b.send_quantum();
        assert!(
            (b.cwnd() - (2.0 * bdp + quanta)).abs() <= quanta + 4.0,
            "{} vs 2·{bdp} + {quanta}",
            b.cwnd()
        );
    }

    /// ProbeRTT every 5 s, at half the BDP (not v1's 4 packets), for at least 200 ms and a round.
    #[test]
    fn probe_rtt_every_five_seconds_at_half_the_bdp() {
        let p = path();
        let mut b = Bbr3::new(&env(), &Params::new()).unwrap();
        let (mut entered, mut left) = (Vec::new(), Vec::new());
        let mut prev = b.mode();
        drive(&mut b, &p, 0, 16.0, |b, a| {
            // A standing queue of 5 ms outside ProbeRTT: RTT samples above the propagation delay.
            if b.mode() != State::ProbeRtt && a.now > NS_PER_SEC {
                a.rtt = Some(p.rtt + 5 * NS_PER_MS);
            }
            if b.mode() == State::ProbeRtt {
                assert!(b.cwnd() <= 0.5 * 400.0 + 1.0, "{}", b.cwnd());
            }
            if b.mode() != prev {
                if b.mode() == State::ProbeRtt {
                    entered.push(a.now);
                } else if prev == State::ProbeRtt {
                    left.push(a.now);
                }
                prev = b.mode();
            }
        });
        assert_eq!(entered.len(), 3, "{entered:?}");
        let dwell = left[0] - entered[0];
        assert!(
            (200 * NS_PER_MS..300 * NS_PER_MS).contains(&dwell),
            "{dwell}"
        );
        let period = entered[1] - left[0];
        assert!(
            (4_900 * NS_PER_MS..5_200 * NS_PER_MS).contains(&period),
            "{period}"
        );
        assert_eq!(b.min_rtt(), Some(p.rtt));
    }

    fn in_cruise() -> (Bbr3, Path, Nanos) {
        let p = path();
        let mut b = Bbr3::new(&env(), &Params::new()).unwrap();
        let mut now = drive(&mut b, &p, 0, 3.0, |_, _| {});
        while b.mode() != State::ProbeBwCruise {
            now = drive(&mut b, &p, now, 0.01, |_, _| {});
        }
        (b, p, now)
    }

    /// Loss while not probing: at the end of the round the short-term bounds fall to
    /// max(latest, β · bound), β = 0.7; REFILL forgets them.
    #[test]
    fn loss_in_cruise_cuts_the_short_term_model_by_beta_per_round() {
        let (mut b, p, now) = in_cruise();
        let cwnd = b.cwnd();
        let max_bw = b.max_bw();
        // The round's deliveries fall to 100 packets per 2 RTTs (1 250 packets/s), first without loss
        // for a round (so that the round's maxima hold only those), then with one loss.
        let slow = |a: &mut AckSample| {
            let rs = a.rate.as_mut().unwrap();
            rs.delivered = 100;
            rs.interval = p.rtt * 2;
        };
        let now = drive(&mut b, &p, now, 0.1, |_, a| slow(a));
        let mut lost_once = false;
        let mut rounds = 0;
        drive(&mut b, &p, now, 0.1, |b, a| {
            if !lost_once {
                a.newly_lost = 1;
                lost_once = true;
            }
            slow(a);
            if b.loss_round_start {
                rounds += 1;
            }
        });
        assert!(rounds >= 1);
        assert!(
            (b.inflight_shortterm() - 0.7 * cwnd).abs() < 1.0,
            "{} vs 0.7·{cwnd}",
            b.inflight_shortterm()
        );
        assert!(
            (b.bw() - 0.7 * max_bw).abs() / max_bw < 0.01,
            "{} vs 0.7·{max_bw}",
            b.bw()
        );
        assert!(b.cwnd() <= b.inflight_shortterm());
        b.start_probe_bw_refill();
        assert_eq!(b.inflight_shortterm(), INF);
    }

    /// A probe that loses more than 2 % of what it had in flight sets inflight_longterm to that
    /// in-flight volume and goes DOWN; the next probe is precautionary (it leaves UP when it reaches
    /// the bound), and when that one loses nothing the flow probes again at once.
    #[test]
    fn excess_loss_in_probe_up_sets_inflight_longterm() {
        let (mut b, p, mut now) = in_cruise();
        b.bw_probe_wait = 0;
        while b.mode() != State::ProbeBwUp {
            now = drive(&mut b, &p, now, 0.001, |_, _| {});
        }
        let mut a = ack_at(now + 100_000, b.delivered + 1, 450, p.rtt, p.cap);
        let rs = a.rate.as_mut().unwrap();
        rs.tx_in_flight = 480;
        rs.lost = 10; // 2.1 % of 480
        a.newly_lost = 10;
        b.on_ack(&a);
        assert_eq!(b.mode(), State::ProbeBwDown);
        assert_eq!(b.inflight_longterm(), 480.0);
        assert!(b.prev_probe_too_high);
        assert!(b.cwnd() <= 480.0);
        // In DOWN the headroom rule holds the flow until in flight ≤ 0.85 · 480.
        assert!((b.inflight_with_headroom() - 408.0).abs() < 1e-9);
    }

    /// Startup ends on loss: six loss events in a round of fast recovery with more than 2 % lost.
    #[test]
    fn startup_exits_on_high_loss() {
        let p = path();
        let mut b = Bbr3::new(&env(), &Params::new()).unwrap();
        let now = drive(&mut b, &p, 0, 0.05, |_, _| {});
        assert_eq!(b.mode(), State::Startup);
        b.on_loss(&LossEvent::default());
        let mut events = 0;
        drive(&mut b, &p, now, 0.2, |b, a| {
            a.in_recovery = true;
            // 8 ACKs that mark losses, then samples that each saw 10 % of their flight lost.
            if b.mode() == State::Startup {
                if events < 8 {
                    events += 1;
                    a.newly_lost = 2;
                }
                let rs = a.rate.as_mut().unwrap();
                rs.lost = 20;
                rs.tx_in_flight = 200;
            }
        });
        assert!(b.full_bw_reached());
        assert_ne!(b.mode(), State::Startup);
        assert!(b.inflight_longterm().is_finite());
        assert_eq!(b.undo_state, Some(State::Startup));
        // A spurious-loss undo returns to Startup.
        b.undo_cwnd(0.0, 0.0);
        assert!(!b.full_bw_reached());
    }

    /// The wait before probing is 2–3 s, drawn from the flow's seed.
    #[test]
    fn probe_wait_is_two_to_three_seconds_and_seeded() {
        let mut waits = Vec::new();
        for seed in 0..50 {
            let e = SenderEnv { seed, ..env() };
            let (mut b, mut c) = (
                Bbr3::new(&e, &Params::new()).unwrap(),
                Bbr3::new(&e, &Params::new()).unwrap(),
            );
            b.pick_probe_wait();
            c.pick_probe_wait();
            assert_eq!(
                (b.bw_probe_wait, b.rounds_since_probe_up),
                (c.bw_probe_wait, c.rounds_since_probe_up)
            );
            assert!((2 * NS_PER_SEC..3 * NS_PER_SEC).contains(&b.bw_probe_wait));
            waits.push(b.bw_probe_wait);
        }
        let mean = waits.iter().sum::<Nanos>() as f64 / 50.0 / 1e9;
        assert!((2.35..2.65).contains(&mean), "{mean}");
    }
}
