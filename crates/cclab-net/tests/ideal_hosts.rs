//! The real datapath's model with ideal hosts: the emulator core (`cclab_net::emulator::core`, the
//! routes `cclab_net::topology::build_emulator` gives a spec) and our transport's endpoints, closed in a
//! loop on a virtual clock, with no sockets, threads or wake-up latency. Every packet goes through the
//! wire format and an IPv4/UDP header as on the real path. What this loop carries is what the real
//! datapath would carry on a perfectly quiet machine, so a difference from the simulator here is a
//! difference of model (routes, delays, packet sizes), not of timing; a difference that shows only in
//! real runs is the hosts'.
//!
//! Why it exists: a forward and a reverse NewReno flow (tests/test_net.py's reverse pair) carried
//! 26.1-27.8 Mbit/s in all on the real datapath against the simulator's 33.9, on an idle machine.
//! This loop gave 25.3 with the emulator's routes of then, so the gap was the model: the emulator put
//! an ACK's access delay before the reverse link, the simulator after it (core.rs, DECISION on an ACK's
//! access delay).

use cclab_cc::rng::{self, Stream};
use cclab_cc::time::{from_secs, Nanos};
use cclab_net::emulator::core::{Dir, Emulator};
use cclab_net::endpoint::{build_flow_sender, transport_config};
use cclab_net::hosts::{ADDR_A, ADDR_B};
use cclab_net::plan::flow_port;
use cclab_net::spec::{RunSpec, StartSpec};
use cclab_net::topology::{build_emulator, reverse};
use cclab_net::wire::{Body, Packet, Repr};
use cclab_transport::{Receiver, Sender};

/// One flow's two endpoints.
struct Flow {
    id: u32,
    sender: Sender,
    receiver: Receiver,
    start: Nanos,
    /// Sender on host B (data over link 1).
    reverse: bool,
    port: u16,
    delivered_at_w0: u64,
}

impl Flow {
    /// `body` as the IPv4/UDP packet its host writes, with the side the emulator reads it from.
    fn packet(&self, body: Body) -> (Dir, Vec<u8>) {
        let data = matches!(body, Body::Data(_));
        let r = Repr {
            flow_id: self.id,
            body,
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Packet::new_unchecked(&mut b[..]));
        let (snd, rcv) = if self.reverse {
            (ADDR_B, ADDR_A)
        } else {
            (ADDR_A, ADDR_B)
        };
        // the sender's port: any outside the flow ports (the hosts' ephemeral range)
        let sport = 50000 + self.id as u16;
        // data leaves the sender's host, ACKs the other: side Fwd is host A
        let from_a = data != self.reverse;
        let side = if from_a { Dir::Fwd } else { Dir::Rev };
        let ip = if data {
            cclab_net::ip::build_udp(snd, rcv, sport, self.port, 0, &b)
        } else {
            cclab_net::ip::build_udp(rcv, snd, self.port, sport, 0, &b)
        };
        (side, ip)
    }
}

/// Each flow's start as the real run draws it (`cclab_net::run`'s stream).
fn starts(spec: &RunSpec) -> Vec<Nanos> {
    let mut r = Stream::NetFlowStart.rng(spec.seed, 0);
    spec.flows
        .iter()
        .map(|f| match f.start {
            StartSpec::At(t) => from_secs(t),
            StartSpec::Uniform([lo, hi]) => from_secs(lo + (hi - lo) * rng::uniform(&mut r)),
        })
        .collect()
}

/// Goodput (bit/s) of each flow over the spec's measure window, ideal hosts: every packet is handled
/// the moment the emulator delivers it, every ACK and data segment is sent the moment it is ready.
fn run_ideal(spec: &RunSpec) -> Vec<f64> {
    let mut emu: Emulator = build_emulator(spec).expect("a valid spec");
    let mut flows: Vec<Flow> = spec
        .flows
        .iter()
        .zip(starts(spec))
        .enumerate()
        .map(|(i, (f, start))| {
            let built =
                build_flow_sender(&f.cc, f, i as u32, spec.seed).expect("a known algorithm");
            let cfg = transport_config(f, built.recovery);
            Flow {
                id: i as u32,
                sender: Sender::new(cfg.clone(), built.cc, f.size, start),
                receiver: Receiver::new(&cfg),
                start,
                reverse: reverse(f),
                port: flow_port(i),
                delivered_at_w0: 0,
            }
        })
        .collect();
    let end = from_secs(spec.duration);
    let w0 = from_secs(spec.measure[0]);
    let mut at_w0 = false;
    let mut t: Nanos = 0;
    loop {
        if !at_w0 && t >= w0 {
            for f in flows.iter_mut() {
                f.delivered_at_w0 = f.receiver.delivered_bytes();
            }
            at_w0 = true;
        }
        let mut sent = Vec::new();
        while let Some((_, buf, _)) = emu.poll_output(t) {
            let repr = Repr::parse_bytes(&buf[28..]).expect("our own packet");
            emu.recycle(buf);
            let f = &mut flows[repr.flow_id as usize];
            match repr.body {
                Body::Data(d) => {
                    // the receiver's ACK rules per packet, as in the simulator
                    f.receiver.handle_data(t, &d);
                    while let Some(a) = f.receiver.poll_ack(t) {
                        sent.push(f.packet(Body::Ack(a)));
                    }
                }
                Body::Ack(a) => f.sender.handle_ack(t, &a),
            }
        }
        for f in flows.iter_mut().filter(|f| t >= f.start) {
            if f.sender.poll_timeout().is_some_and(|x| x <= t) {
                f.sender.handle_timeout(t);
            }
            if f.receiver.poll_timeout().is_some_and(|x| x <= t) {
                f.receiver.handle_timeout(t);
                while let Some(a) = f.receiver.poll_ack(t) {
                    sent.push(f.packet(Body::Ack(a)));
                }
            }
            while let Some(d) = f.sender.poll_transmit(t) {
                sent.push(f.packet(Body::Data(d)));
            }
        }
        for (side, b) in sent {
            emu.on_packet(side, t, b);
        }
        if t >= end {
            break;
        }
        let mut next = end;
        if let Some(x) = emu.next_deadline() {
            next = next.min(x);
        }
        for f in &flows {
            let due = if t < f.start {
                vec![f.start]
            } else {
                [f.sender.poll_timeout(), f.receiver.poll_timeout()]
                    .into_iter()
                    .flatten()
                    .collect()
            };
            next = due.into_iter().fold(next, Nanos::min);
        }
        t = next.clamp(t + 1, end);
    }
    let secs = spec.duration - spec.measure[0];
    flows
        .iter()
        .map(|f| (f.receiver.delivered_bytes() - f.delivered_at_w0) as f64 * 8.0 / secs)
        .collect()
}

