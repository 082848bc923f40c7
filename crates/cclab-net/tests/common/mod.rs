//! Shared by the real-datapath integration tests.

// Each test binary compiles this module and uses its own subset of it.
#![allow(dead_code)]

/// One BDP of `rate` and a round trip of two `owd` one-way delays, in 1500-byte packets (rounded up).
pub fn bdp_pkts(rate: f64, owd: f64) -> u32 {
    (rate * 2.0 * owd / 8.0 / 1500.0).ceil() as u32
}

/// A one-flow dumbbell run spec (JSON, as `cclab.net` writes it): `rate` both ways, `owd` one-way delay
/// per link, `buf` packets of drop-tail buffer, ACK every packet, SACK, min RTO 200 ms.
pub fn spec_json(
    cc: &str,
    rate: f64,
    owd: f64,
    buf: u32,
    duration: f64,
    measure: [f64; 2],
) -> String {
    format!(
        r#"{{"name":"t","seed":1,"duration":{duration},"sample_interval":0.1,"measure":[{m0},{m1}],
        "links":[{{"rate_bps":{rate},"delay":{owd},"buffer_pkts":{buf},"buffer_bytes":null,"queue":"droptail"}},
                 {{"rate_bps":{rate},"delay":{owd},"buffer_pkts":{buf},"buffer_bytes":null,"queue":"droptail"}}],
        "flows":[{{"group":0,"cc":"{cc}","path":[0],"ack_path":[1],"extra_delay_fwd":0,"extra_delay_rev":0,
          "rtt":{rtt},"start":0.0,"stop":null,"size":null,
          "transport":{{"mss":1448,"packet_size":1500,"initial_cwnd":10,"delayed_ack":1,"delack_timeout":0.2,
                        "min_rto":0.2,"sack":true}}}}]}}"#,
        m0 = measure[0],
        m1 = measure[1],
        rtt = 2.0 * owd,
    )
}

/// The smallest RTT sample of a flow's series (samples of 0 mean "none yet").
pub fn min_rtt(f: &cclab_net::report::FlowResult) -> f64 {
    f.series
        .min_rtt
        .iter()
        .copied()
        .filter(|x| *x > 0.0)
        .fold(f64::INFINITY, f64::min)
}

/// Runs before a test gives up waiting for a quiet machine (see [`run_until`]).
pub const ATTEMPTS: u32 = 4;

/// Runs `run` until its measure window is undisturbed by the machine (`net.disturbed`: hypervisor
/// steal or a thread stall, `cclab_net::disturbance`) and `accept` holds, at most [`ATTEMPTS`] times;
/// returns the last run. A disturbed run measures the machine, not our code: on this kind of VM steal
/// comes in spells of minutes, and one disturbed window turned MaxNet's 0.35-packet queue into 5.8
/// (a CI failure). `accept` lets a test also rerun a run that took another loss branch.
pub fn run_until(
    mut run: impl FnMut() -> cclab_net::report::RunResult,
    accept: impl Fn(&cclab_net::report::RunResult) -> bool,
) -> cclab_net::report::RunResult {
    for attempt in 1.. {
        let r = run();
        if (!r.net.disturbed && accept(&r)) || attempt == ATTEMPTS {
            if r.net.disturbed {
                eprintln!(
                    "DISTURBED in all {ATTEMPTS} attempts, timing bounds below are reported, not \
                     asserted: {}",
                    r.warnings.last().map_or("", String::as_str)
                );
            }
            return r;
        }
        eprintln!(
            "attempt {attempt}: {}; running again",
            if r.net.disturbed {
                r.warnings.last().map_or("", String::as_str)
            } else {
                "not accepted"
            }
        );
    }
    unreachable!()
}

/// [`run_until`] accepting any undisturbed run.
pub fn run_quiet(
    run: impl FnMut() -> cclab_net::report::RunResult,
) -> cclab_net::report::RunResult {
    run_until(run, |_| true)
}

/// No warning other than the machine's disturbance one.
pub fn assert_no_warnings(r: &cclab_net::report::RunResult) {
    assert_eq!(
        r.warnings.len(),
        usize::from(r.net.disturbed),
        "{:?}",
        r.warnings
    );
}

/// Asserts a timing-dependent bound, unless the machine disturbed the run in every attempt (then the
/// test prints what it could not check: failing it would report the machine, not the code).
pub fn timing_bound(r: &cclab_net::report::RunResult, ok: bool, what: std::fmt::Arguments<'_>) {
    if r.net.disturbed {
        if !ok {
            eprintln!("NOT CHECKED (machine disturbed): {what}");
        }
    } else {
        assert!(ok, "{what}");
    }
}

