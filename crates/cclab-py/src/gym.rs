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
    "rtt_last",        // the step's last RTT sample (0 without samples)
];

/// One driven flow: its index, control handle and the probe at the end of the previous step.
struct Agent {
    flow: usize,
    ctl: ExternalControl,
    prev_f: FlowProbe,
}

/// One simulation stepped from Python. `Stepper(spec_json, agent_flow, link, more_agents=[])`: flow
/// `agent_flow` (and each of `more_agents`) is driven from outside; `link` (a directional link index) is
/// the link whose counters each step reports. Calls that take `agent` mean the i-th driven flow (0: the
/// `agent_flow`).
#[pyclass(module = "cclab._native")]
pub struct Stepper {
    sim: Simulation,
    agents: Vec<Agent>,
    link: usize,
    prev_t: Nanos,
    prev_l: LinkProbe,
}

#[pymethods]
impl Stepper {
    #[new]
    #[pyo3(signature = (spec_json, agent_flow, link, more_agents=Vec::new()))]
    fn new(spec_json: &str, agent_flow: i64, link: i64, more_agents: Vec<i64>) -> PyResult<Self> {
        let spec: RunSpec =
            serde_json::from_str(spec_json).map_err(|e| spec_error("spec", &e.to_string()))?;
        let nf = spec.flows.len();
        let mut flows = Vec::with_capacity(1 + more_agents.len());
        for a in std::iter::once(agent_flow).chain(more_agents) {
            let agent = usize::try_from(a).unwrap_or(usize::MAX);
            if agent >= nf {
                return Err(spec_error(
                    "agent_flow",
                    &format!("must be a flow index in [0, {nf}), got {a}"),
                ));
            }
            flows.push(agent);
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
        let (mut sim, ctls) = Simulation::with_externals(&spec, &flows)
            .map_err(|e| spec_error(&e.field, &e.message))?;
        let agents = flows
            .iter()
            .zip(ctls)
            .map(|(&flow, ctl)| Agent {
                flow,
                ctl,
                prev_f: sim.flow_probe(flow),
            })
            .collect();
        let prev_l = sim.link_probe(link);
        Ok(Stepper {
            sim,
            agents,
            link,
            prev_t: 0,
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
        to_secs(self.agents[0].prev_f.start)
    }

    /// When each driven flow starts (s), in the order given.
    #[getter]
    fn starts(&self) -> Vec<f64> {
        self.agents
            .iter()
            .map(|a| to_secs(a.prev_f.start))
            .collect()
    }

    /// Events executed so far.
    #[getter]
    fn events(&self) -> u64 {
        self.sim.events()
    }

    /// The agent's window now (packets).
    #[getter]
    fn cwnd(&self) -> f64 {
        self.agents[0].ctl.cwnd()
    }

    /// Driven flow `agent`'s window now (packets).
    fn cwnd_of(&self, agent: usize) -> PyResult<f64> {
        Ok(self.agent(agent)?.ctl.cwnd())
    }

    /// Window mode: the agent's congestion window (packets, ≥ 1), no pacing; takes effect now.
    #[pyo3(signature = (pkts, agent=0))]
    fn set_cwnd(&mut self, pkts: f64, agent: usize) -> PyResult<()> {
        let a = self.agent(agent)?;
        a.ctl.set_cwnd(pkts);
        let flow = a.flow;
        self.sim.wake_sender(flow);
        Ok(())
    }

    /// Rate mode: pace the agent at `bps` (bit/s on the wire) with a window cap of
    /// `gain × bps × srtt` (≥ 4 packets); takes effect now.
    #[pyo3(signature = (bps, gain=2.0, agent=0))]
    fn set_rate(&mut self, bps: f64, gain: f64, agent: usize) -> PyResult<()> {
        let a = self.agent(agent)?;
        a.ctl.set_rate(bps, gain);
        let flow = a.flow;
        self.sim.wake_sender(flow);
        Ok(())
    }

    /// Runs the simulation to `until` seconds (clamped to [now, end]) and returns the step's values
    /// named by `FIELDS` for the (first) agent. With `on_ack`, the step ends earlier, right after the
    /// event that brings the agent an ACK. The GIL is released while it runs.
    #[pyo3(signature = (until, on_ack=false))]
    fn advance(&mut self, py: Python<'_>, until: f64, on_ack: bool) -> PyResult<Vec<f64>> {
        self.run(py, until, on_ack)?;
        let now = self.sim.now();
        let l = self.sim.link_probe(self.link);
        let out = self.values(0, now, &l);
        self.prev_t = now;
        self.prev_l = l;
        Ok(out)
    }

    /// [`advance`] for every driven flow: one list of `FIELDS` values per agent, in order (the link's
    /// values are the same in each). With `on_ack`, the step ends right after the first event that
    /// brings any agent an ACK.
    #[pyo3(signature = (until, on_ack=false))]
    fn advance_all(&mut self, py: Python<'_>, until: f64, on_ack: bool) -> PyResult<Vec<Vec<f64>>> {
        self.run(py, until, on_ack)?;
        let now = self.sim.now();
        let l = self.sim.link_probe(self.link);
        let out = (0..self.agents.len())
            .map(|i| self.values(i, now, &l))
            .collect();
        self.prev_t = now;
        self.prev_l = l;
        Ok(out)
    }
}

impl Stepper {
    fn agent(&self, i: usize) -> PyResult<&Agent> {
        let n = self.agents.len();
        self.agents.get(i).ok_or_else(|| {
            spec_error(
                "agent",
                &format!("must be a driven flow in [0, {n}), got {i}"),
            )
        })
    }

    /// Runs to `until` seconds, or (`on_ack`) until the first event after which an agent has an ACK.
    /// A run over its budget (`[limits]`) raises ScenarioError naming the limit, at that step and at
    /// every later one.
    fn run(&mut self, py: Python<'_>, until: f64, on_ack: bool) -> PyResult<()> {
        let t = from_secs(until);
        let sim = &mut self.sim;
        if on_ack {
            let ctls: Vec<ExternalControl> = self.agents.iter().map(|a| a.ctl.clone()).collect();
            py.allow_threads(|| sim.run_until_or(t, || ctls.iter().any(|c| c.acks() > 0)));
        } else {
            py.allow_threads(|| sim.run_until(t));
        }
        match self.sim.over_budget() {
            Some((field, message)) => Err(spec_error(field, message)),
            None => Ok(()),
        }
    }

    /// Agent `i`'s values for the step that ends now (and its counters started again).
    fn values(&mut self, i: usize, now: Nanos, l: &LinkProbe) -> Vec<f64> {
        let flow = self.agents[i].flow;
        let f = self.sim.flow_probe(flow);
        let a = &mut self.agents[i];
        let c = a.ctl.take_counters();
        let (pf, pl) = (a.prev_f, self.prev_l);
        a.prev_f = f;
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
            to_secs(c.rtt_last_ns),
        ];
        debug_assert_eq!(out.len(), FIELDS.len());
        out
    }
}
