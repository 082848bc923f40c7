//! TCP MaxNet, the source (sender) algorithm.
//!
//! Source: M. Suchara, "TCP MaxNet: background, algorithms, implementation and experiments", Caltech B.S.
//! thesis, 2006 (docs/algorithms/papers.md): §3.2 and Fig. 5 (source pseudocode), eq. 8 (demand
//! function), eq. 9 (ξ update), eq. 10 (ξ fixed point), §4.3 (parameters), §4.5 (price averaging, eq. 12
//! baseRTT correction). The router is [`crate::aqm::maxnet`], the wire fields [`crate::maxnet_wire`].
//! Notes, equations and DECISIONs: `docs/algorithms/maxnet.md`.
//!
//! # Equations
//!
//! * eq. 8  `PriceWnd = baseRTT · x_max · exp(ξ − q·α/baseRTT)` (bits; divided by the wire packet size
//!   to give packets).
//! * eq. 9  every dt: `ξ ← ξ + (η·dt/baseRTT²)·((T·α/baseRTT − 1)·q − T·ξ)`, except that a step that would
//!   cross the fixed point lands on it (Fig. 5 step 3, the "crossing clamp").
//! * eq. 10 fixed point `ξ* = q·(α/baseRTT − 1/T)`; at ξ = ξ* the rate PriceWnd/baseRTT is
//!   `x_max·exp(−q/T)` whatever the RTT: MaxNet is RTT-fair, and the rate at q = p_min(C) (eq. 11) is C.
//! * eq. 12 when baseRTT changes from b_old to b_new: `ξ ← ξ + q·α·(1/b_new − 1/b_old)`, which keeps the
//!   exponent of eq. 8, hence the rate, unchanged.
//!
//! # Modes (Fig. 5)
//!
//! 1. **Start**: the first packet carries an empty QuickStart request; nothing else is sent until its ACK
//!    returns (it plays the SYN of the thesis's TCP: one packet in the first RTT).
//! 2. **QuickStart**: the echoed QSrate (the smallest router offer on the path) becomes the sending rate,
//!    `QSWnd = QSrate·baseRTT`, cwnd = QSWnd. Every baseRTT (step 4): `deltaq = (q − lastq)/baseRTT`,
//!    `lastq = q`, and if `q = 0` or `deltaq < mindeltaq` (the price is not rising: spare capacity) then
//!    `QSrate ← QSrate·rateinc`. PriceWnd is computed all along; when `QSWnd > PriceWnd` the source leaves
//!    QuickStart for good.
//! 3. **Price**: cwnd = PriceWnd.
//!
//! # DECISIONS (docs/algorithms/maxnet.md, "Source DECISIONS"; ours marked "ours")
//!
//! * **Step-4 test**: with cwnd := QSWnd the literal `QSWnd < cwnd` never holds; we read it as "the sender
//!   is window-limited, not application-limited" (`!app_limited`). `qs_literal_test = true` restores the
//!   literal test.
//! * **q** is the mean of the echoed prices over the last smoothed RTT (follows §4.5, departs from Fig. 5's
//!   "price in the most recent packet"); it feeds ξ*, PriceWnd and deltaq. The thesis's unspecified
//!   compensation for the extra feedback delay of averaging is not implemented.
//!   `price_averaging = false` takes the most recent packet's price instead (the thesis's Fig. 7 foil).
//! * **eq. 12** is applied on every fall of baseRTT; `base_rtt_correction = false` turns it off (the
//!   thesis's Fig. 8 left column). `base_rtt_drop` / `base_rtt_drop_at` lower the estimate once at a
//!   given time, as the thesis's Fig. 8 experiment did, without touching the path.
//! * **ξ initialisation**: ξ = ξ* when the first price arrives (Fig. 5 step 2 says "second ACK": the first
//!   ACK carries the QuickStart rate, so it is the same event).
//! * **Sender dt** = 1 ms (no value in the thesis); ξ is updated on the first ACK at least dt after the
//!   last update, with dt := the actual elapsed time (the crossing clamp guards long gaps).
//! * **Window recomputed on every ACK** (`tcp_maxnet_wnd_update_freq = 1`, §4.3); ξ only every dt.
//! * **mindeltaq** = 16000/2^18 ≈ 0.061 price-seconds per second (the thesis's 16000 is in kernel units of
//!   2^−18); **rateinc** = 2 per baseRTT (no thesis value).
//! * **Loss** does not reduce the window (§4.3); the transport still retransmits. **RTO**: keep PriceWnd,
//!   only the transport's timer backs off.
//! * ours — **SYN emulation**: before the QuickStart echo arrives the window is 1 packet (the thesis's
//!   QuickStart request travels on the SYN; here on the first data packet, which we mark ACK_NOW so a
//!   delayed-ACK receiver answers at once). With QuickStart off, the initial window applies until the
//!   first price arrives.
//! * ours — **no MaxNet router**: an echoed QuickStart field still empty (code 0 = x_max) means no router
//!   wrote it; the source skips QuickStart and runs in price mode (eq. 8 at q = 0 asks for x_max, so the
//!   window is then limited by `max_wnd`, as in the thesis's kernel).
//! * ours — **pacing**: the thesis's kernel sender was window-clocked; a packet simulator (or emulator)
//!   with no NIC interrupt coalescing turns a window opened at once into a line-rate burst that fills the
//!   queue MaxNet is meant to keep empty, and the router's 1 ms integrator would see it as overload. So the
//!   source paces: at QSrate in QuickStart mode, at `cwnd·packet_bits/srtt` in price mode (the window's
//!   own rate; the window stays the hard limit on packets in flight).
//!   `pacing = false` leaves the sender ACK-clocked, as the thesis's kernel was.
//! * ours — **window floor** 1 packet, ceiling `max_wnd` (65535, §4.3), also for the pacing rate, so a
//!   flow at a very high price keeps one packet per RTT in flight and hears when the price falls.
//! * ours — echoes whose router field carries a QuickStart rate after the first one (e.g. the ACK of a
//!   retransmitted first packet) are ignored; price 0 echoes (no MaxNet router) are valid prices.

