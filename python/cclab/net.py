"""The real datapath from Python: ``cclab.net.run`` and ``cclab net run`` (docs/real-datapath.md).

A scenario is resolved exactly as for the simulator (:meth:`Scenario.to_spec`), checked against what the
real datapath can do (rates ≤ 1 Gbit/s, at most 64 flows, transfers in the namespace mode only, …), and handed as JSON to the
``cclab-net`` binary (crates/cclab-net), which builds two network namespaces with a userspace link
emulator between them and runs the flows on real sockets in real time. Its result becomes the same
:class:`~cclab.results.Result` as a simulation — summary.json with the same keys (``net`` in place of
``sim``), timeseries.parquet with the same columns, the same plots — so one command compares the two.

Without root (or namespaces), ``loopback=True`` / ``cclab net run --loopback`` runs our transport on
127.0.0.1 through the same emulator acting as a UDP relay (no kernel TCP). It is never chosen
automatically: it is a different measurement set-up, so the caller opts in (docs/real-datapath.md).

The binary is found through ``CCLAB_NET_BIN``, then ``cclab-net`` on ``PATH``, then beside this
Python's interpreter (``make build`` copies it into the venv), then ``<repo>/target/release/cclab-net``.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import pandas as pd

from . import executables, provenance, scratch
from .errors import ScenarioError, show
from .progress import Progress
from .results import WINDOW_STATS, Result, build_summary, flow_table, frame, link_table, prepare_out
from .scenario import KERNEL_CCS, Dumbbell, Scenario, ScenarioLike, as_scenario

# The measured limit of the 2-core machine (docs/real-datapath.md): at 1 Gbit/s the emulator keeps one
# core to itself and the hosts' stacks and endpoints share the other. crates/cclab-net/src/run.rs
# enforces the same number.
MAX_RATE_BPS = 1e9
# crates/cclab-net/src/run.rs: flows get ports 40000 + i; at most 64 (each is two threads here).
MAX_FLOWS = 64
# crates/cclab-net/src/topology.rs: each `transfers` source has 1000 ports below the hosts' ephemeral range.
MAX_TRANSFER_SOURCES = 8
# Our header: IPv4 (20) + UDP (8) + ours (32) bytes; a packet must carry payload and fit the MTU.
WIRE_OVERHEAD, MTU = 60, 1500

# Exit codes of `cclab-net` (crates/cclab-net/src/main.rs).
_EXIT_SPEC, _EXIT_UNAVAILABLE = 2, 3


class NetUnavailable(RuntimeError):
    """The real datapath cannot run here: no ``cclab-net`` binary, not root, no TUN, no namespaces."""


class NetInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM, :attr:`signum`) during a real run: the child was told to stop and its partial
    result (``net.interrupted`` is true) is in :attr:`result` (and was written to ``out`` if one was
    given); None if it had none to give."""

    def __init__(self, result: Optional[Result], signum: int = signal.SIGINT) -> None:
        super().__init__("real run interrupted")
        self.result = result
        self.signum = signum

    def __reduce__(self) -> tuple:
        # BaseException pickles ``args`` (the message) and would rebuild the exception with the message as
        # its result; a worker process that sends it back to the driver must send result and signal.
        return (type(self), (self.result, self.signum))


# Each run works in a folder of its own under the system's temporary folder, named with this prefix and
# holding LOCK, which the run (and cclab-net, which inherits it) keeps locked (flock) while alive. A
# folder whose lock is free was left by a run that was killed (SIGKILL): the next run removes it
# (python/cclab/scratch.py).
TMP_PREFIX = "cclab-net-"


class _Stop(Exception):
    """Raised by the SIGTERM handler inside the wait for cclab-net: stop it as Ctrl-C does."""


