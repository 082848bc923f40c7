//! The transport's state machines under hostile segments: an honest transfer (`common/world.rs`) with
//! arbitrary parsed `DataSegment`s and `AckSegment`s injected at arbitrary times — sequence numbers
//! anywhere in u64 (extremes and the flow's own range included), arbitrary SACK blocks, block counts,
//! flags, timestamps. Asserted: no panic, the invariants `World::check` lists, and against a blind
//! attacker the honest transfer completes within a bounded virtual time.

mod common;

use cclab_cc::algorithms::reno::Reno;
use cclab_cc::cc::Recovery;
use cclab_cc::time::{Nanos, NS_PER_MS, NS_PER_SEC};
use cclab_transport::{AckSegment, Config, DataSegment, RejectedAcks, SackBlock, Sender};
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

fn data() -> BoxedStrategy<DataSegment> {
    (
        seq(),
        prop_oneof![0..=MSS, any::<u32>()],
        any::<u8>(),
        stamp(),
        any::<u32>(),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![Just(0u64), any::<u64>()],
    )
        .prop_map(
            |(seq, payload, flags, ts, fwd_field, ect, ce, tag)| DataSegment {
                seq,
                payload,
                flags,
                ts,
                fwd_field,
                ect,
                ce,
                tag,
            },
        )
        .boxed()
}

fn block() -> impl Strategy<Value = SackBlock> {
    (seq(), seq()).prop_map(|(start, end)| SackBlock { start, end })
}

fn ack() -> BoxedStrategy<AckSegment> {
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
                    // Hostile ACKs claim D-SACK too; drawn from a bit already random (the strategy
                    // tuple is at proptest's 12-element limit).
                    dsack: acked_flags & 0x80 != 0,
                }
            },
        )
        .boxed()
}

/// When: during the transfer (it takes ~0.2 s honest), mostly early.
fn when() -> impl Strategy<Value = Nanos> {
    prop_oneof![0..300 * NS_PER_MS, 0..2 * NS_PER_SEC]
}

