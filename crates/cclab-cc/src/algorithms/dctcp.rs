//! DCTCP, Data Center TCP (RFC 8257; Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010), with the
//! Linux `tcp_dctcp.c` constants.
//!
//! Switches mark ECN-capable packets when their instantaneous queue exceeds K (here: a link's
//! `mark_threshold`), and the sender reacts to the *extent* of the marking, not its presence:
//! * once per window of data, α ← (1 − g)·α + g·F, with F the fraction of the packets acknowledged in
//!   that window whose ACK carried ECN-Echo, g = 1/16;
//! * on ECN-Echo (at most once per window; the transport's ECN event): cwnd ← cwnd·(1 − α/2), so a queue
//!   that crossed K for a moment costs a few percent, and one that stays above K halves the window as
//!   Reno would;
//! * a loss is Reno's halving; slow start, increase and RTO are Reno's.
//!
//! α starts at 1 (Linux `dctcp_alpha_on_init`): the first reaction is Reno's.
//!
//! The receiver echoes each packet's CE state on its ACK (this transport's receiver reports CE seen since
//! its last ACK, one ACK per packet by default), which is what DCTCP's F needs; with delayed ACKs an ACK
//! covering a marked packet counts all the packets it acknowledges as marked (RFC 8257 §3.2's state
//! machine would send an extra ACK at each change instead). The flows need `transport.ecn = true`.

use crate::cc::reno_undo;
use crate::cc::{
    reno_on_ack, reno_on_loss, reno_on_timeout, AckSample, CongestionControl, LossEvent,
    TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};

pub struct Dctcp {
    g: f64,
    cwnd: f64,
    ssthresh: f64,
    alpha: f64,
    /// Packets acknowledged, and acknowledged with ECN-Echo, in the current observation window.
    acked: f64,
    marked: f64,
    window_end: u64,
}

impl Dctcp {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Dctcp, ParamError> {
        let mut r = ParamReader::new("dctcp", params);
        let g = r.f64_in("g", 1.0 / 16.0, 1e-6, 1.0)?;
        let alpha = r.f64_in("initial_alpha", 1.0, 0.0, 1.0)?;
        let ssthresh = r.positive("initial_ssthresh", 1e12)?;
        r.finish()?;
        Ok(Dctcp {
            g,
            cwnd: initial_cwnd,
            ssthresh,
            alpha,
            acked: 0.0,
            marked: 0.0,
            window_end: 0,
        })
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        let n = ack.newly_acked as f64;
        self.acked += n;
        if ack.ecn_echo {
            self.marked += n;
        }
        if ack.delivered >= self.window_end {
            if self.acked > 0.0 {
                let f = self.marked / self.acked;
                self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            }
            self.acked = 0.0;
            self.marked = 0.0;
            self.window_end = ack.delivered + self.cwnd.max(1.0) as u64;
        }
        reno_on_ack(&mut self.cwnd, self.ssthresh, ack);
    }
    fn on_loss(&mut self, ev: &LossEvent) {
        if ev.ecn {
            self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(2.0);
            self.ssthresh = self.cwnd;
        } else {
            reno_on_loss(&mut self.cwnd, &mut self.ssthresh, ev);
        }
    }
    /// A reduction found spurious: Linux `dctcp_cwnd_undo`: max(cwnd, loss_cwnd), loss_cwnd being the window before the last reduction,
    /// which is `prior_cwnd` here; the transport restores ssthresh as for Reno. α is an ECN average that a
    /// loss does not touch.
    fn undo_cwnd(&mut self, prior_cwnd: f64, prior_ssthresh: f64) {
        reno_undo(
            &mut self.cwnd,
            &mut self.ssthresh,
            prior_cwnd,
            prior_ssthresh,
        );
    }
    fn on_timeout(&mut self, ev: &TimeoutEvent) {
        reno_on_timeout(&mut self.cwnd, &mut self.ssthresh, ev);
    }
    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("dctcp_alpha", self.alpha));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(delivered: u64, ece: bool) -> AckSample {
        AckSample {
            newly_acked: 1,
            delivered,
            ecn_echo: ece,
            ..Default::default()
        }
    }

    #[test]
    fn alpha_tracks_the_marked_fraction_and_sets_the_cut() {
        let mut d = Dctcp::new(10.0, &Params::new()).unwrap();
        d.cwnd = 100.0;
        d.ssthresh = 1.0;
        // Windows of 100 packets with 10 % marked: α → 0.1 (from 1, factor 15/16 per window).
        let mut delivered = 0;
        for _ in 0..200 {
            for k in 0..100 {
                delivered += 1;
                d.on_ack(&ack(delivered, k % 10 == 0));
            }
            d.cwnd = 100.0; // hold the window size so every window is 100 packets
        }
        assert!((d.alpha - 0.1).abs() < 0.01, "{}", d.alpha);
        // An ECN event cuts by α/2 = 5 %; a loss halves.
        d.on_loss(&LossEvent {
            ecn: true,
            ..Default::default()
        });
        assert!((d.cwnd() - 100.0 * (1.0 - d.alpha / 2.0)).abs() < 1e-9);
        let w = d.cwnd();
        d.on_loss(&LossEvent {
            ecn: false,
            in_flight: w as u32,
            ..Default::default()
        });
        assert!((d.cwnd() - w / 2.0).abs() < 1.0);
    }

    #[test]
    fn the_first_reaction_is_renos() {
        let mut d = Dctcp::new(10.0, &Params::new()).unwrap();
        d.cwnd = 80.0;
        d.on_loss(&LossEvent {
            ecn: true,
            ..Default::default()
        });
        assert_eq!(d.cwnd(), 40.0);
    }
}
