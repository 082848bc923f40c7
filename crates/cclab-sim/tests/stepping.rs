//! The stepping API (`Simulation::run_until`, `with_external`): stepping without intervening changes
//! nothing, and an external window is what the flow uses.

use cclab_sim::spec::RunSpec;
use cclab_sim::Simulation;
use std::path::Path;

fn golden_spec(name: &str) -> RunSpec {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/specs/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn result_json(mut r: cclab_sim::RunResult) -> String {
    r.wall_s = 0.0;
    serde_json::to_string(&r).unwrap()
}

/// Stepping at irregular intervals through part of a run and then `run` to the end gives the plain
/// run's result byte for byte (time series, counters, packet trace, event count): the pause events
/// change no other event's order. Specs: RED with a packet trace, Madison (own timers, cross
/// traffic), MaxNet (router state), CUBIC.
#[test]
fn stepping_then_run_equals_run() {
    for name in ["trace_red", "madison_d2", "maxnet_m2", "algo_cubic"] {
        let spec = golden_spec(name);
        let plain = result_json(Simulation::new(&spec).unwrap().run(None));
        let mut sim = Simulation::new(&spec).unwrap();
        let half = sim.end() / 2;
        let mut t = 0;
        let mut k = 0u64;
        while t < half {
            // 0, 1 ms, 2 ms, ... 9 ms apart, and repeats of the same time.
            t += (k % 10) * 1_000_000;
            k += 1;
            sim.run_until(t);
            assert_eq!(sim.now(), t.min(sim.end()));
        }
        let stepped = result_json(sim.run(None));
        assert_eq!(stepped, plain, "{name}");
    }
}

fn one_flow_spec(cross: bool) -> RunSpec {
    // 10 Mbit/s, 20 ms RTT, no random loss; buffer 17 packets. The minimum RTT is 21.24 ms (20 ms
    // + 1.2 ms data serialisation + 0.04 ms ACK serialisation), so the BDP is 17.7 packets.
    let mut v: serde_json::Value =
        serde_json::from_str(include_str!("golden/specs/algo_newreno.json")).unwrap();
    v["duration"] = 4.0.into();
    v["measure"] = serde_json::json!([0.0, 4.0]);
    for l in v["links"].as_array_mut().unwrap() {
        l["rate_bps"] = 10e6.into();
        l["buffer_pkts"] = 17.into();
        l["queue"] = "droptail".into();
        l["queue_params"] = serde_json::json!({});
        l["loss"] = 0.0.into();
    }
    let flows = v["flows"].as_array_mut().unwrap();
    flows.truncate(if cross { 2 } else { 1 });
    for f in flows.iter_mut() {
        f["start"] = 0.0.into();
        f["rtt"] = 0.02.into();
        f["extra_delay_fwd"] = 0.01.into();
        f["extra_delay_rev"] = 0.01.into();
        f["cc"] = "newreno".into();
        f["params"] = serde_json::json!({});
        // An ACK per packet (the spec's era transport): the counts below are per packet. The golden
        // spec carries the default transport, Linux's, whose receiver ACKs every second packet.
        let t = f["transport"].as_object_mut().unwrap();
        for k in ["receiver", "loss_detection", "dsack", "undo"] {
            t.remove(k);
        }
    }
    serde_json::from_value(v).unwrap()
}

#[test]
fn external_window_is_what_the_flow_uses() {
    let spec = one_flow_spec(false);
    let (mut sim, ctl) = Simulation::with_external(&spec, 0).unwrap();
    ctl.set_cwnd(18.0);
    sim.wake_sender(0);
    let mut last_q = 0;
    for k in 1..=100u64 {
        sim.run_until(k * 20_000_000);
        let p = sim.flow_probe(0);
        assert_eq!(p.cwnd, 18.0);
        assert!(p.in_flight <= 18, "{}", p.in_flight);
        last_q = sim.link_probe(0).queue_pkts;
        let c = ctl.take_counters();
        if k > 5 {
            // The link's rate: 16.7 packets per 20 ms.
            assert!((16..=17).contains(&c.acked_pkts), "{k}: {c:?}");
            assert!(
                c.rtt_min_ns >= 20_000_000 && c.rtt_max_ns < 22_500_000,
                "{c:?}"
            );
        }
    }
    // A window of 18 packets over a BDP of 17.7: at most one packet queued, no losses.
    assert!(last_q <= 1);
    let p = sim.flow_probe(0);
    assert_eq!((p.retransmits, p.dropped), (0, 0));
    let l = sim.link_probe(0);
    let util = l.tx_bytes as f64 * 8.0 / (10e6 * 2.0);
    assert!(util > 0.97, "{util}");
    // Far above the BDP + buffer (17.7 + 17): the queue fills and packets are lost.
    ctl.set_cwnd(100.0);
    sim.wake_sender(0);
    let p0 = sim.flow_probe(0);
    sim.run_until(sim.end());
    assert!(sim.flow_probe(0).dropped > p0.dropped);
    assert!(sim.link_probe(0).queue_pkts >= 10);
}

#[test]
fn external_rate_paces() {
    let spec = one_flow_spec(false);
    let (mut sim, ctl) = Simulation::with_external(&spec, 0).unwrap();
    ctl.set_rate(5e6, 2.0);
    sim.wake_sender(0);
    sim.run_until(1_000_000_000);
    let a = sim.flow_probe(0).sent_bytes;
    sim.run_until(3_000_000_000);
    let b = sim.flow_probe(0).sent_bytes;
    // 5 Mbit/s for 2 s = 1.25 MB on the wire (± one packet).
    assert!(((b - a) as f64 - 1.25e6).abs() <= 1500.0, "{}", b - a);
    // Window cap: 2 × 5 Mbit/s × srtt / 12 000 bit, srtt = 20 ms + 1.2 ms (data serialisation) +
    // 0.0416 ms (ACK) = 21.2416 ms on an empty queue: 17.70 packets.
    assert!(
        (sim.flow_probe(0).cwnd - 17.7027).abs() < 0.01,
        "{:?}",
        sim.flow_probe(0)
    );
}

#[test]
fn agent_out_of_range_names_the_field() {
    let spec = one_flow_spec(true);
    let e = Simulation::with_external(&spec, 2).err().unwrap();
    assert_eq!(e.field, "agent_flow");
    assert_eq!(e.message, "must be a flow index in [0, 2), got 2");
}

/// Same spec and seed, same actions: identical probes.
#[test]
fn stepped_runs_are_deterministic() {
    let spec = one_flow_spec(true);
    let run = || {
        let (mut sim, ctl) = Simulation::with_external(&spec, 1).unwrap();
        let mut out = Vec::new();
        for k in 1..=100u64 {
            ctl.set_cwnd(5.0 + (k % 7) as f64 * 4.0);
            sim.wake_sender(1);
            sim.run_until(k * 10_000_000);
            out.push((sim.flow_probe(1), sim.link_probe(0), ctl.take_counters()));
        }
        out
    };
    assert_eq!(run(), run());
}

/// Stopping early (`run_until_or`) at arbitrary events, as an ACK-by-ACK driver does, and then `run`
/// gives the plain run's result byte for byte (time series, counters, packet trace, event count): no
/// event moves, and a `run_until` past the last target skips the pauses early stops left queued (which
/// `run` would pop as no-op events, counted).
#[test]
fn early_stops_then_run_equals_run() {
    for name in ["trace_red", "algo_cubic"] {
        let spec = golden_spec(name);
        let mut sim = Simulation::new(&spec).unwrap();
        let half = sim.end() / 2;
        let mut n = 0u64;
        let mut stops = 0;
        while sim.now() < half {
            // Stop after every 7th event, or at most 3 ms on.
            let until = sim.now() + 3_000_000;
            if sim.run_until_or(until, || {
                n += 1;
                n.is_multiple_of(7)
            }) {
                stops += 1;
            }
        }
        assert!(stops > 100, "{name}: {stops} early stops");
        // Past the last target: the pauses early stops left queued are skipped, uncounted.
        sim.run_until(sim.now() + 3_000_001);
        let (stepped, plain) = (sim.run(None), Simulation::new(&spec).unwrap().run(None));
        assert_eq!(stepped.events, plain.events, "{name}");
        assert_eq!(result_json(stepped), result_json(plain), "{name}");
    }
}

/// ACK by ACK: each early stop comes right after one ACK of the driven flow, and two driven flows
/// each have their own handle.
#[test]
fn ack_by_ack_and_two_driven_flows() {
    let spec = one_flow_spec(true);
    let (mut sim, ctls) = Simulation::with_externals(&spec, &[0, 1]).unwrap();
    assert_eq!(ctls.len(), 2);
    ctls[0].set_cwnd(10.0);
    ctls[1].set_cwnd(20.0);
    let mut acks = 0;
    for _ in 0..200 {
        let c = &ctls[0];
        let until = sim.now() + 100_000_000;
        assert!(sim.run_until_or(until, || c.acks() > 0));
        assert_eq!(c.take_counters().acks, 1);
        acks += 1;
    }
    assert_eq!(acks, 200);
    assert_eq!(sim.flow_probe(0).cwnd, 10.0);
    assert_eq!(sim.flow_probe(1).cwnd, 20.0);
    assert!(ctls[1].take_counters().acks > 0);
    assert!(Simulation::with_externals(&spec, &[1, 1]).is_err());
}
