//! Westwood+ in the simulator (docs/algorithms/westwood.md): its bandwidth estimate tracks the
//! bottleneck, and under random (non-congestion) loss it keeps a window set from that estimate instead of
//! halving.
mod common;
use common::*;

#[test]
fn westwood_estimates_the_bottleneck_rate() {
    let rate = 20e6;
    let mut spec = dumbbell(
        rate,
        bdp_pkts(rate, 0.05),
        "droptail",
        vec![flow("westwood", 0.05, 0)],
        60.0,
        1,
    );
    spec.measure = [20.0, 60.0];
    let r = run(&spec);
    let s = &r.flow_series.columns;
    let (t, bwe) = (&s["t"], &s["bwe_bps"]);
    let steady: Vec<f64> = t
        .iter()
        .zip(bwe)
        .filter(|(t, _)| **t >= 20.0)
        .map(|(_, b)| *b)
        .collect();
    let mean = steady.iter().sum::<f64>() / steady.len() as f64;
    // The estimate counts payload: the link carries 20 Mbit/s × 1448/1500 of it when full.
    let payload = rate * 1448.0 / 1500.0;
    eprintln!(
        "westwood: mean BWE {:.2} Mbit/s (payload capacity {:.2}), min {:.2}, utilisation {:.3}",
        mean / 1e6,
        payload / 1e6,
        steady.iter().cloned().fold(f64::INFINITY, f64::min) / 1e6,
        r.links[0].utilization
    );
    // Acceptance: within 10 % of the bottleneck rate in steady state (the mean; after each loss the
    // delivery rate dips for about an RTT, which the two 7/8 filters smooth).
    assert!((mean / payload - 1.0).abs() < 0.10, "BWE {mean}");
    assert!(r.links[0].utilization > 0.9);
}

#[test]
fn westwood_beats_newreno_under_random_loss() {
    // 100 Mbit/s, 100 ms, 0.5 % random loss on data packets: loss, not capacity, limits both.
    let goodput = |cc: &str| {
        let mut spec = dumbbell(
            100e6,
            bdp_pkts(100e6, 0.1),
            "droptail",
            vec![flow(cc, 0.1, 0)],
            120.0,
            1,
        );
        spec.links[0].loss = 0.005;
        spec.measure = [20.0, 120.0];
        run(&spec).flows[0].goodput_bps
    };
    let (w, n) = (goodput("westwood"), goodput("newreno"));
    // Mathis for NewReno: 1448·8·√1.5/(0.1·√0.005) = 2.0 Mbit/s.
    eprintln!(
        "0.5 % loss: westwood {:.2} Mbit/s, newreno {:.2} Mbit/s, ratio {:.2}",
        w / 1e6,
        n / 1e6,
        w / n
    );
    assert!(w >= 2.0 * n, "westwood {w} vs newreno {n}");
}
