import json
import math
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import cclab
from cclab import metrics


def test_run_writes_contract_files(base, tmp_path):
    base["flows"] = [{"cc": "newreno", "rtt": "20ms"}, {"cc": "newreno", "rtt": "60ms"}]
    res = cclab.run(base, tmp_path, progress=False)
    s = json.loads((tmp_path / "summary.json").read_text())
    for k in ("scenario", "seed", "measure", "flows", "links", "jain", "jain_by_cc", "sim"):
        assert k in s
    for k in ("id", "group", "cc", "rtt", "goodput_bps", "throughput_bps", "mean_cwnd_pkts", "mean_rtt", "retransmits", "timeouts"):
        assert k in s["flows"][0]
    for k in ("id", "utilization", "drops", "marks", "mean_queue_pkts", "max_queue_pkts"):
        assert k in s["links"][0]
    assert set(s["sim"]) >= {"wall_s", "events", "packets"}
    ts = pd.read_parquet(tmp_path / "timeseries.parquet")
    assert set(ts["kind"]) == {"flow", "link"}
    assert {"t", "id", "cwnd", "rate_bps", "srtt", "queue_pkts", "drops"} <= set(ts.columns)
    for png in ("rate.png", "cwnd.png", "queue.png"):
        assert (tmp_path / png).stat().st_size > 10_000
    # Jain in the summary is Jain over the flows' goodputs
    assert s["jain"] == pytest.approx(metrics.jain([f["goodput_bps"] for f in s["flows"]]))
    assert res.summary["conservation"]["injected"] == sum(res.summary["conservation"][k] for k in ("delivered", "dropped", "in_network"))


def _strip(p):
    # sim.wall_s measures the machine and meta records when and where the run happened (start time,
    # command line, host): everything else is a function of scenario + seed.
    s = json.loads(p.read_text())
    s["sim"].pop("wall_s")
    s.pop("meta")
    return s


def _same_parquet(a, b):
    """The same table, column types and pandas metadata; the ``cclab`` file metadata (the meta block, with
    its start time) may differ."""
    import pyarrow.parquet as pq

    ta, tb = pq.read_table(a), pq.read_table(b)
    assert ta.equals(tb)
    assert ta.schema.metadata[b"pandas"] == tb.schema.metadata[b"pandas"]
    assert b"cclab" in ta.schema.metadata and b"cclab" in tb.schema.metadata
    return True


def test_determinism(base, tmp_path):
    base["flows"][0]["start"] = ["0s", "1s"]
    base["topology"]["bottleneck"]["loss"] = 0.001
    cclab.run(base, tmp_path / "a", progress=False, plots=False)
    cclab.run(base, tmp_path / "b", progress=False, plots=False)
    cclab.run(base, tmp_path / "c", progress=False, plots=False, seed=2)
    assert _strip(tmp_path / "a" / "summary.json") == _strip(tmp_path / "b" / "summary.json")
    assert _same_parquet(tmp_path / "a" / "timeseries.parquet", tmp_path / "b" / "timeseries.parquet")
    assert _strip(tmp_path / "a" / "summary.json") != _strip(tmp_path / "c" / "summary.json")


