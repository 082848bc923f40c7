//! What the machine did to a real run: CPU pressure, hypervisor steal, late timers, host latency and
//! thread stalls, and the rule that calls a run's measure window disturbed ([`judge`]).
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
//! Ordinary CPU contention (another process busy on one of the two cores) shows neither as steal nor
//! as long stalls: raised priority keeps every stall short, but each wake-up of our threads waits for
//! the other process's time slice to be preempted, a few hundred µs, thousands of times a second.
//! Hence the run also measures, over the measure window ([`Figures`], `net.disturbance`): the share of
//! time some task waited for a CPU (`/proc/pressure/cpu`, PSI "some"), how late the emulator delivered
//! against its schedule, how late our endpoints' timers woke them, and the host latency each flow saw
//! (its RTT minus the path's propagation and transmission and minus the emulated queues' sojourn: what
//! the hosts' stacks and our threads' scheduling added).
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

/// The stalls of one thread, and how late its timers woke it in the measure window.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StallLog {
    pub count: u64,
    pub total_ns: Nanos,
    pub longest_ns: Nanos,
    /// The first [`KEEP`] stalls, in time order.
    pub events: Vec<Stall>,
    /// Lateness of timed wake-ups due inside `window` ([`StallLog::woke`]).
    #[serde(skip)]
    pub timer: Lateness,
    #[serde(skip)]
    window: [Nanos; 2],
}

impl StallLog {
    /// A log that also records timer lateness for wake-ups due in `window` (run clock, ns).
    pub fn for_window(window: [Nanos; 2]) -> StallLog {
        StallLog {
            window,
            ..StallLog::default()
        }
    }

    /// A timed sleep due at `due` ended at `now` (the timer fired, or a spin reached it): its lateness
    /// counts toward the timer figures when due in the window, and as a stall when long.
    pub fn woke(&mut self, due: Nanos, now: Nanos) {
        if due >= self.window[0] && due < self.window[1] {
            self.timer.record(now.saturating_sub(due));
        }
        self.due(due, now);
    }

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

/// Bucket width of [`Lateness`] and its range: 10 µs buckets resolve an idle machine's timer
/// lateness (tens of µs) and a loaded one's (hundreds of µs to ms); later than 20 ms is a stall anyway.
const LATE_BUCKET_NS: Nanos = 10_000;
const LATE_BUCKETS: usize = 2_000;

/// A distribution of lateness (ns) in 10 µs buckets up to 20 ms (the last bucket holds everything
/// later).
#[derive(Clone, Debug, Default)]
pub struct Lateness {
    hist: Vec<u64>,
    n: u64,
}

impl Lateness {
    pub fn record(&mut self, late: Nanos) {
        if self.hist.is_empty() {
            self.hist = vec![0; LATE_BUCKETS + 1];
        }
        self.hist[((late / LATE_BUCKET_NS) as usize).min(LATE_BUCKETS)] += 1;
        self.n += 1;
    }

