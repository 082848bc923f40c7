"""The binomial reproductions (B1-B9): rows recomputed independently from the raw runs, verdicts checked
against their criteria, and the helpers against hand computations (`cclab reproduce B…` runs full size)."""
import json
import math

import numpy as np
import pytest

import cclab
from cclab import reproduce as rp
from cclab.reproduce import binomial
from cclab.reproduce.overseeds import judged, verdict_of
from cclab.stats import spread


def _mean(measured: str) -> float:
    return float(measured.split()[0])


def test_fitted_exponent_is_the_loglog_slope():
    # λ = c·p^(−e) exactly: the fit returns e; noise-free data from three members' theory.
    for e in (0.5, 2 / 3, 0.4):
        ps = [0.001, 0.002, 0.005, 0.01]
        assert binomial.fitted_exponent(ps, [3.0 * p ** -e for p in ps]) == pytest.approx(e, rel=1e-12)


def test_b1_rows_are_the_ratio_means_and_the_verdicts_follow_the_criteria():
    # Two seeds at a tenth of the duration: each row's mean is the mean over seeds of TCP goodput / the
    # binomial flow's, recomputed here from every run's delivered bytes over the window; each verdict is
    # the criterion applied to that mean.
    rep = rp.reproduce("B1", quick=True, seeds=(1, 2))
    by_variant = {}
    for variant, change in rp.experiments()["b1"].variants.items():
        ratios = []
        for seed in (1, 2):
            d = change(rp.shorten(rp.scenario_dict("binomial_b1.toml")))
            d["seed"] = seed
            r = cclab.run(d, None, progress=False, plots=False)
            f = r.flows
            m0, m1 = r.summary["measure"]
            got = [float(np.interp(m1, f.loc[f.flow == i, "t"], f.loc[f.flow == i, "delivered_bytes"])
                         - np.interp(m0, f.loc[f.flow == i, "t"], f.loc[f.flow == i, "delivered_bytes"]))
                   for i in (0, 1)]
            ratios.append(got[0] / got[1])
        by_variant[variant] = ratios
    rows = dict(zip(("sqrt", "iiad", "k+l=0.5", "k+l=1.5"), rep.claims))
    for k, row in rows.items():
        assert _mean(row.measured) == pytest.approx(spread(by_variant[k])[0], abs=0.006)  # printed to 2 decimals
    # The verdicts: the criterion against the mean's 95 % CI over the two seeds (overseeds.verdict_of).
    assert rows["sqrt"].verdict == verdict_of(by_variant["sqrt"], lambda v: 0.75 <= v <= 1.33)
    assert rows["k+l=0.5"].verdict == verdict_of(by_variant["k+l=0.5"], lambda v: v < 1)
    assert rows["k+l=1.5"].verdict == verdict_of(by_variant["k+l=1.5"], lambda v: v > 1)


def test_judged_rows_follow_their_criterion_on_the_mean_and_count_seeds():
    # The row form every experiment uses: the verdict is the criterion on the mean, the count is per seed,
    # a never-reached seed fails the row. (Perturbing `judged` to judge the first seed, or to ignore inf,
    # fails this test.)
    row = judged("c", "p", [1.5, 1.4, 1.5], "mean < 1.2", lambda v: v < 1.2)  # 1.47 ± 0.14
    assert row.holds is False and row.verdict == "does not hold" and row.seeds_held == (0, 3)
    row = judged("c", "p", [1.0, 0.9, 1.0], "mean < 1.2", lambda v: v < 1.2)  # 0.97 ± 0.14
    assert row.holds is True and row.seeds_held == (3, 3)
    row = judged("c", "p", [0.8, 1.4, 1.5], "mean < 1.2", lambda v: v < 1.2)  # 1.23 ± 0.94: straddles
    assert row.holds is None and row.verdict == "inconclusive" and row.seeds_held == (1, 3)
    row = judged("c", "p", [1.0, math.inf, 1.0], "< 2", lambda v: v < 2)  # the seeds disagree
    assert row.verdict == "inconclusive" and row.seeds_held == (2, 3)
    row = judged("c", "p", [3.0, math.inf, 3.0], "< 2", lambda v: v < 2)
    assert row.verdict == "does not hold"


