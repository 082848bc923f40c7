//! Unit tests of the model, the loss estimator and the controller (docs/algorithms/madison.md, Tests).

use super::*;
use crate::cc::{flags, AckSample, CongestionControl, LossEvent, SendCtx, TimeoutEvent};
use crate::params::ParamValue;
use crate::time::{from_ms, NS_PER_MS, NS_PER_SEC};

const RATIO: f64 = 0.0235;
const P_MIN: f64 = 2.55e-5;

fn madison(params: &[(&str, f64)]) -> Madison {
    let p: Params = params
        .iter()
        .map(|(k, v)| (k.to_string(), ParamValue::Num(*v)))
        .collect();
    let env = SenderEnv {
        seed: 7,
        ..SenderEnv::default()
    };
    Madison::new(&env, &p).unwrap()
}

/// Mimics the transport's sender: asks to send at `now` while the algorithm is not quiesced, sends the
/// pair's second packet right after a PAIR_FIRST. Returns (seq, flags, time) of what left.
fn send_all(m: &mut Madison, now: Nanos, seq: &mut u64, out: &mut Vec<(u64, u8, Nanos)>) {
    let mut pair_second = false;
    while !m.quiesced() || pair_second {
        let mut ctx = SendCtx {
            now,
            seq: *seq,
            flags: if pair_second {
                flags::PAIR_SECOND | flags::ACK_NOW
            } else {
                0
            },
            ..Default::default()
        };
        m.on_send(&mut ctx);
        pair_second = !pair_second && ctx.flags & flags::PAIR_FIRST != 0;
        out.push((*seq, ctx.flags, now));
        *seq += 1;
    }
}

/// The ACK of packet (`seq`, `fl`) sent at `sent` with round-trip `rtt`; the receiver saw it at
/// `rx` (its clock).
fn ack_of(seq: u64, fl: u8, sent: Nanos, rtt: Nanos, rx: Nanos) -> AckSample {
    AckSample {
        now: sent + rtt,
        newly_acked: 1,
        rtt: Some(rtt),
        acked_seq: seq,
        acked_flags: fl,
        acked_bytes: 1448,
        rx_time: rx,
        in_flight: 5,
        ..Default::default()
    }
}

/// Runs the handshake and start-up over a path of capacity `c` Mbit/s and RTT `rtt_ms` whose queue
/// is empty; returns the flow in congestion avoidance, the next free sequence number and the time.
fn started(c: f64, rtt_ms: f64) -> (Madison, u64, Nanos) {
    let mut m = madison(&[]);
    let rtt = from_ms(rtt_ms);
    let svc = from_ms(12.0 / c);
    let mut seq = 0;
    let mut sent = Vec::new();
    send_all(&mut m, 0, &mut seq, &mut sent);
    m.on_ack(&ack_of(0, flags::ACK_NOW | flags::FIRST, 0, rtt, rtt / 2));
    let mut now = rtt;
    while m.phase() == Phase::Startup && now < rtt + 2 * NS_PER_SEC {
        if let Some(t) = m.next_timer() {
            if t <= now {
                m.on_timer(now);
            }
        }
        let k = sent.len();
        send_all(&mut m, now, &mut seq, &mut sent);
        // ACKs of everything sent 1 RTT ago, in order; a pair's second arrives one service time later.
        for &(s, fl, at) in sent[..k].iter().filter(|&&(_, _, at)| at + rtt == now) {
            let extra = if fl & flags::PAIR_SECOND != 0 { svc } else { 0 };
            m.on_ack(&ack_of(s, fl, at, rtt + extra, at + rtt / 2 + extra));
        }
        now += NS_PER_MS;
    }
    (m, seq, now)
}

