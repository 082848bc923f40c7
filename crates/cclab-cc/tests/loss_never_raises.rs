//! Every algorithm: a loss event never raises the congestion window (above the 2-packet floor).
//!
//! The case that matters is the one the shared Reno rule got wrong (docs/algorithms/newreno.md,
//! DECISION on ssthresh): a loss event whose FlightSize (sent, not cumulatively acknowledged) is far
//! above cwnd, as while a hole stays unrepaired. RFC 5681's ssthresh = FlightSize/2 then raised cwnd
//! (measured: 647 → 3325 packets). Each algorithm is driven through slow start and congestion
//! avoidance with ACKs, then given loss events with FlightSize = cwnd + 3, 10 × cwnd and 1; also after
//! a burst ACK that fills a long-standing hole (a rate estimate such as Westwood+'s sees a whole
//! flight delivered at once).

use cclab_cc::cc::{AckSample, CongestionControl, LossEvent};
use cclab_cc::params::Params;
use cclab_cc::registry::{build_sender, SenderEnv, SENDER_NAMES};
use cclab_cc::time::{Nanos, NS_PER_MS};

const RTT: Nanos = 40 * NS_PER_MS;

fn ack(now: Nanos, n: u32, delivered: u64) -> AckSample {
    AckSample {
        now,
        newly_acked: n,
        cum_advanced: true,
        rtt: Some(RTT),
        srtt: RTT,
        min_rtt: RTT,
        in_flight: 10,
        delivered,
        ..Default::default()
    }
}

fn loss(now: Nanos, in_flight: u32) -> LossEvent {
    LossEvent {
        now,
        in_flight,
        lost: 1,
        srtt: RTT,
        min_rtt: RTT,
        ecn: false,
    }
}

/// Feeds `n` one-packet ACKs spaced by `gap`, then returns the clock.
fn drive(
    cc: &mut dyn CongestionControl,
    mut now: Nanos,
    n: u32,
    gap: Nanos,
    delivered: &mut u64,
) -> Nanos {
    for _ in 0..n {
        now += gap;
        *delivered += 1;
        cc.on_ack(&ack(now, 1, *delivered));
        if let Some(t) = cc.next_timer() {
            if t <= now {
                cc.on_timer(now);
            }
        }
    }
    now
}

#[test]
fn a_loss_event_never_increases_cwnd() {
    let env = SenderEnv {
        seed: 1,
        ..SenderEnv::default()
    };
    for &name in SENDER_NAMES {
        let mut cc = build_sender(name, &Params::new(), &env).unwrap().cc;
        let (mut now, mut delivered) = (0, 0u64);
        let check = |cc: &mut dyn CongestionControl, now: Nanos, in_flight: u32, what: &str| {
            let before = cc.cwnd();
            cc.on_loss(&loss(now, in_flight));
            let after = cc.cwnd();
            assert!(
                after <= before.max(2.0),
                "{name}: {what}: loss with FlightSize {in_flight} raised cwnd {before} -> {after}"
            );
        };
        for round in 0..6 {
            // Grow (slow start first, then congestion avoidance after the first loss).
            now = drive(cc.as_mut(), now, 400, NS_PER_MS / 4, &mut delivered);
            let w = cc.cwnd().max(1.0) as u32;
            let in_flight = match round % 3 {
                0 => w + 3,
                1 => 10 * w + 100,
                _ => 1,
            };
            check(cc.as_mut(), now, in_flight, "after ACKs");
        }
        // A hole that stalled for seconds fills: one ACK delivers a whole large flight.
        now = drive(cc.as_mut(), now, 200, NS_PER_MS / 4, &mut delivered);
        now += RTT;
        delivered += 20_000;
        cc.on_ack(&AckSample {
            newly_acked: 20_000,
            ..ack(now, 0, delivered)
        });
        let w = cc.cwnd().max(1.0) as u32;
        check(
            cc.as_mut(),
            now + NS_PER_MS,
            10 * w + 100,
            "after a hole-filling ACK",
        );
    }
}
