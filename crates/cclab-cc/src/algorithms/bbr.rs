//! BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016), as Linux 6.x
//! `net/ipv4/tcp_bbr.c` implements it: the constants, the order of the per-ACK steps and the recovery
//! rules are Linux's. docs/algorithms/bbr.md has the equations and the DECISIONs.
//!
//! BBR models the path by two numbers and paces to them instead of reacting to loss:
//! * `BtlBw`, the bottleneck bandwidth: a windowed maximum of the transport's delivery-rate samples
//!   over the last 10 round trips (app-limited samples only when they raise it);
//! * `RTprop`, the round-trip propagation time: the minimum RTT seen in the last 10 s.
//!
//! Pacing rate = pacing_gain · BtlBw; cwnd = cwnd_gain · BtlBw · RTprop (+ ACK-aggregation allowance
//! + a quantisation budget). The gains come from a state machine:
//! * **Startup**: both gains 2/ln 2 ≈ 2.885, doubling the sending rate each round, until BtlBw has not
//!   grown by 25 % in 3 rounds ("full bandwidth reached");
//! * **Drain**: pacing gain 1/2.885 until the data in flight is down to one BDP;
//! * **ProbeBW**: cwnd gain 2, pacing gain cycling through 5/4, 3/4, 1, 1, 1, 1, 1, 1, one phase per
//!   RTprop, entered at a random phase other than 3/4;
//! * **ProbeRTT**: when RTprop has not been refreshed for 10 s, cwnd 4 packets for 200 ms and one round
//!   trip, so that the queue empties and the propagation delay can be seen.
//!
//! Also as Linux: long-term bandwidth sampling (a policer: if two sampling intervals with ≥ 20 % loss
//! show rates within 1/8 of each other, BBR paces at their mean for 48 rounds), packet conservation in
//! the first round of fast recovery and the window restored after it, and the ACK-aggregation allowance
//! (`extra_acked`, the excess of ACKed data over what BtlBw predicts, max over 10 rounds, capped at
//! 100 ms of BtlBw).

use crate::cc::{AckSample, CongestionControl, LossEvent, TimeoutEvent};
use crate::env::SenderEnv;
use crate::minmax::WindowedMax;
use crate::params::{ParamError, ParamReader, Params};
use crate::rng::{self, Rng};
use crate::time::{Nanos, NS_PER_MS, NS_PER_SEC};

/// 2/ln 2: the smallest gain that doubles the delivery rate each round in Startup.
const HIGH_GAIN: f64 = 2885.0 / 1000.0;
const PACING_GAINS: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Linux `bbr_cycle_rand`: ProbeBW starts at a random phase among the 7 that are not the 3/4 one.
const CYCLE_RAND: u64 = 7;
const CWND_MIN_TARGET: f64 = 4.0;
const INIT_CWND: f64 = 10.0;
/// Full bandwidth reached: growth below 25 % for 3 rounds.
const FULL_BW_THRESH: f64 = 1.25;
const FULL_BW_CNT: u32 = 3;
/// Pacing 1 % below the estimate, so that the queue drains.
const PACING_MARGIN: f64 = 0.99;
/// Long-term sampling (policer detection).
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: f64 = 50.0 / 256.0;
const LT_BW_RATIO: f64 = 1.0 / 8.0;
/// 4 kbit/s.
const LT_BW_DIFF_BYTES_PER_SEC: f64 = 4000.0 / 8.0;
const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation: windows of 5 rounds, allowance at most 100 ms of BtlBw.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const EXTRA_ACKED_MAX: Nanos = 100 * NS_PER_MS;
const ACK_EPOCH_RESET: u64 = 1 << 20;
/// Linux `sk_pacing_shift` (10): the TSO burst budget is about 1 ms of pacing.
const PACING_SHIFT_DIVISOR: f64 = 1024.0;
/// Linux caps a TSO burst at GSO_LEGACY_MAX_SIZE − 1 − MAX_TCP_HEADER bytes and 127 segments.
const TSO_MAX_BYTES: f64 = 65536.0 - 1.0 - 320.0;
/// Below 1.2 Mbit/s Linux aims at 1-segment bursts, above at 2.
const MIN_TSO_RATE_BPS: f64 = 1.2e6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

