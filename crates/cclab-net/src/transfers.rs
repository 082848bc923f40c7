//! Short responsive transfers (`[[traffic]] kind = "transfers"`) on the real datapath: real flows of
//! our transport, started at the simulator's arrival times with the simulator's sizes.
//!
//! One manager thread per source draws arrivals from the simulator's law and stream
//! (`cclab_cc::cross::transfer_arrival`, `Stream::Traffic`, the source's index), so the same seed
//! gives the same arrival times and sizes. At each arrival it binds the transfer's receiver on host B
//! (a port of the source's range, [`crate::topology::transfer_base`], which the emulator routes over the
//! source's path) and its sender on host A, and starts one thread for each. The sender's algorithm gets
//! the simulator's seed for that transfer. The manager checks every [`POLL`] whether a transfer is done
//! as the simulator counts it: its receiver has the whole size and its sender has nothing in flight
//! (everything acknowledged). If so, it records the flow-completion time and stops the transfer's
//! threads. So a completion time is resolved to [`POLL`] (the simulator's is exact).

use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ScopedJoinHandle;

use cclab_cc::cross::transfer_arrival;
use cclab_cc::registry::flow_seed;
use cclab_cc::rng::Stream;
use cclab_cc::time::{from_secs, to_secs, Nanos, NS_PER_MS};
use serde::Serialize;

use crate::endpoint::{ReceiverSetup, SenderSetup};
use crate::hosts::Dumbbell;
use crate::probe::FlowProbe;
use crate::spec::{FlowSpec, TrafficSpec};
use crate::sys::Clock;
use crate::topology::{reverse, transfer_base, TRANSFER_PORTS};

/// How often the manager looks for finished transfers (the resolution of completion times).
pub const POLL: Nanos = NS_PER_MS;

pub use cclab_cc::cross::{FctSummary, FCT_BUCKETS};

/// A `transfers` source's outcome: the simulator's `summary.json` entry, plus what only a real run has.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TransferResult {
    /// Index of the source in the spec's `traffic`.
    pub traffic: usize,
    pub cc: String,
    pub arrivals: u64,
    pub completed: u64,
    pub unfinished: u64,
    pub completed_bytes: u64,
    pub peak_active: u64,
    pub window_arrivals: u64,
    pub fct: FctSummary,
    pub fct_by_size: Vec<FctSummary>,
    /// Real datapath only: transfers that could not start (no free port in the source's range, or a
    /// socket error), and the retransmissions of all transfers.
    pub not_started: u64,
    pub retransmits: u64,
}

/// One running transfer.
struct Active<'scope> {
    size: u64,
    arrival: Nanos,
    port: u16,
    probe: Arc<FlowProbe>,
    stop: Arc<AtomicBool>,
    threads: Vec<ScopedJoinHandle<'scope, io::Result<()>>>,
}

