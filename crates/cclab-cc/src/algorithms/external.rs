//! `external`: a sender whose congestion window and pacing rate are set from outside the transport,
//! between steps of a stepped simulation (the Gymnasium environment `cclab.gym`, docs/gym.md).
//!
//! The algorithm and its driver share one [`ExternalControl`]: the driver sets the window
//! ([`ExternalControl::set_cwnd`]) or the pacing rate ([`ExternalControl::set_rate`]) and reads what
//! the algorithm saw since the last read ([`ExternalControl::take_counters`]: ACKs, packets newly
//! delivered, ECN echoes, RTT samples with their minimum and maximum, loss events, timeouts).
//!
//! * window mode: `cwnd()` is the value set, whatever happens (no slow start, no reduction on loss or
//!   timeout: the agent sees the losses and decides);
//! * rate mode: packets leave paced at the rate set, and the window is only a safety cap of
//!   `gain × rate × srtt` (at least 4 packets; BBR's cwnd_gain = 2), so that in-flight data stays
//!   bounded when the rate is far above the path's. Before the first RTT sample the window set last
//!   applies.
//!
//! DECISION: `external` is not a row of `registry::SENDERS`, so `cclab algorithms` does not list it and
//! a scenario cannot name it: nothing but a stepping driver could set its window, and a scenario run
//! would keep the initial window for the whole run. The stepping driver (`cclab_sim::Simulation::
//! with_external`) builds it directly in place of the agent flow's algorithm.

use crate::cc::{AckSample, CongestionControl, LossEvent, TimeoutEvent};
use crate::time::{to_secs, Nanos};
use std::sync::{Arc, Mutex, MutexGuard};

/// What the algorithm saw between two [`ExternalControl::take_counters`] calls.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExternalCounters {
    /// ACKs received.
    pub acks: u64,
    /// Packets newly delivered (cumulatively acknowledged or newly SACKed) by those ACKs.
    pub acked_pkts: u64,
    /// ACKs carrying ECN-Echo.
    pub ecn_acks: u64,
    /// Valid RTT samples: their number, sum, minimum and maximum (`u64::MAX` / 0 when none).
    pub rtt_n: u64,
    pub rtt_sum_ns: u128,
    pub rtt_min_ns: Nanos,
    pub rtt_max_ns: Nanos,
    /// The last RTT sample (0 when none).
    pub rtt_last_ns: Nanos,
    /// Loss events (at most one per window of data) and the packets found lost in them.
    pub loss_events: u64,
    pub lost_pkts: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
}

impl Default for ExternalCounters {
    fn default() -> Self {
        ExternalCounters {
            acks: 0,
            acked_pkts: 0,
            ecn_acks: 0,
            rtt_n: 0,
            rtt_sum_ns: 0,
            rtt_min_ns: u64::MAX,
            rtt_max_ns: 0,
            rtt_last_ns: 0,
            loss_events: 0,
            lost_pkts: 0,
            timeouts: 0,
        }
    }
}

struct Shared {
    cwnd: f64,
    /// Pacing rate (bit/s on the wire) and the window gain over rate × srtt, in rate mode.
    rate: Option<(f64, f64)>,
    srtt: Nanos,
    counters: ExternalCounters,
}

/// The driver's handle on an [`External`] sender (cheap to clone; one lock per call).
#[derive(Clone)]
pub struct ExternalControl {
    shared: Arc<Mutex<Shared>>,
    packet_size: u32,
}

impl ExternalControl {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        // Nothing panics while holding the lock, so it is never poisoned; recover anyway.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Window mode: the congestion window in packets (clamped to ≥ 1); pacing off.
    pub fn set_cwnd(&self, pkts: f64) {
        let mut s = self.lock();
        s.cwnd = if pkts.is_finite() { pkts.max(1.0) } else { 1.0 };
        s.rate = None;
    }

    /// Rate mode: pace at `bps` (bit/s on the wire, > 0) with a window cap of `gain × bps × srtt`.
    pub fn set_rate(&self, bps: f64, gain: f64) {
        let mut s = self.lock();
        let bps = if bps.is_finite() && bps > 0.0 {
            bps
        } else {
            1.0
        };
        s.rate = Some((bps, gain.max(0.0)));
    }

    /// The window the transport sees now (packets).
    pub fn cwnd(&self) -> f64 {
        effective_cwnd(&self.lock(), self.packet_size)
    }

    /// The pacing rate set (bit/s), or `None` in window mode.
    pub fn rate(&self) -> Option<f64> {
        self.lock().rate.map(|(r, _)| r)
    }

    /// The counters since the last call, which starts them again.
    pub fn take_counters(&self) -> ExternalCounters {
        std::mem::take(&mut self.lock().counters)
    }

    /// ACKs received since the last [`take_counters`](Self::take_counters), without taking them (a
    /// driver stepping ACK by ACK asks this after every event).
    pub fn acks(&self) -> u64 {
        self.lock().counters.acks
    }
}

fn effective_cwnd(s: &Shared, packet_size: u32) -> f64 {
    match s.rate {
        Some((bps, gain)) if s.srtt > 0 => {
            (gain * bps * to_secs(s.srtt) / (8.0 * packet_size as f64)).max(4.0)
        }
        _ => s.cwnd,
    }
}

