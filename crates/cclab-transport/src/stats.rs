//! Delay statistics over a measurement window, kept by the endpoints themselves so that both drivers
//! (the simulator and the real datapath) report them the same way: every RTT sample the sender takes
//! and the one-way delay (send timestamp → arrival at the receiver) of every data packet, each into a
//! log-bucketed histogram, plus exact sums for the mean, the standard deviation and the jitter.
//!
//! Nothing here changes what the endpoints do; it only observes. A driver turns it on with
//! [`crate::Sender::collect_window_stats`] / [`crate::Receiver::collect_window_stats`]: values whose
//! time `now` lies in `[from, to)` are recorded, the rest ignored.
//!
//! # The histogram and its error
//! [`LogHistogram`] has the layout of HdrHistogram with 64 sub-buckets per power of two: values below
//! 128 ns have a bucket each (exact); above, the bucket holding `v` with `2^k ≤ v < 2^(k+1)` is
//! `2^(k−6)` ns wide. A percentile is reported as the middle of its bucket, so it is within
//! `width / 2 ≤ v / 128` of the exact order statistic: **relative error ≤ 1/128 ≈ 0.78 %** (at 10 ms
//! the bucket is 131 µs wide, ±66 µs; at 100 ms 1.05 ms wide, ±0.52 ms). Percentiles are nearest-rank:
//! the p-th percentile of n samples is the smallest value with at least ⌈p·n/100⌉ samples at or below it
//! (NumPy's `method="inverted_cdf"`).

use cclab_cc::time::Nanos;

/// Sub-buckets per power of two: 2^SUB_BITS.
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;

/// The bucket of value `v` (ns): `shift·64 + (v >> shift)`, `shift` = how far `v` lies above 2^7
/// in powers of two (0 below 128: one bucket per value). Branch-free; on the per-packet path.
#[inline]
pub fn bucket_of(v: u64) -> usize {
    let k = 63 - (v | 1).leading_zeros(); // ⌊log2 v⌋
    let shift = k.max(SUB_BITS) - SUB_BITS;
    ((shift as u64) * SUB + (v >> shift)) as usize
}

/// The values bucket `b` holds: `[lo, lo + width)`.
pub fn bucket_range(b: usize) -> (u64, u64) {
    let b = b as u64;
    if b < 2 * SUB {
        (b, 1)
    } else {
        let shift = b / SUB - 1;
        ((SUB + b % SUB) << shift, 1 << shift)
    }
}

/// The value a percentile falling in bucket `b` is reported as: the bucket's middle (exact below 128).
pub fn bucket_value(b: usize) -> u64 {
    let (lo, w) = bucket_range(b);
    lo + (w - 1) / 2
}

/// Log-linear histogram of nanosecond values (see the module docs for its resolution). Counts are kept
/// only for the span of buckets seen so far, so a flow whose RTT stays within a factor of 10 holds
/// ~220 counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogHistogram {
    /// Bucket index of `counts[0]`.
    base: usize,
    counts: Vec<u64>,
}

impl LogHistogram {
    /// Records one value (ns). On the simulator's per-packet path: one bucket computation and one
    /// increment, the span check folded into the slice bound check.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let b = bucket_of(v);
        match self.counts.get_mut(b.wrapping_sub(self.base)) {
            Some(c) => *c += 1,
            None => self.add(b, 1),
        }
    }

    /// Records `n` samples of value `v` (ns): folding in another histogram's counts (the kernel
    /// datapath's per-microsecond delays).
    pub fn record_n(&mut self, v: u64, n: u64) {
        self.add(bucket_of(v), n);
    }

    /// Adds `n` samples to bucket `b`.
    #[cold]
    fn add(&mut self, b: usize, n: u64) {
        if n == 0 {
            return;
        }
        if b < self.base || b >= self.base + self.counts.len() {
            self.grow_to(b);
        }
        self.counts[b - self.base] += n;
    }

    /// Widens the span of buckets kept to include `b` (with some room beyond it, so a slowly moving
    /// value does not reallocate every bucket).
    fn grow_to(&mut self, b: usize) {
        const SLACK: usize = 32;
        if self.counts.is_empty() {
            self.base = b.saturating_sub(SLACK);
            self.counts = vec![0; b - self.base + SLACK];
        } else if b < self.base {
            let nb = b.saturating_sub(SLACK);
            let mut c = vec![0; self.base - nb];
            c.extend_from_slice(&self.counts);
            self.counts = c;
            self.base = nb;
        } else {
            self.counts.resize(b - self.base + SLACK, 0);
        }
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Non-empty buckets as (bucket, count), in increasing order of value.
    pub fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(move |(i, &c)| (self.base + i, c))
    }

    pub fn merge(&mut self, other: &LogHistogram) {
        for (b, c) in other.buckets() {
            self.add(b, c);
        }
    }

    /// The nearest-rank `num/den` quantile (e.g. 95/100) in ns, reported as its bucket's middle; None
    /// when empty.
    pub fn quantile(&self, num: u64, den: u64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        // ⌈total·num/den⌉ in integers (at least 1): no floating-point rounding at exact ranks.
        let rank = ((total as u128 * num as u128).div_ceil(den as u128) as u64).max(1);
        let mut acc = 0;
        for (b, c) in self.buckets() {
            acc += c;
            if acc >= rank {
                return Some(bucket_value(b));
            }
        }
        None
    }
}