#[test]
fn b_target_values() {
    // Table 2 / §4.1: b_target(p_min) = 10.
    assert!(
        (b_target(2.55e-5, RATIO, P_MIN) - 10.0).abs() < 0.05,
        "{}",
        b_target(2.55e-5, RATIO, P_MIN)
    );
    // §3.1: 16 at p = 1e-5 — but 1e-5 < p_min, so eq. (3) itself (p_min = 0) gives 15.949.
    assert!((b_target(1e-5, RATIO, 0.0) - 15.9).abs() < 0.1);
    // p_init: the formula gives 5.085, not the 4.33 the paper prints (documented inconsistency).
    let b = b_target(1e-4, RATIO, P_MIN);
    assert!((b - 5.08).abs() < 0.02, "{b}");
    // 4.33 is what ratio 0.0200, or p ≈ 1.385e-4, would give.
    assert!((b_target(1e-4, 0.0200, P_MIN) - 4.33).abs() < 0.005);
    assert!((b_target(1.385e-4, RATIO, P_MIN) - 4.33).abs() < 0.005);
    // p below p_min is clamped inside the formula.
    assert_eq!(b_target(1e-7, RATIO, P_MIN), b_target(P_MIN, RATIO, P_MIN));
}

#[test]
fn eqs_1_and_2_reno_backlog_is_the_vegas_bound_solved_for_alpha() {
    // Eq. (1): Vegas reaches α only while p ≤ 32/(7W² − 36W + 32), W = α·RTT_avg/d̄. Eq. (2) is that bound
    // solved for α at equality: α_Reno = (2/7)(d̄/RTT_avg)(9 + √(25 + 56/p)), i.e. eq. (3)'s formula with
    // the ratio d̄/RTT_avg in place of 0.0235 (and no p_min). Check that W from (2) puts (1) at equality.
    for p in [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.08] {
        for ratio in [0.0235, 0.05, 0.1] {
            let alpha = b_target(p, ratio, 0.0);
            let w = alpha / ratio; // α·RTT_avg/d̄
            let bound = 32.0 / (7.0 * w * w - 36.0 * w + 32.0);
            assert!(
                (bound - p).abs() <= 1e-9 * p,
                "p {p} ratio {ratio}: bound {bound}"
            );
        }
    }
    // Fig. 1's curve for 0.0235, as §3.1 reads it: 16 at 1e-5 and 4.33 at 1e-4 (the latter is the printed
    // inconsistency, see b_target_values); §4.1's worked value b_target(p_min = 2.55e-5) = 10.0105.
    assert!((b_target(2.55e-5, RATIO, P_MIN) - 10.0105).abs() < 5e-5);
    assert!((b_target(2.555e-5, RATIO, 0.0) - 10.0).abs() < 0.01);
}

#[test]
fn eq_5_service_time_and_eq_6_total_backlog() {
    // Eq. (5): 1500 B on C Mbit/s (kbit/ms) takes 12/C ms; eq. (6): B̄ = d̄·C/12. With C = 100 Mbit/s,
    // d̄ = 0.6 ms is 5 packets of backlog; eq. (8) turns it into U = 10/11.
    let a: f64 = 1500.0 * 8.0 / 1000.0 / 100.0;
    assert!((a - 0.12).abs() < 1e-15);
    let m = measures(100.6, 100.0, a, 0.0);
    assert!((m.big_b - 5.0).abs() < 1e-9);
    assert!((m.u - 10.0 / 11.0).abs() < 1e-12);
    // §4.2 / Table 2: desired probe spacing tProbe*·12/C = 32·0.12 = 3.84 ms, clamped to [15, 100] ms;
    // at 1 Mbit/s it is 384 ms, clamped to 100.
    assert_eq!(probe_spacing_ms(a, 32.0, 15.0, 100.0), 15.0);
    assert!((probe_spacing_ms(12.0 / 10.0, 32.0, 15.0, 100.0) - 38.4).abs() < 1e-9);
    assert_eq!(probe_spacing_ms(12.0, 32.0, 15.0, 100.0), 100.0);
}

