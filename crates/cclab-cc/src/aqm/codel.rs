//! CoDel (RFC 8289, "Controlled Delay Active Queue Management"): drops at dequeue, judged by how long
//! packets waited (sojourn time), not by how many wait.
//!
//! While the sojourn time has stayed at or above `target` for at least `interval`, CoDel enters the
//! dropping state: it drops (or, with `ecn`, CE-marks) one packet, then the next ones at times
//! interval/√count apart, count growing by one per drop, until a packet's sojourn falls below `target`
//! or the queue holds at most one packet's bytes. Entering again soon after leaving (within 16
//! intervals) resumes from the drop rate it had reached (`count − lastcount`, RFC 8289 §5.5), so a
//! persistent queue is not rediscovered from one drop per interval every time.
//!
//! The buffer limit still applies at enqueue (tail drop when full), as in Linux `codel`.
//! Parameters: `target` (s, default 0.005), `interval` (s, default 0.1), `ecn` (default false).

use super::{BufferLimit, Departure, Leaving, QueueDiscipline, QueueLen, RouterPacket, Verdict};
use crate::params::{ParamError, ParamReader, Params};
use crate::rng::SimRng;
use crate::time::{Nanos, NS_PER_SEC};

#[derive(Clone)]
pub struct CoDel {
    limit: BufferLimit,
    target: Nanos,
    interval: Nanos,
    ecn: bool,
    /// RFC 8289's MTU test: with at most this many bytes queued the link is never kept idle by a drop.
    mtu: u64,
    /// When the sojourn time, above target since, will have been so for an interval (0: below target).
    first_above_time: Nanos,
    /// When the next drop is due (dropping state).
    drop_next: Nanos,
    count: u32,
    lastcount: u32,
    dropping: bool,
    /// Packets dropped and marked by the control law (the buffer's tail drops are the driver's).
    pub law_drops: u64,
    pub law_marks: u64,
}

impl CoDel {
    pub fn new(params: &Params, limit: BufferLimit, packet_size: u32) -> Result<CoDel, ParamError> {
        let mut r = ParamReader::new("codel", params);
        let target = r.f64_in("target", 0.005, 1e-6, 10.0)?;
        let interval = r.f64_in("interval", 0.1, 1e-6, 100.0)?;
        let ecn = r.bool("ecn", false)?;
        r.finish()?;
        if interval < target {
            return Err(ParamError {
                field: "interval".into(),
                message: format!("must be ≥ target ({target} s), got {interval}"),
            });
        }
        let ns = |s: f64| (s * NS_PER_SEC as f64).round() as Nanos;
        Ok(CoDel {
            limit,
            target: ns(target),
            interval: ns(interval),
            ecn,
            mtu: packet_size.max(1) as u64,
            first_above_time: 0,
            drop_next: 0,
            count: 0,
            lastcount: 0,
            dropping: false,
            law_drops: 0,
            law_marks: 0,
        })
    }

    /// RFC 8289 §5.3: the next drop, interval/√count after `t`.
    fn control_law(&self, t: Nanos) -> Nanos {
        t + (self.interval as f64 / (self.count.max(1) as f64).sqrt()) as Nanos
    }

    /// RFC 8289 §5.4 `dodequeue`: has the sojourn time been above target for an interval?
    fn ok_to_drop(&mut self, now: Nanos, sojourn: Nanos, backlog: u64) -> bool {
        if sojourn < self.target || backlog <= self.mtu {
            self.first_above_time = 0;
            return false;
        }
        if self.first_above_time == 0 {
            self.first_above_time = now + self.interval;
            return false;
        }
        now >= self.first_above_time
    }

    fn signal(&mut self, ect: bool) -> Departure {
        if self.ecn && ect {
            self.law_marks += 1;
            Departure::Mark
        } else {
            self.law_drops += 1;
            Departure::Drop
        }
    }
}

impl QueueDiscipline for CoDel {
    fn name(&self) -> &'static str {
        "codel"
    }

    fn enqueue(
        &mut self,
        _now: Nanos,
        pkt: &mut RouterPacket<'_>,
        q: QueueLen,
        _rng: &mut SimRng,
    ) -> Verdict {
        if self.limit.overflows(q, pkt.bytes) {
            Verdict::Drop
        } else {
            Verdict::Enqueue
        }
    }

    // One call per packet leaving the queue; after a Drop the driver calls again with the next packet,
    // which is RFC 8289's loop "while now ≥ drop_next: drop, dequeue the next, re-test" one step at a time.
    fn judges_departures(&self) -> bool {
        true
    }

    fn on_departure(&mut self, now: Nanos, pkt: &Leaving, q: QueueLen) -> Departure {
        self.judge(now, pkt.sojourn, pkt.ect, q.bytes)
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("codel_count", self.count as f64));
        out.push(("codel_dropping", self.dropping as u8 as f64));
        // by cause: the control law's (the link's `drops` add the buffer's tail drops)
        out.push(("codel_law_drops", self.law_drops as f64));
        out.push(("codel_law_marks", self.law_marks as f64));
    }
}

