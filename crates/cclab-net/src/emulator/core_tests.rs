//! The emulator core's unit tests (virtual clock, no I/O): timing, buffers, disciplines, impairments,
//! per-flow access delays, routes over several links, generated cross traffic.

use super::*;
use crate::ip::build_udp;
use cclab_cc::impair::Impairments;
use cclab_cc::time::{NS_PER_MS, NS_PER_SEC, NS_PER_US};

fn pkt(len: usize, dport: u16) -> Vec<u8> {
    build_udp(
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        1,
        dport,
        0,
        &vec![0u8; len - 28],
    )
}

/// Back-to-back arrivals leave exactly one transmission time apart and arrive one propagation
/// delay later: the virtual clock, not the wake-up time, sets departures.
#[test]
fn departures_follow_the_virtual_clock() {
    let mut e = Emulator::new(
        LinkConfig::droptail(100e6, 10 * NS_PER_MS, 100),
        LinkConfig::droptail(100e6, 10 * NS_PER_MS, 100),
        1,
    )
    .unwrap();
    for _ in 0..5 {
        e.on_packet(Dir::Fwd, 1000, pkt(1500, 9));
    }
    // the first started at once; the next event is the second's start, one 1500-byte time later
    assert_eq!(e.next_deadline(), Some(1000 + 120 * NS_PER_US));
    // polled late, at 50 ms: all five are due, and were due at 10 ms + k·120 µs
    let mut n = 0;
    while let Some((d, b, due)) = e.poll_output(50 * NS_PER_MS) {
        assert_eq!(d, Dir::Fwd);
        assert_eq!(due, 1000 + (n + 1) * 120 * NS_PER_US + 10 * NS_PER_MS);
        assert_eq!(b.len(), 1500);
        n += 1;
    }
    assert_eq!(n, 5);
    assert_eq!(e.counters(Dir::Fwd).departures, 5);
}

#[test]
fn buffer_overflow_drops_and_access_delay_applies() {
    let mut e = Emulator::new(
        LinkConfig::droptail(10e6, NS_PER_MS, 2),
        LinkConfig::droptail(10e6, NS_PER_MS, 2),
        1,
    )
    .unwrap();
    e.add_flow_delay(7, 5 * NS_PER_MS, 0, false);
    for _ in 0..4 {
        e.on_packet(Dir::Fwd, 0, pkt(1250, 9)); // 1 ms each at 10 Mbit/s
    }
    // one in transmission, two queued, one dropped
    let c = e.counters(Dir::Fwd);
    assert_eq!((c.arrivals, c.queue_drops), (4, 1));
    e.on_packet(Dir::Fwd, 0, pkt(1250, 7));
    // port 7 reaches the link at 5 ms, after the queue drained at 3 ms: starts at 5 ms, out at 7 ms
    let mut times = Vec::new();
    let mut t = 0;
    while let Some(dl) = e.next_deadline() {
        t = dl.max(t);
        while let Some((_, b, _)) = e.poll_output(t) {
            times.push(t);
            e.recycle(b);
        }
    }
    assert_eq!(
        times,
        vec![2 * NS_PER_MS, 3 * NS_PER_MS, 4 * NS_PER_MS, 7 * NS_PER_MS]
    );
    e.on_packet(Dir::Fwd, 0, vec![0x60; 40]);
    e.on_packet(Dir::Fwd, 0, vec![0x45; 10]);
    assert_eq!((e.ingress.non_ipv4, e.ingress.malformed), (1, 1));
}

/// How long one packet (ports `dport`, `sport`) entering `dir` at `t0` takes to leave, the links
/// idle (10 Mbit/s, 1 ms; `t0` later than every earlier packet's departure).
fn out_time(e: &mut Emulator, t0: Nanos, dir: Dir, dport: u16, sport: u16) -> Nanos {
    let b = build_udp([10, 0, 0, 1], [10, 0, 0, 2], sport, dport, 0, &[0u8; 1222]);
    e.on_packet(dir, t0, b);
    let mut t = t0;
    while let Some(dl) = e.next_deadline() {
        t = dl.max(t);
        if let Some((d, b, _)) = e.poll_output(t) {
            assert_eq!(d, dir);
            e.recycle(b);
            return t - t0;
        }
    }
    unreachable!("the packet left")
}

