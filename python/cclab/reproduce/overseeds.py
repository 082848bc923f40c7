"""Claims over seeds: every measured number is a mean with its 95 % confidence interval over the seeds'
runs, and a verdict says in how many seeds the criterion held on that seed's own run.

The usual row is ``judged(...)``: a measurement per seed, a criterion as a predicate, the verdict on the
mean's 95 % CI and the per-seed count beside it.

Verdicts (``Claim.verdict``):

- ``judged``: "holds" when the criterion holds at the mean and at both ends of its 95 % CI (Student t),
  "does not hold" when it fails at all three, "inconclusive" when the CI straddles the criterion. One seed
  has no CI: its value is judged alone. A quantity not reached on some seeds (inf, NaN) fails there: the
  row does not hold if it fails on the finite ones too, else it is inconclusive (the seeds split).
- ``judged_each`` (a criterion judged per seed: a ranking, a property of a whole run): a one-sided sign
  test at 5 %: "holds" when k of n seeds held and P(X ≥ k | p = ½) < 0.05 (5/5, 9/10, 12/15, 15/20, 20/30),
  "does not hold" when P(X ≤ k | p = ½) < 0.05, else "inconclusive". One seed: that run's verdict.
- ``judged_axis``: a claim over the points of an axis: holds when every point holds, does not hold when
  any point does not, else inconclusive.
- ``judged_cells`` (a claim over cells that needs ``need`` of them, e.g. a ranking "in almost all cells"):
  each cell is "won", "lost" or "undecided" by a 95 % CI (the experiment says which CI); "holds" when at
  least ``need`` cells are won, "does not hold" when more than cells − need are lost (``need`` is out of
  reach even if every undecided cell were won), else "inconclusive".
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
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


def verdict_of(values: Sequence[float], test: Callable[[float], bool]) -> str:
    """The verdict of ``test`` on the mean of ``values`` and its 95 % CI (see the module's docstring)."""
    m, _, n, half = spread(values)
    bad = sum(1 for v in values if v is None or not math.isfinite(v))
    if n == 0:
        return "does not hold"
    at_mean = bool(test(m))
    if bad:
        return "inconclusive" if at_mean else "does not hold"
    if n == 1 or not math.isfinite(half):
        return "holds" if at_mean else "does not hold"
    ends = {at_mean, bool(test(m - half)), bool(test(m + half))}
    if len(ends) > 1:
        return "inconclusive"
    return "holds" if at_mean else "does not hold"


def judged(claim: str, paper: str, values: Sequence[float], criterion: str, test: Callable[[float], bool],
           fmt: str = "{:.2f}", unit: str = "", extra: str = "") -> Claim:
    """A row: ``values`` (one per seed) shown as mean ± CI, the verdict from the CI against ``test``
    (:func:`verdict_of`), and in how many seeds ``test`` held on its own run. ``extra`` is appended to the
    measurement (context numbers)."""
    return Claim(claim, paper, ci(values, fmt, unit) + (f"; {extra}" if extra else ""), criterion, None,
                 held(values, lambda v: v is not None and math.isfinite(v) and bool(test(v))),
                 verdict=verdict_of(values, test))


def _tail(k: int, n: int) -> float:
    """P(X ≥ k) for X ~ Binomial(n, ½)."""
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n


def sign_verdict(k: int, n: int, level: float = 0.05) -> str:
    """The verdict for a criterion that held on k of n seeds (one-sided sign test against p = ½)."""
    if n == 1:
        return "holds" if k else "does not hold"
    if n == 0:
        return "does not hold"
    if _tail(k, n) < level:
        return "holds"
    if _tail(n - k, n) < level:
        return "does not hold"
    return "inconclusive"


def judged_each(claim: str, paper: str, measured: str, criterion: str, per_seed_ok: Sequence[bool]) -> Claim:
    """A row whose criterion is judged per seed (a ranking, a property of a whole run): the sign test of
    :func:`sign_verdict` on the seeds where it held."""
    k, n = sum(bool(x) for x in per_seed_ok), len(per_seed_ok)
    return Claim(claim, paper, measured, criterion, None, (k, n), verdict=sign_verdict(k, n))


def judged_axis(claim: str, paper: str, axis: str, points: Mapping[str, Sequence[float]], criterion: str,
                test: Callable[[float], bool], fmt: str = "{:.2f}") -> Claim:
    """One row for a claim over an axis (every point must hold): each point's mean ± CI over seeds and its
    verdict (:func:`verdict_of`); holds when every point holds, does not hold when one does not, else
    inconclusive. Per seed, whether every point held on that seed's runs."""
    n = min(len(v) for v in points.values())
    each = [all(v[i] is not None and math.isfinite(v[i]) and test(v[i]) for v in points.values()) for i in range(n)]
    verdicts = {k: verdict_of(v, test) for k, v in points.items()}
    mark = {"holds": "", "does not hold": " ✗", "inconclusive": " ?"}
    measured = "; ".join(f"{k}: {ci(v, fmt)}{mark[verdicts[k]]}" for k, v in points.items())
    vs = set(verdicts.values())
    verdict = "does not hold" if "does not hold" in vs else "inconclusive" if "inconclusive" in vs else "holds"
    return Claim(claim, paper, measured, f"{criterion} at every {axis} (✗: fails there; ?: CI straddles)", None,
                 (sum(each), n), verdict=verdict)


WON, LOST, UNDECIDED = "won", "lost", "undecided"


def paired_outcome(diffs: Sequence[float]) -> str:
    """A cell of a ranking judged on the per-seed differences (ours − the rival's, paired by seed): "won"
    when the difference is ≥ 0 at its mean and both ends of its 95 % CI, "lost" when < 0 at all three,
    "undecided" when the CI straddles 0 (:func:`verdict_of`; a tie counts for ours, as a mean-only rule
    ``ours ≥ rival`` did)."""
    return {"holds": WON, "does not hold": LOST, "inconclusive": UNDECIDED}[verdict_of(diffs, lambda v: v >= 0)]


def abs_interval(values: Sequence[float]) -> tuple[float, float]:
    """The 95 % CI of |mean| implied by the Student-t CI [lo, hi] of the mean: [0, max(|lo|, |hi|)] when
    it straddles 0, else [min(|lo|, |hi|), max(|lo|, |hi|)]. One seed: the point |value|."""
    m, _, n, half = spread(values)
    if n == 0:
        return math.nan, math.nan
    if n == 1 or not math.isfinite(half):
        return abs(m), abs(m)
    lo, hi = m - half, m + half
    return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))


def cells_verdict(won: int, lost: int, cells: int, need: int) -> str:
    """The verdict of a claim that needs ``need`` of ``cells`` won (see the module's docstring)."""
    if won >= need:
        return "holds"
    if lost > cells - need:
        return "does not hold"
    return "inconclusive"


def judged_cells(claim: str, paper: str, outcomes: Sequence[str], need: int, what: str, measured: str,
                 criterion: str, seeds_held: Optional[tuple[int, int]] = None) -> Claim:
    """A row over cells, each "won" / "lost" / "undecided" (``outcomes``): the verdict of
    :func:`cells_verdict`; the measurement opens with the three counts ("won 3, lost 1, undecided 1 of 5
    ``what``") and goes on with ``measured``."""
    won, lost = outcomes.count(WON), outcomes.count(LOST)
    head = f"won {won}, lost {lost}, undecided {len(outcomes) - won - lost} of {len(outcomes)} {what}"
    return Claim(claim, paper, head + (f"; {measured}" if measured else ""), criterion, None, seeds_held,
                 verdict=cells_verdict(won, lost, len(outcomes), need))
