//! Linux kernel TCP as a peer: a bulk sender with its congestion control set per socket
//! (`TCP_CONGESTION`), a sink receiver, and `TCP_INFO` sampling.
//!
//! DECISION (always set the algorithm): a fresh namespace's default is whatever the host's is (bbr on
//! this machine kind), so every sender socket names its algorithm explicitly before connecting, and a
//! missing module is an error naming it rather than a silent fallback.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::sys;

/// The kernel algorithms a scenario may name as `cc = "kernel:<name>"`.
pub const KERNEL_CCS: &[&str] = &["reno", "cubic", "bbr"];

/// Sets TCP_CONGESTION on a socket.
pub fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    // SAFETY: pointer and length describe `name`'s bytes.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr() as *const libc::c_void,
            name.len() as _,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("TCP_CONGESTION {name:?}: {e} (is the module available?)"),
        ));
    }
    Ok(())
}

/// Reads TCP_CONGESTION back.
pub fn get_congestion(fd: RawFd) -> io::Result<String> {
    let mut b = [0u8; 16];
    let mut len = b.len() as libc::socklen_t;
    // SAFETY: buffer and length are valid.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            b.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let s = &b[..len as usize];
    Ok(String::from_utf8_lossy(s.split(|c| *c == 0).next().unwrap_or(s)).into_owned())
}

/// The TCP_INFO fields the time series uses, in SI-friendly units.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpSample {
    pub cwnd_pkts: u32,
    pub srtt_ns: u64,
    pub min_rtt_ns: u64,
    pub bytes_acked: u64,
    pub total_retrans: u32,
    pub pacing_rate_bps: f64,
    pub delivery_rate_bps: f64,
    /// Slow-start threshold in packets (1e12, the simulator's "no loss yet" value, while the kernel
    /// reports TCP_INFINITE_SSTHRESH) and packets in flight as the kernel counts them
    /// (`tcp_packets_in_flight`: unacked − sacked − lost + retransmitted).
    pub ssthresh_pkts: f64,
    pub in_flight_pkts: f64,
}

pub fn tcp_info(fd: RawFd) -> io::Result<TcpSample> {
    // SAFETY: tcp_info is plain old data.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: buffer and length are valid.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut ti as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(TcpSample {
        cwnd_pkts: ti.tcpi_snd_cwnd,
        srtt_ns: ti.tcpi_rtt as u64 * 1000,
        min_rtt_ns: ti.tcpi_min_rtt as u64 * 1000,
        bytes_acked: ti.tcpi_bytes_acked,
        total_retrans: ti.tcpi_total_retrans,
        pacing_rate_bps: ti.tcpi_pacing_rate as f64 * 8.0,
        delivery_rate_bps: ti.tcpi_delivery_rate as f64 * 8.0,
        ssthresh_pkts: if ti.tcpi_snd_ssthresh >= 0x7fff_ffff {
            1e12
        } else {
            ti.tcpi_snd_ssthresh as f64
        },
        in_flight_pkts: (ti.tcpi_unacked as i64 - ti.tcpi_sacked as i64 - ti.tcpi_lost as i64
            + ti.tcpi_retrans as i64)
            .max(0) as f64,
    })
}

/// `TCP_CC_INFO` (include/uapi/linux/inet_diag.h; not in the libc crate).
const TCP_CC_INFO: libc::c_int = 26;

/// Linux BBR's model of the path as `TCP_CC_INFO` exports it (`struct tcp_bbr_info`), in SI units: the
/// bandwidth estimate in payload bits per second (Linux reports payload bytes per second), the
/// propagation-delay estimate, and the two gains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BbrInfo {
    pub btlbw_bps: f64,
    pub rtprop_s: f64,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
}

/// BBR's model, when the socket's congestion control is Linux's `bbr`; None for the others, told by
/// the length the kernel writes (one syscall per sample, no `TCP_CONGESTION` read): reno and cubic
/// export nothing (0 bytes), vegas and dctcp 16-byte structs, BBR 20 bytes.
pub fn bbr_info(fd: RawFd) -> Option<BbrInfo> {
    let mut b = [0u32; 5];
    let mut len = std::mem::size_of_val(&b) as libc::socklen_t;
    // SAFETY: buffer and length are valid; the kernel writes at most `len` bytes.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            TCP_CC_INFO,
            b.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    if r < 0 || (len as usize) < std::mem::size_of_val(&b) {
        return None;
    }
    let [bw_lo, bw_hi, min_rtt_us, pacing_gain, cwnd_gain] = b;
    // Gains are fixed point with 8 fractional bits (BBR_UNIT).
    Some(BbrInfo {
        btlbw_bps: ((bw_hi as u64) << 32 | bw_lo as u64) as f64 * 8.0,
        rtprop_s: min_rtt_us as f64 * 1e-6,
        pacing_gain: pacing_gain as f64 / 256.0,
        cwnd_gain: cwnd_gain as f64 / 256.0,
    })
}

/// Connects a sender socket with `cc` set before the handshake. The calling thread must be in the
/// sending host's namespace.
pub fn connect(to: SocketAddr, cc: &str) -> io::Result<TcpStream> {
    // std offers no hook between socket() and connect(), so build the socket by hand.
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh socket we own from here on.
    let stream: TcpStream = unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) };
    set_congestion(fd, cc)?;
    let SocketAddr::V4(v4) = to else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "IPv4 only"));
    };
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: v4.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*v4.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: valid sockaddr_in pointer and size.
    let r = unsafe {
        libc::connect(
            fd,
            &sin as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as _,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let got = get_congestion(fd)?;
    if got != cc {
        return Err(io::Error::other(format!(
            "asked for TCP congestion control {cc:?}, socket has {got:?}"
        )));
    }
    Ok(stream)
}

/// Writes until `stop`, or `size` bytes were written. Blocking writes with a send timeout so that
/// `stop` is noticed within 50 ms.
pub fn bulk_send(
    mut s: TcpStream,
    size: Option<u64>,
    stop: &AtomicBool,
    written: &AtomicU64,
) -> io::Result<()> {
    s.set_write_timeout(Some(Duration::from_millis(50)))?;
    sys::raise_priority(sys::Role::Endpoint);
    let chunk = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let n = match size {
            Some(sz) if total >= sz => break,
            Some(sz) => ((sz - total) as usize).min(chunk.len()),
            None => chunk.len(),
        };
        match s.write(&chunk[..n]) {
            Ok(k) => {
                total += k as u64;
                written.store(total, Ordering::Relaxed);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
    Ok(())
}

/// Accepts one connection on `l` and counts the bytes it delivers into `received` until EOF or `stop`.
pub fn sink(l: TcpListener, stop: &AtomicBool, received: &AtomicU64) -> io::Result<()> {
    l.set_nonblocking(true)?;
    sys::raise_priority(sys::Role::Endpoint);
    let mut s = loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        match l.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let mut fds = [sys::pollfd(l.as_raw_fd(), libc::POLLIN)];
                sys::ppoll(&mut fds, Some(50_000_000))?;
            }
            Err(e) => return Err(e),
        }
    };
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                total += n as u64;
                received.store(total, Ordering::Relaxed);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
