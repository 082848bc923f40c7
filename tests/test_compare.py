"""`cclab compare` (docs/plots.md "Comparing runs") and `cclab net run --repeat` (docs/real-datapath.md).

The simulated runs are 3 s on a 10 Mbit/s dumbbell: one NewReno and two flows of the algorithm under test
forward, one NewReno flow in the reverse direction; random starts make the seeds differ. The table's numbers
are checked against each run's summary.json: they are computed from the same floats, so the tolerance is
float summation order only (rel 1e-9).
"""
import json
import math
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cclab import compare as cmp, net

AVAILABLE, REASON = net.check()

# Student t 0.975 quantiles from a printed table (NIST/SEMATECH e-Handbook 1.3.6.7.2), 4 digits: rel 2e-4.
T975 = {1: 12.706, 2: 4.303}

SCENARIO = """
name = "{name}"
duration = "{duration}"
sample_interval = "100ms"
measure = ["1s", "{duration}"]
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
buffer = "BDP"
[[flows]]
cc = "newreno"
rtt = "40ms"
start = ["0s", "0.5s"]
[[flows]]
cc = "{cc}"
rtt = "40ms"
count = 2
start = ["0s", "0.5s"]
[[flows]]
cc = "newreno"
rtt = "40ms"
start = ["0s", "0.5s"]
reverse = true
"""


def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "cclab.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def sim(d: Path, name: str, cc: str, seed: int, duration: str = "3s") -> Path:
    toml = d / f"{name}.toml"
    toml.write_text(SCENARIO.format(name=name, cc=cc, duration=duration))
    out = d / f"{name}-{seed}"
    r = cli("run", toml, "--out", out, "--seed", seed, "--no-plots", "-q")
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    return d, {(cc, s): sim(d, cc, cc, s) for cc in ("cubic", "bbr") for s in (1, 2, 3)}


def forward(s):
    # flows 0-2 are forward, flow 3 (the last [[flows]] entry) sends in the reverse direction
    return [f for f in s["flows"] if f["group"] != 2]


def test_compare_two_runs_writes_figures_and_a_table_of_their_summaries(runs):
    d, r = runs
    out = d / "two"
    res = cli("compare", r["cubic", 1], r["bbr", 1], "--out", out)
    assert res.returncode == 0, res.stderr
    for name in ("rate", "cwnd", "queue", "cdf", "throughput_delay"):
        assert (out / f"{name}.png").stat().st_size > 10_000, name
    t = pd.read_csv(out / "table.csv")
    assert t.equals(pd.DataFrame(json.loads((out / "table.json").read_text())).astype(t.dtypes.to_dict()))
    assert set(t["label"]) == {"cubic-1", "bbr-1"}    # labels: the folders' names
    for cc in ("cubic", "bbr"):
        s = json.loads((r[cc, 1] / "summary.json").read_text())
        rows = t[t["label"] == f"{cc}-1"].set_index("group")
        assert list(rows.index) == ["forward", "newreno", cc, "reverse"]
        fw = rows.loc["forward"]
        good = [f["goodput_bps"] / 1e6 for f in forward(s)]
        assert fw["flows"] == 3
        assert fw["total_goodput_mbps"] == pytest.approx(sum(good), rel=1e-9)
        assert fw["goodput_mbps"] == pytest.approx(statistics.mean(good), rel=1e-9)
        # 95 % CI over the 3 forward flows: t(0.975, 2) · sd / √3
        assert fw["goodput_mbps_ci95"] == pytest.approx(T975[2] * statistics.stdev(good) / math.sqrt(3), rel=2e-4)
        assert fw["utilization"] == pytest.approx(s["links"][0]["utilization"], rel=1e-9)
        assert fw["p95_queue_delay_ms"] == pytest.approx(s["links"][0]["p95_queue_delay_s"] * 1e3, rel=1e-9)
        assert rows.loc[cc, "total_goodput_mbps"] == pytest.approx(
            sum(f["goodput_bps"] for f in forward(s) if f["cc"] == cc) / 1e6, rel=1e-9)
        # the reverse flow is its own group, outside the forward total
        assert rows.loc["reverse", "total_goodput_mbps"] == pytest.approx(s["flows"][3]["goodput_bps"] / 1e6, rel=1e-9)
    assert "mean of" not in "".join(t["run"])    # one run per label: nothing to spread over runs
    assert "cubic-1" in res.stdout and "bbr-1" in res.stdout


