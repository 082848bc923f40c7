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


def run_variants(exp_id: str, seeds: Iterable[int] = (1,), quick: bool = True,
                 mutate: Optional[Callable[[dict], dict]] = None, reuse: Optional[rp.Runs] = None) -> rp.Runs:
    """Every variant's runs on ``seeds`` at the quick size (or full with ``quick=False``), ``mutate``
    applied to every variant's scenario. A run whose scenario the mutation leaves unchanged is taken from
    ``reuse`` (the unmutated runs) instead of being simulated again."""
    e = rp.experiments()[exp_id.lower()]
    base = rp.scenario_dict(e.scenario)
    if quick:
        base = rp.shorten(base)
    res: rp.Runs = {}
    for name, change in e.variants.items():
        res[name] = []
        for i, s in enumerate(seeds):
            d = change(json.loads(json.dumps(base)))
            d["seed"] = s
            same = True
            if mutate:
                m = mutate(json.loads(json.dumps(d)))
                same, d = m == d, m
            if same and reuse is not None:
                res[name].append(reuse[name][i])
            else:
                res[name].append(_run_once(d, None))
    return res


def run_claims(exp_id: str, seeds: Iterable[int] = (1,), quick: bool = True,
               mutate: Optional[Callable[[dict], dict]] = None) -> dict[str, Claim]:
    """The experiment's rows (by claim text) from :func:`run_variants`."""
    return {c.claim: c for c in rp.experiments()[exp_id.lower()].claims(run_variants(exp_id, seeds, quick, mutate))}


def verdicts(rows: dict[str, Claim]) -> dict[str, str]:
    return {k: c.verdict for k, c in rows.items()}


@pytest.fixture(scope="session")
def run_cache() -> dict:
    """Every experiment's runs made through :func:`claims_of` this session, by (id, seeds, quick, mutation
    key; "" for the unmutated runs): the figure test (test_report_figures.py) draws from the unmutated ones
    instead of simulating them again."""
    return {}


@pytest.fixture(scope="session")
def cached_runs(run_cache):
    """``get(exp_id)``: the first seed's unmutated runs of ``exp_id`` from :func:`run_cache` (any size), or
    None when no test has run it yet."""
    def get(exp_id: str) -> Optional[rp.Runs]:
        for (x, _seeds, _quick, key), runs in run_cache.items():
            if x.lower() == exp_id.lower() and key == "":
                return {name: v[:1] for name, v in runs.items()}
        return None
    return get


@pytest.fixture(scope="session")
def claims_of(run_cache):
    """:func:`run_claims`, memoised for the session: tests of one experiment share its runs, and a
    mutation reuses the unmutated runs it does not change."""
    runs = run_cache

    def get(exp_id: str, seeds: Iterable[int] = (1,), quick: bool = True, mutate_key: str = "",
            mutate: Optional[Callable[[dict], dict]] = None) -> dict[str, Claim]:
        seeds = tuple(seeds)
        plain = (exp_id, seeds, quick, "")
        if plain not in runs:
            runs[plain] = run_variants(exp_id, seeds, quick)
        key = (exp_id, seeds, quick, mutate_key)
        if key not in runs:
            runs[key] = run_variants(exp_id, seeds, quick, mutate, reuse=runs[plain])
        return {c.claim: c for c in rp.experiments()[exp_id.lower()].claims(runs[key])}
    return get
