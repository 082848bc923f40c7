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

/// A monotone priority queue (radix heap, Ahuja–Mehlhorn–Orlin–Tarjan 1990) on the 128-bit key
/// `time << 64 | seq`. Keys are unique (seq is) and never smaller than the last key popped (an event
/// is never scheduled in the past), which is all a radix heap needs. Bucket `b` holds keys whose
/// highest bit differing from the last popped key is bit `b − 1` (bucket 0: equal to it); a pop takes
/// the lowest non-empty bucket, and if that is not bucket 0, redistributes it around its minimum into
/// lower buckets. Each entry moves down at most once per bit of the time span it covers, so a push is
/// O(1) and a pop amortised O(log Δt) — independent of the number of pending events, unlike a binary
/// heap's O(log n) of unpredictable compares (measured in docs/performance.md).
pub struct EventQueue {
    buckets: Vec<Vec<(u128, Event)>>,
    /// Bit b set ⇔ bucket b non-empty (129 buckets: two words + bucket 128 in `top`).
    mask: [u64; 2],
    top: bool,
    last: u128,
    seq: u64,
    len: usize,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            buckets: (0..129).map(|_| Vec::new()).collect(),
            mask: [0; 2],
            top: false,
            last: 0,
            seq: 0,
            len: 0,
        }
    }
}

impl EventQueue {
    #[inline]
    fn bucket_of(&self, key: u128) -> usize {
        (128 - (key ^ self.last).leading_zeros()) as usize
    }

    #[inline]
    fn put(&mut self, key: u128, ev: Event) {
        let b = self.bucket_of(key);
        self.buckets[b].push((key, ev));
        if b < 128 {
            self.mask[b >> 6] |= 1 << (b & 63);
        } else {
            self.top = true;
        }
    }

    /// Schedules `ev` at `time`, after every event already scheduled at the same time.
    #[inline]
    pub fn push(&mut self, time: Nanos, ev: Event) {
        self.seq += 1;
        let key = (time as u128) << 64 | self.seq as u128;
        // Scheduling in the past would break the run's causality (and the radix heap's invariant); every
        // caller clamps to `now`, so this is a bug check (one predictable compare: kept in release).
        assert!(key > self.last, "event scheduled in the past");
        self.len += 1;
        self.put(key, ev);
    }

    /// The earliest event (ties: the first scheduled).
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, Event)> {
        if self.mask[0] & 1 == 0 {
            let b = if self.mask[0] != 0 {
                self.mask[0].trailing_zeros() as usize
            } else if self.mask[1] != 0 {
                64 + self.mask[1].trailing_zeros() as usize
            } else if self.top {
                128
            } else {
                return None;
            };
            let mut v = std::mem::take(&mut self.buckets[b]);
            if b < 128 {
                self.mask[b >> 6] &= !(1 << (b & 63));
            } else {
                self.top = false;
            }
            self.last = v.iter().map(|e| e.0).min().expect("non-empty bucket");
            for &(k, e) in &v {
                self.put(k, e);
            }
            v.clear();
            // Hand the allocation back so buckets stop allocating once warmed up.
            if self.buckets[b].capacity() < v.capacity() {
                std::mem::swap(&mut self.buckets[b], &mut v);
            }
        }
        // Bucket 0 holds exactly one entry: keys are unique.
        let (k, e) = self.buckets[0].pop().expect("bucket 0 non-empty");
        self.mask[0] &= !1;
        self.len -= 1;
        Some(((k >> 64) as Nanos, e))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
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
