//! The memory budget: the estimate covers the two runs that went past it
//! (transfers offered far beyond a link's capacity; MaxNet's source without a MaxNet router, with a
//! packet trace), and a run the estimate misjudges stops at its budget while running, with what it
//! measured until then. (The running check's other terms are tested in `src/sim/budget.rs`.)

mod common;
use cclab_sim::spec::{Budget, RunSpec, TrafficSpec};
use cclab_sim::Simulation;
use common::*;

const MIB: f64 = 1024.0 * 1024.0;

/// `rate_bps` of short transfers of `mean_size` offered to a dumbbell of `link_bps` whose bottleneck
/// loses `loss` of the packets at random.
fn transfers(link_bps: f64, loss: f64, rate_bps: f64, mean_size: f64, duration: f64) -> RunSpec {
    let mut s = dumbbell(
        link_bps,
        100,
        "droptail",
        vec![flow("newreno", 0.05, 0)],
        duration,
        1,
    );
    s.links[0].loss = loss;
    s.traffic.push(TrafficSpec {
        mean_size: Some(mean_size),
        flow: Some(Box::new(flow("newreno", 0.05, 0))),
        ..traffic("transfers", rate_bps, 0.0)
    });
    s
}

/// The red team's case, shorter: 1 Gbit/s of 100 kB transfers offered to 1 Mbit/s; ~1 250 arrive a
/// second and none finishes.
fn transfer_flood(duration: f64) -> RunSpec {
    transfers(1e6, 0.0, 1e9, 100_000.0, duration)
}

/// MaxNet's source on a droptail 10 Mbit/s dumbbell (no MaxNet router).
fn maxnet_flood(duration: f64, trace: bool) -> RunSpec {
    let mut s = dumbbell(
        10e6,
        42,
        "droptail",
        vec![flow("maxnet", 0.05, 0)],
        duration,
        1,
    );
    s.trace_packets = trace;
    s
}

fn with_budget(mut s: RunSpec, max_memory: f64) -> RunSpec {
    s.limits = Some(Budget {
        max_memory: max_memory as u64,
        ..Budget::default()
    });
    s
}

/// Runs to the end or to the budget, returning the result with `stopped` set or not.
fn run_partial(spec: &RunSpec) -> cclab_sim::RunResult {
    Simulation::new(spec).expect("valid spec").run(None)
}

#[test]
fn transfers_the_estimate_misjudges_stop_at_the_budget() {
    // 200 Mbit/s of 10 kB transfers on a 1 Gbit/s link that loses 90 % of its packets: the estimate
    // sees the link carry them all (it does not model random loss), but they stall in RTO backoff
    // and pile up, ~2 500 a second.
    let budget = 48.0 * MIB;
    let spec = with_budget(transfers(1e9, 0.9, 2e8, 10_000.0, 60.0), budget);
    assert!(cclab_sim::spec::estimate::estimate(&spec).memory < budget);
    let e = cclab_sim::run(&spec, None).expect_err("over its memory budget while running");
    assert_eq!(e.field, "limits.max_memory");
    assert!(e.message.contains("running transfers"), "{}", e.message);
    let r = run_partial(&spec);
    let s = r.stopped.as_ref().expect("stopped at the budget");
    assert!(s.at_s > 0.0 && s.at_s < 60.0, "{s:?}");
    // Over the budget by at most one check interval's growth (1 024 transfers of 6 kB, or 65 536
    // events' packets and log entries, whichever comes first).
    assert!(
        s.memory_bytes > budget && s.memory_bytes < budget + 8.0 * MIB,
        "{s:?}"
    );
    assert!(s.memory.transfers > s.memory.packets + s.memory.series + s.memory.send_logs);
    assert_eq!(r.transfers[0].unfinished, s.memory.transfers_running);
    // What it measured until then is kept: the window is cut at the stop, the series end there.
    assert!((r.measure[1] - s.at_s).abs() < 1e-9, "{:?}", r.measure);
    let t = &r.flow_series.columns["t"];
    assert!(!t.is_empty() && *t.last().unwrap() <= s.at_s + 1e-9);
    assert!(r.conservation.holds());
    assert!(r.flows[0].sent_pkts > 0);
}