    pub fn merge(&mut self, o: &Lateness) {
        if o.n == 0 {
            return;
        }
        if self.hist.is_empty() {
            self.hist = vec![0; LATE_BUCKETS + 1];
        }
        for (a, b) in self.hist.iter_mut().zip(&o.hist) {
            *a += b;
        }
        self.n += o.n;
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// The `q` quantile in µs (upper bound of its bucket); None without samples.
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let target = ((self.n as f64 * q).ceil() as u64).max(1);
        let mut acc = 0;
        for (i, c) in self.hist.iter().enumerate() {
            acc += c;
            if acc >= target {
                return Some(((i as u64 + 1) * LATE_BUCKET_NS) as f64 / 1e3);
            }
        }
        Some(((LATE_BUCKETS as u64 + 1) * LATE_BUCKET_NS) as f64 / 1e3)
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

/// What disturbed the measure window, measured ([`crate::report`] fills it; `net.disturbance`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    /// Share of the window's wall time in which some runnable task waited for a CPU (PSI "some" of
    /// `/proc/pressure/cpu`, differenced over the window); None where the kernel has no PSI.
    pub cpu_pressure: Option<f64>,
    /// Share of the machine's CPU time the hypervisor stole over the window (`/proc/stat`).
    pub steal_fraction: Option<f64>,
    /// How late the emulator wrote packets against their emulated delivery time, in the window: median
    /// and 99th percentile, µs (None: nothing delivered).
    pub emulator_late_p50_us: Option<f64>,
    pub emulator_late_p99_us: Option<f64>,
    /// How late our endpoints' timers (and short spins) woke them against the time they asked for, in
    /// the window, all our endpoint threads pooled: median and 99th percentile, µs; and how many timed
    /// wake-ups that is (None and 0: no flow of ours).
    pub timer_late_p50_us: Option<f64>,
    pub timer_late_p99_us: Option<f64>,
    pub timer_wakeups: u64,
    /// `bpf:*` flows: the kernel datapath's controller (a user-space thread too) from an ACK to its
    /// decision, 99th percentile over the whole run, µs (`net.kernel_datapath.ack_to_decision_p99_s`);
    /// None without such flows.
    pub controller_late_p99_us: Option<f64>,
    /// Per flow, host latency over the window (ms): the smoothed RTT at each sample minus the flow's
    /// round-trip propagation, its data packet's transmission time on the bottleneck and the mean
    /// sojourn in both emulated queues: `[p50, p99]` over the window's samples; None without samples.
    pub host_latency_ms: Vec<Option<[f64; 2]>>,
    /// The worst flow's median host latency (ms), the figure [`judge`] uses.
    pub host_latency_p50_ms: Option<f64>,
    /// Longest stall of any thread in or within 1 s before the window (ms; `net.stalls`).
    pub longest_stall_ms: f64,
    /// Why the window is disturbed (empty: it is not): the rules of [`judge`] that fired.
    pub reasons: Vec<String>,
}

/// A stall this long in or just before the measure window disturbs it: at least 20 packets' time at
/// the highest rate a test uses, or half the shortest RTT, and 4× the stalls a quiet run shows (≤ 5 ms).
pub const DISTURBING_STALL_MS: f64 = 10.0;

/// Steal over the measure window above this disturbs it: quiet runs measured 0.3–1.4 %, disturbed ones
/// (MaxNet's queue several times its quiet value) 9–18 %.
pub const DISTURBING_STEAL: f64 = 0.03;

/// CPU pressure over the window at or above this disturbs it when it also reached our threads (a
/// lateness p99 of at least [`PRESSED_LATENESS_US`]). PSI is the machine's, not ours: our own threads
/// (emulator, sender, receiver on 2 cores) make some of it, so pressure alone is not evidence. Measured
/// under other helpers' builds and tests (load 9-11 on 2 cores): 88-100 %; one other process busy
/// keeps it well above 25 % (it waits whenever our raised-priority threads take its core).
pub const DISTURBING_PRESSURE: f64 = 0.25;

/// With [`DISTURBING_PRESSURE`]: lateness p99 (µs, the emulator's or our timers') showing that the
/// pressure delayed our threads. Quiet runs: emulator p99 16-285 µs (docs/real-datapath.md, "At 1
/// Gbit/s"), timers ~50 µs at raised priority.
pub const PRESSED_LATENESS_US: f64 = 300.0;

/// 99th percentile of the emulator's delivery lateness at or above this (µs) disturbs the window, with
/// or without pressure: ≥ 1 ms is the emulator's top bucket, 3× the worst quiet p99 (285 µs) and 8
/// packet times at 100 Mbit/s.
pub const DISTURBING_EMULATOR_P99_US: f64 = 1_000.0;

/// 99th percentile of our endpoints' timer lateness at or above this (µs) disturbs the window: 20× a
/// quiet wake-up; under load 1.3-6 ms measured (docs/real-datapath.md).
pub const DISTURBING_TIMER_P99_US: f64 = 1_000.0;

/// The kernel datapath controller's ACK-to-decision p99 at or above this (µs) disturbs the run: 5× the
/// worst quiet value (115–198 µs at 50 Mbit/s, docs/kernel-datapath.md). Measured with one more busy
/// process on this loaded machine: 5.1 ms in a `bpf:vegas` run whose queue was 12.1 packets (bound 10,
/// quiet 6.9 ± 0.3) while the emulator's p99 was 49 µs.
pub const DISTURBING_CONTROLLER_P99_US: f64 = 1_000.0;

/// The worst flow's median host latency at or above this (ms) disturbs the window: 5 % of the shortest
/// RTT the comparisons use (40 ms), half their 10 % bound; quiet runs 0.02-0.4 ms.
pub const DISTURBING_HOST_P50_MS: f64 = 2.0;

/// Why the measure window is disturbed: every rule that fired, with its figure (empty: undisturbed).
pub fn judge(f: &Figures, stalls: &Stalls) -> Vec<String> {
    let mut why = Vec::new();
    if let Some(s) = f.steal_fraction.filter(|&s| s >= DISTURBING_STEAL) {
        why.push(format!(
            "the hypervisor stole {:.1} % of the CPU time (≥ {:.0} %)",
            100.0 * s,
            100.0 * DISTURBING_STEAL
        ));
    }
    let late = f
        .emulator_late_p99_us
        .into_iter()
        .chain(f.timer_late_p99_us)
        .reduce(f64::max);
    if let (Some(p), Some(l)) = (
        f.cpu_pressure.filter(|&p| p >= DISTURBING_PRESSURE),
        late.filter(|&l| l >= PRESSED_LATENESS_US),
    ) {
        why.push(format!(
            "tasks waited for a CPU {:.0} % of the time (PSI, ≥ {:.0} %) and our threads ran late by \
             {l:.0} µs at the 99th percentile (≥ {PRESSED_LATENESS_US:.0})",
            100.0 * p,
            100.0 * DISTURBING_PRESSURE
        ));
    }
    if let Some(l) = f
        .emulator_late_p99_us
        .filter(|&l| l >= DISTURBING_EMULATOR_P99_US)
    {
        why.push(format!(
            "the emulator delivered late by {l:.0} µs at the 99th percentile (≥ {DISTURBING_EMULATOR_P99_US:.0})"
        ));
    }
    if let Some(l) = f
        .timer_late_p99_us
        .filter(|&l| l >= DISTURBING_TIMER_P99_US)
    {
        why.push(format!(
            "our endpoints' timers woke late by {l:.0} µs at the 99th percentile (≥ {DISTURBING_TIMER_P99_US:.0})"
        ));
    }
    if let Some(l) = f
        .controller_late_p99_us
        .filter(|&l| l >= DISTURBING_CONTROLLER_P99_US)
    {
        why.push(format!(
            "the kernel datapath's controller took {l:.0} µs from an ACK to its decision at the 99th \
             percentile (≥ {DISTURBING_CONTROLLER_P99_US:.0})"
        ));
    }
    if let Some(h) = f
        .host_latency_p50_ms
        .filter(|&h| h >= DISTURBING_HOST_P50_MS)
    {
        why.push(format!(
            "the hosts added {h:.1} ms to a flow's median RTT (≥ {DISTURBING_HOST_P50_MS:.0})"
        ));
    }
    if let Some(w) = stalls
        .worst_in_measure
        .as_ref()
        .filter(|w| w.ms >= DISTURBING_STALL_MS)
    {
        why.push(format!(
            "the {} thread did not run for {:.0} ms at t = {:.2} s (≥ {DISTURBING_STALL_MS:.0})",
            w.thread, w.ms, w.at_s
        ));
    }
    why
}

/// The warning a disturbed run prints (tests act on `net.disturbed` and quote the figures).
pub fn warning(f: &Figures) -> Option<String> {
    (!f.reasons.is_empty()).then(|| {
        format!(
            "the machine disturbed the measure window: {}. Results there measure the machine as much as \
             the algorithms (net.disturbance, net.stalls)",
            f.reasons.join("; ")
        )
    })
}

/// PSI "some" total of `/proc/pressure/cpu` (µs some task waited for a CPU since boot); None where the
/// kernel has no PSI (built without it, or booted with psi=0: the file is then absent or unreadable).
pub fn cpu_pressure_us() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("total="))?
        .parse()
        .ok()
}

