//! The user-space half: loads the BPF program under a congestion-control name, turns its events into
//! algorithm hooks (one [`FlowAdapter`] per socket), writes decisions into the program's mapped
//! memory, and keeps the heartbeat that holds off the program's Reno fallback.
//!
//! One controller serves every socket that selects its name, in any network namespace: the kernel's
//! list of congestion controls is global. It runs on its own thread; the BPF object, its link and the
//! ring buffer never leave that thread. Dropping the registration (stop, or the process dying) removes
//! the name at once; sockets already using it keep the program (the kernel holds a reference) and
//! continue on the Reno fallback until they close, when the last map goes with them.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::ptr::{addr_of, addr_of_mut};
use std::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use cclab_cc::cc::CongestionControl;
use cclab_transport::stats::LogHistogram;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{libbpf_sys, RingBufferBuilder};
use std::os::fd::{AsFd, AsRawFd, FromRawFd};

use crate::events::{decision_flag, kind, Decision, Event, FlowKey};
use crate::flow::FlowAdapter;
use crate::skel::{types, CclabCcSkelBuilder};

/// `CCLAB_MAX_FLOWS` in events.h.
pub const MAX_FLOWS: usize = 4096;

/// `CCLAB_DELAY_BUCKETS` in events.h.
const DELAY_BUCKETS: usize = 10_000;

/// Linux's TCP_CA_NAME_MAX, with the terminating NUL.
const NAME_MAX: usize = 16;

/// Picks the algorithm for a new connection: given the connection and Linux's MSS for it, the
/// algorithm and the wire size of a full packet it should assume, or None to leave the socket to
/// the Reno fallback (counted).
pub type Chooser =
    Box<dyn FnMut(&FlowKey, u32) -> Option<(Box<dyn CongestionControl>, u32)> + Send>;

#[derive(Clone, Debug)]
pub struct Options {
    /// The name sockets select with `TCP_CONGESTION` (at most 15 bytes).
    pub name: String,
    /// The program falls back to Reno when the controller has been silent this long.
    pub stale: Duration,
    /// The program wakes the controller for ACK records at most this often (other records at once).
    pub wake: Duration,
    /// The ring buffer's size in bytes (a power of two, at least a page): 8 MiB holds 65 536
    /// records, about 70 ms of ACKs at 1 Gbit/s without delayed ACKs. Smaller rings drop sooner when
    /// the controller falls behind (the fault tests use one).
    pub ring_bytes: u32,
    /// Count the program's own run time (BPF_ENABLE_STATS while the controller runs): fills
    /// [`Stats::kernel_ns_per_ack`]. Linux then times every BPF program on the machine (two clock
    /// reads per run), so it is off unless asked for.
    pub kernel_stats: bool,
}

impl Options {
    pub fn new(name: impl Into<String>) -> Options {
        Options {
            name: name.into(),
            stale: Duration::from_millis(250),
            wake: Duration::from_micros(200),
            ring_bytes: 8 << 20,
            kernel_stats: false,
        }
    }
}

/// What the controller measured; read with [`Controller::stats`] at any time.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub events: u64,
    pub acks: u64,
    pub state_changes: u64,
    pub undos: u64,
    pub flows_started: u64,
    pub flows_ended: u64,
    /// Sockets that selected the name but were refused by the chooser (they run the fallback).
    pub flows_refused: u64,
    /// Events the program could not queue (ring full: the controller fell behind).
    pub dropped: u64,
    /// ACKs the program handled with its Reno fallback.
    pub fallback_acks: u64,
    /// Decisions the program applied.
    pub applied: u64,
    /// Records too short to be ours (never expected; counted, not read).
    pub malformed: u64,
    /// Records of a flow the controller has no adapter for (refused, or its INIT was dropped).
    pub unknown_flow: u64,
    /// Delay from the kernel's ACK event to the decision being written, ns.
    pub latency: LogHistogram,
    /// Delay from a record to the ACK on which the kernel first applied the decision answering it,
    /// ns: the program's own 1-µs buckets up to 10 ms, each folded in at its middle.
    pub applied_latency: LogHistogram,
    /// CPU time of the controller thread, s (user + system).
    pub cpu_s: f64,
    /// Mean run time of the program's per-ACK hook (`cong_control`) in the kernel, ns, when
    /// [`Options::kernel_stats`] is on.
    pub kernel_ns_per_ack: Option<f64>,
}

/// A running controller. Dropping it stops it (and unregisters the name).
pub struct Controller {
    name: String,
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<Stats>>,
    thread: Option<JoinHandle<Result<(), String>>>,
}

