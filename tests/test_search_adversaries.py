"""cclab search: the cross-traffic adversaries beside the bursts (Poisson sources, short transfers): their bounds'
errors (one line naming the field, exit code 2), the budget over all of them, determinism for a seed; and trace
files named so that a search and its best.toml run from any working directory."""
from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from cclab import search
from cclab.cli import cli

ROOT = Path(__file__).resolve().parents[1]

# One CUBIC flow on a 10 Mbit/s link for 3 s; the adversary adds Poisson cross traffic and short NewReno transfers,
# their mean rates together at most half the link. 2 x 4 candidates x 2 seeds + the base: 17 runs of ~30 ms.
CROSS = """
[base]
name = "cross"
duration = "3s"
seed = 1
measure = ["1s", "3s"]
[base.topology]
kind = "dumbbell"
[base.topology.bottleneck]
rate = "10Mbps"
buffer = 40
[[base.flows]]
cc = "cubic"
rtt = "20ms"
[[adversary]]
kind = "poisson"
rate = ["1Mbps", "8Mbps"]
[[adversary]]
kind = "transfers"
rate = ["1Mbps", "8Mbps"]
mean_size = ["10KB", "200KB"]
rtt = "30ms"
[budget]
cross_rate = 0.5
[objective]
metric = "flows[0].goodput_bps"
[search]
method = ["cmaes", "random"]
evaluations = 4
batch = 4
seed = 2
seeds = 2
"""


