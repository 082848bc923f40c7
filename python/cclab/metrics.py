"""Metrics the papers use, as plain functions over arrays (and two helpers that cut them out of a run).

* :func:`jain` — Jain's fairness index (Σx)² / (n·Σx²).
* :func:`asymmetry` — Libra's asymmetry index A = (x̄1 − x̄2)/(x̄1 + x̄2).
* :func:`stability_index` / :func:`responsiveness_index` — FAST TCP (Jin, Wei & Low, INFOCOM 2004) §VI;
  definitions in docs/experiments.md, "F: FAST TCP".
* :func:`utilization`, :func:`loss_rate`, :func:`p95` — link-level summaries.
* :func:`throughput_samples` — per-flow goodput samples over an interval from a run's time series, the
  input of the FAST indices.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Optional

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:  # pandas only in annotations: importing it costs ~0.2 s (docs/performance.md)
    import pandas as pd


def jain(x: ArrayLike) -> float:
    """Jain's fairness index of the allocations ``x`` (1 = perfectly fair, 1/n = one takes all)."""
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        return float("nan")
    s2 = float(np.sum(a * a))
    if s2 == 0.0:
        return 1.0
    return float(np.sum(a) ** 2 / (a.size * s2))


def asymmetry(x1: ArrayLike, x2: ArrayLike) -> float:
    """(x̄1 − x̄2) / (x̄1 + x̄2): > 0 when group 1 takes more (Libra TR §V); 0 when both are idle."""
    m1, m2 = float(np.mean(np.asarray(x1, dtype=float))), float(np.mean(np.asarray(x2, dtype=float)))
    return (m1 - m2) / (m1 + m2) if m1 + m2 > 0 else 0.0


def stability_index(rates: Iterable[ArrayLike]) -> float:
    """FAST §VI stability index of an interval of fixed flow composition.

    For flow i with throughput samples x_i(1..m) and mean x̄_i:
    s_i = (1/x̄_i) · sqrt( Σ_k (x_i(k) − x̄_i)² / (m − 1) )  (the *sample* standard deviation, as the
    paper says), and the interval's index is the average of s_i over the active flows (mean > 0, at least
    two samples). Smaller = less oscillation. NaN if no flow qualifies."""
    vals = []
    for r in rates:
        a = np.asarray(r, dtype=float)
        if a.size >= 2 and np.mean(a) > 0:
            vals.append(float(np.std(a, ddof=1) / np.mean(a)))
    return float(np.mean(vals)) if vals else float("nan")


def responsiveness_index(t: ArrayLike, rates: Iterable[ArrayLike], tol: float = 0.1) -> float:
    """FAST §VI responsiveness index of an interval, in seconds.

    Running averages x̄_i(k) = (1/k) Σ_{j≤k} x_i(j) over the samples of the interval;
    R = max_i max{ k : |x̄_i(k) − x̄_i| > tol · x̄_i } sample periods: how long the slowest flow's running
    average takes to settle within ``tol`` (10 %) of its interval average for good. The paper uses the
    running average, not the samples themselves, so that a protocol settling into a limit cycle still
    converges. ``t`` holds the (uniformly spaced) sample times; the result is R × the sample period
    (0 if every running average is within the band from the first sample on)."""
    tt = np.asarray(t, dtype=float)
    period = float(np.median(np.diff(tt))) if tt.size >= 2 else 0.0
    worst = 0
    for r in rates:
        a = np.asarray(r, dtype=float)
        if a.size == 0:
            continue
        target = float(np.mean(a))
        run = np.cumsum(a) / np.arange(1, a.size + 1)
        bad = np.nonzero(np.abs(run - target) > tol * abs(target))[0]
        if bad.size:
            worst = max(worst, int(bad[-1]) + 1)  # k is 1-based in the paper
    return worst * period


def utilization(tx_bits: float, rate_bps: float, seconds: float) -> float:
    """Fraction of a link's capacity used: bits transmitted / (rate × time)."""
    return tx_bits / (rate_bps * seconds)


def loss_rate(lost: float, arrived: float) -> float:
    """Packets lost (dropped or randomly lost) / packets that arrived; 0 when nothing arrived."""
    return lost / arrived if arrived > 0 else 0.0


def p95(x: ArrayLike) -> float:
    """95th percentile (linear interpolation), e.g. of queueing delays; NaN for no data."""
    a = np.asarray(x, dtype=float)
    return float(np.percentile(a, 95)) if a.size else float("nan")


def throughput_samples(flows: pd.DataFrame, t0: float, t1: float, period: Optional[float] = None,
                       ids: Optional[Sequence[int]] = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """Per-flow goodput samples (bit/s) over consecutive ``period``-long slices of [t0, t1], computed from
    the cumulative ``delivered_bytes`` of a run's flow time series (``Result.flows``).

    Returns (slice end times, one array per flow in ``ids`` order, default all flows by id). ``period``
    defaults to the series' sample interval and is rounded to a whole number of sample intervals; t0 and
    t1 snap to sample times. These are the x_i(k) of :func:`stability_index` and
    :func:`responsiveness_index`."""
    times = np.unique(flows["t"].to_numpy())
    dt = float(np.median(np.diff(times))) if times.size >= 2 else 0.0
    if dt <= 0:
        raise ValueError("need at least two samples")
    step = max(1, int(round((period or dt) / dt)))
    grid = times[(times >= t0 - 1e-9) & (times <= t1 + 1e-9)][::step]
    if grid.size < 2:
        raise ValueError(f"[{t0}, {t1}] holds fewer than two sample times of period {step * dt:g} s")
    ids = sorted(int(i) for i in flows["flow"].unique()) if ids is None else list(ids)
    out = []
    for i in ids:
        g = flows[flows["flow"] == i].set_index("t")["delivered_bytes"]
        # rows are exact sample times written by the simulator; a flow has a row at every sample time
        cum = g.reindex(grid, method="nearest", tolerance=dt / 2).to_numpy(dtype=float)
        out.append(np.diff(cum) * 8.0 / np.diff(grid))
    return grid[1:], out
