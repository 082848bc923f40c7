"""TCP MaxNet (Suchara, Caltech B.S. thesis 2006): docs/experiments.md, "M"."""
from __future__ import annotations

import math

from . import Claim, Experiment, Runs, window as w
from .phases import phases, second_half

MU = 0.94  # the routers' target utilisation (thesis default; the scenario keeps it)


def _m2_claims(res: Runs) -> list[Claim]:
    r = res["maxnet"][0]
    c = r.summary["links"][0]["rate_bps"]
    rtt = float(r.spec["flows"][0]["rtt"])
    sample = float(r.spec["sample_interval"])
    (a0, a1, _), (b0, b1, both), (c0, c1, _) = phases(r)[:3]
    # "a few RTTs": 10, rounded up to the sampling interval (a rate is only seen per sample)
    bound = math.ceil(10 * rtt / sample - 1e-9) * sample
    rows = []
    u = w.utilization(r, *second_half(a0, a1))
    rows.append(Claim("one flow alone runs the link at μ", f"utilisation ≈ μ = {MU}", f"{u:.3f}",
                      "within 0.02 of μ", abs(u - MU) <= 0.02))
    t_qs = w.settle_time(r, both[-1], b0, b1, MU * c / 2)
    rows.append(Claim("the newcomer starts at once (QuickStart)", "its share within a few RTTs",
                      f"{t_qs:.2f} s to 90 % of μC/2", f"≤ 10 RTTs ({bound:.2f} s at this sampling)",
                      t_qs <= bound + 1e-9))
    j = w.jain_of(r, both, *second_half(b0, b1))
    tot = sum(w.goodputs(r, both, *second_half(b0, b1))) / c
    rows.append(Claim("two flows split the link in equal halves", "equal halves of μC",
                      f"Jain {j:.4f}, total {tot:.3f}·C", "Jain ≥ 0.99", j >= 0.99))
    t_back = w.settle_time(r, 0, c0, c1, MU * c)
    rows.append(Claim("the first flow regains the full rate after the second leaves", "within a few RTTs",
                      f"{t_back:.2f} s to 90 % of μC", f"≤ 10 RTTs ({bound:.2f} s at this sampling)",
                      t_back <= bound + 1e-9))
    dur = float(r.spec["duration"])
    q, d = w.mean_queue(r, 0, dur), w.drops(r, 0, dur)
    rows.append(Claim("the queue stays ≈ 0 throughout", "queue ≈ 0, no drops", f"mean {q:.2f} packets, {d} drops",
                      "mean queue < 1 packet and 0 drops", q < 1 and d == 0))
    return rows


EXPERIMENTS = [
    Experiment(
        id="M2", paper="TCP MaxNet (Suchara, Caltech 2006)", title="join and leave", scenario="maxnet_m2.toml",
        variants={"maxnet": lambda d: d}, claims=_m2_claims,
        notes="100 Mbit/s for 20 s with the thesis's shape at half the time scale (1 Gbit/s, 40 s).",
    ),
]