use std::collections::VecDeque;

use crate::cc::{flags, AckSample, CongestionControl, LossEvent, SendCtx, TimeoutEvent};
use crate::maxnet_wire::{
    self, decode_qs_rate, is_quickstart, CODE_MAX, FIELD_MASK, QS_EMPTY, X_MAX_BPS,
};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::{from_secs, to_secs, Nanos};

/// Source parameters (all settable from a flow's `params`).
#[derive(Clone, Debug, PartialEq)]
pub struct MaxNetConfig {
    /// α, convergence parameter of eq. 8/9 (§4.3: 0.3).
    pub alpha: f64,
    /// η, gain of eq. 9 (§4.3: 0.14).
    pub eta: f64,
    /// T, demand time constant, seconds (§4.3: 0.05). Must equal the routers'.
    pub t: f64,
    /// ξ update interval dt, seconds (DECISION: 1 ms).
    pub dt: f64,
    /// Maximum window, packets (§4.3: 65535).
    pub max_wnd: f64,
    /// QuickStart on/off (§4.3: on).
    pub quickstart: bool,
    /// mindeltaq, price-seconds per second (DECISION: 16000/2^18).
    pub mindeltaq: f64,
    /// rateinc, QSrate factor per baseRTT (DECISION: 2).
    pub rateinc: f64,
    /// Use Fig. 5's literal `QSWnd < cwnd` test in step 4 instead of "window-limited".
    pub qs_literal_test: bool,
    /// q = the mean echoed price over one smoothed RTT (§4.5); off, the most recent packet's price (Fig. 5
    /// as printed, the thesis's Fig. 7 "no averaging" foil).
    pub price_averaging: bool,
    /// eq. 12's ξ correction when baseRTT falls; off, the protocol "as described in chapter 3" (Fig. 8 left).
    pub base_rtt_correction: bool,
    /// Pace the window (DECISION "pacing"); off, the sender is ACK-clocked as the thesis's kernel was.
    pub pacing: bool,
    /// §4.5's Fig. 8 experiment: at `base_rtt_drop_at` seconds (simulation clock) the baseRTT estimate is
    /// lowered by `base_rtt_drop` seconds while the path stays as it is (0 = never).
    pub base_rtt_drop: f64,
    pub base_rtt_drop_at: f64,
}

impl MaxNetConfig {
    pub fn from_params(params: &Params) -> Result<Self, ParamError> {
        let mut r = ParamReader::new("maxnet", params);
        let cfg = MaxNetConfig {
            alpha: r.positive("alpha", 0.3)?,
            eta: r.positive("eta", 0.14)?,
            t: r.positive("T", maxnet_wire::DEFAULT_T)?,
            dt: r.f64_in("dt", 0.001, 1e-6, 10.0)?,
            max_wnd: r.f64_in("max_wnd", 65535.0, 1.0, 1e9)?,
            quickstart: r.bool("quickstart", true)?,
            mindeltaq: r.f64_in("mindeltaq", 16000.0 / 262144.0, 0.0, 1e6)?,
            rateinc: r.f64_in("rateinc", 2.0, 1.0, 1e3)?,
            qs_literal_test: r.bool("qs_literal_test", false)?,
            price_averaging: r.bool("price_averaging", true)?,
            base_rtt_correction: r.bool("base_rtt_correction", true)?,
            pacing: r.bool("pacing", true)?,
            base_rtt_drop: r.f64_in("base_rtt_drop", 0.0, 0.0, 10.0)?,
            base_rtt_drop_at: r.f64_in("base_rtt_drop_at", 0.0, 0.0, 1e6)?,
        };
        r.finish()?;
        Ok(cfg)
    }
}

/// Operating mode (reported as `mode`: Start and QuickStart → 0, Price → 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Waiting for the QuickStart echo of the first packet.
    Start,
    QuickStart,
    Price,
}