def _write(tmp: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def _evals(out: Path) -> list[dict]:
    return [json.loads(line) for m in ("cmaes", "random") for line in (out / m / "evaluations.jsonl").open()]


@pytest.mark.parametrize("edit, field", [
    (("rate = [\"1Mbps\", \"8Mbps\"]\n[[adversary]]", "rate = [\"8Mbps\", \"1Mbps\"]\n[[adversary]]"),
     "adversary[0].rate"),
    (("rate = [\"1Mbps\", \"8Mbps\"]\n[[adversary]]", "rate = [\"0Mbps\", \"8Mbps\"]\n[[adversary]]"),
     "adversary[0].rate"),
    (("kind = \"poisson\"", "kind = \"poisson\"\nmean_size = \"1KB\""), "adversary[0].mean_size"),
    (("mean_size = [\"10KB\", \"200KB\"]", "mean_size = [\"10KB\", \"2XB\"]"), "adversary[1].mean_size"),
    (("mean_size = [\"10KB\", \"200KB\"]", "mean_size = \"10KB\""), "adversary[1].mean_size"),
    (("rtt = \"30ms\"", ""), "adversary[1].rtt"),
    (("rtt = \"30ms\"", "rtt = \"-30ms\""), "adversary[1].rtt"),
    (("rtt = \"30ms\"", "rtt = \"30ms\"\ncc = \"nosuch\""), "adversary[1].cc"),
    (("rtt = \"30ms\"", "rtt = \"30ms\"\nshape = 0.5"), "adversary[1].shape"),
])
def test_bad_cross_traffic_bound_exits_2_on_one_line(tmp_path: Path, edit: tuple[str, str], field: str) -> None:
    assert edit[0] in CROSS
    f = _write(tmp_path, CROSS.replace(*edit, 1))
    r = CliRunner().invoke(cli, ["search", str(f), "--out", str(tmp_path / "o"), "-j", "1"])
    assert r.exit_code == 2, r.output
    assert r.output.startswith(f"error: {field}") and r.output.count("\n") == 1, r.output
    assert not (tmp_path / "o" / "runs").exists()  # refused before any run


def test_budget_error_names_every_cross_kind(tmp_path: Path) -> None:
    text = CROSS.replace("kind = \"poisson\"\nrate = [\"1Mbps\", \"8Mbps\"]", "kind = \"loss\"\nloss = [0.0, 0.01]")
    text = text.replace("kind = \"transfers\"\nrate = [\"1Mbps\", \"8Mbps\"]\nmean_size = [\"10KB\", \"200KB\"]\n"
                        "rtt = \"30ms\"", "kind = \"delay\"\ndelay = [\"0ms\", \"5ms\"]")
    r = CliRunner().invoke(cli, ["search", str(_write(tmp_path, text)), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and r.output.startswith("error: budget.cross_rate") and "poisson" in r.output, r.output


def test_cross_traffic_search_is_deterministic_and_keeps_the_budget(tmp_path: Path) -> None:
    f = _write(tmp_path, CROSS)
    a = search.run(f, tmp_path / "a", workers=2, figures=False)
    b = search.run(f, tmp_path / "b", workers=1, figures=False)
    ea, eb = _evals(tmp_path / "a"), _evals(tmp_path / "b")
    # The same seed gives the same candidates, runs and objectives, value for value, whatever the worker count
    # (nothing in a run depends on the folder: the run ids are equal too).
    assert ea == eb and len(ea) == 8 and a["best"] == b["best"]
    assert all(r["objective"] is not None and len(r["per_seed"]) == 2 for r in ea)
    for r in ea:
        v = r["values"]
        # The budget by construction: both sources' mean rates together <= 50 % of 10 Mbit/s (float rounding).
        assert v["adversary[0].rate"] + v["adversary[1].rate"] <= 5e6 * (1 + 1e-12)
        assert 10e3 <= v["adversary[1].mean_size"] <= 200e3
    # The candidate is an ordinary scenario with one Poisson source and one transfers source.
    scen = search.scenario_of(search.load(f), ea[0]["values"])
    kinds = [t["kind"] for t in scen["traffic"]]
    assert kinds == ["poisson", "transfers"] and scen["traffic"][1]["rtt"] == "30ms"
    # ... and the cross traffic costs the flow something (the search's best against the base without it).
    assert a["best"]["objective"] < a["baseline"]


def test_search_with_a_relative_trace_runs_from_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The base scenario names its link's trace relative to itself (as docs/scenario.md has it); the search runs from
    # an unrelated folder, and best.toml (its trace copied beside it) runs from a third one and from inside its folder.
    from cclab import traces

    src = tmp_path / "scen"
    src.mkdir()
    shutil.copyfile(traces.resolve("constant-12mbps"), src / "link.trace")
    (src / "base.toml").write_text('name = "rel"\nduration = "2s"\nseed = 1\nmeasure = ["0.5s", "2s"]\n'
                                   '[topology]\nkind = "dumbbell"\n[topology.bottleneck]\ntrace = "link.trace"\n'
                                   'buffer = 40\n[[flows]]\ncc = "cubic"\nrtt = "20ms"\n')
    _write(src, 'scenario = "base.toml"\n[[adversary]]\nkind = "loss"\nloss = [0.0, 0.01]\n'
                '[objective]\nmetric = "flows[0].goodput_bps"\n[search]\nmethod = "random"\nevaluations = 3\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["search", "../scen/s.toml", "--out", "../out", "-j", "1", "--no-figures"])
    assert r.exit_code == 0, r.output
    best = json.loads((out / "result.json").read_text())["best"]["objective"]
    assert (out / "best.trace").read_bytes() == (src / "link.trace").read_bytes()
    for cwd, path in ((tmp_path / "third", str(out / "best.toml")), (out, "best.toml"), (tmp_path, "out/best.toml")):
        cwd.mkdir(exist_ok=True)
        monkeypatch.chdir(cwd)
        res = tmp_path / "runs" / cwd.name
        r = CliRunner().invoke(cli, ["run", path, "--out", str(res), "--no-plots", "-q"])
        assert r.exit_code == 0, r.output
        assert json.loads((res / "summary.json").read_text())["flows"][0]["goodput_bps"] == best, cwd


@pytest.mark.parametrize("name", ["shrew", "bbr_vs_cubic", "libra_rtt", "maxnet_queue", "fast_fairness",
                                  "binomial_friendliness", "madison_loss"])
def test_shipped_search_files_load(name: str) -> None:
    s = search.load(ROOT / "searches" / f"{name}.toml")
    assert s.dims and s.evaluations >= 100


@pytest.mark.parametrize("name", ["fast_fairness", "binomial_friendliness", "madison_loss"])
def test_found_candidates_are_scenarios(name: str) -> None:
    # The best candidates docs/search.md reports, shipped as ordinary scenario files.
    from cclab.scenario import Scenario

    sc = Scenario.load(ROOT / "searches" / "found" / f"{name}.toml")
    assert sc.seed == 1


@pytest.mark.parametrize("name", ["shrew", "bbr_vs_cubic", "libra_rtt", "maxnet_queue", "fast_fairness",
                                  "binomial_friendliness", "madison_loss"])
def test_shipped_searches_name_their_transport(name: str) -> None:
    # docs/search.md quotes these searches' numbers: a base that left the transport to the default would move them
    # silently when the default changes (as it did from the papers' transport to Linux's).
    s = search.load(ROOT / "searches" / f"{name}.toml")
    assert s.base.get("transport", {}).get("profile") in ("linux", "paper"), name


@pytest.mark.parametrize("name", ["fast_fairness", "binomial_friendliness", "madison_loss"])
def test_found_candidates_reproduce_their_value(name: str) -> None:
    # Each found candidate's first comment lines give the search's objective, the mean over its seeds; `cclab run`
    # of the file with those seeds gives it to the digit (a deterministic simulator, floats written with repr).
    # About 1-4 s per candidate (three runs).
    import re

    from cclab.runner import run

    path = ROOT / "searches" / "found" / f"{name}.toml"
    m = re.search(r"^# (.+?) = (\S+) \(mean over seeds \[([0-9, ]+)\]\)", path.read_text(), re.M)
    assert m, path
    with path.open("rb") as fh:
        scen = tomllib.load(fh)
    assert scen["transport"]["profile"] in ("linux", "paper")
    seeds = [int(x) for x in m.group(3).split(",")]
    vals = [search.metric_of(run(dict(scen, seed=k), None, progress=False).summary, m.group(1)) for k in seeds]
    assert sum(v for v in vals if v is not None) / len(seeds) == float(m.group(2)), (vals, m.group(2))


def test_confirm_reuses_real_runs_only_of_the_same_candidate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The real runs of --confirm are kept per rank (confirm-<mode>/candidate-<rank>/<seed>/); when the rank's
    # candidate changes (the search grew in the same folder), the old runs are moved aside, not reported as the new
    # candidate's. The real datapath is replaced by the simulator (no real run here: 3 s runs, ~0.1 s each).
    from cclab import net
    from cclab.runner import run
    from cclab.search import confirm as sc

    def fake_run(scen: dict, where: Path, seed: int, progress: bool, plots: bool) -> object:
        return run(dict(scen, seed=seed), where, progress=False, plots=False)

    monkeypatch.setattr(net, "run", fake_run)
    s = search.load(ROOT / "searches" / "shrew.toml")
    folder = tmp_path / "confirm-real" / "candidate-1"
    ran: list[str] = []
    a = dict(s.base, duration="3s", measure=["1s", "3s"])
    b = json.loads(json.dumps(a))
    b["flows"][0]["cc"] = "cubic"
    first = sc._real(s, a, [1, 2], folder, ran.append)["values"]
    assert len(ran) == 2
    assert sc._real(s, a, [1, 2], folder, ran.append)["values"] == first and len(ran) == 2  # resumed: no new run
    other = sc._real(s, b, [1, 2], folder, ran.append)["values"]
    assert len(ran) == 4 and other != first  # b's own runs, not a's
    assert json.loads((folder / "1" / "spec.json").read_text())["flows"][0]["cc"] == "cubic"
    assert (tmp_path / "confirm-real" / "candidate-1.old-1" / "1" / "summary.json").is_file()
