//! Several datagrams per system call on our endpoints' UDP sockets: a sender's burst goes out as one
//! UDP GSO datagram (`sendmsg` with a `UDP_SEGMENT` control message: one trip through the socket, UDP
//! and IP layers, cut into wire packets at the device), and both ends read with `recvmmsg`.
//!
//! Why: with the CPU layout of a 1 Gbit/s run, our endpoints and both hosts' stacks share one CPU, and
//! a paced sender spent about 16 µs of it per data packet (`sendto` 23 %, the timer 12 %):
//! docs/real-datapath.md, "Why our paced senders stopped at 0.7–0.8 of 1 Gbit/s". What the network sees
//! does not change: the kernel segments a GSO datagram before any device that cannot take it whole (our
//! TUN devices have no offloads: every packet the emulator reads is one wire packet; on loopback the
//! relay's socket, without `UDP_GRO`, receives the segments one by one).

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

use crate::sys::{self, RecvMeta};

/// Most datagrams in one GSO send. Linux takes up to `UDP_MAX_SEGMENTS` (64 before 6.2, 128 since);
/// 64 works on both.
pub const GSO_MAX_SEGMENTS: usize = 64;
/// Most bytes in one GSO send: a UDP payload on IPv4 is at most 65 507 bytes.
const GSO_MAX_BYTES: usize = 65_507;

/// Our data datagrams waiting to be sent, in order, and whether the kernel takes GSO sends on this
/// socket.
pub struct TxBatch {
    buf: Vec<u8>,
    /// Datagram lengths, front first; the front datagram starts at `buf[head..]`.
    lens: VecDeque<usize>,
    head: usize,
    gso: bool,
}

/// What one [`TxBatch::send_front`] put on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    pub datagrams: usize,
    pub bytes: usize,
}

/// Counters of the sender's batching, reported per flow (`gso_sends`, `gso_segments`, `gso_refused`).
#[derive(Clone, Copy, Debug, Default)]
pub struct GsoStats {
    /// GSO sends (of two datagrams or more) and the datagrams they carried.
    pub sends: u64,
    pub segments: u64,
    /// Times the kernel refused a GSO send (EIO: the route's device cannot checksum for it; EINVAL:
    /// no support): the datagrams then went one per call, and GSO stays off for the socket.
    pub refused: u64,
}

impl GsoStats {
    pub fn publish(&self, p: &crate::probe::FlowProbe) {
        use std::sync::atomic::Ordering::Relaxed;
        p.gso_sends.store(self.sends, Relaxed);
        p.gso_segments.store(self.segments, Relaxed);
        p.gso_refused.store(self.refused, Relaxed);
    }
}

impl TxBatch {
    /// `gso`: try GSO sends (off: one `send` per datagram, as before GSO was built).
    pub fn new(gso: bool) -> TxBatch {
        TxBatch {
            buf: Vec::with_capacity(GSO_MAX_BYTES + 2048),
            lens: VecDeque::with_capacity(GSO_MAX_SEGMENTS),
            head: 0,
            gso,
        }
    }

