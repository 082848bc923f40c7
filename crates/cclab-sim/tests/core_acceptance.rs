//! Simulator core acceptance (measured values in docs/algorithms/newreno.md): NewReno against theory
//! (Mathis), utilisation, fairness over RED and drop-tail, RTT bias, determinism. Every run goes through
//! `common::run`, which asserts packet conservation.
mod common;
use cclab_sim::spec::StartSpec;
use common::*;

/// Mathis et al. 1997: goodput = MSS·√(3/2) / (RTT·√p) under random loss p.
fn mathis(mss: f64, rtt: f64, p: f64) -> f64 {
    mss * 8.0 * 1.5f64.sqrt() / (rtt * p.sqrt())
}

#[test]
fn newreno_goodput_matches_mathis_under_random_loss() {
    // 100 Mbit/s is far above the loss-limited rate (9 and 2.8 Mbit/s), so loss alone limits the flow.
    // 300 s gives ~2,300 (p = 1e-3) and ~7,000 (p = 1e-2) loss events: the mean is well estimated.
    // 25% tolerance (the acceptance bound): Mathis's constant assumes periodic loss and no timeouts;
    // random loss raises throughput a little, timeouts at p = 1e-2 lower it.
    for (p, seed) in [(0.001, 1), (0.01, 2)] {
        let rate = 100e6;
        let mut spec = dumbbell(
            rate,
            1000,
            "droptail",
            vec![flow("newreno", 0.05, 0)],
            300.0,
            seed,
        );
        spec.links[0].loss = p;
        spec.measure = [20.0, 300.0];
        let r = run(&spec);
        let want = mathis(1448.0, 0.05, p);
        let got = r.flows[0].goodput_bps;
        eprintln!(
            "p={p}: goodput {:.3} Mbit/s, Mathis {:.3} Mbit/s, ratio {:.3}, timeouts {}",
            got / 1e6,
            want / 1e6,
            got / want,
            r.flows[0].timeouts
        );
        assert!(
            (got / want - 1.0).abs() <= 0.25,
            "p={p}: {got} vs Mathis {want}"
        );
        assert_eq!(
            r.links[0].drops, 0,
            "loss, not the queue, must limit the flow"
        );
    }
}

#[test]
fn one_flow_fills_a_bdp_buffered_link() {
    let rate = 100e6;
    let mut spec = dumbbell(
        rate,
        bdp_pkts(rate, 0.04),
        "droptail",
        vec![flow("newreno", 0.04, 0)],
        60.0,
        1,
    );
    spec.measure = [10.0, 60.0]; // after slow start
    let r = run(&spec);
    eprintln!("utilisation {:.4}", r.links[0].utilization);
    // A BDP buffer keeps a Reno flow's queue from draining after a halving: utilisation ~1.
    assert!(r.links[0].utilization >= 0.95);
}

fn goodputs(r: &cclab_sim::RunResult) -> Vec<f64> {
    r.flows.iter().map(|f| f.goodput_bps).collect()
}

fn two_flows(queue: &str, seed: u64, duration: f64) -> cclab_sim::RunResult {
    let rate = 100e6;
    let mut flows = vec![flow("newreno", 0.04, 0), flow("newreno", 0.04, 0)];
    for f in &mut flows {
        f.start = StartSpec::Uniform([0.0, 1.0]);
    }
    let mut spec = dumbbell(rate, bdp_pkts(rate, 0.04), queue, flows, duration, seed);
    spec.measure = [10.0, duration];
    run(&spec)
}

#[test]
fn two_flows_are_fair_over_red() {
    // Acceptance: Jain ≥ 0.95 averaged over 5 seeds, 100 s. RED's random early drops desynchronise the
    // flows, so both see the same loss rate and the same RTT: equal shares.
    let js: Vec<f64> = (1..=5)
        .map(|s| jain(&goodputs(&two_flows("red", s, 100.0))))
        .collect();
    let mean = js.iter().sum::<f64>() / js.len() as f64;
    eprintln!("RED Jain per seed {js:?}, mean {mean:.4}");
    assert!(mean >= 0.95);
    // Over drop-tail, report the value: phase effects are real (ns-3 3.37 gives 0.87 on 2 flows, BDP
    // buffer, 60 s); assert only that it is a valid index.
    let dt: Vec<f64> = (1..=5)
        .map(|s| jain(&goodputs(&two_flows("droptail", s, 60.0))))
        .collect();
    eprintln!("drop-tail Jain per seed {dt:?}");
    assert!(dt.iter().all(|j| (0.5..=1.0).contains(j)));
}

fn rtt_bias(queue: &str, seed: u64) -> f64 {
    let rate = 100e6;
    let mut flows = vec![
        flow("newreno", 0.04, 0),
        flow("newreno", 0.04, 0),
        flow("newreno", 0.16, 1),
        flow("newreno", 0.16, 1),
    ];
    for f in &mut flows {
        f.start = StartSpec::Uniform([0.0, 1.0]);
    }
    let mut spec = dumbbell(rate, bdp_pkts(rate, 0.16), queue, flows, 100.0, seed);
    spec.measure = [10.0, 100.0];
    let r = run(&spec);
    let g = goodputs(&r);
    (g[0] + g[1]) / (g[2] + g[3])
}

#[test]
fn short_rtt_flows_win_over_red_and_drop_tail() {
    // With equal loss rates (RED), Reno's rate ∝ 1/RTT·√p gives 4× for a 4× RTT ratio in theory; queueing
    // delay shrinks the effective ratio (ns-3 3.37: ≈ 3.9). Acceptance: ≥ 2.
    let red: Vec<f64> = (1..=3).map(|s| rtt_bias("red", s)).collect();
    eprintln!("RED short/long goodput ratio per seed {red:?}");
    let mean = red.iter().sum::<f64>() / red.len() as f64;
    assert!(mean >= 2.0, "{red:?}");
    // Over drop-tail the ratio is not a stable number (ns-3: 2.9 to 10.3 across seeds); it exists.
    let dt = rtt_bias("droptail", 1);
    eprintln!("drop-tail short/long goodput ratio {dt:.2}");
    assert!(dt > 1.2);
}

#[test]
fn same_seed_same_result_other_seed_differs() {
    let mk = |seed| {
        let mut s = dumbbell(
            50e6,
            100,
            "red",
            vec![flow("newreno", 0.03, 0), flow("newreno", 0.07, 1)],
            10.0,
            seed,
        );
        s.flows[0].start = StartSpec::Uniform([0.0, 1.0]);
        s.links[0].loss = 1e-4;
        s
    };
    let strip = |mut r: cclab_sim::RunResult| {
        r.wall_s = 0.0;
        serde_json::to_string(&r).unwrap()
    };
    let a = strip(run(&mk(7)));
    let b = strip(run(&mk(7)));
    let c = strip(run(&mk(8)));
    assert_eq!(
        a, b,
        "same scenario + seed must give byte-identical results"
    );
    assert_ne!(a, c, "another seed must give different results");
}
