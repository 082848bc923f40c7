//! Our endpoints' batching on the namespace dumbbell (`crate::batch`): a paced sender's bursts go out
//! as UDP GSO datagrams, and the emulator still reads one wire packet per TUN read (the TUN devices
//! have no offloads, so the kernel cuts every GSO datagram into packets before host A's device). Also
//! the CPU cost per data packet with and without batching (`--ignored`, a measurement, not a check).
//! Needs root and /dev/net/tun.

use std::net::{SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};

use cclab_cc::time::{Nanos, NS_PER_MS};
use cclab_net::emulator::{self, Dir, Emulator, LinkConfig};
use cclab_net::emulator::{Placement, Tuns};
use cclab_net::endpoint::{
    run_receiver, run_sender, ReceiverMachine, ReceiverSetup, SenderMachine, SenderSetup,
};
use cclab_net::hosts::Dumbbell;
use cclab_net::probe::FlowProbe;
use cclab_net::spec::FlowSpec;
use cclab_net::sys::{Clock, CpuLayout, OffEmulatorCpu};
use cclab_transport::{AckSegment, DataSegment};

/// A constant-rate paced sender that tells the loop its departures (as the transport's paced sender
/// does), so the loop batches them.
struct Paced {
    interval: Nanos,
    next: Nanos,
    seq: u64,
}

impl SenderMachine for Paced {
    fn poll_transmit(&mut self, now: Nanos) -> Option<DataSegment> {
        if now < self.next {
            return None;
        }
        self.next += self.interval;
        self.seq += 1;
        Some(DataSegment {
            seq: self.seq,
            payload: 1440,
            ts: now,
            ..Default::default()
        })
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        Some(self.next)
    }
    fn next_departure(&self) -> Option<(Nanos, Nanos)> {
        Some((self.next, self.interval))
    }
    fn handle_timeout(&mut self, _now: Nanos) {}
    fn handle_ack(&mut self, _now: Nanos, _ack: &AckSegment) {}
    fn publish(&self, _p: &FlowProbe) {}
}

/// Counts data and ACKs every 4th packet (our receiver ACKs about one in 2-4 at these rates).
#[derive(Default)]
struct Counting {
    pkts: u64,
    ack: Option<AckSegment>,
}

impl ReceiverMachine for Counting {
    fn handle_data(&mut self, now: Nanos, seg: &DataSegment) {
        self.pkts += 1;
        if self.pkts.is_multiple_of(4) {
            self.ack = Some(AckSegment {
                cum_ack: seg.seq + 1,
                ts_echo: seg.ts,
                rx_time: now,
                acked_seq: seg.seq,
                ..Default::default()
            });
        }
    }
    fn poll_ack(&mut self, _now: Nanos) -> Option<AckSegment> {
        self.ack.take()
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        None
    }
    fn handle_timeout(&mut self, _now: Nanos) {}
    fn delivered_bytes(&self) -> u64 {
        self.pkts * 1440
    }
}

fn flow() -> FlowSpec {
    serde_json::from_str(
        r#"{"group":0,"cc":"newreno","path":[0],"ack_path":[1],"extra_delay_fwd":0,"extra_delay_rev":0,"rtt":0.01,
        "start":0.0,"stop":null,"size":null,"transport":{"mss":1448,"packet_size":1500,"initial_cwnd":10,
        "delayed_ack":1,"delack_timeout":0.2,"min_rto":0.2,"sack":true}}"#,
    )
    .unwrap()
}

/// This thread's CPU time (user + system), seconds.
fn thread_cpu() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut r) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(r.ru_utime) + t(r.ru_stime)
}

struct Outcome {
    sent: u64,
    received: u64,
    arrivals: u64,
    emulator_malformed: u64,
    gso: [u64; 3],
    tx_cpu: f64,
    rx_cpu: f64,
}

