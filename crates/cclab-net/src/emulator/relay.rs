//! Loopback mode: the emulator as a UDP relay on 127.0.0.1, for machines without root or namespaces.
//!
//! The relay owns two UDP sockets: side A (senders send their data to it, it sends ACKs back to them)
//! and side B (it sends data to the receivers, they send their ACKs to it — to the address the data came
//! from). Each datagram read is wrapped in a synthetic IPv4 + UDP header ([`crate::ip::wrap_udp_header`])
//! that looks exactly like the packet the TUN mode would carry for that flow — host addresses
//! 10.77.0.1/10.77.0.2, ports [`SENDER_PORT_BASE`]` + i` → [`crate::run::BASE_PORT`]` + i`, the TOS byte
//! the sender set — and fed to the unchanged sans-IO [`Emulator`]. So queue discipline, rate, delay, loss,
//! per-flow access delays, ECN marking and MaxNet field rewrites are the same code as the TUN mode. A
//! delivered packet is unwrapped and its UDP payload sent to the real endpoint of that flow, with the
//! packet's (possibly CE-marked) TOS byte set on the relay's socket.
//!
//! Datagrams from an address that is no registered endpoint are counted ([`LoopStats::foreign`]) and
//! dropped before the emulator; datagrams from an endpoint that fail the codec check are counted by the
//! emulator (`ingress.malformed`) and dropped, as in the TUN mode.
//!
//! Same loop discipline as [`super::run_loop`]: single thread, arrival time per datagram right after its
//! `recvmsg`, a timerfd armed at the next deadline, timer slack 1 ns, early wake-up and spin.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cclab_cc::time::{Nanos, NS_PER_MS};

use super::{Dir, Emulator, Finished, LinkSample, LoopControl, LoopStats, Running};
use crate::hosts::{ADDR_A, ADDR_B};
use crate::sys::{self, Clock};

/// Synthetic source port of flow `i`'s sender (`SENDER_PORT_BASE + i`); its receiver is
/// `crate::run::BASE_PORT + i`, the port the TUN mode uses, which keys the per-flow access delays.
pub const SENDER_PORT_BASE: u16 = 20000;
const RECEIVER_PORT_BASE: u16 = crate::run::BASE_PORT;
/// Largest UDP payload on IPv4.
const MAX_DATAGRAM: usize = 65507;

/// The relay's sockets and its flow table.
pub struct Relay {
    /// Side A (senders) and side B (receivers).
    socks: [UdpSocket; 2],
    /// Real endpoint addresses of flow `i`: (sender, receiver).
    flows: Vec<(SocketAddrV4, SocketAddrV4)>,
    by_sender: HashMap<SocketAddrV4, u16>,
    by_receiver: HashMap<SocketAddrV4, u16>,
    /// The TOS byte currently set on each socket (changed only when a packet needs another one).
    tos: [u8; 2],
}

/// Large socket buffers where allowed (`SO_*BUFFORCE` needs CAP_NET_ADMIN), else as large as
/// `net.core.{r,w}mem_max` lets an unprivileged process have.
pub fn big_buffers(sock: &UdpSocket) -> io::Result<()> {
    let fd = sock.as_raw_fd();
    for (force, plain) in [
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
    ] {
        if sys::setsockopt_int(fd, libc::SOL_SOCKET, force, 8 << 20).is_err() {
            sys::setsockopt_int(fd, libc::SOL_SOCKET, plain, 8 << 20)?;
        }
    }
    Ok(())
}

