"""Window statistics in summary.json (RTT and one-way-delay percentiles, jitter, loss and retransmission
rates; per algorithm and over all flows), the CLI's per-algorithm and per-flow rows, and provenance (the
meta block, `cclab --version`, versioned sweep run ids). docs/scenario.md documents every field.

The percentiles are checked against an independent computation: the per-packet trace gives every data
packet's send time (its enqueue at the bottleneck less the flow's access delay), its arrival at the
receiver and its ACK's arrival at the sender, so NumPy computes the same percentiles exactly from the
same samples. crates/cclab-sim/tests/window_stats.rs checks them against analytic delays."""
import importlib.metadata
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import cclab
from cclab import provenance, sweep as sw
from cclab.results import WINDOW_STATS

ROOT = Path(__file__).resolve().parents[1]


def _trace_delays(res, flow):
    """(one-way delays, their arrival times, RTTs, the ACKs' arrival times) of ``flow``'s data packets
    from the packet trace. Valid when nothing is lost: the bottleneck and the wires are FIFO, so the
    k-th enqueue at link 0, the k-th arrival at the receiver and the k-th ACK at the sender are one
    packet (delayed_ack = 1: one ACK per data packet, each an RTT sample echoing that packet's send
    time)."""
    tr = res.trace
    mine = tr[tr["flow"] == flow]
    data, acks = mine["pkt"] == "data", mine["pkt"] == "ack"
    enq = mine[data & (mine["kind"] == "enqueue") & (mine["link"] == 0)]["t"].to_numpy()
    arr = mine[data & (mine["kind"] == "delivered")]["t"].to_numpy()
    ack = mine[acks & (mine["kind"] == "delivered")]["t"].to_numpy()
    sent = enq - res.spec["flows"][flow]["extra_delay_fwd"]
    owd = arr - sent[:len(arr)]
    rtt = ack - sent[:len(ack)]
    return owd, arr, rtt, ack


def _in(x, t, m0, m1):
    return x[(t >= m0) & (t < m1)]


def _close_pct(got, samples, p):
    # The histogram reports its bucket's middle: within 1/128 of the exact nearest-rank percentile
    # (crates/cclab-transport/src/stats.rs); + 10 ns for send timestamps, which a burst's packets get
    # 1 ns apart (the trace has the true send times).
    want = np.percentile(samples, p, method="inverted_cdf")
    assert abs(got - want) <= want / 128 + 1e-8, f"p{p}: {got} vs {want}"


