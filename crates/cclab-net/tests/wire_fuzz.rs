//! Fuzzing the header codec with proptest: ≥ 10⁶ inputs in total (random byte strings plus mutations of
//! valid datagrams) must never panic, and every valid representation must survive `parse(emit(x))`.
//! Cases: 200k round trips + 400k random byte strings + 400k mutated datagrams = 10⁶.
//! Case counts are fixed here (not left to PROPTEST_CASES) so the acceptance number is what runs.

use cclab_net::wire::{Body, Error, Packet, Repr, FIELD_MASK};
use cclab_transport::{AckSegment, DataSegment, SackBlock, MAX_SACK_BLOCKS};
use proptest::prelude::*;

fn data_strategy() -> impl Strategy<Value = Repr> {
    (
        any::<u32>(),
        any::<u64>(),
        0u32..1600,
        any::<u8>(),
        any::<u64>(),
        0..=FIELD_MASK,
        any::<bool>(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(
            |(flow_id, seq, payload, flags, ts, fwd_field, ect, ce, tag)| Repr {
                flow_id,
                body: Body::Data(DataSegment {
                    seq,
                    payload,
                    flags,
                    ts,
                    fwd_field,
                    ect,
                    ce,
                    tag,
                }),
            },
        )
}

fn ack_strategy() -> impl Strategy<Value = Repr> {
    let block = (any::<u64>(), 1u64..1 << 20).prop_map(|(s, len)| {
        let s = s >> 1; // leave room so start + len cannot overflow
        SackBlock {
            start: s,
            end: s + len,
        }
    });
    (
        any::<u32>(),
        any::<u64>(),
        proptest::collection::vec(block, 0..=MAX_SACK_BLOCKS),
        (any::<u64>(), any::<u64>(), any::<u64>()),
        (
            any::<u8>(),
            any::<u32>(),
            0..=FIELD_MASK,
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                flow_id,
                cum_ack,
                blocks,
                (ts_echo, rx_time, acked_seq),
                (acked_flags, acked_bytes, echo_field, ece, dsack),
            )| {
                let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
                sack[..blocks.len()].copy_from_slice(&blocks);
                Repr {
                    flow_id,
                    body: Body::Ack(AckSegment {
                        cum_ack,
                        sack,
                        n_sack: blocks.len() as u8,
                        ts_echo,
                        rx_time,
                        acked_seq,
                        acked_flags,
                        acked_bytes,
                        echo_field,
                        ece,
                        // A D-SACK flag refers to the first block: only with one.
                        dsack: dsack && !blocks.is_empty(),
                    }),
                }
            },
        )
}

fn repr_strategy() -> impl Strategy<Value = Repr> {
    prop_oneof![data_strategy(), ack_strategy()]
}

/// Every accessor of a checked packet, exercised (a panic anywhere fails the test).
fn touch_all(b: &[u8]) -> Result<Repr, Error> {
    if let Ok(p) = Packet::new_checked_prefix(b) {
        let _ = (
            p.kind(),
            p.flags(),
            p.flow_id(),
            p.router_field(),
            p.ect(),
            p.ce(),
            p.ece(),
            p.dsack(),
        );
    }
    let p = Packet::new_checked(b)?;
    let _ = (
        p.kind(),
        p.flags(),
        p.flow_id(),
        p.router_field(),
        p.ect(),
        p.ce(),
        p.ece(),
        p.dsack(),
    );
    if p.is_data() {
        let _ = (p.seq(), p.ts(), p.payload_len(), p.tag());
    } else {
        let _ = (
            p.cum_ack(),
            p.ts_echo(),
            p.rx_time(),
            p.acked_seq(),
            p.acked_bytes(),
        );
        for i in 0..p.n_sack() {
            let _ = p.sack(i);
        }
    }
    Repr::parse(&p)
}

/// Whatever parses re-emits to the same header bytes: the format has no redundant encodings. (The
/// payload's content past the tag is not represented — only its length — so data compares the 32
/// header bytes and the 8 tag bytes.)
fn reemits_identically(r: &Repr, b: &[u8]) -> bool {
    let v = r.to_vec();
    match r.body {
        Body::Data(_) => v.len() == b.len() && v[..40] == b[..40],
        Body::Ack(_) => v == b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(r in repr_strategy()) {
        let v = r.to_vec();
        prop_assert_eq!(v.len(), r.buffer_len());
        prop_assert_eq!(Repr::parse_bytes(&v), Ok(r));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Arbitrary bytes; a third of them start with the magic and version so they reach the deep checks.
    #[test]
    fn random_bytes_never_panic(mut b in proptest::collection::vec(any::<u8>(), 0..200), prefix in 0u8..3) {
        if prefix == 0 && !b.is_empty() {
            b[0] = 0xCC;
            if b.len() > 1 { b[1] = 0x10 | ((b[1] & 0x0F) % 3); }
        }
        if let Ok(r) = touch_all(&b) {
            prop_assert!(reemits_identically(&r, &b));
        }
    }

    /// Valid datagrams with 1–4 bytes flipped, truncated or extended.
    #[test]
    fn mutated_valid_never_panic(
        r in repr_strategy(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
        op in 0u8..3,
    ) {
        let mut b = r.to_vec();
        for (i, x) in flips {
            let i = i.index(b.len());
            b[i] ^= x;
        }
        match op {
            0 => { let c = cut.index(b.len() + 1); b.truncate(c); }
            1 => b.push(0),
            _ => {}
        }
        if let Ok(r2) = touch_all(&b) {
            prop_assert!(reemits_identically(&r2, &b));
        }
    }
}
