//! PIE (RFC 8033, "Proportional Integral Controller Enhanced"): drops at enqueue with a probability that a
//! PI controller steers so that the queueing delay settles at a reference (`target`, 15 ms).
//!
//! Every `t_update` (15 ms) the probability moves by α·(qdelay − target) + β·(qdelay − qdelay_old),
//! α = 0.125 Hz and β = 1.25 Hz, the step scaled down while the probability is small (÷2048 below 10⁻⁶ …
//! ÷2 below 10 %) so that a lightly loaded queue is not pushed into heavy dropping in one update, and
//! capped at +2 % per update above 10 % (RFC 8033 §5.2–5.3). With no queue at two updates in a row the
//! probability decays by 2 % per update. For `max_burst` (150 ms) after start, and again after the
//! queue has been quiet (probability 0 and delay below half the target at two updates in a row), PIE
//! lets bursts in without early drops. No early drop either while the delay was below half the target
//! and the probability is below 20 %, or while at most two packets are queued (§5.1's safeguards).
//!
//! The queueing delay is the sojourn time of the last packet to leave (0 once the queue is empty): the
//! timestamp method Linux `pie` and ns-3's `PieQueueDisc` use by default, in place of RFC 8033's
//! departure-rate estimate. The periodic update runs lazily: both hooks first apply every update that
//! fell due before `now`. That is exact, not an approximation, because the delay only changes in
//! `on_departure` and the probability is only read in `enqueue`, both of which catch up first.
//!
//! With `ecn`, ECN-capable packets are CE-marked instead of dropped while the probability is at most
//! `mark_ecn_threshold` (10 %); above it PIE drops them too (§5.1: marking alone no longer controls a
//! queue whose senders ignore it). `derandomize` switches on RFC 8033's optional accumulated-probability
//! dropping (off by default, as in Linux and ns-3). The buffer limit still applies (tail drop when full).
//! Linux's extra +2 % step when the delay exceeds 250 ms is not in the RFC and not here.

use super::{BufferLimit, Departure, Leaving, QueueDiscipline, QueueLen, RouterPacket, Verdict};
use crate::params::{ParamError, ParamReader, Params};
use crate::rng::{uniform, SimRng};
use crate::time::{Nanos, NS_PER_SEC};

pub struct Pie {
    limit: BufferLimit,
    target: f64,
    t_update: Nanos,
    alpha: f64,
    beta: f64,
    max_burst: Nanos,
    ecn: bool,
    mark_ecn_threshold: f64,
    derandomize: bool,
    /// Two full packets: below this many bytes queued PIE never drops early.
    min_bytes: u64,
    drop_prob: f64,
    /// The latest delay sample (s) and the one the previous update used.
    qdelay: f64,
    qdelay_old: f64,
    burst_allowance: Nanos,
    /// When the next periodic update is due.
    next_update: Nanos,
    accu_prob: f64,
    /// Packets dropped and marked early (the buffer's tail drops are the driver's).
    pub early_drops: u64,
    pub early_marks: u64,
}

impl Pie {
    pub fn new(params: &Params, limit: BufferLimit, packet_size: u32) -> Result<Pie, ParamError> {
        let mut r = ParamReader::new("pie", params);
        let target = r.f64_in("target", 0.015, 1e-6, 10.0)?;
        let t_update = r.f64_in("t_update", 0.015, 1e-4, 10.0)?;
        let alpha = r.f64_in("alpha", 0.125, 0.0, 1e3)?;
        let beta = r.f64_in("beta", 1.25, 0.0, 1e3)?;
        let max_burst = r.f64_in("max_burst", 0.15, 0.0, 100.0)?;
        let ecn = r.bool("ecn", false)?;
        let mark_ecn_threshold = r.f64_in("mark_ecn_threshold", 0.1, 0.0, 1.0)?;
        let derandomize = r.bool("derandomize", false)?;
        r.finish()?;
        let ns = |s: f64| (s * NS_PER_SEC as f64).round() as Nanos;
        Ok(Pie {
            limit,
            target,
            t_update: ns(t_update),
            alpha,
            beta,
            max_burst: ns(max_burst),
            ecn,
            mark_ecn_threshold,
            derandomize,
            min_bytes: 2 * packet_size.max(1) as u64,
            drop_prob: 0.0,
            qdelay: 0.0,
            qdelay_old: 0.0,
            burst_allowance: ns(max_burst),
            next_update: ns(t_update),
            accu_prob: 0.0,
            early_drops: 0,
            early_marks: 0,
        })
    }

