//! Every algorithm: a reduction found spurious and undone (`undo_cwnd`, Linux's `undo_cwnd`) gives the
//! window back. Each algorithm is driven through slow start and congestion avoidance with ACKs, then
//! given a loss event (fast recovery) or an RTO, then the undo with the window and threshold from just
//! before it, as the transport passes them.
//!
//! The rule checked is Linux's `tcp_reno_undo_cwnd`, cwnd ≥ the prior window, which every algorithm
//! follows (each file says why its own undo is that, or why it has nothing to undo: MaxNet, Madison and
//! the external controller never reduced the window). Reno-like algorithms restore ssthresh too
//! (`tcp_undo_cwnd_reduction`); those whose ssthresh is informational (delay- and rate-based, `∞`) are
//! checked for the window only.

use cclab_cc::cc::{AckSample, CongestionControl, LossEvent, TimeoutEvent};
use cclab_cc::params::Params;
use cclab_cc::registry::{build_sender, SenderEnv, SENDER_NAMES};
use cclab_cc::time::{Nanos, NS_PER_MS};

const RTT: Nanos = 40 * NS_PER_MS;

/// Algorithms whose ssthresh does not follow Reno's (BBR and Copa keep none; BBRv3 restores its model,
/// not a threshold): checked for the window only.
const NO_SSTHRESH_RESTORE: &[&str] = &["bbr", "bbr3", "copa", "madison", "maxnet", "external"];

fn ack(now: Nanos, delivered: u64) -> AckSample {
    AckSample {
        now,
        newly_acked: 1,
        cum_advanced: true,
        rtt: Some(RTT),
        srtt: RTT,
        min_rtt: RTT,
        in_flight: 10,
        delivered,
        ..Default::default()
    }
}

fn drive(cc: &mut dyn CongestionControl, mut now: Nanos, n: u32, delivered: &mut u64) -> Nanos {
    for _ in 0..n {
        now += NS_PER_MS / 4;
        *delivered += 1;
        cc.on_ack(&ack(now, *delivered));
        if let Some(t) = cc.next_timer() {
            if t <= now {
                cc.on_timer(now);
            }
        }
    }
    now
}

/// Window algorithms whose loss and RTO responses lower cwnd: for them the reduction must be seen
/// before the undo (so the checks below do not pass vacuously).
const REDUCES: &[&str] = &[
    "newreno",
    "cubic",
    "bic",
    "highspeed",
    "scalable",
    "htcp",
    "vegas",
    "lp",
    "hybla",
    "westwood",
    "illinois",
    "yeah",
    "veno",
    "dctcp",
    "binomial",
    "africa",
    "ledbat",
    "libra",
    "fast",
];

/// Grows `name`, applies `reduce`, undoes it; returns (prior cwnd, prior ssthresh, cwnd after the
/// reduction, cwnd and ssthresh after the undo).
fn reduce_then_undo(
    name: &str,
    reduce: &dyn Fn(&mut dyn CongestionControl, Nanos),
) -> (f64, f64, f64, f64, f64) {
    let env = SenderEnv {
        seed: 1,
        ..SenderEnv::default()
    };
    let mut cc = build_sender(name, &Params::new(), &env).unwrap().cc;
    let mut delivered = 0;
    let mut now = drive(cc.as_mut(), 0, 400, &mut delivered);
    // A first loss ends slow start, then congestion avoidance for a while.
    let w = cc.cwnd().min(1e6) as u32;
    cc.on_loss(&LossEvent {
        now,
        in_flight: w,
        lost: 1,
        srtt: RTT,
        min_rtt: RTT,
        ecn: false,
    });
    cc.on_recovery_end(now);
    now = drive(cc.as_mut(), now, 400, &mut delivered);
    let (prior_cwnd, prior_ssthresh) = (cc.cwnd(), cc.ssthresh());
    reduce(cc.as_mut(), now + NS_PER_MS);
    let reduced = cc.cwnd();
    cc.undo_cwnd(prior_cwnd, prior_ssthresh);
    (
        prior_cwnd,
        prior_ssthresh,
        reduced,
        cc.cwnd(),
        cc.ssthresh(),
    )
}

fn check(what: &str, reduce: &dyn Fn(&mut dyn CongestionControl, Nanos)) {
    for &name in SENDER_NAMES {
        let (pc, ps, reduced, c, s) = reduce_then_undo(name, reduce);
        if REDUCES.contains(&name) {
            assert!(reduced < pc, "{name}: {what} did not reduce cwnd {pc}");
        }
        // Exact comparison: undo takes a max, so the prior value comes back bit for bit.
        assert!(
            c >= pc,
            "{name}: {what}: undo left cwnd {c} below the prior {pc}"
        );
        if !NO_SSTHRESH_RESTORE.contains(&name) {
            assert!(
                s >= ps,
                "{name}: {what}: undo left ssthresh {s} below the prior {ps}"
            );
        }
    }
}

#[test]
fn undoing_a_spurious_fast_recovery_restores_the_window() {
    check("fast recovery", &|cc, now| {
        let w = cc.cwnd().min(1e6) as u32;
        cc.on_loss(&LossEvent {
            now,
            in_flight: w,
            lost: 1,
            srtt: RTT,
            min_rtt: RTT,
            ecn: false,
        });
    });
}

#[test]
fn undoing_a_spurious_rto_restores_the_window() {
    check("RTO", &|cc, now| {
        let w = cc.cwnd().min(1e6) as u32;
        cc.on_timeout(&TimeoutEvent {
            now,
            in_flight: w,
            backoffs: 1,
        });
    });
}