#[test]
fn md1_measures() {
    // C 100 Mbit/s (a = 0.12 ms), RTT_avg 101.2 ms, RTT_min 100 ms: d̄ 1.2 ms, B̄ = 10, U = 20/21.
    let s = 2.0; // packets/ms = 24 Mbit/s
    let m = measures(101.2, 100.0, 0.12, s);
    assert!((m.d - 1.2).abs() < 1e-12);
    assert!((m.big_b - 10.0).abs() < 1e-9);
    assert!((m.u - 20.0 / 21.0).abs() < 1e-12);
    assert!((m.b - 2.4).abs() < 1e-12); // eq. (4)
    assert!((m.u_flow - 0.24).abs() < 1e-12); // eq. (9)
    assert!((m.x_xt - (20.0 / 21.0 - 0.24) / 0.12).abs() < 1e-9); // eq. (10)
    assert!((m.n - (20.0 / 21.0) / 0.24).abs() < 1e-9); // eq. (11), DECISION 3

    // Eq. (7) inverted: d̄ = U·a/(2(1 − U)).
    assert!((m.u * 0.12 / (2.0 * (1.0 - m.u)) - m.d).abs() < 1e-12);
    // No queue: U = 0, n floored at 1.
    let m = measures(100.0, 100.0, 0.12, s);
    assert_eq!((m.u, m.x_xt, m.n), (0.0, 0.0, 1.0));
}