    /// The current drop probability (after catching up to `now`).
    pub fn drop_prob(&mut self, now: Nanos) -> f64 {
        self.catch_up(now);
        self.drop_prob
    }

    /// Runs every periodic update due at or before `now`.
    fn catch_up(&mut self, now: Nanos) {
        while self.next_update <= now {
            self.update();
            self.next_update += self.t_update;
        }
    }

    /// RFC 8033 §5.2–5.4: one controller step.
    fn update(&mut self) {
        let (q, q_old) = (self.qdelay, self.qdelay_old);
        let mut p = self.alpha * (q - self.target) + self.beta * (q - q_old);
        // Small probabilities move in small steps: a light load's first drops must not jump to several %.
        p /= match self.drop_prob {
            d if d < 1e-6 => 2048.0,
            d if d < 1e-5 => 512.0,
            d if d < 1e-4 => 128.0,
            d if d < 1e-3 => 32.0,
            d if d < 1e-2 => 8.0,
            d if d < 1e-1 => 2.0,
            _ => 1.0,
        };
        if self.drop_prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        let mut d = self.drop_prob + p;
        if q == 0.0 && q_old == 0.0 {
            d *= 0.98;
        }
        self.drop_prob = d.clamp(0.0, 1.0);
        self.burst_allowance = self.burst_allowance.saturating_sub(self.t_update);
        if self.drop_prob == 0.0 && q < self.target / 2.0 && q_old < self.target / 2.0 {
            self.burst_allowance = self.max_burst;
        }
        self.qdelay_old = q;
    }

    /// RFC 8033 §5.1 `drop_early`.
    fn drop_early(&mut self, q: QueueLen, rng: &mut SimRng) -> bool {
        if (self.qdelay_old < self.target / 2.0 && self.drop_prob < 0.2)
            || q.bytes <= self.min_bytes
        {
            return false;
        }
        if self.derandomize {
            if self.drop_prob == 0.0 {
                self.accu_prob = 0.0;
            }
            self.accu_prob += self.drop_prob;
            if self.accu_prob < 0.85 {
                return false;
            }
            if self.accu_prob >= 8.5 {
                self.accu_prob = 0.0;
                return true;
            }
        }
        let drop = uniform(rng) < self.drop_prob;
        if drop {
            self.accu_prob = 0.0;
        }
        drop
    }
}

