//! The emulator alone between two namespaces, measured with plain UDP sockets (acceptance bounds,
//! docs/real-datapath.md: 50 Mbit/s and 40 ms RTT → delivery rate within 1 %, idle RTT within 0.5 ms; 100 Mbit/s → median
//! packet spacing within 5 µs of 120 µs). Needs root and /dev/net/tun; skips with the reason otherwise.

mod common;

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use cclab_cc::time::{tx_time, NS_PER_MS};
use cclab_net::emulator::{self, Dir, Emulator, LinkConfig};
use cclab_net::hosts::Dumbbell;
use cclab_net::sys::{self, Clock};

fn skip() -> bool {
    if let Some(why) = sys::unavailable_reason() {
        eprintln!("SKIPPED: {why}");
        return true;
    }
    false
}

fn bind_in(h: &cclab_net::hosts::Host, port: u16) -> UdpSocket {
    h.ns.run_in(|| UdpSocket::bind((h.addr, port)))
        .unwrap()
        .unwrap()
}

fn realtime_ns() -> u64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    d.as_nanos() as u64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One round of 60 echo probes through the emulator: (RTT samples in ms, forward queue drops, the
/// emulator's write lateness p99 in µs).
fn echo_rtts(rate: f64) -> (Vec<f64>, u64, f64) {
    let hosts = Dumbbell::create().unwrap();
    let emu = Emulator::new(
        LinkConfig::droptail(rate, 20 * NS_PER_MS, 1000),
        LinkConfig::droptail(rate, 20 * NS_PER_MS, 1000),
        1,
    )
    .unwrap();
    let clock = Clock::start();
    let run = emulator::spawn(emu, hosts.tuns(), clock, None);
    let echo = bind_in(&hosts.b, 9000);
    let client = bind_in(&hosts.a, 9001);
    echo.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    client
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let echo_thread = std::thread::spawn(move || {
        let mut b = [0u8; 2048];
        while let Ok((n, from)) = echo.recv_from(&mut b) {
            echo.send_to(&b[..n], from).unwrap();
        }
    });
    // The reply's arrival is the kernel's receive timestamp, so the client's own wake-up is not counted.
    sys::setsockopt_int(
        client.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPNS,
        1,
    )
    .unwrap();
    let mut rtts = Vec::new();
    let mut b = [0u8; 2048];
    for i in 0..60u32 {
        let t0 = realtime_ns();
        client.send_to(&i.to_be_bytes(), "10.77.0.2:9000").unwrap();
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline {
            let mut fds = [sys::pollfd(client.as_raw_fd(), libc::POLLIN)];
            sys::ppoll(&mut fds, Some(10 * NS_PER_MS)).unwrap();
            if let Some(m) = sys::recv_meta(client.as_raw_fd(), &mut b).unwrap() {
                if m.len == 4 && b[..4] == i.to_be_bytes() {
                    rtts.push((m.kernel_ts.unwrap() - t0) as f64 * 1e-6);
                }
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let fin = run.stop().unwrap();
    echo_thread.join().unwrap();
    eprintln!(
        "emulator write lateness mean {:.1} µs p99 {} µs",
        fin.stats.late_mean_ns / 1e3,
        fin.stats.late_p99_ns / 1000
    );
    let drops = fin.emulator.counters(Dir::Fwd).queue_drops;
    (rtts, drops, fin.stats.late_p99_ns as f64 / 1e3)
}

#[test]
fn idle_rtt_matches_configured_delay() {
    if skip() {
        return;
    }
    let rate = 50e6;
    // 4-byte payload → 32-byte IP packets: 5.1 µs per transmission each way
    let expected = 40.0 + 2.0 * tx_time(32, rate) as f64 * 1e-6;
    // Repeated while the machine disturbs it (common::quiet_attempt): on a fresh clone's `make test`
    // beside other jobs (load ~10 on 2 cores) one round read a median of 44.10 ms with the emulator's
    // write lateness at mean 946 µs, p99 1 001 µs: the machine's delay, not the emulator's.
    let Some((mut rtts, drops)) = common::quiet_attempt(|| {
        let (rtts, drops, late) = echo_rtts(rate);
        ((rtts, drops), vec![("emulator write", late)])
    }) else {
        return;
    };
    let med = median(&mut rtts);
    eprintln!(
        "idle RTT: n={} median {med:.3} ms (expected {expected:.3})",
        rtts.len()
    );
    assert!(
        rtts.len() >= 55,
        "lost probes on an idle link: {}",
        rtts.len()
    );
    // The acceptance bound (docs/real-datapath.md, "Acceptance bounds"). The user-space wake-ups of the echo server and the client add to
    // the emulated 40 ms; they are tens of µs unless the machine is overloaded.
    assert!(
        (med - expected).abs() < 0.5,
        "median RTT {med} vs {expected}"
    );
    assert_eq!(drops, 0);
}

/// [`blast`] on a machine that left it undisturbed (common::quiet_attempt: the emulator's write lateness
/// and CPU pressure decide); None when every attempt was disturbed (the test then checks nothing and
/// says so: under another process's load the 1 Gbit/s case delivered 20 407 of 83 000 packets with a
/// write lateness p99 of 1 ms).
fn quiet_blast(
    rate: f64,
    offered: f64,
    ip_bytes: usize,
    dur: Duration,
    buffer: u32,
) -> Option<(Vec<u64>, emulator::Finished)> {
    common::quiet_attempt(|| {
        let (ts, fin) = blast(rate, offered, ip_bytes, dur, buffer);
        let late = fin.stats.late_p99_ns as f64 / 1e3;
        ((ts, fin), vec![("emulator write", late)])
    })
}

/// Sends `bytes`-sized IP packets from A to B for `dur` at `offered` bit/s; returns the kernel receive
/// timestamps at B.
fn blast(
    rate: f64,
    offered: f64,
    ip_bytes: usize,
    dur: Duration,
    buffer: u32,
) -> (Vec<u64>, emulator::Finished) {
    // A run at this rate would take the CPU layout (sys::CpuLayout): so does this test.
    let layout = sys::CpuLayout::for_rate(rate);
    let hosts = Dumbbell::create_with(layout.map(|l| l.others)).unwrap();
    let emu = Emulator::new(
        LinkConfig::droptail(rate, 5 * NS_PER_MS, buffer),
        LinkConfig::droptail(rate, 5 * NS_PER_MS, buffer),
        1,
    )
    .unwrap();
    let at = emulator::Placement {
        window: None,
        cpu: layout.map(|l| l.emulator),
    };
    let run = emulator::spawn_on(
        emu,
        emulator::Tuns(hosts.tuns()),
        Clock::start(),
        None,
        at,
        "cclab-emulator",
    );
    let rx = bind_in(&hosts.b, 9100);
    sys::setsockopt_int(rx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).unwrap();
    sys::setsockopt_int(
        rx.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_RCVBUFFORCE,
        8 << 20,
    )
    .unwrap();
    let tx = bind_in(&hosts.a, 9101);
    let payload = vec![0u8; ip_bytes - 28];
    let rx_fd = rx.as_raw_fd();
    // The blasting threads stay off the emulator's CPU, as a run's endpoints do (sys::CpuLayout).
    let _placed = sys::OffEmulatorCpu::enter(layout);
    let rx_thread = std::thread::spawn(move || {
        let _keep = rx;
        let mut ts = Vec::new();
        let mut b = [0u8; 2048];
        let mut idle_since = Instant::now();
        loop {
            match sys::recv_meta(rx_fd, &mut b).unwrap() {
                Some(m) => {
                    ts.push(m.kernel_ts.expect("SO_TIMESTAMPNS"));
                    idle_since = Instant::now();
                }
                None => {
                    if idle_since.elapsed() > Duration::from_millis(300) {
                        break;
                    }
                    let mut fds = [sys::pollfd(rx_fd, libc::POLLIN)];
                    sys::ppoll(&mut fds, Some(10 * NS_PER_MS)).unwrap();
                }
            }
        }
        ts
    });
    sys::set_timer_slack_1ns();
    let gap = Duration::from_secs_f64(ip_bytes as f64 * 8.0 / offered);
    let start = Instant::now();
    let mut k = 0u32;
    while start.elapsed() < dur {
        let due = start + gap * k;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        // pacing by absolute due times: a late wake-up sends a short burst, the average stays exact
        let _ = tx.send_to(&payload, "10.77.0.2:9100");
        k += 1;
    }
    let ts = rx_thread.join().unwrap();
    (ts, run.stop().unwrap())
}

#[test]
fn delivery_rate_is_the_link_rate() {
    if skip() {
        return;
    }
    let rate = 50e6;
    // offered 10 % above the link rate so the queue never drains; 1500-byte IP packets
    let Some((ts, fin)) = quiet_blast(rate, 55e6, 1500, Duration::from_millis(2000), 200) else {
        return;
    };
    // Skip the first 0.2 s (the queue fills), measure between later arrivals.
    let t0 = ts[0];
    let w: Vec<u64> = ts
        .iter()
        .copied()
        .filter(|t| *t > t0 + 200 * NS_PER_MS)
        .collect();
    let span = (w[w.len() - 1] - w[0]) as f64 * 1e-9;
    let measured = (w.len() - 1) as f64 * 1500.0 * 8.0 / span;
    let c = fin.emulator.counters(Dir::Fwd);
    eprintln!(
        "delivery rate {:.3} Mbit/s over {span:.3} s ({} pkts); drops {}, tun write drops {}, late mean {:.1} µs p99 {} µs",
        measured / 1e6,
        w.len(),
        c.queue_drops,
        fin.stats.tun_write_drops,
        fin.stats.late_mean_ns / 1e3,
        fin.stats.late_p99_ns / 1000
    );
    assert!(c.queue_drops > 0, "the link was not saturated");
    // 1 %: the acceptance bound; the virtual clock makes the true rate exact, so only the timestamps'
    // jitter at the two ends of the window (≤ 1 ms over 1.8 s) enters.
    assert!(
        (measured / rate - 1.0).abs() < 0.01,
        "delivery rate {measured}"
    );
}

#[test]
fn packet_spacing_at_100mbit() {
    if skip() {
        return;
    }
    let Some((ts, fin)) = quiet_blast(100e6, 110e6, 1500, Duration::from_millis(1000), 300) else {
        return;
    };
    let mut gaps: Vec<f64> = ts
        .windows(2)
        .skip(100)
        .map(|w| (w[1] - w[0]) as f64 * 1e-3)
        .collect();
    let n = gaps.len();
    let med = median(&mut gaps);
    let p10 = gaps[n / 10];
    let p90 = gaps[n * 9 / 10];
    eprintln!("spacing at 100 Mbit/s: median {med:.2} µs, p10 {p10:.2}, p90 {p90:.2} ({n} gaps); late p99 {} µs", fin.stats.late_p99_ns / 1000);
    // acceptance bound: within 5 µs of 1500 B × 8 / 100 Mbit/s = 120 µs
    assert!((med - 120.0).abs() < 5.0, "median spacing {med} µs");
}

/// Spacing at the datapath's limit: 1500-byte packets offered at 1.1 Gbit/s into a 1 Gbit/s link, the
/// receiver's kernel timestamps (taken when the emulator's write hands the packet to the host, before
/// RPS queues it) against the configured 12 µs. Measured (4 runs): median 11.99–12.01 µs, |gap − 12 µs|
/// p99 10.1–20.3 µs, write lateness p99 22–43 µs. Bounds: median within 1 µs, p99 error within 100 µs
/// (the datapath's stated accuracy, docs/real-datapath.md; a stall of the machine of 100 µs or more in
/// 1 s of 83 000 gaps shows in the p99 only if it recurs).
#[test]
fn packet_spacing_at_1gbit() {
    if skip() {
        return;
    }
    let Some((ts, fin)) = quiet_blast(1e9, 1.1e9, 1500, Duration::from_millis(1000), 2000) else {
        return;
    };
    let mut gaps: Vec<f64> = ts
        .windows(2)
        .skip(2000)
        .map(|w| (w[1] - w[0]) as f64 * 1e-3)
        .collect();
    let n = gaps.len();
    let med = median(&mut gaps);
    let mut err: Vec<f64> = gaps.iter().map(|g| (g - 12.0).abs()).collect();
    err.sort_by(f64::total_cmp);
    let p99 = err[n * 99 / 100];
    eprintln!(
        "spacing at 1 Gbit/s: median {med:.2} µs, |gap - 12 µs| p99 {p99:.1} µs ({n} gaps); \
         write lateness p99 {} µs, emulator cpu {:?}",
        fin.stats.late_p99_ns / 1000,
        fin.stats.cpu
    );
    assert!(n > 60_000, "only {n} packets arrived");
    assert!((med - 12.0).abs() < 1.0, "median spacing {med} µs");
    assert!(p99 < 100.0, "spacing error p99 {p99} µs");
}
