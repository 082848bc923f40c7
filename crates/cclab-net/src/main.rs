//! `cclab-net`: the real datapath's command line, called by Python's `cclab net run` (JSON in, JSON out).
//!
//! ```text
//! cclab-net run --spec SPEC.json [--out RESULT.json] [--loopback]
//!                                                      run a RunSpec (JSON; "-" = stdin); result JSON to
//!                                                      --out or stdout; progress and errors on stderr.
//!                                                      --loopback: no namespaces, no root: our transport
//!                                                      on 127.0.0.1 through the emulator as a UDP relay
//! cclab-net check                                      {"available": bool, "reason": ...} on stdout
//! cclab-net algorithms                                 {"ours": [...], "kernel": [...]} on stdout
//! cclab-net cleanup                                    remove named cclab-* namespaces and cclab* devices
//! ```
//! Exit codes: 0 ok, 2 bad spec (message names the field), 3 real datapath unavailable (not root, no
//! TUN, …), 1 anything else. Ctrl-C / SIGTERM end a run early: the partial result is still written, with
//! `net.interrupted = true`.

use std::io::Read;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use cclab_net::run::{self, RunError};
use cclab_net::spec::RunSpec;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: cclab-net run --spec SPEC.json [--out RESULT.json] [--loopback] | check | algorithms | cleanup"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => cmd_run(&args[1..]),
        Some("check") => {
            let reason = cclab_net::sys::unavailable_reason();
            println!(
                "{}",
                serde_json::json!({"available": reason.is_none(), "reason": reason})
            );
            ExitCode::SUCCESS
        }
        Some("algorithms") => {
            println!(
                "{}",
                serde_json::json!({
                    "ours": cclab_cc::registry::SENDER_NAMES,
                    "kernel": cclab_net::tcp::KERNEL_CCS.iter().map(|k| format!("kernel:{k}")).collect::<Vec<_>>(),
                    "bpf": cclab_cc::registry::SENDER_NAMES
                        .iter()
                        .filter(|n| !cclab_net::run::BPF_REFUSED.iter().any(|(r, _)| r == *n))
                        .map(|n| format!("bpf:{n}"))
                        .collect::<Vec<_>>(),
                })
            );
            ExitCode::SUCCESS
        }
        Some("cleanup") => match cclab_net::cleanup::cleanup() {
            Ok(removed) => {
                for r in &removed {
                    eprintln!("removed {r}");
                }
                eprintln!("cleanup: {} item(s) removed", removed.len());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("cleanup: {e}");
                ExitCode::FAILURE
            }
        },
        _ => usage(),
    }
}

fn cmd_run(args: &[String]) -> ExitCode {
    let (mut spec_path, mut out, mut mode) = (None, None, run::Mode::Tun);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--spec" => spec_path = it.next().cloned(),
            "--out" => out = it.next().cloned(),
            "--loopback" => mode = run::Mode::Loopback,
            _ => return usage(),
        }
    }
    let Some(spec_path) = spec_path else {
        return usage();
    };
    if let Err(e) = cclab_net::sys::check_tunings() {
        eprintln!("cclab-net: {e}");
        return ExitCode::from(2);
    }
    let text = if spec_path == "-" {
        let mut s = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut s) {
            eprintln!("cclab-net: reading the spec from stdin: {e}");
            return ExitCode::from(2);
        }
        s
    } else {
        match std::fs::read_to_string(&spec_path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("cclab-net: {spec_path}: {e}");
                return ExitCode::from(2);
            }
        }
    };
    let spec: RunSpec = match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cclab-net: spec: {e}");
            return ExitCode::from(2);
        }
    };
    install_signal_handlers();
    let res = run::run_with(&spec, mode, &INTERRUPTED, |[a, b]| {
        eprintln!(
            "cclab-net: hosts ready (netns net:[{a}] net:[{b}], pid {})",
            std::process::id()
        );
    });
    match res {
        Ok(r) => {
            let json = serde_json::to_string(&r).expect("results serialise");
            match out {
                Some(p) => {
                    if let Err(e) = std::fs::write(&p, json) {
                        eprintln!("cclab-net: {p}: {e}");
                        return ExitCode::FAILURE;
                    }
                }
                None => println!("{json}"),
            }
            for w in &r.warnings {
                eprintln!("cclab-net: warning: {w}");
            }
            ExitCode::SUCCESS
        }
        Err(e @ RunError::Spec(_)) => {
            eprintln!("cclab-net: {e}");
            ExitCode::from(2)
        }
        Err(e @ RunError::Unavailable(_)) => {
            eprintln!("cclab-net: {e}");
            ExitCode::from(3)
        }
        Err(e) => {
            eprintln!("cclab-net: {e}");
            ExitCode::FAILURE
        }
    }
}
