//! The timing laws of cross traffic, for both drivers: when an unresponsive source (constant bit rate,
//! Poisson, Pareto on/off) emits its next packet, and when a `transfers` source starts its next short
//! transfer and how big it is. The simulator schedules these times as events; the real datapath's
//! emulator injects a packet at each of them on its virtual clock. One law, drawn from the same stream
//! (`rng::Stream::Traffic`, source index) in both, gives the same emission times for the same seed.

use crate::rng::{self, SimRng};
use crate::time::{from_secs, Nanos};

/// An unresponsive source's kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CrossKind {
    Cbr,
    Poisson,
    OnOff {
        mean_on: f64,
        mean_off: f64,
        shape: f64,
    },
}

impl CrossKind {
    /// The kind named `kind` ("cbr", "poisson", "onoff"; on/off durations and shape default to 0.5 s,
    /// 0.5 s and 1.5), or None for any other name (e.g. "transfers", which is no packet law).
    pub fn parse(
        kind: &str,
        mean_on: Option<f64>,
        mean_off: Option<f64>,
        shape: Option<f64>,
    ) -> Option<CrossKind> {
        match kind {
            "cbr" => Some(CrossKind::Cbr),
            "poisson" => Some(CrossKind::Poisson),
            "onoff" => Some(CrossKind::OnOff {
                mean_on: mean_on.unwrap_or(0.5),
                mean_off: mean_off.unwrap_or(0.5),
                shape: shape.unwrap_or(1.5),
            }),
            _ => None,
        }
    }
}

/// When an unresponsive source emits: call [`CrossLaw::fire`] at `start` and then at every time it
/// returns.
pub struct CrossLaw {
    kind: CrossKind,
    stop: Option<Nanos>,
    /// Mean packet spacing at the configured rate, seconds.
    interval: f64,
    rng: SimRng,
    /// On/off: end of the current on period.
    on_until: Nanos,
}

/// Pareto draw with the given mean and shape (> 1): scale x_m = mean·(shape − 1)/shape.
pub fn pareto(rng: &mut SimRng, mean: f64, shape: f64) -> f64 {
    let xm = mean * (shape - 1.0) / shape;
    let u = 1.0 - rng::uniform(rng); // (0, 1]
    xm / u.powf(1.0 / shape)
}

/// Exponential draw with the given mean.
pub fn exponential(rng: &mut SimRng, mean: f64) -> f64 {
    -mean * (1.0 - rng::uniform(rng)).ln()
}

impl CrossLaw {
    /// A source of `kind` sending `packet_size`-byte packets at `rate_bps` (the peak rate for on/off)
    /// until `stop`, drawing from `rng`.
    pub fn new(
        kind: CrossKind,
        rate_bps: f64,
        packet_size: u32,
        stop: Option<Nanos>,
        rng: SimRng,
    ) -> CrossLaw {
        CrossLaw {
            kind,
            stop,
            interval: packet_size as f64 * 8.0 / rate_bps,
            rng,
            on_until: 0,
        }
    }

    /// Called at a scheduled emission time: whether to emit a packet now, and when to be called next.
    pub fn fire(&mut self, now: Nanos) -> (bool, Option<Nanos>) {
        if self.stop.is_some_and(|s| now >= s) {
            return (false, None);
        }
        let (send, next) = match self.kind {
            CrossKind::Cbr => (true, now.saturating_add(from_secs(self.interval).max(1))),
            CrossKind::Poisson => (
                true,
                now.saturating_add(from_secs(exponential(&mut self.rng, self.interval)).max(1)),
            ),
            CrossKind::OnOff {
                mean_on,
                mean_off,
                shape,
            } => {
                if now < self.on_until {
                    (true, now.saturating_add(from_secs(self.interval).max(1)))
                } else {
                    // The on period ended (or never began): draw an off period, then the next on period.
                    let off = if self.on_until == 0 {
                        0.0
                    } else {
                        pareto(&mut self.rng, mean_off, shape)
                    };
                    let start = now.saturating_add(from_secs(off));
                    self.on_until = start
                        .saturating_add(from_secs(pareto(&mut self.rng, mean_on, shape)).max(1));
                    (false, start.max(now.saturating_add(1)))
                }
            }
        };
        (
            send,
            Some(next).filter(|t| self.stop.is_none_or(|s| *t < s)),
        )
    }
}

