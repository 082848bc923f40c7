//! A windowed running maximum over a sliding window of time (or rounds) that keeps three samples,
//! Kathleen Nichols' algorithm as Linux `lib/win_minmax.c` implements it for BBR: the best, second-best
//! and third-best values seen in successive quarters/halves of the window, so that when the best
//! expires a good replacement is already known. O(1) per update, no allocation.

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Sample {
    t: u64,
    v: f64,
}

#[derive(Clone, Debug, Default)]
pub struct WindowedMax {
    s: [Sample; 3],
}

impl WindowedMax {
    /// The maximum over the window (0 before any sample).
    pub fn get(&self) -> f64 {
        self.s[0].v
    }

    /// Forgets everything but `v` at `t`.
    pub fn reset(&mut self, t: u64, v: f64) -> f64 {
        self.s = [Sample { t, v }; 3];
        v
    }

    /// Takes the measurement `v` at `t` (non-decreasing) with window length `win`; returns the maximum.
    pub fn update(&mut self, win: u64, t: u64, v: f64) -> f64 {
        let m = Sample { t, v };
        if v >= self.s[0].v || t.saturating_sub(self.s[2].t) > win {
            // A new maximum, or nothing left in the window.
            return self.reset(t, v);
        }
        if v >= self.s[1].v {
            self.s[1] = m;
            self.s[2] = m;
        } else if v >= self.s[2].v {
            self.s[2] = m;
        }
        self.subwin_update(win, m)
    }

    /// Passes the best, second and third choices along as they age.
    fn subwin_update(&mut self, win: u64, m: Sample) -> f64 {
        let dt = m.t.saturating_sub(self.s[0].t);
        if dt > win {
            // The best expired: the second becomes best, the third second, this one third; the new
            // best may have expired too.
            self.s = [self.s[1], self.s[2], m];
            if m.t.saturating_sub(self.s[0].t) > win {
                self.s = [self.s[1], self.s[2], m];
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window passed without a second choice: take this one.
            self.s[1] = m;
            self.s[2] = m;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half the window passed without a third choice: take this one.
            self.s[2] = m;
        }
        self.s[0].v
    }
}

/// The running minimum over a sliding window, by the same three-sample scheme (a maximum of negated
/// values).
#[derive(Clone, Debug, Default)]
pub struct WindowedMin {
    max: WindowedMax,
    seen: bool,
}

impl WindowedMin {
    /// The minimum over the window (None before any sample).
    pub fn get(&self) -> Option<f64> {
        self.seen.then(|| -self.max.get())
    }

    /// Takes the measurement `v` at `t` (non-decreasing) with window length `win`; returns the minimum.
    pub fn update(&mut self, win: u64, t: u64, v: f64) -> f64 {
        if !self.seen {
            self.seen = true;
            return -self.max.reset(t, -v);
        }
        -self.max.update(win, t, -v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_maximum_lasts_one_window_then_the_next_best_takes_over() {
        let mut f = WindowedMax::default();
        f.update(10, 0, 100.0);
        for t in 1..=10 {
            assert_eq!(f.update(10, t, 50.0 + t as f64), 100.0, "t={t}");
        }
        // At t = 11 the 100 is more than 10 rounds old: the best of the later ones remains.
        let m = f.update(10, 11, 40.0);
        assert!((55.0..=60.0).contains(&m), "{m}");
        let m = f.update(10, 30, 1.0);
        assert_eq!(m, 1.0, "everything expired");
        assert_eq!(f.update(10, 31, 2.0), 2.0, "a new maximum replaces at once");
    }

    #[test]
    fn the_minimum_filter_mirrors_the_maximum() {
        let mut f = WindowedMin::default();
        assert_eq!(f.get(), None);
        f.update(10, 0, 5.0);
        assert_eq!(f.update(10, 5, 9.0), 5.0);
        assert_eq!(f.update(10, 6, 3.0), 3.0);
        // A rising sequence keeps O(1) state, and the minimum expires with its window.
        for t in 7..100 {
            f.update(10, t, t as f64);
        }
        let m = f.get().unwrap();
        assert!((80.0..=99.0).contains(&m), "{m}");
    }
}
