//! Whole real runs: kernel TCP through the emulator, and teardown when the run is killed. Needs root and
//! /dev/net/tun; skips with the reason otherwise. Each run lasts a few seconds.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use cclab_net::run;
use cclab_net::spec::RunSpec;

mod common;
use common::{
    assert_no_warnings, bdp_pkts, min_rtt, run_quiet, run_until, spec_json, timing_bound,
};

fn skip() -> bool {
    if let Some(why) = cclab_net::sys::unavailable_reason() {
        eprintln!("SKIPPED: {why}");
        return true;
    }
    false
}

#[test]
fn kernel_cubic_fills_the_emulated_link() {
    if skip() {
        return;
    }
    let spec: RunSpec = serde_json::from_str(&spec_json(
        "kernel:cubic",
        50e6,
        0.02,
        bdp_pkts(50e6, 0.02),
        4.0,
        [1.0, 4.0],
    ))
    .unwrap();
    let r = run_quiet(|| run::run(&spec, &AtomicBool::new(false), |_| {}).unwrap());
    let f = &r.flows[0];
    let l = &r.links[0];
    eprintln!(
        "kernel cubic: goodput {:.2} Mbit/s, mean RTT {:.1} ms, mean cwnd {:.0}, retransmits {}, utilisation {:.3}, mean queue {:.0}",
        f.goodput_bps / 1e6,
        f.mean_rtt * 1e3,
        f.mean_cwnd_pkts,
        f.retransmits,
        l.utilization,
        l.mean_queue_pkts
    );
    assert_no_warnings(&r);
    // A BDP buffer keeps a single Reno-like flow at full utilisation after slow start; cubic too.
    // The payload ceiling is 50 Mbit/s × 1448/1500 = 48.3 Mbit/s (TCP/IP + timestamp headers).
    // 0.90: the first loss episode can still fall inside the window on a loaded machine.
    let ceiling = 50e6 * 1448.0 / 1500.0;
    timing_bound(
        &r,
        f.goodput_bps > 0.90 * ceiling && f.goodput_bps < 1.01 * ceiling,
        format_args!("goodput {}", f.goodput_bps),
    );
    timing_bound(
        &r,
        l.utilization > 0.93 && l.utilization < 1.005,
        format_args!("utilisation {}", l.utilization),
    );
    // RTT between the propagation RTT and propagation + a full buffer (40 + 40 ms).
    assert!(
        f.mean_rtt > 0.040 && f.mean_rtt < 0.082,
        "mean RTT {}",
        f.mean_rtt
    );
    assert!(f.series.t.len() >= 35, "samples: {}", f.series.t.len());
    // At 50 Mbit/s the run keeps the shared CPU placement (sys::CpuLayout applies above 200 Mbit/s),
    // and neither host's stack dropped anything the link counters would not show.
    let e = &r.net.emulator;
    assert!(
        e.cpu.is_none() && e.rps_cpus.is_empty(),
        "{:?} {:?}",
        e.cpu,
        e.rps_cpus
    );
    assert_eq!(e.hosts.len(), 2);
    for h in &e.hosts {
        for k in ["udp.RcvbufErrors", "tun.tx_dropped", "tun.rx_dropped"] {
            assert_eq!(h.get(k), Some(&0), "{k} in {h:?}");
        }
    }
}

