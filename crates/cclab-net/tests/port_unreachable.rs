//! An ICMP port unreachable at the sender: the sender's socket is connected, so
//! the kernel reports an ICMP port unreachable for it as ECONNREFUSED on the socket's next send *or
//! receive*. A spoofed ICMP message (or a receiver that is not up yet) must cost the flow at most the
//! packets the report stands for, never the sender thread. Runs without root: the sender first sends to
//! a closed port on 127.0.0.1, so the kernel itself answers every packet with a port unreachable, and
//! the receiver comes up on that port 300 ms later.

mod common;
use common::v4;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cclab_cc::time::NS_PER_SEC;
use cclab_net::endpoint::{ReceiverSetup, SenderSetup};
use cclab_net::probe::FlowProbe;
use cclab_net::spec::FlowSpec;
use cclab_net::sys::Clock;

const PKTS: u64 = 2000;
const PAYLOAD: u64 = 1440;

fn flow() -> FlowSpec {
    common::newreno_flow(PKTS)
}

#[test]
fn port_unreachable_on_the_receive_path_is_counted_not_fatal() {
    let f = flow();
    // A port that was free a moment ago and is closed now: nothing answers on it until we bind it again.
    let r_addr = v4(&UdpSocket::bind("127.0.0.1:0").unwrap());
    let ss = UdpSocket::bind("127.0.0.1:0").unwrap();
    let s_addr = v4(&ss);
    let tx = SenderSetup::from_socket(ss, &f, "newreno", SocketAddr::V4(r_addr), 7, 1).unwrap();
    let clock = Clock::start();
    let stop = AtomicBool::new(false);
    let (probe_rx, probe_tx) = (FlowProbe::default(), FlowProbe::default());
    let sender = std::thread::scope(|s| {
        // The sender returns once it has stopped sending (at 6 s) and everything is acknowledged: the
        // transfer is done by then (the second retransmission, at 3 s, finds the receiver up).
        let t = s.spawn(|| tx.run(&clock, 0, 6 * NS_PER_SEC, &stop, &probe_tx));
        // The initial window and the first RTO's retransmission go to the closed port meanwhile (the
        // initial RTO is 1 s, so wait past it: the retransmission is a single packet, whose report is
        // read by the loop's next receive, not by another send).
        std::thread::sleep(Duration::from_millis(1300));
        let rs = UdpSocket::bind(r_addr).expect("the port freed a moment ago is still free");
        let mut rx = ReceiverSetup::from_socket(rs, &f, 7).unwrap();
        rx.expect_peer(s_addr);
        let r = s.spawn(|| rx.run(&clock, &stop, &probe_rx));
        let res = t.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        r.join().unwrap().unwrap();
        res
    });
    let delivered = probe_rx.delivered.load(Ordering::Relaxed);
    let unreachable = probe_tx.icmp_errors.load(Ordering::Relaxed);
    eprintln!(
        "sender {sender:?}, delivered {delivered} of {}, port unreachable reports {unreachable}, rejected acks {}",
        PKTS * PAYLOAD,
        probe_tx.rejected_acks.load(Ordering::Relaxed)
    );
    sender.expect("the sender thread survives ECONNREFUSED");
    assert_eq!(delivered, PKTS * PAYLOAD, "every byte, once the port is up");
    // At least the report of the lone RTO retransmission, read by a receive; at most one per packet
    // sent before the receiver came up (11: the initial window and one retransmission).
    assert!(
        (1..=11).contains(&unreachable),
        "{unreachable} port-unreachable reports"
    );
    assert_eq!(probe_tx.rejected_acks.load(Ordering::Relaxed), 0);
}
