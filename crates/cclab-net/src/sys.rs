//! Thin, checked wrappers of the Linux calls the real datapath needs: the monotonic clock, timer slack,
//! `ppoll`, network namespaces (anonymous: they vanish with the process), TUN devices and interface
//! configuration by ioctl (so no `ip` binary is needed at run time).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use cclab_cc::time::Nanos;
use serde::Serialize;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as Nanos * 1_000_000_000 + ts.tv_nsec as Nanos
}

/// The run's clock: nanoseconds since the run started (the `now` every sans-IO entry point takes).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    epoch: Nanos,
}

impl Clock {
    /// A run time as an absolute CLOCK_MONOTONIC time (for timerfd deadlines).
    pub fn to_monotonic(&self, t: Nanos) -> Nanos {
        self.epoch + t
    }

    pub fn start() -> Self {
        Clock {
            epoch: monotonic_ns(),
        }
    }
    #[inline]
    pub fn now(&self) -> Nanos {
        monotonic_ns().saturating_sub(self.epoch)
    }
}

/// Sets this thread's timer slack to 1 ns so `ppoll` timeouts fire when asked (the default 50 µs slack
/// would blur packet spacing at 100 Mbit/s, where a packet takes 120 µs).
pub fn set_timer_slack_1ns() {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Who a datapath thread is, for [`raise_priority`]: the emulator outranks the endpoints because its
/// lateness shifts every packet's delivery time, while an endpoint's lateness only delays its own flow.
#[derive(Clone, Copy, Debug)]
pub enum Role {
    Emulator,
    Endpoint,
}

/// Gives the calling thread nice −20 (emulator) or −15 (endpoints) so that other processes on a small
/// machine (a compiler, another test) cannot take scheduler time slices out of packet timing.
///
/// Measured on 2 cores with four busy loops beside the 50 Mbit/s run of `tests/run_real.rs`: goodput
/// 42.99 / 47.68 / 46.87 Mbit/s at nice 0 (the first left the link idle 10 %), 47.81–48.00 (4 runs)
/// at these values. DECISION: not SCHED_FIFO, which did as well under load (48.00 / 47.99 / 47.63) but
/// made an idle link's timing worse: median ping RTT through a 40 ms emulated path 40.52–40.70 ms
/// against 40.28–40.32 at nice 0 and 40.25–40.28 with nice −20 (3 runs each), because a real-time
/// thread's wake-ups and the normal-priority threads it competes with on 2 vCPUs interact badly.
/// Returns false (and changes nothing) without CAP_SYS_NICE or when `CCLAB_NET_PRIORITY=0` is set.
pub fn raise_priority(role: Role) -> bool {
    if turned_off("CCLAB_NET_PRIORITY") {
        return false;
    }
    let nice = match role {
        Role::Emulator => -20,
        Role::Endpoint => -15,
    };
    // SAFETY: plain syscalls with integer arguments; on Linux a thread id names one thread for
    // setpriority (per-thread nice).
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) == 0
    }
}

/// Flow `flow_id`'s data key (`cclab_transport::auth`): both of its endpoints run in this process and
/// derive the same key from one secret the process draws from the kernel's random source at first
/// use, so no key is written anywhere or sent on the wire. Different flows and different processes get
/// unrelated keys (SipHash of the flow id under the secret, a pseudo-random function).
pub fn data_key(flow_id: u32) -> cclab_transport::DataKey {
    static SECRET: std::sync::OnceLock<[u64; 2]> = std::sync::OnceLock::new();
    let secret = SECRET.get_or_init(|| {
        // std's RandomState is keyed from the OS's random source (getrandom(2), /dev/urandom as a
        // fallback): two hashes under it are 128 bits no other process can predict.
        use std::hash::BuildHasher;
        let r = std::collections::hash_map::RandomState::new();
        [r.hash_one(0u64), r.hash_one(1u64)]
    });
    let half = |i: u64| {
        cclab_transport::auth::data_tag(
            secret,
            &cclab_transport::DataSegment {
                seq: flow_id as u64,
                ts: i,
                ..Default::default()
            },
        )
    };
    [half(0), half(1)]
}

/// The real datapath's machine tunings, each turned off by setting its variable to 0 (`CCLAB_NET_SPIN`,
/// off by default, is turned on by 1: `endpoint::SPIN_BELOW`).
pub const TUNINGS: [&str; 6] = [
    "CCLAB_NET_PRIORITY",
    "CCLAB_NET_PIN",
    "CCLAB_NET_SPIN",
    "CCLAB_NET_ACK_TIMESTAMPS",
    "CCLAB_NET_GSO",
    "CCLAB_NET_RECVMMSG",
];

