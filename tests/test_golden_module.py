"""The module users run gives the golden results, bit for bit.

crates/cclab-sim/tests/golden.rs holds the simulator to recorded digests of 64 runs, but it runs in a test
binary built with the `release` profile; `cclab._native` is built with the `dist` profile (LTO) and, by
`make build`, with profile-guided optimisation (tools/pgo.py). Neither may change what the code computes:
this test runs the same frozen specs through the installed module and asks for the same digests. A
compiler flag that let floating point be reassociated, or a build of other sources, would fail it.
"""
from pathlib import Path

import pytest

from cclab import _native

GOLDEN = Path(__file__).parents[1] / "crates" / "cclab-sim" / "tests" / "golden"
RECORDED = dict(line.split() for line in (GOLDEN / "digests.txt").read_text().splitlines() if line.strip())


def test_every_recorded_digest_has_its_spec():
    assert sorted(RECORDED) == sorted(p.stem for p in (GOLDEN / "specs").glob("*.json"))
    assert len(RECORDED) >= 60


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_module_reproduces_the_golden_digest(name):
    spec = (GOLDEN / "specs" / f"{name}.json").read_text()
    assert _native._golden_digest(spec) == RECORDED[name]