class _Signals:
    """SIGTERM (and SIGHUP) while a real run is under way: the run stops as on Ctrl-C — the child writes
    its partial result, which is written to ``out`` — and the temporary folder is removed. The handler
    raises only while the caller waits for the child (``armed``); a signal at any other moment is
    remembered and acted on at the next safe point. Installed only in the main thread (Python's rule)."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.got: Optional[int] = None
        self.armed = False
        self.saved: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        first = self.got is None
        self.got = signum
        if self.armed and first:
            raise _Stop()

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self.saved.items():
            signal.signal(sig, old)


def clean_stale_tmp(root: Optional[Union[str, Path]] = None) -> list[Path]:
    """Removes the temporary folders of real runs that were killed (their lock is free); returns them."""
    return scratch.clean_stale(TMP_PREFIX, root)


def _make_tmp() -> tuple[Path, int]:
    """A new temporary folder for one run, with its lock taken: (folder, the lock's file descriptor)."""
    return scratch.make(TMP_PREFIX)


def find_binary() -> Optional[str]:
    """The ``cclab-net`` executable to run, or None (see the module docstring for the search order)."""
    return executables.find("cclab-net", "CCLAB_NET_BIN")


def _need_binary() -> str:
    b = find_binary()
    if b is None:
        raise NetUnavailable("the cclab-net binary was not found (looked at $CCLAB_NET_BIN, PATH, "
                             f"{Path(sys.executable).parent}, {executables.REPO_RELEASE}); "
                             "build it with `make build` or `cargo build --release -p cclab-net`")
    if not executables.is_executable(b):
        raise NetUnavailable(f"CCLAB_NET_BIN={b!r} is not an executable file")
    return b


def check() -> tuple[bool, str]:
    """(available, reason): whether real runs can happen here, and why not (or the binary used)."""
    try:
        b = _need_binary()
    except NetUnavailable as e:
        return False, str(e)
    try:
        r = subprocess.run([b, "check"], capture_output=True, text=True, timeout=30)
        info = json.loads(r.stdout)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
        return False, f"{b} check failed: {e}"
    if info.get("available"):
        return True, f"real datapath available ({b})"
    return False, str(info.get("reason") or "unavailable")


def validate(sc: Scenario, spec: Optional[dict] = None, *, loopback: bool = False) -> dict[str, Any]:
    """Checks ``sc`` against what the real datapath can run and returns its resolved spec. Raises one
    :class:`ScenarioError` listing every problem, each naming the scenario field and what is allowed.
    ``loopback``: also refuse what loopback mode cannot run (kernel TCP)."""
    spec = spec if spec is not None else sc.to_spec(datapath="net")
    errors: list[tuple[str, str]] = []
    if loopback:
        seen = set()
        for f in spec["flows"]:
            if f["cc"].startswith(("kernel:", "bpf:")) and f["group"] not in seen:
                seen.add(f["group"])
                errors.append((f"flows[{f['group']}].cc", f"{show(f['cc'])} (Linux TCP) needs the namespace mode (root); "
                                                          "loopback mode runs our transport only"))
    topo = sc.topology
    # Every topology kind runs: the emulator sends each flow's packets through its own path's links
    # (docs/real-datapath.md, "Topologies and cross traffic"). Rates are checked per scenario link.
    named = ([("topology.bottleneck", topo.bottleneck), ("topology.reverse", topo.reverse)]
             if isinstance(topo, Dumbbell) else [(f"topology.links[{k}]", l) for k, l in enumerate(topo.links)])
    for name, link in named:
        if link is not None and link.rate_bps() > MAX_RATE_BPS:
            key, got = ("rate", show(link.rate)) if link.trace is None else ("trace", f"a mean of "
                                                                              f"{link.rate_bps() / 1e6:.1f} Mbit/s")
            errors.append((f"{name}.{key}", f"must be <= 1 Gbit/s on the real datapath (the measured limit "
                                            f"of this machine, docs/real-datapath.md), got {got}"))
    for g, f in enumerate(sc.flows):
        if f.reverse and loopback:
            errors.append((f"flows[{g}].reverse", "a reverse flow needs the namespace mode (root): loopback mode "
                                                  "relays one direction of data; allowed in loopback mode: false"))
    n_transfers = 0
    for i, t in enumerate(sc.traffic):
        if t.kind != "transfers":
            ps = spec["traffic"][i]["packet_size"]
            if not 28 <= ps <= MTU:
                errors.append((f"traffic[{i}].packet_size", f"must be in [28 B, {MTU} B] on the real datapath (an "
                                                            f"IPv4/UDP packet within the hosts' MTU), got {ps} B"))
            continue
        n_transfers += 1
        if loopback:
            errors.append((f"traffic[{i}].kind", "\"transfers\" needs the namespace mode (root): each transfer's "
                                                 "endpoints are bound when it arrives; allowed in loopback mode: "
                                                 "\"cbr\", \"poisson\", \"onoff\""))
        elif n_transfers > MAX_TRANSFER_SOURCES:
            errors.append((f"traffic[{i}].kind", f"at most {MAX_TRANSFER_SOURCES} \"transfers\" sources on the real "
                                                 "datapath"))
        cc = spec["traffic"][i]["flow"]["cc"]
        if cc.startswith(("kernel:", "bpf:")):
            errors.append((f"traffic[{i}].cc", f"transfers run our transport on the real datapath, got {show(cc)} "
                                               "(Linux TCP); allowed: any algorithm `cclab algorithms` lists"))
    if sc.trace_packets:
        errors.append(("trace_packets", "the per-packet trace is simulator-only; allowed on the real datapath: false"))
    ps = spec["flows"][0]["transport"]["packet_size"] if spec["flows"] else MTU
    if not WIRE_OVERHEAD < ps <= MTU:
        errors.append(("packet_size", f"must be in ({WIRE_OVERHEAD} B, {MTU} B] on the real datapath (the hosts' MTU), "
                                      f"got {ps} B"))
    if len(spec["flows"]) > MAX_FLOWS:
        errors.append(("flows", f"at most {MAX_FLOWS} flows (all groups' count) on the real datapath, got {len(spec['flows'])}"))
    if errors:
        raise ScenarioError(errors)
    return spec


def run(
    scenario: ScenarioLike,
    out: Optional[Union[str, Path]] = None,
    *,
    seed: Optional[int] = None,
    progress: bool = True,
    plots: bool = True,
    loopback: bool = False,
) -> Result:
    """Runs a scenario on the real datapath (real sockets through the link emulator, in real time: a
    30 s scenario takes ~30 s). Same arguments and :class:`Result` as :func:`cclab.run`; ``out`` gets
    summary.json, timeseries.parquet, spec.json and the plots. Raises :class:`ScenarioError` for what
    the real datapath cannot run, :class:`NetUnavailable` when it cannot run here, and
    :class:`NetInterrupted` (carrying the partial result) on Ctrl-C. ``loopback``: no namespaces, no root —
    our transport on 127.0.0.1 through the emulator as a UDP relay (kernel TCP is refused)."""
    started = provenance.utc_now()
    call = provenance.call("cclab.net.run", scenario, out=None if out is None else str(out), seed=seed,
                           loopback=loopback)
    sc = as_scenario(scenario, datapath="net")
    spec = validate(sc, sc.to_spec(seed=seed, datapath="net"), loopback=loopback)
    binary = _need_binary()
    if out is not None:
        out = prepare_out(out)
    with _Signals() as sigs:
        tmp, lock = _make_tmp()
        try:
            rc, stderr, raw, interrupted = _run_child(binary, spec, tmp, lock, loopback, progress, sigs)
        finally:
            os.close(lock)
            shutil.rmtree(tmp, ignore_errors=True)
        signum = sigs.got or signal.SIGINT
        if rc == _EXIT_SPEC:
            raise ScenarioError([("run spec", _last_error(stderr))])
        if rc == _EXIT_UNAVAILABLE:
            raise NetUnavailable(_last_error(stderr).removeprefix("real datapath unavailable: "))
        if rc != 0 or raw is None:
            if interrupted:
                raise NetInterrupted(None, signum)
            raise RuntimeError(f"cclab-net exited with code {rc}: {_last_error(stderr)}")
        res = from_raw(raw, spec)
        res.summary["meta"] = provenance.meta(datapath="net", started=started, api_call=call)
        if out is not None:
            res.to_dir(out, plots=plots and sigs.got is None)
        if interrupted or sigs.got is not None:
            raise NetInterrupted(res, signum)
    return res


def _run_child(binary: str, spec: dict, tmp: Path, lock: int, loopback: bool, progress: bool,
               sigs: _Signals) -> tuple[int, str, Optional[dict], bool]:
    """Runs cclab-net on ``spec`` in ``tmp``: (exit code, its stderr, its result or None, whether it was
    stopped early by Ctrl-C or a signal to us)."""
    res_path = tmp / "result.json"
    err_path = tmp / "stderr.txt"
    interrupted = False
    with open(err_path, "w+") as err:
        # A session of its own: a terminal Ctrl-C reaches only us, and we forward it exactly once,
        # so the child's partial result is always collected before we exit. It inherits the lock, so
        # the folder is not taken for stale while it lives, even after we were killed.
        argv = [binary, "run", "--spec", "-", "--out", str(res_path)] + (["--loopback"] if loopback else [])
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                preexec_fn=_die_with_parent, pass_fds=(lock,))
        bar = Progress(spec["duration"], "real run") if progress else None
        try:
            sigs.armed = True
            if sigs.got is not None:  # a signal came while starting
                raise _Stop()
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(spec).encode())
            proc.stdin.close()
            t0 = time.monotonic()
            while proc.poll() is None:
                time.sleep(0.1)
                if bar:
                    bar.update(min(time.monotonic() - t0, spec["duration"]))
        except (KeyboardInterrupt, _Stop, BrokenPipeError):
            sigs.armed = False
            interrupted = True
            _stop_child(proc)
        except BaseException:
            sigs.armed = False
            _stop_child(proc)
            raise
        finally:
            sigs.armed = False
            if bar:
                bar.close()
        rc = proc.wait()
        err.seek(0)
        stderr = err.read()
    raw = None
    if res_path.exists():
        try:
            raw = json.loads(res_path.read_text())
        except (OSError, ValueError):
            raw = None
    return rc, stderr, raw, interrupted


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it if this Python process dies (killed, crashed), so a run never
    outlives its caller; cclab-net treats SIGTERM like Ctrl-C and its namespaces die with it."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass  # not Linux: nothing to arrange (cclab-net runs only on Linux anyway)


