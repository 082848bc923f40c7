"""Red team, round 3 leftovers (docs/scenario.md, "The error contract", the round's "Left:"): each test failed before
its fix. A boolean where a number belongs was read as 1 or 0 (``seed = true`` ran seed 1, ``loss = true`` lost every
packet); a 5,000-character unknown key (in a file or a ``--set``) was quoted whole, a line of kilobytes; ``cclab
compare`` left out a ``rep-<i>/`` whose summary.json is a FIFO without a word."""
from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sweepfile import REDTEAM_BASE

from cclab.runner import run
from cclab.scenario import Scenario, ScenarioError

CLI = [sys.executable, "-c", "from cclab.cli import main; main()"]
LONG = "k" * 5000
SCEN: dict[str, Any] = {
    "name": "rt", "duration": "1s", "seed": 1, "sample_interval": "100ms",
    "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps", "buffer": "BDP", "delay": "5ms"}},
    "flows": [{"cc": "newreno", "rtt": "40ms"}],
}
PARKING = {"kind": "parking_lot", "links": [{"rate": "10Mbps", "delay": "5ms"}, {"rate": "10Mbps", "delay": "5ms"}]}


def _cli(args: list[str], cwd: Path, timeout: float = 60) -> tuple[int, str]:
    r = subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, timeout=timeout)
    return r.returncode, r.stderr.decode()


def _one_error(rc: int, err: str, start: str) -> str:
    """The contract's answer: exit 2, one ``error:`` line starting with ``start``, short, no traceback."""
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith(start), err[-500:]
    assert "Traceback" not in err and "internal error" not in err and len(lines[0]) < 400, err[:400]
    return lines[0]


def _put(d: dict, path: tuple, value: Any) -> dict:
    node = d
    for p in path[:-1]:
        node = node.setdefault(p, {}) if isinstance(p, str) else node[p]
    node[path[-1]] = value
    return d


# Every integer and plain-number field of the scenario model (python/cclab/scenario.py): before, true and false
# were read as 1 and 0 wherever that was in range.
NUMBER_FIELDS = [
    (("seed",), "seed", "an integer"),
    (("flows", 0, "count"), "flows[0].count", "an integer"),
    (("transport", "delayed_ack"), "transport.delayed_ack", "an integer"),
    (("flows", 0, "transport", "delayed_ack"), "flows[0].transport.delayed_ack", "an integer"),
    (("transport", "initial_cwnd"), "transport.initial_cwnd", "a number"),
    (("topology", "bottleneck", "loss"), "topology.bottleneck.loss", "a number"),
    (("topology", "bottleneck", "reorder"), "topology.bottleneck.reorder", "a number"),
    (("topology", "bottleneck", "duplicate"), "topology.bottleneck.duplicate", "a number"),
    (("limits", "max_events"), "limits.max_events", "a number"),
]


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("path, field, what", NUMBER_FIELDS)
def test_a_boolean_is_no_number(path: tuple, field: str, what: str, value: bool) -> None:
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(_put(copy.deepcopy(SCEN), path, value))
    assert e.value.errors == [(field, f"must be {what}, not a boolean, got {'true' if value else 'false'}")]


@pytest.mark.parametrize("value", ["7", "0.5", "2.0"])
@pytest.mark.parametrize("path, field, what", NUMBER_FIELDS)
def test_a_quoted_number_is_no_number(path: tuple, field: str, what: str, value: str) -> None:
    # Before: pydantic's lax mode read "7" as 7 (count = "2" ran two flows) while a quantity's "100" was
    # refused for its missing unit; both are now refused, by name.
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(_put(copy.deepcopy(SCEN), path, value))
    assert e.value.errors == [(field, f'must be {what}, not a string, got "{value}" (write the number without quotes)')]