/// A flow is keyed by its receiver's port: a forward flow's data (A → B) by destination port and its
/// ACKs (B → A) by source port; a reverse flow's data (B → A) by destination port and its ACKs
/// (A → B) by source port. A packet of neither gets no extra delay.
#[test]
fn codel_drops_at_dequeue_and_the_next_packet_takes_the_slot() {
    // 300 packets at once on 12 Mbit/s (1 ms each): the k-th waits k ms. Sojourn passes the 5 ms
    // target at 5 ms, so CoDel drops one interval later (at 105 ms), then at 205 and 270.7 ms
    // (interval/√count); the queue is empty before the next (328.4 ms). A dropped head gives its
    // slot to the next packet at once: the departures stay 1 ms apart.
    let mut cfg = LinkConfig::droptail(12e6, NS_PER_MS, 1000);
    cfg.queue = "codel".into();
    let mut e = Emulator::new(cfg.clone(), cfg, 1).unwrap();
    for _ in 0..300 {
        e.on_packet(Dir::Fwd, 0, pkt(1500, 9));
    }
    let mut due = Vec::new();
    while let Some(dl) = e.next_deadline() {
        while let Some((_, b, at)) = e.poll_output(dl) {
            due.push(at);
            e.recycle(b);
        }
    }
    let c = e.counters(Dir::Fwd);
    assert_eq!((c.queue_drops, c.departures, due.len()), (3, 297, 297));
    assert!(
        due.windows(2).all(|w| w[1] - w[0] == NS_PER_MS),
        "no idle slot after a drop"
    );
}

#[test]
fn pie_holds_an_unresponsive_overload_at_its_reference_delay() {
    // A packet every 0.8 ms into 12 Mbit/s (1 ms each): 25 % too much, and the sender never slows
    // down. PIE's controller must find the drop probability 0.2 that matches the load to the link,
    // with the delay at its 15 ms reference (drop-tail would sit at the full 1000-packet buffer).
    // Measured over 20-30 s: 19.95 % dropped, mean sojourn 14.9 ms; the bounds (±2 points, ±20 %)
    // allow for the probability's oscillation around its fixed point.
    let mut cfg = LinkConfig::droptail(12e6, NS_PER_MS, 1000);
    cfg.queue = "pie".into();
    let mut e = Emulator::new(cfg.clone(), cfg, 1).unwrap();
    let gap = 800_000;
    let (mut sent, mut sojourn) = (vec![0; 65_536], Vec::new());
    let drops_at = |e: &Emulator| e.counters(Dir::Fwd).queue_drops;
    let (mut d0, mut n0) = (0, 0);
    for i in 0..37_500u64 {
        let t = i * gap;
        while let Some(dl) = e.next_deadline().filter(|&dl| dl <= t) {
            while let Some((_, b, at)) = e.poll_output(dl) {
                let id = u16::from_be_bytes([b[20], b[21]]) as usize;
                if at > 20 * NS_PER_SEC {
                    // out at the far end = arrival + sojourn + 1 ms transmission + 1 ms propagation
                    sojourn.push((at - sent[id] - 2 * NS_PER_MS) as f64 / 1e6);
                }
                e.recycle(b);
            }
        }
        if t == 20 * NS_PER_SEC {
            (d0, n0) = (drops_at(&e), i);
        }
        let id = (i % 65_536) as u16;
        sent[id as usize] = t;
        e.on_packet(
            Dir::Fwd,
            t,
            build_udp([10, 0, 0, 1], [10, 0, 0, 2], id, 9, 0, &[0u8; 1472]),
        );
    }
    let frac = (drops_at(&e) - d0) as f64 / (37_500 - n0) as f64;
    let mean = sojourn.iter().sum::<f64>() / sojourn.len() as f64;
    assert!((frac - 0.2).abs() < 0.02, "drop fraction {frac}");
    assert!((12.0..18.0).contains(&mean), "mean sojourn {mean} ms");
}

