//! H-TCP (Leith & Shorten, "H-TCP: TCP for high-speed and long-distance networks", PFLDnet 2004; Leith,
//! Shorten & Lee, "H-TCP: a framework for congestion control in high-speed and long-distance networks",
//! 2005), with the Linux `tcp_htcp.c` rules and constants.
//!
//! The increase grows with the time Δ since the last congestion event, so a flow is Reno-like for the
//! first second after a loss (friendly to Reno and to itself at small windows) and then accelerates:
//! * α(Δ) = 1 for Δ ≤ Δ_L = 1 s, else 1 + 10(Δ − Δ_L) + ((Δ − Δ_L)/2)² packets per RTT, times
//!   minRTT/100 ms (clamped to [0.1, 2]: RTT scaling, so flows of different RTTs grow alike per second),
//!   then times 2(1 − β) so that the mean window matches Reno's response at α = 1;
//! * β (the window kept after a loss) = minRTT/maxRTT clamped to [0.5, 0.8] (adaptive backoff: cut
//!   only as much as empties the queue), or 0.5 when the throughput of the last congestion epoch
//!   differed from the one before by more than 20 % (the bandwidth switch: the flows are not in
//!   equilibrium yet, so back off fully).
//!
//! Slow start and the timeout response are Reno's.

use crate::cc::reno_undo;
use crate::cc::{
    reno_on_timeout, slow_start, AckSample, CongestionControl, LossEvent, TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::{Nanos, NS_PER_MS, NS_PER_SEC};

pub struct Htcp {
    rtt_scaling: bool,
    bandwidth_switch: bool,
    cwnd: f64,
    ssthresh: f64,
    alpha: f64,
    beta: f64,
    /// Whether β may be adaptive (off for one epoch after a bandwidth switch, as Linux's modeswitch).
    modeswitch: bool,
    min_rtt: Option<Nanos>,
    max_rtt: Nanos,
    /// When the current congestion epoch began (the last loss), and the packets delivered then.
    epoch_start: Option<Nanos>,
    epoch_delivered: u64,
    /// Throughput (packets/s) of the last epoch and the one before, for the bandwidth switch.
    max_b: f64,
    old_max_b: f64,
    last_delivered: u64,
    last_now: Nanos,
    /// What the last congestion event replaced, for an undo (Linux `htcp_reset`'s `undo_*` fields).
    undo: Option<HtcpUndo>,
}

/// The epoch start, maxRTT and previous-epoch throughput before a congestion event.
#[derive(Clone, Copy)]
struct HtcpUndo {
    epoch_start: Option<Nanos>,
    epoch_delivered: u64,
    max_rtt: Nanos,
    old_max_b: f64,
}

const BETA_MIN: f64 = 0.5;
const BETA_MAX: f64 = 0.8;
const DELTA_L: f64 = 1.0;

impl Htcp {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Htcp, ParamError> {
        let mut r = ParamReader::new("htcp", params);
        let rtt_scaling = r.bool("rtt_scaling", true)?;
        let bandwidth_switch = r.bool("bandwidth_switch", true)?;
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        r.finish()?;
        Ok(Htcp {
            rtt_scaling,
            bandwidth_switch,
            cwnd: initial_cwnd,
            ssthresh,
            alpha: 1.0,
            beta: BETA_MIN,
            modeswitch: false,
            min_rtt: None,
            max_rtt: 0,
            epoch_start: None,
            epoch_delivered: 0,
            max_b: 0.0,
            old_max_b: 0.0,
            last_delivered: 0,
            last_now: 0,
            undo: None,
        })
    }

    /// α for the time since the last congestion event (s).
    fn alpha_for(&self, delta: f64) -> f64 {
        let mut a = 1.0;
        if delta > DELTA_L {
            let d = delta - DELTA_L;
            a += 10.0 * d + (d / 2.0).powi(2);
        }
        if self.rtt_scaling {
            if let Some(m) = self.min_rtt {
                a *= (m as f64 / (100 * NS_PER_MS) as f64).clamp(0.1, 2.0);
            }
        }
        (2.0 * (1.0 - self.beta) * a).max(1e-3)
    }

    fn save_undo(&mut self) {
        self.undo = Some(HtcpUndo {
            epoch_start: self.epoch_start,
            epoch_delivered: self.epoch_delivered,
            max_rtt: self.max_rtt,
            old_max_b: self.old_max_b,
        });
    }

    /// Linux `htcp_beta_update`, at a congestion event.
    fn update_beta(&mut self) {
        if self.bandwidth_switch {
            let (b, old) = (self.max_b, self.old_max_b);
            self.old_max_b = b;
            // Within ±20 % of the previous epoch's throughput: 4·old ≤ 5·b ≤ 6·old.
            if !(4.0 * old <= 5.0 * b && 5.0 * b <= 6.0 * old) {
                self.beta = BETA_MIN;
                self.modeswitch = false;
                return;
            }
        }
        match self.min_rtt {
            Some(m) if self.modeswitch && m > 10 * NS_PER_MS && self.max_rtt > 0 => {
                self.beta = (m as f64 / self.max_rtt as f64).clamp(BETA_MIN, BETA_MAX);
            }
            _ => {
                self.beta = BETA_MIN;
                self.modeswitch = true;
            }
        }
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(rtt) = ack.rtt.filter(|&r| r > 0) {
            let m = self.min_rtt.map_or(rtt, |x| x.min(rtt));
            self.min_rtt = Some(m);
            // Linux grows maxRTT only outside recovery and by at most 20 ms a sample (a spike is not the
            // queue's size).
            if self.max_rtt < m {
                self.max_rtt = m;
            }
            if !ack.in_recovery && rtt > self.max_rtt && rtt <= self.max_rtt + 20 * NS_PER_MS {
                self.max_rtt = rtt;
            }
        }
        let start = *self.epoch_start.get_or_insert(ack.now);
        self.last_delivered = ack.delivered;
        self.last_now = ack.now;
        if ack.in_recovery || ack.app_limited {
            return;
        }
        let left = slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
        if left > 0.0 {
            self.alpha = self.alpha_for(ack.now.saturating_sub(start) as f64 / NS_PER_SEC as f64);
            self.cwnd += self.alpha * left / self.cwnd;
        }
    }
    fn on_loss(&mut self, ev: &LossEvent) {
        self.save_undo();
        // The epoch that ends here: its throughput feeds the bandwidth switch.
        let now = ev.now.max(self.last_now);
        if let Some(start) = self.epoch_start {
            let secs = now.saturating_sub(start) as f64 / NS_PER_SEC as f64;
            if secs > 0.0 {
                self.max_b = self.last_delivered.saturating_sub(self.epoch_delivered) as f64 / secs;
            }
        }
        self.update_beta();
        self.ssthresh = (self.cwnd * self.beta).max(2.0);
        self.cwnd = self.ssthresh;
        self.epoch_start = Some(now);
        self.epoch_delivered = self.last_delivered;
        self.alpha = self.alpha_for(0.0);
    }
    /// A reduction found spurious, as Linux `htcp_cwnd_undo`: the congestion epoch, maxRTT and the
    /// previous epoch's throughput go back to what they were before it (so α resumes from the old
    /// epoch's elapsed time), then Reno's undo of the window and threshold. β stays as updated.
    fn undo_cwnd(&mut self, prior_cwnd: f64, prior_ssthresh: f64) {
        if let Some(u) = self.undo.take() {
            self.epoch_start = u.epoch_start;
            self.epoch_delivered = u.epoch_delivered;
            self.max_rtt = u.max_rtt;
            self.old_max_b = u.old_max_b;
        }
        reno_undo(
            &mut self.cwnd,
            &mut self.ssthresh,
            prior_cwnd,
            prior_ssthresh,
        );
    }
    fn on_timeout(&mut self, ev: &TimeoutEvent) {
        self.save_undo();
        reno_on_timeout(&mut self.cwnd, &mut self.ssthresh, ev);
        self.beta = BETA_MIN;
        self.modeswitch = false;
        self.epoch_start = Some(self.last_now);
        self.epoch_delivered = self.last_delivered;
    }
    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("htcp_alpha", self.alpha));
        out.push(("htcp_beta", self.beta));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(params: &[(&str, bool)]) -> Htcp {
        let mut p = Params::new();
        for (k, v) in params {
            p.insert((*k).into(), crate::params::ParamValue::Bool(*v));
        }
        Htcp::new(10.0, &p).unwrap()
    }

    #[test]
    fn alpha_is_reno_for_a_second_then_grows_quadratically() {
        let mut x = h(&[("rtt_scaling", false)]);
        x.beta = 0.5;
        assert_eq!(x.alpha_for(0.5), 1.0);
        // Δ = 3 s: 1 + 10·2 + 1² = 22, times 2(1 − 0.5) = 1.
        assert!((x.alpha_for(3.0) - 22.0).abs() < 1e-12);
        // β = 0.8: the factor 2(1 − β) = 0.4 keeps the mean window Reno's at α = 1.
        x.beta = 0.8;
        assert!((x.alpha_for(0.5) - 0.4).abs() < 1e-12);
        // RTT scaling: a 20 ms flow grows 0.2× per RTT, i.e. alike per second with a 100 ms one.
        let mut y = h(&[]);
        y.beta = 0.5;
        y.min_rtt = Some(20 * NS_PER_MS);
        assert!((y.alpha_for(3.0) - 22.0 * 0.2).abs() < 1e-12);
    }

    #[test]
    fn beta_is_min_over_max_rtt_once_epochs_are_steady() {
        let mut x = h(&[]);
        x.min_rtt = Some(100 * NS_PER_MS);
        x.max_rtt = 140 * NS_PER_MS;
        // Two epochs of equal throughput: the first loss arms the adaptive mode, the second uses it.
        x.max_b = 1000.0;
        x.old_max_b = 1000.0;
        x.update_beta();
        assert_eq!(x.beta, 0.5);
        x.max_b = 1050.0;
        x.update_beta();
        assert!((x.beta - 100.0 / 140.0).abs() < 1e-12);
        // A 30 % jump in throughput: back to 0.5.
        x.max_b = 1400.0;
        x.update_beta();
        assert_eq!(x.beta, 0.5);
    }
}
