"""Red team, round 3: the Dask path of sweeps and searches against the error contract (docs/scenario.md, "The error
contract"). Failed before: `--scheduler ""` silently ran on local workers; a tls:// or ucx:// address without
their setup was "internal error: TypeError" (exit 1); a 5,000-character address made a 5 kB error line (and one
holding a newline that reached a connection attempt, two error lines). Holding before and after: " " and a
newline before the port; a sweep on a cluster whose driver is SIGKILLed mid-way and rerun loses no finished run
and makes none twice (test_sigkill_...)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sweepfile import REDTEAM_BASE

CLI = [sys.executable, "-c", "from cclab.cli import main; main()"]
BASE = REDTEAM_BASE
SEARCH = """scenario = "base.toml"
[[adversary]]
kind = "loss"
loss = [0.0, 0.05]
[objective]
metric = "flows[0].goodput_bps"
[search]
method = "random"
evaluations = 2
"""


def _files(tmp: Path, seeds: int = 1) -> None:
    (tmp / "base.toml").write_text(BASE)
    (tmp / "sw.toml").write_text(f'scenario = "base.toml"\nseeds = {seeds}\n[grid]\n"flows[0].rtt" = ["40ms", "60ms"]\n')
    (tmp / "s.toml").write_text(SEARCH)


@pytest.mark.parametrize("command", ["sweep", "search"])
@pytest.mark.parametrize("address", ["", " ", "tls://127.0.0.1:1", "ucx://127.0.0.1:1", "tcp://a\nb:1:x",
                                     "tcp://" + "a" * 5000 + ":1:x"])
def test_a_scheduler_that_is_no_address_is_one_line_exit_2(tmp_path: Path, command: str, address: str) -> None:
    # (":x" makes the port unparsable, so no case waits for Dask's 30 s connection timeout)
    pytest.importorskip("dask.distributed")
    _files(tmp_path)
    f = "sw.toml" if command == "sweep" else "s.toml"
    r = subprocess.run([*CLI, command, f, "--out", "o", "--scheduler", address], cwd=tmp_path, capture_output=True,
                       timeout=60)
    err = r.stderr.decode()
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --scheduler:"), err[-600:]
    assert "internal error" not in err and len(lines[0]) < 600, err[-600:]
    assert not (tmp_path / "o" / "runs").exists() or not any((tmp_path / "o" / "runs").iterdir())


def test_sigkill_of_the_driver_mid_sweep_on_a_cluster_then_resume(tmp_path: Path) -> None:
    dd = pytest.importorskip("dask.distributed")
    _files(tmp_path, seeds=4)  # 8 runs of ~0.2 s
    with dd.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        p = subprocess.Popen([*CLI, "sweep", "sw.toml", "--out", "o", "--scheduler", cl.scheduler_address],
                             cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        runs = tmp_path / "o" / "runs"

        def done() -> list[Path]:
            return [d for d in runs.glob("*") if d.is_dir() and not d.name.endswith(".partial")]

        deadline = time.monotonic() + 90
        while len(done()) < 2 and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        kept = {d.name: (d / "summary.json").stat().st_ino for d in done()}
        assert 2 <= len(kept)
        r = subprocess.run([*CLI, "sweep", "sw.toml", "--out", "o", "--scheduler", cl.scheduler_address],
                           cwd=tmp_path, capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode()[-500:]
    assert {d: (runs / d / "summary.json").stat().st_ino for d in kept} == kept  # none made twice
    assert len(done()) == 8  # none lost


def test_reproduce_refuses_an_empty_scheduler(tmp_path: Path) -> None:
    # Before: `cclab reproduce L1 --scheduler ""` ran the experiment on local workers without a word.
    r = subprocess.run([*CLI, "reproduce", "L1", "--quick", "--out", "o", "--scheduler", ""], cwd=tmp_path,
                       capture_output=True, timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.startswith("error: --scheduler: is empty"), err[-400:]
    assert not (tmp_path / "o").exists()