/// Sojourn times (ms) of a sparse flow's packets (port 10, one every 10 ms) sharing a 12 Mbit/s
/// link (1 ms a packet) with a bulk sender (port 9, a packet every 0.5 ms: twice the link), over
/// 1-3 s, with queue discipline `queue`.
fn sparse_sojourns(queue: &str) -> Vec<f64> {
    let mut cfg = LinkConfig::droptail(12e6, NS_PER_MS, 200);
    cfg.queue = queue.into();
    let mut e = Emulator::new(cfg.clone(), cfg, 1).unwrap();
    let mut out = Vec::new();
    let mut sent = std::collections::HashMap::new();
    for i in 0..6000u64 {
        let t = i * NS_PER_MS / 2;
        while let Some(dl) = e.next_deadline().filter(|&dl| dl <= t) {
            while let Some((_, b, at)) = e.poll_output(dl) {
                let (sport, dport) = (
                    u16::from_be_bytes([b[20], b[21]]),
                    u16::from_be_bytes([b[22], b[23]]),
                );
                if dport == 10 && at > NS_PER_SEC {
                    out.push((at - sent[&sport] - 2 * NS_PER_MS) as f64 / 1e6);
                }
                e.recycle(b);
            }
        }
        let b = build_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 9, 0, &[0u8; 1472]);
        e.on_packet(Dir::Fwd, t, b);
        if i % 20 == 0 {
            let id = (i / 20) as u16 + 100;
            sent.insert(id, t);
            let b = build_udp([10, 0, 0, 1], [10, 0, 0, 2], id, 10, 0, &[0u8; 1472]);
            e.on_packet(Dir::Fwd, t, b);
        }
    }
    out
}

#[test]
fn fq_codel_keeps_a_sparse_flow_out_of_a_bulk_flows_queue() {
    // Drop-tail: the bulk sender keeps the 200-packet buffer full; each sparse packet arrives with
    // a bulk one that takes the one free slot, so none gets through. FQ-CoDel: each sparse packet finds its own queue empty and its
    // flow on the new-flows list, so it waits at most for the packet in transmission (≤ 1 ms).
    let ft = sparse_sojourns("droptail");
    let fq = sparse_sojourns("fq_codel");
    assert!(
        ft.is_empty(),
        "drop-tail delivered {} sparse packets",
        ft.len()
    );
    assert_eq!(fq.len(), 200, "every sparse packet delivered");
    assert!(fq.iter().all(|&d| d <= 1.0), "{fq:?}");
}

/// Delivery order (by source port) and times of 2000 packets sent 1 ms apart over a 100 Mbit/s,
/// 20 ms link with the given impairments.
fn impaired(im: Impairments) -> (Vec<u16>, Vec<Nanos>, LinkCounters) {
    let mut cfg = LinkConfig::droptail(100e6, 20 * NS_PER_MS, 1000);
    cfg.impair = Some(im);
    deliveries(cfg)
}

/// Delivery order (by source port) and delays of 2000 packets sent 1 ms apart over link `cfg`.
fn deliveries(cfg: LinkConfig) -> (Vec<u16>, Vec<Nanos>, LinkCounters) {
    let mut e = Emulator::new(cfg.clone(), cfg, 1).unwrap();
    let (mut order, mut delays) = (Vec::new(), Vec::new());
    let mut sent = vec![0; 2000];
    let drain = |e: &mut Emulator,
                 until: Nanos,
                 order: &mut Vec<u16>,
                 delays: &mut Vec<Nanos>,
                 sent: &[Nanos]| {
        while let Some(dl) = e.next_deadline().filter(|&dl| dl <= until) {
            while let Some((_, b, at)) = e.poll_output(dl) {
                let id = u16::from_be_bytes([b[20], b[21]]);
                order.push(id);
                delays.push(at - sent[id as usize]);
                e.recycle(b);
            }
        }
    };
    for i in 0..2000u64 {
        let t = i * NS_PER_MS;
        drain(&mut e, t, &mut order, &mut delays, &sent);
        sent[i as usize] = t;
        e.on_packet(
            Dir::Fwd,
            t,
            build_udp([10, 0, 0, 1], [10, 0, 0, 2], i as u16, 9, 0, &[0u8; 1472]),
        );
    }
    drain(&mut e, Nanos::MAX, &mut order, &mut delays, &sent);
    (order, delays, e.counters(Dir::Fwd))
}