/// One flow paced at `rate_bps` for `dur` over a 1 Gbit/s, 5 ms link, with the CPU layout of a run
/// at that rate (`sys::CpuLayout`: the emulator alone on the first CPU, the endpoints and the hosts'
/// stacks by RPS on the others).
fn paced_run(rate_bps: f64, dur: Nanos) -> Outcome {
    let layout = CpuLayout::for_rate(rate_bps);
    let _placed = OffEmulatorCpu::enter(layout);
    let hosts = Dumbbell::create_with(layout.map(|l| l.others)).unwrap();
    let emu = Emulator::new(
        LinkConfig::droptail(1e9, 5 * NS_PER_MS, 5000),
        LinkConfig::droptail(1e9, 5 * NS_PER_MS, 5000),
        1,
    )
    .unwrap();
    let clock = Clock::start();
    let at = Placement {
        cpu: layout.map(|l| l.emulator),
        ..Default::default()
    };
    let run = emulator::spawn_on(emu, Tuns(hosts.tuns()), clock, None, at, "cclab-emulator");
    let f = flow();
    let port = 40000;
    let dst = SocketAddr::V4(SocketAddrV4::new(hosts.b.addr, port));
    let rx = ReceiverSetup::bind(&hosts.b, &f, port, 3).unwrap();
    let tx = SenderSetup::bind(&hosts.a, &f, "newreno", dst, 3, 1).unwrap();
    let interval = (1500.0 * 8.0 * 1e9 / rate_bps) as Nanos;
    let stop = AtomicBool::new(false);
    let (probe_rx, probe_tx) = (FlowProbe::default(), FlowProbe::default());
    let ((sender, tx_cpu), (receiver, rx_cpu)) = std::thread::scope(|s| {
        let r = s.spawn(|| {
            let mut m = Counting::default();
            let peer = match tx.sock.local_addr().unwrap() {
                SocketAddr::V4(a) => a,
                a => panic!("{a}"),
            };
            let c0 = thread_cpu();
            run_receiver(&mut m, &rx.sock, 3, Some(peer), &clock, &stop, &probe_rx).unwrap();
            (m, thread_cpu() - c0)
        });
        let t = s.spawn(|| {
            let mut m = Paced {
                interval,
                next: clock.now() + 10 * NS_PER_MS,
                seq: 0,
            };
            let c0 = thread_cpu();
            let end = clock.now() + dur;
            run_sender(&mut m, &tx.sock, 3, &clock, end, &stop, &probe_tx).unwrap();
            (m, thread_cpu() - c0)
        });
        let t = t.join().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50)); // the last packets' flight time
        stop.store(true, Ordering::Relaxed);
        (t, r.join().unwrap())
    });
    let fin = run.stop().unwrap();
    let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    Outcome {
        sent: sender.seq,
        received: receiver.pkts,
        arrivals: fin.emulator.counters(Dir::Fwd).arrivals,
        emulator_malformed: fin.emulator.ingress.malformed,
        gso: [
            g(&probe_tx.gso_sends),
            g(&probe_tx.gso_segments),
            g(&probe_tx.gso_refused),
        ],
        tx_cpu,
        rx_cpu,
    }
}

/// At 600 Mbit/s (a packet every 20 µs) the sender wakes for 3 packets at a time and sends them as
/// one GSO datagram; the emulator reads each as its own packet (a GSO datagram passed whole would be
/// one arrival for several packets, and would fail the codec check: `ingress.malformed`). The test
/// machine catches up without limit, so a late wake-up makes a larger batch (up to 64).
#[test]
fn paced_bursts_go_as_gso_and_arrive_as_packets() {
    if let Some(why) = cclab_net::sys::unavailable_reason() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let o = paced_run(600e6, 1000 * NS_PER_MS);
    eprintln!(
        "sent {} received {} emulator arrivals {} malformed {} gso sends/segments/refused {:?}",
        o.sent, o.received, o.arrivals, o.emulator_malformed, o.gso
    );
    assert_eq!(o.gso[2], 0, "the kernel refused GSO on the TUN route");
    // Most packets go in batches: a late wake-up finds more due, one on time (or an early ACK) fewer.
    // A quarter is far below the 3 per wake-up of an undisturbed run and far above the 0 without GSO.
    assert!(o.gso[1] * 4 > o.sent, "{:?} of {}", o.gso, o.sent);
    assert_eq!(o.emulator_malformed, 0);
    // Each packet is one arrival at the link. Had the GSO datagrams reached the emulator whole, it
    // would have counted at most `sent - (segments - sends)` arrivals. Not asserted equal to `sent`:
    // on a loaded machine host A's TUN queue may drop a burst (a late sender's catch-up).
    assert!(
        o.arrivals > o.sent - (o.gso[1] - o.gso[0]),
        "{} arrivals for {} packets in {} GSO sends",
        o.arrivals,
        o.sent,
        o.gso[0]
    );
    assert!(o.arrivals <= o.sent && o.received <= o.arrivals);
}

/// CPU per data packet of the sender and receiver threads, batching on and off, at fixed rates.
/// `cargo test --release -p cclab-net --test batch_real -- --ignored --nocapture`. It sets the
/// tuning variables, so it runs alone (`--test-threads=1` or by name).
#[test]
#[ignore]
fn cpu_per_packet_with_and_without_batching() {
    if let Some(why) = cclab_net::sys::unavailable_reason() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    for rate in [300e6, 600e6, 950e6] {
        for round in 0..rounds {
            for on in ["1", "0"] {
                std::env::set_var("CCLAB_NET_GSO", on);
                std::env::set_var("CCLAB_NET_RECVMMSG", on);
                let o = paced_run(rate, 3000 * NS_PER_MS);
                eprintln!(
                    "rate {:.0} Mbit/s round {round} batching {on}: sent {} arrived {} received {} tx {:.2} µs/pkt rx {:.2} µs/pkt gso {:?} load {:.1}",
                    rate / 1e6,
                    o.sent,
                    o.arrivals,
                    o.received,
                    o.tx_cpu / o.sent as f64 * 1e6,
                    o.rx_cpu / o.received.max(1) as f64 * 1e6,
                    o.gso,
                    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split(' ').next().unwrap_or("")
                        .parse::<f64>().unwrap_or(f64::NAN)
                );
            }
        }
    }
    std::env::remove_var("CCLAB_NET_GSO");
    std::env::remove_var("CCLAB_NET_RECVMMSG");
}
