//! A link's delay schedule: a packet takes the delay in force when it finishes serialisation, and
//! packets never overtake each other on the link (arrival = max(previous arrival, now + delay)).
//!
//! The set-up makes every arrival time analytic: constant-bit-rate cross traffic (1 Mbit/s of 1500-byte
//! packets, one every 12 ms) alone on a 100 Mbit/s link (120 µs a packet, so nothing ever queues),
//! no access delays, and the link's one-way delay 10 ms, then 300 ms from 1 s, then 10 ms from 1.5 s.

mod common;
use cclab_sim::result::TraceKind;
use common::*;

const TX: f64 = 1500.0 * 8.0 / 100e6;

fn delay_at(t: f64) -> f64 {
    if (1.0..1.5).contains(&t) {
        0.3
    } else {
        0.01
    }
}

#[test]
fn a_packet_sent_in_the_spike_takes_its_delay_and_none_overtakes() {
    let mut s = dumbbell(100e6, 1000, "droptail", vec![], 3.0, 1);
    s.links[0].delay = 0.01;
    s.links[0].delay_schedule = vec![(1.0, 0.3), (1.5, 0.01)];
    s.trace_packets = true;
    s.traffic = vec![traffic("cbr", 1e6, 0.0)];
    let r = cclab_sim::run(&s, None).unwrap();
    let (mut enq, mut del) = (vec![], vec![]);
    for k in 0..r.trace.len() {
        let rec = r.trace.get(k).unwrap();
        match rec.kind {
            TraceKind::Enqueue => enq.push(rec.t),
            TraceKind::Deliver => del.push(rec.t),
            _ => panic!("nothing is lost on this link: {rec:?}"),
        }
    }
    assert!(del.len() > 200 && enq.len() >= del.len());
    // The model: packet k leaves the queue at once (the link is idle), finishes serialising TX later,
    // and arrives after the delay then in force, or with the packet ahead of it if that is later. The
    // k-th delivery is packet k's only if the order is kept, so matching them checks the order too.
    let mut prev: f64 = 0.0;
    let (mut spiked, mut waited) = (0, 0);
    for (k, &d) in del.iter().enumerate() {
        let done = enq[k] + TX;
        let expect = (done + delay_at(done)).max(prev);
        // 1 ns: times are whole nanoseconds, and TX and the delays are whole numbers of them
        assert!(
            (d - expect).abs() < 2e-9,
            "packet {k}: sent {} arrived {d}, expected {expect}",
            enq[k]
        );
        spiked += (d - done > 0.29 && delay_at(done) == 0.3) as u32;
        // sent after the spike, yet held behind the last packet of it (no reordering on the drop)
        waited += (done >= 1.5 && d - done > 0.02) as u32;
        prev = d;
    }
    // 0.5 s of spike at one packet per 12 ms: 41 or 42 packets; then 0.29 s of them wait behind it
    assert!((41..=42).contains(&spiked), "{spiked}");
    assert!((23..=25).contains(&waited), "{waited}");
}

#[test]
fn no_schedule_and_a_constant_schedule_run_identically() {
    // A schedule that sets the link's own delay changes nothing (the same events in the same order).
    let f = flow("cubic", 0.04, 0);
    let mut a = dumbbell(20e6, 100, "droptail", vec![f], 5.0, 3);
    a.links[0].delay = 0.005;
    let mut b = a.clone();
    b.links[0].delay_schedule = vec![(0.0, 0.005), (2.0, 0.005)];
    let (mut ra, mut rb) = (
        cclab_sim::run(&a, None).unwrap(),
        cclab_sim::run(&b, None).unwrap(),
    );
    (ra.wall_s, rb.wall_s) = (0.0, 0.0); // the wall-clock time is the one thing that differs
    assert_eq!(
        serde_json::to_string(&ra).unwrap(),
        serde_json::to_string(&rb).unwrap()
    );
}
