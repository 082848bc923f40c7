//! Wire codec of cclab's UDP transport header: a checked view [`Packet`] over any byte buffer and a
//! [`Repr`] with `parse`/`emit` (the smoltcp pattern). After [`Packet::new_checked`] succeeds no
//! accessor can panic: every field lies inside the length that was checked.
//!
//! The header carries the transport's [`DataSegment`] and [`AckSegment`] (crate `cclab-transport`)
//! plus a flow id. All integers are big-endian (network order).
//!
//! ```text
//! common prefix (12 bytes), identical offsets in both kinds:
//!   0      magic 0xCC
//!   1      version (high nibble, = 1) | kind (low nibble: 1 data, 2 ack)
//!   2      flags (data: the packet's flags; ack: the acked packet's flags) — cclab_cc::cc::flags
//!   3      bits: data: bit0 ECT, bit1 CE; ack: bit0 ECE, bit1 D-SACK (the first SACK block reports a
//!          duplicate, RFC 2883), bits 4–5 number of SACK blocks; rest zero
//!   4..8   flow id
//!   8..11  24-bit router field: data = MaxNet forward field (written by routers); ack = echo field
//!   11     reserved, zero
//! data (32 bytes + payload, the payload at least 8 bytes long on the wire):
//!   12..20 seq          20..28 ts (sender clock, ns)      28..32 payload length
//!   32..40 tag (the payload's first 8 bytes; the rest of the payload is zeros)
//! ack (48 + 16·n bytes):
//!   12..20 cum_ack      20..28 ts_echo       28..36 rx_time
//!   36..44 acked_seq    44..48 acked_bytes   48..   n × (start u64, end u64) SACK blocks
//! ```
//!
//! DECISION (data tag in the payload): the transport's data tag (`cclab_transport::auth`, a keyed
//! hash with which the receiver refuses data its sender did not send) is carried in the payload's
//! first 8 bytes, which were zeros: no header byte and no full packet's size changes, so packets stay
//! `packet_size` bytes as the simulator counts them. A payload shorter than 8 bytes (a finite flow's
//! last packet, or any packet under a `packet_size` of 68) is padded to 8 on the wire, its length
//! field still saying the payload's: a tag cut to the payload's length would let a blind attacker
//! through with 1-byte forgeries one time in 256.
//!
//! DECISION (strictness): reserved bits must be zero, a data datagram's length must equal 32 + its
//! payload field (32 + 8 for a payload under 8 bytes), an ACK's length must equal 48 + 16·n, and SACK
//! blocks must be non-empty
//! (`start < end`; whether they lie above the cumulative ACK is the scoreboard's business, since a
//! reordered ACK may carry stale blocks), and the D-SACK bit needs a block to refer to (n ≥ 1). Anything else is [`Error::Malformed`]: a
//! transport endpoint counts and drops it, so a corrupted or foreign datagram can never reach the
//! sender's scoreboard. Strictness also makes `parse(emit(x)) == x` hold for every valid `x`.
//!
//! DECISION (fixed router-field offset): the MaxNet forward/echo field sits at bytes 8..11 in both kinds
//! so that a router (the link emulator) rewrites it after checking only the 12-byte prefix.
//! Router fields are 24 bits by definition (MaxNet's wire encoding); `emit` keeps the low 24 bits.

use cclab_transport::{AckSegment, DataSegment, SackBlock, MAX_SACK_BLOCKS};
use std::fmt;

pub const MAGIC: u8 = 0xCC;
pub const VERSION: u8 = 1;
pub const KIND_DATA: u8 = 1;
pub const KIND_ACK: u8 = 2;

