//! CUBIC in the simulator: fills a BDP-buffered link; loss events reduce to β = 0.7.
mod common;
use common::*;

#[test]
fn cubic_fills_a_bdp_link_and_reduces_by_beta() {
    let rate = 100e6;
    let mut spec = dumbbell(rate, bdp_pkts(rate, 0.04), "droptail", vec![flow("cubic", 0.04, 0)], 60.0, 1);
    spec.measure = [10.0, 60.0];
    let r = run(&spec);
    eprintln!("cubic: utilisation {:.4}, fast recoveries {}", r.links[0].utilization, r.flows[0].fast_recoveries);
    // β = 0.7 keeps 70% of a window of BDP + buffer = 2 BDP: the link never idles.
    assert!(r.links[0].utilization >= 0.95);
    // Every reduction keeps 0.7 of the window: look for drops of the sampled cwnd.
    let s = &r.flow_series.columns;
    let (cw, t) = (&s["cwnd"], &s["t"]);
    let mut ratios = vec![];
    // After the slow-start overshoot (which can take two reductions within one 100 ms sample).
    for i in 1..cw.len() {
        if t[i] >= 10.0 && cw[i] < cw[i - 1] * 0.9 && cw[i - 1] > 100.0 {
            ratios.push(cw[i] / cw[i - 1]);
        }
    }
    eprintln!("sampled reduction ratios {ratios:?}");
    assert!(!ratios.is_empty());
    // Sampling at 100 ms sees the reduction plus up to one sample of growth: 0.7 within 0.05.
    assert!(ratios.iter().all(|x| (x - 0.7).abs() < 0.05), "{ratios:?}");
}
