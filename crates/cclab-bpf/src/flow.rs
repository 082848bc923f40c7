//! One kernel connection driven by one cclab algorithm: Linux's events in, the algorithm's hooks
//! called in the order our own transport calls them, a [`Decision`] out. Pure logic (no kernel), so it
//! is tested on synthetic events.
//!
//! # What each kernel event becomes
//!
//! | kernel (tcp_congestion_ops)          | algorithm hook                                    |
//! | ------------------------------------ | ------------------------------------------------- |
//! | `cong_control` (every ACK)           | `on_ack` (rate sample when Linux's is valid)      |
//! | `set_state(Recovery)`                | `on_loss` (one per loss event, as Linux counts)   |
//! | `set_state(CWR)` (ECN-Echo)          | `on_loss` with `ecn`                              |
//! | `set_state(Loss)` (each RTO)         | `on_timeout` (`backoffs` from `icsk_backoff`)     |
//! | `set_state(Open)` after Recovery     | `on_recovery_end`                                 |
//! | `undo_cwnd`                          | `undo_cwnd`                                       |
//! | the algorithm's own timer            | `on_timer`, run by the controller                 |
//!
//! Linux owns reliability here (which packet to resend, SACK, RTO), so the algorithm sees Linux's
//! loss detection, not ours: the same split as our transport, with another transport under it.
//!
//! Linux does not tell us of each packet it sends, so the adapter numbers packets itself: packet k
//! holds bytes [k·MSS, (k+1)·MSS) from the first byte of the connection (its MSS at start). Before
//! each record it calls `on_send` for every packet `snd_nxt` shows sent since the last one (new data
//! only; retransmissions are not seen), and an ACK's `acked_seq` is the last packet the cumulative
//! ACK covers. Algorithms that count round trips by sequence (FAST's update epochs) need both. What
//! `on_send` sets (probe and pair flags, the router field) is never sent: Linux TCP has no field for
//! it, and the echoed field is 0.
//!
//! DECISION (the window during recovery): Linux skips its Proportional Rate Reduction
//! (`tcp_cwnd_reduction`) for a congestion control with `cong_control`, as ours has. For window
//! algorithms (no pacing rate) the decision asks the BPF program to run it in its place, per ACK, with
//! the algorithm's window as PRR's target, so `bpf:newreno` recovers as Linux's Reno does. It must run
//! in the kernel: PRR's window is "the flight plus a quota", and one decision applied over the several
//! ACKs a controller wake-up batches lets each of them refill what it delivered (a burst). Measured
//! without PRR: a third halving after the slow-start overshoot in 2 of 3 runs where Linux's Reno
//! halves twice; with PRR computed in user space, still 1 in 4. Pacing algorithms (BBR, Copa) get
//! their window as it is, as Linux's own `cong_control` algorithms do.

use std::collections::VecDeque;

use cclab_cc::cc::{
    flags, AckSample, CongestionControl, LossEvent, RateSample, SendCtx, TimeoutEvent,
};
use cclab_cc::time::Nanos;

use crate::events::{ack_flag, ca_state, kind, Decision, Event, INFINITE_SSTHRESH};

/// How many past ACKs are kept to find the loss count and flight when a rate sample's packet left
/// (Linux's rate sample gives only the delivered count then). At 1 Gbit/s a 200 ms round trip is
/// about 17 000 ACKs, and a sample's interval is at least one minimum RTT and seldom a few more.
const HISTORY: usize = 1 << 16;

pub struct FlowAdapter {
    cc: Box<dyn CongestionControl>,
    /// Payload bytes over wire bytes of a full packet: the algorithm's pacing rate is on the wire,
    /// Linux's `sk_pacing_rate` counts what TCP sends.
    payload_share: f64,
    /// Times handed to the algorithm are ns since this instant (the controller's start), so they
    /// start small as the simulator's do.
    origin_ns: u64,
    state: u32,
    epoch: u32,
    /// Linux's 32-bit counters, unwrapped.
    delivered: Counter,
    lost: Counter,
    /// (delivered, lost, in flight) after each ACK, oldest first.
    history: VecDeque<(u64, u64, u32)>,
    /// Linux's last srtt (µs), for the pacing rate Linux itself would set.
    srtt_us: u32,
    mss: u32,
    /// Window algorithms recover with Linux's PRR (see the DECISION above).
    use_prr: bool,
    /// `snd_una` and `snd_nxt` unwrapped from Linux's 32-bit sequence numbers, in bytes from the
    /// first unacknowledged byte at start; the packet size the numbering uses (the MSS at start);
    /// packets announced to `on_send` so far.
    una: Counter,
    nxt: Counter,
    seq_mss: u64,
    sent: u64,
}

