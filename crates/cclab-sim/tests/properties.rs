//! Property: random valid small scenarios never panic and always conserve packets.
mod common;
use cclab_sim::spec::{StartSpec, TrafficSpec};
use common::*;
use proptest::prelude::*;

fn arb_spec() -> impl Strategy<Value = cclab_sim::spec::RunSpec> {
    (
        1u64..1000,
        prop::sample::select(vec!["droptail", "red"]),
        1e6f64..50e6,
        2u32..200,
        prop::collection::vec(
            (
                0.002f64..0.3,
                prop::sample::select(vec!["newreno", "reno", "sack"]),
                0u32..3,
                prop::option::of(1_000u64..200_000),
            ),
            1..5,
        ),
        0.0f64..0.05,
        prop::option::of((
            prop::sample::select(vec!["cbr", "poisson", "onoff"]),
            0.1f64..0.9,
            any::<bool>(),
        )),
        1u32..3,
    )
        .prop_map(|(seed, queue, rate, buf, flows, loss, cross, delack)| {
            let fl = flows
                .into_iter()
                .enumerate()
                .map(|(i, (rtt, cc, start, size))| {
                    let mut f = flow(cc, rtt, i as u32);
                    f.start = if start == 0 {
                        StartSpec::At(0.0)
                    } else {
                        StartSpec::Uniform([0.0, start as f64])
                    };
                    f.size = size;
                    f.transport.delayed_ack = delack;
                    f
                })
                .collect();
            let mut s = dumbbell(rate, buf, queue, fl, 3.0, seed);
            s.links[0].loss = loss;
            if let Some((kind, frac, reverse)) = cross {
                s.traffic.push(TrafficSpec {
                    kind: kind.into(),
                    rate_bps: rate * frac,
                    packet_size: 1000,
                    start: 0.5,
                    stop: Some(2.5),
                    path: vec![if reverse { 1 } else { 0 }],
                    mean_on: None,
                    mean_off: None,
                    shape: None,
                    mean_size: None,
                    flow: None,
                });
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn random_scenarios_conserve_packets(spec in arb_spec()) {
        let r = run(&spec); // asserts conservation
        for f in &r.flows {
            prop_assert!(f.goodput_bps.is_finite() && f.goodput_bps >= 0.0);
            prop_assert!(f.goodput_bps <= spec.links[0].rate_bps * 1.0001 * 1448.0 / 1500.0 + 1.0);
        }
        prop_assert!(r.links[0].utilization <= 1.0 + 1e-9);
    }
}
