//! Router queue disciplines.
//!
//! A queue discipline is the *policy* of a link's queue: it decides on each arrival whether the packet is
//! enqueued, dropped or CE-marked, may rewrite router-owned header fields (MaxNet's forward price /
//! QuickStart field), and is told about departures. The packets themselves are stored by the driver (the
//! simulator's pooled FIFO, or the emulator's byte buffers), which is what lets the simulator and the
//! real link emulator share this code unchanged.
//!
//! Call order for one link: `enqueue` on every arrival (with the queue length *before* the arrival);
//! if it returns `Enqueue` or `Mark` the driver appends the packet; `on_departure` when the head packet
//! leaves the queue (with its sojourn time and the queue length *after* removal): a discipline that
//! drops at dequeue (CoDel) drops or marks it there, and the driver then offers the next packet;
//! `on_dequeue` when a packet starts transmission. `tick` runs every `tick_interval` if the
//! discipline asks for one (drivers may instead rely on the discipline catching up lazily on the next
//! `enqueue`, which is what the built-in ones do).
//!
//! Flow-queueing disciplines (FQ-CoDel, FQ) schedule between sub-queues. [`QueueDiscipline::queues`]
//! says how many the driver keeps (1 for a FIFO); `enqueue` writes the arriving packet's sub-queue into
//! [`RouterPacket::queue`], chosen from the driver's flow key [`RouterPacket::flow`]; before each
//! departure the driver asks [`QueueDiscipline::next_queue`] which sub-queue to serve and takes that
//! queue's head. After an accepted arrival, [`QueueDiscipline::overflow_victim`] may name sub-queues
//! whose head the driver drops at once (FQ-CoDel drops from the fattest flow, not the newcomer); it is
//! asked again until it says `None`, and told each dropped head's size through
//! [`QueueDiscipline::on_head_drop`]. A FIFO discipline keeps the defaults and costs nothing extra.

pub mod codel;
pub mod droptail;
pub mod drr;
pub mod fq;
pub mod fq_codel;
pub mod maxnet;
pub mod pie;
pub mod red;

use crate::rng::SimRng;
use crate::time::Nanos;

/// Current occupancy of the queue (packets waiting, not counting the one being transmitted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueLen {
    pub pkts: u32,
    pub bytes: u64,
}

/// The decision for an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Enqueue,
    Drop,
    /// Enqueue and set ECN CE (only returned for ECN-capable packets).
    Mark,
}

/// The decision for the head packet as it leaves the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Departure {
    /// Transmit it.
    Send,
    /// Discard it; the driver offers the next packet.
    Drop,
    /// Set ECN CE and transmit it (only returned for ECN-capable packets).
    Mark,
}

/// What a queue discipline may see of, and write into, an arriving packet.
#[derive(Debug)]
pub struct RouterPacket<'a> {
    /// Size on the wire in bytes.
    pub bytes: u32,
    /// ECN-capable transport (ECT) set.
    pub ect: bool,
    /// A data packet of a congestion-controlled flow (not an ACK, not cross traffic).
    pub is_data: bool,
    /// Header flags (see [`crate::cc::flags`]); `FIRST` marks a connection's first packet.
    pub flags: u8,
    /// The 24-bit forward router field (MaxNet price / QuickStart rate code). Writable.
    pub fwd_field: &'a mut u32,
    /// The driver's flow key: equal for the packets of one transport flow in one direction, different
    /// otherwise (simulator: kind and flow index; emulator: a hash of addresses, ports and protocol).
    pub flow: u64,
    /// Output: the sub-queue the discipline put an accepted packet in (always 0 for FIFO disciplines).
    pub queue: usize,
}

/// The head packet of a sub-queue as it leaves.
#[derive(Clone, Copy, Debug)]
pub struct Leaving {
    /// The sub-queue it leaves (0 for FIFO disciplines).
    pub queue: usize,
    /// How long it waited.
    pub sojourn: Nanos,
    pub bytes: u32,
    /// ECN-capable transport.
    pub ect: bool,
}

/// A link's queue discipline. Implementations are deterministic given the RNG passed in.
pub trait QueueDiscipline: Send {
    fn name(&self) -> &'static str;

    /// Decide on an arrival. `q` is the occupancy before the arrival.
    fn enqueue(
        &mut self,
        now: Nanos,
        pkt: &mut RouterPacket<'_>,
        q: QueueLen,
        rng: &mut SimRng,
    ) -> Verdict;

    /// Whether `on_departure` does anything (a discipline that overrides it must say so here): drivers
    /// skip the call for the others, which saves the drop-tail hot path a virtual call per packet.
    fn judges_departures(&self) -> bool {
        false
    }

    /// Whether `on_dequeue` does anything (RED's idle-time clock); same contract.
    fn watches_dequeues(&self) -> bool {
        false
    }

    /// The limit, if this discipline is a plain tail-drop FIFO: its `enqueue` drops an arrival that
    /// `overflows` the limit, accepts every other into queue 0, and touches nothing else (no mark, no
    /// state, no random draw). The simulator then applies the limit itself, without building a
    /// `RouterPacket` and a virtual call per packet; same contract as the two above.
    fn plain_fifo_limit(&self) -> Option<BufferLimit> {
        None
    }

    /// A head packet is leaving its queue; `q` is the occupancy without it. Disciplines that judge at
    /// enqueue keep the default.
    #[inline]
    fn on_departure(&mut self, _now: Nanos, _pkt: &Leaving, _q: QueueLen) -> Departure {
        Departure::Send
    }

    /// How many sub-queues the driver keeps for this discipline (FIFO disciplines: 1).
    fn queues(&self) -> usize {
        1
    }

    /// The sub-queue whose head leaves next; only asked when some sub-queue holds a packet.
    #[inline]
    fn next_queue(&mut self, _now: Nanos) -> usize {
        0
    }

    /// After an accepted arrival: a sub-queue whose head packet must be dropped now, or `None`.
    #[inline]
    fn overflow_victim(&mut self, _q: QueueLen) -> Option<usize> {
        None
    }

    /// The driver dropped the head (of `bytes`) of sub-queue `queue` as `overflow_victim` asked.
    fn on_head_drop(&mut self, _queue: usize, _bytes: u32) {}

    /// A packet of `bytes` left the queue (started transmission); `q` is the occupancy after.
    fn on_dequeue(&mut self, _now: Nanos, _bytes: u32, _q: QueueLen) {}

    /// Period of `tick`, if the discipline needs one.
    fn tick_interval(&self) -> Option<Nanos> {
        None
    }

    fn tick(&mut self, _now: Nanos) {}

    /// State for the time series (RED's average queue, MaxNet's price), sampled per interval.
    fn state(&self, _out: &mut Vec<(&'static str, f64)>) {}
}

/// Buffer limit shared by the disciplines: a packet count, a byte count, or both.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BufferLimit {
    pub pkts: Option<u32>,
    pub bytes: Option<u64>,
}

impl BufferLimit {
    /// True if a packet of `bytes` does not fit on top of `q`.
    #[inline]
    pub fn overflows(&self, q: QueueLen, bytes: u32) -> bool {
        self.pkts.is_some_and(|p| q.pkts + 1 > p)
            || self.bytes.is_some_and(|b| q.bytes + bytes as u64 > b)
    }
}
