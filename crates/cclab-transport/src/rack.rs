//! RACK's adaptive reordering window and the reordering degree (`[transport] loss_detection = "rack"`),
//! as RFC 8985 §6.2 describes them and Linux (tcp_recovery.c, tcp_input.c) runs them.
//!
//! * Reordering degree (Linux's `tp->reordering`): starts at DupThresh (3). When a packet that was never
//!   retransmitted is delivered (SACKed or cumulatively acknowledged) below the highest packet SACKed
//!   before, the path reordered it by that distance; the degree rises to it, up to
//!   [`MAX_REORDERING`] (Linux's `tcp_max_reordering`, 300). An undone fast recovery is reordering too
//!   (its hole was filled by the original, not the retransmission). The degree is the DupThresh of the
//!   rules that still count packets: duplicate ACKs without SACK, and a retransmission overtaken by
//!   DupThresh later-sent packets.
//! * Reordering window: before any reordering has been seen, RACK is aggressive where DupThresh would
//!   be: the window is 0 in recovery, or once at least `reordering` packets are SACKed (so three SACKs
//!   above a hole mark it lost at once, as RFC 6675 does); otherwise, and always once reordering has
//!   been seen, it is `min_rtt/4 · steps`, at most SRTT. Reordering is a property of the path, hence
//!   min_RTT rather than SRTT (queueing).
//! * Steps: 1 at first. A D-SACK says a retransmission was needless, likely because the window was too
//!   short for the path's reordering: the next ACK of data sent after the last adjustment raises the
//!   steps by one (at most once per round trip, up to 255), and the new window is kept for 16 loss
//!   recoveries; each recovery that ends without being undone uses one of them up, one undone by
//!   D-SACKs gives one back, and when none is left the steps fall back to 1.

use cclab_cc::time::Nanos;

/// DupThresh before any reordering is seen (RFC 5681, Linux's `TCP_FASTRETRANS_THRESH`).
pub(crate) const INITIAL_REORDERING: u32 = 3;
/// The highest reordering degree believed (Linux's `sysctl_tcp_max_reordering` default).
pub(crate) const MAX_REORDERING: u32 = 300;
/// Linux keeps the steps in a byte.
const MAX_REO_WND_STEPS: u32 = 255;
/// Loss recoveries a widened window persists without a further D-SACK (Linux's
/// `TCP_RACK_RECOVERY_THRESH`).
pub(crate) const RECOVERY_THRESH: u32 = 16;

#[derive(Clone, Debug)]
pub(crate) struct Rack {
    reordering: u32,
    /// Reorderings observed (Linux's `reord_seen`).
    reord_seen: u64,
    steps: u32,
    persist: u32,
    /// A D-SACK arrived and awaits [`Rack::update_reo_wnd`].
    dsack_seen: bool,
    /// When the steps last rose: a D-SACK on an ACK of data sent before then answers a round already
    /// answered (Linux compares delivered counts; a send time orders transmissions the same way).
    last_step_at: Nanos,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            reordering: INITIAL_REORDERING,
            reord_seen: 0,
            steps: 1,
            persist: 0,
            dsack_seen: false,
            last_step_at: 0,
        }
    }
}

impl Rack {
    /// The reordering degree, packets: DupThresh for the rules that count packets.
    pub(crate) fn reordering(&self) -> u32 {
        self.reordering
    }
    pub(crate) fn steps(&self) -> u32 {
        self.steps
    }

    /// RFC 8985 §6.2 step 4 (Linux's `tcp_rack_reo_wnd`), see the module doc.
    pub(crate) fn reo_wnd(
        &self,
        min_rtt: Nanos,
        srtt: Nanos,
        in_recovery: bool,
        sacked: u64,
    ) -> Nanos {
        if self.reord_seen == 0 && (in_recovery || sacked >= self.reordering as u64) {
            return 0;
        }
        (min_rtt / 4 * self.steps as u64).min(srtt)
    }