/// Runs `transfers` source `s` (`t`, the spec's `traffic[index]`) until `end` or `stop`: see the module
/// header. Returns its result.
#[allow(clippy::too_many_arguments)]
pub fn run_source(
    index: usize,
    s: usize,
    t: &TrafficSpec,
    hosts: &Dumbbell,
    clock: Clock,
    seed: u64,
    measure: [Nanos; 2],
    end: Nanos,
    stop: &AtomicBool,
) -> io::Result<TransferResult> {
    let tpl = t.flow.as_deref().expect("validated: transfers have a flow");
    let cc = tpl.cc.clone();
    let mean_size = t.mean_size.expect("validated: transfers have a mean size");
    let shape = t.shape.unwrap_or(1.5);
    let mean_gap = mean_size * 8.0 / t.rate_bps;
    let src_stop = t.stop.map(from_secs).unwrap_or(end).min(end);
    let mut rng = Stream::Traffic.rng(seed, index as u64);
    let mut next = Some(from_secs(t.start)).filter(|&a| a < src_stop);
    let mut r = TransferResult {
        traffic: index,
        cc: cc.clone(),
        ..Default::default()
    };
    let mut fct: Vec<(u64, f64)> = Vec::new();
    let mut retransmits = 0;
    let (snd, rcv) = if reverse(tpl) {
        (&hosts.b, &hosts.a)
    } else {
        (&hosts.a, &hosts.b)
    };
    let base = transfer_base(s);
    std::thread::scope(|sc| -> io::Result<()> {
        let mut active: Vec<Active> = Vec::new();
        let mut ending: Vec<ScopedJoinHandle<io::Result<()>>> = Vec::new();
        loop {
            let now = clock.now();
            if stop.load(Ordering::Relaxed) || now >= end {
                break;
            }
            // Finished transfers: record, stop their threads (joined once they have returned).
            active.retain_mut(|a| {
                // Done as the simulator counts it: the sender has everything acknowledged (the
                // receiver has it all, and nothing is in flight any more).
                if a.probe.delivered.load(Ordering::Relaxed) < a.size
                    || a.probe.in_flight.load(Ordering::Relaxed) > 0
                {
                    return true;
                }
                r.completed += 1;
                r.completed_bytes += a.size;
                if (measure[0]..measure[1]).contains(&a.arrival) {
                    fct.push((a.size, to_secs(now - a.arrival)));
                }
                retransmits += a.probe.retransmits.load(Ordering::Relaxed);
                a.stop.store(true, Ordering::Relaxed);
                ending.append(&mut a.threads);
                false
            });
            ending.retain(|h| !h.is_finished());
            while let Some(at) = next.filter(|&at| at <= now) {
                let (size, gap) = transfer_arrival(
                    &mut rng,
                    mean_size,
                    shape,
                    mean_gap,
                    crate::spec::limits::MAX_FLOW_SIZE,
                );
                let n = r.arrivals;
                r.arrivals += 1;
                next = Some(at.saturating_add(gap)).filter(|&a| a < src_stop);
                if (measure[0]..measure[1]).contains(&at) {
                    r.window_arrivals += 1;
                }
                // A port of the range no running transfer holds, starting from n's.
                let busy: Vec<u16> = active.iter().map(|a| a.port).collect();
                let Some(port) = (0..TRANSFER_PORTS)
                    .map(|k| base + ((n + k as u64) % TRANSFER_PORTS as u64) as u16)
                    .find(|p| !busy.contains(p))
                else {
                    r.not_started += 1;
                    continue;
                };
                let mut f: FlowSpec = tpl.clone();
                f.size = Some(size);
                // Flow ids of transfers: top bit set, then the source and the arrival number (the
                // data key is drawn per id, so no two transfers share one).
                let flow_id = 0x8000_0000 | (s as u32) << 24 | (n as u32 & 0x00FF_FFFF);
                // The simulator's seed for this transfer's algorithm.
                let algo_seed = flow_seed(seed, (1 << 40) | (((index as u64) << 32) ^ n));
                let dst = SocketAddr::V4(SocketAddrV4::new(rcv.addr, port));
                let setup = ReceiverSetup::bind(rcv, &f, port, flow_id).and_then(|mut rx| {
                    let sock = snd
                        .ns
                        .run_in(|| std::net::UdpSocket::bind((snd.addr, 0)))??;
                    let tx = SenderSetup::seeded(sock, &f, &cc, dst, flow_id, algo_seed)?;
                    if let SocketAddr::V4(a) = tx.sock.local_addr()? {
                        rx.expect_peer(a);
                    }
                    Ok((rx, tx))
                });
                let Ok((rx, tx)) = setup else {
                    r.not_started += 1;
                    continue;
                };
                let probe = Arc::new(FlowProbe::default());
                let tstop = Arc::new(AtomicBool::new(false));
                let (p1, p2, s1, s2) = (probe.clone(), probe.clone(), tstop.clone(), tstop.clone());
                let name = format!("x{s}.{n}");
                let threads = vec![
                    std::thread::Builder::new()
                        .name(format!("{name}-rx"))
                        .spawn_scoped(sc, move || rx.run(&clock, &s1, &p1))?,
                    std::thread::Builder::new()
                        .name(format!("{name}-tx"))
                        .spawn_scoped(sc, move || tx.run(&clock, at, end, &s2, &p2))?,
                ];
                active.push(Active {
                    size,
                    arrival: at,
                    port,
                    probe,
                    stop: tstop,
                    threads,
                });
                r.peak_active = r.peak_active.max(active.len() as u64);
            }
            let wake = next.map_or(now + POLL, |a| a.min(now + POLL));
            crate::sys::sleep_until(&clock, wake, stop);
        }
        r.unfinished = active.len() as u64;
        for a in &active {
            retransmits += a.probe.retransmits.load(Ordering::Relaxed);
            a.stop.store(true, Ordering::Relaxed);
        }
        Ok(())
    })?;
    r.retransmits = retransmits;
    r.fct = FctSummary::of(&fct, 0, u64::MAX);
    r.fct_by_size = FCT_BUCKETS
        .iter()
        .map(|&(lo, hi)| FctSummary::of(&fct, lo, hi))
        .collect();
    Ok(r)
}

/// Results of every source, filled by their managers.
pub type Results = Mutex<Vec<TransferResult>>;
