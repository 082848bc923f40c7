"""Intervals of fixed flow composition (the FAST paper's unit of measurement, §VI)."""
from __future__ import annotations

from ..results import Result


def phases(r: Result) -> list[tuple[float, float, list[int]]]:
    """(t0, t1, active flow ids) for each interval between consecutive starts/stops of the run's flows
    (from the resolved spec; a flow with a random start counts from its actual start)."""
    dur = float(r.spec["duration"])
    spans = []
    for s, f in zip(r.summary["flows"], r.spec["flows"]):
        stop = f.get("stop")
        spans.append((float(s["start"]), dur if stop is None else min(float(stop), dur)))
    cuts = sorted({0.0, dur, *(a for a, _ in spans), *(b for _, b in spans)})
    out = []
    for t0, t1 in zip(cuts, cuts[1:]):
        active = [i for i, (a, b) in enumerate(spans) if a <= t0 and b >= t1]
        if t1 > t0 and active:
            out.append((t0, t1, active))
    return out


def second_half(t0: float, t1: float) -> tuple[float, float]:
    """The settled part of a phase: its second half."""
    return (t0 + t1) / 2, t1
