//! When the receiver sends an ACK: the two receiver profiles of `[transport] receiver`.
//!
//! `PerPacket` (the default): an ACK every `delayed_ack` in-order packets (1: every packet), at once
//! for out-of-order data, a duplicate or a packet that fills a hole (RFC 5681 §4.2), else when the
//! `delack_timeout` timer, armed by the first un-ACKed packet, runs out.
//!
//! `Linux`: the receiver of Linux's `tcp_input.c`, reduced to what moves a sender:
//! - Quick-ACK mode. The receiver keeps a budget of quick ACKs; while it is positive every data
//!   segment is ACKed at once and every ACK sent spends one. The first data segment of a connection
//!   fills the budget to half the receive window in segments, at most 16 and at least 2 (Linux's
//!   `tcp_incr_quickack`: the window over two MSS, capped by `TCP_MAX_QUICKACKS`); a segment that was
//!   already received below the cumulative point (a retransmission that was not needed, or a
//!   network duplicate) refills it the same way (Linux enters quick-ACK mode on such "out of window"
//!   data), and a CE mark after unmarked data raises it to at least 2 (Linux's RFC 3168 receiver, so a
//!   sender with a small window hears of congestion without waiting for the timer). The sender's
//!   slow start therefore sees one ACK per segment for the first round trips, as it would with a
//!   per-packet receiver, and only then the halved ACK rate.
//! - Out of quick-ACK mode: an ACK once two full segments are un-ACKed (`__tcp_ack_snd_check`'s
//!   "more than one full frame"), at once for out-of-order data and for every in-order segment while
//!   out-of-order data is buffered (Linux ACKs immediately while its out-of-order queue is not
//!   empty, and when the last hole fills), at once for a duplicate.
//! - The delayed-ACK timer: Linux's ATO starts at 40 ms (`TCP_ATO_MIN`) and adapts between that and
//!   200 ms by the gaps between arrivals and by timers that fired; a bulk sender's arrivals come far
//!   closer than 20 ms apart, which keeps it at the minimum, so the model is a fixed 40 ms timer.
//!
//! Not modelled: the ATO's growth for sparse traffic, quick-ACK mode after an idle gap longer than the
//! RTO, SACK compression (Linux delays the fourth and later duplicate ACKs for one hole by up to 1 ms
//! or 5% of the RTT), and the receive-window checks that can hold an ACK back.

use crate::config::{Config, ReceiverProfile};
use cclab_cc::time::{Nanos, NS_PER_MS};

/// The Linux receiver ACKs once this many full segments are un-ACKed.
pub const LINUX_DELACK_SEGMENTS: u32 = 2;
/// The Linux receiver's delayed-ACK timer: `TCP_ATO_MIN`, where a bulk transfer keeps the ATO.
pub const LINUX_ATO: Nanos = 40 * NS_PER_MS;
/// The most quick ACKs the Linux receiver grants at once (`TCP_MAX_QUICKACKS`).
pub const LINUX_MAX_QUICKACKS: u32 = 16;

/// What an accepted data segment was, for the ACK decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// The next in-order segment; `filled`: out-of-order data was buffered when it came (it filled a
    /// hole, or part of one).
    InOrder { filled: bool },
    /// Above a hole.
    OutOfOrder,
    /// Already received: below the cumulative point (`below`) or inside a buffered range.
    Duplicate { below: bool },
}

/// The ACK clock: which arrival gets an ACK at once, and the delayed-ACK timer.
#[derive(Clone, Debug)]
pub(crate) struct AckClock {
    linux: bool,
    /// ACK every this many in-order segments.
    every: u32,
    timeout: Nanos,
    /// Linux: quick ACKs left, and what an event refills the budget to.
    quick: u32,
    quick_max: u32,
    seen_data: bool,
    /// In-order segments received since the last ACK.
    unacked: u32,
    deadline: Option<Nanos>,
}

impl AckClock {
    pub(crate) fn new(cfg: &Config) -> AckClock {
        let linux = cfg.receiver == ReceiverProfile::Linux;
        AckClock {
            linux,
            every: if linux {
                LINUX_DELACK_SEGMENTS
            } else {
                cfg.delayed_ack.max(1)
            },
            timeout: if linux { LINUX_ATO } else { cfg.delack_timeout },
            quick: 0,
            quick_max: (cfg.max_window / 2).clamp(2, LINUX_MAX_QUICKACKS),
            seen_data: false,
            unacked: 0,
            deadline: None,
        }
    }

    /// Grants at least `n` quick ACKs (Linux's `tcp_incr_quickack`: never lowers the budget).
    fn grant_quick(&mut self, n: u32) {
        self.quick = self.quick.max(n.min(self.quick_max));
    }

    /// An accepted data segment arrived at `now`; `urgent`: its flags ask for an ACK at once;
    /// `ce_onset`: it is CE-marked and the previous one was not. True: the ACK must go now (the timer
    /// is then disarmed); false: it waits, and the timer runs.
    pub(crate) fn on_data(
        &mut self,
        now: Nanos,
        arrival: Arrival,
        urgent: bool,
        ce_onset: bool,
    ) -> bool {
        let mut now_ack = urgent;
        match arrival {
            Arrival::InOrder { filled } => {
                self.unacked += 1;
                now_ack |= filled;
            }
            Arrival::OutOfOrder => now_ack = true,
            Arrival::Duplicate { below } => {
                now_ack = true;
                if self.linux && below {
                    self.grant_quick(LINUX_MAX_QUICKACKS);
                }
            }
        }
        if self.linux {
            if !self.seen_data {
                self.seen_data = true;
                self.grant_quick(LINUX_MAX_QUICKACKS);
            }
            if ce_onset {
                self.grant_quick(2);
            }
            now_ack |= self.quick > 0;
        }
        if now_ack || self.unacked >= self.every {
            self.deadline = None;
            true
        } else {
            if self.deadline.is_none() {
                self.deadline = Some(now + self.timeout);
            }
            false
        }
    }

