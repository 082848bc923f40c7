//! LEDBAT, Low Extra Delay Background Transport (RFC 6817, 2012), the scavenger congestion control of
//! BitTorrent's µTP and of OS updates: it uses the spare capacity of a path and gets out of the way of
//! other traffic, by keeping the queueing delay it sees at a `target` and backing off as soon as the
//! delay rises above it, long before a loss-based flow would react.
//!
//! Per ACK: queuing_delay = current_delay − base_delay; off_target = (target − queuing_delay)/target;
//! cwnd += gain·off_target·(acked/cwnd), so +gain packets per RTT with no queue and a decrease in
//! proportion once the delay is above target; cwnd never exceeds what is in flight + `allowed_increase`
//! packets (RFC 6817 §2.4.2, so an application-limited flow does not bank window) nor falls below 2.
//! A loss event halves cwnd (at most once per RTT: the transport's loss events already are).
//!
//! DECISION (delay samples): RFC 6817 measures one-way delay with sender timestamps; the sender here sees
//! RTT samples, so current_delay is the minimum of the last `noise_filter` (4) RTT samples and
//! base_delay the minimum over the last `base_history` (10) one-minute intervals, as the RFC's filters
//! do with one-way delays. Queueing on the ACK path therefore counts too (it is small on our dumbbells,
//! whose ACK path carries no data by default). ns-3's `TcpLedbat` uses the TCP timestamp option the same
//! way.
//! DECISION (slow start): RFC 6817 leaves it open; like ns-3's `TcpLedbat` (`DoSs`, on by default) the
//! first slow start runs, and ends when the queueing delay reaches the target or at the first loss.

use std::collections::VecDeque;

use crate::cc::reno_undo;
use crate::cc::{reno_on_timeout, AckSample, CongestionControl, LossEvent, TimeoutEvent};
use crate::params::{ParamError, ParamReader, Params};
use crate::time::{Nanos, NS_PER_SEC};

/// RFC 6817's base-delay buckets are one minute long.
const BUCKET: Nanos = 60 * NS_PER_SEC;

pub struct Ledbat {
    target: f64,
    gain: f64,
    allowed_increase: f64,
    noise_filter: usize,
    base_history: usize,
    cwnd: f64,
    ssthresh: f64,
    /// The last `noise_filter` RTT samples.
    current: VecDeque<Nanos>,
    /// Minimum RTT per one-minute interval, newest last: (interval start, minimum).
    base: VecDeque<(Nanos, Nanos)>,
    /// The latest queueing delay estimate (s), for the time series.
    qdelay: f64,
}

impl Ledbat {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<Ledbat, ParamError> {
        let mut r = ParamReader::new("ledbat", params);
        // RFC 6817: TARGET MUST be at most 100 ms; ns-3's default is 100 ms.
        let target = r.f64_in("target", 0.1, 1e-4, 0.1)?;
        let gain = r.f64_in("gain", 1.0, 1e-6, 1.0)?;
        let allowed_increase = r.f64_in("allowed_increase", 1.0, 0.0, 1e6)?;
        let noise_filter = r.f64_in("noise_filter", 4.0, 1.0, 1000.0)?.round() as usize;
        let base_history = r.f64_in("base_history", 10.0, 2.0, 1000.0)?.round() as usize;
        let slow_start = r.bool("slow_start", true)?;
        r.finish()?;
        Ok(Ledbat {
            target,
            gain,
            allowed_increase,
            noise_filter,
            base_history,
            cwnd: initial_cwnd,
            // without slow start, congestion avoidance from the first ACK
            ssthresh: if slow_start { 1e12 } else { initial_cwnd },
            current: VecDeque::new(),
            base: VecDeque::new(),
            qdelay: 0.0,
        })
    }

    fn add_sample(&mut self, now: Nanos, rtt: Nanos) {
        self.current.push_back(rtt);
        if self.current.len() > self.noise_filter {
            self.current.pop_front();
        }
        match self.base.back_mut() {
            Some((start, min)) if now < *start + BUCKET => *min = (*min).min(rtt),
            _ => {
                self.base.push_back((now, rtt));
                if self.base.len() > self.base_history {
                    self.base.pop_front();
                }
            }
        }
    }

    /// queuing_delay (s) from the filters, once there is a sample.
    fn queuing_delay(&self) -> Option<f64> {
        let cur = *self.current.iter().min()?;
        let base = self.base.iter().map(|&(_, m)| m).min()?;
        Some(cur.saturating_sub(base) as f64 / NS_PER_SEC as f64)
    }
}

