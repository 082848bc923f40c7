//! Hybla in the simulator (docs/algorithms/hybla.md): a 25 ms and a 200 ms flow share a RED bottleneck.
//! Hybla makes the long flow's window grow ρ² = 64 times faster per RTT, so both rates grow at the same
//! pace in time and the goodput ratio stays near 1, where NewReno's grows with the RTT ratio.
//!
//! Scenario choice: ρ is fixed by the smallest SRTT (≈ the propagation RTT), so Hybla equalises the
//! rates only while the short flow's RTT stays near RTT0 = 25 ms. The buffer is therefore one BDP of the
//! *short* path (104 packets at 50 Mbit/s: RED's average queue ≈ 13 packets = 3 ms). With a buffer of
//! one BDP of the long path (167 packets at 10 Mbit/s, a 58 ms mean queue) the short flow's real RTT is
//! ≈ 66 ms and Hybla over-compensates: measured short/long 0.43, 0.28, 0.36 over seeds 1–3
//! (docs/algorithms/hybla.md), which a one-sided "≤ 1.5" would have passed.
mod common;
use common::*;

fn ratio(cc: &str, seed: u64) -> (f64, f64) {
    let rate = 50e6;
    let flows = vec![flow(cc, 0.025, 0), flow(cc, 0.2, 1)];
    let mut spec = dumbbell(rate, bdp_pkts(rate, 0.025), "red", flows, 120.0, seed);
    // 30 s of warm-up: NewReno's 200 ms flow needs ~20 s to leave its first slow-start overshoot.
    spec.measure = [30.0, 120.0];
    let r = run(&spec);
    let g: Vec<f64> = r.flows.iter().map(|f| f.goodput_bps).collect();
    (g[0] / g[1], r.links[0].utilization)
}

#[test]
fn hybla_is_rtt_fair_where_newreno_is_not() {
    // Mean over 5 seeds: single runs of two flows over RED swing by ±10 % with the drop pattern.
    let mean = |cc: &str| {
        let v: Vec<(f64, f64)> = (1..=5).map(|s| ratio(cc, s)).collect();
        eprintln!(
            "{cc}: short/long goodput ratios {:?}, link utilisation {:?}",
            v.iter()
                .map(|x| (x.0 * 100.0).round() / 100.0)
                .collect::<Vec<_>>(),
            v.iter()
                .map(|x| (x.1 * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>()
        );
        (
            v.iter().map(|x| x.0).sum::<f64>() / 5.0,
            v.iter().map(|x| x.1).fold(1.0, f64::min),
        )
    };
    let (hybla, hybla_util) = mean("hybla");
    let (reno, _) = mean("newreno");
    eprintln!("hybla ratio {hybla:.3} (utilisation ≥ {hybla_util:.3}), newreno ratio {reno:.3}");
    // Acceptance: Hybla ≤ 1.5, NewReno on the same scenario ≥ 3. Read both ways for Hybla: RTT fairness
    // means neither flow gets more than 1.5× the other.
    assert!(
        (1.0 / 1.5..=1.5).contains(&hybla),
        "Hybla short/long {hybla}"
    );
    assert!(reno >= 3.0, "NewReno short/long {reno}");
    // Not an acceptance number, a regression guard: unpaced Hybla windows leave the sender in bursts
    // of hundreds of packets that a 104-packet buffer cannot absorb, and the link runs at ≈ 0.61
    // (NewReno: 0.89; measured, docs/algorithms/hybla.md). Below 0.5 something else broke.
    assert!(hybla_util > 0.5, "utilisation {hybla_util}");
}