pub struct MaxNet {
    cfg: MaxNetConfig,
    dt_ns: Nanos,
    /// Bits per full packet on the wire (PriceWnd is in bits, cwnd in packets).
    pkt_bits: f64,
    mode: Mode,
    cwnd: f64,
    /// Echoed price codes of the last smoothed RTT, with their arrival times, and their exact sum.
    samples: VecDeque<(Nanos, u32)>,
    code_sum: u64,
    /// q: mean echoed price over the last smoothed RTT, seconds.
    q: f64,
    /// ξ and whether it has been initialised (first price).
    xi: f64,
    xi_ready: bool,
    t_last: Nanos,
    /// baseRTT (minimum RTT sample), seconds; 0 = none yet.
    base_rtt: f64,
    /// Smoothed RTT from the transport, seconds; 0 = none yet.
    srtt: f64,
    /// PriceWnd, packets, within [1, max_wnd] (f64::INFINITY before the first price).
    price_wnd: f64,
    /// QuickStart rate, bit/s (0 until the echo arrives).
    qs_rate: f64,
    lastq: f64,
    next_step4: Nanos,
    /// When the configured baseRTT drop is due (`Nanos::MAX`: none, or done).
    drop_at: Nanos,
}

impl MaxNet {
    /// `initial_cwnd` applies only with QuickStart off (see the SYN-emulation DECISION); `packet_size` is
    /// the wire size of a full data packet, bytes.
    pub fn new(initial_cwnd: f64, packet_size: u32, params: &Params) -> Result<Self, ParamError> {
        let cfg = MaxNetConfig::from_params(params)?;
        Ok(Self::with_config(cfg, initial_cwnd, packet_size))
    }

