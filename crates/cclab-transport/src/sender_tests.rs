//! Unit tests of the sender (`crates/cclab-transport/src/sender.rs`), scripted ACK by ACK.
use super::*;
use crate::config::LossDetection;
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

fn undo_sender(loss_detection: LossDetection, undo: bool) -> Sender {
    let cfg = Config {
        loss_detection,
        undo,
        initial_rto: 1_000_000_000,
        ..Config::default()
    };
    let cc = Box::new(Reno::new("newreno", 10.0, &Params::new()).unwrap());
    Sender::new(cfg, cc, None, 0)
}

/// An ACK echoing `d` with cumulative point `cum` and the SACK blocks `blocks`, the first a D-SACK
/// block when `dsack`.
fn ack_with(d: &DataSegment, cum: u64, blocks: &[(u64, u64)], dsack: bool) -> AckSegment {
    let mut a = echo(d, cum);
    for (i, &(start, end)) in blocks.iter().enumerate() {
        a.sack[i] = SackBlock { start, end };
    }
    a.n_sack = blocks.len() as u8;
    a.dsack = dsack;
    a
}

/// A spurious fast recovery (packet 0 only reordered behind nine others): its one retransmission
/// comes back D-SACKed and, with `undo`, the window before the recovery returns and the recovery ends.
/// The ACK the late original triggered is lost, so the timestamps cannot tell (the D-SACK alone must).
#[test]
fn a_fast_recovery_whose_retransmission_is_dsacked_is_undone() {
    let run = |undo: bool| {
        let mut s = undo_sender(LossDetection::DupAck, undo);
        let w = drain(&mut s, 1);
        let mut sent = w.clone();
        let mut now = 40_000_000;
        // Packets 1..9 arrive before 0: SACKs [1, k+1). The third starts a recovery.
        let mut cwnd_before = 0.0;
        for k in 1..10u64 {
            if k == 3 {
                cwnd_before = s.cc().cwnd();
            }
            now += 100_000;
            s.handle_ack(now, &ack_with(&w[k as usize], 0, &[(1, k + 1)], false));
            sent.extend(drain(&mut s, now));
        }
        assert!(s.in_recovery());
        assert_eq!(s.stats().fast_recoveries, 1);
        let retx = sent
            .iter()
            .find(|d| d.seq == 0 && d.flags & flags::RETX != 0);
        let retx = *retx.expect("packet 0 resent");
        // The original 0 arrives, then the new data sent meanwhile (their ACKs are lost); then the
        // retransmission, a duplicate: D-SACK [0, 1) with everything acknowledged.
        now += 40_000_000;
        let a = ack_with(&retx, s.snd_nxt(), &[(0, 1)], true);
        s.handle_ack(now, &a);
        (s, cwnd_before)
    };
    let (s, cwnd_before) = run(true);
    assert_eq!(s.stats().dsacks, 1);
    assert_eq!(s.stats().spurious_recoveries, 1);
    // Reno's undo: max(cwnd, prior), so at least the window when the loss was declared.
    assert!(
        s.cc().cwnd() >= cwnd_before,
        "{} < {cwnd_before}",
        s.cc().cwnd()
    );
    assert_eq!(
        s.rejected().total(),
        0,
        "a D-SACK block below the cumulative ACK is not hostile"
    );
    let (s, cwnd_before) = run(false);
    assert_eq!(s.stats().spurious_recoveries, 0);
    assert!(
        s.cc().cwnd() <= cwnd_before / 2.0 + 1.0,
        "{}",
        s.cc().cwnd()
    );
}

/// The same recovery shown spurious by timestamps: the ACK that fills the hole echoes the original of
/// packet 0, sent before its retransmission (Eifel); the reordering is noted, so RACK's window opens.
#[test]
fn a_hole_filled_by_the_original_undoes_the_recovery_and_counts_as_reordering() {
    let mut s = undo_sender(LossDetection::Rack, true);
    let w = drain(&mut s, 1);
    let mut now = 40_000_000;
    for k in 1..5u64 {
        now += 100_000;
        s.handle_ack(now, &ack_with(&w[k as usize], 0, &[(1, k + 1)], false));
        drain(&mut s, now);
    }
    assert!(
        s.in_recovery(),
        "no reordering seen yet: 3 SACKs above the hole mark it lost"
    );
    now += 500_000;
    s.handle_ack(now, &echo(&w[0], 5));
    assert_eq!(s.stats().spurious_recoveries, 1);
    assert!(!s.in_recovery());
    assert!(s.cc().cwnd() >= 10.0, "{}", s.cc().cwnd());
    assert!(s.reordering() >= 4, "degree {}", s.reordering());
}