/// A wrapping 32-bit kernel counter extended to 64 bits.
#[derive(Default)]
struct Counter {
    last: u32,
    total: u64,
}

impl Counter {
    /// A counter whose current kernel value is `v`, counting from `total`.
    fn at(v: u32, total: u64) -> Counter {
        Counter { last: v, total }
    }

    fn update(&mut self, v: u32) -> u64 {
        self.total += v.wrapping_sub(self.last) as u64;
        self.last = v;
        self.total
    }
}

fn us(v: u32) -> Nanos {
    v as Nanos * 1000
}

impl FlowAdapter {
    /// An adapter for the connection whose INIT record is `init`; `packet_size` is the wire size of
    /// a full packet the algorithm was built for.
    pub fn new(
        cc: Box<dyn CongestionControl>,
        init: &Event,
        origin_ns: u64,
        packet_size: u32,
    ) -> FlowAdapter {
        let mss = init.mss.max(1);
        FlowAdapter {
            use_prr: cc.pacing_rate_bps().is_none(),
            cc,
            payload_share: mss as f64 / packet_size.max(1) as f64,
            origin_ns,
            state: init.state,
            epoch: init.epoch,
            delivered: Counter::at(init.delivered, init.delivered as u64),
            lost: Counter::at(init.lost, init.lost as u64),
            history: VecDeque::new(),
            srtt_us: init.srtt_us,
            mss,
            una: Counter::at(init.snd_una, 0),
            nxt: Counter::at(init.snd_una, 0),
            seq_mss: mss as u64,
            sent: 0,
        }
    }

    pub fn algorithm(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }

    fn now(&self, e: &Event) -> Nanos {
        e.now_ns.saturating_sub(self.origin_ns)
    }

    /// Feeds one record to the algorithm; returns the decision to write.
    pub fn on_event(&mut self, e: &Event) -> Decision {
        let now = self.now(e);
        self.epoch = e.epoch;
        self.srtt_us = e.srtt_us;
        self.mss = e.mss.max(1);
        if e.kind != kind::RELEASE {
            self.announce_sends(e, now);
        }
        match e.kind {
            kind::ACK => self.on_ack(e, now),
            kind::STATE => self.on_state(e, now),
            kind::UNDO => {
                let ssthresh = if e.ssthresh >= INFINITE_SSTHRESH {
                    f64::INFINITY
                } else {
                    e.ssthresh as f64
                };
                self.cc.undo_cwnd(e.prior_cwnd as f64, ssthresh);
            }
            _ => {}
        }
        self.decision()
    }

    /// `on_send` for each new packet Linux has sent since the last record.
    fn announce_sends(&mut self, e: &Event, now: Nanos) {
        let nxt = self.nxt.update(e.snd_nxt);
        let upto = nxt.div_ceil(self.seq_mss);
        // A flight of more than a million packets since the last record is not a send burst but a
        // counter we misread; announce nothing rather than loop.
        if upto > self.sent && upto - self.sent <= 1 << 20 {
            for seq in self.sent..upto {
                let mut ctx = SendCtx {
                    now,
                    seq,
                    bytes: self.mss,
                    retransmit: false,
                    in_flight: e.in_flight,
                    flags: if seq == 0 { flags::FIRST } else { 0 },
                    fwd_field: 0,
                };
                self.cc.on_send(&mut ctx);
            }
        }
        self.sent = self.sent.max(upto);
    }

