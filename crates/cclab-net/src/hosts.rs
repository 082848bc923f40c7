//! The two hosts of a dumbbell: host A (senders) and host B (receivers), each an anonymous network
//! namespace with one TUN device `cclab0`, MTU 1500, in 10.77.0.0/24.
//!
//! DECISION (anonymous namespaces): the namespaces are never bind-mounted under /run/netns. They are
//! held only by this process's descriptors (the namespace files, the TUN devices, the sockets), so the
//! kernel destroys them — and the TUN devices with them — whenever the process ends, however it ends
//! (return, panic, Ctrl-C, SIGKILL). No supervisor is needed for teardown and nothing can be left behind;
//! `cclab-net cleanup` exists for named leftovers of other tools or older versions.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::sys::{self, Netns};

pub const TUN_NAME: &str = "cclab0";
pub const ADDR_A: [u8; 4] = [10, 77, 0, 1];
pub const ADDR_B: [u8; 4] = [10, 77, 0, 2];
pub const PREFIX: u8 = 24;
pub const MTU: i32 = 1500;
/// The TUN device's transmit queue (packets). Large so that a window-sized burst from a host waits in
/// it for the emulator's next read instead of being dropped before the emulated link.
pub const TXQLEN: i32 = 10_000;
/// The hosts' ephemeral port range: above the flow ports [`crate::plan::BASE_PORT`]`..+64`.
pub const EPHEMERAL_PORTS: &str = "41000 60999";
/// Kernel TCP's socket-buffer autotuning bounds in each host (min, default, max bytes): Linux's min and
/// default, a 256 MB max (set when the datapath's limit was 200 Mbit/s: its BDP × a 1 s RTT × BBR's
/// Startup gain 2.89 is 72 MB; at today's 1 Gbit/s limit the same covers RTTs up to 0.7 s; memory is
/// taken only as a window grows).
pub const TCP_WMEM: &str = "4096 16384 268435456";
pub const TCP_RMEM: &str = "4096 131072 268435456";

pub struct Host {
    pub ns: Netns,
    pub tun: OwnedFd,
    pub addr: Ipv4Addr,
    /// The CPUs (mask) that process packets written into this host's TUN device, if steered.
    pub rps: Option<u64>,
}

impl Host {
    /// Creates the namespace, its TUN device and its configuration (lo up, address, MTU, no IPv6);
    /// `rps`: the CPUs (mask) to steer packets written into the device to ([`sys::CpuLayout`]).
    pub fn create(addr: [u8; 4], rps: Option<u64>) -> io::Result<Host> {
        let ns = Netns::new_anonymous()?;
        let tun = ns.run_in(|| -> io::Result<OwnedFd> {
            let tun = sys::open_tun(TUN_NAME)?;
            sys::configure_if("lo", None, None, None)?;
            // IPv6 would only add router solicitations the emulator has to drop; best effort, since
            // a kernel without IPv6 has no such sysctl and nothing to disable.
            let _ = sys::sysctl("net/ipv6/conf/all/disable_ipv6", "1");
            let _ = sys::sysctl("net/ipv6/conf/default/disable_ipv6", "1");
            // Ephemeral ports start above every flow port (crate::plan), so that a sender's own
            // port never names another flow to the emulator (it keys flows by their receivers' ports).
            sys::sysctl("net/ipv4/ip_local_port_range", EPHEMERAL_PORTS)?;
            // Kernel TCP's socket buffers may grow far beyond Linux's default 4 MB (send) and 6 MB
            // (receive) maxima, so that a kernel sender, like ours, is never limited by its socket
            // buffer. With the defaults, a kernel BBR flow at 160 ms on 100 Mbit/s behind a 1 000-packet
            // queue (RTT 0.32 s, Startup's gain 2.89) filled its 4 MB send buffer: its delivery-rate
            // samples were then application-limited, BBR never saw its bandwidth plateau, and the
            // flow stayed in Startup for the whole run, dropping 80 000 packets a minute
            // (docs/validation.md, BBR at 40/160 ms).
            sys::sysctl("net/ipv4/tcp_wmem", TCP_WMEM)?;
            sys::sysctl("net/ipv4/tcp_rmem", TCP_RMEM)?;
            sys::configure_if(TUN_NAME, Some((addr, PREFIX)), Some(MTU), Some(TXQLEN))?;
            Ok(tun)
        })??;
        // The host's stack runs off the emulator's CPU (sys::CpuLayout). Best effort: without it the
        // run is correct, only its timing at high rates is worse; the summary says which it was.
        let rps = rps.and_then(|mask| match sys::set_rps_cpus(&ns, TUN_NAME, mask) {
            Ok(()) => Some(mask),
            Err(e) => {
                eprintln!("warning: receive packet steering not set ({e}); the emulator thread runs the hosts' stacks");
                None
            }
        });
        Ok(Host {
            ns,
            tun,
            addr: Ipv4Addr::from(addr),
            rps,
        })
    }

