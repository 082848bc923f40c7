//! The run's budget enforced while running (the spec's `limits`): the estimate that let the run start
//! can be wrong (a source that ignores loss, transfers offered far beyond a link's capacity), the
//! budget cannot.
//!
//! Every structure that grows while the run goes on is counted, at the estimate's per-item costs
//! (`cclab_spec::estimate`, which include what the item costs once it has crossed into Python and been
//! written): packets in the network (the slab), running transfers and the slot table of all transfers
//! started, finished transfers' completion times, packet-trace records, time-series rows, the event
//! queue, and the senders' per-transmission logs (which grow with every transmission while the oldest
//! outstanding packet stays unacknowledged). All of it is read every 65,536 events, and after every
//! 1,024 transfers started, from lengths and capacities, except the senders' logs: reading those visits every endpoint, so they are read afresh
//! only every 64 events per endpoint, and between two reads bounded from above by what the
//! transmissions since the last read can have added. Over the budget by that bound, the logs are read
//! afresh before the run is stopped, so a run is never stopped on a bound alone.

use super::Simulation;
use cclab_cc::time::to_secs;
use cclab_spec::estimate::{FLOW_BYTES, FLOW_ROW_BYTES, LINK_ROW_BYTES, PACKET_BYTES, TRACE_BYTES};
use cclab_spec::limits::{show_bytes, show_count};
use serde::Serialize;

/// Events between two budget checks.
pub(super) const CHECK_EVERY: u64 = 1 << 16;
/// Transfers started between two budget checks at most (a transfer's state is kilobytes, and a
/// transfer stalled in RTO backoff costs few events: 65,536 events could start 384 MiB of them).
pub(super) const CHECK_TRANSFERS: usize = 1024;

/// Most bytes one transmission can add to a sender's logs: an echo-log record (24 B), a delivery-rate
/// snapshot (48 B) and a retransmission fence (32 B), doubled for the logs' growth by doubling.
/// What the logs hold per retransmission is checked against the estimate's smaller figure by
/// `senders_logs_count_toward_the_budget`.
pub(super) const SEND_LOG_BYTES: f64 = 256.0;
/// Bytes per slot of the table of every transfer started (a pointer, never freed: slots are not
/// reused) and per finished transfer's completion record (size, time).
const XFER_SLOT_BYTES: f64 = 8.0;
const FCT_RECORD_BYTES: f64 = 16.0;
/// Bytes per event-queue entry (time and event).
const EVENT_BYTES: f64 = 24.0;

/// What the run holds now, bytes, by what grows (see the module's comment).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Memory {
    /// The fixed part: the estimate's flows, links and sources, and the engine's tables.
    pub state: f64,
    pub packets: f64,
    pub transfers: f64,
    pub trace: f64,
    pub series: f64,
    pub events: f64,
    pub send_logs: f64,
    /// Counts behind the terms, for the message.
    pub packets_n: u64,
    pub transfers_running: u64,
    pub trace_records: u64,
    pub series_rows: u64,
}

impl Memory {
    pub fn total(&self) -> f64 {
        self.state
            + self.packets
            + self.transfers
            + self.trace
            + self.series
            + self.events
            + self.send_logs
    }

