"""Red team, round 3: `cclab search` against the error contract (docs/scenario.md, "The error contract"). Each
test failed before its fix: an adversary's `key` or `start` that only the candidates' runs found (an internal
error), a capacity bound that made every candidate's trace billions of lines (a hang), seeds beyond 2^63 (the
base run failed, exit 1), a search file whose name is not UTF-8 (lost after every run), a damaged finished run
(failed on every rerun), and messages quoting 100,000 characters. Runs are 1 s of one flow at 10 Mbit/s."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sweepfile import REDTEAM_BASE

from cclab import search
from cclab.scenario import ScenarioError

BASE = REDTEAM_BASE
LOSS = '[[adversary]]\nkind = "loss"\nloss = [0.0, 0.05]\n'
OBJ = '[objective]\nmetric = "flows[0].goodput_bps"\n'
RANDOM = '[search]\nmethod = "random"\nevaluations = 2\nbatch = 2\n'
CLI = [sys.executable, "-c", "from cclab.cli import main; main()"]


def _file(tmp: Path, adv: str = LOSS, obj: str = OBJ, srch: str = RANDOM, base: str = BASE,
          name: str = "s.toml") -> Path:
    (tmp / "base.toml").write_text(base)
    p = tmp / name
    p.write_text(f'scenario = "{tmp / "base.toml"}"\n' + adv + obj + srch)
    return p


def _refused(tmp: Path, field: str, **kw: str) -> str:
    with pytest.raises(ScenarioError) as e:
        search.load(_file(tmp, **kw))
    assert [f for f, _ in e.value.errors] == [field], e.value.errors
    return e.value.errors[0][1]


@pytest.mark.parametrize("kind, key", [
    ("delay", "a..b"), ("delay", ""), ("delay", "flows[99].rtt"), ("delay", "topology.nothing.delay"),
    ("loss", "topology.links[0].loss"), ("capacity", "topology.nothing"), ("capacity", "flows[0]"),
])
def test_an_adversary_key_that_is_no_key_is_refused_when_read(tmp_path: Path, kind: str, key: str) -> None:
    # Before: a KeyError from every candidate ("internal error", exit 1), or every candidate refused and exit 0.
    bounds = {"delay": '["0s", "10ms"]', "loss": "[0.0, 0.05]", "capacity": '["1Mbps", "5Mbps"]'}[kind]
    param = "rate" if kind == "capacity" else kind
    adv = f'[[adversary]]\nkind = "{kind}"\n{param} = {bounds}\nkey = "{key}"\n'
    _refused(tmp_path, "adversary[0].key", adv=adv)


@pytest.mark.parametrize("start", ['"soon"', '"nans"', "{a = 1}", '"-1s"'])
def test_a_bursts_start_that_is_no_time_is_refused_when_read(tmp_path: Path, start: str) -> None:
    adv = ('[[adversary]]\nkind = "bursts"\nperiod = ["0.2s", "1s"]\nburst = ["20ms", "100ms"]\n'
           f'rate = ["1Mbps", "5Mbps"]\nstart = {start}\n')
    _refused(tmp_path, "adversary[0].start", adv=adv)


@pytest.mark.parametrize("hi", ["100Gbps", "10Tbps", "1e300bps"])
def test_a_capacity_bound_that_makes_a_huge_trace_is_refused(tmp_path: Path, hi: str) -> None:
    # Before: each candidate's trace was written line by line in Python (8 billion lines at 100 Gbit/s): a hang.
    t = time.monotonic()
    msg = _refused(tmp_path, "adversary[0].rate", adv=f'[[adversary]]\nkind = "capacity"\nrate = ["1Mbps", "{hi}"]\n')
    assert "at most 1,000,000" in msg and time.monotonic() - t < 5  # 5 s: a loaded 2-core box reads a file in ms


def test_seeds_beyond_the_largest_seed_are_refused(tmp_path: Path) -> None:
    # Before: the base scenario's run with seed 2^63 failed after the search started (exit 1).
    base = BASE.replace("seed = 1", "seed = 9223372036854775806")
    _refused(tmp_path, "search.seeds", base=base, srch=RANDOM + "seeds = 3\n")


def test_a_metric_with_a_newline_is_refused(tmp_path: Path) -> None:
    # "jain\n/ jain" was measured (the parts are stripped) and then written into best.toml's comment as a new line.
    _refused(tmp_path, "objective.metric", obj='[objective]\nmetric = "jain\\n/ jain"\n')


def _cli(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, timeout=timeout)


def test_messages_about_a_long_metric_are_cut(tmp_path: Path) -> None:
    f = _file(tmp_path, obj='[objective]\nmetric = "' + "x" * 100_000 + '"\n')
    r = _cli(["search", str(f), "--out", "o", "-j", "1", "--no-figures"], tmp_path)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.startswith("error: objective.metric") and len(err) < 500, err[:300]


def test_a_search_file_whose_name_is_not_utf8(tmp_path: Path) -> None:
    # Before: every run was made, then writing best.toml's comment (the command line) raised UnicodeEncodeError.
    f = _file(tmp_path)
    odd = os.fsencode(tmp_path) + b"/s\xff.toml"
    os.rename(f, odd)
    r = _cli(["search", os.fsdecode(odd), "--out", "o", "-j", "1", "--no-figures"], tmp_path)
    assert r.returncode == 0, r.stderr.decode()[-500:]
    assert "s\\xff.toml" in (tmp_path / "o" / "best.toml").read_text()


@pytest.mark.parametrize("damage", ["truncated", "list", "fifo"])
def test_a_damaged_finished_run_is_redone(tmp_path: Path, damage: str) -> None:
    # Before: the resumed search read the damaged summary.json and exited 2 naming it, on every rerun.
    f = _file(tmp_path)
    out = tmp_path / "o"
    first = search.run(f, out, workers=1, figures=False)
    rid = first["evaluations"]["random"][0]["runs"][0]
    s = out / "runs" / rid / "summary.json"
    text = s.read_text()
    s.unlink()
    if damage == "truncated":
        s.write_text(text[: len(text) // 2])
    elif damage == "list":
        s.write_text("[]")
    else:
        os.mkfifo(s)
    again = search.run(f, out, workers=1, figures=False)
    assert [r["objective"] for r in again["evaluations"]["random"]] == \
        [r["objective"] for r in first["evaluations"]["random"]]
    assert json.loads(s.read_text())["flows"] == json.loads(text)["flows"]  # remade (meta and wall time differ)


def test_sigkill_mid_search_then_resume_loses_and_repeats_nothing(tmp_path: Path) -> None:
    # 8 candidates of random search, 2 per batch, one worker; SIGKILLed once 3 runs are finished. The resumed search
    # must keep every finished run's files untouched (none repeated) and end with the evaluations of an uninterrupted
    # search (none lost).
    f = _file(tmp_path, srch='[search]\nmethod = "random"\nevaluations = 8\nbatch = 2\n')
    out = tmp_path / "o"
    p = subprocess.Popen([*CLI, "search", str(f), "--out", str(out), "-j", "1", "--no-figures"], cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    runs = out / "runs"

    def done() -> list[Path]:
        return [d for d in runs.iterdir() if d.is_dir() and not d.name.endswith(".partial")] if runs.exists() else []

    deadline = time.monotonic() + 60
    while len(done()) < 3 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    kept = {d.name: (d / "summary.json").stat().st_ino for d in done()}
    assert len(kept) >= 3
    resumed = search.run(f, out, workers=1, figures=False)
    assert {d: (runs / d / "summary.json").stat().st_ino for d in kept} == kept  # no finished run made again
    fresh = search.run(f, tmp_path / "fresh", workers=1, figures=False)
    assert [r["objective"] for r in resumed["evaluations"]["random"]] == \
        [r["objective"] for r in fresh["evaluations"]["random"]]
    assert len(resumed["evaluations"]["random"]) == 8


def test_an_adversary_key_that_takes_neither_bound_is_refused(tmp_path: Path) -> None:
    # Before: every candidate was refused (`name` is no time), the search printed "best: unmeasured" and exited 0.
    _refused(tmp_path, "adversary[0].key", adv='[[adversary]]\nkind = "delay"\ndelay = ["0s", "10ms"]\nkey = "name"\n')


def test_a_bound_refused_only_at_one_end_is_searched(tmp_path: Path) -> None:
    # The low bound of 0 loss is a valid scenario value; a delay bound up to 1e6 s makes some candidates invalid
    # (their RTT exceeds the flow's), which the search records as unmeasured rather than refusing the file.
    search.load(_file(tmp_path, adv='[[adversary]]\nkind = "delay"\ndelay = ["0s", "1e6s"]\n'))


@pytest.mark.parametrize("blocker", ["fifo top.csv", "fifo search.json", "fifo result.json", "fifo top.md",
                                     "dir best.toml", "dir convergence.png", "dir random/evaluations.jsonl.tmp",
                                     "file top"])
def test_an_output_that_is_not_a_file_is_refused_before_any_run(tmp_path: Path, blocker: str) -> None:
    # Before: a FIFO where the search writes a file blocked it for ever (after every run); a folder failed the
    # writing after every run (exit 1).
    f = _file(tmp_path)
    what, name = blocker.split()
    target = tmp_path / "o" / name
    target.parent.mkdir(parents=True)
    {"fifo": os.mkfifo, "dir": Path.mkdir, "file": Path.touch}[what](target)  # type: ignore[operator]
    r = _cli(["search", str(f), "--out", "o", "-j", "1", "--no-figures"], tmp_path, timeout=30)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.startswith("error: --out:") and len(err.splitlines()) == 1, err[-400:]
    assert not (tmp_path / "o" / "runs").exists()


def test_a_missing_trace_with_a_long_path_is_quoted_cut() -> None:
    # Found by this round's `make fuzz-scenarios` (seed 1, case 47546): a 5,000-character trace path that cannot be
    # read was quoted whole, a message of 5,129 characters (a capacity adversary's trace goes through this too).
    from cclab import traces

    with pytest.raises(ValueError) as e:
        traces.load("x" * 5000)
    assert len(str(e.value)) < 400 and "(5" in str(e.value), str(e.value)[:200]
