"""Spread over seeds: mean, sample standard deviation, count and the 95 % confidence-interval half-width of
the mean (Student t), without SciPy.

The t quantile comes from the exact closed form of Student's t distribution for an integer number of
degrees of freedom (Abramowitz & Stegun 26.7.3–26.7.4), inverted by bisection: seeds give integer degrees
of freedom, n − 1.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def t_central(t: float, df: int) -> float:
    """P(|T| ≤ t) for Student's t with ``df`` ≥ 1 (integer) degrees of freedom."""
    if df < 1 or int(df) != df:
        raise ValueError(f"degrees of freedom must be an integer >= 1, got {df!r}")
    if t <= 0:
        return 0.0
    th = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(th), math.cos(th) ** 2
    if df % 2 == 1:  # 2/π [θ + sin θ (cos θ + 2/3 cos³θ + … + (2·4…(ν−3))/(1·3…(ν−2)) cos^(ν−2) θ)]
        total, term = 0.0, math.cos(th)
        if df > 1:
            total = term
            for k in range(1, (df - 3) // 2 + 1):
                term *= (2 * k) / (2 * k + 1) * c2
                total += term
        return 2.0 / math.pi * (th + s * total)
    total = term = 1.0  # sin θ [1 + 1/2 cos²θ + (1·3)/(2·4) cos⁴θ + … + (1·3…(ν−3))/(2·4…(ν−2)) cos^(ν−2) θ]
    for k in range(1, (df - 2) // 2 + 1):
        term *= (2 * k - 1) / (2 * k) * c2
        total += term
    return s * total


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (0.5 < p < 1) of Student's t with ``df`` degrees of freedom: t_{0.975, 2} = 4.303."""
    if not 0.5 < p < 1.0:
        raise ValueError(f"p must be in (0.5, 1), got {p!r}")
    want = 2.0 * p - 1.0
    lo, hi = 0.0, 1.0
    while t_central(hi, df) < want:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_central(mid, df) < want:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


def ci_halfwidth(std: float, n: int, level: float = 0.95) -> float:
    """Half-width of the ``level`` confidence interval of a mean of ``n`` samples with sample standard
    deviation ``std``: t_{(1+level)/2, n−1} · std / √n; NaN for n < 2."""
    if n < 2 or not math.isfinite(std):
        return math.nan
    return t_quantile(0.5 + level / 2.0, n - 1) * std / math.sqrt(n)


def spread(values: Iterable[float], level: float = 0.95) -> tuple[float, float, int, float]:
    """(mean, sample std (ddof 1), n, CI half-width) of the finite values; NaN where undefined."""
    x = np.asarray([v for v in values if v is not None], dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return math.nan, math.nan, 0, math.nan
    mean = float(np.mean(x))
    std = float(np.std(x, ddof=1)) if n > 1 else math.nan
    if n > 1 and bool(np.all(x == x[0])):
        std = 0.0  # equal runs: exactly no spread, not the mean's rounding error (1e-15)
    return mean, std, n, ci_halfwidth(std, n, level)
