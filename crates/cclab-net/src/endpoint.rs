//! Our UDP transport endpoint: event loops that drive a sans-IO sender or receiver with the OS monotonic
//! clock and non-blocking UDP sockets, encoding segments with [`crate::wire`].
//!
//! The loops are written against two small traits, [`SenderMachine`] and [`ReceiverMachine`], which
//! name exactly the driver contract of `cclab-transport` (`handle_*` in, `poll_*` out, see its lib.rs).
//! Pacing comes from the machine's `poll_timeout`: the loop sleeps in `ppoll` on the socket and a
//! timerfd armed for that absolute time (timer slack 1 ns), so a paced sender wakes within a few µs.
//!
//! The transport's own types implement the traits (`cclab_transport::{Sender, Receiver}`); test
//! machines implement them too (see `tests/endpoint_real.rs`).

use std::io;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use cclab_cc::cc::Recovery;
use cclab_cc::registry::{build_sender, flow_seed, BuiltSender, SenderEnv};
use cclab_cc::time::{Nanos, NS_PER_MS};
use cclab_transport::{AckSegment, CatchUp, Config, DataSegment, Receiver, Sender};

use crate::batch::{GsoStats, RxBatch, TxBatch, GSO_MAX_SEGMENTS};
use crate::disturbance::StallLog;
use crate::hosts::Host;
use crate::probe::FlowProbe;
use crate::spec::FlowSpec;
use crate::sys::{self, Clock, TimerFd};
use crate::wire::{Body, Repr};

/// Our header on the wire: IPv4 (20) + UDP (8) + cclab data header (32). A flow's payload per packet is
/// `packet_size − WIRE_OVERHEAD`, so its IP packets are exactly `packet_size` bytes, as the simulator
/// counts them.
pub const WIRE_OVERHEAD: u32 = 20 + 8 + crate::wire::DATA_HEADER_LEN as u32;

/// The sender side of the transport's driver contract.
pub trait SenderMachine {
    fn poll_transmit(&mut self, now: Nanos) -> Option<DataSegment>;
    fn poll_timeout(&self) -> Option<Nanos>;
    /// When pacing next lets a packet go and the pacing gap of a full packet
    /// ([`Sender::next_departure`]); None: not paced (nothing is batched by time then).
    fn next_departure(&self) -> Option<(Nanos, Nanos)> {
        None
    }
    fn handle_timeout(&mut self, now: Nanos);
    fn handle_ack(&mut self, now: Nanos, ack: &AckSegment);
    /// Stop sending new data (the flow's `stop` time); outstanding data is still recovered.
    fn stop_sending(&mut self) {}
    /// After `stop_sending`: nothing is left to recover, the loop may return.
    fn is_finished(&self) -> bool {
        true
    }
    /// Publishes cwnd, RTT and counters for the sampler.
    fn publish(&self, probe: &FlowProbe);
    /// Publishes the algorithm's own state (`CongestionControl::state`: BBR's model, ...) for the
    /// sampler; called every [`STATE_EVERY`], as it takes a lock.
    fn publish_state(&self, _probe: &FlowProbe) {}
}

/// How often a sender publishes its algorithm's state: 10 per default sample interval (100 ms), so the
/// time series' state columns are at most 10 ms old, at a lock per 10 ms.
const STATE_EVERY: Nanos = 10 * NS_PER_MS;

impl SenderMachine for Sender {
    fn poll_transmit(&mut self, now: Nanos) -> Option<DataSegment> {
        Sender::poll_transmit(self, now)
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        Sender::poll_timeout(self)
    }
    fn next_departure(&self) -> Option<(Nanos, Nanos)> {
        Sender::next_departure(self)
    }
    fn handle_timeout(&mut self, now: Nanos) {
        Sender::handle_timeout(self, now)
    }
    fn handle_ack(&mut self, now: Nanos, ack: &AckSegment) {
        Sender::handle_ack(self, now, ack)
    }
    fn stop_sending(&mut self) {
        self.stop()
    }
    fn is_finished(&self) -> bool {
        Sender::is_finished(self)
    }
    fn publish(&self, p: &FlowProbe) {
        let st = self.stats();
        p.cwnd_bits
            .store(self.cc().cwnd().to_bits(), Ordering::Relaxed);
        p.srtt_ns.store(self.srtt(), Ordering::Relaxed);
        p.min_rtt_ns.store(self.min_rtt(), Ordering::Relaxed);
        p.retransmits.store(st.retransmits, Ordering::Relaxed);
        p.timeouts.store(st.timeouts, Ordering::Relaxed);
        p.fast_recoveries
            .store(st.fast_recoveries, Ordering::Relaxed);
        p.sent_pkts.store(st.sent_pkts, Ordering::Relaxed);
        p.ssthresh_bits
            .store(self.cc().ssthresh().to_bits(), Ordering::Relaxed);
        p.in_flight
            .store(self.in_flight() as u64, Ordering::Relaxed);
        p.pacing_bits.store(
            self.cc().pacing_rate_bps().unwrap_or(f64::NAN).to_bits(),
            Ordering::Relaxed,
        );
        p.rejected_acks
            .store(self.rejected().total(), Ordering::Relaxed);
    }
    fn publish_state(&self, p: &FlowProbe) {
        if let Ok(mut st) = p.state.lock() {
            st.clear();
            self.cc().state(&mut st);
        }
    }
}

