//! The little of IPv4/UDP/TCP the link emulator needs: a checked look at an IP packet (lengths, header
//! checksum, protocol, ports, ECN) and in-place rewrites with incremental checksum updates (RFC 1624).
//!
//! Everything here works on a byte slice and returns an error instead of panicking on any input, so the
//! emulator can be fuzzed with arbitrary bytes.

use cclab_cc::maxnet_wire::{
    checksum_update_word, internet_checksum, ones_complement_sum, patch_field,
};

use crate::wire;

pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// ECN codepoints (RFC 3168) in the low two bits of the TOS byte.
pub const ECN_MASK: u8 = 0b11;
pub const ECN_CE: u8 = 0b11;

/// Why the emulator refused a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpError {
    /// Not IPv4 (an IPv6 frame from the host kernel, or garbage).
    NotIpv4,
    /// IPv4 with an inconsistent header (length, IHL, checksum, transport header truncated), or one of
    /// our datagrams that fails the codec's check.
    Malformed,
}

/// Where our transport header sits in an IPv4 packet, if it carries one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OurHeader {
    /// Offset of the cclab header inside the IP packet.
    pub offset: usize,
    /// Offset of the UDP checksum.
    pub udp_csum: usize,
    pub is_data: bool,
    pub flags: u8,
    pub router_field: u32,
}

/// What the emulator learns from one IPv4 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    /// IP total length (bytes on the wire).
    pub len: u16,
    pub proto: u8,
    pub ecn: u8,
    /// Transport ports (0 when not TCP/UDP or a non-first fragment).
    pub src_port: u16,
    pub dst_port: u16,
    /// A data packet of a congestion-controlled flow: our data segments and TCP segments with payload.
    pub is_data: bool,
    pub ours: Option<OurHeader>,
}

#[inline]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Checks an IPv4 packet and finds what the emulator needs. Never panics.
pub fn inspect(b: &[u8]) -> Result<Info, IpError> {
    if b.is_empty() || b[0] >> 4 != 4 {
        return Err(IpError::NotIpv4);
    }
    if b.len() < 20 {
        return Err(IpError::Malformed);
    }
    let ihl = (b[0] & 0x0F) as usize * 4;
    let total = be16(b, 2) as usize;
    if ihl < 20 || total < ihl || total != b.len() {
        return Err(IpError::Malformed);
    }
    if ones_complement_sum(&b[..ihl]) != 0xFFFF {
        return Err(IpError::Malformed);
    }
    let proto = b[9];
    let frag = be16(b, 6);
    let first_fragment = frag & 0x1FFF == 0;
    let whole = first_fragment && frag & 0x2000 == 0;
    let mut info = Info {
        len: total as u16,
        proto,
        ecn: b[1] & ECN_MASK,
        src_port: 0,
        dst_port: 0,
        is_data: false,
        ours: None,
    };
    let l4 = &b[ihl..];
    match proto {
        PROTO_UDP if first_fragment => {
            if l4.len() < 8 {
                return Err(IpError::Malformed);
            }
            let ulen = be16(l4, 4) as usize;
            if ulen < 8 || ulen > l4.len() {
                return Err(IpError::Malformed);
            }
            info.src_port = be16(l4, 0);
            info.dst_port = be16(l4, 2);
            let payload = &l4[8..ulen];
            // Only a whole datagram can be checked and rewritten; ours are never fragmented (MTU-sized).
            if whole && payload.first() == Some(&wire::MAGIC) {
                match wire::Packet::new_checked(payload) {
                    Ok(p) => {
                        info.is_data = p.is_data();
                        info.ours = Some(OurHeader {
                            offset: ihl + 8,
                            udp_csum: ihl + 6,
                            is_data: p.is_data(),
                            flags: p.flags(),
                            router_field: p.router_field(),
                        });
                    }
                    Err(wire::Error::NotOurs) => {}
                    Err(_) => return Err(IpError::Malformed),
                }
            }
        }
        PROTO_TCP if first_fragment => {
            if l4.len() < 20 {
                return Err(IpError::Malformed);
            }
            let doff = (l4[12] >> 4) as usize * 4;
            if doff < 20 || doff > l4.len() {
                return Err(IpError::Malformed);
            }
            info.src_port = be16(l4, 0);
            info.dst_port = be16(l4, 2);
            info.is_data = l4.len() > doff;
        }
        _ => {}
    }
    Ok(info)
}

