import copy

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
