//! Vegas in the simulator: one flow with a large buffer keeps between α and β packets queued, no drops.
mod common;
use common::*;

#[test]
fn vegas_holds_alpha_to_beta_packets_in_the_queue() {
    let rate = 20e6;
    let mut spec = dumbbell(
        rate,
        1000,
        "droptail",
        vec![flow("vegas", 0.05, 0)],
        40.0,
        1,
    );
    spec.measure = [15.0, 40.0];
    let r = run(&spec);
    let l = &r.links[0];
    eprintln!(
        "vegas: mean queue {:.2} pkts, max {}, drops {}, utilisation {:.3}",
        l.mean_queue_pkts, l.max_queue_pkts, l.drops, l.utilization
    );
    assert_eq!(r.flows[0].dropped_pkts, 0);
    // diff counts this flow's packets in the queue; α = 2, β = 4. The time-average can sit slightly
    // outside because the window moves by whole packets once per RTT: allow ±0.5 packet.
    assert!(
        l.mean_queue_pkts >= 1.5 && l.mean_queue_pkts <= 4.5,
        "{}",
        l.mean_queue_pkts
    );
    assert!(l.utilization > 0.95);
}
