//! Link impairments as Linux `netem` offers them: delay jitter (with or without reordering), reordering
//! and duplication. Shared by the simulator's links and the real link emulator, drawing from the link's
//! own random stream (and only when an impairment is set, so a link without one draws exactly what it
//! drew before).
//!
//! * **Jitter.** Each packet's propagation delay is `delay + d`, d uniform in [−jitter, +jitter] or
//!   normal with standard deviation `jitter` (clipped so the delay never goes below 0). With
//!   `jitter_reorder = false` (the default) a packet never arrives before the one sent before it on the
//!   link: arrival = max(drawn, previous arrival), the jitter real paths show (queues in routers and
//!   radio schedulers do not reorder); with `true` packets overtake each other as `netem delay X Y`
//!   lets them.
//! * **Reordering.** With probability `reorder` a packet skips the propagation delay and arrives right
//!   after its transmission, overtaking the packets in flight (netem's `reorder P`, which sends a share
//!   of the packets at once and delays the rest); how far it overtakes grows with the delay and the rate.
//! * **Duplication.** With probability `duplicate` an arriving packet is queued twice (netem's
//!   `duplicate P`): both copies cross the link and reach the receiver.

use crate::rng::{uniform, SimRng};
use crate::time::Nanos;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JitterDist {
    Uniform,
    Normal,
}

#[derive(Clone, Debug)]
pub struct Impairments {
    jitter: f64,
    dist: JitterDist,
    keep_order: bool,
    reorder: f64,
    duplicate: f64,
    /// Latest arrival handed out (for keeping order).
    last: Nanos,
}

impl Impairments {
    /// `jitter` in ns; `None` when nothing is set (the link is then handled as before, without draws).
    pub fn new(
        jitter: Nanos,
        dist: JitterDist,
        jitter_reorder: bool,
        reorder: f64,
        duplicate: f64,
    ) -> Option<Impairments> {
        (jitter > 0 || reorder > 0.0 || duplicate > 0.0).then_some(Impairments {
            jitter: jitter as f64,
            dist,
            keep_order: !jitter_reorder,
            reorder,
            duplicate,
            last: 0,
        })
    }

    /// When a packet whose transmission ended at `sent` reaches the far end of a link of `delay`.
    pub fn arrival(&mut self, sent: Nanos, delay: Nanos, rng: &mut SimRng) -> Nanos {
        if self.reorder > 0.0 && uniform(rng) < self.reorder {
            return sent;
        }
        let mut t = sent.saturating_add(delay);
        if self.jitter > 0.0 {
            let d = match self.dist {
                JitterDist::Uniform => (2.0 * uniform(rng) - 1.0) * self.jitter,
                JitterDist::Normal => normal(rng) * self.jitter,
            };
            t = (t as f64 + d).max(sent as f64).round() as Nanos;
        }
        if self.keep_order {
            t = t.max(self.last);
            self.last = t;
        }
        t
    }

    /// Whether an arriving packet is duplicated.
    pub fn duplicate(&mut self, rng: &mut SimRng) -> bool {
        self.duplicate > 0.0 && uniform(rng) < self.duplicate
    }

    /// Whether arrivals can come out of order (the pipe must then be kept sorted by time).
    pub fn reorders(&self) -> bool {
        !self.keep_order || self.reorder > 0.0
    }
}

/// A standard normal draw (Box–Muller; one of the pair is enough here).
fn normal(rng: &mut SimRng) -> f64 {
    let u1 = uniform(rng).max(f64::MIN_POSITIVE);
    let u2 = uniform(rng);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    const MS: Nanos = 1_000_000;

    #[test]
    fn nothing_set_is_no_impairment() {
        assert!(Impairments::new(0, JitterDist::Uniform, false, 0.0, 0.0).is_none());
    }

    #[test]
    fn ordered_jitter_never_reorders_and_adds_delay() {
        // 10 ms ± 5 ms uniform, a packet every 0.1 ms: kept in order, so the arrivals are monotone and
        // the mean delay is above 10 ms (each packet waits for the latest arrival before it).
        let mut im = Impairments::new(5 * MS, JitterDist::Uniform, false, 0.0, 0.0).unwrap();
        let mut rng = stream(1, 0);
        let arr: Vec<Nanos> = (0..10_000)
            .map(|k| im.arrival(k * MS / 10, 10 * MS, &mut rng))
            .collect();
        assert!(arr.windows(2).all(|w| w[0] <= w[1]));
        let mean = arr
            .iter()
            .enumerate()
            .map(|(k, &a)| (a - k as u64 * MS / 10) as f64)
            .sum::<f64>()
            / 1e4
            / 1e6;
        assert!(mean > 13.0 && mean <= 15.0, "{mean}");
    }

    #[test]
    fn unordered_jitter_has_the_drawn_spread() {
        // Uniform ± 5 ms: mean 10 ms, std 5/√3 = 2.89 ms; normal σ 2 ms: std 2 ms.
        for (dist, j, std) in [
            (JitterDist::Uniform, 5 * MS, 5.0 / 3f64.sqrt()),
            (JitterDist::Normal, 2 * MS, 2.0),
        ] {
            let mut im = Impairments::new(j, dist, true, 0.0, 0.0).unwrap();
            let mut rng = stream(2, 0);
            let d: Vec<f64> = (0..20_000)
                .map(|k| (im.arrival(k * MS, 10 * MS, &mut rng) - k * MS) as f64 / 1e6)
                .collect();
            let m = d.iter().sum::<f64>() / d.len() as f64;
            let s = (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / d.len() as f64).sqrt();
            assert!(
                (m - 10.0).abs() < 0.1 && (s - std).abs() < 0.05 * std,
                "{dist:?} {m} {s}"
            );
        }
    }

    #[test]
    fn reordered_packets_skip_the_delay_and_duplicates_come_at_the_rate_asked() {
        let mut im = Impairments::new(0, JitterDist::Uniform, false, 0.1, 0.02).unwrap();
        let mut rng = stream(3, 0);
        let skipped = (0..10_000)
            .filter(|&k| im.arrival(k * MS, 10 * MS, &mut rng) == k * MS)
            .count();
        let dups = (0..10_000).filter(|_| im.duplicate(&mut rng)).count();
        // binomial: 1000 ± 30 and 200 ± 14 (1 σ); 4 σ bounds
        assert!((880..1120).contains(&skipped), "{skipped}");
        assert!((144..256).contains(&dups), "{dups}");
    }
}
