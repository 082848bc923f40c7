//! What the machine did to a real run: hypervisor steal and thread stalls.
//!
//! A real run is only as good as the machine's scheduling. The emulator thread (nice −20) and the
//! endpoint threads (−15) outrank ordinary load, but not a hypervisor that runs other guests on our
//! cores (steal), real-time tasks, or a paused guest. On this kind of machine (a 2-vCPU VM) steal is
//! 0.25 % when idle but rose to 9–18 % *during* runs at busy times, in stalls of 2–20 ms every few
//! tens of ms: the link goes idle, then delivers a burst. MaxNet, whose price integrator winds down
//! over every idle span, then overshoots: two MaxNet flows on 30 Mbit/s had mean queue 0.35 packets at
//! 1.4 % steal, 2.7 at 9.1 %, 6.6 at 17.8 % (the same binary, minutes apart). Such a run measures the
//! machine, not the algorithm, so the run reports steal over its measure window (`net.steal_fraction`)
//! and each thread's stalls (`net.stalls`), and warns when the window is disturbed ([`judge`]); tests
//! rerun a disturbed run.
//!
//! A thread logs a stall when it comes around later than it should by at least [`THRESHOLD`]: after a
//! timed sleep, later than the deadline it armed; between two points of work, by the time between them
//! (work itself takes microseconds). A stall in a packet-woken sleep shows up against the armed timer,
//! which is at most 20 ms away, so a stall longer than that is never missed.

use cclab_cc::time::{Nanos, NS_PER_MS};
use serde::Serialize;

/// Shortest lateness logged. Timer wake-ups are late by ~50 µs at raised priority, a few hundred µs
/// when a core is shared; 2 ms is ~10× above that and below the shortest RTT a test uses (20 ms).
pub const THRESHOLD: Nanos = 2 * NS_PER_MS;

/// Stalls kept per thread (the count and totals cover all of them).
const KEEP: usize = 256;

/// One stall: from `at` (run clock, ns) for `ns`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Stall {
    pub at: Nanos,
    pub ns: Nanos,
}

/// The stalls of one thread.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StallLog {
    pub count: u64,
    pub total_ns: Nanos,
    pub longest_ns: Nanos,
    /// The first [`KEEP`] stalls, in time order.
    pub events: Vec<Stall>,
}

impl StallLog {
    /// The thread was due at `due` and ran at `now`.
    pub fn due(&mut self, due: Nanos, now: Nanos) {
        let ns = now.saturating_sub(due);
        if ns < THRESHOLD {
            return;
        }
        self.count += 1;
        self.total_ns += ns;
        self.longest_ns = self.longest_ns.max(ns);
        if self.events.len() < KEEP {
            self.events.push(Stall { at: due, ns });
        }
    }
}

/// A stall of a named thread, in seconds (the run's summary).
#[derive(Clone, Debug, Serialize)]
pub struct StallReport {
    pub thread: String,
    pub at_s: f64,
    pub ms: f64,
}

/// All threads' stalls, for `net.stalls`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stalls {
    pub threshold_ms: f64,
    pub count: u64,
    pub longest_ms: f64,
    /// Longest stall overlapping the measure window or the second before it (a stall there still
    /// disturbs the window: MaxNet's queue overshoot after one lasts ~0.5 s).
    pub longest_in_measure_ms: f64,
    /// Every logged stall of every thread, in time order.
    pub events: Vec<StallReport>,
    /// The stall `longest_in_measure_ms` measures (the one a warning names).
    #[serde(skip)]
    worst_in_measure: Option<StallReport>,
}

/// A stall this long in or just before the measure window disturbs it: at least 20 packets' time at
/// the highest rate a test uses, or half the shortest RTT, and 4× the stalls a quiet run shows (≤ 5 ms).
pub const DISTURBING_STALL_MS: f64 = 10.0;

/// Steal over the measure window above this disturbs it: quiet runs measured 0.3–1.4 %, disturbed ones
/// (MaxNet's queue several times its quiet value) 9–18 %.
pub const DISTURBING_STEAL: f64 = 0.03;

