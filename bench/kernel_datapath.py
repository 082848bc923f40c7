#!/usr/bin/env python3
"""The kernel datapath at 1 Gbit/s and beyond: what steering Linux TCP from user space costs (root).

Two network namespaces joined by a veth pair; the sender's side shapes to `--rate` with Linux's tbf
qdisc (this kernel has no netem, so there is no added delay: RTTs are tens of µs, the hardest case for
the control loop, one ACK every few µs). iperf3 runs `--duration` seconds per algorithm: Linux's own
`reno` and `cubic`, and ours through the kernel datapath (`cclab-bpf serve <algorithm>`, selected by
name with `iperf3 -C`). Reported per run: goodput (iperf3's receiver), retransmissions, and for ours
the controller's figures: ACKs handled, kernel ns per ACK (the program's own run time, BPF run-time
statistics), controller CPU s per Gbit carried, ACK-to-decision delay p50/p99, events dropped, ACKs
left to the Reno fallback.

    sudo .venv/bin/python bench/kernel_datapath.py [--rate 1gbit] [--duration 10] [--algorithms newreno,cubic,fast]

docs/kernel-datapath.md has the table this printed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
A, B = "cclabbenchA", "cclabbenchB"


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


def setup(rate: str) -> None:
    teardown()
    sh("ip", "netns", "add", A)
    sh("ip", "netns", "add", B)
    sh("ip", "link", "add", "cbA", "netns", A, "type", "veth", "peer", "name", "cbB", "netns", B)
    for ns, dev, addr in ((A, "cbA", "10.78.0.1/24"), (B, "cbB", "10.78.0.2/24")):
        sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    if rate != "none":
        # burst: one 1 ms of the rate at least (tbf needs a burst of at least one MTU per timer tick).
        sh("ip", "netns", "exec", A, "tc", "qdisc", "add", "dev", "cbA", "root", "tbf", "rate", rate,
           "burst", "256kb", "latency", "5ms")


def teardown() -> None:
    for ns in (A, B):
        sh("ip", "netns", "del", ns, check=False)


def iperf(cc: str, duration: float) -> dict:
    srv = subprocess.Popen(["ip", "netns", "exec", B, "iperf3", "-s", "-1"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    try:
        r = sh("ip", "netns", "exec", A, "iperf3", "-c", "10.78.0.2", "-C", cc, "-t", f"{duration:g}", "-J")
    finally:
        srv.wait(10)
    return json.loads(r.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", default="1gbit", help="tbf rate on the sender's veth, or 'none'")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--algorithms", default="newreno,cubic,fast")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("iperf3") is None:
        print("needs root and iperf3 (make test installs it)", file=sys.stderr)
        return 2
    binary = shutil.which("cclab-bpf") or str(ROOT / ".venv" / "bin" / "cclab-bpf")
    setup(a.rate)
    try:
        runs = [("kernel", cc) for cc in ("reno", "cubic")] + [("bpf", al) for al in a.algorithms.split(",")]
        for kind, al in runs:
            for k in range(a.repeat):
                stats = None
                if kind == "bpf":
                    ctl = subprocess.Popen([binary, "serve", al, "--kernel-stats"], stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True)
                    line = ctl.stderr.readline()
                    if "serving" not in line:
                        print(line + ctl.stderr.read(), file=sys.stderr)
                        return 1
                    cc = f"cclab_{al}"
                else:
                    cc = al
                try:
                    out = iperf(cc, a.duration)
                finally:
                    if kind == "bpf":
                        ctl.send_signal(signal.SIGINT)
                        stats = json.loads(ctl.communicate(timeout=10)[0])
                end = out["end"]
                gbit = end["sum_received"]["bytes"] * 8 / 1e9
                bps = end["sum_received"]["bits_per_second"]
                line = (f"{kind:6} {al:8} run {k + 1}: {bps / 1e9:6.3f} Gbit/s, retransmits "
                        f"{end['sum_sent'].get('retransmits', 0):6d}")
                if stats:
                    line += (f" | ACKs {stats['acks']:8d}, kernel {stats['kernel_ns_per_ack'] or float('nan'):5.0f} ns/ACK,"
                             f" controller {stats['cpu_s'] / gbit:.3f} CPU s per Gbit"
                             f" ({stats['cpu_s'] / stats['acks'] * 1e9 if stats['acks'] else float('nan'):.0f} ns/ACK),"
                             f" ACK→decision p50 {stats['ack_to_decision_p50_s'] * 1e6:.0f} µs"
                             f" p99 {stats['ack_to_decision_p99_s'] * 1e6:.0f} µs,"
                             f" ACK→applied p50 {(stats['ack_to_applied_p50_s'] or float('nan')) * 1e6:.0f} µs"
                             f" p99 {(stats['ack_to_applied_p99_s'] or float('nan')) * 1e6:.0f} µs,"
                             f" dropped {stats['dropped']}, fallback ACKs {stats['fallback_acks']}")
                print(line, flush=True)
    finally:
        teardown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
