"""MaxNet's reproduction (M1-M8): the allocations the rows compare with, checked against independent
computations, and the thesis's claims at full size on one or two seeds (`cclab reproduce M…` runs five)."""

import numpy as np
import pytest

from cclab import reproduce as rp
from cclab.metrics import jain
from cclab.reproduce import maxnet


def test_max_min_is_water_filling():
    # Two links (94 and 47 Mbit/s at μ): the long flow and link 1's flow split 47; link 0's flow takes the rest.
    assert maxnet.max_min([94.0, 47.0], [[0, 1], [0], [1]]) == pytest.approx([23.5, 70.5, 23.5])
    # Three flows on one link: equal thirds; a flow alone on a second link is not limited by the first.
    assert maxnet.max_min([90.0, 50.0], [[0], [0], [0], [1]]) == pytest.approx([30, 30, 30, 50])


def test_proportional_fairness_is_the_argmax_of_the_log_utility():
    # Brute force over a fine grid: the closed form must be the maximiser of Σ log x (to the grid's step).
    c0, c1 = 100.0, 50.0
    xs = np.linspace(0.01, c1 - 0.01, 200001)
    u = np.log(xs) + np.log(c0 - xs) + np.log(c1 - xs)
    x = float(xs[np.argmax(u)])
    got = maxnet.proportional_two_link(c0, c1)
    assert got[0] == pytest.approx(x, abs=1e-3) and got[1:] == pytest.approx([c0 - x, c1 - x], abs=1e-3)
    assert got[0] < maxnet.max_min([c0, c1], [[0, 1], [0], [1]])[0]  # the long flow gets less than max-min


def test_m2_rows_agree_with_an_independent_computation():
    # Seed 1 at full size (1 Gbit/s, 40 s: ~1.5 s): utilisation, Jain and the queueing delay recomputed from
    # the raw series by hand. Tolerance: the rows print 3-4 digits.
    rep = rp.reproduce("M2", seeds=(1,))
    import cclab

    d = rp.scenario_dict("maxnet_m2.toml")
    d["seed"] = 1
    r = cclab.run(d, progress=False)
    l, f = r.links[r.links["link"] == 0], r.flows
    start2 = r.summary["flows"][1]["start"]
    tx = lambda t: float(np.interp(t, l["t"], l["tx_bytes"]))
    u = (tx(start2) - tx(start2 / 2)) * 8 / (start2 / 2) / 1e9
    assert float(rep.claims[0].measured.split()[0]) == pytest.approx(u, abs=1e-3)
    got = lambda i, t: float(np.interp(t, f.loc[f["flow"] == i, "t"], f.loc[f["flow"] == i, "delivered_bytes"]))
    mid = (start2 + 27.0) / 2
    j = jain([got(i, 27.0) - got(i, mid) for i in (0, 1)])
    assert float(rep.claims[2].measured.split()[0]) == pytest.approx(j, abs=1e-4)
    qd = l["queue_pkts"].mean() * 1500 * 8 / 1e9 * 1e3
    assert float(rep.claims[4].measured.split()[0]) == pytest.approx(qd, abs=1e-3)
    # The thesis's claims that MaxNet meets: μ alone, a fraction of a second to join, equal halves, back to
    # the full rate within a few RTTs, queue ≈ 0, no drops.
    assert all(c.holds for c in rep.claims), [(c.claim, c.measured) for c in rep.claims]


def test_m4_yields_within_a_few_rtts_and_the_queue_clears_within_a_second():
    # Measured from the join (the transient is the claim). MaxNet's rate settles within 10 RTTs (0.28 s);
    # the queue does not: the burst that arrives during the feedback delay drains at (1 − μ)·C, 0.5 s at
    # 1 Gbit/s. A measured deviation from "within a few RTTs", asserted as such: if the drain ever became
    # as fast as the thesis says, this test fails and the row must be re-read.
    rep = rp.reproduce("M4", seeds=(1,))
    give, clear, during, back = rep.claims
    assert give.holds and back.holds and during.holds
    t_clear = float(clear.measured.split()[0])
    assert not clear.holds and 0.28 < t_clear < 1.0
    assert "peak" in clear.measured