def test_a_quoted_count_in_a_file_is_refused_by_the_cli(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(REDTEAM_BASE.replace("seed = 1", 'seed = "1"'))
    assert 'seed = "1"' in (tmp_path / "s.toml").read_text()
    _one_error(*_cli(["validate", "s.toml"], tmp_path), "error: seed: must be an integer, not a string")


@pytest.mark.parametrize("case", ["loss_schedule", "shape", "links"])
def test_a_boolean_is_no_number_inside_lists_and_traffic(case: str) -> None:
    d = copy.deepcopy(SCEN)
    if case == "loss_schedule":
        d["topology"]["bottleneck"]["loss_schedule"] = [[0, True]]
        field = "topology.bottleneck.loss_schedule[0][1]"
    elif case == "shape":
        d["traffic"] = [{"kind": "transfers", "rate": "1Mbps", "rtt": "40ms", "shape": True}]
        field = "traffic[0].shape"
    else:
        d["topology"] = copy.deepcopy(PARKING)
        d["flows"][0]["links"] = [True]  # before: link 1
        field = "flows[0].links[0]"
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert [f for f, _ in e.value.errors] == [field] and "not a boolean" in e.value.errors[0][1], e.value.errors


def test_assigning_a_boolean_seed_is_refused() -> None:
    sc = Scenario.from_dict(SCEN)
    with pytest.raises(ScenarioError):
        sc.seed = True  # type: ignore[assignment]
    assert sc.seed == 1


def test_numbers_stay_numbers() -> None:
    # What was valid stays so: integers, an integral float where an integer belongs (pydantic checks it has no
    # fraction), NumPy scalars (values computed with NumPy), 0 and 1 as probabilities.
    import numpy as np

    d = copy.deepcopy(SCEN)
    d.update(seed=np.int64(7), transport={"delayed_ack": 2, "initial_cwnd": np.float32(2.5)})
    d["flows"][0]["count"] = 2.0
    d["topology"]["bottleneck"].update(loss=0, reorder=1, duplicate=np.float64(0.5))
    sc = Scenario.from_dict(d)
    assert (sc.seed, sc.flows[0].count, sc.transport.delayed_ack) == (7, 2, 2)
    assert type(sc.seed) is int and sc.transport.initial_cwnd == 2.5 and sc.topology.bottleneck.reorder == 1.0
    d = copy.deepcopy(SCEN)
    d["topology"] = copy.deepcopy(PARKING)
    d["flows"][0]["links"] = [0, 1]
    assert Scenario.from_dict(d).flows[0].links == [0, 1]


def test_seed_true_in_a_file_is_refused_by_the_cli(tmp_path: Path) -> None:
    # Before: `cclab validate` said ok and `cclab run` ran seed 1.
    (tmp_path / "s.toml").write_text(REDTEAM_BASE.replace("seed = 1", "seed = true"))
    for cmd in (["validate", "s.toml"], ["run", "s.toml", "--out", "o", "--no-plots", "-q"]):
        _one_error(*_cli(cmd, tmp_path), "error: seed: must be an integer, not a boolean")
    assert not (tmp_path / "o").exists()


SEARCH = ('scenario = "base.toml"\n[[adversary]]\nkind = "loss"\nloss = [0.0, 0.05]\n'
          '[objective]\nmetric = "flows[0].goodput_bps"\n[search]\nmethod = "random"\nevaluations = 2\nbatch = 2\n')


@pytest.mark.parametrize("key, start", [
    (LONG, 'error: scenario: "kkkk'),  # an unknown key: the scenario's own "unknown key" line
    (f"flows[0].{LONG}", 'error: scenario: flows[0]."kkkk'),
    (f"{LONG}[0].x", 'error: --set "kkkk'),  # a path that is not there: the key path's own message
    (f"{LONG}-", 'error: --set "kkkk'),  # no name at all
])
def test_a_long_set_key_is_quoted_cut(tmp_path: Path, key: str, start: str) -> None:
    # Before: the first two printed the 5,000 characters whole (a line of 5,031 characters), the third twice.
    (tmp_path / "base.toml").write_text(REDTEAM_BASE)
    (tmp_path / "s.toml").write_text(SEARCH)
    line = _one_error(*_cli(["search", "s.toml", "--out", "o", "-j", "1", "--no-figures", "--set", f"{key}=1"],
                            tmp_path), start)
    assert "characters)" in line, line[:300]
    assert not (tmp_path / "o" / "runs").exists()


def test_a_long_unknown_key_in_a_scenario_file_is_quoted_cut(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(REDTEAM_BASE.replace("seed = 1", f"seed = 1\n{LONG} = 1"))
    line = _one_error(*_cli(["validate", "s.toml"], tmp_path), 'error: "kkkk')
    assert line.endswith('… (5000 characters): unknown key'), line[:300]


def test_compare_names_a_fifo_summary_of_a_repeated_run(tmp_path: Path) -> None:
    # Before: rep-2 was left out without a word and rep-1 compared alone (exit 0); with every rep-<i> a FIFO the
    # folder was "not a run's folder".
    run(SCEN, tmp_path / "r" / "rep-1", progress=False, plots=False)
    rep2 = tmp_path / "r" / "rep-2"
    rep2.mkdir()
    os.mkfifo(rep2 / "summary.json")
    line = _one_error(*_cli(["compare", "r", "--out", "c"], tmp_path, timeout=30), "error: r/rep-2/summary.json")
    assert "a FIFO (named pipe)" in line, line
