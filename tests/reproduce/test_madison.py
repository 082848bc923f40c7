"""The Madison reproductions (D1-D4): the claims that hold, asserted on reduced runs, and mutation tests that
replace the Madison flows by NewReno and check that the same claim's row then fails.

Run time: every run here is either a full-size run of a subset of an experiment's variants (D4's 30 s
transfers cost ~0.3 s each; D3's and D2's 120 s runs ~2 s) or D1's 11 s Fig. 2 runs, on two seeds, shared
between tests through module-scoped fixtures (~40 s in all). Two seeds because the rows' verdicts judge the
mean over seeds; the full runs in docs/reproduce.md use 5-30."""
import json

import numpy as np
import pytest

import cclab
from cclab import reproduce as rp
from cclab.reproduce import madison, madison_fig2 as fig2, madison_paths as paths

SEEDS = (1, 2)


def _run(d: dict, seed: int):
    d = json.loads(json.dumps(d))
    d["seed"] = seed
    return cclab.run(d, None, progress=False, plots=False)


def _runs(scenario: str, variants: dict) -> dict:
    base = rp.scenario_dict(scenario)
    return {k: [_run(ch(json.loads(json.dumps(base))), s) for s in SEEDS] for k, ch in variants.items()}


def _to_newreno(change):
    """The variant with every Madison flow replaced by (uncapped) NewReno: the mutation."""
    def mutated(d: dict) -> dict:
        d = change(d)
        for f in d["flows"]:
            if f["cc"] == "madison":
                f["cc"] = "newreno"
                f.pop("params", None)
        return d
    return mutated


# --- D4 ---------------------------------------------------------------------------------------------------

D4_CELLS = [paths.d4_key("8(b)", cc) for cc in ("madison", "fast", "bic", "newreno")]


@pytest.fixture(scope="module")
def d4():
    return _runs("madison_d4.toml", {k: paths.D4_VARIANTS[k] for k in D4_CELLS})


@pytest.fixture(scope="module")
def d4_mutant(d4):
    res = dict(d4)
    k = paths.d4_key("8(b)", "madison")
    res.update(_runs("madison_d4.toml", {k: _to_newreno(paths.D4_VARIANTS[k])}))
    return res


def test_d4_runs_carry_the_competitors_settings_of_5_1(d4):
    # §5.1: FAST's α rule, BIC's S_max = 32, Reno's W_max = 172 KB: visible in each run's spec.
    spec = {k: v[0].spec["flows"][0] for k, v in d4.items()}
    assert spec[paths.d4_key("8(b)", "fast")]["params"]["alpha_rule"] == "madison"
    assert spec[paths.d4_key("8(b)", "bic")]["params"]["s_max"] == 32
    # The receive window resolves to a window of ⌊172 000 B / mss⌋ packets in the spec.
    reno = spec[paths.d4_key("8(b)", "newreno")]["transport"]
    assert reno["max_window"] == 172_000 // reno["mss"]
    r = d4[paths.d4_key("8(b)", "madison")][0]
    assert r.summary["links"][0]["rate_bps"] == 500e6 and r.spec["traffic"][0]["rate_bps"] == pytest.approx(350e6)


def test_d4_fig8b_claims_that_hold(d4):
    # Full-size 30 s transfers on Fig. 8(b)'s path: Madison beats BIC, FAST and BIC beat Reno, Madison's loss
    # and backlog are a few (the rows docs/reproduce.md shows holding on every seed).
    # Two seeds leave a CI too wide for a verdict on the mean ("inconclusive"), so the test asserts what the
    # full run's rows show: the criterion held on each seed's own runs.
    for a, b in (("madison", "bic"), ("fast", "newreno"), ("bic", "newreno")):
        row = paths._beats(d4, "8(b)", a, b, "outperforms")
        assert row.seeds_held == (2, 2), row
    for row in paths._madison_quality(d4, "8(b)", "2.5 per 10 000", "3.5 packets"):
        assert row.seeds_held == (2, 2), row
    # The ratio the row shows is the mean of the per-seed ratios of the same seed's runs.
    ratios = [a.summary["flows"][0]["goodput_bps"] / b.summary["flows"][0]["goodput_bps"]
              for a, b in zip(d4[D4_CELLS[0]], d4[D4_CELLS[2]])]
    row = paths._beats(d4, "8(b)", "madison", "bic", "outperforms")
    assert float(row.measured.split()[0]) == pytest.approx(np.mean(ratios), abs=0.006)


def test_d4_fails_when_madison_is_newreno(d4_mutant):
    # NewReno in Madison's place (uncapped) on the 172 KB buffer: "Madison outperforms BIC" no longer holds on
    # any seed. (Its loss, 7 per 10 000, and backlog, 0.5 packets, on seeds 1-2 pass the quality rows: a
    # NewReno flow that loses early and then grows by a packet per RTT keeps the queue short.)
    row = paths._beats(d4_mutant, "8(b)", "madison", "bic", "outperforms")
    assert row.seeds_held == (0, 2) and row.holds is not True, row


# --- D3 ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def d3():
    keys = [paths.d3_key("madison"), paths.d3_key("newreno")]
    return _runs("madison_d3.toml", {k: paths.D3_VARIANTS[k] for k in keys})


def _to_fast(change):
    """The variant with every Madison flow replaced by FAST with §5.1's α rule: the paper's foil."""
    def mutated(d: dict) -> dict:
        d = change(d)
        for f in d["flows"]:
            if f["cc"] == "madison":
                paths.competitor(f, "fast")
        return d
    return mutated