    /// The growing terms, largest first ("running transfers 800 MiB (130,000), …").
    pub fn breakdown(&self) -> String {
        let mut terms = [
            (
                format!(
                    "running transfers ({})",
                    show_count(self.transfers_running as f64)
                ),
                self.transfers,
            ),
            (
                format!(
                    "packet trace ({} records)",
                    show_count(self.trace_records as f64)
                ),
                self.trace,
            ),
            (
                format!(
                    "packets in the network ({})",
                    show_count(self.packets_n as f64)
                ),
                self.packets,
            ),
            (
                format!("time series ({} rows)", show_count(self.series_rows as f64)),
                self.series,
            ),
            ("senders' transmission logs".to_string(), self.send_logs),
            ("event queue".to_string(), self.events),
            ("flows, links and tables".to_string(), self.state),
        ];
        terms.sort_by(|a, b| b.1.total_cmp(&a.1));
        terms
            .iter()
            .filter(|(_, v)| *v >= 1024.0 * 1024.0)
            .map(|(k, v)| format!("{k} {}", show_bytes(*v)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The senders' logs as last read, and the counters then.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LogScan {
    bytes: f64,
    injected: u64,
    events: u64,
}

/// Where and why a run stopped at its budget (summary.json's `stopped`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stopped {
    /// `limits.max_memory` or `limits.max_events`.
    pub field: String,
    pub message: String,
    /// Simulated time at the stop, seconds.
    pub at_s: f64,
    /// What the run held then, bytes (total and by term).
    pub memory_bytes: f64,
    pub memory: Memory,
    pub events: u64,
}

impl Simulation {
    /// Bytes of the senders' logs, read from every configured flow and running transfer.
    fn read_send_logs(&mut self) -> f64 {
        let flows: usize = self.flows.iter().map(|f| f.sender.retained_bytes()).sum();
        let xfers: usize = self
            .xfers
            .iter()
            .flatten()
            .map(|f| f.sender.retained_bytes())
            .sum();
        self.log_scan = LogScan {
            bytes: (flows + xfers) as f64,
            injected: self.cons.injected,
            events: self.events,
        };
        self.log_scan.bytes
    }

    /// What the run holds now ([`Memory`]). `fresh`: read the senders' logs now rather than bound them.
    pub(super) fn memory(&mut self, fresh: bool) -> Memory {
        let running: u64 = self.xsrc.iter().map(|s| s.active).sum();
        let endpoints = self.flows.len() as u64 + running;
        let stale = self.events - self.log_scan.events >= 64 * endpoints.max(1);
        let send_logs = if fresh || stale {
            self.read_send_logs()
        } else {
            self.log_scan.bytes
                + (self.cons.injected - self.log_scan.injected) as f64 * SEND_LOG_BYTES
        };
        let fct: usize = self.xsrc.iter().map(|s| s.fct.capacity()).sum();
        let trace_records = self.trace.as_ref().map_or(0, |t| t.len()) as u64;
        let (frows, lrows) = (self.fseries.rows() as f64, self.lseries.rows() as f64);
        Memory {
            state: self.mem_state,
            packets: self.slab.len() as f64 * PACKET_BYTES,
            transfers: running as f64 * FLOW_BYTES
                + self.xfers.capacity() as f64 * XFER_SLOT_BYTES
                + fct as f64 * FCT_RECORD_BYTES,
            trace: trace_records as f64 * TRACE_BYTES,
            series: frows * FLOW_ROW_BYTES + lrows * LINK_ROW_BYTES,
            events: self.ev.capacity() as f64 * EVENT_BYTES,
            send_logs,
            packets_n: self.slab.len() as u64,
            transfers_running: running,
            trace_records,
            series_rows: (frows + lrows) as u64,
        }
    }

    /// Whether the run has gone over its budget (checked every 65,536 events): events executed, or
    /// the memory it holds ([`Memory`]). Records where and why in `self.stopped`.
    pub(super) fn check_budget(&mut self) -> bool {
        let max_memory = self.budget.max_memory as f64;
        let (field, why) = if self.events > self.budget.max_events {
            (
                "limits.max_events",
                format!(
                    "the run went over its budget of {} events at t = {:.3} s of {:.3} s (the \
                     estimate it started on was too low: an algorithm sending far above its path's \
                     rate?)",
                    show_count(self.budget.max_events as f64),
                    to_secs(self.now),
                    to_secs(self.end)
                ),
            )
        } else {
            let mut mem = self.memory(false);
            if mem.total() > max_memory {
                // Never stop on the senders' logs' bound alone.
                mem = self.memory(true);
            }
            if mem.total() <= max_memory {
                return false;
            }
            (
                "limits.max_memory",
                format!(
                    "the run went over its memory budget of {} (limits.max_memory) at t = {:.3} s of \
                     {:.3} s, holding {}: {}",
                    show_bytes(max_memory),
                    to_secs(self.now),
                    to_secs(self.end),
                    show_bytes(mem.total()),
                    mem.breakdown()
                ),
            )
        };
        let raise = if field == "limits.max_events" {
            "raise [limits] max_events"
        } else {
            "raise [limits] max_memory"
        };
        let message = format!(
            "{why}; it stopped there and kept what it measured until then (summary \"stopped\"); \
             make the run smaller, or {raise}"
        );
        let memory = self.memory(true);
        self.stopped = Some(Stopped {
            field: field.to_string(),
            message,
            at_s: to_secs(self.now),
            memory_bytes: memory.total(),
            memory,
            events: self.events,
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_spec::{Budget, RunSpec};

    const MIB: f64 = 1024.0 * 1024.0;

    /// MaxNet's source on a droptail 10 Mbit/s dumbbell (no MaxNet router): it paces its 65,535-packet
    /// window every smoothed RTT and loses ~99.8 % of it. The estimate foresees this; the budget is
    /// set below it after the build, to test the running check alone.
    fn maxnet_flood(duration: f64, trace: bool) -> RunSpec {
        let link = serde_json::json!({"buffer_bytes": null, "buffer_pkts": 42, "delay": 0.0, "loss": 0.0,
            "loss_data_only": true, "loss_schedule": [], "queue": "droptail", "queue_params": {},
            "rate_bps": 1e7});
        serde_json::from_value(serde_json::json!({
            "duration": duration, "measure": [0.0, duration], "name": "t", "sample_interval": 0.1,
            "seed": 1, "trace_packets": trace, "traffic": [], "links": [link, link],
            "limits": {"max_memory": 1u64 << 40, "max_events": 1u64 << 40},
            "flows": [{"ack_path": [1], "cc": "maxnet", "extra_delay_fwd": 0.025,
                "extra_delay_rev": 0.025, "group": 0, "params": {}, "path": [0], "rtt": 0.05,
                "size": null, "start": 0.0, "stop": null,
                "transport": {"delack_timeout": 0.2, "delayed_ack": 1, "ecn": false,
                    "initial_cwnd": 10.0, "min_rto": 0.2, "mss": 1448, "packet_size": 1500,
                    "sack": true}}]}))
        .expect("a valid spec")
    }

    /// Runs `spec` under a memory budget of `max_memory`, set after the build's estimate check.
    fn run_under(spec: &RunSpec, max_memory: f64) -> crate::RunResult {
        let mut sim = Simulation::new(spec).expect("valid spec");
        sim.budget = Budget {
            max_memory: max_memory as u64,
            ..Budget::default()
        };
        sim.run(None)
    }

    /// Stopped at the budget, over it by less than one check interval's growth, the results cut there.
    fn assert_stopped(r: &crate::RunResult, budget: f64, largest: &str) -> Stopped {
        let s = r.stopped.clone().expect("stopped at the budget");
        assert_eq!(s.field, "limits.max_memory");
        assert!(s.message.contains(largest), "{}", s.message);
        assert!(s.message.contains("limits.max_memory"), "{}", s.message);
        assert!(s.memory_bytes > budget, "{s:?}");
        // One check interval (65,536 events) adds at most 2 trace records (64 B each) or one
        // transmission's log entries (at most 256 B) per event: 16 MiB.
        assert!(s.memory_bytes < budget + 16.0 * MIB, "{s:?}");
        assert!(
            (r.measure[1] - s.at_s).abs() < 1e-9,
            "{:?} {s:?}",
            r.measure
        );
        let t = &r.flow_series.columns["t"];
        assert!(!t.is_empty() && *t.last().unwrap() <= s.at_s + 1e-9);
        assert!(r.conservation.holds());
        assert_eq!(
            r.over_budget.as_ref().map(|e| e.field.as_str()),
            Some("limits.max_memory")
        );
        s
    }

    #[test]
    fn packet_trace_counts_toward_the_budget() {
        let budget = 48.0 * MIB;
        let r = run_under(&maxnet_flood(30.0, true), budget);
        let s = assert_stopped(&r, budget, "packet trace");
        assert_eq!(s.memory.trace_records, r.trace.len() as u64);
        assert!(s.memory.trace > s.memory.series + s.memory.packets + s.memory.events);
    }

    #[test]
    fn senders_logs_count_toward_the_budget() {
        let budget = 40.0 * MIB;
        let r = run_under(&maxnet_flood(60.0, false), budget);
        let s = assert_stopped(&r, budget, "senders' transmission logs");
        // What the logs hold per retransmission: bounded by the estimate's SEND_LOG_BYTES.
        let retx = r.flows[0].retransmits as f64;
        eprintln!(
            "send logs {} B over {retx} retransmissions: {} B each",
            s.memory.send_logs,
            s.memory.send_logs / retx
        );
        assert!(s.memory.send_logs > 16.0 * MIB, "{s:?}");
        assert!(
            s.memory.send_logs / retx < cclab_spec::estimate::SEND_LOG_BYTES,
            "{s:?}"
        );
    }

    #[test]
    fn the_event_budget_stops_a_run() {
        let mut sim = Simulation::new(&maxnet_flood(30.0, false)).expect("valid spec");
        sim.budget = Budget {
            max_events: 1_000_000,
            ..Budget::default()
        };
        let r = sim.run(None);
        let s = r.stopped.expect("stopped at the event budget");
        assert_eq!(s.field, "limits.max_events");
        assert!(
            s.message.contains("raise [limits] max_events"),
            "{}",
            s.message
        );
        // Checked every 65,536 events: stopped at the first check past the budget.
        assert!(
            s.events > 1_000_000 && s.events <= 1_000_000 + 65_536,
            "{}",
            s.events
        );
        assert!(s.at_s < 30.0 && (r.measure[1] - s.at_s).abs() < 1e-9);
    }

    #[test]
    fn within_its_budget_the_check_changes_nothing() {
        let spec = maxnet_flood(2.0, true);
        let a = Simulation::new(&spec).unwrap().run(None);
        let b = run_under(&spec, 1e12);
        assert!(a.stopped.is_none() && b.stopped.is_none());
        assert_eq!((a.events, a.trace.len()), (b.events, b.trace.len()));
        assert_eq!(
            serde_json::to_string(&a.flows).unwrap(),
            serde_json::to_string(&b.flows).unwrap()
        );
    }
}