pub struct Bbr {
    /// Wire bytes of a full packet (the pacing rate is in wire bits) and payload bytes (TSO budget).
    packet_size: f64,
    mss: f64,
    high_gain: f64,
    cwnd_gain_probe_bw: f64,
    min_rtt_win: Nanos,
    probe_rtt_time: Nanos,
    bw_win_rounds: u64,
    lt_enabled: bool,
    extra_acked_enabled: bool,
    rng: rng::SimRng,

    mode: Mode,
    cwnd: f64,
    pacing_bps: f64,
    pacing_gain: f64,
    cwnd_gain: f64,
    /// BtlBw filter, packets per second, by round count.
    bw: WindowedMax,
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    round_start: bool,
    /// RTprop and when it was last set (None: no sample yet).
    min_rtt: Option<Nanos>,
    min_rtt_stamp: Nanos,
    probe_rtt_done_stamp: Option<Nanos>,
    probe_rtt_round_done: bool,
    probe_rtt_mark: ProbeRttMark,
    cycle_idx: usize,
    cycle_stamp: Nanos,
    full_bw: f64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    prior_cwnd: f64,
    packet_conservation: bool,
    in_recovery: bool,
    /// A fast-recovery episode started: the next ACK sets cwnd to what is in flight plus what it acked.
    recovery_starts: bool,
    has_seen_rtt: bool,
    /// Time of the last ACK that delivered data (Linux `delivered_mstamp`), and the delivered count.
    delivered_stamp: Nanos,
    delivered: u64,
    lt: LongTerm,
    extra: AckAggregation,
}

/// ProbeRTT's application-limited mark, for v1 and v3: Linux marks the connection application-limited
/// in ProbeRTT so that the low rate there does not enter the bandwidth filter. Here the transport's
/// application-limited state is the application's (it means "no data"), so BBR keeps its own: samples
/// of packets sent while the delivered count was between ProbeRTT's start and the delivery of what was
/// in flight at its latest ACK.
#[derive(Clone, Debug, Default)]
pub(super) struct ProbeRttMark {
    from: u64,
    /// 0: never in ProbeRTT.
    until: u64,
}

impl ProbeRttMark {
    pub(super) fn start(&mut self, delivered: u64) {
        self.from = delivered;
    }
    pub(super) fn extend(&mut self, delivered: u64, in_flight: u32) {
        self.until = (delivered + in_flight as u64).max(1);
    }
    pub(super) fn covers(&self, prior_delivered: u64) -> bool {
        self.until != 0 && (self.from..=self.until).contains(&prior_delivered)
    }
}

/// Long-term (policed) bandwidth sampling state.
#[derive(Clone, Debug, Default)]
struct LongTerm {
    is_sampling: bool,
    use_bw: bool,
    bw: f64,
    rtt_cnt: u32,
    last_stamp: Nanos,
    last_delivered: u64,
    last_lost: u64,
}

#[derive(Clone, Debug, Default)]
struct AckAggregation {
    win_rtts: u32,
    win_idx: usize,
    extra_acked: [f64; 2],
    epoch_stamp: Nanos,
    epoch_acked: u64,
}

