"""The small sweep file several test modules write: a `[base]` dumbbell (10 Mbit/s, BDP buffer) with one
NewReno flow per RTT given, as TOML text. One definition, so a change to the sweep format is made once."""
from typing import Optional


def base_toml(name: str, duration: str, measure_from: Optional[str] = None, rtts: tuple[str, ...] = ("40ms",)) -> str:
    """The `[base]` table (and its flows) of a sweep file; `measure_from` adds a measure window ending at
    `duration`."""
    measure = f'measure = ["{measure_from}", "{duration}"]\n' if measure_from else ""
    flows = "".join(f'[[base.flows]]\ncc = "newreno"\nrtt = "{r}"\n' for r in rtts)
    return (f'[base]\nname = "{name}"\nduration = "{duration}"\nseed = 1\n{measure}'
            '[base.topology]\nkind = "dumbbell"\n[base.topology.bottleneck]\nrate = "10Mbps"\nbuffer = "BDP"\n'
            + flows)


#: The red-team tests' scenario (tests/test_redteam_*.py): a 1 s dumbbell, 10 Mbit/s, BDP buffer, one NewReno
#: flow at 40 ms, samples every 100 ms. Small, so each hostile case costs a few hundred ms.
REDTEAM_BASE = """name = "rt"
duration = "1s"
seed = 1
sample_interval = "100ms"
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
buffer = "BDP"
[[flows]]
cc = "newreno"
rtt = "40ms"
"""