    pub fn len(&self) -> usize {
        self.lens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    /// Whether GSO sends are (still) used.
    pub fn gso(&self) -> bool {
        self.gso
    }

    /// Appends a datagram of `len` bytes written by `emit` into the slice it is given.
    pub fn push_with(&mut self, len: usize, emit: impl FnOnce(&mut [u8])) {
        let at = self.buf.len();
        self.buf.resize(at + len, 0);
        emit(&mut self.buf[at..]);
        self.lens.push_back(len);
    }

    /// How many datagrams from the front go in one GSO send: all of one size (the first's), except
    /// that the last may be shorter (the kernel's rule for `UDP_SEGMENT`), within the count and byte
    /// limits.
    fn front_unit(&self) -> (usize, usize) {
        let Some(&seg) = self.lens.front() else {
            return (0, 0);
        };
        if !self.gso {
            return (1, seg);
        }
        let (mut n, mut bytes) = (0, 0);
        for &l in &self.lens {
            if n == GSO_MAX_SEGMENTS || bytes + l > GSO_MAX_BYTES || l > seg {
                break;
            }
            n += 1;
            bytes += l;
            if l < seg {
                break;
            }
        }
        (n, bytes)
    }

    fn pop(&mut self, n: usize, bytes: usize) {
        self.lens.drain(..n);
        self.head += bytes;
        if self.lens.is_empty() {
            self.buf.clear();
            self.head = 0;
        }
    }

    /// Drops the datagrams the last failed [`TxBatch::send_front`] tried to send (an ICMP-reported
    /// error took them: a loss the transport recovers). Returns how many.
    pub fn drop_front(&mut self) -> usize {
        let (n, bytes) = self.front_unit();
        self.pop(n, bytes);
        n
    }

    /// Sends the front datagrams on the connected socket `fd`: as one GSO datagram where there are two
    /// or more of a size, else one. Errors are the socket's (would-block included) and leave the batch
    /// as it was, except a GSO send the kernel refuses (EIO, EINVAL): that turns GSO off for this batch
    /// (counted in `stats.refused`) and the datagrams go one per call from then on.
    pub fn send_front(&mut self, fd: RawFd, stats: &mut GsoStats) -> io::Result<Sent> {
        loop {
            let (n, bytes) = self.front_unit();
            if n == 0 {
                return Ok(Sent::default());
            }
            let seg = self.lens[0];
            let data = &self.buf[self.head..self.head + bytes];
            let r = if n > 1 {
                send_gso(fd, data, seg as u16)
            } else {
                send_plain(fd, data)
            };
            match r {
                Ok(()) => {
                    if n > 1 {
                        stats.sends += 1;
                        stats.segments += n as u64;
                    }
                    self.pop(n, bytes);
                    return Ok(Sent {
                        datagrams: n,
                        bytes,
                    });
                }
                Err(e) if n > 1 && matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL)) => {
                    stats.refused += 1;
                    self.gso = false;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn send_plain(fd: RawFd, data: &[u8]) -> io::Result<()> {
    // SAFETY: data is a valid slice; the socket is connected.
    let n = unsafe { libc::send(fd, data.as_ptr() as *const libc::c_void, data.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One `sendmsg` of `data` with a `UDP_SEGMENT` control message: the kernel cuts it into datagrams of
/// `seg` bytes (the last may be shorter).
fn send_gso(fd: RawFd, data: &[u8], seg: u16) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // Room for one cmsg carrying a u16, 8-aligned.
    let mut cbuf = [0u64; 4];
    // SAFETY: msghdr is plain old data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
    // SAFETY: CMSG_SPACE is arithmetic.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) } as _;
    // SAFETY: the control buffer holds CMSG_SPACE(2) bytes (32 >= 24), so the first header and its
    // two data bytes lie inside it.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_UDP;
        (*c).cmsg_type = libc::UDP_SEGMENT;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut u16, seg);
    }
    // SAFETY: msg is fully initialised above; the socket is connected (no address).
    let n = unsafe { libc::sendmsg(fd, &msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Datagrams per `recvmmsg`. 32 × 2 KiB: at 1 Gbit/s a receiver woken every 100 µs finds about 8.
pub const RECV_BATCH: usize = 32;
/// Room per datagram: our data and ACK datagrams are under the 1 500-byte MTU; a longer one is
/// truncated, fails the codec check and is counted as malformed, as with one `recvmsg`.
const SLOT: usize = 2048;

/// Buffers for reading up to [`RECV_BATCH`] datagrams per call with their source address, TOS and
/// kernel timestamp (what [`sys::recv_meta`] reads for one).
pub struct RxBatch {
    bufs: Vec<u8>,
    names: Vec<libc::sockaddr_in>,
    ctrl: Vec<[u64; 16]>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    metas: Vec<RecvMeta>,
    /// Off: one `recvmsg` per call (`CCLAB_NET_RECVMMSG=0`, for comparison).
    many: bool,
}

impl RxBatch {
    pub fn new(many: bool) -> RxBatch {
        fn zeroed<T>() -> Vec<T> {
            // SAFETY: used for sockaddr_in, iovec and mmsghdr, plain old data for which all-zero is
            // valid (the pointers are set before every call).
            (0..RECV_BATCH)
                .map(|_| unsafe { std::mem::zeroed() })
                .collect()
        }
        RxBatch {
            bufs: vec![0; RECV_BATCH * SLOT],
            names: zeroed(),
            ctrl: vec![[0; 16]; RECV_BATCH],
            iovs: zeroed(),
            hdrs: zeroed(),
            metas: vec![RecvMeta::default(); RECV_BATCH],
            many,
        }
    }

    /// Reads what is waiting on the non-blocking socket `fd`, up to [`RECV_BATCH`] datagrams; returns
    /// how many (0: nothing). Datagram `i` is then [`RxBatch::get`]`(i)`. Errors as `recvmsg`'s: the
    /// kernel reports a pending socket error (an ICMP report) only on a call that read nothing.
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        if !self.many {
            return Ok(match sys::recv_meta(fd, &mut self.bufs[..SLOT])? {
                Some(m) => {
                    self.metas[0] = m;
                    1
                }
                None => 0,
            });
        }
        for i in 0..RECV_BATCH {
            self.iovs[i] = libc::iovec {
                // SAFETY: slot i lies inside bufs.
                iov_base: unsafe { self.bufs.as_mut_ptr().add(i * SLOT) } as *mut libc::c_void,
                iov_len: SLOT,
            };
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = &mut self.names[i] as *mut libc::sockaddr_in as *mut libc::c_void;
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as _;
            h.msg_iov = &mut self.iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = self.ctrl[i].as_mut_ptr() as *mut libc::c_void;
            h.msg_controllen = std::mem::size_of::<[u64; 16]>() as _;
            h.msg_flags = 0;
            self.hdrs[i].msg_len = 0;
        }
        // SAFETY: every header points into buffers owned by self, which outlive the call.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                self.hdrs.as_mut_ptr(),
                RECV_BATCH as _,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::EINTR) {
                return Ok(0);
            }
            return Err(e);
        }
        let n = n as usize;
        for i in 0..n {
            let h = &self.hdrs[i];
            // SAFETY: the kernel filled header i, its name and control buffer.
            self.metas[i] = unsafe { sys::meta_of(&h.msg_hdr, h.msg_len as usize) };
        }
        Ok(n)
    }

    /// Datagram `i` of the last [`RxBatch::recv`]: its bytes and what came with them.
    pub fn get(&self, i: usize) -> (&[u8], RecvMeta) {
        let m = self.metas[i];
        (&self.bufs[i * SLOT..i * SLOT + m.len.min(SLOT)], m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gso_unit_is_one_size_with_a_shorter_last() {
        let mut b = TxBatch::new(true);
        for l in [100, 100, 100, 60, 100, 120, 120] {
            b.push_with(l, |s| s.fill(1));
        }
        assert_eq!(b.front_unit(), (4, 360));
        b.pop(4, 360);
        // 100 then a longer one: the longer one cannot join.
        assert_eq!(b.front_unit(), (1, 100));
        b.pop(1, 100);
        assert_eq!(b.front_unit(), (2, 240));
        b.pop(2, 240);
        assert!(b.is_empty());
        assert_eq!(b.buf.len(), 0);
    }

    #[test]
    fn a_gso_unit_keeps_to_the_kernels_limits() {
        let mut b = TxBatch::new(true);
        for _ in 0..100 {
            b.push_with(10, |_| {});
        }
        assert_eq!(b.front_unit(), (GSO_MAX_SEGMENTS, 10 * GSO_MAX_SEGMENTS));
        let mut b = TxBatch::new(true);
        for _ in 0..50 {
            b.push_with(1472, |_| {});
        }
        assert_eq!(b.front_unit().0, GSO_MAX_BYTES / 1472);
        let mut b = TxBatch::new(false);
        b.push_with(10, |_| {});
        b.push_with(10, |_| {});
        assert_eq!(b.front_unit(), (1, 10));
    }

    fn pair() -> (std::net::UdpSocket, std::net::UdpSocket) {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        (tx, rx)
    }

    /// Reads every datagram waiting (after a short wait for loopback delivery).
    fn drain(rx: &std::net::UdpSocket, many: bool) -> Vec<(Vec<u8>, RecvMeta)> {
        use std::os::fd::AsRawFd;
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut b = RxBatch::new(many);
        let mut out = Vec::new();
        loop {
            let n = b.recv(rx.as_raw_fd()).unwrap();
            if n == 0 {
                return out;
            }
            for i in 0..n {
                let (d, m) = b.get(i);
                out.push((d.to_vec(), m));
            }
        }
    }

    /// A GSO send on loopback reaches a plain UDP socket (no UDP_GRO) as separate datagrams, each as
    /// pushed; recvmmsg reads them with their source address, one per slot.
    #[test]
    fn a_gso_send_arrives_as_separate_datagrams() {
        use std::os::fd::AsRawFd;
        let (tx, rx) = pair();
        let mut b = TxBatch::new(true);
        let lens = [1000, 1000, 1000, 1000, 1000, 500];
        for (i, &l) in lens.iter().enumerate() {
            b.push_with(l, |s| s.fill(i as u8));
        }
        let mut st = GsoStats::default();
        let sent = b.send_front(tx.as_raw_fd(), &mut st).unwrap();
        assert_eq!(
            sent,
            Sent {
                datagrams: 6,
                bytes: 5500
            }
        );
        assert_eq!((st.sends, st.segments, st.refused), (1, 6, 0));
        assert!(b.is_empty());
        let got = drain(&rx, true);
        assert_eq!(got.len(), 6);
        let from = match tx.local_addr().unwrap() {
            std::net::SocketAddr::V4(a) => a,
            a => panic!("{a}"),
        };
        for (i, (d, m)) in got.iter().enumerate() {
            assert_eq!(d.len(), lens[i]);
            assert!(d.iter().all(|&x| x == i as u8));
            assert_eq!(m.from, Some(from));
        }
    }

    /// The kernel refuses GSO on a socket without UDP checksums (SO_NO_CHECK: EINVAL), as it does
    /// on a route whose device cannot checksum for it (EIO): the refusal is counted once, and every
    /// datagram still goes, one per call.
    #[test]
    fn a_refused_gso_send_falls_back_to_one_datagram_per_call() {
        use std::os::fd::AsRawFd;
        let (tx, rx) = pair();
        sys::setsockopt_int(tx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_NO_CHECK, 1).unwrap();
        let mut b = TxBatch::new(true);
        for i in 0..3u8 {
            b.push_with(200, |s| s.fill(i));
        }
        let mut st = GsoStats::default();
        let mut n = 0;
        while !b.is_empty() {
            n += b.send_front(tx.as_raw_fd(), &mut st).unwrap().datagrams;
        }
        assert_eq!(n, 3);
        assert_eq!((st.sends, st.refused), (0, 1));
        assert!(!b.gso());
        let got = drain(&rx, false);
        assert_eq!(got.iter().map(|(d, _)| d[0]).collect::<Vec<_>>(), [0, 1, 2]);
    }

    /// More datagrams waiting than one recvmmsg takes: the rest come with the next call.
    #[test]
    fn recvmmsg_reads_in_batches() {
        let (tx, rx) = pair();
        for i in 0..(RECV_BATCH + 5) {
            tx.send(&[i as u8; 40]).unwrap();
        }
        let got = drain(&rx, true);
        assert_eq!(got.len(), RECV_BATCH + 5);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, (d, m))| d[0] == i as u8 && m.len == 40));
    }
}
