"""Metrics the papers use, as plain functions over arrays.

* :func:`jain` — Jain's fairness index (Σx)² / (n·Σx²).
* :func:`asymmetry` — Libra's asymmetry index A = (x̄1 − x̄2)/(x̄1 + x̄2).
* :func:`stability_index` / :func:`responsiveness_index` — FAST TCP §VI (EXPERIMENTS.md §1).
* :func:`utilization`, :func:`loss_rate`, :func:`p95` — link-level summaries.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def jain(x: Sequence[float]) -> float:
    """Jain's fairness index of the allocations ``x`` (1 = perfectly fair, 1/n = one takes all)."""
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        return float("nan")
    s2 = float(np.sum(a * a))
    if s2 == 0.0:
        return 1.0
    return float(np.sum(a) ** 2 / (a.size * s2))


def asymmetry(x1: Sequence[float], x2: Sequence[float]) -> float:
    """(x̄1 − x̄2) / (x̄1 + x̄2): > 0 when group 1 takes more (Libra TR §V)."""
    m1, m2 = float(np.mean(x1)), float(np.mean(x2))
    return (m1 - m2) / (m1 + m2) if m1 + m2 > 0 else 0.0


def stability_index(rates: Sequence[Sequence[float]]) -> float:
    """FAST's stability index: per flow, the standard deviation of its throughput samples over an
    interval of fixed composition divided by their mean; averaged over flows. Lower is steadier."""
    vals = []
    for r in rates:
        a = np.asarray(r, dtype=float)
        if a.size and np.mean(a) > 0:
            vals.append(float(np.std(a) / np.mean(a)))
    return float(np.mean(vals)) if vals else float("nan")


def responsiveness_index(t: Sequence[float], rates: Sequence[Sequence[float]], tol: float = 0.1) -> float:
    """FAST's responsiveness index: the time (from the interval start) after which every flow's running
    average stays within ``tol`` of its interval average; the slowest flow decides."""
    tt = np.asarray(t, dtype=float)
    worst = 0.0
    for r in rates:
        a = np.asarray(r, dtype=float)
        if a.size == 0:
            continue
        target = float(np.mean(a))
        run = np.cumsum(a) / np.arange(1, a.size + 1)
        bad = np.nonzero(np.abs(run - target) > tol * abs(target))[0]
        if bad.size:
            k = int(bad[-1]) + 1
            worst = max(worst, float(tt[min(k, tt.size - 1)] - tt[0]))
    return worst


def utilization(tx_bits: float, rate_bps: float, seconds: float) -> float:
    return tx_bits / (rate_bps * seconds)


def loss_rate(lost: float, arrived: float) -> float:
    return lost / arrived if arrived > 0 else 0.0


def p95(x: Sequence[float]) -> float:
    a = np.asarray(x, dtype=float)
    return float(np.percentile(a, 95)) if a.size else float("nan")
