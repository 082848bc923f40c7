//! `cclab-bpf serve <algorithm>`: makes a cclab algorithm selectable by name for every TCP socket on
//! the machine (`iperf3 -C cclab_fast`, `setsockopt(TCP_CONGESTION, "cclab_fast")`) until stopped with
//! SIGINT or SIGTERM; then prints what the controller measured as JSON.
//!
//! `cclab-bpf leftovers`: prints, as JSON, the live BPF maps of our program and the registered
//! `cclab*` names (empty once every controller has stopped and its sockets have closed).
//!
//! Exit codes: 0 stopped cleanly, 1 the kernel refused (not root, no BTF or struct_ops, name taken),
//! 2 bad arguments.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cclab_bpf::{Controller, Options};
use cclab_cc::params::{ParamValue, Params};
use cclab_cc::registry::{build_sender, SenderEnv, SENDER_NAMES};

const USAGE: &str = "usage: cclab-bpf serve <algorithm> [--name NAME] [--param KEY=VALUE]... \
[--packet-size BYTES] [--initial-cwnd PACKETS] [--seed N] [--hystart true|false] [--stale-ms MS] \
[--ring-kb KB] [--kernel-stats]\n       cclab-bpf leftovers";

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

struct Args {
    algorithm: String,
    name: String,
    params: Params,
    env: SenderEnv,
    stale: Duration,
    ring_bytes: u32,
    kernel_stats: bool,
}

fn value(s: &str) -> ParamValue {
    match s {
        "true" => ParamValue::Bool(true),
        "false" => ParamValue::Bool(false),
        _ => s
            .parse::<f64>()
            .map(ParamValue::Num)
            .unwrap_or_else(|_| ParamValue::Str(s.to_string())),
    }
}

fn parse(argv: &[String]) -> Result<Args, String> {
    let mut it = argv.iter();
    match it.next().map(String::as_str) {
        Some("serve") => {}
        Some(other) => return Err(format!("unknown command {other:?}\n{USAGE}")),
        None => return Err(USAGE.to_string()),
    }
    let algorithm = it.next().ok_or(USAGE)?.clone();
    let mut a = Args {
        name: format!("cclab_{algorithm}"),
        algorithm,
        params: Params::new(),
        env: SenderEnv {
            // Linux's initial window and its MSS on a 1500-byte path with timestamps.
            hystart: false,
            ..SenderEnv::default()
        },
        stale: Duration::from_millis(250),
        ring_bytes: 8 << 20,
        kernel_stats: false,
    };
    a.env.hystart = a.algorithm == "cubic";
    while let Some(flag) = it.next() {
        if flag == "--kernel-stats" {
            a.kernel_stats = true;
            continue;
        }
        let v = it
            .next()
            .ok_or_else(|| format!("{flag}: needs a value\n{USAGE}"))?;
        let num = |what: &str| {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| format!("{what}: {v:?} is not a positive number"))
        };
        match flag.as_str() {
            "--name" => a.name = v.clone(),
            "--param" => {
                let (k, val) = v
                    .split_once('=')
                    .ok_or_else(|| format!("--param: {v:?} is not KEY=VALUE"))?;
                a.params.insert(k.to_string(), value(val));
            }
            "--packet-size" => {
                let p = num("--packet-size")?;
                if !(100.0..=9000.0).contains(&p) {
                    return Err(format!("--packet-size: {p} outside 100..=9000 bytes"));
                }
                a.env.packet_size = p as u32;
                a.env.mss = p as u32 - 52;
            }
            "--initial-cwnd" => a.env.initial_cwnd = num("--initial-cwnd")?,
            "--seed" => a.env.seed = num("--seed")? as u64,
            "--hystart" => {
                a.env.hystart = match v.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(format!("--hystart: {v:?}; allowed: true, false")),
                }
            }
            "--stale-ms" => a.stale = Duration::from_secs_f64(num("--stale-ms")? / 1e3),
            "--ring-kb" => {
                let kb = num("--ring-kb")?;
                if !(4.0..=1048576.0).contains(&kb) || !(kb as u32).is_power_of_two() {
                    return Err(format!("--ring-kb: {kb}; a power of two from 4 to 1048576"));
                }
                a.ring_bytes = kb as u32 * 1024;
            }
            _ => return Err(format!("unknown option {flag:?}\n{USAGE}")),
        }
    }
    // Build once now, so a bad name or parameter is an argument error, not a refused socket later.
    build_sender(&a.algorithm, &a.params, &a.env).map_err(|e| {
        if e.field == "cc" {
            format!(
                "algorithm {:?}: unknown; allowed: {}",
                a.algorithm,
                SENDER_NAMES.join(", ")
            )
        } else {
            format!("--param {}: {}", e.field, e.message)
        }
    })?;
    if a.algorithm == "maxnet" {
        return Err(
            "algorithm \"maxnet\": needs the router price carried in our own header, \
                    which Linux TCP has no field for (docs/kernel-datapath.md)"
                .into(),
        );
    }
    Ok(a)
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("leftovers") {
        return leftovers();
    }
    if argv.iter().take(2).any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}\n\nMakes <algorithm> selectable as TCP congestion control \"cclab_<algorithm>\" \
                  (or NAME) for every socket on this machine until SIGINT/SIGTERM, then prints the \
                  controller's statistics as JSON (docs/kernel-datapath.md).");
        return ExitCode::SUCCESS;
    }
    let args = match parse(&argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("cclab-bpf: {e}");
            return ExitCode::from(2);
        }
    };
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let (algorithm, params, env) = (args.algorithm.clone(), args.params, args.env);
    let mut flow = 0u64;
    let chooser = Box::new(move |_: &cclab_bpf::events::FlowKey, _mss: u32| {
        let env = SenderEnv {
            seed: cclab_cc::registry::flow_seed(env.seed, flow),
            ..env.clone()
        };
        flow += 1;
        let packet_size = env.packet_size;
        build_sender(&algorithm, &params, &env)
            .ok()
            .map(|b| (b.cc, packet_size))
    });
    let mut opts = Options::new(args.name.clone());
    opts.stale = args.stale;
    opts.ring_bytes = args.ring_bytes;
    opts.kernel_stats = args.kernel_stats;
    let ctl = match Controller::start(opts, chooser) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cclab-bpf: {e}");
            return ExitCode::from(1);
        }
    };
    eprintln!(
        "cclab-bpf: serving {:?} as TCP congestion control {:?}; stop with Ctrl-C",
        args.algorithm, args.name
    );
    while !STOP.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
    match ctl.stop() {
        Ok(s) => {
            println!("{}", cclab_bpf::controller::stats_json(&s));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cclab-bpf: {e}");
            ExitCode::from(1)
        }
    }
}

fn leftovers() -> ExitCode {
    match (
        cclab_bpf::inventory::live_maps(),
        cclab_bpf::inventory::registered(),
    ) {
        (Ok(maps), Ok(names)) => {
            let maps: Vec<_> = maps
                .into_iter()
                .map(|(id, name)| serde_json::json!({"id": id, "name": name}))
                .collect();
            println!("{}", serde_json::json!({"maps": maps, "registered": names}));
            ExitCode::SUCCESS
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("cclab-bpf: listing BPF maps: {e} (needs root)");
            ExitCode::from(1)
        }
    }
}