#[test]
fn jitter_reordering_and_duplication_on_the_emulated_link() {
    use cclab_cc::impair::JitterDist;
    // ±5 ms uniform jitter kept in order: monotone delivery, delays 20.12 ms (transmission +
    // propagation) - 5 ms ... + 5 ms (and more when held behind an earlier packet).
    let (order, delays, _) =
        impaired(Impairments::new(5 * NS_PER_MS, JitterDist::Uniform, false, 0.0, 0.0).unwrap());
    assert!(order.windows(2).all(|w| w[0] < w[1]));
    let (lo, hi) = (delays.iter().min().unwrap(), delays.iter().max().unwrap());
    // (Measured 16.6-25.1 ms: a short draw mostly waits for an earlier packet's longer one.)
    assert!(*lo >= 15 * NS_PER_MS && *hi <= 26 * NS_PER_MS && hi - lo > 7 * NS_PER_MS);
    // The same jitter allowed to reorder: packets 1 ms apart with ±5 ms overtake each other.
    let (order, _, _) =
        impaired(Impairments::new(5 * NS_PER_MS, JitterDist::Uniform, true, 0.0, 0.0).unwrap());
    let inversions = order.windows(2).filter(|w| w[0] > w[1]).count();
    assert!(inversions > 200, "{inversions}");
    // 10 % skip the 20 ms delay; 5 % duplicated: 2100 ± 40 delivered (4 σ).
    let (order, delays, c) =
        impaired(Impairments::new(0, JitterDist::Uniform, false, 0.1, 0.05).unwrap());
    let skipped = delays.iter().filter(|&&d| d < NS_PER_MS).count();
    assert!(
        (140..280).contains(&skipped) && order.windows(2).any(|w| w[0] > w[1]),
        "{skipped}"
    );
    assert!(
        (2060..2140).contains(&c.delivered) && c.arrivals == c.delivered,
        "{c:?}"
    );
}

/// A delay schedule, as in the simulator: 20 ms, 300 ms from 0.5 s, 20 ms again from 1 s. A packet
/// takes the delay in force when it finishes serialisation; after the drop, packets wait behind the
/// spike's last one instead of overtaking it.
#[test]
fn a_delay_spike_delays_what_is_sent_in_it_and_keeps_the_order() {
    let mut cfg = LinkConfig::droptail(100e6, 20 * NS_PER_MS, 1000);
    cfg.delay_schedule = vec![
        (500 * NS_PER_MS, 300 * NS_PER_MS),
        (NS_PER_SEC, 20 * NS_PER_MS),
    ];
    let (order, delays, c) = deliveries(cfg);
    assert_eq!(c.delivered, 2000);
    assert!(order.windows(2).all(|w| w[0] < w[1]), "reordered");
    let tx = 120 * NS_PER_US; // 1500 bytes at 100 Mbit/s
                              // Packet i is sent at i ms and finishes serialising 120 µs later (the link is otherwise idle).
    let mut last = 0;
    for (i, &d) in delays.iter().enumerate() {
        let done = i as u64 * NS_PER_MS + tx;
        let prop = if (500 * NS_PER_MS..NS_PER_SEC).contains(&done) {
            300 * NS_PER_MS
        } else {
            20 * NS_PER_MS
        };
        let at = (done + prop).max(last);
        assert_eq!(d, at - i as u64 * NS_PER_MS, "packet {i}");
        last = at;
    }
    // sent 0.5 s - 0.12 ms .. 1 s - 0.12 ms: the spike's 300 ms (500 packets)
    assert_eq!(
        delays
            .iter()
            .filter(|&&d| d == 300 * NS_PER_MS + tx)
            .count(),
        500
    );
    // sent at 1.000 - 1.278 s: held behind the spike's last packet (sent at 0.999 s, arriving at
    // 1.29912 s), which packet 1279 (arriving at 1.29912 s itself) no longer is
    let held = delays[1000..]
        .iter()
        .filter(|&&d| d > 20 * NS_PER_MS + tx)
        .count();
    assert_eq!(held, 279);
}

#[test]
fn access_delays_follow_the_flow_in_both_directions() {
    let mut e = Emulator::new(
        LinkConfig::droptail(10e6, NS_PER_MS, 100),
        LinkConfig::droptail(10e6, NS_PER_MS, 100),
        1,
    )
    .unwrap();
    e.add_flow_delay(40000, 5 * NS_PER_MS, 3 * NS_PER_MS, false);
    e.add_flow_delay(40001, 7 * NS_PER_MS, 2 * NS_PER_MS, true);
    // 1 ms transmission + 1 ms propagation = 2 ms without an access delay.
    let base = 2 * NS_PER_MS;
    let s = 100 * NS_PER_MS;
    assert_eq!(
        out_time(&mut e, s, Dir::Fwd, 40000, 50000),
        base + 5 * NS_PER_MS
    ); // forward data
    assert_eq!(
        out_time(&mut e, 2 * s, Dir::Rev, 50000, 40000),
        base + 3 * NS_PER_MS
    ); // its ACK
    assert_eq!(
        out_time(&mut e, 3 * s, Dir::Rev, 40001, 50001),
        base + 7 * NS_PER_MS
    ); // reverse data
    assert_eq!(
        out_time(&mut e, 4 * s, Dir::Fwd, 50001, 40001),
        base + 2 * NS_PER_MS
    ); // its ACK
    assert_eq!(out_time(&mut e, 5 * s, Dir::Fwd, 50002, 50003), base); // someone else's
}

