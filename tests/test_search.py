"""cclab search: the search file's errors, determinism, resumption, reproduction of the best candidate, and a tiny
shrew search that finds the attack."""
from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from cclab import search
from cclab.cli import cli
from cclab.runner import run

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "searches" / "shrew_base.toml"

# A small search on the shipped shrew scenario (one 25 s NewReno flow, 15 Mbit/s, 100 ms, min RTO 1 s): CMA-ES with a
# population of 6 for two generations, and 12 random candidates; 25 runs of ~0.2 s each.
TINY = f"""
scenario = "{BASE}"
[[adversary]]
kind = "bursts"
period = ["0.2s", "3s"]
burst = ["20ms", "400ms"]
rate = ["5Mbps", "60Mbps"]
[budget]
cross_rate = 0.2
[objective]
metric = "flows[0].goodput_bps"
goal = "minimize"
[search]
method = ["cmaes", "random"]
evaluations = 12
batch = 6
seed = 3
"""


def _write(tmp: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp / name
    p.write_text(text)
    return p


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    tmp = tmp_path_factory.mktemp("search")
    f = _write(tmp, TINY)
    out = tmp / "out"
    return f, out, search.run(f, out, workers=2)


def _evals(out: Path) -> list[dict]:
    return [json.loads(line) for m in ("cmaes", "random") for line in (out / m / "evaluations.jsonl").open()]


@pytest.mark.parametrize("edit, field", [
    (("kind = \"bursts\"", "kind = \"wave\""), "adversary[0].kind"),
    (("period = [\"0.2s\", \"3s\"]", "period = \"1s\""), "adversary[0].period"),
    (("rate = [\"5Mbps\", \"60Mbps\"]", "rate = [\"60Mbps\", \"5Mbps\"]"), "adversary[0].rate"),
    (("cross_rate = 0.2", "cross_rate = 1.5"), "budget.cross_rate"),
    (("goal = \"minimize\"", "goal = \"lowest\""), "objective.goal"),
    (("method = [\"cmaes\", \"random\"]", "method = \"genetic\""), "search.method"),
    (("evaluations = 12", "evaluations = 0"), "search.evaluations"),
    (("[search]", "[search]\nbudget = 3"), "search.budget"),
    (("metric = \"flows[0].goodput_bps\"", "metric = \"flows[0].nothing\""), "objective.metric"),
    ((f"scenario = \"{BASE}\"", "scenario = 3"), "scenario"),
    (("[budget]", "[[adversary]]\nkind = \"loss\"\nloss = [0.02, 0.05]\n[budget]\nloss = 0.01"),
     "adversary[1].loss"),
])
def test_bad_search_file_exits_2_naming_the_field(tmp_path: Path, edit: tuple[str, str], field: str) -> None:
    assert edit[0] in TINY
    # (a metric missing from the summary is found on the base scenario's run, before any candidate runs)
    f = _write(tmp_path, TINY.replace(*edit))
    r = CliRunner().invoke(cli, ["search", str(f), "--out", str(tmp_path / "o"), "-j", "1"])
    assert r.exit_code == 2, r.output
    assert f"error: {field}" in r.output and "Traceback" not in r.output, r.output


def test_bad_set_exits_2(tmp_path: Path) -> None:
    f = _write(tmp_path, TINY)
    r = CliRunner().invoke(cli, ["search", str(f), "--out", str(tmp_path / "o"), "--set", "flows[3].cc=cubic"])
    assert r.exit_code == 2 and "error: --set flows[3].cc" in r.output, r.output
    r = CliRunner().invoke(cli, ["search", str(f), "--out", str(tmp_path / "o"), "--set", "flows[0].cc=nosuch"])
    assert r.exit_code == 2 and "error: scenario: flows[0].cc" in r.output, r.output


def test_set_applies_with_sweep_keys(tmp_path: Path) -> None:
    s = search.load(_write(tmp_path, TINY), [search.parse_set("flows[0].cc=cubic"), search.parse_set("seed=7")])
    assert s.base["flows"][0]["cc"] == "cubic" and s.seeds == [7]


def test_budget_is_kept_by_construction(tiny: tuple[Path, Path, dict]) -> None:
    _, out, _ = tiny
    for r in _evals(out):
        v = r["values"]
        mean = v["adversary[0].rate"] * v["adversary[0].burst"] / v["adversary[0].period"]
        # 0.2 × 15 Mbit/s; the 1e-9 relative slack is the float rounding of the rescaling product.
        assert mean <= 0.2 * 15e6 * (1 + 1e-9)


def test_same_seed_same_evaluations_and_resume_runs_nothing(tiny: tuple[Path, Path, dict], tmp_path: Path) -> None:
    f, out, _ = tiny
    first = _evals(out)
    assert len(first) == 24 and all(r["objective"] is not None for r in first)
    # Determinism: the same search in a fresh folder asks the same candidates and measures the same values.
    other = tmp_path / "again"
    search.run(f, other, workers=2)
    assert _evals(other) == first
    # Resumption: a second invocation in the first folder makes no run (each run folder would be replaced by a
    # new one, with a new inode, if it were run again) and gives the same evaluations.
    runs = {d.name: d.stat().st_ino for d in (out / "runs").iterdir()}
    search.run(f, out, workers=2)
    assert {d.name: d.stat().st_ino for d in (out / "runs").iterdir()} == runs
    assert _evals(out) == first
    shutil.rmtree(other)


def test_best_scenario_reproduces_exactly(tiny: tuple[Path, Path, dict]) -> None:
    _, out, r = tiny
    with (out / "best.toml").open("rb") as fh:
        scen = tomllib.load(fh)
    got = run(scen, None, progress=False).summary["flows"][0]["goodput_bps"]
    assert got == r["best"]["objective"]  # to the digit: the same scenario and seed, a deterministic simulator
    assert (out / "convergence.png").stat().st_size > 0 and (out / "top.csv").read_text().count("\n") >= 10


def test_tiny_shrew_search_finds_the_attack(tiny: tuple[Path, Path, dict]) -> None:
    _, _, r = tiny
    # Without the attacker the flow gets ~14.5 Mbit/s of 15. Bursts at <= 20 % mean rate that merely took their
    # share would leave >= 80 % of it; periods that keep the flow in timeouts cut it far more (docs/search.md).
    # With this tiny budget the best found left 0.182, 0.153, 0.104, 0.154, 0.201, 0.168 of it for search seeds
    # 1-6 (seed 3 here): asking for <= 0.35 is well past a fair share's 0.8 and 0.15 above the worst seed.
    assert r["best"]["objective"] <= 0.35 * r["baseline"], (r["best"], r["baseline"])


def test_loss_and_delay_adversaries_set_their_keys(tmp_path: Path) -> None:
    text = TINY.replace("[budget]", "[[adversary]]\nkind = \"loss\"\nloss = [0.0, 0.05]\n"
                                    "[[adversary]]\nkind = \"delay\"\ndelay = [\"0ms\", \"40ms\"]\n"
                                    "key = \"topology.bottleneck.delay\"\n[budget]\nloss = 0.01")
    s = search.load(_write(tmp_path, text))
    vals = search.decode(s, [0.5, 0.5, 1.0, 1.0, 0.5])
    # The loss bound is cut to the budget (0.01), so the top of the cube is 0.01; the delay's middle is 20 ms.
    assert vals["adversary[1].loss"] == 0.01 and abs(vals["adversary[2].delay"] - 0.02) < 1e-12
    scen = search.scenario_of(s, vals)
    assert scen["topology"]["bottleneck"]["loss"] == 0.01 and scen["topology"]["bottleneck"]["delay"] == vals[
        "adversary[2].delay"]
    # One cbr source per burst, every period from 0 to the 25 s end of the run.
    period = vals["adversary[0].period"]
    assert len(scen["traffic"]) == len([k for k in range(1000) if k * period < 25])


def test_metric_paths_and_ratios() -> None:
    summ = {"flows": [{"goodput_bps": 6.0}, {"goodput_bps": 3.0}], "jain": 0.9, "links": [{"utilization": None}]}
    assert search.metric_of(summ, "flows[1].goodput_bps") == 3.0
    assert search.metric_of(summ, "flows[0].goodput_bps / flows[1].goodput_bps") == 2.0
    assert search.metric_of(summ, "jain") == 0.9 and search.metric_of(summ, "links[0].utilization") is None
    with pytest.raises(KeyError):
        search.metric_of(summ, "flows[2].goodput_bps")
