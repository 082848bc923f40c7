//! Non-congestion-controlled cross traffic: constant bit rate, Poisson, and Pareto on/off (web-like)
//! sources. Each source has its own RNG stream so adding one never perturbs another component.

use crate::spec::{FlowSpec, TrafficSpec};
use cclab_cc::rng::{self, SimRng};
use cclab_cc::time::{from_secs, Nanos};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Cbr,
    Poisson,
    OnOff {
        mean_on: f64,
        mean_off: f64,
        shape: f64,
    },
}

pub(crate) struct CrossSource {
    kind: Kind,
    /// Start of the source's route in the simulation's route arena.
    pub(crate) route: u32,
    pub(crate) start: Nanos,
    stop: Option<Nanos>,
    pub(crate) packet_size: u32,
    /// Mean packet spacing at the configured rate, seconds.
    interval: f64,
    rng: SimRng,
    /// On/off: end of the current on period.
    on_until: Nanos,
}

/// Pareto draw with the given mean and shape (> 1): scale x_m = mean·(shape − 1)/shape.
fn pareto(rng: &mut SimRng, mean: f64, shape: f64) -> f64 {
    let xm = mean * (shape - 1.0) / shape;
    let u = 1.0 - rng::uniform(rng); // (0, 1]
    xm / u.powf(1.0 / shape)
}

fn exponential(rng: &mut SimRng, mean: f64) -> f64 {
    -mean * (1.0 - rng::uniform(rng)).ln()
}

impl CrossSource {
    /// The source of `t`, which [`RunSpec::validate`](crate::spec::RunSpec::validate) has checked
    /// (kind, rate, packet size, on/off shape), starting its route at `route`.
    pub(crate) fn new(t: &TrafficSpec, route: u32, rng: SimRng) -> CrossSource {
        let kind = match t.kind.as_str() {
            "cbr" => Kind::Cbr,
            "poisson" => Kind::Poisson,
            "onoff" => Kind::OnOff {
                mean_on: t.mean_on.unwrap_or(0.5),
                mean_off: t.mean_off.unwrap_or(0.5),
                shape: t.shape.unwrap_or(1.5),
            },
            k => unreachable!("traffic kind {k:?} passed validation"),
        };
        CrossSource {
            kind,
            route,
            start: from_secs(t.start),
            stop: t.stop.map(from_secs),
            packet_size: t.packet_size,
            interval: t.packet_size as f64 * 8.0 / t.rate_bps,
            rng,
            on_until: 0,
        }
    }

    /// Called at a scheduled emission time: whether to emit a packet now, and when to be called next.
    pub(crate) fn fire(&mut self, now: Nanos) -> (bool, Option<Nanos>) {
        if self.stop.is_some_and(|s| now >= s) {
            return (false, None);
        }
        let (send, next) = match self.kind {
            Kind::Cbr => (true, now.saturating_add(from_secs(self.interval).max(1))),
            Kind::Poisson => (
                true,
                now.saturating_add(from_secs(exponential(&mut self.rng, self.interval)).max(1)),
            ),
            Kind::OnOff {
                mean_on,
                mean_off,
                shape,
            } => {
                if now < self.on_until {
                    (true, now.saturating_add(from_secs(self.interval).max(1)))
                } else if self.on_until == 0 || now >= self.on_until {
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
                } else {
                    unreachable!()
                }
            }
        };
        (
            send,
            Some(next).filter(|t| self.stop.is_none_or(|s| *t < s)),
        )
    }
}

/// A source of short, congestion-controlled transfers (`kind = "transfers"`): Poisson arrivals at
/// `rate / mean size`, Pareto sizes of the given mean and shape, each transfer a flow of the template's
/// algorithm that sends its size and ends (its state is freed then). What it keeps is one record per
/// finished transfer, for the flow-completion-time statistics.
pub(crate) struct TransferSource {
    pub(crate) template: FlowSpec,
    pub(crate) start: Nanos,
    stop: Option<Nanos>,
    /// Mean gap between arrivals, seconds, and the size distribution.
    mean_gap: f64,
    mean_size: f64,
    shape: f64,
    rng: SimRng,
    /// Routes of the transfers' data and ACKs (shared by all of them).
    pub(crate) fwd: u32,
    pub(crate) rev: u32,
    /// How many transfers this source has started (also numbers their algorithms' seeds).
    pub(crate) arrivals: u64,
    pub(crate) completed: u64,
    pub(crate) completed_bytes: u64,
    pub(crate) active: u64,
    pub(crate) peak_active: u64,
    /// (size in bytes, completion time in seconds) of every transfer that arrived inside the
    /// measurement window and finished.
    pub(crate) fct: Vec<(u64, f64)>,
    /// Transfers that arrived inside the window, finished or not.
    pub(crate) window_arrivals: u64,
}

/// Size buckets of the flow-completion-time summary, bytes: [lo, hi).
pub const FCT_BUCKETS: [(u64, u64); 4] = [
    (0, 10_000),
    (10_000, 100_000),
    (100_000, 1_000_000),
    (1_000_000, u64::MAX),
];

/// Default Pareto shape of transfer sizes (heavy-tailed with a finite mean, as web transfers).
pub const DEFAULT_SIZE_SHAPE: f64 = 1.5;

impl TransferSource {
    /// The source of `t` (kind "transfers", checked by `RunSpec::validate`), its transfers' data and
    /// ACK routes starting at `fwd` and `rev`.
    pub(crate) fn new(t: &TrafficSpec, fwd: u32, rev: u32, rng: SimRng) -> TransferSource {
        let template = (**t.flow.as_ref().expect("validated: transfers have a flow")).clone();
        let mean_size = t.mean_size.expect("validated: transfers have a mean size");
        TransferSource {
            template,
            start: from_secs(t.start),
            stop: t.stop.map(from_secs),
            mean_gap: mean_size * 8.0 / t.rate_bps,
            mean_size,
            shape: t.shape.unwrap_or(DEFAULT_SIZE_SHAPE),
            rng,
            fwd,
            rev,
            arrivals: 0,
            completed: 0,
            completed_bytes: 0,
            active: 0,
            peak_active: 0,
            fct: Vec::new(),
            window_arrivals: 0,
        }
    }

    /// At a scheduled arrival: the new transfer's size (None once the source has stopped) and the
    /// next arrival time.
    pub(crate) fn arrive(&mut self, now: Nanos) -> (Option<u64>, Option<Nanos>) {
        if self.stop.is_some_and(|s| now >= s) {
            return (None, None);
        }
        let size = pareto(&mut self.rng, self.mean_size, self.shape)
            .ceil()
            .max(1.0);
        // Sizes beyond the transport's limit are cut there (a draw that far in the tail is rare).
        let size = size.min(cclab_spec::limits::MAX_FLOW_SIZE as f64) as u64;
        let gap = from_secs(exponential(&mut self.rng, self.mean_gap)).max(1);
        self.arrivals += 1;
        self.active += 1;
        self.peak_active = self.peak_active.max(self.active);
        (Some(size), Some(now.saturating_add(gap)))
    }
}
