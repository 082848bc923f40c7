//! Stepping: run a simulation in slices of simulated time, with one flow's algorithm replaced by an
//! [`External`] sender whose window or rate is set between slices, and its counters read there
//! (the Gymnasium environment `cclab.gym`, docs/gym.md).
//!
//! [`Simulation::run_until`] shares the event dispatch with [`Simulation::run`] and leaves `run`'s loop
//! untouched: it schedules one [`Event::Pause`] at the target time and runs events until it pops.
//! Everything scheduled before the pause at that very time runs before it, everything later stays
//! queued, and the relative order of all other events is that of an unstepped run — so stepping
//! without changing anything and then calling `run` gives the unstepped result exactly
//! (`tests/stepping.rs`).

use super::Simulation;
use crate::events::Event;
use crate::spec::{RunSpec, SpecError};
use cclab_cc::algorithms::external::{External, ExternalControl};
use cclab_cc::time::Nanos;
use cclab_transport::{Receiver, Sender};

/// A flow's cumulative counters and current state (read with [`Simulation::flow_probe`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlowProbe {
    /// When the flow starts (drawn from the seed for a `[lo, hi]` start).
    pub start: Nanos,
    pub started: bool,
    /// All data of a finite or stopped flow has been acknowledged.
    pub finished: bool,
    /// Application bytes delivered in order at the receiver.
    pub delivered_bytes: u64,
    /// Payload bytes cumulatively acknowledged at the sender.
    pub acked_bytes: u64,
    pub sent_pkts: u64,
    /// Wire bytes sent, retransmissions included.
    pub sent_bytes: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub rtt_sum_ns: u128,
    pub rtt_samples: u64,
    /// Smoothed and minimum RTT (0 before the first sample).
    pub srtt: Nanos,
    pub min_rtt: Nanos,
    pub in_flight: u32,
    pub cwnd: f64,
    pub pacing_bps: Option<f64>,
    /// Data packets of this flow dropped or lost anywhere in the network (the simulator's truth,
    /// not something the sender sees).
    pub dropped: u64,
}

/// A link's cumulative counters and queue (read with [`Simulation::link_probe`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkProbe {
    pub rate_bps: f64,
    pub tx_bytes: u64,
    pub arrivals: u64,
    pub drops: u64,
    pub marks: u64,
    pub random_losses: u64,
    pub queue_pkts: u32,
    pub queue_bytes: u64,
    /// ∫ queue length (packets) dt, in packet·ns, up to now.
    pub q_integral: u128,
}

impl Simulation {
    /// Builds the simulation of `spec` ([`Simulation::new`]) with flow `agent`'s algorithm replaced by
    /// an [`External`] sender starting at the flow's initial window; returns its control handle. The
    /// agent's loss recovery follows its `transport.sack` (its `cc` and `params` are not used).
    pub fn with_external(
        spec: &RunSpec,
        agent: usize,
    ) -> Result<(Simulation, ExternalControl), SpecError> {
        let (sim, mut ctls) = Simulation::with_externals(spec, &[agent])?;
        Ok((sim, ctls.remove(0)))
    }

    /// [`with_external`](Self::with_external) for several flows at once (each index at most once):
    /// their control handles, in the order of `agents`.
    pub fn with_externals(
        spec: &RunSpec,
        agents: &[usize],
    ) -> Result<(Simulation, Vec<ExternalControl>), SpecError> {
        let n = spec.flows.len();
        for (i, &a) in agents.iter().enumerate() {
            if a >= n {
                return Err(SpecError::new(
                    "agent_flow",
                    format!("must be a flow index in [0, {n}), got {a}"),
                ));
            }
            if agents[..i].contains(&a) {
                return Err(SpecError::new(
                    "agent_flow",
                    format!("flow {a} is named twice"),
                ));
            }
        }
        let mut sim = Simulation::new(spec)?;
        let mut ctls = Vec::with_capacity(agents.len());
        for &agent in agents {
            let f = &spec.flows[agent];
            let t = &f.transport;
            let (cc, ctl) = External::new(t.initial_cwnd, t.packet_size);
            let cfg = t.config(t.packet_size - t.mss, t.mss, None);
            let fl = &mut sim.flows[agent];
            fl.receiver = Receiver::new(&cfg);
            fl.sender = Sender::new(cfg, Box::new(cc), f.size, 0);
            fl.cc_name = "external".into();
            ctls.push(ctl);
        }
        Ok((sim, ctls))
    }