def test_percentiles_match_numpy_over_the_packet_trace():
    # Two NewReno flows and a CUBIC flow, each held to 27 packets by its receive window, and Poisson
    # cross traffic: the queue moves (RTT samples from 44 to 99 ms, ~6000 of them) but never overflows
    # a 2000-packet buffer, so no packet is lost and the trace pairs every packet with its ACK: an ACK per
    # packet (receiver = "per_packet"; Linux's receiver, the default, ACKs every second one).
    sc = {
        "name": "trace-stats", "duration": "6s", "seed": 3, "measure": ["1s", "6s"], "trace_packets": True,
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "20Mbps", "buffer": 2000}},
        "transport": {"receive_window": "40KB", "receiver": "per_packet"},
        "flows": [{"cc": "newreno", "rtt": "20ms"}, {"cc": "newreno", "rtt": "60ms"}, {"cc": "cubic", "rtt": "40ms"}],
        "traffic": [{"kind": "poisson", "rate": "6Mbps"}],
    }
    res = cclab.run(sc, progress=False, plots=False)
    s = res.summary
    assert s["links"][0]["drops"] == s["links"][0]["random_losses"] == s["links"][1]["drops"] == 0
    m0, m1 = s["measure"]
    pooled: dict = {"newreno": ([], []), "cubic": ([], []), "all": ([], [])}
    for f in s["flows"]:
        owd, arr, rtt, ack = _trace_delays(res, f["id"])
        owd_w, rtt_w = _in(owd, arr, m0, m1), _in(rtt, ack, m0, m1)
        assert f["owd_samples"] == len(owd_w) > 1000 and f["rtt_samples"] == len(rtt_w)
        assert np.ptp(rtt_w) > 0.01  # the queue does move: percentiles are not all one value
        for p in (50, 95, 99):
            _close_pct(f[f"p{p}_rtt_s"], rtt_w, p)
            _close_pct(f[f"p{p}_owd_s"], owd_w, p)
        # Mean, std (population) and jitter (mean |D| of consecutive one-way delays) are exact sums:
        # equal to the trace's up to the send timestamps' nanoseconds.
        assert f["mean_owd_s"] == pytest.approx(owd_w.mean(), abs=1e-8)
        assert f["std_owd_s"] == pytest.approx(owd_w.std(), abs=1e-8)
        assert f["jitter_s"] == pytest.approx(np.abs(np.diff(owd_w)).mean(), abs=2e-8)
        assert f["loss_rate"] == 0 and f["retransmit_rate"] == 0 and f["window_dropped_pkts"] == 0
        for k in (f["cc"], "all"):
            pooled[k][0].append(rtt_w)
            pooled[k][1].append(owd_w)
    # Per algorithm and over all flows: percentiles of all their samples together.
    for k, (rtts, owds) in pooled.items():
        g = s["total"] if k == "all" else s["by_cc"][k]
        r, o = np.concatenate(rtts), np.concatenate(owds)
        assert g["rtt_samples"] == len(r) and g["owd_samples"] == len(o)
        for p in (50, 95, 99):
            _close_pct(g[f"p{p}_rtt_s"], r, p)
            _close_pct(g[f"p{p}_owd_s"], o, p)
    good = {f["id"]: f["goodput_bps"] for f in s["flows"]}
    nr = s["by_cc"]["newreno"]
    assert nr["flows"] == 2 and nr["goodput_bps"] == pytest.approx(good[0] + good[1])
    assert nr["share"] == pytest.approx((good[0] + good[1]) / sum(good.values()))
    assert nr["jain"] == pytest.approx(cclab.metrics.jain([good[0], good[1]])) == s["jain_by_cc"]["newreno"]
    assert s["total"]["jain"] == pytest.approx(s["jain"]) and s["total"]["share"] == 1.0


def test_loss_rate_is_the_configured_bernoulli_loss():
    # 2 % random loss on the bottleneck and no queue drops (a receive window of 20 packets, about the
    # BDP, in a 200-packet buffer): the flow's window loss rate estimates 0.02 from n ≈ 7000 Bernoulli
    # trials, sd = sqrt(p(1-p)/n) ≈ 0.0017; asserted within 4 sd (measured 0.0190). Every drop is one of
    # the link's random losses.
    sc = {"name": "loss", "duration": "20s", "seed": 5, "measure": ["2s", "20s"],
          "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps", "buffer": 200, "loss": 0.02}},
          "transport": {"receive_window": "28960B"}, "flows": [{"cc": "newreno", "rtt": "20ms"}]}
    s = cclab.run(sc, progress=False, plots=False).summary
    f = s["flows"][0]
    n = f["window_sent_pkts"]
    assert n > 5000
    assert abs(f["loss_rate"] - 0.02) < 4 * np.sqrt(0.02 * 0.98 / n), (f["loss_rate"], n)
    assert f["window_dropped_pkts"] == s["links"][0]["random_losses"] and s["links"][0]["drops"] == 0
    assert f["retransmit_rate"] == f["window_retransmits"] / n > 0


