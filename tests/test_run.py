import json
import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    s = json.loads(p.read_text())
    s["sim"].pop("wall_s")
    return s


def test_determinism(base, tmp_path):
    base["flows"][0]["start"] = ["0s", "1s"]
    base["topology"]["bottleneck"]["loss"] = 0.001
    cclab.run(base, tmp_path / "a", progress=False, plots=False)
    cclab.run(base, tmp_path / "b", progress=False, plots=False)
    cclab.run(base, tmp_path / "c", progress=False, plots=False, seed=2)
    assert _strip(tmp_path / "a" / "summary.json") == _strip(tmp_path / "b" / "summary.json")
    assert (tmp_path / "a" / "timeseries.parquet").read_bytes() == (tmp_path / "b" / "timeseries.parquet").read_bytes()
    assert _strip(tmp_path / "a" / "summary.json") != _strip(tmp_path / "c" / "summary.json")


def test_cli_end_to_end(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    scen = Path(__file__).resolve().parents[1] / "scenarios" / "default.toml"
    r = subprocess.run([sys.executable, "-m", "cclab.cli", "run", str(scen), "--out", str(tmp_path), "-q"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "default" in r.stdout
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["links"][0]["utilization"] > 0.9


def test_metrics_by_hand():
    assert metrics.jain([1, 1, 1, 1]) == pytest.approx(1.0)
    assert metrics.jain([1, 0, 0, 0]) == pytest.approx(0.25)
    assert metrics.jain([3, 1]) == pytest.approx(16 / 20)
    assert metrics.asymmetry([3, 3], [1, 1]) == pytest.approx(0.5)
    # std/mean of [1, 3] = 1/2; of [2, 2] = 0 → mean 0.25
    assert metrics.stability_index([[1, 3], [2, 2]]) == pytest.approx(0.25)
    # running mean of [0, 2, 1, 1] = 0, 1, 1, 1 → within 10% of 1 from sample 1 (t = 1) on
    assert metrics.responsiveness_index([0, 1, 2, 3], [[0, 2, 1, 1]]) == pytest.approx(1.0)
    assert metrics.p95(list(range(101))) == pytest.approx(95)


rtts = st.sampled_from(["5ms", "20ms", "80ms", "150ms"])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rate=st.sampled_from(["2Mbps", "10Mbps", "30Mbps"]),
    buffer=st.sampled_from(["BDP", 20, "0.5BDP", "64KB"]),
    queue=st.sampled_from(["droptail", "red"]),
    flows=st.lists(st.tuples(rtts, st.sampled_from(["newreno", "reno", "sack"]), st.integers(1, 3)), min_size=1, max_size=3),
    loss=st.sampled_from([0.0, 0.001, 0.02]),
    seed=st.integers(0, 10_000),
)
def test_random_valid_scenarios_run_and_conserve(rate, buffer, queue, flows, loss, seed):
    data = {
        "duration": "2s", "seed": seed,
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": rate, "buffer": buffer, "queue": queue, "loss": loss}},
        "flows": [{"cc": cc, "rtt": rtt, "count": n} for rtt, cc, n in flows],
    }
    r = cclab.run(data, progress=False)
    c = r.summary["conservation"]
    assert c["injected"] == c["delivered"] + c["dropped"] + c["in_network"]
    assert 0.0 <= r.summary["links"][0]["utilization"] <= 1.0 + 1e-9
    assert all(math.isfinite(f["goodput_bps"]) and f["goodput_bps"] >= 0 for f in r.summary["flows"])


def test_no_python_call_per_packet(base):
    """The simulator calls back into Python only for progress, at most every ~0.25 s of wall time."""
    import time

    from cclab import _native

    base["duration"] = "20s"
    base["topology"]["bottleneck"]["rate"] = "100Mbps"
    spec = cclab.Scenario.from_dict(base).to_spec()
    calls = []
    t0 = time.perf_counter()
    raw, _, _ = _native.run(json.dumps(spec), calls.append)
    wall = time.perf_counter() - t0
    packets = json.loads(raw)["packets"]
    assert packets > 100_000
    # a callback per 0.25 s of wall time (+1 for rounding): orders of magnitude below one per packet
    assert len(calls) <= wall / 0.25 + 1, (len(calls), wall)
    assert all(0 <= t <= 20 for t in calls)
