//! A whole real run from a [`RunSpec`]: two hosts, the emulator between them, the flows (Linux kernel
//! TCP for `cc = "kernel:<name>"`, our transport otherwise), sampling, and a JSON result shaped like the
//! simulator's summary (docs/scenario.md) plus the time series ([`crate::report`]).
//!
//! Topology ([`crate::topology`]): any spec's directional links, each flow's packets sent through its own
//! path's links in order; per-flow `extra_delay_fwd/rev` become per-flow access delays in the emulator,
//! keyed by the flow's port ([`crate::plan`]). Cross traffic: unresponsive sources inside the emulator,
//! short transfers as real flows of our transport ([`crate::transfers`]).
//!
//! [`run_with`] reads top-down as its steps: check, hosts, emulator, (loopback) endpoints bound before the
//! relay starts, start times, flow threads, the sampler, stop and collect, the summary.

use std::io;
use std::net::{SocketAddr, SocketAddrV4, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Instant;

use cclab_cc::rng;
use cclab_cc::time::{from_secs, to_secs, Nanos};

use crate::disturbance;
use crate::emulator::{self, relay::Relay};
use crate::endpoint::{ReceiverSetup, SenderSetup};
use crate::hosts::Dumbbell;
use crate::plan::flow_port;
use crate::probe::FlowProbe;
use crate::report::{self, RunResult, Sampled};
use crate::spec::{RunSpec, StartSpec};
use crate::sys::{self, sleep_until, Clock};
use crate::tcp;

/// Highest link rate a run accepts: the measured limit of a 2-core machine (docs/real-datapath.md).
pub const MAX_RATE_BPS: f64 = 1e9;

/// A spec the real datapath cannot run, with the field at fault.
#[derive(Debug)]
pub enum RunError {
    Spec(String),
    Unavailable(String),
    Io(io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spec(m) => write!(f, "{m}"),
            RunError::Unavailable(m) => write!(f, "real datapath unavailable: {m}"),
            RunError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<crate::topology::SpecError> for RunError {
    fn from(e: crate::topology::SpecError) -> Self {
        RunError::Spec(e.0)
    }
}

impl From<io::Error> for RunError {
    fn from(e: io::Error) -> Self {
        RunError::Io(e)
    }
}

/// How a flow is carried.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowKind {
    /// Linux TCP with one of Linux's algorithms (`kernel:<name>`).
    Kernel(String),
    /// Linux TCP steered by our algorithm through the kernel datapath (`bpf:<name>`, crate
    /// cclab-bpf).
    Bpf(String),
    /// Our transport over UDP.
    Ours(String),
}

pub fn flow_kind(cc: &str) -> FlowKind {
    if let Some(k) = cc.strip_prefix("kernel:") {
        FlowKind::Kernel(k.to_string())
    } else if let Some(k) = cc.strip_prefix("bpf:") {
        FlowKind::Bpf(k.to_string())
    } else {
        FlowKind::Ours(cc.to_string())
    }
}

/// Algorithms the kernel datapath cannot carry: they need a field of our own header.
pub const BPF_REFUSED: &[(&str, &str)] = &[(
    "maxnet",
    "needs the router price carried in our own header, which Linux TCP has no field for",
)];

pub use crate::topology::reverse;

/// Checks what the real datapath supports; the error names the field.
pub fn validate(spec: &RunSpec) -> Result<(), RunError> {
    crate::topology::validate(spec, false)?;
    for (i, l) in spec.links.iter().enumerate() {
        if !(l.rate_bps > 0.0 && l.rate_bps <= MAX_RATE_BPS) {
            return Err(RunError::Spec(format!(
                "links[{i}].rate_bps: must be in (0, {MAX_RATE_BPS}] on the real datapath (2-core limit), got {}",
                l.rate_bps
            )));
        }
    }
    if spec.flows.len() > 64 {
        return Err(RunError::Spec(
            "flows: at most 64 flows on the real datapath".into(),
        ));
    }
    for (i, f) in spec.flows.iter().enumerate() {
        match flow_kind(&f.cc) {
            FlowKind::Kernel(k) if !tcp::KERNEL_CCS.contains(&k.as_str()) => {
                return Err(RunError::Spec(format!(
                    "flows[{i}].cc: unknown kernel algorithm {k:?}; allowed: {}",
                    tcp::KERNEL_CCS
                        .iter()
                        .map(|k| format!("kernel:{k}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
            FlowKind::Kernel(_) => {}
            FlowKind::Bpf(name) => {
                if let Some((_, why)) = BPF_REFUSED.iter().find(|(n, _)| *n == name) {
                    return Err(RunError::Spec(format!(
                        "flows[{i}].cc: \"bpf:{name}\" {why} (docs/kernel-datapath.md)"
                    )));
                }
                crate::endpoint::check_sender(&name, f)
                    .map_err(|e| RunError::Spec(format!("flows[{i}].{e}")))?
            }
            FlowKind::Ours(name) => crate::endpoint::check_sender(&name, f)
                .map_err(|e| RunError::Spec(format!("flows[{i}].{e}")))?,
        }
    }
    Ok(())
}

/// How the hosts are connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Two network namespaces with TUN devices (root).
    Tun,
    /// Loopback: every endpoint on 127.0.0.1, the emulator as a UDP relay between them
    /// ([`crate::emulator::relay`]); no root needed, our transport only.
    Loopback,
}

/// What loopback mode cannot run (besides [`validate`]): kernel TCP, which would need the TUN mode's
/// IP-level forwarding. The error names the field.
pub fn validate_loopback(spec: &RunSpec) -> Result<(), RunError> {
    crate::topology::validate(spec, true)?;
    for (i, f) in spec.flows.iter().enumerate() {
        if reverse(f) {
            return Err(RunError::Spec(format!(
                "flows[{i}].path: a reverse flow needs the namespace mode (loopback mode relays one \
                 direction of data)"
            )));
        }
        if let FlowKind::Kernel(_) | FlowKind::Bpf(_) = flow_kind(&f.cc) {
            return Err(RunError::Spec(format!(
                "flows[{i}].cc: {:?} (Linux TCP) needs the namespace mode; loopback mode relays UDP \
                 datagrams and runs our transport only (any algorithm of `cclab-net algorithms` \
                 \"ours\")",
                f.cc
            )));
        }
    }
    Ok(())
}

/// Runs `spec` in real time in the namespace (TUN) mode: see [`run_with`].
pub fn run(
    spec: &RunSpec,
    interrupt: &AtomicBool,
    on_ready: impl FnOnce([u64; 2]),
) -> Result<RunResult, RunError> {
    run_with(spec, Mode::Tun, interrupt, on_ready)
}

/// Runs `spec` in real time. `interrupt` (set by a signal handler) ends the run early; the result then
/// says `interrupted`. Everything created is gone when this returns, whatever happened (the namespaces
/// are anonymous, see [`crate::hosts`]). `on_ready` is called once the hosts exist (with the namespace
/// inode numbers), before any flow starts; in loopback mode there are no hosts and it is not called.
pub fn run_with(
    spec: &RunSpec,
    mode: Mode,
    interrupt: &AtomicBool,
    on_ready: impl FnOnce([u64; 2]),
) -> Result<RunResult, RunError> {
    check(spec, mode)?;
    // The emulator gets a CPU of its own on fast links (sys::CpuLayout); loopback mode never (its
    // relay's sockets are the host's own, and it carries our transport only).
    let layout = match mode {
        Mode::Tun => {
            sys::CpuLayout::for_rate(spec.links.iter().map(|l| l.rate_bps).fold(0.0, f64::max))
        }
        Mode::Loopback => None,
    };
    let _placed = sys::OffEmulatorCpu::enter(layout);
    let wall = Instant::now();
    let hosts = match mode {
        Mode::Tun => {
            let h = Dumbbell::create_with(layout.map(|l| l.others))?;
            on_ready([h.a.ns.inode(), h.b.ns.inode()]);
            Some(h)
        }
        Mode::Loopback => None,
    };
    let emu = crate::topology::build_emulator(spec)?;
    let controller = match mode {
        Mode::Tun => start_controller(spec)?,
        Mode::Loopback => None,
    };
    let tcp_names = tcp_names(spec, controller.as_ref());
    let sample_every = from_secs(spec.sample_interval).max(1_000_000);
    // Loopback: every endpoint is bound here, before the relay starts, so the relay knows each flow's
    // real addresses (flow i: sender → relay side A, relay side B → receiver).
    let (relay, mut prebound) = match mode {
        Mode::Loopback => {
            let (relay, ends) = bind_loopback(spec)?;
            (Some(relay), ends)
        }
        Mode::Tun => (None, Vec::new()),
    };
    let clock = Clock::start();
    let at = emulator::Placement {
        window: Some([from_secs(spec.measure[0]), from_secs(spec.measure[1])]),
        cpu: layout.map(|l| l.emulator),
    };
    let emu_run = match (relay, &hosts) {
        (Some(relay), _) => {
            emulator::spawn_on(emu, relay, clock, Some(sample_every), at, "cclab-relay")
        }
        (None, Some(h)) => emulator::spawn_on(
            emu,
            emulator::Tuns(h.tuns()),
            clock,
            Some(sample_every),
            at,
            "cclab-emulator",
        ),
        (None, None) => unreachable!("TUN mode has hosts"),
    };
    let starts = start_times(spec);
    let probes: Vec<Arc<FlowProbe>> = spec
        .flows
        .iter()
        .map(|_| {
            Arc::new(FlowProbe {
                measure: [from_secs(spec.measure[0]), from_secs(spec.measure[1])],
                ..Default::default()
            })
        })
        .collect();
    let stop = AtomicBool::new(false);
    let mut sampled = Sampled::new(spec.flows.len());
    let xfers = crate::transfers::Results::default();

    let scoped = std::thread::scope(|s| -> Result<Vec<String>, RunError> {
        let mut handles = Vec::new();
        // Set-up errors (a port in use, a socket option refused) must still stop the threads already
        // started, or the scope would wait for them forever.
        let setup = spawn_flows(
            s,
            spec,
            hosts.as_ref(),
            &mut prebound,
            &tcp_names,
            &probes,
            &starts,
            clock,
            &stop,
            &mut handles,
        );
        if setup.is_ok() {
            if let Some(h) = hosts.as_ref() {
                spawn_transfers(s, spec, h, clock, &stop, &xfers, &mut handles);
            }
            sample_until_end(spec, &clock, sample_every, interrupt, &probes, &mut sampled);
        }
        stop.store(true, Ordering::Relaxed);
        let errs = join_all(handles);
        setup.map(|_| errs)
    });
    let fin = emu_run.stop();
    // Every socket is closed by now; stopping unregisters the name.
    let kernel_datapath = match controller {
        Some(c) => Some(c.stop().map_err(|e| RunError::Io(io::Error::other(e)))?),
        None => None,
    };
    let thread_errors = scoped?;
    let mut fin = fin?;
    if let Some(h) = &hosts {
        fin.stats.rps_cpus = h.rps_cpus();
        fin.stats.hosts = [&h.a, &h.b]
            .iter()
            .filter_map(|host| host.counters().ok())
            .collect();
    }
    drop(hosts);
    let mut xfers = xfers.into_inner().unwrap_or_default();
    xfers.sort_by_key(|r| r.traffic);
    Ok(report::summarise(
        xfers,
        spec,
        match mode {
            Mode::Tun => "tun",
            Mode::Loopback => "loopback",
        },
        &starts,
        &probes,
        sampled,
        fin,
        thread_errors,
        wall.elapsed().as_secs_f64(),
        interrupt.load(Ordering::Relaxed),
        kernel_datapath.as_ref(),
    ))
}

/// The kernel datapath's controller, when some flow is `bpf:<name>`: one registration for the whole
/// run, named after this process (names are global to the machine), choosing each socket's algorithm
/// by its destination port (flow i sends to port `flow_port(i)`) with the flow's parameters and seed.
fn start_controller(spec: &RunSpec) -> Result<Option<cclab_bpf::Controller>, RunError> {
    let algos: Vec<Option<String>> = spec
        .flows
        .iter()
        .map(|f| match flow_kind(&f.cc) {
            FlowKind::Bpf(name) => Some(name),
            _ => None,
        })
        .collect();
    if algos.iter().all(Option::is_none) {
        return Ok(None);
    }
    let flows = spec.flows.clone();
    let seed = spec.seed;
    let chooser: cclab_bpf::Chooser = Box::new(move |key, _mss| {
        let i = (0..flows.len()).find(|&i| flow_port(i) == key.remote.port())?;
        let name = algos[i].as_ref()?;
        let built = crate::endpoint::build_flow_sender(name, &flows[i], i as u32, seed).ok()?;
        Some((built.cc, flows[i].transport.packet_size))
    });
    let mut opts = cclab_bpf::Options::new(format!("cclab{}", std::process::id()));
    // The run reports the program's cost per ACK (docs/kernel-datapath.md).
    opts.kernel_stats = true;
    // A tuning knob for measurements (docs/kernel-datapath.md, "Wake-ups"), not a scenario setting.
    if let Some(us) = std::env::var("CCLAB_BPF_WAKE_US")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        opts.wake = std::time::Duration::from_micros(us);
    }
    cclab_bpf::Controller::start(opts, chooser)
        .map(Some)
        .map_err(RunError::Unavailable)
}

/// The `TCP_CONGESTION` name each flow's socket selects: Linux's algorithm, the controller's
/// registration, or None (our transport).
fn tcp_names(spec: &RunSpec, controller: Option<&cclab_bpf::Controller>) -> Vec<Option<String>> {
    spec.flows
        .iter()
        .map(|f| match flow_kind(&f.cc) {
            FlowKind::Kernel(k) => Some(k),
            FlowKind::Bpf(_) => controller.map(|c| c.name().to_string()),
            FlowKind::Ours(_) => None,
        })
        .collect()
}

/// What the real datapath and the chosen mode can run (see [`validate`], [`validate_loopback`]), and
/// whether this process may create namespaces.
fn check(spec: &RunSpec, mode: Mode) -> Result<(), RunError> {
    validate(spec)?;
    if mode == Mode::Loopback {
        validate_loopback(spec)
    } else if let Some(why) = sys::unavailable_reason() {
        Err(RunError::Unavailable(format!(
            "{why}; `--loopback` runs our transport without root (docs/real-datapath.md, Loopback mode)"
        )))
    } else {
        Ok(())
    }
}

/// Both ends of a loopback-mode flow, bound before the run starts.
type BoundFlow = Option<(ReceiverSetup, SenderSetup)>;

/// Loopback mode: the relay and every flow's two endpoints on 127.0.0.1, the relay told each flow's
/// addresses.
fn bind_loopback(spec: &RunSpec) -> Result<(Relay, Vec<BoundFlow>), RunError> {
    let mut relay = Relay::bind()?;
    let to_relay = SocketAddr::V4(relay.sender_side()?);
    let mut ends = Vec::new();
    for (i, f) in spec.flows.iter().enumerate() {
        let FlowKind::Ours(name) = flow_kind(&f.cc) else {
            unreachable!("validate_loopback refuses TCP flows")
        };
        let rs = std::net::UdpSocket::bind("127.0.0.1:0")?;
        let r_addr = v4_of(&rs)?;
        let mut rx = ReceiverSetup::from_socket(rs, f, i as u32)?;
        rx.expect_peer(relay.receiver_side()?);
        let ss = std::net::UdpSocket::bind("127.0.0.1:0")?;
        let s_addr = v4_of(&ss)?;
        let tx = SenderSetup::from_socket(ss, f, &name, to_relay, i as u32, spec.seed)?;
        relay.add_flow(s_addr, r_addr);
        ends.push(Some((rx, tx)));
    }
    Ok((relay, ends))
}

/// Each flow's start time: given, or drawn uniformly from its own stream of the run's seed.
fn start_times(spec: &RunSpec) -> Vec<Nanos> {
    let mut start_rng = rng::Stream::NetFlowStart.rng(spec.seed, 0);
    spec.flows
        .iter()
        .map(|f| match f.start {
            StartSpec::At(t) => from_secs(t),
            StartSpec::Uniform([lo, hi]) => {
                from_secs(lo + (hi - lo) * rng::uniform(&mut start_rng))
            }
        })
        .collect()
}

/// Spawns a named thread in scope `s` (names show in `top -H`, perf and /proc: `f3-tx` is flow 3's
/// sender).
fn spawn_named<'scope, 'env, F>(
    s: &'scope Scope<'scope, 'env>,
    name: String,
    f: F,
) -> ScopedJoinHandle<'scope, io::Result<()>>
where
    F: FnOnce() -> io::Result<()> + Send + 'scope,
{
    std::thread::Builder::new()
        .name(name)
        .spawn_scoped(s, f)
        .expect("spawn a flow thread")
}

/// Starts every flow's threads (receiver and sender; a kernel-TCP sink and writer, or our endpoints)
/// in scope `s`, pushing their handles. Stops at the first set-up error; the caller then stops the
/// threads already started.
#[allow(clippy::too_many_arguments)]
fn spawn_flows<'scope, 'env>(
    s: &'scope Scope<'scope, 'env>,
    spec: &'env RunSpec,
    hosts: Option<&'env Dumbbell>,
    prebound: &mut [BoundFlow],
    tcp_names: &[Option<String>],
    probes: &[Arc<FlowProbe>],
    starts: &[Nanos],
    clock: Clock,
    stop: &'env AtomicBool,
    handles: &mut Vec<ScopedJoinHandle<'scope, io::Result<()>>>,
) -> Result<(), RunError> {
    let end = from_secs(spec.duration);
    for (i, f) in spec.flows.iter().enumerate() {
        let port = flow_port(i);
        let probe = probes[i].clone();
        let start = starts[i];
        let stop_at = f.stop.map(from_secs).unwrap_or(end).min(end);
        if let Some((rx, tx)) = prebound.get_mut(i).and_then(Option::take) {
            let p2 = probe.clone();
            handles.push(spawn_named(s, format!("f{i}-rx"), move || {
                rx.run(&clock, stop, &p2)
            }));
            handles.push(spawn_named(s, format!("f{i}-tx"), move || {
                tx.run(&clock, start, stop_at, stop, &probe)
            }));
            continue;
        }
        let hosts = hosts.expect("TUN mode has hosts");
        // A reverse flow sends from host B to a receiver on host A.
        let (snd, rcv) = if reverse(f) {
            (&hosts.b, &hosts.a)
        } else {
            (&hosts.a, &hosts.b)
        };
        let dst = SocketAddr::V4(SocketAddrV4::new(rcv.addr, port));
        match (flow_kind(&f.cc), tcp_names[i].clone()) {
            (FlowKind::Kernel(_) | FlowKind::Bpf(_), Some(cc)) => {
                let listener = rcv.ns.run_in(|| TcpListener::bind(dst))??;
                let p2 = probe.clone();
                handles.push(spawn_named(s, format!("f{i}-sink"), move || {
                    tcp::sink(listener, stop, &p2.delivered)
                }));
                let size = f.size;
                handles.push(spawn_named(
                    s,
                    format!("f{i}-tcp"),
                    move || -> io::Result<()> {
                        snd.ns.enter()?;
                        sleep_until(&clock, start, stop);
                        if stop.load(Ordering::Relaxed) {
                            return Ok(());
                        }
                        let stream = Arc::new(tcp::connect(dst, &cc)?);
                        let _ = probe.tcp.set(stream.clone());
                        let written = AtomicU64::new(0);
                        let stop_flow = AtomicBool::new(false);
                        std::thread::scope(|s2| {
                            let w = s2.spawn(|| {
                                tcp::bulk_send((*stream).try_clone()?, size, &stop_flow, &written)
                            });
                            while !stop.load(Ordering::Relaxed)
                                && clock.now() < stop_at
                                && !w.is_finished()
                            {
                                std::thread::sleep(std::time::Duration::from_millis(5));
                            }
                            stop_flow.store(true, Ordering::Relaxed);
                            w.join()
                                .map_err(|_| io::Error::other("TCP sender panicked"))?
                        })
                    },
                ));
            }
            (FlowKind::Kernel(_) | FlowKind::Bpf(_), None) => {
                unreachable!("a TCP flow has a TCP_CONGESTION name (tcp_names)")
            }
            (FlowKind::Ours(name), _) => {
                let mut rx = ReceiverSetup::bind(rcv, f, port, i as u32)?;
                let tx = SenderSetup::bind(snd, f, &name, dst, i as u32, spec.seed)?;
                // The receiver takes data from this sender only (docs/real-datapath.md, "What a
                // hostile packet can and cannot do").
                rx.expect_peer(v4_of(&tx.sock)?);
                let p2 = probe.clone();
                handles.push(spawn_named(s, format!("f{i}-rx"), move || {
                    rx.run(&clock, stop, &p2)
                }));
                handles.push(spawn_named(s, format!("f{i}-tx"), move || {
                    tx.run(&clock, start, stop_at, stop, &probe)
                }));
            }
        }
    }
    Ok(())
}

/// Starts one manager thread per `transfers` source ([`crate::transfers`]); each pushes its result
/// into `results` when it ends.
fn spawn_transfers<'scope, 'env>(
    s: &'scope Scope<'scope, 'env>,
    spec: &'env RunSpec,
    hosts: &'env Dumbbell,
    clock: Clock,
    stop: &'env AtomicBool,
    results: &'env crate::transfers::Results,
    handles: &mut Vec<ScopedJoinHandle<'scope, io::Result<()>>>,
) {
    let measure = [from_secs(spec.measure[0]), from_secs(spec.measure[1])];
    let end = from_secs(spec.duration);
    let sources = spec
        .traffic
        .iter()
        .enumerate()
        .filter(|(_, t)| t.kind == "transfers");
    for (k, (i, t)) in sources.enumerate() {
        handles.push(spawn_named(s, format!("x{k}-mgr"), move || {
            let r =
                crate::transfers::run_source(i, k, t, hosts, clock, spec.seed, measure, end, stop)?;
            results.lock().unwrap().push(r);
            Ok(())
        }));
    }
}

/// The sampler (the calling thread): every sample interval until the end or an interrupt, each flow's
/// probe and the machine's CPU ticks and CPU pressure (for steal and pressure over the measure window).
fn sample_until_end(
    spec: &RunSpec,
    clock: &Clock,
    sample_every: Nanos,
    interrupt: &AtomicBool,
    probes: &[Arc<FlowProbe>],
    sampled: &mut Sampled,
) {
    let end = from_secs(spec.duration);
    let mut k: u64 = 0;
    loop {
        let due = k * sample_every;
        if due > end {
            break;
        }
        sleep_until(clock, due, interrupt);
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        let t = to_secs(clock.now());
        sampled.machine.push(report::MachineSample {
            t,
            ticks: disturbance::cpu_ticks(),
            pressure_us: disturbance::cpu_pressure_us(),
        });
        for (i, p) in probes.iter().enumerate() {
            report::sample_flow(&mut sampled.flows[i], t, p);
        }
        k += 1;
    }
}

/// Joins every flow thread; what went wrong in each becomes a warning.
fn join_all(handles: Vec<ScopedJoinHandle<'_, io::Result<()>>>) -> Vec<String> {
    let mut errs = Vec::new();
    for (i, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => errs.push(format!("flow thread {i}: {e}")),
            Err(_) => errs.push(format!("flow thread {i} panicked")),
        }
    }
    errs
}

fn v4_of(s: &std::net::UdpSocket) -> io::Result<SocketAddrV4> {
    match s.local_addr()? {
        SocketAddr::V4(a) => Ok(a),
        a => Err(io::Error::other(format!("bound to {a}"))),
    }
}
