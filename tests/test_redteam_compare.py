"""Red team, round 3: `cclab compare` and a sweep's `[[metrics]]` against the error contract (docs/scenario.md, "The
error contract"). Each test failed before its fix: a summary.json whose flows do not match its run (an internal
KeyError drawing the figures), a run folder whose name is not UTF-8 (UnicodeEncodeError writing the table), a
--label of 100,000 characters (matplotlib laid it out for minutes), a folder where the comparison writes a file
(exit 1 after the work), and metric messages quoting 100,000 characters or Python reprs."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cclab import derived
from cclab.runner import run
from cclab.scenario import ScenarioError

SCEN = {"name": "rt", "duration": "1s", "seed": 1, "sample_interval": "100ms",
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps", "buffer": "BDP"}},
        "flows": [{"cc": "newreno", "rtt": "40ms"}]}
CLI = [sys.executable, "-c", "from cclab.cli import main; main()"]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cmp") / "r1"
    run(SCEN, d, progress=False, plots=False)
    return d


def _copy(made: Path, tmp: Path, name: str = "r1") -> Path:
    d = tmp / name
    shutil.copytree(made, d)
    return d


def _compare(tmp: Path, *args: str, timeout: float = 60) -> tuple[int, str]:
    r = subprocess.run([*CLI, "compare", *args], cwd=tmp, capture_output=True, timeout=timeout)
    return r.returncode, r.stderr.decode()


def _one_error(rc: int, err: str, field: str) -> None:
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith(f"error: {field}"), err[-500:]
    assert "Traceback" not in err and "internal error" not in err and len(lines[0]) < 400, err[-500:]


def test_a_summary_whose_flows_do_not_match_its_run_names_the_file(made: Path, tmp_path: Path) -> None:
    d = _copy(made, tmp_path)
    s = json.loads((d / "summary.json").read_text())
    (d / "summary.json").write_text(json.dumps(dict(s, flows=[])))
    rc, err = _compare(tmp_path, "r1", "--out", "c")
    _one_error(rc, err, "r1/summary.json")


def test_a_run_folder_whose_name_is_not_utf8(made: Path, tmp_path: Path) -> None:
    odd = os.fsencode(tmp_path) + b"/r\xff"
    shutil.copytree(made, os.fsdecode(odd))
    rc, err = _compare(tmp_path, os.fsdecode(b"r\xff"), "--out", "c")
    assert rc == 0, err[-500:]
    assert "r\\xff" in (tmp_path / "c" / "table.csv").read_text()


@pytest.mark.parametrize("label", ["x" * 100_000, "a\nb", "", "a\u2028b"])
def test_a_label_that_is_not_one_short_line_is_refused(made: Path, tmp_path: Path, label: str) -> None:
    _copy(made, tmp_path)
    rc, err = _compare(tmp_path, "r1", "-l", label, "--out", "c", timeout=30)
    _one_error(rc, err, "--label")


def test_a_folder_where_the_comparison_writes_a_file_is_refused_first(made: Path, tmp_path: Path) -> None:
    _copy(made, tmp_path)
    (tmp_path / "c" / "table.csv").mkdir(parents=True)
    rc, err = _compare(tmp_path, "r1", "--out", "c")
    _one_error(rc, err, "--out")


@pytest.mark.parametrize("metric, field", [
    ({"name": "n" * 100_000, "expr": "total", "of": "forward.goodput"}, "metrics[0].name"),
    ({"name": "m", "expr": "e" * 100_000, "of": "forward.goodput"}, "metrics[0].expr"),
    ({"name": "m", "expr": "total", "of": "f" * 100_000 + ".goodput"}, "metrics[0].of"),
    ({"name": {"a": 1}, "expr": "total", "of": "forward.goodput"}, "metrics[0].name"),
    ({"name": "m", "expr": {"a": 1}, "of": "forward.goodput"}, "metrics[0].expr"),
])
def test_metric_messages_are_short_and_show_values_as_written(metric: dict, field: str) -> None:
    with pytest.raises(ScenarioError) as e:
        derived.parse_metrics([metric])
    (f, msg), = e.value.errors
    assert f == field and len(msg) < 400 and "{'a'" not in msg, msg[:300]


def test_ten_thousand_metrics_are_refused_at_once() -> None:
    # Before: accepted; parsing alone took 10 s (each name compared with every earlier one) and the sweep over
    # 120 s. 2 s: the refusal reads only the list's length, with room for a loaded machine.
    import time

    raw = [{"name": f"m{i}", "expr": "total", "of": "forward.goodput"} for i in range(10_000)]
    t = time.monotonic()
    with pytest.raises(ScenarioError) as e:
        derived.parse_metrics(raw)
    assert e.value.errors[0][0] == "metrics" and "at most 200" in e.value.errors[0][1]
    assert time.monotonic() - t < 2