/// Whether the environment variable `name` is set to 0: how each of [`TUNINGS`] is turned off.
/// [`check_tunings`] has refused any other value than 0 or 1 before a run starts.
pub fn turned_off(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| v == "0")
}

/// Every tuning variable that is set holds 0 or 1 (empty counts as unset). Why refuse rather than
/// ignore: `CCLAB_NET_PIN=off` used to leave pinning on without a word, and a comparison the user
/// believed ran unpinned did not.
pub fn check_tunings() -> Result<(), String> {
    check_tunings_in(|name| std::env::var_os(name))
}

fn check_tunings_in(get: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<(), String> {
    for name in TUNINGS {
        match get(name) {
            Some(v) if !(v.is_empty() || v == "0" || v == "1") => {
                return Err(format!(
                    "{name}={}: allowed values are 0 (turn the tuning off) or 1 (on, the default)",
                    v.to_string_lossy()
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Gives the CPU to any other runnable thread on it, if there is one (`sched_yield`).
pub fn yield_now() {
    // SAFETY: a syscall without arguments.
    unsafe { libc::sched_yield() };
}

/// Waits for any of `fds` to become readable (or writable, per their `events`) or for `timeout`
/// (None = forever). Returns the number of ready descriptors; EINTR counts as 0.
pub fn ppoll(fds: &mut [libc::pollfd], timeout: Option<Nanos>) -> io::Result<usize> {
    let ts;
    let tp = match timeout {
        Some(t) => {
            ts = libc::timespec {
                tv_sec: (t / 1_000_000_000) as _,
                tv_nsec: (t % 1_000_000_000) as _,
            };
            &ts as *const libc::timespec
        }
        None => std::ptr::null(),
    };
    // SAFETY: fds is a valid slice of pollfd; tp is null or points to a live timespec.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tp,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

pub fn pollfd(fd: RawFd, events: i16) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// A network namespace held by an open file descriptor. Namespaces made by [`Netns::new_anonymous`] have
/// no name in /run/netns: the kernel frees them (and their TUN devices) when the last descriptor and
/// the last socket in them are closed — on a normal exit, a panic, Ctrl-C or SIGKILL alike.
#[derive(Debug)]
pub struct Netns {
    file: File,
}

impl Netns {
    /// The calling thread's current namespace.
    pub fn current() -> io::Result<Netns> {
        Ok(Netns {
            file: File::open("/proc/thread-self/ns/net")?,
        })
    }

    /// A fresh, empty network namespace (the calling thread stays where it was).
    pub fn new_anonymous() -> io::Result<Netns> {
        let orig = Netns::current()?;
        // SAFETY: unshare affects only the calling thread's network namespace.
        cvt(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
        let ns = Netns::current();
        orig.enter()?;
        ns
    }

    /// Moves the calling thread into this namespace (sockets created afterwards live there).
    pub fn enter(&self) -> io::Result<()> {
        // SAFETY: the fd is a namespace file we own.
        cvt(unsafe { libc::setns(self.file.as_raw_fd(), libc::CLONE_NEWNET) })?;
        Ok(())
    }

    /// Runs `f` inside this namespace and returns the thread to where it was.
    pub fn run_in<R>(&self, f: impl FnOnce() -> R) -> io::Result<R> {
        let orig = Netns::current()?;
        self.enter()?;
        let r = f();
        orig.enter()?;
        Ok(r)
    }

    /// The namespace's inode number (its identity in /proc/*/ns/net links: `net:[inode]`).
    pub fn inode(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        self.file.metadata().map(|m| m.ino()).unwrap_or(0)
    }
}

fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "interface name too long",
        ));
    }
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in r.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    Ok(r)
}

/// Creates a TUN device (IFF_TUN | IFF_NO_PI, non-blocking) in the calling thread's namespace.
pub fn open_tun(name: &str) -> io::Result<OwnedFd> {
    let path = CString::new("/dev/net/tun").expect("no NUL");
    // SAFETY: path is a valid C string.
    let fd = cvt(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: fd was just opened and is owned here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut r = ifreq(name)?;
    r.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF takes a pointer to an ifreq.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut r as *mut libc::ifreq) })?;
    Ok(fd)
}

fn sockaddr_in(addr: [u8; 4]) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(addr),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size; reinterpretation is how the ioctl API works.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

/// Configures an interface in the calling thread's namespace: IPv4 address/prefix (if given), MTU,
/// transmit queue length, up.
pub fn configure_if(
    name: &str,
    addr: Option<([u8; 4], u8)>,
    mtu: Option<i32>,
    txqlen: Option<i32>,
) -> io::Result<()> {
    // SAFETY: plain socket creation.
    let s = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: s was just created and is owned here.
    let s = unsafe { OwnedFd::from_raw_fd(s) };
    let ioctl = |req: libc::c_ulong, r: &mut libc::ifreq| -> io::Result<()> {
        // SAFETY: every request used here takes a pointer to an ifreq.
        cvt(unsafe { libc::ioctl(s.as_raw_fd(), req as _, r as *mut libc::ifreq) }).map(|_| ())
    };
    if let Some((a, prefix)) = addr {
        let mut r = ifreq(name)?;
        r.ifr_ifru.ifru_addr = sockaddr_in(a);
        ioctl(libc::SIOCSIFADDR, &mut r)?;
        let mask = if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - prefix as u32)
        };
        let mut r = ifreq(name)?;
        r.ifr_ifru.ifru_netmask = sockaddr_in(mask.to_be_bytes());
        ioctl(libc::SIOCSIFNETMASK, &mut r)?;
    }
    if let Some(m) = mtu {
        let mut r = ifreq(name)?;
        r.ifr_ifru.ifru_mtu = m;
        ioctl(libc::SIOCSIFMTU, &mut r)?;
    }
    if let Some(q) = txqlen {
        let mut r = ifreq(name)?;
        r.ifr_ifru.ifru_metric = q; // ifr_qlen shares the union slot with ifr_metric
        ioctl(libc::SIOCSIFTXQLEN, &mut r)?;
    }
    let mut r = ifreq(name)?;
    ioctl(libc::SIOCGIFFLAGS, &mut r)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member.
    unsafe { r.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short };
    ioctl(libc::SIOCSIFFLAGS, &mut r)?;
    Ok(())
}

/// Writes a sysctl of the calling thread's namespace (e.g. `net/ipv6/conf/all/disable_ipv6`).
pub fn sysctl(path: &str, value: &str) -> io::Result<()> {
    std::fs::write(format!("/proc/sys/{path}"), value)
}

/// Why root tests and real runs cannot work here, if they cannot.
pub fn unavailable_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network namespaces and TUN devices)".into());
    }
    if std::fs::metadata("/dev/net/tun").is_err() {
        return Some("no /dev/net/tun (TUN driver missing)".into());
    }
    match Netns::new_anonymous() {
        Err(e) => Some(format!("cannot create a network namespace: {e}")),
        Ok(ns) => match ns.run_in(|| open_tun("cclabprobe")) {
            Ok(Ok(_)) => None,
            Ok(Err(e)) | Err(e) => Some(format!("cannot create a TUN device in a namespace: {e}")),
        },
    }
}

