"""Derived metrics of a sweep (`[[metrics]]`, docs/sweep.md "Derived metrics") and the direction of flows:
the headline goodput counts the forward flows only, reverse-direction flows have their own total.

The sweep: 2 grid points (IIAD's k) × 2 seeds of 2 s runs, one NewReno and one IIAD flow forward and two
NewReno flows in the reverse direction. Every derived value is checked against the ratio or total computed
here from the run's summary.json and point.json; they come from the same floats, so the tolerance is float
rounding (rel 1e-9).
"""
import json
import math
import statistics
import subprocess
import sys

import pandas as pd
import pytest

from cclab import derived, sweep as sw

SWEEP = """
seeds = 2
[base]
name = "metrics"
duration = "2s"
sample_interval = "100ms"
measure = ["0.5s", "2s"]
[base.topology]
kind = "dumbbell"
[base.topology.bottleneck]
rate = "10Mbps"
buffer = "BDP"
[[base.flows]]
cc = "newreno"
rtt = "40ms"
start = ["0s", "0.3s"]
[[base.flows]]
cc = "iiad"
rtt = "40ms"
start = ["0s", "0.3s"]
[[base.flows]]
cc = "newreno"
rtt = "40ms"
count = 2
start = ["0s", "0.3s"]
reverse = true
[grid]
"flows[1].params.k" = [1, 2]
"""
METRICS = """
[[metrics]]
name = "share"
expr = "ratio"
of = "group:iiad.goodput"
to = "group:newreno.goodput"

[[metrics]]
name = "back"
expr = "total"
of = "reverse.goodput"
"""


