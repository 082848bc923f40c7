//! `cclab._native.Stepper`: a simulation run in steps with one flow driven from outside, for the
//! Gymnasium environment `cclab.gym` (docs/gym.md). The flow's algorithm is replaced by the `external`
//! sender (`cclab_cc::algorithms::external`); between steps its window or pacing rate is set, and each
//! step returns what happened during it as one flat list of floats (names in `Stepper.FIELDS`), so a
//! step costs one call and no dict.

use crate::spec_error;
use cclab_cc::algorithms::external::ExternalControl;
use cclab_cc::time::{from_secs, to_secs, Nanos};
use cclab_sim::{FlowProbe, LinkProbe, Simulation};
use cclab_spec::RunSpec;
use pyo3::prelude::*;

/// The names of the values `Stepper.advance` returns, in order. Counters are for the step (since the
/// previous `advance`), state is at its end; times in seconds. Where there is no sample (no RTT
/// sample in the step, no pacing) the value is 0, not NaN: an RTT or a rate is never 0, and 0 compares
/// equal to itself (Gymnasium's determinism checks compare step results with `==`).
const FIELDS: &[&str] = &[
    "t",               // simulated time at the end of the step
    "dt",              // the step's length
    "started",         // 1 once the agent flow has started
    "finished",        // 1 once a finite (or stopped) agent flow has all its data acknowledged
    "acks",            // ACKs the agent received
    "acked_pkts",      // packets newly delivered by them (cumulative + SACKed)
    "ecn_acks",        // ACKs with ECN-Echo
    "rtt_n",           // RTT samples
    "rtt_mean",        // their mean, min, max (0 without samples)
    "rtt_min",         //
    "rtt_max",         //
    "loss_events",     // loss events (at most one per window) and packets found lost in them
    "lost_pkts",       //
    "timeouts",        // retransmission timeouts
    "sent_pkts",       // data packets sent (retransmissions included)
    "sent_bytes",      // their wire bytes
    "retransmits",     // retransmissions among them
    "delivered_bytes", // application bytes delivered in order at the receiver
    "dropped",         // agent packets dropped or lost in the network (simulator truth)
    "cwnd",            // the agent's window (packets) and pacing rate (bit/s, 0: none)
    "pacing_bps",      //
    "in_flight",       // packets in flight
    "srtt",            // smoothed and minimum RTT so far (0 before the first sample)
    "min_rtt",         //
    "link_tx_bytes",   // bytes the chosen link sent (all traffic)
    "link_arrivals",   // packets that arrived at it
    "link_drops",      // dropped by its queue (random losses not included)
    "link_marks",      // ECN-marked by it
    "link_losses",     // random losses on it
    "queue_pkts",      // its queue at the end of the step
    "queue_mean_pkts", // its time-average queue over the step
];

/// One simulation stepped from Python. `Stepper(spec_json, agent_flow, link)`: flow `agent_flow` is
/// driven from outside; `link` (a directional link index) is the link whose counters each step reports.
#[pyclass(module = "cclab._native")]
pub struct Stepper {
    sim: Simulation,
    ctl: ExternalControl,
    agent: usize,
    link: usize,
    prev_t: Nanos,
    prev_f: FlowProbe,
    prev_l: LinkProbe,
}

#[pymethods]
impl Stepper {
    #[new]
    fn new(spec_json: &str, agent_flow: i64, link: i64) -> PyResult<Self> {
        let spec: RunSpec =
            serde_json::from_str(spec_json).map_err(|e| spec_error("spec", &e.to_string()))?;
        let nf = spec.flows.len();
        let agent = usize::try_from(agent_flow).unwrap_or(usize::MAX);
        if agent >= nf {
            return Err(spec_error(
                "agent_flow",
                &format!("must be a flow index in [0, {nf}), got {agent_flow}"),
            ));
        }
        let nl = spec.links.len();
        let link_ix = usize::try_from(link).unwrap_or(usize::MAX);
        if link_ix >= nl {
            return Err(spec_error(
                "link",
                &format!("must be a link index in [0, {nl}), got {link}"),
            ));
        }
        let link = link_ix;
        let (mut sim, ctl) = Simulation::with_external(&spec, agent)
            .map_err(|e| spec_error(&e.field, &e.message))?;
        let prev_f = sim.flow_probe(agent);
        let prev_l = sim.link_probe(link);
        Ok(Stepper {
            sim,
            ctl,
            agent,
            link,
            prev_t: 0,
            prev_f,
            prev_l,
        })
    }