    fn on_ack(&mut self, e: &Event, now: Nanos) {
        let delivered = self.delivered.update(e.delivered);
        let lost = self.lost.update(e.lost);
        let rate = (e.rs_delivered > 0 && e.rs_interval_us > 0).then(|| {
            // Linux's prior_delivered is 32 bits: unwrap it against the current count.
            let prior = delivered - e.delivered.wrapping_sub(e.rs_prior_delivered) as u64;
            let (lost_then, in_flight_then) = self.at_delivered(prior);
            RateSample {
                delivered: e.rs_delivered as u64,
                interval: e.rs_interval_us as Nanos * 1000,
                prior_delivered: prior,
                app_limited: e.rs_app_limited != 0,
                lost: lost.saturating_sub(lost_then),
                // The sampled packet itself was in flight too.
                tx_in_flight: in_flight_then + 1,
            }
        });
        self.history.push_back((delivered, lost, e.in_flight));
        if self.history.len() > HISTORY {
            self.history.pop_front();
        }
        let una = self.una.update(e.snd_una);
        let ack = AckSample {
            now,
            newly_acked: e.acked_sacked,
            acked_seq: (una / self.seq_mss).saturating_sub(1),
            acked_bytes: self.mss,
            cum_advanced: e.ack_flags & ack_flag::SND_UNA_ADVANCED != 0,
            rtt: (e.rtt_us >= 0).then(|| e.rtt_us as Nanos * 1000),
            srtt: us(e.srtt_us),
            min_rtt: us(e.min_rtt_us),
            in_flight: e.in_flight,
            delivered,
            in_recovery: e.state == ca_state::RECOVERY,
            app_limited: e.rs_app_limited != 0,
            ecn_echo: e.ack_flags & ack_flag::ECE != 0,
            lost,
            newly_lost: e.rs_losses,
            rate,
            ..AckSample::default()
        };
        self.cc.on_ack(&ack);
    }

    /// Loss count and flight after the last ACK at or before `delivered` (the sampled packet's
    /// departure); drops history older than that, since later samples start later.
    fn at_delivered(&mut self, delivered: u64) -> (u64, u32) {
        while self.history.len() >= 2 && self.history[1].0 <= delivered {
            self.history.pop_front();
        }
        match self.history.front() {
            Some(&(d, l, f)) if d <= delivered => (l, f),
            _ => (self.lost.total, 0),
        }
    }

    fn on_state(&mut self, e: &Event, now: Nanos) {
        let prev = self.state;
        self.state = e.state;
        let loss = LossEvent {
            now,
            in_flight: e.packets_out,
            lost: e.lost.wrapping_sub(self.lost.last).max(1),
            srtt: us(e.srtt_us),
            min_rtt: us(e.min_rtt_us),
            ecn: false,
        };
        match e.state {
            ca_state::RECOVERY if prev != ca_state::RECOVERY => self.cc.on_loss(&loss),
            ca_state::CWR if prev < ca_state::CWR => self.cc.on_loss(&LossEvent {
                ecn: true,
                lost: 0,
                ..loss
            }),
            // Linux calls set_state(Loss) on every RTO, also when already in Loss; icsk_backoff is
            // raised after it, so the first RTO reports 0.
            ca_state::LOSS => self.cc.on_timeout(&TimeoutEvent {
                now,
                in_flight: e.packets_out,
                backoffs: e.backoff + 1,
            }),
            ca_state::OPEN if prev == ca_state::RECOVERY => self.cc.on_recovery_end(now),
            _ => {}
        }
        self.lost.update(e.lost);
    }

    /// The algorithm's own timer, if it has one: when it is due, in the controller's clock.
    pub fn next_timer_ns(&self) -> Option<u64> {
        self.cc.next_timer().map(|t| t + self.origin_ns)
    }

    pub fn on_timer(&mut self, now_ns: u64) -> Decision {
        self.cc.on_timer(now_ns.saturating_sub(self.origin_ns));
        self.decision()
    }