/// Reads one packet from a non-blocking fd into `buf` (resized to the packet). Ok(false) = nothing to read.
pub fn read_packet(fd: RawFd, buf: &mut Vec<u8>, cap: usize) -> io::Result<bool> {
    // Read into spare capacity: zeroing `cap` (64 KiB) bytes per packet was a quarter of the emulator
    // thread's time at 1 Gbit/s (perf: memset 11.8 % of both cores), and it touched every page of
    // every pooled buffer.
    buf.clear();
    buf.reserve(cap);
    // SAFETY: the pointer is valid for `cap` bytes of (uninitialised) storage; read writes at most `cap`.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, cap) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::EINTR) {
            return Ok(false);
        }
        return Err(e);
    }
    // SAFETY: the kernel initialised the first n <= cap bytes.
    unsafe { buf.set_len(n as usize) };
    Ok(true)
}

/// Writes one packet; returns false if the kernel refused it for lack of room (counted by the caller).
pub fn write_packet(fd: RawFd, buf: &[u8]) -> io::Result<bool> {
    // SAFETY: buf is a valid slice.
    let n = unsafe { libc::write(fd, buf.as_ptr() as *const libc::c_void, buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS) {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(true)
}

/// What [`recv_meta`] learned besides the bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct RecvMeta {
    pub len: usize,
    /// The IP TOS byte (ECN bits), if IP_RECVTOS is on.
    pub tos: Option<u8>,
    /// Kernel receive timestamp (CLOCK_REALTIME, ns), if SO_TIMESTAMPNS is on.
    pub kernel_ts: Option<u64>,
    /// Source address.
    pub from: Option<std::net::SocketAddrV4>,
}

/// Turns on an integer socket option.
pub fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: pointer to a live c_int of the stated size.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as _,
        )
    })
    .map(|_| ())
}