/// Why the measure window is disturbed, if it is: the warning a run prints and tests act on.
pub fn judge(steal: Option<f64>, stalls: &Stalls) -> Option<String> {
    if let Some(s) = steal.filter(|&s| s >= DISTURBING_STEAL) {
        return Some(format!(
            "the hypervisor stole {:.1} % of this machine's CPU time during the measure window (other \
             guests on the host; ≥ {:.0} % disturbs a real run): results there measure the machine as much \
             as the algorithms, see net.steal_fraction and net.stalls",
            100.0 * s,
            100.0 * DISTURBING_STEAL
        ));
    }
    let worst = stalls.worst_in_measure.as_ref()?;
    (worst.ms >= DISTURBING_STALL_MS).then(|| {
        format!(
            "the {} thread did not run for {:.0} ms at t = {:.2} s (other load on the machine or \
             hypervisor steal): the measure window is disturbed, see net.stalls",
            worst.thread, worst.ms, worst.at_s
        )
    })
}

/// CPU time of the whole machine from `/proc/stat`: (all states, steal), in clock ticks.
pub fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    let steal = *fields.get(7)?;
    Some((fields.iter().take(8).sum(), steal))
}

/// Fraction of CPU time stolen between two [`cpu_ticks`] readings.
pub fn steal_between(a: (u64, u64), b: (u64, u64)) -> Option<f64> {
    let total = b.0.checked_sub(a.0)?;
    (total > 0).then(|| b.1.saturating_sub(a.1) as f64 / total as f64)
}

impl Stalls {
    /// Merges per-thread logs; `measure` is the window in seconds.
    pub fn collect<'a>(
        logs: impl IntoIterator<Item = (String, &'a StallLog)>,
        measure: [f64; 2],
    ) -> Stalls {
        let mut s = Stalls {
            threshold_ms: THRESHOLD as f64 / 1e6,
            ..Stalls::default()
        };
        for (thread, log) in logs {
            s.count += log.count;
            s.longest_ms = s.longest_ms.max(log.longest_ns as f64 / 1e6);
            for e in &log.events {
                s.events.push(StallReport {
                    thread: thread.clone(),
                    at_s: e.at as f64 / 1e9,
                    ms: e.ns as f64 / 1e6,
                });
            }
        }
        s.events.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        s.worst_in_measure = s
            .events
            .iter()
            .filter(|e| e.at_s + e.ms / 1e3 >= measure[0] - 1.0 && e.at_s <= measure[1])
            .max_by(|a, b| a.ms.total_cmp(&b.ms))
            .cloned();
        s.longest_in_measure_ms = s.worst_in_measure.as_ref().map_or(0.0, |w| w.ms);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_only_lateness_above_the_threshold() {
        let mut l = StallLog::default();
        l.due(1_000, 1_000 + THRESHOLD - 1);
        l.due(5 * NS_PER_MS, 2 * NS_PER_MS); // early: not a stall
        assert_eq!(l.count, 0);
        l.due(10 * NS_PER_MS, 40 * NS_PER_MS);
        assert_eq!((l.count, l.longest_ns), (1, 30 * NS_PER_MS));
    }

    #[test]
    fn warns_only_for_long_stalls_near_the_window() {
        let mut a = StallLog::default();
        a.due(500 * NS_PER_MS, 600 * NS_PER_MS); // 100 ms at 0.5 s: > 1 s before the window
        let mut b = StallLog::default();
        b.due(2_500 * NS_PER_MS, 2_504 * NS_PER_MS); // 4 ms inside it
        let s = Stalls::collect(
            [
                ("emulator".to_string(), &a),
                ("flow 0 sender".to_string(), &b),
            ],
            [2.0, 5.0],
        );
        assert_eq!(s.count, 2);
        assert_eq!(s.events[0].thread, "emulator");
        assert!((s.longest_in_measure_ms - 4.0).abs() < 1e-9);
        assert!(judge(Some(0.01), &s).is_none());
        let w = judge(Some(0.05), &s).unwrap();
        assert!(w.contains("5.0 %"), "{w}");
        b.due(1_950 * NS_PER_MS, 1_980 * NS_PER_MS); // 30 ms just before it
        let s = Stalls::collect([("flow 0 sender".to_string(), &b)], [2.0, 5.0]);
        let w = judge(None, &s).unwrap();
        assert!(w.contains("flow 0 sender") && w.contains("30 ms"), "{w}");
    }

    #[test]
    fn steal_is_read_from_proc_stat() {
        let a = cpu_ticks().expect("/proc/stat");
        assert!(a.0 > 0 && a.1 <= a.0);
        assert_eq!(steal_between((100, 10), (200, 15)), Some(0.05));
        assert_eq!(steal_between((100, 10), (100, 10)), None);
    }
}