/// Bytes before a data segment's payload.
pub const DATA_HEADER_LEN: usize = 32;
/// Bytes of the data tag at the start of the payload; shorter payloads are padded to this on the wire.
pub const DATA_TAG_LEN: usize = 8;
/// Bytes of an ACK without SACK blocks.
pub const ACK_HEADER_LEN: usize = 48;
/// Bytes per SACK block.
pub const SACK_BLOCK_LEN: usize = 16;
/// The largest ACK datagram.
pub const ACK_MAX_LEN: usize = ACK_HEADER_LEN + MAX_SACK_BLOCKS * SACK_BLOCK_LEN;
/// Mask of a 24-bit router field.
pub const FIELD_MASK: u32 = 0x00FF_FFFF;

/// Byte ranges of the fields (const, as in smoltcp's `field` modules).
pub mod field {
    use std::ops::Range;
    pub const MAGIC: usize = 0;
    pub const VER_KIND: usize = 1;
    pub const FLAGS: usize = 2;
    pub const BITS: usize = 3;
    pub const FLOW: Range<usize> = 4..8;
    pub const ROUTER: Range<usize> = 8..11;
    pub const RESERVED: usize = 11;
    pub const PREFIX_END: usize = 12;
    // data
    pub const SEQ: Range<usize> = 12..20;
    pub const TS: Range<usize> = 20..28;
    pub const PAYLOAD_LEN: Range<usize> = 28..32;
    pub const TAG: Range<usize> = 32..40;
    // ack
    pub const CUM_ACK: Range<usize> = 12..20;
    pub const TS_ECHO: Range<usize> = 20..28;
    pub const RX_TIME: Range<usize> = 28..36;
    pub const ACKED_SEQ: Range<usize> = 36..44;
    pub const ACKED_BYTES: Range<usize> = 44..48;
    pub const SACK: usize = 48;
}

const BIT_ECT: u8 = 1 << 0;
const BIT_CE: u8 = 1 << 1;
const BIT_ECE: u8 = 1 << 0;
/// `AckSegment::dsack`: the first SACK block is a D-SACK block. The ACK's bit 1, as the data's CE.
const BIT_DSACK: u8 = 1 << 1;
const SACK_SHIFT: u8 = 4;
const SACK_BITS: u8 = 0b11 << SACK_SHIFT;

/// Why a buffer is not a valid cclab datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Shorter than its header says.
    Truncated,
    /// Not ours: wrong magic byte or unknown version.
    NotOurs,
    /// Ours, but a field is invalid (unknown kind, reserved bits set, length mismatch, bad SACK block).
    Malformed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "truncated cclab datagram",
            Error::NotOurs => "not a cclab datagram (magic/version)",
            Error::Malformed => "malformed cclab datagram",
        })
    }
}

impl std::error::Error for Error {}

/// A data datagram's length: the header and the payload, padded to hold the tag.
fn data_len(payload: u32) -> usize {
    DATA_HEADER_LEN + (payload as usize).max(DATA_TAG_LEN)
}

#[inline]
fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[inline]
fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