/// `recvmsg` on a non-blocking datagram socket with TOS and timestamp ancillary data. Ok(None) = nothing
/// to read.
pub fn recv_meta(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<RecvMeta>> {
    // SAFETY: the slice is valid for writes of its length.
    unsafe { recv_meta_raw(fd, buf.as_mut_ptr(), buf.len()) }
}

/// [`recv_meta`] into `buf`'s spare capacity after `headroom` bytes: on success `buf` is `headroom`
/// bytes (left uninitialised for the caller to fill: the relay writes a header there) plus the
/// datagram. The buffer is never zeroed first (at 64 KiB per datagram that cost more than the copy).
pub fn recv_meta_spare(
    fd: RawFd,
    buf: &mut Vec<u8>,
    headroom: usize,
    cap: usize,
) -> io::Result<Option<RecvMeta>> {
    buf.clear();
    buf.reserve(headroom + cap);
    // SAFETY: the pointer is valid for `cap` bytes of storage after `headroom`.
    let meta = unsafe { recv_meta_raw(fd, buf.as_mut_ptr().add(headroom), cap)? };
    if let Some(m) = meta {
        // Zero the headroom so that every byte of the Vec is initialised (28 bytes: cheap).
        buf.spare_capacity_mut()[..headroom].fill(std::mem::MaybeUninit::new(0));
        // SAFETY: headroom bytes were just written, and the kernel wrote m.len <= cap after them.
        unsafe { buf.set_len(headroom + m.len) };
    }
    Ok(meta)
}

/// # Safety
/// `ptr` must be valid for writes of `len` bytes.
unsafe fn recv_meta_raw(fd: RawFd, ptr: *mut u8, len: usize) -> io::Result<Option<RecvMeta>> {
    let mut iov = libc::iovec {
        iov_base: ptr as *mut libc::c_void,
        iov_len: len,
    };
    let mut cbuf = [0u64; 16]; // 128 bytes, 8-aligned: room for TOS and a timespec
                               // SAFETY: sockaddr_in is plain old data.
    let mut from: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    // SAFETY: msghdr is plain old data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = &mut from as *mut libc::sockaddr_in as *mut libc::c_void;
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as _;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
    // SAFETY: msg is fully initialised above.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::EINTR) {
            return Ok(None);
        }
        return Err(e);
    }
    // SAFETY: the kernel filled msg (and `from`, which it points to) for this datagram.
    Ok(Some(unsafe { meta_of(&msg, n as usize) }))
}

/// What a `recvmsg` (or one message of `recvmmsg`) of `len` bytes learnt: the source address
/// `msg.msg_name` points to (a sockaddr_in) and the TOS and timestamp control messages.
///
/// # Safety
/// `msg` must be a message header the kernel just filled: `msg_name` pointing to a sockaddr_in and
/// `msg_control` to its control buffer of `msg_controllen` bytes.
pub(crate) unsafe fn meta_of(msg: &libc::msghdr, len: usize) -> RecvMeta {
    let mut meta = RecvMeta {
        len,
        ..Default::default()
    };
    // SAFETY: msg_name points to a sockaddr_in (the caller's contract).
    let from = unsafe { &*(msg.msg_name as *const libc::sockaddr_in) };
    if msg.msg_namelen as usize >= std::mem::size_of::<libc::sockaddr_in>()
        && from.sin_family == libc::AF_INET as u16
    {
        meta.from = Some(std::net::SocketAddrV4::new(
            std::net::Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)),
            u16::from_be(from.sin_port),
        ));
    }
    // SAFETY: the CMSG_* macros walk the control buffer the kernel filled, within msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let (lvl, ty) = ((*c).cmsg_level, (*c).cmsg_type);
            let data = libc::CMSG_DATA(c);
            if lvl == libc::IPPROTO_IP && ty == libc::IP_TOS {
                meta.tos = Some(*data);
            } else if lvl == libc::SOL_SOCKET && ty == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(data as *const libc::timespec);
                meta.kernel_ts = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    meta
}

