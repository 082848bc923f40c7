"""`cclab sweep`: grids expand and validate naming the grid key, runs are deterministic wherever they
run (local processes or a Dask cluster), and an interrupted sweep resumes without losing or repeating a
finished run."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cclab
from cclab import sweep as sw
from cclab.scenario import ScenarioError

BASE = """
[base]
name = "sw"
duration = "{dur}"
seed = 1
measure = ["0.5s", "{dur}"]
[base.topology]
kind = "dumbbell"
[base.topology.bottleneck]
rate = "10Mbps"
buffer = "BDP"
[[base.flows]]
cc = "newreno"
rtt = "40ms"
[[base.flows]]
cc = "newreno"
rtt = "80ms"
"""


def write(tmp_path, grid, seeds="2", dur="3s", name="s.toml"):
    p = tmp_path / name
    p.write_text(f"seeds = {seeds}\n" + BASE.format(dur=dur) + "[grid]\n" + grid)
    return p


def test_grid_expands_to_every_combination_and_seed(tmp_path):
    base, seeds, grid = sw.load(write(tmp_path, '"flows[*].cc" = ["newreno", "cubic"]\n'
                                                '"topology.bottleneck.rate" = ["10Mbps", "20Mbps", "5Mbps"]\n'))
    pts = sw.expand(base, seeds, grid)
    assert len(pts) == 2 * 3 * 2 and len({p.id for p in pts}) == 12
    p = next(p for p in pts if p.values["flows[*].cc"] == "cubic" and p.seed == 2)
    assert [f["cc"] for f in p.scenario["flows"]] == ["cubic", "cubic"] and p.scenario["seed"] == 2
    # Ids are a function of the run alone: the same sweep expands to the same ids.
    assert [q.id for q in sw.expand(base, seeds, grid)] == [q.id for q in pts]


@pytest.mark.parametrize("grid, seeds, field", [
    ('"flows[5].cc" = ["cubic"]\n', "1", "grid.flows[5].cc"),            # no such flow
    ('"flows[0].cc" = ["nosuch"]\n', "1", "flows[0].cc"),                # names the value's field too
    ('"topology.bottleneck.rate" = []\n', "1", "grid.topology.bottleneck.rate"),
    ('"topology.bottleneck.rate" = "10Mbps"\n', "1", "grid.topology.bottleneck.rate"),
    ('"flows[0].cc" = ["cubic"]\n', "0", "seeds"),
    ('"flows[0].cc" = ["cubic"]\n', "[1, 1]", "seeds"),
    ('"flows[0]..cc" = ["cubic"]\n', "1", "grid.flows[0]..cc"),
])
def test_bad_sweeps_name_the_field(tmp_path, grid, seeds, field):
    with pytest.raises(ScenarioError) as e:
        sw.expand(*sw.load(write(tmp_path, grid, seeds)))
    assert field in str(e.value), str(e.value)


def test_cli_bad_sweep_exits_2_naming_the_field(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('scenario = "nope.toml"\nworkers = 3\n')
    r = subprocess.run([sys.executable, "-m", "cclab.cli", "sweep", str(p)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: workers: unknown sweep key"), r.stderr
    assert "Traceback" not in r.stderr


def test_runs_are_the_same_as_cclab_run_and_the_table_has_every_run(tmp_path):
    p = write(tmp_path, '"flows[1].rtt" = ["80ms", "160ms"]\n')
    t = sw.run(p, tmp_path / "out", workers=2)
    assert len(t) == 4 and set(t["seed"]) == {1, 2} and set(t["flows[1].rtt"]) == {"80ms", "160ms"}
    # A sweep run gives what cclab.run gives on the same scenario and seed (wall time aside).
    row = t[(t["flows[1].rtt"] == "160ms") & (t["seed"] == 2)].iloc[0]
    d = sw.load(p)[0]
    d["flows"][1]["rtt"] = "160ms"
    direct = cclab.run(dict(d, seed=2), progress=False).summary
    got = json.loads((tmp_path / "out" / "runs" / row["run"] / "summary.json").read_text())
    for k in ("flows", "links", "jain", "conservation"):
        assert got[k] == json.loads(json.dumps(direct[k])), k
    assert row["goodput_mbps"] == pytest.approx(sum(f["goodput_bps"] for f in direct["flows"]) / 1e6)
    assert (tmp_path / "out" / "results.csv").exists() and (tmp_path / "out" / "results.parquet").exists()


def test_resume_runs_only_what_is_missing(tmp_path):
    p = write(tmp_path, '"flows[1].rtt" = ["80ms", "160ms"]\n')
    out = tmp_path / "out"
    sw.run(p, out, workers=1)
    runs = sorted((out / "runs").iterdir())
    # An interrupted attempt left a partial directory, and one finished run was lost.
    lost = runs[0]
    os.rename(lost, Path(f"{lost}.partial"))
    before = {r.name: (r / "summary.json").stat().st_mtime_ns for r in runs[1:]}
    assert len(sw.finished(out)) == 3
    t = sw.run(p, out, workers=1)
    assert len(t) == 4 and not list((out / "runs").glob("*.partial"))
    assert {r: (out / "runs" / r / "summary.json").stat().st_mtime_ns for r in before} == before


def test_ctrl_c_keeps_finished_runs_and_the_same_command_resumes(tmp_path):
    # 24 runs of 2 s at 10 Mbit/s one at a time (~0.1 s each plus start-up); interrupted after a few.
    p = write(tmp_path, '"flows[1].rtt" = ["40ms", "60ms", "80ms", "100ms", "120ms", "140ms"]\n', seeds="4",
              dur="20s")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "cclab.cli", "sweep", str(p), "--out", str(out), "-j", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while len(sw.finished(out)) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    kept = sw.finished(out)
    assert proc.returncode == 130, err
    assert "finished runs kept" in err and 3 <= len(kept) < 24, (len(kept), err)
    for r in kept:  # every run counted as finished is complete
        assert {"summary.json", "timeseries.parquet", "spec.json", "point.json"} <= {f.name for f in (out / "runs" / r).iterdir()}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert len(sw.finished(out)) == 24 and f"({24} runs)" in r.stdout


def test_dask_cluster_gives_the_same_results(tmp_path):
    distributed = pytest.importorskip("distributed")
    p = write(tmp_path, '"flows[1].rtt" = ["80ms", "160ms"]\n')
    local = sw.run(p, tmp_path / "local", workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        remote = sw.run(p, tmp_path / "dask", scheduler=c.scheduler_address)
    cols = ["run", "goodput_mbps", "jain", "utilization", "drops", "mean_queue_pkts"]
    assert local[cols].sort_values("run").reset_index(drop=True).equals(
        remote[cols].sort_values("run").reset_index(drop=True))


def test_linked_keys_and_the_shipped_example(tmp_path):
    ex = Path(__file__).resolve().parents[1] / "sweeps" / "binomial_kl.toml"
    pts = sw.expand(*sw.load(ex))
    assert len(pts) == 3 * 2 * 10
    assert {(p.values["flows[1].params.k"], p.values["flows[1].params.l"]) for p in pts} == {
        (0.25, 0.25), (0.5, 0.5), (0.75, 0.75)}
    assert all(p.scenario["flows"][1]["params"] == {"k": p.values["flows[1].params.k"],
                                                     "l": p.values["flows[1].params.l"]} for p in pts)
    with pytest.raises(ScenarioError, match="linked keys"):
        sw.expand(*sw.load(write(tmp_path, '"flows[0].rtt, flows[1].rtt" = [["10ms"]]\n', "1")))