#[inline]
fn be_u24(b: &[u8]) -> u32 {
    (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32
}

/// A read/write view of a cclab datagram.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checks; accessors may panic until [`Packet::check`] succeeded.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer and checks it completely (lengths, reserved bits, SACK blocks).
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let p = Packet::new_unchecked(buffer);
        p.check()?;
        Ok(p)
    }

    /// Checks only the 12-byte prefix: enough for a router to read the kind and rewrite the router field.
    pub fn new_checked_prefix(buffer: T) -> Result<Self, Error> {
        let p = Packet::new_unchecked(buffer);
        p.check_prefix()?;
        Ok(p)
    }

    fn check_prefix(&self) -> Result<(), Error> {
        let b = self.buffer.as_ref();
        if b.len() < field::PREFIX_END {
            return Err(if b.first() == Some(&MAGIC) {
                Error::Truncated
            } else {
                Error::NotOurs
            });
        }
        if b[field::MAGIC] != MAGIC || b[field::VER_KIND] >> 4 != VERSION {
            return Err(Error::NotOurs);
        }
        if b[field::RESERVED] != 0 {
            return Err(Error::Malformed);
        }
        match b[field::VER_KIND] & 0x0F {
            KIND_DATA if b[field::BITS] & !(BIT_ECT | BIT_CE) == 0 => Ok(()),
            KIND_ACK if b[field::BITS] & !(BIT_ECE | BIT_DSACK | SACK_BITS) == 0 => Ok(()),
            _ => Err(Error::Malformed),
        }
    }

    /// The full validity check behind [`Packet::new_checked`].
    pub fn check(&self) -> Result<(), Error> {
        self.check_prefix()?;
        let b = self.buffer.as_ref();
        if self.is_data() {
            if b.len() < DATA_HEADER_LEN {
                return Err(Error::Truncated);
            }
            let want = data_len(be_u32(&b[field::PAYLOAD_LEN])) as u64;
            if (b.len() as u64) < want {
                return Err(Error::Truncated);
            }
            if b.len() as u64 != want {
                return Err(Error::Malformed);
            }
        } else {
            let n = ((b[field::BITS] & SACK_BITS) >> SACK_SHIFT) as usize;
            // A D-SACK flag without a block is malformed: it would be a second encoding of the
            // ACK without it.
            if n > MAX_SACK_BLOCKS || (n == 0 && b[field::BITS] & BIT_DSACK != 0) {
                return Err(Error::Malformed);
            }
            let want = ACK_HEADER_LEN + n * SACK_BLOCK_LEN;
            if b.len() < want {
                return Err(Error::Truncated);
            }
            if b.len() != want {
                return Err(Error::Malformed);
            }
            for i in 0..n {
                let o = field::SACK + i * SACK_BLOCK_LEN;
                let (s, e) = (be_u64(&b[o..]), be_u64(&b[o + 8..]));
                if s >= e {
                    return Err(Error::Malformed);
                }
            }
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    pub fn kind(&self) -> u8 {
        self.b()[field::VER_KIND] & 0x0F
    }
    pub fn is_data(&self) -> bool {
        self.kind() == KIND_DATA
    }
    pub fn is_ack(&self) -> bool {
        self.kind() == KIND_ACK
    }
    pub fn flags(&self) -> u8 {
        self.b()[field::FLAGS]
    }
    pub fn flow_id(&self) -> u32 {
        be_u32(&self.b()[field::FLOW])
    }
    /// The 24-bit router field: forward field on data, echo field on ACKs.
    pub fn router_field(&self) -> u32 {
        be_u24(&self.b()[field::ROUTER])
    }
    pub fn ect(&self) -> bool {
        self.is_data() && self.b()[field::BITS] & BIT_ECT != 0
    }
    pub fn ce(&self) -> bool {
        self.is_data() && self.b()[field::BITS] & BIT_CE != 0
    }
    pub fn ece(&self) -> bool {
        self.is_ack() && self.b()[field::BITS] & BIT_ECE != 0
    }
    /// The ACK's first SACK block is a D-SACK block (RFC 2883).
    pub fn dsack(&self) -> bool {
        self.is_ack() && self.b()[field::BITS] & BIT_DSACK != 0
    }
    // --- data ---
    pub fn seq(&self) -> u64 {
        be_u64(&self.b()[field::SEQ])
    }
    pub fn ts(&self) -> u64 {
        be_u64(&self.b()[field::TS])
    }
    pub fn payload_len(&self) -> u32 {
        be_u32(&self.b()[field::PAYLOAD_LEN])
    }
    pub fn tag(&self) -> u64 {
        be_u64(&self.b()[field::TAG])
    }
    // --- ack ---
    pub fn cum_ack(&self) -> u64 {
        be_u64(&self.b()[field::CUM_ACK])
    }
    pub fn ts_echo(&self) -> u64 {
        be_u64(&self.b()[field::TS_ECHO])
    }
    pub fn rx_time(&self) -> u64 {
        be_u64(&self.b()[field::RX_TIME])
    }
    pub fn acked_seq(&self) -> u64 {
        be_u64(&self.b()[field::ACKED_SEQ])
    }
    pub fn acked_bytes(&self) -> u32 {
        be_u32(&self.b()[field::ACKED_BYTES])
    }
    pub fn n_sack(&self) -> usize {
        ((self.b()[field::BITS] & SACK_BITS) >> SACK_SHIFT) as usize
    }
    /// SACK block `i` (`i < n_sack()`).
    pub fn sack(&self, i: usize) -> SackBlock {
        let o = field::SACK + i * SACK_BLOCK_LEN;
        SackBlock {
            start: be_u64(&self.b()[o..]),
            end: be_u64(&self.b()[o + 8..]),
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn bm(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Writes the 24-bit router field (the low 24 bits of `v`).
    pub fn set_router_field(&mut self, v: u32) {
        let v = v & FIELD_MASK;
        self.bm()[field::ROUTER].copy_from_slice(&[(v >> 16) as u8, (v >> 8) as u8, v as u8]);
    }
    fn put_u32(&mut self, r: std::ops::Range<usize>, v: u32) {
        self.bm()[r].copy_from_slice(&v.to_be_bytes());
    }
    fn put_u64(&mut self, at: usize, v: u64) {
        self.bm()[at..at + 8].copy_from_slice(&v.to_be_bytes());
    }
}

/// What a datagram carries, as plain values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    Data(DataSegment),
    Ack(AckSegment),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub flow_id: u32,
    pub body: Body,
}

impl Repr {
    /// Reads a checked packet into plain values.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
        p.check()?;
        let body = if p.is_data() {
            Body::Data(DataSegment {
                seq: p.seq(),
                payload: p.payload_len(),
                flags: p.flags(),
                ts: p.ts(),
                fwd_field: p.router_field(),
                ect: p.ect(),
                ce: p.ce(),
                tag: p.tag(),
            })
        } else {
            let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
            let n = p.n_sack();
            for (i, s) in sack.iter_mut().enumerate().take(n) {
                *s = p.sack(i);
            }
            Body::Ack(AckSegment {
                cum_ack: p.cum_ack(),
                sack,
                n_sack: n as u8,
                ts_echo: p.ts_echo(),
                rx_time: p.rx_time(),
                acked_seq: p.acked_seq(),
                acked_flags: p.flags(),
                acked_bytes: p.acked_bytes(),
                echo_field: p.router_field(),
                ece: p.ece(),
                dsack: p.dsack(),
            })
        };
        Ok(Repr {
            flow_id: p.flow_id(),
            body,
        })
    }

    /// Parses a byte slice (convenience for `Repr::parse(&Packet::new_checked(b)?)`).
    pub fn parse_bytes(b: &[u8]) -> Result<Repr, Error> {
        Repr::parse(&Packet::new_checked(b)?)
    }

    /// Bytes `emit` writes (for data: header plus payload, at least [`DATA_TAG_LEN`] of it).
    pub fn buffer_len(&self) -> usize {
        match &self.body {
            Body::Data(d) => data_len(d.payload),
            Body::Ack(a) => {
                ACK_HEADER_LEN + (a.n_sack as usize).min(MAX_SACK_BLOCKS) * SACK_BLOCK_LEN
            }
        }
    }

    /// Writes the datagram into the first `buffer_len()` bytes of `p` (panics if the buffer is shorter:
    /// the caller sizes it). The payload of a data segment is its tag, then zeros: only its length
    /// matters to the application.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let len = self.buffer_len();
        let b = &mut p.bm()[..len];
        b.fill(0);
        b[field::MAGIC] = MAGIC;
        match &self.body {
            Body::Data(d) => {
                b[field::VER_KIND] = VERSION << 4 | KIND_DATA;
                b[field::FLAGS] = d.flags;
                b[field::BITS] = if d.ect { BIT_ECT } else { 0 } | if d.ce { BIT_CE } else { 0 };
                p.put_u32(field::FLOW, self.flow_id);
                p.set_router_field(d.fwd_field);
                p.put_u64(field::SEQ.start, d.seq);
                p.put_u64(field::TS.start, d.ts);
                p.put_u32(field::PAYLOAD_LEN, d.payload);
                p.put_u64(field::TAG.start, d.tag);
            }
            Body::Ack(a) => {
                let n = (a.n_sack as usize).min(MAX_SACK_BLOCKS);
                b[field::VER_KIND] = VERSION << 4 | KIND_ACK;
                b[field::FLAGS] = a.acked_flags;
                // A D-SACK flag with no block to refer to is dropped rather than sent malformed.
                let dsack = a.dsack && n > 0;
                b[field::BITS] = if a.ece { BIT_ECE } else { 0 }
                    | if dsack { BIT_DSACK } else { 0 }
                    | (n as u8) << SACK_SHIFT;
                p.put_u32(field::FLOW, self.flow_id);
                p.set_router_field(a.echo_field);
                p.put_u64(field::CUM_ACK.start, a.cum_ack);
                p.put_u64(field::TS_ECHO.start, a.ts_echo);
                p.put_u64(field::RX_TIME.start, a.rx_time);
                p.put_u64(field::ACKED_SEQ.start, a.acked_seq);
                p.put_u32(field::ACKED_BYTES, a.acked_bytes);
                for (i, s) in a.sack.iter().take(n).enumerate() {
                    let o = field::SACK + i * SACK_BLOCK_LEN;
                    p.put_u64(o, s.start);
                    p.put_u64(o + 8, s.end);
                }
            }
        }
    }

    /// Emits into a new vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.buffer_len()];
        self.emit(&mut Packet::new_unchecked(&mut v[..]));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Repr {
        Repr {
            flow_id: 7,
            body: Body::Data(DataSegment {
                seq: 0x0102_0304_0506_0708,
                payload: 100,
                flags: 0x21,
                ts: 123_456_789,
                fwd_field: 0xABCDEF,
                ect: true,
                ce: false,
                tag: 0x1122_3344_5566_7788,
            }),
        }
    }

    fn ack() -> Repr {
        let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
        sack[0] = SackBlock { start: 20, end: 25 };
        sack[1] = SackBlock { start: 30, end: 31 };
        Repr {
            flow_id: 9,
            body: Body::Ack(AckSegment {
                cum_ack: 10,
                sack,
                n_sack: 2,
                ts_echo: 5,
                rx_time: 6,
                acked_seq: 30,
                acked_flags: 3,
                acked_bytes: 1440,
                echo_field: 0x123456,
                ece: true,
                dsack: false,
            }),
        }
    }

    fn dsack_ack() -> Repr {
        let mut r = ack();
        if let Body::Ack(a) = &mut r.body {
            a.sack[0] = SackBlock { start: 3, end: 4 }; // below cum_ack: a duplicate
            a.dsack = true;
        }
        r
    }

    #[test]
    fn round_trips_and_lengths() {
        for r in [data(), ack(), dsack_ack()] {
            let v = r.to_vec();
            assert_eq!(v.len(), r.buffer_len());
            assert_eq!(Repr::parse_bytes(&v), Ok(r));
        }
        assert_eq!(data().to_vec().len(), 132);
        assert_eq!(ack().to_vec().len(), 80);
        assert_eq!(
            dsack_ack().to_vec()[field::BITS],
            BIT_ECE | BIT_DSACK | 2 << SACK_SHIFT
        );
    }

    #[test]
    fn dsack_needs_a_block() {
        // Set by hand on an ACK without blocks: refused (it would be a second encoding of that ACK).
        let mut r = ack();
        if let Body::Ack(a) = &mut r.body {
            a.n_sack = 0;
            a.sack = [SackBlock::default(); MAX_SACK_BLOCKS];
        }
        let mut v = r.to_vec();
        assert_eq!(Repr::parse_bytes(&v), Ok(r));
        v[field::BITS] |= BIT_DSACK;
        assert_eq!(Repr::parse_bytes(&v), Err(Error::Malformed));
        // Emitting such a segment drops the flag instead of writing that datagram.
        if let Body::Ack(a) = &mut r.body {
            a.dsack = true;
        }
        assert_eq!(r.to_vec()[field::BITS] & BIT_DSACK, 0);
        // The bit means nothing on data, where bit 1 is CE.
        let d = data().to_vec();
        assert!(!Packet::new_checked(&d[..]).unwrap().dsack());
    }

    #[test]
    fn the_tag_leads_the_payload_and_short_payloads_are_padded_to_hold_it() {
        let v = data().to_vec();
        assert_eq!(&v[32..40], &0x1122_3344_5566_7788u64.to_be_bytes());
        assert!(v[40..].iter().all(|&b| b == 0));
        for payload in [0u32, 1, 7, 8, 9] {
            let mut r = data();
            if let Body::Data(d) = &mut r.body {
                d.payload = payload;
            }
            let v = r.to_vec();
            assert_eq!(v.len(), 32 + payload.max(8) as usize, "payload {payload}");
            assert_eq!(Repr::parse_bytes(&v), Ok(r));
            // Without its padding a short payload's datagram is truncated, with more it is malformed.
            assert_eq!(Repr::parse_bytes(&v[..v.len() - 1]), Err(Error::Truncated));
            let mut long = v.clone();
            long.push(0);
            assert_eq!(Repr::parse_bytes(&long), Err(Error::Malformed));
        }
    }

    #[test]
    fn router_field_at_fixed_offset() {
        let mut v = data().to_vec();
        assert_eq!(&v[8..11], &[0xAB, 0xCD, 0xEF]);
        let mut p = Packet::new_checked_prefix(&mut v[..]).unwrap();
        p.set_router_field(0x010203);
        assert_eq!(p.router_field(), 0x010203);
        match Repr::parse_bytes(&v).unwrap().body {
            Body::Data(d) => assert_eq!(d.fwd_field, 0x010203),
            _ => panic!("kind changed"),
        }
    }

    #[test]
    fn malformed_inputs_are_errors() {
        let v = data().to_vec();
        assert_eq!(Repr::parse_bytes(&v[..31]), Err(Error::Truncated));
        assert_eq!(Repr::parse_bytes(&v[..131]), Err(Error::Truncated));
        let mut long = v.clone();
        long.push(0);
        assert_eq!(Repr::parse_bytes(&long), Err(Error::Malformed));
        let mut bad = v.clone();
        bad[0] = 0x45; // an IPv4 header is not ours
        assert_eq!(Repr::parse_bytes(&bad), Err(Error::NotOurs));
        let mut bad = v.clone();
        bad[11] = 1;
        assert_eq!(Repr::parse_bytes(&bad), Err(Error::Malformed));
        let mut bad = v.clone();
        bad[1] = VERSION << 4 | 3;
        assert_eq!(Repr::parse_bytes(&bad), Err(Error::Malformed));
        let mut a = ack().to_vec();
        a[field::SACK + 7] = 26; // start 26 > end 25
        assert_eq!(Repr::parse_bytes(&a), Err(Error::Malformed));
        let mut a = ack().to_vec();
        a[field::BITS] |= 3 << 4; // claims 3 blocks, carries 2
        assert_eq!(Repr::parse_bytes(&a), Err(Error::Truncated));
        assert_eq!(Repr::parse_bytes(&[]), Err(Error::NotOurs));
        assert_eq!(Repr::parse_bytes(&[MAGIC]), Err(Error::Truncated));
    }
}
