//! The transport's segments as plain structs (the simulator passes these around; the UDP datapath
//! encodes them with its wire codec in `cclab-net`). Sequence numbers count packets, not bytes: every
//! data packet carries one MSS except possibly the last of a finite flow.

use cclab_cc::time::Nanos;

/// SACK blocks carried per ACK (TCP fits 3 with timestamps; 4 without).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A data packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataSegment {
    /// Packet sequence number (0-based).
    pub seq: u64,
    /// Application payload bytes.
    pub payload: u32,
    /// Flags, see `cclab_cc::cc::flags`.
    pub flags: u8,
    /// Sender timestamp (TSval), echoed by the receiver for RTT samples.
    pub ts: Nanos,
    /// Forward router field (MaxNet), written by routers on the path.
    pub fwd_field: u32,
    /// ECN-capable transport; `ce` set by a marking router.
    pub ect: bool,
    pub ce: bool,
    /// Authentication tag ([`crate::auth`]): a keyed hash of the fields above the sender writes, with
    /// which a receiver holding the flow's key refuses data its sender did not send. 0 without a key.
    pub tag: u64,
}

/// A half-open range of packet sequence numbers `[start, end)` received above the cumulative ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// An acknowledgement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckSegment {
    /// Next packet expected in order (all packets < cum_ack received).
    pub cum_ack: u64,
    /// SACK blocks, most recent first (RFC 2018); `n_sack` are valid.
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub n_sack: u8,
    /// TSecr: the `ts` of the data packet that triggered this ACK (RFC 7323 rules for delayed ACKs).
    pub ts_echo: Nanos,
    /// Receiver clock when the triggering packet arrived (packet-pair dispersion).
    pub rx_time: Nanos,
    /// The triggering packet's sequence number, flags and payload size.
    pub acked_seq: u64,
    pub acked_flags: u8,
    pub acked_bytes: u32,
    /// The triggering packet's forward router field, copied back (MaxNet echo).
    pub echo_field: u32,
    /// ECN-Echo.
    pub ece: bool,
    /// `sack[0]` is a D-SACK block (RFC 2883): it reports a segment received more than once, not new
    /// data above the cumulative ACK. Set by a receiver that reports duplicates; a sender that
    /// ignores D-SACK skips block 0 when this is set.
    pub dsack: bool,
}

impl DataSegment {
    /// Bytes on the wire.
    #[inline]
    pub fn wire_bytes(&self, header_bytes: u32) -> u32 {
        self.payload + header_bytes
    }
}

impl AckSegment {
    /// Tests: an ACK triggered by `d` with cumulative point `cum_ack`, echoing `d` as the receiver does.
    #[cfg(test)]
    pub(crate) fn echoing(d: &DataSegment, cum_ack: u64) -> AckSegment {
        AckSegment {
            cum_ack,
            ts_echo: d.ts,
            acked_seq: d.seq,
            acked_flags: d.flags,
            acked_bytes: d.payload,
            ..Default::default()
        }
    }

    /// Bytes on the wire: ACKs are `header_bytes` long (SACK blocks are assumed to fit in the option
    /// space the header size already counts, as TCP timestamps + 3 SACK blocks fit in 40 option bytes).
    #[inline]
    pub fn wire_bytes(&self, header_bytes: u32) -> u32 {
        header_bytes
    }

    /// The valid SACK blocks. A hand-made or hostile `n_sack` above [`MAX_SACK_BLOCKS`] (the wire codec
    /// refuses it) gives all of them rather than a panic; the sender drops such an ACK anyway.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..(self.n_sack as usize).min(MAX_SACK_BLOCKS)]
    }
}