/// tests/test_net.py's reverse pair (REV_FLOWS): NewReno forward and reverse, 20 Mbit/s, 40 ms, a
/// BDP (67-packet) drop-tail buffer, window 4-10 s, starts drawn in [0, 0.5] s; `receiver` the
/// transport's receiver profile.
fn reverse_pair(seed: u64, receiver: &str) -> RunSpec {
    let link = r#"{"rate_bps": 2e7, "delay": 0.0, "buffer_pkts": 67, "buffer_bytes": null,
        "queue": "droptail", "queue_params": {}, "loss": 0.0, "loss_schedule": [],
        "loss_data_only": true}"#;
    let flow = |g: u32, path: &str, ack: &str| {
        format!(
            r#"{{"group": {g}, "cc": "newreno", "params": {{}}, "path": {path}, "ack_path": {ack},
            "extra_delay_fwd": 0.02, "extra_delay_rev": 0.02, "rtt": 0.04, "start": [0.0, 0.5],
            "stop": null, "size": null, "transport": {{"mss": 1448, "packet_size": 1500,
            "initial_cwnd": 10.0, "delayed_ack": 1, "delack_timeout": 0.2, "min_rto": 0.2,
            "sack": true, "ecn": false, "receiver": "{receiver}"}}}}"#
        )
    };
    let json = format!(
        r#"{{"name": "rev", "seed": {seed}, "duration": 10.0, "sample_interval": 0.1,
        "measure": [4.0, 10.0], "links": [{link}, {link}],
        "flows": [{}, {}], "traffic": [], "trace_packets": false}}"#,
        flow(0, "[0]", "[1]"),
        flow(1, "[1]", "[0]")
    );
    serde_json::from_str(&json).expect("a well-formed spec")
}

/// The pair's per-flow means (bit/s) over seeds 1..=n, in the loop and in the simulator.
fn means(receiver: &str, n: u64) -> ([f64; 2], [f64; 2]) {
    let mut ideal = [0.0; 2];
    let mut sim = [0.0; 2];
    for seed in 1..=n {
        let spec = reverse_pair(seed, receiver);
        let g = run_ideal(&spec);
        let s = cclab_sim::run(&spec, None).expect("the simulator runs the spec");
        for i in 0..2 {
            ideal[i] += g[i] / n as f64;
            sim[i] += s.flows[i].goodput_bps / n as f64;
        }
        println!(
            "{receiver} seed {seed}: ideal hosts {:.2} / {:.2}, simulator {:.2} / {:.2} Mbit/s",
            g[0] / 1e6,
            g[1] / 1e6,
            s.flows[0].goodput_bps / 1e6,
            s.flows[1].goodput_bps / 1e6
        );
    }
    (ideal, sim)
}

/// The reverse pair with ideal hosts carries what the simulator carries. Measured over seeds 1-5
/// (deterministic: the same code gives the same numbers): per_packet 31.84 Mbit/s in all against the
/// simulator's 33.58 (-5.2 %), linux 33.74 against 34.01 (-0.8 %). The bound on the sum is the one-way
/// real-datapath tests' 10 %; by model the loop sits a few per cent below the simulator: its ACKs are
/// 76 bytes on the wire against the simulator's 52 (our header, UDP and IP; the simulator with 76-byte
/// ACKs gave 31.2 and 32.3) and its payload 1440 bytes against 1448. With the ACK's access delay before
/// the reverse link the loop's sum was 22-25 % below the simulator's (26.2 and 25.3 over 10 seeds).
#[test]
fn the_reverse_pair_with_ideal_hosts_carries_what_the_simulator_carries() {
    for receiver in ["per_packet", "linux"] {
        let (ideal, sim) = means(receiver, 5);
        let (a, b) = (ideal[0] + ideal[1], sim[0] + sim[1]);
        println!(
            "{receiver}: ideal hosts {:.2} Mbit/s in all, simulator {:.2}",
            a / 1e6,
            b / 1e6
        );
        assert!((a - b).abs() < 0.10 * b, "{receiver}: {ideal:?} vs {sim:?}");
        // Each flow's 5-seed mean within 15 %: the split's own spread (single seeds 15.4-18.1 Mbit/s
        // per flow in the loop, 14.1-18.6 in the simulator; measured: 2-12 % apart).
        for i in 0..2 {
            assert!(
                (ideal[i] - sim[i]).abs() < 0.15 * sim[i],
                "{receiver} flow {i}: {ideal:?} vs {sim:?}"
            );
        }
    }
}
