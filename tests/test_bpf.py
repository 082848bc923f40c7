"""The kernel datapath: Linux TCP steered by our algorithm code through a BPF struct_ops program and the
`cclab-bpf` controller (crates/cclab-bpf, docs/kernel-datapath.md).

Tests that load the program need root, a kernel with BTF and BPF struct_ops (6.4+) and the `cclab-bpf`
binary (`make build`); where one is missing they skip with the controller's own reason. Real transfers
run on loopback (throughput there is far above any link we emulate, so "keeps going" is measured in
Gbit/s) or through the real datapath's emulator (`cclab net run` with `bpf:*` flows). The agreement
over 5 seeds is validation/bpf_agreement.py (docs/kernel-datapath.md); the emulator tests here are
single short runs with bounds wide enough for one run (each bound says why).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

# pytest puts this folder on sys.path (rootdir-relative "prepend" imports), as for every test module.
from test_net import dumbbell, quiet, rel, show

import cclab
from cclab import net
from cclab.bpf import find_binary

REPO = Path(__file__).resolve().parents[1]


BIN = find_binary()
CCLAB = str(Path(sys.executable).parent / "cclab")


class Serve:
    """`cclab-bpf serve ...` as a child process, started when the name is registered."""

    def __init__(self, *args, cli=False):
        self.name = None
        # cli: through `cclab bpf serve`, the documented command (it execs the binary).
        argv = [CCLAB, "bpf", "serve", *args] if cli else [BIN, "serve", *args]
        if "--name" in args:
            self.name = args[args.index("--name") + 1]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        if "serving" not in line:
            self.proc.wait(5)
            raise RuntimeError((line + self.proc.stderr.read()).strip())
        self.name = self.name or f"cclab_{args[0]}"

    def stop(self):
        """SIGINT; the controller's final statistics."""
        self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=10)
        assert self.proc.returncode == 0
        return json.loads(out)


def _unavailable():
    if BIN is None:
        return "no cclab-bpf binary (make build)"
    try:
        s = Serve("newreno", "--name", "cclab_probe")
    except RuntimeError as e:
        return str(e)
    s.stop()
    return None


REASON = _unavailable()
needs_bpf = pytest.mark.skipif(REASON is not None, reason=f"kernel datapath unavailable: {REASON}")


def registered():
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


