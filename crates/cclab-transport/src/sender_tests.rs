//! Unit tests of the sender (`crates/cclab-transport/src/sender.rs`), scripted ACK by ACK.
use super::*;
use crate::segment::SackBlock;
use cclab_cc::algorithms::reno::Reno;
use cclab_cc::cc::Recovery;
use cclab_cc::params::Params;

fn sender(recovery: Recovery, sack: bool) -> Sender {
    let cfg = Config {
        recovery,
        sack,
        initial_cwnd: 10.0,
        ..Config::default()
    };
    let cc = Box::new(Reno::new("newreno", 10.0, &Params::new()).unwrap());
    Sender::new(cfg, cc, None, 0)
}

fn drain(s: &mut Sender, now: Nanos) -> Vec<DataSegment> {
    std::iter::from_fn(|| s.poll_transmit(now)).collect()
}

/// An ACK triggered by `d`, echoing it as the receiver does.
fn echo(d: &DataSegment, cum_ack: u64) -> AckSegment {
    AckSegment::echoing(d, cum_ack)
}

#[test]
fn initial_window_then_ack_clock() {
    let mut s = sender(Recovery::Sack, true);
    let w = drain(&mut s, 1);
    assert_eq!(w.len(), 10);
    assert_eq!(w[0].flags & flags::FIRST, flags::FIRST);
    s.handle_ack(100, &echo(&w[0], 1));
    // slow start: one acked packet opens two slots
    assert_eq!(drain(&mut s, 100).len(), 2);
    assert_eq!(s.srtt(), 99);
}

#[test]
fn sack_scoreboard_counts() {
    let mut s = sender(Recovery::Sack, true);
    let w = drain(&mut s, 1);
    for e in 2..=4u64 {
        let mut ack = echo(&w[e as usize - 1], 0);
        ack.n_sack = 1;
        ack.sack[0] = SackBlock { start: 1, end: e };
        s.handle_ack(10, &ack);
    }
    assert_eq!(s.board.sacked(), 3);
    assert_eq!(s.board.lost(), 1, "packet 0 lost after 3 SACKed above it");
    assert!(s.in_recovery());
    assert_eq!(s.cc().cwnd(), 5.0);
    let out = drain(&mut s, 10);
    assert_eq!(out[0].seq, 0);
    assert!(out[0].flags & flags::RETX != 0);
}

/// RFC 6937 with a scripted loss: 20 packets out, packet 0 lost, one SACK per later packet. With PRR
/// the sender sends one packet per two ACKs from the ACK that starts recovery; with RFC 6675's pipe
/// rule it sends only the retransmission until the pipe has drained to the halved window, then one
/// per ACK.
#[test]
fn prr_spreads_the_reduction_over_the_round_trip() {
    let run = |prr: bool| -> (Vec<usize>, u64) {
        let cfg = Config {
            initial_cwnd: 20.0,
            prr,
            ..Config::default()
        };
        let cc = Box::new(Reno::new("newreno", 20.0, &Params::new()).unwrap());
        let mut s = Sender::new(cfg, cc, None, 0);
        let w = drain(&mut s, 1);
        assert_eq!(w.len(), 20);
        let mut per_ack = Vec::new();
        for k in 1..20u64 {
            let mut ack = echo(&w[k as usize], 0);
            ack.n_sack = 1;
            ack.sack[0] = SackBlock {
                start: 1,
                end: k + 1,
            };
            s.handle_ack(1_000 + k, &ack);
            per_ack.push(drain(&mut s, 1_000 + k).len());
        }
        (per_ack, s.in_flight() as u64)
    };
    let (with, pipe_with) = run(true);
    let (without, pipe_without) = run(false);
    // Two slow-start ACKs (2 packets each), then recovery on the third SACK (DupThresh): PRR sends
    // the retransmission there and then one packet every second ACK.
    assert_eq!(&with[..8], &[2, 2, 1, 0, 1, 0, 1, 0], "{with:?}");
    assert_eq!(&without[..2], &[2, 2]);
    assert!(without[2..12].iter().sum::<usize>() <= 2, "{without:?}");
    // Both end the round at the reduced window (11: half of the 22-packet window when the loss was
    // found); PRR's slow-start bound may add the one packet more than was delivered on the last ACK.
    assert_eq!(pipe_without, 11);
    assert!((11..=12).contains(&pipe_with), "{pipe_with}");
}