    pub fn with_config(cfg: MaxNetConfig, initial_cwnd: f64, packet_size: u32) -> Self {
        let (mode, cwnd) = if cfg.quickstart {
            (Mode::Start, 1.0)
        } else {
            (Mode::Price, initial_cwnd.max(1.0))
        };
        MaxNet {
            dt_ns: from_secs(cfg.dt).max(1),
            pkt_bits: packet_size as f64 * 8.0,
            mode,
            cwnd,
            samples: VecDeque::new(),
            code_sum: 0,
            q: 0.0,
            xi: 0.0,
            xi_ready: false,
            t_last: 0,
            base_rtt: 0.0,
            srtt: 0.0,
            price_wnd: f64::INFINITY,
            qs_rate: 0.0,
            lastq: 0.0,
            next_step4: 0,
            drop_at: if cfg.base_rtt_drop > 0.0 {
                from_secs(cfg.base_rtt_drop_at)
            } else {
                Nanos::MAX
            },
            cfg,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// q, seconds.
    pub fn price(&self) -> f64 {
        self.q
    }
    pub fn xi(&self) -> f64 {
        self.xi
    }
    pub fn base_rtt(&self) -> f64 {
        self.base_rtt
    }
    pub fn price_wnd(&self) -> f64 {
        self.price_wnd
    }
    pub fn qs_rate(&self) -> f64 {
        self.qs_rate
    }

    /// eq. 10: ξ* = q·(α/baseRTT − 1/T).
    fn xi_star(&self) -> f64 {
        self.q * (self.cfg.alpha / self.base_rtt - 1.0 / self.cfg.t)
    }

    /// Window (packets) for a rate in bit/s over baseRTT, within [1, max_wnd].
    fn wnd_for_rate(&self, rate_bps: f64) -> f64 {
        (rate_bps * self.base_rtt / self.pkt_bits).clamp(1.0, self.cfg.max_wnd)
    }

    /// eq. 8 in packets, computed in the log domain (x_max·e^ξ overflows long before the clamp applies).
    fn compute_price_wnd(&self) -> f64 {
        let b = self.base_rtt;
        let ln_w = (b * X_MAX_BPS / self.pkt_bits).ln() + self.xi - self.q * self.cfg.alpha / b;
        if ln_w >= self.cfg.max_wnd.ln() {
            self.cfg.max_wnd
        } else {
            ln_w.exp().max(1.0)
        }
    }

    /// Adds one echoed price and drops those older than one smoothed RTT (the newest always stays).
    fn push_price(&mut self, now: Nanos, code: u32) {
        self.samples.push_back((now, code));
        self.code_sum += code as u64;
        let window = if self.srtt > 0.0 {
            self.srtt
        } else {
            self.base_rtt
        };
        let horizon = now.saturating_sub(from_secs(window));
        while self.samples.len() > 1 && self.samples.front().is_some_and(|&(t, _)| t < horizon) {
            let (_, c) = self.samples.pop_front().unwrap();
            self.code_sum -= c as u64;
        }
        self.q = if self.cfg.price_averaging {
            self.code_sum as f64 / self.samples.len() as f64 * maxnet_wire::RESOLUTION
        } else {
            code as f64 * maxnet_wire::RESOLUTION
        };
    }

    /// baseRTT update with the eq. 12 correction of ξ.
    fn update_base_rtt(&mut self, rtt: f64) {
        if rtt <= 0.0 {
            return;
        }
        if self.base_rtt == 0.0 {
            self.base_rtt = rtt;
        } else if rtt < self.base_rtt {
            if self.xi_ready && self.cfg.base_rtt_correction {
                self.xi += self.q * self.cfg.alpha * (1.0 / rtt - 1.0 / self.base_rtt);
            }
            self.base_rtt = rtt;
        }
    }

    /// eq. 9 with the crossing clamp of Fig. 5 step 3, over an elapsed time `dt` (seconds).
    fn step_xi(&mut self, dt: f64) {
        let b = self.base_rtt;
        let (a, t, q) = (self.cfg.alpha, self.cfg.t, self.q);
        let star = self.xi_star();
        let new = self.xi + self.cfg.eta * dt / (b * b) * ((t * a / b - 1.0) * q - t * self.xi);
        self.xi = if (self.xi < star && star < new) || (new < star && star < self.xi) {
            star
        } else {
            new
        };
    }

    /// Fig. 5 step 4 (QuickStart mode, every baseRTT).
    fn step4(&mut self, ack: &AckSample) {
        let window_limited = if self.cfg.qs_literal_test {
            self.wnd_for_rate(self.qs_rate) < self.cwnd
        } else {
            !ack.app_limited
        };
        if window_limited {
            let deltaq = (self.q - self.lastq) / self.base_rtt;
            self.lastq = self.q;
            if self.q == 0.0 || deltaq < self.cfg.mindeltaq {
                self.qs_rate = (self.qs_rate * self.cfg.rateinc).min(X_MAX_BPS);
            }
        }
    }
}

impl CongestionControl for MaxNet {
    fn name(&self) -> &'static str {
        "maxnet"
    }

    fn cwnd(&self) -> f64 {
        self.cwnd
    }

    fn pacing_rate_bps(&self) -> Option<f64> {
        if !self.cfg.pacing {
            return None;
        }
        match self.mode {
            Mode::Start => None,
            Mode::QuickStart => Some(self.qs_rate),
            Mode::Price if self.srtt > 0.0 && self.price_wnd.is_finite() => {
                Some(self.cwnd * self.pkt_bits / self.srtt)
            }
            Mode::Price => None,
        }
    }

    fn on_ack(&mut self, ack: &AckSample) {
        let now = ack.now;
        match ack.rtt {
            Some(r) => self.update_base_rtt(to_secs(r)),
            None if self.base_rtt == 0.0 => self.update_base_rtt(to_secs(ack.min_rtt)),
            None => {}
        }
        if ack.srtt > 0 {
            self.srtt = to_secs(ack.srtt);
        }
        if now >= self.drop_at && self.base_rtt > 0.0 {
            // the thesis "simulated a drop of the base RTT value": the estimate alone moves (through the
            // same path as a lower sample, so eq. 12 applies when on); later samples, at the old path
            // delay, are all above it and leave it there.
            self.drop_at = Nanos::MAX;
            self.update_base_rtt((self.base_rtt - self.cfg.base_rtt_drop).max(1e-6));
        }
        if self.base_rtt == 0.0 {
            return; // no RTT yet: nothing can be computed (the transport always gives one on the 1st ACK)
        }

        let field = ack.echo_field & FIELD_MASK;
        if is_quickstart(field) {
            if self.mode == Mode::Start {
                if field & CODE_MAX == 0 {
                    // no MaxNet router wrote the request (DECISION): price mode only
                    self.mode = Mode::Price;
                } else {
                    self.qs_rate = decode_qs_rate(field).unwrap_or(0.0);
                    self.mode = Mode::QuickStart;
                    self.cwnd = self.wnd_for_rate(self.qs_rate);
                }
            }
        } else {
            if self.mode == Mode::Start {
                // a price before any QuickStart echo (the request was lost or stripped): price mode
                self.mode = Mode::Price;
            }
            self.push_price(now, field);
            if !self.xi_ready {
                // Fig. 5 step 2 / eq. 10
                self.xi = self.xi_star();
                self.xi_ready = true;
                self.t_last = now;
                self.lastq = self.q;
                self.next_step4 = now + from_secs(self.base_rtt);
            }
        }
        if !self.xi_ready {
            return;
        }

        // Fig. 5 step 3: ξ every dt (on an ACK), the window on every ACK
        if now >= self.t_last + self.dt_ns {
            self.step_xi(to_secs(now - self.t_last));
            self.t_last = now;
        }
        if self.mode == Mode::QuickStart && now >= self.next_step4 {
            self.step4(ack);
            self.next_step4 = now + from_secs(self.base_rtt);
        }
        self.price_wnd = self.compute_price_wnd();
        match self.mode {
            Mode::QuickStart => {
                let qs_wnd = self.wnd_for_rate(self.qs_rate);
                if qs_wnd > self.price_wnd {
                    self.mode = Mode::Price;
                    self.cwnd = self.price_wnd;
                } else {
                    self.cwnd = qs_wnd;
                }
            }
            Mode::Price => self.cwnd = self.price_wnd,
            Mode::Start => {}
        }
    }

    /// Loss is not a congestion signal in MaxNet (§4.3): the window stays.
    fn on_loss(&mut self, _ev: &LossEvent) {}

    /// DECISION: keep PriceWnd on an RTO; the transport retransmits and backs off its timer.
    fn on_timeout(&mut self, _ev: &TimeoutEvent) {}

    /// Nothing to undo: MaxNet's window comes from the price the routers echo (§4.3) and neither a loss
    /// nor an RTO changed it.
    fn undo_cwnd(&mut self, _prior_cwnd: f64, _prior_ssthresh: f64) {}

    fn on_send(&mut self, ctx: &mut SendCtx) {
        if ctx.flags & flags::FIRST != 0 && self.cfg.quickstart {
            ctx.fwd_field = QS_EMPTY;
            ctx.flags |= flags::ACK_NOW;
        } else {
            ctx.fwd_field = 0; // price 0: routers raise it to the path's maximum
        }
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("price", self.q));
        out.push(("xi", self.xi));
        out.push(("mode", if self.mode == Mode::Price { 1.0 } else { 0.0 }));
        out.push((
            "price_wnd",
            if self.price_wnd.is_finite() {
                self.price_wnd
            } else {
                0.0
            },
        ));
        out.push(("qs_rate", self.qs_rate));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::maxnet_wire::{demand_rate, encode_price, encode_qs_rate, p_min};
    use crate::params::ParamValue;
    use crate::time::{NS_PER_MS, NS_PER_US};

    const PKT: u32 = 1500;
    const PKT_BITS: f64 = 12_000.0;

    fn params(kv: &[(&str, ParamValue)]) -> Params {
        kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn ack(now: Nanos, rtt: Nanos, field: u32) -> AckSample {
        AckSample {
            now,
            newly_acked: 1,
            cum_advanced: true,
            rtt: Some(rtt),
            srtt: rtt,
            min_rtt: rtt,
            echo_field: field,
            ..Default::default()
        }
    }

    /// Feeds ACKs every `gap` from `t0` for `dur`, all with RTT `rtt` and echoed `field`; returns the end.
    fn feed(m: &mut MaxNet, t0: Nanos, dur: Nanos, gap: Nanos, rtt: Nanos, field: u32) -> Nanos {
        let mut t = t0;
        while t < t0 + dur {
            m.on_ack(&ack(t, rtt, field));
            t += gap;
        }
        t
    }

    fn price_only() -> MaxNet {
        MaxNet::new(
            10.0,
            PKT,
            &params(&[("quickstart", ParamValue::Bool(false))]),
        )
        .unwrap()
    }

    fn rate(m: &MaxNet) -> f64 {
        m.price_wnd() * PKT_BITS / m.base_rtt()
    }

    #[test]
    fn params_defaults_and_unknown_rejected() {
        let c = MaxNetConfig::from_params(&Params::new()).unwrap();
        assert_eq!(
            (c.alpha, c.eta, c.t, c.dt, c.max_wnd, c.rateinc),
            (0.3, 0.14, 0.05, 0.001, 65535.0, 2.0)
        );
        assert!(c.quickstart && !c.qs_literal_test);
        assert!((c.mindeltaq - 0.061035).abs() < 1e-6);
        let e = MaxNetConfig::from_params(&params(&[("etta", ParamValue::Num(1.0))])).unwrap_err();
        assert_eq!(e.field, "etta");
    }

    /// eq. 8–10: after a price change the rate converges to x_max·e^(−q/T), the same for a 10 ms and a
    /// 200 ms RTT (RTT fairness). ξ starts at ξ*(q1), then the price steps to q2.
    #[test]
    fn equilibrium_rate_is_rtt_independent() {
        let q1 = encode_price(p_min(100e6, 0.05)); // the demand here is 100 Mbit/s
        let q2 = q1 + encode_price(0.02); // +0.02 s: demand × e^-0.4
        let want = demand_rate(q2 as f64 / 262144.0, 0.05);
        for rtt_ms in [10u64, 200] {
            let mut m = price_only();
            let rtt = rtt_ms * NS_PER_MS;
            let t = feed(&mut m, NS_PER_MS, 2 * rtt, 100 * NS_PER_US, rtt, q1);
            // at ξ = ξ* the rate is the demand at q1 (rounding of exp/ln only)
            let at_q1 = demand_rate(q1 as f64 / 262144.0, 0.05);
            assert!(
                (rate(&m) / at_q1 - 1.0).abs() < 1e-9,
                "{} vs {}",
                rate(&m),
                at_q1
            );
            // ξ's time constant is baseRTT²/(η·T): 14 ms at 10 ms RTT, 5.7 s at 200 ms; run 10 of them
            let settle = ((rtt_ms * rtt_ms) as f64 * 1e-6 / (0.14 * 0.05) * 10.0).max(1.0);
            feed(&mut m, t, from_secs(settle), NS_PER_MS, rtt, q2);
            // e^-10 ≈ 4.5e-5 of the initial exponent error (0.4·(1 − α/(b/T))…) is left: 1e-4 relative
            assert!(
                (rate(&m) / want - 1.0).abs() < 1e-4,
                "rtt {rtt_ms} ms: {} vs {}",
                rate(&m),
                want
            );
            assert!((m.xi() - m.xi_star()).abs() < 1e-4);
            assert_eq!(m.mode(), Mode::Price);
        }
    }

    /// Fig. 5 step 3: a step that would cross ξ* lands on it; a small one moves part of the way.
    #[test]
    fn xi_crossing_clamp() {
        let q1 = encode_price(0.8);
        let q2 = encode_price(0.85);
        let rtt = 10 * NS_PER_MS;
        let mut m = price_only();
        let t = feed(&mut m, NS_PER_MS, 50 * NS_PER_MS, NS_PER_MS, rtt, q1);
        let xi1 = m.xi();
        // one ACK at q2 after a 1 s gap: η·dt·T/b² = 70, the raw step would overshoot ξ* by 69×
        m.on_ack(&ack(t + 1_000 * NS_PER_MS, rtt, q2));
        assert_eq!(
            m.price(),
            q2 as f64 * maxnet_wire::RESOLUTION,
            "old samples expired"
        );
        let star = m.xi_star();
        let raw = xi1 + 0.14 * 1.0 * 0.05 / (0.01 * 0.01) * (star - xi1); // eq. 9 as T·(ξ* − ξ) form
        assert!(
            (raw - star).abs() > 10.0 * (star - xi1).abs(),
            "the unclamped step overshoots"
        );
        assert_eq!(m.xi(), star, "clamped onto ξ*");
        // a 1 ms step towards a new ξ*: coefficient 0.07, moves 7% of the way and does not cross
        let mut m = price_only();
        let t = feed(&mut m, NS_PER_MS, 50 * NS_PER_MS, NS_PER_MS, rtt, q1);
        let mut a = ack(t + 50 * NS_PER_MS, rtt, q2);
        m.on_ack(&a); // q jumps (all old samples expired); ξ moves 0.07·50 = 3.5 → clamped
        a.now += NS_PER_MS;
        let target = m.xi_star();
        assert_eq!(m.xi(), target);
        m.on_ack(&a);
        // at the fixed point the update is a no-op (up to float rounding of the two ξ* expressions)
        assert!((m.xi() - target).abs() < 1e-12, "{} vs {}", m.xi(), target);
        // now a genuine partial step
        let mut m2 = price_only();
        let t = feed(&mut m2, NS_PER_MS, 50 * NS_PER_MS, NS_PER_MS, rtt, q1);
        // inject q2 samples for half an RTT so q is a mix, over steps of exactly 1 ms
        let mut tt = t;
        let (mut prev, mut moved_partially) = (m2.xi(), false);
        for _ in 0..5 {
            m2.on_ack(&ack(tt, rtt, q2));
            let star = m2.xi_star();
            let x = m2.xi();
            if x != star {
                moved_partially = true;
                // between the old value and ξ* (no crossing)
                assert!(
                    (x - prev) * (star - x) >= 0.0,
                    "prev {prev} x {x} star {star}"
                );
            }
            prev = x;
            tt += NS_PER_MS;
        }
        assert!(moved_partially);
    }

    /// eq. 12: a lower baseRTT sample shifts ξ by q·α·(1/b_new − 1/b_old); the rate does not jump.
    #[test]
    fn base_rtt_change_correction() {
        let q = encode_price(0.81);
        let mut m = price_only();
        let t = feed(
            &mut m,
            NS_PER_MS,
            20_000 * NS_PER_MS,
            NS_PER_MS,
            50 * NS_PER_MS,
            q,
        );
        let (xi0, rate0, w0) = (m.xi(), rate(&m), m.price_wnd());
        let qq = m.price();
        m.on_ack(&ack(t, 40 * NS_PER_MS, q));
        let expect = xi0 + qq * 0.3 * (1.0 / 0.040 - 1.0 / 0.050);
        // the ξ step of this ACK (dt = 1 ms) acts on ξ − ξ* which is ≈ 0 after the shift: tiny
        assert!((m.xi() - expect).abs() < 1e-9, "{} vs {}", m.xi(), expect);
        assert!(
            (rate(&m) / rate0 - 1.0).abs() < 1e-6,
            "rate {} vs {}",
            rate(&m),
            rate0
        );
        assert!((m.price_wnd() / w0 - 0.8).abs() < 1e-6);
        // without eq. 12 the window would have jumped by e^{qα(1/0.04−1/0.05)} ≈ e^1.2
    }

    #[test]
    fn quickstart_start_doubles_then_hands_over_to_price_mode() {
        let mut m = MaxNet::new(10.0, PKT, &Params::new()).unwrap();
        assert_eq!(m.cwnd(), 1.0, "SYN emulation");
        // first packet: empty QS request, ACK_NOW; later packets: price 0
        let mut s = SendCtx {
            flags: flags::FIRST,
            ..Default::default()
        };
        m.on_send(&mut s);
        assert_eq!(
            (s.fwd_field, s.flags & flags::ACK_NOW),
            (QS_EMPTY, flags::ACK_NOW)
        );
        let mut s = SendCtx {
            fwd_field: 7,
            ..Default::default()
        };
        m.on_send(&mut s);
        assert_eq!(s.fwd_field, 0);

        let c = 100e6;
        let rtt = 28 * NS_PER_MS;
        let qs = encode_qs_rate(0.94 * c);
        m.on_ack(&ack(rtt, rtt, qs));
        assert_eq!(m.mode(), Mode::QuickStart);
        let r0 = m.qs_rate();
        assert!((r0 / (0.94 * c) - 1.0).abs() < 2e-6);
        assert_eq!(m.pacing_rate_bps(), Some(r0));
        // QSWnd = QSrate·baseRTT in packets; the rate code's relative rounding is ≤ 2^-19
        assert!(
            (m.cwnd() / (0.94 * c * 0.028 / PKT_BITS) - 1.0).abs() < 2e-6,
            "{}",
            m.cwnd()
        );
        // flat price at p_min: PriceWnd asks for C > QSrate, so QuickStart continues; one baseRTT after
        // the first price deltaq = 0 < mindeltaq → QSrate doubles → QSWnd > PriceWnd → price mode
        let pm = encode_price(p_min(c, 0.05));
        let t = feed(
            &mut m,
            rtt + NS_PER_MS,
            rtt - 2 * NS_PER_MS,
            100 * NS_PER_US,
            rtt,
            pm,
        );
        assert_eq!(m.mode(), Mode::QuickStart);
        assert_eq!(m.qs_rate(), r0);
        feed(&mut m, t, 4 * NS_PER_MS, 100 * NS_PER_US, rtt, pm);
        assert_eq!(m.qs_rate(), 2.0 * r0);
        assert_eq!(m.mode(), Mode::Price);
        // price mode at p_min: the demand is C (within price quantisation, 2^-18/T ≈ 8e-5)
        assert!((rate(&m) / c - 1.0).abs() < 1e-4, "{}", rate(&m));
        let pace = m.pacing_rate_bps().unwrap();
        assert!((pace / (m.cwnd() * PKT_BITS / 0.028) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn quickstart_keeps_rate_while_price_rises() {
        let mut m = MaxNet::new(10.0, PKT, &Params::new()).unwrap();
        let rtt = 20 * NS_PER_MS;
        m.on_ack(&ack(rtt, rtt, encode_qs_rate(1e6)));
        // price rising at 0.5 s/s ≫ mindeltaq, but high enough that PriceWnd stays above QSWnd
        let mut t = rtt + NS_PER_MS;
        let p0 = 0.6; // demand ≈ 6.1 Gbit/s ≫ 1 Mbit/s, even after +0.1
        while t < rtt + 200 * NS_PER_MS {
            let p = p0 + 0.5 * to_secs(t - rtt);
            m.on_ack(&ack(t, rtt, encode_price(p)));
            t += NS_PER_MS;
        }
        assert_eq!(m.mode(), Mode::QuickStart);
        assert_eq!(m.qs_rate(), decode_qs_rate(encode_qs_rate(1e6)).unwrap());
    }

    #[test]
    fn no_maxnet_router_means_price_mode_and_loss_keeps_window() {
        let mut m = MaxNet::new(10.0, PKT, &Params::new()).unwrap();
        let rtt = 10 * NS_PER_MS;
        m.on_ack(&ack(rtt, rtt, QS_EMPTY));
        assert_eq!(m.mode(), Mode::Price);
        m.on_ack(&ack(rtt + 1, rtt, 0));
        assert_eq!(m.cwnd(), 65535.0, "q = 0 asks for x_max: max window");
        let mut m = price_only();
        feed(
            &mut m,
            NS_PER_MS,
            100 * NS_PER_MS,
            NS_PER_MS,
            rtt,
            encode_price(0.9),
        );
        let w = m.cwnd();
        m.on_loss(&LossEvent {
            in_flight: 50,
            lost: 3,
            ..Default::default()
        });
        m.on_timeout(&TimeoutEvent {
            backoffs: 1,
            ..Default::default()
        });
        assert_eq!(m.cwnd(), w);
    }

    #[test]
    fn practical_issue_switches_default_on_and_are_checked() {
        let c = MaxNetConfig::from_params(&Params::new()).unwrap();
        assert!(c.price_averaging && c.base_rtt_correction && c.pacing);
        assert_eq!((c.base_rtt_drop, c.base_rtt_drop_at), (0.0, 0.0));
        let e = MaxNetConfig::from_params(&params(&[("base_rtt_drop", ParamValue::Num(-0.001))]))
            .unwrap_err();
        assert_eq!(e.field, "base_rtt_drop");
        let e = MaxNetConfig::from_params(&params(&[("price_averaging", ParamValue::Num(1.0))]))
            .unwrap_err();
        assert_eq!(e.field, "price_averaging");
    }

    /// `price_averaging = false`: q is the price of the most recent echo (Fig. 5 as printed).
    #[test]
    fn without_averaging_the_latest_price_is_used() {
        let mut m = MaxNet::new(
            10.0,
            PKT,
            &params(&[
                ("quickstart", ParamValue::Bool(false)),
                ("price_averaging", ParamValue::Bool(false)),
            ]),
        )
        .unwrap();
        let rtt = 10 * NS_PER_MS;
        for i in 0..50u64 {
            let p = if i % 2 == 0 { 0.8 } else { 0.9 };
            m.on_ack(&ack(NS_PER_MS + i * NS_PER_MS, rtt, encode_price(p)));
            // exact: the code's own value, not a mean (encode rounds to 2^-18 s)
            let want = encode_price(p) as f64 / 262144.0;
            assert_eq!(m.price(), want, "ack {i}");
        }
    }

    /// `base_rtt_correction = false`: a lower baseRTT leaves ξ where it was, so the rate falls by a factor
    /// e^{−qα(1/b_new − 1/b_old)} (the instability §4.5 describes); with it, the rate is kept (eq. 12).
    #[test]
    fn without_eq12_a_base_rtt_drop_makes_the_rate_jump() {
        let q = encode_price(0.81);
        let mk = |corr: bool| {
            MaxNet::new(
                10.0,
                PKT,
                &params(&[
                    ("quickstart", ParamValue::Bool(false)),
                    ("base_rtt_correction", ParamValue::Bool(corr)),
                ]),
            )
            .unwrap()
        };
        for corr in [true, false] {
            let mut m = mk(corr);
            let t = feed(
                &mut m,
                NS_PER_MS,
                20_000 * NS_PER_MS,
                NS_PER_MS,
                28 * NS_PER_MS,
                q,
            );
            let (xi0, rate0, qq) = (m.xi(), rate(&m), m.price());
            m.on_ack(&ack(t, 27 * NS_PER_MS, q));
            let jump = (-qq * 0.3 * (1.0 / 0.027 - 1.0 / 0.028)).exp();
            if corr {
                assert!(
                    (rate(&m) / rate0 - 1.0).abs() < 1e-6,
                    "{}",
                    rate(&m) / rate0
                );
            } else {
                // the ξ step of this one ACK moves ξ by at most η·dt/b²·T·|ξ* − ξ| (≈ 0.9 % of the gap)
                assert!((m.xi() - xi0).abs() < 0.01 * (qq * 0.3 * (1.0 / 0.027 - 1.0 / 0.028)));
                assert!(
                    (rate(&m) / rate0 / jump - 1.0).abs() < 0.01,
                    "{} vs {jump}",
                    rate(&m) / rate0
                );
            }
        }
    }

    /// `base_rtt_drop`: once the clock reaches `base_rtt_drop_at`, the estimate is lowered by the drop
    /// (eq. 12 applied) and later samples at the old path delay leave it there.
    #[test]
    fn configured_base_rtt_drop_happens_once_at_its_time() {
        let q = encode_price(0.81);
        let mut m = MaxNet::new(
            10.0,
            PKT,
            &params(&[
                ("quickstart", ParamValue::Bool(false)),
                ("base_rtt_drop", ParamValue::Num(0.001)),
                ("base_rtt_drop_at", ParamValue::Num(10.0)),
            ]),
        )
        .unwrap();
        let t = feed(
            &mut m,
            NS_PER_MS,
            9_998 * NS_PER_MS,
            NS_PER_MS,
            28 * NS_PER_MS,
            q,
        );
        assert!(t < 10_000 * NS_PER_MS);
        assert!((m.base_rtt() - 0.028).abs() < 1e-12);
        let (xi0, rate0, qq) = (m.xi(), rate(&m), m.price());
        feed(&mut m, t, 3 * NS_PER_MS, NS_PER_MS, 28 * NS_PER_MS, q);
        assert!((m.base_rtt() - 0.027).abs() < 1e-12, "{}", m.base_rtt());
        assert!((m.xi() - xi0 - qq * 0.3 * (1.0 / 0.027 - 1.0 / 0.028)).abs() < 1e-3);
        assert!(
            (rate(&m) / rate0 - 1.0).abs() < 1e-3,
            "{}",
            rate(&m) / rate0
        );
        feed(
            &mut m,
            t + 3 * NS_PER_MS,
            100 * NS_PER_MS,
            NS_PER_MS,
            28 * NS_PER_MS,
            q,
        );
        assert!((m.base_rtt() - 0.027).abs() < 1e-12);
    }

    #[test]
    fn pacing_off_means_ack_clocked() {
        let mut m = MaxNet::new(
            10.0,
            PKT,
            &params(&[
                ("quickstart", ParamValue::Bool(false)),
                ("pacing", ParamValue::Bool(false)),
            ]),
        )
        .unwrap();
        feed(
            &mut m,
            NS_PER_MS,
            100 * NS_PER_MS,
            NS_PER_MS,
            28 * NS_PER_MS,
            encode_price(0.8),
        );
        assert_eq!(m.pacing_rate_bps(), None);
        let mut p = price_only();
        feed(
            &mut p,
            NS_PER_MS,
            100 * NS_PER_MS,
            NS_PER_MS,
            28 * NS_PER_MS,
            encode_price(0.8),
        );
        assert!(p.pacing_rate_bps().is_some());
    }

    #[test]
    fn price_is_averaged_over_one_srtt() {
        let mut m = price_only();
        let rtt = 10 * NS_PER_MS;
        // alternating prices 0.8 / 0.9 each ms for 50 ms, then only the last 10 ms count
        for i in 0..50u64 {
            let p = if i % 2 == 0 { 0.8 } else { 0.9 };
            m.on_ack(&ack(NS_PER_MS + i * NS_PER_MS, rtt, encode_price(p)));
        }
        // the samples in [now − srtt, now] = [40 ms, 50 ms]: 11 of them, i = 39…49: five at 0.8, six at 0.9
        let mean = (5.0 * decode(encode_price(0.8)) + 6.0 * decode(encode_price(0.9))) / 11.0;
        assert!(
            (m.price() - mean).abs() < 1e-12,
            "{} vs {}",
            m.price(),
            mean
        );
        fn decode(c: u32) -> f64 {
            c as f64 / 262144.0
        }
    }
}