def test_runs_sharing_a_label_are_spread_over_runs(runs):
    d, r = runs
    out = d / "seeds"
    args = [r[cc, s] for cc in ("cubic", "bbr") for s in (1, 2, 3)]
    labels = [x for cc in ("cubic", "bbr") for _ in range(3) for x in ("--label", cc)]
    res = cli("compare", *args, *labels,
              "--out", out, "--format", "svg", "--style", "paper")
    assert res.returncode == 0, res.stderr
    assert (out / "throughput_delay.svg").exists() and not (out / "throughput_delay.png").exists()
    t = pd.read_csv(out / "table.csv")
    for cc in ("cubic", "bbr"):
        per_run = [sum(f["goodput_bps"] for f in forward(json.loads((r[cc, s] / "summary.json").read_text()))) / 1e6
                   for s in (1, 2, 3)]
        agg = t[(t["label"] == cc) & (t["group"] == "forward") & (t["run"] == "mean of 3 runs")].iloc[0]
        assert agg["runs"] == 3 and agg["ci_over"] == "runs"
        assert agg["total_goodput_mbps"] == pytest.approx(statistics.mean(per_run), rel=1e-9)
        assert agg["total_goodput_mbps_ci95"] == pytest.approx(
            T975[2] * statistics.stdev(per_run) / math.sqrt(3), rel=2e-4)
    # the throughput-delay view: a mean and a 1-sigma ellipse per label of several runs
    from cclab.plots.compare import throughput_delay_figure

    fig = throughput_delay_figure(cmp.collect(args, ["cubic"] * 3 + ["bbr"] * 3), None)
    gids = {a.get_gid() for a in fig.axes[0].get_children()}
    assert {"mean:cubic", "mean:bbr", "ellipse:cubic", "ellipse:bbr"} <= gids
    assert fig.axes[0].xaxis_inverted()


def test_sim_against_a_real_run_folder(runs, tmp_path):
    # A real run's folder has the same files; its summary says datapath "net" (here a simulated run's folder
    # relabelled, as a real run takes root and wall time: test_repeat_real_runs makes real ones).
    _, r = runs
    real = tmp_path / "real"
    shutil.copytree(r["cubic", 2], real)
    s = json.loads((real / "summary.json").read_text())
    s["meta"]["datapath"] = "net"
    (real / "summary.json").write_text(json.dumps(s))
    res = cli("compare", r["cubic", 1], real, "-l", "sim", "-l", "real", "--out", tmp_path / "c")
    assert res.returncode == 0, res.stderr
    t = pd.read_csv(tmp_path / "c" / "table.csv")
    assert dict(zip(t["label"], t["datapath"])) == {"sim": "sim", "real": "net"}


def test_a_sweep_folder_is_its_runs_labelled_by_grid_point(tmp_path):
    (tmp_path / "s.toml").write_text(
        'seeds = 2\n[base]\n' + SCENARIO.format(name="sw", cc="cubic", duration="2s").replace("[topology", "[base.topology")
        .replace("[[flows]]", "[[base.flows]]") + '[grid]\n"flows[1].cc" = ["cubic", "bbr"]\n')
    assert cli("sweep", tmp_path / "s.toml", "--out", tmp_path / "sw", "-j", "2").returncode == 0
    res = cli("compare", tmp_path / "sw", "--out", tmp_path / "c")
    assert res.returncode == 0, res.stderr
    t = pd.read_csv(tmp_path / "c" / "table.csv")
    assert set(t["label"]) == {"sw: algorithm of flow 1 = cubic", "sw: algorithm of flow 1 = bbr"}
    assert (t["run"] == "mean of 2 runs").sum() == 2 * 4    # per label: forward, 2 algorithms, reverse


