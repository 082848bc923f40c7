//! Forged data inside the receive window: what it did without a data key, and that
//! with one (`Config::data_key`, the real datapath) it moves nothing the honest flow depends on. The
//! harness is `common/world.rs` (an honest finite transfer on a virtual clock, FIFO link).
//!
//! The bound, asserted: against forged data, a keyed flow runs *exactly* as it does with no attacker —
//! the same data packets at the same times (so the same ACKs, RTT samples, window and recovery), every
//! byte delivered once and no forged one, one-way-delay statistics over honest packets only, no ACK
//! refused — and the receiver counts every forged segment (`RejectedData::unverified`, or
//! `beyond_window` / `oversized` where those apply first).

mod common;

use cclab_cc::cc::Recovery;
use cclab_cc::time::{Nanos, NS_PER_MS, NS_PER_SEC};
use cclab_transport::DataSegment;
use common::world::{Hostile, Params, World, MSS, T0};
use proptest::prelude::*;

const DEADLINE: Nanos = 60 * NS_PER_SEC;

/// Runs `p` with `forged` injected, collecting one-way delays over the whole run.
fn run(p: Params, forged: &[(Nanos, DataSegment)]) -> World {
    let mut w = World::reno(p);
    w.r.collect_window_stats(T0, T0 + DEADLINE);
    let h: Vec<_> = forged.iter().map(|&(t, d)| (t, Hostile::Data(d))).collect();
    w.run(&h, DEADLINE);
    w.assert_completed();
    w.assert_counted();
    w
}

/// The red team's attack in small: forged segments at every other sequence number of the flow, sent
/// before and while the honest data flows, with a 100-byte payload and a timestamp of 1 ns.
fn spray(n: u64) -> Vec<(Nanos, DataSegment)> {
    (0..n)
        .map(|k| {
            let d = DataSegment {
                seq: 2 * k + 1,
                payload: 100,
                ts: 1,
                ..Default::default()
            };
            (k * 50_000, d) // one every 50 µs from the start
        })
        .collect()
}

fn params(keyed: bool) -> Params {
    Params {
        pkts: 1000,
        max_window: 256,
        keyed,
        ..Params::default()
    }
}

/// Without a key the receiver takes in-window forgeries: forged bytes are delivered in place of
/// honest ones, its ACKs acknowledge packets the sender has not sent (which the sender refuses in
/// part: `beyond_snd_nxt`, `bad_sack_blocks`), and a forged timestamp reads as a one-way delay of the
/// whole run. This is the mechanism behind the red team's numbers; the keyed test below is the fix.
#[test]
fn unkeyed_forged_data_moves_the_honest_flows_state() {
    let honest = run(params(false), &[]);
    let w = run(params(false), &spray(600));
    let rej = w.s.rejected();
    let owd_max = |w: &World| w.r.window_stats().unwrap().owd.percentile_s(100).unwrap();
    eprintln!(
        "unkeyed: delivered {} (honest {}), rejected acks {rej:?}, max one-way delay {:.3} s (honest {:.3})",
        w.r.delivered_bytes(),
        honest.r.delivered_bytes(),
        owd_max(&w),
        owd_max(&honest)
    );
    assert!(
        w.r.delivered_bytes() < 1000 * MSS as u64,
        "forged bytes delivered"
    );
    assert!(rej.total() > 0, "honest ACKs refused in part: {rej:?}");
    assert!(
        owd_max(&w) > 1.0,
        "a forged timestamp of 1 ns reads as ~T0 = 1 s"
    );
}

#[test]
fn keyed_forged_data_moves_nothing() {
    let honest = run(params(true), &[]);
    let w = run(params(true), &spray(600));
    assert_same_as_honest(&w, &honest);
    // Those at or beyond rcv_nxt + 256 are refused as outside the window first, the rest unverified.
    let rej = w.r.rejected();
    assert_eq!((rej.total(), rej.oversized), (600, 0), "{rej:?}");
    assert!(rej.unverified > 0, "{rej:?}");
}

/// The keyed world `w` ran exactly as `honest` (the same parameters, no attacker).
fn assert_same_as_honest(w: &World, honest: &World) {
    assert_eq!(
        w.sent, honest.sent,
        "the same data packets, at the same times"
    );
    assert_eq!(w.r.delivered_bytes(), w.p.pkts * MSS as u64);
    assert_eq!(w.r.received_pkts(), honest.r.received_pkts());
    assert_eq!(w.s.rejected().total(), 0, "{:?}", w.s.rejected());
    assert_eq!(
        format!("{:?}", w.s.stats()),
        format!("{:?}", honest.s.stats())
    );
    let (a, b) = (
        &w.r.window_stats().unwrap().owd,
        &honest.r.window_stats().unwrap().owd,
    );
    assert_eq!(
        (a.count(), a.percentile_s(99), a.percentile_s(100)),
        (b.count(), b.percentile_s(99), b.percentile_s(100)),
        "one-way delays of honest packets only"
    );
}

/// In-window guesses: sequence numbers in and around the flow's range, any payload up to the MSS,
/// flags, timestamps, CE, and a tag that is 0 or arbitrary (a blind attacker cannot compute one).
fn forged() -> impl Strategy<Value = DataSegment> {
    (
        0u64..300,
        0..=MSS,
        any::<u8>(),
        prop_oneof![Just(1u64), any::<u64>(), T0..T0 + NS_PER_SEC],
        any::<bool>(),
        prop_oneof![Just(0u64), any::<u64>()],
    )
        .prop_map(|(seq, payload, flags, ts, ce, tag)| DataSegment {
            seq,
            payload,
            flags,
            ts,
            ce,
            tag,
            ..Default::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Up to 1 200 forged segments (the red team's count) interleaved with a 120-packet transfer under
    /// each recovery, delayed ACKs and honest loss: the keyed flow runs exactly as without them.
    #[test]
    fn keyed_forged_data_moves_nothing_under_any_recovery(
        rec in 0usize..3,
        delayed_ack in 1u32..=2,
        loss_every in prop_oneof![Just(0u64), 5u64..40],
        attack in prop::collection::vec((0..300 * NS_PER_MS, forged()), 1..1200),
    ) {
        let (sack, recovery) = [
            (true, Recovery::Sack),
            (false, Recovery::NewReno),
            (false, Recovery::Reno),
        ][rec];
        let p = Params { sack, recovery, delayed_ack, loss_every, keyed: true, ..Params::default() };
        let honest = run(p, &[]);
        let w = run(p, &attack);
        assert_same_as_honest(&w, &honest);
        prop_assert_eq!(w.r.rejected_pkts(), attack.len() as u64);
    }
}
