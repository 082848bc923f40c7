import copy
import subprocess
import sys

import pytest

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