/// A spurious RTO (the ACKs were only late): with `rto_undo` the first ACK after it echoes the
/// original transmission's timestamp, the window comes back and the packets the RTO marked lost are
/// not resent; without it, the window restarts from one packet and all of them are resent.
#[test]
fn a_spurious_rto_is_detected_by_its_echo_and_undone() {
    let run = |undo: bool| -> (f64, Vec<DataSegment>, u64) {
        let cfg = Config {
            rto_undo: undo,
            ..Config::default()
        };
        let cc = Box::new(Reno::new("newreno", 10.0, &Params::new()).unwrap());
        let mut s = Sender::new(cfg, cc, None, 0);
        let w = drain(&mut s, 1);
        let rto = s.poll_timeout().unwrap();
        s.handle_timeout(rto);
        let retx = drain(&mut s, rto);
        assert_eq!(retx.len(), 1, "the RTO resends the head");
        assert!(retx[0].flags & flags::RETX != 0);
        // The ACK of the *original* packet 0 arrives after the RTO.
        s.handle_ack(rto + 10, &echo(&w[0], 1));
        (
            s.cc().cwnd(),
            drain(&mut s, rto + 10),
            s.stats().spurious_timeouts,
        )
    };
    let (cwnd, next, n) = run(true);
    assert_eq!(n, 1);
    assert!(cwnd >= 10.0, "{cwnd}");
    assert!(next.iter().all(|d| d.flags & flags::RETX == 0), "{next:?}");
    assert_eq!(next[0].seq, 10, "new data after the undone RTO");
    let (cwnd, next, n) = run(false);
    assert_eq!(n, 0);
    assert_eq!(cwnd, 2.0);
    assert!(
        next.iter().all(|d| d.flags & flags::RETX != 0),
        "go-back-N resends"
    );
}

/// RFC 8985's tail loss probe: 10 packets out, the last three lost, the first seven ACKed. Without
/// TLP nothing more arrives and only the RTO repairs the tail; with it, a probe of new data leaves at
/// 2·SRTT, its ACK (SACK of the probe) lets RACK mark the three lost, and fast recovery resends them.
#[test]
fn a_lost_tail_is_repaired_by_a_probe_not_the_rto() {
    let run = |tlp: bool| {
        let cfg = Config {
            tlp,
            initial_rto: 1_000_000_000,
            ..Config::default()
        };
        let cc = Box::new(Reno::new("newreno", 10.0, &Params::new()).unwrap());
        let mut s = Sender::new(cfg, cc, None, 0);
        let w = drain(&mut s, 0);
        s.stop(); // a finite flow at its end: the probe can only resend
        let mut now = 0;
        let mut sent = Vec::new();
        for k in 0..7u64 {
            now = 40_000_000 + k * 1_000;
            s.handle_ack(now, &echo(&w[k as usize], k + 1));
            sent.extend(drain(&mut s, now));
        }
        (s, sent, now)
    };
    // No new data for a probe: it is the last packet sent, again.
    let (mut s, sent, now) = run(true);
    assert!(sent.is_empty(), "a stopped flow sends nothing new");
    let pto = s.poll_timeout().unwrap();
    assert!(
        pto < now + 200_000_000,
        "PTO = 2·SRTT ≈ 80 ms, before the RTO: {}",
        pto - now
    );
    s.handle_timeout(pto);
    let probe = drain(&mut s, pto);
    assert_eq!(probe.len(), 1);
    assert_eq!(probe[0].seq, 9, "the highest packet, resent");
    assert_eq!(s.stats().tail_loss_probes, 1);
    // Its ACK: cumulative 7, SACK [9, 10). RACK marks 7 and 8 lost (sent long before 9's probe).
    let mut ack = echo(&probe[0], 7);
    ack.n_sack = 1;
    ack.sack[0] = SackBlock { start: 9, end: 10 };
    s.handle_ack(pto + 40_000_000, &ack);
    let repair = drain(&mut s, pto + 40_000_000);
    assert!(repair.iter().any(|d| d.seq == 7), "{repair:?}");
    assert_eq!(s.stats().timeouts, 0);
    assert_eq!(s.stats().fast_recoveries, 1);
    // Without TLP the next deadline is the RTO.
    let (s, _, now) = run(false);
    assert!(s.poll_timeout().unwrap() >= now + 200_000_000);
}
