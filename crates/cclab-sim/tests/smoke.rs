mod common;
use common::*;

#[test]
fn one_newreno_flow_fills_the_link() {
    let rate = 100e6;
    let mut spec = dumbbell(rate, bdp_pkts(rate, 0.04), "droptail", vec![flow("newreno", 0.04, 0)], 20.0, 1);
    spec.measure = [5.0, 20.0];
    let r = run(&spec);
    eprintln!("{:#?}", r.flows[0]);
    eprintln!("{:#?}", r.links[0]);
    eprintln!("events {} wall {:.3}s", r.events, r.wall_s);
    assert!(r.links[0].utilization > 0.9);
}
