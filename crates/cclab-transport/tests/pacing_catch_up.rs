//! A paced sender woken late: how much of its schedule it may catch up at once (`Config::
//! pacing_catch_up`, `CatchUp`). The simulator wakes on time and gives no credit beyond half a gap;
//! the real datapath gives slow senders 100 µs and fast ones (packets ≤ 50 µs apart) 800 µs.

use cclab_cc::cc::{AckSample, CongestionControl, LossEvent, TimeoutEvent};
use cclab_cc::time::{tx_time, Nanos, NS_PER_MS};
use cclab_transport::{CatchUp, Config, Sender};

/// A fixed pacing rate and a window that never limits.
struct Paced(f64);

impl CongestionControl for Paced {
    fn name(&self) -> &'static str {
        "paced"
    }
    fn cwnd(&self) -> f64 {
        1e6
    }
    fn pacing_rate_bps(&self) -> Option<f64> {
        Some(self.0)
    }
    fn on_ack(&mut self, _: &AckSample) {}
    fn on_loss(&mut self, _: &LossEvent) {}
    fn on_timeout(&mut self, _: &TimeoutEvent) {}
}

const REAL: CatchUp = CatchUp {
    credit: 100_000,
    fast_gap: 50_000,
    fast_credit: 800_000,
};

/// Packets the sender lets go at once when it wakes `late` after its next departure was due, having
/// paced on time until then.
fn burst_after(rate_bps: f64, catch_up: CatchUp, late: Nanos) -> usize {
    let cfg = Config {
        initial_cwnd: 1e6,
        max_window: 1 << 20,
        pacing_catch_up: catch_up,
        ..Config::default()
    };
    let mut s = Sender::new(cfg, Box::new(Paced(rate_bps)), None, 0);
    // Pace on time for a while: wake exactly at each departure.
    let mut now: Nanos = 0;
    for _ in 0..50 {
        while s.poll_transmit(now).is_some() {}
        now = s
            .poll_timeout()
            .expect("a paced sender has a next departure");
    }
    // Then wake late by `late`.
    let now = now + late;
    let mut n = 0;
    while s.poll_transmit(now).is_some() {
        n += 1;
    }
    n
}

fn gap(rate_bps: f64) -> Nanos {
    tx_time(1500, rate_bps)
}

#[test]
fn the_simulators_sender_catches_up_half_a_gap_only() {
    // Woken 5 ms late at 1 Gbit/s (12 µs gaps): the packet due, nothing of the 5 ms it missed.
    assert!(burst_after(1e9, CatchUp::NONE, 5 * NS_PER_MS) <= 2);
}

#[test]
fn a_slow_sender_catches_up_at_most_100_us() {
    // 100 Mbit/s: 120 µs gaps, above the 50 µs of the fast regime. A 5 ms late wake-up sends the
    // packet due and at most 100 µs more of the schedule: one or two packets, not the 41 missed.
    assert!(gap(100e6) > REAL.fast_gap);
    let n = burst_after(100e6, REAL, 5 * NS_PER_MS);
    assert!((1..=2).contains(&n), "{n} packets");
}

#[test]
fn a_fast_sender_catches_up_800_us() {
    // 1 Gbit/s: 12 µs gaps. A 5 ms late wake-up sends what fell due in the last 800 µs: 800 / 12 =
    // 66.7, so 67 or 68 packets with the one due (rounding of the gaps and of where the schedule
    // stood when the sender slept), far fewer than the 417 of 5 ms.
    assert!(gap(1e9) <= REAL.fast_gap);
    let n = burst_after(1e9, REAL, 5 * NS_PER_MS);
    assert!((66..=69).contains(&n), "{n} packets");
    // Late by less than the credit: nothing of the schedule is lost (300 µs: 25 gaps, plus the one due).
    let n = burst_after(1e9, REAL, 300_000);
    assert!((25..=27).contains(&n), "{n} packets");
}
