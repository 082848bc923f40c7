"""FAST's reproduction (F1-F4): rows against independent computations from the raw series, and the
equilibrium of §V (Theorem 1) asserted with numbers (`cclab reproduce F…` runs five seeds)."""
import numpy as np
import pytest

import cclab
from cclab import reproduce as rp
from cclab.reproduce import fast


def test_f4_rates_are_proportional_to_alpha_and_the_queue_holds_sum_alpha():
    # Theorem 1 on one link: queue = Σα, x_i = α_i/q. α = 10/20/40 packets, 100 Mbit/s. Tolerance 10 %:
    # the rate of a delay-based flow wobbles by a packet or two of its α around the equilibrium (measured
    # error ≈ 1 %), and the window is counted in whole packets.
    rep = rp.reproduce("F4", seeds=(1,))
    assert all(c.holds for c in rep.claims), [(c.claim, c.measured) for c in rep.claims]
    d = rp.scenario_dict("fast_f4.toml")
    d["seed"] = 1
    r = cclab.run(d, progress=False)
    g = [f["goodput_bps"] for f in r.summary["flows"]]
    assert g[1] / g[0] == pytest.approx(2.0, rel=0.10) and g[2] / g[0] == pytest.approx(4.0, rel=0.10)
    l = r.links[(r.links["link"] == 0) & (r.links["t"] >= 40) & (r.links["t"] <= 90)]
    assert l["queue_pkts"].mean() == pytest.approx(70, rel=0.10)


def test_f2_rows_agree_with_the_raw_series():
    # The queue row's per-phase means, recomputed by hand from the link series of seed 1 (second halves of
    # the five 60 s phases); the rows print one decimal.
    rep = rp.reproduce("F2", seeds=(1,))
    d = rp.scenario_dict("fast_f2.toml")
    d["seed"] = 1
    r = cclab.run(d, progress=False)
    starts = [f["start"] for f in r.summary["flows"]]
    cuts = sorted({*starts, 180.0, 240.0, 300.0})
    l = r.links[r.links["link"] == 0]
    want = [float(l[(l["t"] >= (a + b) / 2) & (l["t"] <= b)]["queue_pkts"].mean()) for a, b in zip(cuts, cuts[1:])]
    text = rep.claims[0].measured.split("per phase ")[1]
    got = [float(x.split(" (")[0]) for x in text.split(", ")]
    assert got == pytest.approx(want, abs=0.051)
    # With phases at equilibrium the paper's claims hold: queue within 15 % of n·α, equal shares, FAST
    # the most stable and the fairest, no loss once running.
    by = {c.claim: c for c in rep.claims}
    for k in ("queue stays near n·α in every phase", "converges to the new equal share after each join/leave",
              "no oscillation", "no loss once running", "FAST is the fairest"):
        assert by[k].holds, (k, by[k].measured)


def test_f1_grid_is_the_papers():
    e = rp.experiments()["f1"]
    assert len(e.variants) == 4 * 4 * 4 and len(e.seeds) >= 5
    d = e.variants["newreno n=8 rtt=150ms"](rp.scenario_dict(e.scenario))
    assert d["flows"][0]["count"] == 8 and d["flows"][0]["rtt"] == "150ms" and d["flows"][0]["cc"] == "newreno"
    assert "params" not in d["flows"][0]
    assert fast.F1_N == (1, 2, 4, 8) and fast.F1_RTT_MS == (50, 100, 150, 200)


def test_stability_index_at_a_longer_period_is_computed_from_longer_slices():
    # _stab(period) must use period-long rate samples: for a constant-rate flow the index is 0 at any period,
    # and for a FAST run it is finite and small.
    d = rp.scenario_dict("fast_f4.toml")
    d["duration"], d["measure"] = "30s", ["0s", "30s"]
    r = cclab.run(d, progress=False)
    assert np.isfinite(fast._stab(r, 1.0)) and fast._stab(r, 1.0) < 0.5


# --- claims that hold, and fail when FAST is replaced by NewReno (full size, seed 1: the quick size is
# shorter than a lone FAST flow's fill time, so its phases never reach equilibrium) ------------------------

def _fast_to(cc):
    def change(d):
        for f in d["flows"]:
            if f["cc"] == "fast":
                f["cc"] = cc
                f.pop("params", None)
        return d
    return change