impl ReceiverMachine for Receiver {
    fn handle_data(&mut self, now: Nanos, seg: &DataSegment) {
        Receiver::handle_data(self, now, seg)
    }
    fn poll_ack(&mut self, now: Nanos) -> Option<AckSegment> {
        Receiver::poll_ack(self, now)
    }
    fn poll_timeout(&self) -> Option<Nanos> {
        Receiver::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Nanos) {
        Receiver::handle_timeout(self, now)
    }
    fn delivered_bytes(&self) -> u64 {
        Receiver::delivered_bytes(self)
    }
    fn rejected_pkts(&self) -> u64 {
        Receiver::rejected_pkts(self)
    }
    fn must_ack_before_more(&self) -> bool {
        Receiver::must_ack_before_more(self)
    }
}

/// The receiver side of the transport's driver contract.
pub trait ReceiverMachine {
    fn handle_data(&mut self, now: Nanos, seg: &DataSegment);
    fn poll_ack(&mut self, now: Nanos) -> Option<AckSegment>;
    fn poll_timeout(&self) -> Option<Nanos>;
    fn handle_timeout(&mut self, now: Nanos);
    fn delivered_bytes(&self) -> u64;
    /// Data segments the machine refused (outside its window, oversized).
    fn rejected_pkts(&self) -> u64 {
        0
    }
    /// The ready ACK must be sent before the next arrival is handled ([`Receiver::must_ack_before_more`]).
    fn must_ack_before_more(&self) -> bool {
        false
    }
}

/// Longest sleep between checks of the stop flag.
const MAX_SLEEP: Nanos = 20 * NS_PER_MS;

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS)
}

/// With `CCLAB_NET_SPIN=1`, waits shorter than this are spent yielding the CPU in a loop
/// (`sched_yield`) rather than armed on a timer. A timer wake-up costs a `timerfd_settime` (a VM exit
/// on this kind of machine), a sleep and a wake-up, and at 1 Gbit/s a paced packet is due every 12 µs:
/// with timers and 100 µs of catch-up credit our BBR carried 701-712 Mbit/s of 1 Gbit/s; spinning,
/// 795-916 in 7 of 8 runs (docs/real-datapath.md).
///
/// DECISION: off by default since fast senders get 800 µs of credit ([`PACING_CATCH_UP`]): a timer
/// that fires tens of µs late then costs no link time, and the spin's `sched_yield` calls (10 % of the
/// endpoints' CPU in a profile of MaxNet at 1 Gbit/s) were taken from the receiver and the stacks that
/// share the CPU. Quiet machine, 2026-11-29, share of the payload ceiling: our BBR at 1 Gbit/s
/// 0.998-1.000 in 8 of 8 runs without it, 0.979-0.999 with it; MaxNet's M1 (one flow, 940 Mbit/s,
/// an ACK per packet) used 0.938 ± 0.006 of the link without it (the simulator: 0.940), 0.857 ± 0.071
/// with it (3 seeds each); CPU per Gbit carried 1.80 against 1.97 s at 1 Gbit/s, 3.17 against 3.67 at
/// 500 Mbit/s (4 runs each).
const SPIN_BELOW: Nanos = 50_000;

fn spin_below() -> Nanos {
    static SPIN: std::sync::OnceLock<Nanos> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| {
        if std::env::var_os("CCLAB_NET_SPIN").is_some_and(|v| v == "1") {
            SPIN_BELOW
        } else {
            0
        }
    })
}

