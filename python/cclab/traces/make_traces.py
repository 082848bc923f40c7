#!/usr/bin/env python3
"""Writes the shipped traces (see __init__.py for what each is). Deterministic: the cellular trace comes
from a fixed seed, so running this again rewrites the same files.

    python python/cclab/traces/make_traces.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def per_ms(rate_mbps: float, ms: int, start_ms: int) -> list[int]:
    """Opportunities for `ms` milliseconds at a constant rate (12 Mbit/s = one per ms), evenly spread."""
    per = rate_mbps / 12.0  # opportunities per ms
    n = int(round(per * ms))
    return [start_ms + int(np.ceil((k + 1) / per)) for k in range(n)]


def write(name: str, times: list[int]) -> None:
    (HERE / f"{name}.trace").write_text("".join(f"{t}\n" for t in times))


def main() -> None:
    write("constant-12mbps", list(range(1, 1001)))
    write("step-6-24mbps", per_ms(6, 10_000, 0) + per_ms(24, 10_000, 10_000))
    # 2 s at 24 Mbit/s, then a 0.5 s outage: the period ends with the last opportunity, so the outage is
    # written as the gap before the next period's first one (2 ms after it: per_ms starts at 1 ms).
    on = per_ms(24, 2000, 0)
    write("onoff-24mbps", [*on[:-1], 2500])
    # Cellular-like: log-rate random walk (σ 0.08 per 20 ms step, pulled back to ln 12 Mbit/s), clipped
    # to [1, 50] Mbit/s; Poisson opportunities at that rate, integer ms as mahimahi records them.
    rng = np.random.default_rng(20261126)
    steps = 60_000 // 20
    lr = np.empty(steps)
    x = np.log(12.0)
    for i in range(steps):
        x += 0.08 * rng.standard_normal() + 0.01 * (np.log(12.0) - x)
        x = float(np.clip(x, np.log(1.0), np.log(50.0)))
        lr[i] = x
    times: list[int] = []
    for i, l in enumerate(lr):
        n = rng.poisson(np.exp(l) / 12.0 * 20)
        times += sorted(int(t) for t in rng.integers(i * 20 + 1, i * 20 + 21, size=n))
    times.append(60_000)
    write("cellular", times)


if __name__ == "__main__":
    main()