/// One kind of delay (RTT or one-way) over the window: the histogram, exact sums for the mean and
/// standard deviation, and the jitter sums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayStats {
    pub hist: LogHistogram,
    sum: u128,
    sum_sq: u128,
    /// Σ |D| and the number of D: D = the difference between the delays of consecutive packets
    /// (RFC 3550 §6.4.1), for [`DelayStats::record_transit`] only.
    jitter_sum: u128,
    jitter_n: u64,
    /// The previous packet's transit time, `NO_TRANSIT` before the first.
    last: u64,
}

const NO_TRANSIT: u64 = u64::MAX;

impl Default for DelayStats {
    fn default() -> Self {
        DelayStats {
            hist: LogHistogram::default(),
            sum: 0,
            sum_sq: 0,
            jitter_sum: 0,
            jitter_n: 0,
            last: NO_TRANSIT,
        }
    }
}

impl DelayStats {
    /// One delay sample (ns).
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.hist.record(v);
        self.sum += v as u128;
        self.sum_sq += v as u128 * v as u128;
    }

    /// One packet's transit time (ns): a delay sample, and |D| against the previous packet's.
    #[inline]
    pub fn record_transit(&mut self, v: u64) {
        self.record(v);
        if self.last != NO_TRANSIT {
            self.jitter_sum += self.last.abs_diff(v) as u128;
            self.jitter_n += 1;
        }
        self.last = v;
    }

    /// Pools `other`'s samples with these (an aggregate over flows: percentiles of all their samples
    /// together, jitter the mean |D| over all their packet pairs).
    pub fn merge(&mut self, other: &DelayStats) {
        self.hist.merge(&other.hist);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.jitter_sum += other.jitter_sum;
        self.jitter_n += other.jitter_n;
    }

    pub fn count(&self) -> u64 {
        self.hist.count()
    }

    /// Mean (s), None without samples.
    pub fn mean_s(&self) -> Option<f64> {
        let n = self.count();
        (n > 0).then(|| self.sum as f64 / n as f64 / 1e9)
    }

    /// Population standard deviation (s), None without samples. Exact integer moments: n·Σv² − (Σv)²
    /// is computed in u128 (it fits up to ~10^9 samples of up to 10 s), so constant delays give 0.
    pub fn std_s(&self) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let var_ns2 = match (n as u128)
            .checked_mul(self.sum_sq)
            .and_then(|a| a.checked_sub(self.sum * self.sum))
        {
            Some(num) => num as f64 / (n as f64 * n as f64),
            None => {
                let m = self.sum as f64 / n as f64;
                (self.sum_sq as f64 / n as f64 - m * m).max(0.0)
            }
        };
        Some(var_ns2.sqrt() / 1e9)
    }

    /// Mean |D| over consecutive packets (s), None without a pair.
    pub fn jitter_s(&self) -> Option<f64> {
        (self.jitter_n > 0).then(|| self.jitter_sum as f64 / self.jitter_n as f64 / 1e9)
    }

    /// The nearest-rank `p`-th percentile (s), within 0.78 % (module docs); None without samples.
    pub fn percentile_s(&self, p: u64) -> Option<f64> {
        self.hist.quantile(p, 100).map(|v| v as f64 / 1e9)
    }
}

/// The half-open window `[from, to)` of run time in which values are recorded. The default is empty:
/// nothing is recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    from: Nanos,
    span: Nanos,
}

impl Window {
    pub fn new(from: Nanos, to: Nanos) -> Window {
        Window {
            from,
            span: to.saturating_sub(from),
        }
    }
    pub fn from(&self) -> Nanos {
        self.from
    }
    pub fn to(&self) -> Nanos {
        self.from + self.span
    }
    pub fn is_empty(&self) -> bool {
        self.span == 0
    }
    /// `from ≤ t < to`, in one comparison (on the per-packet path).
    #[inline]
    pub fn contains(&self, t: Nanos) -> bool {
        t.wrapping_sub(self.from) < self.span
    }
}