    /// An ACK went out: it covers every segment so far, and spends one quick ACK.
    pub(crate) fn on_ack_sent(&mut self) {
        self.unacked = 0;
        self.quick = self.quick.saturating_sub(1);
    }

    /// The delayed-ACK deadline.
    pub(crate) fn deadline(&self) -> Option<Nanos> {
        self.deadline
    }

    /// The timer at `now`: true if it fired with in-order data un-ACKed (the ACK must go now).
    pub(crate) fn on_timeout(&mut self, now: Nanos) -> bool {
        match self.deadline {
            Some(d) if now >= d => {
                self.deadline = None;
                self.unacked > 0
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux() -> AckClock {
        AckClock::new(&Config {
            receiver: ReceiverProfile::Linux,
            ..Config::default()
        })
    }

    /// Sends the ACK when the clock asks for one; returns whether it did.
    fn arrive(c: &mut AckClock, now: Nanos, a: Arrival) -> bool {
        let ack = c.on_data(now, a, false, false);
        if ack {
            c.on_ack_sent();
        }
        ack
    }

    const IN: Arrival = Arrival::InOrder { filled: false };

    #[test]
    fn linux_quick_acks_the_start_then_every_second_segment() {
        let mut c = linux();
        // The default receive window is far above 32 segments: 16 quick ACKs.
        for k in 0..16 {
            assert!(arrive(&mut c, k, IN), "quick ACK {k}");
        }
        let acked: Vec<bool> = (16..24).map(|k| arrive(&mut c, k, IN)).collect();
        assert_eq!(
            acked,
            [false, true, false, true, false, true, false, true],
            "then every second segment"
        );
    }

    #[test]
    fn linux_quick_ack_budget_follows_a_small_window() {
        // A 6-segment window: 3 quick ACKs (window / 2); a 2-segment one still gets the minimum 2.
        for (window, quick) in [(6, 3), (2, 2), (1, 2)] {
            let mut c = AckClock::new(&Config {
                receiver: ReceiverProfile::Linux,
                max_window: window,
                ..Config::default()
            });
            let n = (0..10).take_while(|&k| arrive(&mut c, k, IN)).count();
            assert_eq!(n as u32, quick, "window {window}");
        }
    }

    #[test]
    fn linux_acks_out_of_order_duplicates_and_filled_holes_at_once() {
        let mut c = linux();
        for k in 0..16 {
            arrive(&mut c, k, IN);
        }
        assert!(!arrive(&mut c, 20, IN), "out of quick-ACK mode: waits");
        assert!(arrive(&mut c, 21, Arrival::OutOfOrder));
        assert!(arrive(&mut c, 22, Arrival::InOrder { filled: true }));
        assert!(arrive(&mut c, 23, Arrival::Duplicate { below: false }));
        assert!(
            !arrive(&mut c, 24, IN),
            "a duplicate inside a range grants no quick ACKs"
        );
        // A duplicate below the cumulative point re-enters quick-ACK mode: 16 more quick ACKs (the
        // duplicate's own ACK spends one).
        assert!(arrive(&mut c, 25, Arrival::Duplicate { below: true }));
        let n = (26..60).take_while(|&k| arrive(&mut c, k, IN)).count();
        assert_eq!(n, 15);
    }

    #[test]
    fn linux_timer_is_40ms_from_the_first_unacked_segment() {
        let mut c = linux();
        for k in 0..16 {
            arrive(&mut c, k, IN);
        }
        let t0 = 1_000_000_000;
        assert!(!arrive(&mut c, t0, IN));
        assert_eq!(c.deadline(), Some(t0 + 40 * NS_PER_MS));
        assert!(!c.on_timeout(t0 + 40 * NS_PER_MS - 1), "not before 40 ms");
        assert!(c.on_timeout(t0 + 40 * NS_PER_MS), "fires at 40 ms");
        assert_eq!(c.deadline(), None);
        c.on_ack_sent();
        assert!(
            !c.on_timeout(t0 + 80 * NS_PER_MS),
            "disarmed: nothing un-ACKed"
        );
    }

    #[test]
    fn linux_ce_onset_grants_two_quick_acks() {
        let mut c = linux();
        for k in 0..16 {
            arrive(&mut c, k, IN);
        }
        assert!(c.on_data(20, IN, false, true), "the CE segment itself");
        c.on_ack_sent();
        assert!(arrive(&mut c, 21, IN), "and one more");
        assert!(!arrive(&mut c, 22, IN));
    }

    #[test]
    fn per_packet_follows_delayed_ack_and_never_quick_acks() {
        let mut c = AckClock::new(&Config {
            delayed_ack: 3,
            delack_timeout: 500,
            ..Config::default()
        });
        let acked: Vec<bool> = (0..6).map(|k| arrive(&mut c, k, IN)).collect();
        assert_eq!(acked, [false, false, true, false, false, true]);
        assert!(arrive(&mut c, 7, Arrival::Duplicate { below: true }));
        assert!(
            !arrive(&mut c, 8, IN),
            "no quick-ACK mode after a duplicate"
        );
        assert_eq!(c.deadline(), Some(508));
    }
}
