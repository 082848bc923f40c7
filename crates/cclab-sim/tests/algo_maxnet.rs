//! MaxNet (router price AQM + source) in the simulator: experiments M1, M3, M4 and M6 of
//! docs/experiments.md at reduced size (what each test asserts: docs/algorithms/maxnet.md, "Results").
mod common;
use cclab_sim::spec::TrafficSpec;
use common::*;

const MU: f64 = 0.94;

fn maxnet_dumbbell(
    flows: Vec<cclab_sim::spec::FlowSpec>,
    duration: f64,
) -> cclab_sim::spec::RunSpec {
    let rate = 100e6;
    let mut s = dumbbell(rate, bdp_pkts(rate, 0.056), "maxnet", flows, duration, 1);
    s.measure = [5.0, duration];
    s
}

#[test]
fn one_flow_runs_at_mu_with_an_empty_queue() {
    let r = run(&maxnet_dumbbell(vec![flow("maxnet", 0.028, 0)], 20.0));
    let l = &r.links[0];
    eprintln!(
        "maxnet 1 flow: utilisation {:.4}, mean queue {:.3}, drops {}",
        l.utilization, l.mean_queue_pkts, l.drops
    );
    // The price integrator drives the arrival rate to μ·C; the virtual queue, not the real one, holds
    // the price, so the real queue stays near zero.
    assert!((l.utilization - MU).abs() <= 0.03);
    assert!(l.mean_queue_pkts < 2.0);
    assert_eq!(l.drops, 0);
}

#[test]
fn rtt_fair_two_long_one_short() {
    let flows = vec![
        flow("maxnet", 0.056, 0),
        flow("maxnet", 0.056, 0),
        flow("maxnet", 0.028, 1),
    ];
    let r = run(&maxnet_dumbbell(flows, 20.0));
    let g: Vec<f64> = r.flows.iter().map(|f| f.goodput_bps).collect();
    eprintln!("maxnet 56/56/28 ms goodputs {g:?}, Jain {:.4}", jain(&g));
    // x = x_max·exp(−q/T) does not depend on the RTT: equal shares.
    assert!(jain(&g) >= 0.95);
}

#[test]
fn yields_to_unresponsive_udp_within_two_seconds() {
    let rate = 100e6;
    let udp = 0.47 * rate;
    let mut s = maxnet_dumbbell(vec![flow("maxnet", 0.028, 0)], 25.0);
    s.traffic.push(TrafficSpec {
        stop: Some(25.0),
        ..traffic("cbr", udp, 10.0)
    });
    let r = run(&s);
    let c = &r.flow_series.columns;
    let (t, sent) = (&c["t"], &c["sent_bytes"]);
    // Wire rate of the MaxNet flow from 12 s (2 s after the UDP flow joins) to 25 s.
    let at = |x: f64| sent[t.iter().position(|v| (*v - x).abs() < 1e-6).unwrap()];
    let wire = (at(25.0) - at(12.0)) * 8.0 / 13.0;
    let want = MU * rate - udp;
    eprintln!(
        "maxnet with 47 Mbit/s UDP: {:.2} Mbit/s, μC − UDP = {:.2}",
        wire / 1e6,
        want / 1e6
    );
    assert!((wire / want - 1.0).abs() <= 0.10);
}

#[test]
fn parking_lot_rates_are_max_min_fair() {
    // Link 0: 100 Mbit/s, link 1: 50 Mbit/s; flow A crosses both, B only link 0, C only link 1.
    // Max-min at μC: link 1 (47 Mbit/s) is the tightest: A = C = 23.5; B takes the rest of link 0: 70.5.
    let mut spec = dumbbell(100e6, 500, "maxnet", vec![], 20.0, 1);
    spec.links = vec![
        link(100e6, 500, "maxnet"),
        link(50e6, 500, "maxnet"),
        link(100e6, 500, "droptail"),
        link(50e6, 500, "droptail"),
    ];
    let mut a = flow("maxnet", 0.04, 0);
    a.path = vec![0, 1];
    a.ack_path = vec![3, 2];
    let mut b = flow("maxnet", 0.04, 1);
    b.path = vec![0];
    b.ack_path = vec![2];
    let mut c = flow("maxnet", 0.04, 2);
    c.path = vec![1];
    c.ack_path = vec![3];
    spec.flows = vec![a, b, c];
    spec.measure = [5.0, 20.0];
    let r = run(&spec);
    let got: Vec<f64> = r.flows.iter().map(|f| f.throughput_bps).collect();
    let want = [23.5e6, 70.5e6, 23.5e6];
    eprintln!(
        "parking lot wire rates {:?} Mbit/s, max-min {:?}",
        got.iter().map(|x| x / 1e6).collect::<Vec<_>>(),
        want.map(|x| x / 1e6)
    );
    for (g, w) in got.iter().zip(want) {
        assert!((g / w - 1.0).abs() <= 0.10, "{g} vs {w}");
    }
}
