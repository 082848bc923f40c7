//! The userspace link emulator: the sans-IO [`core::Emulator`] plus the I/O shell [`drive`], which
//! reads packets from two [`Ports`] — the two hosts' TUN devices ([`Tuns`]) or, in loopback mode, the
//! relay's UDP sockets ([`relay::Relay`]) — taking the arrival time per packet, and writes each to the
//! other side when the emulated link delivers it.
//!
//! Single-threaded by design: one thread owns both TUN devices and the whole link state, so no locks
//! touch the packet path and the virtual clock is exact. It sleeps in `ppoll` until the next delivery,
//! with timer slack 1 ns.

pub mod core;
pub mod link;
pub mod relay;

pub use self::core::{
    CrossCounters, Dir, Emulator, FlowRoute, IngressCounters, LinkConfig, LinkCounters,
    LinkSnapshot,
};

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use cclab_cc::time::{Nanos, NS_PER_MS};
use serde::Serialize;

use crate::disturbance::StallLog;
use crate::sys::{self, Clock};

/// How late packets were written to the TUN device compared with their emulated delivery time.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoopStats {
    /// Whether the loop ran at raised priority ([`sys::raise_priority`]); without it, other processes
    /// on the machine can delay deliveries by a scheduler time slice (see the lateness figures).
    pub priority_raised: bool,
    /// The CPU the loop was pinned to, alone ([`sys::CpuLayout`]); None: not pinned.
    pub cpu: Option<usize>,
    /// The CPUs the hosts' network stacks were steered to (RPS on both TUN devices); empty: none, the
    /// loop's writes ran the receiving stack in its own context (loopback mode always).
    pub rps_cpus: Vec<usize>,
    /// The hosts' own counters at the end of the run, A then B ([`crate::hosts::Host::counters`];
    /// namespace mode): packets lost inside a host, not on the link.
    pub hosts: Vec<std::collections::BTreeMap<String, u64>>,
    pub packets_read: u64,
    pub packets_written: u64,
    /// Writes the receiving host's kernel refused (its backlog was full): counted, not retried. In
    /// loopback mode: `sendto`s the relay's socket refused.
    pub tun_write_drops: u64,
    /// Loopback mode only: datagrams to the relay from an address that is no flow's endpoint (dropped).
    pub foreign: u64,
    /// Sleeps in `ppoll` (spin iterations are not counted).
    pub wakeups: u64,
    /// Lateness of writes: mean, 99th percentile (bucket upper bound), max, nanoseconds.
    pub late_mean_ns: f64,
    pub late_p99_ns: u64,
    pub late_max_ns: u64,
    /// The same over the measure window only ([`Placement::window`]; the whole run without one).
    /// What a run's results were computed from, without start-up (and, in a test suite, the kernel's
    /// deferred tear-down of the previous run's namespaces, which took the p99 of the first second of a
    /// 1 Gbit/s run from 16 to 165–285 µs).
    pub window_late_mean_ns: f64,
    pub window_late_p99_ns: u64,
    /// Median lateness over the window (bucket upper bound, ns): with the p99, `net.disturbance`'s
    /// emulator figures.
    pub window_late_p50_ns: u64,
    /// Lateness of every write, and of the writes in the window.
    #[serde(skip)]
    late: Lateness,
    #[serde(skip)]
    window_late: Lateness,
    /// This loop's stalls ([`crate::disturbance`]; reported with the other threads' in `net.stalls`).
    #[serde(skip)]
    pub stalls: StallLog,
}

impl LoopStats {
    fn record_lateness(&mut self, late: Nanos, in_window: bool) {
        self.late_max_ns = self.late_max_ns.max(late);
        self.late.record(late);
        if in_window {
            self.window_late.record(late);
        }
    }

    fn finish(&mut self) {
        (self.late_mean_ns, self.late_p99_ns) = self.late.mean_p99();
        (self.window_late_mean_ns, self.window_late_p99_ns) = self.window_late.mean_p99();
        self.window_late_p50_ns = self.window_late.quantile(0.5);
    }
}

/// Write lateness in 1 µs buckets up to 1 ms (last bucket: ≥ 1 ms), and its sum (ns).
#[derive(Clone, Debug, Default)]
struct Lateness {
    hist: Vec<u64>,
    sum: u128,
}

impl Lateness {
    fn record(&mut self, late: Nanos) {
        if self.hist.is_empty() {
            self.hist = vec![0; 1001];
        }
        self.sum += late as u128;
        self.hist[((late / 1000) as usize).min(1000)] += 1;
    }

    /// Mean and 99th percentile (bucket upper bound), ns; zeros without samples.
    fn mean_p99(&self) -> (f64, u64) {
        let n: u64 = self.hist.iter().sum();
        if n == 0 {
            return (0.0, 0);
        }
        (self.sum as f64 / n as f64, self.quantile(0.99))
    }