impl Bbr {
    pub fn new(env: &SenderEnv, params: &Params) -> Result<Bbr, ParamError> {
        let mut r = ParamReader::new("bbr", params);
        let high_gain = r.f64_in("high_gain", HIGH_GAIN, 1.0, 10.0)?;
        let cwnd_gain = r.f64_in("cwnd_gain", 2.0, 1.0, 10.0)?;
        let min_rtt_win = r.f64_in("probe_rtt_interval", 10.0, 0.01, 3600.0)?;
        let probe_rtt_time = r.f64_in("probe_rtt_duration", 0.2, 0.0, 10.0)?;
        let bw_win = r.f64_in("bw_window_rounds", 10.0, 1.0, 1000.0)?;
        let lt_enabled = r.bool("long_term_sampling", true)?;
        let extra_acked_enabled = r.bool("ack_aggregation", true)?;
        r.finish()?;
        let mut rng = rng::Stream::Bbr.rng(env.seed, 0);
        let cycle_idx = rng.gen_range(0..CYCLE_RAND) as usize;
        let mut b = Bbr {
            packet_size: env.packet_size as f64,
            mss: env.mss.max(1) as f64,
            high_gain,
            cwnd_gain_probe_bw: cwnd_gain,
            min_rtt_win: (min_rtt_win * NS_PER_SEC as f64) as Nanos,
            probe_rtt_time: (probe_rtt_time * NS_PER_SEC as f64) as Nanos,
            bw_win_rounds: bw_win as u64,
            lt_enabled,
            extra_acked_enabled,
            rng,
            mode: Mode::Startup,
            cwnd: env.initial_cwnd,
            pacing_bps: 0.0,
            pacing_gain: high_gain,
            cwnd_gain: high_gain,
            bw: WindowedMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            probe_rtt_mark: ProbeRttMark::default(),
            cycle_idx: CYCLE_RAND as usize - cycle_idx,
            cycle_stamp: 0,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            prior_cwnd: 0.0,
            packet_conservation: false,
            in_recovery: false,
            recovery_starts: false,
            has_seen_rtt: false,
            delivered_stamp: 0,
            delivered: 0,
            lt: LongTerm::default(),
            extra: AckAggregation::default(),
        };
        // Before any RTT is known Linux assumes 1 ms (`bbr_init_pacing_rate_from_rtt`).
        b.init_pacing_rate(NS_PER_MS);
        Ok(b)
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// BtlBw in packets per second (the long-term rate while it is in use).
    pub fn bw(&self) -> f64 {
        if self.lt.use_bw {
            self.lt.bw
        } else {
            self.bw.get()
        }
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

    fn to_wire_bps(&self, pkts_per_sec: f64, gain: f64) -> f64 {
        pkts_per_sec * self.packet_size * 8.0 * gain * PACING_MARGIN
    }

    fn init_pacing_rate(&mut self, rtt: Nanos) {
        let bw = INIT_CWND.max(self.cwnd) * NS_PER_SEC as f64 / rtt.max(1) as f64;
        self.pacing_bps = self.to_wire_bps(bw, self.high_gain);
    }

    /// The BDP at `gain`, in packets, rounded up; the initial window before RTprop is known.
    fn bdp(&self, bw: f64, gain: f64) -> f64 {
        match self.min_rtt {
            None => INIT_CWND,
            Some(rtt) => (bw * rtt as f64 / NS_PER_SEC as f64 * gain).ceil(),
        }
    }

    /// Linux `bbr_tso_segs_goal`: about 1 ms of pacing, 2..127 segments (1 below 1.2 Mbit/s).
    fn tso_segs_goal(&self) -> f64 {
        let bytes = (self.pacing_bps / 8.0 / PACING_SHIFT_DIVISOR).min(TSO_MAX_BYTES);
        let min_segs = if self.pacing_bps < MIN_TSO_RATE_BPS {
            1.0
        } else {
            2.0
        };
        (bytes / self.mss).floor().max(min_segs).min(127.0)
    }

    /// Room for the sender's and receiver's burst quantisation, even-rounded, plus 2 packets in the
    /// probing phase so that probing reaches above BDP · 5/4 (Linux `bbr_quantization_budget`).
    fn quantization_budget(&self, cwnd: f64) -> f64 {
        let mut c = cwnd + 3.0 * self.tso_segs_goal();
        c = 2.0 * (c / 2.0).ceil();
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            c += 2.0;
        }
        c
    }

    fn inflight(&self, bw: f64, gain: f64) -> f64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    fn save_cwnd(&mut self) {
        if !self.in_recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    fn reset_probe_bw_mode(&mut self) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = PACING_GAINS.len() - 1 - self.rng.gen_range(0..CYCLE_RAND) as usize;
        self.advance_cycle_phase();
    }

    fn reset_mode(&mut self) {
        if !self.full_bw_reached {
            self.mode = Mode::Startup;
        } else {
            self.reset_probe_bw_mode();
        }
    }

    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) % PACING_GAINS.len();
        self.cycle_stamp = self.delivered_stamp;
    }

    fn update_bw(&mut self, ack: &AckSample) {
        self.round_start = false;
        let Some(rs) = ack.rate else {
            return;
        };
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = self.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        let app_limited = rs.app_limited || self.probe_rtt_mark.covers(rs.prior_delivered);
        if self.lt_enabled {
            self.lt_bw_sampling(ack.newly_lost > 0, app_limited, ack.lost);
        }
        let bw = rs.packets_per_sec();
        if !app_limited || bw >= self.bw.get() {
            self.bw.update(self.bw_win_rounds, self.rtt_cnt, bw);
        }
    }

    fn reset_lt_interval(&mut self, lost: u64) {
        self.lt.last_stamp = self.delivered_stamp;
        self.lt.last_delivered = self.delivered;
        self.lt.last_lost = lost;
        self.lt.rtt_cnt = 0;
    }

    fn reset_lt(&mut self, lost: u64) {
        self.lt.bw = 0.0;
        self.lt.use_bw = false;
        self.lt.is_sampling = false;
        self.reset_lt_interval(lost);
    }

    /// Linux `bbr_lt_bw_sampling`: a token-bucket policer shows as intervals of heavy loss at a steady
    /// delivery rate.
    fn lt_bw_sampling(&mut self, losses: bool, app_limited: bool, lost: u64) {
        if self.lt.use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt.rtt_cnt += 1;
                if self.lt.rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt(lost);
                    self.reset_probe_bw_mode();
                }
            }
            return;
        }
        // Wait for the first loss: the policer has used up its tokens.
        if !self.lt.is_sampling {
            if !losses {
                return;
            }
            self.reset_lt_interval(lost);
            self.lt.is_sampling = true;
        }
        if app_limited {
            self.reset_lt(lost);
            return;
        }
        if self.round_start {
            self.lt.rtt_cnt += 1;
        }
        if self.lt.rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt.rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt(lost);
            return;
        }
        if !losses {
            return;
        }
        let lost_n = lost.saturating_sub(self.lt.last_lost) as f64;
        let delivered = self.delivered.saturating_sub(self.lt.last_delivered) as f64;
        if delivered == 0.0 || lost_n < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = self.delivered_stamp.saturating_sub(self.lt.last_stamp);
        if t < NS_PER_MS {
            return;
        }
        let bw = delivered * NS_PER_SEC as f64 / t as f64;
        self.lt_bw_interval_done(bw, lost);
    }

    fn lt_bw_interval_done(&mut self, bw: f64, lost: u64) {
        if self.lt.bw > 0.0 {
            let diff = (bw - self.lt.bw).abs();
            if diff <= LT_BW_RATIO * self.lt.bw
                || diff * self.packet_size * PACING_MARGIN <= LT_BW_DIFF_BYTES_PER_SEC
            {
                // Two consistent intervals: a policer. Pace at their mean.
                self.lt.bw = (bw + self.lt.bw) / 2.0;
                self.lt.use_bw = true;
                self.pacing_gain = 1.0;
                self.lt.rtt_cnt = 0;
                return;
            }
        }
        self.lt.bw = bw;
        self.reset_lt_interval(lost);
    }

    /// Linux `bbr_update_ack_aggregation`: how far ACKed data ran ahead of BtlBw in this epoch.
    fn update_ack_aggregation(&mut self, ack: &AckSample) {
        if !self.extra_acked_enabled || ack.newly_acked == 0 || ack.rate.is_none() {
            return;
        }
        let bw = self.bw();
        let e = &mut self.extra;
        if self.round_start {
            e.win_rtts = (e.win_rtts + 1).min(0x1F);
            if e.win_rtts >= EXTRA_ACKED_WIN_RTTS {
                e.win_rtts = 0;
                e.win_idx ^= 1;
                e.extra_acked[e.win_idx] = 0.0;
            }
        }
        let epoch = self.delivered_stamp.saturating_sub(e.epoch_stamp);
        let mut expected = (bw * epoch as f64 / NS_PER_SEC as f64).floor();
        let acked = ack.newly_acked as u64;
        if e.epoch_acked as f64 <= expected || e.epoch_acked + acked >= ACK_EPOCH_RESET {
            e.epoch_acked = 0;
            e.epoch_stamp = self.delivered_stamp;
            expected = 0.0;
        }
        e.epoch_acked = (e.epoch_acked + acked).min(0xFFFFF);
        let extra = (e.epoch_acked as f64 - expected).min(self.cwnd);
        if extra > e.extra_acked[e.win_idx] {
            e.extra_acked[e.win_idx] = extra;
        }
    }

    fn ack_aggregation_cwnd(&self) -> f64 {
        if !self.extra_acked_enabled || !self.full_bw_reached {
            return 0.0;
        }
        let max_aggr = (self.bw() * EXTRA_ACKED_MAX as f64 / NS_PER_SEC as f64).floor();
        let extra = self.extra.extra_acked[0].max(self.extra.extra_acked[1]);
        extra.min(max_aggr)
    }

    fn update_cycle_phase(&mut self, ack: &AckSample) {
        if self.mode != Mode::ProbeBw || !self.is_next_cycle_phase(ack) {
            return;
        }
        self.advance_cycle_phase();
    }

    fn is_next_cycle_phase(&self, ack: &AckSample) -> bool {
        let full_length = self.delivered_stamp.saturating_sub(self.cycle_stamp)
            > self.min_rtt.unwrap_or(Nanos::MAX);
        if self.pacing_gain == 1.0 {
            return full_length;
        }
        let prior_in_flight = (ack.in_flight + ack.newly_acked) as f64;
        let bw = self.bw.get();
        if self.pacing_gain > 1.0 {
            // Probing: until a full RTprop has passed and the extra data is in flight (or lost).
            return full_length
                && (ack.newly_lost > 0 || prior_in_flight >= self.inflight(bw, self.pacing_gain));
        }
        // Draining what probing queued: as soon as it is gone, or after a full RTprop.
        full_length || prior_in_flight <= self.inflight(bw, 1.0)
    }

    fn check_full_bw_reached(&mut self, ack: &AckSample) {
        let app_limited = ack.rate.is_none_or(|r| r.app_limited);
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        let max_bw = self.bw.get();
        if max_bw >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = max_bw;
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    fn check_drain(&mut self, ack: &AckSample) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
        }
        if self.mode == Mode::Drain && ack.in_flight as f64 <= self.inflight(self.bw.get(), 1.0) {
            self.reset_probe_bw_mode();
        }
    }

    fn update_min_rtt(&mut self, ack: &AckSample) {
        let now = ack.now;
        let expired = now > self.min_rtt_stamp.saturating_add(self.min_rtt_win);
        if let Some(rtt) = ack.rtt {
            if self.min_rtt.is_none_or(|m| rtt < m) || expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if self.probe_rtt_time > 0 && expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.probe_rtt_mark.start(self.delivered);
        }
        if self.mode == Mode::ProbeRtt {
            self.probe_rtt_mark.extend(self.delivered, ack.in_flight);
            if self.probe_rtt_done_stamp.is_none() && ack.in_flight as f64 <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = Some(now + self.probe_rtt_time);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = self.delivered;
            } else if let Some(done) = self.probe_rtt_done_stamp {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now > done {
                    // RTprop refreshed (or confirmed): wait another window before probing again.
                    self.min_rtt_stamp = now;
                    self.cwnd = self.cwnd.max(self.prior_cwnd);
                    self.reset_mode();
                }
            }
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (self.high_gain, self.high_gain),
            Mode::Drain => (1.0 / self.high_gain, self.high_gain),
            Mode::ProbeBw => {
                let g = if self.lt.use_bw {
                    1.0
                } else {
                    PACING_GAINS[self.cycle_idx]
                };
                (g, self.cwnd_gain_probe_bw)
            }
            Mode::ProbeRtt => (1.0, 1.0),
        };
    }

    fn set_pacing_rate(&mut self, ack: &AckSample) {
        if !self.has_seen_rtt && ack.srtt > 0 {
            self.has_seen_rtt = true;
            self.init_pacing_rate(ack.srtt);
        }
        let rate = self.to_wire_bps(self.bw(), self.pacing_gain);
        // In Startup the rate only rises: a low early sample must not slow the ramp.
        if self.full_bw_reached || rate > self.pacing_bps {
            self.pacing_bps = rate;
        }
    }

    /// Linux `bbr_set_cwnd_to_recover_or_restore` and `bbr_set_cwnd`.
    fn set_cwnd(&mut self, ack: &AckSample) {
        let acked = ack.newly_acked as f64;
        if acked > 0.0 || self.recovery_starts {
            let mut cwnd = self.cwnd;
            let conserving = self.recover_or_restore(ack, &mut cwnd);
            if !conserving {
                let bw = self.bw();
                let target = self.quantization_budget(
                    self.bdp(bw, self.cwnd_gain) + self.ack_aggregation_cwnd(),
                );
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || (self.delivered as f64) < INIT_CWND {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
            self.cwnd = cwnd;
        }
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(CWND_MIN_TARGET);
        }
    }

    /// Returns true while packet conservation sets the window (the first round of fast recovery).
    fn recover_or_restore(&mut self, ack: &AckSample, cwnd: &mut f64) -> bool {
        if ack.newly_lost > 0 {
            *cwnd = (*cwnd - ack.newly_lost as f64).max(1.0);
        }
        let in_flight = ack.in_flight as f64;
        let acked = ack.newly_acked as f64;
        if self.recovery_starts {
            self.recovery_starts = false;
            self.packet_conservation = true;
            self.next_rtt_delivered = self.delivered;
            *cwnd = in_flight + acked;
        }
        if self.packet_conservation {
            *cwnd = cwnd.max(in_flight + acked);
            return true;
        }
        false
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
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
            self.delivered_stamp = ack.now;
        }
        self.update_bw(ack);
        self.update_ack_aggregation(ack);
        self.update_cycle_phase(ack);
        self.check_full_bw_reached(ack);
        self.check_drain(ack);
        self.update_min_rtt(ack);
        self.update_gains();
        self.set_pacing_rate(ack);
        self.set_cwnd(ack);
    }

    /// A fast-recovery episode starts: save the window (Linux `bbr_ssthresh`); the ACK that follows
    /// sets it to what is in flight (packet conservation). BBR v1 ignores ECN.
    fn on_loss(&mut self, ev: &LossEvent) {
        if ev.ecn {
            return;
        }
        self.save_cwnd();
        self.in_recovery = true;
        self.recovery_starts = true;
    }

    fn on_recovery_end(&mut self, _now: Nanos) {
        if self.in_recovery {
            self.in_recovery = false;
            self.packet_conservation = false;
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
    }

    /// A reduction found spurious, as Linux `bbr_undo_cwnd` and the restore that follows when the
    /// connection returns to the open state (`bbr_set_cwnd_to_recover_or_restore`): the full-bandwidth
    /// plateau counter and the long-term sampler start over (the slow-down they saw was not real), and
    /// the window saved when recovery began comes back (at least the transport's prior window).
    /// `full_bw_reached` stays, as in Linux.
    fn undo_cwnd(&mut self, prior_cwnd: f64, _prior_ssthresh: f64) {
        self.full_bw = 0.0;
        self.full_bw_cnt = 0;
        let lost = self.lt.last_lost;
        self.reset_lt(lost);
        if self.in_recovery {
            self.in_recovery = false;
            self.packet_conservation = false;
            self.recovery_starts = false;
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
        self.cwnd = self.cwnd.max(prior_cwnd);
    }

    /// RTO (Linux `tcp_enter_loss` and `bbr_set_state(TCP_CA_Loss)`): one packet in flight, the
    /// full-bandwidth plateau forgotten, the RTO taken as the end of a round and as a loss for the
    /// long-term sampler; the window saved is restored when the lost data is recovered.
    fn on_timeout(&mut self, _ev: &TimeoutEvent) {
        self.save_cwnd();
        self.in_recovery = true;
        self.recovery_starts = false;
        self.packet_conservation = false;
        self.cwnd = 1.0;
        self.full_bw = 0.0;
        self.round_start = true;
        if self.lt_enabled {
            let lost = self.lt.last_lost;
            self.lt_bw_sampling(true, false, lost);
        }
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let mode = match self.mode {
            Mode::Startup => 0.0,
            Mode::Drain => 1.0,
            Mode::ProbeBw => 2.0,
            Mode::ProbeRtt => 3.0,
        };
        out.push(("bbr_mode", mode));
        out.push(("bbr_btlbw_bps", self.bw() * self.packet_size * 8.0));
        out.push((
            "bbr_rtprop_s",
            self.min_rtt
                .map_or(f64::NAN, |r| r as f64 / NS_PER_SEC as f64),
        ));
        out.push(("bbr_pacing_gain", self.pacing_gain));
        out.push(("bbr_cwnd_gain", self.cwnd_gain));
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

    /// Steady delivery at the path rate: Startup finds the rate within 3 + log2 rounds, drains, and
    /// ProbeBW's cwnd is 2·BDP plus the quantisation budget; pacing averages the path rate.
    #[test]
    fn converges_to_the_path_rate_and_two_bdp_window() {
        let p = Path {
            cap: 10_000.0, // 10 000 pkt/s = 120 Mbit/s of 1500-byte packets
            rtt: 40 * NS_PER_MS,
        };
        let mut b = Bbr::new(&env(), &Params::new()).unwrap();
        let gap = (1e9 / p.cap) as Nanos;
        let mut now = 0;
        let mut delivered = 0u64;
        let bdp = p.cap * p.rtt as f64 / 1e9; // 400 packets
        let mut q = 0.0;
        for _ in 0..40_000 {
            now += gap;
            delivered += 1;
            let in_flight = p.in_flight(&b, &mut q, gap);
            b.on_ack(&ack_at(now, delivered, in_flight, p.rtt, p.cap));
        }
        assert!(b.full_bw_reached());
        assert_eq!(b.mode(), Mode::ProbeBw);
        assert!((b.bw() - p.cap).abs() / p.cap < 0.01, "{}", b.bw());
        // cwnd = 2 BDP + 3 TSO segments (1 ms at 1.25 · 120 Mbit/s ≈ 12 segments), even-rounded.
        let tso = b.tso_segs_goal();
        assert!((2.0..=15.0).contains(&tso), "{tso}");
        let want = 2.0 * bdp + 3.0 * tso;
        assert!((b.cwnd() - want).abs() <= 4.0, "{} vs {want}", b.cwnd());
        assert_eq!(b.min_rtt(), Some(p.rtt));
    }

    /// ProbeRTT every 10 s: the window drops to 4 packets for at least 200 ms, then returns.
    #[test]
    fn probe_rtt_every_ten_seconds() {
        let mut b = Bbr::new(&env(), &Params::new()).unwrap();
        let rtt = 20 * NS_PER_MS;
        let gap = 100_000; // 10 000 pkt/s
        let (mut now, mut delivered) = (0u64, 0u64);
        let mut entered = Vec::new();
        let mut left = Vec::new();
        let mut prev = b.mode();
        while now < 25 * NS_PER_SEC {
            now += gap;
            delivered += 1;
            // The RTT sample stays above RTprop (a standing queue) except while in ProbeRTT.
            let sample = if b.mode() == Mode::ProbeRtt {
                rtt
            } else {
                rtt + 5 * NS_PER_MS
            };
            let in_flight = if b.mode() == Mode::ProbeRtt { 4 } else { 300 };
            let mut a = ack_at(now, delivered, in_flight, sample, 10_000.0);
            if now < NS_PER_SEC {
                a.rtt = Some(rtt);
            }
            b.on_ack(&a);
            if b.mode() == Mode::ProbeRtt {
                assert!(b.cwnd() <= 4.0);
            }
            if b.mode() != prev {
                if b.mode() == Mode::ProbeRtt {
                    entered.push(now);
                } else if prev == Mode::ProbeRtt {
                    left.push(now);
                }
                prev = b.mode();
            }
        }
        assert_eq!(entered.len(), 2, "{entered:?}");
        // The first 10 s after RTprop was set (its first sample); the next 10 s after the previous
        // ProbeRTT ended.
        assert!(
            (9.9e9..10.1e9).contains(&(entered[0] as f64)),
            "{entered:?}"
        );
        let dwell = left[0] - entered[0];
        assert!(
            (200 * NS_PER_MS..260 * NS_PER_MS).contains(&dwell),
            "{dwell}"
        );
        let gap2 = entered[1] - left[0];
        assert!(
            (9_900 * NS_PER_MS..10_200 * NS_PER_MS).contains(&gap2),
            "{gap2}"
        );
    }

    /// The gain cycle: one phase per RTprop, 5/4 once per 8 phases.
    #[test]
    fn probe_bw_cycles_its_gains() {
        let mut b = Bbr::new(&env(), &Params::new()).unwrap();
        let rtt = 10 * NS_PER_MS;
        let p = Path { cap: 10_000.0, rtt };
        let (mut now, mut delivered, mut q) = (0u64, 0u64, 0.0);
        let mut gains = Vec::new();
        while now < 3 * NS_PER_SEC {
            now += 100_000;
            delivered += 1;
            let w = p.in_flight(&b, &mut q, 100_000);
            b.on_ack(&ack_at(now, delivered, w, rtt, 10_000.0));
            if b.mode() == Mode::ProbeBw && gains.last() != Some(&b.pacing_gain()) {
                gains.push(b.pacing_gain());
            }
        }
        let probes = gains.iter().filter(|g| **g == 1.25).count();
        let drains = gains.iter().filter(|g| **g == 0.75).count();
        assert!(probes >= 25, "{probes} in {gains:?}");
        assert!(drains.abs_diff(probes) <= 1);
    }

    #[test]
    fn the_start_phase_is_seeded_and_never_the_drain_phase() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let mut e = env();
            e.seed = seed;
            let mut b = Bbr::new(&e, &Params::new()).unwrap();
            b.full_bw_reached = true;
            b.reset_probe_bw_mode();
            seen.insert(b.cycle_idx);
            let mut b2 = Bbr::new(&e, &Params::new()).unwrap();
            b2.full_bw_reached = true;
            b2.reset_probe_bw_mode();
            assert_eq!(b.cycle_idx, b2.cycle_idx, "same seed, same phase");
        }
        assert!(!seen.contains(&1), "{seen:?}");
        assert_eq!(seen.len(), 7, "{seen:?}");
    }

    #[test]
    fn fast_recovery_conserves_packets_then_restores_the_window() {
        let mut b = Bbr::new(&env(), &Params::new()).unwrap();
        b.cwnd = 100.0;
        b.on_loss(&LossEvent::default());
        let mut a = ack_at(1_000, 1, 60, NS_PER_MS, 1000.0);
        a.in_recovery = true;
        a.newly_lost = 3;
        b.on_ack(&a);
        assert_eq!(b.cwnd(), 61.0, "in flight + acked");
        b.on_recovery_end(2_000);
        assert_eq!(b.cwnd(), 100.0);
        b.on_timeout(&TimeoutEvent::default());
        assert_eq!(b.cwnd(), 1.0);
    }
}
