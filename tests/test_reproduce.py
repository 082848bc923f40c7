"""`cclab reproduce`: each experiment runs, its claims are computed from the runs just made, and the
command line lists, runs and refuses as documented. Full-size runs except L4 (1000 s at 622 Mbit/s,
3 variants: ~1.5 min, run by hand; docs/reproduce.md has its table)."""
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cclab
from cclab import reproduce as rp
from cclab.reproduce import window

# Every experiment of docs/experiments.md, in the papers' order.
CANON = ["F1", "F2", "F3", "F4", "M1", "M2", "M3", "M4", "M5", "M6", "B1", "B2", "B3", "B4", "B5", "B6", "B7",
         "L1", "L2", "L3", "L4", "L5", "D1", "D2", "D3", "D4"]
HEAVY = {"L4"}  # 100 flows at 622 Mbit/s: minutes even in quick mode


def test_every_experiment_is_listed_with_its_scenario():
    exps = rp.experiments()
    ids = [e.id for e in exps.values()]
    assert ids == CANON, ids  # every experiment of sections 1-5, in the papers' order, nothing unknown
    for e in exps.values():
        assert len(e.seeds) >= 5, e.id  # a claim over seeds is a mean with its CI over at least five
        d = rp.scenario_dict(e.scenario)  # shipped inside the package
        assert d["name"] and d["flows"]
        for change in e.variants.values():
            cclab.Scenario.from_dict(change(json.loads(json.dumps(d))))  # every variant is a valid scenario


@pytest.mark.parametrize("exp", [x.id for x in rp.experiments().values() if x.id not in HEAVY])
def test_every_experiment_runs_and_its_rows_are_measured(exp):
    # Mechanics on two seeds at a tenth of the duration (the claims are about full size): every variant ran
    # every seed, every row is filled, a per-seed count covers exactly the seeds run.
    rep = rp.reproduce(exp, quick=True, seeds=(1, 2))
    assert rep.claims and all(c.measured and c.criterion for c in rep.claims)
    e = rep.experiment
    assert set(rep.runs) == set(e.variants) and all(len(v) == 2 for v in rep.runs.values())
    for c in rep.claims:
        if c.seeds_held is not None:
            k, n = c.seeds_held
            assert n == 2 and 0 <= k <= n, (c.claim, c.seeds_held)
        if c.holds is None:
            assert c.seeds_held is None  # a reported row is not judged


def test_b1_reproduces_the_k_plus_l_rule():
    # The paper's claim, 10 seeds: ratio ≈ 1 iff k + l = 1, < 1 for 0.5, > 1 for 1.5 (measured: SQRT
    # 0.84 ± 0.03, IIAD 0.97 ± 0.02, 0.42 ± 0.01, 1.57 ± 0.04).
    rep = rp.reproduce("B1")
    assert all(c.holds for c in rep.claims), [(c.claim, c.measured) for c in rep.claims]


def test_window_helpers_agree_with_the_summary():
    # Over the measure window the helpers must give what summary.json says (same counters).
    r = cclab.run(rp.scenario_dict("libra_l5.toml"), progress=False)
    m0, m1 = r.summary["measure"]
    for f in r.summary["flows"]:
        assert window.goodput(r, f["id"], m0, m1) == pytest.approx(f["goodput_bps"], rel=1e-6)
    assert window.utilization(r, m0, m1) == pytest.approx(r.summary["links"][0]["utilization"], rel=1e-6)
    assert window.settle_time(r, 0, m0, m1, 1e12) == math.inf


def test_quick_mode_shortens_every_time():
    d = rp.shorten(rp.scenario_dict("madison_d3.toml"))
    assert d["duration"] == "12s" and d["measure"] == ["3s", "12s"]
    assert [f.get("start") for f in d["flows"]] == ["0s", "3s", "9.2s"] and d["flows"][0]["stop"] == "6s"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "cclab.cli", *args], capture_output=True, text=True, timeout=300)


def test_cli_lists_runs_and_refuses(tmp_path):
    r = cli("reproduce")
    assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("F1 ")
    r = cli("reproduce", "m2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "the queue stays ≈ 0 throughout" in r.stdout and "holds" in r.stdout and "/5 seeds)" in r.stdout
    rep = json.loads((tmp_path / "M2" / "reproduce.json").read_text())
    assert rep["id"] == "M2" and len(rep["claims"]) == 6 and rep["quick"] is False and rep["seeds"] == [1, 2, 3, 4, 5]
    assert all(c["seeds_held"][1] == 5 for c in rep["claims"])
    assert (tmp_path / "M2" / "maxnet-seed1" / "summary.json").exists()
    r = cli("reproduce", "m2", "x9")
    assert r.returncode == 2 and r.stderr.startswith("error: experiments: unknown x9"), r.stderr
    assert "Traceback" not in r.stderr


def test_an_interrupted_reproduce_resumes_without_redoing_finished_runs(tmp_path, monkeypatch):
    # A run is written into <run>.partial and renamed when complete; a second reproduce into the same
    # folder loads every finished run (same spec, same cclab version) instead of simulating it, and
    # redoes what a kill left half-written (docs/reproduce.md, "Interrupted runs").
    import cclab.reproduce as rpm

    first = rp.reproduce("M2", out=tmp_path, quick=True)
    runs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert runs and not any(n.endswith(".partial") for n in runs)
    # A kill mid-run: one run's folder lost, a half-written .partial beside it.
    victim = tmp_path / runs[0]
    shutil.rmtree(victim)
    (tmp_path / (runs[0] + ".partial")).mkdir()
    simulated = []
    real_run = rpm._run
    monkeypatch.setattr(rpm, "_run", lambda d, where, **kw: simulated.append(where) or real_run(d, where, **kw))
    second = rp.reproduce("M2", out=tmp_path, quick=True)
    assert [Path(w).name for w in simulated] == [runs[0] + ".partial"]  # only the lost run, once
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == runs
    assert [c.measured for c in second.claims] == [c.measured for c in first.claims]
    assert json.loads((tmp_path / "reproduce.json").read_text())["id"] == "M2"


def test_run_many_uses_a_pool_and_resumes(tmp_path):
    # `cclab reproduce` runs every run on worker processes first, then judges: the pool's runs are the
    # ones reproduce() then loads (nothing simulated twice), and a lost run is the only one redone.
    counts = []
    rp.run_many(["B6"], tmp_path, quick=True, workers=2, seeds=(1, 2), on_done=lambda k, n: counts.append((k, n)))
    n = len(rp.experiments()["b6"].variants) * 2
    assert counts[0] == (0, n) and counts[-1] == (n, n)
    runs = sorted(p.name for p in (tmp_path / "B6").iterdir())
    assert len(runs) == n and not any(p.endswith(".partial") for p in runs)
    stamp = {p: (tmp_path / "B6" / p / "summary.json").stat().st_mtime_ns for p in runs}
    shutil.rmtree(tmp_path / "B6" / runs[0])
    counts.clear()
    rp.run_many(["B6"], tmp_path, quick=True, workers=2, seeds=(1, 2), on_done=lambda k, n: counts.append((k, n)))
    assert counts == [(n - 1, n), (n, n)]
    rep = rp.reproduce("B6", tmp_path / "B6", quick=True, seeds=(1, 2))  # loads, simulates nothing
    assert all((tmp_path / "B6" / p / "summary.json").stat().st_mtime_ns == stamp[p] for p in runs[1:])
    assert rep.claims and all(c.seeds_held[1] == 2 for c in rep.claims)