/// A CLOCK_MONOTONIC timerfd armed with absolute deadlines. Unlike a `ppoll` timeout, whose slack the
/// kernel sets to 0.1 % of the timeout (20 µs for a 20 ms sleep), a timerfd's hrtimer fires with the
/// thread's timer slack, 1 ns here.
pub struct TimerFd {
    fd: OwnedFd,
    armed: Option<Nanos>,
}

impl TimerFd {
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: plain syscall.
        let fd = cvt(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        })?;
        // SAFETY: fd was just created and is owned here.
        Ok(TimerFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            armed: None,
        })
    }

    /// Arms the timer for the absolute CLOCK_MONOTONIC time `at` (ns); re-arming to the same time is free.
    pub fn arm_at(&mut self, at: Nanos) -> io::Result<()> {
        if self.armed == Some(at) {
            return Ok(());
        }
        let at = at.max(1); // an all-zero it_value would disarm
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at / 1_000_000_000) as _,
                tv_nsec: (at % 1_000_000_000) as _,
            },
        };
        // SAFETY: valid itimerspec pointer; old value not requested.
        cvt(unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        })?;
        self.armed = Some(at);
        Ok(())
    }

    /// Consumes an expiry (after the fd polled readable).
    pub fn clear(&mut self) {
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into a u64; EAGAIN is fine.
        unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                &mut v as *mut u64 as *mut libc::c_void,
                8,
            )
        };
        self.armed = None;
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Sleeps until run time `t` (or until `stop`), in slices of at most 50 ms.
pub fn sleep_until(clock: &Clock, t: Nanos, stop: &AtomicBool) {
    loop {
        let now = clock.now();
        if now >= t || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_nanos((t - now).min(50_000_000)));
    }
}

/// Large socket buffers where allowed (`SO_*BUFFORCE` needs CAP_NET_ADMIN), else as large as
/// `net.core.{r,w}mem_max` lets an unprivileged process have.
pub fn big_buffers(sock: &UdpSocket) -> io::Result<()> {
    let fd = sock.as_raw_fd();
    for (force, plain) in [
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
    ] {
        if setsockopt_int(fd, libc::SOL_SOCKET, force, 8 << 20).is_err() {
            setsockopt_int(fd, libc::SOL_SOCKET, plain, 8 << 20)?;
        }
    }
    Ok(())
}

/// Sets Receive Packet Steering for `dev` of namespace `ns`: packets written into the device are
/// processed by the host's stack on the CPUs of `mask`, not in the writer's context.
///
/// RPS is configured only through sysfs, and sysfs shows the devices of the namespace of whoever
/// mounted it; so a short-lived thread enters `ns`, takes a private mount namespace (a thread may: it
/// unshares only its own filesystem context), mounts a sysfs of its own over /sys and writes
/// `queues/rx-0/rps_cpus`. The mount disappears with the thread.
pub fn set_rps_cpus(ns: &Netns, dev: &str, mask: u64) -> io::Result<()> {
    let fd = ns.file.try_clone()?;
    let dev = dev.to_string();
    std::thread::spawn(move || -> io::Result<()> {
        // SAFETY: each call affects only this thread (namespaces), or a mount namespace private to it.
        unsafe {
            cvt(libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET))?;
            cvt(libc::unshare(libc::CLONE_NEWNS))?;
            cvt(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            cvt(libc::mount(
                c"sysfs".as_ptr(),
                c"/sys".as_ptr(),
                c"sysfs".as_ptr(),
                0,
                std::ptr::null(),
            ))?;
        }
        std::fs::write(
            format!("/sys/class/net/{dev}/queues/rx-0/rps_cpus"),
            format!("{mask:x}"),
        )
    })
    .join()
    .map_err(|_| io::Error::other("rps thread panicked"))?
}

