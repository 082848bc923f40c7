//! The event queue: a binary min-heap keyed by (time, insertion sequence), so simultaneous events run
//! in the order they were scheduled and every run of the same spec executes the same event sequence.

use cclab_cc::time::Nanos;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens. Kept small (16 bytes) so the heap stays cache-friendly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A link finished serialising its head-of-line packet.
    TxDone(u32),
    /// The earliest packet in a link's propagation pipe reached the far end.
    LinkArrive(u32),
    /// The earliest packet in a pure delay line (access delay) reached its end.
    LineArrive(u32),
    /// A flow's sender timer (generation-tagged: stale generations are ignored).
    SenderTimer(u32, u32),
    ReceiverTimer(u32, u32),
    FlowStart(u32),
    FlowStop(u32),
    /// A cross-traffic source emits its next packet.
    Traffic(u32),
    /// Time-series sample.
    Sample,
    /// Measurement-window edge (0 = start, 1 = end).
    Measure(u8),
    /// A link's loss probability changes to entry `.1` of its schedule.
    LossChange(u32, u32),
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: Nanos,
    seq: u64,
    ev: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap.
    fn cmp(&self, o: &Self) -> Ordering {
        o.time.cmp(&self.time).then_with(|| o.seq.cmp(&self.seq))
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    #[inline]
    pub fn push(&mut self, time: Nanos, ev: Event) {
        self.seq += 1;
        self.heap.push(Entry { time, seq: self.seq, ev });
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, Event)> {
        self.heap.pop().map(|e| (e.time, e.ev))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, Event::Sample);
        q.push(3, Event::TxDone(1));
        q.push(5, Event::TxDone(2));
        q.push(3, Event::TxDone(3));
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            got,
            vec![(3, Event::TxDone(1)), (3, Event::TxDone(3)), (5, Event::Sample), (5, Event::TxDone(2))]
        );
    }
}