def _stop_child(proc: subprocess.Popen) -> None:
    """SIGINT: the child ends its run early and writes the partial result; SIGKILL if it does not
    within 10 s (its namespaces die with it, crates/cclab-net/src/hosts.rs)."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _last_error(stderr: str) -> str:
    lines = [l.removeprefix("cclab-net: ") for l in stderr.strip().splitlines() if "warning:" not in l]
    return lines[-1] if lines else "no message"


# ---- the result: cclab-net's JSON -> Result ----

def _window(t: np.ndarray, m0: float, m1: float) -> tuple[int, int]:
    # The samples nearest to the window's edges, as crates/cclab-net/src/run.rs computes the summary.
    return int(np.argmin(np.abs(t - m0))), int(np.argmin(np.abs(t - m1)))


def from_raw(raw: dict, spec: dict) -> Result:
    """Turns ``cclab-net run``'s result JSON into a :class:`Result` with the simulator's summary keys
    and time-series columns. Values the real datapath cannot know are null (per-flow drops, kernel TCP's
    packet counts) — docs/real-datapath.md lists them."""
    m0, m1 = raw["measure"]
    sim_flows, frows = [], []
    for f, fs in zip(raw["flows"], spec["flows"]):
        s = f["series"]
        kernel = f["cc"] in KERNEL_CCS or f["cc"].startswith("bpf:")  # Linux TCP either way
        t = np.asarray(s["t"], dtype=float)
        delivered = np.asarray(s["delivered_bytes"], dtype=float)
        min_rtts = [x for x in s["min_rtt"] if x > 0]
        finish = None
        if fs["size"] is not None and len(t) and delivered[-1] >= fs["size"]:
            finish = float(t[np.argmax(delivered >= fs["size"])])  # to the sample interval
        sim_flows.append({
            "id": f["id"], "group": f["group"], "cc": f["cc"], "rtt": f["rtt"],
            "goodput_bps": f["goodput_bps"], "throughput_bps": f["throughput_bps"],
            "mean_cwnd_pkts": f["mean_cwnd_pkts"], "mean_rtt": f["mean_rtt"],
            "min_rtt": min(min_rtts) if min_rtts else None,
            "retransmits": f["retransmits"],
            # TCP_INFO has no count of RTO expiries or recoveries, nor of packets sent: null, not 0.
            "timeouts": None if kernel else f["timeouts"],
            "fast_recoveries": None if kernel else f["fast_recoveries"],
            "start": f["start"], "finish": finish,
            "delivered_bytes": int(delivered[-1]) if len(delivered) else 0,
            "sent_pkts": None if kernel else f["sent_pkts"],
            # The emulator counts drops per link, not per flow; the receivers count bytes, not packets.
            "received_pkts": None, "dropped_pkts": None,
            # Window statistics from our endpoints (RTT samples, one-way delays on the shared clock);
            # null for kernel TCP, and loss_rate null for every flow (no per-flow drop count).
            **{k: f.get(k) for k in WINDOW_STATS},
        })
        n = len(t)
        cols = {
            "t": t, "flow": np.full(n, f["id"]), "cwnd": s["cwnd_pkts"], "srtt": s["srtt"], "min_rtt": s["min_rtt"],
            "ssthresh": s["ssthresh"], "in_flight": s["in_flight"], "pacing_bps": s["pacing_bps"],
            "delivered_bytes": s["delivered_bytes"], "sent_bytes": s["sent_bytes"], "retransmits": s["retransmits"],
            "timeouts": s["timeouts"] if not kernel else np.full(n, np.nan),
        }
        for k, v in s["state"].items():
            cols[k] = np.asarray(v + [np.nan] * (n - len(v)), dtype=float)
        frows.append(frame({k: np.asarray(v, dtype=float) for k, v in cols.items()}, "flow"))
    sim_links, lrows = [], []
    for l, ls in zip(raw["links"], spec["links"]):
        s = l["series"]
        t = np.asarray(s["t"], dtype=float)
        cum = {k: np.asarray(s[k], dtype=float) for k in ("drops", "marks", "random_losses", "arrivals", "departure_bytes",
                                                         "departures", "sojourn_sum_s")}
        if len(t) >= 2:
            a, b = _window(t, m0, m1)
            d = {k: v[b] - v[a] for k, v in cum.items()}
            # Mean queueing delay: the sojourn of every packet that left the queue in the window, as the
            # simulator measures it. The 95th percentile from the sampled backlog (bytes / rate) at each
            # sample in the window: over time, not packets (docs/real-datapath.md).
            qd = np.asarray(s["queue_bytes"][a:b + 1], dtype=float) * 8.0 / ls["rate_bps"]
            mean_qd = d["sojourn_sum_s"] / d["departures"] if d["departures"] > 0 else float(qd.mean())
            p95_qd = float(np.percentile(qd, 95))
        else:
            d = dict.fromkeys(cum, 0.0)
            mean_qd = p95_qd = 0.0
        sim_links.append({
            # cclab-net's window `drops` include random losses; the simulator's are queue drops only.
            "id": l["id"], "rate_bps": ls["rate_bps"], "utilization": l["utilization"],
            "drops": int(d["drops"] - d["random_losses"]),
            "marks": l["marks"], "random_losses": int(d["random_losses"]),
            "loss_rate": d["drops"] / d["arrivals"] if d["arrivals"] > 0 else 0.0,
            "mean_queue_pkts": l["mean_queue_pkts"], "max_queue_pkts": l["max_queue_pkts"],
            "mean_queue_delay_s": mean_qd, "p95_queue_delay_s": p95_qd,
        })
        n = len(t)
        cols = {"t": t, "link": np.full(n, l["id"]), "queue_pkts": s["queue_pkts"], "queue_bytes": s["queue_bytes"],
                # `drops` in the link series counts queue drops and random losses together (the emulator's
                # series); the simulator's `drops` are queue drops only: subtract.
                "drops": cum["drops"] - cum["random_losses"], "marks": s["marks"],
                "random_losses": s["random_losses"], "arrivals": s["arrivals"], "tx_bytes": s["departure_bytes"],
                "departures": s["departures"], "sojourn_sum_s": s["sojourn_sum_s"]}
        for k, v in s["state"].items():
            cols[k] = np.asarray(v, dtype=float)
        lrows.append(frame({k: np.asarray(v, dtype=float) for k, v in cols.items()}, "link"))
    flows = flow_table(pd.concat(frows, ignore_index=True) if frows else pd.DataFrame(), spec)
    links = link_table(pd.concat(lrows, ignore_index=True) if lrows else pd.DataFrame(), spec)
    fwd = [l["counters"] for l in raw["links"]]
    injected = sum(c["arrivals"] for c in fwd)
    dropped = sum(c["queue_drops"] + c["random_drops"] for c in fwd)
    delivered = sum(c["delivered"] for c in fwd)
    summary = build_summary({
        "name": raw["scenario"], "seed": raw["seed"], "measure": raw["measure"],
        "flows": sim_flows, "links": sim_links, "wall_s": raw["net"]["wall_s"], "events": 0, "packets": 0,
        # Packets through the emulator's links (data, ACKs, cross traffic; a packet counts once per link
        # it crosses): what entered = delivered + dropped + still in a queue or on the wire at the end.
        "conservation": {"injected": injected, "delivered": delivered, "dropped": dropped,
                         "in_network": injected - delivered - dropped},
        "warnings": raw["warnings"],
        "stats_by_cc": raw.get("stats_by_cc"), "stats_total": raw.get("stats_total"),
        "transfers": raw.get("transfers"),
    })
    summary.pop("sim")
    # Datagrams and segments the endpoints refused, summed over flows (docs/real-datapath.md, "What a
    # hostile packet can and cannot do").
    refused = ("malformed", "foreign", "rejected_data", "rejected_acks", "icmp_errors")
    # Our senders' UDP GSO sends, the data packets they carried, and GSO sends the kernel refused
    # (docs/real-datapath.md, "Why our paced senders stopped at 0.7–0.8 of 1 Gbit/s").
    gso = ("gso_sends", "gso_segments", "gso_refused")
    summary["net"] = dict(raw["net"], **{k: sum(f.get(k, 0) for f in raw["flows"]) for k in refused + gso})
    return Result(summary, flows, links, spec)
