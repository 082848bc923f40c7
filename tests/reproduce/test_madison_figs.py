"""The Madison reproductions D5-D7 (Figs. 4, 6(a)/(c), 7(b)): the claims that hold, asserted on runs of the
experiments' own variants, and mutations that replace the algorithm under test by NewReno and check that the
same row then fails.

Size: the rows are about convergence over tens of seconds, which a tenth of the duration cannot show (a 9 s
D5 run ends before FAST's second flow converges), so every run is full size, on two seeds, for the variants a
test needs: D5's 90 s runs cost ~1.5 s, D6's and D7's 120 s runs ~2 s (about 40 s in all). Two seeds: a row
judged on the mean over seeds needs more to leave "inconclusive", so the tests assert what each seed's own
run shows (``seeds_held``), as tests/reproduce/test_madison.py does."""
import json

import pytest

import cclab
from cclab import reproduce as rp
from cclab.reproduce import madison_figs as figs, madison_paths as paths
from cclab.reproduce.overseeds import judged

SEEDS = (1, 2)


def _runs(scenario: str, variants: dict) -> dict:
    base = rp.scenario_dict(scenario)
    out = {}
    for k, ch in variants.items():
        out[k] = []
        for s in SEEDS:
            d = ch(json.loads(json.dumps(base)))
            d["seed"] = s
            out[k].append(cclab.run(d, None, progress=False, plots=False))
    return out


def _swap(change, old: str, new: str, params=None):
    """The variant with every ``old`` flow running ``new`` (uncapped, its defaults or ``params``)."""
    def mutated(d: dict) -> dict:
        d = change(d)
        for f in d["flows"]:
            if f["cc"] == old:
                f["cc"] = new
                f.pop("params", None)
                f.pop("transport", None)
                if params:
                    f["params"] = dict(params)
        return d
    return mutated


def _row(rows, start: str):
    return next(c for c in rows if c.claim.startswith(start))


# --- D5: Fig. 4 ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def d5():
    return _runs("madison_d5.toml", figs.D5_VARIANTS)


def test_d5_fast_converges_quickly_to_near_equal_shares(d5):
    rows = figs.d5_claims(d5)
    for start in ("two FAST flows quickly converge", "two FAST flows share nearly equally"):
        assert _row(rows, start).seeds_held == (2, 2), _row(rows, start)
    # The spec carries §5.1's settings; the reference NewReno is uncapped.
    assert d5[figs.d5_key("fast")][0].spec["flows"][0]["params"]["alpha_rule"] == "madison"
    assert d5[figs.d5_key("bic")][0].spec["flows"][0]["params"]["s_max"] == 32
    assert "max_window" not in d5[figs.d5_key("newreno")][0].spec["flows"][0]["transport"] or \
        d5[figs.d5_key("newreno")][0].spec["flows"][0]["transport"]["max_window"] > 10_000


def test_d5_fails_when_fast_is_newreno(d5):
    # Two uncapped NewReno flows in FAST's place: after the second's slow start their 2 s Jain index keeps
    # falling below 0.95 (a sawtooth each, out of phase), so "quickly converge" fails on both seeds.
    res = dict(d5)
    k = figs.d5_key("fast")
    res.update(_runs("madison_d5.toml", {k: _swap(figs.D5_VARIANTS[k], "fast", "newreno")}))
    row = _row(figs.d5_claims(res), "two FAST flows quickly converge")
    assert row.seeds_held == (0, 2) and row.holds is not True, row


# --- D6: Fig. 6(a), 6(c) ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def d6():
    return _runs("madison_d6.toml", figs.D6_VARIANTS)


def test_d6_fig6c_shares_near_equally_with_a_steady_total(d6):
    rows = figs.d6_claims(d6)
    for start in ("Madison flows share near-equally throughout", "total bottleneck load fairly steady",
                  "Madison flows share equally on a lightly loaded path"):
        assert _row(rows, start).seeds_held == (2, 2), _row(rows, start)
    # 6(a)'s stability row does not hold (docs/reproduce.md explains it): FAST's flows are steadier.
    assert _row(rows, "Madison's throughput is very stable").seeds_held == (0, 2)