impl Relay {
    /// Binds both sides on 127.0.0.1 (ephemeral ports).
    pub fn bind() -> io::Result<Relay> {
        let mk = || -> io::Result<UdpSocket> {
            let s = UdpSocket::bind("127.0.0.1:0")?;
            big_buffers(&s)?;
            sys::setsockopt_int(s.as_raw_fd(), libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
            s.set_nonblocking(true)?;
            Ok(s)
        };
        Ok(Relay {
            socks: [mk()?, mk()?],
            flows: Vec::new(),
            by_sender: HashMap::new(),
            by_receiver: HashMap::new(),
            tos: [0, 0],
        })
    }

    /// Where senders send (side A).
    pub fn sender_side(&self) -> io::Result<SocketAddrV4> {
        v4(&self.socks[0])
    }

    /// Where receivers' ACKs go (side B; receivers answer the address data came from).
    pub fn receiver_side(&self) -> io::Result<SocketAddrV4> {
        v4(&self.socks[1])
    }

    /// Registers flow `flows.len()`: its sender's and receiver's real addresses. Returns the flow index.
    pub fn add_flow(&mut self, sender: SocketAddrV4, receiver: SocketAddrV4) -> usize {
        let i = self.flows.len();
        assert!(i < 10_000, "too many flows for the synthetic port ranges");
        self.flows.push((sender, receiver));
        self.by_sender.insert(sender, i as u16);
        self.by_receiver.insert(receiver, i as u16);
        i
    }

    /// Reads one datagram from side `side` into `buf` as a synthetic IPv4 packet. Ok(None): nothing to
    /// read; Ok(Some(false)): a datagram from a foreign address (dropped, buffer reusable).
    fn read(&self, side: usize, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
        buf.resize(28 + MAX_DATAGRAM, 0);
        let Some(meta) = sys::recv_meta(self.socks[side].as_raw_fd(), &mut buf[28..])? else {
            buf.clear();
            return Ok(None);
        };
        buf.truncate(28 + meta.len);
        let table = if side == 0 {
            &self.by_sender
        } else {
            &self.by_receiver
        };
        let Some(&i) = meta.from.and_then(|a| table.get(&a)) else {
            return Ok(Some(false));
        };
        let (sp, rp) = (SENDER_PORT_BASE + i, RECEIVER_PORT_BASE + i);
        let tos = meta.tos.unwrap_or(0);
        if side == 0 {
            crate::ip::wrap_udp_header(buf, ADDR_A, ADDR_B, sp, rp, tos);
        } else {
            crate::ip::wrap_udp_header(buf, ADDR_B, ADDR_A, rp, sp, tos);
        }
        Ok(Some(true))
    }

    /// Sends a delivered packet's payload to its flow's endpoint. Ok(false): not sent (the kernel
    /// refused it for lack of room, or the packet is not one the relay made).
    fn write(&mut self, dir: Dir, pkt: &[u8]) -> io::Result<bool> {
        let Ok(info) = crate::ip::inspect(pkt) else {
            return Ok(false);
        };
        let (side, to) = match dir {
            Dir::Fwd => (1, info.dst_port.wrapping_sub(RECEIVER_PORT_BASE)),
            Dir::Rev => (0, info.dst_port.wrapping_sub(SENDER_PORT_BASE)),
        };
        let Some(&(s, r)) = self.flows.get(to as usize) else {
            return Ok(false);
        };
        let addr = if side == 0 { s } else { r };
        let tos = pkt[1];
        if self.tos[side] != tos {
            sys::setsockopt_int(
                self.socks[side].as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_TOS,
                tos as libc::c_int,
            )?;
            self.tos[side] = tos;
        }
        let ihl = (pkt[0] & 0x0F) as usize * 4;
        match self.socks[side].send_to(&pkt[ihl + 8..], addr) {
            Ok(_) => Ok(true),
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.raw_os_error() == Some(libc::ENOBUFS)
                    || e.kind() == io::ErrorKind::ConnectionRefused =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}

fn v4(s: &UdpSocket) -> io::Result<SocketAddrV4> {
    match s.local_addr()? {
        std::net::SocketAddr::V4(a) => Ok(a),
        a => Err(io::Error::other(format!("relay bound to {a}"))),
    }
}

/// Runs the emulator between the relay's two sockets until `ctl` says stop (the loopback counterpart
/// of [`super::run_loop`]).
pub fn relay_loop(
    emu: &mut Emulator,
    relay: &mut Relay,
    clock: &Clock,
    ctl: LoopControl<'_>,
    mut on_sample: impl FnMut(Nanos, &Emulator),
) -> io::Result<LoopStats> {
    sys::set_timer_slack_1ns();
    let mut st = LoopStats {
        priority_raised: sys::raise_priority(sys::Role::Emulator),
        ..LoopStats::default()
    };
    let mut timer = sys::TimerFd::new()?;
    let mut oversleep_ewma = 0.0f64;
    let mut next_sample = ctl.sample_every.map(|_| 0);
    const MAX_SLEEP: Nanos = 20 * NS_PER_MS;
    const READ_BATCH: usize = 64;
    let fds_of = |r: &Relay| [r.socks[0].as_raw_fd(), r.socks[1].as_raw_fd()];
    loop {
        let now = clock.now();
        while let Some((dir, buf, due)) = emu.poll_output(now) {
            if relay.write(dir, &buf)? {
                st.packets_written += 1;
                st.record_lateness(clock.now().saturating_sub(due));
            } else {
                st.tun_write_drops += 1;
            }
            emu.recycle(buf);
        }
        if let (Some(ns), Some(every)) = (next_sample, ctl.sample_every) {
            if now >= ns {
                on_sample(now, emu);
                next_sample = Some(ns + every);
            }
        }
        if ctl.stop.load(Ordering::Relaxed) || ctl.end.is_some_and(|e| now >= e) {
            break;
        }
        let mut wake = now + MAX_SLEEP;
        for t in [emu.next_deadline(), next_sample, ctl.end]
            .into_iter()
            .flatten()
        {
            wake = wake.min(t);
        }
        let early = (oversleep_ewma as Nanos).min(ctl.spin_max);
        let arm = wake.saturating_sub(early);
        let [fa, fb] = fds_of(relay);
        let mut fds = [
            sys::pollfd(fa, libc::POLLIN),
            sys::pollfd(fb, libc::POLLIN),
            sys::pollfd(timer.raw(), libc::POLLIN),
        ];
        let ready = if arm > clock.now() {
            st.wakeups += 1;
            timer.arm_at(clock.to_monotonic(arm))?;
            let r = sys::ppoll(&mut fds, None)?;
            if fds[2].revents & libc::POLLIN != 0 {
                timer.clear();
                let over = clock.now().saturating_sub(arm) as f64;
                oversleep_ewma += (over - oversleep_ewma) / 8.0;
            }
            if fds[0].revents | fds[1].revents == 0 {
                while clock.now() < wake {
                    if sys::ppoll(&mut fds[..2], Some(0))? > 0 {
                        break;
                    }
                    std::hint::spin_loop();
                }
            }
            r
        } else {
            sys::ppoll(&mut fds[..2], Some(0))?
        };
        if ready == 0 && fds[0].revents | fds[1].revents == 0 {
            continue;
        }
        let revents = [fds[0].revents, fds[1].revents];
        for (side, rev) in revents.into_iter().enumerate() {
            // POLLERR on a UDP socket is a queued ICMP error (e.g. a port gone at the end of a run):
            // recvmsg returns and clears it; nothing to fail for.
            if rev & (libc::POLLIN | libc::POLLERR) == 0 {
                continue;
            }
            let dir = if side == 0 { Dir::Fwd } else { Dir::Rev };
            for _ in 0..READ_BATCH {
                let mut buf = emu.take_buffer();
                match relay.read(side, &mut buf) {
                    Ok(None) => {
                        emu.recycle(buf);
                        break;
                    }
                    Ok(Some(false)) => {
                        st.packets_read += 1;
                        st.foreign += 1;
                        emu.recycle(buf);
                    }
                    Ok(Some(true)) => {
                        st.packets_read += 1;
                        let t = clock.now();
                        emu.on_packet(dir, t, buf);
                    }
                    // A queued ICMP error (port unreachable) surfaces as an error of one recvmsg.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                        emu.recycle(buf);
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    st.finish();
    Ok(st)
}

/// Starts the relay on a thread (the loopback counterpart of [`super::spawn`]).
pub fn spawn(
    mut emu: Emulator,
    mut relay: Relay,
    clock: Clock,
    sample_every: Option<Nanos>,
) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let handle = std::thread::Builder::new()
        .name("cclab-relay".into())
        .spawn(move || {
            let mut samples = Vec::new();
            let ctl = LoopControl {
                stop: &s2,
                end: None,
                sample_every,
                spin_max: super::DEFAULT_SPIN_MAX,
            };
            let stats = relay_loop(&mut emu, &mut relay, &clock, ctl, |t, e| {
                samples.push(LinkSample {
                    t,
                    links: [e.snapshot(Dir::Fwd), e.snapshot(Dir::Rev)],
                })
            })?;
            Ok(Finished {
                emulator: emu,
                stats,
                samples,
            })
        })
        .expect("spawn relay thread");
    Running { stop, handle }
}