/// The sender algorithm half (see the module documentation).
pub struct External {
    ctl: ExternalControl,
}

impl External {
    /// A sender starting at `initial_cwnd` packets (window mode) and its control handle.
    pub fn new(initial_cwnd: f64, packet_size: u32) -> (External, ExternalControl) {
        let ctl = ExternalControl {
            shared: Arc::new(Mutex::new(Shared {
                cwnd: initial_cwnd.max(1.0),
                rate: None,
                srtt: 0,
                counters: ExternalCounters::default(),
            })),
            packet_size: packet_size.max(1),
        };
        (External { ctl: ctl.clone() }, ctl)
    }
}

impl CongestionControl for External {
    fn name(&self) -> &'static str {
        "external"
    }

    fn cwnd(&self) -> f64 {
        self.ctl.cwnd()
    }

    fn pacing_rate_bps(&self) -> Option<f64> {
        self.ctl.rate()
    }

    fn on_ack(&mut self, ack: &AckSample) {
        let mut s = self.ctl.lock();
        s.srtt = ack.srtt;
        let c = &mut s.counters;
        c.acks += 1;
        c.acked_pkts += ack.newly_acked as u64;
        c.ecn_acks += ack.ecn_echo as u64;
        if let Some(r) = ack.rtt {
            c.rtt_n += 1;
            c.rtt_sum_ns += r as u128;
            c.rtt_min_ns = c.rtt_min_ns.min(r);
            c.rtt_max_ns = c.rtt_max_ns.max(r);
            c.rtt_last_ns = r;
        }
    }

    fn on_loss(&mut self, ev: &LossEvent) {
        let c = &mut self.ctl.lock().counters;
        c.loss_events += 1;
        c.lost_pkts += ev.lost as u64;
    }

    fn on_timeout(&mut self, _ev: &TimeoutEvent) {
        self.ctl.lock().counters.timeouts += 1;
    }

    /// Nothing to undo: the window and rate are the outside controller's, which neither a loss nor an
    /// RTO changes here (it sees the loss counters and decides).
    fn undo_cwnd(&mut self, _prior_cwnd: f64, _prior_ssthresh: f64) {}

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("rate_set", self.ctl.rate().unwrap_or(f64::NAN)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(rtt: Option<Nanos>, srtt: Nanos, newly: u32, ecn: bool) -> AckSample {
        AckSample {
            rtt,
            srtt,
            newly_acked: newly,
            ecn_echo: ecn,
            ..Default::default()
        }
    }

    #[test]
    fn window_mode_keeps_what_is_set_through_losses_and_timeouts() {
        let (mut cc, ctl) = External::new(10.0, 1500);
        assert_eq!((cc.cwnd(), cc.pacing_rate_bps()), (10.0, None));
        ctl.set_cwnd(37.5);
        cc.on_ack(&ack(Some(20_000_000), 20_000_000, 2, false));
        cc.on_loss(&LossEvent {
            lost: 3,
            ..Default::default()
        });
        cc.on_timeout(&TimeoutEvent::default());
        assert_eq!(cc.cwnd(), 37.5);
        ctl.set_cwnd(0.2);
        assert_eq!(cc.cwnd(), 1.0);
        ctl.set_cwnd(f64::NAN);
        assert_eq!(cc.cwnd(), 1.0);
    }

    #[test]
    fn rate_mode_paces_and_caps_the_window_at_gain_rate_srtt() {
        let (mut cc, ctl) = External::new(10.0, 1500);
        ctl.set_rate(12e6, 2.0);
        // No RTT sample yet: the window set last (the initial one).
        assert_eq!((cc.cwnd(), cc.pacing_rate_bps()), (10.0, Some(12e6)));
        cc.on_ack(&ack(Some(20_000_000), 20_000_000, 1, false));
        // 2 × 12 Mbit/s × 20 ms / 12 000 bit = 40 packets
        assert!((cc.cwnd() - 40.0).abs() < 1e-9, "{}", cc.cwnd());
        ctl.set_rate(1e5, 2.0);
        assert_eq!(cc.cwnd(), 4.0);
        ctl.set_cwnd(8.0);
        assert_eq!((cc.cwnd(), cc.pacing_rate_bps()), (8.0, None));
    }

    #[test]
    fn counters_are_per_take() {
        let (mut cc, ctl) = External::new(10.0, 1500);
        cc.on_ack(&ack(Some(30), 30, 2, true));
        cc.on_ack(&ack(Some(10), 20, 1, false));
        cc.on_ack(&ack(None, 20, 1, false));
        cc.on_loss(&LossEvent {
            lost: 2,
            ..Default::default()
        });
        let c = ctl.take_counters();
        assert_eq!(
            c,
            ExternalCounters {
                acks: 3,
                acked_pkts: 4,
                ecn_acks: 1,
                rtt_n: 2,
                rtt_sum_ns: 40,
                rtt_min_ns: 10,
                rtt_max_ns: 30,
                rtt_last_ns: 10,
                loss_events: 1,
                lost_pkts: 2,
                timeouts: 0,
            }
        );
        assert_eq!(ctl.take_counters(), ExternalCounters::default());
    }
}