def test_summary_has_every_window_field_and_meta(base, tmp_path):
    base["flows"] = [{"cc": "newreno", "rtt": "20ms"}, {"cc": "cubic", "rtt": "40ms"}]
    res = cclab.run(base, tmp_path, progress=False, plots=False)
    s = json.loads((tmp_path / "summary.json").read_text())
    for f in s["flows"]:
        assert set(WINDOW_STATS) <= set(f)
    assert set(s["by_cc"]) == {"newreno", "cubic"}
    for g in [*s["by_cc"].values(), s["total"]]:
        assert {"flows", "goodput_bps", "share", "jain", *WINDOW_STATS} <= set(g)
    m = s["meta"]
    assert m["cclab_version"] == importlib.metadata.version("cclab") == provenance.version()
    assert m["datapath"] == "sim" and m["started_utc"].endswith("Z") and m["host"]["cores"] >= 1
    assert m["call"].startswith("cclab.run(") and m["argv"] == sys.argv
    assert m["python"].count(".") == 2 and m["numpy"] == np.__version__
    # The same block in the Parquet file's metadata.
    assert json.loads(pq.read_schema(tmp_path / "timeseries.parquet").metadata[b"cclab"]) == m
    assert res.summary["meta"] == m


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_meta_names_the_git_commit_of_a_checkout():
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    g = provenance.git()
    assert g is not None and g["commit"] == head and isinstance(g["dirty"], bool)


def test_version_flag_prints_the_version():
    r = subprocess.run([sys.executable, "-m", "cclab.cli", "--version"], capture_output=True, text=True)
    assert r.returncode == 0
    assert r.stdout.startswith(f"cclab {importlib.metadata.version('cclab')}")
    g = provenance.git()
    if g is not None:
        assert g["commit"][:12] in r.stdout


