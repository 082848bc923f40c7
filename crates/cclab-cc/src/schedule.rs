//! A piecewise-constant value over time (a link's delay schedule), read at times that move forward:
//! one cursor, shared by the simulator and the emulator so both drivers take the same value at the same
//! instant.

use crate::time::Nanos;

/// The index of the schedule entry in force at the last lookup. Lookups come in time order (departures
/// from one link), so the cursor only moves on: O(1) amortised per packet; a time earlier than the last
/// one rescans from the start rather than answering wrongly.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepCursor {
    next: usize,
    last: Nanos,
}

impl StepCursor {
    /// The value of `points` ((time, value) from each time on, times increasing) at `t`; `base` before
    /// the first time.
    #[inline]
    pub fn at<T: Copy>(&mut self, points: &[(Nanos, T)], base: T, t: Nanos) -> T {
        if t < self.last {
            self.next = 0;
        }
        self.last = t;
        while points.get(self.next).is_some_and(|&(s, _)| s <= t) {
            self.next += 1;
        }
        match self.next {
            0 => base,
            k => points[k - 1].1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_at_each_time_and_rescans_backwards() {
        let pts = [(10, 300u64), (20, 20)];
        let mut c = StepCursor::default();
        let got: Vec<u64> = [0, 9, 10, 15, 20, 99]
            .iter()
            .map(|&t| c.at(&pts, 5, t))
            .collect();
        assert_eq!(got, [5, 5, 300, 300, 20, 20]);
        assert_eq!(c.at(&pts, 5, 12), 300);
        assert_eq!(StepCursor::default().at(&[], 7u64, 50), 7);
    }
}