/// Sets ECN CE in the IP header and fixes the header checksum incrementally. The packet must have
/// passed [`inspect`] (≥ 20 bytes).
pub fn set_ce(b: &mut [u8]) {
    let old = be16(b, 0);
    b[1] |= ECN_CE;
    let new = be16(b, 0);
    let hc = checksum_update_word(be16(b, 10), old, new);
    b[10..12].copy_from_slice(&hc.to_be_bytes());
}

/// Writes the 24-bit router field of our header and fixes the UDP checksum incrementally (a zero UDP
/// checksum means "none" and stays zero; a result of zero is sent as 0xFFFF, RFC 768). `h` comes from
/// [`inspect`] of this very packet.
pub fn set_router_field(b: &mut [u8], h: &OurHeader, v: u32) {
    let udp = h.udp_csum - 6;
    let field_at = h.offset - udp + wire::field::ROUTER.start;
    let seg = &mut b[udp..];
    if be16(seg, 6) == 0 {
        let v = v & wire::FIELD_MASK;
        seg[field_at..field_at + 3].copy_from_slice(&[(v >> 16) as u8, (v >> 8) as u8, v as u8]);
        return;
    }
    // The UDP segment starts 16-bit aligned in the checksummed data (the pseudo-header is 12 bytes), so
    // the segment's own offsets give the word alignment `patch_field` needs. Offsets come from `inspect`
    // of this packet: in range and clear of the checksum bytes, so it cannot fail.
    if patch_field(seg, field_at, v, 6).is_ok() && be16(seg, 6) == 0 {
        seg[6..8].copy_from_slice(&0xFFFFu16.to_be_bytes());
    }
}

/// Full UDP checksum over the IPv4 pseudo-header (used by tests and to build packets).
pub fn udp_checksum(ip: &[u8]) -> u16 {
    let ihl = (ip[0] & 0x0F) as usize * 4;
    let udp = &ip[ihl..];
    let ulen = be16(udp, 4) as usize;
    let mut pseudo = Vec::with_capacity(12 + ulen);
    pseudo.extend_from_slice(&ip[12..20]);
    pseudo.extend_from_slice(&[0, PROTO_UDP]);
    pseudo.extend_from_slice(&(ulen as u16).to_be_bytes());
    pseudo.extend_from_slice(&udp[..6]);
    pseudo.extend_from_slice(&[0, 0]); // the checksum field counts as zero
    pseudo.extend_from_slice(&udp[8..ulen]);
    let c = internet_checksum(&pseudo);
    if c == 0 {
        0xFFFF
    } else {
        c
    }
}

/// Builds an IPv4/UDP packet around `payload` with valid checksums (tests, the loopback tools).
pub fn build_udp(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    tos: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut p = vec![0u8; 28 + payload.len()];
    p[28..].copy_from_slice(payload);
    wrap_udp_header(&mut p, src, dst, sport, dport, tos);
    let uc = udp_checksum(&p);
    p[26..28].copy_from_slice(&uc.to_be_bytes());
    p
}