fn params() -> impl Strategy<Value = Params> {
    (
        0usize..3,
        1u32..=3,
        prop_oneof![Just(0u64), 5u64..40],
        8u32..80,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(rec, delayed_ack, loss_every, max_window, keyed, linux_sender)| {
                let (sack, recovery) = [
                    (true, Recovery::Sack),
                    (false, Recovery::NewReno),
                    (false, Recovery::Reno),
                ][rec];
                Params {
                    sack,
                    recovery,
                    // 3: Linux's receiver (quick ACKs, then every second segment, 40 ms) with D-SACK.
                    delayed_ack: delayed_ack.min(2),
                    linux_receiver: delayed_ack == 3,
                    // RACK-TLP and the undo of spurious reductions (D-SACK, timestamps, F-RTO).
                    linux_sender,
                    loss_every,
                    max_window,
                    keyed,
                    ..Params::default()
                }
            },
        )
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
        w.assert_counted();
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
        w.assert_counted();
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
        w.assert_counted();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// An on-path attacker (it echoes real transmissions) can break the transfer — it can acknowledge
    /// data the receiver lacks — but not the sender's invariants, and nothing panics.
    #[test]
    fn on_path_hostile_acks_keep_the_invariants(
        p in params(),
        hostile in prop::collection::vec(
            (when(), prop_oneof![
                data().prop_map(Hostile::Data),
                ack().prop_map(Hostile::Ack),
                (ack(), any::<usize>()).prop_map(|(a, k)| Hostile::EchoAck(a, k)),
            ]),
            1..40,
        ),
    ) {
        let mut w = World::reno(p);
        w.run(&hostile, DEADLINE);
        w.assert_counted();
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
    assert_eq!(w.r.rejected().beyond_window, 1);
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
    assert_eq!(w.s.rejected().unknown_echo, 1);
}

/// Forged in-window data ahead of the sender (packets 0..20 before the first honest one arrives): the
/// receiver takes them (data is not authenticated), so its honest ACKs acknowledge packets the sender
/// has not sent yet; the sender takes such a cumulative ACK as snd_nxt, counts it, and completes.
#[test]
fn forged_data_ahead_of_the_sender_is_survived() {
    let h: Vec<_> = (0..20u64)
        .map(|seq| {
            let d = DataSegment {
                seq,
                payload: MSS,
                ts: 7,
                ..Default::default()
            };
            (1_000 + seq, Hostile::Data(d))
        })
        .collect();
    let mut w = World::reno(Params::default());
    w.run(&h, DEADLINE);
    w.assert_completed();
    assert!(w.s.rejected().beyond_snd_nxt > 0, "{:?}", w.s.rejected());
    assert_eq!(w.r.rejected_pkts(), 0);
}

fn sender() -> (Sender, Vec<DataSegment>) {
    let cfg = Config {
        mss: MSS,
        ..Config::default()
    };
    let cc = Reno::new("newreno", 10.0, &cclab_cc::params::Params::new()).unwrap();
    let mut s = Sender::new(cfg, Box::new(cc), None, 0);
    let w: Vec<_> = std::iter::from_fn(|| s.poll_transmit(1_000)).collect();
    assert_eq!(w.len(), 10);
    (s, w)
}

/// The ACK our receiver sends for `d`.
fn echo(d: &DataSegment, cum_ack: u64, blocks: &[(u64, u64)]) -> AckSegment {
    let mut a = AckSegment {
        cum_ack,
        ts_echo: d.ts,
        rx_time: d.ts + 5 * NS_PER_MS,
        acked_seq: d.seq,
        acked_flags: d.flags,
        acked_bytes: d.payload,
        n_sack: blocks.len() as u8,
        ..Default::default()
    };
    for (i, &(start, end)) in blocks.iter().enumerate() {
        a.sack[i] = SackBlock { start, end };
    }
    a
}

const NOW: Nanos = 20 * NS_PER_MS;

/// Each check that drops an ACK whole: nothing changes (no cumulative advance, no RTT sample, no
/// duplicate ACK counted, no recovery).
#[test]
fn acks_dropped_whole_change_nothing() {
    let (mut s, w) = sender();
    let good = echo(&w[3], 4, &[]);
    let cases = [
        AckSegment {
            ts_echo: w[3].ts + 1,
            ..good
        },
        AckSegment { ts_echo: 0, ..good },
        AckSegment {
            ts_echo: u64::MAX,
            ..good
        },
        AckSegment {
            acked_seq: 2,
            ..good
        },
        AckSegment {
            acked_flags: 0xff,
            ..good
        },
        AckSegment {
            acked_bytes: 1,
            ..good
        },
        AckSegment { n_sack: 4, ..good },
        AckSegment {
            rx_time: NOW + 1,
            ..good
        },
    ];
    for a in &cases {
        for _ in 0..4 {
            s.handle_ack(NOW, &AckSegment { cum_ack: 0, ..*a }); // would be duplicate ACKs
            s.handle_ack(NOW, a);
        }
    }
    assert_eq!((s.snd_una(), s.srtt(), s.in_recovery()), (0, 0, false));
    assert_eq!(s.stats().rtt_samples, 0);
    assert_eq!(
        s.rejected(),
        RejectedAcks {
            unknown_echo: 6 * 8,
            too_many_blocks: 8,
            rx_time_future: 8,
            ..Default::default()
        }
    );
    s.handle_ack(NOW, &good);
    assert_eq!((s.snd_una(), s.stats().rtt_samples), (4, 1));
    assert_eq!(s.rejected().dropped(), 64);
}

/// SACK blocks no honest receiver sends are ignored and counted; the rest of the ACK is taken.
#[test]
fn bad_sack_blocks_are_ignored() {
    let (mut s, w) = sender();
    // Inverted, empty, beyond snd_nxt (10), at or below the ACK's cumulative point.
    let a = echo(&w[5], 2, &[(6, 5), (7, 7), (8, 11)]);
    s.handle_ack(NOW, &a);
    let a = echo(&w[6], 2, &[(2, 4), (u64::MAX, 0), (1, 3)]);
    s.handle_ack(NOW, &a);
    assert_eq!(s.snd_una(), 2);
    assert_eq!(s.rejected().bad_sack_blocks, 6);
    assert_eq!(s.in_flight(), 8, "nothing SACKed");
    // A reordered (stale) ACK: cumulative point 1 < snd_una, a block covering snd_una (2) is hostile,
    // one wholly below it is only stale.
    s.handle_ack(NOW, &echo(&w[6], 1, &[(2, 4)]));
    s.handle_ack(NOW, &echo(&w[6], 0, &[(1, 2)]));
    assert_eq!(s.rejected().bad_sack_blocks, 7);
    // A valid block among bad ones is taken.
    s.handle_ack(NOW, &echo(&w[7], 2, &[(7, 8), (9, 12)]));
    assert_eq!(s.rejected().bad_sack_blocks, 8);
    assert_eq!(s.in_flight(), 7, "packet 7 SACKed");
}

/// What an on-path attacker can still do (it echoes a real transmission): SACK packets the receiver
/// lacks. When the cumulative ACK then reaches one of them, it is unmarked and resent (RFC 2018 §8),
/// so the flow does not wait for it forever.
#[test]
fn a_forged_sack_is_repaired_when_the_cumulative_ack_reaches_it() {
    let (mut s, w) = sender();
    s.handle_ack(NOW, &echo(&w[0], 0, &[(2, 10)])); // forged: only 0 and 1 arrived
    assert!(s.in_recovery());
    let t = NOW + NS_PER_MS;
    let resent: Vec<u64> = std::iter::from_fn(|| s.poll_transmit(t))
        .map(|d| d.seq)
        .collect();
    assert!(!resent.contains(&2), "2 is believed SACKed: {resent:?}");
    s.handle_ack(t, &echo(&w[1], 2, &[])); // the receiver's truth: it lacks 2
    assert_eq!(s.rejected().sacked_head, 1);
    let later = t + NS_PER_MS;
    let resent: Vec<u64> = std::iter::from_fn(|| s.poll_transmit(later))
        .map(|d| d.seq)
        .collect();
    assert_eq!(resent.first(), Some(&2), "{resent:?}");
}

/// Inherent without authentication: duplicate ACKs with valid echoes (an on-path attacker replaying
/// the receiver's ACK for packet 0, or echoing packets it saw) trigger a fast retransmit and halve
/// the window, as they would in TCP.
#[test]
fn on_path_duplicate_acks_still_trigger_a_fast_retransmit() {
    let (mut s, w) = sender();
    s.handle_ack(NOW, &echo(&w[0], 1, &[]));
    let cwnd = s.cc().cwnd();
    for d in &w[1..4] {
        s.handle_ack(NOW, &echo(d, 1, &[]));
    }
    assert!(s.in_recovery());
    assert!(s.cc().cwnd() < cwnd);
    assert_eq!(s.rejected().total(), 0, "nothing here is detectable");
}