/// The datapath's limit: 1 Gbit/s, RTT 20 ms, BDP buffer (1 667 packets), kernel cubic and our
/// NewReno. Measured (6 s runs, window 2-6 s): goodput 965.3 Mbit/s for cubic (the ceiling
/// 1 000 × 1448/1500) and 956–961 for ours (ceiling 960), TUN write lateness p99 over the window
/// 13–17 µs (cubic) and 29–92 µs (ours: the endpoints and both stacks share the second core). Bounds: goodput within 7 % of
/// the ceiling (slow start's first loss may fall in a 2 s window), lateness p99 under 100 µs (the
/// datapath's stated accuracy for spacing and delay, docs/real-datapath.md), and the emulator alone on a CPU with RPS set where there are
/// two (the mechanism the lateness depends on, docs/real-datapath.md).
#[test]
fn one_gigabit_per_second_kernel_cubic_and_our_newreno() {
    if skip() {
        return;
    }
    for (cc, payload) in [("kernel:cubic", 1448.0), ("newreno", 1440.0)] {
        let spec: RunSpec = serde_json::from_str(&spec_json(
            cc,
            1e9,
            0.01,
            bdp_pkts(1e9, 0.01),
            4.0,
            [2.0, 4.0],
        ))
        .unwrap();
        let mut others = None;
        let r = run_quiet(|| {
            let (r, share) = common::others_user_share(|| {
                run::run(&spec, &AtomicBool::new(false), |_| {}).unwrap()
            });
            others = share;
            r
        });
        let (f, e) = (&r.flows[0], &r.net.emulator);
        eprintln!(
            "{cc} at 1 Gbit/s: goodput {:.1} Mbit/s, utilisation {:.3}, lateness in the window mean \
             {:.1} µs p99 {} µs (whole run p99 {} µs), emulator cpu {:?}, rps {:?}, write drops {}, \
             CPU pressure {:?}, other processes' user time {:?} of the machine",
            f.goodput_bps / 1e6,
            r.links[0].utilization,
            e.window_late_mean_ns / 1e3,
            e.window_late_p99_ns / 1000,
            e.late_p99_ns / 1000,
            e.cpu,
            e.rps_cpus,
            e.tun_write_drops,
            r.net.disturbance.cpu_pressure,
            others
        );
        let ceiling = 1e9 * payload / 1500.0;
        let ok = f.goodput_bps > 0.93 * ceiling && f.goodput_bps < 1.01 * ceiling;
        // Our sender is rate-bound at 1 Gbit/s (a whole core in user space): with another process busy it
        // loses goodput without waking late (832-885 Mbit/s measured beside one busy process, lateness
        // p99 9-26 µs, so the run is not "disturbed"; 957-960 without it). Other processes' user time
        // above a tenth of the machine makes a missed bound a report, not a failure: a busy loop beside
        // the run measured 0.14-0.15 (our raised-priority threads take most of its core) and cost 851
        // Mbit/s; quiet runs 0.05-0.09. Kernel CUBIC needs no user-space sender and is asserted regardless.
        // The user-time share alone misses some busy runs: in a fresh-clone `make test` beside a busy
        // loop (2026-11-29) the loop got only 0.08 of the machine and ours reached 869 Mbit/s. CPU
        // pressure (the share of time some task waited for a CPU, `/proc/pressure/cpu`) tells them apart:
        // 0.26-0.31 in quiet runs (our own threads), 0.42-0.45 beside the busy loop (8 runs, 819-915 Mbit/s
        // beside it). Above 0.38, half-way, a missed bound is reported, not failed, as above.
        let pressure = r.net.disturbance.cpu_pressure;
        let busy = others.is_some_and(|o| o > 0.1) || pressure.is_some_and(|p| p > 0.38);
        if cc == "newreno" && busy && !ok {
            eprintln!(
                "NOT CHECKED (other processes took {:.2} of the machine's user time, CPU pressure \
                 {:.2}): {cc}: goodput {}",
                others.unwrap_or(0.0),
                pressure.unwrap_or(0.0),
                f.goodput_bps
            );
        } else {
            timing_bound(&r, ok, format_args!("{cc}: goodput {}", f.goodput_bps));
        }
        // The emulator's lateness under the same busy machine: in a fresh-clone `make test` beside a busy
        // loop (2026-11-29, CPU pressure 0.44, other processes 0.11 of the user time) our NewReno's run
        // had p99 125 µs, below the disturbance threshold but above this bound (kernel CUBIC's run beside
        // it: 20 µs). Asserted when the machine is not busy by the rule above, reported when it is (our
        // NewReno's p99 at 1 Gbit/s on record: 27-136 µs over a day's loads, docs/real-datapath.md "At 1
        // Gbit/s").
        let late_ok = e.window_late_p99_ns <= 100_000;
        if busy && !late_ok {
            eprintln!(
                "NOT CHECKED (other processes took {:.2} of the machine's user time, CPU pressure \
                 {:.2}): {cc}: lateness p99 {} ns",
                others.unwrap_or(0.0),
                pressure.unwrap_or(0.0),
                e.window_late_p99_ns
            );
        } else {
            timing_bound(
                &r,
                late_ok,
                format_args!("{cc}: lateness p99 {} ns", e.window_late_p99_ns),
            );
        }
        if cclab_net::sys::CpuLayout::available().is_some() {
            assert!(
                e.cpu.is_some() && !e.rps_cpus.is_empty(),
                "{:?} {:?}",
                e.cpu,
                e.rps_cpus
            );
        }
        assert_eq!(e.tun_write_drops, 0);
        if cc == "newreno" {
            // Every retransmission answers a drop at the link (whole run: slow start's overshoot). The
            // receiver folds each drained batch of datagrams into one ACK; before it learnt to send
            // the ACK when it held three fresh SACK ranges, ranges went unreported and our sender
            // retransmitted about twice what the link dropped (3 121 for 1 521, 1 757 for 815).
            // Drops in the hosts' own stacks count too: on a busy machine host A's TUN queue to the
            // emulator overflowed (11 314 packets in one run) and every one of those is a loss the
            // sender repairs, which the link's counters never see (12 140 retransmissions against
            // 826 link drops then).
            let stack: u64 = e
                .hosts
                .iter()
                .map(|c| {
                    [
                        "udp.RcvbufErrors",
                        "udp.InErrors",
                        "tun.tx_dropped",
                        "tun.rx_dropped",
                    ]
                    .iter()
                    .map(|k| c.get(*k).copied().unwrap_or(0))
                    .sum::<u64>()
                })
                .sum();
            let drops = r.links[0].counters.queue_drops + r.links[0].counters.random_drops + stack;
            assert!(
                f.retransmits <= drops,
                "{} retransmissions for {drops} drops ({stack} in the hosts' stacks)",
                f.retransmits
            );
        }
    }
}