def leftovers():
    r = subprocess.run([BIN, "leftovers"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


class Transfer:
    """A bulk TCP transfer on 127.0.0.1 with congestion control `cc`, counting delivered bytes."""

    def __init__(self, cc):
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(1)
        self.received = 0
        self.done = False
        self.rx = threading.Thread(target=self._sink, daemon=True)
        self.rx.start()
        self.s = socket.socket()
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        self.s.connect(self.srv.getsockname())
        self.cc = self.s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
        self.tx = threading.Thread(target=self._send, daemon=True)
        self.tx.start()

    def _sink(self):
        c, _ = self.srv.accept()
        while True:
            b = c.recv(1 << 20)
            if not b:
                break
            self.received += len(b)
        c.close()

    def _send(self):
        buf = b"x" * 65536
        try:
            while not self.done:
                self.s.sendall(buf)
        except OSError:
            pass

    def rate_over(self, seconds):
        """Delivered bit/s over the next `seconds`."""
        b0, t0 = self.received, time.monotonic()
        time.sleep(seconds)
        return (self.received - b0) * 8 / (time.monotonic() - t0)

    def close(self):
        self.done = True
        self.tx.join(5)
        self.s.close()
        self.rx.join(5)
        self.srv.close()


# ---- without root: argument and scenario errors ----

@pytest.mark.skipif(BIN is None, reason="no cclab-bpf binary (make build)")
@pytest.mark.parametrize("args, says", [
    (["serve", "nosuch"], "allowed: newreno"),
    (["serve", "fast", "--param", "alpha=-1"], "--param alpha"),
    (["serve", "fast", "--param", "nosuch=1"], "--param nosuch"),
    (["serve", "maxnet"], "router price"),
    (["serve", "newreno", "--ring-kb", "3"], "--ring-kb"),
    (["serve", "newreno", "--stale-ms"], "needs a value"),
    (["launch"], "unknown command"),
])
def test_bad_arguments_exit_2_naming_the_field(args, says):
    r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert "panicked" not in r.stderr


@pytest.mark.skipif(BIN is None, reason="no cclab-bpf binary (make build)")
def test_cclab_bpf_cli_runs_the_binary():
    r = subprocess.run([CCLAB, "bpf", "serve", "nosuch"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "allowed: newreno" in r.stderr
    r = subprocess.run([CCLAB, "bpf", "serve", "--help"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0 and "cclab-bpf serve <algorithm>" in r.stdout
    r = subprocess.run([CCLAB, "bpf", "leftovers"], capture_output=True, text=True, timeout=10,
                       env=dict(os.environ, CCLAB_BPF_BIN="/nonexistent"))
    assert r.returncode == 2 and "cclab-bpf binary was not found" in r.stderr


def test_bpf_flows_are_real_datapath_only():
    d = dumbbell("b", [{"cc": "bpf:newreno", "rtt": "40ms"}], "20Mbps", 3, 1)
    with pytest.raises(cclab.ScenarioError, match=r"flows\[0\]\.cc.*real datapath"):
        cclab.run(d, progress=False)
    d["flows"][0]["cc"] = "bpf:maxnet"
    with pytest.raises(cclab.ScenarioError, match="router price"):
        net.validate(cclab.Scenario.model_validate(d, datapath="net"))
    d["flows"][0]["cc"] = "bpf:fast"
    d["flows"][0]["params"] = {"alpha": "many"}
    with pytest.raises(cclab.ScenarioError, match=r"flows\[0\]\.params\.alpha"):
        cclab.Scenario.model_validate(d, datapath="net")
    d["flows"][0] = {"cc": "bpf:newreno", "rtt": "40ms"}
    with pytest.raises(cclab.ScenarioError, match="namespace mode"):
        net.validate(cclab.Scenario.model_validate(d, datapath="net"), loopback=True)


# ---- the controller on loopback ----

@needs_bpf
def test_serve_makes_an_algorithm_selectable_by_name_and_stops_cleanly():
    s = Serve("fast", "--name", "cclab_t_fast", "--param", "alpha=20")
    try:
        assert "cclab_t_fast" in registered()
        # The controller holds its maps (what the SIGKILL test checks is no longer true after it).
        assert any(pid == str(s.proc.pid) for pid, _ in held_by_processes({m["id"] for m in leftovers()["maps"]}))
        # One controller serves every socket that selects the name.
        ts = [Transfer("cclab_t_fast") for _ in range(3)]
        assert all(t.cc == "cclab_t_fast" for t in ts)
        b0 = sum(t.received for t in ts)
        time.sleep(1.0)
        rate = (sum(t.received for t in ts) - b0) * 8 / 1.0
        for t in ts:
            t.close()
    finally:
        stats = s.stop()
    print(f"\nloopback FAST, 3 connections: {rate / 1e9:.2f} Gbit/s; {stats}")
    assert "cclab_t_fast" not in registered(), "stopping unregisters the name"
    assert rate > 1e9, "loopback carries Gbit/s under our window (it has no loss and µs RTTs)"
    assert stats["flows_started"] == 3 and stats["acks"] > 1000
    # Every ACK was reported and steered by the controller, none by the fallback or lost.
    assert stats["fallback_acks"] == 0 and stats["dropped"] == 0 and stats["malformed"] == 0
    assert stats["applied"] > 0.9 * stats["acks"]
    assert stats["ack_to_decision_p50_s"] < 1e-3


@needs_bpf
def test_killed_controller_falls_back_to_reno_and_leaves_nothing_behind():
    s = Serve("newreno", "--name", "cclab_t_kill")
    t = Transfer("cclab_t_kill")
    try:
        before = t.rate_over(0.5)
        s.proc.kill()  # SIGKILL: no clean-up code runs
        s.proc.wait(5)
        # The name goes with the process (the struct_ops link was its file descriptor)...
        assert "cclab_t_kill" not in registered()
        # ...the live socket keeps its program, which finds the heartbeat stale after 250 ms and runs
        # Linux's Reno: the transfer keeps going.
        time.sleep(0.4)
        after = t.rate_over(1.0)
    finally:
        t.close()
    print(f"\nbefore the kill {before / 1e9:.2f} Gbit/s, after {after / 1e9:.2f} Gbit/s")
    assert after > 1e9, "the connection went on under the Reno fallback"
    # With the socket closed, nothing of ours holds the program or its maps: no process has a descriptor
    # of them, no socket uses the name, and the name is gone. The kernel then frees them on its own
    # schedule: a struct_ops map waits out RCU and RCU-tasks grace periods in deferred work, measured
    # here from under 2 s (no socket ever used it) to 8 s and, after a test session, several minutes.
    # So what is asserted is that they are orphaned, not that they are already gone.
    ours = {m["id"] for m in leftovers()["maps"]}
    assert not held_by_processes(ours), "a process still holds our maps"
    assert not any("cclab_t_kill" in line for line in socket_algorithms())
    assert "cclab_t_kill" not in registered()


def held_by_processes(map_ids):
    """(pid, map id) for every open descriptor of one of `map_ids` in any process (/proc/*/fdinfo)."""
    held = []
    for fdinfo in Path("/proc").glob("[0-9]*/fdinfo/*"):
        try:
            text = fdinfo.read_text()
        except OSError:
            continue  # the process or descriptor went away meanwhile
        for line in text.splitlines():
            if line.startswith("map_id:") and int(line.split()[1]) in map_ids:
                held.append((fdinfo.parts[2], int(line.split()[1])))
    return held


def socket_algorithms():
    """`ss -tin` lines: every TCP socket with its congestion control, in this namespace."""
    return subprocess.run(["ss", "-tin"], capture_output=True, text=True, timeout=10).stdout.splitlines()


@needs_bpf
def test_controller_that_falls_behind_drops_counts_and_keeps_control():
    # A 4 KiB ring holds 32 records; stopping the controller for 100 ms (less than the 250 ms after
    # which the program falls back) overflows it at loopback ACK rates.
    s = Serve("newreno", "--name", "cclab_t_slow", "--ring-kb", "4")
    t = Transfer("cclab_t_slow")
    try:
        t.rate_over(0.3)
        for _ in range(5):
            s.proc.send_signal(signal.SIGSTOP)
            time.sleep(0.1)
            s.proc.send_signal(signal.SIGCONT)
            time.sleep(0.1)
        rate = t.rate_over(0.5)
    finally:
        t.close()
        stats = s.stop()
    print(f"\nafter the stalls {rate / 1e9:.2f} Gbit/s; {stats}")
    assert stats["dropped"] > 0, "the ring overflowed and the program counted what it could not queue"
    assert stats["fallback_acks"] == 0, "100 ms stalls stay under the 250 ms fallback threshold"
    assert stats["acks"] > 1000 and stats["applied"] > 0.5 * stats["acks"], "control resumed after each stall"
    assert rate > 1e9


@needs_bpf
@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed (make test installs it as root)")
def test_iperf3_runs_fast_over_loopback_in_a_namespace():
    # The documented command (docs/kernel-datapath.md): any program selects the name.
    s = Serve("fast", "--param", "alpha=20", cli=True)
    try:
        r = subprocess.run(
            ["unshare", "-n", "sh", "-c",
             "ip link set lo up && iperf3 -s -1 -D && sleep 0.3 && iperf3 -c 127.0.0.1 -C cclab_fast -t 2 -J"],
            capture_output=True, text=True, timeout=30)
    finally:
        stats = s.stop()
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["end"]["sender_tcp_congestion"] == "cclab_fast"
    bps = out["end"]["sum_received"]["bits_per_second"]
    print(f"\niperf3 with cclab_fast: {bps / 1e9:.2f} Gbit/s; {stats}")
    assert bps > 1e9 and stats["acks"] > 1000 and stats["fallback_acks"] == 0


# ---- through the emulator (cclab net run) ----

AVAILABLE, NET_REASON = net.check()
needs_net = pytest.mark.skipif(not AVAILABLE or REASON is not None,
                               reason=f"real datapath or kernel datapath unavailable: {NET_REASON or REASON}")


def one(cc, n=1, rate="50Mbps", buffer="BDP", params=None, duration=10, measure=3, seed=1):
    flows = [{"cc": cc, "rtt": "40ms", "start": ["0s", "0.5s"], **({"params": params} if params else {})}
             for _ in range(n)]
    return dumbbell(cc.replace(":", "_"), flows, rate, duration, measure, buffer=buffer, seed=seed)


@needs_net
@pytest.mark.parametrize("linux, ours", [("kernel:reno", "bpf:newreno"), ("kernel:cubic", "bpf:cubic")])
def test_bpf_matches_linux_through_the_emulator(linux, ours):
    # 50 Mbit/s, 40 ms, BDP buffer, window 3-10 s. Over 5 seeds of 20 s (validation/bpf_agreement.py)
    # the pairs agree to 0.01 Mbit/s and 0.2 ms (docs/kernel-datapath.md); one 10 s run each here, so
    # the bounds are the 10 %. Both send with the same Linux TCP: only the window rule differs,
    # and ours follows Linux's step for step (PRR included).
    #
    # The window (7 s) is shorter than one sawtooth cycle (~10 s here: the window grows from one BDP to
    # two at one packet per 65 ms RTT), so its mean RTT is a draw of where in the cycle it falls: on a
    # quiet machine (CPU pressure 2 %, emulator p99 late 36 us) one pair in about ten has an extra loss
    # episode on one side and the means differ by 20 % (kernel:reno 64.7 ms against 51.2 ms with queue
    # 46, goodput 47.2 against 48.3 Mbit/s; 2026-11-29), while every other pair agrees within 1 ms. So a
    # pair whose means differ is run once more and the second pair is asserted: a window rule that is
    # not Linux's differs in both. Goodput does not depend on the phase and is asserted on both pairs.
    def pair():
        res = {cc: quiet(lambda cc=cc: net.run(one(cc), progress=False).summary) for cc in (linux, ours)}
        for cc, s in res.items():
            show(cc, s)
        k, b = (res[c]["flows"][0] for c in (linux, ours))
        assert rel(b["goodput_bps"], k["goodput_bps"]) < 0.10
        return res, k, b

    res, k, b = pair()
    if rel(b["mean_rtt"], k["mean_rtt"]) >= 0.10:
        print(f"\nmean RTTs {k['mean_rtt'] * 1e3:.1f} / {b['mean_rtt'] * 1e3:.1f} ms differ by more than 10 %: "
              "a second pair")
        res, k, b = pair()
    assert rel(b["mean_rtt"], k["mean_rtt"]) < 0.10
    kd = res[ours]["net"]["kernel_datapath"]
    assert kd["flows_started"] == 1 and kd["acks"] > 1000
    assert kd["fallback_acks"] == 0 and kd["dropped"] == 0 and kd["unknown_flow"] == 0
    # The program's own run time per ACK: 5-12 µs measured when every ACK wakes the controller (as at
    # this rate), 0.5-1.1 µs when wake-ups are batched; 50 µs would mean something else is wrong.
    assert kd["kernel_ns_per_ack"] is not None and kd["kernel_ns_per_ack"] < 50_000


@needs_net
def test_bpf_fast_holds_the_queue_at_the_sum_of_alphas():
    # FAST's equilibrium (§V): every flow keeps alpha packets queued, so 2 flows with alpha = 50 hold 100.
    # Over 5 seeds of 20 s: 99.2 ± 0.1 packets, no drops (docs/kernel-datapath.md); the bound is 20 %.
    s = quiet(lambda: net.run(one("bpf:fast", n=2, buffer="2BDP", params={"alpha": 50}, duration=12, measure=5),
                              progress=False).summary)
    show("bpf:fast", s)
    assert rel(s["links"][0]["mean_queue_pkts"], 100) < 0.20
    assert s["links"][0]["drops"] == 0
    assert s["jain"] > 0.95, "equal alphas, equal RTTs: equal rates"


@needs_net
def test_bpf_vegas_keeps_its_small_queue():
    # Vegas holds alpha..beta = 2..4 packets per flow in the queue: 4..8 for two flows. Over 5 seeds of
    # 20 s: 6.9 ± 0.3 packets (our UDP transport 7.5, the simulator 6.7). One run: [2, 10].
    s = quiet(lambda: net.run(one("bpf:vegas", n=2, buffer="2BDP", duration=12, measure=5), progress=False).summary)
    show("bpf:vegas", s)
    assert 2 <= s["links"][0]["mean_queue_pkts"] <= 10
    assert s["links"][0]["utilization"] > 0.95


@needs_net
def test_bpf_bbr_is_paced_by_the_kernel():
    # Our BBR sets a pacing rate; the program hands it to Linux (sk_pacing_rate, internal pacing on). Over
    # 5 seeds of 20 s: goodput 47.39 ± 0.11 Mbit/s, queue 20.3 ± 9.0 packets (17 in 4 seeds), where
    # Linux's BBR keeps 15.4 (docs/kernel-datapath.md). Unpaced, its window (2 BDP) would hold about one
    # BDP (167 packets) in this buffer and overflow it: a queue under 60 packets shows the pacing.
    runs = []

    def run():
        runs.append(net.run(one("bpf:bbr", duration=12, measure=5), progress=False))
        return runs[-1].summary

    s = quiet(run)
    show("bpf:bbr", s)
    assert s["links"][0]["utilization"] > 0.9
    assert s["links"][0]["mean_queue_pkts"] < 60
    # The rate Linux paces at (TCP_INFO) is the one our BBR computed: BtlBw x a gain of 0.75-1.25 in
    # ProbeBW, so near the 50 Mbit/s link over the window.
    ts = runs[-1].timeseries()
    pacing = ts[(ts["kind"] == "flow") & (ts["t"] >= 5)]["pacing_bps"].median()
    print(f"median pacing rate {pacing / 1e6:.1f} Mbit/s")
    assert 40e6 < pacing < 65e6