/// How far past a paced packet's departure time the sender waits, so that it wakes once for the
/// packets due within [`PACING_BATCH`] and sends them as one GSO datagram: `k − 1` gaps for a batch of
/// `k` packets, 0 when packets are more than `PACING_BATCH` apart (below 240 Mbit/s with 1 500-byte
/// packets: nothing changes there).
///
/// DECISION: the batch is bounded by time, 50 µs: at most 5 packets at 1 Gbit/s, 2 at 300 Mbit/s.
/// Linux's TCP sizes its paced bursts the same way, by time, and larger: `tcp_tso_autosize`
/// (net/ipv4/tcp_output.c) lets a TSO packet carry `sk_pacing_rate >> sk_pacing_shift` bytes (shift 10:
/// about 1 ms of the pacing rate, at least `tcp_min_tso_segs` = 2 segments, at most 64 KB), and fq paces
/// whole TSO packets. Ours is smaller so that nothing the algorithm sees moves beyond what a late
/// wake-up already produced: a batch is held to the end of its horizon (never sent early: each packet's
/// send time is the time it really left), the held packets then go at once, and
/// [`PACING_CATCH_UP`] (800 µs for batched senders, so a wake-up late by up to 750 µs past the horizon
/// still loses nothing) keeps the schedule counted from their due times, so the mean rate is the
/// algorithm's. No minimum of
/// 2 packets as Linux has: at low rates that would hold a packet a whole gap.
fn batch_horizon(gap: Nanos) -> Nanos {
    if gap == 0 {
        return 0;
    }
    (PACING_BATCH / gap).min(GSO_MAX_SEGMENTS as Nanos - 1) * gap
}

/// The pacing horizon of one batch ([`batch_horizon`]).
pub const PACING_BATCH: Nanos = 50_000;

/// Sleeps until the socket (`fds[0]`) is ready or `wake`, and returns when the loop is next due. The
/// work since `since` and any wake-up later than `wake` are logged as stalls ([`crate::disturbance`]).
fn wait(
    timer: &mut TimerFd,
    fds: &mut [libc::pollfd; 2],
    wake: Nanos,
    clock: &Clock,
    stalls: &mut StallLog,
    since: Nanos,
) -> io::Result<Nanos> {
    let before = clock.now();
    stalls.due(since, before);
    if wake <= before {
        return Ok(before);
    }
    if wake - before <= spin_below() {
        // A short wait is spent yielding the CPU instead of on a timer (see SPIN_BELOW). The socket is
        // not watched meanwhile: what arrived is read when the wait ends, at most SPIN_BELOW later.
        loop {
            sys::yield_now();
            let now = clock.now();
            if now >= wake {
                stalls.woke(wake, now);
                return Ok(now);
            }
        }
    }
    timer.arm_at(clock.to_monotonic(wake))?;
    sys::ppoll(fds, None)?;
    let fired = fds[1].revents & libc::POLLIN != 0;
    if fired {
        timer.clear();
    }
    let woke = clock.now();
    // Only a wake-up by the timer measures timer lateness; one by a packet came before the deadline
    // (or a stall, which `due` logs either way).
    if fired {
        stalls.woke(wake, woke);
    } else {
        stalls.due(wake, woke);
    }
    Ok(woke)
}

/// The run-clock time an ACK stamped `ts` by the kernel (SO_TIMESTAMPNS, CLOCK_REALTIME ns) reached the
/// socket, no earlier than `floor`; now when unstamped. DECISION: a sender thread woken late
/// (other processes on its core: timer lateness p99 up to 6 ms measured) used to read a late batch of ACKs
/// and hand them all to the machine at the same `now`. That compressed their spacing, so BBR's
/// delivery-rate samples took the send rate (max of send and ACK intervals; in ProbeBW's 5/4 phase, 1.25
/// × BtlBw) and its max filter ratcheted BtlBw up (112.6 Mbit/s on a 100 Mbit/s link, measured under
/// load), and the pacing rate above the link kept a standing queue; it also added the late wake-up to
/// every RTT sample (the min_rtt filter, Vegas/FAST's queue estimates). The kernel's arrival time is
/// what a kernel TCP sender uses. `CCLAB_NET_ACK_TIMESTAMPS=0` turns it off (for comparison).
///
/// The two clocks cannot be read at once: the real time is read first, so a thread descheduled between
/// the two reads makes the arrival later (never earlier) than it was. The caller's `floor` includes the
/// receiver's `rx_time` for the segment the ACK answers: reading the clocks the
/// other way round put a loopback ACK a few µs before its own data's arrival, and the sender refused it
/// as `rx_time_future` (1 honest ACK in about 3 runs of `tests/spoofed.rs`).
fn ack_arrival(ts: Option<u64>, clock: &Clock, floor: Nanos) -> Nanos {
    let Some(ts) = ts else {
        return clock.now();
    };
    let mut real = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut real) } == 0;
    let now = clock.now();
    if !ok {
        return now;
    }
    let real = real.tv_sec as u64 * 1_000_000_000 + real.tv_nsec as u64;
    // A stamp in the future (real time stepped back since) counts as now.
    now.saturating_sub(real.saturating_sub(ts))
        .max(floor)
        .min(now)
}