def test_m6_maxnet_is_max_min_and_fast_proportionally_fair():
    rep = rp.reproduce("M6", seeds=(1,))
    assert rep.claims[0].holds and rep.claims[1].holds and rep.claims[2].holds, [c.measured for c in rep.claims]


def test_m5_axis_is_the_thesis_axis():
    e = rp.experiments()["m5"]
    assert maxnet.M5_LOSS[0] == 0 and maxnet.M5_LOSS[-1] == 0.0025 and len(e.variants) == 4 * len(maxnet.M5_LOSS)
    d = e.variants["newreno loss=0.1%"](rp.scenario_dict(e.scenario))
    assert d["topology"]["bottleneck"]["loss"] == 0.001 and d["topology"]["bottleneck"]["queue"] == "droptail"
    assert all(f["cc"] == "newreno" for f in d["flows"])
    assert len(e.seeds) >= 5  # the thesis ran five transfers per loss level


# --- claims that hold, and fail when MaxNet is replaced (quick size, seed 1: every row below held on all
# five seeds at the quick size as at full size) -------------------------------------------------------------

def _to_newreno(d):
    """The mutation: MaxNet's sources become NewReno (the routers keep their price queue, which NewReno
    ignores: it is then a drop-tail queue of the same buffer)."""
    for f in d["flows"]:
        if f["cc"] == "maxnet":
            f["cc"] = "newreno"
            f.pop("params", None)
    return d


@pytest.mark.parametrize("exp,rows,broken", [
    ("M1", ["one flow runs the link at μ", "the RTT stays at the propagation delay", "the rate converges quickly",
            "the queue stays ≈ 0 throughout", "no packet is dropped"],
     ["the RTT stays at the propagation delay", "the queue stays ≈ 0 throughout"]),
    ("M2", ["one flow alone runs the link at μ", "two flows split the link in equal halves",
            "the first flow regains the full rate after the second leaves", "the queue stays ≈ 0 throughout",
            "no packet is dropped"], ["the queue stays ≈ 0 throughout"]),
    ("M3", ["the three rates become equal despite the RTTs (56, 56, 28 ms)",
            "the 28 ms flow gets what a 56 ms flow gets", "the newcomer reaches its third quickly"],
     ["the 28 ms flow gets what a 56 ms flow gets"]),
    ("M4", ["MaxNet gives up the UDP rate within a few RTTs", "no standing queue while UDP runs"],
     ["no standing queue while UDP runs"]),
    ("M5", ["MaxNet keeps its rate under loss (0.25 %)", "0.1 % loss is devastating for newreno",
            "MaxNet above the others at 0.1 % loss"], ["MaxNet keeps its rate under loss (0.25 %)"]),
    ("M6", ["MaxNet's rates are max-min fair", "fast: the long flow gets less than its max-min share"],
     ["MaxNet's rates are max-min fair"]),
])
def test_maxnet_claims_hold_and_fail_under_newreno(claims_of, exp, rows, broken):
    got = claims_of(exp)
    assert {r: got[r].verdict for r in rows} == dict.fromkeys(rows, "holds"), {r: got[r].measured for r in rows}
    bad = claims_of(exp, mutate_key="newreno", mutate=_to_newreno)
    assert {r: bad[r].verdict for r in broken} == dict.fromkeys(broken, "does not hold"), \
        {r: bad[r].measured for r in broken}


# --- M7 and M8: the thesis's §4.5 "practical issues" (quick size, seed 1; every verdict below is the one
# the full-size runs give on five seeds, docs/reproduce.md) ----------------------------------------------

def _set_params(**kv):
    """A mutation: every MaxNet flow runs with these source parameters."""
    def change(d):
        for f in d["flows"]:
            if f["cc"] == "maxnet":
                f["params"] = {**f.get("params", {}), **kv}
        return d
    return change


M7_ROWS = {"with price averaging the throughput stabilises at 460 Mbit/s": "holds",
           "with price averaging the rate is stable": "holds",
           # the simulated router's price is smooth: without averaging the rate is as stable (explained row)
           "without price averaging the transmission is unstable": "does not hold"}
