"""Shared helpers for the per-paper reproduction tests: run an experiment's claims on a few seeds at a
reduced size, as written or with its algorithm under test replaced (a mutation), so a test can show that
the claim's check fails when the algorithm does not do what the paper says."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Optional

import pytest

from cclab import reproduce as rp
from cclab.reproduce import Claim, _run_once


def swap_cc(old: str, new: str, params: Optional[dict] = None) -> Callable[[dict], dict]:
    """A mutation: every flow running ``old`` runs ``new`` (with ``params``, else its defaults)."""
    def change(d: dict) -> dict:
        for f in d["flows"]:
            if f.get("cc") == old:
                f["cc"] = new
                f.pop("params", None)
                if params:
                    f["params"] = dict(params)
        return d
    return change


def run_claims(exp_id: str, seeds: Iterable[int] = (1,), quick: bool = True,
               mutate: Optional[Callable[[dict], dict]] = None,
               scale: Optional[Callable[[dict], dict]] = None) -> dict[str, Claim]:
    """The experiment's rows (by claim text) from its runs on ``seeds``: every variant at the quick size
    (or full with ``quick=False``), then ``scale`` (a reduced size of the test's own), then ``mutate``
    applied to every variant's scenario."""
    e = rp.experiments()[exp_id.lower()]
    base = rp.scenario_dict(e.scenario)
    if quick:
        base = rp.shorten(base)
    if scale:
        base = scale(base)
    res: rp.Runs = {}
    for name, change in e.variants.items():
        res[name] = []
        for s in seeds:
            d = change(json.loads(json.dumps(base)))
            d["seed"] = s
            if mutate:
                d = mutate(d)
            res[name].append(_run_once(d, None))
    return {c.claim: c for c in e.claims(res)}


def verdicts(rows: dict[str, Claim]) -> dict[str, str]:
    return {k: c.verdict for k, c in rows.items()}


@pytest.fixture(scope="session")
def claims_of():
    """:func:`run_claims`, memoised for the session: tests of one experiment share its runs."""
    cache: dict = {}

    def get(exp_id: str, seeds: Iterable[int] = (1,), quick: bool = True, mutate_key: str = "",
            mutate: Optional[Callable[[dict], dict]] = None) -> dict[str, Claim]:
        key = (exp_id, tuple(seeds), quick, mutate_key)
        if key not in cache:
            cache[key] = run_claims(exp_id, seeds, quick, mutate)
        return cache[key]
    return get
