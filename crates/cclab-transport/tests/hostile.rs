//! The transport's state machines under hostile segments: an honest transfer (`common/world.rs`) with
//! arbitrary parsed `DataSegment`s and `AckSegment`s injected at arbitrary times — sequence numbers
//! anywhere in u64 (extremes and the flow's own range included), arbitrary SACK blocks, block counts,
//! flags, timestamps. Asserted: no panic, the invariants `World::check` lists, and against a blind
//! attacker the honest transfer completes within a bounded virtual time.

mod common;

use cclab_cc::cc::Recovery;
use cclab_cc::time::{Nanos, NS_PER_MS, NS_PER_SEC};
use cclab_transport::{AckSegment, DataSegment, SackBlock};
use common::world::{Hostile, Params, World, MSS};
use proptest::prelude::*;

/// Sequence numbers: anywhere, the extremes, and the flow's own range (where checks are subtle).
fn seq() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        0u64..200,
        Just(u64::MAX),
        (u64::MAX - 70)..=u64::MAX,
        Just(1u64 << 63),
    ]
}

/// Timestamps: anywhere and the extremes (a blind attacker does not know the flow's clock).
fn stamp() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        Just(0u64),
        Just(1u64),
        Just(u64::MAX),
        0u64..10 * NS_PER_SEC
    ]
}

fn data() -> impl Strategy<Value = DataSegment> {
    (
        seq(),
        prop_oneof![0..=MSS, any::<u32>()],
        any::<u8>(),
        stamp(),
        any::<u32>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(seq, payload, flags, ts, fwd_field, ect, ce)| DataSegment {
                seq,
                payload,
                flags,
                ts,
                fwd_field,
                ect,
                ce,
            },
        )
}

fn block() -> impl Strategy<Value = SackBlock> {
    (seq(), seq()).prop_map(|(start, end)| SackBlock { start, end })
}

fn ack() -> impl Strategy<Value = AckSegment> {
    (
        seq(),
        [block(), block(), block()],
        prop_oneof![0u8..=3, any::<u8>()],
        stamp(),
        stamp(),
        seq(),
        any::<u8>(),
        prop_oneof![0..=MSS, any::<u32>()],
        any::<u32>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                cum_ack,
                sack,
                n_sack,
                ts_echo,
                rx_time,
                acked_seq,
                acked_flags,
                acked_bytes,
                echo_field,
                ece,
            )| {
                AckSegment {
                    cum_ack,
                    sack,
                    n_sack,
                    ts_echo,
                    rx_time,
                    acked_seq,
                    acked_flags,
                    acked_bytes,
                    echo_field,
                    ece,
                }
            },
        )
}

/// When: during the transfer (it takes ~0.2 s honest), mostly early.
fn when() -> impl Strategy<Value = Nanos> {
    prop_oneof![0..300 * NS_PER_MS, 0..2 * NS_PER_SEC]
}

fn params() -> impl Strategy<Value = Params> {
    (
        0usize..3,
        1u32..=2,
        prop_oneof![Just(0u64), 5u64..40],
        8u32..80,
    )
        .prop_map(|(rec, delayed_ack, loss_every, max_window)| {
            let (sack, recovery) = [
                (true, Recovery::Sack),
                (false, Recovery::NewReno),
                (false, Recovery::Reno),
            ][rec];
            Params {
                sack,
                recovery,
                delayed_ack,
                loss_every,
                max_window,
                ..Params::default()
            }
        })
}

/// Bounded virtual time for a 120-packet transfer: honest it takes well under a second; hostile
/// input may cost it RTOs (each backs off from 200 ms), never more than this.
const DEADLINE: Nanos = 60 * NS_PER_SEC;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn hostile_data_cannot_stall_or_corrupt_the_receiver(
        p in params(),
        hostile in prop::collection::vec((when(), data()), 1..30),
    ) {
        let h: Vec<_> = hostile.into_iter().map(|(t, d)| (t, Hostile::Data(d))).collect();
        let mut w = World::reno(p);
        w.run(&h, DEADLINE);
        w.assert_completed();
    }

    #[test]
    fn blind_hostile_acks_cannot_stall_the_sender(
        p in params(),
        hostile in prop::collection::vec((when(), ack()), 1..30),
    ) {
        let h: Vec<_> = hostile.into_iter().map(|(t, a)| (t, Hostile::Ack(a))).collect();
        let mut w = World::reno(p);
        w.run(&h, DEADLINE);
        if w.out.informed_acks == 0 {
            w.assert_completed();
        }
    }

    #[test]
    fn blind_hostile_mix_cannot_stall_the_transfer(
        p in params(),
        hostile in prop::collection::vec(
            (when(), prop_oneof![data().prop_map(Hostile::Data), ack().prop_map(Hostile::Ack)]),
            1..40,
        ),
    ) {
        let mut w = World::reno(p);
        w.run(&hostile, DEADLINE);
        if w.out.informed_acks == 0 {
            w.assert_completed();
        }
    }
}

/// The review's first finding: one forged data header with seq = 2^64 − 1.
#[test]
fn forged_data_at_the_top_of_the_sequence_space() {
    let d = DataSegment {
        seq: u64::MAX,
        payload: MSS,
        ts: 5,
        ..Default::default()
    };
    let mut w = World::reno(Params::default());
    w.run(&[(1_000, Hostile::Data(d))], DEADLINE);
    w.assert_completed();
}

/// An ACK for data never sent (cum_ack beyond snd_nxt), from a blind attacker, while packet 0 (the
/// first transmission of every 7th packet is lost) is missing at the receiver.
#[test]
fn forged_ack_beyond_snd_nxt() {
    let a = AckSegment {
        cum_ack: u64::MAX,
        ts_echo: 5,
        ..Default::default()
    };
    let mut w = World::reno(Params {
        loss_every: 7,
        ..Params::default()
    });
    w.run(&[(1_000, Hostile::Ack(a))], DEADLINE);
    w.assert_completed();
}