def test_d6_fails_when_madison_is_newreno(d6):
    # NewReno in Madison's place on 6(c): its three sawtooths share unequally over some 5 s window
    # (smallest 5 s Jain 0.74 and 0.83 on seeds 1-2, against Madison's 0.98 and 0.89).
    res = dict(d6)
    res["6(c) madison"] = _runs("madison_d6.toml", {"m": _swap(figs.D6_VARIANTS["6(c) madison"], "madison",
                                                                "newreno")})["m"]
    row = _row(figs.d6_claims(res), "Madison flows share near-equally throughout")
    assert row.seeds_held == (0, 2) and row.holds is not True, row


# --- D7: Fig. 7(b) ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def d7():
    return _runs("madison_d7.toml", figs.D7_VARIANTS)


def test_d7_fast_and_bic_get_less_with_the_small_buffer_and_the_link_stays_near_c(d7):
    rows = figs.d7_claims(d7)
    for start in ("FAST gets less", "BIC gets less", "overall bottleneck throughput close to C"):
        assert _row(rows, start).seeds_held == (2, 2), _row(rows, start)


def test_d7_madison_hurts_reno_where_newreno_does_not(d7):
    # No mutation can turn D7's Madison rows false: "Madison does not hurt Reno" does not hold for Madison
    # itself (inconclusive over five seeds, 1 of 5 held). The mutation shows the miss is Madison's: uncapped
    # NewReno in its place leaves both capped Reno flows >= 90 % of their rate on both seeds (its sawtooth
    # drops few packets in the 93-packet buffer), while Madison's rows fail on at least one of the two.
    res = dict(d7)
    res["madison"] = _runs("madison_d7.toml", {"m": _swap(figs.D7_VARIANTS["madison"], "madison", "newreno")})["m"]
    for k in ("Reno 1", "Reno 2"):
        assert _row(figs.d7_claims(res), f"Madison does not hurt Reno ({k}").seeds_held == (2, 2)
        assert _row(figs.d7_claims(d7), f"Madison does not hurt Reno ({k}").seeds_held[0] < 2


# --- D3 and D2: the paper's foil ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def d3_foil():
    # BIC in the new flow's place (§5.1's S_max = 32): the paper's foil for Reno-friendliness ("the BIC flow
    # causes degradation in the throughput and loss rate for the on-going as well as new Reno flow", Fig.
    # 7(a)(ii)); and the capped-Reno reference the rows compare with.
    keys = [paths.d3_key("bic"), paths.d3_key("newreno")]
    return _runs("madison_d3.toml", {k: paths.D3_VARIANTS[k] for k in keys})


def test_d3_reno_rows_fail_when_madison_is_bic(d3_foil):
    # D3's "Madison does not hurt Reno" rows judged on runs where BIC took Madison's place: the check fails
    # (Reno 1 keeps 28 ± 22 % of its rate beside BIC over 30 seeds in docs/reproduce.md). Madison's own rows
    # are inconclusive over 30 seeds (the bursty cross traffic), so this shows the check can fail, not that
    # Madison passes it.
    res = {**d3_foil, "madison": d3_foil[paths.d3_key("bic")]}
    # The row's own measure and criterion (madison_paths.d3_claims), on the mutated runs.
    kept = paths._kept(res, "madison", 0)
    row = judged("Madison does not hurt Reno (Reno 1)", "", kept, "≥ 90 %", lambda v: v >= 90)
    assert row.seeds_held == (0, 2) and row.holds is not True, kept


# No D2 foil mutation, and none for D3's "reaches its share within seconds": FAST with §5.1's α rule, the
# protocol the paper contrasts Madison's convergence with (Fig. 4(a); "FAST TCP takes over 30 s to reach its
# bandwidth share" on long paths, §5.2), passes both rows. On D2's mix its last flow reaches 90 % of its
# window rate 0.4-3.7 s after it starts (seeds 1-5; Madison 0.8-3.7 s) and 90 % of the equal share as fast:
# each flow's share is ~3 Mbit/s there, reached within a few RTTs by any protocol. D3's row measures the
# time to 90 % of the flow's own settled rate, which FAST's slow growth keeps low (0.2-0.4 s on seeds 1-2).
# Telling Madison from FAST needs a path where the share is large (D4's Fig. 8(b): Madison / FAST 1.07-1.3x).
