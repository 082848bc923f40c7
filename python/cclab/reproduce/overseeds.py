"""Claims over seeds: every measured number is a mean with its 95 % confidence interval over the seeds'
runs, and a verdict says in how many seeds the criterion held on that seed's own run.

The usual row is ``judged(...)``: a measurement per seed, a criterion as a predicate, the verdict on the
mean and the per-seed count beside it.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Optional, TypeVar

from ..results import Result
from ..stats import spread
from . import Claim

T = TypeVar("T")


def per_seed(runs: Sequence[Result], measure: Callable[[Result], T]) -> list[T]:
    """``measure`` applied to each seed's run of one variant."""
    return [measure(r) for r in runs]


def mean(values: Sequence[float]) -> float:
    """The mean over seeds (NaN and inf excluded: a seed where a quantity is undefined, e.g. a settling time
    never reached, is counted by ``held``, not averaged)."""
    return spread(values)[0]


def ci(values: Sequence[float], fmt: str = "{:.2f}", unit: str = "") -> str:
    """``"0.84 ± 0.03"`` (mean ± 95 % CI half-width, Student t over the seeds) + unit; one value alone is
    printed bare; values that are not finite on some seeds say so (``"; inf on 1 of 5 seeds"``)."""
    m, _, n, half = spread(values)
    u = f" {unit}" if unit else ""
    bad = sum(1 for v in values if v is None or not math.isfinite(v))
    tail = ""
    if n == 0:
        text = "undefined"
    elif n == 1 or not math.isfinite(half):
        text = fmt.format(m) + u
    else:
        text = f"{fmt.format(m)} ± {fmt.format(half)}{u}"
    if bad:
        tail = f" (not reached on {bad} of {len(values)} seeds)"
    return text + tail


def held(values: Sequence[T], test: Callable[[T], bool]) -> tuple[int, int]:
    """(k, n): on how many seeds ``test`` held for that seed's value."""
    return sum(1 for v in values if test(v)), len(values)


def judged(claim: str, paper: str, values: Sequence[float], criterion: str, test: Callable[[float], bool],
           fmt: str = "{:.2f}", unit: str = "", extra: str = "") -> Claim:
    """A row: ``values`` (one per seed) shown as mean ± CI, the verdict ``test(mean)``, and in how many
    seeds ``test`` held on its own run. ``extra`` is appended to the measurement (context numbers)."""
    m = mean(values)
    bad = sum(1 for v in values if v is None or not math.isfinite(v))
    # A quantity that is infinite on some seeds (never reached) cannot pass on the mean of the others.
    verdict = False if bad or not math.isfinite(m) else bool(test(m))
    return Claim(claim, paper, ci(values, fmt, unit) + (f"; {extra}" if extra else ""), criterion, verdict,
                 held(values, lambda v: v is not None and math.isfinite(v) and bool(test(v))))


def judged_each(claim: str, paper: str, measured: str, criterion: str, per_seed_ok: Sequence[bool],
                need: Optional[int] = None) -> Claim:
    """A row whose criterion is judged per seed (a ranking, a property of a whole run): it holds when it
    held on at least ``need`` seeds (default: all of them)."""
    k, n = sum(bool(x) for x in per_seed_ok), len(per_seed_ok)
    return Claim(claim, paper, measured, criterion, k >= (n if need is None else need), (k, n))