    /// The window, threshold and pacing rate the algorithm asks for now.
    pub fn decision(&self) -> Decision {
        let cwnd = self.cc.cwnd().clamp(1.0, INFINITE_SSTHRESH as f64) as u32;
        let ss = self.cc.ssthresh();
        let ssthresh = if ss.is_finite() {
            ss.clamp(1.0, INFINITE_SSTHRESH as f64) as u32
        } else {
            INFINITE_SSTHRESH
        };
        let (pacing, pacing_rate) = match self.cc.pacing_rate_bps() {
            Some(bps) if bps.is_finite() && bps > 0.0 => {
                (true, (bps / 8.0 * self.payload_share) as u64)
            }
            // Linux's own rate (tcp_update_pacing_rate): 2x the window's rate in slow start, 1.2x
            // after. Not enforced (no pacing), it sizes TSO bursts as it would for kernel Reno.
            _ if self.srtt_us > 0 => {
                let base = self.mss as f64 * cwnd as f64 * 1e6 / self.srtt_us as f64;
                let ratio = if (cwnd as u64) < ssthresh as u64 / 2 {
                    2.0
                } else {
                    1.2
                };
                (false, (base * ratio) as u64)
            }
            _ => (false, u64::MAX),
        };
        Decision {
            epoch: self.epoch,
            cwnd,
            ssthresh,
            pacing,
            pacing_rate,
            reno: false,
            prr: self.use_prr,
            event_ns: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_cc::params::Params;
    use cclab_cc::registry::{build_sender, SenderEnv};

    fn adapter(name: &str) -> FlowAdapter {
        let env = SenderEnv::default();
        let cc = build_sender(name, &Params::default(), &env).unwrap().cc;
        let init = Event {
            kind: kind::INIT,
            flow: 1,
            cwnd: 10,
            mss: 1448,
            ssthresh: INFINITE_SSTHRESH,
            ..Event::default()
        };
        FlowAdapter::new(cc, &init, 0, env.packet_size)
    }

    fn ack(t_ms: u64, delivered: u32, acked: u32, state: u32, epoch: u32) -> Event {
        Event {
            kind: kind::ACK,
            flow: 1,
            now_ns: t_ms * 1_000_000,
            epoch,
            state,
            srtt_us: 40_000,
            min_rtt_us: 40_000,
            in_flight: 10,
            packets_out: 10,
            delivered,
            mss: 1448,
            acked_sacked: acked,
            rtt_us: 40_000,
            rs_delivered: -1,
            rs_interval_us: -1,
            ack_flags: ack_flag::SND_UNA_ADVANCED,
            ..Event::default()
        }
    }

    /// NewReno through the adapter: slow start doubles the window over a round of ACKs, a recovery
    /// halves it, an RTO takes it to 1, and the decision echoes the kernel's epoch.
    #[test]
    fn newreno_follows_linux_events() {
        let mut a = adapter("newreno");
        let mut d = a.decision();
        assert_eq!(d.cwnd, 10);
        for i in 1..=10 {
            d = a.on_event(&ack(i, i as u32, 1, ca_state::OPEN, 0));
        }
        assert_eq!(d.cwnd, 20, "slow start: one packet per packet acked");
        assert_eq!(d.ssthresh, INFINITE_SSTHRESH);
        assert!(!d.pacing, "NewReno does not pace");
        // Linux's own TSO-sizing rate in slow start: 2 x 20 x 1448 B / 40 ms.
        assert_eq!(d.pacing_rate, 2 * 20 * 1448 * 25);
        let rec = Event {
            kind: kind::STATE,
            state: ca_state::RECOVERY,
            epoch: 1,
            cwnd: 20,
            packets_out: 20,
            lost: 1,
            ..ack(11, 10, 0, ca_state::RECOVERY, 1)
        };
        d = a.on_event(&rec);
        // The halved window is PRR's target; the program runs PRR towards it (a window algorithm).
        assert_eq!((d.cwnd, d.ssthresh, d.epoch, d.prr), (10, 10, 1, true));
        // No growth during recovery.
        d = a.on_event(&ack(12, 12, 2, ca_state::RECOVERY, 1));
        assert_eq!(d.cwnd, 10);
        let open = Event {
            kind: kind::STATE,
            state: ca_state::OPEN,
            epoch: 2,
            ..ack(13, 20, 0, ca_state::OPEN, 2)
        };
        a.on_event(&open);
        let rto = Event {
            kind: kind::STATE,
            state: ca_state::LOSS,
            epoch: 3,
            packets_out: 10,
            backoff: 0,
            ..ack(500, 20, 0, ca_state::LOSS, 3)
        };
        d = a.on_event(&rto);
        assert_eq!((d.cwnd, d.ssthresh, d.epoch), (1, 5, 3));
    }

    /// A valid Linux rate sample becomes a RateSample with the loss count since its packet left.
    #[test]
    fn rate_samples_carry_losses_since_departure() {
        let mut a = adapter("bbr");
        a.on_event(&ack(1, 100, 1, ca_state::OPEN, 0));
        let mut e = ack(2, 101, 1, ca_state::OPEN, 0);
        e.lost = 3;
        a.on_event(&e);
        let mut e = ack(50, 150, 1, ca_state::OPEN, 0);
        e.lost = 7;
        e.rs_delivered = 50;
        e.rs_interval_us = 40_000;
        e.rs_prior_delivered = 100;
        a.on_event(&e);
        // History from delivered = 100 on (lost 0 then): 7 lost since.
        assert_eq!(a.at_delivered(100), (0, 10));
        assert_eq!(a.at_delivered(101), (3, 10));
    }

    /// Records what the adapter tells it.
    #[derive(Default)]
    struct Recorder {
        sent: std::sync::Arc<std::sync::Mutex<Vec<(u64, u8)>>>,
        acked: std::sync::Arc<std::sync::Mutex<Vec<u64>>>,
    }

    impl CongestionControl for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }
        fn cwnd(&self) -> f64 {
            10.0
        }
        fn on_ack(&mut self, ack: &AckSample) {
            self.acked.lock().unwrap().push(ack.acked_seq);
        }
        fn on_loss(&mut self, _: &LossEvent) {}
        fn on_timeout(&mut self, _: &TimeoutEvent) {}
        fn on_send(&mut self, ctx: &mut SendCtx) {
            self.sent.lock().unwrap().push((ctx.seq, ctx.flags));
        }
    }