/// Runs a sender on a connected, non-blocking UDP socket. At `stop_at` it stops sending new data and
/// returns once the machine has nothing left to recover (or at `stop`). Datagrams that are not a valid
/// ACK of `flow_id` are counted in `probe.malformed` and dropped; datagrams from any address but the
/// connected peer (the kernel already filters a connected UDP socket; this catches what was queued
/// before `connect`) in `probe.foreign`.
pub fn run_sender<S: SenderMachine>(
    m: &mut S,
    sock: &UdpSocket,
    flow_id: u32,
    clock: &Clock,
    stop_at: Nanos,
    stop: &AtomicBool,
    probe: &FlowProbe,
) -> io::Result<()> {
    sys::set_timer_slack_1ns();
    sys::raise_priority(sys::Role::Endpoint);
    let fd = sock.as_raw_fd();
    let mut timer = TimerFd::new()?;
    let mut rx = RxBatch::new(!sys::turned_off("CCLAB_NET_RECVMMSG"));
    // What poll_transmit let go, sent as one GSO datagram where it can be (see `crate::batch`).
    let mut batch = TxBatch::new(!sys::turned_off("CCLAB_NET_GSO"));
    let mut gso = GsoStats::default();
    // Datagrams the socket refused (send buffer full): retried when the socket is writable.
    let mut pending = false;
    // Packets are not asked for before this time: the end of a batch's pacing horizon (see
    // `batch_horizon`).
    let mut hold_until: Nanos = 0;
    // Sends refused in a row with an ICMP-reported error (see ICMP_STREAK).
    let mut icmp_streak = 0u32;
    let mut stopped = false;
    // When the loop should next come around ([`crate::disturbance`]).
    let mut stalls = StallLog::for_window(probe.measure);
    let mut due = clock.now();
    let mut state_due = due;
    // The last time handed to the machine: an ACK's arrival time is never earlier (times only move
    // forward for a sans-IO machine).
    let mut floor: Nanos = 0;
    let peer = sock.peer_addr().ok();
    loop {
        let now = clock.now();
        stalls.due(due, now);
        if now >= stop_at && !stopped {
            m.stop_sending();
            stopped = true;
        }
        if stop.load(Ordering::Relaxed) || (stopped && m.is_finished()) {
            m.publish(probe);
            gso.publish(probe);
            probe.stalls.lock().unwrap().push(("sender", stalls));
            return Ok(());
        }
        loop {
            let n = recv_counting(fd, &mut rx, probe)?;
            if n == 0 {
                break;
            }
            for i in 0..n {
                let (bytes, meta) = rx.get(i);
                if peer.is_some() && meta.from.map(SocketAddr::V4) != peer {
                    probe.foreign.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                match Repr::parse_bytes(bytes) {
                    Ok(Repr {
                        flow_id: f,
                        body: Body::Ack(a),
                    }) if f == flow_id => {
                        // The ACK's time is when it reached our socket, not when this thread got to
                        // it: see `ack_arrival`. Never before the receiver had the data it
                        // acknowledges: its rx_time is a floor (a forged rx_time in the future is
                        // still refused, as `at` is at most now).
                        let at = ack_arrival(meta.kernel_ts, clock, floor.max(a.rx_time));
                        m.handle_ack(at, &a)
                    }
                    _ => {
                        probe.malformed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        let now = clock.now();
        floor = now;
        if m.poll_timeout().is_some_and(|t| t <= now) {
            m.handle_timeout(now);
        }
        // Within a batch's horizon nothing new is asked for; what the socket refused is retried.
        let mut more = now >= hold_until;
        loop {
            while more && !pending && batch.len() < GSO_MAX_SEGMENTS {
                let Some(seg) = m.poll_transmit(now) else {
                    // Asked once per round: a None has effects (application-limited marks).
                    more = false;
                    break;
                };
                let r = Repr {
                    flow_id,
                    body: Body::Data(seg),
                };
                batch.push_with(r.buffer_len(), |b| {
                    r.emit(&mut crate::wire::Packet::new_unchecked(b))
                });
            }
            if batch.is_empty() {
                break;
            }
            match batch.send_front(fd, &mut gso) {
                Ok(sent) => {
                    pending = false;
                    icmp_streak = 0;
                    probe
                        .sent_bytes
                        .fetch_add((sent.bytes + 28 * sent.datagrams) as u64, Ordering::Relaxed);
                }
                Err(e) if would_block(&e) => {
                    pending = true;
                    break;
                }
                // An ICMP error about an earlier datagram ([`icmp_reported`]): the receiver's port
                // is not there yet (port unreachable from an early packet), or a forged message. This
                // datagram was not sent: the transport retransmits what is lost, as for any other
                // loss. The same errors on every send for ICMP_STREAK sends are local (no route) and
                // end the flow as before.
                Err(e) if icmp_reported(&e) && icmp_streak < ICMP_STREAK => {
                    probe.icmp_errors.fetch_add(1, Ordering::Relaxed);
                    icmp_streak += 1;
                    batch.drop_front();
                    pending = false;
                }
                Err(e) => return Err(e),
            }
        }
        m.publish(probe);
        if now >= state_due {
            m.publish_state(probe);
            state_due = now + STATE_EVERY;
        }
        let mut wake = now + MAX_SLEEP;
        if !stopped {
            wake = wake.min(stop_at);
        }
        if let Some(t) = m.poll_timeout() {
            wake = wake.min(t);
        }
        hold_until = 0;
        if batch.gso() && !pending {
            // Pacing is what wakes us next: wake for the packets due within the horizon at once.
            if let Some((due, gap)) = m.next_departure().filter(|(d, _)| *d == wake) {
                hold_until = due + batch_horizon(gap);
                wake = hold_until;
            }
        }
        let events = libc::POLLIN | if pending { libc::POLLOUT } else { 0 };
        let mut fds = [
            sys::pollfd(fd, events),
            sys::pollfd(timer.raw(), libc::POLLIN),
        ];
        due = wait(&mut timer, &mut fds, wake, clock, &mut stalls, now)?;
    }
}

/// Runs a receiver on a bound, non-blocking UDP socket (IP_RECVTOS on) until `stop`. Its peer is
/// `peer` (the run's plan knows the sender's address), else the source of the first valid data
/// segment of `flow_id`; ACKs go there, and datagrams from any other address are counted in
/// `probe.foreign` and dropped. A CE codepoint in the IP header sets the segment's `ce`.
pub fn run_receiver<R: ReceiverMachine>(
    m: &mut R,
    sock: &UdpSocket,
    flow_id: u32,
    peer: Option<SocketAddrV4>,
    clock: &Clock,
    stop: &AtomicBool,
    probe: &FlowProbe,
) -> io::Result<()> {
    sys::set_timer_slack_1ns();
    sys::raise_priority(sys::Role::Endpoint);
    let fd = sock.as_raw_fd();
    let mut timer = TimerFd::new()?;
    let mut rx = RxBatch::new(!sys::turned_off("CCLAB_NET_RECVMMSG"));
    let mut tx = Vec::with_capacity(crate::wire::ACK_MAX_LEN);
    let mut peer = peer;
    let mut stalls = StallLog::for_window(probe.measure);
    let mut due = clock.now();
    loop {
        stalls.due(due, clock.now());
        if stop.load(Ordering::Relaxed) {
            probe.stalls.lock().unwrap().push(("receiver", stalls));
            return Ok(());
        }
        loop {
            let n = recv_counting(fd, &mut rx, probe)?;
            if n == 0 {
                break;
            }
            for i in 0..n {
                let (bytes, meta) = rx.get(i);
                let now = clock.now();
                if peer.is_some() && meta.from != peer {
                    probe.foreign.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                match Repr::parse_bytes(bytes) {
                    Ok(Repr {
                        flow_id: f,
                        body: Body::Data(mut d),
                    }) if f == flow_id => {
                        d.ce |= meta
                            .tos
                            .is_some_and(|t| t & crate::ip::ECN_MASK == crate::ip::ECN_CE);
                        peer = meta.from.or(peer);
                        m.handle_data(now, &d);
                        if m.must_ack_before_more() {
                            send_acks(m, sock, flow_id, peer, now, &mut tx)?;
                        }
                    }
                    _ => {
                        probe.malformed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        let now = clock.now();
        if m.poll_timeout().is_some_and(|t| t <= now) {
            m.handle_timeout(now);
        }
        send_acks(m, sock, flow_id, peer, now, &mut tx)?;
        probe
            .delivered
            .store(m.delivered_bytes(), Ordering::Relaxed);
        probe
            .rejected_data
            .store(m.rejected_pkts(), Ordering::Relaxed);
        let mut wake = now + MAX_SLEEP;
        if let Some(t) = m.poll_timeout() {
            wake = wake.min(t);
        }
        let mut fds = [
            sys::pollfd(fd, libc::POLLIN),
            sys::pollfd(timer.raw(), libc::POLLIN),
        ];
        due = wait(&mut timer, &mut fds, wake, clock, &mut stalls, now)?;
    }
}

/// Errors Linux reports on a connected UDP socket's next send or receive (then clears) when an ICMP
/// error about one of its datagrams arrives: the "hard" ones of `__udp4_lib_err`, which reach a socket
/// without IP_RECVERR — port unreachable (ECONNREFUSED), protocol unreachable (ENOPROTOOPT), network
/// and host unreachable or prohibited (ENETUNREACH, EHOSTUNREACH, EHOSTDOWN, ENONET), parameter
/// problem (EPROTO), fragmentation needed (EMSGSIZE). Each says one datagram of ours was not taken,
/// and anyone who can send IP packets can forge one.
fn icmp_reported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::ECONNREFUSED
                | libc::ENOPROTOOPT
                | libc::ENETUNREACH
                | libc::EHOSTUNREACH
                | libc::EHOSTDOWN
                | libc::ENONET
                | libc::EPROTO
                | libc::EMSGSIZE
        )
    )
}

/// Consecutive sends refused with an [`icmp_reported`] error after which the sender gives up: a
/// forged or stale report fails one send (the next succeeds), a local fault (no route) fails every one.
const ICMP_STREAK: u32 = 1000;

/// [`RxBatch::recv`], but an ICMP error reported for the socket ([`icmp_reported`]) is counted in
/// `probe.icmp_errors` and the next datagrams read: it is a loss the transport recovers, and a forged
/// one must not end the flow — returned as an error, it ended the sender thread (see
/// `tests/port_unreachable.rs`, `tests/spoofed.rs`). recvmsg on a UDP socket returns none of these
/// errors for a local reason.
fn recv_counting(fd: std::os::fd::RawFd, rx: &mut RxBatch, probe: &FlowProbe) -> io::Result<usize> {
    loop {
        match rx.recv(fd) {
            Err(e) if icmp_reported(&e) => {
                probe.icmp_errors.fetch_add(1, Ordering::Relaxed);
            }
            r => return r,
        }
    }
}

/// Sends every ACK `m` has ready to `peer` (none before the first datagram told us who that is).
fn send_acks<R: ReceiverMachine>(
    m: &mut R,
    sock: &UdpSocket,
    flow_id: u32,
    peer: Option<SocketAddrV4>,
    now: Nanos,
    tx: &mut Vec<u8>,
) -> io::Result<()> {
    while let Some(a) = m.poll_ack(now) {
        let Some(to) = peer else { break };
        let r = Repr {
            flow_id,
            body: Body::Ack(a),
        };
        tx.resize(r.buffer_len(), 0);
        r.emit(&mut crate::wire::Packet::new_unchecked(&mut tx[..]));
        match sock.send_to(&tx[..], to) {
            Ok(_) => {}
            // An ACK the socket cannot take now is an ACK lost: later ACKs are cumulative.
            Err(e) if would_block(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Validates a flow of our transport: known algorithm, valid parameters, a packet size that fits our
/// header. The error text starts with the field name (`cc`, `params.<name>`, `transport.packet_size`).
pub fn check_sender(name: &str, f: &FlowSpec) -> Result<(), String> {
    if f.transport.packet_size <= WIRE_OVERHEAD
        || f.transport.packet_size > crate::hosts::MTU as u32
    {
        return Err(format!(
            "transport.packet_size: must be in ({WIRE_OVERHEAD}, {}] on the real datapath, got {}",
            crate::hosts::MTU,
            f.transport.packet_size
        ));
    }
    // Validation only: the seed does not affect whether a configuration is valid.
    build_sender(name, &f.params, &sender_env(f, 0))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Flow `flow_id`'s algorithm `cc` with its parameters and transport settings, seeded as the simulator
/// seeds that flow (its index in the spec). Our transport and the kernel datapath build it alike.
pub fn build_flow_sender(
    cc: &str,
    f: &FlowSpec,
    flow_id: u32,
    run_seed: u64,
) -> Result<BuiltSender, cclab_cc::params::ParamError> {
    build_sender(
        cc,
        &f.params,
        &sender_env(f, flow_seed(run_seed, flow_id as u64)),
    )
}

fn sender_env(f: &FlowSpec, seed: u64) -> SenderEnv {
    SenderEnv {
        mss: f.transport.packet_size - WIRE_OVERHEAD,
        packet_size: f.transport.packet_size,
        initial_cwnd: f.transport.initial_cwnd,
        seed,
        hystart: f.transport.hystart,
    }
}

/// Socket options both ends use: large buffers (a window of a 200 Mbit/s × 200 ms path fits), so the
/// socket is never the bottleneck the emulator is meant to be.
/// Without CAP_NET_ADMIN (loopback mode as a normal user) the buffers are capped by
/// `net.core.{w,r}mem_max` instead.
fn tune(sock: &UdpSocket) -> io::Result<()> {
    crate::sys::big_buffers(sock)?;
    sock.set_nonblocking(true)
}

/// The transport's settings for a flow on the real datapath: the spec's one resolution
/// ([`FlowSpec::transport_config`], the simulator's too) with the payload per packet reduced so that
/// IP packets are `packet_size` bytes (see [`WIRE_OVERHEAD`]). `recovery` is the built algorithm's
/// loss recovery where the caller has it; None (a receiver) looks it up by the flow's `cc`, so both
/// ends agree (SACK recovery implies SACK blocks).
pub fn transport_config(f: &FlowSpec, recovery: Option<Recovery>) -> Config {
    let mss = f.transport.packet_size.saturating_sub(WIRE_OVERHEAD).max(1);
    Config {
        pacing_catch_up: PACING_CATCH_UP,
        ..f.transport
            .config(WIRE_OVERHEAD, mss, recovery.or(f.recovery_override()))
    }
}

/// [`Config::pacing_catch_up`] on the real datapath. A paced sender wakes once per packet (or per
/// batch, [`batch_horizon`]) at best, and each wake-up costs tens of µs here; with only half a gap of
/// credit (Linux fq's rule, which Linux TCP can afford because it paces 64 KB TSO bursts, not packets)
/// our BBR reached 213–310 Mbit/s of a 1 Gbit/s link. With credit, a late sender sends what fell due
/// meanwhile and the mean rate is the algorithm's.
///
/// DECISION: two regimes, split where batching starts ([`PACING_BATCH`], packets ≤ 50 µs apart:
/// above about 240 Mbit/s with 1 500-byte packets).
/// * Slower senders: 100 µs, under one packet at 100 Mbit/s, so a wake-up late by 5 ms sends one or
///   two packets, not 40 (docs/real-datapath.md, "What a user-space sender cannot do on a loaded
///   machine").
/// * Faster senders: 800 µs, 66 packets at 1 Gbit/s. At 1 Gbit/s our sender shares its CPU with
///   the receiver and both hosts' stacks, and wakes hundreds of µs late often enough that credit is
///   what decides the rate: BBR's share of the payload ceiling over 8 runs each (quiet machine,
///   2026-11-29) was 0.84–0.99 with 100 µs (two sets, medians 0.97 and 0.94), 0.95–0.99 (median
///   0.96) with 300 µs, 0.97–0.99 (0.98) with 600 µs, 0.99–1.00 (0.99) with 1 ms, 0.98–1.00 (0.99)
///   with 800 µs. 800 µs is the burst Linux's own pacing allows at that rate: a 64 KB TSO packet
///   (524 µs) plus half of it as drift credit (`tcp_update_skb_after_send`).
pub const PACING_CATCH_UP: CatchUp = CatchUp {
    credit: 100_000,
    fast_gap: PACING_BATCH,
    fast_credit: 800_000,
};

/// A receiver's socket, bound in its host (B; A for a reverse flow) before the run starts.
pub struct ReceiverSetup {
    pub sock: UdpSocket,
    pub flow_id: u32,
    cfg: Config,
    /// The sender's address as this receiver sees it, where the run's plan knows it.
    peer: Option<SocketAddrV4>,
}

impl ReceiverSetup {
    pub fn bind(host: &Host, f: &FlowSpec, port: u16, flow_id: u32) -> io::Result<ReceiverSetup> {
        let sock = host.ns.run_in(|| UdpSocket::bind((host.addr, port)))??;
        Self::from_socket(sock, f, flow_id)
    }

    /// A receiver on an already bound socket (loopback mode: 127.0.0.1, any port).
    pub fn from_socket(sock: UdpSocket, f: &FlowSpec, flow_id: u32) -> io::Result<ReceiverSetup> {
        tune(&sock)?;
        sys::setsockopt_int(sock.as_raw_fd(), libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
        Ok(ReceiverSetup {
            sock,
            flow_id,
            // Data whose tag does not verify under the flow's key is refused (docs/real-datapath.md, "What a hostile packet can and cannot do").
            cfg: Config {
                data_key: Some(sys::data_key(flow_id)),
                ..transport_config(f, None)
            },
            peer: None,
        })
    }

    /// Accepts datagrams from `peer` only (and ACKs to it) instead of learning it from the first one.
    pub fn expect_peer(&mut self, peer: SocketAddrV4) {
        self.peer = Some(peer);
    }

    /// Runs the transport's receiver for this flow until `stop`.
    pub fn run(self, clock: &Clock, stop: &AtomicBool, p: &FlowProbe) -> io::Result<()> {
        let mut m = Receiver::new(&self.cfg);
        m.collect_window_stats(p.measure[0], p.measure[1]);
        let r = run_receiver(&mut m, &self.sock, self.flow_id, self.peer, clock, stop, p);
        // One-way delays: the sender stamps data with the same clock (one process, `Clock`).
        p.window.lock().unwrap().receiver = m.window_stats().cloned();
        r
    }
}

/// A sender's socket, bound in its host (A; B for a reverse flow) and connected to its receiver, and
/// its algorithm.
pub struct SenderSetup {
    pub sock: UdpSocket,
    pub flow_id: u32,
    cfg: Config,
    built: BuiltSender,
    size: Option<u64>,
}

impl SenderSetup {
    pub fn bind(
        host: &Host,
        f: &FlowSpec,
        cc: &str,
        dst: SocketAddr,
        flow_id: u32,
        run_seed: u64,
    ) -> io::Result<SenderSetup> {
        let sock = host.ns.run_in(|| UdpSocket::bind((host.addr, 0)))??;
        Self::from_socket(sock, f, cc, dst, flow_id, run_seed)
    }

    /// A sender on an already bound socket (loopback mode: 127.0.0.1, `dst` = the relay's side A).
    pub fn from_socket(
        sock: UdpSocket,
        f: &FlowSpec,
        cc: &str,
        dst: SocketAddr,
        flow_id: u32,
        run_seed: u64,
    ) -> io::Result<SenderSetup> {
        Self::seeded(
            sock,
            f,
            cc,
            dst,
            flow_id,
            flow_seed(run_seed, flow_id as u64),
        )
    }

    /// A sender whose algorithm gets `seed` itself (a short transfer: the simulator's seed for it).
    pub fn seeded(
        sock: UdpSocket,
        f: &FlowSpec,
        cc: &str,
        dst: SocketAddr,
        flow_id: u32,
        seed: u64,
    ) -> io::Result<SenderSetup> {
        let built = build_sender(cc, &f.params, &sender_env(f, seed))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        tune(&sock)?;
        if !sys::turned_off("CCLAB_NET_ACK_TIMESTAMPS") {
            // Each ACK's arrival time (see `ack_arrival`).
            sys::setsockopt_int(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        }
        sock.connect(dst)?;
        if f.transport.ecn {
            // ECT(0) on every datagram: the emulator's marking disciplines may then set CE.
            sys::setsockopt_int(sock.as_raw_fd(), libc::IPPROTO_IP, libc::IP_TOS, 0b10)?;
        }
        let cfg = Config {
            data_key: Some(sys::data_key(flow_id)),
            ..transport_config(f, built.recovery)
        };
        Ok(SenderSetup {
            sock,
            flow_id,
            cfg,
            built,
            size: f.size,
        })
    }

    /// Runs the transport's sender for this flow: starts at `start`, stops sending new data at
    /// `stop_at`, returns when everything is acknowledged after that, or at `stop`.
    pub fn run(
        self,
        clock: &Clock,
        start: Nanos,
        stop_at: Nanos,
        stop: &AtomicBool,
        p: &FlowProbe,
    ) -> io::Result<()> {
        crate::sys::sleep_until(clock, start, stop);
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut m = Sender::new(self.cfg, self.built.cc, self.size, clock.now());
        m.collect_window_stats(p.measure[0], p.measure[1]);
        let r = run_sender(&mut m, &self.sock, self.flow_id, clock, stop_at, stop, p);
        p.window.lock().unwrap().sender = m.window_stats().cloned();
        if let Ok(mut st) = p.state.lock() {
            st.clear();
            m.cc().state(&mut st);
        }
        r
    }
}