/// Writes an IPv4 + UDP header (28 bytes) in front of the payload already at `p[28..]`, in place: the
/// loopback relay's synthetic packet. The IP header checksum is computed; the UDP checksum is 0 ("none",
/// RFC 768), which the emulator's incremental fixes keep at 0 — the payload is unwrapped again before it
/// is sent, and the kernel computes a fresh checksum for that datagram. Panics if `p` is shorter than 28
/// bytes or longer than 65535.
pub fn wrap_udp_header(p: &mut [u8], src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, tos: u8) {
    let total = p.len();
    assert!((28..=65535).contains(&total));
    p[..28].fill(0);
    p[0] = 0x45;
    p[1] = tos;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[6] = 0x40; // DF
    p[8] = 64;
    p[9] = PROTO_UDP;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    let hc = internet_checksum(&p[..20]);
    p[10..12].copy_from_slice(&hc.to_be_bytes());
    p[20..22].copy_from_slice(&sport.to_be_bytes());
    p[22..24].copy_from_slice(&dport.to_be_bytes());
    p[24..26].copy_from_slice(&((total - 20) as u16).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Body, Repr};
    use cclab_transport::DataSegment;

    fn ours(fwd: u32) -> Vec<u8> {
        let r = Repr {
            flow_id: 1,
            body: Body::Data(DataSegment {
                seq: 5,
                payload: 1000,
                fwd_field: fwd,
                ect: true,
                ..Default::default()
            }),
        };
        build_udp([10, 0, 0, 1], [10, 0, 0, 2], 5000, 40000, 0b10, &r.to_vec())
    }

    #[test]
    fn inspect_finds_our_header() {
        let p = ours(0x111111);
        let i = inspect(&p).unwrap();
        assert_eq!(i.len as usize, p.len());
        assert_eq!((i.src_port, i.dst_port, i.ecn), (5000, 40000, 0b10));
        let h = i.ours.unwrap();
        assert!(h.is_data && i.is_data);
        assert_eq!(h.router_field, 0x111111);
    }

    #[test]
    fn incremental_checksums_equal_full_recomputation() {
        for (old, new) in [
            (0u32, 0xFFFFFF),
            (0x123456, 0x000001),
            (0xABCDEF, 0xABCDEF),
            (7, 0x800000),
        ] {
            let mut p = ours(old);
            let h = inspect(&p).unwrap().ours.unwrap();
            set_router_field(&mut p, &h, new);
            let stored = u16::from_be_bytes([p[26], p[27]]);
            assert_eq!(stored, udp_checksum(&p), "fwd {old:#x} -> {new:#x}");
            assert_eq!(inspect(&p).unwrap().ours.unwrap().router_field, new);
            set_ce(&mut p);
            // the IP header still verifies (inspect checks it) and carries CE
            assert_eq!(inspect(&p).unwrap().ecn, ECN_CE);
        }
    }

    #[test]
    fn wrapped_header_inspects_like_a_real_packet() {
        let payload = Repr {
            flow_id: 3,
            body: Body::Data(DataSegment {
                seq: 9,
                payload: 100,
                ect: true,
                ..Default::default()
            }),
        }
        .to_vec();
        let mut p = vec![0u8; 28];
        p.extend_from_slice(&payload);
        wrap_udp_header(&mut p, [10, 77, 0, 1], [10, 77, 0, 2], 20003, 40003, 0b10);
        let i = inspect(&p).unwrap();
        assert_eq!(
            (i.len as usize, i.src_port, i.dst_port, i.ecn),
            (p.len(), 20003, 40003, 0b10)
        );
        let h = i.ours.unwrap();
        set_router_field(&mut p, &h, 0x123);
        set_ce(&mut p);
        // UDP checksum "none" stays none; the IP header still verifies
        assert_eq!(u16::from_be_bytes([p[26], p[27]]), 0);
        assert_eq!(inspect(&p).unwrap().ecn, ECN_CE);
        assert_eq!(&p[28 + 32..], &payload[32..]);
    }

    #[test]
    fn garbage_is_refused() {
        assert_eq!(inspect(&[]), Err(IpError::NotIpv4));
        assert_eq!(inspect(&[0x60; 40]), Err(IpError::NotIpv4));
        let mut p = ours(1);
        p[10] ^= 1; // header checksum
        assert_eq!(inspect(&p), Err(IpError::Malformed));
        let mut p = ours(1);
        let n = p.len();
        p[28 + 11] = 1; // our reserved byte: the codec rejects it (UDP checksum is not the emulator's job)
        assert_eq!(inspect(&p), Err(IpError::Malformed));
        assert_eq!(inspect(&p[..n - 1]), Err(IpError::Malformed));
    }
}
