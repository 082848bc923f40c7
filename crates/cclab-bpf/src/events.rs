//! The records the BPF program sends (mirror of `struct cclab_event` in src/bpf/events.h) and the
//! decision the controller writes back (`struct cclab_decision`, generated into the skeleton).

/// `enum cclab_event_kind`.
pub mod kind {
    pub const INIT: u32 = 1;
    pub const ACK: u32 = 2;
    pub const STATE: u32 = 3;
    pub const UNDO: u32 = 4;
    pub const RELEASE: u32 = 5;
}

/// Linux's `enum tcp_ca_state`.
pub mod ca_state {
    pub const OPEN: u32 = 0;
    pub const DISORDER: u32 = 1;
    pub const CWR: u32 = 2;
    pub const RECOVERY: u32 = 3;
    pub const LOSS: u32 = 4;
}

/// `tcp_ack()`'s flag bits (net/ipv4/tcp_input.c) that the adapter reads.
pub mod ack_flag {
    pub const ECE: u32 = 0x40;
    pub const SND_UNA_ADVANCED: u32 = 0x400;
}

/// Linux's "no threshold" (`TCP_INFINITE_SSTHRESH`).
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// One ring-buffer record; field meanings are in events.h.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Event {
    pub kind: u32,
    pub flow: u32,
    pub now_ns: u64,
    pub epoch: u32,
    pub state: u32,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub srtt_us: u32,
    pub min_rtt_us: u32,
    pub in_flight: u32,
    pub packets_out: u32,
    pub delivered: u32,
    pub lost: u32,
    pub mss: u32,
    pub backoff: u32,
    pub ack_flags: u32,
    pub acked_sacked: u32,
    pub rtt_us: i32,
    pub rs_delivered: i32,
    pub rs_interval_us: i64,
    pub rs_prior_delivered: u32,
    pub rs_losses: u32,
    pub rs_prior_in_flight: u32,
    pub rs_app_limited: u32,
    pub saddr: u32,
    pub daddr: u32,
    pub sport: u16,
    pub dport: u16,
    pub prior_cwnd: u32,
    pub snd_una: u32,
    pub snd_nxt: u32,
}

const _: () = assert!(std::mem::size_of::<Event>() == 128);

impl Event {
    /// Reads a record from the ring buffer's bytes; None if it is short (never from our program, but
    /// the ring is shared memory and a short record must not be read past its end).
    pub fn parse(bytes: &[u8]) -> Option<Event> {
        if bytes.len() < std::mem::size_of::<Event>() {
            return None;
        }
        // SAFETY: the length is checked; Event is plain old data (every bit pattern is valid), and
        // read_unaligned makes no alignment assumption about the ring's memory.
        Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr() as *const Event) })
    }

    /// The connection, for INIT records: (local address, local port, remote address, remote port).
    pub fn tuple(&self) -> FlowKey {
        FlowKey {
            local: std::net::SocketAddrV4::new(u32::from_be(self.saddr).into(), self.sport),
            remote: std::net::SocketAddrV4::new(u32::from_be(self.daddr).into(), self.dport),
        }
    }
}

/// A connection as the controller sees it when the kernel attaches the algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub local: std::net::SocketAddrV4,
    pub remote: std::net::SocketAddrV4,
}

/// What the controller tells the kernel for one flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// The flow's epoch this decision was made in (see events.h).
    pub epoch: u32,
    pub cwnd: u32,
    pub ssthresh: u32,
    /// Some: the kernel paces at this many payload bytes per second. None: no pacing, and
    /// `pacing_rate` only sizes TSO bursts as Linux's own rate would.
    pub pacing: bool,
    pub pacing_rate: u64,
    /// No algorithm for this socket: the program steers it with Linux's Reno.
    pub reno: bool,
    /// In recovery or CWR the program runs Linux's PRR towards `cwnd` (window algorithms).
    pub prr: bool,
    /// `now_ns` of the record this decision answers (the program measures ACK-to-applied from it).
    pub event_ns: u64,
}

/// `cclab_decision.flags` (events.h).
pub mod decision_flag {
    pub const PACE: u32 = 1;
    pub const RENO: u32 = 2;
    pub const PRR: u32 = 4;
}