M8_ROWS = {"with eq. 12, ξ converges immediately": "holds", "with eq. 12, no throughput dip": "holds",
           "with eq. 12, the rate stays at μC": "holds", "without eq. 12, ξ re-converges slowly": "holds",
           "without eq. 12, the throughput dips": "holds",
           # one dip and a recovery, no swing past μC (explained row)
           "without eq. 12, the throughput oscillates": "does not hold"}


def test_m7_and_m8_verdicts_at_the_quick_size(claims_of):
    for exp, want in (("M7", M7_ROWS), ("M8", M8_ROWS)):
        got = claims_of(exp)
        assert {r: got[r].verdict for r in want} == want, {r: got[r].measured for r in want}


def test_m7_460_row_fails_under_newreno(claims_of):
    # NewReno ignores the price and fills the 500 Mbit/s link: its mean is the link, not μC's 470 ≈ 460.
    bad = claims_of("M7", mutate_key="newreno", mutate=_to_newreno)
    row = bad["with price averaging the throughput stabilises at 460 Mbit/s"]
    assert row.verdict == "does not hold", row.measured


def test_m7_stable_row_fails_for_an_unstable_source(claims_of):
    # "with price averaging the rate is stable" (CoV of the 10 ms rate samples < 0.05; measured 0.003) must
    # fail for a source whose rate swings. NewReno is no foil here: it keeps the 500 Mbit/s link full (the
    # rate is flat). Two that swing: MaxNet with its gain α raised from 0.3 until the loop oscillates
    # (measured at the quick size, seed 1: α = 1 → CoV 0.0035, 3 → 0.008, 5 → 1.04), and NewReno on a
    # 10-packet buffer (an eighth of the BDP: its sawtooth empties the link each cycle; CoV 0.17).
    row = "with price averaging the rate is stable"
    gain = claims_of("M7", mutate_key="alpha=5", mutate=_set_params(alpha=5.0))
    assert gain[row].verdict == "does not hold", gain[row].measured

    def shallow_newreno(d):
        d = _to_newreno(d)
        d["topology"]["bottleneck"]["buffer"] = "10p"
        return d

    reno = claims_of("M7", mutate_key="newreno-10p", mutate=shallow_newreno)
    assert reno[row].verdict == "does not hold", reno[row].measured


def test_m8_rows_follow_eq12(claims_of):
    # The paper's foil: eq. 12 off in both variants breaks every "with eq. 12" row; eq. 12 on in both breaks
    # the "without" rows that hold (they see the correction, not its absence).
    off = claims_of("M8", mutate_key="no-eq12", mutate=_set_params(base_rtt_correction=False))
    assert {r: off[r].verdict for r in M8_ROWS if r.startswith("with ")} == \
        dict.fromkeys([r for r in M8_ROWS if r.startswith("with ")], "does not hold")
    on = claims_of("M8", mutate_key="eq12", mutate=_set_params(base_rtt_correction=True))
    held = [r for r, v in M8_ROWS.items() if r.startswith("without") and v == "holds"]
    assert {r: on[r].verdict for r in held} == dict.fromkeys(held, "does not hold"), \
        {r: on[r].measured for r in held}


def test_m8_drop_is_at_half_the_duration_and_measured_from_the_raw_series():
    # The variant moves the drop to half the (quick) duration; the lowest 40 ms rate recomputed by hand
    # from the cumulative bytes sent (tolerance: the row prints three digits).
    import cclab

    e = rp.experiments()["m8"]
    d = e.variants["no eq. 12"](rp.shorten(rp.scenario_dict(e.scenario)))
    p = d["flows"][0]["params"]
    assert p["base_rtt_drop_at"] == pytest.approx(1.0) and p["base_rtt_correction"] is False
    d["seed"] = 1
    r = cclab.run(d, progress=False)
    f = r.flows[r.flows["flow"] == 0]
    edges = 1.0 + 0.04 * np.arange(26)
    sent = np.interp(edges, f["t"], f["sent_bytes"])
    low = float((np.diff(sent) * 8 / 0.04).min()) / (0.94 * 1e9)
    assert maxnet.m8_dip(r) == pytest.approx(low, abs=1e-3)
    assert low < 0.9  # the window mismatch: a visible dip (0.64 of μC on this seed)
