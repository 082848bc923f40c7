"""TCP Libra (Marfia et al., UCLA TR050037): docs/experiments.md, "L"."""
from __future__ import annotations

import statistics

from ..metrics import jain
from . import Claim, Experiment, Runs, all_flows_as as _as


def _gp(s: dict) -> list[float]:
    return [f["goodput_bps"] for f in s["flows"]]


def _l5_claims(res: Runs) -> list[Claim]:
    lib, nr = res["libra"][0].summary, res["newreno"][0].summary
    fmt = lambda s: " / ".join(f"{g / 1e6:.1f}" for g in _gp(s)) + " Mbit/s"
    share = _gp(nr)[0] / sum(_gp(nr))
    return [
        Claim("Libra: equal slopes of ACKed packets vs time across RTTs 20-400 ms", "equal slopes (Fig. 13)",
              f"Jain {lib['jain']:.3f} ({fmt(lib)})", "Jain ≥ 0.9", lib["jain"] >= 0.9),
        Claim("NewReno: the short flow captures the link", "the 20 ms flow dominates (Fig. 14)",
              f"20 ms flow {share:.0%} of the total ({fmt(nr)})", "the 20 ms flow > 50 %", share > 0.5),
        Claim("Libra fairer than NewReno", "Libra's Jain higher", f"{lib['jain']:.3f} vs {nr['jain']:.3f}",
              "Libra's higher", lib["jain"] > nr["jain"]),
    ]


def _group_means(s: dict) -> list[float]:
    groups: dict[int, list[float]] = {}
    for f in s["flows"]:
        groups.setdefault(f["group"], []).append(f["goodput_bps"])
    return [statistics.fmean(v) for _, v in sorted(groups.items())]


def _l4_claims(res: Runs) -> list[Claim]:
    s = {k: v[0].summary for k, v in res.items()}
    gm = {k: _group_means(v) for k, v in s.items()}
    fmt = lambda k: " / ".join(f"{g / 1e6:.2f}" for g in gm[k]) + " Mbit/s per flow (16/60/180 ms)"
    jg = {k: jain(v) for k, v in gm.items()}
    return [
        Claim("Libra (k2 = 12) shares close to equally across RTT groups", "close to equal",
              f"group-mean Jain {jg['libra k2=12']:.3f}: {fmt('libra k2=12')}", "≥ 0.9", jg["libra k2=12"] >= 0.9),
        Claim("NewReno is RTT-unfair", "unequal", f"group-mean Jain {jg['newreno']:.3f}: {fmt('newreno')}",
              "below Libra's (k2 = 12)", jg["newreno"] < jg["libra k2=12"]),
        Claim("Libra with k2 = 2 clusters (stability border)", "flows cluster",
              f"all-flow Jain {s['libra k2=2']['jain']:.3f} vs {s['libra k2=12']['jain']:.3f} at k2 = 12",
              "lower than at k2 = 12", s["libra k2=2"]["jain"] < s["libra k2=12"]["jain"]),
    ]


EXPERIMENTS = [
    Experiment(
        id="L4", paper="TCP Libra (Marfia et al., UCLA TR050037)", title="100 flows at 622 Mbit/s",
        scenario="libra_l4.toml",
        variants={"libra k2=12": lambda d: d, "libra k2=2": _as("libra", {"k2": 2}), "newreno": _as("newreno")},
        claims=_l4_claims,
        notes="Full size (1000 s, ≈ 52 M packets per run); docs/algorithms/libra.md records L4 as an open finding.",
    ),
    Experiment(
        id="L5", paper="TCP Libra (Marfia et al., UCLA TR050037)", title="staggered starts, RTTs 20-400 ms",
        scenario="libra_l5.toml", variants={"libra": lambda d: d, "newreno": _as("newreno")},
        claims=_l5_claims, notes="200 s with starts 10 s apart (the paper ran 1000 s).",
    ),
]