    /// Runs every event up to simulated time `t` (clamped to [now, end]) and stops there: see the
    /// module documentation. Afterwards `now() == t`.
    pub fn run_until(&mut self, t: Nanos) {
        self.run_until_or(t, || false);
    }

    /// [`run_until`](Self::run_until), but stops early, right after the first event after which
    /// `stop()` holds (a driver stepping ACK by ACK: "the agent has an ACK"); returns whether it did.
    /// The pause an early stop leaves queued at `t` moves no other event: a later call whose target is
    /// past it skips it uncounted; [`run`](Self::run) pops it as a no-op event (counted in `events`).
    ///
    /// A stepped run keeps the run's budget (`limits`) as [`run`](Self::run) does, checked as often:
    /// over it, the step ends where it is and every later step runs nothing;
    /// [`over_budget`](Self::over_budget) says why (an agent that sets a huge window can fill memory
    /// as an algorithm can).
    pub fn run_until_or(&mut self, t: Nanos, mut stop: impl FnMut() -> bool) -> bool {
        if self.stopped.is_some() {
            return false;
        }
        let t = t.min(self.end).max(self.now);
        self.ev.push(t, Event::Pause);
        while let Some((te, ev)) = self.ev.pop() {
            self.now = te;
            if ev == Event::Pause {
                if te >= t {
                    return false;
                }
                continue; // left by an earlier early stop
            }
            self.events += 1;
            self.dispatch(ev);
            if self.events & (super::budget::CHECK_EVERY - 1) == 0 && self.check_budget() {
                return false;
            }
            if stop() {
                return true;
            }
        }
        false
    }

    /// Where and why a stepped run stopped at its budget (`[limits]`): the field (`limits.max_events`
    /// or `limits.max_memory`) and the message [`run`](Self::run) would give; None while within it.
    pub fn over_budget(&self) -> Option<(&str, &str)> {
        self.stopped
            .as_ref()
            .map(|s| (s.field.as_str(), s.message.as_str()))
    }

    /// Lets flow `f`'s sender act now on a window or rate just set from outside (otherwise a larger
    /// window would wait for the next ACK, or forever if none is in flight).
    pub fn wake_sender(&mut self, f: usize) {
        self.pump_sender(f as u32);
    }

    /// Current simulated time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The end of the run (its duration).
    pub fn end(&self) -> Nanos {
        self.end
    }

    /// Events executed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// Flow `f`'s counters and state now.
    pub fn flow_probe(&self, f: usize) -> FlowProbe {
        let fl = &self.flows[f];
        let s = &fl.sender;
        let st = s.stats();
        FlowProbe {
            start: fl.start,
            started: fl.started,
            finished: fl.finish.is_some() || s.is_finished(),
            delivered_bytes: fl.receiver.delivered_bytes(),
            acked_bytes: st.acked_bytes,
            sent_pkts: st.sent_pkts,
            sent_bytes: st.sent_bytes,
            retransmits: st.retransmits,
            timeouts: st.timeouts,
            rtt_sum_ns: st.rtt_sum_ns,
            rtt_samples: st.rtt_samples,
            srtt: s.srtt(),
            min_rtt: s.min_rtt(),
            in_flight: s.in_flight(),
            cwnd: s.cc().cwnd(),
            pacing_bps: s.cc().pacing_rate_bps(),
            dropped: fl.dropped,
        }
    }

    /// Link `l`'s counters and queue now (brings its queue integral up to now).
    pub fn link_probe(&mut self, l: usize) -> LinkProbe {
        let now = self.now;
        let k = &mut self.links[l];
        k.account_queue(now);
        LinkProbe {
            rate_bps: k.rate_bps,
            tx_bytes: k.tx_bytes,
            arrivals: k.arrivals,
            drops: k.drops,
            marks: k.marks,
            random_losses: k.random_losses,
            queue_pkts: k.qlen.pkts,
            queue_bytes: k.qlen.bytes,
            q_integral: k.q_integral,
        }
    }
}