@pytest.mark.parametrize("exp,quick,rows", [
    ("F2", False, ["queue stays near n·α in every phase", "converges to the new equal share after each join/leave",
                   "no oscillation", "no loss once running", "FAST is the fairest", "high utilisation in every phase"]),
    # F3 at the quick size (48 s, 3 s phases) keeps these three rows' verdicts (5/5 seeds quick and full).
    ("F3", True, ["no oscillation", "no loss once running", "FAST is the fairest"]),
])
def test_fast_dynamic_claims_hold_and_fail_under_newreno(claims_of, exp, quick, rows):
    got = claims_of(exp, quick=quick)
    assert {r: got[r].verdict for r in rows} == dict.fromkeys(rows, "holds"), {r: got[r].measured for r in rows}
    # FAST replaced by NewReno in the FAST variant: it is now the NewReno variant's twin, so "the lowest"
    # and "the highest" ties hold at best (≤ / max pick the first): check those that must fail outright.
    bad = claims_of(exp, quick=quick, mutate_key="newreno", mutate=_fast_to("newreno"))
    assert bad["no loss once running"].verdict == "does not hold", bad["no loss once running"].measured
    assert bad["queue stays near n·α in every phase"].verdict == "does not hold"
    assert bad["converges to the new equal share after each join/leave"].verdict == "does not hold"
    assert bad["FAST is the fairest"].verdict == "does not hold"  # a tie with the NewReno variant is not "highest"


def test_f4_equal_alpha_gives_equal_rates_and_newreno_does_not(claims_of):
    # Equal α at 50/100/150 ms: equal rates (Jain ≥ 0.99; measured 1.0000). NewReno in FAST's place is
    # RTT-unfair (its rate ∝ 1/RTT): the row fails.
    got = claims_of("F4", quick=False)
    assert all(c.verdict == "holds" for c in got.values()), {k: c.measured for k, c in got.items()}
    bad = claims_of("F4", quick=False, mutate_key="newreno", mutate=_fast_to("newreno"))
    row = "equal α gives equal rates whatever the RTT (50/100/150 ms)"
    assert bad[row].verdict == "does not hold", bad[row].measured


def _f1_run(cc, n, ms, measure=None):
    """F1's cell of n flows × ms at full size, seed 1, every flow running ``cc`` (FAST's parameters dropped
    for another protocol), measured over ``measure`` if given."""
    e = rp.experiments()["f1"]
    d = e.variants[fast._f1_name("fast", n, ms)](rp.scenario_dict(e.scenario))
    d["seed"] = 1
    if measure:
        d["measure"] = measure
    for f in d["flows"]:
        f["cc"] = cc
        if cc != "fast":
            f.pop("params", None)
    return cclab.run(d, None, progress=False, plots=False)


def test_f1_newreno_degrades_with_the_per_flow_window_and_scalable_in_its_place_does_not():
    # The F1 row's check on its two cells at full size (seed 1): NewReno's utilisation at 1 flow × 200 ms
    # below that at 8 flows × 50 ms (measured 0.515 vs 0.981). Mutation: Scalable TCP in NewReno's place,
    # whose loss recovery takes a fixed number of RTTs whatever the window: 1.000 in both cells, no
    # degradation (the row "scalable degrades" does not hold at full size, docs/reproduce.md).
    def util(cc, n, ms):
        return _f1_run(cc, n, ms).summary["links"][0]["utilization"]

    assert util("newreno", 1, 200) < util("newreno", 8, 50) - 0.2
    assert not util("scalable", 1, 200) < util("scalable", 8, 50)


def test_f1_fast_row_is_its_climb_and_newreno_in_fasts_place_fails_it_outright():
    # F1's first row ("FAST's throughput is consistent over the grid": every cell's utilisation ≥ 0.9) does
    # not hold at full size: 0.893 ± 0.003 over seeds 1-5, the lowest cell always 1 flow × 200 ms, and the
    # explanation (docs/reproduce.md) says why: that flow is still climbing when the window opens at 30 s.
    # Checked by the row's own code (fast._f1_claims) over FAST's 16 cells at full size, seed 1 (the quick
    # size would cut the climb shorter still): as measured, the row fails just below 0.9 (seed 1: 0.889);
    # with the window opened at 60 s, after the climb, it holds (that is the explanation, tested). Mutation:
    # NewReno in FAST's place fails it outright, even in the late window (its 200 ms flow fills about
    # half the link).
    cells = [(n, t) for n in fast.F1_N for t in fast.F1_RTT_MS]

    def row(cc, measure=None):
        runs = {(n, t): [_f1_run(cc, n, t, measure)] for n, t in cells}
        # The other protocols' variants are filled with the same runs: only the first row is read.
        res = {fast._f1_name(c, n, t): runs[(n, t)] for c in fast.F1_CC for n, t in cells}
        (got,) = [c for c in fast._f1_claims(res) if c.claim == "FAST's throughput is consistent over the grid"]
        return got

    as_run = row("fast")
    assert as_run.verdict == "does not hold" and as_run.measured.startswith("0.8"), as_run.measured
    late = row("fast", ["60s", "90s"])
    assert late.verdict == "holds", late.measured
    bad = row("newreno", ["60s", "90s"])
    assert bad.verdict == "does not hold" and float(bad.measured.split(";")[0]) < 0.7, bad.measured