/// What a sender records in the window: its RTT samples (every one it takes, from timestamp echoes),
/// and the data packets it sent and retransmitted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderWindowStats {
    pub window: Window,
    pub rtt: DelayStats,
    pub sent_pkts: u64,
    pub retransmits: u64,
    /// Fast recoveries and RTOs found spurious and undone, and D-SACK blocks received, in the window
    /// (`[transport] undo`; D-SACKs when the receiver sends them).
    pub recoveries_undone: u64,
    pub timeouts_undone: u64,
    pub dsacks: u64,
}

/// What a receiver records in the window: the one-way delay of every data packet that arrives
/// (retransmissions and duplicates included): arrival time − the packet's send timestamp.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverWindowStats {
    pub window: Window,
    pub owd: DelayStats,
}

/// One flow's (or a pool of flows') window statistics as both drivers gather them: the sender's, the
/// receiver's, and the packets the network dropped (a driver that cannot count them leaves None).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowWindow {
    pub sender: Option<SenderWindowStats>,
    pub receiver: Option<ReceiverWindowStats>,
    /// Data packets of the flow dropped or lost in the network in the window.
    pub dropped_pkts: Option<u64>,
}

impl FlowWindow {
    /// Pools `other` into this (per-algorithm and all-flow aggregates). A part one of them lacks is
    /// taken from the other; drops are known only if known for both.
    pub fn merge(&mut self, other: &FlowWindow) {
        match (&mut self.sender, &other.sender) {
            (Some(a), Some(b)) => {
                a.rtt.merge(&b.rtt);
                a.sent_pkts += b.sent_pkts;
                a.retransmits += b.retransmits;
                a.recoveries_undone += b.recoveries_undone;
                a.timeouts_undone += b.timeouts_undone;
                a.dsacks += b.dsacks;
            }
            (None, Some(b)) => self.sender = Some(b.clone()),
            _ => {}
        }
        match (&mut self.receiver, &other.receiver) {
            (Some(a), Some(b)) => a.owd.merge(&b.owd),
            (None, Some(b)) => self.receiver = Some(b.clone()),
            _ => {}
        }
        self.dropped_pkts = match (self.dropped_pkts, other.dropped_pkts) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
    }

    /// The numbers a summary reports (seconds; None where nothing was measured).
    pub fn summary(&self) -> WindowSummary {
        let rtt = self.sender.as_ref().map(|s| &s.rtt);
        let owd = self.receiver.as_ref().map(|r| &r.owd);
        let sent = self.sender.as_ref().map(|s| s.sent_pkts);
        let retx = self.sender.as_ref().map(|s| s.retransmits);
        let rate = |n: Option<u64>| match (n, sent) {
            (Some(n), Some(s)) if s > 0 => Some(n as f64 / s as f64),
            _ => None,
        };
        WindowSummary {
            rtt_samples: rtt.map(DelayStats::count),
            p50_rtt_s: rtt.and_then(|d| d.percentile_s(50)),
            p95_rtt_s: rtt.and_then(|d| d.percentile_s(95)),
            p99_rtt_s: rtt.and_then(|d| d.percentile_s(99)),
            owd_samples: owd.map(DelayStats::count),
            mean_owd_s: owd.and_then(DelayStats::mean_s),
            std_owd_s: owd.and_then(DelayStats::std_s),
            p50_owd_s: owd.and_then(|d| d.percentile_s(50)),
            p95_owd_s: owd.and_then(|d| d.percentile_s(95)),
            p99_owd_s: owd.and_then(|d| d.percentile_s(99)),
            jitter_s: owd.and_then(DelayStats::jitter_s),
            window_sent_pkts: sent,
            window_retransmits: retx,
            window_dropped_pkts: self.dropped_pkts,
            loss_rate: rate(self.dropped_pkts),
            retransmit_rate: rate(retx),
            spurious_recoveries_undone: self.sender.as_ref().map(|s| s.recoveries_undone),
            spurious_timeouts_undone: self.sender.as_ref().map(|s| s.timeouts_undone),
            dsacks_received: self.sender.as_ref().map(|s| s.dsacks),
        }
    }
}

