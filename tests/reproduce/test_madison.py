"""The Madison reproductions (D1-D4): the estimator errors recomputed from the raw time series."""
import numpy as np
import pytest

import cclab
from cclab import reproduce as rp
from cclab.reproduce import madison


def test_d1_errors_are_the_estimates_against_the_ground_truth():
    # One run at a tenth of D1's duration with 65 Mbit/s Poisson cross traffic: C, U, X_xt and n recomputed
    # from the flows' state columns and the links' counters, by a different route than d1_errors (the
    # link's delivered bytes over the window for the load, pandas for the means).
    d = madison._cross("65Mbps")(rp.shorten(rp.scenario_dict("madison_d2.toml")))
    d["seed"] = 1
    r = cclab.run(d, None, progress=False, plots=False)
    m0, m1 = r.summary["measure"]
    link = r.summary["links"][0]
    l = r.links[r.links.link == 0]
    load = (np.interp(m1, l.t, l.tx_bytes) - np.interp(m0, l.t, l.tx_bytes)) * 8 / (m1 - m0)
    assert load == pytest.approx(link["utilization"] * link["rate_bps"], rel=1e-3)
    worst = {"C": 0.0, "U": 0.0, "X_xt": 0.0, "n": 0.0}
    for i, f in enumerate(r.summary["flows"]):
        w = r.flows[(r.flows.flow == i) & (r.flows.t > m0) & (r.flows.t <= m1)]
        est = {"C": w["madison.C_est"].dropna().mean() * 1e6, "U": w["madison.U"].dropna().mean(),
               "X_xt": w["madison.X_xt_bps"].dropna().mean(), "n": 1 / (1 / w["madison.n"].dropna()).mean()}
        truth = {"C": link["rate_bps"], "U": link["utilization"], "X_xt": load - f["throughput_bps"],
                 "n": load / f["throughput_bps"]}
        for k in worst:
            worst[k] = max(worst[k], abs(est[k] - truth[k]) / truth[k])
    got = madison.d1_errors(r)
    for k in worst:
        assert got[k] == pytest.approx(worst[k], rel=1e-3, abs=1e-3), k


def test_d4_rows_compare_madison_with_each_protocol_per_seed():
    # Quick, two seeds: a "Madison ≫ X" row is the mean over seeds of Madison's goodput / X's, each seed's
    # ratio from the same seed's two runs.
    rep = rp.reproduce("D4", quick=True, seeds=(1, 2))
    row = next(c for c in rep.claims if c.claim.startswith("Madison ≫ FAST (cross 40Mbps)"))
    mad = rep.runs[madison._d4_key("madison", "40Mbps")]
    fast = rep.runs[madison._d4_key("fast", "40Mbps")]
    ratios = [a["flows"][0]["goodput_bps"] / b["flows"][0]["goodput_bps"] for a, b in zip(mad, fast)]
    assert float(row.measured.split()[0]) == pytest.approx(np.mean(ratios), abs=0.006)
    assert row.holds == (np.mean(ratios) > 1.5)
    assert row.seeds_held == (sum(x > 1.5 for x in ratios), 2)