    /// The names of `advance`'s values, in order.
    #[classattr]
    #[allow(non_snake_case)]
    fn FIELDS() -> Vec<&'static str> {
        FIELDS.to_vec()
    }

    /// Current simulated time (s).
    #[getter]
    fn now(&self) -> f64 {
        to_secs(self.sim.now())
    }

    /// End of the run (s).
    #[getter]
    fn end(&self) -> f64 {
        to_secs(self.sim.end())
    }

    /// When the agent flow starts (s; drawn from the seed for a `[lo, hi]` start).
    #[getter]
    fn start(&self) -> f64 {
        to_secs(self.prev_f.start)
    }

    /// Events executed so far.
    #[getter]
    fn events(&self) -> u64 {
        self.sim.events()
    }

    /// The agent's window now (packets).
    #[getter]
    fn cwnd(&self) -> f64 {
        self.ctl.cwnd()
    }

    /// Window mode: the agent's congestion window (packets, ≥ 1), no pacing; takes effect now.
    fn set_cwnd(&mut self, pkts: f64) {
        self.ctl.set_cwnd(pkts);
        self.sim.wake_sender(self.agent);
    }

    /// Rate mode: pace the agent at `bps` (bit/s on the wire) with a window cap of
    /// `gain × bps × srtt` (≥ 4 packets); takes effect now.
    #[pyo3(signature = (bps, gain=2.0))]
    fn set_rate(&mut self, bps: f64, gain: f64) {
        self.ctl.set_rate(bps, gain);
        self.sim.wake_sender(self.agent);
    }

    /// Runs the simulation to `until` seconds (clamped to [now, end]) and returns the step's values
    /// named by `FIELDS`. The GIL is released while it runs.
    fn advance(&mut self, py: Python<'_>, until: f64) -> Vec<f64> {
        let t = from_secs(until);
        let sim = &mut self.sim;
        py.allow_threads(|| sim.run_until(t));
        let now = self.sim.now();
        let f = self.sim.flow_probe(self.agent);
        let l = self.sim.link_probe(self.link);
        let c = self.ctl.take_counters();
        let (pf, pl) = (self.prev_f, self.prev_l);
        let dt = now - self.prev_t;
        let d = |a: u64, b: u64| a.saturating_sub(b) as f64;
        let (rtt_mean, rtt_min, rtt_max) = if c.rtt_n > 0 {
            (
                c.rtt_sum_ns as f64 * 1e-9 / c.rtt_n as f64,
                to_secs(c.rtt_min_ns),
                to_secs(c.rtt_max_ns),
            )
        } else {
            (0.0, 0.0, 0.0)
        };
        let out = vec![
            to_secs(now),
            to_secs(dt),
            f.started as u8 as f64,
            f.finished as u8 as f64,
            c.acks as f64,
            c.acked_pkts as f64,
            c.ecn_acks as f64,
            c.rtt_n as f64,
            rtt_mean,
            rtt_min,
            rtt_max,
            c.loss_events as f64,
            c.lost_pkts as f64,
            c.timeouts as f64,
            d(f.sent_pkts, pf.sent_pkts),
            d(f.sent_bytes, pf.sent_bytes),
            d(f.retransmits, pf.retransmits),
            d(f.delivered_bytes, pf.delivered_bytes),
            d(f.dropped, pf.dropped),
            f.cwnd,
            f.pacing_bps.unwrap_or(0.0),
            f.in_flight as f64,
            to_secs(f.srtt),
            to_secs(f.min_rtt),
            d(l.tx_bytes, pl.tx_bytes),
            d(l.arrivals, pl.arrivals),
            d(l.drops, pl.drops),
            d(l.marks, pl.marks),
            d(l.random_losses, pl.random_losses),
            l.queue_pkts as f64,
            if dt > 0 {
                (l.q_integral - pl.q_integral) as f64 / dt as f64
            } else {
                l.queue_pkts as f64
            },
        ];
        debug_assert_eq!(out.len(), FIELDS.len());
        self.prev_t = now;
        self.prev_f = f;
        self.prev_l = l;
        out
    }
}
