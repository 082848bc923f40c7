#!/usr/bin/env python3
"""A search's best candidate and its base scenario over more seeds: the objective's mean ± 95 % CI (Student t)
over seeds 1..N in the simulator, for the numbers docs/search.md reports (a search scores each candidate on the
search's own seeds only; one seed can be an outlier when the outcome depends on one random event).

    .venv/bin/python searches/seeds_check.py searches/libra_rtt.toml results/libra_rtt [--seeds 10] [--set K=V]
"""
from __future__ import annotations

import argparse
import json
import sys
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))


def _one(args: tuple[dict, int, str]) -> float:
    from cclab.runner import run
    from cclab.search import metric_of

    scen, seed, metric = args
    v = metric_of(run(dict(scen, seed=seed), None, progress=False).summary, metric)
    return float("nan") if v is None else v


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("search_file", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--set", dest="sets", action="append", default=[])
    a = ap.parse_args()

    from cclab import search
    from cclab.search.engine import ci95

    s = search.load(a.search_file, [search.parse_set(x) for x in a.sets])
    best = json.loads((a.out / "result.json").read_text())["best"]
    scen = search.scenario_of(s, best["values"], a.out / "traces")
    seeds = list(range(1, a.seeds + 1))
    with Pool(2) as pool:
        for name, sc in (("without the adversary", s.base), ("best candidate", scen)):
            xs = pool.map(_one, [(sc, k, s.metric) for k in seeds])
            m = sum(xs) / len(xs)
            print(f"{name}: {s.metric} = {m:.4g} ± {ci95(xs):.2g} (seeds 1-{a.seeds}; min {min(xs):.4g}, max {max(xs):.4g})")


if __name__ == "__main__":
    main()