/// A flow's (or an aggregate's) window statistics as summary.json reports them (docs/scenario.md):
/// delays in seconds, None (null) where there was nothing to measure or the driver cannot measure it.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WindowSummary {
    pub rtt_samples: Option<u64>,
    pub p50_rtt_s: Option<f64>,
    pub p95_rtt_s: Option<f64>,
    pub p99_rtt_s: Option<f64>,
    pub owd_samples: Option<u64>,
    pub mean_owd_s: Option<f64>,
    pub std_owd_s: Option<f64>,
    pub p50_owd_s: Option<f64>,
    pub p95_owd_s: Option<f64>,
    pub p99_owd_s: Option<f64>,
    /// Mean |D| over consecutive data packets, D the difference of their one-way delays (RFC 3550
    /// §6.4.1's D, averaged over the window instead of smoothed with gain 1/16).
    pub jitter_s: Option<f64>,
    pub window_sent_pkts: Option<u64>,
    pub window_retransmits: Option<u64>,
    pub window_dropped_pkts: Option<u64>,
    /// window_dropped_pkts / window_sent_pkts.
    pub loss_rate: Option<f64>,
    /// window_retransmits / window_sent_pkts.
    pub retransmit_rate: Option<f64>,
    /// Fast recoveries (and RTOs) the sender found spurious and undone in the window
    /// (`[transport] undo`; RTOs also with `rto_undo`).
    pub spurious_recoveries_undone: Option<u64>,
    pub spurious_timeouts_undone: Option<u64>,
    /// D-SACK blocks (RFC 2883) the sender received in the window.
    pub dsacks_received: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_cover_their_values() {
        let mut prev_end = 0u64;
        for b in 0..bucket_of(u64::MAX) {
            let (lo, w) = bucket_range(b);
            assert_eq!(
                lo,
                prev_end,
                "bucket {b} starts where {} ended",
                b.max(1) - 1
            );
            assert_eq!(bucket_of(lo), b);
            assert_eq!(bucket_of(lo + w - 1), b);
            // Half the width over the smallest value: the relative error bound.
            assert!((w as f64 / 2.0) / (lo.max(1) as f64) <= 1.0 / 128.0 + 1e-12 || w == 1);
            prev_end = lo + w;
        }
        assert_eq!(bucket_of(u64::MAX), 58 * 64 + 63);
    }

    #[test]
    fn percentiles_within_the_bound_of_exact_nearest_rank() {
        // A spread of values from 1 µs to 2 s (deterministic LCG): every percentile from 1 to 100 is
        // within 1/128 of the exact nearest-rank order statistic.
        let mut x: u64 = 12345;
        let mut vals = Vec::new();
        let mut h = LogHistogram::default();
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = 1_000 + (x >> 33) % 2_000_000_000 / (1 + (x >> 60));
            vals.push(v);
            h.record(v);
        }
        vals.sort_unstable();
        for p in 1..=100u64 {
            let rank = (vals.len() as u64 * p).div_ceil(100).max(1);
            let exact = vals[rank as usize - 1] as f64;
            let got = h.quantile(p, 100).unwrap() as f64;
            assert!(
                (got - exact).abs() <= exact / 128.0,
                "p{p}: {got} vs {exact}"
            );
        }
    }

    #[test]
    fn small_values_exact_and_merge_pools_samples() {
        let mut a = LogHistogram::default();
        let mut b = LogHistogram::default();
        for v in 1..=100 {
            a.record(v);
        }
        for v in [5_000_000u64, 1] {
            b.record(v);
        }
        assert_eq!(a.quantile(50, 100), Some(50));
        assert_eq!(a.quantile(95, 100), Some(95));
        assert_eq!(a.quantile(100, 100), Some(100));
        a.merge(&b);
        assert_eq!(a.count(), 102);
        assert_eq!(a.quantile(1, 100), Some(1));
        let top = a.quantile(100, 100).unwrap() as f64;
        assert!((top - 5e6).abs() <= 5e6 / 128.0);
        assert_eq!(LogHistogram::default().quantile(50, 100), None);
    }

    #[test]
    fn moments_and_jitter() {
        let mut d = DelayStats::default();
        for _ in 0..1000 {
            d.record_transit(10_000_000);
        }
        assert_eq!(d.std_s(), Some(0.0));
        assert_eq!(d.jitter_s(), Some(0.0));
        assert!((d.mean_s().unwrap() - 0.01).abs() < 1e-15);
        let mut e = DelayStats::default();
        for v in [1_000u64, 3_000, 1_000, 3_000] {
            e.record_transit(v);
        }
        // |D| = 2 µs for each of the 3 pairs; std of {1, 3, 1, 3} µs = 1 µs.
        assert!((e.jitter_s().unwrap() - 2e-6).abs() < 1e-15);
        assert!((e.std_s().unwrap() - 1e-6).abs() < 1e-15);
        d.merge(&e);
        assert_eq!(d.count(), 1004);
        assert!((d.jitter_s().unwrap() - 6e-6 / 1002.0).abs() < 1e-15);
    }
}