/// Two kernel flows with different access delays (RTT 20 and 80 ms over one 30 Mbit/s bottleneck): the
/// per-flow delay lines give each flow its own propagation RTT, seen by the kernel as `tcpi_min_rtt`.
#[test]
fn per_flow_access_delays_set_each_flows_rtt() {
    if skip() {
        return;
    }
    let mut spec: RunSpec = serde_json::from_str(&spec_json(
        "kernel:reno",
        30e6,
        0.005,
        bdp_pkts(30e6, 0.005),
        3.0,
        [1.0, 3.0],
    ))
    .unwrap();
    let mut f2 = spec.flows[0].clone();
    // flow 0: 10 ms of links + 5 + 5 ms access = 20 ms; flow 1: 10 + 35 + 35 = 80 ms
    spec.flows[0].extra_delay_fwd = 0.005;
    spec.flows[0].extra_delay_rev = 0.005;
    f2.extra_delay_fwd = 0.035;
    f2.extra_delay_rev = 0.035;
    spec.flows.push(f2);
    let r = run_quiet(|| run::run(&spec, &AtomicBool::new(false), |_| {}).unwrap());
    for (f, want) in r.flows.iter().zip([0.020, 0.080]) {
        let min_rtt = min_rtt(f);
        eprintln!(
            "flow {}: min RTT {:.3} ms (configured {:.0}), goodput {:.1} Mbit/s",
            f.id,
            min_rtt * 1e3,
            want * 1e3,
            f.goodput_bps / 1e6
        );
        // The true minimum is the configured RTT plus two small-packet transmissions (≈ 32 µs for the
        // handshake); the kernel reports whole milliseconds here (samples from the TCP timestamp option
        // have 1 ms resolution), so the reading is the configured RTT, or 1 ms more at worst.
        assert!(
            min_rtt >= want && min_rtt < want + 0.001,
            "flow {} min RTT {min_rtt}",
            f.id
        );
    }
    timing_bound(
        &r,
        r.links[0].utilization > 0.9,
        format_args!("utilisation {}", r.links[0].utilization),
    );
}

