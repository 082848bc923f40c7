//! The endpoints against a local attacker (loopback mode's threat: any unprivileged user on the host can
//! send UDP to the flow's ports). One finite NewReno flow sender → receiver on 127.0.0.1, no relay,
//! while another socket sends well-formed segments of the flow — data at the top of the sequence
//! space and inside the window to the receiver, ACKs acknowledging everything to the sender. Runs
//! without root.

mod common;
use common::v4;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cclab_cc::time::NS_PER_MS;
use cclab_net::endpoint::{ReceiverSetup, SenderSetup};
use cclab_net::probe::FlowProbe;
use cclab_net::spec::FlowSpec;
use cclab_net::sys::Clock;
use cclab_net::wire::{Body, Repr};
use cclab_transport::{AckSegment, DataSegment};

const PKTS: u64 = 3000;
const PAYLOAD: u64 = 1440;

fn flow() -> FlowSpec {
    common::newreno_flow(PKTS)
}

#[test]
fn a_local_attacker_can_neither_stall_nor_redirect_a_flow() {
    let f = flow();
    let rs = UdpSocket::bind("127.0.0.1:0").unwrap();
    let ss = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (r_addr, s_addr) = (v4(&rs), v4(&ss));
    let mut rx = ReceiverSetup::from_socket(rs, &f, 7).unwrap();
    rx.expect_peer(s_addr);
    let tx = SenderSetup::from_socket(ss, &f, "newreno", SocketAddr::V4(r_addr), 7, 1).unwrap();
    let evil = UdpSocket::bind("127.0.0.1:0").unwrap();
    let clock = Clock::start();
    let stop = AtomicBool::new(false);
    let (probe_rx, probe_tx) = (FlowProbe::default(), FlowProbe::default());
    let mut sent_to_receiver = 0u64;
    std::thread::scope(|s| {
        let r = s.spawn(|| rx.run(&clock, &stop, &probe_rx));
        let t = s.spawn(|| tx.run(&clock, 0, 1500 * NS_PER_MS, &stop, &probe_tx));
        // While the flow runs: data of flow 7 to the receiver (seq 2^64 − 1, then in-window seqs, so
        // a receiver that took them would deliver forged bytes and ACK towards `evil`), and ACKs of
        // flow 7 acknowledging everything to the sender (its connected socket never sees them).
        for k in 0..200u64 {
            let seq = if k == 0 { u64::MAX } else { k };
            let d = Repr {
                flow_id: 7,
                body: Body::Data(DataSegment {
                    seq,
                    payload: PAYLOAD as u32,
                    ts: 1,
                    ..Default::default()
                }),
            };
            evil.send_to(&d.to_vec(), r_addr).unwrap();
            sent_to_receiver += 1;
            let a = Repr {
                flow_id: 7,
                body: Body::Ack(AckSegment {
                    cum_ack: u64::MAX,
                    ts_echo: k,
                    ..Default::default()
                }),
            };
            // Refused with ECONNREFUSED once the kernel has answered an earlier one with ICMP.
            let _ = evil.send_to(&a.to_vec(), s_addr);
            std::thread::sleep(Duration::from_micros(500));
        }
        t.join().unwrap().unwrap();
        stop.store(true, Ordering::Relaxed);
        r.join().unwrap().unwrap();
    });
    let delivered = probe_rx.delivered.load(Ordering::Relaxed);
    let (foreign_rx, foreign_tx) = (
        probe_rx.foreign.load(Ordering::Relaxed),
        probe_tx.foreign.load(Ordering::Relaxed),
    );
    eprintln!(
        "delivered {delivered} of {}, receiver foreign {foreign_rx} of {sent_to_receiver}, sender foreign {foreign_tx}, \
         malformed {}/{}, rejected data {} acks {}",
        PKTS * PAYLOAD,
        probe_rx.malformed.load(Ordering::Relaxed),
        probe_tx.malformed.load(Ordering::Relaxed),
        probe_rx.rejected_data.load(Ordering::Relaxed),
        probe_tx.rejected_acks.load(Ordering::Relaxed),
    );
    assert_eq!(delivered, PKTS * PAYLOAD, "every byte, no forged one");
    assert_eq!(
        foreign_rx, sent_to_receiver,
        "every datagram from `evil` refused"
    );
    assert_eq!(
        foreign_tx, 0,
        "the connected socket's kernel filter took them"
    );
    assert_eq!(probe_rx.malformed.load(Ordering::Relaxed), 0);
    assert_eq!(probe_tx.malformed.load(Ordering::Relaxed), 0);
    assert_eq!(probe_rx.rejected_data.load(Ordering::Relaxed), 0);
    assert_eq!(probe_tx.rejected_acks.load(Ordering::Relaxed), 0);
}