/// RACK's reordering window grows by min_RTT/4 per round trip in which D-SACKs arrive: two D-SACKs on
/// ACKs of data sent before the first adjustment raise it once; one on data sent after it, again.
#[test]
fn dsack_rounds_widen_the_reordering_window() {
    let mut s = undo_sender(LossDetection::Rack, false);
    let w = drain(&mut s, 1);
    assert_eq!(s.reo_wnd_steps(), 1);
    let mut now = 40_000_000;
    for (k, d) in w.iter().enumerate().take(4) {
        now += 100_000;
        s.handle_ack(now, &echo(d, k as u64 + 1));
    }
    let sacked_before = s.board.sacked();
    // Round 1: D-SACKs for packets 0 and 1 (already acknowledged) on the ACKs of 4 and 5.
    now += 100_000;
    s.handle_ack(now, &ack_with(&w[4], 5, &[(0, 1)], true));
    assert_eq!(s.reo_wnd_steps(), 2);
    let later = drain(&mut s, now);
    now += 100_000;
    s.handle_ack(now, &ack_with(&w[5], 6, &[(1, 2)], true));
    assert_eq!(
        s.reo_wnd_steps(),
        2,
        "same round: data sent before the adjustment"
    );
    // Round 2: the ACK of data sent after the adjustment.
    now += 40_000_000;
    s.handle_ack(now, &ack_with(&later[0], 7, &[(2, 3)], true));
    assert_eq!(s.reo_wnd_steps(), 3);
    assert_eq!(s.stats().dsacks, 3);
    assert_eq!(
        s.board.sacked(),
        sacked_before,
        "a D-SACK is not new SACKed data"
    );
    assert_eq!(s.rejected().total(), 0);
    // Once reordering is seen the window is 3 · min_RTT/4 (bounded by SRTT).
    s.rack.on_reordering(4);
    let min_rtt = s.min_rtt();
    assert_eq!(s.reo_wnd_now(), (3 * (min_rtt / 4)).min(s.srtt()));
}

/// A delay spike longer than the RTO (every packet late, none lost): with `undo` the first ACK after
/// the RTO echoes an original sent before it, and the RTO is undone: the window is not restarted from
/// one packet, the late packets are not resent, and new data follows.
#[test]
fn a_delay_spike_that_fires_the_rto_costs_no_slow_start() {
    let mut s = undo_sender(LossDetection::Rack, true);
    let w = drain(&mut s, 1);
    let rto = s.poll_timeout().unwrap();
    s.handle_timeout(rto);
    let retx = drain(&mut s, rto);
    assert_eq!(retx.len(), 1, "the RTO resends the head");
    assert_eq!(s.cc().cwnd(), 1.0);
    let mut now = rto + 10_000_000;
    s.handle_ack(now, &echo(&w[0], 1));
    assert_eq!(s.stats().spurious_timeouts, 1);
    assert!(s.cc().cwnd() >= 10.0, "{}", s.cc().cwnd());
    let mut next = drain(&mut s, now);
    for (k, d) in w.iter().enumerate().skip(1) {
        now += 100_000;
        s.handle_ack(now, &echo(d, k as u64 + 1));
        next.extend(drain(&mut s, now));
    }
    assert!(next.iter().all(|d| d.flags & flags::RETX == 0), "{next:?}");
    assert_eq!(s.stats().retransmits, 1);
}

/// F-RTO (RFC 5682): after an RTO, the ACK of the retransmitted head lets new data go instead of the
/// other packets the RTO marked lost (step 2b). Then either the new data is acknowledged with packets
/// that were never resent (their own ACKs were lost): the RTO was spurious and is undone (step 3b); or
/// a SACK shows a hole: the loss was real and the marked packets are resent (step 3a).
#[test]
fn frto_sends_new_data_then_undoes_or_resends() {
    let setup = || {
        let mut s = undo_sender(LossDetection::Rack, true);
        let w = drain(&mut s, 1);
        let rto = s.poll_timeout().unwrap();
        s.handle_timeout(rto);
        let head = drain(&mut s, rto);
        assert_eq!(head[0].seq, 0);
        // The retransmission of 0 arrives; packets 1..9 are still on their way.
        let now = rto + 40_000_000;
        s.handle_ack(now, &echo(&head[0], 1));
        let new = drain(&mut s, now);
        (s, w, new, now)
    };
    let (mut s, _, new, now) = setup();
    assert!(!new.is_empty());
    assert!(
        new.iter()
            .all(|d| d.flags & flags::RETX == 0 && d.seq >= 10),
        "step 2b: new data, not 1..9 again: {new:?}"
    );
    // Step 3b: the ACK of the first new packet covers 1..9 too.
    s.handle_ack(now + 40_000_000, &echo(&new[0], 11));
    assert_eq!(s.stats().spurious_timeouts, 1);
    assert!(s.cc().cwnd() >= 10.0, "{}", s.cc().cwnd());
    assert!(!s.in_recovery());

    // Step 3a: a SACK of the new packet above the hole at 1: the loss was real.
    let (mut s, _, new, now) = setup();
    let a = ack_with(&new[0], 1, &[(10, 11)], false);
    s.handle_ack(now + 40_000_000, &a);
    assert_eq!(s.stats().spurious_timeouts, 0);
    let resent = drain(&mut s, now + 40_000_000);
    assert!(
        resent
            .iter()
            .any(|d| d.seq == 1 && d.flags & flags::RETX != 0),
        "{resent:?}"
    );
}
