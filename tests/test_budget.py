"""The memory budget (issue 28 §2.1, docs/scenario.md "Limits"): the estimate covers transfers that pile
up and a flooding sender's packet trace, and a run the estimate misjudges stops at its budget with exit 2
and a message, keeping what it measured until then, its peak memory near the budget."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import cclab
from cclab.scenario import ScenarioError

MIB = 2**20


def _scenario(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / f"{name}.toml"
    p.write_text(f'name = "{name}"\n' + text)
    return p


def _transfers(rate: str, bottleneck: str, mean_size: str, duration: str, loss: float = 0.0,
               max_memory: str | None = None) -> str:
    limits = f'[limits]\nmax_memory = "{max_memory}"\n' if max_memory else ""
    return f"""duration = "{duration}"
{limits}[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "{bottleneck}"
buffer = 100
loss = {loss}
[[flows]]
cc = "newreno"
rtt = "50ms"
[[traffic]]
kind = "transfers"
rate = "{rate}"
mean_size = "{mean_size}"
rtt = "50ms"
"""


def _maxnet_trace(duration: str, max_memory: str) -> str:
    # MaxNet's source without a MaxNet router: it paces its 65,535-packet window every RTT into a
    # 10 Mbit/s link and loses ~99.8 % of it; every drop is a trace record.
    return f"""duration = "{duration}"
trace_packets = true
[limits]
max_memory = "{max_memory}"
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
buffer = "BDP"
[[flows]]
cc = "maxnet"
rtt = "50ms"
"""


def _cli_with_peak(args: list[str]) -> tuple[subprocess.CompletedProcess, int]:
    """Runs ``cclab ARGS`` in a child of a fresh interpreter, which reports that child's peak RSS
    (bytes): RUSAGE_CHILDREN is the largest of the children waited for, so it must be the only one."""
    code = ("import resource, subprocess, sys, json\n"
            f"r = subprocess.run([sys.executable, '-m', 'cclab.cli', *{args!r}], capture_output=True, text=True)\n"
            "print(json.dumps([r.returncode, r.stdout, r.stderr,"
            " resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    rc, stdout, stderr, peak = json.loads(out.stdout.strip().splitlines()[-1])
    return subprocess.CompletedProcess(args, rc, stdout, stderr), peak


@pytest.mark.parametrize("name, text, term", [
    # The red team's runs: 1 Gbit/s of transfers offered to 1 Mbit/s for 160 s (peaked at 4.69 GB,
    # estimated 16 MiB), and MaxNet with trace_packets (peaked at 1.75 GB, estimated 296 MiB).
    ("flood", _transfers("1Gbps", "1Mbps", "100KB", "160s", max_memory="1GiB"), "running transfers"),
    ("maxnet", _maxnet_trace("60s", "1GiB"), "packet trace"),
])
def test_the_estimate_covers_what_grows(tmp_path: Path, name: str, text: str, term: str) -> None:
    r = subprocess.run([sys.executable, "-m", "cclab.cli", "validate", str(_scenario(tmp_path, name, text))],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "limits.max_memory" in r.stderr and term in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_run_over_its_budget_stops_and_keeps_its_results(tmp_path: Path) -> None:
    # 200 Mbit/s of 10 kB transfers on a 1 Gbit/s link that loses 90 % of its packets: the estimate sees
    # the link carry them (it does not model random loss) but they stall in RTO backoff and pile up,
    # ~2,500 a second (under a budget it does not reach: 60 s, 138,597 pending, 468 MB peak, exit 0).
    budget = 96 * MIB
    sc = _scenario(tmp_path, "lossy", _transfers("200Mbps", "1Gbps", "10KB", "60s", loss=0.9, max_memory="96MiB"))
    est = cclab.Scenario.load(sc).estimate()
    assert est["memory"] < budget
    out = tmp_path / "out"
    r, peak = _cli_with_peak(["run", str(sc), "--out", str(out), "-q", "--no-plots"])
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: limits.max_memory: "), r.stderr
    assert "running transfers" in r.stderr and str(out) in r.stderr
    summary = json.loads((out / "summary.json").read_text())
    stopped = summary["stopped"]
    assert stopped["field"] == "limits.max_memory"
    assert 0 < stopped["at_s"] < 60
    # Counted memory is over the budget by at most one check's growth (1,024 transfers of 6 kB).
    assert budget < stopped["memory_bytes"] < budget + 8 * MIB
    assert summary["transfers"][0]["unfinished"] == stopped["memory"]["transfers_running"]
    assert (out / "timeseries.parquet").exists()
    # The process's peak: the budget plus the interpreter with NumPy, pandas and Arrow loaded, which the
    # budget does not count (118 MB measured for `import cclab, pandas, pyarrow`), with 30 MB to spare.
    assert peak < budget + 150e6, peak


def test_cclab_run_raises_with_the_partial_result(tmp_path: Path) -> None:
    sc = _scenario(tmp_path, "lossy", _transfers("200Mbps", "1Gbps", "10KB", "30s", loss=0.9, max_memory="48MiB"))
    with pytest.raises(ScenarioError) as e:
        cclab.run(sc, progress=False)
    assert e.value.errors[0][0] == "limits.max_memory"
    res = e.value.result  # type: ignore[attr-defined]
    at = res.summary["stopped"]["at_s"]
    assert 0 < at < 30
    assert res.flows["t"].max() <= at + 1e-9
