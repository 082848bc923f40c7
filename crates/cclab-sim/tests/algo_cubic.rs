//! CUBIC in the simulator: fills a BDP-buffered link; loss events reduce to β = 0.7; between two
//! losses the window follows the cubic; the TCP-friendly region engages on a short-RTT, low-BDP path.
mod common;
use common::*;

#[test]
fn cubic_fills_a_bdp_link_and_reduces_by_beta() {
    let rate = 100e6;
    let mut spec = dumbbell(
        rate,
        bdp_pkts(rate, 0.04),
        "droptail",
        vec![flow("cubic", 0.04, 0)],
        60.0,
        1,
    );
    spec.measure = [10.0, 60.0];
    let r = run(&spec);
    eprintln!(
        "cubic: utilisation {:.4}, fast recoveries {}",
        r.links[0].utilization, r.flows[0].fast_recoveries
    );
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

/// Acceptance (docs/algorithms/cubic.md): between two losses the window follows W(t) = C(t − K)³ + W_max
/// within 5 % pointwise.
///
/// One flow on a 200 Mbit/s, 100 ms path (BDP 1667 packets) with a 333-packet buffer. The first loss
/// is forced in slow start: 0.05 ms of arrivals dropped inside round 5 (320 packets; the round
/// reaches the bottleneck as one burst at ≈ 0.05 + 0.1·5 s, see algo_scalable.rs), so W_max is about
/// 320 packets (measured 322) and K ≈ 6.2 s. The second loss is the buffer's: cwnd passes BDP +
/// buffer = 2000 at t − K ≈ ∛(1680/0.4) ≈ 16 s (measured 16.3 s), so the ~22 s between the losses
/// cover the concave approach, the plateau and a long stretch of convex probing. Reno's W_est (0.53 packets per 100 ms) stays far below, so the
/// whole epoch is in the cubic region.
#[test]
fn cubic_window_follows_the_cubic_between_two_losses() {
    let rate = 200e6;
    let rtt = 0.1;
    let t_drop = 0.05 + 5.0 * rtt + 0.0003;
    let mut spec = dumbbell(rate, 333, "droptail", vec![flow("cubic", rtt, 0)], 30.0, 1);
    spec.sample_interval = 0.01;
    spec.links[0].loss_schedule = vec![(0.0, 0.0), (t_drop, 1.0), (t_drop + 0.00005, 0.0)];
    let r = run(&spec);
    let s = &r.flow_series.columns;
    let (t, cw, wmax, ssth) = (&s["t"], &s["cwnd"], &s["w_max"], &s["ssthresh"]);
    // The two reductions: samples where cwnd falls.
    let cuts: Vec<usize> = (1..cw.len()).filter(|&i| cw[i] < 0.9 * cw[i - 1]).collect();
    assert!(
        cuts.len() >= 2,
        "two loss events expected, cuts at {:?}",
        cuts.iter().map(|&i| t[i]).collect::<Vec<_>>()
    );
    let (c1, c2) = (cuts[0], cuts[1]);
    let w_max = wmax[c1];
    // β = 0.7: the first reduction keeps 70 % of the window it remembered as W_max (no fast
    // convergence on the first loss).
    assert!(
        (ssth[c1] / w_max - 0.7).abs() < 1e-6,
        "ssthresh {} vs W_max {w_max}",
        ssth[c1]
    );
    let k = (w_max * 0.3 / 0.4).cbrt();
    // The epoch starts with the first congestion-avoidance ACK after fast recovery: the first sample
    // in which cwnd has grown above ssthresh.
    let e = (c1..c2)
        .find(|&i| cw[i] > ssth[c1] + 1e-6)
        .expect("growth after the first cut");
    let t0 = t[e - 1];
    eprintln!(
        "cubic: W_max {w_max:.0}, K {k:.2} s, epoch from {t0:.2} s, second loss at {:.2} s (t − K = {:.2} s), window there {:.0}",
        t[c2],
        t[c2] - t0 - k,
        cw[c2 - 1]
    );
    assert!(
        t[c2] - t0 > k + 5.0,
        "the second loss must come well into the convex region"
    );
    let mut worst = (0.0f64, 0.0);
    for i in e..c2 {
        let want = 0.4 * (t[i] - t0 - k).powi(3) + w_max;
        let err = cw[i] / want - 1.0;
        if err.abs() > worst.0.abs() {
            worst = (err, t[i] - t0);
        }
    }
    eprintln!(
        "cubic: largest pointwise deviation {:+.2} % at t = {:.2} s",
        worst.0 * 100.0,
        worst.1
    );
    // 5 % (the acceptance bound). Expected sources: the epoch's start is known to one 10 ms sample,
    // and cwnd chases W(t + RTT) one RTT behind, i.e. ≈ W(t) (RFC 9438 §4.4); neither moves W by more
    // than ~1 %.
    assert!(
        worst.0.abs() <= 0.05,
        "cwnd left the cubic by {:.2} % at t = {:.2} s",
        worst.0 * 100.0,
        worst.1
    );
}

/// Acceptance (docs/algorithms/cubic.md): the TCP-friendly (Reno-friendly) region engages on a short-RTT,
/// low-BDP path.
///
/// 10 Mbit/s, 10 ms (BDP 8 packets) with a BDP buffer: losses come at ≈ 16 packets, where
/// K = ∛(16·0.3/0.4) ≈ 2.3 s, i.e. the cubic would take ~200 RTTs to regain W_max while Reno-friendly
/// growth (α_cubic = 0.53 packets per RTT) takes ~10. With the region on, cwnd follows W_est and
/// losses come every few hundred ms; with it off (`tcp_friendly = false`) only every ~K seconds.
#[test]
fn cubic_tcp_friendly_region_engages_on_a_short_rtt_low_bdp_path() {
    let rate = 10e6;
    let rtt = 0.01;
    let go = |friendly: bool| {
        let mut f = flow("cubic", rtt, 0);
        f.params.insert(
            "tcp_friendly".into(),
            cclab_cc::params::ParamValue::Bool(friendly),
        );
        let mut spec = dumbbell(rate, bdp_pkts(rate, rtt), "droptail", vec![f], 30.0, 1);
        spec.measure = [5.0, 30.0];
        spec.sample_interval = 0.01;
        let r = run(&spec);
        let s = &r.flow_series.columns;
        // Fraction of congestion-avoidance samples (after 5 s) in which cwnd is W_est, i.e. above the
        // cubic curve's value: the state columns give W_est directly.
        let (t, cw, west) = (&s["t"], &s["cwnd"], &s["w_est"]);
        let idx: Vec<usize> = (0..t.len()).filter(|&i| t[i] >= 5.0).collect();
        let on_west = idx
            .iter()
            .filter(|&&i| (cw[i] - west[i]).abs() < 1e-6)
            .count() as f64
            / idx.len() as f64;
        (
            r.flows[0].fast_recoveries,
            r.flows[0].goodput_bps,
            on_west,
            r.links[0].utilization,
        )
    };
    let (loss_on, g_on, west_on, u_on) = go(true);
    let (loss_off, g_off, west_off, u_off) = go(false);
    eprintln!(
        "cubic 10 Mbit/s 10 ms: friendly on: {loss_on} loss events, {:.2} Mbit/s, cwnd = W_est in {:.0} % of samples, utilisation {u_on:.3}; \
         off: {loss_off} loss events, {:.2} Mbit/s, utilisation {u_off:.3} (W_est-tracking {:.0} %)",
        g_on / 1e6,
        west_on * 100.0,
        g_off / 1e6,
        west_off * 100.0
    );
    // The region decides the window most of the time: cwnd is W_est in over half the samples (the
    // rest: fast recovery, and the short stretches where the cubic is above W_est).
    assert!(
        west_on > 0.5,
        "cwnd followed W_est in {:.0} % of samples",
        west_on * 100.0
    );
    // And it changes the loss cycle: Reno-paced (~10 RTTs) instead of cubic-paced (~K = 2.3 s). A
    // factor 3 leaves room for the cycle lengths' spread (queue-inflated RTT, fast convergence).
    assert!(
        loss_on >= 3 * loss_off,
        "loss events: friendly {loss_on}, cubic-only {loss_off}"
    );
}

/// Regression: a slow-start overshoot whose recovery outlives its `recover` point, on a 50 Mbit/s,
/// 40 ms path with a one-BDP buffer. New data sent during that recovery lies above `recover`; some of
/// it was lost, resent, and lost again at the still-full queue. Recovery ended when the cumulative ACK
/// passed `recover`, and the transport then forgot every retransmission it was watching, so those
/// waited for the RTO. Through `cclab run` (CUBIC with HyStart++, overshoot to 585 packets): 47 such
/// packets, 1 timeout, the window from 288 to 6.5 packets, 43.8 instead of 48.27 Mbit/s over 3–8 s.
/// This test's dumbbell hits the same timeout (1 before the fix, 0 after). Watching the
/// retransmissions above the cumulative ACK past the end of recovery repairs them in the next episode.
#[test]
fn lost_retransmissions_above_recover_are_found_after_recovery_ends() {
    let rate = 50e6;
    let mut spec = dumbbell(
        rate,
        bdp_pkts(rate, 0.04),
        "droptail",
        vec![flow("cubic", 0.04, 0)],
        8.0,
        1,
    );
    spec.measure = [3.0, 8.0];
    let r = run(&spec);
    let f = &r.flows[0];
    eprintln!(
        "cubic 50 Mbit/s: goodput {:.2} Mbit/s, timeouts {}, fast recoveries {}",
        f.goodput_bps / 1e6,
        f.timeouts,
        f.fast_recoveries
    );
    assert_eq!(f.timeouts, 0);
    // Deterministic; 1 % below the ceiling is the margin for a changed loss pattern that still
    // repairs everything without a timeout.
    assert!(
        f.goodput_bps > 0.99 * rate * 1448.0 / 1500.0,
        "{}",
        f.goodput_bps
    );
}
