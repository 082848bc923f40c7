//! The simulation: links, delay lines, endpoints and cross traffic wired by per-flow routes, driven by
//! one event loop.
//!
//! Cost model (htsim-style): a link keeps one pending event for the packet in service and one for the
//! earliest packet in its propagation pipe (propagation is FIFO, so the pipe is a queue); access delays
//! are FIFO delay lines with one pending event each; endpoint timers are lazily rescheduled (a pending
//! timer event that fires early just re-arms), so ACK processing never touches the heap for timers.
//! Packets live in a slab with a free list: no allocation per packet in steady state.
//!
//! This file: the state, the event loop, packet movement along routes, the endpoints. Building from a
//! spec: `sim/build.rs`; link service: `sim/link.rs`; sampling and results: `sim/measure.rs`; packets:
//! `sim/packet.rs`.

mod budget;
mod build;
mod link;
mod measure;
mod packet;
mod step;

pub use budget::{Memory, Stopped};
pub use build::transport_config;
pub use step::{FlowProbe, LinkProbe};

use crate::events::{Event, EventQueue};
use crate::result::{Conservation, RunResult, SeriesBuilder, Trace, TraceKind, TraceRecord};
use crate::traffic::{CrossSource, TransferSource, FCT_BUCKETS};
use cclab_cc::time::{to_secs, Nanos};
use cclab_transport::{Receiver, Sender};

/// Flow ids with this bit set name a short transfer (`Simulation::xfers`, slot = the other bits) rather
/// than a configured flow: packets, timers and drops carry one id space for both.
const XFER: u32 = 1 << 31;
use link::Link;
use measure::{FlowSnap, LinkSnap};
use packet::{prefetch_packet, Body, Hop, Packet, Pipe};
use std::time::Instant;

struct Flow {
    group: u32,
    cc_name: String,
    rtt: f64,
    start: Nanos,
    stop: Option<Nanos>,
    sender: Sender,
    receiver: Receiver,
    /// Start of the data route / ACK route in `Simulation::routes`.
    fwd: u32,
    rev: u32,
    ect: bool,
    started: bool,
    stimer: Option<Nanos>,
    sgen: u32,
    rtimer: Option<Nanos>,
    rgen: u32,
    finish: Option<Nanos>,
    dropped: u64,
    /// Data packets dropped in the network while the measurement window was open.
    dropped_window: u64,
    /// Header bytes on the wire (ACKs are this long; data adds the payload).
    header: u32,
}

pub struct Simulation {
    now: Nanos,
    end: Nanos,
    sample_every: Nanos,
    measure: [Nanos; 2],
    ev: EventQueue,
    /// Every packet in the network, by index; free slots are listed in `free`.
    slab: Vec<Packet>,
    /// Every route (flows' data and ACK routes, cross traffic's), each ending in `Hop::Host`.
    routes: Vec<Hop>,
    free: Vec<u32>,
    links: Vec<Link>,
    lines: Vec<(Nanos, Pipe)>,
    flows: Vec<Flow>,
    cross: Vec<CrossSource>,
    /// Short-transfer sources and every transfer they started, by slot; a finished transfer's state
    /// is freed (None) and its slot never reused, so a late packet of it finds nothing and is dropped.
    xsrc: Vec<TransferSource>,
    xfers: Vec<Option<Box<Flow>>>,
    seed: u64,
    in_window: bool,
    fsnap: [Vec<FlowSnap>; 2],
    lsnap: [Vec<LinkSnap>; 2],
    cons: Conservation,
    events: u64,
    trace: Option<Trace>,
    result: RunResult,
    fseries: SeriesBuilder,
    lseries: SeriesBuilder,
    state_buf: Vec<(&'static str, f64)>,
    /// The run's budget (the spec's `limits`), enforced while running: the estimate that let the run
    /// start can be wrong (an algorithm that sends far above its path's rate), the budget cannot.
    budget: cclab_spec::Budget,
    /// The fixed part of the memory the budget counts (the estimate's flows, links and tables), the
    /// senders' logs as last read, and where the run stopped at its budget (`sim/budget.rs`).
    mem_state: f64,
    log_scan: budget::LogScan,
    stopped: Option<Stopped>,
}

impl Simulation {
    /// Runs to the end. `progress` is called with the simulated time (seconds) at most every ~0.25 s
    /// of wall time; returning false aborts the run.
    pub fn run(mut self, mut progress: Option<&mut dyn FnMut(f64) -> bool>) -> RunResult {
        let wall0 = Instant::now();
        let mut last_report = wall0;
        let mut aborted = false;
        while let Some((t, ev)) = self.ev.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
            if self.events & (budget::CHECK_EVERY - 1) == 0 {
                if self.check_budget() {
                    aborted = true;
                    break;
                }
                if let Some(cb) = progress.as_mut() {
                    let w = Instant::now();
                    if w.duration_since(last_report).as_secs_f64() >= 0.25 {
                        last_report = w;
                        if !cb(to_secs(self.now)) {
                            aborted = true;
                            break;
                        }
                    }
                }
            }
        }
        let wall = wall0.elapsed().as_secs_f64();
        let aborted = aborted || self.stopped.is_some();
        if !aborted {
            self.now = self.end;
        }
        let stopped = self.stopped.take();
        if stopped.is_some() {
            // Stopped at the budget: the results cover the run up to now, the window is cut there
            // (an empty window at now if it had not opened yet).
            if !self.in_window && self.now < self.measure[0] {
                self.measure[0] = self.now;
                self.snapshot(0);
            }
            self.measure[1] = self.measure[1].min(self.now);
        }
        let measure = [to_secs(self.measure[0]), to_secs(self.measure[1])];
        let mut result = self.finish(wall, aborted);
        if let Some(s) = stopped {
            result.measure = measure;
            result.over_budget = Some(crate::SpecError::new(&s.field, &s.message));
            result.stopped = Some(s);
        }
        result
    }