    /// The path reordered a packet by `degree` packets.
    pub(crate) fn on_reordering(&mut self, degree: u64) {
        if degree > self.reordering as u64 {
            self.reordering = degree.min(MAX_REORDERING as u64) as u32;
        }
        self.reord_seen += 1;
    }

    /// A D-SACK block arrived.
    pub(crate) fn on_dsack(&mut self) {
        self.dsack_seen = true;
    }

    /// Once per ACK, after its D-SACK (if any) was taken in: `echoed_ts` is the send time of the
    /// transmission the ACK echoes (Linux's `tcp_rack_update_reo_wnd`).
    pub(crate) fn update_reo_wnd(&mut self, now: Nanos, echoed_ts: Nanos) {
        if self.dsack_seen && echoed_ts < self.last_step_at {
            // Sent before the last adjustment: that adjustment already answered this round.
            self.dsack_seen = false;
        }
        if self.dsack_seen {
            self.steps = (self.steps + 1).min(MAX_REO_WND_STEPS);
            self.dsack_seen = false;
            self.last_step_at = now;
            self.persist = RECOVERY_THRESH;
        } else if self.persist == 0 {
            self.steps = 1;
        }
    }

    /// A loss recovery ended without being undone: the widened window is kept one recovery less.
    pub(crate) fn on_recovery_kept(&mut self) {
        self.persist = self.persist.saturating_sub(1);
    }

    /// A fast recovery was undone because D-SACKs covered all its retransmissions.
    pub(crate) fn on_dsack_undo(&mut self) {
        self.persist = (self.persist + 1).min(RECOVERY_THRESH);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn no_window_where_dupthresh_would_fire_until_reordering_is_seen() {
        let mut r = Rack::default();
        assert_eq!(r.reo_wnd(40 * MS, 50 * MS, false, 2), 10 * MS);
        assert_eq!(
            r.reo_wnd(40 * MS, 50 * MS, false, 3),
            0,
            "3 SACKed: DupThresh"
        );
        assert_eq!(r.reo_wnd(40 * MS, 50 * MS, true, 0), 0, "in recovery");
        r.on_reordering(7);
        assert_eq!(r.reordering(), 7);
        assert_eq!(r.reo_wnd(40 * MS, 50 * MS, true, 10), 10 * MS);
        r.on_reordering(5);
        assert_eq!(r.reordering(), 7, "the degree only rises");
        r.on_reordering(10_000);
        assert_eq!(r.reordering(), MAX_REORDERING);
    }

    /// One step per round with a D-SACK, bounded by SRTT; back to 1 after 16 recoveries without one.
    #[test]
    fn steps_grow_once_per_round_with_dsacks_and_decay() {
        let mut r = Rack::default();
        r.on_reordering(4);
        // Round 1: D-SACKs on two ACKs; only the first raises the steps (the second echoes data sent
        // before the adjustment at t = 100 ms).
        r.on_dsack();
        r.update_reo_wnd(100 * MS, 60 * MS);
        r.on_dsack();
        r.update_reo_wnd(101 * MS, 61 * MS);
        assert_eq!(r.steps(), 2);
        // Round 2: data sent after the adjustment.
        r.on_dsack();
        r.update_reo_wnd(150 * MS, 105 * MS);
        assert_eq!(r.steps(), 3);
        assert_eq!(r.reo_wnd(40 * MS, 1000 * MS, false, 0), 30 * MS);
        assert_eq!(
            r.reo_wnd(40 * MS, 25 * MS, false, 0),
            25 * MS,
            "at most SRTT"
        );
        for _ in 0..RECOVERY_THRESH - 1 {
            r.on_recovery_kept();
            r.update_reo_wnd(200 * MS, 190 * MS);
        }
        assert_eq!(r.steps(), 3, "15 recoveries: kept");
        r.on_recovery_kept();
        r.update_reo_wnd(300 * MS, 290 * MS);
        assert_eq!(r.steps(), 1, "16 recoveries without a D-SACK: back to 1");
    }
}