/// An ACK's access delay comes after its link, as in the simulator: sent at the moment the reverse
/// flow's data enters the reverse link, it queues behind that data (1 ms at 10 Mbit/s), then crosses
/// (transmission + 1 ms) and only then waits out its 5 ms. With the delay before the link it found the
/// link idle 5 ms later and came out 1 ms earlier; on a two-way dumbbell that placement cost a NewReno
/// pair a quarter of its goodput against the simulator (core.rs, DECISION on an ACK's access delay).
#[test]
fn an_ack_meets_the_reverse_data_before_its_access_delay() {
    let mut e = Emulator::new(
        LinkConfig::droptail(10e6, NS_PER_MS, 100),
        LinkConfig::droptail(10e6, NS_PER_MS, 100),
        1,
    )
    .unwrap();
    e.add_flow_delay(40000, 5 * NS_PER_MS, 5 * NS_PER_MS, false);
    e.add_flow_delay(40001, 0, 0, true);
    let t0 = 100 * NS_PER_MS;
    // the reverse flow's data (1250 bytes: 1 ms) enters link 1 at t0, the forward flow's ACK just after
    e.on_packet(
        Dir::Rev,
        t0,
        build_udp([10, 0, 0, 2], [10, 0, 0, 1], 50001, 40001, 0, &[0u8; 1222]),
    );
    e.on_packet(
        Dir::Rev,
        t0,
        build_udp([10, 0, 0, 2], [10, 0, 0, 1], 40000, 50000, 0, &[0u8; 72]),
    );
    let mut out = Vec::new();
    let mut t = t0;
    while let Some(dl) = e.next_deadline() {
        t = dl.max(t);
        while let Some((_, b, due)) = e.poll_output(t) {
            out.push((b.len(), due - t0));
            e.recycle(b);
        }
    }
    let ack_tx = 100 * 8 * NS_PER_SEC / 10_000_000; // 100 bytes at 10 Mbit/s: 80 µs
    assert_eq!(
        out,
        vec![
            (1250, 2 * NS_PER_MS),
            (100, NS_PER_MS + ack_tx + NS_PER_MS + 5 * NS_PER_MS)
        ]
    );
    assert_eq!(e.counters(Dir::Rev).departures, 2);
}

/// A parking lot of two links (10 Mbit/s then 5 Mbit/s, 1 ms each; reverses 2 and 3): the long flow's
/// data crosses both links in order, a short flow's only its own, and ACKs come back over the reverse
/// links. Times are exact on the virtual clock: each hop adds its transmission and propagation.
#[test]
fn a_route_crosses_its_links_in_order() {
    let cfg = |r| LinkConfig::droptail(r, NS_PER_MS, 100);
    let mut e = Emulator::with_links(
        vec![cfg(10e6), cfg(5e6), cfg(10e6), cfg(5e6)],
        [vec![0, 1], vec![3, 2]],
        1,
    )
    .unwrap();
    let route = |data: Vec<usize>, ack: Vec<usize>| FlowRoute {
        data_side: Dir::Fwd,
        data_hops: data,
        data_delay: 0,
        ack_hops: ack,
        ack_delay: 0,
    };
    e.add_flow_ports(40000, 40000, &route(vec![0, 1], vec![3, 2]));
    e.add_flow_ports(40001, 40001, &route(vec![0], vec![2]));
    e.add_flow_ports(40002, 40002, &route(vec![1], vec![3]));
    // 1250 B: 1 ms at 10 Mbit/s, 2 ms at 5 Mbit/s.
    let long = out_time(&mut e, NS_PER_SEC, Dir::Fwd, 40000, 50000);
    assert_eq!(long, (1 + 1) * NS_PER_MS + (2 + 1) * NS_PER_MS);
    assert_eq!(
        out_time(&mut e, 2 * NS_PER_SEC, Dir::Fwd, 40001, 50001),
        2 * NS_PER_MS
    );
    assert_eq!(
        out_time(&mut e, 3 * NS_PER_SEC, Dir::Fwd, 40002, 50002),
        3 * NS_PER_MS
    );
    assert_eq!(
        out_time(&mut e, 4 * NS_PER_SEC, Dir::Rev, 50000, 40000),
        5 * NS_PER_MS
    );
    let n = |i: usize| e.link_counters(i).departures;
    // link 0: long + short 0; link 1: long + short 1; reverse 3 then 2 for the long flow's ACK.
    assert_eq!((n(0), n(1), n(2), n(3)), (2, 2, 1, 1));
}