    /// The `q` quantile (bucket upper bound), ns; 0 without samples.
    fn quantile(&self, q: f64) -> u64 {
        let n: u64 = self.hist.iter().sum();
        if n == 0 {
            return 0;
        }
        let target = ((n as f64 * q).ceil() as u64).max(1);
        let mut acc = 0;
        for (i, c) in self.hist.iter().enumerate() {
            acc += c;
            if acc >= target {
                return (i as u64 + 1) * 1000;
            }
        }
        self.hist.len() as u64 * 1000
    }
}

/// What ends the loop and how often to sample.
pub struct LoopControl<'a> {
    /// Set by another thread or a signal handler to stop.
    pub stop: &'a AtomicBool,
    /// Stop at this time on the run clock.
    pub end: Option<Nanos>,
    /// Call the sampler every this often.
    pub sample_every: Option<Nanos>,
    /// Its CPU and measure window.
    pub at: Placement,
    /// Longest busy-wait before a deadline (ns). DECISION: a vCPU that went idle wakes ~100–150 µs after
    /// its timer on this machine kind (measured: mean write lateness 127 µs on an idle link, 21 µs on a
    /// busy one). The loop therefore arms its timer early by the mean oversleep seen so far (at most
    /// `spin_max`) and busy-polls the rest, which costs CPU only in proportion to that oversleep.
    /// 0 disables it.
    pub spin_max: Nanos,
}

/// The two packet ports the loop serves: side 0 yields forward packets (host A), side 1 reverse ones
/// (host B). The TUN devices ([`Tuns`]) or, in loopback mode, the relay's sockets
/// ([`relay::Relay`]): everything else about the loop — deliveries, sampling, timer, spin — is shared.
pub trait Ports {
    /// The descriptors to poll for side 0 and side 1.
    fn fds(&self) -> [RawFd; 2];
    /// Whether `revents` of `side` call for reading; an error ends the loop.
    fn readable(&self, side: usize, revents: i16) -> io::Result<bool>;
    /// Reads one packet of `side` into `buf`. Ok(None): nothing waiting; Ok(Some(false)): read but not
    /// from an endpoint of ours (counted in [`LoopStats::foreign`], dropped).
    fn read(&mut self, side: usize, buf: &mut Vec<u8>) -> io::Result<Option<bool>>;
    /// Hands a delivered packet to the host on its side. Ok(false): refused (counted, not retried).
    fn write(&mut self, dir: Dir, pkt: &[u8]) -> io::Result<bool>;
}

/// The two hosts' TUN devices: `[A, B]`. Reading A yields forward packets; reverse packets are
/// written to it.
pub struct Tuns(pub [RawFd; 2]);

impl Ports for Tuns {
    fn fds(&self) -> [RawFd; 2] {
        self.0
    }
    fn readable(&self, side: usize, revents: i16) -> io::Result<bool> {
        if revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
            return Err(io::Error::other(format!(
                "TUN device {side} failed (revents {revents:#x})"
            )));
        }
        Ok(revents & libc::POLLIN != 0)
    }
    fn read(&mut self, side: usize, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
        Ok(sys::read_packet(self.0[side], buf, core::MAX_PACKET)?.then_some(true))
    }
    fn write(&mut self, dir: Dir, pkt: &[u8]) -> io::Result<bool> {
        let fd = match dir {
            Dir::Fwd => self.0[1],
            Dir::Rev => self.0[0],
        };
        sys::write_packet(fd, pkt)
    }
}