/// A finite NewReno flow of `pkts` full payloads (1440 B) over a 40 ms path, as the endpoint tests that
/// wire a sender to a receiver directly (no emulator) set it up.
pub fn newreno_flow(pkts: u64) -> cclab_net::spec::FlowSpec {
    serde_json::from_str(&format!(
        r#"{{"group":0,"cc":"newreno","path":[0],"ack_path":[1],"extra_delay_fwd":0,"extra_delay_rev":0,"rtt":0.04,
        "start":0.0,"stop":null,"size":{},"transport":{{"mss":1448,"packet_size":1500,"initial_cwnd":10,
        "delayed_ack":1,"delack_timeout":0.2,"min_rto":0.2,"sack":true}}}}"#,
        pkts * 1440
    ))
    .unwrap()
}

/// A bound UDP socket's IPv4 address.
pub fn v4(s: &std::net::UdpSocket) -> std::net::SocketAddrV4 {
    match s.local_addr().unwrap() {
        std::net::SocketAddr::V4(a) => a,
        a => panic!("{a}"),
    }
}

/// Why a test that drives the emulator or endpoints directly (no `cclab_net::run`, so no
/// `net.disturbance`) was disturbed, if it was: by a run's own rule (`cclab_net::disturbance::judge`),
/// a lateness p99 of 1 ms or more, or of 300 µs or more while CPU pressure was 25 % or more. `late_us`
/// names each lateness figure the test has (µs, p99).
pub fn disturbed_by(pressure: Option<f64>, late_us: &[(&str, f64)]) -> Option<String> {
    use cclab_net::disturbance::{
        DISTURBING_EMULATOR_P99_US, DISTURBING_PRESSURE, PRESSED_LATENESS_US,
    };
    let pressed = pressure.is_some_and(|p| p >= DISTURBING_PRESSURE);
    let bad = late_us
        .iter()
        .any(|&(_, us)| us >= DISTURBING_EMULATOR_P99_US || (pressed && us >= PRESSED_LATENESS_US));
    bad.then(|| {
        let figures: Vec<String> = late_us
            .iter()
            .map(|(what, us)| format!("{what} lateness p99 {us:.0} µs"))
            .collect();
        format!(
            "CPU pressure {}, {}",
            pressure.map_or("unknown".into(), |p| format!("{:.0} %", 100.0 * p)),
            figures.join(", ")
        )
    })
}

/// Runs `attempt` (which returns its result and its lateness figures, see [`disturbed_by`]) until the
/// machine leaves one undisturbed, at most [`ATTEMPTS`] times. Returns the quiet attempt's result, or
/// None after printing "NOT CHECKED (machine disturbed …)" with the figures: timing bounds measured on
/// a disturbed machine report the machine, not the code. A quiet attempt is returned whatever it
/// measured, so a real regression still fails the caller's assertions.
pub fn quiet_attempt<T>(mut attempt: impl FnMut() -> (T, Vec<(&'static str, f64)>)) -> Option<T> {
    use cclab_net::disturbance::{cpu_pressure_us, pressure_between};
    let mut why = String::new();
    for k in 1..=ATTEMPTS {
        let (p0, t0) = (cpu_pressure_us(), std::time::Instant::now());
        let (r, late) = attempt();
        let pressure = p0
            .zip(cpu_pressure_us())
            .and_then(|(a, b)| pressure_between(a, b, t0.elapsed().as_secs_f64()));
        match disturbed_by(pressure, &late) {
            None => return Some(r),
            Some(w) => {
                eprintln!("attempt {k}: disturbed: {w}; running again");
                why = w;
            }
        }
    }
    eprintln!("NOT CHECKED (machine disturbed in all {ATTEMPTS} attempts): {why}");
    None
}

/// User-mode CPU time (clock ticks) of the whole machine and of this process (all its threads: the
/// emulator and the endpoints of an in-process run), from `/proc/stat` and `/proc/self/stat`; None where
/// /proc lacks them.
pub fn user_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .take(2)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let me = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces): state is the 3rd field, utime the 14th.
    let rest = &me[me.rfind(')')? + 2..];
    let utime: u64 = rest.split_whitespace().nth(11)?.parse().ok()?;
    Some((cpu[0] + cpu[1], utime))
}

/// How much of the machine other processes' user-mode work took while `run` ran: (their user ticks) /
/// (elapsed ticks × CPUs), 0-1; None without /proc. A rate-bound sender (ours at 1 Gbit/s needs a whole
/// core) loses goodput to another busy process without waking late, so neither lateness nor CPU
/// pressure (our own three busy threads on two cores make 0.45 of it alone) shows it; this does. Our
/// packets' kernel work (softirq, system time) is not user time, so it does not count.
pub fn others_user_share<T>(run: impl FnOnce() -> T) -> (T, Option<f64>) {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let (a, t0) = (user_ticks(), std::time::Instant::now());
    let r = run();
    let share = a.zip(user_ticks()).map(|((m0, u0), (m1, u1))| {
        let others = (m1 - m0).saturating_sub(u1 - u0) as f64;
        others / (t0.elapsed().as_secs_f64() * hz * cpus).max(1.0)
    });
    (r, share)
}