impl QueueDiscipline for Pie {
    fn name(&self) -> &'static str {
        "pie"
    }

    fn enqueue(
        &mut self,
        now: Nanos,
        pkt: &mut RouterPacket<'_>,
        q: QueueLen,
        rng: &mut SimRng,
    ) -> Verdict {
        self.catch_up(now);
        let early = self.burst_allowance == 0 && self.drop_early(q, rng);
        let mark = early && self.ecn && pkt.ect && self.drop_prob <= self.mark_ecn_threshold;
        if early && !mark {
            self.early_drops += 1;
            return Verdict::Drop;
        }
        // A marked packet still needs room in the buffer.
        if self.limit.overflows(q, pkt.bytes) {
            return Verdict::Drop;
        }
        if mark {
            self.early_marks += 1;
            return Verdict::Mark;
        }
        Verdict::Enqueue
    }

    fn judges_departures(&self) -> bool {
        true
    }

    fn on_departure(&mut self, now: Nanos, pkt: &Leaving, q: QueueLen) -> Departure {
        self.catch_up(now);
        // An empty queue has no delay, whatever the last packet waited.
        self.qdelay = if q.pkts == 0 {
            0.0
        } else {
            pkt.sojourn as f64 / NS_PER_SEC as f64
        };
        Departure::Send
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("pie_prob", self.drop_prob));
        out.push(("pie_qdelay", self.qdelay));
        // by cause: PIE's early drops and marks (the link's `drops` add the buffer's tail drops)
        out.push(("pie_early_drops", self.early_drops as f64));
        out.push(("pie_early_marks", self.early_marks as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;
    use crate::rng::stream;

    const MS: Nanos = 1_000_000;

    fn lv(sojourn: Nanos, ect: bool) -> Leaving {
        Leaving {
            queue: 0,
            sojourn,
            bytes: 1500,
            ect,
        }
    }

    fn pie(params: &[(&str, ParamValue)]) -> Pie {
        let mut p = Params::new();
        for (k, v) in params {
            p.insert((*k).into(), v.clone());
        }
        Pie::new(
            &p,
            BufferLimit {
                pkts: Some(1000),
                bytes: None,
            },
            1500,
        )
        .unwrap()
    }

    fn q(pkts: u32) -> QueueLen {
        QueueLen {
            pkts,
            bytes: pkts as u64 * 1500,
        }
    }

    fn arrive(p: &mut Pie, now: Nanos, pkts: u32, ect: bool, rng: &mut SimRng) -> Verdict {
        let mut field = 0;
        let mut pkt = RouterPacket {
            bytes: 1500,
            ect,
            is_data: true,
            flags: 0,
            fwd_field: &mut field,
            flow: 0,
            queue: 0,
        };
        p.enqueue(now, &mut pkt, q(pkts), rng)
    }

    #[test]
    fn the_first_updates_follow_the_scaled_pi_law() {
        // A constant 40 ms delay from t = 0: the first update (15 ms) sees qdelay 40 ms, old 0:
        // p = 0.125·0.025 + 1.25·0.040 = 0.053125, ÷2048 (prob < 1e-6) = 2.594e-5.
        // The second: p = 0.125·0.025 = 0.003125, ÷128 (the probability is now in [1e-5, 1e-4)).
        let mut p = pie(&[]);
        p.on_departure(1, &lv(40 * MS, false), q(50));
        let d1 = p.drop_prob(15 * MS);
        assert!((d1 - 0.053125 / 2048.0).abs() < 1e-12, "{d1}");
        let d2 = p.drop_prob(30 * MS);
        assert!((d2 - (d1 + 0.003125 / 128.0)).abs() < 1e-12, "{d2}");
    }

    #[test]
    fn a_standing_delay_above_target_drives_the_probability_up_and_bursts_pass_first() {
        // 40 ms of standing delay: nothing is dropped during the 150 ms burst allowance. Then the
        // integral term α·(40 − 15 ms) = 0.3125 % per update, divided by 2048 … 2 while the probability
        // is small, takes it through the scaled ranges to 10 % in ≈ 95 updates (1.4 s); the remaining
        // ≈ 105 updates to 3 s add 0.3125 % each: ≈ 43 %.
        let mut p = pie(&[]);
        let mut rng = stream(1, 0);
        let mut drops_in_burst = 0;
        for i in 0..150 {
            p.on_departure(i * MS, &lv(40 * MS, false), q(300));
            drops_in_burst +=
                (arrive(&mut p, i * MS, 300, false, &mut rng) == Verdict::Drop) as u32;
        }
        assert_eq!(drops_in_burst, 0);
        for i in 150..3000 {
            p.on_departure(i * MS, &lv(40 * MS, false), q(300));
            arrive(&mut p, i * MS, 300, false, &mut rng);
        }
        let prob = p.drop_prob(3000 * MS);
        assert!(prob > 0.40 && prob < 0.45, "{prob}");
        assert!(p.early_drops > 10, "{}", p.early_drops);
    }

    #[test]
    fn the_probability_settles_where_the_delay_equals_the_target() {
        // At exactly the target delay the proportional and integral terms are both zero: no change.
        let mut p = pie(&[]);
        p.drop_prob = 0.05;
        p.qdelay_old = 0.015;
        p.on_departure(1, &lv(15 * MS, false), q(100));
        assert_eq!(p.drop_prob(15 * MS * 100), 0.05);
    }

    #[test]
    fn an_empty_queue_decays_the_probability_and_restores_the_burst_allowance() {
        let mut p = pie(&[]);
        p.drop_prob = 0.05;
        p.burst_allowance = 0;
        p.on_departure(1, &lv(5 * MS, false), q(0));
        // Qdelay 0 at every update: −α·target/2 per step plus the 2 % decay, to 0 within a second.
        assert_eq!(p.drop_prob(2000 * MS), 0.0);
        assert_eq!(p.burst_allowance, p.max_burst);
    }

    #[test]
    fn safeguards_keep_a_short_queue_work_conserving() {
        let mut p = pie(&[]);
        let mut rng = stream(1, 0);
        p.burst_allowance = 0;
        p.drop_prob = 1.0;
        p.qdelay_old = 0.1;
        p.next_update = Nanos::MAX;
        // Two packets queued: never an early drop, even at probability 1.
        assert_eq!(arrive(&mut p, 1, 2, false, &mut rng), Verdict::Enqueue);
        assert_eq!(arrive(&mut p, 1, 3, false, &mut rng), Verdict::Drop);
        // Delay below half the target and probability below 20 %: no early drop.
        p.drop_prob = 0.19;
        p.qdelay_old = 0.007;
        for _ in 0..100 {
            assert_eq!(arrive(&mut p, 1, 50, false, &mut rng), Verdict::Enqueue);
        }
    }

    #[test]
    fn ecn_marks_below_the_threshold_and_drops_above() {
        let mut p = pie(&[("ecn", ParamValue::Bool(true))]);
        let mut rng = stream(1, 0);
        p.burst_allowance = 0;
        p.qdelay_old = 0.1;
        p.next_update = Nanos::MAX;
        p.drop_prob = 0.1;
        let v: Vec<Verdict> = (0..1000)
            .map(|_| arrive(&mut p, 1, 50, true, &mut rng))
            .collect();
        assert!(v.iter().all(|&x| x != Verdict::Drop));
        assert!(v.iter().filter(|&&x| x == Verdict::Mark).count() > 50);
        p.drop_prob = 0.5;
        let v: Vec<Verdict> = (0..1000)
            .map(|_| arrive(&mut p, 1, 50, true, &mut rng))
            .collect();
        assert!(v.iter().all(|&x| x != Verdict::Mark));
        // Not ECN-capable: dropped whatever the probability.
        p.drop_prob = 0.1;
        let v: Vec<Verdict> = (0..1000)
            .map(|_| arrive(&mut p, 1, 50, false, &mut rng))
            .collect();
        assert!(v.iter().all(|&x| x != Verdict::Mark));
    }

    #[test]
    fn derandomized_drops_are_spaced() {
        // With accumulated probability, at 10 % no two drops are closer than 9 packets apart
        // (0.85 / 0.1 → the 9th packet after a drop is the first that may be dropped), so the mean gap
        // is 8 + 1/0.1 = 18 packets: 5.6 % dropped, fewer than the 10 % of independent draws (RFC
        // 8033 accepts this: derandomization trades rate for spacing).
        let mut p = pie(&[("derandomize", ParamValue::Bool(true))]);
        let mut rng = stream(3, 0);
        p.burst_allowance = 0;
        p.qdelay_old = 0.1;
        p.next_update = Nanos::MAX;
        p.drop_prob = 0.1;
        let drops: Vec<usize> = (0..10_000)
            .filter(|_| arrive(&mut p, 1, 50, false, &mut rng) == Verdict::Drop)
            .collect();
        assert!(drops.windows(2).all(|w| w[1] - w[0] >= 9), "{drops:?}");
        let frac = drops.len() as f64 / 10_000.0;
        assert!((frac - 1.0 / 18.0).abs() < 0.01, "{frac}");
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let mut p = Params::new();
        p.insert("alpha".into(), ParamValue::Num(-1.0));
        let lim = BufferLimit {
            pkts: Some(10),
            bytes: None,
        };
        assert_eq!(Pie::new(&p, lim, 1500).err().unwrap().field, "alpha");
        let mut p = Params::new();
        p.insert("tupdate".into(), ParamValue::Num(0.01));
        assert_eq!(Pie::new(&p, lim, 1500).err().unwrap().field, "tupdate");
    }
}
