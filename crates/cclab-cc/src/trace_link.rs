//! Trace-driven link service: capacity given as a list of delivery opportunities, as mahimahi's
//! link emulator takes it (one line per opportunity to deliver one 1500-byte packet, in ms from the
//! start; the list repeats with the period of its last time). Cellular links measured this way are what
//! Pantheon and most recent congestion-control papers evaluate on.
//!
//! The link serves one packet at a time, as a rate link does: the head packet leaves the queue when the
//! link is free, and its transmission ends at the opportunity that carries its last byte. Each
//! opportunity carries `bytes_per_opportunity` bytes; a packet larger than what is left of an
//! opportunity spans the next ones, and what an opportunity has left after a packet serves the next
//! packet at once if one is waiting (ACK-sized packets share an opportunity, as in mahimahi). An
//! opportunity nobody uses is lost, and so is the rest of one when the queue runs empty. An opportunity
//! at the very instant a packet arrives at an idle link is not usable (mahimahi applies the due
//! opportunities before it queues the arriving packet).
//!
//! Differences from mahimahi, which has no link rate: the packet waiting for its opportunity counts as
//! in transmission, not queued (so a queue limit and an AQM see one packet fewer), and its queueing delay
//! ends when it starts waiting.
//!
//! Used by the simulator's links and the real link emulator alike: `finish` is called with
//! non-decreasing start times, and the cursor only moves forward (whole periods are skipped at once
//! after an idle spell), so the cost is one step per opportunity used.

use crate::time::Nanos;

/// Bytes one opportunity of a trace carries: one full packet (mahimahi's MTU, without its 4-byte TUN
/// header), so a trace's rate is its opportunities × 1500 B × 8.
pub const OPPORTUNITY_BYTES: u32 = 1500;

#[derive(Clone, Debug)]
pub struct TraceService {
    /// Opportunity times within one period, non-decreasing, in ns from the period's start.
    opps: Vec<Nanos>,
    period: Nanos,
    per_opp: u64,
    /// The cursor: the next unused opportunity is `opps[idx]` of period `cycle`.
    cycle: u64,
    idx: usize,
    /// What the last opportunity used (at `credit_at`) has left.
    credit_at: Nanos,
    credit_left: u64,
}

impl TraceService {
    /// `opps_ms`: the trace's times in ms (checked by the spec: finite, ≥ 0, non-decreasing, the last
    /// one > 0). Times are rounded to the nanosecond.
    pub fn new(opps_ms: &[f64], bytes_per_opportunity: u32) -> TraceService {
        let opps: Vec<Nanos> = opps_ms
            .iter()
            .map(|&ms| (ms * 1e6).round() as Nanos)
            .collect();
        let period = opps.last().copied().unwrap_or(1).max(1);
        TraceService {
            opps,
            period,
            per_opp: bytes_per_opportunity.max(1) as u64,
            cycle: 0,
            idx: 0,
            credit_at: Nanos::MAX,
            credit_left: 0,
        }
    }

    /// The trace's mean capacity in bit/s.
    pub fn mean_rate_bps(opps_ms: &[f64], bytes_per_opportunity: u32) -> f64 {
        let period_s = opps_ms.last().copied().unwrap_or(0.0) / 1e3;
        if period_s <= 0.0 {
            return 0.0;
        }
        opps_ms.len() as f64 * bytes_per_opportunity as f64 * 8.0 / period_s
    }

    /// The capacity (bit/s) the trace offers over [t0, t1): its opportunities in that span × the bytes
    /// each carries. Utilisation on a trace-driven link is measured against this, not the mean rate.
    pub fn capacity_bps(&self, t0: Nanos, t1: Nanos) -> f64 {
        if t1 <= t0 {
            return 0.0;
        }
        // Opportunities at times < t: whole periods, then those of the last period before t.
        // Period c's opportunities are at c·period + x, x in [0, period]; those with x = period fall at
        // (c + 1)·period, so at a boundary (r = 0) period c − 1's last ones are not yet before t.
        let at_period = self.opps.len() - self.opps.partition_point(|&x| x < self.period);
        let before = |t: Nanos| -> u128 {
            let (c, r) = (t / self.period, t % self.period);
            let k = self.opps.partition_point(|&x| x < r) as u128;
            let late = if r == 0 && c > 0 {
                at_period as u128
            } else {
                0
            };
            c as u128 * self.opps.len() as u128 + k - late
        };
        let n = before(t1) - before(t0);
        n as f64 * self.per_opp as f64 * 8.0 / ((t1 - t0) as f64 / 1e9)
    }

    fn cursor_time(&self) -> Nanos {
        // Time of opps[idx] in period `cycle`. Periods repeat back to back: the last opportunity of a
        // period is at `period`, the same instant as an opportunity at 0 of the next one would be.
        (self.cycle as u128 * self.period as u128 + self.opps[self.idx] as u128)
            .min(Nanos::MAX as u128) as Nanos
    }

