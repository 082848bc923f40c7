//! Whole-process benchmark of the simulation engine alone (no Python): builds a NewReno dumbbell spec
//! in Rust, runs it, and prints events/s, bottleneck packets/s and peak RSS.
//!
//! ```text
//! cargo run --profile dist -p cclab-sim --bin cclab-bench -- a          # scenario (a)
//! cargo run --profile dist -p cclab-sim --bin cclab-bench -- b          # scenario (b)
//! cargo run --profile dist -p cclab-sim --bin cclab-bench -- custom --flows 1000 --rate 10e9 --rtt 0.1 --duration 100
//! ```
//!
//! Scenarios (targets and measured results in docs/performance.md):
//!   a: 10 NewReno flows, 100 Mbit/s, 100 ms RTT, BDP buffer, 60 s
//!   b: 100 NewReno flows, 622 Mbit/s (30 at 16 ms, 50 at 60 ms, 20 at 180 ms), 500-packet buffer, 100 s
//! Both use the `bench/run.py` settings: starts uniform in [0, 1] s, measure window from min(10 s, T/2),
//! SACK, ACK every packet, 1500-byte packets, the reverse link drop-tail with the same buffer.
//! One JSON line goes to stdout; a readable line to stderr.

use cclab_cc::params::Params;
use cclab_sim::spec::{FlowSpec, LinkSpec, RunSpec, StartSpec, TransportSpec};
use std::time::Instant;

fn usage() -> ! {
    eprintln!(
        "usage: cclab-bench a|b|custom [--flows N] [--rate BPS] [--rtt S] [--buffer PKTS|bdp] [--duration S] [--seed N] [--trace]"
    );
    std::process::exit(2)
}

/// Peak resident set size of this process in KiB (VmHWM; the same figure as getrusage's ru_maxrss).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn spec(
    rate: f64,
    buffer: u32,
    groups: &[(usize, f64)],
    duration: f64,
    seed: u64,
    trace: bool,
) -> RunSpec {
    let link = |rate_bps| LinkSpec {
        rate_bps,
        delay: 0.0,
        buffer_pkts: Some(buffer),
        buffer_bytes: None,
        queue: "droptail".into(),
        queue_params: Params::new(),
        loss: 0.0,
        loss_schedule: vec![],
        delay_schedule: vec![],
        loss_data_only: true,
        trace_ms: vec![],
        jitter: 0.0,
        jitter_dist: String::new(),
        jitter_reorder: false,
        reorder: 0.0,
        duplicate: 0.0,
    };
    let mut flows = Vec::new();
    for (g, &(n, rtt)) in groups.iter().enumerate() {
        for _ in 0..n {
            flows.push(FlowSpec {
                group: g as u32,
                cc: "newreno".into(),
                params: Params::new(),
                path: vec![0],
                ack_path: vec![1],
                extra_delay_fwd: rtt / 2.0,
                extra_delay_rev: rtt / 2.0,
                rtt,
                start: StartSpec::Uniform([0.0, 1.0]),
                stop: None,
                size: None,
                transport: TransportSpec::default(),
            });
        }
    }
    RunSpec {
        name: "bench".into(),
        seed,
        duration,
        sample_interval: 0.1,
        measure: [(duration / 2.0).min(10.0), duration],
        links: vec![link(rate), link(rate)],
        flows,
        traffic: vec![],
        trace_packets: trace,
        limits: None,
    }
}

fn main() {
    let t0 = Instant::now();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(which) = args.first() else { usage() };
    let (mut flows, mut rate, mut rtt, mut buffer, mut duration): (
        usize,
        f64,
        f64,
        Option<u32>,
        f64,
    ) = match which.as_str() {
        "a" => (10, 100e6, 0.1, None, 60.0),
        "b" | "custom" => (100, 622e6, 0.1, Some(500), 100.0),
        _ => usage(),
    };
    let (mut seed, mut trace) = (1u64, false);
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage()).clone();
        match a.as_str() {
            "--flows" => flows = val().parse().unwrap_or_else(|_| usage()),
            "--rate" => rate = val().parse().unwrap_or_else(|_| usage()),
            "--rtt" => rtt = val().parse().unwrap_or_else(|_| usage()),
            "--buffer" => {
                let v = val();
                buffer = if v == "bdp" {
                    None
                } else {
                    Some(v.parse().unwrap_or_else(|_| usage()))
                }
            }
            "--duration" => duration = val().parse().unwrap_or_else(|_| usage()),
            "--seed" => seed = val().parse().unwrap_or_else(|_| usage()),
            "--trace" => trace = true,
            _ => usage(),
        }
    }
    let groups: Vec<(usize, f64)> = if which == "b" {
        vec![(30, 0.016), (50, 0.06), (20, 0.18)]
    } else {
        vec![(flows, rtt)]
    };
    let max_rtt = groups.iter().map(|g| g.1).fold(0.0, f64::max);
    let bdp = ((rate * max_rtt / 8.0 / 1500.0).round() as u32).max(1);
    let buffer = buffer.unwrap_or(bdp);
    let s = spec(rate, buffer, &groups, duration, seed, trace);
    let r = cclab_sim::run(&s, None).expect("valid spec");
    assert!(
        r.conservation.holds(),
        "packet conservation violated: {:?}",
        r.conservation
    );
    let goodput: f64 = r.flows.iter().map(|f| f.goodput_bps).sum();
    let process = t0.elapsed().as_secs_f64();
    let rss_mb = peak_rss_kib() as f64 / 1024.0;
    eprintln!(
        "[{which}] {} flows, {:.0} Mbit/s, buffer {buffer} pkts, {duration} s simulated: loop {:.3} s, process {:.3} s, \
         {} events ({:.2} M events/s), {} bottleneck data packets ({:.3} M pkts/s loop), {:.2} events/pkt, \
         goodput {:.2} Mbit/s (utilisation {:.4}), peak RSS {:.1} MB",
        s.flows.len(),
        rate / 1e6,
        r.wall_s,
        process,
        r.events,
        r.events as f64 / r.wall_s / 1e6,
        r.packets,
        r.packets as f64 / r.wall_s / 1e6,
        r.events as f64 / r.packets.max(1) as f64,
        goodput / 1e6,
        r.links[0].utilization,
        rss_mb
    );
    println!(
        "{{\"scenario\":\"{which}\",\"flows\":{},\"rate_bps\":{rate},\"buffer_pkts\":{buffer},\"duration\":{duration},\"wall_loop_s\":{},\"wall_process_s\":{process},\"events\":{},\"packets\":{},\"events_per_s\":{},\"packets_per_s_loop\":{},\"goodput_bps\":{goodput},\"utilization\":{},\"peak_rss_mb\":{rss_mb}}}",
        s.flows.len(),
        r.wall_s,
        r.events,
        r.packets,
        r.events as f64 / r.wall_s,
        r.packets as f64 / r.wall_s,
        r.links[0].utilization
    );
}