/// Our transport (cclab_transport::Sender/Receiver with the NewReno algorithm of cclab-cc) over UDP
/// through the emulator: after slow start it fills a 50 Mbit/s link with a BDP buffer.
#[test]
fn our_newreno_fills_the_emulated_link() {
    if skip() {
        return;
    }
    let spec: RunSpec = serde_json::from_str(&spec_json(
        "newreno",
        50e6,
        0.02,
        bdp_pkts(50e6, 0.02),
        4.0,
        [1.5, 4.0],
    ))
    .unwrap();
    // One BDP of drop-tail buffer (167 packets). The slow-start overshoot drops ~500 packets and some
    // retransmissions meet a full queue again; the sender finds those by SACK (lost-retransmission
    // detection) instead of waiting for an RTO. Before it did, about half the runs timed out and
    // restarted from one packet (measured: 1265 retransmissions, goodput 27 Mbit/s).
    // The loss branch: the simulator on this spec has 2 fast recoveries (the overshoot, and a second
    // reduction for one of its lost retransmissions, RFC 5681 §4.3) and no RTO, and so do most real runs
    // (19 of 20 in one series, 47.55-48.00 Mbit/s). Whether a fast retransmission finds a free slot in the full
    // queue is a race the real path's µs jitter decides (tests/test_net.py, real_on_sim_trajectory): a run
    // that lost one more (42.15 Mbit/s) or, once in CI, several (1 RTO, 24.45 Mbit/s) follows another
    // trajectory. Up to 4 runs (undisturbed and on that branch); the last one is asserted whatever
    // its branch.
    let r = run_until(
        || run::run(&spec, &AtomicBool::new(false), |_| {}).unwrap(),
        |r| {
            let f = &r.flows[0];
            let on_branch = f.timeouts == 0 && f.fast_recoveries <= 2;
            if !on_branch {
                eprintln!(
                    "{} fast recoveries, {} timeouts, {:.2} Mbit/s: another branch",
                    f.fast_recoveries,
                    f.timeouts,
                    f.goodput_bps / 1e6
                );
            }
            on_branch
        },
    );
    let f = &r.flows[0];
    let l = &r.links[0];
    eprintln!(
        "our newreno: goodput {:.2} Mbit/s, mean RTT {:.1} ms, mean cwnd {:.0}, retransmits {}, timeouts {}, utilisation {:.3}, mean queue {:.0}",
        f.goodput_bps / 1e6,
        f.mean_rtt * 1e3,
        f.mean_cwnd_pkts,
        f.retransmits,
        f.timeouts,
        l.utilization,
        l.mean_queue_pkts
    );
    assert_no_warnings(&r);
    assert_eq!(f.malformed, 0);
    // Honest traffic trips no hostile-packet check (docs/real-datapath.md).
    assert_eq!((f.foreign, f.rejected_data, f.rejected_acks), (0, 0, 0));
    // Payload ceiling: 50 Mbit/s × 1440/1500 (our 60 header bytes). After the slow-start overshoot
    // (t < 1.5 s) a Reno flow with a BDP buffer never drains the queue: 3 % covers the sampling edges.
    let ceiling = 50e6 * 1440.0 / 1500.0;
    timing_bound(
        &r,
        f.goodput_bps > 0.97 * ceiling && f.goodput_bps < 1.01 * ceiling,
        format_args!("goodput {}", f.goodput_bps),
    );
    // RTT between propagation (40 ms) and propagation + a full BDP buffer (80 ms).
    timing_bound(
        &r,
        f.mean_rtt > 0.040 && f.mean_rtt < 0.080,
        format_args!("mean RTT {}", f.mean_rtt),
    );
    timing_bound(
        &r,
        f.mean_cwnd_pkts > 150.0 && f.mean_cwnd_pkts < 510.0,
        format_args!("cwnd {}", f.mean_cwnd_pkts),
    );
}