    /// What the host's own stack dropped, which no link counter sees: its UDP counters
    /// (`/proc/net/snmp`, as `udp.<name>`: `udp.RcvbufErrors` is a receive buffer that overflowed) and
    /// its TUN device's (`/proc/net/dev`: `tun.tx_dropped` counts packets the host sent while the
    /// device's queue to the emulator was full, `tun.rx_dropped` packets the emulator wrote that the
    /// host refused). Read in the host's namespace.
    pub fn counters(&self) -> io::Result<std::collections::BTreeMap<String, u64>> {
        let (snmp, dev) = self.ns.run_in(|| {
            (
                std::fs::read_to_string("/proc/thread-self/net/snmp"),
                std::fs::read_to_string("/proc/thread-self/net/dev"),
            )
        })?;
        let (snmp, dev) = (snmp?, dev?);
        let mut out = std::collections::BTreeMap::new();
        let mut rows = snmp.lines().filter(|l| l.starts_with("Udp:"));
        if let (Some(names), Some(values)) = (rows.next(), rows.next()) {
            for (n, v) in names
                .split_whitespace()
                .zip(values.split_whitespace())
                .skip(1)
            {
                if let Ok(v) = v.parse() {
                    out.insert(format!("udp.{n}"), v);
                }
            }
        }
        // "cclab0: rx_bytes rx_packets rx_errs rx_drop ... (8 rx fields) tx_bytes tx_packets tx_errs
        // tx_drop ..."
        let tun_row = format!("{TUN_NAME}:");
        if let Some(line) = dev.lines().find(|l| l.trim_start().starts_with(&tun_row)) {
            let f: Vec<u64> = line
                .split_once(':')
                .map_or("", |(_, r)| r)
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            if f.len() >= 12 {
                out.insert("tun.rx_dropped".into(), f[3]);
                out.insert("tun.tx_dropped".into(), f[11]);
            }
        }
        Ok(out)
    }

    pub fn tun_fd(&self) -> RawFd {
        self.tun.as_raw_fd()
    }
}

/// Host A and host B.
pub struct Dumbbell {
    pub a: Host,
    pub b: Host,
}

impl Dumbbell {
    /// Both hosts, their stacks where the packets written into them are processed in the writer's
    /// context (no RPS).
    pub fn create() -> io::Result<Dumbbell> {
        Self::create_with(None)
    }

    /// Both hosts, their packet processing steered to the CPUs of `rps` ([`sys::CpuLayout`]).
    pub fn create_with(rps: Option<u64>) -> io::Result<Dumbbell> {
        Ok(Dumbbell {
            a: Host::create(ADDR_A, rps)?,
            b: Host::create(ADDR_B, rps)?,
        })
    }

    /// The CPUs both hosts' stacks are steered to (empty unless both are).
    pub fn rps_cpus(&self) -> Vec<usize> {
        match (self.a.rps, self.b.rps) {
            (Some(a), Some(b)) if a == b => sys::cpus_of(a).collect(),
            _ => Vec::new(),
        }
    }

    /// TUN descriptors in the emulator's order (A, B).
    pub fn tuns(&self) -> [RawFd; 2] {
        [self.a.tun_fd(), self.b.tun_fd()]
    }
}