def cli(*args):
    return subprocess.run([sys.executable, "-m", "cclab.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    d = tmp_path_factory.mktemp("metrics")
    (d / "s.toml").write_text(SWEEP + METRICS)
    r = cli("sweep", d / "s.toml", "--out", d / "out", "-j", "2")
    assert r.returncode == 0, r.stderr
    return d / "out", r.stdout


def test_derived_metrics_equal_the_ratio_by_hand(swept):
    out, stdout = swept
    t = pd.read_csv(out / "results.csv")
    assert len(t) == 4
    for _, row in t.iterrows():
        s = json.loads((out / "runs" / row["run"] / "summary.json").read_text())
        good = {f["id"]: f["goodput_bps"] / 1e6 for f in s["flows"]}   # flow 0 NewReno, 1 IIAD, 2-3 reverse
        assert row["share"] == pytest.approx(good[1] / good[0], rel=1e-9)
        assert row["back"] == pytest.approx(good[2] + good[3], rel=1e-9)
        # the headline goodput is the forward direction's; the reverse flows are listed separately
        assert row["goodput_mbps"] == pytest.approx(good[0] + good[1], rel=1e-9)
        assert row["goodput_mbps_reverse"] == pytest.approx(good[2] + good[3], rel=1e-9)
        j = (good[0] + good[1]) ** 2 / (2 * (good[0] ** 2 + good[1] ** 2))
        assert row["jain"] == pytest.approx(j, rel=1e-9)
    # spread over seeds in summary.csv: mean and t(0.975, 1) · sd / √2 (12.706 from a printed t table)
    s = pd.read_csv(out / "summary.csv")
    for _, p in s.iterrows():
        x = list(t[t["flows[1].params.k"] == p["flows[1].params.k"]]["share"])
        assert p["share_mean"] == pytest.approx(statistics.mean(x), rel=1e-9)
        assert p["share_ci95"] == pytest.approx(12.706 * statistics.stdev(x) / math.sqrt(2), rel=2e-4)
    assert "share" in stdout and "reverse goodput" in stdout
    # recorded in sweep.json, so the table read back (cclab plot, cclab.sweep.table) has them too
    assert [m["name"] for m in json.loads((out / "sweep.json").read_text())["metrics"]] == ["share", "back"]
    assert sw.table(out)["share"].tolist() == pytest.approx(t["share"].tolist(), rel=1e-12)


def test_derived_metrics_plot_with_readable_names(swept, tmp_path):
    out, _ = swept
    f = tmp_path / "share.png"
    r = cli("plot", out, "y=share", "--out", f)
    assert r.returncode == 0, r.stderr
    assert f.stat().st_size > 10_000
    from cclab.plots.sweep import metric_figure

    ax = metric_figure(sw.table(out), "flows[1].params.k", "share").axes[0]
    assert ax.get_xlabel() == "k of flow 1"
    assert ax.get_ylabel() == "share: goodput of iiad flows / goodput of newreno flows"


def test_changing_the_metrics_reruns_nothing(swept, tmp_path):
    out, _ = swept
    before = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    (tmp_path / "s.toml").write_text(SWEEP + '[[metrics]]\nname = "fwd"\nexpr = "total"\nof = "forward.goodput_per_flow"\n')
    r = cli("sweep", tmp_path / "s.toml", "--out", out)
    assert r.returncode == 0, r.stderr
    assert {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()} == before
    t = pd.read_csv(out / "results.csv")
    assert "share" not in t and t["fwd"].tolist() == pytest.approx((t["goodput_mbps"] / 2).tolist(), rel=1e-9)


@pytest.mark.parametrize("metric, field, words", [
    ('name = "x"\nexpr = "ratoi"\nof = "forward.goodput"', "metrics[0].expr", "must be one of ratio, total"),
    ('name = "x"\nexpr = "ratio"\nof = "group:iiad.goodputt"\nto = "forward.goodput"', "metrics[0].of",
     "unknown quantity 'goodputt'"),
    ('name = "x"\nexpr = "ratio"\nof = "group:iiad.goodput"', "metrics[0].to", "is missing"),
    ('name = "x"\nexpr = "ratio"\nof = "group:iiad.goodput"\nto = "group:tcp.goodput"', "metrics[0].to",
     "no forward flow of algorithm 'tcp'"),
    ('name = "x"\nexpr = "total"\nof = "flows.goodput"', "metrics[0].of", "unknown flows 'flows'"),
    ('name = "jain"\nexpr = "total"\nof = "forward.goodput"', "metrics[0].name", "is taken"),
    ('name = "x"\nexpr = "total"\nof = "forward.goodput"\nsize = 3', "metrics[0].size", "unknown key"),
])
def test_bad_metric_definitions_exit_2_naming_the_field(tmp_path, metric, field, words):
    (tmp_path / "s.toml").write_text(SWEEP + "[[metrics]]\n" + metric + "\n")
    r = cli("sweep", tmp_path / "s.toml", "--out", tmp_path / "out")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: ") and words in lines[0], r.stderr
    assert not (tmp_path / "out" / "runs").exists()   # refused before anything ran


def test_reverse_flows_from_the_spec_agree_with_the_scenario(swept):
    # Run folders outside a sweep have no scenario: the direction is read from the spec's paths.
    out, _ = swept
    for d in (out / "runs").iterdir():
        s = json.loads((d / "summary.json").read_text())
        spec = json.loads((d / "spec.json").read_text())
        scenario = json.loads((d / "point.json").read_text())["scenario"]
        assert derived.reverse_flows(s, spec) == derived.reverse_flows(s, scenario=scenario) == {2, 3}
    # a parking lot of 2 links: a flow over links [1] sent in reverse takes link 2 + 1
    spec = {"links": [{}] * 4, "flows": [{"path": [0, 1], "ack_path": [3, 2]}, {"path": [3], "ack_path": [1]}]}
    assert derived.reverse_flows({"flows": [{"id": 0}, {"id": 1}]}, spec) == {1}
    # a graph (link 2k + 1 the other direction of cable k): no flow is a reverse one
    spec = {"links": [{}] * 4, "flows": [{"path": [0, 2], "ack_path": [3, 1]}, {"path": [1], "ack_path": [0]}]}
    assert derived.reverse_flows({"flows": [{"id": 0}, {"id": 1}]}, spec) == set()