/// Two flows share link 1 of a chain: the one that crossed link 0 first queues behind the other at
/// link 1 exactly as the virtual clock says (the second hop's queue sees the first hop's departures).
#[test]
fn the_second_hop_queues_what_the_first_delivers() {
    let cfg = |r| LinkConfig::droptail(r, NS_PER_MS, 100);
    let mut e = Emulator::with_links(vec![cfg(10e6), cfg(10e6)], [vec![0, 1], vec![]], 1).unwrap();
    let route = |data: Vec<usize>| FlowRoute {
        data_side: Dir::Fwd,
        data_hops: data,
        data_delay: 0,
        ack_hops: vec![],
        ack_delay: 0,
    };
    e.add_flow_ports(40000, 40000, &route(vec![0, 1]));
    e.add_flow_ports(40001, 40001, &route(vec![1]));
    // Long packet enters link 0 at 0: leaves it at 1 ms, reaches link 1 at 2 ms. The short flow's
    // packet enters link 1 at 1.5 ms and holds it until 2.5 ms; the long one waits, 3.5 ms, +1 ms.
    let b = |d| build_udp([10, 0, 0, 1], [10, 0, 0, 2], 50000, d, 0, &[0u8; 1222]);
    e.on_packet(Dir::Fwd, 0, b(40000));
    e.on_packet(Dir::Fwd, 1_500_000, b(40001));
    let mut got = Vec::new();
    while let Some(dl) = e.next_deadline() {
        while let Some((_, p, at)) = e.poll_output(dl) {
            got.push((u16::from_be_bytes([p[22], p[23]]), at));
            e.recycle(p);
        }
    }
    assert_eq!(got, vec![(40001, 3_500_000), (40000, 4_500_000)]);
}

/// Cross traffic inside the emulator sends exactly the law's packets: the emission times of a
/// `CrossLaw` built alike (same kind, rate, stream) are the arrival times at the route's first link,
/// and every packet is consumed at the route's end, none written to a host.
#[test]
fn generated_cross_traffic_follows_the_law_and_is_consumed() {
    use cclab_cc::cross::{CrossKind, CrossLaw};
    use cclab_cc::rng::Stream;
    // Poisson at 3 Mbit/s (30 % of 10 Mbit/s) of 1500 B packets for 10 s, on link 0 then 1.
    let law = || {
        CrossLaw::new(
            CrossKind::Poisson,
            3e6,
            1500,
            Some(10 * NS_PER_SEC),
            Stream::Traffic.rng(5, 2),
        )
    };
    let cfg = LinkConfig::droptail(10e6, NS_PER_MS, 1000);
    let mut e = Emulator::with_links(vec![cfg.clone(), cfg], [vec![], vec![]], 1).unwrap();
    e.add_cross(2, law(), NS_PER_SEC, vec![0, 1], 1500);
    let mut expected = 0u64;
    let (mut l, mut t) = (law(), Some(NS_PER_SEC));
    while let Some(at) = t {
        let (send, next) = l.fire(at);
        expected += send as u64;
        t = next;
    }
    while let Some(dl) = e.next_deadline() {
        assert!(e.poll_output(dl).is_none(), "nothing reaches a host");
    }
    let c = e.cross_counters()[0];
    assert_eq!((c.sent, c.delivered), (expected, expected));
    assert_eq!(e.link_counters(1).arrivals, expected);
    // 9 s at 250 packets/s: 2250 ± 4 σ (√2250 ≈ 47).
    assert!((2060..2440).contains(&expected), "{expected}");
}
