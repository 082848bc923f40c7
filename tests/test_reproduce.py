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
CANON = ["F1", "F2", "F3", "F4", "M1", "M2", "M3", "M4", "M5", "M6", "M7", "M8", "B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9",
         "L1", "L2", "L3", "L4", "L5", "L6", "D1", "D2", "D3", "D4", "D5", "D6", "D7"]
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
        if c.verdict == "reported":
            assert c.seeds_held is None  # a reported row is not judged
        assert c.seeds == [1, 2] and c.verdict in rp.VERDICTS


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
    assert "the queue stays ≈ 0 throughout" in r.stdout and "verdict" in r.stdout and "/5 seeds: 1-5)" in r.stdout
    rep = json.loads((tmp_path / "M2" / "reproduce.json").read_text())
    assert rep["id"] == "M2" and len(rep["claims"]) == 6 and rep["quick"] is False and rep["seeds"] == [1, 2, 3, 4, 5]
    assert rep["seeds_requested"] == [1, 2, 3, 4, 5] and rep["max_seeds"] == rp.MAX_SEEDS
    assert all(c["seeds_held"][1] == 5 and c["seeds"] == [1, 2, 3, 4, 5] for c in rep["claims"])
    assert all(c["verdict"] == "holds" and c["holds"] is True for c in rep["claims"])  # M2 holds on 5/5 (reproduce.md)
    assert (tmp_path / "M2" / "maxnet-seed1" / "summary.json").exists()
    r = cli("reproduce", "m2", "x9")
    assert r.returncode == 2 and r.stderr.startswith("error: experiments: unknown x9"), r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("arg,seeds", [("3", (1, 2, 3)), ("11-13", (11, 12, 13)), ("1,4,9", (1, 4, 9)),
                                       (" 7 ", tuple(range(1, 8)))])
def test_seeds_option_parses_a_count_a_range_or_a_list(arg, seeds):
    from cclab.cli import _parse_seeds

    assert _parse_seeds(arg) == seeds


@pytest.mark.parametrize("arg", ["0", "-3", "5-2", "a", "1,,2", "1,1", "1-", "4294967296,1", ""])
def test_seeds_option_refuses_what_is_not_a_seed_set(arg, tmp_path):
    r = cli("reproduce", "m1", "--seeds", arg, "--out", str(tmp_path))
    assert r.returncode == 2 and r.stderr.startswith("error: --seeds:") and "allowed:" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "M1").exists()