/// MaxNet end to end (docs/real-datapath.md, "Acceptance bounds"): the price is computed by the MaxNet router in the emulator (the
/// simulator's `cclab_cc::aqm::maxnet`), carried in our header, echoed by our receiver, and used by our
/// MaxNet senders. Two flows at RTT 20 and 80 ms on 30 Mbit/s.
#[test]
fn maxnet_end_to_end_utilisation_queue_and_fairness() {
    if skip() {
        return;
    }
    let mut spec: RunSpec = serde_json::from_str(&spec_json(
        "maxnet",
        30e6,
        0.005,
        bdp_pkts(30e6, 0.005),
        5.0,
        [2.0, 5.0],
    ))
    .unwrap();
    spec.links[0].queue = "maxnet".into();
    let mut f2 = spec.flows[0].clone();
    spec.flows[0].extra_delay_fwd = 0.005;
    spec.flows[0].extra_delay_rev = 0.005;
    spec.flows[0].rtt = 0.02;
    f2.extra_delay_fwd = 0.035;
    f2.extra_delay_rev = 0.035;
    f2.rtt = 0.08;
    f2.group = 1;
    spec.flows.push(f2);
    let r = run_quiet(|| run::run(&spec, &AtomicBool::new(false), |_| {}).unwrap());
    let l = &r.links[0];
    for f in &r.flows {
        eprintln!(
            "maxnet flow {} (rtt {} s): goodput {:.2} Mbit/s, mean RTT {:.1} ms, refused: malformed {} \
             foreign {} data {} acks {}",
            f.id,
            f.rtt,
            f.goodput_bps / 1e6,
            f.mean_rtt * 1e3,
            f.malformed,
            f.foreign,
            f.rejected_data,
            f.rejected_acks
        );
        // Honest traffic trips no hostile-packet check (docs/real-datapath.md).
        assert_eq!((f.foreign, f.rejected_data, f.rejected_acks), (0, 0, 0));
    }
    eprintln!(
        "maxnet link: utilisation {:.3}, mean queue {:.2}, max queue {}, Jain {:.3}; steal {:.1} %, \
         longest stall in the window {:.1} ms",
        l.utilization,
        l.mean_queue_pkts,
        l.max_queue_pkts,
        r.jain,
        100.0 * r.net.steal_fraction.unwrap_or(f64::NAN),
        r.net.stalls.longest_in_measure_ms
    );
    assert_no_warnings(&r);
    // Acceptance bounds (docs/real-datapath.md): utilisation within 0.05 of μ = 0.94 (the router's default target),
    // mean queue < 5 packets, Jain ≥ 0.9 for two flows at different RTTs (MaxNet is max-min fair).
    // Undisturbed: utilisation 0.936-0.942, mean queue 0.13-0.48 in 14 runs. The queue is what the
    // machine disturbs (the price integrator winds down over every stall, then the flows overshoot:
    // 2.4-7.5 packets at 9-18 % steal) and so it is a timing bound; Jain held 0.996 even then.
    timing_bound(
        &r,
        (l.utilization - 0.94).abs() < 0.05,
        format_args!("utilisation {}", l.utilization),
    );
    timing_bound(
        &r,
        l.mean_queue_pkts < 5.0,
        format_args!("mean queue {}", l.mean_queue_pkts),
    );
    assert!(r.jain >= 0.9, "Jain {}", r.jain);
    // MaxNet keeps no standing queue, so in steady state nothing is dropped: 0 drops in 4 of 5 runs
    // (max queue 1-12 of 25). One run, during other test load, had a transient (mean queue 2.48, max 25 =
    // the buffer, 4 drops): a delayed burst of the real path, not MaxNet's control. Asserted: at most
    // 0.1 % of the window's packets (~7 500), which a queue-building controller would exceed by far.
    let window_pkts =
        l.utilization * spec.links[0].rate_bps * (spec.measure[1] - spec.measure[0]) / 8.0 / 1500.0;
    timing_bound(
        &r,
        (l.drops as f64) <= 0.001 * window_pkts,
        format_args!("drops {} of ~{window_pkts:.0} packets", l.drops),
    );
}

#[test]
fn bad_specs_name_the_field() {
    let mut spec: RunSpec = serde_json::from_str(&spec_json(
        "kernel:vegas",
        50e6,
        0.02,
        bdp_pkts(50e6, 0.02),
        1.0,
        [0.0, 1.0],
    ))
    .unwrap();
    let e = run::validate(&spec).unwrap_err().to_string();
    assert!(
        e.starts_with("flows[0].cc") && e.contains("kernel:cubic"),
        "{e}"
    );
    spec.flows[0].cc = "nosuch".into();
    let e = run::validate(&spec).unwrap_err().to_string();
    assert!(e.starts_with("flows[0].") && e.contains("nosuch"), "{e}");
    spec.flows[0].cc = "kernel:reno".into();
    spec.links[0].rate_bps = 1.5e9;
    let e = run::validate(&spec).unwrap_err().to_string();
    assert!(e.starts_with("links[0].rate_bps"), "{e}");
}