/// How a run's threads and the hosts' packet processing share the CPUs (namespace mode).
///
/// DECISION: the emulator thread gets a CPU of its own and everything else — the endpoint threads and,
/// through Receive Packet Steering on both TUN devices ([`set_rps_cpus`]), the hosts' network stacks —
/// runs on the others. A write to a TUN device otherwise runs the receiving host's whole stack in the
/// writer's context: the emulator thread then did the receiver's TCP work for every data packet and the
/// sender's ACK processing (SACK scoreboard walks of a 3 000-packet window, new transmissions) for every
/// ACK, in stretches of milliseconds. Measured at 1 Gbit/s, kernel cubic, 20 ms, BDP buffer (6 s runs):
/// write lateness p99 98–1 001 µs and p99.9 up to 3.8 ms without; 13–17 µs and 26–370 µs with.
///
/// DECISION: only for runs above [`LAYOUT_ABOVE_BPS`] ([`CpuLayout::for_rate`]). Confining every
/// endpoint to the other CPU costs slower links: a forward and a reverse NewReno flow at 20 Mbit/s (four
/// endpoint threads and both stacks on one CPU) got 13.6 / 13.5 Mbit/s and a mean RTT of 63 ms,
/// against 15.7 / 15.9 and 52 ms with the layout off (the simulator: 16.8 / 16.8). Up to 200 Mbit/s
/// (the limit before the layout, where every accuracy figure of this crate was measured) a run keeps
/// the shared placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CpuLayout {
    /// The emulator thread's CPU.
    pub emulator: usize,
    /// Every other CPU this process may use, as a bit mask (endpoints, RPS).
    pub others: u64,
}

impl CpuLayout {
    /// The layout of a run whose fastest link is `rate_bps`: [`CpuLayout::available`] above
    /// [`LAYOUT_ABOVE_BPS`], else None.
    pub fn for_rate(rate_bps: f64) -> Option<CpuLayout> {
        (rate_bps > LAYOUT_ABOVE_BPS)
            .then(CpuLayout::available)
            .flatten()
    }

    /// The layout this machine allows: None with fewer than two usable CPUs (nothing to separate), or
    /// when `CCLAB_NET_PIN=0` is set. The emulator takes the lowest usable CPU. Computed once.
    pub fn available() -> Option<CpuLayout> {
        static LAYOUT: std::sync::OnceLock<Option<CpuLayout>> = std::sync::OnceLock::new();
        *LAYOUT.get_or_init(|| {
            if turned_off("CCLAB_NET_PIN") {
                return None;
            }
            let set = thread_affinity()?;
            // SAFETY: CPU_ISSET reads a set sched_getaffinity filled.
            let cpus: Vec<usize> = (0..64)
                .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
                .collect();
            let (&emulator, rest) = cpus.split_first()?;
            (!rest.is_empty()).then(|| CpuLayout {
                emulator,
                others: rest.iter().fold(0, |m, &c| m | 1 << c),
            })
        })
    }
}

/// Runs above this rate take the [`CpuLayout`] (see its DECISION).
pub const LAYOUT_ABOVE_BPS: f64 = 200e6;

/// Keeps the calling thread off the emulator's CPU until dropped, then restores its affinity: a run's
/// own thread samples the flows every 100 ms and must not take the emulator's CPU, but the caller (a
/// test harness, a Python process's thread) keeps its placement afterwards.
pub struct OffEmulatorCpu(Option<libc::cpu_set_t>);

impl OffEmulatorCpu {
    pub fn enter(layout: Option<CpuLayout>) -> OffEmulatorCpu {
        let Some(l) = layout else {
            return OffEmulatorCpu(None);
        };
        let old = thread_affinity();
        OffEmulatorCpu(old.filter(|_| set_affinity(l.others)))
    }
}

impl Drop for OffEmulatorCpu {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            // SAFETY: restores a set read by sched_getaffinity for this thread.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), old) };
        }
    }
}

/// Restricts the calling thread to the CPUs of `mask`; returns whether the kernel accepted it.
pub fn set_affinity(mask: u64) -> bool {
    // SAFETY: cpu_set_t is plain old data; the call affects only this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in cpus_of(mask) {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The calling thread's CPU set, if the kernel tells it.
fn thread_affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain old data; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
            .then_some(set)
    }
}

/// The CPUs of a mask (bit c = CPU c), in order.
pub fn cpus_of(mask: u64) -> impl Iterator<Item = usize> {
    (0..64).filter(move |c| mask >> c & 1 == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tuning_variable_other_than_0_or_1_is_refused_by_name() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |n: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        assert!(check_tunings_in(env(&[])).is_ok());
        assert!(check_tunings_in(env(&[("CCLAB_NET_PIN", "0"), ("CCLAB_NET_SPIN", "1")])).is_ok());
        assert!(check_tunings_in(env(&[("CCLAB_NET_PRIORITY", "")])).is_ok());
        let e = check_tunings_in(env(&[("CCLAB_NET_PIN", "off")])).unwrap_err();
        assert!(
            e.starts_with("CCLAB_NET_PIN=off: allowed values are 0"),
            "{e}"
        );
    }
}
