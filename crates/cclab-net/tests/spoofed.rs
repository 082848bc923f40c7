//! The endpoints against an attacker that can forge its source address:
//! one finite NewReno flow sender → receiver on 127.0.0.1 (no relay), while a raw socket sends packets
//! that claim to come from the flow's own endpoints — in-window data segments "from the sender", and
//! an ICMP port unreachable "from the receiver's host" about the sender's datagrams. The endpoints'
//! source-address checks cannot refuse these: what stops them is the transport's data tag (forged
//! data) and the endpoint loop's tolerance of ECONNREFUSED (the ICMP message). Needs CAP_NET_RAW (root);
//! skips with the reason otherwise.

mod common;
use common::v4;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use cclab_cc::maxnet_wire::internet_checksum;
use cclab_cc::time::{NS_PER_MS, NS_PER_SEC};
use cclab_net::endpoint::{ReceiverSetup, SenderSetup};
use cclab_net::probe::FlowProbe;
use cclab_net::spec::FlowSpec;
use cclab_net::sys::Clock;
use cclab_net::wire::{Body, Repr};
use cclab_transport::DataSegment;

const PKTS: u64 = 3000;
const PAYLOAD: u64 = 1440;

fn flow() -> FlowSpec {
    common::newreno_flow(PKTS)
}

/// A raw IPv4 socket (IP_HDRINCL), or None without CAP_NET_RAW.
fn raw_socket() -> Option<OwnedFd> {
    // SAFETY: plain syscall; the fd is owned below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW) };
    if fd < 0 {
        eprintln!(
            "SKIPPED: no raw socket ({}): needs CAP_NET_RAW",
            std::io::Error::last_os_error()
        );
        return None;
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn raw_send(fd: &OwnedFd, pkt: &[u8], dst: Ipv4Addr) {
    // SAFETY: sockaddr_in is plain old data.
    let mut to: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    to.sin_family = libc::AF_INET as u16;
    to.sin_addr.s_addr = u32::from(dst).to_be();
    // SAFETY: the buffer and the address are valid for the lengths given.
    let n = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            pkt.as_ptr() as *const libc::c_void,
            pkt.len(),
            0,
            &to as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as u32,
        )
    };
    assert_eq!(n, pkt.len() as isize, "{}", std::io::Error::last_os_error());
}

/// An IPv4 header of `total` bytes carrying `proto`, with its checksum.
fn ipv4_header(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, total: usize) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    h[8] = 64;
    h[9] = proto;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = internet_checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