def test_seeds_option_runs_those_seeds_and_records_them(tmp_path):
    # --seeds 11-12 runs seeds 11 and 12 and nothing else; --max-seeds equal to their number adds none.
    r = cli("reproduce", "m1", "--quick", "--seeds", "11-12", "--max-seeds", "2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "M1" / "reproduce.json").read_text())
    assert rep["seeds"] == [11, 12] and rep["seeds_requested"] == [11, 12]
    assert sorted(p.name for p in (tmp_path / "M1").iterdir() if p.is_dir()) == ["maxnet-seed11", "maxnet-seed12"]
    assert all(c["seeds"] == [11, 12] for c in rep["claims"])
    r = cli("reproduce", "m1", "--seeds", "3", "--max-seeds", "2", "--out", str(tmp_path))
    assert r.returncode == 2 and r.stderr.startswith("error: --max-seeds:"), r.stderr


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
    runs = sorted(p.name for p in (tmp_path / "B6").iterdir() if p.is_dir())
    assert len(runs) == n and not any(p.endswith(".partial") for p in runs)
    assert (tmp_path / "B6" / "reproduce.json").exists()  # run_many judges too
    stamp = {p: (tmp_path / "B6" / p / "summary.json").stat().st_mtime_ns for p in runs}
    shutil.rmtree(tmp_path / "B6" / runs[0])
    counts.clear()
    rp.run_many(["B6"], tmp_path, quick=True, workers=2, seeds=(1, 2), on_done=lambda k, n: counts.append((k, n)))
    assert counts == [(n - 1, n), (n, n)]
    rep = rp.reproduce("B6", tmp_path / "B6", quick=True, seeds=(1, 2))  # loads, simulates nothing
    assert all((tmp_path / "B6" / p / "summary.json").stat().st_mtime_ns == stamp[p] for p in runs[1:])
    assert rep.claims and all(c.seeds_held[1] == 2 for c in rep.claims)


def test_a_variant_name_with_a_slash_makes_one_folder_level(tmp_path):
    # F4's "α = 10/20/40" (and D1's "M/D/1 check") nested their runs as "α = 10"/"20"/"40-seed1"; every run is
    # now one folder directly under the experiment's, its name made safe by one function, and the report finds
    # the runs there. The displayed name is unchanged.
    from cclab.reproduce import folder_name, report, run_folder

    assert "α = 10/20/40" in rp.experiments()["f4"].variants
    rp.run_many(["F4"], tmp_path, quick=True, workers=1, seeds=(1,), max_seeds=1)
    exp = tmp_path / "F4"
    assert sorted(p.name for p in exp.iterdir() if p.is_dir()) == ["equal α-seed1", "α = 10%2F20%2F40-seed1"]
    rep = json.loads((exp / "reproduce.json").read_text())
    assert list(rep["runs"]) == ["α = 10/20/40", "equal α"]  # the names shown are the variants' own
    assert report._runs(exp, rep) is not None  # the report loads both runs from those folders
    # Distinct names stay distinct folders ('%' is encoded too), none holds a '/', and a name too long for a
    # file name (255 bytes with "-seed<k>.partial") is cut with a digest of the whole name.
    names = ["a/b", "a%2Fb", "a_b", "a\0b", "M/D/1 check: Fig. 2(c)'s cross traffic alone", "x" * 300, "x" * 301]
    folders = [run_folder(n, 4294967295) + ".partial" for n in names]
    assert len(set(folders)) == len(names) and all("/" not in f and "\0" not in f for f in folders)
    assert all(len(f.encode()) <= 255 for f in folders)
    assert folder_name("fast n=1 rtt=50ms") == "fast n=1 rtt=50ms"  # other names keep their folders (resume)


# --- docs/experiments.md's setup tables against the scenario files ---------------------------------------

def documented_setup(d: dict) -> dict[str, str]:
    """A scenario file's setup as docs/experiments.md's setup table writes it: the link rates, the flows'
    RTTs, the buffer, the flows (forward, reverse, other traffic sources) and the duration."""
    from cclab.units import parse_rate, parse_time

    topo = d["topology"]
    links = topo.get("links") or [topo["bottleneck"]]

    def distinct(xs):
        return list(dict.fromkeys(xs))

    def buf(b):
        return f"{b} packets" if isinstance(b, int) else str(b)

    def rate(link):
        # A trace-driven link has a capacity trace in place of a rate: the table names it and its mean rate.
        if "trace" in link:
            from cclab import traces

            return f"trace {link['trace']} (mean {traces.load(link['trace']).mean_rate_bps / 1e6:.3g} Mbit/s)"
        return f"{parse_rate(link['rate']) / 1e6:g} Mbit/s"

    flows = d["flows"]
    fwd = sum(int(f.get("count", 1)) for f in flows if not f.get("reverse"))
    rev = sum(int(f.get("count", 1)) for f in flows if f.get("reverse"))
    other = len(d.get("traffic", []))
    return {
        "rate": " / ".join(rate(l) for l in links),
        "RTT": ", ".join(f"{parse_time(x) * 1e3:g} ms" for x in distinct(f["rtt"] for f in flows)),
        "buffer": " / ".join(distinct(buf(l.get("buffer", "BDP")) for l in links)),
        "flows": f"{fwd}" + (f" + {rev} reverse" if rev else "") + (f" + {other} background source{'s' if other > 1 else ''}" if other else ""),
        "duration": f"{parse_time(d['duration']):g} s",
    }


SETUP_COLUMNS = ("scenario", "rate", "RTT", "buffer", "flows", "duration")


def doc_setups(text: str) -> dict[str, dict[str, str]]:
    """Every setup table of docs/experiments.md, by experiment id (the ### heading above it)."""
    out: dict[str, dict[str, str]] = {}
    exp = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("### "):
            exp = line[4:].split(":")[0].strip()
        if exp and line.startswith("| scenario | rate |") and i + 2 < len(lines):
            cells = [c.strip() for c in lines[i + 2].strip().strip("|").split("|")]
            out[exp] = dict(zip(SETUP_COLUMNS, cells))
    return out


def test_documented_setups_match_the_scenarios():
    # docs/experiments.md gives each experiment's scenario setup as a table; it must say what the file
    # runs (the variants change it as each section's text says).
    text = (Path(__file__).parents[1] / "docs" / "experiments.md").read_text()
    got = doc_setups(text)
    exps = rp.experiments()
    missing = [e.id for e in exps.values() if e.id not in got]
    assert not missing, f"docs/experiments.md has no setup table for {missing}"
    for x in got:
        e = exps[x.lower()]
        row = got[x]
        assert row["scenario"] == f"`{e.scenario}`", (x, row)
        want = documented_setup(rp.scenario_dict(e.scenario))
        assert {k: row[k] for k in want} == want, x


def test_setup_table_of_a_trace_driven_link():
    # A link with `trace` in place of `rate` (the cellular trace, mean 13.9 Mbit/s), beside a fixed-rate link.
    d = rp.scenario_dict("libra_l3.toml")
    d["topology"]["bottleneck"] = {"trace": "cellular", "buffer": 100}
    assert documented_setup(d)["rate"] == "trace cellular (mean 13.9 Mbit/s)"
    d["topology"] = {"kind": "parking_lot", "links": [{"rate": "100Mbps"}, {"trace": "step-6-24mbps", "buffer": 50}]}
    row = documented_setup(d)
    assert row["rate"].startswith("100 Mbit/s / trace step-6-24mbps (mean ") and row["rate"].endswith(" Mbit/s)")
    assert row["buffer"] == "BDP / 50 packets"
    from cclab.scenario import as_scenario

    as_scenario(dict(d, topology={"kind": "dumbbell", "bottleneck": {"trace": "cellular", "buffer": 100}}))  # valid


# --- verdicts: holds / does not hold / inconclusive, and sequential seeds ---------------------------------

def test_a_row_whose_ci_straddles_its_criterion_is_inconclusive():
    from cclab.reproduce.overseeds import judged, verdict_of

    above = lambda v: v >= 0.9
    assert verdict_of([0.95, 0.96, 0.94, 0.95, 0.97], above) == "holds"  # CI [0.94, 0.97] clears 0.9
    assert verdict_of([0.80, 0.82, 0.81, 0.79, 0.80], above) == "does not hold"
    assert verdict_of([0.85, 0.95, 0.88, 0.97, 0.91], above) == "inconclusive"  # mean 0.91 ± 0.06
    assert verdict_of([0.95], above) == "holds"  # one seed: no CI, that run's verdict
    assert verdict_of([0.95, float("inf"), 0.96], above) == "inconclusive"  # not reached on one seed
    assert verdict_of([0.5, float("inf")], above) == "does not hold"
    c = judged("x", "p", [0.85, 0.95, 0.88, 0.97, 0.91], "≥ 0.9", above)
    assert c.verdict == "inconclusive" and c.holds is None and c.seeds_held == (3, 5)


def test_a_per_seed_row_is_judged_by_a_sign_test():
    from cclab.reproduce.overseeds import sign_verdict

    # P(X ≥ k | n, ½) < 0.05: 5/5 (0.031), 9/10 (0.011), 12/15 (0.018), 20/30 (0.049); not 4/5 (0.19), 8/10 (0.055)
    assert [sign_verdict(k, 5) for k in (5, 4, 1, 0)] == ["holds", "inconclusive", "inconclusive", "does not hold"]
    assert [sign_verdict(k, 10) for k in (9, 8, 2, 1)] == ["holds", "inconclusive", "inconclusive", "does not hold"]
    assert sign_verdict(12, 15) == "holds" and sign_verdict(11, 15) == "inconclusive"
    assert sign_verdict(20, 30) == "holds" and sign_verdict(19, 30) == "inconclusive"


def test_a_row_over_cells_counts_cells_won_lost_and_undecided():
    from cclab.reproduce.overseeds import abs_interval, cells_verdict, judged_cells, paired_outcome

    # Paired differences: the 95 % CI (t = 4.30 for 3 seeds) clears 0 above (won), below (lost), or not;
    # equal runs tie, and a tie counts for ours (as the mean-only rule ours ≥ rival did).
    assert paired_outcome([0.01, 0.02, 0.015]) == "won"
    assert paired_outcome([-0.01, -0.02, -0.015]) == "lost"
    assert paired_outcome([0.01, -0.01, 0.005]) == "undecided"
    assert paired_outcome([0.0, 0.0, 0.0]) == "won"
    # |mean|'s interval: mean 0.2 ± 0.248 straddles 0, so it reaches 0; −0.5 ± 0.248 does not.
    lo, hi = abs_interval([0.1, 0.2, 0.3])
    assert lo == 0.0 and hi == pytest.approx(0.2 + 4.303 * 0.1 / 3 ** 0.5, abs=1e-3)
    lo, hi = abs_interval([-0.5, -0.6, -0.4])
    assert (lo, hi) == (pytest.approx(0.5 - 0.2484, abs=1e-3), pytest.approx(0.5 + 0.2484, abs=1e-3))
    assert abs_interval([-0.3]) == (0.3, 0.3)  # one seed: the point
    # need 4 of 5: holds at 4 won; does not hold once 2 are lost (4 out of reach); else inconclusive.
    assert [cells_verdict(w, lost, 5, 4) for w, lost in ((4, 0), (5, 0), (3, 2), (3, 1), (0, 0), (0, 5))] == \
        ["holds", "holds", "does not hold", "inconclusive", "inconclusive", "does not hold"]
    c = judged_cells("x", "p", ["won", "lost", "undecided", "won", "won"], 4, "cells", "more", "c", (2, 5))
    assert c.verdict == "inconclusive" and c.measured == "won 3, lost 1, undecided 1 of 5 cells; more"
    assert c.seeds_held == (2, 5)


def test_an_axis_row_holds_only_when_every_point_does():
    from cclab.reproduce.overseeds import judged_axis

    above = lambda v: v >= 0.9
    good, bad, unsure = [0.95, 0.96, 0.97], [0.5, 0.52, 0.51], [0.85, 0.97, 0.91]
    assert judged_axis("x", "p", "n", {"a": good, "b": good}, "≥ 0.9", above).verdict == "holds"
    assert judged_axis("x", "p", "n", {"a": good, "b": unsure}, "≥ 0.9", above).verdict == "inconclusive"
    c = judged_axis("x", "p", "n", {"a": bad, "b": unsure}, "≥ 0.9", above)
    assert c.verdict == "does not hold" and "a: 0.51 ± 0.02 ✗" in c.measured and c.seeds_held == (0, 3)


def test_claims_keep_holds_for_old_readers():
    c = rp.Claim("c", "p", "m", "k", True)
    assert c.verdict == "holds" and c.holds is True
    c = rp.Claim("c", "p", "m", "k", None, verdict="inconclusive")
    assert c.holds is None
    assert rp.Claim("c", "p", "m", "k", None).verdict == "reported"
    with pytest.raises(ValueError, match="verdict"):
        rp.Claim("c", "p", "m", "k", None, verdict="maybe")


def test_inconclusive_rows_get_more_seeds_and_settled_rows_keep_theirs():
    # A fake experiment: row "a" holds on every seed; row "b" has a per-seed value that sits just above its
    # criterion with a spread, so its CI straddles on 5 seeds and clears it on more. The experiment runs
    # batches of SEED_BATCH seeds until "b" settles; "a" keeps the seeds it settled on.
    from cclab.reproduce import _Sequence
    from cclab.reproduce.overseeds import judged

    class R:
        def __init__(self, seed):
            self.summary = {"seed": seed}

    noise = {s: (0.2 if s % 2 else -0.2) for s in range(1, 40)}

    def claims(res):
        seeds = [r.summary["seed"] for r in res["v"]]
        return [judged("a", "p", [1.0 for _ in seeds], "≥ 0", lambda v: v >= 0),
                judged("b", "p", [0.1 + noise[s] for s in seeds], "> 0", lambda v: v > 0)]

    e = rp.Experiment("X1", "paper", "t", "fast_f4.toml", {"v": lambda d: d}, claims, seeds=(1, 2, 3, 4, 5))
    seq = _Sequence(e, e.seeds, 30)
    res = {"v": []}
    rounds = 0
    while seq.batch:
        res["v"] += [R(s) for s in seq.batch]
        seq.judge(res)
        rounds += 1
    a, b = seq.rows
    assert a.verdict == "holds" and a.seeds == [1, 2, 3, 4, 5]
    # b: odd seeds 0.3, even −0.1 (sd ≈ 0.21): the CI's lower end is −0.19 at 5 seeds, −0.05 at 10,
    # −0.001 at 15 and +0.004 at 20, where it clears 0: four rounds.
    assert b.verdict == "holds" and b.seeds == list(range(1, 21)) and rounds == 4
    # Never settling: the bound stops it, and the row says how many seeds it ran.
    seq = _Sequence(rp.Experiment("X2", "p", "t", "fast_f4.toml", {"v": lambda d: d},
                                  lambda res: [judged("c", "p", [noise[r.summary["seed"]] for r in res["v"]], "> 0",
                                                      lambda v: v > 0)], seeds=(1, 2, 3, 4, 5)), (1, 2, 3, 4, 5), 12)
    res = {"v": []}
    while seq.batch:
        res["v"] += [R(s) for s in seq.batch]
        seq.judge(res)
    (c,) = seq.rows
    assert c.verdict == "inconclusive" and c.seeds == list(range(1, 13)) and c.seeds_held[1] == 12


def test_an_experiments_own_seed_bound_applies_unless_one_is_given():
    # L1 and L2 stop adding seeds at 10 (libra.L12_MAX_SEEDS: their 30 seeds would take 25 min of the suite's
    # 45); every other experiment at MAX_SEEDS. The bound applies to an experiment's own seeds and to the
    # CLI's --seeds (grow_chosen); an explicit --max-seeds overrides it; the API adds none to chosen seeds.
    from cclab.reproduce import _bound, _Sequence

    exps = rp.experiments()
    l1, l2, m2 = exps["l1"], exps["l2"], exps["m2"]
    assert l1.max_seeds == l2.max_seeds == 10 and m2.max_seeds == rp.MAX_SEEDS == 30
    assert [e.id for e in exps.values() if e.max_seeds != rp.MAX_SEEDS] == ["L1", "L2"]
    assert _bound(l1, None, None) == 10 and _bound(m2, None, None) == 30
    assert _bound(l1, (11, 12), None, grow_chosen=True) == 10 and _bound(l1, (11, 12), None) == 0
    assert _bound(l1, None, 30) == 30 and _bound(m2, (1,), 1, grow_chosen=True) == 1
    assert _Sequence(l1, l1.seeds, _bound(l1, None, None)).max_seeds == 10


def test_the_docs_count_and_name_every_experiment():
    # README, docs/experiments.md and docs/reproduce.md say how many experiments there are and their ranges;
    # docs/experiments.md has a section for each. An experiment added without its docs fails here.
    import re

    root = Path(__file__).parents[1]
    ids = [e.id for e in rp.experiments().values()]
    ranges = ", ".join(f"{x}1–{x}{max(int(i[1:]) for i in ids if i[0] == x)}" for x in dict.fromkeys(i[0] for i in ids))
    readme = (root / "README.md").read_text()
    exps = (root / "docs" / "experiments.md").read_text()
    repro = (root / "docs" / "reproduce.md").read_text()
    assert f"The papers' {len(ids)} experiments" in readme
    assert f"{len(ids)} in all" in exps and f"All {len(ids)} are `cclab reproduce` experiments (**{ranges}**)" in exps
    assert f"lists all {len(ids)}\n({ranges})" in repro
    sections = re.findall(r"^### ([A-Z]\d+):", exps, flags=re.M)
    assert sections == ids