/// CPU pressure between two readings of [`cpu_pressure_us`] `wall_s` seconds apart.
pub fn pressure_between(a: u64, b: u64, wall_s: f64) -> Option<f64> {
    (wall_s > 0.0).then(|| b.saturating_sub(a) as f64 / 1e6 / wall_s)
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
        let steal = |x| Figures {
            steal_fraction: Some(x),
            ..Figures::default()
        };
        assert!(judge(&steal(0.01), &s).is_empty());
        let w = judge(&steal(0.05), &s);
        assert!(w.len() == 1 && w[0].contains("5.0 %"), "{w:?}");
        b.due(1_950 * NS_PER_MS, 1_980 * NS_PER_MS); // 30 ms just before it
        let s = Stalls::collect([("flow 0 sender".to_string(), &b)], [2.0, 5.0]);
        let w = judge(&Figures::default(), &s);
        assert!(
            w[0].contains("flow 0 sender") && w[0].contains("30 ms"),
            "{w:?}"
        );
    }

    #[test]
    fn each_figure_over_its_threshold_disturbs_the_window() {
        let quiet = Stalls::default();
        // Pressure without lateness (our own threads on 2 cores) is not a disturbance.
        let alone = Figures {
            cpu_pressure: Some(1.0),
            emulator_late_p99_us: Some(PRESSED_LATENESS_US * 0.9),
            ..Figures::default()
        };
        assert!(judge(&alone, &quiet).is_empty());
        let f = Figures {
            cpu_pressure: Some(DISTURBING_PRESSURE * 0.9),
            steal_fraction: Some(0.0),
            emulator_late_p99_us: Some(PRESSED_LATENESS_US),
            timer_late_p99_us: Some(PRESSED_LATENESS_US * 0.9),
            host_latency_p50_ms: Some(DISTURBING_HOST_P50_MS * 0.9),
            controller_late_p99_us: Some(DISTURBING_CONTROLLER_P99_US * 0.9),
            ..Figures::default()
        };
        assert!(judge(&f, &quiet).is_empty());
        let over = [
            Figures {
                cpu_pressure: Some(DISTURBING_PRESSURE),
                ..f.clone()
            },
            Figures {
                emulator_late_p99_us: Some(DISTURBING_EMULATOR_P99_US),
                ..f.clone()
            },
            Figures {
                timer_late_p99_us: Some(DISTURBING_TIMER_P99_US),
                ..f.clone()
            },
            Figures {
                host_latency_p50_ms: Some(DISTURBING_HOST_P50_MS),
                ..f.clone()
            },
            Figures {
                controller_late_p99_us: Some(DISTURBING_CONTROLLER_P99_US),
                ..f.clone()
            },
        ];
        let says = ["PSI", "emulator", "timers", "median RTT", "controller"];
        for (g, says) in over.iter().zip(says) {
            let w = judge(g, &quiet);
            assert!(w.len() == 1 && w[0].contains(says), "{w:?}");
        }
        // No PSI, no figures (kernel TCP only, nothing delivered): nothing to judge, not disturbed.
        assert!(judge(&Figures::default(), &quiet).is_empty());
        let mut g = over[0].clone();
        g.reasons = judge(&g, &quiet);
        assert!(warning(&g)
            .unwrap()
            .contains("disturbed the measure window"));
        assert!(warning(&f).is_none());
    }

    #[test]
    fn timer_lateness_counts_wake_ups_due_in_the_window() {
        let mut l = StallLog::for_window([NS_PER_MS, 3 * NS_PER_MS]);
        l.woke(500_000, 900_000); // due before the window
        for k in 0..99 {
            l.woke(NS_PER_MS + k * 10_000, NS_PER_MS + k * 10_000 + 35_000); // 35 µs late
        }
        l.woke(2 * NS_PER_MS, 2 * NS_PER_MS + 3 * NS_PER_MS); // 3 ms late: also a stall
        assert_eq!(l.timer.count(), 100);
        assert_eq!(l.timer.quantile_us(0.5), Some(40.0)); // bucket [30, 40) µs, upper bound
        assert_eq!(l.timer.quantile_us(0.999), Some(3_010.0));
        assert_eq!(l.count, 1);
        let mut m = Lateness::default();
        m.merge(&l.timer);
        m.merge(&Lateness::default());
        assert_eq!(m.count(), 100);
        assert_eq!(Lateness::default().quantile_us(0.5), None);
    }

    #[test]
    fn cpu_pressure_is_read_from_proc_pressure_when_there() {
        // The kernel may lack PSI (then None); where it has it, the total only grows.
        if let Some(a) = cpu_pressure_us() {
            std::thread::sleep(std::time::Duration::from_millis(5));
            assert!(cpu_pressure_us().unwrap() >= a);
        }
        assert_eq!(pressure_between(1_000_000, 1_500_000, 2.0), Some(0.25));
        assert_eq!(pressure_between(5, 5, 0.0), None);
    }

    #[test]
    fn steal_is_read_from_proc_stat() {
        let a = cpu_ticks().expect("/proc/stat");
        assert!(a.0 > 0 && a.1 <= a.0);
        assert_eq!(steal_between((100, 10), (200, 15)), Some(0.05));
        assert_eq!(steal_between((100, 10), (100, 10)), None);
    }
}