impl Controller {
    /// Loads the program, registers `opts.name` and starts serving. Returns once sockets can select
    /// the name; errors say what is missing (root, BTF, a taken name).
    pub fn start(opts: Options, chooser: Chooser) -> Result<Controller, String> {
        let page = 4096;
        if !opts.ring_bytes.is_power_of_two() || opts.ring_bytes < page {
            return Err(format!(
                "ring size {} bytes: a power of two, at least {page}",
                opts.ring_bytes
            ));
        }
        if opts.name.is_empty() || opts.name.len() >= NAME_MAX || !opts.name.is_ascii() {
            return Err(format!(
                "congestion-control name {:?}: 1 to {} ASCII bytes",
                opts.name,
                NAME_MAX - 1
            ));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(Stats::default()));
        let (ready_tx, ready_rx) = mpsc::channel();
        let thread = {
            let (stop, stats, opts) = (stop.clone(), stats.clone(), opts.clone());
            std::thread::Builder::new()
                .name(format!("bpf-{}", opts.name))
                .spawn(move || serve(opts, chooser, stop, stats, ready_tx))
                .map_err(|e| e.to_string())?
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Controller {
                name: opts.name,
                stop,
                stats,
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(match thread.join() {
                Ok(Err(e)) => e,
                _ => "the controller thread ended before it was ready".into(),
            }),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn stats(&self) -> Stats {
        self.stats.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Stops serving and unregisters the name; returns the final statistics.
    pub fn stop(mut self) -> Result<Stats, String> {
        self.shutdown()?;
        Ok(self.stats())
    }

    fn shutdown(&mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| "the controller thread panicked".to_string())?,
            None => Ok(()),
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer; CLOCK_MONOTONIC is bpf_ktime_get_ns's clock.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A program's mean run time in ns (run time / run count from BPF_OBJ_GET_INFO_BY_FD).
fn prog_ns_per_run(fd: std::os::fd::RawFd) -> Option<f64> {
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: info and len describe a valid buffer; fd is the loaded program's.
    let r = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd, &mut info, &mut len) };
    (r == 0 && info.run_cnt > 0).then(|| info.run_time_ns as f64 / info.run_cnt as f64)
}

fn thread_cpu_s() -> f64 {
    // SAFETY: rusage is plain old data; RUSAGE_THREAD reports the calling thread.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The program's mapped .bss: written by both sides, so only ever touched through raw pointers with
/// volatile or atomic accesses (no Rust reference to it is held).
#[derive(Clone, Copy)]
struct Shared(*mut types::bss);

impl Shared {
    fn heartbeat(&self, now: u64) {
        // SAFETY: the pointer is the live mapping of the loaded object's .bss (see serve()).
        unsafe { addr_of_mut!((*self.0).heartbeat_ns).write_volatile(now) }
    }

    fn counter(&self, f: impl Fn(*const types::bss) -> *const u64) -> u64 {
        // SAFETY: as above; f only projects a field.
        unsafe { f(self.0).read_volatile() }
    }

    /// The program's ACK-to-applied histogram.
    fn applied_histogram(&self) -> LogHistogram {
        let mut h = LogHistogram::default();
        for i in 0..DELAY_BUCKETS {
            // SAFETY: i < the array's length; the mapping is live.
            let n = unsafe { addr_of!((*self.0).applied_delay_us[i]).read_volatile() };
            if n > 0 {
                h.record_n(i as u64 * 1000 + 500, n);
            }
        }
        h
    }

    /// Writes one flow's decision under the slot's sequence lock (odd while writing): the program
    /// reads the sequence before and after and skips a torn slot.
    fn write(&self, flow: u32, d: &Decision) {
        let i = flow as usize & (MAX_FLOWS - 1);
        // SAFETY: i < MAX_FLOWS, the array's length; the mapping is live and 4-byte aligned.
        unsafe {
            let slot = addr_of_mut!((*self.0).decisions[i]);
            let seq = AtomicU32::from_ptr(addr_of_mut!((*slot).seq));
            let s = seq.load(Ordering::Relaxed);
            let s = if s & 1 == 1 { s + 1 } else { s };
            seq.store(s + 1, Ordering::Relaxed);
            fence(Ordering::Release);
            addr_of_mut!((*slot).flow).write_volatile(flow);
            addr_of_mut!((*slot).epoch).write_volatile(d.epoch);
            addr_of_mut!((*slot).cwnd).write_volatile(d.cwnd);
            addr_of_mut!((*slot).ssthresh).write_volatile(d.ssthresh);
            let flags = if d.pacing { decision_flag::PACE } else { 0 }
                | if d.reno { decision_flag::RENO } else { 0 }
                | if d.prr { decision_flag::PRR } else { 0 };
            addr_of_mut!((*slot).flags).write_volatile(flags);
            addr_of_mut!((*slot).pacing_rate).write_volatile(d.pacing_rate);
            addr_of_mut!((*slot).event_ns).write_volatile(d.event_ns);
            fence(Ordering::Release);
            seq.store(s + 2, Ordering::Release);
        }
    }
}

struct Flows {
    chooser: Chooser,
    origin_ns: u64,
    adapters: HashMap<u32, FlowAdapter>,
    stats: Stats,
    /// CCLAB_BPF_TRACE set: every non-ACK record and the decision it gave, on stderr.
    trace: bool,
}

impl Flows {
    fn handle(&mut self, shared: Shared, bytes: &[u8]) {
        self.stats.events += 1;
        let Some(e) = Event::parse(bytes) else {
            self.stats.malformed += 1;
            return;
        };
        let d = match e.kind {
            kind::INIT => {
                self.stats.flows_started += 1;
                match (self.chooser)(&e.tuple(), e.mss) {
                    Some((cc, packet_size)) => {
                        let a = FlowAdapter::new(cc, &e, self.origin_ns, packet_size);
                        let d = a.decision();
                        self.adapters.insert(e.flow, a);
                        Some(d)
                    }
                    None => {
                        self.stats.flows_refused += 1;
                        Some(Decision {
                            reno: true,
                            ..Decision::default()
                        })
                    }
                }
            }
            kind::RELEASE => {
                if self.adapters.remove(&e.flow).is_some() {
                    self.stats.flows_ended += 1;
                }
                None
            }
            _ => match self.adapters.get_mut(&e.flow) {
                Some(a) => {
                    match e.kind {
                        kind::ACK => self.stats.acks += 1,
                        kind::STATE => self.stats.state_changes += 1,
                        kind::UNDO => self.stats.undos += 1,
                        _ => {}
                    }
                    Some(a.on_event(&e))
                }
                None => {
                    self.stats.unknown_flow += 1;
                    None
                }
            },
        };
        if self.trace && e.kind != kind::ACK {
            eprintln!(
                "cclab-bpf: t={:.6} flow {} kind {} state {} epoch {} cwnd {} ssthresh {} in_flight {} \
                 packets_out {} lost {} backoff {} -> {:?}",
                e.now_ns.saturating_sub(self.origin_ns) as f64 * 1e-9,
                e.flow,
                e.kind,
                e.state,
                e.epoch,
                e.cwnd,
                e.ssthresh,
                e.in_flight,
                e.packets_out,
                e.lost,
                e.backoff,
                d
            );
        }
        if let Some(mut d) = d {
            d.event_ns = e.now_ns;
            shared.write(e.flow, &d);
            if e.kind == kind::ACK {
                self.stats
                    .latency
                    .record(monotonic_ns().saturating_sub(e.now_ns));
            }
        }
    }

    /// Runs algorithm timers that are due; returns the earliest one still pending.
    fn timers(&mut self, shared: Shared, now: u64) -> Option<u64> {
        let mut next: Option<u64> = None;
        for (flow, a) in self.adapters.iter_mut() {
            if let Some(t) = a.next_timer_ns() {
                if t <= now {
                    let d = Decision {
                        event_ns: now,
                        ..a.on_timer(now)
                    };
                    shared.write(*flow, &d);
                }
            }
            if let Some(t) = a.next_timer_ns() {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        next
    }
}

fn serve(
    opts: Options,
    chooser: Chooser,
    stop: Arc<AtomicBool>,
    stats_out: Arc<Mutex<Stats>>,
    ready: mpsc::Sender<Result<(), String>>,
) -> Result<(), String> {
    let fail = |what: &str, e: libbpf_rs::Error| {
        let msg = format!(
            "{what}: {e} (the kernel datapath needs root, a kernel with BTF and BPF struct_ops \
             (Linux 6.4 or later), and a congestion-control name not already registered)"
        );
        let _ = ready.send(Err(msg.clone()));
        msg
    };
    let mut object = MaybeUninit::uninit();
    let mut open = CclabCcSkelBuilder::default()
        .open(&mut object)
        .map_err(|e| fail("opening the BPF program", e))?;
    {
        let ops = open.struct_ops.cclab_ops_mut();
        ops.name = [0; NAME_MAX];
        for (d, s) in ops.name.iter_mut().zip(opts.name.bytes()) {
            *d = s as i8;
        }
    }
    open.maps
        .cclab_events
        .set_max_entries(opts.ring_bytes)
        .map_err(|e| fail("sizing the ring buffer", e))?;
    if let Some(ro) = open.maps.rodata_data.as_mut() {
        ro.stale_ns = opts.stale.as_nanos() as u64;
        ro.wake_ns = opts.wake.as_nanos() as u64;
    }
    let mut skel = open
        .load()
        .map_err(|e| fail("loading the BPF program", e))?;
    let shared = match skel.maps.bss_data.as_deref_mut() {
        Some(b) => Shared(b as *mut types::bss),
        None => {
            let msg = "the BPF program's .bss is not mapped".to_string();
            let _ = ready.send(Err(msg.clone()));
            return Err(msg);
        }
    };
    // A heartbeat before the first socket can arrive, so it starts under control.
    shared.heartbeat(monotonic_ns());
    let flows = std::cell::RefCell::new(Flows {
        chooser,
        origin_ns: monotonic_ns(),
        adapters: HashMap::new(),
        stats: Stats::default(),
        trace: std::env::var_os("CCLAB_BPF_TRACE").is_some(),
    });
    let mut rb = RingBufferBuilder::new();
    rb.add(&skel.maps.cclab_events, |bytes: &[u8]| {
        flows.borrow_mut().handle(shared, bytes);
        0
    })
    .map_err(|e| fail("the ring buffer", e))?;
    let rb = rb.build().map_err(|e| fail("the ring buffer", e))?;
    // Held for the controller's life: Linux times BPF programs while this descriptor is open.
    let _stats_fd = if opts.kernel_stats {
        // SAFETY: plain syscall wrapper; the descriptor is owned below.
        let fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
        // SAFETY: a fresh descriptor we own.
        (fd >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
    } else {
        None
    };
    let ack_prog = skel.progs.cclab_cong_control.as_fd().as_raw_fd();
    let link = skel
        .maps
        .cclab_ops
        .attach_struct_ops()
        .map_err(|e| fail(&format!("registering {:?}", opts.name), e))?;
    let _ = ready.send(Ok(()));

    let publish = |flows: &Flows| {
        let mut s = flows.stats.clone();
        s.dropped = shared.counter(|b| unsafe { addr_of!((*b).dropped) });
        s.fallback_acks = shared.counter(|b| unsafe { addr_of!((*b).fallback_acks) });
        s.applied = shared.counter(|b| unsafe { addr_of!((*b).applied) });
        s.applied_latency = shared.applied_histogram();
        s.cpu_s = thread_cpu_s();
        s.kernel_ns_per_ack = if opts.kernel_stats {
            prog_ns_per_run(ack_prog)
        } else {
            None
        };
        if let Ok(mut out) = stats_out.lock() {
            *out = s;
        }
    };
    let mut last_publish = 0u64;
    let mut result = Ok(());
    while !stop.load(Ordering::Relaxed) {
        let now = monotonic_ns();
        shared.heartbeat(now);
        let next = flows.borrow_mut().timers(shared, now);
        // Poll granularity is 1 ms (epoll); a timer due sooner is polled without sleeping.
        let timeout = match next {
            Some(t) if t <= now + 1_000_000 => Duration::ZERO,
            _ => Duration::from_millis(1),
        };
        if let Err(e) = rb.poll(timeout) {
            if e.kind() != libbpf_rs::ErrorKind::Interrupted {
                result = Err(format!("polling the ring buffer: {e}"));
                break;
            }
        }
        // ACK records queued without a wake-up (the program wakes us at most every `wake`) are not
        // reported by epoll: read whatever is there on every pass, so none waits longer than the
        // 1 ms poll. Reading the ring's positions is a memory load, not a syscall.
        let _ = rb.consume();
        if now - last_publish > 50_000_000 {
            publish(&flows.borrow());
            last_publish = now;
        }
    }
    // Unregister the name before the final statistics, so nothing new attaches meanwhile.
    drop(link);
    let _ = rb.consume();
    publish(&flows.borrow());
    result
}

/// A quantile of a delay histogram in seconds (None when it is empty).
fn quantile_s(h: &LogHistogram, pct: u64) -> Option<f64> {
    h.quantile(pct, 100).map(|ns| ns as f64 * 1e-9)
}

/// The statistics as one JSON object (the `cclab-bpf` binary prints it, `cclab net run` puts it in the
/// summary; tests and docs read it).
pub fn stats_json(s: &Stats) -> serde_json::Value {
    serde_json::json!({
        "events": s.events,
        "acks": s.acks,
        "state_changes": s.state_changes,
        "undos": s.undos,
        "flows_started": s.flows_started,
        "flows_ended": s.flows_ended,
        "flows_refused": s.flows_refused,
        "dropped": s.dropped,
        "fallback_acks": s.fallback_acks,
        "applied": s.applied,
        "malformed": s.malformed,
        "unknown_flow": s.unknown_flow,
        "ack_to_decision_p50_s": quantile_s(&s.latency, 50),
        "ack_to_decision_p99_s": quantile_s(&s.latency, 99),
        "ack_to_applied_p50_s": quantile_s(&s.applied_latency, 50),
        "ack_to_applied_p99_s": quantile_s(&s.applied_latency, 99),
        "cpu_s": s.cpu_s,
        "kernel_ns_per_ack": s.kernel_ns_per_ack,
    })
}