    #[inline(always)]
    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::TxDone(l) => self.tx_done(l as usize),
            Event::LinkArrive(l) => self.link_arrive(l as usize),
            Event::LineArrive(d) => self.line_arrive(d as usize),
            Event::SenderTimer(f, g) => {
                let now = self.now;
                let Some(fl) = self.flow_mut(f) else { return };
                if g == fl.sgen {
                    fl.stimer = None;
                    fl.sender.handle_timeout(now);
                    self.pump_sender(f);
                }
            }
            Event::ReceiverTimer(f, g) => {
                let now = self.now;
                let Some(fl) = self.flow_mut(f) else { return };
                if g == fl.rgen {
                    fl.rtimer = None;
                    fl.receiver.handle_timeout(now);
                    self.pump_receiver(f);
                }
            }
            Event::FlowStart(f) => {
                self.flows[f as usize].started = true;
                self.pump_sender(f);
            }
            Event::TransferArrival(s) => self.transfer_arrive(s as usize),
            Event::FlowStop(f) => {
                self.flows[f as usize].sender.stop();
            }
            Event::Traffic(s) => self.cross_send(s as usize),
            Event::Sample => {
                self.sample();
                let next = self.now.saturating_add(self.sample_every);
                if next <= self.end {
                    self.ev.push(next, Event::Sample);
                }
            }
            Event::Measure(k) => self.snapshot(k as usize),
            Event::LossChange(l, k) => {
                let link = &mut self.links[l as usize];
                link.loss = link.schedule[k as usize].1;
            }
            Event::Pause => {}
        }
    }

    // ---- packets ----

    fn alloc(&mut self, p: Packet) -> u32 {
        self.cons.injected += 1;
        if let Some(i) = self.free.pop() {
            self.slab[i as usize] = p;
            i
        } else {
            self.slab.push(p);
            (self.slab.len() - 1) as u32
        }
    }

    fn release(&mut self, i: u32) {
        self.free.push(i);
    }

    fn trace(&mut self, kind: TraceKind, link: i32, i: u32) {
        if let Some(tr) = self.trace.as_mut() {
            let p = &self.slab[i as usize];
            let (flow, seq) = match p.body {
                Body::Data(d) => (p.owner as i32, d.seq),
                Body::Ack(a) => (p.owner as i32, a.cum_ack),
                Body::Cross => (-1 - p.owner as i32, 0),
            };
            tr.push(TraceRecord {
                t: to_secs(self.now),
                kind,
                link,
                flow,
                seq,
                pkt: p.kind,
            });
        }
    }

    /// Starts loading packet `n` (the next in some FIFO) into the cache: with a large network the packet
    /// has sat in a queue or on a wire for milliseconds and is no longer cached; the miss on it was the
    /// single largest cost of the loop (docs/performance.md). The next event on that FIFO runs after
    /// other events, so the load overlaps useful work.
    #[inline(always)]
    fn prefetch(&self, n: u32) {
        prefetch_packet(&self.slab[n as usize]);
    }

    /// Moves packet `i` to its current hop.
    fn forward(&mut self, i: u32) {
        let hop = self.routes[self.slab[i as usize].at as usize];
        match hop {
            Hop::Link(l) => self.enqueue(l as usize, i),
            Hop::Line(d) => {
                let now = self.now;
                let (delay, pipe) = &mut self.lines[d as usize];
                let was_empty = pipe.q.is_empty();
                pipe.q.push_back((now.saturating_add(*delay), i));
                if was_empty {
                    let t = now.saturating_add(*delay);
                    self.ev.push(t, Event::LineArrive(d));
                }
            }
            Hop::Host => self.deliver(i),
        }
    }

    fn line_arrive(&mut self, d: usize) {
        let now = self.now;
        while let Some(&(t, i)) = self.lines[d].1.q.front() {
            if t > now {
                self.ev.push(t, Event::LineArrive(d as u32));
                break;
            }
            self.lines[d].1.q.pop_front();
            if let Some(&(_, n)) = self.lines[d].1.q.front() {
                self.prefetch(n);
            }
            self.slab[i as usize].at += 1;
            self.forward(i);
        }
    }

    fn deliver(&mut self, i: u32) {
        self.trace(TraceKind::Deliver, -1, i);
        self.cons.delivered += 1;
        let now = self.now;
        // The endpoint reads the segment where it lies in the slab (copying the 120-byte packet out
        // first cost a memcpy per delivery); the slot is freed before the endpoint's replies are
        // allocated, so they reuse it as before.
        let Simulation {
            slab, flows, xfers, ..
        } = self;
        let p = &mut slab[i as usize];
        let owner = p.owner;
        // Cross traffic's owner is its source, not a flow. None: a late packet of a transfer that
        // has finished (dropped here).
        let fl = if matches!(p.body, Body::Cross) {
            None
        } else if owner & XFER == 0 {
            Some(&mut flows[owner as usize])
        } else {
            xfers[(owner & !XFER) as usize].as_deref_mut()
        };
        match (&mut p.body, fl) {
            (Body::Data(d), Some(fl)) => {
                d.ce = p.ce;
                fl.receiver.handle_data(now, d);
                self.release(i);
                self.pump_receiver(owner);
            }
            (Body::Ack(a), Some(fl)) => {
                fl.sender.handle_ack(now, a);
                self.release(i);
                self.pump_sender(owner);
            }
            _ => self.release(i),
        }
    }

    // ---- endpoints ----

    /// Flow `f` (a configured flow's index, or `XFER | slot` for a transfer; None once a transfer is done).
    #[inline(always)]
    fn flow_mut(&mut self, f: u32) -> Option<&mut Flow> {
        if f & XFER == 0 {
            Some(&mut self.flows[f as usize])
        } else {
            self.xfers[(f & !XFER) as usize].as_deref_mut()
        }
    }

    fn pump_sender(&mut self, f: u32) {
        let now = self.now;
        match self.flow_mut(f) {
            Some(fl) if fl.started => {}
            _ => return,
        }
        loop {
            let fl = self.flow_mut(f).expect("checked above");
            let Some(seg) = fl.sender.poll_transmit(now) else {
                break;
            };
            let bytes = seg.wire_bytes(fl.header);
            let p = Packet::new(fl.fwd, f, bytes, Body::Data(seg), fl.ect);
            let i = self.alloc(p);
            self.forward(i);
        }
        let fl = self.flow_mut(f).expect("checked above");
        if fl.finish.is_none() && fl.sender.is_finished() {
            fl.finish = Some(now);
            if f & XFER != 0 {
                self.transfer_done(f);
                return;
            }
        }
        if let Some(t) = fl.sender.poll_timeout() {
            let t = t.max(now);
            if fl.stimer.is_none_or(|s| t < s) {
                fl.sgen = fl.sgen.wrapping_add(1);
                fl.stimer = Some(t);
                let g = fl.sgen;
                self.ev.push(t, Event::SenderTimer(f, g));
            }
        }
    }

    fn pump_receiver(&mut self, f: u32) {
        let now = self.now;
        loop {
            let Some(fl) = self.flow_mut(f) else { return };
            let Some(ack) = fl.receiver.poll_ack(now) else {
                break;
            };
            let p = Packet::new(fl.rev, f, fl.header, Body::Ack(ack), false);
            let i = self.alloc(p);
            self.forward(i);
        }
        let fl = self.flow_mut(f).expect("checked in the loop");
        if let Some(t) = fl.receiver.poll_timeout() {
            let t = t.max(now);
            if fl.rtimer.is_none_or(|s| t < s) {
                fl.rgen = fl.rgen.wrapping_add(1);
                fl.rtimer = Some(t);
                let g = fl.rgen;
                self.ev.push(t, Event::ReceiverTimer(f, g));
            }
        }
    }

    // ---- short transfers ----

    /// A `transfers` source's arrival: a new transfer of a freshly drawn size starts now.
    fn transfer_arrive(&mut self, s: usize) {
        let now = self.now;
        let (size, next) = self.xsrc[s].arrive(now);
        if let Some(t) = next {
            self.ev.push(t, Event::TransferArrival(s as u32));
        }
        let Some(size) = size else { return };
        let in_window = now >= self.measure[0] && now < self.measure[1];
        let src = &mut self.xsrc[s];
        src.window_arrivals += in_window as u64;
        let n = src.arrivals;
        let flow = build::transfer(&src.template, s, n, size, now, src.fwd, src.rev, self.seed);
        let slot = self.xfers.len() as u32;
        assert!(slot < XFER, "more than 2^31 transfers in one run");
        self.xfers.push(Some(Box::new(flow)));
        // A transfer adds kilobytes in one event: check the budget every so many. Over it, the run
        // ends now (the loop stops at the first event after `end`; no test per event for this).
        if self.xfers.len().is_multiple_of(budget::CHECK_TRANSFERS) && self.check_budget() {
            self.end = self.now;
        }
        self.pump_sender(XFER | slot);
    }

    /// Transfer `f` has delivered everything: its completion time is recorded and its state freed.
    fn transfer_done(&mut self, f: u32) {
        let fl = self.xfers[(f & !XFER) as usize]
            .take()
            .expect("a running transfer");
        let src = &mut self.xsrc[fl.group as usize];
        let bytes = fl.receiver.delivered_bytes();
        src.active -= 1;
        src.completed += 1;
        src.completed_bytes += bytes;
        if fl.start >= self.measure[0] && fl.start < self.measure[1] {
            src.fct.push((bytes, to_secs(self.now - fl.start)));
        }
    }

    fn transfer_results(&self) -> Vec<crate::result::TransferResult> {
        use crate::result::{FctSummary, TransferResult};
        self.xsrc
            .iter()
            .enumerate()
            .map(|(i, s)| TransferResult {
                traffic: i,
                cc: s.template.cc.clone(),
                arrivals: s.arrivals,
                completed: s.completed,
                unfinished: s.active,
                completed_bytes: s.completed_bytes,
                peak_active: s.peak_active,
                window_arrivals: s.window_arrivals,
                fct: FctSummary::of(&s.fct, 0, u64::MAX),
                fct_by_size: FCT_BUCKETS
                    .iter()
                    .map(|&(lo, hi)| FctSummary::of(&s.fct, lo, hi))
                    .collect(),
            })
            .collect()
    }

    fn cross_send(&mut self, s: usize) {
        let now = self.now;
        let (send, next) = self.cross[s].fire(now);
        if send {
            let src = &self.cross[s];
            let p = Packet::new(src.route, s as u32, src.packet_size, Body::Cross, false);
            let i = self.alloc(p);
            self.forward(i);
        }
        if let Some(t) = next {
            self.ev.push(t, Event::Traffic(s as u32));
        }
    }
}