def test_cli_prints_a_row_per_algorithm_and_with_v_per_flow(tmp_path):
    scen = tmp_path / "two.toml"
    scen.write_text('name = "two"\nduration = "3s"\n[topology.bottleneck]\nrate = "10Mbps"\n'
                    '[[flows]]\ncc = "newreno"\nrtt = "20ms"\ncount = 2\n[[flows]]\ncc = "vegas"\nrtt = "60ms"\n')
    r = subprocess.run([sys.executable, "-m", "cclab.cli", "run", str(scen), "-o", str(tmp_path / "o"), "-q",
                        "--no-plots", "-v"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    lines = r.stdout.splitlines()
    header = next(l for l in lines if "goodput Mbit/s" in l and "share" in l)
    assert "p95 RTT ms" in header and "Jain" in header and "loss %" in header
    rows = {c: next(l for l in lines if l.split("│")[1:2] and l.split("│")[1].strip() == c) for c in ("newreno", "vegas", "all")}
    for cc, g in (("newreno", s["by_cc"]["newreno"]), ("vegas", s["by_cc"]["vegas"]), ("all", s["total"])):
        cells = [c.strip() for c in rows[cc].split("│")[1:-1]]
        assert cells[1] == str(g["flows"]) and cells[2] == f"{g['goodput_bps'] / 1e6:.2f}"
        assert cells[5] == f"{g['p95_rtt_s'] * 1e3:.1f}"
    # -v: one row per flow with its RTT group and p50/p95/p99 RTT.
    assert any("p50 RTT ms" in l and "p99 RTT ms" in l and "RTT group" in l for l in lines)
    for f in s["flows"]:
        row = next(l for l in lines if l.split("│")[1:2] and l.split("│")[1].strip() == str(f["id"]))
        cells = [c.strip() for c in row.split("│")[1:-1]]
        assert cells[1] == f["cc"] and cells[2] == f"{f['group']} ({f['rtt'] * 1e3:g} ms)"
        assert cells[4:7] == [f"{f[k] * 1e3:.1f}" for k in ("p50_rtt_s", "p95_rtt_s", "p99_rtt_s")]


def test_cli_splits_forward_and_reverse_flows(tmp_path):
    """With reverse flows the table has a forward and a reverse block, each with its own total, and the
    headline Jain is the forward flows': before, an "all" row added 4 reverse flows' goodput to the forward
    ones (4.99 Mbit/s over a 3 Mbit/s bottleneck in binomial_b1.toml)."""
    scen = tmp_path / "rev.toml"
    scen.write_text('name = "rev"\nduration = "4s"\n[topology.bottleneck]\nrate = "3Mbps"\n'
                    '[[flows]]\ncc = "newreno"\nrtt = "40ms"\n[[flows]]\ncc = "vegas"\nrtt = "40ms"\n'
                    '[[flows]]\ncc = "newreno"\nrtt = "40ms"\ncount = 2\nreverse = true\n')
    r = subprocess.run([sys.executable, "-m", "cclab.cli", "run", str(scen), "-o", str(tmp_path / "o"), "-q",
                        "--no-plots"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    cells = {c[0]: c for c in ([x.strip() for x in l.split("│")[1:-1]] for l in r.stdout.splitlines()
                               if l.count("│") > 3)}
    assert "all" not in cells
    fl = s["flows"]
    fwd = sum(f["goodput_bps"] for f in fl[:2]) / 1e6
    back = sum(f["goodput_bps"] for f in fl[2:]) / 1e6
    assert cells["forward"][1] == "2" and cells["forward"][2] == f"{fwd:.2f}"
    assert cells["reverse"][1] == "2" and cells["reverse"][2] == f"{back:.2f}"
    assert cells["newreno (reverse)"][1] == "2" and cells["newreno"][1] == "1"
    # Each direction crosses its own 3 Mbit/s link.
    assert fwd <= 3.0 and back <= 3.0
    # One forward flow per algorithm: its own p95 RTT; newreno's pooled percentile mixes directions: none.
    assert cells["vegas"][5] == f"{fl[1]['p95_rtt_s'] * 1e3:.1f}"
    assert cells["newreno (reverse)"][5] == "–"
    j = cclab.metrics.jain([f["goodput_bps"] for f in fl[:2]])
    assert f"Jain {j:.3f} (forward flows)" in r.stdout


SWEEP = """seeds = 1
[base]
name = "v"
duration = "1s"
[base.topology.bottleneck]
rate = "10Mbps"
[[base.flows]]
cc = "newreno"
rtt = "40ms"
"""


def test_sweep_run_ids_include_the_version_and_a_new_version_reruns(tmp_path, monkeypatch):
    sc = {"name": "x", "seed": 1}
    assert sw._run_id(sc, 1, "0.1.0") != sw._run_id(sc, 1, "0.2.0")
    assert sw._run_id(sc, 1) == sw._run_id(sc, 1, provenance.version()) != sw._run_id(sc, 1, "")
    p = tmp_path / "s.toml"
    p.write_text(SWEEP)
    out = tmp_path / "out"
    notes: list[str] = []
    t1 = sw.run(p, out, workers=1, on_note=notes.append)
    assert len(t1) == 1 and not notes
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["cclab"] == provenance.version()
    # Resumed by another cclab version: nothing of the old version is reused, and the sweep says so.
    monkeypatch.setattr(provenance, "version", lambda: "99.0")
    t2 = sw.run(p, out, workers=1, on_note=notes.append)
    assert len(notes) == 1 and "every run is redone" in notes[0] and "99.0" in notes[0]
    assert len(t2) == 1 and t2["run"][0] != t1["run"][0] and len(sw.finished(out)) == 2
    assert json.loads((out / "sweep.json").read_text())["cclab"] == "99.0"
    assert json.loads((out / "runs" / t2["run"][0] / "summary.json").read_text())["meta"]["cclab_version"] == "99.0"
    # A folder written before run ids had versions (no "cclab" in sweep.json) still reads as its runs.
    legacy = sw._run_id(sw.expand(*sw.load(p), version="")[0].scenario, 1, "")
    shutil.copytree(out / "runs" / t2["run"][0], out / "runs" / legacy)
    (out / "sweep.json").write_text(json.dumps({k: meta[k] for k in ("base", "seeds", "grid")}))
    assert list(sw.table(out)["run"]) == [legacy]
