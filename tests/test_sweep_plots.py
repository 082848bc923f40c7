"""What a researcher works with after a sweep: grid values as numbers (units parsed), the spread over seeds
(summary.csv: mean, std, n, 95 % CI half-width, Student t), and the figures (`cclab plot`, `cclab sweep
--plot`): mean ± CI against a grid key, one line per hue value, and throughput vs delay with one 1-σ
ellipse per grid point on a reversed delay axis."""
import math
import statistics
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.patches import Ellipse

from cclab import sweep as sw
from cclab.plots import sweep as sp
from cclab.scenario import ScenarioError
from cclab.stats import ci_halfwidth, spread, t_quantile

# Student t 0.975 quantiles, from a printed table (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 20: 2.086, 30: 2.042, 100: 1.984}

# 2 grid points (written 10 before 3 Mbit/s) × 3 seeds, 2 s runs; random starts and 0.5 % random loss make
# the seeds differ in goodput and in queueing delay.
SWEEP = """
seeds = 3
[base]
name = "tiny"
duration = "2s"
seed = 1
measure = ["0.5s", "2s"]
[base.topology]
kind = "dumbbell"
[base.topology.bottleneck]
rate = "10Mbps"
buffer = "BDP"
queue = "red"
loss = 0.005
[[base.flows]]
cc = "newreno"
rtt = "40ms"
start = ["0s", "0.3s"]
[[base.flows]]
cc = "newreno"
rtt = "80ms"
start = ["0s", "0.3s"]
[grid]
"topology.bottleneck.rate" = ["10Mbps", "3Mbps"]
"""
KEY = "topology.bottleneck.rate"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    (d / "s.toml").write_text(SWEEP)
    out = d / "out"
    r = subprocess.run([sys.executable, "-m", "cclab.cli", "sweep", str(d / "s.toml"), "--out", str(out), "-j", "2",
                        "--plot"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out, r.stdout


def test_t_quantiles_match_the_printed_table():
    for df, want in T975.items():
        assert t_quantile(0.975, df) == pytest.approx(want, abs=6e-4), df
    assert t_quantile(0.95, 1) == pytest.approx(6.314, abs=6e-4)
    assert t_quantile(0.995, 4) == pytest.approx(4.604, abs=6e-4)
    assert t_quantile(0.975, 10_000) == pytest.approx(1.960, abs=1e-3)   # → the normal quantile
    assert math.isnan(ci_halfwidth(1.0, 1))
    m, s, n, ci = spread([1.0, 2.0, 3.0, float("nan")])
    assert (m, s, n) == (2.0, 1.0, 3) and ci == pytest.approx(4.303 / math.sqrt(3), rel=2e-4)


def test_grid_values_parse_with_their_units():
    assert sw.quantity("40ms") == ("s", pytest.approx(0.04))
    assert sw.quantity("10Mbps") == ("bit/s", 1e7)
    assert sw.quantity("375KB") == ("B", 375_000)
    assert sw.quantity("2BDP") == ("BDP", 2.0) and sw.quantity("BDP") == ("BDP", 1.0)
    assert sw.quantity("500p") == ("pkts", 500.0)
    assert [sw.quantity(v) for v in ("cubic", 5, 0.5, ["0s", "1s"], "100")] == [None] * 5
    t = pd.DataFrame({"run": ["a", "b", "c"], "buf": ["BDP", "100p", "BDP"], "rtt": ["100ms", "20ms", "3s"],
                      "cc": ["x", "y", "z"], "seed": [1, 1, 1], "jain": [1.0, 0.5, 0.7]})
    t = sw._numeric_grid(t)
    # mixed kinds (BDP multiples and packets) stay as written; one kind becomes numbers + a label column
    assert list(t.columns) == ["run", "buf", "rtt", "rtt_label", "cc", "seed", "jain"]
    assert list(t["rtt"]) == pytest.approx([0.1, 0.02, 3.0]) and list(t["rtt_label"]) == ["100ms", "20ms", "3s"]
    assert sw.grid_keys(t) == ["buf", "rtt", "cc"] and sw.grid_unit(t, "rtt") == "s" and sw.grid_unit(t, "cc") is None


def test_tables_have_numbers_and_the_spread_over_seeds(tiny):
    out, stdout = tiny
    for t in (sw.table(out), pd.read_csv(out / "results.csv"), pd.read_parquet(out / "results.parquet")):
        assert list(t.columns[:4]) == ["run", KEY, KEY + "_label", "seed"]
        assert t[KEY].dtype == np.float64 and set(t[KEY]) == {3e6, 1e7}
        assert (t[KEY] == t[KEY + "_label"].map({"3Mbps": 3e6, "10Mbps": 1e7})).all()
        assert len(t) == 6 and t.sort_values(KEY)[KEY + "_label"].iloc[0] == "3Mbps"   # 3 < 10, as numbers
    t = sw.table(out)
    s = pd.read_csv(out / "summary.csv")
    assert list(s[KEY]) == [3e6, 1e7] and list(s[KEY + "_label"]) == ["3Mbps", "10Mbps"] and list(s["n"]) == [3, 3]
    for m in sw.HEADLINE:
        assert {f"{m}_mean", f"{m}_std", f"{m}_ci95"} <= set(s.columns)
    # Independently: statistics.stdev and the printed t table.
    for _, row in s.iterrows():
        runs = t[t[KEY] == row[KEY]]
        for m in ("goodput_mbps", "jain", "p95_queue_delay_s", "drops"):
            x = [float(v) for v in runs[m]]
            sd = statistics.stdev(x)
            assert row[f"{m}_mean"] == pytest.approx(statistics.fmean(x), rel=1e-12)
            assert row[f"{m}_std"] == pytest.approx(sd, rel=1e-9)
            assert row[f"{m}_ci95"] == pytest.approx(T975[2] * sd / math.sqrt(3), rel=2e-4, abs=1e-15)
    # the seeds differ (otherwise the spread would say nothing)
    assert (s["goodput_mbps_std"] > 0).all() and (s["p95_queue_delay_s_std"] > 0).all()
    # the printed table: grid values as written, mean ± CI half-width
    g = s.iloc[0]
    assert "3Mbps" in stdout and f"{g['goodput_mbps_mean']:.4g} ± {g['goodput_mbps_ci95']:.2g}" in stdout
    assert (out / "goodput_mbps_vs_topology.bottleneck.rate.png").stat().st_size > 10_000
    assert (out / "throughput_delay.png").stat().st_size > 10_000


def test_metric_figure_has_mean_and_ci_error_bars(tiny):
    out, _ = tiny
    t = sw.table(out)
    s = sw.summarize(t)
    fig = sp.metric_figure(t, KEY, "goodput_mbps")
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 1 and bars[0].has_yerr
    line, _, (segs,) = bars[0].lines
    # x in Mbit/s, numeric and in order; y the means; each bar spans mean ± ci95
    assert list(line.get_xdata()) == [3.0, 10.0]
    assert list(line.get_ydata()) == pytest.approx(list(s["goodput_mbps_mean"]))
    for seg, (_, r) in zip(segs.get_segments(), s.iterrows()):
        (x0, y0), (x1, y1) = seg
        assert x0 == x1 and (y1 - y0) / 2 == pytest.approx(r["goodput_mbps_ci95"])
        assert (y0 + y1) / 2 == pytest.approx(r["goodput_mbps_mean"])
    # the key in words (bottleneck rate), not its path in the scenario
    assert ax.get_xlabel() == "bottleneck rate (Mbit/s)" and "goodput" in ax.get_ylabel()
    # queueing delay is drawn in ms
    fig = sp.metric_figure(t, KEY, "p95_queue_delay_s")
    line = fig.axes[0].containers[0].lines[0]
    assert list(line.get_ydata()) == pytest.approx(list(s["p95_queue_delay_s_mean"] * 1e3))


def test_throughput_delay_figure_has_one_sigma_ellipses_on_a_reversed_axis(tiny):
    out, _ = tiny
    t = sw.table(out)
    fig = sp.throughput_delay_figure(t)
    ax = fig.axes[0]
    assert ax.xaxis_inverted()
    lo, hi = ax.get_xlim()
    assert lo > hi
    ells = [p for p in ax.patches if isinstance(p, Ellipse) and str(p.get_gid()).startswith("ellipse:")]
    assert len(ells) == 2
    for e in ells:
        label = e.get_gid().split(":", 1)[1].split("|")[0]
        runs = t[t[KEY + "_label"] == label]
        x, y = runs["p95_queue_delay_s"].to_numpy() * 1e3, runs["goodput_mbps"].to_numpy()
        assert e.center == pytest.approx((x.mean(), y.mean()))
        # one standard deviation: the ellipse's extent along each axis is the runs' std (ddof 1)
        a, b, th = e.width / 2, e.height / 2, math.radians(e.angle)
        assert math.hypot(a * math.cos(th), b * math.sin(th)) == pytest.approx(statistics.stdev(x), rel=1e-9)
        assert math.hypot(a * math.sin(th), b * math.cos(th)) == pytest.approx(statistics.stdev(y), rel=1e-9)
        assert lo >= x.mean() + statistics.stdev(x) and hi <= x.mean() - statistics.stdev(x)  # inside the axes
    runs = [c for c in ax.collections if str(c.get_gid()).startswith("runs:")]
    assert sum(len(c.get_offsets()) for c in runs) == 6


def _fake(rows):
    """A sweep table as cclab.sweep.table builds it, from (cc, rate label, seed, goodput, delay)."""
    t = pd.DataFrame([{"run": f"r{i}", "flows[*].cc": cc, KEY: rate, "seed": seed, "goodput_mbps": g,
                       "p95_queue_delay_s": d, "jain": 1.0} for i, (cc, rate, seed, g, d) in enumerate(rows)])
    return sw._numeric_grid(t)


def test_hue_gives_one_line_per_value_and_pools_nothing():
    rows = [(cc, rate, seed, base * (1 + 0.1 * seed), 0.01 * seed)
            for cc, k in (("cubic", 1.0), ("vegas", 0.5)) for rate, base in (("20Mbps", 18 * k), ("5Mbps", 4.5 * k))
            for seed in (1, 2)]
    t = _fake(rows)
    fig = sp.metric_figure(t, KEY, "goodput_mbps", hue="flows[*].cc")
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [c.get_label() for c in bars] == ["cubic", "vegas"]
    for c, k in zip(bars, (1.0, 0.5)):
        assert list(c.lines[0].get_xdata()) == [5.0, 20.0]
        assert list(c.lines[0].get_ydata()) == pytest.approx([4.5 * k * 1.15, 18 * k * 1.15])
        (_, y0), (_, y1) = c.lines[2][0].get_segments()[0]
        sd = statistics.stdev([4.5 * k * 1.1, 4.5 * k * 1.2])
        assert (y1 - y0) / 2 == pytest.approx(T975[1] * sd / math.sqrt(2), rel=2e-4)
    # the default hue of the throughput-delay view is the algorithm key; every grid point its own ellipse
    fig = sp.throughput_delay_figure(t)
    ells = sorted(p.get_gid() for p in fig.axes[0].patches if str(p.get_gid()).startswith("ellipse:"))
    assert ells == ["ellipse:cubic|20Mbps", "ellipse:cubic|5Mbps", "ellipse:vegas|20Mbps", "ellipse:vegas|5Mbps"]
    # x = the algorithm (names): categorical positions in grid order; the rate, still varying, splits lines
    fig = sp.metric_figure(t, "flows[*].cc", "jain")
    ax = fig.axes[0]
    assert [x.get_text() for x in ax.get_xticklabels()] == ["cubic", "vegas"]
    assert [c.get_label() for c in ax.containers] == ["5Mbps", "20Mbps"]
    with pytest.raises(ScenarioError, match="grid keys: flows"):
        sp.metric_figure(t, "nosuch", "jain")
    with pytest.raises(ScenarioError, match="metrics: goodput_mbps"):
        sp.metric_figure(t, KEY, "nosuch")


def test_linked_keys_add_no_lines_and_equal_runs_have_no_spread():
    # "k, l" set together in the grid (binomial_kl.toml): l adds no line, marker or legend entry of its own
    rows = [{"run": f"r{i}", "k": k, "l": k, KEY: rate, "seed": seed, "goodput_mbps": 1.0 + k,
             "p95_queue_delay_s": 0.01, "jain": 1.0}
            for i, (k, rate, seed) in enumerate((k, r, s) for k in (0.25, 0.5) for r in ("3Mbps", "10Mbps")
                                                 for s in (1, 2))]
    t = sw._numeric_grid(pd.DataFrame(rows))
    ax = sp.metric_figure(t, "k", "goodput_mbps").axes[0]
    assert [c.get_label() for c in ax.containers] == ["3Mbps", "10Mbps"]
    assert ax.get_legend().get_title().get_text() == "bottleneck rate"
    ax = sp.metric_figure(t, KEY, "goodput_mbps", hue="k").axes[0]
    assert [c.get_label() for c in ax.containers] == ["0.25", "0.5"]
    ax = sp.throughput_delay_figure(t, hue="k").axes[0]
    assert sorted(p.get_gid() for p in ax.patches if p.get_gid().startswith("ellipse:")) == [
        "ellipse:0.25|10Mbps", "ellipse:0.25|3Mbps", "ellipse:0.5|10Mbps", "ellipse:0.5|3Mbps"]
    s = sw.summarize(t)
    assert list(s.columns[:5]) == ["k", "l", KEY, KEY + "_label", "n"] and len(s) == 4
    assert (s["goodput_mbps_std"] == 0).all() and (s["goodput_mbps_ci95"] == 0).all()   # exactly, not 1e-16
    assert spread([0.1] * 10)[1] == 0.0


def test_cclab_plot_writes_the_files_and_rejects_unknown_keys(tiny, tmp_path):
    out, _ = tiny
    f = tmp_path / "fig" / "jain.png"
    cmd = [sys.executable, "-m", "cclab.cli", "plot", str(out)]
    r = subprocess.run([*cmd, f"x={KEY}", "y=jain", "--out", str(f)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f.stat().st_size > 10_000 and (tmp_path / "fig" / "jain_throughput_delay.png").stat().st_size > 10_000
    for bad, what in (("x=flows[0].cc", "x: 'flows[0].cc' is not a grid key"), ("y=goodput", "y: 'goodput' is not"),
                      ("colour=red", "give x=KEY")):
        r = subprocess.run([*cmd, bad], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and what in r.stderr and "Traceback" not in r.stderr, r.stderr