/// A `transfers` source's next arrival, drawn from its stream: the transfer's size in bytes (Pareto
/// with `mean_size` and `shape`, rounded up, at least 1, at most `max_size`) and the gap to the next
/// arrival (exponential with mean `mean_gap` seconds, at least 1 ns). Size first, then gap: the order
/// of the draws is part of the law.
pub fn transfer_arrival(
    rng: &mut SimRng,
    mean_size: f64,
    shape: f64,
    mean_gap: f64,
    max_size: u64,
) -> (u64, Nanos) {
    let size = pareto(rng, mean_size, shape).ceil().max(1.0);
    // Sizes beyond the transport's limit are cut there (a draw that far in the tail is rare).
    let size = size.min(max_size as f64) as u64;
    let gap = from_secs(exponential(rng, mean_gap)).max(1);
    (size, gap)
}

/// Size buckets of the flow-completion-time summary of short transfers, bytes: [lo, hi). One table for
/// both drivers (the simulator's `summary.json` and the real datapath's), so their buckets agree.
pub const FCT_BUCKETS: [(u64, u64); 4] = [
    (0, 10_000),
    (10_000, 100_000),
    (100_000, 1_000_000),
    (1_000_000, u64::MAX),
];

/// Flow-completion times of one size bucket (or of all transfers): over the transfers that arrived
/// inside the measurement window and finished before the end of the run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FctSummary {
    pub lo_bytes: u64,
    pub hi_bytes: Option<u64>,
    pub count: u64,
    pub mean_size_bytes: Option<f64>,
    pub mean_s: Option<f64>,
    pub p50_s: Option<f64>,
    pub p99_s: Option<f64>,
}

impl FctSummary {
    /// The summary of `(size, fct)` records with sizes in [lo, hi).
    pub fn of(records: &[(u64, f64)], lo: u64, hi: u64) -> FctSummary {
        let mut t: Vec<f64> = Vec::new();
        let mut size = 0.0;
        for &(s, f) in records.iter().filter(|(s, _)| *s >= lo && *s < hi) {
            t.push(f);
            size += s as f64;
        }
        t.sort_by(f64::total_cmp);
        let n = t.len();
        // Nearest-rank percentiles (the value at rank ⌈q·n⌉): exact on the stored times.
        let pct = |q: f64| (n > 0).then(|| t[((q * n as f64).ceil() as usize).clamp(1, n) - 1]);
        FctSummary {
            lo_bytes: lo,
            hi_bytes: (hi != u64::MAX).then_some(hi),
            count: n as u64,
            mean_size_bytes: (n > 0).then(|| size / n as f64),
            mean_s: (n > 0).then(|| t.iter().sum::<f64>() / n as f64),
            p50_s: pct(0.5),
            p99_s: pct(0.99),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Stream;

    /// A Poisson source's gaps have the configured mean: 100 000 packets of 1500 B at 12 Mbit/s (1 ms
    /// mean gap) take 100 s ± 4 σ (σ of a sum of n exponential gaps = √n · 1 ms = 0.32 s).
    #[test]
    fn poisson_gaps_have_the_configured_mean() {
        let mut law = CrossLaw::new(
            CrossKind::Poisson,
            12e6,
            1500,
            None,
            Stream::Traffic.rng(1, 0),
        );
        let mut t = 0;
        for _ in 0..100_000 {
            let (send, next) = law.fire(t);
            assert!(send);
            t = next.unwrap();
        }
        let secs = t as f64 / 1e9;
        assert!((secs - 100.0).abs() < 1.3, "{secs}");
    }

    /// An on/off source starts with an on period (no off period before the first) and stops at `stop`.
    #[test]
    fn onoff_starts_on_and_stops_at_stop() {
        let kind = CrossKind::parse("onoff", Some(0.1), Some(0.1), None).unwrap();
        let mut law = CrossLaw::new(
            kind,
            12e6,
            1500,
            Some(2_000_000_000),
            Stream::Traffic.rng(3, 1),
        );
        let (send, next) = law.fire(0);
        assert!(
            !send && next == Some(1),
            "the first call opens an on period at once"
        );
        let (mut t, mut sent) = (1, 0);
        while let (s, Some(n)) = law.fire(t) {
            sent += s as u32;
            t = n;
        }
        assert!(t < 2_000_000_000 && sent > 0);
        assert_eq!(CrossKind::parse("transfers", None, None, None), None);
    }
}