impl CoDel {
    /// RFC 8289 §5.4–5.5 for one departing packet that waited `sojourn`, with `backlog` bytes left
    /// behind it in its queue (the whole queue here; its own flow's queue in FQ-CoDel).
    pub(crate) fn judge(
        &mut self,
        now: Nanos,
        sojourn: Nanos,
        ect: bool,
        backlog: u64,
    ) -> Departure {
        let ok = self.ok_to_drop(now, sojourn, backlog);
        if self.dropping {
            if !ok {
                self.dropping = false;
            } else if now >= self.drop_next {
                self.count += 1;
                self.drop_next = self.control_law(self.drop_next);
                return self.signal(ect);
            }
        } else if ok {
            self.dropping = true;
            // Resume near the previous drop rate if the last dropping state ended recently.
            let delta = self.count.saturating_sub(self.lastcount);
            self.count = if delta > 1 && now.saturating_sub(self.drop_next) < 16 * self.interval {
                delta
            } else {
                1
            };
            self.lastcount = self.count;
            self.drop_next = self.control_law(now);
            return self.signal(ect);
        }
        Departure::Send
    }

    /// Whether the control law is in its dropping state.
    pub(crate) fn dropping(&self) -> bool {
        self.dropping
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;

    const MS: Nanos = 1_000_000;

    fn lv(sojourn: Nanos, ect: bool) -> Leaving {
        Leaving {
            queue: 0,
            sojourn,
            bytes: 1500,
            ect,
        }
    }

    fn codel(ecn: bool) -> CoDel {
        let mut p = Params::new();
        p.insert("ecn".into(), ParamValue::Bool(ecn));
        CoDel::new(
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

    #[test]
    fn a_short_standing_delay_is_never_dropped() {
        // Sojourn below the 5 ms target, or a queue of one packet, for a whole second: no drop.
        let mut c = codel(false);
        for i in 0..1000 {
            assert_eq!(
                c.on_departure(i * MS, &lv(4 * MS, false), q(50)),
                Departure::Send
            );
            assert_eq!(
                c.on_departure(i * MS, &lv(50 * MS, false), q(1)),
                Departure::Send
            );
        }
        assert_eq!(c.law_drops, 0);
    }

    #[test]
    fn drops_follow_the_control_law() {
        // A packet every ms with 20 ms sojourn: the first drop one interval after the delay rose above
        // target (at 100 ms, count 1), the next one interval later (200 ms, count 2), then at
        // interval/√count: +100/√2 = 70.7 ms (270.7), +100/√3 = 57.7 ms (328.4), +50 ms (378.4).
        let mut c = codel(false);
        let mut drops = vec![];
        for i in 0..=400 {
            if c.on_departure(i * MS, &lv(20 * MS, false), q(50)) == Departure::Drop {
                drops.push(i);
            }
        }
        assert_eq!(&drops[..5], &[100, 200, 271, 329, 379], "{drops:?}");
        // Delay back under target: the dropping state ends at once.
        assert_eq!(
            c.on_departure(401 * MS, &lv(MS, false), q(50)),
            Departure::Send
        );
        assert!(!c.dropping);
    }

    #[test]
    fn a_recent_dropping_state_resumes_at_its_rate() {
        // Leave the dropping state after 4 drops and re-enter within 16 intervals: count restarts at
        // count − lastcount (RFC 8289 §5.5) instead of 1.
        let mut c = codel(false);
        for i in 0..=330 {
            c.on_departure(i * MS, &lv(20 * MS, false), q(50));
        }
        let before = c.count;
        assert_eq!(before, 4, "drops at 100, 200, 271, 329");
        c.on_departure(331 * MS, &lv(MS, false), q(50));
        let mut first = None;
        for i in 332..=900 {
            if c.on_departure(i * MS, &lv(20 * MS, false), q(50)) == Departure::Drop {
                first = Some(i);
                break;
            }
        }
        assert_eq!(
            first,
            Some(432),
            "one interval above target again, then a drop"
        );
        assert_eq!(c.count, before - 1, "resumed from count − lastcount");
    }

    #[test]
    fn ecn_capable_packets_are_marked_instead() {
        let mut c = codel(true);
        let mut marks = 0;
        for i in 0..=200 {
            match c.on_departure(i * MS, &lv(20 * MS, true), q(50)) {
                Departure::Mark => marks += 1,
                Departure::Drop => panic!("ECT packet dropped"),
                Departure::Send => {}
            }
        }
        assert!(marks >= 2 && c.law_drops == 0, "{marks}");
        // A non-ECT packet is dropped even with ecn on.
        let mut d = codel(true);
        let dropped = (0..=200)
            .filter(|i| d.on_departure(i * MS, &lv(20 * MS, false), q(50)) == Departure::Drop);
        assert!(dropped.count() >= 2);
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let mut p = Params::new();
        p.insert("interval".into(), ParamValue::Num(0.001));
        let e = CoDel::new(
            &p,
            BufferLimit {
                pkts: Some(10),
                bytes: None,
            },
            1500,
        )
        .err()
        .unwrap();
        assert_eq!(e.field, "interval");
        let mut p = Params::new();
        p.insert("target".into(), ParamValue::Num(-1.0));
        assert_eq!(
            CoDel::new(
                &p,
                BufferLimit {
                    pkts: Some(10),
                    bytes: None
                },
                1500
            )
            .err()
            .unwrap()
            .field,
            "target"
        );
    }
}
