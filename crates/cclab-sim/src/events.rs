//! The event queue, keyed by (time, insertion sequence), so simultaneous events run in the order they
//! were scheduled and every run of the same spec executes the same event sequence.

use cclab_cc::time::Nanos;

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
    /// A `transfers` source starts its next transfer.
    TransferArrival(u32),
    /// Time-series sample.
    Sample,
    /// Measurement-window edge (0 = start, 1 = end).
    Measure(u8),
    /// A link's loss probability changes to entry `.1` of its schedule.
    LossChange(u32, u32),
    /// `Simulation::run_until` returns here (stepped runs only; never scheduled by `run`).
    Pause,
}

/// A monotone priority queue (radix heap, Ahuja–Mehlhorn–Orlin–Tarjan 1990) on the event time, with
/// ties in insertion order. Times are never smaller than the last time popped (an event is never
/// scheduled in the past), which is all a radix heap needs. Bucket `b` ≥ 1 holds times whose highest
/// bit differing from the last popped time is bit `b − 1`; events at exactly the last popped time wait
/// in `due`, a FIFO. A pop takes the front of `due`, or else the lowest non-empty bucket, whose
/// entries are redistributed around its minimum into `due` and lower buckets. Each entry moves down at
/// most once per bit of the time span it covers, so a push is O(1) and a pop amortised O(log Δt),
/// independent of the number of pending events, unlike a binary heap's O(log n) of unpredictable
/// compares (measured in docs/performance.md).
///
/// Why ties come out in insertion order without a sequence number in the key: every bucket's entries
/// are in insertion order. A push appends the newest entry; a redistribution empties a bucket into
/// buckets that are all empty (it only runs when `due` and every lower bucket are), in that bucket's
/// order. So `due` receives a time's events in the order they were scheduled. (Keys of `time << 64 |
/// seq` did the same with twice the key width, and spread one time's events over 64 buckets by the
/// bits of their sequence numbers: 15 % more wall time on bench b, docs/performance.md.)
pub struct EventQueue {
    /// Bucket b at index b − 1 (b = 1..=64). A fixed array indexed by `i & 63`: no bounds checks on
    /// the push path, and a popped bucket can be drained into the lower ones in place.
    buckets: [Vec<(Nanos, Event)>; 64],
    /// Events at time `last`, in the order they were scheduled, from index `head` on (a Vec and an
    /// index rather than a VecDeque: no wrap-around arithmetic, and it empties completely before
    /// the time moves on).
    due: Vec<Event>,
    head: usize,
    /// Bit b − 1 set ⇔ bucket b non-empty.
    mask: u64,
    last: Nanos,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            buckets: std::array::from_fn(|_| Vec::new()),
            due: Vec::new(),
            head: 0,
            mask: 0,
            last: 0,
        }
    }
}

impl EventQueue {
    /// Files an event at `time` > `last`: bucket `64 − lzcnt(time ^ last)` (≥ 1), at index one less.
    #[inline]
    fn put(&mut self, time: Nanos, ev: Event) {
        // time ≠ last, so leading_zeros < 64 and the mask changes nothing; it spares the bounds check.
        let i = (63 - (time ^ self.last).leading_zeros() as usize) & 63;
        self.buckets[i].push((time, ev));
        self.mask |= 1 << i;
    }

    /// Schedules `ev` at `time`, after every event already scheduled at the same time.
    // Always inlined, as `pop`: left to itself, the Python module's build (a cdylib) called both and
    // `dispatch` out of line, and its loop ran 15 % slower than the benchmark binary's.
    #[inline(always)]
    pub fn push(&mut self, time: Nanos, ev: Event) {
        // Scheduling in the past would break the run's causality (and the radix heap's invariant); every
        // caller clamps to `now`, so this is a bug check (one predictable compare: kept in release).
        assert!(time >= self.last, "event scheduled in the past");
        if time == self.last {
            self.due.push(ev);
        } else {
            self.put(time, ev);
        }
    }

    /// The earliest event (ties: the first scheduled).
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Nanos, Event)> {
        if self.head == self.due.len() {
            self.due.clear();
            self.head = 0;
            if self.mask == 0 {
                return None;
            }
            let i = self.mask.trailing_zeros() as usize & 63;
            self.mask &= !(1 << i);
            // The bucket is drained in place into `due` and the lower buckets (all empty: this is
            // the lowest non-empty one), in its order, and keeps its allocation.
            let (lower, rest) = self.buckets.split_at_mut(i);
            let v = &mut rest[0];
            if let [(t, e)] = v[..] {
                // One entry (most pops on a dumbbell): it is the minimum, nothing is redistributed,
                // and it is returned without passing through `due` (empty now; events pushed at `t`
                // from here on queue there behind it, as they would have).
                self.last = t;
                v.clear();
                return Some((t, e));
            } else {
                let last = v.iter().map(|e| e.0).min().expect("non-empty bucket");
                self.last = last;
                for &(t, e) in v.iter() {
                    if t == last {
                        self.due.push(e);
                    } else {
                        let j = (63 - (t ^ last).leading_zeros() as usize) & 63;
                        lower[j].push((t, e));
                        self.mask |= 1 << j;
                    }
                }
            }
            v.clear();
        }
        let e = self.due[self.head];
        self.head += 1;
        Some((self.last, e))
    }

    /// Events pending (counted, not kept: the loop never asks, so pushes and pops do not pay for it).
    pub fn len(&self) -> usize {
        self.due.len() - self.head + self.buckets.iter().map(Vec::len).sum::<usize>()
    }

    /// Entries the queue has room for without allocating (its memory, in entries; counted by the
    /// run's memory budget every 65,536 events, never by the loop).
    pub fn capacity(&self) -> usize {
        self.due.capacity() + self.buckets.iter().map(Vec::capacity).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.head == self.due.len() && self.mask == 0
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
            vec![
                (3, Event::TxDone(1)),
                (3, Event::TxDone(3)),
                (5, Event::Sample),
                (5, Event::TxDone(2))
            ]
        );
    }

    /// Against a sorted reference: random interleavings of pushes (never in the past) and pops, with
    /// many equal times, come out in exactly (time, insertion order).
    #[test]
    fn matches_a_sorted_reference() {
        use cclab_cc::rng::Rng;
        let mut rng = cclab_cc::rng::stream(3, 3);
        let mut q = EventQueue::default();
        let mut reference = std::collections::BTreeSet::new();
        let (mut now, mut id) = (0u64, 0u32);
        for _ in 0..200_000 {
            if rng.gen_bool(0.52) || reference.is_empty() {
                // Mix of same-time, near and far (timer-like) events.
                let dt = match rng.gen_range(0..4) {
                    0 => 0,
                    1 => rng.gen_range(0..100),
                    2 => rng.gen_range(0..1_000_000),
                    _ => rng.gen_range(0..1u64 << 40),
                };
                id += 1;
                q.push(now + dt, Event::Traffic(id));
                reference.insert((now + dt, id));
            } else {
                let (t, e) = q.pop().unwrap();
                let want = reference.pop_first().unwrap();
                assert_eq!((t, e), (want.0, Event::Traffic(want.1)));
                now = t;
            }
            assert_eq!(q.len(), reference.len());
        }
    }
}