/// The loop of both modes: serve every delivery that is due, sample, then sleep until the next
/// deadline or a packet on either port, taking each packet's arrival time right after its read.
pub fn drive<P: Ports>(
    emu: &mut Emulator,
    ports: &mut P,
    clock: &Clock,
    ctl: LoopControl<'_>,
    mut on_sample: impl FnMut(Nanos, &Emulator),
) -> io::Result<LoopStats> {
    sys::set_timer_slack_1ns();
    let mut st = LoopStats {
        priority_raised: sys::raise_priority(sys::Role::Emulator),
        cpu: ctl.at.cpu.filter(|&c| sys::set_affinity(1 << c)),
        ..LoopStats::default()
    };
    let mut timer = sys::TimerFd::new()?;
    // Mean oversleep of timer wake-ups (ns): how much earlier to arm the timer.
    let mut oversleep_ewma = 0.0f64;
    let mut next_sample = ctl.sample_every.map(|_| 0);
    // Bound on one sleep so the stop flag is seen promptly even when the link is idle.
    const MAX_SLEEP: Nanos = 20 * NS_PER_MS;
    // Packets read per port per wake-up before serving deliveries again (keeps write times fair).
    const READ_BATCH: usize = 64;
    // When the loop should next come around ([`crate::disturbance`]).
    let mut due = clock.now();
    loop {
        let now = clock.now();
        st.stalls.due(due, now);
        while let Some((dir, buf, due)) = emu.poll_output(now) {
            if ports.write(dir, &buf)? {
                st.packets_written += 1;
                let t = clock.now();
                let in_window = ctl.at.window.is_none_or(|[a, b]| (a..b).contains(&t));
                st.record_lateness(t.saturating_sub(due), in_window);
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
        // Wake `early` before the deadline and spin (polling the ports) for the rest: see
        // `ctl.spin_max`.
        let early = (oversleep_ewma as Nanos).min(ctl.spin_max);
        let arm = wake.saturating_sub(early);
        st.stalls.due(now, clock.now());
        let [fa, fb] = ports.fds();
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
                // woke on the timer: spin until the deadline unless a packet shows up first
                while clock.now() < wake {
                    if sys::ppoll(&mut fds[..2], Some(0))? > 0 {
                        break;
                    }
                    std::hint::spin_loop();
                }
            }
            let woke = clock.now();
            st.stalls.due(wake, woke);
            due = woke;
            r
        } else {
            let r = sys::ppoll(&mut fds[..2], Some(0))?;
            due = clock.now();
            r
        };
        if ready == 0 && fds[0].revents | fds[1].revents == 0 {
            continue;
        }
        let revents = [fds[0].revents, fds[1].revents];
        for (side, rev) in revents.into_iter().enumerate() {
            if !ports.readable(side, rev)? {
                continue;
            }
            let dir = if side == 0 { Dir::Fwd } else { Dir::Rev };
            for _ in 0..READ_BATCH {
                let mut buf = emu.take_buffer();
                match ports.read(side, &mut buf)? {
                    None => {
                        emu.recycle(buf);
                        break;
                    }
                    Some(false) => {
                        st.packets_read += 1;
                        st.foreign += 1;
                        emu.recycle(buf);
                    }
                    Some(true) => {
                        st.packets_read += 1;
                        // The arrival time is taken per packet, right after its read.
                        let t = clock.now();
                        emu.on_packet(dir, t, buf);
                        // A delivery is due: serve it before reading on. Reading a whole batch first
                        // (each read of a TCP packet costs µs of the host's stack) put the write
                        // lateness p99 at 1 Gbit/s above 100 µs.
                        if emu.next_deadline().is_some_and(|d| d <= t) {
                            break;
                        }
                    }
                }
            }
        }
    }
    st.finish();
    Ok(st)
}

/// Default [`LoopControl::spin_max`].
pub const DEFAULT_SPIN_MAX: Nanos = 60_000;

/// One time-series sample of every link (in link order).
#[derive(Clone, Debug, Serialize)]
pub struct LinkSample {
    pub t: Nanos,
    pub links: Vec<LinkSnapshot>,
}

/// What an emulator thread hands back when stopped.
pub struct Finished {
    pub emulator: Emulator,
    pub stats: LoopStats,
    pub samples: Vec<LinkSample>,
}

/// An emulator running on its own thread.
pub struct Running {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<io::Result<Finished>>,
}

/// Starts the emulator on a thread between TUN devices `tuns` (A, B). The descriptors must stay open
/// until [`Running::stop`] returns (the [`crate::hosts::Dumbbell`] owning them outlives it).
pub fn spawn(
    emu: Emulator,
    tuns: [RawFd; 2],
    clock: Clock,
    sample_every: Option<Nanos>,
) -> Running {
    spawn_on(
        emu,
        Tuns(tuns),
        clock,
        sample_every,
        Placement::default(),
        "cclab-emulator",
    )
}

/// Where and over what a loop runs; the default is neither a CPU nor a window.
#[derive(Clone, Copy, Debug, Default)]
pub struct Placement {
    /// The measure window on the run clock ([`LoopStats::window_late_p99_ns`]); None: the whole run.
    pub window: Option<[Nanos; 2]>,
    /// The CPU to pin the loop to ([`sys::CpuLayout`]); None: not pinned.
    pub cpu: Option<usize>,
}

/// Starts [`drive`] over `ports` on a thread named `name`, sampling every link every `sample_every`.
pub fn spawn_on<P: Ports + Send + 'static>(
    mut emu: Emulator,
    mut ports: P,
    clock: Clock,
    sample_every: Option<Nanos>,
    at: Placement,
    name: &str,
) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let handle = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let mut samples = Vec::new();
            let ctl = LoopControl {
                stop: &s2,
                end: None,
                sample_every,
                at,
                spin_max: DEFAULT_SPIN_MAX,
            };
            let stats = drive(&mut emu, &mut ports, &clock, ctl, |t, e| {
                samples.push(LinkSample {
                    t,
                    links: e.snapshots(),
                })
            })?;
            Ok(Finished {
                emulator: emu,
                stats,
                samples,
            })
        })
        .expect("spawn emulator thread");
    Running { stop, handle }
}

impl Running {
    /// Asks the loop to stop (it notices within one bounded sleep) and waits for it.
    pub fn stop(self) -> io::Result<Finished> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .map_err(|_| io::Error::other("emulator thread panicked"))?
    }
}