def test_a_verdict_computed_with_numpy_is_stored_as_a_bool():
    # L1 judged `wins >= need` with numpy counts: reproduce.json stored the verdict as 0.0, which a reader
    # of the JSON cannot tell from a measurement. The row coerces to bool and ints.
    row = rp.Claim("c", "p", "m", "k", np.int64(3) >= 4, (np.int64(2), np.int64(5)))
    assert row.holds is False and type(row.holds) is bool
    assert row.seeds_held == (2, 5) and all(type(x) is int for x in row.seeds_held)
    assert rp.Claim("c", "p", "m", "k", None).holds is None


def test_b6_droptail_lets_iiad_take_more_than_red_does():
    # Full size, three seeds (≈ 3 s): with the paper's reverse traffic, IIAD's share over drop-tail is
    # larger than over RED on every seed (measured at 5 seeds: TCP/IIAD 0.85 ± 0.06 vs 0.97 ± 0.05).
    rep = rp.reproduce("B6", seeds=(1, 2, 3))
    rows = {c.claim: c for c in rep.claims}
    # 3/3 seeds is not yet a sign-test verdict (P = 1/8): inconclusive at three seeds, every seed held.
    assert rows["unlike RED (IIAD)"].seeds_held == (3, 3) and rows["unlike RED (IIAD)"].verdict == "inconclusive"
    assert _mean(rows["over drop-tail IIAD takes more than TCP"].measured) < 1


# --- claims that hold, and fail under the paper's foil (quick size unless said) -----------------------------

def _as_member(cc_from: str, k: float, l: float):
    """The mutation: flows running ``cc_from`` run the binomial member (k, l) instead: k + l ≠ 1 is the
    paper's foil for TCP-compatibility (Fig. 5)."""
    def change(d):
        for f in d["flows"]:
            if f["cc"] == cc_from:
                f["cc"], f["params"] = "binomial", {"k": k, "l": l}
        return d
    return change


def test_b1_k_plus_l_rule_holds_and_a_k_plus_l_half_member_breaks_it(claims_of):
    # Ten seeds at the quick size (20 s): every row holds (quick and full agree, docs/reproduce.md). Replacing
    # SQRT and IIAD by k = l = 0.25 (k + l = 0.5) makes the TCP-friendly rows fail: TCP/binomial ≈ 0.4.
    seeds = tuple(range(1, 11))
    got = claims_of("B1", seeds)
    rows = ["TCP-friendly: TCP/SQRT throughput ratio ≈ 1 (k + l = 1)", "TCP-friendly: TCP/IIAD throughput ratio ≈ 1 (k + l = 1)",
            "k + l = 0.5 takes more than TCP", "k + l = 1.5 takes less than TCP",
            "k + l = 0.5: TCP/binomial ratio < 1 whatever k (α 1, β ½)",
            "k + l = 1.5: TCP/binomial ratio > 1 whatever k (α 1, β ½)"]
    assert {r: got[r].verdict for r in rows} == dict.fromkeys(rows, "holds"), {r: got[r].measured for r in rows}
    bad = claims_of("B1", seeds, mutate_key="k+l=0.5",
                    mutate=lambda d: _as_member("iiad", 0.25, 0.25)(_as_member("sqrt", 0.25, 0.25)(d)))
    for k in ("TCP-friendly: TCP/SQRT throughput ratio ≈ 1 (k + l = 1)",
              "TCP-friendly: TCP/IIAD throughput ratio ≈ 1 (k + l = 1)"):
        assert bad[k].verdict == "does not hold", bad[k].measured


def test_b2_is_friendly_at_short_rtts_and_its_row_fails_for_a_k_plus_l_half_member(monkeypatch):
    # B2's rows do not hold at full size (the ratio leaves the band from 160 ms on: timeouts, docs/reproduce.md),
    # so the rows are judged on one point of their RTT axis where they hold: 40 ms, quick, seed 1 (TCP/IIAD
    # 0.99 ± 0.01 at full size), by the experiment's own row function with the axis patched to that point.
    # Mutation: the k + l = 0.5 member in IIAD's place takes more than TCP, the ratio leaves the band and
    # the IIAD row fails.
    monkeypatch.setattr(binomial, "B2_RTTS_MS", (40,))
    e = rp.experiments()["b2"]
    base = rp.shorten(rp.scenario_dict(e.scenario))
    runs = {k: [cclab.run(dict(e.variants[k](json.loads(json.dumps(base))), seed=1), None, progress=False,
                          plots=False)] for k in ("iiad 40ms", "sqrt 40ms")}
    rows = binomial._b2_claims(runs)
    assert [r.verdict for r in rows] == ["holds", "holds"], [r.measured for r in rows]
    d = _as_member("iiad", 0.25, 0.25)(e.variants["iiad 40ms"](json.loads(json.dumps(base))))
    bad = binomial._b2_claims({**runs, "iiad 40ms": [cclab.run(dict(d, seed=1), None, progress=False, plots=False)]})
    assert bad[0].verdict == "does not hold" and float(bad[0].measured.split()[2]) < binomial.FRIENDLY[0], bad[0]