def test_cli_end_to_end(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    scen = Path(__file__).resolve().parents[1] / "scenarios" / "default.toml"
    r = subprocess.run([sys.executable, "-m", "cclab.cli", "run", str(scen), "--out", str(tmp_path), "-q"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "default" in r.stdout and "wrote" in r.stdout  # the summary table and the file list
    for name in ("summary.json", "timeseries.parquet", "spec.json", "rate.png", "cwnd.png", "queue.png"):
        assert (tmp_path / name).stat().st_size > 1000, name
    s = json.loads((tmp_path / "summary.json").read_text())
    # RED keeps its average queue between its thresholds, so it gives up a little utilisation (0.956)
    assert s["links"][0]["utilization"] > 0.9
    # RED drops both flows' packets with the same probability: NewReno's goodput ∝ 1/RTT, so the 40 ms
    # flow gets about twice the 80 ms flow's (1.98 with this seed; (80+8)/(40+8) = 1.8 counting the
    # ~8 ms of RED queueing delay). 1.5 leaves room for the seed-dependent phase of the sawtooth.
    g = [f["goodput_bps"] for f in s["flows"]]
    assert g[0] / g[1] > 1.5


RATES = {"2Mbps": 2e6, "10Mbps": 10e6, "30Mbps": 30e6}
rtts = st.sampled_from(["5ms", "20ms", "80ms", "150ms"])
# Every registered algorithm (the list comes from the Rust registry, so new ones are covered as they land)
algorithms = st.sampled_from(cclab.algorithms())
link = st.fixed_dictionaries({
    "rate": st.sampled_from(sorted(RATES)),
    "buffer": st.sampled_from(["BDP", 20, "0.5BDP", "64KB", "3p"]),
    "queue": st.sampled_from(["droptail", "red"]),
    "loss": st.sampled_from([0.0, 0.001, 0.02]),
})


@st.composite
def scenarios(draw):
    kind = draw(st.sampled_from(["dumbbell", "parking_lot"]))
    flows = []
    if kind == "dumbbell":
        topo = {"kind": kind, "bottleneck": draw(link)}
        links = [topo["bottleneck"]]
        for _ in range(draw(st.integers(1, 3))):
            flows.append({"cc": draw(algorithms), "rtt": draw(rtts), "count": draw(st.integers(1, 3))})
    else:
        n = draw(st.integers(1, 3))
        links = [dict(draw(link), delay="0.5ms") for _ in range(n)]  # 2·Σdelay ≤ 3 ms < every rtt
        topo = {"kind": kind, "links": links}
        for _ in range(draw(st.integers(1, 3))):
            lo = draw(st.integers(0, n - 1))
            hi = draw(st.integers(lo, n - 1))
            flows.append({"cc": draw(algorithms), "rtt": draw(rtts), "links": list(range(lo, hi + 1))})
    for f in flows:
        if draw(st.booleans()):
            f["start"] = ["0s", "1s"]
        if draw(st.booleans()):
            f["size"] = draw(st.sampled_from(["15KB", "200KB", "2MB"]))
    data = {"duration": "2s", "seed": draw(st.integers(0, 2**32)), "topology": topo, "flows": flows}
    if draw(st.booleans()):
        data["traffic"] = [{"kind": draw(st.sampled_from(["cbr", "poisson", "onoff"])), "rate": "500kbps",
                            "start": "0.5s", "reverse": draw(st.booleans()),
                            **({"links": [0]} if kind == "parking_lot" else {})}]
    return data, links


@settings(max_examples=40, deadline=None)
@given(scenarios())
def test_random_valid_scenarios_run_and_conserve(case):
    data, links = case
    r = cclab.run(data, progress=False)
    s = r.summary
    c = s["conservation"]
    assert c["injected"] == c["delivered"] + c["dropped"] + c["in_network"]
    n_flows = sum(f.get("count", 1) for f in data["flows"])
    assert len(s["flows"]) == n_flows
    assert len(s["links"]) == 2 * len(links)  # each configured link and its reverse (ACK) direction
    for l, cfg in zip(s["links"], links):
        # a link counts a packet when its transmission starts, so the window may hold one packet more
        # than fits: 1500 B over 2 s of the slowest link is 0.3 %
        assert 0.0 <= l["utilization"] <= 1.0 + 1500 * 8 / (RATES[cfg["rate"]] * 2.0) + 1e-12
        assert 0 <= l["mean_queue_pkts"] <= l["max_queue_pkts"] + 1e-9
    goodputs = [f["goodput_bps"] for f in s["flows"]]
    assert all(math.isfinite(g) and g >= 0 for g in goodputs)
    assert 1 / n_flows - 1e-12 <= s["jain"] <= 1 + 1e-12 or sum(goodputs) == 0
    for f, spec in zip(s["flows"], r.spec["flows"]):
        # no RTT sample can be shorter than the propagation delay
        assert f["min_rtt"] is None or f["min_rtt"] >= spec["rtt"] - 1e-9
        if spec["size"] is not None and f["finish"] is not None:
            assert f["delivered_bytes"] >= spec["size"]
    # the data the first link forwarded bounds the goodput of the flows that cross it (the window is
    # the whole run, so nothing delivered was sent before it)
    first = [g for g, spec in zip(goodputs, r.spec["flows"]) if 0 in spec["path"]]
    assert sum(first) <= RATES[links[0]["rate"]] * (1 + 0.003)
    # the time series has a row per sample per flow and per link
    samples = len(np.unique(r.flows["t"]))
    assert len(r.flows) == samples * n_flows and len(r.links) == samples * len(s["links"])


def test_no_python_call_per_packet(base):
    """The simulator calls back into Python only for progress, at most every ~0.25 s of wall time."""
    import time

    from cclab import _native

    base["duration"] = "20s"
    base["topology"]["bottleneck"]["rate"] = "100Mbps"
    spec = cclab.Scenario.from_dict(base).to_spec()
    calls = []
    t0 = time.perf_counter()
    raw, *_ = _native.run(json.dumps(spec), calls.append)
    wall = time.perf_counter() - t0
    packets = json.loads(raw)["packets"]
    assert packets > 100_000
    # a callback per 0.25 s of wall time (+1 for rounding): orders of magnitude below one per packet
    assert len(calls) <= wall / 0.25 + 1, (len(calls), wall)
    assert all(0 <= t <= 20 for t in calls)


LONG = {  # about 10 s of wall time: long enough to interrupt, never run to the end by a test
    "duration": "300s",
    "topology": {"kind": "dumbbell", "bottleneck": {"rate": "1Gbps"}},
    "flows": [{"cc": "newreno", "rtt": "40ms", "count": 20}],
}


def test_progress_callback_exception_stops_the_run():
    from cclab import _native

    class Stop(Exception):
        pass

    def progress(t):
        raise Stop(t)

    spec = cclab.Scenario.from_dict(LONG).to_spec()
    t0 = time.perf_counter()
    with pytest.raises(Stop):
        _native.run(json.dumps(spec), progress)
    # the first callback comes after ~0.25 s of wall time; the run stops right there
    assert time.perf_counter() - t0 < 3.0


def test_ctrl_c_stops_cleanly(tmp_path):
    import signal
    import subprocess
    import sys

    scen = tmp_path / "long.toml"
    scen.write_text('duration = "300s"\n[topology.bottleneck]\nrate = "1Gbps"\n'
                    '[[flows]]\ncc = "newreno"\nrtt = "40ms"\ncount = 20\n')
    code = "from cclab.cli import main; print('ready', flush=True); main()"
    p = subprocess.Popen([sys.executable, "-c", code, "run", str(scen), "--out", str(tmp_path / "o")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         # a shell's background job ignores SIGINT; a terminal user's run does not
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.5)
    t0 = time.perf_counter()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    # the simulator looks for signals every ~0.25 s of wall time
    assert time.perf_counter() - t0 < 2.0
    assert not (tmp_path / "o" / "summary.json").exists()


def test_link_series_rates_and_trace(base, tmp_path):
    base["duration"] = "2s"
    res = cclab.run(base, tmp_path, progress=False, plots=False, trace_packets=True)
    l0 = res.links[res.links["link"] == 0]
    # rate_bps over each sample interval from tx_bytes; over the whole run it adds up to the bytes sent
    dt = 0.1
    assert (l0["rate_bps"] * dt / 8).sum() == pytest.approx(l0["tx_bytes"].iloc[-1], rel=1e-9)
    assert (l0["utilization"] <= 1.0 + 1500 * 8 / (20e6 * dt)).all()  # one packet of slack per interval
    ts = pd.read_parquet(tmp_path / "timeseries.parquet")
    assert list(ts.columns[:3]) == ["kind", "id", "t"]
    assert len(ts) == len(res.flows) + len(res.links)
    trace = pd.read_parquet(tmp_path / "trace.parquet")
    assert res.summary["trace_records"] == len(trace) == len(res.trace) > 0
    # columns, not records: names for the kinds (Categoricals, also after the parquet round trip)
    assert list(trace.columns) == ["t", "kind", "link", "flow", "seq", "pkt"]
    for df in (trace, res.trace):
        assert list(df["kind"].cat.categories) == ["enqueue", "drop", "random_loss", "delivered"]
        assert list(df["pkt"].cat.categories) == ["data", "ack", "cross"]
        assert [str(df[c].dtype) for c in ("t", "link", "flow", "seq")] == ["float64", "int32", "int32", "uint64"]
    pd.testing.assert_frame_equal(trace, res.trace)
    assert trace["t"].is_monotonic_increasing and trace["t"].iloc[-1] <= 2.0
    # the trace and the summary count the same packets
    data = trace[trace["pkt"] == "data"]
    f = res.summary["flows"][0]
    assert (data["kind"] == "drop").sum() == f["dropped_pkts"] > 0          # BDP buffer: slow start overflows it
    assert (data["kind"] == "delivered").sum() == f["received_pkts"]
    assert (data.loc[data["kind"] == "delivered", "link"] == -1).all()
    assert (trace["kind"] == "random_loss").sum() == 0 and trace["kind"].notna().all()
    acks = trace[trace["pkt"] == "ack"]
    assert len(acks) > 0 and set(acks.loc[acks["kind"] == "enqueue", "link"]) == {1}   # the reverse link
    arrived = ((data["link"] == 0) & data["kind"].isin(["enqueue", "drop"])).sum()
    # every data packet sent reached the bottleneck except those still on the access link at the end,
    # which the conservation counters hold as in the network
    assert 0 <= f["sent_pkts"] - arrived <= res.summary["conservation"]["in_network"]


def test_trace_random_losses_and_an_untraced_run(base):
    base["duration"] = "1s"
    base["topology"]["bottleneck"]["loss"] = 0.01
    res = cclab.run(base, progress=False, plots=False, trace_packets=True)
    lost = res.trace[res.trace["kind"] == "random_loss"]
    # random loss on the bottleneck's data packets only, counted as the link's random losses (whole run)
    assert set(lost["link"]) == {0} and set(lost["pkt"]) == {"data"}
    link = res.links[res.links["link"] == 0]
    assert len(lost) == link["random_losses"].iloc[-1] > 0
    assert res.summary["trace_records"] == len(res.trace)
    plain = cclab.run(base, progress=False, plots=False)
    assert plain.trace is None and "trace_records" not in plain.summary
    assert plain.summary["flows"] == res.summary["flows"]   # tracing observes, it does not change the run


def test_determinism_across_processes(tmp_path):
    """Two separate `cclab run` processes (different Python hash seeds, so any set/dict-order dependence
    would show) write the same bytes: summary.json up to sim.wall_s and meta, and timeseries.parquet up to its meta."""
    import os
    import subprocess
    import sys

    scen = tmp_path / "s.toml"
    scen.write_text('duration = "5s"\nseed = 7\n[topology.bottleneck]\nrate = "20Mbps"\nqueue = "red"\nloss = 0.001\n'
                    '[[flows]]\ncc = "cubic"\nrtt = "30ms"\nstart = ["0s", "1s"]\ncount = 2\n'
                    '[[flows]]\ncc = "newreno"\nrtt = "90ms"\n[[traffic]]\nkind = "poisson"\nrate = "2Mbps"\n')
    for i, hashseed in enumerate(["1", "2"]):
        env = dict(os.environ, PYTHONHASHSEED=hashseed)
        r = subprocess.run([sys.executable, "-m", "cclab.cli", "run", str(scen), "--out", str(tmp_path / str(i)),
                            "-q", "--no-plots"], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
    assert _strip(tmp_path / "0" / "summary.json") == _strip(tmp_path / "1" / "summary.json")
    assert _same_parquet(tmp_path / "0" / "timeseries.parquet", tmp_path / "1" / "timeseries.parquet")
    assert (tmp_path / "0" / "spec.json").read_bytes() == (tmp_path / "1" / "spec.json").read_bytes()
