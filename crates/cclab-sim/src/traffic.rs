//! Non-congestion-controlled cross traffic: constant bit rate, Poisson, and Pareto on/off (web-like)
//! sources. Each source has its own RNG stream so adding one never perturbs another component.

use crate::spec::{FlowSpec, TrafficSpec};
use cclab_cc::cross::{transfer_arrival, CrossKind, CrossLaw};
use cclab_cc::rng::SimRng;
use cclab_cc::time::{from_secs, Nanos};

pub(crate) struct CrossSource {
    /// When it emits (the law the real datapath's emulator uses too: `cclab_cc::cross`).
    law: CrossLaw,
    /// Start of the source's route in the simulation's route arena.
    pub(crate) route: u32,
    pub(crate) start: Nanos,
    pub(crate) packet_size: u32,
}

impl CrossSource {
    /// The source of `t`, which [`RunSpec::validate`](crate::spec::RunSpec::validate) has checked
    /// (kind, rate, packet size, on/off shape), starting its route at `route`.
    pub(crate) fn new(t: &TrafficSpec, route: u32, rng: SimRng) -> CrossSource {
        let kind = CrossKind::parse(&t.kind, t.mean_on, t.mean_off, t.shape)
            .unwrap_or_else(|| unreachable!("traffic kind {:?} passed validation", t.kind));
        CrossSource {
            law: CrossLaw::new(kind, t.rate_bps, t.packet_size, t.stop.map(from_secs), rng),
            route,
            start: from_secs(t.start),
            packet_size: t.packet_size,
        }
    }

    /// Called at a scheduled emission time: whether to emit a packet now, and when to be called next.
    pub(crate) fn fire(&mut self, now: Nanos) -> (bool, Option<Nanos>) {
        self.law.fire(now)
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

pub use cclab_cc::cross::FCT_BUCKETS;

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
        let (size, gap) = transfer_arrival(
            &mut self.rng,
            self.mean_size,
            self.shape,
            self.mean_gap,
            cclab_spec::limits::MAX_FLOW_SIZE,
        );
        self.arrivals += 1;
        self.active += 1;
        self.peak_active = self.peak_active.max(self.active);
        (Some(size), Some(now.saturating_add(gap)))
    }
}