def test_b3_binomial_flows_oscillate_less_and_newreno_in_their_place_does_not(claims_of):
    rows = ["IIAD oscillates less than TCP", "SQRT oscillates less than TCP", "AIMD(0.31, 0.125) oscillates less than TCP"]
    got = claims_of("B3", (1, 2, 3, 4, 5))
    assert {r: got[r].verdict for r in rows} == dict.fromkeys(rows, "holds"), {r: got[r].measured for r in rows}
    # Mutation: every flow NewReno: the "binomial" runs are TCP's, their CoV is not lower on any seed.
    bad = claims_of("B3", (1, 2, 3, 4, 5), mutate_key="newreno",
                    mutate=lambda d: [f.update(cc="newreno", params={}) for f in d["flows"]] and d)
    assert bad["IIAD oscillates less than TCP"].verdict == "does not hold"


def test_b4_the_mixture_is_fair_at_sixty_flows_and_an_aggressive_member_breaks_it(monkeypatch):
    # B4's "at every n" rows do not hold at full size (n = 5 and 10 are unfair: a timeout early in the window
    # hits one k among few flows, docs/reproduce.md), so they are judged on the point of their axis where
    # they hold: n = 60 (12 flows of each k), quick, seed 1, by the experiment's own row function with the
    # axis patched to that point (Jain over the five k's means ≥ 0.95, measured 0.995 ± 0.001 at full size).
    # Mutation: the k = 1 group becomes k = l = 0.25 (k + l = 0.5, not TCP-compatible): it takes more.
    monkeypatch.setattr(binomial, "B4_N", (60,))
    e = rp.experiments()["b4"]
    d = e.variants["n=60"](rp.shorten(rp.scenario_dict(e.scenario)))
    d["seed"] = 1
    row = "the five k (l = 1 − k) share fairly at every n"
    ok = {c.claim: c for c in binomial._b4_claims({"n=60": [cclab.run(d, None, progress=False, plots=False)]})}
    assert ok[row].verdict == "holds", ok[row].measured
    d2 = json.loads(json.dumps(d))
    d2["flows"][4]["cc"], d2["flows"][4]["params"] = "binomial", {"k": 0.25, "l": 0.25}
    bad = {c.claim: c for c in binomial._b4_claims({"n=60": [cclab.run(d2, None, progress=False, plots=False)]})}
    assert bad[row].verdict == "does not hold", bad[row].measured


def test_b5_sqrt_shares_fairly_on_three_bottlenecks_and_a_k_plus_l_half_member_does_not(claims_of):
    rows = ["long path (3 bottlenecks): TCP/SQRT ratio ≈ 1", "all flows: TCP/SQRT ratio ≈ 1"]
    got = claims_of("B5", (1, 2, 3, 4, 5))
    assert {r: got[r].verdict for r in rows} == dict.fromkeys(rows, "holds"), {r: got[r].measured for r in rows}
    bad = claims_of("B5", (1, 2, 3, 4, 5), mutate_key="k+l=0.5", mutate=_as_member("sqrt", 0.25, 0.25))
    assert bad["all flows: TCP/SQRT ratio ≈ 1"].verdict == "does not hold", bad["all flows: TCP/SQRT ratio ≈ 1"].measured


def test_b6_droptail_favours_iiad_and_a_k_plus_l_one_and_a_half_member_loses_instead(claims_of):
    # Full size (200 s at 3 Mbit/s), five seeds: drop-tail favours IIAD on every seed. Mutation: the
    # binomial flow k = l = 0.75 (k + l = 1.5, less aggressive than TCP): it gets less, the row fails.
    seeds = (1, 2, 3, 4, 5)
    got = claims_of("B6", seeds, quick=False)
    assert got["unlike RED (IIAD)"].verdict == "holds", got["unlike RED (IIAD)"].measured
    bad = claims_of("B6", seeds, quick=False, mutate_key="k+l=1.5", mutate=_as_member("iiad", 0.75, 0.75))
    assert bad["over drop-tail IIAD takes more than TCP"].verdict == "does not hold"


