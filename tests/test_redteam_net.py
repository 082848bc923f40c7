"""Red team, round 3: `cclab net run --repeat N` against the error contract (docs/scenario.md, "The error
contract"): what cannot be written is refused before the first real run takes its time. Before, a file named
``rep-2`` in OUT was found after run 1 (exit 2 naming "out", the real run's minutes spent), and a folder named
``table.csv`` after all N runs (exit 1 writing the aggregate). Loopback mode (no root): refused before any run."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sweepfile import REDTEAM_BASE

from cclab import net

BASE = REDTEAM_BASE


@pytest.mark.skipif(net.find_binary() is None, reason="the cclab-net binary is not built (make build)")
@pytest.mark.parametrize("blocker", ["rep-2", "table.csv"])
def test_repeat_refuses_an_unwritable_output_before_the_first_run(tmp_path: Path, blocker: str) -> None:
    (tmp_path / "s.toml").write_text(BASE)
    out = tmp_path / "o"
    out.mkdir()
    if blocker == "rep-2":
        (out / blocker).write_text("x")
    else:
        (out / blocker).mkdir()
    r = subprocess.run([sys.executable, "-c", "from cclab.cli import main; main()", "net", "run", "s.toml",
                        "--loopback", "--repeat", "2", "--out", "o", "-q", "--no-plots"], cwd=tmp_path,
                       capture_output=True, timeout=60)
    err = r.stderr.decode()
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --out:"), err[-500:]
    assert not (out / "rep-1" / "summary.json").exists()  # no real run was made
