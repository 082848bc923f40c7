//! What moves through the network: packets (pooled in `Simulation::slab`, recycled through a free
//! list), the hops of their routes, and the FIFO pipes of wires and delay lines.

use crate::result::PacketKind;
use cclab_cc::time::Nanos;
use cclab_transport::{AckSegment, DataSegment};
use std::collections::VecDeque;

/// The transport segment a packet carries (cross traffic carries none).
#[derive(Clone, Copy, Debug)]
pub(super) enum Body {
    Data(DataSegment),
    Ack(AckSegment),
    Cross,
}

/// A packet. Per-hop work reads the small fields before `body`; the segment itself is touched only
/// when the packet is created and delivered (and by queue disciplines that rewrite the router field).
/// `repr(C)` keeps them first: Rust's own layout put the 96-byte segment first and the small fields at
/// bytes 96–120, so a prefetch of the packet loaded a line of the segment and every hop still missed on
/// `at` (a quarter of `Simulation::run`'s samples were that one load, perf annotate on bench b).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(super) struct Packet {
    /// Index in `Simulation::routes` of the hop the packet is at (advanced as it moves on).
    pub(super) at: u32,
    /// Flow index (data/ACK) or cross-traffic source index.
    pub(super) owner: u32,
    pub(super) bytes: u32,
    pub(super) kind: PacketKind,
    /// Data packets' header flags (for queue disciplines).
    pub(super) flags: u8,
    pub(super) ect: bool,
    pub(super) ce: bool,
    pub(super) enq_time: Nanos,
    pub(super) body: Body,
}

impl Packet {
    /// A new packet of `bytes` on the wire at the first hop `route` of its route, owned by flow or
    /// cross-traffic source `owner`. Its kind and header flags follow from `body`; `ect` marks a
    /// data packet ECN-capable.
    pub(super) fn new(route: u32, owner: u32, bytes: u32, body: Body, ect: bool) -> Packet {
        let (kind, flags) = match &body {
            Body::Data(d) => (PacketKind::Data, d.flags),
            Body::Ack(_) => (PacketKind::Ack, 0),
            Body::Cross => (PacketKind::Cross, 0),
        };
        Packet {
            at: route,
            owner,
            bytes,
            kind,
            flags,
            ect,
            ce: false,
            enq_time: 0,
            body,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hop {
    Link(u32),
    Line(u32),
    /// Deliver to the flow's receiver (data) / sender (ACK) / sink (cross traffic).
    Host,
}

/// Packets in flight on a wire or delay line, FIFO by arrival time.
#[derive(Default)]
pub(super) struct Pipe {
    pub(super) q: VecDeque<(Nanos, u32)>,
}

#[inline(always)]
pub(super) fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults and has no architectural effect (and `p` is a
    // valid reference anyway). SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            p as *const T as *const i8,
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Starts loading a packet's per-hop fields: the line of its first byte and the line of the last of
/// them (`enq_time`), which differ when the 120-byte packet starts late in a cache line.
#[inline(always)]
pub(super) fn prefetch_packet(p: &Packet) {
    prefetch(p);
    prefetch(&p.enq_time);
}

#[cfg(test)]
mod tests {
    /// The per-hop fields come first (see `Packet`): `enq_time`, the last of them, ends at byte 24.
    #[test]
    fn per_hop_fields_lead_the_packet() {
        assert_eq!(std::mem::offset_of!(super::Packet, enq_time), 16);
        assert_eq!(std::mem::offset_of!(super::Packet, body), 24);
    }
}
