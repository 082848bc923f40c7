//! Loopback mode: the emulator as a UDP relay on 127.0.0.1, for machines without root or namespaces.
//!
//! The relay owns two UDP sockets: side A (senders send their data to it, it sends ACKs back to them)
//! and side B (it sends data to the receivers, they send their ACKs to it — to the address the data came
//! from). Each datagram read is wrapped in a synthetic IPv4 + UDP header ([`crate::ip::wrap_udp_header`])
//! that looks exactly like the packet the TUN mode would carry for that flow — host addresses
//! 10.77.0.1/10.77.0.2, ports [`SENDER_PORT_BASE`]` + i` → [`crate::plan::BASE_PORT`]` + i`, the TOS byte
//! the sender set — and fed to the unchanged sans-IO [`Emulator`]. So queue discipline, rate, delay, loss,
//! per-flow access delays, ECN marking and MaxNet field rewrites are the same code as the TUN mode. A
//! delivered packet is unwrapped and its UDP payload sent to the real endpoint of that flow, with the
//! packet's (possibly CE-marked) TOS byte set on the relay's socket.
//!
//! Datagrams from an address that is no registered endpoint are counted ([`super::LoopStats::foreign`]) and
//! dropped before the emulator; datagrams from an endpoint that fail the codec check are counted by the
//! emulator (`ingress.malformed`) and dropped, as in the TUN mode.
//!
//! The loop is the TUN mode's ([`super::drive`] over [`super::Ports`]): single thread, arrival time per
//! datagram right after its `recvmsg`, a timerfd armed at the next deadline, timer slack 1 ns, early
//! wake-up and spin.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use cclab_cc::time::Nanos;

use super::{Dir, Emulator, Ports, Running};
use crate::hosts::{ADDR_A, ADDR_B};
use crate::sys::{self, Clock};

/// Synthetic source port of flow `i`'s sender (`SENDER_PORT_BASE + i`); its receiver is
/// `crate::plan::BASE_PORT + i`, the port the TUN mode uses, which keys the per-flow access delays.
pub const SENDER_PORT_BASE: u16 = 20000;
const RECEIVER_PORT_BASE: u16 = crate::plan::BASE_PORT;
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

impl Relay {
    /// Binds both sides on 127.0.0.1 (ephemeral ports).
    pub fn bind() -> io::Result<Relay> {
        let mk = || -> io::Result<UdpSocket> {
            let s = UdpSocket::bind("127.0.0.1:0")?;
            sys::big_buffers(&s)?;
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
    fn read_datagram(&self, side: usize, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
        let fd = self.socks[side].as_raw_fd();
        let Some(meta) = sys::recv_meta_spare(fd, buf, 28, MAX_DATAGRAM)? else {
            return Ok(None);
        };
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
    fn send_payload(&mut self, dir: Dir, pkt: &[u8]) -> io::Result<bool> {
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

impl Ports for Relay {
    fn fds(&self) -> [RawFd; 2] {
        [self.socks[0].as_raw_fd(), self.socks[1].as_raw_fd()]
    }
    fn readable(&self, _side: usize, revents: i16) -> io::Result<bool> {
        // POLLERR on a UDP socket is a queued ICMP error (e.g. a port gone at the end of a run):
        // recvmsg returns and clears it; nothing to fail for.
        Ok(revents & (libc::POLLIN | libc::POLLERR) != 0)
    }
    fn read(&mut self, side: usize, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
        loop {
            match self.read_datagram(side, buf) {
                // A queued ICMP error (port unreachable) surfaces as an error of one recvmsg.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                r => return r,
            }
        }
    }
    fn write(&mut self, dir: Dir, pkt: &[u8]) -> io::Result<bool> {
        self.send_payload(dir, pkt)
    }
}

fn v4(s: &UdpSocket) -> io::Result<SocketAddrV4> {
    match s.local_addr()? {
        std::net::SocketAddr::V4(a) => Ok(a),
        a => Err(io::Error::other(format!("relay bound to {a}"))),
    }
}

/// Starts the relay on a thread (the loopback counterpart of [`super::spawn`]).
pub fn spawn(emu: Emulator, relay: Relay, clock: Clock, sample_every: Option<Nanos>) -> Running {
    super::spawn_on(
        emu,
        relay,
        clock,
        sample_every,
        super::Placement::default(),
        "cclab-relay",
    )
}