/// An ICMP error of `(type, code)` sent by `reporter` to `victim` about a UDP datagram `victim` →
/// `reporter`: e.g. (3, 3), port unreachable, what a host whose port is closed answers; forged.
fn icmp_error(kind: (u8, u8), victim: SocketAddrV4, reporter: SocketAddrV4) -> Vec<u8> {
    let mut inner = ipv4_header(*victim.ip(), *reporter.ip(), 17, 20 + 8 + 1500).to_vec();
    inner.extend_from_slice(&victim.port().to_be_bytes());
    inner.extend_from_slice(&reporter.port().to_be_bytes());
    inner.extend_from_slice(&(8u16 + 1500).to_be_bytes());
    inner.extend_from_slice(&[0, 0]);
    let mut icmp = vec![kind.0, kind.1, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(&inner);
    let c = internet_checksum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut pkt = ipv4_header(*reporter.ip(), *victim.ip(), 1, 20 + icmp.len()).to_vec();
    pkt.extend_from_slice(&icmp);
    pkt
}

/// A data segment of flow 7 claiming to come from `from` (the flow's sender), as an IPv4/UDP packet.
fn forged_data(from: SocketAddrV4, to: SocketAddrV4, seq: u64, payload: u32) -> Vec<u8> {
    let d = Repr {
        flow_id: 7,
        body: Body::Data(DataSegment {
            seq,
            payload,
            ts: 1,
            ..Default::default()
        }),
    };
    cclab_net::ip::build_udp(
        from.ip().octets(),
        to.ip().octets(),
        from.port(),
        to.port(),
        0,
        &d.to_vec(),
    )
}

struct Outcome {
    sender: std::io::Result<()>,
    delivered: u64,
    rejected_data: u64,
    rejected_acks: u64,
    icmp_errors: u64,
    owd_max_s: f64,
}

/// Runs the flow; `attack` is called with (raw socket, sender address, receiver address) once the
/// receiver is up and before the sender starts, then again `late_ms` after the sender started.
fn run(
    raw: &OwnedFd,
    early: impl Fn(&OwnedFd, SocketAddrV4, SocketAddrV4) + Sync,
    late_ms: u64,
    late: impl Fn(&OwnedFd, SocketAddrV4, SocketAddrV4) + Sync,
) -> Outcome {
    let f = flow();
    let rs = UdpSocket::bind("127.0.0.1:0").unwrap();
    let ss = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (r_addr, s_addr) = (v4(&rs), v4(&ss));
    let mut rx = ReceiverSetup::from_socket(rs, &f, 7).unwrap();
    rx.expect_peer(s_addr);
    let tx = SenderSetup::from_socket(ss, &f, "newreno", SocketAddr::V4(r_addr), 7, 1).unwrap();
    let clock = Clock::start();
    let stop = AtomicBool::new(false);
    // One-way delays are recorded over the whole run (the honest ones are µs on loopback).
    let probe_rx = FlowProbe {
        measure: [0, 60 * NS_PER_SEC],
        ..FlowProbe::default()
    };
    let probe_tx = FlowProbe::default();
    let start = 100 * NS_PER_MS;
    let sender = std::thread::scope(|s| {
        let r = s.spawn(|| rx.run(&clock, &stop, &probe_rx));
        early(raw, s_addr, r_addr);
        // The sender stops sending new data at 1.5 s and returns once all is acknowledged (the
        // transfer itself takes tens of ms on loopback).
        let t = s.spawn(|| tx.run(&clock, start, 1500 * NS_PER_MS, &stop, &probe_tx));
        cclab_net::sys::sleep_until(&clock, start + late_ms * NS_PER_MS, &stop);
        late(raw, s_addr, r_addr);
        let res = t.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        r.join().unwrap().unwrap();
        res
    });
    let owd_max_s = probe_rx
        .window
        .lock()
        .unwrap()
        .receiver
        .as_ref()
        .and_then(|w| w.owd.percentile_s(100))
        .unwrap_or(0.0);
    let o = Outcome {
        sender,
        delivered: probe_rx.delivered.load(Ordering::Relaxed),
        rejected_data: probe_rx.rejected_data.load(Ordering::Relaxed),
        rejected_acks: probe_tx.rejected_acks.load(Ordering::Relaxed),
        icmp_errors: probe_tx.icmp_errors.load(Ordering::Relaxed),
        owd_max_s,
    };
    eprintln!(
        "sender {:?}, delivered {} of {}, rejected data {} acks {}, ICMP errors {}, max one-way delay {:.6} s",
        o.sender,
        o.delivered,
        PKTS * PAYLOAD,
        o.rejected_data,
        o.rejected_acks,
        o.icmp_errors,
        o.owd_max_s
    );
    o
}

/// 1 200 forged data segments (the red team's count) inside the receive window, ahead of and among
/// the honest ones, with a short payload and a timestamp of 1 ns. Before the data tag the receiver took
/// them: it delivered forged bytes in place of honest ones, its ACKs acknowledged packets the sender
/// had not sent (so the sender refused honest ACKs in part, `rejected_acks`), and their timestamps
/// entered the one-way-delay statistics as delays of the whole run time.
#[test]
fn forged_in_window_data_from_the_senders_address_changes_nothing() {
    let Some(raw) = raw_socket() else { return };
    let forge = |raw: &OwnedFd, s: SocketAddrV4, r: SocketAddrV4| {
        for k in 0..600u64 {
            raw_send(raw, &forged_data(s, r, 2 * k + 1, 1000), *r.ip());
        }
    };
    let o = run(&raw, forge, 5, forge);
    o.sender.expect("the sender completes");
    assert_eq!(
        o.delivered,
        PKTS * PAYLOAD,
        "every honest byte, no forged one"
    );
    assert_eq!(o.rejected_data, 1200, "every forged segment refused");
    assert_eq!(o.rejected_acks, 0, "no honest ACK refused");
    // Honest one-way delays on loopback are µs to a few ms (a descheduled thread); a forged timestamp
    // of 1 ns would read as the whole run time (≥ 0.1 s).
    assert!(o.owd_max_s < 0.05, "max one-way delay {} s", o.owd_max_s);
}

/// One forged ICMP error about the sender's datagrams, while the flow runs, for each kind Linux
/// reports on a connected UDP socket (`__udp4_lib_err`'s "hard" errors): port unreachable
/// (ECONNREFUSED), protocol unreachable (ENOPROTOOPT), network unknown (ENETUNREACH), host prohibited
/// (EHOSTUNREACH), parameter problem (EPROTO). Before the fix the sender's next receive returned the
/// error and ended the sender thread.
#[test]
fn a_spoofed_icmp_error_is_counted_and_survived() {
    let Some(raw) = raw_socket() else { return };
    for kind in [(3u8, 3u8), (3, 2), (3, 6), (3, 13), (12, 0)] {
        let icmp = |raw: &OwnedFd, s: SocketAddrV4, r: SocketAddrV4| {
            raw_send(raw, &icmp_error(kind, s, r), *s.ip());
        };
        let o = run(&raw, |_, _, _| {}, 5, icmp);
        eprintln!("ICMP {kind:?}: sender {:?}", o.sender);
        o.sender
            .expect("the sender thread survives the ICMP message");
        assert_eq!(o.delivered, PKTS * PAYLOAD);
        assert_eq!(
            o.icmp_errors, 1,
            "ICMP {kind:?}: the one forged report, counted"
        );
        assert_eq!(o.rejected_acks, 0);
    }
}