def test_b7_iiad_follows_its_throughput_law_and_a_k_plus_l_half_member_does_not(monkeypatch):
    # Full size (300 s, 100 Mbit/s), seed 1, IIAD's four loss rates: the fitted exponent within 10 % of
    # 1/(k+l+1) = 0.5 (measured 0.505 ± 0.017 over five seeds). Mutation: the k = l = 0.25 member in its
    # place follows its own law (0.667), which the IIAD row rejects (the experiment's own row function,
    # its members patched to IIAD alone so that it needs only IIAD's cells).
    e = rp.experiments()["b7"]
    monkeypatch.setattr(binomial, "B7_MEMBERS", {"iiad": binomial.B7_MEMBERS["iiad"]})
    mutate = lambda d: (d["flows"][0].update(cc="binomial", params={"initial_ssthresh": 16, "k": 0.25, "l": 0.25}), d)[1]
    runs, bad_runs = {}, {}
    for p in binomial.B7_P:
        d = e.variants[f"iiad p={p}"](rp.scenario_dict(e.scenario))
        d["seed"] = 1
        runs[f"iiad p={p}"] = [cclab.run(d, None, progress=False, plots=False)]
        bad_runs[f"iiad p={p}"] = [cclab.run(mutate(d), None, progress=False, plots=False)]
    assert binomial._b7_claims(runs)[0].verdict == "holds", binomial._b7_claims(runs)[0].measured
    bad = binomial._b7_claims(bad_runs)[0]
    assert bad.verdict == "does not hold" and float(bad.measured) > 0.55, bad.measured
    # The row's exponent is the least-squares slope of log goodput against log p, recomputed here (the row
    # prints three digits).
    rates = [runs[f"iiad p={p}"][0].summary["flows"][0]["goodput_bps"] for p in binomial.B7_P]
    assert float(binomial._b7_claims(runs)[0].measured) == pytest.approx(
        binomial.fitted_exponent(list(binomial.B7_P), rates), abs=5e-4)


def test_b8_tcp_joining_iiad_flows_gets_its_share_and_not_beside_a_k_plus_l_half_member(claims_of):
    # Full size (80 s), three seeds: the newcomer's goodput over the mean IIAD flow's over 30-80 s is in
    # [0.75, 1.33] (measured 1.02 ± 0.09). Mutation: the fifteen flows run k = l = 0.25 (k + l = 0.5), which
    # takes more than TCP: the newcomer's share falls below the band.
    seeds = (1, 2, 3)
    got = claims_of("B8", seeds, quick=False)
    assert got["and keeps its share (IIAD)"].verdict == "holds", got["and keeps its share (IIAD)"].measured
    bad = claims_of("B8", seeds, quick=False, mutate_key="k+l=0.5", mutate=_as_member("iiad", 0.25, 0.25))
    assert bad["and keeps its share (IIAD)"].verdict == "does not hold", bad["and keeps its share (IIAD)"].measured


def test_b9_sqrt_oscillates_less_than_aimd_and_fails_as_aimd(claims_of):
    # Full size (600 s at 50 Kbit/s: ~2 s), seed 1: SQRT's window CoV is 0.12 of NewReno's and its median
    # decrease 0.075 of the window (NewReno 0.5). The quick size is not used: a tenth of the run is mostly
    # start-up, whose decreases from slow start are larger. Mutation: NewReno in SQRT's place halves its
    # window and oscillates as AIMD does (ratio 1): both rows fail.
    rows = ["SQRT's window oscillates less than AIMD's would", "SQRT avoids TCP's factor-of-two reductions"]
    got = claims_of("B9", quick=False)
    assert {r: got[r].verdict for r in rows} == dict.fromkeys(rows, "holds"), {r: got[r].measured for r in rows}
    bad = claims_of("B9", quick=False, mutate_key="newreno", mutate=binomial._set_cc((0,), "newreno"))
    assert {r: bad[r].verdict for r in rows} == dict.fromkeys(rows, "does not hold"), {r: bad[r].measured for r in rows}
    # The decrease recomputed from the raw window series (tolerance: the row prints three digits).
    r = cclab.run({**rp.scenario_dict("binomial_b9.toml"), "seed": 1}, progress=False)
    c = r.flows[(r.flows["flow"] == 0) & (r.flows["t"] > 60)]["cwnd"].to_numpy(float)
    drops = [(a - b) / a for a, b in zip(c[:-1], c[1:]) if (a - b) / a > 0.01]
    assert binomial.b9_decrease(r) == pytest.approx(float(np.median(drops)), abs=1e-3) and len(drops) >= 3