def test_bad_input_exits_2_naming_what_is_wrong(runs, tmp_path):
    _, r = runs
    empty = tmp_path / "empty"
    empty.mkdir()
    longer = sim(tmp_path, "long", "cubic", 1, duration="4s")
    o = ["--out", tmp_path / "o"]
    cases = [
        ([tmp_path / "nosuch", *o], "no such folder"),
        ([empty, *o], "is not a run's folder"),
        ([r["cubic", 1], longer, *o], "differ in duration"),
        ([r["cubic", 1], r["bbr", 1], "--label", "x", *o], "--label: 1 labels for 2 RUN folders"),
        ([r["cubic", 1], "--out", r["bbr", 1]], "is a run's folder"),
    ]
    for args, want in cases:
        res = cli("compare", *args)
        assert res.returncode == 2, (args, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and want in lines[0], (args, res.stderr)
    # the run folder given as --out keeps its own figures
    assert not (r["bbr", 1] / "table.csv").exists()


@pytest.mark.skipif(not AVAILABLE, reason=f"real datapath unavailable: {REASON}")
def test_repeat_real_runs(tmp_path):
    # 2 real runs of 3 s (wall time; about 10 s each with the namespaces' set-up and the figures) of 2 flows
    # on 20 Mbit/s: OUT/rep-1, rep-2 and their aggregate in OUT.
    toml = tmp_path / "r.toml"
    toml.write_text('name = "rep"\nduration = "3s"\nmeasure = ["1s", "3s"]\n[topology]\nkind = "dumbbell"\n'
                    '[topology.bottleneck]\nrate = "20Mbps"\nbuffer = "BDP"\n'
                    '[[flows]]\ncc = "newreno"\nrtt = "20ms"\ncount = 2\n')
    out = tmp_path / "out"
    # left by an earlier single run and an earlier --repeat 3: not part of this repetition
    (out / "rep-3").mkdir(parents=True)
    (out / "rep-3" / "summary.json").write_text("{}")
    (out / "summary.json").write_text("{}")
    res = cli("net", "run", toml, "--out", out, "--repeat", 2, "-q", timeout=180)
    if res.returncode == 2 and "real datapath unavailable" in res.stderr:
        pytest.skip(res.stderr.strip())
    assert res.returncode == 0, res.stderr
    assert not (out / "rep-3").exists() and not (out / "summary.json").exists()
    assert "removed from" in res.stderr and "rep-3" in res.stderr
    totals = []
    for i in (1, 2):
        s = json.loads((out / f"rep-{i}" / "summary.json").read_text())
        assert s["meta"]["datapath"] == "net"
        totals.append(sum(f["goodput_bps"] for f in s["flows"]) / 1e6)
    # both runs carried data: at least a third of the link (a busy machine slows a real run, never stops it)
    assert min(totals) > 20 / 3, totals
    t = pd.read_csv(out / "table.csv")
    agg = t[(t["run"] == "mean of 2 runs") & (t["group"] == "forward")].iloc[0]
    assert agg["label"] == "rep" and agg["runs"] == 2
    assert agg["total_goodput_mbps"] == pytest.approx(statistics.mean(totals), rel=1e-9)
    assert agg["total_goodput_mbps_ci95"] == pytest.approx(T975[1] * statistics.stdev(totals) / math.sqrt(2), rel=2e-4)
    assert (out / "throughput_delay.png").exists() and (out / "rate.png").exists()
    # and `cclab compare OUT` reads the repeated runs back as one label (the same code, in this process)
    t2 = cmp.table(cmp.collect([out]))
    assert t2["total_goodput_mbps"].tolist() == pytest.approx(t["total_goodput_mbps"].tolist(), rel=1e-12, nan_ok=True)