/// Every `net:[inode]` namespace reference held by any process (its own namespace or an open fd).
fn namespace_refs(inodes: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = p.file_name().to_string_lossy().into_owned();
        if !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let mut links = vec![p.path().join("ns/net")];
        if let Ok(fds) = std::fs::read_dir(p.path().join("fd")) {
            links.extend(fds.flatten().map(|e| e.path()));
        }
        for l in links {
            if let Ok(t) = std::fs::read_link(&l) {
                let t = t.to_string_lossy().into_owned();
                if inodes.contains(&t) {
                    found.push(format!("{} -> {t}", l.display()));
                }
            }
        }
    }
    found
}

/// Starts the binary on a long kernel-TCP run and returns it with its two namespace references.
fn start_run(dir: &std::path::Path) -> (std::process::Child, Vec<String>) {
    let spec = dir.join("spec.json");
    std::fs::write(
        &spec,
        spec_json(
            "kernel:cubic",
            20e6,
            0.01,
            bdp_pkts(20e6, 0.01),
            30.0,
            [0.0, 30.0],
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cclab-net"))
        .args([
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--out",
            dir.join("out.json").to_str().unwrap(),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "cclab-net: hosts ready (netns net:[A] net:[B], pid P)"
    let inodes: Vec<String> = line
        .split_whitespace()
        .filter(|w| w.starts_with("net:["))
        .map(|w| w.trim_end_matches(',').to_string())
        .collect();
    assert_eq!(inodes.len(), 2, "ready line: {line:?}");
    (child, inodes)
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("cclab-net-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn sigkill_mid_run_leaves_nothing_behind() {
    if skip() {
        return;
    }
    let dir = tmpdir("kill");
    let netns_before: Vec<_> = std::fs::read_dir("/run/netns")
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    let (mut child, inodes) = start_run(&dir);
    std::thread::sleep(Duration::from_millis(1500));
    // While it runs, the namespaces exist (held by the run's descriptors): the check below means something.
    assert!(
        !namespace_refs(&inodes).is_empty(),
        "namespaces not visible while running"
    );
    let pid = child.id();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let st = child.wait().unwrap();
    assert!(!st.success());
    // The kernel drops the namespaces (and the TUN devices inside them) once nothing references them.
    let t0 = Instant::now();
    let mut left = namespace_refs(&inodes);
    while !left.is_empty() && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
        left = namespace_refs(&inodes);
    }
    assert!(left.is_empty(), "namespace references left: {left:?}");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} still exists"
    );
    // No process of the run survives: none has the dead run as its parent.
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(s) = std::fs::read_to_string(p.path().join("stat")) {
            let ppid = s
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().nth(1))
                .unwrap_or("");
            assert_ne!(ppid, pid.to_string(), "orphan {:?}", p.path());
        }
    }
    let netns_after: Vec<_> = std::fs::read_dir("/run/netns")
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(netns_before, netns_after, "named namespaces changed");
    // and no cclab device appeared in this namespace
    let devs: Vec<_> = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cclab"))
        .collect();
    assert!(devs.is_empty(), "{devs:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigint_ends_the_run_with_a_partial_result() {
    if skip() {
        return;
    }
    let dir = tmpdir("int");
    let (mut child, inodes) = start_run(&dir);
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let st = child.wait().unwrap();
    assert!(st.success(), "exit status {st}");
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "took {:?} to stop",
        t0.elapsed()
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out.json")).unwrap()).unwrap();
    assert_eq!(r["net"]["interrupted"], true);
    let gp = r["flows"][0]["series"]["goodput_bps"].as_array().unwrap();
    assert!(gp.len() >= 10 && gp.len() < 40, "samples {}", gp.len());
    assert!(namespace_refs(&inodes).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