    /// Packets are numbered from the connection's first byte in MSS units, across the wrap of
    /// Linux's 32-bit sequence numbers: `on_send` once per new packet before the ACK that follows
    /// it, `acked_seq` the last packet the cumulative ACK covers.
    #[test]
    fn sends_and_acks_are_numbered_in_packets_across_the_sequence_wrap() {
        let r = Recorder::default();
        let (sent, acked) = (r.sent.clone(), r.acked.clone());
        let isn = u32::MAX - 1448 * 2; // wraps after two packets
        let init = Event {
            kind: kind::INIT,
            mss: 1448,
            snd_una: isn,
            snd_nxt: isn,
            ..Event::default()
        };
        let mut a = FlowAdapter::new(Box::new(r), &init, 0, 1500);
        let mut e = ack(1, 0, 0, ca_state::OPEN, 0);
        e.snd_una = isn;
        e.snd_nxt = isn.wrapping_add(5 * 1448);
        a.on_event(&e);
        let mut e = ack(2, 3, 3, ca_state::OPEN, 0);
        e.snd_una = isn.wrapping_add(3 * 1448);
        e.snd_nxt = isn.wrapping_add(6 * 1448 + 100); // a partial packet counts as sent
        a.on_event(&e);
        let seqs: Vec<u64> = sent.lock().unwrap().iter().map(|s| s.0).collect();
        assert_eq!(seqs, (0..7).collect::<Vec<_>>());
        assert_eq!(sent.lock().unwrap()[0].1, flags::FIRST);
        assert_eq!(*acked.lock().unwrap(), vec![0, 2]);
    }

    #[test]
    fn pacing_algorithms_ask_the_kernel_to_pace_payload_bytes() {
        let mut a = adapter("bbr");
        let mut d = a.decision();
        for i in 1..=5 {
            let mut e = ack(i * 10, i as u32 * 10, 10, ca_state::OPEN, 0);
            e.rs_delivered = 10;
            e.rs_interval_us = 40_000;
            e.rs_prior_delivered = (i as u32 - 1) * 10;
            d = a.on_event(&e);
        }
        assert!(d.pacing);
        assert!(
            !d.prr,
            "pacing algorithms set their window in recovery themselves"
        );
        let bps = a.algorithm().pacing_rate_bps().unwrap();
        assert_eq!(d.pacing_rate, (bps / 8.0 * 1448.0 / 1500.0) as u64);
    }
}