#[test]
fn the_estimate_covers_pending_transfers() {
    let spec = transfer_flood(10.0);
    let e = cclab_sim::spec::estimate::estimate(&spec);
    let r = run_partial(&spec);
    let unfinished = r.transfers[0].unfinished as f64;
    // ~12 500 arrive in 10 s (measured through `cclab run`: 12 571), none finishes.
    assert!(unfinished > 10_000.0, "{unfinished}");
    // Estimated: the arrivals beyond what the link carries (here 99.9 % of them) for the whole run,
    // plus 20 RTTs' worth in progress: above the count, by less than 20 %.
    assert!(
        e.transfers_running >= unfinished && e.transfers_running < 1.2 * unfinished,
        "{} vs {unfinished}",
        e.transfers_running
    );
    // 160 s under a 1 GiB budget (the red team's run reached 1.79 GB in 60 s): refused before it
    // starts, the message naming the term.
    let refused = with_budget(transfer_flood(160.0), 1024.0 * MIB);
    let err = Simulation::new(&refused)
        .err()
        .expect("refused by the estimate");
    assert_eq!(err.field, "limits.max_memory");
    assert!(err.message.contains("running transfers"), "{}", err.message);
}

#[test]
fn the_estimate_covers_a_flooding_senders_trace() {
    let spec = maxnet_flood(3.0, true);
    let e = cclab_sim::spec::estimate::estimate(&spec);
    let r = run_partial(&spec);
    let records = r.trace.len() as f64;
    // The estimate paces the whole window over the base RTT plus the full buffer; the source's
    // smoothed RTT is a little above that: the estimate is above the count, within 3x.
    assert!(
        e.trace_records >= records && e.trace_records < 3.0 * records,
        "{} vs {records}",
        e.trace_records
    );
    assert!(e.events >= r.events as f64, "{} vs {}", e.events, r.events);
    let refused = with_budget(maxnet_flood(60.0, true), 1024.0 * MIB);
    let err = Simulation::new(&refused)
        .err()
        .expect("refused by the estimate");
    assert!(err.message.contains("packet trace"), "{}", err.message);
}

#[test]
fn ordinary_runs_are_not_stopped_and_unchanged() {
    // Transfers the link carries: the running check only reads, and a huge budget changes nothing.
    let spec = transfers(1e8, 0.0, 4e7, 100_000.0, 5.0);
    let a = run_partial(&spec);
    let b = run_partial(&with_budget(spec, 1e15));
    assert!(a.stopped.is_none() && b.stopped.is_none());
    assert!(a.transfers[0].completed > 0);
    assert_eq!(a.events, b.events);
    assert_eq!(
        serde_json::to_string(&a.flows).unwrap(),
        serde_json::to_string(&b.flows).unwrap()
    );
}

#[test]
fn a_stepped_run_keeps_its_budget() {
    // The misjudged transfers above, run in steps of 100 ms as the Gym environment runs: it stops at
    // its budget as `run` does, says where, and every later step runs nothing.
    let budget = 48.0 * MIB;
    let spec = with_budget(transfers(1e9, 0.9, 2e8, 10_000.0, 60.0), budget);
    let mut sim = Simulation::new(&spec).expect("valid spec");
    let mut t = 0;
    while sim.over_budget().is_none() && sim.now() < sim.end() {
        t += 100_000_000;
        sim.run_until(t);
    }
    let (field, message) = sim.over_budget().expect("stopped at the budget");
    assert_eq!(field, "limits.max_memory");
    assert!(message.contains("running transfers"), "{message}");
    let (now, events) = (sim.now(), sim.events());
    assert!(
        now < 60_000_000_000,
        "stopped before the run's 60 s, at {now} ns"
    );
    sim.run_until(60_000_000_000);
    assert_eq!(
        (sim.now(), sim.events()),
        (now, events),
        "a later step runs nothing"
    );
}
