"""Binomial congestion control (Bansal & Balakrishnan, INFOCOM 2001): docs/experiments.md, "B"."""
from __future__ import annotations

import statistics
from typing import Callable, Optional

from . import Claim, Experiment, Runs


def _second(cc: str, params: Optional[dict] = None) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        d["flows"][1]["cc"] = cc
        if params:
            d["flows"][1]["params"] = dict(params)
        return d
    return change


def _ratio(s: dict) -> float:
    tcp, other = (f["goodput_bps"] for f in s["flows"][:2])
    return tcp / other


def _ci(xs: list[float]) -> str:
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return f"{m:.2f}"
    half = 1.96 * statistics.stdev(xs) / len(xs) ** 0.5
    return f"{m:.2f} ± {half:.2f} (95 % CI, {len(xs)} seeds)"


def _b1_claims(res: Runs) -> list[Claim]:
    ratios = {k: [_ratio(r.summary) for r in v] for k, v in res.items()}
    mean = {k: statistics.fmean(v) for k, v in ratios.items()}
    rows = []
    for k in ("sqrt", "iiad"):
        rows.append(Claim(f"TCP-friendly: TCP/{k.upper()} throughput ratio ≈ 1 (k + l = 1)", "≈ 1 (Fig. 5)",
                          _ci(ratios[k]), "mean in [0.75, 1.33]", 0.75 <= mean[k] <= 1.33))
    rows.append(Claim("k + l = 0.5 takes more than TCP", "ratio < 1", _ci(ratios["k+l=0.5"]), "mean < 1",
                      mean["k+l=0.5"] < 1))
    rows.append(Claim("k + l = 1.5 takes less than TCP", "ratio > 1", _ci(ratios["k+l=1.5"]), "mean > 1",
                      mean["k+l=1.5"] > 1))
    return rows


EXPERIMENTS = [
    Experiment(
        id="B1", paper="Binomial congestion control (Bansal & Balakrishnan, INFOCOM 2001)",
        title="the k + l rule: 1 TCP vs 1 binomial flow over RED", scenario="binomial_b1.toml",
        variants={"sqrt": lambda d: d, "iiad": _second("iiad"),
                  "k+l=0.5": _second("binomial", {"k": 0.25, "l": 0.25}),
                  "k+l=1.5": _second("binomial", {"k": 0.75, "l": 0.75})},
        claims=_b1_claims, seeds=tuple(range(1, 11)),
        notes="3 Mbit/s, 50 ms, RED, 200 s, 10 seeds as the paper (throughput over 50-200 s).",
    ),
]
