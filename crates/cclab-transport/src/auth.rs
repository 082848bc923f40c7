//! Data authentication: a keyed tag on every data segment, so that a receiver holding the flow's key
//! refuses data its sender did not send (docs/real-datapath.md, "What a hostile packet can and cannot
//! do").
//!
//! Why: data segments carry sequence numbers and nothing else a receiver could check them against. An
//! attacker who can send with the sender's address (a raw socket, anything on the path) and guesses a
//! sequence number inside the receive window — easy: it is 2²⁰ packets wide by default — moved the
//! state the honest flow depends on: forged bytes were delivered in place of honest ones, the receiver
//! acknowledged packets the sender had not sent yet (so the sender refused the honest ACKs that carried
//! them, in part), a forged timestamp entered the one-way-delay statistics, a forged CE mark halved the
//! window. RFC 5961 bounds this for TCP with the ACK field of data segments (acceptable only within a
//! window of what the receiver itself sent) and challenge ACKs; our data carries no ACK field, and a
//! receiver has nothing else to tell a guess from a packet. So the sender tags each packet with
//! SipHash-2-4 (a keyed pseudo-random function) of the fields it writes — sequence number, timestamp,
//! flags, payload length — under a per-flow key both ends hold, and the receiver verifies the tag
//! before the segment touches any state. Router-written fields (the MaxNet forward field, CE) are
//! outside the tag by necessity: the path writes them.
//!
//! The key is `Config::data_key`. The real datapath draws one per flow from the OS's random source
//! (`cclab-net`: its two endpoints live in one process). The simulator sets none: nothing but the
//! modelled network reaches its endpoints, and tagging would cost time per packet for nothing.
//!
//! On the wire (`cclab-net`'s codec) the tag fills the first 8 bytes of the payload, which is
//! otherwise zeros: no header byte and no full packet's size changes. A payload shorter than 8 bytes
//! (the last packet of a finite flow, or every packet when `packet_size` is under 68 bytes) is padded to
//! 8 bytes on the wire, so every tag is whole: a truncated one would let a blind attacker through with
//! short forgeries (1 in 256 for a 1-byte payload).

use crate::segment::DataSegment;

/// A flow's data key: the two 64-bit halves of SipHash's 128-bit key.
pub type DataKey = [u64; 2];

/// The tag the sender puts on `seg` (its `tag` field ignored).
pub fn data_tag(key: &DataKey, seg: &DataSegment) -> u64 {
    use std::hash::Hasher;
    // `std::hash::SipHasher` is SipHash-2-4 with an explicit key. It is deprecated only in favour of
    // `DefaultHasher`, whose key cannot be set (both ends must agree on it) and whose algorithm std
    // does not promise; this one's is fixed.
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new_with_keys(key[0], key[1]);
    h.write_u64(seg.seq);
    h.write_u64(seg.ts);
    h.write_u32(seg.payload);
    h.write_u8(seg.flags);
    h.finish()
}

/// Whether `seg` carries the tag its sender would have put on it under `key`.
pub fn verify(key: &DataKey, seg: &DataSegment) -> bool {
    seg.tag == data_tag(key, seg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg() -> DataSegment {
        DataSegment {
            seq: 42,
            payload: 1448,
            flags: 3,
            ts: 1_000_000_007,
            ..Default::default()
        }
    }

    #[test]
    fn a_tag_binds_the_key_and_every_field_the_sender_writes() {
        let k = [1, 2];
        let mut s = seg();
        s.tag = data_tag(&k, &s);
        assert!(verify(&k, &s));
        assert!(!verify(&[1, 3], &s), "another flow's key");
        for changed in [
            DataSegment { seq: 43, ..s },
            DataSegment { ts: s.ts + 1, ..s },
            DataSegment { flags: 2, ..s },
            DataSegment { payload: 1447, ..s },
            DataSegment {
                tag: s.tag ^ 1,
                ..s
            },
        ] {
            assert!(!verify(&k, &changed), "{changed:?}");
        }
        // What routers write is outside the tag.
        assert!(verify(
            &k,
            &DataSegment {
                fwd_field: 7,
                ce: true,
                ect: true,
                ..s
            }
        ));
    }
}
