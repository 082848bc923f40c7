"""cclab search: what a search leaves (best and top scenario files with their traces, top table, figures) and that
`cclab run` reproduces them to the digit; resumption after SIGKILL; the capacity-trace adversary; --confirm on the
real datapath (skipped with the reason where it cannot run)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cclab import net, search
from cclab.cli import cli
from cclab.search import confirm as sc

ROOT = Path(__file__).resolve().parents[1]
AVAILABLE, NET_REASON = net.check()

# A 6 s CUBIC flow on a 10 Mbit/s bottleneck whose capacity the adversary draws (two 3 s segments, 2-20 Mbit/s)
# with a random loss up to 2 %; 8 random candidates, ~0.1 s each.
CAPACITY = """
[base]
name = "capacity-tiny"
duration = "6s"
seed = 1
measure = ["1s", "6s"]
[base.topology]
kind = "dumbbell"
[base.topology.bottleneck]
rate = "10Mbps"
buffer = 40
[[base.flows]]
cc = "cubic"
rtt = "40ms"
[[adversary]]
kind = "capacity"
segments = 2
rate = ["2Mbps", "20Mbps"]
[[adversary]]
kind = "loss"
loss = [0.0, 0.02]
[objective]
metric = "flows[0].goodput_bps"
[search]
method = "random"
evaluations = 8
batch = 4
top = 3
"""


@pytest.fixture(scope="module")
def capacity(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    tmp = tmp_path_factory.mktemp("capacity")
    f = tmp / "s.toml"
    f.write_text(CAPACITY)
    out = tmp / "out"
    return f, out, search.run(f, out, workers=2)


def _cclab_run(scenario: Path, out: Path) -> dict:
    r = CliRunner().invoke(cli, ["run", str(scenario), "--out", str(out), "--no-plots", "-q"])
    assert r.exit_code == 0, r.output
    return json.loads((out / "summary.json").read_text())


def test_outputs_exist_and_every_top_scenario_reproduces_with_cclab_run(capacity: tuple[Path, Path, dict],
                                                                        tmp_path: Path) -> None:
    _, out, r = capacity
    for name in ("best.toml", "best.trace", "top.csv", "top.md", "convergence.png", "result.json",
                 "best/summary.json", "best/timeseries.parquet", "best/rate.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    evals = [json.loads(x) for x in (out / "random" / "evaluations.jsonl").open()]
    assert len(evals) == 8
    # `cclab run` on each file (its trace beside it, named relative to it) gives the candidate's objective to the
    # digit: the same opportunities, scenario and seed in a deterministic simulator.
    for i, row in enumerate(r["top"].to_dict("records"), 1):
        f = out / "top" / f"{i}.toml"
        assert (out / "top" / f"{i}.trace").is_file()
        got = _cclab_run(f, tmp_path / f"top{i}")["flows"][0]["goodput_bps"]
        assert got == row["objective"], (i, got, row["objective"])
    best = _cclab_run(out / "best.toml", tmp_path / "best")["flows"][0]["goodput_bps"]
    assert best == r["best"]["objective"] == r["top"]["objective"].iloc[0]
    # The table has one column per capacity segment, in SI units.
    assert {"adversary[0].rate[0]", "adversary[0].rate[1]", "adversary[1].loss"} <= set(r["top"].columns)


def test_capacity_trace_has_the_candidates_rates(capacity: tuple[Path, Path, dict]) -> None:
    _, out, r = capacity
    from cclab import traces

    v = r["best"]["values"]
    tr = traces.load(str(out / "best.trace"))
    # Each 3 s segment's opportunities carry its rate: rounding to whole 1500-byte opportunities moves a rate by
    # at most one opportunity per segment (12 kbit / 3 s = 4 kbit/s), and the closing line adds one more.
    for k, (t0, t1) in enumerate([(0.0, 3.0), (3.0, 6.0)]):
        assert abs(tr.capacity_bps(t0, t1) - v[f"adversary[0].rate[{k}]"]) <= 2 * 12000 / 3, k


def test_search_resumes_after_sigkill_with_the_same_evaluations(capacity: tuple[Path, Path, dict],
                                                                tmp_path: Path) -> None:
    f, done, _ = capacity
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "cclab.cli", "search", str(f), "--out", str(out), "-j", "1", "--no-figures"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT / "python")))
    deadline = time.monotonic() + 60
    # Killed once some candidates' runs have landed but before the 9 runs (8 + the base) are all done.
    while time.monotonic() < deadline:
        runs = out / "runs"
        n = len([d for d in runs.iterdir() if d.is_dir() and not d.name.endswith(".partial")]) if runs.exists() else 0
        if n >= 3 or p.poll() is not None:
            break
        time.sleep(0.02)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    before = {d.name for d in (out / "runs").iterdir() if d.is_dir() and not d.name.endswith(".partial")}
    assert 3 <= len(before) < 9, f"killed after {len(before)} runs: the test wants a search stopped half-way"
    search.run(f, out, workers=2, figures=False)
    # The resumed search reused every finished run (the same folders, not remade) and ends where an
    # uninterrupted one does: the same evaluations, value for value.
    after = {d.name: d.stat().st_ino for d in (out / "runs").iterdir() if d.is_dir()}
    assert before <= set(after)
    # (Run ids aside: a capacity candidate's scenario names its trace file by its path in OUT/traces/, so the
    # same candidate has another run id in another folder.)
    same = [{k: v for k, v in json.loads(x).items() if k != "runs"} for x in (out / "random" / "evaluations.jsonl").open()]
    want = [{k: v for k, v in json.loads(x).items() if k != "runs"} for x in (done / "random" / "evaluations.jsonl").open()]
    assert same == want


def test_invalid_candidate_scores_unmeasured_and_the_search_goes_on(tmp_path: Path) -> None:
    # Jitter above the link's 1 ms delay is refused by the scenario rules: such candidates are not run.
    f = tmp_path / "s.toml"
    f.write_text(CAPACITY.replace("kind = \"loss\"\nloss = [0.0, 0.02]", "kind = \"jitter\"\njitter = [\"0ms\", \"4ms\"]")
                 .replace("buffer = 40", "buffer = 40\ndelay = \"1ms\""))
    r = search.run(f, tmp_path / "out", workers=2, figures=False)
    recs = r["evaluations"]["random"]
    bad = [x for x in recs if x.get("invalid")]
    assert bad and all(x["objective"] is None and "jitter" in x["invalid"] for x in bad)
    assert all(x["values"]["adversary[1].jitter"] > 0.001 for x in bad)
    assert r["best"]["objective"] is not None and r["best"]["values"]["adversary[1].jitter"] <= 0.001


def test_kernel_mode_maps_our_algorithms_to_linux() -> None:
    assert sc.kernel_cc("newreno") == "kernel:reno" and sc.kernel_cc("cubic") == "kernel:cubic"
    assert sc.kernel_cc("bbr") == "kernel:bbr" and sc.kernel_cc("vegas") == "bpf:vegas"
    d = sc.for_mode({"flows": [{"cc": "cubic"}, {"cc": "fast"}]}, "kernel")
    assert [x["cc"] for x in d["flows"]] == ["kernel:cubic", "bpf:fast"]


def test_confirm_reports_cross_traffic_candidates_as_unsupported_with_the_datapaths_reason(tmp_path: Path) -> None:
    base = search.load(ROOT / "searches" / "shrew.toml")
    scen = search.scenario_of(base, search.decode(base, [0.5, 0.5, 0.5]))
    why = sc.unsupported(scen)
    # The shrew attacker is [[traffic]] cbr sources: whatever the real datapath says of them is what the
    # confirmation reports (today it refuses cross traffic; once it runs it, there is nothing to report).
    if why is not None:
        assert "traffic[0]" in why
    assert sc.unsupported(base.base) is None


@pytest.mark.skipif(not AVAILABLE, reason=f"real datapath unavailable: {NET_REASON}")
def test_confirm_kernel_runs_the_top_candidates_on_linux_tcp(tmp_path: Path) -> None:
    # A 3 s CUBIC flow with random loss up to 2 %: 4 candidates; the best one and the base are run twice each in
    # the simulator and with Linux's CUBIC through the emulator (4 real runs of 3 s).
    f = tmp_path / "s.toml"
    f.write_text(CAPACITY.split("[[adversary]]")[0].replace("6s", "3s") + "[[adversary]]\nkind = \"loss\"\n"
                 "loss = [0.0, 0.02]\n[objective]\nmetric = \"flows[0].goodput_bps\"\n[search]\nmethod = \"random\"\n"
                 "evaluations = 4\nbatch = 4\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["search", str(f), "--out", str(out), "-j", "2", "--no-figures", "--confirm", "kernel",
                                 "--confirm-top", "1", "--confirm-repeats", "2"])
    assert r.exit_code == 0, r.output
    c = json.loads((out / "confirm-kernel.json").read_text())
    assert c["seeds"] == [1, 2] and len(c["candidates"]) == 1
    for row in (c["base"], c["candidates"][0]):
        assert row["real"] is not None and len(row["real"]["values"]) == 2 and row["real"]["mean"] > 0
        assert len(row["sim"]["values"]) == 2
    # Each real run is a whole run folder on the real datapath with Linux's CUBIC.
    spec = json.loads((out / "confirm-kernel" / "candidate-1" / "1" / "spec.json").read_text())
    assert spec["flows"][0]["cc"] == "kernel:cubic"
    assert "| 1 |" in (out / "confirm-kernel.md").read_text()
    assert c["candidates"][0]["holds"] in (True, False)


@pytest.mark.parametrize("edit, field", [
    (("segments = 2", "segments = 0"), "adversary[0].segments"),
    (("segments = 2", "segments = \"two\""), "adversary[0].segments"),
    (("rate = [\"2Mbps\", \"20Mbps\"]", "rate = [\"0Mbps\", \"20Mbps\"]"), "adversary[0].rate"),
])
def test_bad_capacity_adversary_exits_2_naming_the_field(tmp_path: Path, edit: tuple[str, str],
                                                         field: str) -> None:
    assert edit[0] in CAPACITY
    f = tmp_path / "s.toml"
    f.write_text(CAPACITY.replace(*edit))
    r = CliRunner().invoke(cli, ["search", str(f), "--out", str(tmp_path / "o"), "-j", "1"])
    assert r.exit_code == 2 and f"error: {field}" in r.output and "Traceback" not in r.output, r.output


def test_confirm_without_the_real_datapath_exits_2_with_the_reason(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # A cclab-net that is not an executable makes the real datapath unavailable wherever the test runs.
    monkeypatch.setenv("CCLAB_NET_BIN", str(tmp_path / "no-such-cclab-net"))
    f = tmp_path / "s.toml"
    f.write_text(CAPACITY.replace("evaluations = 8", "evaluations = 2").replace("batch = 4", "batch = 2"))
    r = CliRunner().invoke(cli, ["search", str(f), "--out", str(tmp_path / "o"), "-j", "1", "--no-figures",
                                 "--confirm", "real"])
    assert r.exit_code == 2 and "--confirm real: real datapath unavailable" in r.output, r.output
    assert (tmp_path / "o" / "best.toml").is_file()  # the search itself is done and kept