impl CongestionControl for Ledbat {
    fn name(&self) -> &'static str {
        "ledbat"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(rtt) = ack.rtt.filter(|&r| r > 0) {
            self.add_sample(ack.now, rtt);
        }
        let Some(q) = self.queuing_delay() else {
            return;
        };
        self.qdelay = q;
        if ack.in_recovery || ack.app_limited || ack.newly_acked == 0 {
            return;
        }
        let acked = ack.newly_acked as f64;
        if self.cwnd < self.ssthresh {
            if q < self.target {
                self.cwnd += acked;
                return;
            }
            // The delay reached the target: slow start is over.
            self.ssthresh = self.cwnd;
        }
        let off_target = (self.target - q) / self.target;
        self.cwnd += self.gain * off_target * acked / self.cwnd;
        let max_allowed = ack.in_flight as f64 + acked + self.allowed_increase;
        self.cwnd = self.cwnd.min(max_allowed).max(2.0);
    }
    fn on_loss(&mut self, _ev: &LossEvent) {
        self.cwnd = (self.cwnd / 2.0).max(2.0);
        self.ssthresh = self.cwnd;
    }
    /// A reduction found spurious: Not in Linux. RFC 6817's loss response is a halving on top of a delay-driven window that every ACK
    /// recomputes toward the target; undo restores the window from before the halving (Reno's rule),
    /// and the delay controller carries on from there.
    fn undo_cwnd(&mut self, prior_cwnd: f64, prior_ssthresh: f64) {
        reno_undo(
            &mut self.cwnd,
            &mut self.ssthresh,
            prior_cwnd,
            prior_ssthresh,
        );
    }
    fn on_timeout(&mut self, ev: &TimeoutEvent) {
        reno_on_timeout(&mut self.cwnd, &mut self.ssthresh, ev);
    }
    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("ledbat_qdelay", self.qdelay));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn ack(now: Nanos, rtt: Nanos, in_flight: u32) -> AckSample {
        AckSample {
            now,
            newly_acked: 1,
            rtt: Some(rtt),
            in_flight,
            ..Default::default()
        }
    }

    fn ledbat(target: f64) -> Ledbat {
        let mut p = Params::new();
        p.insert("target".into(), crate::params::ParamValue::Num(target));
        let mut l = Ledbat::new(10.0, &p).unwrap();
        l.ssthresh = 1.0; // congestion avoidance
        l
    }

    #[test]
    fn grows_one_packet_per_rtt_without_queue_and_shrinks_above_target() {
        // cwnd 100, base RTT 50 ms. No queue: 100 ACKs add gain·1 = 1 packet.
        let mut l = ledbat(0.025);
        l.cwnd = 100.0;
        for k in 0..100 {
            l.on_ack(&ack(k * MS, 50 * MS, 200));
        }
        assert!((l.cwnd() - 101.0).abs() < 0.01, "{}", l.cwnd());
        // 75 ms of queueing against a 25 ms target: off_target = −2, two packets fewer per RTT.
        let mut l = ledbat(0.025);
        l.cwnd = 100.0;
        l.on_ack(&ack(0, 50 * MS, 200));
        for k in 1..=4 {
            l.on_ack(&ack(k * MS, 125 * MS, 200)); // until the noise filter holds only queued samples
        }
        let before = l.cwnd();
        for k in 5..105 {
            l.on_ack(&ack(k * MS, 125 * MS, 200));
        }
        assert!((before - l.cwnd() - 2.0).abs() < 0.05, "{}", l.cwnd());
    }

    #[test]
    fn the_noise_filter_and_base_history() {
        let mut l = ledbat(0.025);
        // One late sample among the last four (51, 90, 52, 53): their minimum, 51 ms, ignores it; the
        // base is the 50 ms sample, which has left the filter.
        for (k, rtt) in [50, 51, 90, 52, 53].into_iter().enumerate() {
            l.on_ack(&ack(k as u64 * MS, rtt * MS, 10));
        }
        assert!((l.queuing_delay().unwrap() - 0.001).abs() < 1e-9);
        // Base history: ten one-minute minima; a path change to 80 ms is learnt after ten minutes.
        for m in 1..=11u64 {
            l.on_ack(&ack(m * BUCKET + 1, 80 * MS, 10));
        }
        assert_eq!(l.queuing_delay(), Some(0.0));
    }

    #[test]
    fn no_window_banking_when_application_limited() {
        // 5 packets in flight: cwnd never exceeds in flight + acked + 1.
        let mut l = ledbat(0.025);
        l.cwnd = 5.0;
        for k in 0..1000 {
            l.on_ack(&ack(k * MS, 50 * MS, 5));
        }
        assert!(l.cwnd() <= 7.0, "{}", l.cwnd());
    }
}
