//! FAST TCP acceptance (F4, the equilibrium, in docs/experiments.md): three FAST flows with RTTs 50, 100
//! and 150 ms, α = 20 packets each, on a 100 Mbit/s bottleneck with a 500-packet drop-tail buffer. Theory
//! (Jin, Wei & Low 2004, §V, Theorem 1): every flow keeps α packets queued, so the steady queue is Σα =
//! 60 packets, and equal α gives equal rates regardless of RTT (Jain → 1), with no loss.
mod common;
use common::*;

fn three_fast(duration: f64) -> cclab_sim::RunSpec {
    let rate = 100e6;
    let flows = [0.05, 0.10, 0.15]
        .iter()
        .enumerate()
        .map(|(i, &rtt)| {
            let mut f = flow("fast", rtt, i as u32);
            f.params = param(&[("alpha", 20.0)]);
            f
        })
        .collect();
    dumbbell(rate, 500, "droptail", flows, duration, 1)
}

#[test]
fn three_flows_equilibrium_queue_fairness_no_loss() {
    // A fluid model of the every-other-RTT law puts Jain above 0.99 and the queue within 5% of 60 by
    // ~20 s (the 150 ms flow contracts its error by only 1 − γ·q/RTT ≈ 0.977 per update); measure the
    // last 15 s of a 40 s run.
    let mut spec = three_fast(40.0);
    spec.measure = [25.0, 40.0];
    let r = run(&spec);
    let rates: Vec<f64> = r.flows.iter().map(|f| f.goodput_bps).collect();
    let j = jain(&rates);
    let q = r.links[0].mean_queue_pkts;
    let drops: u64 = r.flows.iter().map(|f| f.dropped_pkts).sum();
    for f in &r.flows {
        eprintln!(
            "rtt {:.3} goodput {:.2} Mbit/s cwnd {:.1} retx {} timeouts {} drops {}",
            f.rtt,
            f.goodput_bps / 1e6,
            f.mean_cwnd_pkts,
            f.retransmits,
            f.timeouts,
            f.dropped_pkts
        );
    }
    eprintln!(
        "queue {q:.1} pkts (max {}), util {:.3}, jain {j:.4}, drops {drops}",
        r.links[0].max_queue_pkts, r.links[0].utilization
    );
    // Whole run, not just the window: FAST must never overflow the 500-packet buffer.
    assert_eq!(drops, 0, "FAST dropped packets");
    // Acceptance: steady queue within 15% of Σα = 60 packets.
    assert!((q - 60.0).abs() <= 0.15 * 60.0, "mean queue {q:.1}");
    assert!(j >= 0.95, "Jain {j:.4}");
    // Equilibrium also implies the link is full (α > 0 packets are always queued).
    assert!(
        r.links[0].utilization > 0.98,
        "utilization {}",
        r.links[0].utilization
    );
}
