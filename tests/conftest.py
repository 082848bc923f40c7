import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The tests' `cclab` commands run in their own processes, not in a warm server a developer may have started
# (`cclab daemon start`): tests/test_daemon.py starts its own, in a folder of its own.
os.environ["CCLAB_DAEMON"] = "0"

# Tests that time real things: real runs through the emulator and kernel TCP, whose comparisons measure the
# machine's disturbance and retry or skip under it (tests/test_net.py, `quiet`), and tests that kill
# processes or clusters at moments they wait for. `make test` runs every other test on two pytest
# workers (pytest-xdist, one test file per worker at a time) and these after them, alone
# (`-m realtime`): a simulation test on the other core would be the very disturbance they measure.
REALTIME_FILES = {
    "test_net.py", "test_bpf.py", "test_net_topology.py", "test_net_hostile.py", "test_redteam_net.py",
    "test_reproduce_workers.py", "test_cluster.py", "test_redteam_cluster.py",
}
REALTIME_TESTS = {
    "test_compare.py::test_repeat_real_runs",
    "test_search_outputs.py::test_confirm_kernel_runs_the_top_candidates_on_linux_tcp",
    "test_daemon.py::test_a_real_run_goes_through_the_server_too",
}


def pytest_collection_modifyitems(config, items):
    seen, files = set(), set()
    for item in items:
        name = Path(str(item.fspath)).name
        files.add(name)
        key = f"{name}::{item.originalname}"
        if name in REALTIME_FILES or key in REALTIME_TESTS:
            item.add_marker(pytest.mark.realtime)
            seen.add(key)
    # A renamed test would silently lose its mark and run beside the simulation tests.
    lost = {t for t in REALTIME_TESTS if t.split("::")[0] in files} - seen
    if lost and not config.getoption("keyword") and not any("::" in a for a in config.args):
        raise pytest.UsageError(f"tests/conftest.py REALTIME_TESTS names tests that do not exist: {sorted(lost)}")

BASE = {
    "name": "t",
    "duration": "3s",
    "seed": 1,
    "topology": {"kind": "dumbbell", "bottleneck": {"rate": "20Mbps", "buffer": "BDP", "queue": "droptail"}},
    "flows": [{"cc": "newreno", "rtt": "40ms"}],
}


@pytest.fixture
def base():
    return copy.deepcopy(BASE)


@pytest.fixture
def cli_refuses(tmp_path):
    """Runs `cclab run` on a one-flow dumbbell whose `[topology.bottleneck]` table holds `bottleneck`
    (TOML lines) and checks the error contract: exit 2, a message containing `words`, no traceback,
    nothing written. Returns stderr."""
    def check(bottleneck: str, words: str) -> str:
        toml = tmp_path / "bad.toml"
        toml.write_text(f'name = "bad"\nduration = "1s"\n[topology]\nkind = "dumbbell"\n[topology.bottleneck]\n'
                        f'{bottleneck}[[flows]]\ncc = "newreno"\nrtt = "50ms"\n')
        out = tmp_path / "out"
        r = subprocess.run([sys.executable, "-m", "cclab.cli", "run", str(toml), "--out", str(out), "--no-plots"],
                           capture_output=True, text=True)
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert not out.exists()
        return r.stderr
    return check