#[test]
fn closed_forms_satisfy_eq_12() {
    let mut checked = 0;
    for b in [0.5, 4.33, 5.085, 10.0, 16.0] {
        for c in [1.0, 10.0, 100.0, 1000.0] {
            let a = 12.0 / c;
            for u in [0.0, 0.3, 0.9, 0.99] {
                for so in [0.0, 0.05, 0.3, 0.9] {
                    let s_old = so / a;
                    // Start-up form, eq. (13).
                    let s = s_target_startup(b, a, u, s_old);
                    let un = u_new_startup(a, u, s_old, s);
                    assert!(s > 0.0 && un < 1.0);
                    let lhs = md1_flow_backlog(s, a, un);
                    assert!(
                        (lhs - b).abs() <= 1e-9 * b,
                        "startup b {b} C {c} U {u}: {lhs}"
                    );
                    // Afterwards, eq. (14), for cross traffic a·X < 1 and several n_D.
                    for ax in [0.0, 0.2, 0.6, 0.95] {
                        for n_d in [1.0, 1.5, 3.0, 20.0] {
                            let x = ax / a;
                            let s = s_target_shared(b, a, x, n_d, s_old);
                            let un = u_new_shared(a, x, n_d, s_old, s);
                            assert!(s > 0.0 && un < 1.0);
                            let lhs = md1_flow_backlog(s, a, un);
                            assert!(
                                (lhs - b).abs() <= 1e-9 * b,
                                "shared b {b} C {c} X {x} nD {n_d}: {lhs}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(checked, 5 * 4 * 4 * 4 * 16);
}

#[test]
fn back_solve_recovers_n_d() {
    let a = 0.12;
    // Case X_xt − (n_D − 1)·S_old > 0: the flow predicted with n_D = 2 a decrease from 2.5 to 2.30
    // packets/ms, but 3 flows moved (the link ends at U_new = 0.949 instead of the predicted 0.972).
    let (x, s_old, b) = (6.0, 2.5, 5.0);
    let s = s_target_shared(b, a, x, 2.0, s_old);
    let achieved = md1_flow_backlog(s, a, u_new_shared(a, x, 3.0, s_old, s));
    let n = back_solve_n_d(a, x, 2.0, s_old, s, achieved).unwrap();
    assert!((n - 3.0).abs() < 1e-9, "{n}");
    // Case ≤ 0 (no cross traffic left over): n_D = 1/(a·S) − 1/(2b̂). Predicted with n_D = 4, only
    // 3 flows moved (with X' = 0 the true n_D can exceed the predicted one by at most 1/(2b)).
    let (x, s_old) = (1.0, 1.5);
    let s = s_target_shared(b, a, x, 4.0, s_old);
    let achieved = md1_flow_backlog(s, a, u_new_shared(a, x, 3.0, s_old, s));
    let n = back_solve_n_d(a, x, 4.0, s_old, s, achieved).unwrap();
    assert!((n - 3.0).abs() < 1e-9, "{n}");
    // The guard: S ≈ S_old says nothing (case 1).
    assert_eq!(back_solve_n_d(a, 3.0, 2.0, 1.0, 1.01, 5.0), None);
    // Results outside [1, 1/(a·S)] are refused.
    // (case 2: 1/(a·S) − 1/(2b̂) = 2.08 − 5 < 1: fewer than this flow itself)
    assert_eq!(back_solve_n_d(a, 0.0, 1.0, 1.0, 4.0, 0.1), None);
    assert!(back_solve_n_d(a, 0.0, 1.0, 1.0, 4.0, 100.0).is_some_and(|n| n <= 1.0 / (a * 4.0)));
}

#[test]
fn loss_rate_estimator() {
    // §4.3 (2b): one packet lost 5000 packets after the last loss, p = 1e-4 → 2/15000.
    assert!((loss_rate_after_event(1e-4, 1, 5000) - 2.0 / 15000.0).abs() < 1e-15);
    let (mut m, _, mut now) = started(100.0, 100.0);
    assert_eq!(m.p(), 1e-4);
    // A loss event of 2 packets (counted from the two retransmissions), applied at the next probe ACK.
    m.loss.sent_since_loss = 7998;
    m.on_loss(&LossEvent {
        lost: 1, // the transport's count at the trigger is not used (DECISION 11)
        ..Default::default()
    });
    for seq in [10, 11] {
        m.on_send(&mut SendCtx {
            seq,
            retransmit: true,
            ..Default::default()
        });
    }
    assert_eq!(m.p(), 1e-4, "applied at the next probe ACK, not at once");
    now += 300 * NS_PER_MS;
    m.on_probe_ack(now, now - 100 * NS_PER_MS, 100.0);
    assert!((m.p() - 3.0 / 18000.0).abs() < 1e-15, "{}", m.p());
    assert_eq!(m.loss.sent_since_loss, 0);
    assert!((m.b_target() - b_target(3.0 / 18000.0, RATIO, P_MIN)).abs() < 1e-12);
    // (2c): q > 10/p → p = 1/q (here below p_min: b_target = 10).
    m.loss.sent_since_loss = 60_001;
    now += 300 * NS_PER_MS;
    m.on_probe_ack(now, now - 100 * NS_PER_MS, 100.0);
    assert!((m.p() - 1.0 / 60_001.0).abs() < 1e-18);
    assert!((m.b_target() - 10.0105).abs() < 1e-3);
    // Not yet > 10/p: unchanged.
    let p = m.p();
    m.loss.sent_since_loss = 600_000;
    now += 300 * NS_PER_MS;
    m.on_probe_ack(now, now - 100 * NS_PER_MS, 100.0);
    assert_eq!(m.p(), p);
    let mut out = Vec::new();
    m.state(&mut out);
    assert!(out.iter().any(|&(k, v)| k == "p" && v == p));
}

#[test]
fn loss_decay_per_event() {
    // DECISION 15: with `per_event`, rule (2c) waits for 10 events' worth of packets, 10·L/p, L the
    // last event's lost packets, and sets p = L/q; `paper` (the default) waits for 10/p, p = 1/q.
    let episode = |decay| {
        let mut e = LossEstimator::with_decay(1e-4, decay);
        e.sent_since_loss = 9_980;
        e.on_event();
        for seq in 0..20 {
            e.on_send(seq, true); // 20 packets of the episode retransmitted
        }
        assert!(e.on_probe_ack());
        e
    };
    let p1 = 21.0 / (10_000.0 + 1e4); // (L + 1)/(q + 1/p): 20 sent before + the 20 retransmissions
    for decay in [LossDecay::Paper, LossDecay::PerEvent] {
        assert!((episode(decay).p() - p1).abs() < 1e-15);
    }
    // Paper: fires after 10/p packets without loss.
    let mut e = episode(LossDecay::Paper);
    e.sent_since_loss = (10.0 / p1).floor() as u64 + 1;
    assert!(e.on_probe_ack());
    assert!((e.p() - 1.0 / e.sent_since_loss as f64).abs() < 1e-18);
    // Per event: not yet at 10/p, fires after 10·20/p and sets p = 20/q.
    let mut e = episode(LossDecay::PerEvent);
    e.sent_since_loss = (10.0 / p1).floor() as u64 + 1;
    assert!(!e.on_probe_ack());
    assert_eq!(e.p(), p1);
    let q = (200.0 / p1).floor() as u64 + 1;
    e.sent_since_loss = q;
    assert!(e.on_probe_ack());
    assert!((e.p() - 20.0 / q as f64).abs() < 1e-18);
    // L is remembered after (2c) fired: the next decay again waits for 10·20/p.
    let p2 = e.p();
    e.sent_since_loss = (100.0 / p2) as u64;
    assert!(!e.on_probe_ack());
    e.sent_since_loss = (200.0 / p2) as u64 + 1;
    assert!(e.on_probe_ack());
    // Before any event L = 1: both variants decay p_init alike.
    let mut e = LossEstimator::with_decay(1e-4, LossDecay::PerEvent);
    e.sent_since_loss = 100_001;
    assert!(e.on_probe_ack());
    assert!((e.p() - 1.0 / 100_001.0).abs() < 1e-18);
    // The parameter: default paper, per_event settable, anything else rejected naming the field.
    let cfg = |v: &str| {
        let p: Params = [("loss_decay".to_string(), ParamValue::Str(v.into()))]
            .into_iter()
            .collect();
        MadisonConfig::from_params(&p)
    };
    assert_eq!(
        MadisonConfig::from_params(&Params::new())
            .unwrap()
            .loss_decay,
        LossDecay::Paper
    );
    assert_eq!(cfg("per_event").unwrap().loss_decay, LossDecay::PerEvent);
    assert_eq!(cfg("paper").unwrap().loss_decay, LossDecay::Paper);
    let err = cfg("events").err().unwrap();
    assert_eq!(err.field, "loss_decay");
    assert!(err.message.contains("per_event"), "{}", err.message);
}

#[test]
fn lost_packets_of_an_episode_found_at_different_times() {
    // DECISION 11: every retransmission is a lost packet; those found after the event was applied
    // re-apply the same event; a retransmission whose original is then ACKed was spurious.
    let mut e = LossEstimator::new(1e-4);
    let (mut seq, retx) = (0u64, |e: &mut LossEstimator, s: u64| e.on_send(s, true));
    let mut send = |e: &mut LossEstimator, n: u64| {
        for _ in 0..n {
            e.on_send(seq, false);
            seq += 1;
        }
    };
    send(&mut e, 9000);
    // SACK finds packet 100 lost: the loss event, then its retransmission.
    e.on_event();
    retx(&mut e, 100);
    assert!(e.on_probe_ack());
    let (q1, p1) = (9001, 2.0 / (9001.0 + 1e4));
    assert!((e.p() - p1).abs() < 1e-15, "{}", e.p());
    // Within the same recovery: 3 more holes found by later SACKs, and one retransmission lost again
    // (5 retransmissions in all), all before the next event.
    for s in [101, 105, 107, 100] {
        retx(&mut e, s);
    }
    send(&mut e, 50);
    assert!(e.on_probe_ack(), "the event is re-applied");
    let p2 = 6.0 / (q1 as f64 + 1e4);
    assert!((e.p() - p2).abs() < 1e-15, "{} vs {p2}", e.p());
    assert!(!e.on_probe_ack(), "nothing new: unchanged");
    // The original of 107 arrives after its retransmission was sent (ACK without RETX): spurious.
    e.on_ack(107, 0);
    e.on_ack(105, flags::RETX); // the retransmission of 105 arrived: it was lost
    assert!(e.on_probe_ack());
    assert!((e.p() - 5.0 / (q1 as f64 + 1e4)).abs() < 1e-15);
    // One more hole of this episode found, then (before the next probe ACK) a new event with 2
    // retransmissions: the late find re-applies the old event first, then the new one applies.
    retx(&mut e, 109);
    send(&mut e, 3000);
    let q2 = e.sent_since_loss;
    e.on_event();
    e.on_event(); // a second signal before the probe ACK is the same event
    retx(&mut e, 9500);
    retx(&mut e, 9501);
    assert!(e.on_probe_ack());
    let p_old = 6.0 / (q1 as f64 + 1e4);
    let want = 3.0 / ((q2 + 2) as f64 + 1.0 / p_old); // q counts the 2 retransmissions too
    assert!((e.p() - want).abs() < 1e-15, "{} vs {want}", e.p());
    // An RTO is an event too; its go-back retransmissions are its packets.
    send(&mut e, 400);
    e.on_event();
    for s in 9600..9610 {
        retx(&mut e, s);
    }
    let (pb, q3) = (e.p(), e.sent_since_loss);
    assert!(e.on_probe_ack());
    assert!((e.p() - 11.0 / (q3 as f64 + 1.0 / pb)).abs() < 1e-15);
}

#[test]
fn startup_schedule_and_first_estimates() {
    let (m, _, _) = started(100.0, 100.0);
    assert_eq!(m.phase(), Phase::First);
    assert!((m.capacity_mbps().unwrap() - 100.0).abs() < 1e-6);
    // Empty queue: RTT_avg = RTT_min, U = 0, S = 2b/(a(1 + 2b)) with b = b_target(p_init).
    let b = b_target(1e-4, RATIO, P_MIN);
    assert!((m.s_target() - 2.0 * b / (0.12 * (1.0 + 2.0 * b))).abs() < 1e-9);
    assert!((m.s_target_bps() - m.s_target() * 12e6).abs() < 1e-3);
    // tProbe*·a = 3.84 ms → clamped to 15 ms.
    assert_eq!(m.probe_spacing(), 15.0);

    // The schedule itself: SYN, then at 15 ms spacing pair, 4 probes, pair, 4 probes.
    let mut m = madison(&[]);
    let (mut seq, mut sent) = (0, Vec::new());
    send_all(&mut m, 0, &mut seq, &mut sent);
    assert_eq!(sent.len(), 1, "only the SYN before its ACK");
    assert_eq!(sent[0].1, flags::ACK_NOW);
    m.on_ack(&ack_of(0, flags::ACK_NOW, 0, 50 * NS_PER_MS, 0));
    let t0 = 50 * NS_PER_MS;
    let mut now = t0;
    while now <= t0 + 200 * NS_PER_MS {
        if m.next_timer().is_some_and(|t| t <= now) {
            m.on_timer(now);
        }
        send_all(&mut m, now, &mut seq, &mut sent);
        now += NS_PER_MS;
    }
    let got: Vec<(u8, Nanos)> = sent[1..]
        .iter()
        .map(|&(_, f, t)| (f, (t - t0) / NS_PER_MS))
        .collect();
    let (pf, ps, pr) = (
        flags::PAIR_FIRST | flags::ACK_NOW,
        flags::PAIR_SECOND | flags::ACK_NOW,
        flags::PROBE | flags::ACK_NOW,
    );
    let want = vec![
        (pf, 0),
        (ps, 0),
        (pr, 15),
        (pr, 30),
        (pr, 45),
        (pr, 60),
        (pf, 75),
        (ps, 75),
        (pr, 90),
        (pr, 105),
        (pr, 120),
        (pr, 135),
    ];
    assert_eq!(got, want);
}

#[test]
fn slow_links_wait_for_all_eight_probes() {
    // 10 Mbit/s: 20·a = 24 ms > 15 ms, so all 8 probes (every other one used) and both pairs.
    let (m, _, now) = started(10.0, 100.0);
    assert_eq!(m.phase(), Phase::First);
    // The last probe left 135 ms after the sequence began (100 ms after the SYN's ACK); its ACK
    // is back one RTT later.
    assert!(now >= from_ms(100.0 + 135.0 + 100.0), "{now}");
    assert_eq!(m.rtts.len(), 4);
    assert!((m.capacity_mbps().unwrap() - 10.0).abs() < 1e-6);
    assert_eq!(m.probe_spacing(), 38.4); // 32·1.2 ms, inside [15, 100]
}

#[test]
fn rate_changes_at_least_t_apart_and_deferred() {
    let (mut m, _, t0) = started(100.0, 100.0);
    let s0 = m.s_target();
    // A loss event 50 ms after the first rate: p rises, the recompute is deferred.
    m.loss.sent_since_loss = 1000;
    m.on_loss(&LossEvent {
        lost: 5,
        ..Default::default()
    });
    let last = m.last_change;
    let t = last + 50 * NS_PER_MS;
    assert!(t >= t0 || t0 - t < 200 * NS_PER_MS);
    m.on_probe_ack(t, t - 100 * NS_PER_MS, 100.0);
    assert!(m.p() > 1e-4);
    assert_eq!(m.s_target(), s0, "blocked within T");
    assert!(m.recompute_pending);
    assert_eq!(m.next_timer(), Some(last + 200 * NS_PER_MS));
    // Deferred, not dropped: at the end of the 200 ms the rate follows the new b_target.
    m.on_timer(last + 200 * NS_PER_MS);
    assert!(!m.recompute_pending);
    assert!(m.s_target() < s0);
    let b = m.b_target();
    assert!((m.s_target() - s_target_startup(b, 0.12, 0.0, s0)).abs() < 1e-9);
    assert_eq!(m.last_change, last + 200 * NS_PER_MS);
}

#[test]
fn late_probe_quiesces_until_a_probe_ack_or_rto() {
    let (mut m, mut seq, now) = started(100.0, 100.0);
    m.pairs_sent = m.cfg.pairs; // no more pairs: every packet due is a probe
    assert!(!m.quiesced());
    let mut sent = Vec::new();
    send_all_n(&mut m, now, &mut seq, &mut sent, 1);
    let (pseq, fl, at) = sent[0];
    assert_eq!(
        fl & flags::PROBE,
        flags::PROBE,
        "the first packet after start-up is a probe"
    );
    // Deadline: send time + RTT_avg (100 ms) + desired spacing (15 ms).
    assert_eq!(m.next_timer(), Some(at + 115 * NS_PER_MS));
    m.on_timer(at + 115 * NS_PER_MS);
    assert!(m.quiesced());
    // An ordinary packet's ACK does not end it (the paper's receiver would not have sent it) …
    let mut a = ack_of(pseq + 1, 0, at, 130 * NS_PER_MS, 0);
    m.on_ack(&a);
    assert!(m.quiesced());
    // … the late probe's ACK does.
    a = ack_of(pseq, fl, at, 140 * NS_PER_MS, 0);
    m.on_ack(&a);
    assert!(!m.quiesced());
    // The RTO also ends it; the 1 s safety net too.
    let t = at + 400 * NS_PER_MS;
    m.next_probe = 0;
    send_all_n(&mut m, t, &mut seq, &mut sent, 1);
    let deadline = m.next_timer().unwrap();
    m.on_timer(deadline);
    assert!(m.quiesced());
    m.on_timeout(&TimeoutEvent {
        now: deadline + NS_PER_MS,
        ..Default::default()
    });
    assert!(!m.quiesced());
    m.next_probe = 0;
    send_all_n(&mut m, deadline + 2 * NS_PER_MS, &mut seq, &mut sent, 1);
    let d2 = m.next_timer().unwrap();
    m.on_timer(d2);
    assert!(m.quiesced());
    assert_eq!(m.next_timer(), Some(d2 + NS_PER_SEC));
    m.on_timer(d2 + NS_PER_SEC);
    assert!(!m.quiesced());
}

fn send_all_n(
    m: &mut Madison,
    now: Nanos,
    seq: &mut u64,
    out: &mut Vec<(u64, u8, Nanos)>,
    n: usize,
) {
    for _ in 0..n {
        let mut ctx = SendCtx {
            now,
            seq: *seq,
            ..Default::default()
        };
        m.on_send(&mut ctx);
        out.push((*seq, ctx.flags, now));
        *seq += 1;
    }
}

#[test]
fn probes_are_exponentially_spaced_with_the_desired_mean() {
    let (mut m, _, _) = started(100.0, 100.0);
    // 200 000 gaps at mean max(1/S, 15 ms) = 15 ms: mean within 1% (σ/√n = 0.22%), and the
    // exponential's P(gap > mean) = e^−1.
    let gaps: Vec<f64> = (0..200_000)
        .map(|_| m.draw_probe_gap() as f64 / 1e6)
        .collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!((mean - 15.0).abs() < 0.15, "{mean}");
    let above = gaps.iter().filter(|&&g| g > 15.0).count() as f64 / gaps.len() as f64;
    assert!((above - (-1.0f64).exp()).abs() < 0.02, "{above}");
    // Same seed → same draws.
    let (mut m2, _, _) = started(100.0, 100.0);
    let (mut m3, _, _) = started(100.0, 100.0);
    assert_eq!(m2.draw_probe_gap(), m3.draw_probe_gap());
}

#[test]
fn capacity_is_the_median_of_pair_samples() {
    let mut m = madison(&[]);
    let pair = |m: &mut Madison, seq: u64, disp: Nanos| {
        m.on_ack(&AckSample {
            acked_seq: seq,
            acked_flags: flags::PAIR_FIRST,
            rx_time: 1_000,
            ..Default::default()
        });
        m.on_ack(&AckSample {
            acked_seq: seq + 1,
            acked_flags: flags::PAIR_SECOND,
            acked_bytes: 1448,
            rx_time: 1_000 + disp,
            ..Default::default()
        });
    };
    pair(&mut m, 10, 120_000); // 100 Mbit/s
    pair(&mut m, 20, 240_000); // widened by a packet in between: 50
    pair(&mut m, 30, 120_000);
    assert!((m.capacity_mbps().unwrap() - 100.0).abs() < 1e-9);
    pair(&mut m, 40, 60_000); // compressed: 200
    assert!((m.capacity_mbps().unwrap() - 100.0).abs() < 1e-9);
    // A fixed capacity overrides the estimate.
    let mut m = madison(&[("capacity_mbps", 42.0)]);
    pair(&mut m, 10, 120_000);
    assert_eq!(m.capacity_mbps(), Some(42.0));
}

#[test]
fn params_and_state() {
    let p: Params = [("p_mn".to_string(), ParamValue::Num(1.0))]
        .into_iter()
        .collect();
    let env = SenderEnv::default();
    let e = Madison::new(&env, &p).err().unwrap();
    assert_eq!(e.field, "p_mn");
    assert!(e.message.contains("p_min"));
    let p: Params = [("probe_spacing_min".to_string(), ParamValue::Num(0.5))]
        .into_iter()
        .collect();
    assert_eq!(
        Madison::new(&env, &p).err().unwrap().field,
        "probe_spacing_min"
    );
    // State keys are the same before and after start-up (stable for the life of the flow).
    let keys = |m: &Madison| {
        let mut out = Vec::new();
        m.state(&mut out);
        out.into_iter().map(|(k, _)| k).collect::<Vec<_>>()
    };
    let (m, _, _) = started(100.0, 100.0);
    assert_eq!(keys(&madison(&[])), keys(&m));
    for k in [
        "S_target_bps",
        "b_target",
        "p",
        "U",
        "X_xt_bps",
        "n",
        "n_D",
        "C_est",
        "rtt_avg",
        "rtt_min",
        "b_bar",
    ] {
        assert!(keys(&m).contains(&k), "{k}");
    }
}
