//! HighSpeed in the simulator: under random loss the average window follows RFC 3649's response
//! function w = 0.12/p^0.835 (and Reno's 1.2/√p below Low_Window).
mod common;
use common::*;

fn mean_window(cc: &str, p: f64, rate: f64, duration: f64) -> (f64, u64) {
    let mut spec = dumbbell(
        rate,
        100_000,
        "droptail",
        vec![flow(cc, 0.05, 0)],
        duration,
        3,
    );
    spec.links[0].loss = p;
    spec.measure = [duration * 0.2, duration];
    let r = run(&spec);
    assert_eq!(
        r.links[0].drops, 0,
        "loss, not the queue, must limit the flow"
    );
    (r.flows[0].mean_cwnd_pkts, r.flows[0].timeouts)
}

#[test]
fn highspeed_average_window_follows_the_response_function() {
    // 1 Gbit/s keeps the flow loss-limited (1800 packets × 12 kbit / 50 ms = 430 Mbit/s at p = 1e-5).
    // 25 % (the acceptance tolerance): the response function is derived for deterministic loss; random
    // loss and the window's per-RTT quantisation move the mean by ~10–20 %.
    for (p, duration) in [(1e-4, 60.0), (1e-5, 200.0)] {
        let (w, to) = mean_window("highspeed", p, 1e9, duration);
        let want = 0.12 / p.powf(0.835);
        eprintln!(
            "highspeed p={p}: mean window {w:.0}, RFC 3649 {want:.0}, ratio {:.3}, timeouts {to}",
            w / want
        );
        assert!((w / want - 1.0).abs() <= 0.25);
    }
    // Below Low_Window HighSpeed is Reno: 1.2/√p at p = 1e-3 (≈ 38 packets).
    let (w, _) = mean_window("highspeed", 1e-3, 1e9, 200.0);
    let want = 1.2 / 1e-3f64.sqrt();
    eprintln!(
        "highspeed p=1e-3: mean window {w:.1}, Reno {want:.1}, ratio {:.3}",
        w / want
    );
    assert!((w / want - 1.0).abs() <= 0.25);
}