    fn advance(&mut self) {
        self.idx += 1;
        if self.idx == self.opps.len() {
            self.idx = 0;
            self.cycle += 1;
        }
    }

    /// Moves the cursor to the first opportunity after `t` (`strictly`) or at or after it.
    fn seek(&mut self, t: Nanos, strictly: bool) {
        // Skip whole periods first: after a long idle spell this is one step, not one per opportunity.
        let c = t / self.period;
        if c > self.cycle + 1 {
            self.cycle = c - 1;
            self.idx = 0;
        }
        while self.cursor_time() < t || (strictly && self.cursor_time() == t) {
            self.advance();
        }
    }

    /// A packet of `bytes` starts transmission at `start` (the link was free): when its last byte is
    /// delivered.
    pub fn finish(&mut self, start: Nanos, bytes: u32) -> Nanos {
        let mut need = bytes as u64;
        // Back to back with the packet before: what its last opportunity left, then the opportunities
        // still unused at this same instant (a trace may list several at one time), are this one's.
        let back_to_back = self.credit_at == start;
        if back_to_back && self.credit_left > 0 {
            let used = need.min(self.credit_left);
            need -= used;
            self.credit_left -= used;
            if need == 0 {
                return start;
            }
        }
        self.seek(start, !back_to_back);
        loop {
            let t = self.cursor_time();
            self.advance();
            let used = need.min(self.per_opp);
            need -= used;
            if need == 0 {
                self.credit_at = t;
                self.credit_left = self.per_opp - used;
                return t;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn one_packet_per_opportunity_after_its_start() {
        // Opportunities at 1, 2, 3 ms, repeating every 3 ms.
        let mut t = TraceService::new(&[1.0, 2.0, 3.0], 1500);
        assert_eq!(t.finish(0, 1500), MS);
        assert_eq!(t.finish(MS, 1500), 2 * MS);
        // An idle link: the opportunity at 3 ms passes unused; the next packet starts at 3 ms exactly
        // and cannot use the opportunity of that instant.
        assert_eq!(t.finish(3 * MS, 1500), 4 * MS);
        // Long idle: the cursor jumps over whole periods.
        assert_eq!(t.finish(3_000_000 * MS + MS / 2, 1500), 3_000_001 * MS);
    }

    #[test]
    fn small_packets_share_an_opportunity_and_large_ones_span_several() {
        let mut t = TraceService::new(&[1.0, 2.0, 3.0, 4.0], 1500);
        // 25 ACKs of 60 B: the opportunity at 1 ms carries all of them.
        let mut s = 0;
        for _ in 0..25 {
            s = t.finish(s, 60);
        }
        assert_eq!(s, MS);
        // A 3000-byte packet started at 1 ms uses the 0 B left of that one, then 2 and 3 ms.
        assert_eq!(t.finish(MS, 3000), 3 * MS);
        // 1000 B then 1000 B: the second uses the 500 B left at 4 ms and waits for 5 ms (period 4).
        assert_eq!(t.finish(3 * MS, 1000), 4 * MS);
        assert_eq!(t.finish(4 * MS, 1000), 5 * MS);
    }

    #[test]
    fn a_backlogged_link_delivers_the_trace_mean_rate() {
        // 12 Mbit/s: one 1500 B opportunity per ms, and a burst of 4 at 7 ms (period 10 ms).
        let ms = [
            1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.0, 7.0, 7.0, 8.0, 9.0, 10.0,
        ];
        let rate = TraceService::mean_rate_bps(&ms, 1500);
        assert!((rate - 13.0 * 12_000.0 / 0.01).abs() < 1e-6);
        let mut t = TraceService::new(&ms, 1500);
        let (mut s, mut n) = (0, 0u64);
        while s < 10_000 * MS {
            s = t.finish(s, 1500);
            n += 1;
        }
        assert_eq!(n, 13_000);
        // Capacity over windows: (0, 10] is one period; [5, 8) ms holds 5, 6, 7×4 = 6 opportunities.
        assert!(
            (t.capacity_bps(1, 10 * MS + 1) * (10 * MS) as f64 / (10 * MS) as f64 - rate).abs()
                < 1e-3 * rate
        );
        assert!((t.capacity_bps(10 * MS, 1010 * MS) - rate).abs() < 1e-6);
        assert!((t.capacity_bps(5 * MS, 8 * MS) - 6.0 * 12_000.0 / 0.003).abs() < 1e-6);
        // [0, 10) ms: the opportunity at 10 ms is not in it.
        assert!((t.capacity_bps(0, 10 * MS) * 0.01 / 12_000.0 - 12.0).abs() < 1e-9);
    }
}