def test_d3_madison_reaches_the_equal_share_within_seconds(d3):
    # The row's criterion: 1 s within ±20 % of C_avail/2 (not the flow's own settled rate). Seeds 1-2:
    # 16.3 s and 1.7 s (seed 1 climbs through ~10 Mbit/s for 15 s before reaching ~17), so the per-seed
    # verdicts split; the mean is the row's measure.
    reach = [paths._reach(r) for r in d3["madison"]]
    assert np.all(np.isfinite(reach)) and np.mean(reach) <= 10, reach


def test_d3_convergence_row_fails_when_madison_is_fast(d3):
    # The foil: FAST with §5.1's α rule in Madison's place settles at 1-3 Mbit/s beside capped Reno, far
    # below C_avail/2 (13-17 Mbit/s), and never reaches the band on seeds 1-2. Against its own settled rate
    # (the row's old criterion) it passed, as did an uncapped NewReno (0.7-1.0 s); the capped NewReno of the
    # reference run (≤ 5.3 Mbit/s) is checked here too.
    fast = _runs("madison_d3.toml", {"m": _to_fast(paths.D3_VARIANTS[paths.d3_key("madison")])})["m"]
    assert fast[0].spec["flows"][1]["params"]["alpha_rule"] == "madison"
    for runs in (fast, d3[paths.d3_key("newreno")]):
        row = paths.d3_reach_row("new flow reaches its share", "", runs)
        assert row.seeds_held == (0, 2) and row.holds is False, row


# --- D2 ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def d2_steady():
    return _runs("madison_d2.toml", {"m": madison._cross("65Mbps")})["m"]


def test_d2_with_steady_cross_traffic_shares_equally_near_c(d2_steady):
    # The diagnosis's paper-exact variant (steady Poisson cross load): equal shares and load near C.
    claims = madison._d2_claims({"madison": d2_steady})
    assert claims[0].seeds_held == (2, 2) and claims[2].seeds_held == (2, 2), claims


# Steady cross traffic: NewReno in Madison's place also shares equally (Jain 0.96) with the load near C (0.99)
# on seeds 1-2, so those two rows do not tell Madison from NewReno (docs/reproduce.md). The convergence row does.


@pytest.fixture(scope="module")
def d2():
    return _runs("madison_d2.toml", {"m": lambda d: d})["m"]


def test_d2_last_flow_reaches_the_equal_share_within_seconds(d2):
    # 1 s within ±20 % of C_avail/3: 3.0-4.4 s on seeds 1-3 (10 seeds: 3.1 ± 1.4 s).
    row = madison._d2_claims({"madison": d2})[1]
    assert row.claim == "equal share within seconds" and row.seeds_held == (2, 2), row


def test_d2_convergence_row_fails_when_madison_is_fast():
    # The foil (FAST with §5.1's α rule in all three flows): the last FAST flow climbs to 2-7 Mbit/s in the
    # 61 s it has, against C_avail/3 ≈ 10-11.5 Mbit/s, and never holds the band for 1 s on seeds 1-2.
    fast = _runs("madison_d2.toml", {"m": _to_fast(lambda d: d)})["m"]
    assert all(f["params"]["alpha_rule"] == "madison" for f in fast[0].spec["flows"])
    row = madison._d2_claims({"madison": fast})[1]
    assert row.seeds_held == (0, 2) and row.holds is False, row


# --- D1 ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def d1_cross65():
    # One run at a tenth of D1's duration with 65 Mbit/s Poisson cross traffic.
    d = madison._cross("65Mbps")(rp.shorten(rp.scenario_dict("madison_d2.toml")))
    return _run(d, 1)


def test_d1_errors_are_the_estimates_against_the_ground_truth(d1_cross65):
    # C, U, X_xt and n recomputed from the flows' state columns and the links' counters, by a different route
    # than d1_errors (the link's delivered bytes over the window for the load, pandas for the means).
    r = d1_cross65
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
    # The claim that holds: every estimate within D1's 20 % at 65 Mbit/s of Poisson cross traffic.
    assert max(got.values()) <= madison.D1_TOL, got


def test_d1_estimator_rows_fail_when_madison_is_newreno():
    d = _to_newreno(madison._cross("65Mbps"))(rp.shorten(rp.scenario_dict("madison_d2.toml")))
    rows = madison._d1_claims({"cross 65Mbps": [_run(d, 1)]})
    # A flow without Madison's estimates has no estimate: every error is undefined and no row holds.
    assert len(rows) == 4 and all(c.holds is False for c in rows), rows


@pytest.fixture(scope="module")
def d1_fig2():
    return _runs("madison_d2.toml", fig2.VARIANTS)


def test_d1_fig2_the_simulator_queue_is_md1_and_startup_estimates_overshoot(d1_fig2):
    rows = {c.claim: c for c in fig2.claims(d1_fig2)}
    md1 = next(c for k, c in rows.items() if k.startswith("the simulator's bottleneck"))
    assert md1.seeds_held == (2, 2), md1
    # Fig. 2(a) (15 % load): the start-up's probes see an empty queue, U is underestimated and S_target is
    # set above the available rate A (the finding docs/algorithms/madison.md traces); the row fails.
    for r in d1_fig2[fig2.key("Fig. 2(a)")]:
        m = fig2.model(r)
        assert fig2._first(r, "U") < m["U_xt"]
        assert fig2._first(r, "S_target") * 12.0 > m["S_true_mbps"]
    assert rows["sending at S_target achieves b_target (Fig. 2(a), U_xt 15 %)"].seeds_held == (0, 2)
